//! First streamed token to stdout (issue 18): how long after a streamed answer's first text
//! token arrives it is on the operator's terminal, for each of the three wire formats.
//!
//! The real `odek repl --stream` runs on a pseudo-terminal (the face that streams answers to
//! stdout) against a raw SSE server on 127.0.0.1. Per turn the server writes its preamble frames,
//! then the frame carrying the token `FIRSTTOKEN ` (the clock starts just before that write),
//! then holds the rest of the stream until the token has been seen. A thread reading the PTY
//! stamps each read; the figure is from the server's write to the read that holds the token:
//! loopback TCP, decoding, the face (redaction, terminal sanitising) and the PTY are all in it.
//! The token ends in white space because the face holds a word until its end, so that a secret
//! split between two deltas is still redacted whole.
//!
//! Run: `cargo bench -p odek-cli --bench first_token`

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/repl_support/mod.rs"]
mod repl_support;
#[path = "../tests/run_support/mod.rs"]
mod run_support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

use repl_support::{PROMPT, Terminal};
use run_support::{API_KEY, Sandbox};
use serde_json::{Value, json};

const RUNS: usize = 30;
const TOKEN: &str = "FIRSTTOKEN ";
const DEADLINE: Duration = Duration::from_secs(30);

/// A wire format: the provider flag, its API key variable, and its stream in three parts.
struct Dialect {
    provider: &'static str,
    key_variable: &'static str,
    preamble: Vec<Value>,
    token: Value,
    rest: Vec<Value>,
    /// Named events (`event: <type>`) or bare `data:` lines ending in `[DONE]`.
    named: bool,
}

fn main() {
    let sandbox = Sandbox::new();
    let target = Duration::from_millis(1);
    let mut all_met = true;
    for dialect in dialects() {
        let (server, arrivals, releases) = serve(dialect.frames(), dialect.named);
        let base_url = format!("http://{}/v1", server.local_addr().unwrap());
        sandbox.global_config(&json!({"base_url": base_url, "model": "bench-model"}));
        let mut command = sandbox.command(&["repl", "--quiet", "--stream", "--provider", dialect.provider]);
        command.env(dialect.key_variable, API_KEY);
        let mut terminal = Terminal::spawn(command);
        let mut samples: Vec<f64> = (0..=RUNS)
            .map(|_| {
                terminal.expect(PROMPT);
                terminal.line("go");
                let seen = terminal.expect_read(TOKEN, DEADLINE);
                let sent = arrivals.recv_timeout(DEADLINE).expect("the server saw no request");
                releases.send(()).unwrap();
                seen.saturating_duration_since(sent).as_secs_f64() * 1000.0
            })
            .collect();
        samples.remove(0);
        terminal.expect(PROMPT);
        terminal.send(b"\x04");
        assert!(terminal.finish().0.success());
        drop(server);
        samples.sort_by(f64::total_cmp);
        let median = samples[samples.len() / 2];
        let p90 = samples[samples.len() * 9 / 10];
        let worst = samples[samples.len() - 1];
        all_met &= worst <= target.as_secs_f64() * 1000.0;
        println!(
            "first token to stdout, --provider {}, {RUNS} turns: best {:.3} ms, median {median:.3} ms, p90 {p90:.3} ms, worst {worst:.3} ms (target: every turn ≤ 1 ms)",
            dialect.provider, samples[0],
        );
    }
    println!("{}", if all_met { "PASS" } else { "FAIL" });
}

