//! \[beyond\] Stdio MCP servers in the sandbox (issue 20), through `odek run` with a real server
//! process: a small shell prelude that tries to write outside the workspace and read
//! `~/.odek/config.json`, records what it could do in the workspace, then `exec`s the fixture
//! server. A server that asks for the sandbox (and every project server) cannot; the same server
//! unconfined can, so no `_red` test passes vacuously. Without a kernel that can confine it, a
//! server that asks for the sandbox fails to start rather than run unconfined.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::*;
use serde_json::{Value, json};

/// What the prelude could do, as it wrote it into `report` in the workspace.
struct Attempt {
    outside: PathBuf,
    report: PathBuf,
}

impl Attempt {
    fn new(scene: &Sandbox) -> Attempt {
        let outside = scene.project.parent().unwrap().join("outside");
        std::fs::create_dir(&outside).unwrap();
        Attempt { outside: outside.join("outside.txt"), report: scene.project.join("report") }
    }

    /// `sh -c` with the prelude, then the fixture server.
    fn server(&self, scene: &Sandbox, extra: Value) -> Value {
        let script = format!(
            "{{ echo escaped > '{outside}' && echo wrote-outside; }} >> report 2>&1; \
             {{ cat '{config}' > /dev/null && echo read-config; }} >> report 2>&1; \
             echo inside > inside.txt; exec '{fixture}' --conformant",
            outside = self.outside.display(),
            config = scene.home.join(".odek/config.json").display(),
            fixture = odek_test_support::fixture_server().display(),
        );
        let mut entry = json!({"command": "/bin/sh", "args": ["-c", script], "auto_approve": true});
        if let (Value::Object(entry), Value::Object(extra)) = (&mut entry, extra) {
            entry.extend(extra);
        }
        entry
    }

    fn report(&self) -> String {
        std::fs::read_to_string(&self.report).unwrap_or_default()
    }

    fn assert_confined(&self) {
        let report = self.report();
        assert!(!self.outside.exists(), "a confined server wrote outside the workspace: {report}");
        assert!(!report.contains("wrote-outside") && !report.contains("read-config"), "{report}");
        assert_eq!(report.matches("Permission denied").count(), 2, "{report}");
    }

    fn assert_unconfined(&self) {
        let report = self.report();
        assert_eq!(std::fs::read_to_string(&self.outside).unwrap(), "escaped\n");
        assert!(report.contains("wrote-outside") && report.contains("read-config"), "{report}");
    }

    fn reset(&self) {
        let _ = std::fs::remove_file(&self.outside);
        let _ = std::fs::remove_file(&self.report);
    }
}

/// A global config with the scripted endpoint, `servers`, and the fixture's directory readable
/// (the prelude `exec`s it).
fn configure(scene: &Sandbox, server: &ScriptedServer, servers: Value) {
    let fixture_dir = odek_test_support::fixture_server().parent().unwrap().to_path_buf();
    scene.global_config(&json!({
        "base_url": server.base_url(),
        "model": "test-model",
        "mcp_servers": servers,
        "sandbox": {"readable": [fixture_dir]},
    }));
}

/// One `odek run` that only answers (the servers start before the first request); its stderr.
fn run(scene: &Sandbox, server: &ScriptedServer, extra: &[&str]) -> String {
    server.push(Reply::text("done"));
    let mut args = vec!["run", "--quiet"];
    args.extend_from_slice(extra);
    args.push("go");
    let mut command = scene.command(&args);
    command.env("ODEK_APPROVE_MCP", "1");
    let output = output_within(command, Duration::from_secs(60));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(scene.project.join("inside.txt").exists(), "the server ran: {}", stderr(&output));
    stderr(&output)
}

fn write_project_config(project: &Path, config: &Value) {
    std::fs::write(project.join("odek.json"), config.to_string()).unwrap();
}

#[test]
fn a_confined_server_cannot_write_outside_the_workspace_or_read_odek_state_red() {
    let server = ScriptedServer::start(Vec::new());
    let scene = Sandbox::new();
    let attempt = Attempt::new(&scene);
    configure(&scene, &server, json!({"fx": attempt.server(&scene, json!({"sandbox": true}))}));
    run(&scene, &server, &[]);
    attempt.assert_confined();

    attempt.reset();
    run(&scene, &server, &["--no-sandbox"]);
    attempt.assert_unconfined();
}

#[test]
fn a_global_server_runs_unconfined_unless_it_asks() {
    let server = ScriptedServer::start(Vec::new());
    let scene = Sandbox::new();
    let attempt = Attempt::new(&scene);
    configure(&scene, &server, json!({"fx": attempt.server(&scene, json!({}))}));
    run(&scene, &server, &[]);
    attempt.assert_unconfined();
}

