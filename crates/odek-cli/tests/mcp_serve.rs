//! `odek mcp` end to end: the real binary served over its stdio to a JSON-RPC client — the
//! tool list, the built-in tools confined to the start directory (each escape a `_red` test),
//! the denial of risky operations, bad input, and `run_task` (replayed and scripted runs,
//! progress per iteration, verified artifacts, budgets, cancellation without orphans, bounded
//! concurrency), plus a client that floods it or never reads.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod mcp_serve_support;

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mcp_serve_support::*;
use odek_test_support::openai::{Reply, ScriptedServer};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const SERVED_TOOLS: [&str; 6] = ["read_file", "write_file", "patch", "search_files", "shell", "run_task"];

fn names(tools: &Value) -> Vec<&str> {
    tools.as_array().unwrap().iter().map(|tool| tool["name"].as_str().unwrap()).collect()
}

#[test]
fn tools_list_serves_the_built_ins_and_run_task_with_annotations() {
    let sandbox = Sandbox::new();
    let mut served = sandbox.serve(&[]);
    let listed = served.peer.request("tools/list", None);
    let tools = &listed["result"]["tools"];
    assert_eq!(names(tools), SERVED_TOOLS, "plan is not served");
    assert!(listed["result"].get("nextCursor").is_none());
    let annotation =
        |name: &str| tools.as_array().unwrap().iter().find(|tool| tool["name"] == name).unwrap()["annotations"].clone();
    assert_eq!(annotation("read_file"), json!({"readOnlyHint": true}));
    assert_eq!(annotation("shell")["destructiveHint"], true);
    assert_eq!(annotation("run_task")["destructiveHint"], true);
    let (status, stderr) = served.finish();
    assert!(status.success(), "{stderr}");
}

#[test]
fn file_tools_work_inside_the_start_directory() {
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "alpha\nbeta\n");
    let mut served = sandbox.serve(&[]);
    let read = served.call("read_file", json!({"path": "notes.txt"}));
    assert_eq!(read["isError"], false, "{read}");
    assert_eq!(Served::text(&read), "     1\talpha\n     2\tbeta");
    let written = served.call("write_file", json!({"path": "sub/out.txt", "content": "gamma\n"}));
    assert_eq!(written["isError"], false, "{written}");
    assert_eq!(std::fs::read_to_string(sandbox.project.join("sub/out.txt")).unwrap(), "gamma\n");
    let patched = served.call("patch", json!({"path": "notes.txt", "old_string": "beta", "new_string": "delta"}));
    assert_eq!(patched["isError"], false, "{patched}");
    assert_eq!(std::fs::read_to_string(sandbox.project.join("notes.txt")).unwrap(), "alpha\ndelta\n");
    let found = served.call("search_files", json!({"pattern": "delta"}));
    assert!(Served::text(&found).contains("notes.txt"), "{found}");
    let shell = served.call("shell", json!({"command": "ls"}));
    assert_eq!(shell["isError"], false, "{shell}");
    assert!(Served::text(&shell).contains("notes.txt"), "{shell}");
}

/// Every way out of the root, for a read and for a write: refused, and nothing is read or
/// written outside.
fn assert_refused(served: &mut Served, tool: &str, arguments: Value) {
    let result = served.call(tool, arguments.clone());
    assert_eq!(result["isError"], true, "{tool} {arguments}: {result}");
    assert!(Served::text(&result).starts_with("refused: "), "{tool} {arguments}: {result}");
}

#[test]
fn absolute_path_outside_the_root_red() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.outside.join("secret.txt"), "s3cret-outside").unwrap();
    let mut served = sandbox.serve(&[]);
    let secret = sandbox.outside.join("secret.txt");
    assert_refused(&mut served, "read_file", json!({"path": secret}));
    assert_refused(&mut served, "read_file", json!({"path": "/etc/passwd"}));
    assert_refused(&mut served, "write_file", json!({"path": sandbox.outside.join("planted.txt"), "content": "x"}));
    assert_refused(&mut served, "patch", json!({"path": secret, "old_string": "s3cret", "new_string": "x"}));
    assert_refused(&mut served, "search_files", json!({"pattern": "s3cret", "path": sandbox.outside}));
    assert_refused(&mut served, "read_file", json!({"path": "~/.odek/config.json"}));
    assert!(!sandbox.outside.join("planted.txt").exists());
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "s3cret-outside");
}

