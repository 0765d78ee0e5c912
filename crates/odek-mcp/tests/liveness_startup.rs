//! \[beyond\] Liveness in the MCP client (issue 17 item 1), against the real fixture server: the
//! start-up deadline of a server (spawn, `initialize`, the whole `tools/list`), what a stalled
//! start-up reports and leaves behind, and the activity a progress notification reports.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use odek_mcp::approval::ApproveAll;
use odek_mcp::{McpEvent, McpHub, McpObserver};
use support::*;

/// The old client bounded the handshake only by each request's `timeout_seconds` (30 s here):
/// the start-up deadline ends it, the error says so, and the server process is killed.
#[tokio::test]
async fn an_unanswered_initialize_is_a_startup_stall_red() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().to_string_lossy().into_owned();
    let mut entry = fixture_entry(&["--mode", "no-initialize-reply", "--artifact-dir", &marker]);
    entry.startup_timeout_seconds = 1;
    let started = Instant::now();
    let (err, recorder) = start_err(vec![spec("fx", &entry)]).await;
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    assert_eq!(
        err.to_string(),
        format!(
            "mcp server \"fx\": mcpclient fx: start-up (spawn, initialize, tools/list) did not finish within 1s (startup_timeout_seconds)\n{}",
            odek_mcp::MAKE_OPTIONAL_HINT_ONE
        )
    );
    assert_eq!(err.error_class(), "stalled");
    assert_eq!(err.startup_stall(), Some(Duration::from_secs(1)));
    assert_eq!(recorder.events(), vec![McpEvent::ServerFailed { server: "fx".into(), error_class: "stalled" }]);
    assert!(odek_test_support::processes_mentioning(dir.path()).is_empty(), "the stalled server outlived its start-up");
}

/// The hub's default applies to a server whose entry sets none.
#[tokio::test]
async fn the_hubs_default_bounds_servers_without_their_own_deadline() {
    let entry = fixture_entry(&["--mode", "no-initialize-reply"]);
    let recorder = Arc::new(Recorder::default());
    let options =
        odek_mcp::HubOptions { startup_timeout: Duration::from_secs(1), ..options(&recorder, Arc::new(ApproveAll)) };
    let err = McpHub::start(vec![spec("fx", &entry)], options).await.unwrap_err();
    assert_eq!(err.startup_stall(), Some(Duration::from_secs(1)), "{err}");
}

/// Counts `activity` reports, forwarding everything else to a recorder.
struct CountActivity {
    inner: Arc<Recorder>,
    activity: AtomicUsize,
}

impl McpObserver for CountActivity {
    fn event(&self, event: McpEvent) {
        self.inner.event(event);
    }
    fn warning(&self, server: &str, text: &str) {
        self.inner.warning(server, text);
    }
    fn server_line(&self, server: &str, line: &str) {
        self.inner.server_line(server, line);
    }
    fn activity(&self, _server: &str) {
        self.activity.fetch_add(1, Ordering::Relaxed);
    }
}

#[tokio::test]
async fn progress_notifications_are_reported_as_activity() {
    let recorder = Arc::new(Recorder::default());
    let counter = Arc::new(CountActivity { inner: Arc::clone(&recorder), activity: AtomicUsize::new(0) });
    let options = odek_mcp::HubOptions {
        observer: Arc::clone(&counter) as Arc<dyn McpObserver>,
        ..options(&recorder, Arc::new(ApproveAll))
    };
    let hub = McpHub::start(vec![spec("fx", &fixture_entry(&[]))], options).await.unwrap();
    call(&hub, "fx__slow", r#"{"ms":600,"progress_every_ms":100}"#).await.unwrap();
    hub.shutdown().await;
    assert!(counter.activity.load(Ordering::Relaxed) > 0, "no activity for the progress notifications");
}
