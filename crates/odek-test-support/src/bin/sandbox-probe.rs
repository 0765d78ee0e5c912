//! The confined process of the sandbox's red tests: one action per run, named by the arguments,
//! reported on stdout as `ok <detail>` (exit 0) or `denied <errno name>: <error>` (exit 1), so
//! a test can show that the same action succeeds unconfined and fails confined.
//!
//! Actions: `write <path> <text>`, `read <path>`, `connect <ip:port>` (TCP), `udp <ip:port>`,
//! `unix <path>` (connect to a Unix socket), `ptrace <pid>`, `signal <pid>`, `fork-bomb
//! <count>` (how many children could be made; each waits for a kill), `daemon` (leave a child in
//! a session of its own, its output closed, running `/bin/sleep 1000`; `ok daemon <pid>`),
//! `proxy-connect <host:port>` (`CONNECT` through `$HTTP_PROXY`; `ok` with the status line on a
//! 200, `denied` with it otherwise), `sleep`, and `without-landlock <program> <args…>`: run
//! `program` on what looks like a kernel without Landlock (a seccomp filter answers its three
//! system calls with `ENOSYS`), for the tests of odek's fallback.
//!
//! For issue 32's hostile-input round: `open <path>` (read and write, no create: a terminal),
//! `write-fd <n> <text>` (on a descriptor the probe was handed), `thread-connect <ip:port>`
//! (`connect` from a second thread), `unix-dgram <path>` and `unix-dgram-pair <path>` (a Unix
//! datagram to a socket path from a fresh socket, or from one of a `socketpair`), `unix-pair`
//! (a stream `socketpair`), `chmod <path> <octal>`, `fchmod <path> <octal>` (on a read-only
//! descriptor), `chown <path>` (to the probe's own user and group), `touch <path>` (times set to
//! one second past the epoch; `futimens <path>` the same on a read-only descriptor), `setxattr <path>` (`user.odek`), `create-mode <path> <octal>`
//! (`open` with `O_CREAT`) and `chattr <path>` (`FS_IOC_SETFLAGS` adding `nodump`).
//!
//! For the sandbox's security review: `file-setattr <path>` (`file_setattr` adding the no-dump
//! flag), `chmod-own-fd <target> <prefix> <octal>` (opens `target` read-only — or, for
//! `tmpfile:<dir>`, makes an unnamed file there — and changes its mode through the path
//! `<prefix><fd>`, `PID` in the prefix standing for the probe's pid), `chmod-threads <threads>
//! <count> <path>` (each thread changes the mode of `path` `count` times; `ok <n> failed`, with
//! the first error), `chmod-loop <count> <path>` (`ok <count> in <µs> us`, for the benchmark) and
//! `refusing <call>[,<call>…] <program> <args…>` (run `program` under a seccomp filter answering
//! those call numbers `EPERM`, as an outer sandbox or a container profile refusing them would).

#![allow(unsafe_code)] // ptrace, fork and setsid through libc: the actions under test.

use std::io::{Read, Write};
use std::process::ExitCode;

fn report(result: std::io::Result<String>) -> ExitCode {
    match result {
        Ok(detail) => {
            println!("ok {detail}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            let name = match error.raw_os_error() {
                Some(libc::EACCES) => "EACCES",
                Some(libc::EPERM) => "EPERM",
                Some(libc::ECONNREFUSED) => "ECONNREFUSED",
                Some(libc::EAGAIN) => "EAGAIN",
                Some(libc::ENOSYS) => "ENOSYS",
                _ => "OTHER",
            };
            println!("denied {name}: {error}");
            ExitCode::FAILURE
        }
    }
}