#[test]
fn dot_dot_out_of_the_root_red() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.outside.join("secret.txt"), "s3cret-outside").unwrap();
    let mut served = sandbox.serve(&[]);
    assert_refused(&mut served, "read_file", json!({"path": "../outside/secret.txt"}));
    assert_refused(&mut served, "read_file", json!({"path": "sub/../../outside/secret.txt"}));
    assert_refused(&mut served, "write_file", json!({"path": "../outside/planted.txt", "content": "x"}));
    assert_refused(&mut served, "search_files", json!({"pattern": "s3cret", "path": ".."}));
    assert!(!sandbox.outside.join("planted.txt").exists());
}

#[test]
fn symlink_out_of_the_root_red() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.outside.join("secret.txt"), "s3cret-outside").unwrap();
    std::os::unix::fs::symlink(sandbox.outside.join("secret.txt"), sandbox.project.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(&sandbox.outside, sandbox.project.join("door")).unwrap();
    std::os::unix::fs::symlink(sandbox.outside.join("not-yet.txt"), sandbox.project.join("dangling.txt")).unwrap();
    let mut served = sandbox.serve(&[]);
    assert_refused(&mut served, "read_file", json!({"path": "link.txt"}));
    assert_refused(&mut served, "read_file", json!({"path": "door/secret.txt"}));
    assert_refused(&mut served, "write_file", json!({"path": "link.txt", "content": "overwritten"}));
    assert_refused(&mut served, "write_file", json!({"path": "door/planted.txt", "content": "x"}));
    assert_refused(&mut served, "write_file", json!({"path": "dangling.txt", "content": "x"}));
    assert_refused(&mut served, "patch", json!({"path": "link.txt", "old_string": "s3cret", "new_string": "x"}));
    assert_refused(&mut served, "search_files", json!({"pattern": "s3cret", "path": "door"}));
    assert_eq!(std::fs::read_to_string(sandbox.outside.join("secret.txt")).unwrap(), "s3cret-outside");
    assert!(!sandbox.outside.join("planted.txt").exists() && !sandbox.outside.join("not-yet.txt").exists());
}

/// Swaps each pair of paths (absolute) atomically, over and over, until `stop`; leaves them as
/// they began. The number of rounds.
fn keep_swapping(pairs: Vec<(PathBuf, PathBuf)>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
    std::thread::spawn(move || {
        let mut rounds = 0_u64;
        while !stop.load(Ordering::Relaxed) || rounds % 2 == 1 {
            for (a, b) in &pairs {
                // Fails only once the test failed and removed the tree.
                if renameat2(AT_FDCWD, a, AT_FDCWD, b, RenameFlags::RENAME_EXCHANGE).is_err() {
                    return rounds;
                }
            }
            rounds += 1;
        }
        rounds
    })
}

