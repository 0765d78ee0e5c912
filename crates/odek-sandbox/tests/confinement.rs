//! The confinement end to end, with real processes (the `sandbox-probe` binary) on this
//! machine's kernel: each rule is a `_red` test that runs the same action unconfined (it works,
//! so the test cannot pass vacuously) and confined (it is refused with the kernel's error).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use odek_sandbox::{Finished, Limits, Network, Policy, Sandbox, parse_allow_host};

/// A scratch home (with `.odek/config.json`) holding the workspace, a temp dir and an outside.
struct Scene {
    _dir: tempfile::TempDir,
    home: PathBuf,
    workspace: PathBuf,
    outside: PathBuf,
}

impl Scene {
    fn new() -> Scene {
        let dir = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(dir.path()).unwrap();
        for sub in [".odek", "work", "tmp", "outside"] {
            std::fs::create_dir_all(home.join(sub)).unwrap();
        }
        std::fs::write(home.join(".odek/config.json"), r#"{"api_key": "sk-secret"}"#).unwrap();
        std::fs::write(home.join("work/notes.txt"), "notes").unwrap();
        Scene { workspace: home.join("work"), outside: home.join("outside"), home, _dir: dir }
    }

    /// `~/shared/tool.conf` (mode 0600), and `network`'s policy with `~/shared` readable: a
    /// file the command may read and must not change.
    fn readable_file(&self, network: Network) -> (PathBuf, Policy) {
        let shared = self.home.join("shared");
        std::fs::create_dir(&shared).unwrap();
        let file = shared.join("tool.conf");
        std::fs::write(&file, "conf").unwrap();
        set_mode(&file, 0o600);
        let mut policy = self.policy(network);
        policy.readable.push(shared);
        (file, policy)
    }

    fn policy(&self, network: Network) -> Policy {
        Policy {
            workspace: self.workspace.clone(),
            temp_dir: self.home.join("tmp"),
            // The probe lives in the build's target directory.
            readable: vec![probe().parent().unwrap().to_path_buf()],
            writable: Vec::new(),
            protected: vec![self.home.join(".odek")],
            network,
            allow_hosts: Vec::new(),
            limits: Limits::default(),
        }
    }
}

fn probe() -> PathBuf {
    odek_test_support::sandbox_probe()
}

/// What one probe run printed, its exit code, and what its confinement reported.
struct Outcome {
    ok: bool,
    line: String,
    finished: Finished,
}

async fn run_in(sandbox: Option<&Sandbox>, cwd: &Path, args: &[&str]) -> Outcome {
    run_prepared(sandbox, cwd, args, |command| {
        command.stdin(Stdio::null()).process_group(0);
    })
    .await
}

/// [`run_in`] with `prepare` applied to the command before it is confined (its `pre_exec` steps
/// run before the confinement's).
async fn run_prepared(
    sandbox: Option<&Sandbox>,
    cwd: &Path,
    args: &[&str],
    prepare: impl FnOnce(&mut tokio::process::Command),
) -> Outcome {
    run_program(sandbox, cwd, &probe(), args, prepare).await
}

/// `/bin/sh -c script` in `cwd`, confined by `sandbox`.
async fn run_script(sandbox: &Sandbox, cwd: &Path, script: &str) -> Outcome {
    run_program(Some(sandbox), cwd, Path::new("/bin/sh"), &["-c", script], |command| {
        command.stdin(Stdio::null()).process_group(0);
    })
    .await
}

/// `program` with `args` in `cwd` (see [`run_prepared`]).
async fn run_program(
    sandbox: Option<&Sandbox>,
    cwd: &Path,
    program: &Path,
    args: &[&str],
    prepare: impl FnOnce(&mut tokio::process::Command),
) -> Outcome {
    use tokio::io::AsyncReadExt;
    let mut command = tokio::process::Command::new(program);
    command.args(args).current_dir(cwd).stdout(Stdio::piped()).kill_on_drop(true);
    prepare(&mut command);
    let mut confinement = sandbox.map(|sandbox| sandbox.confine(&mut command).unwrap());
    let mut child = command.spawn().unwrap();
    drop(command);
    let group = child.id().unwrap();
    if let Some(confinement) = &mut confinement {
        confinement.started().unwrap();
    }
    let mut stdout = child.stdout.take().unwrap();
    let reading = tokio::spawn(async move {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text).await;
        text
    });
    let limit = std::time::Duration::from_secs(60);
    let status = tokio::time::timeout(limit, child.wait()).await.unwrap().unwrap();
    // What the probe left behind (children holding its stdout) goes with it.
    let finished = match confinement {
        Some(confinement) => confinement.finish(),
        None => {
            // In-process, never through kill(1): procps' `kill -9 -<pgid>` may read the group as
            // an option and kill every process on the machine (seen: `kill(-1, SIGKILL)`).
            let _ = killpg(Pid::from_raw(i32::try_from(group).unwrap()), Signal::SIGKILL);
            Finished::default()
        }
    };
    let line = tokio::time::timeout(limit, reading).await.unwrap().unwrap().trim().to_owned();
    Outcome { ok: status.success(), line, finished }
}

