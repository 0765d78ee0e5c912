//! The binary-level fault matrix (issue 7): the real `odek run` against a misbehaving provider
//! (HTTP 500s without end, a slow stream cut into tiny pieces, SSE truncated inside a tool call,
//! malformed JSON), an MCP server that hangs mid-run, and a full disk under the event sink and
//! under the sessions directory. Each case asserts the outcome the spec (or, where the spec is
//! silent, the documented behaviour) gives, an explicit deadline, and that no fixture process
//! outlives the run.
//!
//! Disk full: a 64 KiB tmpfs filled to the last byte when `mount -t tmpfs` works (root); else
//! (or with `ODEK_TEST_NO_TMPFS=1`) a file-size limit of 0 (`ulimit -f 0`, SIGXFSZ ignored) on
//! the odek process, so its writes fail with EFBIG instead of ENOSPC.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::*;
use serde_json::{Value, json};

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|event| event["type"].as_str().unwrap()).collect()
}

/// Runs a command built beforehand (building it may wait for cargo to build the binary, which
/// is not the run's time) and measures the run alone.
fn timed(mut command: Command) -> (Output, Duration) {
    let started = Instant::now();
    let output = command.output().unwrap();
    (output, started.elapsed())
}

/// The run's last event is `run_failed` with this class.
fn assert_failed_with(sink: &Path, class: &str) {
    let events = events(sink);
    let last = events.last().unwrap();
    assert_eq!((last["type"].as_str(), last["data"]["error_class"].as_str()), (Some("run_failed"), Some(class)));
}

#[test]
fn fault_provider_answers_500_every_time() {
    let server = ScriptedServer::start(
        (0..4).map(|_| Reply::status(500, r#"{"error":{"message":"upstream exploded"}}"#)).collect(),
    );
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let sink = sandbox.project.join("events.jsonl");
    let (output, took) = timed(sandbox.command(&["run", "--events-jsonl", path_str(&sink), "go"]));
    assert!(took < Duration::from_secs(60), "four 500s with backoff took {took:?}");
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "");
    let err = stderr(&output);
    let endpoint = format!("{}/chat/completions", server.base_url());
    for retry in 1..=3 {
        let warning = format!("{endpoint}: HTTP 500: server error: upstream exploded; retry {retry} of 3 in ");
        assert!(err.contains(&warning), "{err}");
    }
    assert!(
        err.ends_with(&format!("\nodek: iteration 1: {endpoint}: HTTP 500: server error: upstream exploded\n")),
        "{err}"
    );
    assert_eq!(server.requests().len(), 4, "the first attempt and three retries");
    assert_failed_with(&sink, "provider_unavailable");
}

/// A provider that streams one whole turn per connection, each reply written in `fragment`-byte
/// pieces `pause` apart: slow, and cut at arbitrary bytes (inside `data:` lines, JSON strings
/// and UTF-8 sequences). The pause paces the fault; nothing waits on it.
struct SlowStreamServer {
    address: std::net::SocketAddr,
    requests: std::sync::Arc<std::sync::Mutex<Vec<Value>>>,
}

impl SlowStreamServer {
    fn start(turns: Vec<Vec<Value>>, fragment: usize, pause: Duration) -> SlowStreamServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let requests = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let recorded = std::sync::Arc::clone(&requests);
        std::thread::spawn(move || {
            for (turn, stream) in turns.into_iter().zip(listener.incoming()) {
                let Ok(stream) = stream else { return };
                let Some(body) = read_request(&stream) else { return };
                recorded.lock().unwrap().push(body);
                let mut sse = String::new();
                for chunk in turn {
                    sse.push_str(&format!("data: {chunk}\n\n"));
                }
                sse.push_str("data: [DONE]\n\n");
                let mut stream = stream;
                let _ = stream.set_nodelay(true);
                let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
                let _ = stream.write_all(head.as_bytes());
                for piece in sse.as_bytes().chunks(fragment) {
                    if stream.write_all(piece).and_then(|()| stream.flush()).is_err() {
                        break;
                    }
                    std::thread::sleep(pause);
                }
            }
        });
        SlowStreamServer { address, requests }
    }

    fn base_url(&self) -> String {
        format!("http://{}/v1", self.address)
    }
}

