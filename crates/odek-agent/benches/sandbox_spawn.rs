//! Sandbox spawn benchmark (issue 20): spawn-to-exit of `true` through the `shell` tool,
//! unconfined and confined by the kernel sandbox, interleaved in one invocation so both see the
//! same machine; and `docker run --rm --network none` of the same command when a container
//! runtime is on `PATH` ("not available" otherwise — never faked).
//!
//! Run: `cargo bench -p odek-agent --bench sandbox_spawn` (`SANDBOX_SPAWN_RUNS` sets the runs per
//! side, 200 by default). Reports the median and best of each side and the median overhead per
//! command (target ≤ 2 ms).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use odek_agent::tool::{Tool, ToolContext};
use odek_agent::tools::ShellTool;
use odek_danger::{DangerPolicy, NonInteractive, PolicySettings};
use odek_sandbox::{Limits, Network, Policy, Sandbox};

fn context(workspace: &Path, sandbox: Option<Arc<Sandbox>>) -> ToolContext {
    let settings = PolicySettings { non_interactive: NonInteractive::Allow, ..PolicySettings::default() };
    let mut ctx = ToolContext::new(workspace.to_path_buf(), workspace.join("home/.odek"), DangerPolicy::new(settings));
    ctx.sandbox = sandbox;
    ctx
}

/// The policy a run gets by default: workspace and temp dir writable, `PATH` readable, no network.
fn policy(workspace: &Path, temp_dir: &Path) -> Policy {
    Policy {
        workspace: workspace.to_path_buf(),
        temp_dir: temp_dir.to_path_buf(),
        readable: Vec::new(),
        writable: Vec::new(),
        protected: vec![workspace.join("home/.odek")],
        network: Network::Deny,
        allow_hosts: Vec::new(),
        limits: Limits::default(),
    }
}

async fn once(tool: &ShellTool, ctx: &ToolContext) -> Duration {
    let args = serde_json::json!({ "command": "true" }).to_string();
    let started = Instant::now();
    let outcome = tool.call(&args, ctx).await.expect("`true` succeeds");
    let elapsed = started.elapsed();
    assert_eq!(outcome.output, "(no output)");
    elapsed
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

fn ms(duration: Duration) -> String {
    format!("{:.3} ms", duration.as_secs_f64() * 1000.0)
}

/// `docker run --rm --network none <image> true`, timed `runs` times, when `docker` is on `PATH`
/// and answers `docker info`; otherwise why not.
fn docker(runs: usize) -> Result<(Duration, Duration), String> {
    let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join("docker"))
        .find(|path| path.is_file());
    let Some(docker) = found else { return Err("not available (no docker on PATH)".to_owned()) };
    let info =
        std::process::Command::new(&docker).arg("info").output().map_err(|err| format!("not available ({err})"))?;
    if !info.status.success() {
        return Err("not available (docker info failed: no daemon)".to_owned());
    }
    let image = std::env::var("SANDBOX_SPAWN_IMAGE").unwrap_or_else(|_| "busybox".to_owned());
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        let status = std::process::Command::new(&docker)
            .args(["run", "--rm", "--network", "none", &image, "true"])
            .status()
            .map_err(|err| format!("docker run: {err}"))?;
        if !status.success() {
            return Err(format!("docker run {image} true failed ({status})"));
        }
        samples.push(started.elapsed());
    }
    let best = samples.iter().min().copied().unwrap_or_default();
    Ok((median(&mut samples), best))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let runs: usize = std::env::var("SANDBOX_SPAWN_RUNS").ok().and_then(|text| text.parse().ok()).unwrap_or(200);
    let workspace = tempfile::tempdir().unwrap();
    let temp_dir = tempfile::tempdir().unwrap();
    let workspace_path = std::fs::canonicalize(workspace.path()).unwrap();
    let support = odek_sandbox::support();
    let sandbox = Arc::new(
        Sandbox::new(policy(&workspace_path, &std::fs::canonicalize(temp_dir.path()).unwrap()))
            .expect("this kernel enforces the sandbox (Landlock)"),
    );
    let tool = ShellTool::default();
    let plain = context(&workspace_path, None);
    let confined = context(&workspace_path, Some(sandbox));
    for _ in 0..10 {
        once(&tool, &plain).await;
        once(&tool, &confined).await;
    }
    let (mut without, mut with) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for _ in 0..runs {
        without.push(once(&tool, &plain).await);
        with.push(once(&tool, &confined).await);
    }
    let (best_without, best_with) = (*without.iter().min().unwrap(), *with.iter().min().unwrap());
    let (median_without, median_with) = (median(&mut without), median(&mut with));
    println!(
        "shell `true`, {runs} runs each, interleaved (Landlock ABI {}, supervisor {})",
        support.landlock_abi, support.supervisor
    );
    println!("  without sandbox: median {}, best {}", ms(median_without), ms(best_without));
    println!("  with sandbox:    median {}, best {}", ms(median_with), ms(best_with));
    println!(
        "  overhead:        median {} per command (target <= 2 ms)",
        ms(median_with.saturating_sub(median_without))
    );
    match docker(runs.min(20)) {
        Ok((median, best)) => {
            let ratio = median.as_secs_f64() / median_with.as_secs_f64();
            println!(
                "  docker run --rm --network none: median {}, best {} ({ratio:.0}x the sandbox)",
                ms(median),
                ms(best)
            );
        }
        Err(why) => println!("  docker run --rm --network none: {why}"),
    }
}