/// H1: a component of a checked path — a directory on the way, or the file itself — swapped
/// for a symlink to outside the root between the check and the use, by a process racing the
/// calls. Before, the tools opened the checked path by name, so the swap was followed: reads
/// returned the outside secret and writes landed outside. Now every open walks from the root's
/// handle without following a symlink: across thousands of calls, nothing outside is read or
/// written (and the race is shown to have run: calls met both the directory and the symlink).
#[test]
fn path_components_swapped_for_symlinks_between_check_and_use_red() {
    const ROUNDS: usize = 300;
    let sandbox = Sandbox::new();
    // What a swapped directory or file would lead a read or write to.
    let secret = sandbox.outside.join("secret.txt");
    std::fs::write(&secret, "s3cret-outside\n").unwrap();
    std::fs::write(sandbox.outside.join("notes.txt"), "s3cret-outside\n").unwrap();
    std::fs::create_dir(sandbox.project.join("sub")).unwrap();
    std::fs::write(sandbox.project.join("sub/notes.txt"), "inside\n").unwrap();
    std::os::unix::fs::symlink(&sandbox.outside, sandbox.project.join("door")).unwrap();
    sandbox.write("notes.txt", "inside\n");
    std::os::unix::fs::symlink(&secret, sandbox.project.join("notes-link")).unwrap();
    let mut served = sandbox.serve(&[]);
    let stop = Arc::new(AtomicBool::new(false));
    let pairs = vec![
        (sandbox.project.join("sub"), sandbox.project.join("door")),
        (sandbox.project.join("notes.txt"), sandbox.project.join("notes-link")),
    ];
    let racer = keep_swapping(pairs, Arc::clone(&stop));
    let (mut leaked, mut read_inside, mut refused, mut unexpected) = (0, 0, 0, Vec::new());
    for round in 0..ROUNDS {
        for path in ["sub/notes.txt", "sub/../sub/notes.txt", "notes.txt"] {
            let result = served.call("read_file", json!({"path": path}));
            let text = Served::text(&result);
            if text.contains("s3cret") {
                leaked += 1;
            } else if result["isError"] == false && ["     1\tinside", "     1\tplanted"].contains(&text.as_str()) {
                read_inside += 1;
            } else if result["isError"] == true && text.starts_with("refused: ") {
                refused += 1;
            } else {
                unexpected.push(format!("read {path}: {text}"));
            }
        }
        for path in [format!("sub/planted-{round}.txt"), format!("sub/new-{round}/planted.txt"), "notes.txt".into()] {
            let result = served.call("write_file", json!({"path": path, "content": "planted\n"}));
            let text = Served::text(&result);
            if result["isError"] == true && !text.starts_with("refused: ") {
                unexpected.push(format!("write {path}: {text}"));
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    assert!(racer.join().unwrap() > 0);
    let outside: Vec<String> = std::fs::read_dir(&sandbox.outside)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(leaked, 0, "reads returned the secret outside the root");
    assert_eq!(outside.len(), 2, "writes landed outside the root: {} files", outside.len() - 2);
    for file in ["secret.txt", "notes.txt"] {
        let text = std::fs::read_to_string(sandbox.outside.join(file)).unwrap();
        assert_eq!(text, "s3cret-outside\n", "{file} outside the root was overwritten");
    }
    assert!(unexpected.is_empty(), "neither done nor refused: {unexpected:?}");
    assert!(read_inside > 0 && refused > 0, "the race did not run: {read_inside} reads inside, {refused} refused");
}

#[test]
fn shell_workdir_outside_the_root_red() {
    let sandbox = Sandbox::new();
    std::os::unix::fs::symlink(&sandbox.outside, sandbox.project.join("door")).unwrap();
    let mut served = sandbox.serve(&[]);
    assert_refused(&mut served, "shell", json!({"command": "ls", "workdir": sandbox.outside}));
    assert_refused(&mut served, "shell", json!({"command": "ls", "workdir": ".."}));
    assert_refused(&mut served, "shell", json!({"command": "ls", "workdir": "door"}));
}

#[test]
fn what_needs_approval_is_denied_with_the_exact_marker() {
    let sandbox = Sandbox::new();
    let mut served = sandbox.serve(&[]);
    let denied = served.call("shell", json!({"command": "curl https://example.com/install.sh"}));
    assert_eq!(denied["isError"], true, "{denied}");
    let text = Served::text(&denied);
    assert!(text.starts_with("operation denied by configuration: "), "{text}");
    assert!(text.ends_with("(risk: network_egress)"), "{text}");
}

/// Item 7: a call of a tool `odek mcp` does not serve is the protocol error MCP names for it,
/// `-32602` (invalid params), not a tool result; before, it was an `isError` result.
#[test]
fn an_unknown_tool_is_answered_with_invalid_params_red() {
    let sandbox = Sandbox::new();
    let mut served = sandbox.serve(&[]);
    for name in ["nope", "plan"] {
        let answer = served.peer.request("tools/call", Some(json!({"name": name, "arguments": {}})));
        assert_eq!(answer["error"]["code"], -32602, "{name}: {answer}");
        assert_eq!(answer["error"]["message"], format!("unknown tool \"{name}\""));
        assert!(answer.get("result").is_none(), "{answer}");
    }
    let (status, stderr) = served.finish();
    assert!(status.success(), "{stderr}");
}

#[test]
fn bad_arguments_get_clear_errors_and_unknown_ones_are_tolerated() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "a\n");
    let mut served = sandbox.serve(&[]);
    for tool in SERVED_TOOLS {
        let result = served.call(tool, json!([1, 2]));
        assert_eq!(result["isError"], true, "{tool}: {result}");
        assert_eq!(Served::text(&result), "invalid arguments: arguments must be a JSON object", "{tool}");
    }
    let tolerated = served.call("read_file", json!({"path": "a.txt", "surprise": {"nested": true}}));
    assert_eq!(tolerated["isError"], false, "{tolerated}");
    let huge_goal = "g".repeat(10 * 1024 * 1024);
    let refused = served.call("run_task", json!({"goal": huge_goal}));
    assert_eq!(refused["isError"], true);
    assert!(
        Served::text(&refused).starts_with("invalid arguments: goal is too large (10485760 bytes, max 65536)"),
        "{}",
        Served::text(&refused)
    );
    let missing = served.call("run_task", json!({"context": "no goal"}));
    assert!(Served::text(&missing).contains("goal is required"), "{missing}");
}

fn replay_script(sandbox: &Sandbox, subagents: Value) -> String {
    let path = sandbox.home.join("mcp.replay.json");
    std::fs::write(&path, json!({"schema": "odek.replay/v1", "turns": [], "subagents": subagents}).to_string())
        .unwrap();
    path.display().to_string()
}

#[test]
fn run_task_replayed_reports_progress_per_iteration_and_a_headline_that_agrees_red() {
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "three apples\n");
    let script = replay_script(
        &sandbox,
        json!([{"goal": "count the apples", "turns": [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
            {"content": "There are three apples."}
        ]}]),
    );
    let events = sandbox.home.join("events.jsonl");
    let mut served = sandbox.serve(&[
        "--provider",
        "replay",
        "--replay",
        &script,
        "--artifact-root",
        path_str(&sandbox.artifacts),
        "--events-jsonl",
        path_str(&events),
    ]);
    let (result, before) = served.call_with_progress("run_task", json!({"goal": "count the apples"}), "p1");
    assert_eq!(result["isError"], false, "{result}");
    let envelope = envelope(&result);
    assert_eq!(envelope["schema"], "odek.tool-result/v1");
    let text = envelope["text"].as_str().unwrap();
    assert!(text.ends_with("\n\nThere are three apples."), "{text}");
    assert_eq!(envelope["artifacts"], json!([]));
    let progress: Vec<&Value> = before.iter().filter(|message| message["method"] == "notifications/progress").collect();
    let messages: Vec<&str> = progress.iter().map(|message| message["params"]["message"].as_str().unwrap()).collect();
    assert!(messages.iter().any(|text| text.starts_with("run started (pid ")), "{messages:?}");
    assert!(messages.iter().any(|text| text.starts_with("iteration 1 of at most ")), "{messages:?}");
    let last = messages.last().unwrap();
    assert!(last.starts_with("iteration 2 of at most "), "{messages:?}");
    // Item 7: the headline's iterations and tokens are the last progress report's (before, the
    // headline counted 1 iteration — the answers with tool calls — and estimated tokens, while
    // progress had reported iteration 2 and the loop's own count).
    let tokens = last.rsplit_once(", ").unwrap().1.strip_suffix(" tokens so far").unwrap();
    let headline = text.lines().next().unwrap();
    assert!(headline.contains(": success · 2 iteration(s) · "), "{headline}");
    assert!(headline.ends_with(&format!("s · {tokens} tokens")), "{headline} / {last}");
    let values: Vec<f64> = progress.iter().map(|message| message["params"]["progress"].as_f64().unwrap()).collect();
    assert!(values.windows(2).all(|pair| pair[0] < pair[1]), "progress only grows: {values:?}");
    // The run's events went to --events-jsonl.
    let events = std::fs::read_to_string(&events).unwrap();
    odek_test_support::events::assert_valid_events(&events);
    assert!(events.lines().any(|line| line.contains("\"type\":\"run_completed\"")), "{events}");
}

