//! The sessions directory (spec `loop-and-sessions.md` §10.1): `<id>.json` per session plus
//! `index.json`. Saves redact, keep the safe state, apply the storage cap and write atomically;
//! loads are capped, never follow a symlink and check the embedded ID. Start at
//! [`SessionStore::save`] and [`SessionStore::load`].

use std::io;
use std::path::PathBuf;

use serde::Deserialize;

use super::file::{ReadError, create_private_dir, read_no_follow, write_atomically};
use super::index::{INDEX_FILE_NAME, IndexEntry, ListedFile, MAX_INDEX_BYTES, is_index_fresh, sort_newest_first};
use super::trim::trim_to_storage_limit;
use super::{Session, SessionError, SessionId, SessionLock};

/// Largest session file a load accepts and a save writes (32 MiB).
pub const MAX_SESSION_FILE_BYTES: u64 = 32 * 1024 * 1024;

/// The directory beside the sessions directory that holds their lock files.
const LOCKS_DIR_NAME: &str = "session-locks";

/// The file-name suffix of session files.
const SESSION_FILE_SUFFIX: &str = ".json";

/// What a save did that the caller reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaveReport {
    /// Messages in the saved file (the `message_count` of `session_saved`).
    pub message_count: usize,
    /// Message groups the storage cap removed from this save.
    pub removed_groups: usize,
    /// The storage-cap warning, once per session and process, without the `odek: warning: `
    /// prefix the console adds.
    pub warning: Option<String>,
}

/// The sessions directory.
#[derive(Debug, Clone)]
pub struct SessionStore {
    dir: PathBuf,
    /// Where [`SessionStore::lock`] keeps the lock files: beside the sessions, never among them.
    locks_dir: PathBuf,
    artifacts_dir: Option<PathBuf>,
    max_file_bytes: u64,
}

impl SessionStore {
    /// Opens `dir` (normally `~/.odek/sessions`), creating it and missing parents with mode 0700.
    pub fn new(dir: PathBuf) -> Result<SessionStore, SessionError> {
        create_private_dir(&dir).map_err(|err| SessionError::io(format!("create {}", dir.display()), err))?;
        let locks_dir = dir.with_file_name(LOCKS_DIR_NAME);
        Ok(SessionStore { dir, locks_dir, artifacts_dir: None, max_file_bytes: MAX_SESSION_FILE_BYTES })
    }

    /// Takes the one-writer lock of a session (see [`SessionLock`]); hold it from before the
    /// session is loaded until the last save.
    pub fn lock(&self, id: &SessionId) -> Result<SessionLock, SessionError> {
        SessionLock::acquire(&self.locks_dir, id)
    }

    /// Deleting a session also removes `<artifacts_dir>/<id>/` (normally `~/.odek/artifacts`).
    pub fn with_artifacts_dir(mut self, artifacts_dir: PathBuf) -> SessionStore {
        self.artifacts_dir = Some(artifacts_dir);
        self
    }

    /// Overrides the 32 MiB file cap (tests exercise the cap with small files).
    pub fn with_max_file_bytes(mut self, max_file_bytes: u64) -> SessionStore {
        self.max_file_bytes = max_file_bytes;
        self
    }

    /// `<dir>/<id>.json`. The name `index` is refused: its file is the index.
    pub fn session_path(&self, id: &SessionId) -> Result<PathBuf, SessionError> {
        let file_name = format!("{id}{SESSION_FILE_SUFFIX}");
        if file_name == INDEX_FILE_NAME {
            return Err(SessionError::InvalidId(id.to_string()));
        }
        Ok(self.dir.join(file_name))
    }

    /// Writes the session file ([`SessionStore::save_file`]), then brings its index entry up to
    /// date ([`SessionStore::index`]).
    pub fn save(&self, session: &mut Session) -> Result<SaveReport, SessionError> {
        let report = self.save_file(session)?;
        self.index(session);
        Ok(report)
    }

    /// Writes the session file alone: `updated_at`, `turns` and (once) `task` are refreshed on
    /// `session`; the file gets the latest safe state with secrets redacted, trimmed to the cap,
    /// as compact JSON, atomically, mode 0600. The index is left as it was, so it reads as stale
    /// (and readers scan) until [`SessionStore::index`] catches up: what the saves between the
    /// first and the last of a turn do, since updating the index lists the whole directory.
    pub fn save_file(&self, session: &mut Session) -> Result<SaveReport, SessionError> {
        let path = self.session_path(&session.id)?;
        session.refresh_for_save();
        let mut stored = session.stored_copy();
        let id = stored.id.to_string();
        let max_bytes = usize::try_from(self.max_file_bytes).unwrap_or(usize::MAX);
        let messages = std::mem::take(&mut stored.messages);
        let fixed_bytes = encode(&stored)?.len();
        let trim = trim_to_storage_limit(messages, fixed_bytes, max_bytes)
            .ok_or_else(|| SessionError::TooLargeToSave { id: id.clone(), max: self.max_file_bytes })?;
        stored.messages = trim.messages;
        let bytes = encode(&stored)?;
        if bytes.len() > max_bytes {
            return Err(SessionError::TooLargeToSave { id, max: self.max_file_bytes });
        }
        write_atomically(&self.dir, &path, &bytes)
            .map_err(|err| SessionError::io(format!("save {}", odek_contract::quoting::quote(&id)), err))?;
        let warning = (trim.removed_groups > 0 && !session.storage_warned).then(|| {
            session.storage_warned = true;
            storage_limit_warning(&session.id, self.max_file_bytes)
        });
        Ok(SaveReport { message_count: stored.messages.len(), removed_groups: trim.removed_groups, warning })
    }

