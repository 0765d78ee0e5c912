//! `odek acp` end to end: the real binary driven over stdio as an editor drives it, with the
//! replay provider: streamed updates (plan, tool calls with diffs, the answer), permission
//! requests answered allow and reject, cancel mid-tool, `session/load` of a session `odek run
//! --session` made, two sessions in two directories, and the bad input of the issue.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};

/// How long any one message may take to arrive.
const DEADLINE: Duration = Duration::from_secs(60);

struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
    /// Every notification seen so far, in order.
    seen: Vec<Value>,
    /// The editor's buffers, by path: `fs/read_text_file` reads them, `fs/write_text_file`
    /// writes them (never the disk); each request is recorded in `fs_requests`.
    buffers: BTreeMap<String, String>,
    fs_requests: Vec<Value>,
}

impl Client {
    fn start(home: &Path, cwd: &Path, script: &Path, extra: &[&str]) -> Client {
        Client::start_with(home, cwd, script, extra, json!({}))
    }

    /// [`Client::start`] with the client capabilities `capabilities`.
    fn start_with(home: &Path, cwd: &Path, script: &Path, extra: &[&str], capabilities: Value) -> Client {
        let mut child = Command::new(odek_test_support::odek_binary())
            .args(["acp", "--provider", "replay", "--replay"])
            .arg(script)
            .args(extra)
            .current_dir(cwd)
            .env_clear()
            .env("HOME", home)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut client = Client {
            child,
            stdin,
            lines,
            next_id: 1,
            seen: Vec::new(),
            buffers: BTreeMap::new(),
            fs_requests: Vec::new(),
        };
        let init = client.request("initialize", json!({"protocolVersion": 1, "clientCapabilities": capabilities}));
        assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
        client
    }