/// Runs `args` unconfined and confined by `policy` in the workspace.
async fn both(scene: &Scene, policy: Policy, args: &[&str]) -> (Outcome, Outcome) {
    let sandbox = Sandbox::new(policy).unwrap();
    (run_in(None, &scene.workspace, args).await, run_in(Some(&sandbox), &scene.workspace, args).await)
}

#[tokio::test]
async fn writes_outside_the_workspace_are_refused_red() {
    let scene = Scene::new();
    let target = scene.outside.join("written.txt");
    let (open, confined) = both(&scene, scene.policy(Network::Deny), &["write", target.to_str().unwrap(), "x"]).await;
    assert!(open.ok, "{}", open.line);
    std::fs::remove_file(&target).unwrap();
    assert_eq!(confined.line, "denied EACCES: Permission denied (os error 13)");
    assert!(!target.exists());
    let sandbox = Sandbox::new(scene.policy(Network::Deny)).unwrap();
    let inside = run_in(Some(&sandbox), &scene.workspace, &["write", "made.txt", "y"]).await;
    assert!(inside.ok, "{}", inside.line);
    assert_eq!(std::fs::read_to_string(scene.workspace.join("made.txt")).unwrap(), "y");
}

#[tokio::test]
async fn a_symlink_in_the_workspace_does_not_lead_out_red() {
    let scene = Scene::new();
    std::os::unix::fs::symlink(&scene.outside, scene.workspace.join("door")).unwrap();
    let (open, confined) = both(&scene, scene.policy(Network::Deny), &["write", "door/escaped.txt", "x"]).await;
    assert!(open.ok, "{}", open.line);
    std::fs::remove_file(scene.outside.join("escaped.txt")).unwrap();
    assert!(confined.line.starts_with("denied EACCES"), "{}", confined.line);
    assert!(!scene.outside.join("escaped.txt").exists());
}

#[tokio::test]
async fn odek_state_is_never_readable_even_from_a_workspace_holding_it_red() {
    let scene = Scene::new();
    let mut policy = scene.policy(Network::Deny);
    policy.workspace = scene.home.clone();
    let config = scene.home.join(".odek/config.json");
    let (open, confined) = both(&scene, policy.clone(), &["read", config.to_str().unwrap()]).await;
    assert!(open.ok, "{}", open.line);
    assert!(confined.line.starts_with("denied EACCES"), "{}", confined.line);
    let sandbox = Sandbox::new(policy).unwrap();
    let notes = run_in(Some(&sandbox), &scene.workspace, &["read", "notes.txt"]).await;
    assert_eq!(notes.line, "ok 5 bytes");
}

/// A listener on 127.0.0.1 that answers each connection with `pong`.
fn pong_listener() -> (TcpListener, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let serving = listener.try_clone().unwrap();
    std::thread::spawn(move || {
        for mut stream in serving.incoming().flatten() {
            let _ = stream.write_all(b"pong\n");
        }
    });
    (listener, port)
}

#[tokio::test]
async fn a_loopback_listener_is_unreachable_unless_loopback_is_allowed_red() {
    let scene = Scene::new();
    let (_listener, port) = pong_listener();
    let target = format!("127.0.0.1:{port}");
    let (open, denied) = both(&scene, scene.policy(Network::Deny), &["connect", &target]).await;
    assert_eq!(open.line, "ok connected: pong");
    assert!(denied.line.starts_with("denied EACCES"), "{}", denied.line);

    let loopback = Sandbox::new(scene.policy(Network::Loopback)).unwrap();
    assert_eq!(run_in(Some(&loopback), &scene.workspace, &["connect", &target]).await.line, "ok connected: pong");
}

