//! `odek-bench-mcp-serve`: `read_file` round trips through `odek mcp` (issue 21) from odek's own
//! MCP client — the same pipeline as the bench's odek-mcp row (`McpHub::call`: catalogue
//! routing, argument encoding, the stdio connection's writer and bounded reader, id routing,
//! result decoding, sanitising and the result cap) — against the real `odek mcp` binary serving
//! odek-agent's `read_file` (root confinement, the capped read, the numbered page) on the
//! `odek-extension` SDK.
//!
//! Run it under `taskset -c <cpu>`: the `odek mcp` it spawns inherits the mask, so client and
//! server share the one core (the layout the stdio targets are read against; see
//! docs/BENCHMARKS.md). Prints one markdown table row per run, then the median.
//!
//! Usage: odek-bench-mcp-serve <odek binary> [calls] [warmup] [repeats]

use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use odek_mcp::{CallOptions, McpHub, ServerEntry, validate_server};

#[path = "../../quiet_hub.rs"]
mod quiet_hub;

/// The file every call reads (one line).
const FILE_TEXT: &str = "hello\n";
/// What `read_file` answers for it.
const EXPECTED: &str = "     1\thello";
/// How long shutting the hub down may take after a run.
const SHUTDOWN_DEADLINE: Duration = Duration::from_secs(10);

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(odek) = args.first() else {
        bail!("usage: odek-bench-mcp-serve <odek binary> [calls] [warmup] [repeats]")
    };
    let number = |index: usize, default: u64| -> anyhow::Result<u64> {
        args.get(index).map_or(Ok(default), |text| text.parse().with_context(|| format!("not a number: {text}")))
    };
    let (calls, warmup, repeats) = (number(1, 200_000)?, number(2, 10_000)?, number(3, 5)?);
    let project = std::env::temp_dir().join(format!("odek-bench-mcp-serve-{}", std::process::id()));
    std::fs::create_dir_all(&project)?;
    std::fs::write(project.join("a.txt"), FILE_TEXT)?;
    std::env::set_current_dir(&project)?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    println!("| Run | Calls | Seconds | Calls/s | µs per call |");
    println!("| --- | --- | --- | --- | --- |");
    let mut rates = Vec::new();
    for run in 1..=repeats {
        let elapsed = runtime.block_on(one_run(odek, calls, warmup))?;
        let rate = calls as f64 / elapsed.as_secs_f64();
        rates.push(rate);
        println!(
            "| {run} | {calls} | {:.3} | {rate:.0} | {:.2} |",
            elapsed.as_secs_f64(),
            elapsed.as_secs_f64() * 1e6 / calls as f64
        );
    }
    rates.sort_by(f64::total_cmp);
    println!("\nmedian: {:.0} calls/s", rates[rates.len() / 2]);
    let _ = std::fs::remove_dir_all(&project);
    Ok(())
}

/// One hub, `warmup` untimed calls, then `calls` timed sequential calls.
async fn one_run(odek: &str, calls: u64, warmup: u64) -> anyhow::Result<Duration> {
    let entry = ServerEntry { command: Some(odek.to_owned()), args: vec!["mcp".to_owned()], ..ServerEntry::default() };
    let (spec, _warnings) = validate_server("inner", &entry)?;
    let hub = McpHub::start(vec![spec], quiet_hub::options()).await?;
    let call_options = CallOptions::default();
    let arguments = r#"{"path":"a.txt"}"#;
    for _ in 0..warmup {
        hub.call("inner__read_file", arguments, &call_options).await?;
    }
    let started = Instant::now();
    for _ in 0..calls {
        let output = hub.call("inner__read_file", arguments, &call_options).await?;
        ensure!(output.text == EXPECTED, "unexpected read_file result {:?}", output.text);
    }
    let elapsed = started.elapsed();
    let _ = tokio::time::timeout(SHUTDOWN_DEADLINE, hub.shutdown()).await;
    Ok(elapsed)
}
