//! The stdio side of the probe: it spawns the server with the client's own [`spawn_server`] (no
//! shell, own process group, the allowlisted environment, stderr forwarded as `[<server>]
//! <line>`), reads stdout through the client's bounded line reader and writes and reads frames
//! with the client's `wire` module, and — unlike the client, which skips what it cannot route —
//! keeps a [`Transcript`] of every line that is not a JSON-RPC message and of every response
//! that answers nothing. Requests are matched strictly by integer id; server-initiated requests
//! are answered as odek answers them.
//!
//! Start at [`StdioProbe::spawn`], [`StdioProbe::requests`] and [`StdioProbe::close`].

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use odek_mcp::bounded_lines::{BoundedLineReader, LineError, Overflow};
use odek_mcp::process::{ServerCommand, ServerProcess, SpawnError, exit_status, kill_process_group, spawn_server};
use odek_mcp::wire::{
    Message, Params, ResultFrame, RpcError, encode_cancelled, encode_request, integer_id, parse_object, progress_token,
    server_request_reply,
};
use odek_mcp::{EXIT_GRACE, PROGRESS_CAP, StderrObserver};
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{Answer, Exit, Failure, Offender, Transcript, excerpt, only_answer};

/// Lines the stdout reader may queue ahead of the probe before it waits: with lines of up to
/// `max_response_bytes`, the probe holds at most this many plus one.
const STDOUT_QUEUE_LINES: usize = 4;

/// What the stdout reader hands the probe.
enum Incoming {
    Line(Vec<u8>),
    /// A line did not fit in `max_response_bytes`; the reader stopped.
    TooLong {
        limit: usize,
    },
    Eof,
}

/// How to start the server.
#[derive(Debug, Clone)]
pub struct StdioLaunch {
    pub server: String,
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub max_response_bytes: usize,
    /// How long a write to the server's stdin may block (a server that stops reading).
    pub write_timeout: Duration,
}

/// One live server process.
pub struct StdioProbe {
    child: Child,
    stdin: Option<ChildStdin>,
    incoming: mpsc::Receiver<Incoming>,
    write_timeout: Duration,
    next_id: i64,
    /// Why the connection is unusable, once it is.
    dead: Option<Failure>,
    /// Ids given up on after their timeout: a late reply to one is no violation.
    abandoned: HashSet<i64>,
    /// The step being run (`tools/call echo`), named in hygiene evidence; the method when empty.
    pub step: String,
    /// While set, an error response without an id is a reply to the notification just sent.
    idless_replies_answer_notification: bool,
    pub transcript: Transcript,
}

impl std::fmt::Debug for StdioProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioProbe").field("pid", &self.child.id()).field("dead", &self.dead).finish_non_exhaustive()
    }
}

impl StdioProbe {
    /// Starts the process and its stdout and stderr readers; sends nothing yet.
    pub fn spawn(launch: &StdioLaunch, transcript: Transcript) -> Result<StdioProbe, String> {
        let command = ServerCommand { command: &launch.command, args: &launch.args, env: &launch.env, cwd: None };
        let ServerProcess { child, stdin, stdout, .. } =
            spawn_server(&launch.server, command, Arc::new(StderrObserver), None).map_err(|error| match error {
                SpawnError::Start(err) => format!("start {}: {err}", launch.command),
                SpawnError::NoPipes | SpawnError::Sandbox(_) => error.to_string(),
            })?;
        let (sender, incoming) = mpsc::channel(STDOUT_QUEUE_LINES);
        let limit = launch.max_response_bytes;
        tokio::spawn(async move {
            let mut reader = BoundedLineReader::new(stdout, limit, Overflow::Fail);
            loop {
                let item = match reader.next_line().await {
                    Ok(Some(line)) => Incoming::Line(line.bytes),
                    Ok(None) | Err(LineError::Io(_)) => Incoming::Eof,
                    Err(LineError::TooLong { limit }) => Incoming::TooLong { limit },
                };
                let last = !matches!(item, Incoming::Line(_));
                if sender.send(item).await.is_err() || last {
                    return;
                }
            }
        });
        Ok(StdioProbe {
            child,
            stdin: Some(stdin),
            incoming,
            write_timeout: launch.write_timeout,
            next_id: 1,
            dead: None,
            abandoned: HashSet::new(),
            step: String::new(),
            idless_replies_answer_notification: false,
            transcript,
        })
    }

