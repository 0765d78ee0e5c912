//! The persisted approval sets `~/.odek/mcp_approvals.json` and `~/.odek/mcp_tool_approvals.json`
//! (spec `config.md` §13.3): a JSON object mapping a lowercase hex key to `true`.
//!
//! Guarantees: a missing file is an empty set; an unparseable one is fatal, never silently
//! replaced. Saving writes the whole set to a temp file in the same directory (mode `0600`) and
//! renames it over the old file, so a reader sees either the old or the new set, never a partial
//! one. `~/.odek` is created `0700` when missing; an existing directory keeps its mode.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{DirBuilder, Permissions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::ApprovalError;
use crate::config::MAX_CONFIG_BYTES;
use crate::config::file::{Bounded, open_if_exists, read_to_limit};

/// Largest approval file read (bytes); the same bound as config files.
pub const MAX_APPROVALS_BYTES: u64 = MAX_CONFIG_BYTES;

/// One persisted approval set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalStore {
    path: PathBuf,
    keys: BTreeSet<String>,
}

impl ApprovalStore {
    /// An empty set that will be saved at `path` (nothing is read).
    pub fn empty(path: PathBuf) -> Self {
        ApprovalStore { path, keys: BTreeSet::new() }
    }

    /// Loads the set at `path`. Entries mapped to `false` are not approvals.
    pub fn load(path: PathBuf) -> Result<Self, ApprovalError> {
        let keys = read_keys(&path)?;
        Ok(ApprovalStore { path, keys })
    }

    /// The approvals file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether `key` (a server's or a tool's approval key) is approved.
    pub fn contains(&self, key: &str) -> bool {
        self.keys.contains(key)
    }

    /// Adds `key` and saves the set. Approvals another odek process saved meanwhile are kept:
    /// the file is re-read and merged before writing. On error the key stays approved in
    /// memory for this run.
    pub fn insert_and_save(&mut self, key: String) -> Result<(), ApprovalError> {
        self.insert_all_and_save([key])
    }

    /// [`ApprovalStore::insert_and_save`] for several keys at once, with one write.
    pub fn insert_all_and_save(&mut self, keys: impl IntoIterator<Item = String>) -> Result<(), ApprovalError> {
        self.keys.extend(keys);
        let on_disk = read_keys(&self.path)?;
        self.keys.extend(on_disk);
        write_atomically(&self.path, &self.keys)
            .map_err(|err| ApprovalError::Save { path: self.path.display().to_string(), detail: err.to_string() })
    }
}

fn read_keys(path: &Path) -> Result<BTreeSet<String>, ApprovalError> {
    let display = || path.display().to_string();
    let read_error = |detail: String| ApprovalError::LoadRead { path: display(), detail };
    let Some(file) = open_if_exists(path).map_err(|err| read_error(err.to_string()))? else {
        return Ok(BTreeSet::new());
    };
    let bytes = match read_to_limit(&file, MAX_APPROVALS_BYTES).map_err(|err| read_error(err.to_string()))? {
        Bounded::Contents(bytes) => bytes,
        Bounded::TooLarge { size } => {
            return Err(read_error(format!("file too large ({size} bytes, max {MAX_APPROVALS_BYTES})")));
        }
    };
    let entries: BTreeMap<String, bool> =
        serde_json::from_slice(&bytes).map_err(|source| ApprovalError::LoadParse { path: display(), source })?;
    Ok(entries.into_iter().filter_map(|(key, approved)| approved.then_some(key)).collect())
}

fn write_atomically(path: &Path, keys: &BTreeSet<String>) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let entries: BTreeMap<&str, bool> = keys.iter().map(|key| (key.as_str(), true)).collect();
    let mut text = serde_json::to_string_pretty(&entries)?;
    text.push('\n');
    let mut temp = tempfile::Builder::new()
        .prefix(".mcp_approvals.")
        .suffix(".tmp")
        .permissions(Permissions::from_mode(0o600))
        .tempfile_in(dir)?;
    temp.write_all(text.as_bytes())?;
    temp.as_file().set_permissions(Permissions::from_mode(0o600))?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|err| err.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_with_two_space_indent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".odek").join("mcp_approvals.json");
        let mut store = ApprovalStore::load(path.clone()).unwrap();
        assert!(!store.contains("ab"));
        store.insert_and_save("cd".into()).unwrap();
        store.insert_and_save("ab".into()).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\n  \"ab\": true,\n  \"cd\": true\n}\n");
        let again = ApprovalStore::load(path).unwrap();
        assert!(again.contains("ab") && again.contains("cd"));
    }

    #[test]
    fn false_entries_are_not_approvals() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        std::fs::write(&path, r#"{"ab": false, "cd": true}"#).unwrap();
        let store = ApprovalStore::load(path).unwrap();
        assert!(!store.contains("ab"));
        assert!(store.contains("cd"));
    }
}