    fn write_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.write_line(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string());
        id
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.write_line(&json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string());
    }

    fn next(&self) -> Value {
        let line = self.lines.recv_timeout(DEADLINE).expect("a message from odek acp");
        serde_json::from_str(&line).unwrap()
    }

    /// Messages until the response to `id`; permission requests are answered by `answer`.
    fn response(&mut self, id: u64, answer: &mut dyn FnMut(&Value) -> &'static str) -> Value {
        loop {
            let message = self.next();
            if message["method"] == "fs/read_text_file" || message["method"] == "fs/write_text_file" {
                let path = message["params"]["path"].as_str().unwrap_or_default().to_owned();
                let result = if message["method"] == "fs/read_text_file" {
                    match self.buffers.get(&path) {
                        Some(text) => json!({"result": {"content": text}}),
                        None => json!({"error": {"code": -32002, "message": "no such buffer"}}),
                    }
                } else {
                    let text = message["params"]["content"].as_str().unwrap_or_default().to_owned();
                    self.buffers.insert(path, text);
                    json!({"result": {}})
                };
                let mut reply = json!({"jsonrpc": "2.0", "id": message["id"]});
                reply.as_object_mut().unwrap().extend(result.as_object().unwrap().clone());
                self.write_line(&reply.to_string());
                self.fs_requests.push(message);
            } else if message["method"] == "session/request_permission" {
                let option = answer(&message);
                let reply = json!({"jsonrpc": "2.0", "id": message["id"],
                    "result": {"outcome": {"outcome": "selected", "optionId": option}}});
                self.write_line(&reply.to_string());
                self.seen.push(message);
            } else if message.get("method").is_some() {
                self.seen.push(message);
            } else if message["id"] == id {
                return message;
            }
        }
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params);
        self.response(id, &mut |request| panic!("unexpected permission request {request}"))
    }

    fn new_session(&mut self, cwd: &Path) -> String {
        let created = self.request("session/new", json!({"cwd": cwd, "mcpServers": []}));
        created["result"]["sessionId"].as_str().unwrap_or_else(|| panic!("{created}")).to_owned()
    }

    fn prompt(&mut self, session: &str, text: &str) -> Value {
        self.request("session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}))
    }

    fn updates(&self, session: &str, kind: &str) -> Vec<Value> {
        self.seen
            .iter()
            .filter(|message| {
                message["params"]["sessionId"] == session && message["params"]["update"]["sessionUpdate"] == kind
            })
            .map(|message| message["params"]["update"].clone())
            .collect()
    }

    /// Closes stdin and waits for the process to end by itself.
    fn finish(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        for _ in 0..600 {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            // Polling for the exit the close causes, not synchronising on time.
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        panic!("odek acp did not exit after stdin closed");
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Place {
    _dir: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
}

fn place() -> Place {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let project = dir.path().join("project");
    std::fs::create_dir_all(home.join(".odek")).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let (home, project) = (home.canonicalize().unwrap(), project.canonicalize().unwrap());
    Place { _dir: dir, home, project }
}

fn script(dir: &Path, turns: Value) -> PathBuf {
    let path = dir.join("script.json");
    std::fs::write(&path, json!({"schema": "odek.replay/v1", "model": "acp test", "turns": turns}).to_string())
        .unwrap();
    path
}

fn patch(id: &str, path: &str, old: &str, new: &str) -> Value {
    json!({"tool_calls": [{"id": id, "name": "patch", "arguments": {"path": path, "old_string": old, "new_string": new}}]})
}

#[test]
fn a_prompt_streams_the_plan_an_edit_with_its_diff_and_the_answer() {
    let place = place();
    std::fs::write(place.project.join("notes.txt"), "old line\n").unwrap();
    let script = script(
        &place.home,
        json!([
            {"tool_calls": [{"id": "p1", "name": "plan", "arguments": {"verb": "create", "steps": ["Edit the notes", "Check"]}}]},
            patch("e1", "notes.txt", "old line", "new line"),
            {"content": "Done: the notes say new line."}
        ]),
    );
    let mut client = Client::start(&place.home, &place.project, &script, &["--planning"]);
    let session = client.new_session(&place.project);
    let end = client.prompt(&session, "update the notes");
    assert_eq!(end["result"]["stopReason"], "end_turn", "{end}");
    assert_eq!(end["result"]["_meta"]["odek"]["outcome"], "success");

    let plans = client.updates(&session, "plan");
    assert_eq!(plans[0]["entries"][0]["content"], "Edit the notes", "{plans:?}");
    assert_eq!(plans[0]["entries"][1]["status"], "pending");
    let calls = client.updates(&session, "tool_call");
    let edit = calls.iter().find(|call| call["toolCallId"] == "e1").unwrap();
    assert_eq!(edit["kind"], "edit");
    assert_eq!(edit["title"], "Edit notes.txt");
    assert_eq!(edit["locations"][0]["path"], place.project.join("notes.txt").display().to_string());
    let ends = client.updates(&session, "tool_call_update");
    let edited = ends.iter().find(|end| end["toolCallId"] == "e1").unwrap();
    assert_eq!(edited["status"], "completed");
    assert_eq!(edited["content"][0]["type"], "diff");
    assert_eq!(edited["content"][0]["oldText"], "old line\n");
    assert_eq!(edited["content"][0]["newText"], "new line\n");
    let text: String = client
        .updates(&session, "agent_message_chunk")
        .iter()
        .map(|chunk| chunk["content"]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(text, "Done: the notes say new line.");
    assert_eq!(std::fs::read_to_string(place.project.join("notes.txt")).unwrap(), "new line\n");
    assert!(!client.updates(&session, "available_commands_update").is_empty());
    assert!(client.finish().success());
}

#[test]
fn permission_requests_answered_allow_and_reject_in_ask_mode() {
    let place = place();
    std::fs::write(place.project.join("a.txt"), "one\n").unwrap();
    let script = script(
        &place.home,
        json!([
            patch("e1", "a.txt", "one", "two"),
            {"content": "changed"},
            patch("e2", "a.txt", "two", "three"),
            {"content": "refused"}
        ]),
    );
    let mut client = Client::start(&place.home, &place.project, &script, &[]);
    let session = client.new_session(&place.project);
    let mode = client.request("session/set_mode", json!({"sessionId": session, "modeId": "ask"}));
    assert!(mode.get("result").is_some(), "{mode}");

    let id = client.send("session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": "edit"}]}));
    let mut asked = Vec::new();
    let end = client.response(id, &mut |request| {
        asked.push(request.clone());
        "allow-once"
    });
    assert_eq!(end["result"]["stopReason"], "end_turn", "{end}");
    assert_eq!(asked.len(), 1);
    let request = &asked[0]["params"];
    assert_eq!(request["toolCall"]["toolCallId"], "e1");
    let kinds: Vec<&str> = request["options"].as_array().unwrap().iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["allow_once", "allow_always", "reject_once", "reject_always"]);
    assert_eq!(std::fs::read_to_string(place.project.join("a.txt")).unwrap(), "two\n");

    let id =
        client.send("session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": "again"}]}));
    let end = client.response(id, &mut |_| "reject-once");
    assert_eq!(end["result"]["stopReason"], "end_turn", "{end}");
    assert_eq!(std::fs::read_to_string(place.project.join("a.txt")).unwrap(), "two\n", "a rejected edit ran");
    let refused = client.updates(&session, "tool_call_update");
    assert!(refused.iter().any(|end| end["toolCallId"] == "e2" && end["status"] == "failed"), "{refused:?}");
}

