//! The `shell` tool: classifies the command line, asks the danger policy, then runs it with
//! `bash -c` (or `sh -c` without bash) in its own process group, stdin closed, stdout and stderr
//! merged into one bounded capture. The whole group is killed on timeout, on cancellation and
//! when the call ends (background jobs do not outlive the call); so is every process that left
//! the group (`setsid`, job control) but still holds the output pipe, so no such process can
//! keep the call waiting past its deadline.
//!
//! The timeout is the model's `timeout_seconds` (default [`DEFAULT_TIMEOUT_SECONDS`], as the
//! reference), clamped to the operator's cap (`limits.shell_timeout_seconds`, default
//! [`DEFAULT_TIMEOUT_SECONDS`]). At the deadline the model gets the timeout as the call's error,
//! with the output captured so far.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use odek_contract::secret_names::PROVIDER_KEY_VARIABLES;
use odek_contract::untrusted::wrap_untrusted;
use odek_llm::{BoxFuture, ToolDefinition};
use serde::Deserialize;
use tokio::io::AsyncReadExt;

use super::{parse_arguments, policy_denial, resolve_path};
use crate::tool::{Denial, Risk, Tool, ToolContext, ToolError, ToolOutcome};
use odek_danger::{DangerClass, classify_command_in};

/// Timeout when the model gives none, and the operator's cap when the config sets none
/// (seconds): 30 minutes, as the reference.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 30 * 60;
/// Output kept from the start of the merged stdout/stderr stream (bytes).
const HEAD_BYTES: usize = 768 * 1024;
/// Output kept from the end of the stream (bytes); what lies between is counted and dropped.
const TAIL_BYTES: usize = 256 * 1024;
/// How long to wait for the output pipe to close once the shell has exited.
const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// How long to wait for a killed process group to be reaped.
const REAP_GRACE: Duration = Duration::from_secs(5);

/// The `shell` tool with the operator's cap on `timeout_seconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShellTool {
    max_timeout_seconds: u64,
}

impl ShellTool {
    /// A shell whose calls never run longer than `max_timeout_seconds` (`0` = the default cap).
    pub(crate) fn new(max_timeout_seconds: u64) -> ShellTool {
        let max_timeout_seconds = if max_timeout_seconds == 0 { DEFAULT_TIMEOUT_SECONDS } else { max_timeout_seconds };
        ShellTool { max_timeout_seconds }
    }
}

impl Default for ShellTool {
    fn default() -> ShellTool {
        ShellTool::new(DEFAULT_TIMEOUT_SECONDS)
    }
}

#[derive(Deserialize)]
struct ShellArgs {
    command: String,
    #[serde(default)]
    timeout_seconds: Option<u64>,
    #[serde(default)]
    workdir: Option<String>,
}

impl ShellTool {
    fn working_directory(args: &ShellArgs, ctx: &ToolContext) -> PathBuf {
        match &args.workdir {
            Some(dir) if !dir.trim().is_empty() => resolve_path(dir, ctx),
            _ => ctx.cwd.clone(),
        }
    }
}