#[test]
fn a_project_server_is_confined_and_cannot_turn_it_off_red() {
    let server = ScriptedServer::start(Vec::new());
    let scene = Sandbox::new();
    let attempt = Attempt::new(&scene);
    configure(&scene, &server, json!({}));
    let mut entry = attempt.server(&scene, json!({"sandbox": false}));
    entry.as_object_mut().unwrap().remove("auto_approve");
    write_project_config(&scene.project, &json!({"mcp_servers": {"fx": entry}}));
    let stderr = run(&scene, &server, &[]);
    assert!(
        stderr.contains(
            "odek: warning: project config: mcp server \"fx\": sandbox false ignored (a project's servers always run in the sandbox)"
        ),
        "{stderr}"
    );
    attempt.assert_confined();

    attempt.reset();
    run(&scene, &server, &["--no-sandbox"]);
    attempt.assert_unconfined();
}

#[test]
fn a_server_writes_where_its_writable_list_says_and_a_project_only_beneath_the_workspace_red() {
    let server = ScriptedServer::start(Vec::new());
    let scene = Sandbox::new();
    let attempt = Attempt::new(&scene);
    let outside_dir = attempt.outside.parent().unwrap().to_path_buf();
    let global = attempt.server(&scene, json!({"sandbox": true, "writable": [outside_dir]}));
    configure(&scene, &server, json!({"fx": global}));
    run(&scene, &server, &[]);
    assert_eq!(std::fs::read_to_string(&attempt.outside).unwrap(), "escaped\n", "{}", attempt.report());
    assert!(!attempt.report().contains("read-config"), "{}", attempt.report());

    attempt.reset();
    configure(&scene, &server, json!({}));
    let mut project = attempt.server(&scene, json!({"writable": [outside_dir]}));
    project.as_object_mut().unwrap().remove("auto_approve");
    write_project_config(&scene.project, &json!({"mcp_servers": {"fx": project}}));
    let stderr = run(&scene, &server, &[]);
    let canonical = std::fs::canonicalize(&outside_dir).unwrap();
    assert!(
        stderr.contains(&format!(
            "odek: warning: project config: mcp server \"fx\": writable entry {} is not beneath the workspace; ignored",
            canonical.display()
        )),
        "{stderr}"
    );
    attempt.assert_confined();
}

#[test]
fn without_landlock_a_server_that_asks_for_the_sandbox_fails_to_start_red() {
    let server = ScriptedServer::start(Vec::new());
    let scene = Sandbox::new();
    let attempt = Attempt::new(&scene);
    configure(&scene, &server, json!({"fx": attempt.server(&scene, json!({"sandbox": true}))}));
    let command = without_landlock(&scene, &["run", "--quiet", "go"]);
    let output = output_within(command, Duration::from_secs(60));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(
            "odek: mcp server \"fx\": mcpclient fx: start: sandbox: the server must run confined, but the sandbox cannot be enforced on this machine\n"
        ),
        "{}",
        stderr(&output)
    );
    assert!(!scene.project.join("inside.txt").exists(), "the server ran unconfined");
    assert!(!attempt.outside.exists());
}

/// A confined server whose own files lie outside the workspace cannot read them and dies at
/// start-up; odek says what to check. Granted through `sandbox.readable`, the same server starts.
#[test]
fn a_confined_server_reads_its_files_outside_the_workspace_only_when_granted_red() {
    let server = ScriptedServer::start(Vec::new());
    let scene = Sandbox::new();
    let attempt = Attempt::new(&scene);
    let script = attempt.outside.with_file_name("server.sh");
    std::fs::write(
        &script,
        format!("echo inside > inside.txt; exec '{}' --conformant\n", odek_test_support::fixture_server().display()),
    )
    .unwrap();
    let fixture_dir = odek_test_support::fixture_server().parent().unwrap().to_path_buf();
    let entry = json!({"fx": {"command": "/bin/sh", "args": [script], "sandbox": true, "auto_approve": true}});
    let global = |readable: Vec<PathBuf>| {
        json!({"base_url": server.base_url(), "model": "test-model", "mcp_servers": entry,
               "sandbox": {"readable": readable}})
    };

    scene.global_config(&global(vec![fixture_dir.clone()]));
    let mut command = scene.command(&["run", "go"]);
    command.env("ODEK_APPROVE_MCP", "1");
    let output = output_within(command, Duration::from_secs(60));
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("Permission denied"), "sh could not read its script: {text}");
    assert!(text.contains(&startup_hint("fx")), "{text}");
    assert!(!scene.project.join("inside.txt").exists());

    scene.global_config(&global(vec![fixture_dir, script.parent().unwrap().to_path_buf()]));
    let text = run(&scene, &server, &[]);
    assert!(!text.contains("stopped during start-up"), "{text}");
}