/// Reads one request (head, then a `Content-Length` body) and returns the body as JSON.
fn read_request(stream: &TcpStream) -> Option<Value> {
    let mut reader = BufReader::new(stream);
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

fn chunk(delta: Value, finish_reason: Value) -> Value {
    json!({"id": "slow", "object": "chat.completion.chunk", "created": 0, "model": "slow",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]})
}

#[test]
fn fault_provider_streams_slowly_in_tiny_pieces() {
    let arguments = r#"{"text":"paced ünïcödé"}"#;
    let answer = "slowly, byte by byte — still whole ✓";
    let server = SlowStreamServer::start(
        vec![
            vec![
                chunk(json!({"role": "assistant"}), Value::Null),
                chunk(
                    json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                        "function": {"name": "fixture__echo", "arguments": ""}}]}),
                    Value::Null,
                ),
                chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": &arguments[..9]}}]}), Value::Null),
                chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": &arguments[9..]}}]}), Value::Null),
                chunk(json!({}), Value::from("tool_calls")),
            ],
            answer
                .split_inclusive(' ')
                .map(|word| chunk(json!({"content": word}), Value::Null))
                .chain([chunk(json!({}), Value::from("stop"))])
                .collect(),
        ],
        3,
        Duration::from_millis(2),
    );
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), true);
    let (output, took) = timed(sandbox.command(&["run", "--stream", "go"]));
    assert!(took < Duration::from_secs(60), "a slow stream took {took:?}");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), format!("{answer}\n"));
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 2);
    let tool = requests[1]["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").unwrap().clone();
    assert!(tool["content"].as_str().unwrap().contains("paced ünïcödé"), "{tool}");
}

#[test]
fn fault_provider_stream_cut_inside_a_tool_call_runs_nothing() {
    let arguments = json!({"path": "never.txt", "content": "x".repeat(200)}).to_string();
    let server =
        ScriptedServer::start(vec![Reply::sse_cut(Reply::tool_calls(vec![("c1", "write_file", arguments.as_str())]))]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let sink = sandbox.project.join("events.jsonl");
    let (output, took) =
        timed(sandbox.command(&["run", "--stream", "--session", "--events-jsonl", path_str(&sink), "go"]));
    assert!(took < Duration::from_secs(30), "a truncated stream took {took:?}");
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "");
    assert!(stderr(&output).contains("stream ended mid-message"), "{}", stderr(&output));
    assert!(!sandbox.project.join("never.txt").exists(), "a half-received tool call never runs");
    assert_eq!(server.requests().len(), 1, "a cut stream is not retried once its body started");
    let events = events(&sink);
    assert!(!types(&events).contains(&"tool_call_started"), "{:?}", types(&events));
    assert_eq!(types(&events).last(), Some(&"run_failed"));
    // Whatever was saved holds no assistant tool call: nothing dangling to resume.
    for file in sandbox.session_files() {
        let session: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert!(session["messages"].as_array().unwrap().iter().all(|m| m.get("tool_calls").is_none()), "{session}");
    }
}