#[test]
fn cancel_mid_tool_ends_the_turn_cancelled_and_the_session_goes_on() {
    let place = place();
    let script = script(
        &place.home,
        json!([
            {"tool_calls": [{"id": "s1", "name": "shell", "arguments": {"command": "sleep 300"}}]},
            {"content": "after the cancel"}
        ]),
    );
    let mut client = Client::start(&place.home, &place.project, &script, &[]);
    let session = client.new_session(&place.project);
    let id = client.send("session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": "wait"}]}));
    // The cancel is sent once the tool call is under way.
    loop {
        let message = client.next();
        if message["params"]["update"]["sessionUpdate"] == "tool_call" {
            assert_eq!(message["params"]["update"]["kind"], "execute");
            break;
        }
    }
    let busy =
        client.request("session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": "x"}]}));
    assert_eq!(busy["error"]["code"], -32600, "{busy}");
    assert!(busy["error"]["message"].as_str().unwrap().contains("already running a turn"));
    client.notify("session/cancel", json!({"sessionId": session}));
    let end = client.response(id, &mut |request| panic!("unexpected {request}"));
    assert_eq!(end["result"]["stopReason"], "cancelled", "{end}");
    assert_eq!(end["result"]["_meta"]["odek"]["outcome"], "cancelled");
    let next = client.prompt(&session, "go on");
    assert_eq!(next["result"]["stopReason"], "end_turn", "{next}");
}

#[test]
fn a_session_odek_run_saved_loads_with_its_history_and_continues() {
    let place = place();
    let run_script = script(&place.home, json!([{"content": "first answer"}]));
    let status = Command::new(odek_test_support::odek_binary())
        .args(["run", "--session", "--provider", "replay", "--replay"])
        .arg(&run_script)
        .arg("first task")
        .current_dir(&place.project)
        .env_clear()
        .env("HOME", &place.home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let sessions = place.home.join(".odek/sessions");
    let id = std::fs::read_dir(&sessions)
        .unwrap()
        .filter_map(|entry| entry.unwrap().file_name().into_string().ok())
        .find_map(|name| name.strip_suffix(".json").filter(|stem| stem.starts_with("20")).map(str::to_owned))
        .unwrap();

    let acp_script = place.home.join("acp.json");
    // A replay script answers by the conversation's length: the run's turn is its first.
    let turns = json!([{"content": "first answer"}, {"content": "second answer"}]);
    std::fs::write(&acp_script, json!({"schema": "odek.replay/v1", "turns": turns}).to_string()).unwrap();
    let mut client = Client::start(&place.home, &place.project, &acp_script, &[]);
    let loaded = client.request("session/load", json!({"sessionId": id, "cwd": place.project, "mcpServers": []}));
    assert!(loaded.get("result").is_some(), "{loaded}");
    let user = client.updates(&id, "user_message_chunk");
    assert!(user[0]["content"]["text"].as_str().unwrap().contains("first task"), "{user:?}");
    let answer = client.updates(&id, "agent_message_chunk");
    assert_eq!(answer[0]["content"]["text"], "first answer");
    let again = client.request("session/load", json!({"sessionId": id, "cwd": place.project, "mcpServers": []}));
    assert_eq!(again["error"]["code"], -32602, "{again}");

    let end = client.prompt(&id, "second task");
    assert_eq!(end["result"]["stopReason"], "end_turn", "{end}");
    assert!(client.finish().success());
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(sessions.join(format!("{id}.json"))).unwrap()).unwrap();
    let texts: Vec<&str> = saved["messages"].as_array().unwrap().iter().filter_map(|m| m["content"].as_str()).collect();
    assert!(texts.contains(&"second answer"), "{texts:?}");
    assert!(texts.iter().any(|text| text.contains("second task")));
}

