//! The contract reference tools: echo, large_result, artifact_result, bad_artifact, slow,
//! error_result. Names and defaults are fixed by odek's contract tests.

use std::sync::Arc;
use std::time::Duration;

use odek_extension::{ArtifactRef, CallContext, Content, Envelope, Server, ToolDef, ToolResponse, arguments};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::artifact_files::{flip_last_hex_digit, write_pattern_file};
use crate::{Fixture, bad_artifact, bind};

pub(crate) fn register(server: Server, fixture: &Arc<Fixture>) -> Server {
    server
        .tool(ToolDef::new("echo", "Returns its text argument unchanged.", echo_schema()), bind(fixture, echo))
        .tool(
            ToolDef::new(
                "large_result",
                "Returns chars copies of char, split over items text items.",
                json!({"type":"object","properties":{
                    "chars":{"type":"integer","minimum":0},
                    "char":{"type":"string"},
                    "items":{"type":"integer","minimum":1}
                }}),
            ),
            bind(fixture, large_result),
        )
        .tool(
            ToolDef::new(
                "artifact_result",
                "Writes artifact files and returns an odek.tool-result/v1 envelope referencing them.",
                json!({"type":"object","properties":{
                    "text":{"type":"string"},
                    "content":{"type":"string"},
                    "size":{"type":"integer","minimum":0},
                    "id":{"type":"string"},
                    "media_type":{"type":"string"},
                    "summary":{"type":"string"},
                    "count":{"type":"integer","minimum":1},
                    "tamper_hash":{"type":"boolean"},
                    "tamper_size":{"type":"boolean"},
                    "omit_hash":{"type":"boolean"},
                    "omit_size":{"type":"boolean"},
                    "id_len":{"type":"integer","minimum":1},
                    "text_chars":{"type":"integer","minimum":0},
                    "summary_chars":{"type":"integer","minimum":0}
                }}),
            ),
            bind(fixture, artifact_result),
        )
        .tool(
            ToolDef::new(
                "bad_artifact",
                "Returns an envelope whose artifact refs break one validation rule.",
                json!({"type":"object","properties":{
                    "kind":{"type":"string","enum": bad_artifact::KINDS}
                },"required":["kind"]}),
            ),
            bind(fixture, bad_artifact::bad_artifact),
        )
        .tool(
            ToolDef::new(
                "slow",
                "Sleeps for ms milliseconds, optionally reporting progress.",
                json!({"type":"object","properties":{
                    "ms":{"type":"integer","minimum":0},
                    "progress_every_ms":{"type":"integer","minimum":1},
                    "honor_cancel":{"type":"boolean"}
                }}),
            ),
            bind(fixture, slow),
        )
        .tool(
            ToolDef::new(
                "error_result",
                "Fails with isError and the given message.",
                json!({"type":"object","properties":{"message":{"type":"string"}}}),
            ),
            bind(fixture, error_result),
        )
}

/// The input schema of echo and of every `--extra-tool`.
pub(crate) fn echo_schema() -> Value {
    json!({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]})
}

#[derive(Deserialize)]
struct EchoArgs {
    text: String,
}

pub(crate) async fn echo(_: Arc<Fixture>, _: Arc<CallContext>, args: Value) -> ToolResponse {
    match arguments::<EchoArgs>(args) {
        Ok(args) => ToolResponse::text(args.text),
        Err(response) => response,
    }
}

#[derive(Deserialize)]
#[serde(default)]
struct LargeResultArgs {
    chars: usize,
    #[serde(rename = "char")]
    fill: String,
    items: usize,
}

impl Default for LargeResultArgs {
    fn default() -> Self {
        Self { chars: 5000, fill: "x".into(), items: 1 }
    }
}

async fn large_result(_: Arc<Fixture>, _: Arc<CallContext>, args: Value) -> ToolResponse {
    let args = match arguments::<LargeResultArgs>(args) {
        Ok(args) => args,
        Err(response) => return response,
    };
    let Some(fill) = args.fill.chars().next() else {
        return ToolResponse::error("large_result: char must not be empty");
    };
    let items = args.items.max(1);
    let (base, remainder) = (args.chars / items, args.chars % items);
    let content = (0..items)
        .map(|index| {
            let count = base + usize::from(index < remainder);
            Content::Text(std::iter::repeat_n(fill, count).collect())
        })
        .collect();
    ToolResponse::items(content)
}

/// artifact_result's arguments (also what the envelope resource asks of it).
#[derive(Deserialize)]
#[serde(default)]
pub(crate) struct ArtifactResultArgs {
    text: Option<String>,
    content: Option<String>,
    size: Option<u64>,
    id: String,
    media_type: String,
    summary: Option<String>,
    count: usize,
    tamper_hash: bool,
    tamper_size: bool,
    omit_hash: bool,
    omit_size: bool,
    id_len: Option<usize>,
    text_chars: Option<usize>,
    summary_chars: Option<usize>,
}

impl Default for ArtifactResultArgs {
    fn default() -> Self {
        Self {
            text: None,
            content: None,
            size: None,
            id: "report-1".into(),
            media_type: "text/plain".into(),
            summary: None,
            count: 1,
            tamper_hash: false,
            tamper_size: false,
            omit_hash: false,
            omit_size: false,
            id_len: None,
            text_chars: None,
            summary_chars: None,
        }
    }
}

impl ArtifactResultArgs {
    /// One text/plain file of `content`, referenced as `id` with `summary`, in an envelope
    /// saying `text`.
    pub(crate) fn one_file(id: &str, content: &str, summary: &str, text: &str) -> Self {
        Self {
            text: Some(text.to_owned()),
            content: Some(content.to_owned()),
            id: id.to_owned(),
            summary: Some(summary.to_owned()),
            ..Self::default()
        }
    }
}

