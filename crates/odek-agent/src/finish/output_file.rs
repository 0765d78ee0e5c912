//! \[beyond\] `--output-file <path>`: the accepted final answer written to a file, atomically —
//! a temporary file in the same directory (mode 0600), fsynced, renamed over the path, the
//! directory fsynced — so a reader sees the previous file or the whole answer, never part of
//! it. A symlink at the path is refused, not followed or replaced, and so is anything but a
//! regular file (a FIFO, a device, a directory): the path is checked before the run starts
//! ([`check_output_path`]) and again just before the rename ([`write_output_file`]), and the
//! rename itself never writes through a link. Start at [`write_output_file`].

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::session::file::write_atomically;

/// Why the answer cannot be written to `--output-file`.
#[derive(Debug, thiserror::Error)]
pub enum OutputFileError {
    #[error("--output-file {path}: refusing to write to a symlink")]
    Symlink { path: String },
    #[error("--output-file {path}: not a regular file")]
    NotRegularFile { path: String },
    #[error("--output-file {path}: parent directory {dir} must already exist")]
    ParentMissing { path: String, dir: String },
    #[error("--output-file {path}: {source}")]
    Io { path: String, source: std::io::Error },
}

/// What was written: `run_completed`'s `output_sha256` (lowercase hex of SHA-256 of the bytes)
/// and `output_bytes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputWritten {
    pub sha256: String,
    pub bytes: u64,
}

/// The refusals, by name: a path whose parent is not an existing directory, a symlink, an
/// existing path that is not a regular file. A missing file is fine (it is created).
pub fn check_output_path(path: &Path) -> Result<(), OutputFileError> {
    let shown = path.display().to_string();
    let dir = parent_of(path);
    if !std::fs::metadata(dir).is_ok_and(|metadata| metadata.is_dir()) {
        return Err(OutputFileError::ParentMissing { path: shown, dir: dir.display().to_string() });
    }
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_symlink() => Err(OutputFileError::Symlink { path: shown }),
        Ok(metadata) if !metadata.is_file() => Err(OutputFileError::NotRegularFile { path: shown }),
        Ok(_) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(OutputFileError::Io { path: shown, source }),
    }
}

/// Replaces `path` with `bytes` (see the module); blocking.
pub fn write_output_file(path: &Path, bytes: &[u8]) -> Result<OutputWritten, OutputFileError> {
    check_output_path(path)?;
    write_atomically(parent_of(path), path, bytes)
        .map_err(|source| OutputFileError::Io { path: path.display().to_string(), source })?;
    Ok(OutputWritten { sha256: hex::encode(Sha256::digest(bytes)), bytes: bytes.len() as u64 })
}

/// The directory a path is in (`.` for a bare name).
fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn the_answer_is_written_whole_with_mode_0600() {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("answer.json");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let written = write_output_file(&path, b"{\"a\":1}").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{\"a\":1}");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(written.bytes, 7);
        assert_eq!(written.sha256, hex::encode(Sha256::digest(b"{\"a\":1}")));
        // Nothing but the answer is left in the directory.
        assert_eq!(std::fs::read_dir(temp.path()).unwrap().count(), 1);
    }

    /// Before: the link's target would have been replaced, or the link by a file the operator
    /// did not ask for.
    #[test]
    fn a_symlink_at_the_path_is_refused_and_left_alone_red() {
        let temp = tempfile::tempdir().unwrap();
        let target = temp.path().join("target");
        std::fs::write(&target, "keep").unwrap();
        let link = temp.path().join("answer.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let error = write_output_file(&link, b"x").unwrap_err();
        assert_eq!(error.to_string(), format!("--output-file {}: refusing to write to a symlink", link.display()));
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    }

    #[test]
    fn special_files_and_missing_parents_are_refused() {
        let temp = tempfile::tempdir().unwrap();
        let fifo = temp.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(matches!(write_output_file(&fifo, b"x"), Err(OutputFileError::NotRegularFile { .. })));
        assert!(matches!(check_output_path(temp.path()), Err(OutputFileError::NotRegularFile { .. })));
        let orphan = temp.path().join("missing").join("answer.json");
        assert!(matches!(check_output_path(&orphan), Err(OutputFileError::ParentMissing { .. })));
    }
}
