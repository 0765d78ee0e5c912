//! The throughput table: each client makes a fixed number of sequential `tools/call echo` round
//! trips (after an untimed warm-up) in its own pinned probe process; runs are repeated with the
//! clients interleaved (run 1 of every client, then run 2, …) so drift on the machine hits all of
//! them alike, and the table reports the median. Start at [`run`].

use std::time::Duration;

use anyhow::Context;
use clap::Args;

use crate::child::run_with_deadline;
use crate::clients::ClientKind;
use crate::pinning::Setup;
use crate::probe::ProbeReport;
use crate::report::{Table, group_thousands};

/// odek-mcp's target: calls per second.
pub const ODEK_TARGET_CALLS_PER_SEC: f64 = 80_000.0;
/// odek-mcp's target: times rmcp's calls per second.
pub const ODEK_TARGET_VS_RMCP: f64 = 1.8;
/// A run may take this long plus a millisecond per call (60 s).
const RUN_DEADLINE_BASE: Duration = Duration::from_secs(60);

#[derive(Debug, Args)]
pub struct ThroughputOptions {
    /// Timed calls per run for the Rust clients (odek-mcp, raw-line, rmcp).
    #[arg(long, default_value_t = 200_000)]
    pub calls: u64,
    /// Timed calls per run for the SDK clients (TypeScript, Python).
    #[arg(long, default_value_t = 50_000)]
    pub sdk_calls: u64,
    /// Untimed calls before each timed run.
    #[arg(long, default_value_t = 10_000)]
    pub warmup: u64,
    /// Runs per client; the table shows the median.
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
}

impl ThroughputOptions {
    fn calls_for(&self, client: ClientKind) -> u64 {
        if client.is_rust() { self.calls } else { self.sdk_calls }
    }
}

/// One client's row.
struct Row {
    client: ClientKind,
    version: String,
    calls: u64,
    /// Every finished run.
    runs: Vec<Run>,
    /// Why the client did not run, or why a run failed.
    problem: Option<String>,
}

/// One run of one client.
#[derive(Debug, Clone, Copy)]
struct Run {
    calls_per_sec: f64,
    /// The client process's own CPU time per call (user + system), in µs.
    cpu_micros_per_call: f64,
}

impl Row {
    fn median_rate(&self) -> Option<f64> {
        median(&self.runs.iter().map(|run| run.calls_per_sec).collect::<Vec<_>>())
    }

    fn median_cpu(&self) -> Option<f64> {
        median(&self.runs.iter().map(|run| run.cpu_micros_per_call).collect::<Vec<_>>())
    }
}

/// Runs every selected client `repeats` times and returns the markdown section.
pub fn run(setup: &Setup, options: &ThroughputOptions) -> anyhow::Result<String> {
    let mut rows: Vec<Row> = setup
        .clients
        .iter()
        .map(|&client| Row {
            client,
            version: client.version(&setup.repo_root),
            calls: options.calls_for(client),
            runs: Vec::new(),
            problem: client.availability(&setup.repo_root).err(),
        })
        .collect();
    for repeat in 1..=options.repeats {
        for row in rows.iter_mut().filter(|row| row.problem.is_none()) {
            match run_once(setup, row.client, row.calls, options.warmup) {
                Ok(run) => {
                    eprintln!(
                        "throughput run {repeat}/{}: {:<15} {:>9} calls/s, client CPU {:.2} µs/call",
                        options.repeats,
                        row.client.name(),
                        group_thousands(run.calls_per_sec),
                        run.cpu_micros_per_call
                    );
                    row.runs.push(run);
                }
                Err(err) => {
                    eprintln!("throughput run {repeat}/{}: {} failed: {err:#}", options.repeats, row.client);
                    row.problem = Some(format!("failed: {err:#}"));
                }
            }
        }
    }
    Ok(render(&rows, options))
}

