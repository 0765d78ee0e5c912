//! One writer per session (issue 14 [beyond]): a run that appends to a session holds an
//! exclusive advisory lock on `<locks dir>/<id>.lock` for as long as it may save, so a second
//! `odek continue` of the same session refuses at once instead of silently losing a turn.
//!
//! The lock is `flock(2)` on a file that is never removed while in use: the kernel releases it
//! when the holder exits, however it exits (a `kill -9` leaves no stale lock), and the
//! descriptor is close-on-exec, so no tool or server process odek starts can inherit it.
//! Start at [`SessionLock::acquire`].

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use odek_contract::regular_file::read_past_limit;

use super::file::{PRIVATE_FILE_MODE, create_private_dir};
use super::{SessionError, SessionId};

/// Bytes of a lock file read for the holder's pid.
const MAX_PID_BYTES: u64 = 32;

/// Held while a process may save the session; dropping it releases the lock.
#[derive(Debug)]
pub struct SessionLock {
    _file: File,
    path: PathBuf,
}

impl SessionLock {
    /// Takes the lock of `id` in `locks_dir` (created 0700), without waiting: a lock held by
    /// another process is [`SessionError::InUse`] naming that process's pid when it wrote one.
    /// The lock file is opened without following a symlink and without blocking on a FIFO, and
    /// must be a regular file.
    pub(crate) fn acquire(locks_dir: &Path, id: &SessionId) -> Result<SessionLock, SessionError> {
        let context = || format!("lock {}", odek_contract::quoting::quote(id.as_str()));
        create_private_dir(locks_dir).map_err(|err| SessionError::io(context(), err))?;
        let path = lock_path(locks_dir, id);
        let flags = nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(PRIVATE_FILE_MODE)
            .custom_flags(flags.bits())
            .open(&path)
            .map_err(|err| SessionError::io(context(), err))?;
        let metadata = file.metadata().map_err(|err| SessionError::io(context(), err))?;
        if !metadata.is_file() {
            return Err(SessionError::io(
                context(),
                io::Error::new(io::ErrorKind::InvalidInput, format!("{} is not a regular file", path.display())),
            ));
        }
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(SessionError::InUse { id: id.to_string(), pid: holder_pid(&mut file) });
            }
            Err(TryLockError::Error(err)) => return Err(SessionError::io(context(), err)),
        }
        // Only for the message a second process prints; the lock itself is the flock.
        let pid = std::process::id().to_string();
        let written = file.set_len(0).and_then(|()| file.rewind()).and_then(|()| file.write_all(pid.as_bytes()));
        if let Err(err) = written {
            tracing::debug!("session lock {}: could not record the pid: {err}", path.display());
        }
        Ok(SessionLock { _file: file, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// `<locks dir>/<id>.lock`.
fn lock_path(locks_dir: &Path, id: &SessionId) -> PathBuf {
    locks_dir.join(format!("{id}.lock"))
}

/// The pid the holder wrote, if it is one.
fn holder_pid(file: &mut File) -> Option<u32> {
    file.rewind().ok()?;
    let bytes = read_past_limit(file, MAX_PID_BYTES).ok()?;
    std::str::from_utf8(&bytes).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> SessionId {
        SessionId::parse("20261201-120000-abcdef").unwrap()
    }

    #[test]
    fn a_second_holder_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let locks = dir.path().join("session-locks");
        let first = SessionLock::acquire(&locks, &id()).unwrap();
        let err = SessionLock::acquire(&locks, &id()).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "session: \"{}\" is in use by another odek process (pid {}); wait for it to finish, or continue another session",
                id(),
                std::process::id()
            )
        );
        drop(first);
        let again = SessionLock::acquire(&locks, &id()).unwrap();
        assert_eq!(again.path(), lock_path(&locks, &id()));
    }

    #[test]
    fn a_fifo_or_a_symlink_at_the_lock_path_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        nix::unistd::mkfifo(&lock_path(dir.path(), &id()), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let err = SessionLock::acquire(dir.path(), &id()).unwrap_err();
        assert!(err.to_string().contains("is not a regular file"), "{err}");
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("target"), "").unwrap();
        let locks = other.path().join("locks");
        std::fs::create_dir(&locks).unwrap();
        std::os::unix::fs::symlink(other.path().join("target"), lock_path(&locks, &id())).unwrap();
        assert!(SessionLock::acquire(&locks, &id()).is_err());
    }
}
