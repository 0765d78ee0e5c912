//! odek-log-summariser: an odek-extension/v1 server with one tool, `summarise_log`, that reads a
//! log file, answers with a few lines the model can use (counts per level, the most frequent
//! error messages) and writes the full report — every error and warning line with its line
//! number — as an artifact the operator can open. Built on the `odek_extension` SDK; the
//! summarising itself is in `summary`.
//!
//! ```text
//! USAGE
//!     odek-log-summariser [--artifact-dir DIR]
//!
//!     --artifact-dir DIR   Where reports are written (created if missing). Configure the same
//!                          directory in the server's artifact_roots. Default:
//!                          <temp dir>/odek-log-summariser.
//! ```

mod summary;

use std::path::PathBuf;
use std::process::ExitCode;

use odek_extension::{ArtifactRoot, Envelope, Server, ToolResponse};
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of `summarise_log`.
#[derive(Deserialize, JsonSchema)]
struct SummariseArgs {
    /// Path of the log file to summarise (absolute, or relative to the server's directory).
    path: String,
    /// How many of the most frequent error messages to name in the summary (default 3, at most 20).
    #[serde(default)]
    top: Option<usize>,
}

fn main() -> ExitCode {
    let dir = match artifact_dir(std::env::args().skip(1)) {
        Ok(dir) => dir,
        Err(message) => {
            eprintln!("odek-log-summariser: {message}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("odek-log-summariser: start runtime: {error}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(serve(dir)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("odek-log-summariser: {error}");
            ExitCode::from(1)
        }
    }
}

fn artifact_dir(mut args: impl Iterator<Item = String>) -> Result<PathBuf, String> {
    let mut dir = std::env::temp_dir().join("odek-log-summariser");
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--artifact-dir" => dir = args.next().ok_or("--artifact-dir needs a value")?.into(),
            other => {
                return Err(format!("unknown argument {other:?} (usage: odek-log-summariser [--artifact-dir DIR])"));
            }
        }
    }
    Ok(dir)
}

async fn serve(dir: PathBuf) -> Result<(), odek_extension::Error> {
    let root = ArtifactRoot::new(dir)?;
    eprintln!("odek-log-summariser: writing reports under {}", root.path().display());
    Server::new("odek-log-summariser", env!("CARGO_PKG_VERSION"))
        .typed_tool(
            "summarise_log",
            "Summarises a log file: line counts per level and the most frequent error messages. \
             The full report (every error and warning line with its number) is attached as an artifact.",
            move |_context, args: SummariseArgs| {
                let root = root.clone();
                async move {
                    // Reading a large log is blocking work: keep it off the async workers.
                    tokio::task::spawn_blocking(move || summarise(&root, &args))
                        .await
                        .unwrap_or_else(|error| ToolResponse::error(format!("summarise_log failed: {error}")))
                }
            },
        )
        .run_stdio()
        .await
}

fn summarise(root: &ArtifactRoot, args: &SummariseArgs) -> ToolResponse {
    let path = PathBuf::from(&args.path);
    let log = match summary::read_log(&path) {
        Ok(log) => log,
        Err(error) => return ToolResponse::error(format!("cannot read {}: {error}", path.display())),
    };
    let top = args.top.unwrap_or(3).min(20);
    let report = summary::full_report(&path, &log);
    match root.write("report", "log-report.txt", report.as_bytes(), "text/plain") {
        Ok(artifact) => {
            let artifact = artifact.with_summary(format!("Every error and warning line of {}", path.display()));
            Envelope::new(summary::short_summary(&path, &log, top)).with_artifact(artifact).into_response()
        }
        Err(error) => ToolResponse::error(format!("cannot write the report: {error}")),
    }
}