#[test]
fn run_task_that_exceeds_its_budget_is_an_error_naming_it() {
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "n\n");
    let read = json!({"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]});
    let script = replay_script(
        &sandbox,
        json!([{"goal": "read forever", "turns": [read, read, read, read, {"content": "partial: read it"}]}]),
    );
    let mut served = sandbox.serve(&["--provider", "replay", "--replay", &script]);
    let result = served.call("run_task", json!({"goal": "read forever", "max_iterations": 2}));
    assert_eq!(result["isError"], true, "{result}");
    let text = envelope(&result)["text"].as_str().unwrap().to_owned();
    assert!(text.contains("stopped: the iteration budget ran out (max_iterations 2)"), "{text}");
    // The operator's tool-call budget applies to every run (each run reads the config as it
    // starts), whatever the call asks.
    sandbox.global_config(&json!({"limits": {"max_tool_calls": 1}}));
    let result = served.call("run_task", json!({"goal": "read forever"}));
    assert_eq!(result["isError"], true, "{result}");
    let text = envelope(&result)["text"].as_str().unwrap().to_owned();
    assert!(text.contains(": budget_exhausted · "), "{text}");
    assert!(text.contains("stopped: an execution budget ran out: execution budget exceeded: tool_calls"), "{text}");
}

#[test]
fn run_task_returns_verified_artifacts_under_the_artifact_root() {
    let child = |request: &odek_test_support::openai::RecordedRequest| {
        let body = &request.body;
        let messages = body["messages"].as_array().unwrap();
        if messages.iter().any(|message| message["role"] == "tool") {
            return Reply::text("Report written to report.md. Status: done.");
        }
        let user = messages[1]["content"].as_str().unwrap();
        let start = user.find(".odek-artifacts/task-").unwrap();
        let staging = &user[start..start + ".odek-artifacts/task-".len() + 16];
        let arguments = json!({"path": format!("{staging}/report.md"), "content": "# Report\nall good\n"});
        Reply::tool_calls(vec![("w1", "write_file", arguments.to_string().as_str())])
    };
    let server = ScriptedServer::start(vec![Reply::responding(child), Reply::responding(child)]);
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({"base_url": server.base_url(), "model": "test-model"}));
    let mut served = sandbox.serve(&["--artifact-root", path_str(&sandbox.artifacts)]);
    let result = served.call("run_task", json!({"goal": "write the report", "trusted": true}));
    assert_eq!(result["isError"], false, "{result}");
    let envelope = envelope(&result);
    let artifacts = envelope["artifacts"].as_array().unwrap();
    assert_eq!(artifacts.len(), 1, "{envelope}");
    let artifact = &artifacts[0];
    assert_eq!(artifact["schema"], "odek.artifact-ref/v1");
    let uri = artifact["uri"].as_str().unwrap();
    let path = std::path::PathBuf::from(uri.strip_prefix("file://").unwrap());
    assert!(path.starts_with(&sandbox.artifacts), "{uri}");
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes, b"# Report\nall good\n");
    assert_eq!(artifact["size_bytes"], bytes.len());
    assert_eq!(artifact["sha256"], hex::encode(Sha256::digest(&bytes)));
}