    /// Whether the connection can no longer carry requests.
    pub fn is_dead(&self) -> bool {
        self.dead.is_some()
    }

    /// Writes one message that gets no response (a notification, an answer to the server).
    pub async fn notify(&mut self, line: &[u8]) -> Result<(), Failure> {
        self.write(line).await
    }

    /// Sends `notifications/initialized`, then a ping; an error response without an id that
    /// arrives before the ping's answer is recorded as a reply to the notification.
    pub async fn initialized_then_ping(&mut self, timeout: Duration) -> Result<Answer, Failure> {
        self.notify(odek_mcp::wire::INITIALIZED).await?;
        self.idless_replies_answer_notification = true;
        let ping = only_answer(self.requests("ping", &[Params::Absent], timeout).await);
        self.idless_replies_answer_notification = false;
        ping
    }

    /// Sends several requests of one method in a single write (so they are in flight together)
    /// and waits at most `timeout` for all of them. Returns each request's id and outcome, in
    /// the order sent.
    pub async fn requests(
        &mut self,
        method: &'static str,
        params: &[Params<'_>],
        timeout: Duration,
    ) -> Vec<(i64, Result<Answer, Failure>)> {
        let started = Instant::now();
        let mut deadline = started + timeout;
        let during = if self.step.is_empty() { method.to_owned() } else { self.step.clone() };
        let mut bytes = Vec::new();
        let mut waiting: BTreeMap<i64, usize> = BTreeMap::new();
        let mut outcomes: Vec<(i64, Option<Result<Answer, Failure>>)> = Vec::with_capacity(params.len());
        for (index, params) in params.iter().enumerate() {
            let id = self.next_id;
            self.next_id += 1;
            bytes.extend_from_slice(&encode_request(id, method, *params));
            waiting.insert(id, index);
            outcomes.push((id, None));
        }
        if let Err(failure) = self.write(&bytes).await {
            return outcomes.into_iter().map(|(id, _)| (id, Err(failure.clone()))).collect();
        }
        while !waiting.is_empty() {
            let Some(line) = self.next_line(deadline, &during).await else { break };
            let Some(message) = Message::read(&line).filter(|_| is_json_rpc(&line)) else {
                self.note_not_json_rpc(&line, &during);
                continue;
            };
            let (id, error, result) = match message {
                Message::Request { method, id } => {
                    let _ = self.notify(&server_request_reply(id, &method)).await;
                    continue;
                }
                Message::Notification { method: server_method, params } => {
                    // Only `tools/call` carries a progress token; progress for anything else is
                    // ignored, as odek ignores it.
                    if server_method == "notifications/progress"
                        && method == "tools/call"
                        && params.and_then(progress_token).is_some_and(|token| waiting.contains_key(&token))
                    {
                        // As odek does: progress moves the deadline, up to an hour after dispatch.
                        deadline = (Instant::now() + timeout).min(started + PROGRESS_CAP);
                    }
                    continue;
                }
                Message::Unanswerable => continue,
                Message::Response { id, error, result } => (id, error, result),
            };
            let integer = id.and_then(integer_id);
            if integer.is_some_and(|id| self.abandoned.remove(&id)) {
                continue;
            }
            let Some(slot) = integer.and_then(|id| waiting.remove(&id)) else {
                let offender = Offender { excerpt: excerpt(&line), during: during.clone() };
                if id.is_none() && error.is_some() && self.idless_replies_answer_notification {
                    self.transcript.initialized_replies.push(offender);
                } else {
                    self.transcript.unmatched.note(offender);
                }
                continue;
            };
            let elapsed = started.elapsed();
            let outcome = match error {
                Some(error) => {
                    let RpcError { code, message } = RpcError::read(error);
                    Err(Failure::Rpc { code, message })
                }
                None => Ok(Answer { frame: ResultFrame::new(line, result.unwrap_or(0..0)), elapsed }),
            };
            outcomes[slot].1 = Some(outcome);
        }
        let unanswered = self.dead.clone().unwrap_or(Failure::Timeout(timeout));
        if self.dead.is_none() {
            // As odek does on a deadline: tell the server, and drop a late reply silently.
            for id in waiting.keys() {
                self.abandoned.insert(*id);
                let _ = self.notify(&encode_cancelled(*id, "timeout")).await;
            }
        }
        outcomes.into_iter().map(|(id, outcome)| (id, outcome.unwrap_or_else(|| Err(unanswered.clone())))).collect()
    }

    /// Closes stdin and waits up to 5 s for the process to exit; kills its process group
    /// otherwise. The process is always reaped.
    pub async fn close(mut self) -> (Exit, Transcript) {
        let already = self.child.try_wait().ok().flatten().map(|status| exit_status(&status));
        drop(self.stdin.take());
        let started = Instant::now();
        let exit = match already {
            Some(status) => Exit::AlreadyGone(status),
            None => match tokio::time::timeout(EXIT_GRACE, self.child.wait()).await {
                Ok(Ok(status)) => Exit::Exited { status: exit_status(&status), elapsed: started.elapsed() },
                Ok(Err(_)) | Err(_) => Exit::Killed,
            },
        };
        kill_process_group(self.child.id());
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
        // Lines still queued were written before the exit: they count for hygiene too.
        while let Ok(item) = self.incoming.try_recv() {
            if let Incoming::Line(line) = item {
                self.account_line(&line, "shutdown");
            }
        }
        (exit, self.transcript)
    }

    async fn write(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        if let Some(dead) = &self.dead {
            return Err(dead.clone());
        }
        let Some(stdin) = self.stdin.as_mut() else { return Err(Failure::Closed(None)) };
        let written = tokio::time::timeout(self.write_timeout, async {
            stdin.write_all(bytes).await?;
            stdin.flush().await
        })
        .await;
        let error = match written {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(err)) => err.to_string(),
            Err(_) => format!("the server did not read its stdin for {} s", self.write_timeout.as_secs_f64()),
        };
        let failure = Failure::Write(error);
        self.dead = Some(failure.clone());
        Err(failure)
    }

