//! The recording session `odek ext check` drives, over either transport odek speaks: a stdio
//! server process (`stdio`: the client's spawn, bounded line reader and wire frames, with a
//! transcript of every stdout line) or a Streamable HTTP endpoint (`http`: odek-mcp's own
//! [`odek_mcp::remote_session::RemoteSession`], with what its answers were). [`Probe`] is the
//! one face `observe` drives; what a request got ([`Answer`] or [`Failure`]) and what the
//! transport showed ([`Transcript`]) are the same words for both.
//!
//! Start at [`Probe::open`], [`Probe::requests`] and [`Probe::close`].

mod http;
mod stdio;

use std::time::Duration;

use odek_mcp::discovery::PageSource;
use odek_mcp::wire::{Params, ResultFrame};
use odek_mcp::{Cause, HttpFailure, RequestFailure};
use serde_json::Value;

pub use http::HttpLaunch;
pub use stdio::StdioLaunch;

/// Offending lines or answers kept as evidence; later ones are only counted.
const KEPT_OFFENDERS: usize = 8;
/// Bytes of an offending line kept as evidence.
pub const EVIDENCE_BYTES: usize = 160;

/// One line or answer that broke a rule, cut for evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offender {
    pub excerpt: String,
    /// The request the probe was waiting for when it arrived (`""` when none).
    pub during: String,
}

/// Offenders of one kind: the first few kept, all counted.
#[derive(Debug, Default, Clone)]
pub struct Offenders {
    pub kept: Vec<Offender>,
    pub count: u64,
}

impl Offenders {
    pub(crate) fn note(&mut self, offender: Offender) {
        self.count += 1;
        if self.kept.len() < KEPT_OFFENDERS {
            self.kept.push(offender);
        }
    }

    /// The first offender's excerpt (`""` when none).
    pub fn first_excerpt(&self) -> String {
        self.kept.first().map(|offender| offender.excerpt.clone()).unwrap_or_default()
    }
}

/// What the transport showed across every session of one check run.
#[derive(Debug, Default, Clone)]
pub struct Transcript {
    /// stdio: lines read in full.
    pub lines: u64,
    /// stdio: largest line read in full, newline included.
    pub largest_line: usize,
    /// stdio: lines that are not JSON-RPC messages (blank, not JSON, not an object, no
    /// `jsonrpc`).
    pub not_json_rpc: Offenders,
    /// stdio: responses whose id matches no request in flight (never sent, already answered, or
    /// not an integer).
    pub unmatched: Offenders,
    /// A stdout line (stdio) or one answer's body or event stream (HTTP) exceeded
    /// `max_response_bytes`: the limit and the request it cut off.
    pub oversized: Option<(usize, String)>,
    /// stdio: error responses without an id that arrived while the probe waited for the ping
    /// right after `notifications/initialized`: the server took the notification for a request.
    pub initialized_replies: Vec<Offender>,
    /// HTTP: whether the server issued an `Mcp-Session-Id` on `initialize`.
    pub session_issued: bool,
    /// HTTP: answers odek cannot read as the response to their request (another content type,
    /// a body that does not parse, or one that answers another request); the client's error
    /// text as the excerpt.
    pub unreadable_answers: Offenders,
}

/// How a request ended without an answer, or with an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    Timeout(Duration),
    /// stdio: the process exited or stdout closed; the exit status when it is known.
    Closed(Option<i32>),
    /// stdio: a stdout line exceeded the limit; the connection is unusable.
    Oversized(usize),
    Write(String),
    Rpc {
        code: i64,
        message: String,
    },
    /// HTTP: the client's own failure, in its own words (spec `mcp-client.md` §14).
    Remote(RequestFailure),
}

