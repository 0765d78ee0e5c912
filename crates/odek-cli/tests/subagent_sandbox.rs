//! \[beyond\] Untrusted sub-agents confined as a whole (issue 20): a real parent `odek run`
//! delegates to a real `odek subagent` child whose model asks its `shell` to read
//! `~/.odek/config.json` and write outside the workspace. The child's whole process runs in the
//! parent's sandbox (its own sandbox nested inside: no second supervisor, no cgroup of its own),
//! so both are refused, while the child still talks to its model, reads its task and writes its
//! artifacts; with `--no-sandbox` the same commands work, so the `_red` test cannot pass
//! vacuously.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use std::time::Duration;

use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::*;
use serde_json::{Value, json};

/// The global config: the scripted endpoint, every danger class allowed for the parent, and
/// `sandbox` as given.
fn configure(scene: &Sandbox, server: &ScriptedServer, sandbox: Value) {
    scene.global_config(&json!({
        "base_url": server.base_url(),
        "model": "test-model",
        "dangerous": allow_every_class(),
        "sandbox": sandbox,
    }));
}

/// One `odek run` whose model delegates one untrusted task; the child's model runs `command`
/// through its shell. Returns the tool result the child's model read and the parent's output.
fn delegate_shell(
    scene: &Sandbox,
    server: &ScriptedServer,
    command: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> String {
    let shell = json!({"command": command}).to_string();
    server.push(Reply::tool_calls(vec![(
        "d1",
        "delegate_tasks",
        json!({"tasks": [{"goal": "probe the machine"}]}).to_string().as_str(),
    )]));
    server.push(Reply::tool_calls(vec![("c1", "shell", shell.as_str())]));
    server.push(Reply::text("child finished"));
    server.push(Reply::text("parent finished"));
    let before = server.requests().len();
    let mut args = vec!["run", "--quiet"];
    args.extend_from_slice(extra);
    args.push("go");
    let mut odek = scene.command(&args);
    odek.envs(env.iter().copied());
    let output = output_within(odek, Duration::from_secs(120));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "parent finished\n", "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), before + 4, "parent, child, child, parent: {}", stderr(&output));
    let child_result = tool_contents(&requests[before + 2]).pop().unwrap();
    let parent_result = tool_contents(&requests[before + 3]).pop().unwrap();
    assert!(parent_result.contains("status: success"), "{parent_result}");
    child_result
}

/// What the child's shell is asked to do: read odek's config, write outside the workspace, and
/// (to show it ran at all) write inside it.
struct Probe {
    outside: std::path::PathBuf,
    command: String,
}

impl Probe {
    fn new(scene: &Sandbox) -> Probe {
        let outside = scene.project.parent().unwrap().join("outside");
        std::fs::create_dir(&outside).unwrap();
        let command = format!(
            "cat {config}; echo escaped > {target}; echo inside > inside.txt",
            config = scene.home.join(".odek/config.json").display(),
            target = outside.join("f.txt").display()
        );
        Probe { outside, command }
    }

    fn assert_refused(&self, scene: &Sandbox, result: &str) {
        assert!(!self.outside.join("f.txt").exists(), "a confined sub-agent wrote outside the workspace: {result}");
        assert!(!result.contains("test-model"), "a confined sub-agent read ~/.odek/config.json: {result}");
        assert_eq!(result.matches("Permission denied").count(), 2, "{result}");
        assert_eq!(std::fs::read_to_string(scene.project.join("inside.txt")).unwrap(), "inside\n", "{result}");
        std::fs::remove_file(scene.project.join("inside.txt")).unwrap();
    }

    fn assert_allowed(&self, result: &str) {
        assert!(result.contains("test-model"), "{result}");
        assert_eq!(std::fs::read_to_string(self.outside.join("f.txt")).unwrap(), "escaped\n", "{result}");
        std::fs::remove_file(self.outside.join("f.txt")).unwrap();
    }
}

/// The child's own sandbox nested in its parent's: the child's commands are refused, and the
/// child still works (its model, its task file, its temporary directory) — no second seccomp
/// listener (`EBUSY`) and no cgroup it cannot make stop it.
#[test]
fn an_untrusted_sub_agent_in_the_sandbox_cannot_read_odek_state_or_write_outside_the_workspace_red() {
    let server = ScriptedServer::start(Vec::new());
    let scene = Sandbox::new();
    configure(&scene, &server, json!({"network": "loopback"}));
    let probe = Probe::new(&scene);
    let result = delegate_shell(&scene, &server, &probe.command, &[], &[]);
    probe.assert_refused(&scene, &result);

    configure(&scene, &server, json!(false));
    let result = delegate_shell(&scene, &server, &probe.command, &[], &[]);
    probe.assert_allowed(&result);
}

/// The child's whole process is confined, not only the commands its own sandbox confines: with
/// the child's sandbox switched off (`ODEK_SANDBOX=0` reaches it, the parent's `--sandbox`
/// wins for the parent), the parent's confinement alone still refuses both.
#[test]
fn an_untrusted_sub_agent_is_confined_as_a_whole_red() {
    let server = ScriptedServer::start(Vec::new());
    let scene = Sandbox::new();
    configure(&scene, &server, json!({}));
    let probe = Probe::new(&scene);
    let child_sandbox_off = [("ODEK_SANDBOX", "0")];
    let result = delegate_shell(&scene, &server, &probe.command, &["--sandbox"], &child_sandbox_off);
    probe.assert_refused(&scene, &result);

    let result = delegate_shell(&scene, &server, &probe.command, &["--no-sandbox"], &child_sandbox_off);
    probe.assert_allowed(&result);
}

/// Issue 32 (L5): the child's commands' connects are answered by its parent's supervisor (a
/// process tree has one), so the child never sees the refusals; its parent reports each as a
/// `subagent_denied` of tool `sandbox`.
#[test]
fn what_the_parents_supervisor_refused_a_sub_agent_is_reported_red() {
    let server = ScriptedServer::start(Vec::new());
    let scene = Sandbox::new();
    // Only 127.0.0.1:1 (and the child's model endpoint) is listed: other loopback ports are
    // refused before any packet leaves.
    configure(&scene, &server, json!({"allow_hosts": ["127.0.0.1:1"]}));
    let command = "cat < /dev/tcp/127.0.0.1/2; cat < /dev/tcp/127.0.0.1/3; true";
    delegate_shell(&scene, &server, command, &["--events-jsonl", "events.jsonl"], &[]);
    let events = events(&scene.project.join("events.jsonl"));
    let denied: Vec<(&str, &str, &str)> = events
        .iter()
        .filter(|event| event["type"] == "subagent_denied")
        .map(|event| {
            let data = &event["data"];
            (event["tool"].as_str().unwrap(), data["class"].as_str().unwrap(), data["reason"].as_str().unwrap())
        })
        .collect();
    let reason = |port| format!("sandbox: connect 127.0.0.1:{port} refused (not on the allow-list (network: deny))");
    assert_eq!(
        denied,
        [("sandbox", "network_egress", reason(2).as_str()), ("sandbox", "network_egress", reason(3).as_str())]
    );
}
