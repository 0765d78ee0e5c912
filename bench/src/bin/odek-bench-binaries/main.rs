//! `odek-bench-binaries`: several builds of the `odek` binary measured side by side in one
//! invocation, by one harness, so a cost that crept in between two revisions shows up as a
//! difference between two columns and not between two days (issue 32 item 9). Each binary is
//! given as `LABEL=PATH`; `bench/compare-binaries` builds them from git revisions.
//!
//! Per round, binaries interleaved (A, B, …; then …, B, A):
//! - **start-up**: `odek run --quiet go` → the first chat request at a scripted OpenAI-compatible
//!   server on 127.0.0.1, with `--servers` echo servers (`odek-bench-echo-server`) in the global
//!   config; the median of `--startup-runs` runs;
//! - **peak RSS**: one `odek run` whose model asks for `--tool-calls` sequential `echo` calls,
//!   then answers; the peak resident set of that process (what `getrusage(RUSAGE_CHILDREN)` says of
//!   a fresh probe process's only child, the echo server it reaped included);
//! - **`ext call --jsonl`**: `--jsonl-calls` sequential requests (after `--jsonl-warmup`) written
//!   to one `odek ext call --jsonl` and answered by one echo server, both on `--cpu`; and, as the
//!   reference, the rmcp client's `odek-bench probe` on the same CPU against the same server,
//!   when this build has the `peers` feature.
//!
//! The echo server and the harness are this tree's for every binary: only `odek` differs. Run the
//! harness itself on another CPU (`taskset -c 1`), so the driver of the JSONL calls does not
//! share odek's core.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use nix::sys::resource::{UsageWho, getrusage};
use odek_test_support::openai::{Reply, ScriptedServer};
use serde_json::{Value, json};

#[derive(Parser)]
#[command(
    name = "odek-bench-binaries",
    about = "odek binaries side by side: start-up, peak RSS, ext call --jsonl",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Probe>,
    /// Rounds; every binary is measured once per round, in alternating order.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Start-up runs per binary and round (after one warm-up).
    #[arg(long, default_value_t = 20)]
    startup_runs: usize,
    /// Echo servers in the global config of the start-up runs.
    #[arg(long, default_value_t = 1)]
    servers: usize,
    /// Tool calls of the peak-RSS run.
    #[arg(long, default_value_t = 50)]
    tool_calls: usize,
    /// Timed `ext call --jsonl` requests per binary and round.
    #[arg(long, default_value_t = 5000)]
    jsonl_calls: u64,
    /// Untimed requests before them.
    #[arg(long, default_value_t = 500)]
    jsonl_warmup: u64,
    /// The CPU odek, its echo server and the rmcp probe run on.
    #[arg(long, default_value_t = 0)]
    cpu: usize,
    /// `LABEL=PATH` of each odek binary.
    binaries: Vec<String>,
}

#[derive(Subcommand)]
enum Probe {
    /// Internal: one peak-RSS run in a fresh process; prints the peak in KiB.
    Rss {
        #[arg(long)]
        odek: PathBuf,
        #[arg(long)]
        tool_calls: usize,
    },
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    if let Some(Probe::Rss { odek, tool_calls }) = &cli.command {
        println!("{}", rss_probe(odek, *tool_calls)?);
        return Ok(());
    }
    if cli.binaries.is_empty() {
        bail!("give at least one LABEL=PATH of an odek binary");
    }
    let binaries = cli.binaries.iter().map(|spec| parse_binary(spec)).collect::<anyhow::Result<Vec<_>>>()?;
    let echo = sibling("odek-bench-echo-server")?;
    let mut results: BTreeMap<String, Samples> = BTreeMap::new();
    for round in 0..cli.rounds {
        let order: Vec<&(String, PathBuf)> =
            if round % 2 == 0 { binaries.iter().collect() } else { binaries.iter().rev().collect() };
        for (label, odek) in order {
            eprintln!("odek-bench-binaries: round {}, {label}", round + 1);
            let samples = results.entry(label.clone()).or_default();
            samples.startup_ms.push(startup_median(odek, &echo, cli.servers, cli.startup_runs)?);
            samples.peak_rss_kib.push(peak_rss(odek, cli.tool_calls)?);
            samples.jsonl_micros.push(jsonl_micros_per_call(odek, &echo, &cli)?);
            if let Some(rmcp) = rmcp_micros_per_call(&echo, &cli)? {
                samples.rmcp_micros.push(rmcp);
            }
        }
    }
    print_table(&cli, &binaries, &results);
    Ok(())
}

#[derive(Debug, Default)]
struct Samples {
    startup_ms: Vec<f64>,
    peak_rss_kib: Vec<f64>,
    jsonl_micros: Vec<f64>,
    rmcp_micros: Vec<f64>,
}

