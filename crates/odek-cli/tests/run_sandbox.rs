//! \[beyond\] The sandbox through `odek run` (issue 20), on this machine's kernel: commands the
//! danger classifier lets through (the config allows every class) still cannot write outside
//! the workspace (a symlink in the workspace included), read `~/.odek`, reach a loopback
//! listener, reach a host off the allow-list through the proxy, ptrace their parent, exhaust
//! the process table or leave a process behind. Each `_red` test runs the same command with
//! `--no-sandbox` too, where it works, so none can pass vacuously.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use std::io::Read;
use std::net::TcpListener;
use std::time::Duration;

use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::*;
use serde_json::{Value, json};

/// A scene whose config lets every command class through (the classifier stays out of the way),
/// with `sandbox` as the sandbox section and the probe's directory readable.
fn scene(server: &ScriptedServer, sandbox: Value) -> Sandbox {
    let scene = Sandbox::new();
    let mut section = sandbox;
    let probe_dir = odek_test_support::sandbox_probe().parent().unwrap().to_path_buf();
    section["readable"] = json!([probe_dir]);
    scene.global_config(&json!({
        "base_url": server.base_url(),
        "model": "test-model",
        "dangerous": allow_every_class(),
        "sandbox": section,
    }));
    let secrets = scene.home.join(".odek/secrets.env");
    std::fs::write(&secrets, "ISSUES_TOKEN=tok-secret-4242\n").unwrap();
    std::fs::set_permissions(&secrets, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    scene
}

/// Runs `command` through the shell tool in one `odek run` (with `extra` flags), and returns the
/// tool result the model read and the run's events.
fn shell(scene: &Sandbox, server: &ScriptedServer, command: &str, extra: &[&str]) -> (String, Vec<Value>) {
    let arguments = json!({"command": command}).to_string();
    server.push(Reply::tool_calls(vec![("c1", "shell", arguments.as_str())]));
    server.push(Reply::text("done"));
    let before = server.requests().len();
    let mut args = vec!["run", "--events-jsonl", "events.jsonl"];
    args.extend_from_slice(extra);
    args.push("go");
    let output = output_within(scene.command(&args), Duration::from_secs(60));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), before + 2, "one call, one answer");
    let result = tool_contents(&requests[before + 1]).pop().unwrap();
    let events = events(&scene.project.join("events.jsonl"));
    std::fs::remove_file(scene.project.join("events.jsonl")).unwrap();
    (result, events)
}

/// Runs one shell call with `arguments` as the model gave them and returns the result it read.
fn shell_call(scene: &Sandbox, server: &ScriptedServer, arguments: &Value) -> String {
    let arguments = arguments.to_string();
    server.push(Reply::tool_calls(vec![("c1", "shell", arguments.as_str())]));
    server.push(Reply::text("done"));
    let before = server.requests().len();
    let output = output_within(scene.command(&["run", "go"]), Duration::from_secs(60));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    tool_contents(&server.requests()[before + 1]).pop().unwrap()
}

fn run_started(events: &[Value]) -> &Value {
    events.iter().find(|event| event["type"] == "run_started").unwrap()
}

fn denials(events: &[Value]) -> Vec<&Value> {
    events.iter().filter(|event| event["type"] == "operation_denied").collect()
}

#[test]
fn the_sandbox_is_on_by_default_and_reported_in_run_started() {
    let server = ScriptedServer::start(Vec::new());
    let scene = scene(&server, json!({}));
    let (result, events) = shell(&scene, &server, "echo hello", &[]);
    assert!(result.contains("hello"), "{result}");
    assert_eq!(run_started(&events)["data"]["sandbox"], true);
    let (_, events) = shell(&scene, &server, "echo hello", &["--no-sandbox"]);
    assert_eq!(run_started(&events)["data"]["sandbox"], false);
}