impl Failure {
    /// Why the server could not be checked at all, when the first request's failure says so:
    /// nothing answers at the URL, or it refused the credentials (401, 403). `None` otherwise,
    /// and always over stdio.
    pub fn unreachable(&self) -> Option<String> {
        match self {
            Failure::Remote(failure @ RequestFailure::NotDispatched(Cause::Connect(_))) => {
                Some(format!("the server could not be reached: {failure}"))
            }
            Failure::Remote(failure @ RequestFailure::Http(HttpFailure::Status { code: 401 | 403, .. })) => {
                Some(format!(
                    "the server refused the request's credentials: {failure}; give the right ones with --token-env VAR or --header 'Authorization: Bearer …' (for a configured server: its token_env or headers)"
                ))
            }
            _ => None,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Timeout(timeout) => write!(f, "no answer within {} s", timeout.as_secs_f64()),
            Failure::Closed(Some(status)) => write!(f, "the server exited (status {status}) without answering"),
            Failure::Closed(None) => f.write_str("stdout closed without an answer"),
            Failure::Oversized(limit) => {
                write!(f, "a stdout line exceeded max_response_bytes ({limit} bytes); the connection was closed")
            }
            Failure::Write(error) => write!(f, "writing the request failed: {error}"),
            Failure::Rpc { code, message } => write!(f, "JSON-RPC error {code}: {message}"),
            Failure::Remote(failure) => failure.fmt(f),
        }
    }
}

/// A successful response and how long it took.
#[derive(Debug)]
pub struct Answer {
    pub frame: ResultFrame,
    pub elapsed: Duration,
}

impl Answer {
    /// The raw JSON of `result` (`null` when absent).
    pub fn result_json(&self) -> &[u8] {
        self.frame.result_json()
    }

    pub fn result_value(&self) -> Value {
        serde_json::from_slice(self.result_json()).unwrap_or(Value::Null)
    }
}

/// How the server's process ended when its stdin was closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// It exited by itself after `elapsed`, with this status.
    Exited { status: i32, elapsed: Duration },
    /// It was still running after the grace period and was killed.
    Killed,
    /// It had already exited before stdin was closed.
    AlreadyGone(i32),
}

/// How to reach the server.
#[derive(Debug, Clone)]
pub enum Launch {
    Stdio(StdioLaunch),
    Http(HttpLaunch),
}

impl Launch {
    /// Whether the server is reached over HTTP (no process).
    pub fn is_remote(&self) -> bool {
        matches!(self, Launch::Http(_))
    }
}

/// One live connection to the server: a process, or an HTTP session.
#[derive(Debug)]
pub enum Probe {
    // Boxed: each carries its transcript, and the two differ widely in size.
    Stdio(Box<stdio::StdioProbe>),
    Http(Box<http::HttpProbe>),
}

impl Probe {
    /// Starts the process and its readers, or builds the HTTP connection; sends nothing yet.
    /// The transcript carries over from an earlier connection of the same run.
    pub fn open(launch: &Launch, transcript: Transcript) -> Result<Probe, String> {
        Ok(match launch {
            Launch::Stdio(launch) => Probe::Stdio(Box::new(stdio::StdioProbe::spawn(launch, transcript)?)),
            Launch::Http(launch) => Probe::Http(Box::new(http::HttpProbe::connect(launch, transcript)?)),
        })
    }

    /// Whether the connection can no longer carry requests.
    pub fn is_dead(&self) -> bool {
        match self {
            Probe::Stdio(probe) => probe.is_dead(),
            Probe::Http(probe) => probe.is_dead(),
        }
    }

    /// Names the step being run (`tools/call echo`) in evidence; the method when empty.
    pub fn set_step(&mut self, step: &str) {
        match self {
            Probe::Stdio(probe) => probe.step = step.to_owned(),
            Probe::Http(probe) => probe.step = step.to_owned(),
        }
    }

    /// Sends one request and waits at most `timeout` for its answer.
    pub async fn request(
        &mut self,
        method: &'static str,
        params: Params<'_>,
        timeout: Duration,
    ) -> Result<Answer, Failure> {
        only_answer(self.requests(method, &[params], timeout).await)
    }