/// One pinned probe run.
fn run_once(setup: &Setup, client: ClientKind, calls: u64, warmup: u64) -> anyhow::Result<Run> {
    let args = [
        format!("--client={client}"),
        "--mode=throughput".to_owned(),
        format!("--calls={calls}"),
        format!("--warmup={warmup}"),
    ];
    let mut command = setup.probe_command(&args)?;
    let deadline = RUN_DEADLINE_BASE + Duration::from_millis(calls + warmup);
    let run = run_with_deadline(&mut command, deadline)?;
    let Some(status) = run.status else { anyhow::bail!("no result within {} s", deadline.as_secs()) };
    let line = run.report_line().with_context(|| format!("probe exited ({status}) without a report"))?;
    match serde_json::from_str::<ProbeReport>(line).with_context(|| format!("probe report {line:?}"))? {
        ProbeReport::Throughput { calls, seconds, cpu_seconds } if seconds > 0.0 && calls > 0 => {
            Ok(Run { calls_per_sec: calls as f64 / seconds, cpu_micros_per_call: cpu_seconds * 1e6 / calls as f64 })
        }
        other => anyhow::bail!("unexpected probe report {other:?}"),
    }
}

fn render(rows: &[Row], options: &ThroughputOptions) -> String {
    let rmcp = rows.iter().find(|row| row.client == ClientKind::Rmcp).and_then(Row::median_rate);
    let mut table = Table::new(&[
        "Client",
        "Version",
        "Calls per run",
        "Runs",
        "Median calls/s",
        "Min – max calls/s",
        "µs per call",
        "Client CPU µs per call",
        "× rmcp",
    ]);
    for row in rows {
        let Some(median) = row.median_rate().filter(|_| row.problem.is_none()) else {
            let problem = row.problem.clone().unwrap_or_else(|| "no runs".to_owned());
            table.row(vec![row.client.to_string(), row.version.clone(), problem, String::new()]);
            continue;
        };
        let (min, max) = row
            .runs
            .iter()
            .fold((f64::MAX, 0.0_f64), |(min, max), run| (min.min(run.calls_per_sec), max.max(run.calls_per_sec)));
        table.row(vec![
            format!("**{}**", row.client),
            row.version.clone(),
            group_thousands(row.calls as f64),
            row.runs.len().to_string(),
            format!("**{}**", group_thousands(median)),
            format!("{} – {}", group_thousands(min), group_thousands(max)),
            format!("{:.2}", 1e6 / median),
            row.median_cpu().map_or_else(String::new, |cpu| format!("{cpu:.2}")),
            rmcp.map_or_else(|| "–".to_owned(), |rmcp| format!("{:.2}×", median / rmcp)),
        ]);
    }
    let mut out = format!(
        "## Throughput: sequential `tools/call` round trips\n\n{} warm-up calls, then the timed calls; median of {} runs per client, clients interleaved. \
         µs per call is wall-clock per round trip; client CPU is the client process's own user + system time per call.\n\n{}",
        group_thousands(options.warmup as f64),
        options.repeats,
        table.render()
    );
    out.push_str(&verdicts(rows, rmcp));
    out.push_str(&format!("\nLoad average at the end: {}\n", crate::report::load_average()));
    out
}

fn verdicts(rows: &[Row], rmcp: Option<f64>) -> String {
    let Some(odek) = rows.iter().find(|row| row.client == ClientKind::OdekMcp).and_then(Row::median_rate) else {
        return String::new();
    };
    let mut out = format!(
        "\nodek-mcp target ≥ {} calls/s: {} calls/s — **{}**\n",
        group_thousands(ODEK_TARGET_CALLS_PER_SEC),
        group_thousands(odek),
        pass_fail(odek >= ODEK_TARGET_CALLS_PER_SEC)
    );
    if let Some(rmcp) = rmcp {
        out.push_str(&format!(
            "\nodek-mcp target ≥ {ODEK_TARGET_VS_RMCP:.1}× rmcp: {:.2}× — **{}**\n",
            odek / rmcp,
            pass_fail(odek >= ODEK_TARGET_VS_RMCP * rmcp)
        ));
    }
    out
}

pub fn pass_fail(pass: bool) -> &'static str {
    if pass { "PASS" } else { "FAIL" }
}

fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    Some(if sorted.len().is_multiple_of(2) { (sorted[middle - 1] + sorted[middle]) / 2.0 } else { sorted[middle] })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }
}