#[test]
fn run_task_cancelled_mid_run_stops_the_child_without_orphans() {
    let server = ScriptedServer::start(vec![Reply::never_answers()]);
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({"base_url": server.base_url(), "model": "test-model"}));
    let mut served = sandbox.serve(&[]);
    let id = served.send_call_with_progress("run_task", json!({"goal": "wait for the model"}), "c1");
    served.wait_progress("c1", "run started (pid ");
    server.wait_for_requests(1, Duration::from_secs(20));
    assert!(!sandbox.processes_in_project(served.pid()).is_empty(), "the child runs in the project");
    served.peer.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": "user"}}),
    );
    eventually(EXIT_DEADLINE, "the child is stopped", || sandbox.processes_in_project(served.pid()).is_empty());
    // The server goes on: a ping is answered, and no answer ever comes for the cancelled call.
    let pong = served.peer.request("ping", None);
    assert_eq!(pong["result"], json!({}));
    let (status, stderr) = served.finish();
    assert!(status.success(), "{stderr}");
}

/// Whether the open file description behind `fd` is in non-blocking mode.
fn non_blocking(fd: &impl std::os::fd::AsFd) -> bool {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL).unwrap()).contains(OFlag::O_NONBLOCK)
}

#[test]
fn the_stdio_pipes_are_non_blocking_only_while_odek_mcp_serves_them() {
    // The mode belongs to the pipe's open file description, which the client (here: the copies
    // this test keeps of odek's own ends) shares: odek must hand it back as it found it.
    let sandbox = Sandbox::new();
    let (stdin_read, stdin_write) = std::io::pipe().unwrap();
    let (stdout_read, stdout_write) = std::io::pipe().unwrap();
    let (stdin_kept, stdout_kept) = (stdin_read.try_clone().unwrap(), stdout_write.try_clone().unwrap());
    let mut child = sandbox.command(&["mcp"]).stdin(stdin_read).stdout(stdout_write).spawn().unwrap();
    let mut peer =
        odek_test_support::peer::Peer::new(Box::new(stdin_write), odek_test_support::peer::line_channel(stdout_read));
    assert!(!non_blocking(&stdin_kept) && !non_blocking(&stdout_kept), "blocking before odek starts");
    peer.initialize();
    // Waited on by the runtime itself, without a copying thread.
    assert!(non_blocking(&stdin_kept) && non_blocking(&stdout_kept), "non-blocking while served");
    peer.close_input();
    let status = wait_within(&mut child, EXIT_DEADLINE);
    assert!(status.success(), "{status:?}");
    assert!(!non_blocking(&stdin_kept), "stdin blocking again after odek exits");
    assert!(!non_blocking(&stdout_kept), "stdout blocking again after odek exits");
}