    /// Sends several requests of one method so they are in flight together, and waits at most
    /// `timeout` for each (progress on a `tools/call` moves its deadline, up to an hour after
    /// dispatch, as in odek). Returns each request's number and outcome, in the order sent: its
    /// id on the wire over stdio, its position in the batch over HTTP.
    pub async fn requests(
        &mut self,
        method: &'static str,
        params: &[Params<'_>],
        timeout: Duration,
    ) -> Vec<(i64, Result<Answer, Failure>)> {
        match self {
            Probe::Stdio(probe) => probe.requests(method, params, timeout).await,
            // The session was opened with the same timeout, and applies it as odek does.
            Probe::Http(probe) => probe.requests(method, params).await,
        }
    }

    /// `notifications/initialized`, and over HTTP the server's standalone stream opened after
    /// it, as odek does after the handshake.
    pub async fn initialized(&mut self) {
        match self {
            Probe::Stdio(probe) => {
                let _ = probe.notify(odek_mcp::wire::INITIALIZED).await;
            }
            Probe::Http(probe) => probe.initialized().await,
        }
    }

    /// `notifications/initialized` then a ping; over stdio an error response without an id that
    /// arrives before the ping's answer is recorded as a reply to the notification.
    pub async fn initialized_then_ping(&mut self, timeout: Duration) -> Result<Answer, Failure> {
        match self {
            Probe::Stdio(probe) => probe.initialized_then_ping(timeout).await,
            Probe::Http(probe) => {
                probe.initialized().await;
                self.request("ping", Params::Absent, timeout).await
            }
        }
    }

    /// Ends the connection: closes stdin and reaps the process (how it exited comes back), or
    /// ends the HTTP session (no exit then). The transcript comes back either way.
    pub async fn close(self) -> (Option<Exit>, Transcript) {
        match self {
            Probe::Stdio(probe) => {
                let (exit, transcript) = (*probe).close().await;
                (Some(exit), transcript)
            }
            Probe::Http(probe) => (None, (*probe).close().await),
        }
    }

    /// Carries the transcript of an earlier connection over to this one.
    pub fn continue_transcript(&mut self, transcript: Transcript) {
        match self {
            Probe::Stdio(probe) => probe.transcript = transcript,
            Probe::Http(probe) => probe.transcript = transcript,
        }
    }
}

/// The outcome of a batch of one request.
fn only_answer(mut answers: Vec<(i64, Result<Answer, Failure>)>) -> Result<Answer, Failure> {
    answers.pop().map_or(Err(Failure::Closed(None)), |(_, answer)| answer)
}

/// The `tools/list` pages of a probe, each request waiting at most `timeout`.
pub struct Pages<'p> {
    pub probe: &'p mut Probe,
    pub timeout: Duration,
}

impl PageSource for Pages<'_> {
    type Failure = Failure;

    async fn request_page(&mut self, params: Params<'_>) -> Result<ResultFrame, Failure> {
        self.probe.request("tools/list", params, self.timeout).await.map(|answer| answer.frame)
    }
}

/// At most [`EVIDENCE_BYTES`] of a line, cut at a character boundary with `…` when cut.
pub fn excerpt(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    cut(&text, EVIDENCE_BYTES)
}

/// `text` cut to at most `max_bytes` at a character boundary, `…` appended when cut.
pub fn cut(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_owned();
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\u{2026}", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_cut_at_a_character_boundary() {
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("ab\u{e9}cd", 3), "ab\u{2026}");
        assert_eq!(excerpt(&vec![b'x'; 500]).len(), EVIDENCE_BYTES + "\u{2026}".len());
    }

    #[test]
    fn only_a_refused_connection_or_credentials_make_a_server_unreachable() {
        let remote = |failure| Failure::Remote(failure);
        let connect = remote(RequestFailure::NotDispatched(Cause::Connect("connection refused".into())));
        assert_eq!(
            connect.unreachable().as_deref(),
            Some("the server could not be reached: MCP request not dispatched: connect: connection refused")
        );
        let refused = remote(RequestFailure::Http(HttpFailure::Status { code: 401, body: "no".into() }));
        assert!(
            refused.unreachable().unwrap().starts_with("the server refused the request's credentials: http 401: no; ")
        );
        for other in [
            remote(RequestFailure::Http(HttpFailure::Status { code: 500, body: "oops".into() })),
            remote(RequestFailure::OutcomeUnknown(Cause::ClosedBeforeResponse)),
            Failure::Closed(None),
            Failure::Timeout(Duration::from_secs(1)),
        ] {
            assert_eq!(other.unreachable(), None, "{other}");
        }
    }
}
