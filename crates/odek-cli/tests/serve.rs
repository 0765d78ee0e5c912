//! `odek serve` end to end: the real binary on 127.0.0.1, driven by a real HTTP client
//! (reqwest) and a WebSocket client. Every route refuses a missing or wrong token and a foreign
//! Host or Origin (a `_red` test each); a run's `odek.event/v1` stream arrives whole and in order
//! over SSE and resumes after a dropped connection without a lost or repeated event; approvals
//! are allowed, denied and expire; an MCP server's elicitations are shown, answered (an answer
//! that does not fit the form refused with 422), declined and expire; a run is cancelled mid-tool; past the bound on running runs
//! the answer is 429; a client's budgets above the operator's are refused; output schemas and
//! checks gate answers; artifacts are listed without paths and served verified; the OpenAPI
//! document matches the routes and the answers; ACP runs over `/acp`; 50 runs at once stream
//! whole; bad bodies, ids, idle crowds and stalled readers get clear errors and touch no run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use odek_test_support::serve::Replayed;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// How long any one wait of these tests may take.
const DEADLINE: Duration = Duration::from_secs(60);

/// `odek serve` running in a temp home and project, answering from a replay script, and the
/// HTTP client that talks to it.
struct Served {
    server: Replayed,
    client: reqwest::Client,
}

impl std::ops::Deref for Served {
    type Target = Replayed;

    fn deref(&self) -> &Replayed {
        &self.server
    }
}