#[tokio::test]
async fn only_listed_addresses_are_reachable_and_refusals_are_reported_red() {
    let scene = Scene::new();
    let (_listed, listed_port) = pong_listener();
    let (_other, other_port) = pong_listener();
    let mut policy = scene.policy(Network::Deny);
    policy.allow_hosts = vec![parse_allow_host(&format!("127.0.0.1:{listed_port}")).unwrap()];
    let sandbox = Sandbox::new(policy).unwrap();
    let listed = run_in(Some(&sandbox), &scene.workspace, &["connect", &format!("127.0.0.1:{listed_port}")]).await;
    assert_eq!(listed.line, "ok connected: pong");
    assert!(listed.finished.denials.is_empty());
    let other = run_in(Some(&sandbox), &scene.workspace, &["connect", &format!("127.0.0.1:{other_port}")]).await;
    assert!(other.line.starts_with("denied EACCES"), "{}", other.line);
    assert_eq!(other.finished.denials.len(), 1);
    let denial = &other.finished.denials[0];
    assert_eq!((denial.operation, denial.target.clone()), ("connect", format!("127.0.0.1:{other_port}")));
    assert_eq!(denial.reason, "not on the allow-list (network: deny)");
    let udp = run_in(Some(&sandbox), &scene.workspace, &["udp", &format!("127.0.0.1:{listed_port}")]).await;
    assert!(udp.line.starts_with("denied EACCES"), "{}", udp.line);
}

#[tokio::test]
async fn a_host_not_on_the_allow_list_is_refused_by_the_proxy_red() {
    let scene = Scene::new();
    let (_listener, port) = pong_listener();
    let mut policy = scene.policy(Network::Loopback);
    policy.allow_hosts = vec![parse_allow_host(&format!("localhost:{port}")).unwrap()];
    let sandbox = Sandbox::new(policy).unwrap();
    let listed = run_in(Some(&sandbox), &scene.workspace, &["proxy-connect", &format!("localhost:{port}")]).await;
    assert_eq!(listed.line, "ok HTTP/1.1 200 Connection established");
    let refused = run_in(Some(&sandbox), &scene.workspace, &["proxy-connect", "example.com:443"]).await;
    assert_eq!(refused.line, "denied OTHER: HTTP/1.1 403 Forbidden");
    assert_eq!(refused.finished.denials.len(), 1, "{:?}", refused.finished.denials);
    assert_eq!(refused.finished.denials[0].target, "example.com:443");
    assert_eq!(refused.finished.denials[0].reason, "not on the allow-list, through the proxy");
}

#[tokio::test]
async fn refusals_are_reported_in_the_order_they_happened_across_supervisor_and_proxy_red() {
    let scene = Scene::new();
    let (_listener, port) = pong_listener();
    let mut policy = scene.policy(Network::Deny);
    policy.allow_hosts =
        vec![parse_allow_host(&format!("localhost:{port}")).unwrap(), parse_allow_host("127.0.0.1:1").unwrap()];
    let sandbox = Sandbox::new(policy).unwrap();
    // The proxy refuses first, then the supervisor twenty times.
    let probe = probe();
    let script = format!(
        "{0} proxy-connect example.com:443; for port in $(seq 2 21); do {0} connect 127.0.0.1:$port; done; true",
        probe.display()
    );
    let confined = run_script(&sandbox, &scene.workspace, &script).await;
    let refused: Vec<String> =
        confined.finished.denials.iter().map(|denial| format!("{} {}", denial.operation, denial.target)).collect();
    assert_eq!(refused.len(), 21, "{refused:?}");
    assert_eq!(refused[0], "connect example.com:443", "the proxy's refusal came first");
    assert_eq!(refused[1], "connect 127.0.0.1:2");
    assert_eq!(refused[20], "connect 127.0.0.1:21");
}

#[tokio::test]
async fn many_threads_changing_metadata_at_once_wait_their_turn_instead_of_failing_red() {
    let scene = Scene::new();
    let sandbox = Sandbox::new(scene.policy(Network::Deny)).unwrap();
    let confined = run_in(Some(&sandbox), &scene.workspace, &["chmod-threads", "200", "200", "notes.txt"]).await;
    assert_eq!(confined.line, "ok 0 of 40000 failed");
    assert!(confined.finished.denials.is_empty(), "{:?}", confined.finished.denials);
}

#[tokio::test]
async fn unix_sockets_outside_the_writable_paths_are_unreachable_red() {
    let scene = Scene::new();
    let outside = scene.outside.join("service.sock");
    let inside = scene.workspace.join("own.sock");
    let listeners = [
        std::os::unix::net::UnixListener::bind(&outside).unwrap(),
        std::os::unix::net::UnixListener::bind(&inside).unwrap(),
    ];
    let (open, confined) = both(&scene, scene.policy(Network::Allow), &["unix", outside.to_str().unwrap()]).await;
    assert!(open.ok, "{}", open.line);
    assert!(confined.line.starts_with("denied EACCES"), "{}", confined.line);
    assert!(confined.finished.denials[0].reason.ends_with("is outside the writable paths"), "{:?}", confined.finished);
    let sandbox = Sandbox::new(scene.policy(Network::Deny)).unwrap();
    assert_eq!(run_in(Some(&sandbox), &scene.workspace, &["unix", "own.sock"]).await.line, "ok connected");
    drop(listeners);
}

