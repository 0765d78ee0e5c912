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
    use tokio::io::AsyncReadExt;
    let mut command = tokio::process::Command::new(probe());
    command.args(args).current_dir(cwd).stdin(Stdio::null()).stdout(Stdio::piped()).process_group(0).kill_on_drop(true);
    let mut confinement = sandbox.map(|sandbox| sandbox.confine(&mut command).unwrap());
    let mut child = command.spawn().unwrap();
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
