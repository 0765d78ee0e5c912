//! The Streamable HTTP side of the probe: every request goes through odek-mcp's own
//! [`RemoteSession`], so the URL and header rules, the bearer token, redirects never followed,
//! link-local addresses refused, the `max_response_bytes` bound on each JSON body and event
//! stream, the deadlines with progress, answers to server requests, the session id and the
//! closing `DELETE` are exactly odek's. What the client does with an answer it cannot use — drop
//! it and fail the request in its own words — is recorded in the [`Transcript`]: an oversized
//! answer, and answers of another content type or that are not the response to their request.
//!
//! Start at [`HttpProbe::connect`] and [`HttpProbe::requests`].

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use odek_mcp::discovery::answered_protocol_version;
use odek_mcp::remote::Endpoint;
use odek_mcp::remote_session::{RemoteParams, RemoteSession};
use odek_mcp::server_config::SecretValue;
use odek_mcp::wire::{INITIALIZED, Params};
use odek_mcp::{Cause, HttpFailure, RequestFailure, StderrObserver};
use tokio::time::Instant;

use super::{Answer, EVIDENCE_BYTES, Failure, Offender, Transcript, cut};

/// How to reach the server.
#[derive(Debug, Clone)]
pub struct HttpLaunch {
    pub server: String,
    /// The URL and headers, checked by odek's rules (`odek_mcp::remote::check_endpoint`).
    pub endpoint: Endpoint,
    /// The bearer token, sent as `Authorization: Bearer`.
    pub token: Option<SecretValue>,
    /// The deprecated HTTP+SSE transport (`"type": "sse"`).
    pub legacy_sse: bool,
    pub max_response_bytes: usize,
    /// Per-request timeout, moved by progress for `tools/call` as odek moves it.
    pub timeout: Duration,
}

/// One HTTP session with the server.
#[derive(Debug)]
pub struct HttpProbe {
    session: RemoteSession,
    timeout: Duration,
    /// The step being run (`tools/call echo`), named in evidence; the method when empty.
    pub step: String,
    pub transcript: Transcript,
}

impl HttpProbe {
    /// Builds the connection (nothing is sent yet).
    pub fn connect(launch: &HttpLaunch, transcript: Transcript) -> Result<HttpProbe, String> {
        let session = RemoteSession::connect(RemoteParams {
            server: &launch.server,
            endpoint: &launch.endpoint,
            token: launch.token.as_ref(),
            legacy_sse: launch.legacy_sse,
            max_response_bytes: launch.max_response_bytes,
            timeout: launch.timeout,
            observer: Arc::new(StderrObserver),
        })
        .map_err(|error| error.to_string())?;
        Ok(HttpProbe { session, timeout: launch.timeout, step: String::new(), transcript })
    }

    /// Whether the session can no longer carry requests (the server ended it).
    pub fn is_dead(&self) -> bool {
        self.session.is_closed()
    }

    /// Sends every request at once (each its own POST) and waits for all of them; each is
    /// numbered by its position, from 1. After an answered `initialize`, the session is told
    /// the protocol version, as odek tells it.
    pub async fn requests(
        &mut self,
        method: &'static str,
        params: &[Params<'_>],
    ) -> Vec<(i64, Result<Answer, Failure>)> {
        let session = &self.session;
        let started = Instant::now();
        let outcomes = join_all(params.iter().map(|params| async move {
            let outcome = session.request(method, *params).await;
            (outcome, started.elapsed())
        }))
        .await;
        let during = if self.step.is_empty() { method.to_owned() } else { self.step.clone() };
        let mut numbered = Vec::with_capacity(outcomes.len());
        for (position, (outcome, elapsed)) in (1..).zip(outcomes) {
            let outcome = match outcome {
                Ok(frame) => Ok(Answer { frame, elapsed }),
                Err(failure) => Err(self.record(failure, &during)),
            };
            numbered.push((position, outcome));
        }
        if method == "initialize"
            && let Some((_, Ok(answer))) = numbered.first()
        {
            let version = answered_protocol_version(answer.result_value().get("protocolVersion"));
            self.session.set_protocol_version(&version);
            self.transcript.session_issued |= self.session.session_issued();
        }
        numbered
    }

    /// `notifications/initialized`, then the server's standalone stream, as odek's handshake.
    pub async fn initialized(&self) {
        self.session.notify(INITIALIZED).await;
        self.session.open_server_stream();
    }

    /// Ends the session (`DELETE`, at most 1 s).
    pub async fn close(self) -> Transcript {
        self.session.shutdown().await;
        self.transcript
    }

    /// The failure in the probe's words; what says something about the server's answers is
    /// also kept in the transcript.
    fn record(&mut self, failure: RequestFailure, during: &str) -> Failure {
        match failure {
            RequestFailure::NotDispatched(Cause::DeadlineExceeded(_))
            | RequestFailure::OutcomeUnknown(Cause::DeadlineExceeded(_)) => Failure::Timeout(self.timeout),
            RequestFailure::Rpc { code, message } => Failure::Rpc { code, message },
            RequestFailure::Http(HttpFailure::TooLarge { limit }) => {
                self.transcript.oversized.get_or_insert((limit, during.to_owned()));
                Failure::Remote(failure)
            }
            RequestFailure::Http(HttpFailure::ContentType { .. } | HttpFailure::Parse { .. }) => {
                let excerpt = cut(&failure.to_string(), EVIDENCE_BYTES);
                self.transcript.unreadable_answers.note(Offender { excerpt, during: during.to_owned() });
                Failure::Remote(failure)
            }
            other => Failure::Remote(other),
        }
    }
}