#[test]
fn closing_stdin_stops_running_runs() {
    let server = ScriptedServer::start(vec![Reply::never_answers()]);
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({"base_url": server.base_url(), "model": "test-model"}));
    let mut served = sandbox.serve(&[]);
    served.send_call_with_progress("run_task", json!({"goal": "wait for the model"}), "c1");
    served.wait_progress("c1", "run started (pid ");
    server.wait_for_requests(1, Duration::from_secs(20));
    let pid = served.pid();
    let (status, stderr) = served.finish();
    assert!(status.success(), "{stderr}");
    assert!(sandbox.processes_in_project(pid).is_empty(), "no orphan after the server exits");
}

#[test]
fn runs_over_the_concurrency_limit_wait_and_report_it() {
    let server = ScriptedServer::start(vec![Reply::never_answers()]);
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({"base_url": server.base_url(), "model": "test-model"}));
    let mut served = sandbox.serve(&["--max-concurrent-runs", "1"]);
    let first = served.send_call_with_progress("run_task", json!({"goal": "first"}), "r1");
    served.wait_progress("r1", "run started");
    let second = served.send_call_with_progress("run_task", json!({"goal": "second"}), "r2");
    let waiting = served.wait_progress("r2", "waiting for a run slot");
    assert!(waiting["params"]["message"].as_str().unwrap().contains("--max-concurrent-runs 1"), "{waiting}");
    // Cancelling the first frees its slot: the second starts.
    served.peer.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": first}}));
    served.wait_progress("r2", "run started");
    served.peer.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": second}}));
    let pid = served.pid();
    let (status, stderr) = served.finish();
    assert!(status.success(), "{stderr}");
    assert!(sandbox.processes_in_project(pid).is_empty());
}