fn parse_binary(spec: &str) -> anyhow::Result<(String, PathBuf)> {
    let (label, path) = spec.split_once('=').with_context(|| format!("{spec}: expected LABEL=PATH"))?;
    let path = PathBuf::from(path).canonicalize().with_context(|| format!("{path}: no such binary"))?;
    Ok((label.to_owned(), path))
}

/// A binary built beside this one.
fn sibling(name: &str) -> anyhow::Result<PathBuf> {
    let own = std::env::current_exe().context("locating odek-bench-binaries")?;
    let path = own.with_file_name(name);
    if !path.is_file() {
        bail!("{} not found; build it with `cargo build --release -p odek-bench`", path.display());
    }
    Ok(path)
}

/// A scratch home and project: `~/.odek/config.json` holds `config`.
struct Scene {
    dir: PathBuf,
}

impl Scene {
    fn new(config: &Value) -> anyhow::Result<Scene> {
        let dir = std::env::temp_dir().join(format!("odek-bench-binaries-{}-{}", std::process::id(), unique()));
        std::fs::create_dir_all(dir.join("home/.odek"))?;
        std::fs::create_dir_all(dir.join("project"))?;
        std::fs::write(dir.join("home/.odek/config.json"), config.to_string())?;
        Ok(Scene { dir })
    }

    /// `odek <args>` in the project, with the scratch home and nothing of this environment but
    /// `PATH` and `LANG`.
    fn command(&self, odek: &Path, args: &[&str]) -> Command {
        let mut command = Command::new(odek);
        command.args(args).current_dir(self.dir.join("project")).env_clear();
        for name in ["PATH", "LANG"] {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        command.env("HOME", self.dir.join("home")).env("ODEK_API_KEY", "sk-bench");
        command
    }
}

impl Drop for Scene {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn unique() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_nanos())
}

fn model_config(server: &ScriptedServer, echo: &Path, servers: usize) -> Value {
    let entries: serde_json::Map<String, Value> = (1..=servers)
        .map(|n| {
            let name = if n == 1 { "echo".to_owned() } else { format!("echo{n}") };
            (name, json!({"command": echo, "auto_approve": true}))
        })
        .collect();
    json!({"base_url": server.base_url(), "model": "bench", "mcp_servers": entries})
}

