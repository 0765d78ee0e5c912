//! What a confinement refused: each refused operation as a [`Denial`], and the [`DenialLog`] the
//! supervisor and the proxy of one confined command share — one list in order of arrival, the
//! first [`MAX_KEPT`] kept, the rest counted by kind ([`Tally`]), so a flood from one source
//! neither hides the other's refusals nor grows without bound. Start at [`DenialLog`].

use std::sync::{Mutex, PoisonError};

/// Refusals kept per confined command; later ones are only counted.
const MAX_KEPT: usize = 64;

/// One operation the sandbox refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// `connect` or `bind`; `chmod`, `chown`, `utimes`, `setxattr` or `removexattr`.
    pub operation: &'static str,
    /// The destination as the caller named it (`93.184.216.34:443`, a socket path).
    pub target: String,
    /// Why, in one line (`network: loopback`, `outside the writable paths`).
    pub reason: String,
}

impl Denial {
    /// Whether the refused operation was a network one (`connect`, `bind`) rather than a change
    /// to a file's metadata.
    pub fn is_network(&self) -> bool {
        matches!(self.operation, "connect" | "bind")
    }
}

/// `sandbox: connect 127.0.0.1:9 refused (network: deny)`: one refusal as odek reports it to
/// the model, the event stream and the operator.
impl std::fmt::Display for Denial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "sandbox: {} {} refused ({})", self.operation, self.target, self.reason)
    }
}

/// `sandbox: 3 more refused operation(s)`: the refusals not listed one by one.
pub fn more_refused_line(count: usize) -> String {
    format!("sandbox: {count} more refused operation(s)")
}

/// How many refusals, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Refused `connect` and `bind` calls (the supervisor's and the proxy's).
    pub network: usize,
    /// Refused metadata changes (`chmod`, `chown`, times, extended attributes).
    pub metadata: usize,
}

impl Tally {
    /// Every refusal counted.
    pub fn total(&self) -> usize {
        self.network.saturating_add(self.metadata)
    }

    /// `denial` counted under its kind.
    pub(crate) fn count(&mut self, denial: &Denial) {
        let kind = if denial.is_network() { &mut self.network } else { &mut self.metadata };
        *kind = kind.saturating_add(1);
    }
}

/// The refusals of one confined command, from the supervisor's threads and the proxy's tasks
/// alike, in the order they happened.
#[derive(Debug, Default)]
pub(crate) struct DenialLog(Mutex<(Vec<Denial>, Tally)>);

impl DenialLog {
    pub(crate) fn record(&self, denial: Denial) {
        let mut log = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if log.0.len() < MAX_KEPT {
            log.0.push(denial);
        } else {
            log.1.count(&denial);
        }
    }

    /// The refusals kept, in order of arrival, and those only counted.
    pub(crate) fn read(&self) -> (Vec<Denial>, Tally) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(operation: &'static str, index: usize) -> Denial {
        Denial { operation, target: format!("t{index}"), reason: "outside".to_owned() }
    }

    #[test]
    fn refusals_keep_their_order_of_arrival_across_sources_and_the_rest_is_counted_by_kind_red() {
        let log = DenialLog::default();
        log.record(refused("chmod", 0));
        log.record(refused("connect", 1));
        for index in 2..MAX_KEPT + 5 {
            log.record(refused(if index % 2 == 0 { "chmod" } else { "connect" }, index));
        }
        let (kept, more) = log.read();
        assert_eq!(kept.len(), MAX_KEPT);
        assert_eq!((kept[0].operation, kept[1].operation), ("chmod", "connect"));
        assert_eq!(more, Tally { network: 2, metadata: 3 });
        assert_eq!(more.total(), 5);
    }
}