#[test]
fn a_flood_of_ten_thousand_calls_is_answered_in_full() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "a\n");
    let (mut child, mut stdin, stdout, _stderr) = sandbox.spawn_raw(&[]);
    let writer = std::thread::spawn(move || {
        let mut batch = String::new();
        batch.push_str(&json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"flood","version":"0"}}}).to_string());
        batch.push('\n');
        for id in 1..=10_000 {
            let call = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a.txt"}}});
            batch.push_str(&call.to_string());
            batch.push('\n');
        }
        stdin.write_all(batch.as_bytes()).unwrap();
        stdin
    });
    let lines = odek_test_support::peer::line_channel(stdout);
    let mut answered = std::collections::HashSet::new();
    while answered.len() < 10_001 {
        let line = match lines.recv_timeout(Duration::from_secs(30)).unwrap() {
            odek_test_support::peer::Line::Text(text) => text,
            other => panic!("{other:?}"),
        };
        let message: Value = serde_json::from_str(&line).unwrap();
        assert!(message.get("result").is_some(), "{message}");
        answered.insert(message["id"].as_i64().unwrap());
    }
    drop(writer.join().unwrap());
    assert!(wait_within(&mut child, EXIT_DEADLINE).success());
}

#[test]
fn a_client_that_never_reads_stdout_leaves_memory_bounded_and_a_closed_pipe_ends_odek() {
    let sandbox = Sandbox::new();
    sandbox.write("big.txt", &"x".repeat(200 * 1024));
    let (mut child, mut stdin, stdout, stderr) = sandbox.spawn_raw(&[]);
    // Calls whose answers (~200 KiB each) fill the pipe and the outgoing queue: odek stops
    // reading stdin rather than buffering, so this writer blocks too.
    let writer = std::thread::spawn(move || {
        for id in 1..=2_000 {
            let call = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"big.txt"}}});
            if writeln!(stdin, "{call}").is_err() {
                break;
            }
        }
        stdin
    });
    let pid = child.id();
    let rss = || -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|kb| kb.trim().trim_end_matches(" kB").trim().parse().ok())
            .unwrap_or(0)
    };
    // Give it time to fill everything it will fill, then it must hold still and small.
    let mut previous = 0;
    eventually(Duration::from_secs(20), "memory settles", || {
        let now = rss();
        let settled = now > 0 && now == previous;
        previous = now;
        std::thread::sleep(Duration::from_millis(200));
        settled
    });
    assert!(rss() < 512 * 1024, "RSS {} kB with a client that never reads", rss());
    // The client closes its end of stdout without ever reading: odek exits (stdin still open).
    drop(stdout);
    let status = wait_within(&mut child, EXIT_DEADLINE);
    assert!(status.code().is_some(), "exited, not killed: {status:?}");
    drop(writer.join().unwrap());
    let mut text = String::new();
    let _ = std::io::Cursor::new(stderr.lock().unwrap().clone()).read_to_string(&mut text);
    assert!(!text.contains("panicked"), "{text}");
}

#[test]
fn run_task_holds_the_answer_to_its_output_schema() {
    let sandbox = Sandbox::new();
    let script = replay_script(
        &sandbox,
        json!([
            {"goal": "count as json", "turns": [{"content": "{\"apples\": 3}"}]},
            {"goal": "count as prose", "turns": [{"content": "three"}, {"content": "still three"}, {"content": "three!"}]}
        ]),
    );
    let mut served = sandbox.serve(&["--provider", "replay", "--replay", &script]);
    let schema = json!({"type": "object", "required": ["apples"], "properties": {"apples": {"type": "integer"}}});
    let result = served.call("run_task", json!({"goal": "count as json", "output_schema": schema}));
    assert_eq!(result["isError"], false, "{result}");
    assert!(envelope(&result)["text"].as_str().unwrap().ends_with("\n\n{\"apples\":3}"), "{result}");
    let result = served.call("run_task", json!({"goal": "count as prose", "output_schema": schema}));
    assert_eq!(result["isError"], true, "{result}");
    let text = envelope(&result)["text"].as_str().unwrap().to_owned();
    assert!(text.contains("\nstopped: "), "{text}");
}
