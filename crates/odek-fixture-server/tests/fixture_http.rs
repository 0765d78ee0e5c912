//! The fixture binary over Streamable HTTP (`--http`): the listening line, contract tools as
//! JSON and as SSE, the HTTP flags, and how the process ends (stdin EOF, SIGTERM).

// Test helpers outside #[test] functions may panic freely too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;

use odek_test_support::peer::{Line, READ_DEADLINE, line_channel};
use serde_json::{Value, json};

/// The fixture serving HTTP on a free loopback port.
struct HttpFixture {
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    /// Stdout after the listening line.
    stdout: mpsc::Receiver<Line>,
    address: SocketAddr,
}

impl HttpFixture {
    fn spawn(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_odek-fixture-server"))
            .args(["--http", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn odek-fixture-server");
        let stdin = child.stdin.take();
        let stdout = line_channel(child.stdout.take().unwrap());
        let line = match stdout.recv_timeout(READ_DEADLINE) {
            Ok(Line::Text(text)) => text,
            other => panic!("expected the listening line, got {other:?}"),
        };
        let url = line.strip_prefix("listening ").unwrap_or_else(|| panic!("not a listening line: {line:?}"));
        let address = url.strip_prefix("http://").and_then(|rest| rest.strip_suffix("/mcp")).unwrap();
        let address: SocketAddr = address.parse().unwrap();
        assert!(address.ip().is_loopback() && address.port() != 0, "{line}");
        Self { child: Some(child), stdin, stdout, address }
    }

    fn post(&self, session: Option<&str>, extra: &[(&str, &str)], body: &Value) -> Response {
        let mut headers = vec![("Accept", "application/json, text/event-stream"), ("Content-Type", "application/json")];
        if let Some(session) = session {
            headers.push(("Mcp-Session-Id", session));
        }
        headers.extend_from_slice(extra);
        exchange(self.address, "POST", &headers, &body.to_string())
    }

    fn initialize(&self, extra: &[(&str, &str)]) -> String {
        let response = self.post(
            None,
            extra,
            &json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}),
        );
        assert_eq!(response.status, 200);
        assert_eq!(response.json()["result"]["serverInfo"]["name"], json!("odek-fixture"));
        let session = response.header("mcp-session-id").unwrap().to_owned();
        let initialized =
            self.post(Some(&session), extra, &json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
        assert_eq!(initialized.status, 202);
        session
    }

    /// Waits for the process to exit on its own.
    fn exit_status(&mut self) -> ExitStatus {
        let mut child = self.child.take().unwrap();
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            let status = child.wait();
            let _ = sender.send(status);
        });
        receiver.recv_timeout(READ_DEADLINE).expect("the fixture did not exit").unwrap()
    }
}

impl Drop for HttpFixture {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
    }

    fn json(&self) -> Value {
        assert_eq!(self.header("content-type"), Some("application/json"));
        serde_json::from_slice(&self.body).unwrap()
    }

    /// The data of each SSE event, as JSON.
    fn events(&self) -> Vec<Value> {
        assert_eq!(self.header("content-type"), Some("text/event-stream"));
        let text = String::from_utf8(self.body.clone()).unwrap();
        text.split("\n\n")
            .filter_map(|event| {
                let data: Vec<&str> = event.lines().filter_map(|line| line.strip_prefix("data: ")).collect();
                (!data.is_empty()).then(|| serde_json::from_str(&data.join("\n")).unwrap())
            })
            .collect()
    }
}

/// One request on its own connection (`Connection: close`), read to the end.
fn exchange(address: SocketAddr, method: &str, headers: &[(&str, &str)], body: &str) -> Response {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(READ_DEADLINE)).unwrap();
    let mut request = format!("{method} /mcp HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("the response did not end in time");
    let head_end = raw.windows(4).position(|window| window == b"\r\n\r\n").expect("a response head");
    let head = String::from_utf8(raw[..head_end].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|line| {
            let (name, value) = line.split_once(':').unwrap();
            (name.trim().to_owned(), value.trim().to_owned())
        })
        .collect();
    let mut body = raw[head_end + 4..].to_vec();
    let chunked =
        headers.iter().any(|(name, value)| name.eq_ignore_ascii_case("transfer-encoding") && value == "chunked");
    if chunked {
        body = dechunk(&body);
    }
    Response { status, headers, body }
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let line_end = raw.windows(2).position(|window| window == b"\r\n").unwrap();
        let size = usize::from_str_radix(std::str::from_utf8(&raw[..line_end]).unwrap().trim(), 16).unwrap();
        raw = &raw[line_end + 2..];
        if size == 0 {
            return body;
        }
        body.extend_from_slice(&raw[..size]);
        raw = &raw[size + 2..];
    }
}

fn call(id: i64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":name,"arguments":arguments}})
}