fn dialects() -> Vec<Dialect> {
    let chat = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": "bench-model",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let anthropic_usage = json!({"input_tokens": 10, "output_tokens": 1});
    let text_at = |kind: &str, extra: Value| {
        let mut event = json!({"type": kind, "item_id": "msg_1", "output_index": 0, "content_index": 0});
        event.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        event
    };
    let message_item = |status: &str, text: &str| {
        let content =
            if text.is_empty() { json!([]) } else { json!([{"type": "output_text", "text": text, "annotations": []}]) };
        json!({"type": "message", "id": "msg_1", "role": "assistant", "status": status, "content": content})
    };
    let response = |status: &str, output: Value| {
        json!({"id": "resp_bench", "object": "response", "status": status, "model": "bench-model", "output": output,
               "usage": {"input_tokens": 10, "output_tokens": 3, "total_tokens": 13,
                         "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}})
    };
    let answer = format!("{TOKEN}and the rest.");
    vec![
        Dialect {
            provider: "openai",
            key_variable: "ODEK_API_KEY",
            preamble: vec![chat(json!({"role": "assistant"}), Value::Null)],
            token: chat(json!({"content": TOKEN}), Value::Null),
            rest: vec![chat(json!({"content": "and the rest."}), Value::Null), chat(json!({}), json!("stop"))],
            named: false,
        },
        Dialect {
            provider: "anthropic",
            key_variable: "ANTHROPIC_API_KEY",
            preamble: vec![
                json!({"type": "message_start", "message": {"id": "msg_bench", "type": "message", "role": "assistant",
                       "model": "bench-model", "content": [], "stop_reason": null, "stop_sequence": null,
                       "usage": anthropic_usage}}),
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ],
            token: json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": TOKEN}}),
            rest: vec![
                json!({"type": "content_block_delta", "index": 0,
                       "delta": {"type": "text_delta", "text": "and the rest."}}),
                json!({"type": "content_block_stop", "index": 0}),
                json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                       "usage": {"output_tokens": 3}}),
                json!({"type": "message_stop"}),
            ],
            named: true,
        },
        Dialect {
            provider: "openai-responses",
            key_variable: "ODEK_API_KEY",
            preamble: vec![
                json!({"type": "response.created", "response": response("in_progress", json!([]))}),
                json!({"type": "response.output_item.added", "output_index": 0,
                       "item": message_item("in_progress", "")}),
                text_at("response.content_part.added", json!({"part": {"type": "output_text", "text": ""}})),
            ],
            token: text_at("response.output_text.delta", json!({"delta": TOKEN})),
            rest: vec![
                text_at("response.output_text.delta", json!({"delta": "and the rest."})),
                text_at("response.output_text.done", json!({"text": answer})),
                json!({"type": "response.output_item.done", "output_index": 0,
                       "item": message_item("completed", &answer)}),
                json!({"type": "response.completed", "response": response("completed",
                       json!([message_item("completed", &answer)]))}),
            ],
            named: true,
        },
    ]
}

impl Dialect {
    /// The preamble, the token frame and the rest, as SSE text.
    fn frames(&self) -> [String; 3] {
        let frame = |event: &Value| {
            if self.named {
                format!("event: {}\ndata: {event}\n\n", event["type"].as_str().unwrap())
            } else {
                format!("data: {event}\n\n")
            }
        };
        let mut rest: String = self.rest.iter().map(frame).collect();
        if !self.named {
            rest.push_str("data: [DONE]\n\n");
        }
        [self.preamble.iter().map(frame).collect(), frame(&self.token), rest]
    }
}

/// A loopback SSE server answering every request with `frames`: it reports the instant it
/// starts writing the token frame, then waits for a release before the rest.
fn serve(frames: [String; 3], named: bool) -> (TcpListener, Receiver<Instant>, Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let acceptor = listener.try_clone().unwrap();
    let (arrival, arrivals) = channel();
    let (releases, released) = channel::<()>();
    std::thread::spawn(move || {
        for stream in acceptor.incoming() {
            let Ok(stream) = stream else { return };
            if answer(stream, &frames, named, &arrival, &released).is_err() {
                return;
            }
        }
    });
    (listener, arrivals, releases)
}

fn answer(
    stream: TcpStream,
    frames: &[String; 3],
    named: bool,
    arrival: &Sender<Instant>,
    released: &Receiver<()>,
) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut length = 0_usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        if line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let content_type = if named { "text/event-stream; charset=utf-8" } else { "text/event-stream" };
    let mut writer = stream;
    write!(writer, "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\nconnection: close\r\n\r\n{}", frames[0])?;
    writer.flush()?;
    let sent = Instant::now();
    writer.write_all(frames[1].as_bytes())?;
    writer.flush()?;
    if arrival.send(sent).is_err() || released.recv_timeout(DEADLINE).is_err() {
        return Ok(());
    }
    writer.write_all(frames[2].as_bytes())?;
    writer.flush()
}