#[tokio::test]
async fn the_parent_cannot_be_traced_or_signalled_red() {
    let scene = Scene::new();
    let mut target = std::process::Command::new("/bin/sleep").arg("100").spawn().unwrap();
    let open = run_in(None, &scene.workspace, &["ptrace", &target.id().to_string()]).await;
    assert!(open.ok, "{}", open.line);
    target.kill().unwrap();
    let _ = target.wait();
    let sandbox = Sandbox::new(scene.policy(Network::Deny)).unwrap();
    let parent = std::process::id().to_string();
    let traced = run_in(Some(&sandbox), &scene.workspace, &["ptrace", &parent]).await;
    assert!(traced.line.starts_with("denied EPERM"), "{}", traced.line);
    let signalled = run_in(Some(&sandbox), &scene.workspace, &["signal", &parent]).await;
    assert!(signalled.line.starts_with("denied EPERM"), "{}", signalled.line);
}

#[tokio::test]
async fn a_fork_bomb_stops_at_the_process_limit_red() {
    let scene = Scene::new();
    let mut policy = scene.policy(Network::Deny);
    policy.limits.processes = 16;
    let sandbox = Sandbox::new(policy).unwrap();
    assert!(sandbox.limits_processes(), "this machine can limit processes (a pids cgroup)");
    let bomb = run_in(Some(&sandbox), &scene.workspace, &["fork-bomb", "200"]).await;
    let made: u32 = bomb.line.strip_prefix("ok ").and_then(|rest| rest.split(' ').next()).unwrap().parse().unwrap();
    assert!(made < 16, "{}", bomb.line);
    assert_eq!(bomb.finished.killed as u32, made, "every child was still there and was killed");
}

#[tokio::test]
async fn nothing_outlives_the_command_red() {
    let scene = Scene::new();
    let alive =
        |pid: &str| std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "));
    let open = run_in(None, &scene.workspace, &["daemon"]).await;
    let open_pid = open.line.strip_prefix("ok daemon ").unwrap().to_owned();
    assert!(alive(&open_pid), "unconfined, the daemon outlives the command");
    let _ = nix_kill(&open_pid);
    let sandbox = Sandbox::new(scene.policy(Network::Deny)).unwrap();
    let confined = run_in(Some(&sandbox), &scene.workspace, &["daemon"]).await;
    let pid = confined.line.strip_prefix("ok daemon ").unwrap();
    assert!(!alive(pid), "confined, it is killed when the command ends");
}

fn nix_kill(pid: &str) -> nix::Result<()> {
    kill(Pid::from_raw(pid.parse().unwrap()), Signal::SIGKILL)
}

#[test]
fn root_is_never_writable_red() {
    let scene = Scene::new();
    let mut policy = scene.policy(Network::Deny);
    policy.writable.push("/".into());
    assert_eq!(Sandbox::new(policy).unwrap_err().to_string(), "sandbox: \"/\" cannot be writable");
}

// Issue 32, the hostile-input round: terminals (H2), metadata (H3), threads (M1), Unix
// datagrams (M2), shared memory (M3), symlinks in a home workspace (M6).

/// A pseudo-terminal of the test's own, and the path of its terminal side.
fn pty() -> (nix::pty::OpenptyResult, String) {
    let pair = nix::pty::openpty(None, None).unwrap();
    let path = nix::unistd::ttyname(&pair.slave).unwrap().to_str().unwrap().to_owned();
    (pair, path)
}

#[tokio::test]
async fn another_terminal_cannot_be_opened_red() {
    let scene = Scene::new();
    let (_pair, terminal) = pty();
    let (open, confined) = both(&scene, scene.policy(Network::Deny), &["open", &terminal]).await;
    assert_eq!(open.line, "ok opened", "{terminal}");
    assert!(confined.line.starts_with("denied EACCES"), "{terminal}: {}", confined.line);
    let (open, confined) = both(&scene, scene.policy(Network::Deny), &["open", "/dev/ptmx"]).await;
    assert_eq!(open.line, "ok opened");
    assert!(confined.line.starts_with("denied EACCES"), "a new terminal is one among the user's: {}", confined.line);
}