pub(crate) async fn artifact_result(fixture: Arc<Fixture>, _: Arc<CallContext>, args: Value) -> ToolResponse {
    let args = match arguments::<ArtifactResultArgs>(args) {
        Ok(args) => args,
        Err(response) => return response,
    };
    match tokio::task::spawn_blocking(move || build_artifact_result(&fixture, args)).await {
        Ok(Ok(envelope)) => envelope.into_response(),
        Ok(Err(message)) => ToolResponse::error(format!("artifact_result: {message}")),
        Err(error) => ToolResponse::error(format!("artifact_result: {error}")),
    }
}

/// Writes the files `args` asks for and returns the envelope referencing them. Blocking I/O.
pub(crate) fn build_artifact_result(fixture: &Fixture, args: ArtifactResultArgs) -> Result<Envelope, String> {
    let count = args.count.max(1);
    let base_id = match args.id_len {
        Some(length) => fit_to_chars(&args.id, length),
        None => args.id.clone(),
    };
    let text = args.text.unwrap_or_else(|| format!("artifact_result wrote {count} artifact(s)"));
    let text = match args.text_chars {
        Some(length) => fit_to_chars(&text, length),
        None => text,
    };
    let summary = match (args.summary, args.summary_chars) {
        (summary, Some(length)) => Some(fit_to_chars(summary.as_deref().unwrap_or("s"), length)),
        (summary, None) => summary,
    };

    let mut envelope = Envelope::new(text);
    for number in 1..=count {
        let id = if count == 1 { base_id.clone() } else { format!("{base_id}-{number}") };
        let content = args.content.clone().unwrap_or_else(|| format!("artifact {id}\n"));
        let path = fixture.artifact_dir.join(fixture.unique_name("artifact"));
        write_pattern_file(&path, content.as_bytes(), args.size)?;
        let mut artifact =
            ArtifactRef::for_file(id, &path, args.media_type.clone()).map_err(|error| error.to_string())?;
        artifact.summary.clone_from(&summary);
        if args.tamper_hash {
            artifact.sha256 = artifact.sha256.map(|digest| flip_last_hex_digit(&digest));
        }
        if args.tamper_size {
            artifact.size_bytes = artifact.size_bytes.map(|size| size + 1);
        }
        if args.omit_hash {
            artifact.sha256 = None;
        }
        if args.omit_size {
            artifact.size_bytes = None;
        }
        envelope = envelope.with_artifact(artifact);
    }
    Ok(envelope)
}

/// `text` cycled or cut to exactly `length` characters (`"x"` stands in for empty text).
fn fit_to_chars(text: &str, length: usize) -> String {
    let source = if text.is_empty() { "x" } else { text };
    source.chars().cycle().take(length).collect()
}

#[derive(Deserialize)]
#[serde(default)]
struct SlowArgs {
    ms: u64,
    progress_every_ms: Option<u64>,
    honor_cancel: bool,
}

impl Default for SlowArgs {
    fn default() -> Self {
        Self { ms: 1000, progress_every_ms: None, honor_cancel: false }
    }
}

async fn slow(_: Arc<Fixture>, context: Arc<CallContext>, args: Value) -> ToolResponse {
    let args = match arguments::<SlowArgs>(args) {
        Ok(args) => args,
        Err(response) => return response,
    };
    let start = tokio::time::Instant::now();
    let deadline = start + Duration::from_millis(args.ms);
    let progress_every = args
        .progress_every_ms
        .filter(|_| context.progress_token().is_some())
        .map(|every| Duration::from_millis(every.max(1)));
    let mut next_progress = progress_every.map(|every| start + every);
    let mut cancellation_seen = false;
    loop {
        let wake = match next_progress {
            Some(at) if at < deadline => at,
            _ => deadline,
        };
        tokio::select! {
            () = tokio::time::sleep_until(wake) => {}
            () = context.cancelled(), if !cancellation_seen => {
                cancellation_seen = true;
                crate::log!("slow: request {} cancelled ({})",
                    context.request_id(),
                    context.cancel_reason().unwrap_or_default()
                );
                if args.honor_cancel {
                    return ToolResponse::NoReply;
                }
                continue;
            }
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return ToolResponse::text(format!("slept {} ms", args.ms));
        }
        if let (Some(at), Some(every)) = (next_progress, progress_every)
            && now >= at
        {
            let elapsed = now.duration_since(start).as_millis() as f64;
            let _ = context.progress(elapsed, Some(args.ms as f64), Some("sleeping")).await;
            next_progress = Some(at + every);
        }
    }
}

#[derive(Deserialize)]
#[serde(default)]
struct ErrorResultArgs {
    message: String,
}

impl Default for ErrorResultArgs {
    fn default() -> Self {
        Self { message: "the tool failed".into() }
    }
}

async fn error_result(_: Arc<Fixture>, _: Arc<CallContext>, args: Value) -> ToolResponse {
    match arguments::<ErrorResultArgs>(args) {
        Ok(args) => ToolResponse::error(args.message),
        Err(response) => response,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fitting_cycles_and_cuts_by_characters() {
        assert_eq!(fit_to_chars("abc", 7), "abcabca");
        assert_eq!(fit_to_chars("héllo", 2), "hé");
        assert_eq!(fit_to_chars("", 3), "xxx");
        assert_eq!(fit_to_chars("abc", 0), "");
    }
}
