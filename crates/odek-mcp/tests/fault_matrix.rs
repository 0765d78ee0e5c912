//! The MCP client's fault matrix (issue 7, `mcp-client.md` §7–§13): one case per way a real
//! fixture server process can misbehave — it crashes mid-call, hangs, closes stdout but keeps
//! running, writes junk or a 1 GiB line, drips one byte per second, floods stderr, answers under
//! wrong, duplicate, string or null ids, sends requests of its own. Each case asserts the spec's
//! exact outcome, an explicit (generous) deadline, and that no process or file descriptor
//! outlives the hub; a last case makes 10,000 calls and checks that descriptors and memory stay
//! flat.
//!
//! Every case that is not about the process odek runs also runs over Streamable HTTP (issue 19),
//! where the fixture writes what it would write to stdout on the event stream of the request:
//! there the hub's shutdown must also have closed every connection to the server. The HTTP
//! analogue of a crash is a server that goes away mid-call and comes back knowing no session
//! ([`fault_http_server_dies_mid_call_and_comes_back`]). Stdio only, each saying why: stdout
//! closed under a running process, a process that ignores stdin EOF, and a stderr flood.
//!
//! The cases count this process's descriptors and children, so they run one at a time
//! ([`isolated`]).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use odek_mcp::{CallOptions, McpEvent, McpHub};
use support::{Fixture, Recorder, Transport, call, spec, start, stderr_lines_dropped};

support::over_both_transports!(
    sync:
    fault_server_hangs,
    fault_server_writes_junk,
    fault_server_writes_a_gigabyte_line,
    fault_server_drips_one_byte_per_second,
    fault_server_answers_under_wrong_string_and_null_ids,
    fault_server_answers_twice_under_the_same_id,
    fault_server_sends_requests_of_its_own,
    ten_thousand_calls_leak_nothing,
);

/// The matrix cases measure process-wide counts: one case at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A call that ran into the server's 1 s `timeout_seconds` (the limit is named, [beyond]).
const OUTCOME_UNKNOWN_DEADLINE: &str = "mcpclient fx: tools/call: MCP request outcome unknown after dispatch; verify remote state before retrying: context deadline exceeded (timeout_seconds: 1)";
const OUTCOME_UNKNOWN: &str =
    "mcpclient fx: tools/call: MCP request outcome unknown after dispatch; verify remote state before retrying: ";
const SESSION_EXPIRED: &str = "the server ended the session (http 404); the next call starts a new one";
const OUTCOME_UNKNOWN_CLOSED: &str = "mcpclient fx: tools/call: MCP request outcome unknown after dispatch; verify remote state before retrying: connection closed before response received";

/// Open descriptors of this process.
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// What each open descriptor points at, for failure messages.
fn fd_targets() -> Vec<String> {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .map(|entry| format!("{:?}", std::fs::read_link(entry.path()).unwrap_or_default()))
        .collect()
}

/// Pids whose parent is this process, zombies included (an unreaped child is a leak too).
fn children() -> BTreeSet<u32> {
    let me = std::process::id();
    let mut pids = BTreeSet::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // `pid (comm) state ppid …`; comm may hold spaces and parentheses: split at the last ')'.
        let Some((_, rest)) = stat.rsplit_once(") ") else { continue };
        let ppid = rest.split_whitespace().nth(1).and_then(|field| field.parse::<u32>().ok());
        if ppid == Some(me) {
            pids.insert(pid);
        }
    }
    pids
}

