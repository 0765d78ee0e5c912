//! Tools that misbehave on request: oversized or huge replies (streamed, never held in memory),
//! exits, kills and freezes, a closed stdout, a reply dripped byte by byte, replies under wrong
//! or repeated ids, RPC errors, mixed content, structured content under a declared output
//! schema, a huge image, log and stderr floods, tool-list changes, a ping to the client, and
//! process introspection for restart tests.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use odek_extension::{CallContext, Content, Error, Server, ToolDef, ToolResponse, arguments};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{Fixture, bind};

/// A run of padding streamed in chunks of this size (64 KiB), borrowed, so streaming a
/// gigabyte allocates nothing per chunk.
static PADDING: [u8; 64 * 1024] = [b'x'; 64 * 1024];

/// Base64 streamed in chunks of this size (64 KiB, a multiple of 4): `A`s, which decode to zero
/// bytes.
static BASE64_PADDING: [u8; 64 * 1024] = [b'A'; 64 * 1024];

/// Closes the JSON a streamed text result opened.
const STREAMED_RESULT_SUFFIX: &str = "\"}],\"isError\":false}}\n";

/// How long ping_client waits for the client's reply.
const PING_DEADLINE: Duration = Duration::from_secs(5);

/// How long exit_mid_call waits for queued output before exiting anyway.
const EXIT_FLUSH_DEADLINE: Duration = Duration::from_secs(1);

/// A 1x1 transparent PNG, base64 (also the fixture's blob resource).
pub(crate) const TINY_PNG_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

pub(crate) fn register(server: Server, fixture: &Arc<Fixture>) -> Server {
    let object = |properties: Value| json!({"type":"object","properties":properties});
    server
        .tool(
            ToolDef::new(
                "oversized_line",
                "Writes one response line of exactly bytes bytes, newline included.",
                json!({"type":"object","properties":{"bytes":{"type":"integer","minimum":0}},"required":["bytes"]}),
            ),
            bind(fixture, oversized_line),
        )
        .tool(
            ToolDef::new(
                "big_text",
                "Returns one text item of exactly bytes bytes.",
                json!({"type":"object","properties":{"bytes":{"type":"integer","minimum":0}},"required":["bytes"]}),
            ),
            bind(fixture, big_text),
        )
        .tool(
            ToolDef::new(
                "exit_mid_call",
                "Exits the process with code without replying.",
                object(json!({"code":{"type":"integer"}})),
            ),
            bind(fixture, exit_mid_call),
        )
        .tool(
            ToolDef::new("kill_self", "Sends SIGKILL to its own process.", object(json!({}))),
            bind(fixture, kill_self),
        )
        .tool(
            ToolDef::new("stop_self", "Sends SIGSTOP to its own process: it hangs.", object(json!({}))),
            bind(fixture, stop_self),
        )
        .tool(
            ToolDef::new(
                "close_stdout",
                "Points stdout at /dev/null (the client sees EOF) and keeps running.",
                object(json!({})),
            ),
            bind(fixture, close_stdout),
        )
        .tool(
            ToolDef::new(
                "drip",
                "Writes a valid reply with text, one byte every interval_ms.",
                object(json!({"text":{"type":"string"},"interval_ms":{"type":"integer","minimum":0}})),
            ),
            bind(fixture, drip),
        )
        .tool(
            ToolDef::new(
                "reply_with_id",
                "Answers under an id derived from the request's by form, never under the request's own.",
                object(json!({"form":{"type":"string"}})),
            ),
            bind(fixture, reply_with_id),
        )
        .tool(
            ToolDef::new(
                "duplicate_reply",
                "Answers with text, copies times under the request's id.",
                object(json!({"text":{"type":"string"},"copies":{"type":"integer","minimum":1}})),
            ),
            bind(fixture, duplicate_reply),
        )
        .tool(
            ToolDef::new(
                "rpc_error",
                "Answers with a JSON-RPC error.",
                object(json!({"code":{"type":"integer"},"message":{"type":"string"}})),
            ),
            bind(fixture, rpc_error),
        )
        .tool(
            ToolDef::new(
                "multi_item",
                "One text item per string, plus an image item.",
                object(json!({"items":{"type":"array","items":{"type":"string"}}})),
            ),
            bind(fixture, multi_item),
        )
        .tool(
            ToolDef::new(
                "structured_result",
                "Returns value as structuredContent, with text as a text item when given.",
                object(json!({"value":{},"text":{"type":"string"}})),
            )
            .with_output_schema(structured_result_schema()),
            bind(fixture, structured_result),
        )
        .tool(
            ToolDef::new(
                "big_image",
                "Returns text (when given) and a PNG image item of bytes decoded bytes.",
                object(json!({"bytes":{"type":"integer"},"text":{"type":"string"}})),
            ),
            bind(fixture, big_image),
        )
        .tool(
            ToolDef::new(
                "log_message",
                "Sends notifications/message with level and data.",
                object(json!({"level":{"type":"string"},"data":{}})),
            ),
            bind(fixture, log_message),
        )
        .tool(
            ToolDef::new(
                "stderr_flood",
                "Writes lines lines of line_bytes bytes to stderr from another thread; with wait, replies once written.",
                object(json!({"lines":{"type":"integer","minimum":0},"line_bytes":{"type":"integer","minimum":0},"wait":{"type":"boolean"}})),
            ),
            bind(fixture, stderr_flood),
        )
        .tool(
            ToolDef::new(
                "mutate_tools",
                "Adds and/or removes a tool, then sends notifications/tools/list_changed.",
                object(json!({"add":{"type":"string"},"remove":{"type":"string"}})),
            ),
            bind(fixture, mutate_tools),
        )
        .tool(
            ToolDef::new("ping_client", "Sends ping to the client and reports the outcome.", object(json!({}))),
            bind(fixture, ping_client),
        )
        .tool(ToolDef::new("pid", "Returns the process id.", object(json!({}))), bind(fixture, pid))
        .tool(
            ToolDef::new("env", "Returns the process environment as sorted NAME=value lines.", object(json!({}))),
            bind(fixture, env),
        )
        .tool(
            ToolDef::new("count_calls", "Returns how many tools/call this process has received.", object(json!({}))),
            bind(fixture, count_calls),
        )
        .tool(
            ToolDef::new(
                "raw_result",
                "Answers with a response whose result is the given JSON value, verbatim.",
                object(json!({"result":{}})),
            ),
            bind(fixture, raw_result),
        )
        .tool(
            ToolDef::new(
                "raw_error",
                "Answers with a response whose error (and, if given, result) are the given JSON values, verbatim.",
                object(json!({"error":{},"result":{}})),
            ),
            bind(fixture, raw_error),
        )
}