#[test]
fn fault_provider_sends_malformed_json() {
    // In a stream: a data line that is not JSON.
    let server = ScriptedServer::start(vec![Reply::sse_events(vec![
        chunk(json!({"role": "assistant"}), Value::Null).to_string(),
        r#"{"id":"x","choices":[{"index":0,"delta":{"content":"half"#.to_owned(),
    ])]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let sink = sandbox.project.join("events.jsonl");
    let (output, took) = timed(sandbox.command(&["run", "--stream", "--events-jsonl", path_str(&sink), "go"]));
    assert!(took < Duration::from_secs(30), "a malformed stream took {took:?}");
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "");
    assert!(stderr(&output).contains("invalid response"), "{}", stderr(&output));
    assert_failed_with(&sink, "invalid_json");

    // A complete JSON body of the wrong shape.
    let server = ScriptedServer::start(vec![Reply::raw(200, "application/json", r#"{"choices":"none"}"#)]);
    sandbox.configure(&server.base_url(), false);
    let sink = sandbox.project.join("events-2.jsonl");
    let output = sandbox.odek(&["run", "--events-jsonl", path_str(&sink), "go"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("invalid response"), "{}", stderr(&output));
    assert_failed_with(&sink, "invalid_json");
}

#[test]
fn fault_mcp_server_hangs_mid_run() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "fixture__stop_self", "{}")]),
        Reply::tool_calls(vec![("c2", "fixture__echo", r#"{"text":"anyone?"}"#)]),
        Reply::text("gave up on it"),
    ]);
    let sandbox = Sandbox::new();
    let mut fixture = sandbox.fixture_server();
    fixture["timeout_seconds"] = json!(1);
    sandbox.global_config(
        &json!({"base_url": server.base_url(), "model": "test-model", "mcp_servers": {"fixture": fixture}}),
    );
    // Two 1 s timeouts, then the exit: 1 s for the writer, 5 s grace, SIGKILL.
    let (output, took) = timed(sandbox.command(&["run", "go"]));
    assert!(took < Duration::from_secs(30), "a run with a hung MCP server took {took:?}");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "gave up on it\n");
    let requests = server.requests();
    for (request, expected) in [(&requests[1], 1), (&requests[2], 2)] {
        let contents = tool_contents(request);
        assert_eq!(contents.len(), expected);
        assert!(
            contents.last().unwrap().contains(
                "error: mcpclient fixture: tools/call: MCP request outcome unknown after dispatch; verify remote state before retrying: context deadline exceeded (timeout_seconds: 1)"
            ),
            "{contents:?}"
        );
    }
    assert!(odek_test_support::processes_mentioning(&sandbox.artifacts).is_empty(), "the stopped server outlived odek");
}

/// A full disk: a small tmpfs filled to the last byte, unmounted on drop; or, where mounting is
/// not allowed, a file-size limit of zero on the odek process.
enum FullDisk {
    Tmpfs(PathBuf),
    FileSizeLimit,
}

impl FullDisk {
    /// Makes `dir` (created if missing) a full filesystem when possible.
    fn at(dir: &Path) -> FullDisk {
        std::fs::create_dir_all(dir).unwrap();
        // ODEK_TEST_NO_TMPFS=1 exercises the fallback where mounting works.
        let mounted = std::env::var_os("ODEK_TEST_NO_TMPFS").is_none()
            && Command::new("mount")
                .args(["-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs"])
                .arg(dir)
                .output()
                .is_ok_and(|output| output.status.success());
        if !mounted {
            std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
            return FullDisk::FileSizeLimit;
        }
        let disk = FullDisk::Tmpfs(dir.to_owned());
        disk.fill();
        disk
    }

    /// Writes a filler file until the filesystem refuses another byte.
    fn fill(&self) {
        let FullDisk::Tmpfs(dir) = self else { return };
        let mut filler = std::fs::File::create(dir.join(".filler")).unwrap();
        let block = [0u8; 4096];
        loop {
            match filler.write(&block) {
                Ok(0) => break,
                Ok(_) => {}
                Err(error) => {
                    assert_eq!(error.raw_os_error(), Some(28), "{error}");
                    break;
                }
            }
        }
        // Partial pages: fill the last bytes one at a time.
        while filler.write(&[0]).is_ok_and(|written| written == 1) {}
    }

    /// Room again.
    fn free(&self) {
        if let FullDisk::Tmpfs(dir) = self {
            std::fs::remove_file(dir.join(".filler")).unwrap();
        }
    }

    /// `odek <args>` under this disk's conditions.
    fn command(&self, sandbox: &Sandbox, args: &[&str]) -> Command {
        match self {
            FullDisk::Tmpfs(_) => sandbox.command(args),
            FullDisk::FileSizeLimit => {
                let plain = sandbox.command(&[]);
                // An ignored SIGXFSZ stays ignored across exec: writes past the limit fail with
                // EFBIG instead of killing the process.
                let mut limited = Command::new("sh");
                limited
                    .args(["-c", "trap '' XFSZ; ulimit -f 0; exec \"$0\" \"$@\""])
                    .arg(odek_test_support::odek_binary())
                    .args(args)
                    .current_dir(&sandbox.project)
                    .env_clear()
                    .envs(plain.get_envs().filter_map(|(key, value)| Some((key.to_owned(), value?.to_owned()))))
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped());
                limited
            }
        }
    }

    /// The OS error text a write gets on this full disk.
    fn error_text(&self) -> String {
        let errno = match self {
            FullDisk::Tmpfs(_) => 28,
            FullDisk::FileSizeLimit => 27,
        };
        std::io::Error::from_raw_os_error(errno).to_string()
    }
}