fn check(result: libc::c_long) -> std::io::Result<libc::c_long> {
    if result < 0 { Err(std::io::Error::last_os_error()) } else { Ok(result) }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |index: usize| args.get(index).cloned().unwrap_or_default();
    let result = match arg(0).as_str() {
        "write" => std::fs::write(arg(1), arg(2)).map(|()| "written".to_owned()),
        "read" => std::fs::read_to_string(arg(1)).map(|text| format!("{} bytes", text.len())),
        "connect" => connect(&arg(1)),
        "udp" => std::net::UdpSocket::bind("0.0.0.0:0")
            .and_then(|socket| socket.send_to(b"x", arg(1)))
            .map(|sent| format!("{sent} sent")),
        "unix" => std::os::unix::net::UnixStream::connect(arg(1)).map(|_| "connected".to_owned()),
        "ptrace" => {
            let pid: libc::pid_t = arg(1).parse().unwrap_or(0);
            // SAFETY: PTRACE_ATTACH with integer arguments.
            check(unsafe { libc::ptrace(libc::PTRACE_ATTACH, pid, 0, 0) }).map(|_| "attached".to_owned())
        }
        "signal" => {
            let pid: libc::pid_t = arg(1).parse().unwrap_or(0);
            // SAFETY: kill with signal 0 only checks permission.
            check(libc::c_long::from(unsafe { libc::kill(pid, 0) })).map(|_| "signalled".to_owned())
        }
        "fork-bomb" => fork_bomb(arg(1).parse().unwrap_or(10_000)),
        "daemon" => daemon(),
        "proxy-connect" => proxy_connect(&arg(1)),
        "without-landlock" => without_landlock(&args[1..]),
        "open" => open_read_write(&arg(1)),
        "write-fd" => write_fd(&arg(1), &arg(2)),
        "thread-connect" => {
            let target = arg(1);
            std::thread::spawn(move || connect(&target))
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("panicked")))
        }
        "unix-dgram" => std::os::unix::net::UnixDatagram::unbound()
            .and_then(|socket| socket.send_to(b"x", arg(1)))
            .map(|sent| format!("{sent} sent")),
        "unix-dgram-pair" => std::os::unix::net::UnixDatagram::pair()
            .and_then(|(socket, _)| socket.send_to(b"x", arg(1)))
            .map(|sent| format!("{sent} sent")),
        "unix-pair" => unix_pair(),
        "chmod" => mode(&arg(2)).and_then(|mode| {
            std::fs::set_permissions(arg(1), std::os::unix::fs::PermissionsExt::from_mode(mode))
                .map(|()| "changed".to_owned())
        }),
        "fchmod" => mode(&arg(2)).and_then(|mode| {
            std::fs::File::open(arg(1))
                .and_then(|file| file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode)))
                .map(|()| "changed".to_owned())
        }),
        "chown" => {
            // SAFETY: getuid and getgid cannot fail.
            let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
            std::os::unix::fs::chown(arg(1), Some(uid), Some(gid)).map(|()| "changed".to_owned())
        }
        "touch" => touch(&arg(1)),
        "futimens" => futimens(&arg(1)),
        "setxattr" => set_xattr(&arg(1)),
        "create-mode" => mode(&arg(2)).and_then(|mode| {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode)
                .open(arg(1))
                .map(|_| "created".to_owned())
        }),
        "chattr" => chattr(&arg(1)),
        "file-setattr" => file_setattr(&arg(1)),
        "chmod-own-fd" => chmod_own_fd(&arg(1), &arg(2), &arg(3)),
        "chmod-threads" => chmod_threads(arg(1).parse().unwrap_or(1), arg(2).parse().unwrap_or(1), &arg(3)),
        "chmod-loop" => chmod_loop(arg(1).parse().unwrap_or(1), &arg(2)),
        "refusing" => refusing(&arg(1), &args[2..]),
        "sleep" => {
            std::thread::sleep(std::time::Duration::from_secs(600));
            Ok("slept".to_owned())
        }
        other => Err(std::io::Error::other(format!("unknown action {other:?}"))),
    };
    report(result)
}

/// A TCP connection to `target` that sends `ping` and reads the answer.
fn connect(target: &str) -> std::io::Result<String> {
    std::net::TcpStream::connect(target).map(|mut stream| {
        let _ = stream.write_all(b"ping\n");
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        format!("connected: {}", answer.trim())
    })
}

fn c_path(path: &str) -> std::io::Result<std::ffi::CString> {
    std::ffi::CString::new(path).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))
}

fn mode(text: &str) -> std::io::Result<u32> {
    u32::from_str_radix(text, 8).map_err(|_| std::io::Error::other(format!("not an octal mode: {text}")))
}

/// Opens `path` for reading and writing, without creating it, without making it the controlling
/// terminal and without blocking.
fn open_read_write(path: &str) -> std::io::Result<String> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
        .open(path)
        .map(|_| "opened".to_owned())
}