    /// Puts `session`'s entry into the index, best effort: a failed write is logged and leaves
    /// the index stale, which readers detect.
    pub fn index(&self, session: &Session) {
        if let Err(err) = self.update_index(IndexEntry::of(session)) {
            tracing::warn!("{err}");
        }
    }

    /// Loads a session by ID.
    pub fn load(&self, id: &SessionId) -> Result<Session, SessionError> {
        let bytes = self.read_session_file(id)?;
        decode_session(id, &bytes)
    }

    /// The session file's text as stored, after the same checks as [`SessionStore::load`].
    pub fn load_json(&self, id: &SessionId) -> Result<String, SessionError> {
        let bytes = self.read_session_file(id)?;
        decode_session(id, &bytes)?;
        String::from_utf8(bytes).map_err(|err| SessionError::Corrupt { id: id.to_string(), detail: err.to_string() })
    }

    /// The most recently updated session that loads, if any: the index's newest entry when the
    /// index is fresh, otherwise a directory scan; sessions whose file fails to load are skipped.
    pub fn latest(&self) -> Result<Option<Session>, SessionError> {
        for entry in self.list()? {
            let Ok(id) = SessionId::parse(&entry.id) else { continue };
            match self.load(&id) {
                Ok(session) => return Ok(Some(session)),
                Err(err) => tracing::debug!("latest: skipping {}: {err}", entry.id),
            }
        }
        Ok(None)
    }

    /// Every session's summary, newest first. Uses the index when fresh; otherwise rebuilds it
    /// from a scan (files that fail to load are left out) and rewrites it, best effort.
    pub fn list(&self) -> Result<Vec<IndexEntry>, SessionError> {
        let files = self.list_session_files()?;
        let mut entries = match self.fresh_index(&files, None) {
            Some(entries) => entries,
            None => {
                let entries = self.scan(&files);
                if let Err(err) = self.write_index(entries.clone()) {
                    tracing::warn!("{err}");
                }
                entries
            }
        };
        sort_newest_first(&mut entries);
        Ok(entries)
    }

    /// Removes the session file, its index entry and, when an artifacts directory is set,
    /// `<artifacts>/<id>/` without following any link (see
    /// `crate::subagent::artifacts::remove_session_artifacts`). An unknown ID is an error, and
    /// so is a session another process is using ([`SessionError::InUse`]).
    pub fn delete(&self, id: &SessionId) -> Result<(), SessionError> {
        let path = self.session_path(id)?;
        let not_found = || SessionError::NotFound { action: "delete", id: id.to_string() };
        if std::fs::symlink_metadata(&path).is_err_and(|err| err.kind() == io::ErrorKind::NotFound) {
            return Err(not_found());
        }
        let lock = self.lock(id)?;
        std::fs::remove_file(&path).map_err(|err| match err.kind() {
            io::ErrorKind::NotFound => not_found(),
            _ => SessionError::io(format!("delete {}", odek_contract::quoting::quote(id.as_str())), err),
        })?;
        if let Some((mut entries, _)) = self.read_index() {
            entries.retain(|entry| entry.id != id.as_str());
            if let Err(err) = self.write_index(entries) {
                tracing::warn!("{err}");
            }
        }
        if let Some(artifacts_dir) = &self.artifacts_dir {
            crate::subagent::artifacts::remove_session_artifacts(artifacts_dir, id.as_str()).map_err(|err| {
                SessionError::io(format!("delete artifacts {}", artifacts_dir.join(id.as_str()).display()), err)
            })?;
        }
        // Removed while still held: a process that opens the old file now finds no session.
        let _ = std::fs::remove_file(lock.path());
        Ok(())
    }

    fn read_session_file(&self, id: &SessionId) -> Result<Vec<u8>, SessionError> {
        let path = self.session_path(id)?;
        read_no_follow(&path, self.max_file_bytes).map_err(|err| {
            let id = id.to_string();
            match err {
                ReadError::NotFound => SessionError::NotFound { action: "load", id },
                ReadError::Symlink => SessionError::Symlink { id },
                ReadError::NotRegularFile => SessionError::NotRegularFile { id },
                ReadError::TooLarge(size) => SessionError::TooLarge { id, size, max: self.max_file_bytes },
                ReadError::Io(err) => SessionError::io(format!("load {}", odek_contract::quoting::quote(&id)), err),
            }
        })
    }