#[test]
fn two_sessions_in_two_directories_keep_their_files_and_updates_apart() {
    let place = place();
    let other = place.project.parent().unwrap().join("other");
    std::fs::create_dir(&other).unwrap();
    let script = script(
        &place.home,
        json!([
            {"tool_calls": [{"id": "w1", "name": "write_file", "arguments": {"path": "mine.txt", "content": "hello"}}]},
            {"content": "written"}
        ]),
    );
    let mut client = Client::start(&place.home, &place.project, &script, &[]);
    let first = client.new_session(&place.project);
    let second = client.new_session(&other);
    assert_ne!(first, second);
    for session in [&first, &second] {
        let end = client.prompt(session, "write");
        assert_eq!(end["result"]["stopReason"], "end_turn", "{end}");
    }
    assert_eq!(std::fs::read_to_string(place.project.join("mine.txt")).unwrap(), "hello");
    assert_eq!(std::fs::read_to_string(other.join("mine.txt")).unwrap(), "hello");
    let first_paths: Vec<Value> =
        client.updates(&first, "tool_call").iter().map(|call| call["locations"][0]["path"].clone()).collect();
    let second_paths: Vec<Value> =
        client.updates(&second, "tool_call").iter().map(|call| call["locations"][0]["path"].clone()).collect();
    assert_eq!(first_paths, [json!(place.project.join("mine.txt"))]);
    assert_eq!(second_paths, [json!(other.join("mine.txt"))]);
    // A new file's diff has no old text.
    let created = client.updates(&second, "tool_call_update");
    let diff = &created.iter().find(|end| end["toolCallId"] == "w1").unwrap()["content"][0];
    assert_eq!((diff["type"].as_str(), diff["newText"].as_str()), (Some("diff"), Some("hello")), "{diff}");
    assert!(diff.get("oldText").is_none_or(Value::is_null), "{diff}");
}

#[test]
fn bad_input_gets_json_rpc_errors_and_the_connection_lives_on_red() {
    let place = place();
    let script = script(&place.home, json!([{"content": "fine"}]));
    let mut client = Client::start(&place.home, &place.project, &script, &[]);

    client.write_line("{not json");
    let parse = client.next();
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    let unknown = client.request("bogus/method", json!({}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let no_session =
        client.request("session/prompt", json!({"sessionId": "nope", "prompt": [{"type": "text", "text": "x"}]}));
    assert_eq!(no_session["error"]["code"], -32602, "{no_session}");
    let bad_load = client
        .request("session/load", json!({"sessionId": "../../etc/passwd", "cwd": place.project, "mcpServers": []}));
    assert!(bad_load.get("error").is_some(), "{bad_load}");
    let relative = client.request("session/new", json!({"cwd": "relative/dir", "mcpServers": []}));
    assert_eq!(relative["error"]["code"], -32602, "{relative}");
    client.notify("session/cancel", json!({"sessionId": "nope"}));

    let corrupt = "20260101-00000000000000000000000000000000";
    std::fs::create_dir_all(place.home.join(".odek/sessions")).unwrap();
    std::fs::write(place.home.join(format!(".odek/sessions/{corrupt}.json")), "{ not a session").unwrap();
    let load = client.request("session/load", json!({"sessionId": corrupt, "cwd": place.project, "mcpServers": []}));
    assert_eq!(load["error"]["code"], -32603, "{load}");

    let session = client.new_session(&place.project);
    let huge = "x".repeat(odek_acp::MAX_MESSAGE_BYTES + 10);
    let id = client.next_id;
    client.next_id += 1;
    client.write_line(
        &json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": huge}]}})
        .to_string(),
    );
    let refused = client.response(id, &mut |request| panic!("unexpected {request}"));
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert!(refused["error"]["data"].as_str().unwrap().contains("larger than"), "{refused}");
    let large = "y".repeat(odek::host::MAX_PROMPT_BYTES + 1);
    let too_long = client.prompt(&session, &large);
    assert!(too_long["error"]["message"].as_str().unwrap().contains("the limit is"), "{too_long}");
    let image = client.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]}),
    );
    assert_eq!(image["error"]["code"], -32602, "{image}");

    let end = client.prompt(&session, "still there?");
    assert_eq!(end["result"]["stopReason"], "end_turn", "{end}");
}

