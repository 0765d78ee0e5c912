//! The memory table: one `big_line` call per client and scenario, each in its own pinned probe
//! process, reporting how the call ended, how long it took and the client's peak RSS.
//!
//! - `oversize`: a 1 GiB response line under each client's default cap. odek-mcp (10 MiB) must
//!   fail within 1 s with peak RSS ≤ 48 MiB.
//! - `large`: a 50 MB line under a 64 MiB cap (odek-mcp's `max_response_bytes`, rmcp's line
//!   length, the TypeScript transport's `maxBufferSize`; the Python SDK has no cap). odek-mcp must
//!   succeed with peak RSS ≤ 1.6 × payload + 16 MiB.
//! - `large-lines`: the same 50 MB line, but its text is 80-character lines (a `\n` escape every
//!   80 characters), the shape of a file's contents: a client can no longer borrow the text
//!   from the line and has to decode a copy. Same cap and bound.
//!
//! Over Streamable HTTP (`--transport http`) the scenarios are the 1 GiB response under each
//! client's default cap, once as a JSON body (`oversize`) and once as the `data` of one SSE
//! event (`oversize-sse`). odek-mcp's call must fail with `response exceeds
//! max_response_bytes=<cap>` and its peak RSS stay ≤ the cap + 32 MiB.
//!
//! Start at [`run`].

use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};

use crate::child::run_with_deadline;
use crate::clients::{ClientKind, Transport};
use crate::pinning::Setup;
use crate::probe::{Outcome, ProbeReport};
use crate::report::{Table, group_thousands, mebibytes};
use crate::throughput::pass_fail;

const MIB: u64 = 1024 * 1024;
/// The oversized line (1 GiB).
pub const OVERSIZE_LINE_BYTES: u64 = 1024 * MIB;
/// The large line (50 MB).
pub const LARGE_LINE_BYTES: u64 = 50_000_000;
/// The text line length of the `large-lines` scenario (80 characters, newline included).
pub const LARGE_LINES_NEWLINE_EVERY: u64 = 80;
/// The large scenario's cap (64 MiB, odek-mcp's ceiling).
pub const LARGE_CAP_BYTES: u64 = 64 * MIB;
/// odek-mcp's oversize bounds: time to the error (1 s) and peak RSS (48 MiB).
pub const OVERSIZE_MAX_ELAPSED: Duration = Duration::from_secs(1);
pub const OVERSIZE_MAX_PEAK_BYTES: u64 = 48 * MIB;
/// odek-mcp's oversize bound over HTTP: peak RSS ≤ the cap + 32 MiB.
pub const HTTP_OVERSIZE_PEAK_ALLOWANCE_BYTES: u64 = 32 * MIB;
/// The probe's deadline beyond the scenario timeout (30 s).
const PROBE_GRACE: Duration = Duration::from_secs(30);

/// odek-mcp's large-line peak RSS bound: 1.6 × payload + 16 MiB.
pub fn large_max_peak_bytes() -> u64 {
    LARGE_LINE_BYTES * 8 / 5 + 16 * MIB
}