impl Tool for ShellTool {
    fn definition(&self) -> ToolDefinition {
        let cap = self.max_timeout_seconds;
        let default = DEFAULT_TIMEOUT_SECONDS.min(cap);
        ToolDefinition {
            name: "shell".to_owned(),
            description: "Run a shell command line with bash and return its combined stdout and stderr. \
                The command runs in the working directory (or `workdir`), without a terminal and with stdin \
                closed, so interactive programs will not work. A non-zero exit is reported as an error ending \
                in `exit status <n>`. Output is capped at about 1 MiB (the middle is cut). Commands are \
                classified by risk and may be denied by configuration. Prefer read_file, write_file, patch \
                and search_files for reading, editing and searching files."
                .to_owned(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The command line to run with bash -c."},
                    "timeout_seconds": {
                        "type": "integer", "minimum": 1, "maximum": cap,
                        "description": format!("Kill the command's process group (and what still holds its output) after this many seconds (default {default}; at most {cap}, a larger value is lowered to {cap}). On timeout the call fails with the output so far.")
                    },
                    "workdir": {"type": "string", "description": "Directory to run in, relative to the working directory (default: the working directory)."}
                },
                "required": ["command"],
                "additionalProperties": false
            }),
        }
    }

    fn risk(&self, arguments: &str, ctx: &ToolContext) -> Option<Risk> {
        match parse_arguments::<ShellArgs>("shell", arguments) {
            Ok(args) => {
                let dir = ShellTool::working_directory(&args, ctx);
                let class = classify_command_in(&args.command, &dir, &ctx.odek_home).class;
                Some(Risk { class, resource: args.command })
            }
            Err(_) => Some(Risk { class: DangerClass::Unknown, resource: "(unreadable shell arguments)".to_owned() }),
        }
    }

    fn call<'a>(&'a self, arguments: &'a str, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutcome, ToolError>> {
        Box::pin(async move {
            let args: ShellArgs = parse_arguments("shell", arguments)?;
            if args.command.trim().is_empty() {
                return Err(ToolError::new("command must not be empty"));
            }
            let dir = ShellTool::working_directory(&args, ctx);
            if !tokio::fs::metadata(&dir).await.is_ok_and(|metadata| metadata.is_dir()) {
                return Err(ToolError::new(format!("workdir {}: no such directory", dir.display())));
            }
            let timeout_seconds = effective_timeout(args.timeout_seconds, self.max_timeout_seconds);
            match run_policed(&args.command, &dir, Duration::from_secs(timeout_seconds), ctx).await? {
                Policed::Denied(denied) => Ok(denied),
                Policed::Ran(run) => render_run(&args.command, timeout_seconds, run),
            }
        })
    }
}

/// A command line after the danger policy had its say.
#[derive(Debug)]
pub(crate) enum Policed {
    /// Refused: the denial, with the exact text the model reads.
    Denied(ToolOutcome),
    Ran(RunResult),
}

/// What the `shell` tool does with a command line, for it and for odek's own commands (a
/// run's `--check`s, `crate::finish::checks`): classify it in `dir`, ask the danger policy, then
/// run it under `timeout`.
pub(crate) async fn run_policed(
    command: &str,
    dir: &Path,
    timeout: Duration,
    ctx: &ToolContext,
) -> Result<Policed, ToolError> {
    let classification = classify_command_in(command, dir, &ctx.odek_home);
    if let Some(denied) = policy_denial(&classification, command, ctx) {
        return Ok(Policed::Denied(denied));
    }
    Ok(Policed::Ran(run_command(command, dir, timeout, ctx).await?))
}

/// The model's `timeout_seconds` clamped to the operator's `cap`; absent or 0 ⇒ the default
/// (itself never above the cap).
fn effective_timeout(requested: Option<u64>, cap: u64) -> u64 {
    match requested {
        None | Some(0) => DEFAULT_TIMEOUT_SECONDS.min(cap),
        Some(seconds) => seconds.min(cap),
    }
}

/// How a run ended.
#[derive(Debug)]
pub(crate) enum RunEnd {
    /// Exit code, or 128 + signal number when a signal ended the shell.
    Exited(i32),
    TimedOut,
    Cancelled,
}

#[derive(Debug)]
pub(crate) struct RunResult {
    pub(crate) end: RunEnd,
    /// The merged stdout and stderr, head and tail kept (not redacted).
    pub(crate) output: String,
    /// Background processes still held the output open after the shell exited.
    pub(crate) output_abandoned: bool,
    /// \[beyond\] What the sandbox refused, when the command ran confined.
    pub(crate) sandbox: Option<odek_sandbox::Finished>,
}

impl RunResult {
    /// Every operation the sandbox refused while the command ran, as the call's denials
    /// ([`sandbox_denials`]).
    pub(crate) fn sandbox_denials(&self) -> Vec<Denial> {
        self.sandbox.as_ref().map(sandbox_denials).unwrap_or_default()
    }
}