#[test]
fn closing_stdin_mid_turn_cancels_it_saves_the_session_and_leaves_no_child_red() {
    let place = place();
    let marker = place.project.join("started");
    let command = format!("touch {} && sleep 300", marker.display());
    let script = script(
        &place.home,
        json!([{"tool_calls": [{"id": "s1", "name": "shell", "arguments": {"command": command}}]}]),
    );
    let mut client = Client::start(&place.home, &place.project, &script, &[]);
    let session = client.new_session(&place.project);
    client.send("session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": "wait"}]}));
    loop {
        let message = client.next();
        if message["params"]["update"]["sessionUpdate"] == "tool_call" {
            break;
        }
    }
    while !marker.exists() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = client.child.id();
    let status = client.finish();
    assert!(status.success(), "{status:?}");
    assert!(odek_test_support::processes_mentioning(&marker).is_empty(), "a child of odek acp {pid} outlived it");
    let saved = std::fs::read_to_string(place.home.join(format!(".odek/sessions/{session}.json"))).unwrap();
    assert!(saved.contains("wait"), "{saved}");
}

/// A client's stdio MCP server `fixture`: the contract fixture server.
fn client_fixture() -> Value {
    let fixture = odek_test_support::fixture_server();
    json!([{"name": "fixture", "command": fixture, "args": [], "env": [{"name": "FIXTURE_NOTE", "value": "from the editor"}]}])
}

#[test]
fn a_client_mcp_server_is_approved_in_the_editor_then_its_tools_are_called() {
    let place = place();
    let script = script(
        &place.home,
        json!([
            {"tool_calls": [{"id": "m1", "name": "fixture__echo", "arguments": {"text": "hello from the editor's server"}}]},
            {"content": "echoed"}
        ]),
    );
    let mut client = Client::start(&place.home, &place.project, &script, &[]);
    let created = client.request("session/new", json!({"cwd": place.project, "mcpServers": client_fixture()}));
    let session = created["result"]["sessionId"].as_str().unwrap_or_else(|| panic!("{created}")).to_owned();
    let id = client.send("session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": "echo"}]}));
    let mut asked = Vec::new();
    let end = client.response(id, &mut |request| {
        let kinds: Vec<Value> =
            request["params"]["options"].as_array().unwrap().iter().map(|o| o["kind"].clone()).collect();
        assert!(!kinds.contains(&json!("allow_always")), "an MCP approval is remembered anyway: {kinds:?}");
        asked.push(request["params"]["toolCall"]["title"].as_str().unwrap_or_default().to_owned());
        "allow-once"
    });
    assert_eq!(end["result"]["stopReason"], "end_turn", "{end}");
    // One request for the server, one for all of its tools.
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked[0].contains("MCP server \"fixture\""), "{asked:?}");
    assert!(asked[1].contains("wants to register"), "{asked:?}");
    let ends = client.updates(&session, "tool_call_update");
    let echoed = ends.iter().find(|end| end["toolCallId"] == "m1").unwrap();
    assert_eq!(echoed["status"], "completed", "{ends:?}");
    assert!(echoed["content"][0]["content"]["text"].as_str().unwrap().contains("hello from the editor's server"));
}

