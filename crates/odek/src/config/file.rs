//! Bounded reads of the small files under `~/.odek` and `./odek.json` (spec `config.md` §2).
//!
//! Guarantee: a file is never read past `limit + 1` bytes, whatever its size, so an oversized or
//! endless file (a FIFO, `/dev/zero` behind a symlink) costs at most that much memory. The
//! permission bits come from the open handle, so the mode that is checked is the mode of the
//! file that is read.

use std::fs::File;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// The contract's capped read, used by every config file reader here.
pub(crate) use odek_contract::regular_file::{Bounded, read_to_limit};
use odek_contract::regular_file::{Follow, open_regular_read};

/// Largest config file accepted (5 MiB, in bytes). A larger file is fatal, never truncated.
pub const MAX_CONFIG_BYTES: u64 = 5 * 1024 * 1024;

/// Opens `path` for reading; `None` when it does not exist (a missing file is ignored). The open
/// never blocks (a FIFO shipped as `./odek.json` would otherwise wait for a writer forever) and
/// anything but a regular file is refused.
pub(crate) fn open_if_exists(path: &Path) -> io::Result<Option<File>> {
    match open_regular_read(path, Follow::Symlinks) {
        Ok(file) => Ok(Some(file)),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err),
    }
}

/// The permission bits (`0o777` part) of an open file.
pub(crate) fn permission_bits(file: &File) -> io::Result<u32> {
    Ok(file.metadata()?.permissions().mode() & 0o777)
}

/// True when group or others have any permission on the file. The spec words the warnings as
/// "readable by group or others"; a group-writable secrets file is just as dangerous (anyone in
/// the group could inject variables), so every group/other bit counts.
pub(crate) fn is_group_or_world_accessible(mode: u32) -> bool {
    mode & 0o077 != 0
}

/// Renders permission bits the way the warnings show them: four octal digits (`0644`).
pub(crate) fn render_mode(mode: u32) -> String {
    format!("{mode:04o}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_up_to_the_limit_and_reports_the_real_size_beyond_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"12345").unwrap();
        let file = File::open(&path).unwrap();
        assert!(matches!(read_to_limit(&file, 5).unwrap(), Bounded::Contents(bytes) if bytes == b"12345"));
        let file = File::open(&path).unwrap();
        assert!(matches!(read_to_limit(&file, 4).unwrap(), Bounded::TooLarge { size: 5 }));
    }

    #[test]
    fn missing_file_is_none() {
        let dir = tempfile::tempdir().unwrap();
        assert!(open_if_exists(&dir.path().join("nope")).unwrap().is_none());
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert_eq!(open_if_exists(&fifo).unwrap_err().to_string(), "not a regular file");
        assert_eq!(open_if_exists(dir.path()).unwrap_err().to_string(), "not a regular file");
    }

    #[test]
    fn mode_rendering_and_accessibility() {
        assert_eq!(render_mode(0o644), "0644");
        assert_eq!(render_mode(0o600), "0600");
        assert!(!is_group_or_world_accessible(0o600));
        assert!(!is_group_or_world_accessible(0o700));
        assert!(is_group_or_world_accessible(0o640));
        assert!(is_group_or_world_accessible(0o604));
        assert!(is_group_or_world_accessible(0o620));
    }
}
