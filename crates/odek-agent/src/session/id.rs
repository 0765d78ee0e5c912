//! Session IDs (spec `loop-and-sessions.md` §10.1): minted as `YYYYMMDD-` (UTC date) plus 32
//! lowercase hex characters from the OS CSPRNG, and validated before any ID reaches a path.
//! Start at [`SessionId::mint`] and [`SessionId::parse`].

use std::fmt;

use serde::{Deserialize, Serialize};

use super::SessionError;

/// Random bytes behind the hex part of a minted ID (16 bytes = 32 hex characters).
const ID_RANDOM_BYTES: usize = 16;

/// A session ID that is safe to use as a file name (`<id>.json`) and a directory name
/// (`~/.odek/artifacts/<id>/`): it can never name a parent directory or a path outside its
/// directory.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SessionId(String);

impl SessionId {
    /// A fresh ID. Failing to get randomness is an error; there is no weaker fallback.
    pub fn mint() -> Result<SessionId, SessionError> {
        let mut random = [0u8; ID_RANDOM_BYTES];
        getrandom::fill(&mut random).map_err(|err| SessionError::Randomness(err.to_string()))?;
        let date = chrono::Utc::now().format("%Y%m%d");
        Ok(SessionId(format!("{date}-{}", hex::encode(random))))
    }

    /// Validates an ID from outside (a flag, a file name, an index entry).
    pub fn parse(id: &str) -> Result<SessionId, SessionError> {
        if is_valid_session_id(id) { Ok(SessionId(id.to_owned())) } else { Err(SessionError::InvalidId(id.to_owned())) }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The §10.1 path rule: non-empty, not `.` or `..`, and no `/`, `\`, `..` or NUL anywhere.
fn is_valid_session_id(id: &str) -> bool {
    !id.is_empty() && id != "." && !id.contains(['/', '\\', '\0']) && !id.contains("..")
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for SessionId {
    type Error = SessionError;

    fn try_from(id: String) -> Result<Self, Self::Error> {
        if is_valid_session_id(&id) { Ok(SessionId(id)) } else { Err(SessionError::InvalidId(id)) }
    }
}

impl From<SessionId> for String {
    fn from(id: SessionId) -> String {
        id.0
    }
}

impl AsRef<str> for SessionId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_ids_have_the_date_and_32_lowercase_hex() {
        let id = SessionId::mint().unwrap();
        let (date, random) = id.as_str().split_once('-').unwrap();
        assert_eq!(date, chrono::Utc::now().format("%Y%m%d").to_string());
        assert_eq!(random.len(), 32);
        assert!(random.chars().all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)), "{id}");
        assert_ne!(SessionId::mint().unwrap(), id);
        assert!(SessionId::parse(id.as_str()).is_ok());
    }

    #[test]
    fn path_characters_are_rejected_with_the_spec_text() {
        for bad in ["", ".", "..", "a/b", "a\\b", "a..b", "a\0b", "../etc"] {
            let err = SessionId::parse(bad).unwrap_err();
            assert_eq!(err.to_string(), format!("session: invalid session ID {}", odek_contract::quoting::quote(bad)));
        }
        assert_eq!(SessionId::parse("a\0b").unwrap_err().to_string(), r#"session: invalid session ID "a\u0000b""#);
        for good in ["20250101-abc", "x", ".hidden", "a.b"] {
            assert!(SessionId::parse(good).is_ok(), "{good}");
        }
    }

    #[test]
    fn deserializing_validates() {
        assert!(serde_json::from_str::<SessionId>(r#""../x""#).is_err());
        assert_eq!(serde_json::from_str::<SessionId>(r#""ok""#).unwrap().as_str(), "ok");
    }
}
