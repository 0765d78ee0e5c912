//! `index.json` (spec `loop-and-sessions.md` §10.1): one summary entry per session, a cache
//! that lets `latest` and `list` avoid loading every session. It is never trusted blindly: the
//! store checks it against the directory ([`is_index_fresh`]) and rebuilds it from a scan when
//! it is missing, unreadable or stale.

use std::cmp::Reverse;
use std::collections::BTreeSet;
use std::time::SystemTime;

use chrono::{DateTime, Utc};
use odek_contract::redaction::redact;
use serde::{Deserialize, Serialize};

use super::Session;

/// The index file's name inside the sessions directory.
pub(crate) const INDEX_FILE_NAME: &str = "index.json";
/// Longest `index.json` read (16 MiB); a larger one counts as stale.
pub(crate) const MAX_INDEX_BYTES: u64 = 16 * 1024 * 1024;
/// Characters of the task kept in a title.
const TITLE_CHARS: usize = 60;

/// One session's summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IndexEntry {
    /// The session's id.
    pub id: String,
    /// The start of its first task, redacted.
    #[serde(default)]
    pub title: String,
    /// When it started (RFC 3339 UTC).
    #[serde(default)]
    created_at: String,
    /// When it was last saved (RFC 3339 UTC).
    #[serde(default)]
    pub updated_at: String,
    /// Turns run.
    #[serde(default)]
    pub turns: u64,
    /// The model of its latest turn.
    #[serde(default)]
    pub model: String,
    /// Input tokens of every turn.
    #[serde(default)]
    pub input_tokens: u64,
    /// Output tokens of every turn.
    #[serde(default)]
    pub output_tokens: u64,
}

impl IndexEntry {
    /// The entry of `session`, its title cut from the redacted task (redaction is idempotent,
    /// so a stored copy's task gives the same title as the live session's).
    pub(crate) fn of(session: &Session) -> IndexEntry {
        IndexEntry {
            id: session.id.to_string(),
            title: session_title(&redact(&session.task)),
            created_at: session.created_at.clone(),
            updated_at: session.updated_at.clone(),
            turns: session.turns,
            model: session.model.clone(),
            input_tokens: session.input_tokens,
            output_tokens: session.output_tokens,
        }
    }
}

/// The task's first non-empty line, cut to `TITLE_CHARS` characters with `…` when longer.
pub fn session_title(task: &str) -> String {
    let line = task.lines().map(str::trim).find(|line| !line.is_empty()).unwrap_or_default();
    match line.char_indices().nth(TITLE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

/// Sorts newest first: by `updated_at` as a time (unparseable ones last), then by ID descending.
pub(crate) fn sort_newest_first(entries: &mut [IndexEntry]) {
    entries.sort_by_cached_key(|entry| (Reverse(parse_time(&entry.updated_at)), Reverse(entry.id.clone())));
}

/// `updated_at` parsed; `None` sorts before every real time.
pub fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text).ok().map(|time| time.with_timezone(&Utc))
}

/// A session file as the directory listing shows it.
#[derive(Debug, Clone)]
pub(crate) struct ListedFile {
    pub(crate) id: String,
    pub(crate) modified: SystemTime,
}

/// The index is fresh when it names exactly the session files present and no session file was
/// modified after it. `ignore` is a session being saved right now (its file is newer by design).
pub(crate) fn is_index_fresh(
    entries: &[IndexEntry],
    index_modified: SystemTime,
    files: &[ListedFile],
    ignore: Option<&str>,
) -> bool {
    let indexed: BTreeSet<&str> =
        entries.iter().map(|entry| entry.id.as_str()).filter(|id| Some(*id) != ignore).collect();
    let present: BTreeSet<&str> = files.iter().map(|file| file.id.as_str()).filter(|id| Some(*id) != ignore).collect();
    indexed == present
        && files.iter().filter(|file| Some(file.id.as_str()) != ignore).all(|file| file.modified <= index_modified)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn titles_take_the_first_line_and_cut_at_60_chars() {
        assert_eq!(session_title("\n  fix the build  \nmore"), "fix the build");
        let long = "é".repeat(70);
        assert_eq!(session_title(&long), format!("{}…", "é".repeat(60)));
        assert_eq!(session_title(&"x".repeat(60)), "x".repeat(60));
    }

    #[test]
    fn newest_first_by_time_then_id() {
        let entry = |id: &str, updated_at: &str| IndexEntry {
            id: id.to_owned(),
            title: String::new(),
            created_at: String::new(),
            updated_at: updated_at.to_owned(),
            turns: 0,
            model: String::new(),
            input_tokens: 0,
            output_tokens: 0,
        };
        let mut entries = vec![
            entry("a", "2025-01-01T00:00:00Z"),
            entry("b", "garbage"),
            entry("c", "2025-01-02T00:00:00.5Z"),
            entry("d", "2025-01-01T00:00:00Z"),
        ];
        sort_newest_first(&mut entries);
        let ids: Vec<&str> = entries.iter().map(|entry| entry.id.as_str()).collect();
        assert_eq!(ids, ["c", "d", "a", "b"]);
    }

    #[test]
    fn freshness_compares_names_and_times() {
        let now = SystemTime::now();
        let entries: Vec<IndexEntry> = serde_json::from_str(r#"[{"id":"a"},{"id":"b"}]"#).unwrap();
        let file = |id: &str, modified| ListedFile { id: id.to_owned(), modified };
        assert!(is_index_fresh(&entries, now, &[file("a", now), file("b", now)], None));
        assert!(!is_index_fresh(&entries, now, &[file("a", now)], None));
        assert!(!is_index_fresh(&entries, now, &[file("a", now), file("b", now + Duration::from_secs(1))], None));
        assert!(is_index_fresh(&entries, now, &[file("a", now), file("b", now + Duration::from_secs(1))], Some("b")));
        assert!(is_index_fresh(&entries, now, &[file("a", now), file("b", now), file("c", now)], Some("c")));
    }
}