#[derive(Debug, Args)]
pub struct MemoryOptions {
    /// Which scenarios to run.
    #[arg(long, value_enum, default_value_t = ScenarioChoice::All)]
    pub scenario: ScenarioChoice,
    /// How long any client may take for one scenario call before it counts as a timeout.
    #[arg(long, default_value_t = 20)]
    pub peer_timeout_secs: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScenarioChoice {
    Oversize,
    /// HTTP only: the 1 GiB response as one SSE event.
    OversizeSse,
    /// Stdio only.
    Large,
    /// Stdio only.
    LargeLines,
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scenario {
    Oversize,
    OversizeSse,
    Large,
    LargeLines,
}

impl Scenario {
    fn name(self, transport: Transport) -> &'static str {
        match (self, transport) {
            (Scenario::Oversize, Transport::Stdio) => "1 GiB line",
            (Scenario::Oversize, Transport::Http) => "1 GiB JSON body",
            (Scenario::OversizeSse, _) => "1 GiB SSE event",
            (Scenario::Large, _) => "50 MB line",
            (Scenario::LargeLines, _) => "50 MB line of 80-char lines",
        }
    }

    /// The scenarios `choice` selects over `transport`.
    fn selected(choice: ScenarioChoice, transport: Transport) -> anyhow::Result<Vec<Scenario>> {
        Ok(match (choice, transport) {
            (ScenarioChoice::Oversize, _) => vec![Scenario::Oversize],
            (ScenarioChoice::OversizeSse, Transport::Http) => vec![Scenario::OversizeSse],
            (ScenarioChoice::Large, Transport::Stdio) => vec![Scenario::Large],
            (ScenarioChoice::LargeLines, Transport::Stdio) => vec![Scenario::LargeLines],
            (ScenarioChoice::All, Transport::Stdio) => vec![Scenario::Oversize, Scenario::Large, Scenario::LargeLines],
            (ScenarioChoice::All, Transport::Http) => vec![Scenario::Oversize, Scenario::OversizeSse],
            (choice, transport) => anyhow::bail!("scenario {choice:?} has no {transport} variant"),
        })
    }

    fn line_bytes(self) -> u64 {
        match self {
            Scenario::Oversize | Scenario::OversizeSse => OVERSIZE_LINE_BYTES,
            Scenario::Large | Scenario::LargeLines => LARGE_LINE_BYTES,
        }
    }

    fn newline_every(self) -> u64 {
        match self {
            Scenario::Oversize | Scenario::OversizeSse | Scenario::Large => 0,
            Scenario::LargeLines => LARGE_LINES_NEWLINE_EVERY,
        }
    }

    /// `None`: each client's default cap.
    fn cap(self) -> Option<u64> {
        match self {
            Scenario::Oversize | Scenario::OversizeSse => None,
            Scenario::Large | Scenario::LargeLines => Some(LARGE_CAP_BYTES),
        }
    }

    /// The cap column: what limit the client actually ran with.
    fn cap_label(self, client: ClientKind, transport: Transport) -> &'static str {
        match (self, client, transport) {
            (Scenario::Oversize | Scenario::OversizeSse, ClientKind::OdekMcp, _) => "10 MiB (default)",
            (Scenario::Oversize | Scenario::OversizeSse, ClientKind::Rmcp, _) => "16 MiB (default)",
            (Scenario::Oversize, ClientKind::TypescriptSdk, Transport::Stdio) => "10 MiB (default)",
            (
                Scenario::Large | Scenario::LargeLines,
                ClientKind::OdekMcp | ClientKind::Rmcp | ClientKind::TypescriptSdk,
                _,
            ) => "64 MiB",
            _ => "none",
        }
    }

    /// odek-mcp's target for this scenario, with its verdict.
    fn odek_target(self, transport: Transport, report: &Measured) -> (String, bool) {
        match (self, transport) {
            (Scenario::Oversize | Scenario::OversizeSse, Transport::Http) => {
                let cap = u64::try_from(odek_mcp::server_config::DEFAULT_MAX_RESPONSE_BYTES).unwrap_or(0);
                let error = format!("response exceeds max_response_bytes={cap}");
                let bound = cap + HTTP_OVERSIZE_PEAK_ALLOWANCE_BYTES;
                (
                    format!("error `{error}`, peak ≤ {}", mebibytes(bound)),
                    report.outcome == Outcome::Error
                        && report.detail.contains(&error)
                        && report.peak_rss_bytes <= bound,
                )
            }
            (Scenario::Oversize | Scenario::OversizeSse, Transport::Stdio) => (
                format!("error ≤ 1 s, peak ≤ {}", mebibytes(OVERSIZE_MAX_PEAK_BYTES)),
                report.outcome == Outcome::Error
                    && report.elapsed <= OVERSIZE_MAX_ELAPSED
                    && report.peak_rss_bytes <= OVERSIZE_MAX_PEAK_BYTES,
            ),
            (Scenario::Large | Scenario::LargeLines, _) => (
                format!("result, peak ≤ {}", mebibytes(large_max_peak_bytes())),
                report.outcome == Outcome::Ok && report.peak_rss_bytes <= large_max_peak_bytes(),
            ),
        }
    }
}

/// One probe's memory report, parsed.
struct Measured {
    outcome: Outcome,
    elapsed: Duration,
    detail: String,
    peak_rss_bytes: u64,
}

