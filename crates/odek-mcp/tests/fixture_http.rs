//! The contract fixture server over Streamable HTTP (`odek-fixture-server --http`), through the
//! same client pipeline as over stdio (issue 19): the reference tools give the same text, the
//! truncation notice is exact, artifact refs are verified against the configured roots (and
//! refused without one), progress keeps a slow call alive, and silence times out.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use odek_mcp::server_config::ServerEntry;
use odek_mcp::{ApproveAll, CallOptions, McpHub};
use odek_test_support::listening::ListeningServer;
use support::{Recorder, call, options, spec};

/// The fixture serving HTTP on a port the kernel picks, with its own artifact directory.
struct HttpFixture {
    server: ListeningServer,
    artifacts: tempfile::TempDir,
}

impl HttpFixture {
    fn start(args: &[&str]) -> HttpFixture {
        let artifacts = tempfile::tempdir().unwrap();
        let mut command = Command::new(odek_test_support::fixture_server());
        command.args(["--http", "127.0.0.1:0", "--artifact-dir"]).arg(artifacts.path()).args(args);
        HttpFixture { server: ListeningServer::start(command), artifacts }
    }

    fn entry(&self, with_root: bool) -> ServerEntry {
        let roots = if with_root { vec![self.artifacts.path().to_string_lossy().into_owned()] } else { Vec::new() };
        ServerEntry { url: Some(self.server.url.clone()), artifact_roots: roots, ..ServerEntry::default() }
    }
}

async fn hub(entry: ServerEntry) -> McpHub {
    let recorder = Arc::new(Recorder::default());
    McpHub::start(vec![spec("fx", &entry)], options(&recorder, Arc::new(ApproveAll))).await.unwrap()
}

#[tokio::test]
async fn the_reference_tools_answer_over_http_as_over_stdio() {
    let fixture = HttpFixture::start(&[]);
    let hub = hub(ServerEntry { max_result_chars: 1000, ..fixture.entry(true) }).await;
    assert_eq!(call(&hub, "fx__echo", r#"{"text":"hello over http"}"#).await.unwrap(), "hello over http");

    let out = hub.call("fx__large_result", r#"{"chars":5000}"#, &CallOptions::default()).await.unwrap();
    let notice = "\n[odek: result truncated — server \"fx\" tool \"large_result\" produced 5000 chars, exceeding the configured max_result_chars=1000; the full result is available via the retained artifact references, if any]";
    // The notice and what is kept of the text fill max_result_chars exactly.
    assert_eq!(out.text, format!("{}{notice}", "x".repeat(1000 - notice.chars().count())));

    let arguments = r#"{"content":"hello artifact\n","summary":"Full CI results","text":"Analyzed."}"#;
    let out = hub.call("fx__artifact_result", arguments, &CallOptions::default()).await.unwrap();
    assert_eq!(out.artifacts.len(), 1);
    assert!(out.text.starts_with("Analyzed.\n- artifact \"report-1\" (text/plain, 15 bytes, sha256 "), "{}", out.text);
    assert!(!out.text.contains(fixture.artifacts.path().to_string_lossy().as_ref()), "no path reaches the model");

    let traversal = call(&hub, "fx__bad_artifact", r#"{"kind":"traversal"}"#).await.unwrap_err();
    assert!(traversal.starts_with("mcpclient fx: tool bad_artifact: artifact ref rejected: "), "{traversal}");
    hub.shutdown().await;
}

/// A remote server's `file://` refs are refused unless a root is configured, as for stdio.
#[tokio::test]
async fn artifact_refs_from_a_remote_server_need_a_configured_root_red() {
    let fixture = HttpFixture::start(&[]);
    let hub = hub(fixture.entry(false)).await;
    let arguments = r#"{"content":"x","summary":"s","text":"t"}"#;
    let error = call(&hub, "fx__artifact_result", arguments).await.unwrap_err();
    assert!(error.starts_with("mcpclient fx: tool artifact_result: artifact ref rejected: "), "{error}");
    hub.shutdown().await;
}

#[tokio::test]
async fn progress_keeps_a_slow_call_alive_and_silence_times_out() {
    let fixture = HttpFixture::start(&[]);
    let hub = hub(ServerEntry { timeout_seconds: 1, ..fixture.entry(true) }).await;
    let started = std::time::Instant::now();
    let slow = call(&hub, "fx__slow", r#"{"ms":2500,"progress_every_ms":200}"#).await;
    assert!(slow.is_ok(), "{slow:?}");
    let error = call(&hub, "fx__slow", r#"{"ms":5000}"#).await.unwrap_err();
    assert!(error.ends_with("context deadline exceeded"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(call(&hub, "fx__echo", r#"{"text":"still here"}"#).await.unwrap(), "still here");
    hub.shutdown().await;
}