#[test]
fn a_write_outside_the_workspace_is_refused_red() {
    let server = ScriptedServer::start(Vec::new());
    let scene = scene(&server, json!({}));
    let outside = scene.project.parent().unwrap().join("outside.txt");
    let command = format!("echo escaped > {}", outside.display());
    let (result, _) = shell(&scene, &server, &command, &[]);
    assert!(!outside.exists(), "the sandbox let a write outside the workspace through");
    assert!(result.contains("Permission denied"), "{result}");
    assert!(result.contains("sandbox: this command ran in odek's sandbox"), "{result}");
    assert!(result.contains("exit status 1"), "{result}");
    let (_, _) = shell(&scene, &server, &command, &["--no-sandbox"]);
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "escaped\n");
}

#[test]
fn a_write_through_a_symlink_in_the_workspace_is_refused_red() {
    let server = ScriptedServer::start(Vec::new());
    let scene = scene(&server, json!({}));
    let escape = scene.project.parent().unwrap().join("escape");
    std::fs::create_dir(&escape).unwrap();
    std::os::unix::fs::symlink(&escape, scene.project.join("link")).unwrap();
    let (result, _) = shell(&scene, &server, "echo escaped > link/f.txt", &[]);
    assert!(!escape.join("f.txt").exists(), "the sandbox let a write through a symlink out");
    assert!(result.contains("Permission denied"), "{result}");
    shell(&scene, &server, "echo escaped > link/f.txt", &["--no-sandbox"]);
    assert!(escape.join("f.txt").exists());
}

#[test]
fn odek_state_cannot_be_read_red() {
    let server = ScriptedServer::start(Vec::new());
    let scene = scene(&server, json!({}));
    for file in ["config.json", "secrets.env"] {
        let command = format!("cat {}", scene.home.join(".odek").join(file).display());
        let (result, _) = shell(&scene, &server, &command, &[]);
        assert!(result.contains("Permission denied"), "{file}: {result}");
        assert!(!result.contains("test-model") && !result.contains("ISSUES_TOKEN"), "{file}: {result}");
        let (result, _) = shell(&scene, &server, &command, &["--no-sandbox"]);
        assert!(result.contains("test-model") || result.contains("ISSUES_TOKEN"), "{file}: {result}");
    }
}

/// A listener that counts the connections it accepted (on a thread of its own).
fn counting_listener() -> (u16, std::sync::mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut text = String::new();
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = stream.read_to_string(&mut text);
            if sender.send(text).is_err() {
                return;
            }
        }
    });
    (port, receiver)
}

#[test]
fn loopback_is_unreachable_unless_allowed_red() {
    let server = ScriptedServer::start(Vec::new());
    let (port, received) = counting_listener();
    let command = format!("echo knock > /dev/tcp/127.0.0.1/{port}");
    let denied = scene(&server, json!({}));
    let (result, _) = shell(&denied, &server, &command, &[]);
    assert!(result.contains("exit status 1"), "{result}");
    assert!(received.recv_timeout(Duration::from_millis(300)).is_err(), "a denied connect reached the listener");
    shell(&denied, &server, &command, &["--no-sandbox"]);
    assert_eq!(received.recv_timeout(Duration::from_secs(10)).unwrap(), "knock\n");
    let loopback = scene(&server, json!({"network": "loopback"}));
    let (result, _) = shell(&loopback, &server, &command, &[]);
    assert!(!result.contains("exit status"), "{result}");
    assert_eq!(received.recv_timeout(Duration::from_secs(10)).unwrap(), "knock\n");
}