#[test]
fn a_client_mcp_server_the_person_rejects_is_never_started_red() {
    let place = place();
    let script = script(
        &place.home,
        json!([
            {"tool_calls": [{"id": "m1", "name": "fixture__echo", "arguments": {"text": "x"}}]},
            {"content": "no server"}
        ]),
    );
    let mut client = Client::start(&place.home, &place.project, &script, &[]);
    let created = client.request("session/new", json!({"cwd": place.project, "mcpServers": client_fixture()}));
    let session = created["result"]["sessionId"].as_str().unwrap().to_owned();
    let id = client.send("session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": "echo"}]}));
    let mut asked = Vec::new();
    client.response(id, &mut |request| {
        asked.push(request["params"]["toolCall"]["title"].as_str().unwrap_or_default().to_owned());
        "reject-once"
    });
    // A started server would have listed its tools and asked about them next.
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("MCP server \"fixture\""), "{asked:?}");
}

#[test]
fn a_client_mcp_server_named_like_a_project_one_is_refused_red() {
    let place = place();
    std::fs::write(
        place.project.join("odek.json"),
        json!({"mcp_servers": {"fixture": {"command": "true"}}}).to_string(),
    )
    .unwrap();
    let script = script(&place.home, json!([{"content": "x"}]));
    let mut client = Client::start(&place.home, &place.project, &script, &[]);
    let created = client.request("session/new", json!({"cwd": place.project, "mcpServers": client_fixture()}));
    let message = created["error"]["message"].as_str().unwrap_or_else(|| panic!("{created}"));
    assert!(message.contains("mcp server \"fixture\" is also defined in ./odek.json or ./.mcp.json"), "{message}");
}

#[test]
fn the_file_tools_read_and_write_through_the_editor_inside_the_workspace() {
    let place = place();
    let notes = place.project.join("notes.txt");
    std::fs::write(&notes, "on disk\n").unwrap();
    let outside = place.project.parent().unwrap().join("outside.txt");
    std::fs::write(&outside, "outside the workspace\n").unwrap();
    // A symlink in the workspace to a file outside it: never routed to the editor by its name.
    std::os::unix::fs::symlink(&outside, place.project.join("link.txt")).unwrap();
    let script = script(
        &place.home,
        json!([
            {"tool_calls": [{"id": "r1", "name": "read_file", "arguments": {"path": "notes.txt"}}]},
            patch("e1", "notes.txt", "unsaved", "edited"),
            {"tool_calls": [{"id": "r2", "name": "read_file", "arguments": {"path": outside}}]},
            {"tool_calls": [{"id": "r3", "name": "read_file", "arguments": {"path": "link.txt"}}]},
            {"content": "done"}
        ]),
    );
    let capabilities = json!({"fs": {"readTextFile": true, "writeTextFile": true}});
    let mut client = Client::start_with(&place.home, &place.project, &script, &[], capabilities);
    client.buffers.insert(notes.display().to_string(), "unsaved buffer\n".to_owned());
    let session = client.new_session(&place.project);
    let end = client.prompt(&session, "edit the notes");
    assert_eq!(end["result"]["stopReason"], "end_turn", "{end}");

    let ends = client.updates(&session, "tool_call_update");
    let text = |id: &str| -> String {
        let end = ends.iter().find(|end| end["toolCallId"] == id).unwrap();
        end["content"].as_array().unwrap().iter().filter_map(|item| item["content"]["text"].as_str()).collect()
    };
    assert!(text("r1").contains("unsaved buffer"), "read_file read the disk, not the buffer: {}", text("r1"));
    assert_eq!(client.buffers[&notes.display().to_string()], "edited buffer\n");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "on disk\n", "the edit went to the disk, not the editor");
    let diff = &ends.iter().find(|end| end["toolCallId"] == "e1").unwrap()["content"][0];
    assert_eq!(
        (diff["oldText"].as_str(), diff["newText"].as_str()),
        (Some("unsaved buffer\n"), Some("edited buffer\n"))
    );
    // A path outside the workspace never goes to the editor: the disk, under the usual rules.
    assert!(text("r2").contains("outside the workspace"), "{}", text("r2"));
    let asked: Vec<&str> =
        client.fs_requests.iter().map(|request| request["params"]["path"].as_str().unwrap()).collect();
    assert!(asked.iter().all(|path| Path::new(path).starts_with(&place.project)), "{asked:?}");
    assert_eq!(asked.len(), 3, "read, read before the patch, write: {asked:?}");
    assert!(text("r3").contains("outside the workspace"), "{}", text("r3"));
}