/// Writes `text` to the descriptor `fd` it was handed.
fn write_fd(fd: &str, text: &str) -> std::io::Result<String> {
    let fd: libc::c_int = fd.parse().map_err(|_| std::io::Error::from_raw_os_error(libc::EBADF))?;
    // SAFETY: write from a live slice of its own length.
    check(unsafe { libc::write(fd, text.as_ptr().cast(), text.len()) } as libc::c_long).map(|n| format!("{n} written"))
}

/// A stream `socketpair`: one byte across.
fn unix_pair() -> std::io::Result<String> {
    let (mut left, mut right) = std::os::unix::net::UnixStream::pair()?;
    left.write_all(b"x")?;
    let mut byte = [0_u8; 1];
    right.read_exact(&mut byte)?;
    Ok("paired".to_owned())
}

/// `utimensat` setting both times of `path` to one second past the epoch.
fn touch(path: &str) -> std::io::Result<String> {
    let path = c_path(path)?;
    let times = [libc::timespec { tv_sec: 1, tv_nsec: 0 }, libc::timespec { tv_sec: 1, tv_nsec: 0 }];
    // SAFETY: utimensat reads a C string and two timespecs that outlive the call.
    check(libc::c_long::from(unsafe { libc::utimensat(libc::AT_FDCWD, path.as_ptr(), times.as_ptr(), 0) }))
        .map(|_| "touched".to_owned())
}

/// `futimens` on a read-only descriptor of `path`, both times one second past the epoch.
fn futimens(path: &str) -> std::io::Result<String> {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(path)?;
    let times = [libc::timespec { tv_sec: 1, tv_nsec: 0 }, libc::timespec { tv_sec: 1, tv_nsec: 0 }];
    // SAFETY: futimens reads two timespecs that outlive the call.
    check(libc::c_long::from(unsafe { libc::futimens(file.as_raw_fd(), times.as_ptr()) })).map(|_| "touched".to_owned())
}

/// `setxattr(path, "user.odek", "1")`.
fn set_xattr(path: &str) -> std::io::Result<String> {
    let path = c_path(path)?;
    let name = c"user.odek";
    // SAFETY: setxattr reads two C strings and one byte that outlive the call.
    check(libc::c_long::from(unsafe { libc::setxattr(path.as_ptr(), name.as_ptr(), b"1".as_ptr().cast(), 1, 0) }))
        .map(|_| "set".to_owned())
}

/// Adds `FS_NODUMP_FL` to the inode flags of `path` (what `chattr +d` does), on a read-only
/// descriptor.
fn chattr(path: &str) -> std::io::Result<String> {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(path)?;
    let mut flags: libc::c_long = 0;
    // SAFETY: FS_IOC_GETFLAGS writes one long into `flags`.
    check(libc::c_long::from(unsafe { libc::ioctl(file.as_raw_fd(), libc::FS_IOC_GETFLAGS, &mut flags) }))?;
    flags |= 0x40; // FS_NODUMP_FL
    // SAFETY: FS_IOC_SETFLAGS reads one long from `flags`.
    check(libc::c_long::from(unsafe { libc::ioctl(file.as_raw_fd(), libc::FS_IOC_SETFLAGS, &flags) }))
        .map(|_| "changed".to_owned())
}

/// `struct file_attr` (`FILE_ATTR_SIZE_VER0`).
#[repr(C)]
#[derive(Default)]
struct FileAttr {
    xflags: u64,
    extsize: u32,
    nextents: u32,
    projid: u32,
    cowextsize: u32,
}

/// Adds `FS_XFLAG_NODUMP` to the inode flags of `path` with `file_getattr` and `file_setattr`
/// (Linux 6.17: 468 and 469 on every architecture), no descriptor needed.
fn file_setattr(path: &str) -> std::io::Result<String> {
    const FILE_GETATTR: libc::c_long = 468;
    const FILE_SETATTR: libc::c_long = 469;
    const FS_XFLAG_NODUMP: u64 = 0x80;
    let path = c_path(path)?;
    let mut attr = FileAttr::default();
    let size = std::mem::size_of::<FileAttr>();
    // SAFETY: file_getattr writes at most `size` bytes into `attr`.
    check(unsafe { libc::syscall(FILE_GETATTR, libc::AT_FDCWD, path.as_ptr(), &mut attr, size, 0) })?;
    attr.xflags |= FS_XFLAG_NODUMP;
    // SAFETY: file_setattr reads `size` bytes of `attr` and a C string.
    check(unsafe { libc::syscall(FILE_SETATTR, libc::AT_FDCWD, path.as_ptr(), &attr, size, 0) })
        .map(|_| "changed".to_owned())
}

