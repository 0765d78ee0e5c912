//! The TypeScript and Python SDK rows: where `bench/peers/install.sh` put them, which version is
//! installed, and running their scripts (`bench/peers/ts/bench.mjs`, `bench/peers/py/bench.py`)
//! as the probe's only child. The scripts print the probe's own JSON shapes; the probe adds the
//! peak RSS it reads once the script is reaped, and turns a script that ran past the scenario's
//! timeout into a `timeout` report. Start at [`probe`].

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, bail};

use crate::child::run_with_deadline;
use crate::clients::ClientKind;
use crate::probe::{Outcome, ProbeArgs, ProbeMode, ProbeReport, Target};

/// Overrides the Python venv location (as in `install.sh`).
const PY_VENV_ENV: &str = "ODEK_BENCH_PY_VENV";

/// An installed SDK peer: the interpreter and the script it runs.
#[derive(Debug)]
pub struct SdkPeer {
    program: PathBuf,
    script: PathBuf,
}

impl SdkPeer {
    /// The installed peer, or `Err("not installed …")` for the row.
    pub fn locate(kind: ClientKind, repo_root: &Path) -> Result<SdkPeer, String> {
        let peers = repo_root.join("bench/peers");
        match kind {
            ClientKind::TypescriptSdk => {
                let Some(node) = crate::pinning::find_in_path("node") else {
                    return Err("not installed (node not on PATH)".to_owned());
                };
                if !ts_sdk_package(repo_root).is_file() {
                    return Err("not installed (run bench/peers/install.sh)".to_owned());
                }
                Ok(SdkPeer { program: node, script: peers.join("ts/bench.mjs") })
            }
            ClientKind::PythonSdk => {
                let python = py_venv(repo_root).join("bin/python");
                if !python.is_file() {
                    return Err("not installed (run bench/peers/install.sh)".to_owned());
                }
                Ok(SdkPeer { program: python, script: peers.join("py/bench.py") })
            }
            other => Err(format!("{other} is not an SDK peer")),
        }
    }
}

/// The installed SDK version: the package's `package.json`, or the `mcp-<version>.dist-info`
/// directory of the venv.
pub fn installed_version(kind: ClientKind, repo_root: &Path) -> Option<String> {
    match kind {
        ClientKind::TypescriptSdk => {
            let package = std::fs::read_to_string(ts_sdk_package(repo_root)).ok()?;
            let package: serde_json::Value = serde_json::from_str(&package).ok()?;
            package.get("version")?.as_str().map(str::to_owned)
        }
        ClientKind::PythonSdk => {
            let lib = py_venv(repo_root).join("lib");
            let site_packages =
                std::fs::read_dir(lib).ok()?.flatten().map(|python| python.path().join("site-packages"));
            site_packages.filter_map(|dir| std::fs::read_dir(dir).ok()).flatten().flatten().find_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                let version = name.strip_prefix("mcp-")?.strip_suffix(".dist-info")?;
                Some(version.to_owned())
            })
        }
        _ => None,
    }
}

fn ts_sdk_package(repo_root: &Path) -> PathBuf {
    repo_root.join("bench/peers/ts/node_modules/@modelcontextprotocol/sdk/package.json")
}

fn py_venv(repo_root: &Path) -> PathBuf {
    std::env::var_os(PY_VENV_ENV).map_or_else(|| repo_root.join(".ci/cache/bench-peers/py-venv"), PathBuf::from)
}

/// Runs the peer script once and returns its report with the script's peak RSS filled in. The
/// script is the only child this process reaps (over HTTP the server is still running when the
/// peak is read), so the reaped children's peak is the script's.
pub fn probe(args: &ProbeArgs, target: &Target) -> anyhow::Result<ProbeReport> {
    let repo_root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().context("repo root")?;
    let peer = SdkPeer::locate(args.client, repo_root).map_err(anyhow::Error::msg)?;
    let mut command = Command::new(&peer.program);
    command.arg(&peer.script);
    let deadline = match args.mode {
        ProbeMode::Throughput => {
            command.args(["throughput", &args.calls.to_string(), &args.warmup.to_string()]);
            crate::throughput::run_deadline(args.transport, args.calls + args.warmup)
        }
        ProbeMode::Memory => {
            let cap = args.max_response_bytes.unwrap_or(0);
            let event_stream = u8::from(args.event_stream);
            command.args(["memory", &args.line_bytes.to_string(), &cap.to_string(), &args.newline_every.to_string()]);
            command.arg(event_stream.to_string());
            Duration::from_secs(args.timeout_secs)
        }
    };
    match target {
        Target::Stdio(server) => command.arg("--").args(server),
        Target::Http(url) => command.args(["--url", url]),
    };
    let run = run_with_deadline(&mut command, deadline)?;
    let peak_rss_bytes = crate::usage::reaped_children_peak_bytes()?;
    let reported = run.report_line().map(serde_json::from_str::<ProbeReport>).transpose();
    match (args.mode, run.status, reported) {
        (_, Some(_), Ok(Some(report @ ProbeReport::Throughput { .. }))) => Ok(report),
        (ProbeMode::Memory, Some(_), Ok(Some(ProbeReport::Memory { outcome, elapsed_ms, detail, .. }))) => {
            Ok(ProbeReport::Memory { outcome, elapsed_ms, detail, peak_rss_bytes: Some(peak_rss_bytes) })
        }
        (ProbeMode::Memory, None, _) => Ok(ProbeReport::Memory {
            outcome: Outcome::Timeout,
            elapsed_ms: run.elapsed.as_secs_f64() * 1000.0,
            detail: format!("no answer after {} s; killed", args.timeout_secs),
            peak_rss_bytes: Some(peak_rss_bytes),
        }),
        (ProbeMode::Memory, Some(status), _) => Ok(ProbeReport::Memory {
            outcome: Outcome::Crashed,
            elapsed_ms: run.elapsed.as_secs_f64() * 1000.0,
            detail: format!("{} exited ({status}) without a report", args.client),
            peak_rss_bytes: Some(peak_rss_bytes),
        }),
        (ProbeMode::Throughput, None, _) => bail!("{} did not finish within {} s", args.client, deadline.as_secs()),
        (ProbeMode::Throughput, Some(status), reported) => {
            bail!("{} exited ({status}) without a throughput report ({reported:?})", args.client)
        }
    }
}