#[test]
fn ask_mode_keeps_what_the_policy_denies_denied_and_read_only_offers_no_writing_tool_red() {
    let place = place();
    // `rm -rf /` is destructive: denied by default, so "Ask first" must not turn it into a question.
    let script = script(
        &place.home,
        json!([
            {"tool_calls": [{"id": "d1", "name": "shell", "arguments": {"command": "rm -rf /"}}]},
            {"content": "refused"},
            {"tool_calls": [{"id": "w1", "name": "write_file", "arguments": {"path": "x.txt", "content": "x"}}]},
            {"content": "never"}
        ]),
    );
    let mut client = Client::start(&place.home, &place.project, &script, &[]);
    let session = client.new_session(&place.project);
    client.request("session/set_mode", json!({"sessionId": session, "modeId": "ask"}));
    let end = client.prompt(&session, "clean up");
    assert_eq!(end["result"]["stopReason"], "end_turn", "{end}");
    let denied = client.updates(&session, "tool_call_update");
    assert!(denied.iter().any(|end| end["toolCallId"] == "d1" && end["status"] == "failed"), "{denied:?}");

    client.request("session/set_mode", json!({"sessionId": session, "modeId": "read-only"}));
    let end = client.prompt(&session, "write");
    let error = end["error"]["message"].as_str().unwrap_or_else(|| panic!("{end}"));
    assert!(error.contains("unknown tool \"write_file\""), "read-only still offered write_file: {error}");
    assert!(!place.project.join("x.txt").exists());
}

#[test]
fn allow_always_for_a_file_never_approves_running_it_red() {
    let place = place();
    let target = place.project.join("run.sh");
    let script = script(
        &place.home,
        json!([
            {"tool_calls": [{"id": "w1", "name": "write_file", "arguments": {"path": "run.sh", "content": "echo hi"}}]},
            {"tool_calls": [{"id": "s1", "name": "shell", "arguments": {"command": target}}]},
            {"content": "done"}
        ]),
    );
    let mut client = Client::start(&place.home, &place.project, &script, &[]);
    let session = client.new_session(&place.project);
    client.request("session/set_mode", json!({"sessionId": session, "modeId": "ask"}));
    let id = client.send("session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}));
    let mut asked = Vec::new();
    let end = client.response(id, &mut |request| {
        asked.push(request["params"]["toolCall"]["toolCallId"].as_str().unwrap_or_default().to_owned());
        if asked.len() == 1 { "allow-always" } else { "reject-once" }
    });
    assert_eq!(end["result"]["stopReason"], "end_turn", "{end}");
    assert_eq!(asked, ["w1", "s1"], "running the written file was not asked about");
}

#[test]
fn a_cancel_right_behind_the_prompt_cancels_the_turn() {
    let place = place();
    let script = script(
        &place.home,
        json!([{"tool_calls": [{"id": "s1", "name": "shell", "arguments": {"command": "sleep 300"}}]}, {"content": "x"}]),
    );
    let mut client = Client::start(&place.home, &place.project, &script, &[]);
    let session = client.new_session(&place.project);
    let id = client.send("session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": "wait"}]}));
    client.notify("session/cancel", json!({"sessionId": session}));
    let end = client.response(id, &mut |request| panic!("unexpected {request}"));
    assert_eq!(end["result"]["stopReason"], "cancelled", "{end}");
}

#[test]
fn a_closed_session_is_gone_from_the_process_and_loads_again() {
    let place = place();
    let script = script(&place.home, json!([{"content": "first"}, {"content": "second"}]));
    let mut client = Client::start(&place.home, &place.project, &script, &[]);
    let session = client.new_session(&place.project);
    assert_eq!(client.prompt(&session, "one")["result"]["stopReason"], "end_turn");
    let closed = client.request("session/close", json!({"sessionId": session}));
    assert!(closed.get("result").is_some(), "{closed}");
    let gone = client.prompt(&session, "two");
    assert_eq!(gone["error"]["code"], -32602, "{gone}");
    let loaded = client.request("session/load", json!({"sessionId": session, "cwd": place.project, "mcpServers": []}));
    assert!(loaded.get("result").is_some(), "{loaded}");
    assert_eq!(client.prompt(&session, "two")["result"]["stopReason"], "end_turn");
}
