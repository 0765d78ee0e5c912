//! Embedding odek: one task against the replay provider, with a tool of this program's own
//! (`word_count`), printing every `odek.event/v1` event it receives, then the answer.
//! Run: `cargo run -p odek-embed-example -- examples/embed/replay.json`.

use std::sync::Arc;

use odek::config::ConfigSources;
use odek::{BoxFuture, CancellationToken, Message, Overrides, Runtime, Subscriber};
use odek::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutcome};

/// The in-process tool: counts the words of `text`.
struct WordCount;

impl Tool for WordCount {
    fn definition(&self) -> ToolDefinition {
        let parameters = serde_json::json!({"type": "object", "properties": {"text": {"type": "string"}}});
        ToolDefinition { name: "word_count".into(), description: "Count the words of a text".into(), parameters }
    }

    fn call<'a>(&'a self, arguments: &'a str, _: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutcome, ToolError>> {
        Box::pin(async move {
            let arguments: serde_json::Value =
                serde_json::from_str(arguments).map_err(|e| ToolError::new(e.to_string()))?;
            let words = arguments["text"].as_str().unwrap_or_default().split_whitespace().count();
            Ok(ToolOutcome::text(words.to_string()))
        })
    }
}

/// The subscriber: events on stdout, warnings on stderr.
struct Printer;

impl Subscriber for Printer {
    fn warning(&self, text: &str) {
        eprintln!("warning: {text}");
    }
    fn wants_events(&self) -> bool {
        true
    }
    fn event(&self, line: &str) {
        println!("{line}");
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let script = std::env::args().nth(1).unwrap_or_else(|| "examples/embed/replay.json".to_owned());
    let overrides = Overrides { replay: Some(script.into()), ..Overrides::default() };
    let runtime = Runtime::load(ConfigSources::from_process()?, &overrides, Arc::new(Printer))?;
    let runtime = runtime.with_tool(Arc::new(WordCount));
    let mut session = runtime.session(vec![Message::system(runtime.system_prompt(None))], None)?;
    let task = runtime.user_message("How many words are in \"odek runs agents\"?", &[])?;
    let outcome = session.turn(task, &CancellationToken::new()).await;
    session.close().await;
    println!("answer: {}", outcome?.answer);
    Ok(())
}
