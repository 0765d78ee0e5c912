//! The file-system rules of session storage (spec `loop-and-sessions.md` §10.1): private
//! directories, atomic writes (exclusive temp file in the same directory, write, fsync, rename,
//! fsync the directory) and bounded reads that never follow a symlink. Knows nothing of JSON.

use std::fs::{DirBuilder, File, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

use odek_contract::regular_file::{Bounded, Follow, is_not_a_regular_file, open_regular_read, read_to_limit};

/// Mode of directories this module creates.
const PRIVATE_DIR_MODE: u32 = 0o700;
/// Mode of files this module writes.
pub(crate) const PRIVATE_FILE_MODE: u32 = 0o600;

/// Creates `dir` and missing parents with mode 0700 (existing directories are left as they are).
pub(crate) fn create_private_dir(dir: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(PRIVATE_DIR_MODE).create(dir)
}

/// Replaces `target` (in `dir`) with `bytes` so that a reader sees either the old file or the new
/// one, never a mix, and the new file survives a crash once this returns. The file is mode 0600;
/// a symlink at `target` is replaced, not followed.
pub(crate) fn write_atomically(dir: &Path, target: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut temp = tempfile::Builder::new()
        .prefix(".tmp-")
        .suffix(".partial")
        .permissions(Permissions::from_mode(PRIVATE_FILE_MODE))
        .tempfile_in(dir)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    temp.persist(target).map_err(|err| err.error)?;
    File::open(dir)?.sync_all()
}

/// Why [`read_no_follow`] returned no bytes.
#[derive(Debug)]
pub(crate) enum ReadError {
    NotFound,
    Symlink,
    NotRegularFile,
    /// The file's size (or the bytes read before giving up) is over the cap.
    TooLarge(u64),
    Io(io::Error),
}

/// Reads the regular file at `path` if it holds at most `max_bytes`. The last path component is
/// opened with `O_NOFOLLOW` (a symlink is refused, not followed) and `O_NONBLOCK` (a FIFO planted
/// in its place cannot block the open).
pub(crate) fn read_no_follow(path: &Path, max_bytes: u64) -> Result<Vec<u8>, ReadError> {
    let file = open_regular_read(path, Follow::Never).map_err(|err| match (err.kind(), err.raw_os_error()) {
        (io::ErrorKind::NotFound, _) => ReadError::NotFound,
        (_, Some(code)) if code == nix::errno::Errno::ELOOP as i32 => ReadError::Symlink,
        _ if is_not_a_regular_file(&err) => ReadError::NotRegularFile,
        _ => ReadError::Io(err),
    })?;
    // Over the cap by its size, or by growing while it is read: refused either way.
    match read_to_limit(&file, max_bytes).map_err(ReadError::Io)? {
        Bounded::Contents(bytes) => Ok(bytes),
        Bounded::TooLarge { size } => Err(ReadError::TooLarge(size)),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_only_the_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("a.json");
        write_atomically(dir.path(), &target, b"one").unwrap();
        write_atomically(dir.path(), &target, b"two").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"two");
        assert_eq!(std::fs::metadata(&target).unwrap().mode() & 0o777, PRIVATE_FILE_MODE);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|entry| entry.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.json")]);
    }

    #[test]
    fn bounded_read_refuses_large_files_and_fifos() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        std::fs::write(&path, vec![b'x'; 11]).unwrap();
        assert!(matches!(read_no_follow(&path, 10), Err(ReadError::TooLarge(11))));
        assert_eq!(read_no_follow(&path, 11).unwrap().len(), 11);
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(matches!(read_no_follow(&fifo, 10), Err(ReadError::NotRegularFile)));
        assert!(matches!(read_no_follow(&dir.path().join("none"), 10), Err(ReadError::NotFound)));
    }
}
