//! What a client process consumed: its peak resident set size and its CPU time. Peak RSS is this
//! process's own high-water mark (`VmHWM`) for the clients that run in the probe, and the reaped
//! children's (`getrusage(RUSAGE_CHILDREN)`) for the SDK clients the probe spawns; each probe is a
//! fresh process with a single client, so both numbers belong to that client alone. CPU time
//! (user + system, all threads) is what a call costs the client regardless of how long it waits
//! for the server.

use std::time::{Duration, Instant};

use anyhow::Context;
use nix::sys::resource::{Usage, UsageWho, getrusage};
use nix::sys::time::TimeValLike;

/// This process's peak RSS in bytes, from `VmHWM` in `/proc/self/status`.
pub fn own_peak_bytes() -> anyhow::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    let kib = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().strip_suffix("kB"))
        .and_then(|value| value.trim().parse::<u64>().ok())
        .context("no VmHWM in /proc/self/status")?;
    Ok(kib * 1024)
}

/// The largest peak RSS of any reaped child (and, transitively, of what it reaped), in bytes.
pub fn reaped_children_peak_bytes() -> anyhow::Result<u64> {
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).context("getrusage(RUSAGE_CHILDREN)")?;
    // Linux reports ru_maxrss in KiB.
    Ok(u64::try_from(usage.max_rss()).unwrap_or(0) * 1024)
}

/// User plus system CPU time of every thread of this process so far.
pub fn own_cpu_time() -> anyhow::Result<Duration> {
    Ok(cpu_time(&getrusage(UsageWho::RUSAGE_SELF).context("getrusage(RUSAGE_SELF)")?))
}

fn cpu_time(usage: &Usage) -> Duration {
    let micros = usage.user_time().num_microseconds() + usage.system_time().num_microseconds();
    Duration::from_micros(u64::try_from(micros).unwrap_or(0))
}

/// One echo round trip of a throughput client.
pub trait EchoOnce {
    fn echo_once(&mut self) -> impl Future<Output = anyhow::Result<()>> + Send;
}

/// `warmup` untimed round trips of `client`, then `calls` timed ones: the loop every Rust
/// throughput client runs.
pub async fn timed_calls(client: &mut impl EchoOnce, calls: u64, warmup: u64) -> anyhow::Result<Timed> {
    for _ in 0..warmup {
        client.echo_once().await?;
    }
    let stopwatch = Stopwatch::start()?;
    for _ in 0..calls {
        client.echo_once().await?;
    }
    stopwatch.stop(calls)
}

/// Wall-clock and CPU time of a timed loop.
#[derive(Debug, Clone, Copy)]
pub struct Stopwatch {
    wall: Instant,
    cpu: Duration,
}

/// What one timed loop of `calls` round trips took.
#[derive(Debug, Clone, Copy)]
pub struct Timed {
    pub calls: u64,
    pub elapsed: Duration,
    pub cpu: Duration,
}

impl Stopwatch {
    pub fn start() -> anyhow::Result<Stopwatch> {
        Ok(Stopwatch { cpu: own_cpu_time()?, wall: Instant::now() })
    }

    pub fn stop(self, calls: u64) -> anyhow::Result<Timed> {
        let elapsed = self.wall.elapsed();
        let cpu = own_cpu_time()?.saturating_sub(self.cpu);
        Ok(Timed { calls, elapsed, cpu })
    }
}
