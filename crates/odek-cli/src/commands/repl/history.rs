//! The REPL's input history, `~/.odek/repl_history`: one JSON string per line (so an entry may
//! hold newlines), appended as each input is entered, created with mode 0600. What is loaded is
//! capped (the last [`MAX_LOAD_BYTES`] of the file, at most [`MAX_ENTRIES`] entries); a file over
//! the cap is rewritten to what was loaded, so it never grows without bound. The file is only
//! ever opened as a regular file and never through a symlink; anything wrong with it is one
//! warning and a REPL without saved history, never a failure.

use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use odek_contract::quoting::quote;
use odek_contract::regular_file::{Follow, open_regular_append, open_regular_read};

use crate::terminal::print_warning;

/// The history file's name in `~/.odek`.
pub const HISTORY_FILE: &str = "repl_history";
/// The most of the file's end that is read (bytes).
pub const MAX_LOAD_BYTES: u64 = 1024 * 1024;
/// The most entries kept.
pub const MAX_ENTRIES: usize = 1000;
/// A longer input is not kept in the history (bytes).
pub const MAX_ENTRY_BYTES: usize = 64 * 1024;

/// The history file: where appends go, or nowhere once something was wrong with it.
#[derive(Debug)]
pub struct History {
    path: Option<PathBuf>,
}

impl History {
    /// Loads `<odek_dir>/repl_history`: the entries, oldest first. A missing file is an empty
    /// history; an unreadable one a warning and a history that is not saved.
    pub fn load(odek_dir: &Path) -> (History, Vec<String>) {
        let path = odek_dir.join(HISTORY_FILE);
        match read_entries(&path) {
            Ok(Loaded { entries, skipped, over_cap }) => {
                if skipped > 0 {
                    print_warning(&format!(
                        "repl history {}: {skipped} unreadable line(s) skipped",
                        quote(&path.display().to_string())
                    ));
                }
                let history = History { path: Some(path) };
                if over_cap {
                    history.rewrite(&entries);
                }
                (history, entries)
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => (History { path: Some(path) }, Vec::new()),
            Err(err) => {
                print_warning(&format!(
                    "repl history {}: {err}; history is not saved this session",
                    quote(&path.display().to_string())
                ));
                (History { path: None }, Vec::new())
            }
        }
    }

    /// Whether `entry` is kept in the history at all.
    pub fn keeps(entry: &str) -> bool {
        !entry.trim().is_empty() && entry.len() <= MAX_ENTRY_BYTES
    }

    /// Appends `entry` (when [`History::keeps`] it); a failure is one warning, and no later
    /// entry is written.
    pub fn append(&mut self, entry: &str) {
        if !History::keeps(entry) {
            return;
        }
        let Some(path) = &self.path else { return };
        if let Err(err) = append_entry(path, entry) {
            print_warning(&format!(
                "repl history {}: {err}; history is not saved this session",
                quote(&path.display().to_string())
            ));
            self.path = None;
        }
    }

    /// Replaces the file by `entries` (atomically, mode 0600).
    fn rewrite(&self, entries: &[String]) {
        let Some(path) = &self.path else { return };
        let result = (|| {
            let dir = path.parent().unwrap_or(Path::new("."));
            let mut file = tempfile::NamedTempFile::new_in(dir)?;
            file.as_file().set_permissions(std::fs::Permissions::from_mode(0o600))?;
            for entry in entries {
                writeln!(file, "{}", encode(entry))?;
            }
            file.persist(path).map_err(|err| err.error)?;
            Ok::<(), std::io::Error>(())
        })();
        if let Err(err) = result {
            print_warning(&format!("repl history {}: {err}", quote(&path.display().to_string())));
        }
    }
}

struct Loaded {
    entries: Vec<String>,
    /// Lines that are not a history entry (not UTF-8, not a JSON string).
    skipped: usize,
    /// The file holds more than was loaded.
    over_cap: bool,
}

fn read_entries(path: &Path) -> std::io::Result<Loaded> {
    if std::fs::symlink_metadata(path).is_ok_and(|metadata| metadata.file_type().is_symlink()) {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "a symbolic link, not followed"));
    }
    let mut file = open_regular_read(path, Follow::Never)?;
    let size = file.metadata()?.len();
    let start = size.saturating_sub(MAX_LOAD_BYTES);
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    file.take(MAX_LOAD_BYTES).read_to_end(&mut bytes)?;
    let mut lines: Vec<&[u8]> = bytes.split(|byte| *byte == b'\n').collect();
    if start > 0 && !lines.is_empty() {
        // Read from the middle of the file: the first line is the end of an entry.
        lines.remove(0);
    }
    let mut entries = Vec::new();
    let mut skipped = 0;
    for line in lines.into_iter().filter(|line| !line.is_empty()) {
        match decode(line) {
            Some(entry) => entries.push(entry),
            None => skipped += 1,
        }
    }
    let over_cap = start > 0 || entries.len() > MAX_ENTRIES;
    entries.drain(..entries.len().saturating_sub(MAX_ENTRIES));
    Ok(Loaded { entries, skipped, over_cap })
}