/// Changes the mode of an open file through `<prefix><fd>` (`PID` in the prefix: this pid): a
/// file opened read-only at `target`, or, for `tmpfile:<dir>`, an unnamed file made in `dir`.
fn chmod_own_fd(target: &str, prefix: &str, mode_text: &str) -> std::io::Result<String> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let mode = mode(mode_text)?;
    let file = match target.strip_prefix("tmpfile:") {
        Some(dir) => std::fs::OpenOptions::new().write(true).custom_flags(libc::O_TMPFILE).mode(0o600).open(dir)?,
        None => std::fs::File::open(target)?,
    };
    let path = format!("{}{}", prefix.replace("PID", &std::process::id().to_string()), file.as_raw_fd());
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(mode))?;
    let now = file.metadata()?.permissions();
    Ok(format!("changed to {:o}", std::os::unix::fs::PermissionsExt::mode(&now) & 0o7777))
}

/// `threads` threads each change the mode of `path` `count` times: how many calls failed, and
/// the first error.
fn chmod_threads(threads: usize, count: usize, path: &str) -> std::io::Result<String> {
    let path = c_path(path)?;
    let workers: Vec<_> = (0..threads)
        .map(|index| {
            let path = path.clone();
            std::thread::spawn(move || {
                let (mut failed, mut first) = (0_usize, None);
                for call in 0..count {
                    let mode = if (index + call) % 2 == 0 { 0o644 } else { 0o640 };
                    // SAFETY: chmod reads a live C string.
                    if unsafe { libc::chmod(path.as_ptr(), mode) } < 0 {
                        failed += 1;
                        first.get_or_insert_with(std::io::Error::last_os_error);
                    }
                }
                (failed, first)
            })
        })
        .collect();
    let (mut failed, mut first) = (0_usize, None);
    for worker in workers {
        let (their_failures, their_first) = worker.join().map_err(|_| std::io::Error::other("a thread panicked"))?;
        failed += their_failures;
        first = first.or(their_first);
    }
    let first = first.map_or_else(String::new, |error| format!(" (first: {error})"));
    Ok(format!("{failed} of {} failed{first}", threads * count))
}

/// `count` mode changes of `path` in a row, timed.
fn chmod_loop(count: usize, path: &str) -> std::io::Result<String> {
    let path = c_path(path)?;
    let started = std::time::Instant::now();
    for call in 0..count {
        let mode = if call % 2 == 0 { 0o644 } else { 0o640 };
        // SAFETY: chmod reads a live C string.
        check(libc::c_long::from(unsafe { libc::chmod(path.as_ptr(), mode) }))?;
    }
    Ok(format!("{count} in {} us", started.elapsed().as_micros()))
}

/// `CONNECT target` through the proxy `$HTTP_PROXY` names (`http://ip:port`).
fn proxy_connect(target: &str) -> std::io::Result<String> {
    let proxy = std::env::var("HTTP_PROXY").map_err(|_| std::io::Error::other("HTTP_PROXY is not set"))?;
    let address = proxy.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = std::net::TcpStream::connect(address)?;
    stream.write_all(format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes())?;
    let mut head = [0_u8; 512];
    let read = stream.read(&mut head)?;
    let status = String::from_utf8_lossy(&head[..read]).lines().next().unwrap_or_default().to_owned();
    if status.contains(" 200 ") { Ok(status) } else { Err(std::io::Error::other(status)) }
}

/// Forks up to `count` children that sleep; `ok <n>` with how many were made before the first
/// failure (the failure itself is the point).
fn fork_bomb(count: u32) -> std::io::Result<String> {
    let mut made = 0;
    for _ in 0..count {
        // SAFETY: the child only sleeps (async-signal-safe) until it is killed.
        match unsafe { libc::fork() } {
            -1 => break,
            0 => loop {
                // SAFETY: pause is async-signal-safe.
                unsafe { libc::pause() };
            },
            _ => made += 1,
        }
    }
    Ok(format!("{made} of {count} children"))
}