#[derive(Deserialize)]
struct BytesArgs {
    bytes: u64,
}

/// The start of a successful one-text-item result for `request_id`, up to the text's opening
/// quote; [`STREAMED_RESULT_SUFFIX`] closes it.
fn streamed_result_prefix(request_id: &Value) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{request_id},"result":{{"content":[{{"type":"text","text":""#)
}

/// Streams a valid result line whose text is `text_bytes` × `x`.
async fn stream_text_result(context: &CallContext, text_bytes: u64) -> Result<(), Error> {
    let stream = context.raw_stream().await?;
    stream.write(streamed_result_prefix(context.request_id()).into_bytes()).await?;
    let mut left = text_bytes;
    while left > 0 {
        let take = PADDING.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        stream.write(&PADDING[..take]).await?;
        left -= take as u64;
    }
    stream.write(STREAMED_RESULT_SUFFIX.as_bytes()).await
}

pub(crate) async fn oversized_line(_: Arc<Fixture>, context: Arc<CallContext>, args: Value) -> ToolResponse {
    let bytes = match arguments::<BytesArgs>(args) {
        Ok(args) => args.bytes,
        Err(response) => return response,
    };
    let framing = (streamed_result_prefix(context.request_id()).len() + STREAMED_RESULT_SUFFIX.len()) as u64;
    let Some(padding) = bytes.checked_sub(framing) else {
        return ToolResponse::error(format!("oversized_line: bytes must be at least {framing} for this request id"));
    };
    match stream_text_result(&context, padding).await {
        Ok(()) => ToolResponse::NoReply,
        Err(error) => ToolResponse::error(format!("oversized_line: {error}")),
    }
}

async fn big_text(_: Arc<Fixture>, context: Arc<CallContext>, args: Value) -> ToolResponse {
    let bytes = match arguments::<BytesArgs>(args) {
        Ok(args) => args.bytes,
        Err(response) => return response,
    };
    match stream_text_result(&context, bytes).await {
        Ok(()) => ToolResponse::NoReply,
        Err(error) => ToolResponse::error(format!("big_text: {error}")),
    }
}

#[derive(Deserialize)]
#[serde(default)]
struct ExitArgs {
    code: i32,
}

impl Default for ExitArgs {
    fn default() -> Self {
        Self { code: 3 }
    }
}

async fn exit_mid_call(_: Arc<Fixture>, context: Arc<CallContext>, args: Value) -> ToolResponse {
    let code = match arguments::<ExitArgs>(args) {
        Ok(args) => args.code,
        Err(response) => return response,
    };
    // Replies already queued for other calls go out first, so only this call is left hanging.
    let _ = tokio::time::timeout(EXIT_FLUSH_DEADLINE, context.flush()).await;
    std::process::exit(code);
}

async fn kill_self(_: Arc<Fixture>, _: Arc<CallContext>, _: Value) -> ToolResponse {
    #[cfg(unix)]
    {
        use nix::sys::signal::{Signal, kill};
        use nix::unistd::Pid;
        match kill(Pid::this(), Signal::SIGKILL) {
            // SIGKILL cannot be caught; the process is gone before this reply is queued.
            Ok(()) => ToolResponse::NoReply,
            Err(error) => ToolResponse::error(format!("kill_self: {error}")),
        }
    }
    #[cfg(not(unix))]
    {
        ToolResponse::error("kill_self needs a Unix system")
    }
}

async fn stop_self(_: Arc<Fixture>, _: Arc<CallContext>, _: Value) -> ToolResponse {
    #[cfg(unix)]
    {
        use nix::sys::signal::{Signal, kill};
        use nix::unistd::Pid;
        match kill(Pid::this(), Signal::SIGSTOP) {
            // Stopped processes run nothing until SIGCONT; only SIGKILL ends it meanwhile.
            Ok(()) => ToolResponse::NoReply,
            Err(error) => ToolResponse::error(format!("stop_self: {error}")),
        }
    }
    #[cfg(not(unix))]
    {
        ToolResponse::error("stop_self needs a Unix system")
    }
}

async fn close_stdout(fixture: Arc<Fixture>, context: Arc<CallContext>, _: Value) -> ToolResponse {
    // What is already queued goes out first, so only this call is left without an answer.
    let _ = tokio::time::timeout(EXIT_FLUSH_DEADLINE, context.flush()).await;
    // Both holders of the pipe's write end go: the SDK's duplicate, then fd 1 itself (pointed
    // at /dev/null). The client reads EOF; the process runs on.
    fixture.stdout.close();
    #[cfg(unix)]
    {
        let outcome = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/null")
            .map_err(|error| error.to_string())
            .and_then(|null| nix::unistd::dup2_stdout(&null).map_err(|error| error.to_string()));
        if let Err(error) = outcome {
            crate::log!("close_stdout: {error}");
        }
    }
    crate::log!("stdout closed; still running");
    ToolResponse::NoReply
}

#[derive(Deserialize)]
#[serde(default)]
struct DripArgs {
    text: String,
    interval_ms: u64,
}

impl Default for DripArgs {
    fn default() -> Self {
        Self { text: "dripped".into(), interval_ms: 1000 }
    }
}

async fn drip(_: Arc<Fixture>, context: Arc<CallContext>, args: Value) -> ToolResponse {
    let args = match arguments::<DripArgs>(args) {
        Ok(args) => args,
        Err(response) => return response,
    };
    let result = json!({"content": [{"type": "text", "text": args.text}], "isError": false});
    let line = format!("{}\n", raw_response_line(context.request_id(), Some(&result), None));
    // Exclusive: nothing else may land in the middle of the line being dripped.
    let stream = match context.raw_stream().await {
        Ok(stream) => stream,
        Err(error) => return ToolResponse::error(format!("drip: {error}")),
    };
    for byte in line.bytes() {
        if stream.write(vec![byte]).await.is_err() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(args.interval_ms)).await;
    }
    ToolResponse::NoReply
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ReplyWithIdArgs {
    form: String,
}

/// The id member reply_with_id writes for `form`, derived from the request's integer id `id`;
/// `None` leaves the member out.
fn derived_id(form: &str, id: i64) -> Result<Option<String>, String> {
    Ok(Some(match form {
        "string" => format!("\"{id}\""),
        "null" => "null".to_owned(),
        "fractional" => format!("{id}.5"),
        "float" => format!("{id}.0"),
        "exponent" => format!("{id}e0"),
        "wrong" => (id + 1000).to_string(),
        "missing" => return Ok(None),
        other => return Err(format!("reply_with_id: unknown form {other:?}")),
    }))
}

async fn reply_with_id(_: Arc<Fixture>, context: Arc<CallContext>, args: Value) -> ToolResponse {
    let form = match arguments::<ReplyWithIdArgs>(args) {
        Ok(args) => args.form,
        Err(response) => return response,
    };
    let id = context.request_id().as_i64().unwrap_or(1);
    let member = match derived_id(&form, id) {
        Ok(Some(id)) => format!(r#""id":{id},"#),
        Ok(None) => String::new(),
        Err(message) => return ToolResponse::error(message),
    };
    let line = format!(
        r#"{{"jsonrpc":"2.0",{member}"result":{{"content":[{{"type":"text","text":"misrouted ({form})"}}],"isError":false}}}}"#
    );
    match context.write_raw_line(&line).await {
        Ok(()) => ToolResponse::NoReply,
        Err(error) => ToolResponse::error(format!("reply_with_id: {error}")),
    }
}

#[derive(Deserialize)]
#[serde(default)]
struct DuplicateReplyArgs {
    text: String,
    copies: u32,
}

impl Default for DuplicateReplyArgs {
    fn default() -> Self {
        Self { text: "duplicated".into(), copies: 2 }
    }
}

async fn duplicate_reply(_: Arc<Fixture>, context: Arc<CallContext>, args: Value) -> ToolResponse {
    let args = match arguments::<DuplicateReplyArgs>(args) {
        Ok(args) => args,
        Err(response) => return response,
    };
    let result = json!({"content": [{"type": "text", "text": args.text}], "isError": false});
    let line = raw_response_line(context.request_id(), Some(&result), None);
    for _ in 0..args.copies.max(1) {
        if let Err(error) = context.write_raw_line(&line).await {
            return ToolResponse::error(format!("duplicate_reply: {error}"));
        }
    }
    ToolResponse::NoReply
}

#[derive(Deserialize)]
#[serde(default)]
struct RpcErrorArgs {
    code: i64,
    message: String,
}

impl Default for RpcErrorArgs {
    fn default() -> Self {
        Self { code: -32000, message: "rpc failed".into() }
    }
}

async fn rpc_error(_: Arc<Fixture>, _: Arc<CallContext>, args: Value) -> ToolResponse {
    match arguments::<RpcErrorArgs>(args) {
        Ok(args) => ToolResponse::rpc_error(args.code, args.message),
        Err(response) => response,
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct MultiItemArgs {
    items: Vec<String>,
}

async fn multi_item(_: Arc<Fixture>, _: Arc<CallContext>, args: Value) -> ToolResponse {
    let items = match arguments::<MultiItemArgs>(args) {
        Ok(args) => args.items,
        Err(response) => return response,
    };
    let mut content: Vec<Content> = items.into_iter().map(Content::Text).collect();
    let image = Content::Image { data: TINY_PNG_BASE64.to_owned(), mime_type: "image/png".to_owned() };
    content.insert(content.len().min(1), image);
    ToolResponse::items(content)
}

/// structured_result's `outputSchema`.
fn structured_result_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"temperature": {"type": "number"}, "conditions": {"type": "string"}},
        "required": ["temperature"],
    })
}

#[derive(Deserialize)]
#[serde(default)]
struct StructuredResultArgs {
    value: Value,
    text: Option<String>,
}

impl Default for StructuredResultArgs {
    fn default() -> Self {
        Self { value: json!({"temperature": 22.5, "conditions": "Sunny"}), text: None }
    }
}

/// The SDK's results have no `structuredContent`: the reply is written by hand.
async fn structured_result(fixture: Arc<Fixture>, context: Arc<CallContext>, args: Value) -> ToolResponse {
    let args = match arguments::<StructuredResultArgs>(args) {
        Ok(args) => args,
        Err(response) => return response,
    };
    let content: Vec<Value> = args.text.into_iter().map(|text| json!({"type": "text", "text": text})).collect();
    let result = json!({"content": content, "structuredContent": args.value, "isError": false});
    raw_result(fixture, context, json!({"result": result})).await
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct BigImageArgs {
    bytes: u64,
    text: String,
}

/// Streams `{"content":[{"type":"text",…}?,{"type":"image","data":"AAAA…","mimeType":"image/png"}]}`
/// whose data decodes to `bytes` bytes (a multiple of 3), never holding it in memory.
async fn big_image(_: Arc<Fixture>, context: Arc<CallContext>, args: Value) -> ToolResponse {
    let args = match arguments::<BigImageArgs>(args) {
        Ok(args) => args,
        Err(response) => return response,
    };
    if !args.bytes.is_multiple_of(3) {
        return ToolResponse::error("big_image: bytes must be a multiple of 3");
    }
    let mut prefix = format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{"content":["#, context.request_id());
    if !args.text.is_empty() {
        prefix.push_str(&json!({"type": "text", "text": args.text}).to_string());
        prefix.push(',');
    }
    prefix.push_str(r#"{"type":"image","mimeType":"image/png","data":""#);
    let streamed = async {
        let stream = context.raw_stream().await?;
        stream.write(prefix.into_bytes()).await?;
        let mut left = args.bytes / 3 * 4;
        while left > 0 {
            let take = BASE64_PADDING.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            stream.write(&BASE64_PADDING[..take]).await?;
            left -= take as u64;
        }
        stream.write(b"\"}],\"isError\":false}}\n".as_slice()).await
    };
    match streamed.await {
        Ok(()) => ToolResponse::NoReply,
        Err(error) => ToolResponse::error(format!("big_image: {error}")),
    }
}

#[derive(Deserialize)]
#[serde(default)]
struct LogMessageArgs {
    level: String,
    data: Value,
}

impl Default for LogMessageArgs {
    fn default() -> Self {
        Self { level: "info".into(), data: Value::from("fixture log message") }
    }
}

async fn log_message(_: Arc<Fixture>, context: Arc<CallContext>, args: Value) -> ToolResponse {
    let args = match arguments::<LogMessageArgs>(args) {
        Ok(args) => args,
        Err(response) => return response,
    };
    match context.log(&args.level, args.data).await {
        Ok(()) => ToolResponse::text("logged"),
        Err(error) => ToolResponse::error(format!("log_message: {error}")),
    }
}

#[derive(Deserialize)]
#[serde(default)]
struct StderrFloodArgs {
    lines: u64,
    line_bytes: usize,
    wait: bool,
}

impl Default for StderrFloodArgs {
    fn default() -> Self {
        Self { lines: 1000, line_bytes: 100, wait: false }
    }
}

async fn stderr_flood(_: Arc<Fixture>, _: Arc<CallContext>, args: Value) -> ToolResponse {
    let args = match arguments::<StderrFloodArgs>(args) {
        Ok(args) => args,
        Err(response) => return response,
    };
    // A thread of its own: if the client stops reading stderr, only this thread blocks.
    let wait = args.wait;
    let spawned = std::thread::Builder::new().name("stderr-flood".into()).spawn(move || {
        let mut stderr = std::io::stderr().lock();
        for number in 1..=args.lines {
            let mut line = format!("flood {number} ").into_bytes();
            line.resize(args.line_bytes, b'.');
            line.push(b'\n');
            if stderr.write_all(&line).is_err() {
                return;
            }
        }
    });
    match spawned {
        Ok(writer) if wait => match tokio::task::spawn_blocking(move || writer.join()).await {
            Ok(Ok(())) => ToolResponse::text("stderr flooded"),
            _ => ToolResponse::error("stderr_flood: the writer thread failed"),
        },
        Ok(_) => ToolResponse::text("flooding stderr"),
        Err(error) => ToolResponse::error(format!("stderr_flood: {error}")),
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct MutateToolsArgs {
    add: Option<String>,
    remove: Option<String>,
}

async fn mutate_tools(_: Arc<Fixture>, context: Arc<CallContext>, args: Value) -> ToolResponse {
    let args = match arguments::<MutateToolsArgs>(args) {
        Ok(args) => args,
        Err(response) => return response,
    };
    let outcome = context
        .update_tools(|tools| {
            let mut problems = Vec::new();
            if let Some(name) = &args.remove
                && !tools.remove(name)
            {
                problems.push(format!("no tool named {name:?}"));
            }
            if let Some(name) = args.add {
                let reply = format!("{name} called");
                let def = ToolDef::new(name, "Added at runtime by mutate_tools.", json!({"type":"object"}));
                if let Err(error) = tools.add(def, move |_, _| {
                    let reply = reply.clone();
                    async move { ToolResponse::text(reply) }
                }) {
                    problems.push(error.to_string());
                }
            }
            problems
        })
        .await;
    match outcome {
        Ok(problems) if problems.is_empty() => ToolResponse::text("ok"),
        Ok(problems) => ToolResponse::error(format!("mutate_tools: {}", problems.join("; "))),
        Err(error) => ToolResponse::error(format!("mutate_tools: {error}")),
    }
}

async fn ping_client(_: Arc<Fixture>, context: Arc<CallContext>, _: Value) -> ToolResponse {
    match context.request("ping", None, PING_DEADLINE).await {
        Ok(_) => ToolResponse::text("pong received"),
        Err(error) => ToolResponse::error(format!("ping_client: {error}")),
    }
}

async fn pid(_: Arc<Fixture>, _: Arc<CallContext>, _: Value) -> ToolResponse {
    ToolResponse::text(std::process::id().to_string())
}

async fn env(_: Arc<Fixture>, _: Arc<CallContext>, _: Value) -> ToolResponse {
    let mut vars: Vec<String> = std::env::vars_os()
        .map(|(name, value)| format!("{}={}", name.to_string_lossy(), value.to_string_lossy()))
        .collect();
    vars.sort();
    ToolResponse::text(vars.join("\n"))
}

async fn count_calls(fixture: Arc<Fixture>, _: Arc<CallContext>, _: Value) -> ToolResponse {
    ToolResponse::text(fixture.tool_calls.load(Ordering::Relaxed).to_string())
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawResultArgs {
    result: Value,
}

pub(crate) async fn raw_result(_: Arc<Fixture>, context: Arc<CallContext>, args: Value) -> ToolResponse {
    match arguments::<RawResultArgs>(args) {
        Ok(args) => {
            write_raw_response(&context, &raw_response_line(context.request_id(), Some(&args.result), None)).await
        }
        Err(response) => response,
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawErrorArgs {
    error: Value,
    result: Option<Value>,
}

async fn raw_error(_: Arc<Fixture>, context: Arc<CallContext>, args: Value) -> ToolResponse {
    match arguments::<RawErrorArgs>(args) {
        Ok(args) => {
            let line = raw_response_line(context.request_id(), args.result.as_ref(), Some(&args.error));
            write_raw_response(&context, &line).await
        }
        Err(response) => response,
    }
}

/// `{"jsonrpc":"2.0","id":<id>[,"result":<result>][,"error":<error>]}`, members in that order
/// and values exactly as given: nothing checks that the frame is a valid JSON-RPC response.
fn raw_response_line(request_id: &Value, result: Option<&Value>, error: Option<&Value>) -> String {
    let mut line = format!(r#"{{"jsonrpc":"2.0","id":{request_id}"#);
    if let Some(result) = result {
        line.push_str(&format!(r#","result":{result}"#));
    }
    if let Some(error) = error {
        line.push_str(&format!(r#","error":{error}"#));
    }
    line.push('}');
    line
}

/// Writes a hand-made response for the current request; the SDK then sends nothing itself.
async fn write_raw_response(context: &CallContext, line: &str) -> ToolResponse {
    match context.write_raw_line(line).await {
        Ok(()) => ToolResponse::NoReply,
        Err(error) => ToolResponse::error(format!("raw response: {error}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_and_suffix_frame_valid_json() {
        let line = format!("{}abc{}", streamed_result_prefix(&json!(7)), STREAMED_RESULT_SUFFIX);
        let value: Value = serde_json::from_str(line.trim_end()).unwrap();
        assert_eq!(
            value,
            json!({"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"abc"}],"isError":false}})
        );
        assert!(line.ends_with('\n') && !line.trim_end().contains('\n'));
    }

    #[test]
    fn derived_ids_are_never_the_request_integer() {
        let forms = ["string", "null", "fractional", "float", "exponent", "wrong", "missing"];
        let ids: Vec<Option<String>> = forms.iter().map(|form| derived_id(form, 7).unwrap()).collect();
        assert_eq!(
            ids,
            [Some("\"7\""), Some("null"), Some("7.5"), Some("7.0"), Some("7e0"), Some("1007"), None]
                .map(|id| id.map(str::to_owned))
        );
        assert!(derived_id("nope", 7).is_err());
    }

    #[test]
    fn raw_responses_keep_values_verbatim_and_in_order() {
        assert_eq!(raw_response_line(&json!(4), Some(&json!([1])), None), r#"{"jsonrpc":"2.0","id":4,"result":[1]}"#);
        assert_eq!(raw_response_line(&json!(4), Some(&Value::Null), None), r#"{"jsonrpc":"2.0","id":4,"result":null}"#);
        assert_eq!(
            raw_response_line(&json!("a"), Some(&json!({"content":[]})), Some(&json!({"code":1,"message":"m"}))),
            r#"{"jsonrpc":"2.0","id":"a","result":{"content":[]},"error":{"code":1,"message":"m"}}"#
        );
    }
}