/// Runs the selected scenarios for every selected client (the raw clients are throughput
/// baselines only, and rmcp-pooled has rmcp's limits) and returns the markdown section.
pub fn run(setup: &Setup, options: &MemoryOptions) -> anyhow::Result<String> {
    let transport = setup.transport;
    let scenarios = Scenario::selected(options.scenario, transport)?;
    let clients: Vec<ClientKind> = setup
        .clients
        .iter()
        .copied()
        .filter(|client| !matches!(client, ClientKind::RawLine | ClientKind::RawHttp | ClientKind::RmcpPooled))
        .collect();
    let mut table =
        Table::new(&["Scenario", "Client", "Cap", "Outcome", "Time", "Peak RSS", "odek-mcp target", "Detail"]);
    let mut verdicts = String::new();
    for scenario in scenarios {
        for &client in &clients {
            if let Err(reason) = client.availability(&setup.repo_root) {
                table.row(vec![scenario.name(transport).to_owned(), client.to_string(), String::new(), reason]);
                continue;
            }
            let measured = match run_once(setup, client, scenario, options.peer_timeout_secs) {
                Ok(measured) => measured,
                Err(err) => {
                    eprintln!("memory {}: {client} failed: {err:#}", scenario.name(transport));
                    table.row(vec![
                        scenario.name(transport).to_owned(),
                        client.to_string(),
                        String::new(),
                        format!("failed: {err:#}"),
                    ]);
                    continue;
                }
            };
            eprintln!(
                "memory {}: {client:<15} {} in {:.0} ms, peak RSS {}",
                scenario.name(transport),
                measured.outcome.label(),
                measured.elapsed.as_secs_f64() * 1000.0,
                mebibytes(measured.peak_rss_bytes)
            );
            let target = if client == ClientKind::OdekMcp {
                let (target, pass) = scenario.odek_target(transport, &measured);
                let name = scenario.name(transport);
                verdicts.push_str(&format!("\nodek-mcp {name}: {target} — **{}**\n", pass_fail(pass)));
                format!("{target}: **{}**", pass_fail(pass))
            } else {
                String::new()
            };
            table.row(vec![
                scenario.name(transport).to_owned(),
                format!("**{client}**"),
                scenario.cap_label(client, transport).to_owned(),
                measured.outcome.label().to_owned(),
                format_elapsed(measured.elapsed),
                mebibytes(measured.peak_rss_bytes),
                target,
                measured.detail.replace('|', "\\|"),
            ]);
        }
    }
    if transport == Transport::Http {
        return Ok(format!(
            "## Memory over Streamable HTTP: a 1 GiB response\n\n\
             1 GiB = {} bytes, sent with its `Content-Length` as a JSON body, or as the `data` of one SSE event; each client at its default cap.\n\
             Peak RSS is the client process's high-water mark (`VmHWM`, or `ru_maxrss` of the reaped SDK process).\n\n{}{verdicts}\n\
             Load average at the end: {}\n",
            group_thousands(OVERSIZE_LINE_BYTES as f64),
            table.render(),
            crate::report::load_average()
        ));
    }
    Ok(format!(
        "## Memory: oversized and large response lines\n\n\
         1 GiB line = {} bytes; 50 MB line = {} bytes (its text all `x`, or 80-character lines: a `\\n` escape every 80 characters); \
         the large-line bound is 1.6 × {} + 16 MiB = {} bytes ({}).\n\
         Peak RSS is the client process's high-water mark (`VmHWM`, or `ru_maxrss` of the reaped SDK process).\n\n{}{verdicts}\n\
         Load average at the end: {}\n",
        group_thousands(OVERSIZE_LINE_BYTES as f64),
        group_thousands(LARGE_LINE_BYTES as f64),
        group_thousands(LARGE_LINE_BYTES as f64),
        group_thousands(large_max_peak_bytes() as f64),
        mebibytes(large_max_peak_bytes()),
        table.render(),
        crate::report::load_average()
    ))
}

fn run_once(setup: &Setup, client: ClientKind, scenario: Scenario, timeout_secs: u64) -> anyhow::Result<Measured> {
    let mut args = vec![
        format!("--client={client}"),
        "--mode=memory".to_owned(),
        format!("--line-bytes={}", scenario.line_bytes()),
        format!("--newline-every={}", scenario.newline_every()),
        format!("--timeout-secs={timeout_secs}"),
    ];
    if let Some(cap) = scenario.cap() {
        args.push(format!("--max-response-bytes={cap}"));
    }
    if scenario == Scenario::OversizeSse {
        args.push("--event-stream".to_owned());
    }
    let mut command = setup.probe_command(&args)?;
    let deadline = Duration::from_secs(timeout_secs) + PROBE_GRACE;
    let run = run_with_deadline(&mut command, deadline)?;
    let Some(status) = run.status else { anyhow::bail!("probe did not finish within {} s", deadline.as_secs()) };
    let line = run.report_line().with_context(|| format!("probe exited ({status}) without a report"))?;
    match serde_json::from_str::<ProbeReport>(line).with_context(|| format!("probe report {line:?}"))? {
        ProbeReport::Memory { outcome, elapsed_ms, detail, peak_rss_bytes } => Ok(Measured {
            outcome,
            elapsed: Duration::from_secs_f64(elapsed_ms.max(0.0) / 1000.0),
            detail,
            peak_rss_bytes: peak_rss_bytes.context("the probe reported no peak RSS")?,
        }),
        other => anyhow::bail!("unexpected probe report {other:?}"),
    }
}

fn format_elapsed(elapsed: Duration) -> String {
    if elapsed < Duration::from_secs(1) {
        format!("{:.0} ms", elapsed.as_secs_f64() * 1000.0)
    } else {
        format!("{:.1} s", elapsed.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_line_bound_is_exact() {
        assert_eq!(large_max_peak_bytes(), 80_000_000 + 16_777_216);
    }
}