impl Served {
    /// The server of the replayed model `turns`, with `config` and `extra` flags.
    fn start(turns: Value, config: Value, extra: &[&str]) -> Served {
        let script = json!({"schema": "odek.replay/v1", "turns": turns});
        let server = Replayed::start(Path::new(env!("CARGO_BIN_EXE_odek")), &script, &config, extra);
        let client = reqwest::Client::builder().timeout(DEADLINE).build().unwrap();
        Served { server, client }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        let response = self.client.get(self.url(path)).bearer_auth(&self.token).send().await.unwrap();
        let status = response.status();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn post(&self, path: &str, body: &Value) -> (StatusCode, Value) {
        let response = self.client.post(self.url(path)).bearer_auth(&self.token).json(body).send().await.unwrap();
        let status = response.status();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn start_run(&self, body: Value) -> String {
        let (status, answer) = self.post("/api/runs", &body).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
        answer["run_id"].as_str().unwrap().to_owned()
    }

    /// The run's events after `after` (SSE ids and lines) until the stream ends or `stop` says so.
    async fn events(&self, run: &str, after: Option<u64>, stop: impl Fn(&Value) -> bool) -> Vec<(u64, Value)> {
        let mut request = self.client.get(self.url(&format!("/api/runs/{run}/events"))).bearer_auth(&self.token);
        if let Some(after) = after {
            request = request.header("Last-Event-ID", after.to_string());
        }
        let mut response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        let (mut events, mut pending, mut id) = (Vec::new(), String::new(), None);
        while let Some(chunk) = tokio::time::timeout(DEADLINE, response.chunk()).await.unwrap().unwrap() {
            pending.push_str(std::str::from_utf8(&chunk).unwrap());
            while let Some(end) = pending.find('\n') {
                let line: String = pending.drain(..=end).collect();
                let line = line.trim_end_matches('\n');
                if let Some(value) = line.strip_prefix("id: ") {
                    id = Some(value.parse::<u64>().unwrap());
                } else if let Some(data) = line.strip_prefix("data: ") {
                    let event: Value = serde_json::from_str(data).unwrap();
                    events.push((id.take().unwrap(), event.clone()));
                    if stop(&event) {
                        return events;
                    }
                }
            }
        }
        events
    }

    async fn wait_finished(&self, run: &str) -> Value {
        self.events(run, None, |_| false).await;
        let (status, view) = self.get(&format!("/api/runs/{run}")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(view["status"], "finished", "{view}");
        view
    }
}

/// One request written by hand (headers only) on a fresh connection; the response's head.
fn raw_request(served: &Served, line: &str, headers: &[(&str, &str)]) -> String {
    use std::io::{Read, Write};
    let address = served.base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(DEADLINE)).unwrap();
    let mut request = format!("{line} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {}\r\n", served.token);
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut head = vec![0_u8; 4096];
    let read = stream.read(&mut head).unwrap();
    String::from_utf8_lossy(&head[..read]).into_owned()
}

fn types(events: &[(u64, Value)]) -> Vec<String> {
    events.iter().map(|(_, event)| event["type"].as_str().unwrap().to_owned()).collect()
}

fn shell(id: &str, command: &str) -> Value {
    json!({"tool_calls": [{"id": id, "name": "shell", "arguments": {"command": command}}]})
}

/// Every route of the API: method, a path to call it by, the path as the OpenAPI document names it.
const ROUTES: &[(&str, &str, &str)] = &[
    ("GET", "/", "/"),
    ("GET", "/healthz", "/healthz"),
    ("GET", "/api/runs", "/api/runs"),
    ("POST", "/api/runs", "/api/runs"),
    ("GET", "/api/runs/0123", "/api/runs/{run_id}"),
    ("POST", "/api/runs/0123/cancel", "/api/runs/{run_id}/cancel"),
    ("GET", "/api/runs/0123/events", "/api/runs/{run_id}/events"),
    ("POST", "/api/runs/0123/approvals/1", "/api/runs/{run_id}/approvals/{approval_id}"),
    ("POST", "/api/runs/0123/elicitations/1", "/api/runs/{run_id}/elicitations/{elicitation_id}"),
    ("GET", "/api/runs/0123/artifacts/report", "/api/runs/{run_id}/artifacts/{artifact_id}"),
    ("GET", "/api/sessions", "/api/sessions"),
    ("GET", "/api/sessions/20261207-00", "/api/sessions/{session_id}"),
    ("DELETE", "/api/sessions/20261207-00", "/api/sessions/{session_id}"),
    ("GET", "/api/limits", "/api/limits"),
    ("GET", "/api/usage", "/api/usage"),
    ("GET", "/api/openapi.json", "/api/openapi.json"),
    ("GET", "/acp", "/acp"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_names_every_route_and_the_answers_match_it() {
    let served = Served::start(json!([shell("c1", "echo one"), {"content": "done"}]), json!({}), &[]);
    let (status, document) = served.get("/api/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(document["openapi"], "3.1.0");
    let mut documented: Vec<(String, String)> = Vec::new();
    for (path, operations) in document["paths"].as_object().unwrap() {
        documented.extend(operations.as_object().unwrap().keys().map(|method| (method.to_uppercase(), path.clone())));
    }
    let mut routed: Vec<(String, String)> =
        ROUTES.iter().map(|(method, _, template)| ((*method).to_owned(), (*template).to_owned())).collect();
    documented.sort();
    routed.sort();
    assert_eq!(documented, routed, "the document and the routes name the same operations");

    // Real answers validate against the schemas the document names.
    let conforms = |component: &str, value: &Value| {
        let schema = json!({"$ref": format!("#/components/schemas/{component}"), "components": document["components"]});
        let validator = odek_test_support::events::validator(&schema).unwrap();
        let errors: Vec<String> = validator.iter_errors(value).map(|error| error.to_string()).collect();
        assert!(errors.is_empty(), "{component}: {errors:?} in {value}");
    };
    let (_, started) = served.post("/api/runs", &json!({"task": "one"})).await;
    conforms("RunStarted", &started);
    let run = started["run_id"].as_str().unwrap().to_owned();
    conforms("RunView", &served.get(&format!("/api/runs/{run}")).await.1);
    for (_, event) in served.events(&run, None, |_| false).await {
        conforms("Event", &event);
    }
    conforms("RunView", &served.wait_finished(&run).await);
    conforms("RunList", &served.get("/api/runs").await.1);
    conforms("Limits", &served.get("/api/limits").await.1);
    conforms("UsageTotals", &served.get("/api/usage").await.1);
    conforms("Health", &served.get("/healthz").await.1);
    conforms("SessionList", &served.get("/api/sessions").await.1);
    let (status, missing) = served.get("/api/runs/nope").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    conforms("Error", &missing);
    let (status, over) = served.post(&format!("/api/runs/{run}/cancel"), &json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT);
    conforms("Error", &over);
}

/// `method path` answers 401 without the token or with a wrong one (with `WWW-Authenticate:
/// Bearer`), takes the page's cookie, and answers 403 under a foreign `Host` or from a page of
/// another site, never with a CORS header.
async fn refuses_strangers(served: &Served, method: &str, path: &str) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let request = || served.client.request(method.clone(), served.url(path));
    let missing = request().send().await.unwrap();
    assert_eq!(missing.status(), StatusCode::UNAUTHORIZED, "{method} {path} without a token");
    assert_eq!(missing.headers()["www-authenticate"], "Bearer");
    let wrong = request().bearer_auth("0".repeat(64)).send().await.unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED, "{method} {path} with a wrong token");
    let cookie = request().header("Cookie", format!("odek_token={}", served.token)).send().await.unwrap();
    assert_ne!(cookie.status(), StatusCode::UNAUTHORIZED, "{method} {path} with the page's cookie");
    let rebound = request().bearer_auth(&served.token).header("Host", "attacker.example").send().await.unwrap();
    assert_eq!(rebound.status(), StatusCode::FORBIDDEN, "{method} {path} under a foreign Host");
    let foreign =
        request().bearer_auth(&served.token).header("Origin", "http://attacker.example").send().await.unwrap();
    assert_eq!(foreign.status(), StatusCode::FORBIDDEN, "{method} {path} from a foreign Origin");
    assert!(foreign.headers().get("access-control-allow-origin").is_none());
}

/// One `_red` test per route of [`ROUTES`] (and the page's assets, and a route that is not one),
/// each against a server of its own; [`REFUSAL_TESTED`] lists them.
macro_rules! each_route_refuses_strangers {
    ($($name:ident: $method:literal $path:literal,)*) => {
        const REFUSAL_TESTED: &[(&str, &str)] = &[$(($method, $path),)*];
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let served = Served::start(json!([{"content": "hi"}]), json!({}), &[]);
                refuses_strangers(&served, $method, $path).await;
            }
        )*
    };
}

each_route_refuses_strangers! {
    page_refuses_strangers_red: "GET" "/",
    page_assets_refuse_strangers_red: "GET" "/assets/app.js",
    healthz_refuses_strangers_red: "GET" "/healthz",
    list_runs_refuses_strangers_red: "GET" "/api/runs",
    start_run_refuses_strangers_red: "POST" "/api/runs",
    show_run_refuses_strangers_red: "GET" "/api/runs/0123",
    cancel_run_refuses_strangers_red: "POST" "/api/runs/0123/cancel",
    run_events_refuse_strangers_red: "GET" "/api/runs/0123/events",
    answer_approval_refuses_strangers_red: "POST" "/api/runs/0123/approvals/1",
    answer_elicitation_refuses_strangers_red: "POST" "/api/runs/0123/elicitations/1",
    run_artifact_refuses_strangers_red: "GET" "/api/runs/0123/artifacts/report",
    list_sessions_refuses_strangers_red: "GET" "/api/sessions",
    show_session_refuses_strangers_red: "GET" "/api/sessions/20261207-00",
    delete_session_refuses_strangers_red: "DELETE" "/api/sessions/20261207-00",
    limits_refuse_strangers_red: "GET" "/api/limits",
    usage_refuses_strangers_red: "GET" "/api/usage",
    openapi_refuses_strangers_red: "GET" "/api/openapi.json",
    acp_refuses_strangers_red: "GET" "/acp",
    unknown_route_refuses_strangers_red: "GET" "/no/such/route",
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_has_its_refusal_test_and_the_page_takes_the_token_once_red() {
    for (method, path, _) in ROUTES {
        assert!(REFUSAL_TESTED.contains(&(*method, *path)), "{method} {path} has no refusal test");
    }
    let served = Served::start(json!([{"content": "hi"}]), json!({}), &[]);
    let (status, health) = served.get("/healthz").await;
    assert_eq!((status, health["status"].as_str()), (StatusCode::OK, Some("ok")));

    // The page takes the token once from its address: a wrong one sets nothing; the right one
    // becomes an HttpOnly SameSite=Strict cookie and leaves the address bar.
    let no_redirects = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let wrong = no_redirects.get(served.url(&format!("/?token={}", "0".repeat(64)))).send().await.unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    assert!(wrong.headers().get("set-cookie").is_none());
    let api = no_redirects.get(served.url(&format!("/api/runs?token={}", served.token))).send().await.unwrap();
    assert_eq!(api.status(), StatusCode::UNAUTHORIZED, "only the page's address takes ?token=");
    let opened = no_redirects.get(served.url(&format!("/?token={}", served.token))).send().await.unwrap();
    assert_eq!(opened.status(), StatusCode::SEE_OTHER);
    assert_eq!(opened.headers()["location"], "/");
    let cookie = opened.headers()["set-cookie"].to_str().unwrap();
    assert_eq!(cookie, format!("odek_token={}; HttpOnly; SameSite=Strict; Path=/", served.token));
    let page = no_redirects.get(served.url("/")).header("Cookie", format!("odek_token={}", served.token)).send().await;
    let page = page.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let policy = page.headers()["content-security-policy"].to_str().unwrap().to_owned();
    assert!(policy.starts_with("default-src 'none'; script-src 'self'"), "{policy}");
    assert!(!policy.contains("unsafe"), "{policy}");
    assert!(page.text().await.unwrap().contains("/assets/app.js"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_streams_its_events_in_order_and_resumes_without_loss_or_repeat() {
    let turns = json!([shell("c1", "echo one"), shell("c2", "echo two"), {"content": "done"}]);
    let served = Served::start(turns, json!({}), &[]);
    let run = served.start_run(json!({"task": "count", "surprise": "ignored"})).await;
    let all = served.events(&run, None, |_| false).await;
    let ids: Vec<u64> = all.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, (1..=all.len() as u64).collect::<Vec<_>>());
    let kinds = types(&all);
    assert_eq!(kinds.first().map(String::as_str), Some("run_started"));
    assert_eq!(kinds.last().map(String::as_str), Some("run_completed"), "{kinds:?}");
    assert!(all.iter().all(|(_, event)| event["run_id"] == run.as_str()));

    // A client that dropped after the third event resumes from it: the rest, each once.
    let resumed = served.events(&run, Some(3), |_| false).await;
    assert_eq!(resumed, all[3..].to_vec());

    let view = served.wait_finished(&run).await;
    assert_eq!((view["outcome"].as_str(), view["answer"].as_str()), (Some("success"), Some("done")));
    assert_eq!(view["task"], "count");
    let (_, listed) = served.get("/api/runs").await;
    assert_eq!(listed["runs"][0]["run_id"], run.as_str());
    let session = view["session_id"].as_str().unwrap();
    let (status, saved) = served.get(&format!("/api/sessions/{session}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(saved["task"], "count");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_are_allowed_denied_and_expire() {
    // `sh -c` is code execution: the policy asks.
    let turns = json!([shell("x1", "sh -c 'echo 42'"), {"content": "finished"}]);
    let served = Served::start(turns, json!({"approval_timeout_seconds": 1}), &[]);
    let asked = |event: &Value| event["type"] == "approval_requested";

    for (decision, completed) in [("allow", "tool_call_completed"), ("deny", "tool_call_failed")] {
        let run = served.start_run(json!({"task": decision})).await;
        let before = served.events(&run, None, asked).await;
        let (seq, request) = before.last().unwrap().clone();
        assert_eq!(request["tool"], "shell");
        assert_eq!(request["data"]["class"], "code_execution");
        // The call's start comes first (events.md §11), though the runtime's events are queued.
        let call = &request["data"]["call_id"];
        assert!(
            before.iter().any(|(_, event)| event["type"] == "tool_call_started" && &event["data"]["call_id"] == call),
            "{:?}",
            types(&before)
        );
        let approval = request["data"]["approval_id"].as_u64().unwrap();
        let (status, view) = served.get(&format!("/api/runs/{run}")).await;
        assert_eq!((status, view["pending_approvals"].clone()), (StatusCode::OK, json!([approval])));
        let path = format!("/api/runs/{run}/approvals/{approval}");
        let (status, _) = served.post(&path, &json!({"decision": decision})).await;
        assert_eq!(status, StatusCode::OK);
        let (status, _) = served.post(&path, &json!({"decision": decision})).await;
        assert_eq!(status, StatusCode::CONFLICT, "answered once only");
        let after = served.events(&run, Some(seq), |_| false).await;
        assert!(types(&after).contains(&completed.to_owned()), "{decision}: {:?}", types(&after));
        served.wait_finished(&run).await;
    }

    // Nobody answers: denied after approval_timeout_seconds, and the stream says so.
    let run = served.start_run(json!({"task": "nobody answers"})).await;
    let events = served.events(&run, None, |_| false).await;
    let resolved = events.iter().find(|(_, event)| event["type"] == "approval_resolved").unwrap();
    assert_eq!(
        (resolved.1["data"]["decision"].as_str(), resolved.1["data"]["by"].as_str()),
        (Some("deny"), Some("expired"))
    );
    assert!(types(&events).contains(&"tool_call_failed".to_owned()));
    let (status, _) = served.post(&format!("/api/runs/{run}/approvals/1"), &json!({"decision": "maybe"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

/// `odek serve` whose model calls the fixture's `elicit` tool with `arguments` once, then
/// answers; the fixture speaks MCP 2025-11-25 (form and URL elicitation) and needs no approval.
fn eliciting(arguments: Value, config: Value) -> Served {
    let fixture = json!({
        "command": odek_test_support::fixture_server(),
        "args": ["--mode", "elicitation", "--protocol-version", "2025-11-25"],
        "protocol_version": "2025-11-25",
        "auto_approve": true,
    });
    let mut config = config;
    config["mcp_servers"] = json!({"fixture": fixture});
    let turns = json!([
        {"tool_calls": [{"id": "e1", "name": "fixture__elicit", "arguments": arguments}]},
        {"content": "done"},
    ]);
    Served::start(turns, config, &[])
}

/// The run's `elicitation_requested` event, once it is in the stream.
async fn elicitation_requested(served: &Served, run: &str) -> Value {
    let events = served.events(run, None, |event| event["type"] == "elicitation_requested").await;
    let (_, requested) = events.last().unwrap().clone();
    assert_eq!(requested["type"], "elicitation_requested", "{:?}", types(&events));
    requested["data"].clone()
}

/// The line of the fixture's `elicit` tool's result that echoes the answer, as the run's saved
/// session holds it.
async fn elicit_result(served: &Served, run: &str) -> String {
    let view = served.wait_finished(run).await;
    assert_eq!(view["outcome"], "success", "{view}");
    let (_, saved) = served.get(&format!("/api/sessions/{}", view["session_id"].as_str().unwrap())).await;
    let mut texts = Vec::new();
    let mut stack = vec![&saved];
    while let Some(value) = stack.pop() {
        match value {
            Value::String(text) => {
                texts.extend(text.lines().filter(|line| line.starts_with("elicitation result: ")).map(str::to_owned));
            }
            Value::Array(items) => stack.extend(items),
            Value::Object(fields) => stack.extend(fields.values()),
            _ => {}
        }
    }
    assert_eq!(texts.len(), 1, "{saved}");
    texts.remove(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitations_are_shown_checked_answered_declined_and_expire_red() {
    let served = eliciting(json!({"message": "Your \u{1b}[31mage\u{1b}[0m, please"}), json!({}));

    // Shown: the server, its message made safe, the form's fields in order with their defaults.
    let run = served.start_run(json!({"task": "ask me"})).await;
    let asked = elicitation_requested(&served, &run).await;
    assert_eq!((asked["server"].as_str(), asked["mode"].as_str()), (Some("fixture"), Some("form")), "{asked}");
    assert_eq!(asked["message"], "Your age, please", "escape sequences are gone: {asked}");
    assert_eq!(
        asked["fields"],
        json!([
            {"name": "age", "label": "Age", "required": true, "type": "integer", "minimum": 0.0, "maximum": 150.0, "default": 36},
            {"name": "colour", "label": "Colour", "required": false, "type": "string", "default": "green",
             "options": [{"value": "red", "label": "red"}, {"value": "green", "label": "green"}, {"value": "blue", "label": "blue"}]},
            {"name": "name", "label": "Name", "required": false, "type": "string", "default": "Ada"},
        ])
    );
    let id = asked["elicitation_id"].as_u64().unwrap();
    let (_, view) = served.get(&format!("/api/runs/{run}")).await;
    assert_eq!(view["pending_elicitations"], json!([id]));
    let path = format!("/api/runs/{run}/elicitations/{id}");

    // An answer that does not fit the form is refused with the reason, and the request stays open.
    for (content, reason) in [
        (json!({"age": 200}), "age: at most 150"),
        (json!({"name": "Grace"}), "age: required"),
        (json!({"age": 40, "colour": "purple"}), "colour: not one of the options"),
        (json!({"age": 40, "admin": true}), "\"admin\" is not a field of the form"),
    ] {
        let (status, answer) = served.post(&path, &json!({"action": "accept", "content": content})).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{content}: {answer}");
        assert_eq!(answer["error"], format!("the answer does not fit the request: {reason}"));
    }
    let (status, _) = served.post(&path, &json!({"action": "maybe"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = served.post(&format!("/api/runs/{run}/elicitations/999999"), &json!({"action": "cancel"})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let content = json!({"age": 40, "colour": "blue", "name": "Grace"});
    let (status, answer) = served.post(&path, &json!({"action": "accept", "content": content})).await;
    assert_eq!(
        (status, answer.clone()),
        (StatusCode::OK, json!({"elicitation_id": id, "action": "accept"})),
        "{answer}"
    );
    let (status, _) = served.post(&path, &json!({"action": "decline"})).await;
    assert_eq!(status, StatusCode::CONFLICT, "answered once only");
    // The server got the answer: its tool's result echoes it.
    assert_eq!(
        elicit_result(&served, &run).await,
        r#"elicitation result: {"action":"accept","content":{"age":40,"colour":"blue","name":"Grace"}}"#
    );
    let events = served.events(&run, None, |_| false).await;
    let resolved = events.iter().find(|(_, event)| event["type"] == "elicitation_resolved").unwrap();
    assert_eq!(resolved.1["data"], json!({"elicitation_id": id, "action": "accept", "by": "client"}));
    assert!(!events.iter().any(|(_, event)| event.to_string().contains("Grace")), "what was answered stays out");

    // Declined.
    let run = served.start_run(json!({"task": "ask me again"})).await;
    let id = elicitation_requested(&served, &run).await["elicitation_id"].as_u64().unwrap();
    let (status, _) = served.post(&format!("/api/runs/{run}/elicitations/{id}"), &json!({"action": "decline"})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(elicit_result(&served, &run).await, r#"elicitation result: {"action":"decline"}"#);

    // Nobody answers before the run is cancelled: it expires, and a late answer is over.
    let run = served.start_run(json!({"task": "nobody answers"})).await;
    let id = elicitation_requested(&served, &run).await["elicitation_id"].as_u64().unwrap();
    let (status, _) = served.post(&format!("/api/runs/{run}/cancel"), &json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let events = served.events(&run, None, |_| false).await;
    let resolved = events.iter().find(|(_, event)| event["type"] == "elicitation_resolved").unwrap();
    assert_eq!(resolved.1["data"], json!({"elicitation_id": id, "action": "cancel", "by": "expired"}));
    served.wait_finished(&run).await;
    let late = json!({"action": "accept", "content": {"age": 1}});
    let (status, _) = served.post(&format!("/api/runs/{run}/elicitations/{id}"), &late).await;
    assert_eq!(status, StatusCode::CONFLICT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_elicitation_expires_after_the_configured_timeout() {
    let served = eliciting(json!({}), json!({"elicitation_timeout_seconds": 1}));
    let run = served.start_run(json!({"task": "nobody answers"})).await;
    let id = elicitation_requested(&served, &run).await["elicitation_id"].as_u64().unwrap();
    let events = served.events(&run, None, |event| event["type"] == "elicitation_resolved").await;
    let (_, resolved) = events.last().unwrap();
    assert_eq!(resolved["data"], json!({"elicitation_id": id, "action": "cancel", "by": "expired"}));
    let (status, _) = served.post(&format!("/api/runs/{run}/elicitations/{id}"), &json!({"action": "decline"})).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(elicit_result(&served, &run).await, r#"elicitation result: {"action":"cancel"}"#);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_elicitation_shows_its_url_and_host_and_is_accepted_without_content() {
    let url = "https://auth.example.com/consent?session=7";
    let served = eliciting(json!({"url": url, "message": "Link your account"}), json!({}));
    let run = served.start_run(json!({"task": "link"})).await;
    let asked = elicitation_requested(&served, &run).await;
    assert_eq!(
        (asked["mode"].as_str(), asked["url"].as_str(), asked["host"].as_str()),
        (Some("url"), Some(url), Some("auth.example.com")),
        "{asked}"
    );
    assert!(asked.get("fields").is_none());
    let path = format!("/api/runs/{run}/elicitations/{}", asked["elicitation_id"]);
    let (status, answer) = served.post(&path, &json!({"action": "accept", "content": {"x": 1}})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    let (status, _) = served.post(&path, &json!({"action": "accept"})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(elicit_result(&served, &run).await, r#"elicitation result: {"action":"accept"}"#);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_cancelled_mid_tool_and_past_the_bound_runs_are_refused_with_429() {
    let served = Served::start(json!([shell("s1", "sleep 300")]), json!({}), &["--max-concurrent-runs", "1"]);
    let run = served.start_run(json!({"task": "wait"})).await;
    served.events(&run, None, |event| event["type"] == "tool_call_started").await;

    let response = served
        .client
        .post(served.url("/api/runs"))
        .bearer_auth(&served.token)
        .json(&json!({"task": "more"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(response.headers().get("retry-after").is_some());

    let (status, _) = served.post(&format!("/api/runs/{run}/cancel"), &json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let view = served.wait_finished(&run).await;
    assert_eq!(view["outcome"], "cancelled", "{view}");
    let (status, _) = served.post(&format!("/api/runs/{run}/cancel"), &json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT);
    // The slot is free again.
    served.start_run(json!({"task": "again"})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budgets_only_lower_the_operators_and_bad_input_gets_clear_errors_red() {
    let served = Served::start(json!([{"content": "ok"}]), json!({"limits": {"max_tool_calls": 5}}), &[]);
    let (status, answer) = served.post("/api/runs", &json!({"task": "t", "limits": {"max_tool_calls": 10}})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        answer["error"],
        "limits.max_tool_calls 10 is above the operator's (5); a client may only lower a budget"
    );
    let (status, _) = served.post("/api/runs", &json!({"task": "t", "limits": {"max_cost_usd": 1.5}})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "a budget the operator left open may be set");
    let run = served.start_run(json!({"task": "t", "limits": {"max_tool_calls": 3}})).await;
    served.wait_finished(&run).await;
    let (_, limits) = served.get("/api/limits").await;
    assert_eq!(limits["limits"]["max_tool_calls"], 5);
    // A lowered budget holds: the second tool call is past it.
    let two_calls =
        Served::start(json!([shell("a", "echo 1"), shell("b", "echo 2"), {"content": "ok"}]), json!({}), &[]);
    let run = two_calls.start_run(json!({"task": "t", "limits": {"max_tool_calls": 1}})).await;
    let view = two_calls.wait_finished(&run).await;
    assert_eq!(
        (view["outcome"].as_str(), view["budget"].as_str()),
        (Some("budget_exceeded"), Some("tool_calls")),
        "{view}"
    );

    let send = |body: Vec<u8>| {
        served
            .client
            .post(served.url("/api/runs"))
            .bearer_auth(&served.token)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let malformed = send(b"{\"task\": ".to_vec()).await.unwrap();
    assert_eq!(malformed.status(), StatusCode::BAD_REQUEST);
    assert!(malformed.json::<Value>().await.unwrap()["error"].as_str().unwrap().starts_with("invalid JSON body"));
    // A 100 MB body is refused from its length, before a byte of it is read.
    let huge = raw_request(
        &served,
        "POST /api/runs",
        &[("Content-Length", "104857600"), ("Content-Type", "application/json")],
    );
    assert!(huge.starts_with("HTTP/1.1 413 "), "{huge}");
    let (status, _) = served.post("/api/runs", &json!({"task": "  "})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, answer) = served.post("/api/runs", &json!({"task": "t", "output_schema": {"type": 5}})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("output_schema"), "{answer}");
    let (status, _) = served.post("/api/runs", &json!({"task": "t", "checks": vec!["true"; 17]})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = served.post("/api/runs", &json!({"task": "t", "checks": [""]})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = served.post("/api/runs", &json!({"task": "t", "cwd": "relative/dir"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    for path in ["/api/runs/..%2F..%2Fetc", "/api/sessions/..%2Fconfig", "/api/sessions/nope"] {
        let (status, _) = served.get(path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
    }
    // Each run's stream carries its own events only.
    let other = served.start_run(json!({"task": "other"})).await;
    let events = served.events(&other, None, |_| false).await;
    assert!(events.iter().all(|(_, event)| event["run_id"] == other.as_str()));
    assert!(Path::new(&served.cwd).is_dir());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_output_schema_and_checks_gate_its_answer() {
    // An answer that does not match goes back to the model; the one that matches is the answer.
    let schema = json!({"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}});
    let served = Served::start(json!([{"content": "plain words"}, {"content": "{\"ok\": true}"}]), json!({}), &[]);
    let run = served.start_run(json!({"task": "answer", "output_schema": schema})).await;
    let view = served.wait_finished(&run).await;
    assert_eq!((view["outcome"].as_str(), view["answer"].as_str()), (Some("success"), Some("{\"ok\":true}")), "{view}");
    // A check that keeps failing fails the run with its own outcome class.
    let answers: Vec<Value> = (0..6).map(|n| json!({"content": format!("answer {n}")})).collect();
    let served = Served::start(Value::Array(answers), json!({}), &[]);
    let run = served.start_run(json!({"task": "answer", "checks": ["test -f absent-marker"]})).await;
    let view = served.wait_finished(&run).await;
    assert_eq!(view["outcome"], "checks_failed", "{view}");
    let run = served.start_run(json!({"task": "answer", "checks": ["true"]})).await;
    assert_eq!(served.wait_finished(&run).await["outcome"], "success");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_artifacts_are_listed_without_paths_and_served_verified_by_id_red() {
    let artifacts = tempfile::tempdir().unwrap();
    let artifact_dir = artifacts.path().canonicalize().unwrap();
    let fixture = json!({
        "command": odek_test_support::fixture_server(),
        "args": ["--artifact-dir", artifact_dir],
        "artifact_roots": [artifact_dir],
        "auto_approve": true,
    });
    let call = |id: &str, arguments: Value| json!({"tool_calls": [{"id": id, "name": "fixture__artifact_result", "arguments": arguments}]});
    let script = "<script>alert(1)</script>";
    let turns = json!([
        call("a1", json!({"id": "report", "content": script, "media_type": "text/html", "summary": "a page"})),
        call("a2", json!({"id": "report", "content": "hello\n", "summary": "plain"})),
        call("a3", json!({"id": "undigested", "content": "x", "omit_hash": true})),
        {"content": "three artifacts"},
    ]);
    let served = Served::start(turns, json!({"mcp_servers": {"fixture": fixture}}), &[]);
    let run = served.start_run(json!({"task": "write artifacts"})).await;
    let view = served.wait_finished(&run).await;
    assert_eq!(view["outcome"], "success", "{view}");
    let listed = view["artifacts"].as_array().unwrap();
    let ids: Vec<&str> = listed.iter().map(|artifact| artifact["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["report", "report-2", "undigested"], "a repeated id gets a suffix: {view}");
    assert_eq!(listed[0]["tool"], "fixture__artifact_result");
    assert_eq!(listed[0]["media_type"], "text/html");
    assert_eq!(listed[0]["size_bytes"], script.len());
    assert_eq!(listed[1]["summary"], "plain");
    assert_eq!(listed[2]["sha256"], "");
    assert!(!view.to_string().contains(artifact_dir.to_str().unwrap()), "a path never leaves the server: {view}");

    let download = |id: &str| {
        served.client.get(served.url(&format!("/api/runs/{run}/artifacts/{id}"))).bearer_auth(&served.token).send()
    };
    // What a tool wrote never runs in the page's origin: a download, no HTML, a sandbox.
    let page = download("report").await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(page.headers()["content-type"], "application/octet-stream");
    assert_eq!(page.headers()["content-disposition"], "attachment; filename=\"report\"");
    assert_eq!(page.headers()["content-security-policy"], "sandbox; default-src 'none'");
    assert_eq!(page.headers()["x-content-type-options"], "nosniff");
    assert_eq!(page.text().await.unwrap(), script);
    let plain = download("report-2").await.unwrap();
    assert_eq!(plain.headers()["content-type"], "text/plain");
    assert_eq!(plain.text().await.unwrap(), "hello\n");

    // Checked again at download: no digest, or a file changed since, is not served.
    let undigested = download("undigested").await.unwrap();
    assert_eq!(undigested.status(), StatusCode::CONFLICT);
    assert!(undigested.text().await.unwrap().contains("ref carries no sha256"));
    let file = std::fs::read_dir(&artifact_dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| std::fs::read_to_string(path).is_ok_and(|text| text == "hello\n"))
        .unwrap();
    std::fs::write(&file, "HELLO\n").unwrap();
    let changed = download("report-2").await.unwrap();
    assert_eq!(changed.status(), StatusCode::CONFLICT);
    assert!(changed.text().await.unwrap().contains("sha256 mismatch"));
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", &file).unwrap();
    let swapped = download("report-2").await.unwrap();
    assert_eq!(swapped.status(), StatusCode::CONFLICT);
    assert!(swapped.text().await.unwrap().contains("symlink"));

    for id in ["nope", "..%2F..%2Fetc%2Fpasswd", "report%00"] {
        assert_eq!(download(id).await.unwrap().status(), StatusCode::NOT_FOUND, "{id}");
    }
    let unauthenticated = served.client.get(served.url(&format!("/api/runs/{run}/artifacts/report"))).send().await;
    assert_eq!(unauthenticated.unwrap().status(), StatusCode::UNAUTHORIZED);
}

/// One ACP-over-WebSocket client connection to `/acp`.
struct AcpSocket {
    socket: tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
}

impl AcpSocket {
    fn request(served: &Served) -> tokio_tungstenite::tungstenite::handshake::client::Request {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest;
        format!("{}/acp", served.base.replace("http://", "ws://")).into_client_request().unwrap()
    }

    async fn open(served: &Served) -> AcpSocket {
        let mut request = AcpSocket::request(served);
        request.headers_mut().insert("Authorization", format!("Bearer {}", served.token).parse().unwrap());
        let (socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
        AcpSocket { socket }
    }

    async fn send(&mut self, message: tokio_tungstenite::tungstenite::Message) {
        use futures_util::SinkExt;
        self.socket.send(message).await.unwrap();
    }

    async fn call(&mut self, id: u64, method: &str, params: Value) {
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        self.send(tokio_tungstenite::tungstenite::Message::Text(message.into())).await;
    }

    /// Messages until the answer to `id` (which is last), or `None` when the connection ends.
    async fn until_answer(&mut self, id: u64) -> Option<Vec<Value>> {
        use futures_util::StreamExt;
        let mut seen = Vec::new();
        loop {
            let message = tokio::time::timeout(DEADLINE, self.socket.next()).await.unwrap();
            match message {
                Some(Ok(tokio_tungstenite::tungstenite::Message::Text(text))) => {
                    let value: Value = serde_json::from_str(text.as_str()).unwrap();
                    let done = value["id"] == id && value.get("method").is_none();
                    seen.push(value);
                    if done {
                        return Some(seen);
                    }
                }
                Some(Ok(tokio_tungstenite::tungstenite::Message::Close(_))) | None | Some(Err(_)) => return None,
                Some(Ok(_)) => {}
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_over_websocket_serves_sessions_behind_the_token_and_survives_garbage_red() {
    let served = Served::start(json!([{"content": "hello over a socket"}]), json!({}), &[]);
    // Refused like every route: no token, a wrong one, a foreign page.
    let refused = |request| async move {
        match tokio_tungstenite::connect_async(request).await {
            Err(tokio_tungstenite::tungstenite::Error::Http(response)) => response.status().as_u16(),
            other => panic!("the handshake should be refused: {:?}", other.map(|_| ())),
        }
    };
    assert_eq!(refused(AcpSocket::request(&served)).await, 401);
    let mut wrong = AcpSocket::request(&served);
    wrong.headers_mut().insert("Authorization", format!("Bearer {}", "0".repeat(64)).parse().unwrap());
    assert_eq!(refused(wrong).await, 401);
    let mut foreign = AcpSocket::request(&served);
    foreign.headers_mut().insert("Authorization", format!("Bearer {}", served.token).parse().unwrap());
    foreign.headers_mut().insert("Origin", "http://attacker.example".parse().unwrap());
    assert_eq!(refused(foreign).await, 403);
    // Not a WebSocket: a clear error.
    let (status, answer) = served.get("/acp").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");

    let mut acp = AcpSocket::open(&served).await;
    // Garbage text is answered, and the connection lives on.
    acp.send(tokio_tungstenite::tungstenite::Message::Text("{not json".into())).await;
    acp.call(1, "initialize", json!({"protocolVersion": 1, "clientCapabilities": {}})).await;
    let answers = acp.until_answer(1).await.expect("the connection survives garbage text");
    let initialized = answers.last().unwrap();
    assert_eq!(initialized["result"]["agentInfo"]["name"], "odek", "{answers:?}");
    acp.call(2, "session/new", json!({"cwd": served.cwd, "mcpServers": []})).await;
    let created = acp.until_answer(2).await.unwrap();
    let session = created.last().unwrap()["result"]["sessionId"].as_str().unwrap().to_owned();
    acp.call(3, "session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]})).await;
    let turn = acp.until_answer(3).await.unwrap();
    assert_eq!(turn.last().unwrap()["result"]["stopReason"], "end_turn", "{turn:?}");
    let text: String = turn
        .iter()
        .filter(|message| message["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|message| message["params"]["update"]["content"]["text"].as_str())
        .collect();
    assert_eq!(text, "hello over a socket");

    // A frame that is not text ends that connection only.
    acp.send(tokio_tungstenite::tungstenite::Message::Binary(vec![0xff, 0xfe, 0x00].into())).await;
    assert!(acp.until_answer(4).await.is_none(), "the connection ends");
    let (status, health) = served.get("/healthz").await;
    assert_eq!((status, health["status"].as_str()), (StatusCode::OK, Some("ok")));
    let mut again = AcpSocket::open(&served).await;
    again.call(1, "initialize", json!({"protocolVersion": 1, "clientCapabilities": {}})).await;
    assert!(again.until_answer(1).await.is_some());
}

/// A replay script of `iterations` iterations: a `read_file` of `notes.txt` in each but the last,
/// which answers.
fn reading_turns(iterations: usize) -> Value {
    let mut turns: Vec<Value> = (1..iterations)
        .map(|n| json!({"tool_calls": [{"id": format!("read{n}"), "name": "read_file", "arguments": {"path": "notes.txt"}}]}))
        .collect();
    turns.push(json!({"content": format!("read {} times", iterations - 1)}));
    Value::Array(turns)
}

/// A run's stream is whole and in order: numbered 1.., opened by `run_started`, closed by
/// `run_completed`, each call started before it completed, every event the run's own.
fn assert_whole_run(run: &str, events: &[(u64, Value)], iterations: usize) {
    let ids: Vec<u64> = events.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, (1..=events.len() as u64).collect::<Vec<_>>(), "{run}: numbered without a gap");
    let kinds = types(events);
    assert_eq!(kinds.first().map(String::as_str), Some("run_started"), "{run}");
    assert_eq!(kinds.last().map(String::as_str), Some("run_completed"), "{run}: {kinds:?}");
    assert_eq!(kinds.iter().filter(|kind| *kind == "iteration_completed").count(), iterations, "{run}");
    let started: Vec<&Value> = events
        .iter()
        .filter(|(_, event)| event["type"] == "tool_call_started")
        .map(|(_, e)| &e["data"]["call_id"])
        .collect();
    let completed: Vec<&Value> = events
        .iter()
        .filter(|(_, event)| event["type"] == "tool_call_completed")
        .map(|(_, e)| &e["data"]["call_id"])
        .collect();
    assert_eq!(started.len(), iterations - 1, "{run}");
    assert_eq!(started, completed, "{run}: each call completes, in order");
    assert!(events.iter().all(|(_, event)| event["run_id"] == run), "{run}: only its own events");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_runs_of_twenty_iterations_each_stream_every_event_in_order() {
    const RUNS: usize = 50;
    const ITERATIONS: usize = 20;
    let served = Served::start(reading_turns(ITERATIONS), json!({}), &["--max-concurrent-runs", "50"]);
    std::fs::write(served.cwd.join("notes.txt"), "a note\n").unwrap();
    let runs = futures_util::future::join_all((0..RUNS).map(|n| served.start_run(json!({"task": format!("run {n}")}))));
    let runs = runs.await;
    let streams = futures_util::future::join_all(runs.iter().map(|run| served.events(run, None, |_| false))).await;
    for (run, events) in runs.iter().zip(&streams) {
        assert_whole_run(run, events, ITERATIONS);
        let (_, view) = served.get(&format!("/api/runs/{run}")).await;
        assert_eq!((view["outcome"].as_str(), view["answer"].as_str()), (Some("success"), Some("read 19 times")));
    }
    let (_, listed) = served.get("/api/runs").await;
    assert_eq!(listed["runs"].as_array().unwrap().len(), RUNS);
}

/// The resident memory of process `pid`, in KiB.
fn resident_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|line| line.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_crowds_a_stream_never_read_and_huge_bodies_leave_runs_unaffected_red() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    setrlimit(Resource::RLIMIT_NOFILE, hard.min(8192), hard).unwrap();
    let served = Served::start(reading_turns(20), json!({}), &["--max-concurrent-runs", "8"]);
    std::fs::write(served.cwd.join("notes.txt"), "a note\n").unwrap();
    let address = served.base.trim_start_matches("http://").to_owned();
    let before = resident_kib(served.child.id());

    // 1,000 connections that never send a byte.
    let idle: Vec<std::net::TcpStream> = (0..1000).map(|_| std::net::TcpStream::connect(&address).unwrap()).collect();
    // A 10 MB task: refused with a clear answer, before its body is read (a client that keeps
    // writing finds the connection closed behind the answer).
    let task = json!({"task": "x".repeat(10 * 1024 * 1024)}).to_string();
    let mut upload = std::net::TcpStream::connect(&address).unwrap();
    upload.set_read_timeout(Some(DEADLINE)).unwrap();
    let head = format!(
        "POST /api/runs HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        served.token,
        task.len()
    );
    std::io::Write::write_all(&mut upload, head.as_bytes()).unwrap();
    let mut answer = vec![0_u8; 4096];
    let read = std::io::Read::read(&mut upload, &mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer[..read]).into_owned();
    assert!(answer.starts_with("HTTP/1.1 413 "), "{answer}");
    assert!(answer.contains("larger than"), "{answer}");
    let _ = std::io::Write::write_all(&mut upload, task.as_bytes());

    // A run whose stream one client opens and never reads, while another reads it whole.
    let run = served.start_run(json!({"task": "read"})).await;
    let mut stalled = std::net::TcpStream::connect(&address).unwrap();
    std::io::Write::write_all(
        &mut stalled,
        format!(
            "GET /api/runs/{run}/events HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {}\r\n\r\n",
            served.token
        )
        .as_bytes(),
    )
    .unwrap();
    let events = served.events(&run, None, |_| false).await;
    assert_whole_run(&run, &events, 20);
    let (status, health) = served.get("/healthz").await;
    assert_eq!((status, health["status"].as_str()), (StatusCode::OK, Some("ok")));
    let grown = resident_kib(served.child.id()).saturating_sub(before);
    assert!(grown < 96 * 1024, "1,000 idle connections and a stalled stream grew odek serve by {grown} KiB");
    drop(idle);
    drop(stalled);
    // And runs go on as before.
    let again = served.start_run(json!({"task": "again"})).await;
    assert_eq!(served.wait_finished(&again).await["outcome"], "success");
}
