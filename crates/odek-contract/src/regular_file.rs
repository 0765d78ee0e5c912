//! Opening a file by name when only a regular file will do: every path odek reads or appends
//! to by name (config files, `secrets.env`, approval sets, sessions, `IDENTITY.md`,
//! `AGENTS.md`, `--ctx` and `@path` attachments, task files, replay scripts, the events file,
//! the model's file tools) goes through here, so the rule lives in one place.
//!
//! Guarantees: an open never blocks (a FIFO at the path would otherwise wait for a writer or
//! reader forever — the open is non-blocking and `O_NONBLOCK` is cleared again once the handle
//! is known to be a regular file); anything but a regular file (FIFO, device, socket, directory)
//! is refused with [`NOT_A_REGULAR_FILE`] before a byte is read or written and before anything
//! touches its mode — and before it is even opened, by name (`stat`), since opening some devices
//! has side effects of its own, then again on the open handle (`fstat`), so what was checked is
//! what is used; an open never makes a terminal the controlling one (`O_NOCTTY`); a bounded
//! read never holds more than `limit + 1` bytes. With [`Follow::Never`] a symlink as the last
//! component is refused by the kernel (`O_NOFOLLOW`).
//!
//! It deliberately knows nothing of what the files mean: callers map a missing file to their
//! own "absent" semantics and word their own errors around [`NOT_A_REGULAR_FILE`].
//!
//! [`open_regular_read_at`] names an entry of a directory handle instead of a path and never
//! follows a symlink there, for callers that walk a path one component at a time from a handle
//! they hold (the file tools' confinement root): a symlink there is refused with
//! [`THROUGH_A_SYMLINK`]; the guarantees are otherwise the same.
//!
//! Start at [`read_capped`], [`open_regular_read`], [`read_to_limit`] and [`open_regular_append`].

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// The error text of a path that names something other than a regular file.
pub const NOT_A_REGULAR_FILE: &str = "not a regular file";

/// The error text of an open that met a symlink where it never follows one.
pub const THROUGH_A_SYMLINK: &str = "a symlink on the way";

/// Whether the last path component may be a symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    /// A symlink is followed (paths the operator named).
    Symlinks,
    /// A symlink as the last component is refused (`O_NOFOLLOW`).
    Never,
}

/// The error for a path that is not a regular file (kind `InvalidInput`, text
/// [`NOT_A_REGULAR_FILE`]).
pub fn not_a_regular_file() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, NOT_A_REGULAR_FILE)
}

/// Whether `error` is the one [`not_a_regular_file`] makes.
pub fn is_not_a_regular_file(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::InvalidInput && error.to_string() == NOT_A_REGULAR_FILE
}

/// The error for a symlink met where none is followed (kind `InvalidInput`, text
/// [`THROUGH_A_SYMLINK`]).
pub fn through_a_symlink() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, THROUGH_A_SYMLINK)
}

/// Whether `error` is the one [`through_a_symlink`] makes.
pub fn is_through_a_symlink(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::InvalidInput && error.to_string() == THROUGH_A_SYMLINK
}

/// Opens `path` for reading, never blocking; anything but a regular file is refused. A missing
/// file is the OS error (kind `NotFound`), for the caller to treat as absent.
pub fn open_regular_read(path: &Path, follow: Follow) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    open_regular(path, follow, &mut options)
}

/// Opens `path` for appending, creating it with `mode` when missing, never blocking and never
/// following a symlink; an existing path that is not a regular file is refused before anything
/// is written or its mode touched. The mode of an existing file is left as it is (hardening it
/// is the caller's decision, on the returned handle).
pub fn open_regular_append(path: &Path, mode: u32) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.append(true).create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    #[cfg(not(unix))]
    let _ = mode;
    open_regular(path, Follow::Never, &mut options)
}

