//! The throughput table: each client makes a fixed number of sequential `tools/call echo` round
//! trips (after an untimed warm-up) in its own pinned probe process; runs are repeated with the
//! clients interleaved (run 1 of every client, then run 2, …) so drift on the machine hits all of
//! them alike, and the table reports the median. Over HTTP the table adds the server's CPU per
//! call (the probe started the server, so it can read it). Start at [`run`].

use std::time::Duration;

use anyhow::Context;
use clap::Args;

use crate::child::run_with_deadline;
use crate::clients::{ClientKind, Transport};
use crate::pinning::Setup;
use crate::probe::ProbeReport;
use crate::report::{Table, group_thousands};

/// odek-mcp's target over stdio: calls per second.
pub const ODEK_TARGET_CALLS_PER_SEC: f64 = 80_000.0;
/// odek-mcp's target over stdio: times rmcp's calls per second.
pub const ODEK_TARGET_VS_RMCP: f64 = 1.8;
/// odek-mcp's target over Streamable HTTP: times rmcp's calls per second (each rmcp row).
pub const ODEK_HTTP_TARGET_VS_RMCP: f64 = 1.5;
/// A run may take this long plus [`run_deadline`]'s allowance per call (60 s).
const RUN_DEADLINE_BASE: Duration = Duration::from_secs(60);

/// How long a throughput run of `calls` calls (warm-up included) may take before it counts as
/// hung: 60 s plus 1 ms per call over stdio, 5 ms over HTTP (where the TypeScript SDK takes
/// about 2 ms per call).
pub fn run_deadline(transport: Transport, calls: u64) -> Duration {
    let per_call_millis = match transport {
        Transport::Stdio => 1,
        Transport::Http => 5,
    };
    RUN_DEADLINE_BASE + Duration::from_millis(calls.saturating_mul(per_call_millis))
}

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
    /// Over HTTP: the server's CPU time per call (warm-up included), in µs.
    server_cpu_micros_per_call: Option<f64>,
}

impl Row {
    fn median_rate(&self) -> Option<f64> {
        median(&self.runs.iter().map(|run| run.calls_per_sec).collect::<Vec<_>>())
    }

    fn median_cpu(&self) -> Option<f64> {
        median(&self.runs.iter().map(|run| run.cpu_micros_per_call).collect::<Vec<_>>())
    }

    fn median_server_cpu(&self) -> Option<f64> {
        median(&self.runs.iter().filter_map(|run| run.server_cpu_micros_per_call).collect::<Vec<_>>())
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
                    let server_cpu = run
                        .server_cpu_micros_per_call
                        .map_or_else(String::new, |cpu| format!(", server CPU {cpu:.2} µs/call"));
                    eprintln!(
                        "throughput run {repeat}/{}: {:<15} {:>9} calls/s, client CPU {:.2} µs/call{server_cpu}",
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
    Ok(render(&rows, options, setup.transport))
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
    let deadline = run_deadline(setup.transport, calls + warmup);
    let run = run_with_deadline(&mut command, deadline)?;
    let Some(status) = run.status else { anyhow::bail!("no result within {} s", deadline.as_secs()) };
    let line = run.report_line().with_context(|| format!("probe exited ({status}) without a report"))?;
    match serde_json::from_str::<ProbeReport>(line).with_context(|| format!("probe report {line:?}"))? {
        ProbeReport::Throughput { calls, seconds, cpu_seconds, server_cpu_seconds } if seconds > 0.0 && calls > 0 => {
            Ok(Run {
                calls_per_sec: calls as f64 / seconds,
                cpu_micros_per_call: cpu_seconds * 1e6 / calls as f64,
                server_cpu_micros_per_call: server_cpu_seconds.map(|cpu| cpu * 1e6 / (calls + warmup) as f64),
            })
        }
        other => anyhow::bail!("unexpected probe report {other:?}"),
    }
}

fn render(rows: &[Row], options: &ThroughputOptions, transport: Transport) -> String {
    let rmcp = rows.iter().find(|row| row.client == ClientKind::Rmcp).and_then(Row::median_rate);
    let mut header = vec![
        "Client",
        "Version",
        "Calls per run",
        "Runs",
        "Median calls/s",
        "Min – max calls/s",
        "µs per call",
        "Client CPU µs per call",
    ];
    if transport == Transport::Http {
        header.push("Server CPU µs per call");
    }
    header.push("× rmcp");
    let mut table = Table::new(&header);
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
        let mut cells = vec![
            format!("**{}**", row.client),
            row.version.clone(),
            group_thousands(row.calls as f64),
            row.runs.len().to_string(),
            format!("**{}**", group_thousands(median)),
            format!("{} – {}", group_thousands(min), group_thousands(max)),
            format!("{:.2}", 1e6 / median),
            row.median_cpu().map_or_else(String::new, |cpu| format!("{cpu:.2}")),
        ];
        if transport == Transport::Http {
            cells.push(row.median_server_cpu().map_or_else(String::new, |cpu| format!("{cpu:.2}")));
        }
        cells.push(rmcp.map_or_else(|| "–".to_owned(), |rmcp| format!("{:.2}×", median / rmcp)));
        table.row(cells);
    }
    let (title, server_note) = match transport {
        Transport::Stdio => ("", ""),
        Transport::Http => (
            " over Streamable HTTP",
            " Server CPU is the HTTP server's user + system time over the whole probe (handshake and warm-up included) per call.",
        ),
    };
    let mut out = format!(
        "## Throughput: sequential `tools/call` round trips{title}\n\n{} warm-up calls, then the timed calls; median of {} runs per client, clients interleaved. \
         µs per call is wall-clock per round trip; client CPU is the client process's own user + system time per call.{server_note}\n\n{}",
        group_thousands(options.warmup as f64),
        options.repeats,
        table.render()
    );
    out.push_str(&match transport {
        Transport::Stdio => verdicts(rows, rmcp),
        Transport::Http => http_verdicts(rows),
    });
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

/// Over HTTP: odek-mcp against each rmcp row (its default client and the pooled one).
fn http_verdicts(rows: &[Row]) -> String {
    let Some(odek) = rows.iter().find(|row| row.client == ClientKind::OdekMcp).and_then(Row::median_rate) else {
        return String::new();
    };
    let mut out = String::new();
    for rmcp_row in rows.iter().filter(|row| matches!(row.client, ClientKind::Rmcp | ClientKind::RmcpPooled)) {
        let Some(rmcp) = rmcp_row.median_rate() else { continue };
        out.push_str(&format!(
            "\nodek-mcp target ≥ {ODEK_HTTP_TARGET_VS_RMCP:.1}× {}: {:.2}× — **{}**\n",
            rmcp_row.client,
            odek / rmcp,
            pass_fail(odek >= ODEK_HTTP_TARGET_VS_RMCP * rmcp)
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
