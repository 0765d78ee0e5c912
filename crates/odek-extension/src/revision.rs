//! Which MCP protocol revision a server answers `initialize` with, and which
//! `MCP-Protocol-Version` header values its HTTP transport accepts.
//!
//! By default a server negotiates ([`negotiate_protocol_version`]): it answers the revision the
//! client asked for when it speaks it, else the newest it speaks, as the MCP lifecycle says; a
//! client that names no revision gets the contract's ([`PROTOCOL_VERSION`]), so odek's own
//! handshake is answered exactly as before. A fixture may instead answer one fixed value, or
//! none ([`VersionAnswer`]). Not here: what differs between the revisions (the handlers decide).

use crate::server::PROTOCOL_VERSION;

/// Every revision the SDK speaks, oldest first: the contract's (`2025-03-26`), `2025-06-18`
/// and `2025-11-25`.
pub const SUPPORTED_PROTOCOL_VERSIONS: [&str; 3] = [PROTOCOL_VERSION, "2025-06-18", "2025-11-25"];

/// The newest revision the SDK speaks: the answer to a client asking for one it does not know.
pub const LATEST_PROTOCOL_VERSION: &str = SUPPORTED_PROTOCOL_VERSIONS[SUPPORTED_PROTOCOL_VERSIONS.len() - 1];

/// How `initialize` names the protocol revision.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum VersionAnswer {
    /// [`negotiate_protocol_version`] of what the client asked for. The default.
    #[default]
    Negotiate,
    /// This value, whatever the client asked for ([`Server::protocol_version`](crate::Server::protocol_version)).
    Fixed(String),
    /// No `protocolVersion` member at all (a fixture of a broken server).
    Omit,
}

impl VersionAnswer {
    /// The `protocolVersion` answered to a client that asked for `requested`.
    pub(crate) fn answer(&self, requested: Option<&str>) -> Option<String> {
        match self {
            Self::Negotiate => Some(negotiate_protocol_version(requested).to_owned()),
            Self::Fixed(version) => Some(version.clone()),
            Self::Omit => None,
        }
    }

    /// Whether an HTTP request may carry `MCP-Protocol-Version: <value>`: a revision the SDK
    /// speaks, or the fixed value this server answers (a client echoes what it was told).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn accepts_header(&self, value: &str) -> bool {
        SUPPORTED_PROTOCOL_VERSIONS.contains(&value) || matches!(self, Self::Fixed(fixed) if fixed == value)
    }
}

/// The revision answered to a client that asked for `requested` in `initialize`: that one when
/// the SDK speaks it, [`PROTOCOL_VERSION`] when the client named none (or not as a string), and
/// [`LATEST_PROTOCOL_VERSION`] for any other (older or newer: the client decides whether it can
/// speak the answer).
pub fn negotiate_protocol_version(requested: Option<&str>) -> &'static str {
    match requested {
        None => PROTOCOL_VERSION,
        Some(requested) => {
            SUPPORTED_PROTOCOL_VERSIONS.into_iter().find(|known| *known == requested).unwrap_or(LATEST_PROTOCOL_VERSION)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_revision_is_answered_as_asked_and_any_other_with_the_newest() {
        assert_eq!(negotiate_protocol_version(Some("2025-03-26")), "2025-03-26");
        assert_eq!(negotiate_protocol_version(Some("2025-06-18")), "2025-06-18");
        assert_eq!(negotiate_protocol_version(Some("2025-11-25")), "2025-11-25");
        assert_eq!(negotiate_protocol_version(Some("2099-01-01")), LATEST_PROTOCOL_VERSION);
        assert_eq!(negotiate_protocol_version(Some("2024-11-05")), LATEST_PROTOCOL_VERSION);
        assert_eq!(negotiate_protocol_version(Some("")), LATEST_PROTOCOL_VERSION);
        assert_eq!(negotiate_protocol_version(None), PROTOCOL_VERSION);
    }

    #[test]
    fn the_header_accepts_spoken_revisions_and_a_fixed_answer() {
        let negotiating = VersionAnswer::Negotiate;
        assert!(negotiating.accepts_header("2025-06-18"));
        assert!(!negotiating.accepts_header("1999-01-01"));
        assert!(!negotiating.accepts_header("2025-11-25 "));
        let fixed = VersionAnswer::Fixed("1999-01-01".into());
        assert!(fixed.accepts_header("1999-01-01") && fixed.accepts_header("2025-11-25"));
        assert_eq!(fixed.answer(Some("2025-11-25")).as_deref(), Some("1999-01-01"));
        assert_eq!(VersionAnswer::Omit.answer(Some("2025-11-25")), None);
    }
}