/// Before a file is replaced by a rename (an atomic write): an existing `path` that is neither
/// a regular file nor a symlink is refused, so a write never swaps a device or FIFO out of its
/// place (`--record /dev/null` as root must not leave a regular file as `/dev/null`). A symlink
/// is replaced by the rename, not followed, so it is harmless here.
pub fn refuse_non_regular_target(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.is_file() || metadata.file_type().is_symlink() => Ok(()),
        Ok(_) => Err(not_a_regular_file()),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(err),
    }
}

/// [`open_regular_read`] for `name`, one entry of the directory `dir`, never following a symlink
/// there. Looked at first without opening it (`fstatat`, not following): a symlink is refused
/// with [`through_a_symlink`], a directory with the OS's `EISDIR`, anything else but a regular
/// file with [`not_a_regular_file`], a missing entry is the OS's `ENOENT`; then opened
/// `O_NOFOLLOW`, non-blocking and `O_NOCTTY`, its type checked again on the handle.
#[cfg(unix)]
pub fn open_regular_read_at(dir: std::os::fd::BorrowedFd<'_>, name: &std::ffi::OsStr) -> io::Result<File> {
    use nix::fcntl::{AtFlags, OFlag, openat};
    use nix::sys::stat::{Mode, SFlag, fstatat};
    let stat = fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW)?;
    let format = SFlag::from_bits_truncate(stat.st_mode & SFlag::S_IFMT.bits());
    if format == SFlag::S_IFLNK {
        return Err(through_a_symlink());
    }
    if format == SFlag::S_IFDIR {
        return Err(io::Error::from_raw_os_error(nix::libc::EISDIR));
    }
    if format != SFlag::S_IFREG {
        return Err(not_a_regular_file());
    }
    let flags = OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    match openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => blocking_regular(File::from(fd)),
        Err(nix::errno::Errno::ELOOP) => Err(through_a_symlink()),
        Err(nix::errno::Errno::ENXIO) => Err(not_a_regular_file()),
        Err(errno) => Err(errno.into()),
    }
}

/// What a bounded read found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bounded {
    /// The whole file, at most `limit` bytes.
    Contents(Vec<u8>),
    /// The file holds more than `limit` bytes; `size` is at least `limit + 1` (the larger of the
    /// bytes read and the size the file reports).
    TooLarge { size: u64 },
}

/// Reads at most `limit + 1` bytes of `file`; more than `limit` is [`Bounded::TooLarge`]. A file
/// whose size is already over `limit` is refused without reading it, and one that grows while it
/// is read is still cut off at the bound.
pub fn read_to_limit(file: &File, limit: u64) -> io::Result<Bounded> {
    let reported = file.metadata()?.len();
    if reported > limit {
        return Ok(Bounded::TooLarge { size: reported });
    }
    let bytes = read_past_limit(file, limit)?;
    let read = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if read > limit {
        let reported = file.metadata().map(|metadata| metadata.len()).unwrap_or(0);
        return Ok(Bounded::TooLarge { size: reported.max(read) });
    }
    Ok(Bounded::Contents(bytes))
}