/// What a confinement refused (the supervisor's and the proxy's refusals, in the order they
/// happened), as denials — each an `operation_denied` event of a call, or a `subagent_denied` of
/// a confined sub-agent: the first [`SANDBOX_DENIAL_EVENTS`], then for the rest one per kind
/// (network, metadata) saying how many more there were, of that kind's class and counting as
/// that many.
pub(crate) fn sandbox_denials(finished: &odek_sandbox::Finished) -> Vec<Denial> {
    let denial = |refused: &odek_sandbox::Denial| Denial::new(sandbox_class(refused), refused.to_string());
    let mut denials: Vec<Denial> = finished.denials.iter().take(SANDBOX_DENIAL_EVENTS).map(denial).collect();
    let rest = finished.beyond(SANDBOX_DENIAL_EVENTS);
    for (class, count) in [(DangerClass::NetworkEgress, rest.network), (DangerClass::SystemWrite, rest.metadata)] {
        if count > 0 {
            denials.push(Denial { class, reason: odek_sandbox::more_refused_line(count), count });
        }
    }
    denials
}

/// The danger class of a sandbox refusal: a connection or a listening socket is
/// `network_egress`; a change to a file's metadata outside the writable paths is `system_write`.
fn sandbox_class(refused: &odek_sandbox::Denial) -> DangerClass {
    if refused.is_network() { DangerClass::NetworkEgress } else { DangerClass::SystemWrite }
}

/// Refusals listed in a call's output; the rest are counted.
const SANDBOX_DENIALS_SHOWN: usize = 5;
/// Refusals of one call reported one by one as `operation_denied` events; one more event counts
/// the rest, so a command refused in a loop cannot flood the stream.
const SANDBOX_DENIAL_EVENTS: usize = 16;

/// The lines a confined command's output ends with: each refusal the sandbox saw (connect,
/// bind, the proxy), and for a failed command one line naming the sandbox, since a
/// "Permission denied" from Landlock looks like any other.
fn sandbox_lines(finished: &odek_sandbox::Finished, failed: bool) -> Vec<String> {
    let mut lines: Vec<String> = finished.denials.iter().take(SANDBOX_DENIALS_SHOWN).map(ToString::to_string).collect();
    let more = finished.beyond(SANDBOX_DENIALS_SHOWN).total();
    if more > 0 {
        lines.push(odek_sandbox::more_refused_line(more));
    }
    if failed && lines.is_empty() {
        lines.push(SANDBOX_NOTE.to_owned());
    }
    lines
}

/// What a failed confined command is told about the sandbox.
const SANDBOX_NOTE: &str = "sandbox: this command ran in odek's sandbox (writes only in the workspace and $TMPDIR, \
    no access to ~/.odek, network as configured); a permission or connection error may come from it";

fn render_run(command: &str, timeout_seconds: u64, run: RunResult) -> Result<ToolOutcome, ToolError> {
    let source = format!("$ {command}");
    let denials = run.sandbox_denials();
    let mut output = run.output;
    if run.output_abandoned {
        output.push_str("\n[background processes kept the output open; they were stopped]");
    }
    let failed = !matches!(run.end, RunEnd::Exited(0));
    // The sandbox's lines are odek's, outside the untrusted wrapper.
    let sandbox = run.sandbox.as_ref().map(|finished| sandbox_lines(finished, failed)).unwrap_or_default().join("\n");
    let status = |status: String| if sandbox.is_empty() { status } else { format!("{sandbox}\n{status}") };
    let result = match run.end {
        RunEnd::Exited(0) if output.is_empty() && sandbox.is_empty() => Ok(ToolOutcome::text("(no output)")),
        RunEnd::Exited(0) if sandbox.is_empty() => Ok(ToolOutcome::untrusted(output, source)),
        RunEnd::Exited(0) => Ok(ToolOutcome::text(with_status_line(&wrap_untrusted(&source, &output), &sandbox))),
        RunEnd::Exited(code) => Err(ToolError::new(with_status_line(
            &wrap_untrusted(&source, &output),
            &status(format!("exit status {code}")),
        ))),
        RunEnd::TimedOut => Err(ToolError::new(with_status_line(
            &wrap_untrusted(&source, &output),
            &status(format!("command timed out after {timeout_seconds}s; its process group was killed")),
        ))),
        RunEnd::Cancelled => Err(ToolError::new("cancelled")),
    };
    match result {
        Ok(mut outcome) => {
            outcome.denials = denials;
            Ok(outcome)
        }
        Err(mut error) => {
            error.denials = denials;
            Err(error)
        }
    }
}