impl Drop for FullDisk {
    fn drop(&mut self) {
        if let FullDisk::Tmpfs(dir) = self {
            let _ = Command::new("umount").arg("-l").arg(&*dir).status();
        }
    }
}

#[test]
fn fault_disk_full_under_the_event_sink() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "read_file", r#"{"path":"a.txt"}"#)]),
        Reply::text("answered anyway"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    sandbox.write("a.txt", "alpha\n");
    let disk = FullDisk::at(&sandbox.project.join("full"));
    let sink = sandbox.project.join("full").join("events.jsonl");
    let (output, took) = timed(disk.command(&sandbox, &["run", "--quiet", "--events-jsonl", path_str(&sink), "go"]));
    assert!(took < Duration::from_secs(30), "a run whose event sink is on a full disk took {took:?}");
    // The spec: each failed write is reported and the run goes on.
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "answered anyway\n");
    let failure = format!("odek: events-jsonl write failed: {}", disk.error_text());
    let err = stderr(&output);
    assert!(err.lines().any(|line| line == failure), "{err}");
    assert!(err.lines().all(|line| line == failure), "only write failures on stderr: {err}");
    assert_eq!(std::fs::metadata(&sink).unwrap().len(), 0, "no partial event line was left");
}

#[test]
fn fault_disk_full_under_the_sessions_directory() {
    let server = ScriptedServer::start(vec![Reply::text("first answer")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = sandbox.odek(&["run", "--session", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let saved = sandbox.session_files();
    assert_eq!(saved.len(), 1);
    let before = std::fs::read(&saved[0]).unwrap();

    // The sessions directory moves onto a full disk, with the saved session on it.
    let sessions = sandbox.sessions_dir();
    let moved = sandbox.home.join("sessions-before");
    std::fs::rename(&sessions, &moved).unwrap();
    let disk = FullDisk::at(&sessions);
    disk.free();
    for entry in std::fs::read_dir(&moved).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), sessions.join(entry.file_name())).unwrap();
    }
    disk.fill();

    // The first save comes after this batch; no further reply is scripted, nor needed.
    server.push(Reply::tool_calls(vec![("c1", "read_file", r#"{"path":"a.txt"}"#)]));
    sandbox.write("a.txt", "alpha\n");
    let (output, took) = timed(disk.command(&sandbox, &["continue", "--quiet", "go", "on"]));
    assert!(took < Duration::from_secs(30), "a continue whose session cannot be saved took {took:?}");
    // A step that cannot be persisted fails the run; the last good file is untouched.
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let id = saved[0].file_stem().unwrap().to_str().unwrap();
    let err = stderr(&output);
    // The index is best effort (a warning when it cannot be written); the session save is not.
    let odek_lines: Vec<&str> = err.lines().filter(|line| line.starts_with("odek: ")).collect();
    assert_eq!(odek_lines.len(), 1, "the first failed save ends the run: {err}");
    assert!(odek_lines[0].starts_with(&format!("odek: session: save \"{id}\": {}", disk.error_text())), "{err}");
    assert!(
        err.lines().all(|line| line.starts_with("odek: ") || line.contains("session: write index.json: ")),
        "only the save error and index warnings on stderr: {err}"
    );
    assert_eq!(std::fs::read(sessions.join(format!("{id}.json"))).unwrap(), before);
    let leftovers: Vec<String> = std::fs::read_dir(&sessions)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != ".filler" && name != "index.json" && !name.ends_with(".json"))
        .collect();
    assert!(leftovers.is_empty(), "temp files left behind: {leftovers:?}");

    // Room again: the session resumes from its last good state.
    disk.free();
    server.push(Reply::text("resumed"));
    let output = sandbox.odek(&["continue", "once", "more"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "resumed\n");
}