#[test]
fn a_host_off_the_allow_list_is_refused_by_the_proxy_and_reported_red() {
    let server = ScriptedServer::start(Vec::new());
    let (port, received) = counting_listener();
    // `localhost:<port>` is allowed by name; `127.0.0.1:<port>` and any other name are not.
    // (Loopback mode: tests may reach nothing but 127.0.0.1, and the proxy takes a name to a
    // loopback address only where loopback is allowed.)
    let scene = scene(&server, json!({"network": "loopback", "allow_hosts": [format!("localhost:{port}")]}));
    let probe = odek_test_support::sandbox_probe();
    for target in [format!("127.0.0.1:{port}"), "unlisted.example:443".to_owned()] {
        let refused = format!("{} proxy-connect {target}", probe.display());
        let (result, events) = shell(&scene, &server, &refused, &[]);
        let reason = format!("sandbox: connect {target} refused (not on the allow-list, through the proxy)");
        assert!(result.contains(&reason), "{result}");
        assert!(result.contains("403"), "{result}");
        let denied = denials(&events);
        assert_eq!(denied.len(), 1, "{events:?}");
        assert_eq!(denied[0]["tool"], "shell");
        assert_eq!(denied[0]["data"]["class"], "network_egress");
        assert_eq!(denied[0]["data"]["reason"], reason.as_str());
    }
    assert!(received.recv_timeout(Duration::from_millis(300)).is_err(), "the proxy connected a refused host");
    let allowed = format!("{} proxy-connect localhost:{port}", probe.display());
    let (result, events) = shell(&scene, &server, &allowed, &[]);
    assert!(result.contains("200"), "{result}");
    assert!(denials(&events).is_empty(), "{events:?}");
    assert!(received.recv_timeout(Duration::from_secs(10)).is_ok());
}

#[test]
fn other_processes_cannot_be_ptraced_red() {
    let server = ScriptedServer::start(Vec::new());
    let scene = scene(&server, json!({}));
    let probe = odek_test_support::sandbox_probe();
    // The parent (odek itself) is refused; unconfined, attaching to it would stop odek, so the
    // unconfined comparison attaches to a sibling instead.
    let (result, _) = shell(&scene, &server, &format!("{} ptrace $PPID", probe.display()), &[]);
    assert!(result.contains("EPERM"), "{result}");
    let sibling = format!("sleep 30 & {} ptrace $!; kill -9 $!", probe.display());
    let (result, _) = shell(&scene, &server, &sibling, &[]);
    assert!(result.contains("EPERM"), "{result}");
    let (result, _) = shell(&scene, &server, &sibling, &["--no-sandbox"]);
    assert!(result.contains("attached"), "{result}");
}

#[test]
fn a_fork_bomb_stops_at_the_process_limit_red() {
    let server = ScriptedServer::start(Vec::new());
    let scene = scene(&server, json!({}));
    let command = format!("{} fork-bomb 700", odek_test_support::sandbox_probe().display());
    let (result, _) = shell(&scene, &server, &command, &[]);
    let made: u32 = result.split("ok ").nth(1).and_then(|rest| rest.split(' ').next()).unwrap().parse().unwrap();
    assert!(made < 512, "{result}");
    // Unconfined, the same 700 children are made (and killed with the call's process group).
    let (result, _) = shell(&scene, &server, &command, &["--no-sandbox"]);
    assert!(result.contains("ok 700 of 700 children"), "{result}");
}

#[test]
fn no_process_outlives_the_call_red() {
    let server = ScriptedServer::start(Vec::new());
    let scene = scene(&server, json!({}));
    let marker = scene.project.join("daemon-marker");
    // A daemon in a session of its own, which says `up` on a FIFO once it runs (so the call
    // cannot end before it has left the process group), or `refused` when setsid failed.
    let command = format!(
        "mkfifo ready && {{ setsid sh -c 'echo up > ready; sleep 1000; :' {} </dev/null >/dev/null 2>&1 || echo refused > ready; }} & cat ready",
        marker.display()
    );
    let (result, _) = shell(&scene, &server, &command, &[]);
    assert!(result.contains("refused"), "{result}");
    assert!(odek_test_support::processes_mentioning(&marker).is_empty(), "a confined command left a process");
    std::fs::remove_file(scene.project.join("ready")).unwrap();
    let (result, _) = shell(&scene, &server, &command, &["--no-sandbox"]);
    let left = odek_test_support::processes_mentioning(&marker);
    for pid in &left {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*pid as i32), nix::sys::signal::Signal::SIGKILL);
    }
    assert!(result.contains("up"), "{result}");
    assert!(!left.is_empty(), "unconfined, setsid escapes the process group (so the red case means something)");
}