    /// Upserts one entry, starting from the fresh index or a rebuild when it is not.
    fn update_index(&self, entry: IndexEntry) -> Result<(), SessionError> {
        let files = self.list_session_files()?;
        let mut entries = self.fresh_index(&files, Some(&entry.id)).unwrap_or_else(|| {
            let others: Vec<ListedFile> = files.iter().filter(|file| file.id != entry.id).cloned().collect();
            self.scan(&others)
        });
        entries.retain(|existing| existing.id != entry.id);
        entries.push(entry);
        self.write_index(entries)
    }

    fn write_index(&self, mut entries: Vec<IndexEntry>) -> Result<(), SessionError> {
        sort_newest_first(&mut entries);
        let bytes = serde_json::to_vec(&entries)
            .map_err(|err| SessionError::Encode { id: "index".to_owned(), detail: err.to_string() })?;
        write_atomically(&self.dir, &self.dir.join(INDEX_FILE_NAME), &bytes)
            .map_err(|err| SessionError::io(format!("write {INDEX_FILE_NAME}"), err))
    }

    /// The index and its modification time, when it exists and parses.
    fn read_index(&self) -> Option<(Vec<IndexEntry>, std::time::SystemTime)> {
        let path = self.dir.join(INDEX_FILE_NAME);
        let bytes = read_no_follow(&path, MAX_INDEX_BYTES).ok()?;
        let modified = std::fs::symlink_metadata(&path).and_then(|metadata| metadata.modified()).ok()?;
        let entries = serde_json::from_slice(&bytes).ok()?;
        Some((entries, modified))
    }

    fn fresh_index(&self, files: &[ListedFile], ignore: Option<&str>) -> Option<Vec<IndexEntry>> {
        let (entries, modified) = self.read_index()?;
        is_index_fresh(&entries, modified, files, ignore).then_some(entries)
    }

    /// Loads every listed file, keeping the entries of those that load.
    fn scan(&self, files: &[ListedFile]) -> Vec<IndexEntry> {
        files
            .iter()
            .filter_map(|file| {
                let id = SessionId::parse(&file.id).ok()?;
                match self.load(&id) {
                    Ok(session) => Some(IndexEntry::of(&session)),
                    Err(err) => {
                        tracing::debug!("session scan: skipping {}: {err}", file.id);
                        None
                    }
                }
            })
            .collect()
    }

    /// The `<id>.json` names in the directory whose ID is valid (temp files and the index are
    /// not sessions). A missing directory lists nothing.
    fn list_session_files(&self) -> Result<Vec<ListedFile>, SessionError> {
        let read_dir = match std::fs::read_dir(&self.dir) {
            Ok(read_dir) => read_dir,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(err) => return Err(SessionError::io(format!("list {}", self.dir.display()), err)),
        };
        let mut files = Vec::new();
        for entry in read_dir {
            let entry = entry.map_err(|err| SessionError::io(format!("list {}", self.dir.display()), err))?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else { continue };
            let Some(id) = name.strip_suffix(SESSION_FILE_SUFFIX) else { continue };
            if name == INDEX_FILE_NAME || SessionId::parse(id).is_err() {
                continue;
            }
            // entry.metadata() does not follow symlinks; a linked file is listed and then refused by load.
            let Ok(modified) = entry.metadata().and_then(|metadata| metadata.modified()) else { continue };
            files.push(ListedFile { id: id.to_owned(), modified });
        }
        Ok(files)
    }
}

/// `session <id> exceeded <cap> bytes on write — oldest messages trimmed to stay within the load
/// cap` (the console prefixes `odek: warning: `).
fn storage_limit_warning(id: &SessionId, max_bytes: u64) -> String {
    format!("session {id} exceeded {max_bytes} bytes on write — oldest messages trimmed to stay within the load cap")
}

/// Parses a session file read for `id`: the embedded ID must equal `id`, then the whole session
/// is decoded.
fn decode_session(id: &SessionId, bytes: &[u8]) -> Result<Session, SessionError> {
    #[derive(Deserialize)]
    struct EmbeddedId {
        #[serde(default)]
        id: String,
    }
    let corrupt = |err: serde_json::Error| SessionError::Corrupt { id: id.to_string(), detail: err.to_string() };
    let embedded: EmbeddedId = serde_json::from_slice(bytes).map_err(corrupt)?;
    if embedded.id != id.as_str() {
        return Err(SessionError::IdMismatch { id: id.to_string(), found: embedded.id });
    }
    let mut session: Session = serde_json::from_slice(bytes).map_err(corrupt)?;
    session.note_loaded();
    Ok(session)
}

fn encode(session: &Session) -> Result<Vec<u8>, SessionError> {
    serde_json::to_vec(session)
        .map_err(|err| SessionError::Encode { id: session.id.to_string(), detail: err.to_string() })
}