/// Reads at most `limit + 1` bytes of `file`: the first `limit` bytes and, when the file goes
/// on, one more to show it (for callers that keep the start of a long file).
pub fn read_past_limit(file: &File, limit: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The capped read of a file by name: [`open_regular_read`] then [`read_to_limit`], so it never
/// blocks, refuses anything but a regular file and never holds more than `limit + 1` bytes.
pub fn read_capped(path: &Path, follow: Follow, limit: u64) -> io::Result<Bounded> {
    read_to_limit(&open_regular_read(path, follow)?, limit)
}

/// Refuses, by name and without opening it, a path that exists and is not a regular file
/// (following a final symlink only under [`Follow::Symlinks`]; under [`Follow::Never`] the
/// open's `O_NOFOLLOW` refuses one). A missing path passes: the open reports it, or creates it.
/// A directory passes too: opening one never blocks, and a write open keeps its OS error
/// (`Is a directory`), which the events sink reports as the spec says.
fn refuse_non_regular_by_name(path: &Path, follow: Follow) -> io::Result<()> {
    let metadata = match follow {
        Follow::Symlinks => std::fs::metadata(path),
        Follow::Never => std::fs::symlink_metadata(path),
    };
    match metadata {
        Ok(metadata) if metadata.is_file() || metadata.is_dir() || metadata.file_type().is_symlink() => Ok(()),
        Ok(_) => Err(not_a_regular_file()),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(err),
    }
}

#[cfg(unix)]
fn open_regular(path: &Path, follow: Follow, options: &mut std::fs::OpenOptions) -> io::Result<File> {
    use nix::fcntl::OFlag;
    use std::os::unix::fs::OpenOptionsExt;
    refuse_non_regular_by_name(path, follow)?;
    // The name may change between the stat and the open: the type is checked again on the
    // handle, and the open itself never blocks.
    let mut flags = OFlag::O_NONBLOCK | OFlag::O_NOCTTY;
    if follow == Follow::Never {
        flags |= OFlag::O_NOFOLLOW;
    }
    let file = match options.custom_flags(flags.bits()).open(path) {
        Ok(file) => file,
        // A FIFO without a reader refuses a non-blocking write-only open with ENXIO; so does a
        // device without its driver. Either way it is not a regular file.
        Err(err) if err.raw_os_error() == Some(nix::errno::Errno::ENXIO as i32) => return Err(not_a_regular_file()),
        Err(err) => return Err(err),
    };
    blocking_regular(file)
}

/// A handle opened non-blocking, checked to be a regular file and switched back to blocking.
#[cfg(unix)]
fn blocking_regular(file: File) -> io::Result<File> {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    if !file.metadata()?.is_file() {
        return Err(not_a_regular_file());
    }
    let status = OFlag::from_bits_retain(fcntl(&file, FcntlArg::F_GETFL)?);
    fcntl(&file, FcntlArg::F_SETFL(status - OFlag::O_NONBLOCK))?;
    Ok(file)
}

#[cfg(not(unix))]
fn open_regular(path: &Path, follow: Follow, options: &mut std::fs::OpenOptions) -> io::Result<File> {
    refuse_non_regular_by_name(path, follow)?;
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(not_a_regular_file());
    }
    Ok(file)
}

#[cfg(all(test, unix))]
mod tests {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn fifo(dir: &Path) -> std::path::PathBuf {
        let path = dir.join("fifo");
        if let Err(err) = nix::unistd::mkfifo(&path, nix::sys::stat::Mode::S_IRWXU) {
            panic!("mkfifo {}: {err}", path.display());
        }
        path
    }