/// The median wall time of `runs` start-ups, each to the first model request.
fn startup_median(odek: &Path, echo: &Path, servers: usize, runs: usize) -> anyhow::Result<f64> {
    let server = ScriptedServer::start(Vec::new());
    let scene = Scene::new(&model_config(&server, echo, servers))?;
    let mut samples = Vec::with_capacity(runs);
    for run in 0..=runs {
        server.push(Reply::text("done"));
        let started = Instant::now();
        let mut child =
            scene.command(odek, &["run", "--quiet", "go"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn()?;
        server.wait_for_requests(run + 1, Duration::from_secs(60));
        let elapsed = started.elapsed();
        if !child.wait()?.success() {
            bail!("{}: odek run failed (run it by hand in a scratch home to see why)", odek.display());
        }
        if run > 0 {
            samples.push(elapsed.as_secs_f64() * 1000.0);
        }
    }
    Ok(median(&mut samples))
}

/// The peak RSS of one tool-calling run, measured in a fresh process of this binary.
fn peak_rss(odek: &Path, tool_calls: usize) -> anyhow::Result<f64> {
    let own = std::env::current_exe()?;
    let output = Command::new(own)
        .args(["rss", "--odek"])
        .arg(odek)
        .args(["--tool-calls", &tool_calls.to_string()])
        .stderr(Stdio::inherit())
        .output()?;
    if !output.status.success() {
        bail!("the peak-RSS probe of {} failed", odek.display());
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().parse::<f64>()?)
}

fn rss_probe(odek: &Path, tool_calls: usize) -> anyhow::Result<u64> {
    let echo = sibling("odek-bench-echo-server")?;
    let mut replies: Vec<Reply> = (0..tool_calls)
        .map(|call| {
            Reply::tool_calls(vec![(format!("call_{call}"), "echo__echo".to_owned(), r#"{"text":"hello"}"#.to_owned())])
        })
        .collect();
    replies.push(Reply::text("done"));
    let server = ScriptedServer::start(replies);
    let scene = Scene::new(&model_config(&server, &echo, 1))?;
    let status = scene.command(odek, &["run", "--quiet", "go"]).stdout(Stdio::null()).stderr(Stdio::null()).status()?;
    if !status.success() || server.requests().len() != tool_calls + 1 {
        bail!("{}: the tool-calling run did not complete ({} model requests)", odek.display(), server.requests().len());
    }
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN)?;
    Ok(u64::try_from(usage.max_rss()).unwrap_or(0))
}

/// Microseconds per sequential `ext call --jsonl` request, odek and its server on `cli.cpu`.
fn jsonl_micros_per_call(odek: &Path, echo: &Path, cli: &Cli) -> anyhow::Result<f64> {
    let server = ScriptedServer::start(Vec::new());
    let scene = Scene::new(&model_config(&server, echo, 1))?;
    let mut command = scene.command(Path::new("taskset"), &["-c", &cli.cpu.to_string()]);
    command.arg(odek).args(["ext", "call", "--jsonl"]);
    let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn()?;
    let result = drive_jsonl(&mut child, cli.jsonl_warmup, cli.jsonl_calls);
    drop(child.stdin.take());
    let _ = child.wait();
    let elapsed = result?;
    Ok(elapsed.as_secs_f64() * 1e6 / cli.jsonl_calls as f64)
}

fn drive_jsonl(child: &mut Child, warmup: u64, calls: u64) -> anyhow::Result<Duration> {
    let mut stdin = child.stdin.take().context("no stdin")?;
    let mut answers = BufReader::new(child.stdout.take().context("no stdout")?);
    let request = b"{\"tool\":\"echo__echo\",\"arguments\":{\"text\":\"hello\"}}\n";
    let mut line = String::new();
    let mut call = |stdin: &mut std::process::ChildStdin| -> anyhow::Result<()> {
        stdin.write_all(request)?;
        stdin.flush()?;
        line.clear();
        if answers.read_line(&mut line)? == 0 || !line.contains("\"ok\":true") {
            bail!("ext call --jsonl answered {line:?}");
        }
        Ok(())
    };
    for _ in 0..warmup {
        call(&mut stdin)?;
    }
    let started = Instant::now();
    for _ in 0..calls {
        call(&mut stdin)?;
    }
    let elapsed = started.elapsed();
    child.stdin = Some(stdin);
    Ok(elapsed)
}

/// Microseconds per call of rmcp's client (`odek-bench probe --client rmcp`) against the same
/// server on the same CPU; `None` when this build has no rmcp.
fn rmcp_micros_per_call(echo: &Path, cli: &Cli) -> anyhow::Result<Option<f64>> {
    let bench = sibling("odek-bench")?;
    let output = Command::new("taskset")
        .args(["-c", &cli.cpu.to_string()])
        .arg(&bench)
        .args(["probe", "--client", "rmcp", "--mode", "throughput"])
        .args(["--calls", &cli.jsonl_calls.to_string(), "--warmup", &cli.jsonl_warmup.to_string(), "--"])
        .arg(echo)
        .stderr(Stdio::null())
        .output()?;
    if !output.status.success() {
        return Ok(None);
    }
    let report: Value = serde_json::from_slice(output.stdout.trim_ascii())?;
    let (Some(calls), Some(seconds)) = (report["calls"].as_f64(), report["seconds"].as_f64()) else {
        return Ok(None);
    };
    Ok(Some(seconds * 1e6 / calls))
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples.get(samples.len() / 2).copied().unwrap_or(f64::NAN)
}

fn print_table(cli: &Cli, binaries: &[(String, PathBuf)], results: &BTreeMap<String, Samples>) {
    println!(
        "odek binaries side by side: {} round(s); start-up with {} echo server(s), median of {} runs; peak RSS of a run of {} tool calls; {} sequential `ext call --jsonl` calls on CPU {} (after {} untimed)\n",
        cli.rounds, cli.servers, cli.startup_runs, cli.tool_calls, cli.jsonl_calls, cli.cpu, cli.jsonl_warmup
    );
    println!(
        "| Binary | start → first request, ms | peak RSS, MiB | ext call --jsonl, µs/call | rmcp, µs/call | odek's calls/s ÷ rmcp's |"
    );
    println!("|---|---|---|---|---|---|");
    let list = |values: &[f64], scale: f64, digits: usize| {
        values.iter().map(|value| format!("{:.digits$}", value * scale)).collect::<Vec<_>>().join(", ")
    };
    for (label, _) in binaries {
        let Some(samples) = results.get(label) else { continue };
        let ratios: Vec<f64> =
            samples.jsonl_micros.iter().zip(&samples.rmcp_micros).map(|(odek, rmcp)| rmcp / odek).collect();
        println!(
            "| {label} | {} | {} | {} | {} | {} |",
            list(&samples.startup_ms, 1.0, 1),
            list(&samples.peak_rss_kib, 1.0 / 1024.0, 1),
            list(&samples.jsonl_micros, 1.0, 1),
            if samples.rmcp_micros.is_empty() { "—".to_owned() } else { list(&samples.rmcp_micros, 1.0, 1) },
            if ratios.is_empty() { "—".to_owned() } else { list(&ratios, 1.0, 2) },
        );
    }
}
