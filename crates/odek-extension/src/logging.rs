//! MCP logging ([`Server::logging`](crate::Server::logging)): the eight syslog levels
//! ([`LogLevel`]), and the threshold a client sets with `logging/setLevel`, kept per connection
//! ([`LogThreshold`]), below which [`CallContext::log`](crate::CallContext::log) sends nothing.
//!
//! Not here: sending the notifications (`context`) and answering the method (`builtins`).

use std::sync::atomic::{AtomicU8, Ordering};

use serde::{Deserialize, Serialize};

/// A log message's severity, least severe first (RFC 5424's order, as MCP names them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl LogLevel {
    /// Every level, least severe first.
    pub const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    /// The level's name on the wire (`"debug"`, …, `"emergency"`).
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }

    /// The level named `name` exactly (lowercase), if any.
    pub fn parse(name: &str) -> Option<LogLevel> {
        LogLevel::ALL.into_iter().find(|level| level.as_str() == name)
    }
}

/// The level a client asked for with `logging/setLevel`, for one connection; until it asks,
/// every message is sent.
#[derive(Debug, Default)]
pub(crate) struct LogThreshold(AtomicU8);

impl LogThreshold {
    /// Messages below `level` are dropped from now on.
    pub(crate) fn set(&self, level: LogLevel) {
        self.0.store(level as u8 + 1, Ordering::Relaxed);
    }

    /// Whether a message at `level` goes out: always, until the client set a level.
    pub(crate) fn allows(&self, level: LogLevel) -> bool {
        match self.0.load(Ordering::Relaxed) {
            0 => true,
            threshold => level as u8 + 1 >= threshold,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_round_trip_in_severity_order() {
        for (position, level) in LogLevel::ALL.into_iter().enumerate() {
            assert_eq!(LogLevel::parse(level.as_str()), Some(level));
            assert_eq!(serde_json::to_value(level).unwrap(), serde_json::json!(level.as_str()));
            assert!(LogLevel::ALL[..position].iter().all(|lower| *lower < level));
        }
        assert_eq!(LogLevel::parse("WARNING"), None);
        assert_eq!(LogLevel::parse("warn"), None);
    }

    #[test]
    fn the_threshold_drops_only_what_is_below_it() {
        let threshold = LogThreshold::default();
        assert!(threshold.allows(LogLevel::Debug), "everything goes out until a level is set");
        threshold.set(LogLevel::Warning);
        assert!(!threshold.allows(LogLevel::Debug) && !threshold.allows(LogLevel::Notice));
        assert!(threshold.allows(LogLevel::Warning) && threshold.allows(LogLevel::Emergency));
        threshold.set(LogLevel::Debug);
        assert!(threshold.allows(LogLevel::Debug));
    }
}