    #[test]
    fn a_fifo_is_refused_without_blocking_either_way() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = fifo(dir.path());
        let read = open_regular_read(&fifo, Follow::Symlinks).unwrap_err();
        assert!(is_not_a_regular_file(&read), "{read}");
        let append = open_regular_append(&fifo, 0o600).unwrap_err();
        assert!(is_not_a_regular_file(&append), "{append}");
        assert_eq!(append.to_string(), NOT_A_REGULAR_FILE);
    }

    /// Before: the path was opened (non-blocking) and only then its type checked, so a writer
    /// waiting on a FIFO was let through by the open alone — the side effect some devices have.
    /// Now nothing is opened: the writer is still waiting afterwards.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_special_file_is_refused_before_it_is_opened_red() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = fifo(dir.path());
        let (tid_sender, tid) = std::sync::mpsc::channel();
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                tid_sender.send(nix::unistd::gettid()).unwrap();
                // Blocks until some reader opens the FIFO.
                std::fs::OpenOptions::new().write(true).open(&fifo).is_ok()
            })
        };
        let wchan = std::path::PathBuf::from(format!("/proc/self/task/{}/wchan", tid.recv().unwrap()));
        let waiting = || std::fs::read_to_string(&wchan).is_ok_and(|wchan| wchan.trim() == "wait_for_partner");
        // Nothing notifies us that a thread entered the kernel's wait: poll its wait channel.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !waiting() {
            assert!(std::time::Instant::now() < deadline, "the writer never blocked in open");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let read = open_regular_read(&fifo, Follow::Symlinks).unwrap_err();
        assert!(is_not_a_regular_file(&read), "{read}");
        assert!(waiting(), "opening the FIFO let the writer through");
        // Release the writer.
        drop(std::fs::File::open(&fifo).unwrap());
        assert!(writer.join().unwrap());
    }

    #[test]
    fn a_device_and_a_directory_are_refused_and_the_device_mode_is_untouched() {
        let before = std::fs::metadata("/dev/null").unwrap().permissions().mode();
        assert!(is_not_a_regular_file(&open_regular_append(Path::new("/dev/null"), 0o600).unwrap_err()));
        assert!(is_not_a_regular_file(&open_regular_read(Path::new("/dev/null"), Follow::Symlinks).unwrap_err()));
        assert_eq!(std::fs::metadata("/dev/null").unwrap().permissions().mode(), before);
        let dir = tempfile::tempdir().unwrap();
        assert!(is_not_a_regular_file(&open_regular_read(dir.path(), Follow::Symlinks).unwrap_err()));
        // A write open of a directory keeps its OS error, as the events sink's spec says.
        assert_eq!(open_regular_append(dir.path(), 0o600).unwrap_err().raw_os_error(), Some(nix::libc::EISDIR));
    }

    #[test]
    fn a_regular_file_opens_blocking_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut file = open_regular_append(&path, 0o600).unwrap();
        file.write_all(b"one\n").unwrap();
        let flags = nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_GETFL).unwrap();
        assert_eq!(flags & nix::libc::O_NONBLOCK, 0);
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(read_capped(&path, Follow::Never, 4).unwrap(), Bounded::Contents(b"one\n".to_vec()));
        assert_eq!(read_capped(&path, Follow::Never, 3).unwrap(), Bounded::TooLarge { size: 4 });
    }

    #[test]
    fn no_follow_refuses_a_symlink_and_follow_reads_through_it() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "x").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(open_regular_read(&link, Follow::Never).is_err());
        assert!(open_regular_append(&link, 0o600).is_err());
        assert!(open_regular_read(&link, Follow::Symlinks).is_ok());
    }

    #[test]
    fn an_entry_of_a_handle_opens_only_as_a_regular_file_and_never_through_a_symlink() {
        use std::ffi::OsStr;
        use std::os::fd::AsFd;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("file"), "x").unwrap();
        std::os::unix::fs::symlink(dir.path().join("file"), dir.path().join("link")).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        fifo(dir.path());
        let handle = std::fs::File::open(dir.path()).unwrap();
        let at = |name: &str| open_regular_read_at(handle.as_fd(), OsStr::new(name));
        let mut opened = at("file").unwrap();
        let flags = nix::fcntl::fcntl(&opened, nix::fcntl::FcntlArg::F_GETFL).unwrap();
        assert_eq!(flags & nix::libc::O_NONBLOCK, 0, "blocking again once known regular");
        let mut text = String::new();
        opened.read_to_string(&mut text).unwrap();
        assert_eq!(text, "x");
        assert!(is_through_a_symlink(&at("link").unwrap_err()));
        assert_eq!(at("sub").unwrap_err().kind(), io::ErrorKind::IsADirectory);
        assert!(is_not_a_regular_file(&at("fifo").unwrap_err()));
        assert_eq!(at("missing").unwrap_err().kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn a_missing_file_is_not_found_and_a_replace_target_may_be_absent() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        assert_eq!(open_regular_read(&missing, Follow::Never).unwrap_err().kind(), io::ErrorKind::NotFound);
        assert!(refuse_non_regular_target(&missing).is_ok());
        assert!(is_not_a_regular_file(&refuse_non_regular_target(Path::new("/dev/null")).unwrap_err()));
        assert!(is_not_a_regular_file(&refuse_non_regular_target(&fifo(dir.path())).unwrap_err()));
    }
}