/// A `/proc/self/status` field in KiB (`VmRSS:`, `VmHWM:`).
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|line| line.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Whether `pid` exists (a zombie does: only a reaped process is gone).
fn alive(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

/// Runs one case alone, on a runtime of its own, and checks that once the runtime is gone this
/// process holds exactly the descriptors and children it held before, and that no process of
/// the case's fixture is left (an HTTP fixture's server, the test's own, is stopped first, after
/// the check that the shut-down hub let go of every connection to it while the runtime still
/// ran). Runtimes of other tests would skew the counts, so cases take [`SERIAL`] before building
/// theirs.
fn isolated<Fut: std::future::Future<Output = Fixture>>(case: impl FnOnce() -> Fut) {
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    // Tokio's process-wide signal registry is created once, on the first child, and kept.
    static WARM_UP: std::sync::Once = std::sync::Once::new();
    WARM_UP.call_once(|| {
        runtime().block_on(async { tokio::process::Command::new("true").status().await.unwrap() });
    });
    let (fds, kids) = (open_fds(), children());
    let runtime = runtime();
    let mut fixture = runtime.block_on(async {
        let fixture = case().await;
        fixture.wait_until_the_client_let_go().await;
        fixture
    });
    drop(runtime);
    fixture.stop_http_server();
    // Dropping the runtime closed everything it owned; a loaded machine gets a bounded moment
    // to finish reaping before this fails. Nothing notifies us, so poll.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !(open_fds() <= fds && children().is_subset(&kids) && fixture.processes().is_empty()) {
        assert!(
            Instant::now() < deadline,
            "leaked: fds {fds} → {} {:?}, children {kids:?} → {:?}, fixture processes {:?}",
            open_fds(),
            fd_targets(),
            children(),
            fixture.processes()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn assert_within(started: Instant, limit: Duration, what: &str) {
    let took = started.elapsed();
    assert!(took < limit, "{what} took {took:?}, over its deadline of {limit:?}");
}

fn restarted(recorder: &Recorder) -> Vec<McpEvent> {
    recorder.events().into_iter().filter(|event| matches!(event, McpEvent::ServerRestarted { .. })).collect()
}

#[test]
fn fault_server_crashes_mid_call() {
    isolated(|| async {
        let fixture = Fixture::new(&[]);
        let started = Instant::now();
        let (hub, recorder) = start(vec![spec("fx", &fixture.entry)]).await;
        let first: i32 = call(&hub, "fx__pid", "").await.unwrap().parse().unwrap();
        assert_eq!(call(&hub, "fx__exit_mid_call", r#"{"code":7}"#).await.unwrap_err(), OUTCOME_UNKNOWN_CLOSED);
        let second: i32 = call(&hub, "fx__pid", "").await.unwrap().parse().unwrap();
        assert_ne!(first, second);
        assert!(!alive(first), "the crashed process {first} was reaped");
        // Killed by a signal: the exit status is 128 + the signal.
        assert_eq!(call(&hub, "fx__kill_self", "").await.unwrap_err(), OUTCOME_UNKNOWN_CLOSED);
        assert_eq!(call(&hub, "fx__echo", r#"{"text":"back"}"#).await.unwrap(), "back");
        assert_eq!(
            restarted(&recorder),
            vec![
                McpEvent::ServerRestarted { server: "fx".into(), restarts: 1, exit_status: Some(7) },
                McpEvent::ServerRestarted { server: "fx".into(), restarts: 2, exit_status: Some(137) },
            ]
        );
        hub.shutdown().await;
        assert_within(started, Duration::from_secs(20), "crash mid-call");
        fixture
    });
}

fn fault_server_hangs(transport: Transport) {
    isolated(|| async {
        let mut fixture = Fixture::over(transport, &[]);
        fixture.entry.timeout_seconds = 1;
        let (hub, recorder) = start(vec![spec("fx", &fixture.entry)]).await;
        let pid: i32 = call(&hub, "fx__pid", "").await.unwrap().parse().unwrap();
        // SIGSTOP: the process reads nothing, writes nothing and cannot notice stdin EOF.
        let started = Instant::now();
        assert_eq!(call(&hub, "fx__stop_self", "").await.unwrap_err(), OUTCOME_UNKNOWN_DEADLINE);
        assert_within(started, Duration::from_secs(5), "a call to a hung server (timeout 1 s)");
        // Still no answer, still bounded by the server timeout; a hang is not a crash.
        let started = Instant::now();
        assert_eq!(call(&hub, "fx__echo", r#"{"text":"x"}"#).await.unwrap_err(), OUTCOME_UNKNOWN_DEADLINE);
        assert_within(started, Duration::from_secs(5), "a second call to a hung server");
        assert!(restarted(&recorder).is_empty());
        assert!(alive(pid));
        // Shutdown: stdin closed, 1 s for the writer, 5 s for the exit, then SIGKILL; over HTTP
        // the DELETE gets 1 s.
        let started = Instant::now();
        hub.shutdown().await;
        assert_within(started, Duration::from_secs(15), "shutting down a hung server");
        if transport == Transport::Stdio {
            assert!(!alive(pid), "the hung process {pid} was killed and reaped");
        }
        fixture
    });
}

/// The server goes away over HTTP: its process exits mid-call, so the exchange breaks and
/// nothing listens any more (an HTTP server is not odek's to restart); then a new process serves
/// the port, knowing none of the old sessions. Whichever meets its 404 first — a call, or the
/// standalone stream reconnecting — the server is re-initialised exactly once, however many
/// calls wait for it, and `mcp_server_restarted` has no exit status.
#[test]
fn fault_http_server_dies_mid_call_and_comes_back() {
    isolated(|| async {
        let mut fixture = Fixture::over(Transport::Http, &[]);
        let started = Instant::now();
        let (hub, recorder) = start(vec![spec("fx", &fixture.entry)]).await;
        let hub = Arc::new(hub);
        let first: i32 = call(&hub, "fx__pid", "").await.unwrap().parse().unwrap();
        let broken = call(&hub, "fx__exit_mid_call", r#"{"code":7}"#).await.unwrap_err();
        assert!(broken.starts_with(&format!("{OUTCOME_UNKNOWN}http: ")), "{broken}");
        fixture.wait_until_the_client_let_go().await;
        let refused = call(&hub, "fx__echo", r#"{"text":"x"}"#).await.unwrap_err();
        assert!(refused.starts_with("mcpclient fx: tools/call: MCP request not dispatched: connect: "), "{refused}");
        assert!(restarted(&recorder).is_empty(), "nothing to restart while nothing listens");

        fixture.restart_http_server();
        let expired = [
            format!("{OUTCOME_UNKNOWN}{SESSION_EXPIRED}"),
            format!("mcpclient fx: tools/call: MCP request not dispatched: {SESSION_EXPIRED}"),
        ];
        for outcome in concurrent_pid_calls(&hub, 8).await {
            assert!(
                outcome.as_ref().is_ok_and(|pid| *pid != first)
                    || outcome.as_ref().is_err_and(|error| expired.contains(error)),
                "{outcome:?}"
            );
        }
        let pids: BTreeSet<i32> = concurrent_pid_calls(&hub, 8).await.into_iter().map(Result::unwrap).collect();
        assert_eq!(pids.len(), 1, "one process serves them all: {pids:?}");
        assert!(!pids.contains(&first));
        assert_eq!(
            restarted(&recorder),
            vec![McpEvent::ServerRestarted { server: "fx".into(), restarts: 1, exit_status: None }]
        );
        hub.shutdown().await;
        assert_within(started, Duration::from_secs(20), "a server that dies and comes back");
        fixture
    });
}

/// `count` calls of `fx__pid` at once, each its pid or its error.
async fn concurrent_pid_calls(hub: &Arc<McpHub>, count: usize) -> Vec<Result<i32, String>> {
    let calls: Vec<_> = (0..count)
        .map(|_| {
            let hub = Arc::clone(hub);
            tokio::spawn(async move { call(&hub, "fx__pid", "").await.map(|pid| pid.parse().unwrap()) })
        })
        .collect();
    let mut outcomes = Vec::new();
    for outcome in calls {
        outcomes.push(outcome.await.unwrap());
    }
    outcomes
}

/// Stdio only: over HTTP stdout is not the transport (a server that drops the connection is
/// [`fault_http_server_dies_mid_call_and_comes_back`]).
#[test]
fn fault_server_closes_stdout_but_keeps_running() {
    isolated(|| async {
        let fixture = Fixture::new(&[]);
        let (hub, recorder) = start(vec![spec("fx", &fixture.entry)]).await;
        let first: i32 = call(&hub, "fx__pid", "").await.unwrap().parse().unwrap();
        let started = Instant::now();
        assert_eq!(call(&hub, "fx__close_stdout", "").await.unwrap_err(), OUTCOME_UNKNOWN_CLOSED);
        assert_within(started, Duration::from_secs(5), "noticing stdout EOF");
        recorder.wait_for_line(|line| line == "[fx] odek-fixture-server: stdout closed; still running").await;
        assert!(alive(first), "the process runs on without its stdout");
        // The dead connection is replaced: the old process is closed (it exits at stdin EOF) and
        // reaped before the new one serves the call.
        let second: i32 = call(&hub, "fx__pid", "").await.unwrap().parse().unwrap();
        assert_ne!(first, second);
        assert!(!alive(first), "the old process {first} was closed and reaped by the restart");
        assert_eq!(
            restarted(&recorder),
            vec![McpEvent::ServerRestarted { server: "fx".into(), restarts: 1, exit_status: Some(0) }]
        );
        hub.shutdown().await;
        assert_within(started, Duration::from_secs(20), "close-stdout case");
        fixture
    });
}

/// Stdio only: about the shutdown sequence of a process odek runs.
#[test]
fn fault_server_closes_stdout_and_ignores_stdin_eof() {
    isolated(|| async {
        let fixture = Fixture::new(&["--mode", "ignore-stdin-eof"]);
        let (hub, _) = start(vec![spec("fx", &fixture.entry)]).await;
        let pid: i32 = call(&hub, "fx__pid", "").await.unwrap().parse().unwrap();
        assert_eq!(call(&hub, "fx__close_stdout", "").await.unwrap_err(), OUTCOME_UNKNOWN_CLOSED);
        assert!(alive(pid));
        // Only SIGKILL ends it: the shutdown sequence escalates after its 1 s + 5 s grace.
        let started = Instant::now();
        hub.shutdown().await;
        assert_within(started, Duration::from_secs(15), "shutting down a server that ignores stdin EOF");
        assert!(!alive(pid), "process {pid} survived shutdown");
        fixture
    });
}

fn fault_server_writes_junk(transport: Transport) {
    isolated(|| async {
        // Before every response: a non-JSON line, an array, a number, a blank line, and responses
        // under the ids "N", null, N.0, Ne0 and 999999 (see the fixture's --help); over HTTP,
        // one event each on the request's stream.
        let fixture = Fixture::over(transport, &["--mode", "junk-stdout"]);
        let started = Instant::now();
        let (hub, _) = start(vec![spec("fx", &fixture.entry)]).await;
        for index in 0..20 {
            let text = format!("clean {index}");
            assert_eq!(call(&hub, "fx__echo", &format!(r#"{{"text":"{text}"}}"#)).await.unwrap(), text);
        }
        hub.shutdown().await;
        assert_within(started, Duration::from_secs(20), "junk on stdout");
        fixture
    });
}

/// Over stdio the line closes the connection for good; over HTTP it fails its call alone.
fn fault_server_writes_a_gigabyte_line(transport: Transport) {
    isolated(|| async {
        let fixture = Fixture::over(transport, &[]);
        let started = Instant::now();
        let (hub, recorder) = start(vec![spec("fx", &fixture.entry)]).await;
        // Reset the peak-RSS mark, so the check below is about this line alone (on kernels
        // without the reset it stays the process's lifetime peak, a stricter bound).
        let _ = std::fs::write("/proc/self/clear_refs", "5");
        support::assert_an_oversized_answer_fails_by_the_transport_s_rule(&hub, transport, 1 << 30, 10_485_760).await;
        assert!(restarted(&recorder).is_empty(), "an oversized line is never restarted");
        // The reader held at most max_response_bytes of the line: this process's peak resident
        // memory never came near the gigabyte the server tried to send.
        let peak_mib = status_kib("VmHWM:") / 1024;
        assert!(peak_mib < 256, "peak RSS {peak_mib} MiB: the line was buffered");
        hub.shutdown().await;
        assert_within(started, Duration::from_secs(30), "a 1 GiB line");
        fixture
    });
}

fn fault_server_drips_one_byte_per_second(transport: Transport) {
    isolated(|| async {
        let mut fixture = Fixture::over(transport, &[]);
        fixture.entry.timeout_seconds = 2;
        let (hub, recorder) = start(vec![spec("fx", &fixture.entry)]).await;
        // Byte by byte but quick enough: the line is assembled exactly.
        let started = Instant::now();
        let text = call(&hub, "fx__drip", r#"{"text":"drop by drop","interval_ms":5}"#).await.unwrap();
        assert_eq!(text, "drop by drop");
        assert_within(started, Duration::from_secs(10), "a fast drip");
        // One byte per second: the server timeout ends the wait, whatever trickles in.
        let started = Instant::now();
        assert_eq!(
            call(&hub, "fx__drip", r#"{"interval_ms":1000}"#).await.unwrap_err(),
            OUTCOME_UNKNOWN_DEADLINE.replace("(timeout_seconds: 1)", "(timeout_seconds: 2)")
        );
        assert_within(started, Duration::from_secs(6), "a one-byte-per-second reply (timeout 2 s)");
        assert!(restarted(&recorder).is_empty());
        // The drip still holds the server's stdout; shutdown closes stdin, and the server exits
        // (its running call abandoned after at most 5 s) or is killed.
        let started = Instant::now();
        hub.shutdown().await;
        assert_within(started, Duration::from_secs(15), "shutting down a dripping server");
        fixture
    });
}

/// Stdio only: an HTTP server has no stderr odek reads (§14).
#[test]
fn fault_server_floods_stderr() {
    isolated(|| async {
        let fixture = Fixture::new(&[]);
        let started = Instant::now();
        let (hub, recorder) = start(vec![spec("fx", &fixture.entry)]).await;
        // 10 000 lines of 10 000 bytes (100 MB) while calls go on; the reply waits for the last line.
        let flood = call(&hub, "fx__stderr_flood", r#"{"lines":10000,"line_bytes":10000,"wait":true}"#);
        let (flood, echo) = tokio::join!(flood, call(&hub, "fx__echo", r#"{"text":"meanwhile"}"#));
        assert_eq!(flood.unwrap(), "stderr flooded");
        assert_eq!(echo.unwrap(), "meanwhile");
        let forwarded = recorder
            .wait_until(|recorder| {
                let lines = recorder.lines();
                let dropped = stderr_lines_dropped(&lines);
                let flood: Vec<String> = lines.into_iter().filter(|line| line.starts_with("[fx] flood ")).collect();
                (flood.len() as u64 + dropped == 10_000).then_some(flood)
            })
            .await;
        for line in &forwarded {
            // Each forwarded line is cut to 4096 bytes at a character boundary, `…` appended.
            let body = line.strip_prefix("[fx] ").unwrap();
            assert!(body.len() <= 4096 + '…'.len_utf8() && body.ends_with('…'), "{} bytes", body.len());
        }
        hub.shutdown().await;
        assert_within(started, Duration::from_secs(60), "a 100 MB stderr flood");
        fixture
    });
}

fn fault_server_answers_under_wrong_string_and_null_ids(transport: Transport) {
    isolated(|| async {
        let mut fixture = Fixture::over(transport, &[]);
        fixture.entry.timeout_seconds = 1;
        let (hub, _) = start(vec![spec("fx", &fixture.entry)]).await;
        let hub = Arc::new(hub);
        let started = Instant::now();
        // No frame under any of these ids may be taken for the call's answer: each call waits for
        // its own id until the server timeout. Over HTTP the server ends the request's stream
        // once its handler is done, the answer never sent: the call fails as soon as the stream
        // (resumed once) ends, as over a closed pipe.
        let unanswered = match transport {
            Transport::Stdio => OUTCOME_UNKNOWN_DEADLINE,
            Transport::Http => OUTCOME_UNKNOWN_CLOSED,
        };
        let forms = ["string", "null", "fractional", "float", "exponent", "wrong", "missing"];
        let calls: Vec<_> = forms
            .iter()
            .map(|form| {
                let hub = Arc::clone(&hub);
                let args = format!(r#"{{"form":"{form}"}}"#);
                tokio::spawn(async move { call(&hub, "fx__reply_with_id", &args).await })
            })
            .collect();
        for (form, outcome) in forms.iter().zip(calls) {
            assert_eq!(outcome.await.unwrap().unwrap_err(), unanswered, "form {form}");
        }
        assert_within(started, Duration::from_secs(6), "seven misaddressed replies (timeout 1 s, concurrent)");
        assert_eq!(call(&hub, "fx__echo", r#"{"text":"still routed"}"#).await.unwrap(), "still routed");
        hub.shutdown().await;
        fixture
    });
}

fn fault_server_answers_twice_under_the_same_id(transport: Transport) {
    isolated(|| async {
        let fixture = Fixture::over(transport, &[]);
        let started = Instant::now();
        let (hub, _) = start(vec![spec("fx", &fixture.entry)]).await;
        for index in 0..10 {
            let text = format!("once {index}");
            let args = format!(r#"{{"text":"{text}","copies":3}}"#);
            assert_eq!(call(&hub, "fx__duplicate_reply", &args).await.unwrap(), text);
            // The copies belong to a finished id: dropped, never handed to the next call.
            let next = format!("next {index}");
            assert_eq!(call(&hub, "fx__echo", &format!(r#"{{"text":"{next}"}}"#)).await.unwrap(), next);
        }
        hub.shutdown().await;
        assert_within(started, Duration::from_secs(20), "duplicate replies");
        fixture
    });
}

fn fault_server_sends_requests_of_its_own(transport: Transport) {
    isolated(|| async {
        // During the handshake: list_changed, a log message and a ping. Before every call: pings
        // (one with a string id, one reusing the call's own id) and sampling/createMessage; each
        // call is answered only once odek replied correctly (over HTTP: in POSTs of its own).
        let fixture = Fixture::over(
            transport,
            &["--mode", "early-notifications,ping-before-call,unknown-request-before-call,ping-with-call-id"],
        );
        let started = Instant::now();
        let (hub, _) = start(vec![spec("fx", &fixture.entry)]).await;
        for index in 0..10 {
            let text = format!("answered {index}");
            assert_eq!(call(&hub, "fx__echo", &format!(r#"{{"text":"{text}"}}"#)).await.unwrap(), text);
        }
        hub.shutdown().await;
        assert_within(started, Duration::from_secs(20), "server-initiated requests");
        fixture
    });
}

/// 10,000 sequential calls through one connection: descriptors exactly flat, resident memory
/// within a small fixed slack of where it stood after a warm-up.
fn ten_thousand_calls_leak_nothing(transport: Transport) {
    const WARM_UP: usize = 1_000;
    const CALLS: usize = 10_000;
    /// Allowed growth of resident memory from the warm-up to the end: 8 MiB (in KiB).
    const RSS_SLACK_KIB: u64 = 8 * 1024;
    isolated(|| async {
        let fixture = Fixture::over(transport, &[]);
        let (hub, _) = start(vec![spec("fx", &fixture.entry)]).await;
        run_echo_calls(&hub, 0..WARM_UP).await;
        let (fds_before, rss_before) = (open_fds(), status_kib("VmRSS:"));
        let started = Instant::now();
        run_echo_calls(&hub, WARM_UP..CALLS).await;
        let took = started.elapsed();
        let (fds_after, rss_after) = (open_fds(), status_kib("VmRSS:"));
        eprintln!(
            "ten_thousand_calls_leak_nothing ({transport:?}): {} calls after a {WARM_UP}-call warm-up in {took:?}; \
         fds {fds_before} -> {fds_after}; RSS {rss_before} KiB -> {rss_after} KiB",
            CALLS - WARM_UP
        );
        assert_eq!(fds_after, fds_before, "descriptors grew over {CALLS} calls");
        assert!(
            rss_after <= rss_before + RSS_SLACK_KIB,
            "RSS grew from {rss_before} KiB to {rss_after} KiB over {CALLS} calls"
        );
        assert_eq!(call(&hub, "fx__count_calls", "").await.unwrap(), (CALLS + 1).to_string(), "one process served all");
        hub.shutdown().await;
        fixture
    });
}

async fn run_echo_calls(hub: &McpHub, range: std::ops::Range<usize>) {
    let options = CallOptions::default();
    for index in range {
        let text = format!("call {index}");
        let out = hub.call("fx__echo", &format!(r#"{{"text":"{text}"}}"#), &options).await.unwrap();
        assert_eq!(out.text, text);
    }
}