fn with_status_line(wrapped: &str, status: &str) -> String {
    if wrapped.is_empty() { status.to_owned() } else { format!("{wrapped}\n{status}") }
}

/// `bash` when it is on `PATH`, else `sh`.
fn shell_program() -> &'static str {
    let on_path = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join("bash").is_file()))
        .unwrap_or(false);
    if on_path { "bash" } else { "sh" }
}

/// Kills the process group when dropped (the call's future was dropped, or it ended), and, unless
/// the output pipe was seen closed, every process still holding it.
struct GroupGuard {
    pgid: Option<Pid>,
    /// The inode of the output pipe, to find processes that left the group but kept it open.
    pipe: Option<u64>,
    /// The output pipe reached end-of-file: nothing holds it any more.
    drained: bool,
}

impl GroupGuard {
    fn kill(&self) {
        if let Some(pgid) = self.pgid {
            // ESRCH (already gone) is the expected case after a clean exit.
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }

    /// The group, then whoever still holds the pipe.
    fn kill_all(&self) {
        self.kill();
        if let Some(pipe) = self.pipe {
            kill_pipe_holders(pipe);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.drained { self.kill() } else { self.kill_all() }
    }
}

/// SIGKILLs every other process holding an end of the pipe with inode `pipe` open: what is left
/// of a command after its process group was killed (a `setsid` or job-control background job
/// that inherited stdout). Linux only (`/proc`); elsewhere the group kill is all there is.
/// Processes that vanish while the table is read are skipped.
/// Returns the pids it signalled.
fn kill_pipe_holders(pipe: u64) -> Vec<i32> {
    let mut killed = Vec::new();
    let Ok(processes) = std::fs::read_dir("/proc") else { return killed };
    let own = std::process::id();
    let wanted = format!("pipe:[{pipe}]");
    for process in processes.flatten() {
        let Some(pid) = process.file_name().to_str().and_then(|name| name.parse::<u32>().ok()) else { continue };
        if pid == own {
            continue;
        }
        let Ok(descriptors) = std::fs::read_dir(process.path().join("fd")) else { continue };
        let holds = descriptors.flatten().any(|descriptor| {
            std::fs::read_link(descriptor.path()).is_ok_and(|target| target.as_os_str() == wanted.as_str())
        });
        if holds && let Ok(pid) = i32::try_from(pid) {
            let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
            killed.push(pid);
        }
    }
    killed
}

/// Longest wait for the pipe holders a call killed to be gone, so "they were stopped" is true
/// when the call returns (a SIGKILLed process closes its files a moment before it is a zombie).
const HOLDERS_GONE_GRACE: Duration = Duration::from_millis(500);

/// Waits, at most [`HOLDERS_GONE_GRACE`], until none of `pids` is running (gone, or a zombie
/// waiting for its parent). Blocking: run it off the runtime.
fn wait_until_gone(pids: &[i32]) {
    let deadline = std::time::Instant::now() + HOLDERS_GONE_GRACE;
    let running = |pid: &i32| match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => !stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    };
    while pids.iter().any(running) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
}

async fn run_command(command: &str, dir: &Path, timeout: Duration, ctx: &ToolContext) -> Result<RunResult, ToolError> {
    let spawn_error = |err: std::io::Error| ToolError::new(format!("cannot start the shell: {err}"));
    let (reader, writer) = std::io::pipe().map_err(spawn_error)?;
    let stderr_writer = writer.try_clone().map_err(spawn_error)?;
    let mut process = tokio::process::Command::new(shell_program());
    process
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .env_remove("ODEK_API_KEY_FD")
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::from(stderr_writer))
        .process_group(0)
        .kill_on_drop(true);
    // The model's commands never see odek's own provider key.
    for name in PROVIDER_KEY_VARIABLES {
        process.env_remove(name);
    }
    let pipe_inode = nix::sys::stat::fstat(&reader).ok().map(|stat| stat.st_ino);
    // A call cancelled before it got here (the batch's deadline, a stop signal) has no side effect.
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::new("cancelled"));
    }
    // [beyond] Confined, or not run at all: a sandbox that cannot be set up fails the call.
    let mut confinement = match &ctx.sandbox {
        Some(sandbox) => Some(sandbox.confine(&mut process).map_err(|err| ToolError::new(err.to_string()))?),
        None => None,
    };
    let mut child = process.spawn().map_err(spawn_error)?;
    // The parent's copies of the write end must close, or the pipe never reaches EOF.
    drop(process);
    if let Some(confinement) = &mut confinement
        && let Err(err) = confinement.started()
    {
        let _ = child.start_kill();
        return Err(ToolError::new(err.to_string()));
    }
    let mut group = GroupGuard {
        pgid: child.id().and_then(|id| i32::try_from(id).ok()).map(Pid::from_raw),
        pipe: pipe_inode,
        drained: false,
    };

    let capture = Arc::new(Mutex::new(HeadTail::default()));
    let pipe = tokio::process::ChildStdout::from_std(std::process::ChildStdout::from(OwnedFd::from(reader)))
        .map_err(spawn_error)?;
    let mut reader_task = tokio::spawn(read_into(pipe, Arc::clone(&capture)));

    let end = tokio::select! {
        status = child.wait() => match status {
            Ok(status) => RunEnd::Exited(exit_code(status)),
            Err(err) => return Err(ToolError::new(format!("waiting for the shell: {err}"))),
        },
        () = tokio::time::sleep(timeout) => RunEnd::TimedOut,
        () = ctx.cancel.cancelled() => RunEnd::Cancelled,
    };
    // A command that exited on its own may leave background jobs writing: they get the drain
    // grace. One stopped by the deadline or a cancel gets none: everything goes now.
    let exited = matches!(end, RunEnd::Exited(_));
    let drained_on_its_own = exited && tokio::time::timeout(DRAIN_GRACE, &mut reader_task).await.is_ok();
    let mut drained = drained_on_its_own;
    if !drained {
        group.kill();
        let _ = tokio::time::timeout(REAP_GRACE, child.wait()).await;
        if let Some(pipe) = pipe_inode {
            let _ = tokio::task::spawn_blocking(move || wait_until_gone(&kill_pipe_holders(pipe))).await;
        }
        drained = tokio::time::timeout(DRAIN_GRACE, &mut reader_task).await.is_ok();
        if !drained {
            reader_task.abort();
        }
    }
    group.drained = drained;
    drop(group);
    // Whatever of the command is still alive in its cgroup goes now, then the refusals are read.
    let sandbox = match confinement {
        Some(confinement) => tokio::task::spawn_blocking(move || confinement.finish()).await.ok(),
        None => None,
    };
    let output = match capture.lock() {
        Ok(capture) => capture.render(),
        Err(poisoned) => poisoned.into_inner().render(),
    };
    Ok(RunResult { end, output, output_abandoned: exited && !drained_on_its_own || !drained, sandbox })
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status.code().or_else(|| status.signal().map(|signal| 128 + signal)).unwrap_or(-1)
}