    /// The next complete stdout line before `deadline`, counted in the transcript; `None` on
    /// timeout or when the connection died (recorded in `dead`).
    async fn next_line(&mut self, deadline: Instant, during: &str) -> Option<Vec<u8>> {
        if self.dead.is_some() {
            return None;
        }
        match tokio::time::timeout_at(deadline, self.incoming.recv()).await {
            Err(_) => None,
            Ok(Some(Incoming::Line(line))) => {
                self.account_line(&line, during);
                Some(line)
            }
            Ok(Some(Incoming::TooLong { limit })) => {
                self.transcript.oversized.get_or_insert((limit, during.to_owned()));
                self.dead = Some(Failure::Oversized(limit));
                None
            }
            Ok(Some(Incoming::Eof) | None) => {
                let status = match tokio::time::timeout(Duration::from_secs(1), self.child.wait()).await {
                    Ok(Ok(status)) => Some(exit_status(&status)),
                    _ => None,
                };
                self.dead = Some(Failure::Closed(status));
                None
            }
        }
    }

    fn account_line(&mut self, line: &[u8], during: &str) {
        self.transcript.lines += 1;
        self.transcript.largest_line = self.transcript.largest_line.max(line.len() + 1);
        if during == "shutdown" && !is_json_rpc(line) {
            self.note_not_json_rpc(line, during);
        }
    }

    fn note_not_json_rpc(&mut self, line: &[u8], during: &str) {
        self.transcript.not_json_rpc.note(Offender { excerpt: excerpt(line), during: during.to_owned() });
    }
}

/// A JSON-RPC 2.0 message: a JSON object whose `jsonrpc` member is `"2.0"`.
fn is_json_rpc(line: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Version<'a> {
        #[serde(borrow)]
        jsonrpc: Option<std::borrow::Cow<'a, str>>,
    }
    parse_object::<Version<'_>>(line).is_ok_and(|version| version.jsonrpc.as_deref() == Some("2.0"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_rpc_lines_need_the_version_member() {
        assert!(is_json_rpc(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
        assert!(!is_json_rpc(br#"{"id":1,"result":{}}"#));
        assert!(!is_json_rpc(b"[1,2]"));
        assert!(!is_json_rpc(b"INFO starting"));
        assert!(!is_json_rpc(b""));
    }
}