fn encode(entry: &str) -> String {
    serde_json::Value::String(entry.to_owned()).to_string()
}

fn decode(line: &[u8]) -> Option<String> {
    match serde_json::from_slice::<serde_json::Value>(line).ok()? {
        serde_json::Value::String(entry) => Some(entry),
        _ => None,
    }
}

fn append_entry(path: &Path, entry: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent()
        && !dir.exists()
    {
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700).create(dir)?;
    }
    let mut file = open_regular_append(path, 0o600)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(format!("{}\n", encode(entry)).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn entries_round_trip_with_newlines_and_the_file_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let (mut history, entries) = History::load(dir.path());
        assert!(entries.is_empty());
        history.append("first");
        history.append("two\nlines");
        history.append("   ");
        let path = dir.path().join(HISTORY_FILE);
        assert_eq!(mode(&path), 0o600);
        let (_, entries) = History::load(dir.path());
        assert_eq!(entries, ["first", "two\nlines"]);
    }

    #[test]
    fn corrupt_lines_are_skipped_red() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(HISTORY_FILE);
        std::fs::write(&path, b"\"ok\"\n\xff\xfe garbage\n{\"not\":\"a string\"}\nplain\n\"last\"\n").unwrap();
        let (mut history, entries) = History::load(dir.path());
        assert_eq!(entries, ["ok", "last"]);
        history.append("more");
        assert!(std::fs::read(&path).unwrap().ends_with(b"\"more\"\n"));
    }

    /// Before (rustyline's own file history): the file was opened through a symlink, so the
    /// history could be written anywhere the link pointed.
    #[test]
    fn a_symlinked_history_is_neither_read_nor_written_red() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, "\"secret entry\"\n").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join(HISTORY_FILE)).unwrap();
        let (mut history, entries) = History::load(dir.path());
        assert!(entries.is_empty());
        history.append("typed");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "\"secret entry\"\n");
    }

    #[test]
    fn a_fifo_is_refused_without_blocking_red() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(HISTORY_FILE);
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let (mut history, entries) = History::load(dir.path());
        assert!(entries.is_empty());
        history.append("typed");
    }

    #[test]
    fn what_is_loaded_is_capped_and_the_file_cut_to_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(HISTORY_FILE);
        let line = format!("{}\n", encode(&"z".repeat(1000)));
        std::fs::write(&path, line.repeat(2000)).unwrap();
        let (_, entries) = History::load(dir.path());
        assert_eq!(entries.len(), MAX_ENTRIES);
        assert!(std::fs::metadata(&path).unwrap().len() <= MAX_LOAD_BYTES);
        assert_eq!(mode(&path), 0o600);
        let (_, again) = History::load(dir.path());
        assert_eq!(again.len(), MAX_ENTRIES);
    }

    #[test]
    fn long_inputs_are_not_kept() {
        assert!(History::keeps("x"));
        assert!(!History::keeps(&"x".repeat(MAX_ENTRY_BYTES + 1)));
    }
}