async fn read_into(mut pipe: tokio::process::ChildStdout, capture: Arc<Mutex<HeadTail>>) {
    let mut chunk = vec![0_u8; 16 * 1024];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => match capture.lock() {
                Ok(mut capture) => capture.push(&chunk[..n]),
                Err(_) => return,
            },
        }
    }
}

/// The first [`HEAD_BYTES`] and last [`TAIL_BYTES`] of a stream, and how much fell between.
#[derive(Debug, Default)]
struct HeadTail {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    omitted: u64,
}

impl HeadTail {
    fn push(&mut self, mut bytes: &[u8]) {
        if self.head.len() < HEAD_BYTES {
            let take = bytes.len().min(HEAD_BYTES - self.head.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        self.tail.extend(bytes);
        if self.tail.len() > TAIL_BYTES {
            let excess = self.tail.len() - TAIL_BYTES;
            self.tail.drain(..excess);
            self.omitted += excess as u64;
        }
    }

    fn render(&self) -> String {
        let mut bytes = self.head.clone();
        if self.omitted > 0 {
            bytes.extend_from_slice(format!("\n[… {} bytes of output omitted …]\n", self.omitted).as_bytes());
        }
        bytes.extend(self.tail.iter());
        let text = String::from_utf8_lossy(&bytes);
        text.strip_suffix('\n').unwrap_or(&text).to_owned()
    }
}

#[cfg(test)]
mod tests {
    use odek_sandbox::Tally;

    use super::*;

    #[test]
    fn timeout_defaults_to_30_minutes_and_is_clamped_to_the_cap() {
        assert_eq!(DEFAULT_TIMEOUT_SECONDS, 1800);
        assert_eq!(effective_timeout(None, 1800), 1800);
        assert_eq!(effective_timeout(Some(0), 1800), 1800);
        assert_eq!(effective_timeout(Some(5), 1800), 5);
        assert_eq!(effective_timeout(Some(100_000), 1800), 1800);
        // A lower cap lowers the default too; a higher one lets the model ask for more.
        assert_eq!(effective_timeout(None, 60), 60);
        assert_eq!(effective_timeout(Some(90), 60), 60);
        assert_eq!(effective_timeout(None, 7200), 1800);
        assert_eq!(effective_timeout(Some(3600), 7200), 3600);
        assert_eq!(ShellTool::new(0), ShellTool::default());
    }

    #[test]
    fn the_schema_states_the_cap() {
        let definition = ShellTool::new(600).definition();
        let timeout = &definition.parameters["properties"]["timeout_seconds"];
        assert_eq!(timeout["maximum"], 600);
        let text = timeout["description"].as_str().unwrap();
        assert!(text.contains("default 600; at most 600, a larger value is lowered to 600"), "{text}");
    }

    #[test]
    fn every_sandbox_refusal_is_a_denial_up_to_the_cap_then_one_per_kind_counts_the_rest_red() {
        let refused = |operation, index: usize| odek_sandbox::Denial {
            operation,
            target: format!("t{index}"),
            reason: "outside".to_owned(),
        };
        let run = |denials, more_denials| RunResult {
            end: RunEnd::Exited(0),
            output: String::new(),
            output_abandoned: false,
            sandbox: Some(odek_sandbox::Finished { denials, more_denials, killed: 0 }),
        };
        let listed = run(vec![refused("chmod", 1), refused("bind", 2)], Tally::default()).sandbox_denials();
        assert_eq!(
            listed,
            [
                Denial::new(DangerClass::SystemWrite, "sandbox: chmod t1 refused (outside)"),
                Denial::new(DangerClass::NetworkEgress, "sandbox: bind t2 refused (outside)"),
            ]
        );
        // 16 listed, then one connect and one chmod kept past them, and more only counted.
        let mut denials: Vec<_> = (0..SANDBOX_DENIAL_EVENTS).map(|index| refused("connect", index)).collect();
        denials.extend([refused("chmod", 99), refused("connect", 100)]);
        let capped = run(denials, Tally { network: 30, metadata: 2 }).sandbox_denials();
        assert_eq!(capped.len(), SANDBOX_DENIAL_EVENTS + 2);
        let summaries: Vec<_> = capped[SANDBOX_DENIAL_EVENTS..]
            .iter()
            .map(|denial| (denial.class, denial.reason.as_str(), denial.count))
            .collect();
        assert_eq!(
            summaries,
            [
                (DangerClass::NetworkEgress, "sandbox: 31 more refused operation(s)", 31),
                (DangerClass::SystemWrite, "sandbox: 3 more refused operation(s)", 3),
            ]
        );
        assert_eq!(
            capped.iter().map(|denial| denial.count).sum::<usize>(),
            SANDBOX_DENIAL_EVENTS + 34,
            "every refusal"
        );
    }

    #[test]
    fn head_tail_keeps_both_ends() {
        let mut capture = HeadTail::default();
        capture.push(&vec![b'a'; HEAD_BYTES]);
        capture.push(&vec![b'b'; 1000]);
        capture.push(&vec![b'c'; TAIL_BYTES]);
        let text = capture.render();
        assert!(text.starts_with('a'));
        assert!(text.ends_with('c'));
        assert!(text.contains("[… 1000 bytes of output omitted …]"));
        assert!(text.len() < HEAD_BYTES + TAIL_BYTES + 100);
    }
}