/// Makes `terminal` the controlling terminal of the command, in a session of its own, and its
/// stdin.
fn with_controlling_terminal(command: &mut tokio::process::Command, terminal: &nix::pty::OpenptyResult) {
    let slave = terminal.slave.try_clone().unwrap();
    command.stdin(Stdio::from(slave));
    #[allow(unsafe_code)]
    // SAFETY: setsid and ioctl on the inherited stdin, both async-signal-safe.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[tokio::test]
async fn the_controlling_terminal_cannot_be_reopened_but_a_handed_one_works_red() {
    let scene = Scene::new();
    let sandbox = Sandbox::new(scene.policy(Network::Deny)).unwrap();
    let (pair, _) = pty();
    let open = run_prepared(None, &scene.workspace, &["open", "/dev/tty"], |command| {
        with_controlling_terminal(command, &pair);
    })
    .await;
    assert_eq!(open.line, "ok opened");
    let confined = run_prepared(Some(&sandbox), &scene.workspace, &["open", "/dev/tty"], |command| {
        with_controlling_terminal(command, &pair);
    })
    .await;
    assert!(confined.line.starts_with("denied EACCES"), "{}", confined.line);
    let handed = run_prepared(Some(&sandbox), &scene.workspace, &["write-fd", "0", "typed"], |command| {
        with_controlling_terminal(command, &pair);
    })
    .await;
    assert_eq!(handed.line, "ok 5 written", "the terminal it was handed keeps working");
    let mut echoed = [0_u8; 5];
    nix::unistd::read(&pair.master, &mut echoed).unwrap();
    assert_eq!(&echoed, b"typed");
}

/// Files the test made in a shared place (`/dev/shm`), removed when it ends, panicked or not.
struct RemovedAtEnd(Vec<PathBuf>);

impl Drop for RemovedAtEnd {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[tokio::test]
async fn shared_memory_is_not_shared_with_other_processes_red() {
    let scene = Scene::new();
    let theirs = PathBuf::from(format!("/dev/shm/odek-test-theirs-{}", std::process::id()));
    let mine = format!("/dev/shm/odek-test-mine-{}", std::process::id());
    let _cleanup = RemovedAtEnd(vec![theirs.clone(), PathBuf::from(&mine)]);
    std::fs::write(&theirs, "another process's segment").unwrap();
    let (open, confined) = both(&scene, scene.policy(Network::Deny), &["read", theirs.to_str().unwrap()]).await;
    let (open_write, confined_write) = both(&scene, scene.policy(Network::Deny), &["write", &mine, "x"]).await;
    let mut opted_in = scene.policy(Network::Deny);
    opted_in.writable.push("/dev/shm".into());
    let (_, granted) = both(&scene, opted_in, &["read", theirs.to_str().unwrap()]).await;
    assert_eq!(open.line, "ok 25 bytes");
    assert!(confined.line.starts_with("denied EACCES"), "{}", confined.line);
    assert_eq!(open_write.line, "ok written");
    assert!(confined_write.line.starts_with("denied EACCES"), "{}", confined_write.line);
    assert_eq!(granted.line, "ok 25 bytes", "an operator may grant /dev/shm back");
}

#[tokio::test]
async fn a_second_thread_reaches_what_the_main_thread_may_red() {
    let scene = Scene::new();
    let (_listener, port) = pong_listener();
    let target = format!("127.0.0.1:{port}");
    let (open, confined) = both(&scene, scene.policy(Network::Loopback), &["thread-connect", &target]).await;
    assert_eq!(open.line, "ok connected: pong");
    assert_eq!(confined.line, "ok connected: pong");
    let denied = Sandbox::new(scene.policy(Network::Deny)).unwrap();
    let mut listed = scene.policy(Network::Deny);
    listed.allow_hosts = vec![parse_allow_host("127.0.0.1:1").unwrap()];
    let listed = Sandbox::new(listed).unwrap();
    let refused = run_in(Some(&listed), &scene.workspace, &["thread-connect", &target]).await;
    assert!(refused.line.starts_with("denied EACCES"), "{}", refused.line);
    assert_eq!(refused.finished.denials.len(), 1, "a thread's refusal is reported too");
    assert!(run_in(Some(&denied), &scene.workspace, &["thread-connect", &target]).await.line.starts_with("denied"));
}

#[tokio::test]
async fn unix_datagrams_cannot_reach_a_socket_outside_the_workspace_red() {
    let scene = Scene::new();
    let path = scene.outside.join("log.sock");
    let listener = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let mut buffer = [0_u8; 8];
    for action in ["unix-dgram", "unix-dgram-pair"] {
        let (open, confined) = both(&scene, scene.policy(Network::Allow), &[action, path.to_str().unwrap()]).await;
        assert_eq!(open.line, "ok 1 sent", "{action}");
        assert_eq!(listener.recv(&mut buffer).unwrap(), 1, "{action}");
        assert!(confined.line.starts_with("denied EACCES"), "{action}: {}", confined.line);
        assert_eq!(
            listener.recv(&mut buffer).unwrap_err().kind(),
            std::io::ErrorKind::WouldBlock,
            "{action}: a confined datagram arrived"
        );
    }
    let sandbox = Sandbox::new(scene.policy(Network::Deny)).unwrap();
    assert_eq!(run_in(Some(&sandbox), &scene.workspace, &["unix-pair"]).await.line, "ok paired");
}

fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn modified(path: &Path) -> std::time::SystemTime {
    std::fs::symlink_metadata(path).unwrap().modified().unwrap()
}

/// Whether `path` has the `user.odek` attribute the probe's `setxattr` sets.
fn has_xattr(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    let mut value = [0_u8; 4];
    #[allow(unsafe_code)]
    // SAFETY: getxattr writes at most `value.len()` bytes into `value`.
    let size = unsafe { libc::getxattr(path.as_ptr(), c"user.odek".as_ptr(), value.as_mut_ptr().cast(), value.len()) };
    size > 0
}

#[tokio::test]
async fn metadata_outside_the_writable_paths_cannot_change_red() {
    let scene = Scene::new();
    let target = scene.outside.join("settings.json");
    std::fs::write(&target, "{}").unwrap();
    set_mode(&target, 0o600);
    let shown = target.to_str().unwrap();
    let sandbox = Sandbox::new(scene.policy(Network::Deny)).unwrap();
    let before = modified(&target);
    for args in [vec!["chmod", shown, "644"], vec!["chown", shown], vec!["touch", shown], vec!["setxattr", shown]] {
        let confined = run_in(Some(&sandbox), &scene.workspace, &args).await;
        assert!(confined.line.starts_with("denied EACCES"), "{args:?}: {}", confined.line);
        let denial = &confined.finished.denials[0];
        assert_eq!(denial.target, shown, "{args:?}");
        assert_eq!(denial.reason, format!("{shown} is outside the writable paths"), "{args:?}");
    }
    assert_eq!(mode_of(&target), 0o600);
    assert_eq!(modified(&target), before);
    assert!(!has_xattr(&target));
    // Unconfined, each of them works (so the refusals above are the sandbox's).
    for args in [vec!["chmod", shown, "644"], vec!["chown", shown], vec!["touch", shown], vec!["setxattr", shown]] {
        assert!(run_in(None, &scene.workspace, &args).await.ok, "{args:?}");
    }
    assert_eq!(mode_of(&target), 0o644);
    assert!(has_xattr(&target));
}

#[tokio::test]
async fn metadata_of_a_readable_file_cannot_change_through_its_descriptor_red() {
    let scene = Scene::new();
    let (target, policy) = scene.readable_file(Network::Deny);
    let (open, confined) = both(&scene, policy.clone(), &["fchmod", target.to_str().unwrap(), "666"]).await;
    assert_eq!(open.line, "ok changed");
    set_mode(&target, 0o600);
    assert!(confined.line.starts_with("denied EACCES"), "{}", confined.line);
    assert_eq!(mode_of(&target), 0o600);
    let before = modified(&target);
    let (open, confined) = both(&scene, policy, &["futimens", target.to_str().unwrap()]).await;
    assert_eq!(open.line, "ok touched");
    assert!(confined.line.starts_with("denied EACCES"), "{}", confined.line);
    assert_eq!(confined.finished.denials[0].target, "fd 3");
    assert_ne!(before, modified(&target), "the unconfined futimens changed it (so the refusal is the sandbox's)");
}

#[tokio::test]
async fn odek_state_stays_untouchable_from_a_home_workspace_red() {
    let scene = Scene::new();
    let config = scene.home.join(".odek/config.json");
    set_mode(&config, 0o600);
    std::os::unix::fs::symlink(&config, scene.home.join("config-link")).unwrap();
    let mut policy = scene.policy(Network::Deny);
    policy.workspace = scene.home.clone();
    let sandbox = Sandbox::new(policy).unwrap();
    for path in [config.to_str().unwrap(), "config-link", ".odek/config.json"] {
        let confined = run_in(Some(&sandbox), &scene.home, &["chmod", path, "644"]).await;
        assert!(confined.line.starts_with("denied EACCES"), "{path}: {}", confined.line);
        let touched = run_in(Some(&sandbox), &scene.home, &["touch", path]).await;
        assert!(touched.line.starts_with("denied EACCES"), "{path}: {}", touched.line);
    }
    assert_eq!(mode_of(&config), 0o600);
    assert!(run_in(None, &scene.home, &["chmod", "config-link", "644"]).await.ok, "unconfined it works");
}

#[tokio::test]
async fn metadata_in_the_workspace_still_changes() {
    let scene = Scene::new();
    let sandbox = Sandbox::new(scene.policy(Network::Deny)).unwrap();
    let notes = scene.workspace.join("notes.txt");
    for args in [
        vec!["chmod", "notes.txt", "755"],
        vec!["fchmod", "notes.txt", "700"],
        vec!["chown", "notes.txt"],
        vec!["futimens", "notes.txt"],
        vec!["touch", "notes.txt"],
        vec!["setxattr", "notes.txt"],
    ] {
        let confined = run_in(Some(&sandbox), &scene.workspace, &args).await;
        assert!(confined.ok, "{args:?}: {}", confined.line);
        assert!(confined.finished.denials.is_empty(), "{args:?}");
    }
    assert_eq!(mode_of(&notes), 0o700);
    assert_eq!(modified(&notes), std::time::UNIX_EPOCH + std::time::Duration::from_secs(1));
    assert!(has_xattr(&notes));
}

fn mode_of_fd(fd: &impl std::os::fd::AsFd) -> u32 {
    nix::sys::stat::fstat(fd).unwrap().st_mode & 0o7777
}

const THROUGH_PROC: &str = "it leads through a /proc link, which the sandbox does not follow";

#[tokio::test]
async fn another_processs_unnamed_file_cannot_change_through_proc_red() {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let scene = Scene::new();
    // An unnamed file of this process, in a directory the command may not write (it could be
    // linked into place there later).
    let unnamed =
        std::fs::OpenOptions::new().write(true).custom_flags(libc::O_TMPFILE).mode(0o600).open(&scene.outside).unwrap();
    let through = format!("/proc/{}/fd/{}", std::process::id(), unnamed.as_raw_fd());
    let sandbox = Sandbox::new(scene.policy(Network::Deny)).unwrap();
    for args in [vec!["chmod", through.as_str(), "666"], vec!["touch", through.as_str()]] {
        let confined = run_in(Some(&sandbox), &scene.workspace, &args).await;
        assert!(confined.line.starts_with("denied EACCES"), "{args:?}: {}", confined.line);
        let denial = &confined.finished.denials[0];
        assert_eq!((denial.target.as_str(), denial.reason.as_str()), (through.as_str(), THROUGH_PROC), "{args:?}");
    }
    assert_eq!(mode_of_fd(&unnamed), 0o600);
    assert!(run_in(None, &scene.workspace, &["chmod", &through, "666"]).await.ok, "unconfined it works");
    assert_eq!(mode_of_fd(&unnamed), 0o666);
}

#[tokio::test]
async fn odeks_own_descriptors_and_root_cannot_be_reached_through_proc_red() {
    use std::os::fd::AsRawFd;
    let scene = Scene::new();
    let (reader, _writer) = std::io::pipe().unwrap();
    let before = mode_of_fd(&reader);
    // `/proc/self` as odek's supervisor would read it: odek's own descriptors.
    std::os::unix::fs::symlink(format!("/proc/self/fd/{}", reader.as_raw_fd()), scene.workspace.join("door")).unwrap();
    let rooted = format!("/proc/{}/root{}", std::process::id(), scene.workspace.join("notes.txt").display());
    let sandbox = Sandbox::new(scene.policy(Network::Deny)).unwrap();
    for args in [vec!["chmod", "door", "666"], vec!["touch", "door"], vec!["chmod", rooted.as_str(), "666"]] {
        let confined = run_in(Some(&sandbox), &scene.workspace, &args).await;
        assert!(confined.line.starts_with("denied EACCES"), "{args:?}: {}", confined.line);
        assert_eq!(confined.finished.denials[0].reason, THROUGH_PROC, "{args:?}");
    }
    assert_eq!(mode_of_fd(&reader), before);
    assert_ne!(mode_of(&scene.workspace.join("notes.txt")), 0o666);
}

#[tokio::test]
async fn the_callers_own_descriptors_change_through_their_proc_names() {
    let scene = Scene::new();
    let (readable, policy) = scene.readable_file(Network::Deny);
    let sandbox = Sandbox::new(policy).unwrap();
    let unnamed = format!("tmpfile:{}", scene.workspace.display());
    for prefix in ["/proc/self/fd/", "/proc/thread-self/fd/", "/dev/fd/", "/proc/PID/fd/"] {
        let confined = run_in(Some(&sandbox), &scene.workspace, &["chmod-own-fd", &unnamed, prefix, "640"]).await;
        assert_eq!(confined.line, "ok changed to 640", "{prefix}: its own unnamed file");
        let refused =
            run_in(Some(&sandbox), &scene.workspace, &["chmod-own-fd", readable.to_str().unwrap(), prefix, "666"])
                .await;
        assert!(
            refused.line.starts_with("denied EACCES"),
            "{prefix}: a readable file stays as it is: {}",
            refused.line
        );
        assert_eq!(
            refused.finished.denials[0].reason,
            format!("{} is outside the writable paths", readable.display()),
            "{prefix}"
        );
    }
    assert_eq!(mode_of(&readable), 0o600);
}

#[tokio::test]
async fn setuid_and_setgid_bits_are_refused_everywhere_red() {
    let scene = Scene::new();
    let tool = scene.workspace.join("tool");
    std::fs::write(&tool, "#!/bin/sh\n").unwrap();
    set_mode(&tool, 0o755);
    let sandbox = Sandbox::new(scene.policy(Network::Deny)).unwrap();
    for mode in ["4755", "2755", "6755"] {
        assert!(run_in(None, &scene.workspace, &["chmod", "tool", mode]).await.ok, "{mode}: unconfined");
        set_mode(&tool, 0o755);
        let confined = run_in(Some(&sandbox), &scene.workspace, &["chmod", "tool", mode]).await;
        assert!(confined.line.starts_with("denied EPERM"), "{mode}: {}", confined.line);
        assert_eq!(mode_of(&tool), 0o755);
        let created = format!("made-{mode}");
        let confined = run_in(Some(&sandbox), &scene.workspace, &["create-mode", &created, mode]).await;
        assert!(confined.line.starts_with("denied EPERM"), "{mode}: {}", confined.line);
        assert!(!scene.workspace.join(&created).exists());
    }
    let open = run_in(None, &scene.workspace, &["create-mode", "made-open", "4755"]).await;
    assert_eq!(open.line, "ok created");
    assert_eq!(run_in(Some(&sandbox), &scene.workspace, &["create-mode", "plain", "755"]).await.line, "ok created");
}

/// `chattr` (`FS_IOC_SETFLAGS`) and `file_setattr` (Linux 6.17, by path, no descriptor needed).
#[tokio::test]
async fn inode_flags_cannot_be_changed_red() {
    let scene = Scene::new();
    let sandbox = Sandbox::new(scene.policy(Network::Deny)).unwrap();
    let config = scene.home.join(".odek/config.json");
    for action in ["chattr", "file-setattr"] {
        let (open, confined) = both(&scene, scene.policy(Network::Deny), &[action, "notes.txt"]).await;
        assert_eq!(open.line, "ok changed", "{action}: this kernel and file system take inode flags");
        assert!(confined.line.starts_with("denied EPERM"), "{action}: {}", confined.line);
        let theirs = run_in(Some(&sandbox), &scene.workspace, &[action, config.to_str().unwrap()]).await;
        assert!(theirs.line.starts_with("denied"), "{action}: odek's config: {}", theirs.line);
    }
}

#[tokio::test]
async fn a_symlink_in_a_home_workspace_does_not_make_its_target_writable_red() {
    let scene = Scene::new();
    let elsewhere = tempfile::tempdir().unwrap();
    let elsewhere = std::fs::canonicalize(elsewhere.path()).unwrap();
    std::os::unix::fs::symlink(&elsewhere, scene.home.join("door")).unwrap();
    let mut policy = scene.policy(Network::Deny);
    policy.workspace = scene.home.clone();
    let sandbox = Sandbox::new(policy).unwrap();
    let open = run_in(None, &scene.home, &["write", "door/escaped.txt", "x"]).await;
    assert!(open.ok, "{}", open.line);
    std::fs::remove_file(elsewhere.join("escaped.txt")).unwrap();
    let confined = run_in(Some(&sandbox), &scene.home, &["write", "door/escaped.txt", "x"]).await;
    assert!(confined.line.starts_with("denied EACCES"), "{}", confined.line);
    assert!(!elsewhere.join("escaped.txt").exists());
    let inside = run_in(Some(&sandbox), &scene.home, &["write", "work/made.txt", "y"]).await;
    assert!(inside.ok, "the rest of the home stays writable: {}", inside.line);
}