#[test]
fn a_required_sandbox_cannot_be_turned_off_red() {
    let server = ScriptedServer::start(Vec::new());
    let scene = scene(&server, json!({"required": true}));
    let output = scene.odek(&["run", "--no-sandbox", "go"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr(&output), "odek: sandbox.required is set: the sandbox cannot be turned off\n");
    let mut command = scene.command(&["run", "go"]);
    command.env("ODEK_SANDBOX", "0");
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(server.requests().is_empty());
}

#[test]
fn a_continued_session_keeps_its_posture() {
    let server = ScriptedServer::start(Vec::new());
    let scene = scene(&server, json!({}));
    server.push(Reply::text("first"));
    let output = scene.odek(&["run", "--session", "--no-sandbox", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    server.push(Reply::text("second"));
    let output = scene.odek(&["continue", "--events-jsonl", "events.jsonl", "more"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stderr(&output), "odek: session was not sandboxed — continuing without the sandbox\n");
    assert_eq!(run_started(&events(&scene.project.join("events.jsonl")))["data"]["sandbox"], false);

    server.push(Reply::text("third"));
    let output = scene.odek(&["run", "--session", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let mut command = scene.command(&["continue", "--events-jsonl", "events2.jsonl", "more"]);
    command.env("ODEK_SANDBOX", "0");
    server.push(Reply::text("fourth"));
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stderr(&output), "odek: session was sandboxed — enabling sandbox for this continuation\n");
    assert_eq!(run_started(&events(&scene.project.join("events2.jsonl")))["data"]["sandbox"], true);
}

#[test]
fn a_setuid_binary_in_the_workspace_gains_nothing() {
    let server = ScriptedServer::start(Vec::new());
    let scene = scene(&server, json!({}));
    // A copy of `id` owned by this user with the setuid bit: no_new_privs keeps it from raising
    // anything (and for a non-root user the bit would be ignored outright).
    std::fs::copy("/usr/bin/id", scene.project.join("suid-id")).unwrap();
    std::fs::set_permissions(scene.project.join("suid-id"), std::os::unix::fs::PermissionsExt::from_mode(0o4755))
        .unwrap();
    let (result, _) = shell(&scene, &server, "./suid-id -u; grep NoNewPrivs /proc/self/status", &[]);
    assert!(result.contains("NoNewPrivs:\t1"), "{result}");
    let (result, _) = shell(&scene, &server, "grep NoNewPrivs /proc/self/status", &["--no-sandbox"]);
    assert!(result.contains("NoNewPrivs:\t0"), "{result}");
}

#[test]
fn without_landlock_the_run_says_so_once_and_runs_unconfined() {
    let server = ScriptedServer::start(Vec::new());
    let scene = scene(&server, json!({}));
    let outside = scene.project.parent().unwrap().join("outside.txt");
    let arguments = json!({"command": format!("echo unconfined > {}", outside.display())}).to_string();
    server.push(Reply::tool_calls(vec![("c1", "shell", arguments.as_str())]));
    server.push(Reply::text("done"));
    let output =
        without_landlock(&scene, &["run", "--quiet", "--events-jsonl", "events.jsonl", "go"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stderr(&output),
        "odek: warning: sandbox: this kernel does not support Landlock; commands run unconfined (set ODEK_REQUIRE_SANDBOX=1 to refuse instead)\n",
        "one line, once"
    );
    assert_eq!(run_started(&events(&scene.project.join("events.jsonl")))["data"]["sandbox"], false);
    assert!(outside.exists(), "the fallback is unconfined, and says so");
}

#[test]
fn without_a_supervisor_metadata_changes_in_the_workspace_work_and_the_run_says_so_red() {
    use std::os::unix::fs::PermissionsExt;
    let server = ScriptedServer::start(Vec::new());
    let scene = scene(&server, json!({}));
    let notes = scene.project.join("notes.txt");
    std::fs::write(&notes, "notes").unwrap();
    let outside = scene.project.parent().unwrap().join("outside.txt");
    let command = format!(
        "chmod 600 notes.txt && touch notes.txt && cp -p notes.txt copy.txt && echo changed; echo x > {}",
        outside.display()
    );
    let arguments = json!({"command": command}).to_string();
    server.push(Reply::tool_calls(vec![("c1", "shell", arguments.as_str())]));
    server.push(Reply::text("done"));
    // pidfd_getfd refused, as an outer seccomp profile may: no supervisor can be made.
    let output = refusing(&scene, "438", &["run", "--quiet", "--events-jsonl", "events.jsonl", "go"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stderr(&output),
        "odek: warning: sandbox: no supervisor here (seccomp user notifications or pidfd_getfd unavailable): chmod, \
         chown, file times, extended attributes and Unix socket connections are not limited to the writable paths\n",
        "one line, once"
    );
    let result = tool_contents(&server.requests()[1]).pop().unwrap();
    assert!(result.contains("changed"), "{result}");
    assert_eq!(std::fs::metadata(&notes).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(run_started(&events(&scene.project.join("events.jsonl")))["data"]["sandbox"], true);
    assert!(!outside.exists(), "Landlock still confines writes");
}

#[test]
fn a_required_sandbox_without_landlock_is_a_setup_error_red() {
    let server = ScriptedServer::start(Vec::new());
    let plain = scene(&server, json!({}));
    let expected = "odek: sandbox.required is set but the sandbox cannot be enforced here: sandbox: this kernel does not support Landlock\n";
    let mut command = without_landlock(&plain, &["run", "go"]);
    command.env("ODEK_REQUIRE_SANDBOX", "1");
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr(&output), expected);
    let required = scene(&server, json!({"required": true}));
    let output = without_landlock(&required, &["subagent", "--goal", "g"]).output().unwrap();
    assert_eq!(output.status.code(), Some(3));
    assert_eq!(stderr(&output), expected);
    assert!(server.requests().is_empty(), "no model call without the required sandbox");
}

#[test]
fn a_command_that_closes_its_output_and_keeps_running_is_stopped_at_its_deadline() {
    let server = ScriptedServer::start(Vec::new());
    let scene = scene(&server, json!({}));
    let marker = scene.project.join("quiet-marker");
    let command = format!("exec >&- 2>&-; sh -c 'sleep 1000; :' {}", marker.display());
    let result = shell_call(&scene, &server, &json!({"command": command, "timeout_seconds": 1}));
    assert!(result.contains("command timed out after 1s; its process group was killed"), "{result}");
    assert!(odek_test_support::processes_mentioning(&marker).is_empty(), "the quiet command outlived its call");
}

#[test]
fn git_and_home_toolchains_work_but_their_credentials_stay_unreadable_red() {
    let server = ScriptedServer::start(Vec::new());
    let scene = scene(&server, json!({}));
    std::fs::write(scene.home.join(".gitconfig"), "[user]\n\tname = Sandboxed Sam\n").unwrap();
    std::fs::create_dir_all(scene.home.join(".cargo")).unwrap();
    std::fs::write(scene.home.join(".cargo/config.toml"), "# cargo settings\n").unwrap();
    std::fs::write(scene.home.join(".cargo/credentials.toml"), "token = \"cio-secret-77\"\n").unwrap();
    std::fs::create_dir_all(scene.home.join(".ssh")).unwrap();
    std::fs::write(scene.home.join(".ssh/id_ed25519"), "PRIVATE KEY 88\n").unwrap();
    let command = "git init -q . && git status --short && git config user.name; \
        cat ~/.cargo/config.toml; cat ~/.cargo/credentials.toml; cat ~/.ssh/id_ed25519; true";
    let (result, _) = shell(&scene, &server, command, &[]);
    assert!(result.contains("Sandboxed Sam"), "{result}");
    assert!(result.contains("# cargo settings"), "{result}");
    assert!(!result.contains("cio-secret-77") && !result.contains("PRIVATE KEY 88"), "{result}");
    assert_eq!(result.matches("Permission denied").count(), 2, "{result}");
    let (result, _) = shell(&scene, &server, command, &["--no-sandbox"]);
    assert!(result.contains("cio-secret-77") && result.contains("PRIVATE KEY 88"), "{result}");
}

// Issue 32, the hostile-input round, through `odek run`.

#[test]
fn every_refused_connect_of_a_call_is_an_event_red() {
    let server = ScriptedServer::start(Vec::new());
    // Only 127.0.0.1:1 is listed, so every other loopback port is refused by the supervisor
    // before any packet leaves.
    let scene = scene(&server, json!({"allow_hosts": ["127.0.0.1:1"]}));
    let connects = |ports: &str| format!("for port in {ports}; do echo knock > /dev/tcp/127.0.0.1/$port; done; true");
    let reason =
        |port: u32| format!("sandbox: connect 127.0.0.1:{port} refused (not on the allow-list (network: deny))");
    let (result, events) = shell(&scene, &server, &connects("2 3 4"), &[]);
    let denied = denials(&events);
    let reasons: Vec<&str> = denied.iter().map(|event| event["data"]["reason"].as_str().unwrap()).collect();
    assert_eq!(reasons, [reason(2), reason(3), reason(4)], "{result}");
    assert!(denied.iter().all(|event| event["data"]["class"] == "network_egress" && event["data"]["call_id"] == "c1"));
    // A command refused in a loop: 16 events one by one, then one counting the rest.
    let (_, events) =
        shell(&scene, &server, &connects(&(2..=21).map(|port| port.to_string()).collect::<Vec<_>>().join(" ")), &[]);
    let denied = denials(&events);
    assert_eq!(denied.len(), 17, "{denied:?}");
    assert_eq!(denied[15]["data"]["reason"], reason(17));
    assert_eq!(denied[16]["data"]["reason"], "sandbox: 4 more refused operation(s)");
}

#[test]
fn the_results_denial_count_covers_every_refusal_a_summary_stands_for_red() {
    let server = ScriptedServer::start(Vec::new());
    let scene = scene(&server, json!({"allow_hosts": ["127.0.0.1:1"]}));
    let ports = (2..=21).map(|port| port.to_string()).collect::<Vec<_>>().join(" ");
    let command = format!("for port in {ports}; do echo knock > /dev/tcp/127.0.0.1/$port; done; true");
    let arguments = json!({"command": command}).to_string();
    server.push(Reply::tool_calls(vec![("c1", "shell", arguments.as_str())]));
    server.push(Reply::text("done"));
    let output = output_within(scene.command(&["run", "--json", "go"]), Duration::from_secs(60));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let result: Value = serde_json::from_str(String::from_utf8_lossy(&output.stdout).trim()).unwrap();
    // 16 listed one by one and one summary of the other 4: 20 refusals.
    assert_eq!(result["denials"]["count"], 20, "{result}");
    assert_eq!(result["denials"]["first"].as_array().unwrap().len(), 17);
}

#[test]
fn a_checks_refused_connects_are_events_red() {
    let server = ScriptedServer::start(vec![Reply::text("done")]);
    let scene = scene(&server, json!({"allow_hosts": ["127.0.0.1:1"]}));
    let check = "for port in 2 3; do echo knock > /dev/tcp/127.0.0.1/$port; done; true";
    let output = output_within(
        scene.command(&["run", "--check", check, "--events-jsonl", "events.jsonl", "go"]),
        Duration::from_secs(60),
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = events(&scene.project.join("events.jsonl"));
    let kinds: Vec<&str> = events
        .iter()
        .map(|event| event["type"].as_str().unwrap())
        .filter(|kind| kind.starts_with("check_") || *kind == "operation_denied")
        .collect();
    assert_eq!(kinds, ["check_started", "operation_denied", "operation_denied", "check_completed"]);
    let denied = denials(&events);
    assert_eq!(denied[0]["tool"], "check");
    assert_eq!(denied[0]["data"]["call_id"], "check-1");
    assert_eq!(
        denied[1]["data"]["reason"],
        "sandbox: connect 127.0.0.1:3 refused (not on the allow-list (network: deny))"
    );
}

#[test]
fn the_terminal_odek_runs_in_is_out_of_a_commands_reach_red() {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::process::CommandExt;
    let server = ScriptedServer::start(Vec::new());
    let scene = scene(&server, json!({}));
    let terminal = nix::pty::openpty(None, None).unwrap();
    let name = std::ffi::CString::new(nix::unistd::ttyname(&terminal.slave).unwrap().as_os_str().as_bytes()).unwrap();
    // odek in a session of its own whose controlling terminal is ours (its stdio stays pipes):
    // what a command could reach as /dev/tty is the user's terminal.
    let in_our_terminal = |extra: &[&str]| {
        let arguments = json!({"command": "echo pwned > /dev/tty"}).to_string();
        server.push(Reply::tool_calls(vec![("c1", "shell", arguments.as_str())]));
        server.push(Reply::text("done"));
        let before = server.requests().len();
        let mut args = vec!["run"];
        args.extend_from_slice(extra);
        args.push("go");
        let mut command = scene.command(&args);
        let name = name.clone();
        #[allow(unsafe_code)]
        // SAFETY: setsid and open/close between fork and exec, with a path prepared beforehand.
        unsafe {
            command.pre_exec(move || {
                nix::unistd::setsid()?;
                drop(nix::fcntl::open(name.as_c_str(), nix::fcntl::OFlag::O_RDWR, nix::sys::stat::Mode::empty())?);
                Ok(())
            });
        }
        let output = output_within(command, Duration::from_secs(60));
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        tool_contents(&server.requests()[before + 1]).pop().unwrap()
    };
    let shown = |master: &std::os::fd::OwnedFd| {
        let mut buffer = [0_u8; 256];
        nix::fcntl::fcntl(master, nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK)).unwrap();
        let read = nix::unistd::read(master, &mut buffer).unwrap_or(0);
        String::from_utf8_lossy(&buffer[..read]).into_owned()
    };
    let result = in_our_terminal(&[]);
    assert!(result.contains("Permission denied"), "{result}");
    assert_eq!(shown(&terminal.master), "", "a confined command wrote to odek's terminal");
    in_our_terminal(&["--no-sandbox"]);
    assert!(shown(&terminal.master).contains("pwned"), "unconfined, /dev/tty is odek's terminal");
}

#[test]
fn a_second_thread_of_a_command_reaches_loopback_red() {
    let server = ScriptedServer::start(Vec::new());
    let (port, received) = counting_listener();
    let scene = scene(&server, json!({"network": "loopback"}));
    let threaded = format!(
        "/usr/bin/python3 -c \"import socket, threading
def knock():
    with socket.create_connection(('127.0.0.1', {port})) as peer:
        peer.sendall(b'knock')
    print('reached', 'from', threading.current_thread().name)
thread = threading.Thread(target=knock)
thread.start()
thread.join()\""
    );
    let (result, events) = shell(&scene, &server, &threaded, &[]);
    assert!(result.contains("reached from Thread-1"), "{result}");
    assert!(denials(&events).is_empty(), "{events:?}");
    assert_eq!(received.recv_timeout(Duration::from_secs(10)).unwrap(), "knock");
}

#[test]
fn odek_config_keeps_its_mode_and_times_red() {
    use std::os::unix::fs::PermissionsExt;
    let server = ScriptedServer::start(Vec::new());
    let scene = scene(&server, json!({}));
    let config = scene.home.join(".odek/config.json");
    let mode = || std::fs::metadata(&config).unwrap().permissions().mode() & 0o777;
    let command = format!("chmod 644 {0}; touch -d 2001-01-01 {0}", config.display());
    let (result, events) = shell(&scene, &server, &command, &[]);
    assert_eq!(mode(), 0o600, "{result}");
    assert!(
        std::fs::metadata(&config).unwrap().modified().unwrap()
            > std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000)
    );
    let shown = config.display();
    let denied = denials(&events);
    assert_eq!(denied.len(), 2, "{events:?}");
    assert_eq!(denied[0]["data"]["class"], "system_write");
    assert_eq!(
        denied[0]["data"]["reason"],
        format!("sandbox: chmod {shown} refused ({shown} is outside the writable paths)")
    );
    assert!(result.contains(&format!("sandbox: utimes {shown} refused")), "{result}");
    shell(&scene, &server, &command, &["--no-sandbox"]);
    assert_eq!(mode(), 0o644, "unconfined, the same command changes it");
}