#[test]
fn the_fixture_serves_its_contract_tools_over_http() {
    let fixture = HttpFixture::spawn(&[]);
    let session = fixture.initialize(&[]);

    let listed = fixture.post(Some(&session), &[], &json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}));
    let tools = listed.json()["result"]["tools"].as_array().unwrap().len();
    assert!(tools >= 28, "{tools} tools");

    let echoed = fixture.post(Some(&session), &[], &call(3, "echo", json!({"text":"over http"})));
    assert_eq!(
        echoed.json(),
        json!({"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"over http"}],"isError":false}})
    );

    let mut slow = call(4, "slow", json!({"ms":60,"progress_every_ms":20}));
    slow["params"]["_meta"] = json!({"progressToken":4});
    let events = fixture.post(Some(&session), &[], &slow).events();
    let (result, progress) = events.split_last().unwrap();
    assert!(!progress.is_empty());
    for notification in progress {
        assert_eq!(notification["method"], json!("notifications/progress"));
        assert_eq!(notification["params"]["progressToken"], json!(4));
    }
    assert_eq!(result["id"], json!(4));
    assert_eq!(result["result"]["content"][0]["text"], json!("slept 60 ms"));

    // A tool that writes its own reply line: one SSE event, exactly as the line stdio would get.
    let raw = fixture.post(Some(&session), &[], &call(5, "raw_result", json!({"result":{"b":1,"a":2}})));
    assert_eq!(raw.events(), [json!({"jsonrpc":"2.0","id":5,"result":{"a":2,"b":1}})]);

    let deleted = exchange(fixture.address, "DELETE", &[("Mcp-Session-Id", &session)], "");
    assert_eq!(deleted.status, 204);
}

#[test]
fn the_fixture_serves_its_instructions_and_resources_over_http() {
    let fixture = HttpFixture::spawn(&["--page-size", "2"]);
    let initialize = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26"}});
    let response = fixture.post(None, &[], &initialize);
    let session = response.header("mcp-session-id").unwrap().to_owned();
    let result = &response.json()["result"];
    assert!(result["instructions"].as_str().unwrap().starts_with("odek-fixture is a test server"), "{result}");
    assert_eq!(result["capabilities"]["resources"], json!({"listChanged":false}));

    let mut uris = Vec::new();
    let mut request = json!({"jsonrpc":"2.0","id":2,"method":"resources/list"});
    loop {
        let page = fixture.post(Some(&session), &[], &request).json()["result"].clone();
        uris.extend(page["resources"].as_array().unwrap().iter().map(|resource| resource["uri"].clone()));
        match page.get("nextCursor") {
            Some(cursor) => request["params"] = json!({"cursor": cursor}),
            None => break,
        }
    }
    assert_eq!(uris, ["fixture://readme", "fixture://large", "fixture://pixel.png", "fixture://envelope"]);

    let read = |id: i64, uri: &str| {
        let body = json!({"jsonrpc":"2.0","id":id,"method":"resources/read","params":{"uri":uri}});
        fixture.post(Some(&session), &[], &body).json()
    };
    let large = read(3, "fixture://large");
    assert_eq!(large["result"]["contents"][0]["text"].as_str().unwrap().len(), 300_000);
    assert_eq!(read(4, "fixture://pixel.png")["result"]["contents"][0]["mimeType"], json!("image/png"));
    assert_eq!(
        read(5, "fixture://nope")["error"],
        json!({"code":-32002,"message":"Resource not found: \"fixture://nope\"","data":{"uri":"fixture://nope"}})
    );
}

#[test]
fn the_http_flags_require_a_token_and_turn_get_off() {
    let fixture = HttpFixture::spawn(&["--bearer-token", "fixture-token", "--http-no-get"]);
    let refused = fixture.post(None, &[], &json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}));
    assert_eq!(refused.status, 401);
    assert_eq!(refused.header("www-authenticate"), Some("Bearer"));
    let token = [("Authorization", "Bearer fixture-token")];
    let session = fixture.initialize(&token);
    let get = exchange(
        fixture.address,
        "GET",
        &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &session), token[0]],
        "",
    );
    assert_eq!(get.status, 405);
}

#[test]
fn the_fixture_exits_when_its_stdin_closes() {
    let mut fixture = HttpFixture::spawn(&[]);
    let _session = fixture.initialize(&[]);
    drop(fixture.stdin.take());
    assert!(fixture.exit_status().success());
    assert!(TcpStream::connect(fixture.address).is_err());
    assert!(fixture.stdout.recv_timeout(READ_DEADLINE).is_err(), "the listening line was the only one on stdout");
}

#[cfg(unix)]
#[test]
fn the_fixture_exits_on_sigterm() {
    let mut fixture = HttpFixture::spawn(&[]);
    let pid = nix::unistd::Pid::from_raw(i32::try_from(fixture.child.as_ref().unwrap().id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    assert!(fixture.exit_status().success());
}