/// The warning a confined server that stops or stalls during start-up gets.
fn startup_hint(server: &str) -> String {
    format!(
        "odek: warning: mcpclient {server}: sandbox: the server ran confined and stopped during start-up; if its \
         program or packages lie outside the workspace, make them readable with sandbox.readable in \
         ~/.odek/config.json, or run it unconfined: its entry in ~/.odek/config.json with \"sandbox\": false\n"
    )
}

/// \[beyond\] Issue 32: a confined server that stalls at start-up (here: never answers
/// `initialize` before its deadline) gets the same hint as one that exits; unconfined, it does not.
#[test]
fn a_confined_server_that_stalls_at_start_up_gets_the_sandbox_hint_red() {
    let server = ScriptedServer::start(Vec::new());
    let scene = Sandbox::new();
    let stalling = |sandbox: bool| {
        json!({"base_url": server.base_url(), "model": "test-model", "mcp_servers": {"fx": {
            "command": "/bin/sleep", "args": ["30"], "sandbox": sandbox, "startup_timeout_seconds": 1, "auto_approve": true,
        }}})
    };
    for sandbox in [true, false] {
        scene.global_config(&stalling(sandbox));
        let output = output_within(scene.command(&["run", "go"]), Duration::from_secs(60));
        let text = stderr(&output);
        // The run fails on the stalled server (how it exits is the outcome rules').
        assert_ne!(output.status.code(), Some(0), "{text}");
        assert!(text.contains("mcp server \"fx\""), "{text}");
        assert_eq!(text.contains(&startup_hint("fx")), sandbox, "sandbox {sandbox}: {text}");
    }
}

/// `odek ext <args>` to its end, project servers approved, with `env` set.
fn ext(command: std::process::Command, env: &[(&str, &str)]) -> std::process::Output {
    let mut command = command;
    command.env("ODEK_APPROVE_MCP", "1");
    command.envs(env.iter().copied());
    output_within(command, Duration::from_secs(60))
}

/// M5: `odek ext call` and `odek ext list` switch the sandbox with `ODEK_SANDBOX` as a run does.
/// Before, they read the config files' `sandbox` alone: `ODEK_SANDBOX=0` left a server that asks
/// for the sandbox confined.
#[test]
fn ext_call_and_list_follow_odek_sandbox_red() {
    let server = ScriptedServer::start(Vec::new());
    let scene = Sandbox::new();
    let attempt = Attempt::new(&scene);
    configure(&scene, &server, json!({"fx": attempt.server(&scene, json!({"sandbox": true}))}));
    for args in [&["ext", "call", "fx__echo", r#"{"text":"hi"}"#][..], &["ext", "list"]] {
        attempt.reset();
        let output = ext(scene.command(args), &[("ODEK_SANDBOX", "0")]);
        assert_eq!(output.status.code(), Some(0), "{args:?}: {}", stderr(&output));
        attempt.assert_unconfined();

        attempt.reset();
        let output = ext(scene.command(args), &[]);
        assert_eq!(output.status.code(), Some(0), "{args:?}: {}", stderr(&output));
        attempt.assert_confined();
    }
}

/// M5: with `ODEK_REQUIRE_SANDBOX=1` on a kernel that cannot confine, `odek ext` refuses as a
/// run does, before any server starts — also a server that does not ask for the sandbox.
/// Before, the variable was ignored: a warning, and the server ran unconfined.
#[test]
fn ext_refuses_to_run_unconfined_when_odek_require_sandbox_red() {
    let server = ScriptedServer::start(Vec::new());
    let scene = Sandbox::new();
    let attempt = Attempt::new(&scene);
    configure(&scene, &server, json!({"fx": attempt.server(&scene, json!({}))}));
    for args in [&["ext", "call", "fx__echo", r#"{"text":"hi"}"#][..], &["ext", "list"]] {
        let output = ext(without_landlock(&scene, args), &[("ODEK_REQUIRE_SANDBOX", "1")]);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {}", stderr(&output));
        assert_eq!(
            stderr(&output),
            "odek: sandbox.required is set but the sandbox cannot be enforced here: sandbox: this kernel does not \
             support Landlock\n"
        );
        assert!(!scene.project.join("inside.txt").exists(), "{args:?}: the server ran");
    }
}