/// A grandchild in its own session with stdout and stderr closed, sleeping: what a
/// "background daemon" left by a command looks like. `ok` once it is started.
fn daemon() -> std::io::Result<String> {
    // The daemon has left the probe's process group once it has exec'd: the probe reports it
    // only then, so a caller that kills the group after the report never catches it inside.
    let mut ends = [0; 2];
    // SAFETY: pipe2 into a two-element array.
    if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let [read_end, write_end] = ends;
    // SAFETY: fork; the child calls only async-signal-safe functions before exec.
    match unsafe { libc::fork() } {
        -1 => Err(std::io::Error::last_os_error()),
        0 => {
            // SAFETY: setsid, close and execv with valid C strings; failures end the child. The
            // pipe's write end closes at exec (O_CLOEXEC), telling the probe.
            unsafe {
                libc::setsid();
                libc::close(1);
                libc::close(2);
                libc::close(read_end);
                let sleep = c"/bin/sleep";
                let seconds = c"1000";
                let argv = [sleep.as_ptr(), seconds.as_ptr(), std::ptr::null()];
                libc::execv(sleep.as_ptr(), argv.as_ptr());
                libc::_exit(127)
            }
        }
        pid => {
            // SAFETY: closing our copy of the write end, then reading the pipe (owned from
            // here) to EOF: the child exec'd or ended.
            unsafe { libc::close(write_end) };
            let mut reader = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(read_end) };
            let mut rest = Vec::new();
            std::io::Read::read_to_end(&mut reader, &mut rest)?;
            Ok(format!("daemon {pid}"))
        }
    }
}

/// `landlock_create_ruleset`, `landlock_add_rule`, `landlock_restrict_self` (x86_64 and aarch64
/// share the numbers).
const LANDLOCK_SYSCALLS: [u32; 3] = [444, 445, 446];

/// Execs `command` with the Landlock system calls failing as on a kernel that lacks them.
fn without_landlock(command: &[String]) -> std::io::Result<String> {
    exec_answering(&LANDLOCK_SYSCALLS, libc::ENOSYS, command)
}

/// Execs `command` with the calls numbered in `calls` (`438,439`) answering `EPERM`.
fn refusing(calls: &str, command: &[String]) -> std::io::Result<String> {
    let numbers: Vec<u32> = calls.split(',').filter_map(|number| number.trim().parse().ok()).collect();
    if numbers.is_empty() {
        return Err(std::io::Error::other(format!("refusing needs call numbers, not {calls:?}")));
    }
    exec_answering(&numbers, libc::EPERM, command)
}

/// Execs `command` under a seccomp filter answering `errno` for each call in `calls`.
fn exec_answering(calls: &[u32], errno: i32, command: &[String]) -> std::io::Result<String> {
    use std::os::unix::process::CommandExt;
    let Some((program, rest)) = command.split_first() else {
        return Err(std::io::Error::other("a program to run is needed"));
    };
    const LOAD_NR: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JEQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const RET: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    let mut program_filter = vec![libc::sock_filter { code: LOAD_NR, jt: 0, jf: 0, k: 0 }];
    for (index, nr) in calls.iter().enumerate() {
        // A match jumps to the errno return past the remaining checks and the allow.
        let to_errno = u8::try_from(calls.len() - index).unwrap_or(0);
        program_filter.push(libc::sock_filter { code: JEQ, jt: to_errno, jf: 0, k: *nr });
    }
    program_filter.push(libc::sock_filter { code: RET, jt: 0, jf: 0, k: libc::SECCOMP_RET_ALLOW });
    program_filter.push(libc::sock_filter {
        code: RET,
        jt: 0,
        jf: 0,
        k: libc::SECCOMP_RET_ERRNO | (errno as u32 & libc::SECCOMP_RET_DATA),
    });
    let fprog =
        libc::sock_fprog { len: u16::try_from(program_filter.len()).unwrap_or(0), filter: program_filter.as_mut_ptr() };
    // SAFETY: prctl with integer arguments, then with a pointer to a filter that outlives it.
    unsafe {
        check(libc::c_long::from(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)))?;
        check(libc::c_long::from(libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &fprog as *const libc::sock_fprog,
        )))?;
    }
    Err(std::process::Command::new(program).args(rest).exec())
}
