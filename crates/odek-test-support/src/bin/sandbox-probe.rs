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
        "connect" => std::net::TcpStream::connect(arg(1)).map(|mut stream| {
            let _ = stream.write_all(b"ping\n");
            let mut answer = String::new();
            let _ = stream.read_to_string(&mut answer);
            format!("connected: {}", answer.trim())
        }),
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
        "sleep" => {
            std::thread::sleep(std::time::Duration::from_secs(600));
            Ok("slept".to_owned())
        }
        other => Err(std::io::Error::other(format!("unknown action {other:?}"))),
    };
    report(result)
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
    // SAFETY: fork; the child calls only async-signal-safe functions before exec.
    match unsafe { libc::fork() } {
        -1 => Err(std::io::Error::last_os_error()),
        0 => {
            // SAFETY: setsid, close and execv with valid C strings; failures end the child.
            unsafe {
                libc::setsid();
                libc::close(1);
                libc::close(2);
                let sleep = c"/bin/sleep";
                let seconds = c"1000";
                let argv = [sleep.as_ptr(), seconds.as_ptr(), std::ptr::null()];
                libc::execv(sleep.as_ptr(), argv.as_ptr());
                libc::_exit(127)
            }
        }
        pid => Ok(format!("daemon {pid}")),
    }
}

/// `landlock_create_ruleset`, `landlock_add_rule`, `landlock_restrict_self` (x86_64 and aarch64
/// share the numbers).
const LANDLOCK_SYSCALLS: [u32; 3] = [444, 445, 446];

/// Execs `command` with the Landlock system calls failing as on a kernel that lacks them.
fn without_landlock(command: &[String]) -> std::io::Result<String> {
    use std::os::unix::process::CommandExt;
    let Some((program, rest)) = command.split_first() else {
        return Err(std::io::Error::other("without-landlock needs a program"));
    };
    const LOAD_NR: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JEQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const RET: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    let mut program_filter = vec![libc::sock_filter { code: LOAD_NR, jt: 0, jf: 0, k: 0 }];
    for (index, nr) in LANDLOCK_SYSCALLS.iter().enumerate() {
        // A match jumps to the ENOSYS return past the remaining checks and the allow.
        let to_enosys = u8::try_from(LANDLOCK_SYSCALLS.len() - index).unwrap_or(0);
        program_filter.push(libc::sock_filter { code: JEQ, jt: to_enosys, jf: 0, k: *nr });
    }
    program_filter.push(libc::sock_filter { code: RET, jt: 0, jf: 0, k: libc::SECCOMP_RET_ALLOW });
    program_filter.push(libc::sock_filter {
        code: RET,
        jt: 0,
        jf: 0,
        k: libc::SECCOMP_RET_ERRNO | (libc::ENOSYS as u32 & libc::SECCOMP_RET_DATA),
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
