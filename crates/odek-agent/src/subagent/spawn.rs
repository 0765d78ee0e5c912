//! The parent's side of one child process (spec `subagents.md` §8): spawning `odek subagent`
//! with the filtered environment and the API key on fd 3 — \[beyond\] an untrusted child confined
//! by the sandbox as a whole, with the global config handed over on fd 4 since it cannot read
//! `~/.odek` — reading its stdout within the safety limits, the deadline and cancellation, and
//! the result precedence. Start at [`run_child`].

use std::io::{Seek, Write};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use command_fds::{CommandFdExt, FdMapping};
use odek_mcp::bounded_lines::{BoundedLineReader, LineError, Overflow};
use serde_json::{Value, json};
use tokio::process::{Child, ChildStdout, Command};
use tokio_util::sync::CancellationToken;

use crate::tool::Denial;
use crate::tools::shell::sandbox_denials;

/// Longest stdout line read from a child (bytes).
const MAX_CHILD_LINE_BYTES: usize = 10 * 1024 * 1024;
/// Most stdout lines read from a child.
const MAX_CHILD_LINES: u64 = 100_000;
/// Most stdout bytes read from a child.
const MAX_CHILD_STDOUT_BYTES: u64 = 100 * 1024 * 1024;
/// Raw stdout kept for a child without a parsed result (bytes).
const RAW_OUTPUT_KEEP_BYTES: usize = 102_400;
/// How long the reader may drain after the child exited.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);
/// How long after a kill the pipes are force-closed.
const FORCE_CLOSE_AFTER_KILL: Duration = Duration::from_secs(1);

/// \[beyond\] The variable that tells a confined child its global config is on fd 4.
pub const CONFIG_FD_VARIABLE: &str = "ODEK_CONFIG_FD";

/// \[beyond\] How an untrusted child is confined: the sandbox its whole process runs in, and
/// the global config file it gets on fd 4 instead of reading it (absent: an empty config).
#[derive(Debug, Clone)]
pub struct ChildConfinement {
    pub sandbox: Arc<odek_sandbox::Sandbox>,
    pub global_config: PathBuf,
}

/// How to start one child.
#[derive(Debug, Clone)]
pub struct ChildSpec {
    /// The running odek executable.
    pub program: PathBuf,
    pub cwd: PathBuf,
    /// The whole environment of the child (already filtered; see `child_environment`).
    pub env: Vec<(String, String)>,
    /// Handed over on fd 3 (with `ODEK_API_KEY_FD=3`), never in the environment.
    pub api_key: Option<String>,
    pub task_file: PathBuf,
    pub timeout: Duration,
    /// \[beyond\] Set for an untrusted child when the run's sandbox is in force.
    pub confinement: Option<ChildConfinement>,
}

/// What the parent learned from one child.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildReport {
    /// The result object after §8's precedence.
    pub result: Value,
    /// Whether `result` came from the child (rather than from a failure of the parent's).
    pub parsed: bool,
    /// The head of stdout, for a task without a parsed result.
    pub raw_stdout: Vec<u8>,
    /// The child's pid, when it was spawned.
    pub(crate) pid: Option<u32>,
    /// \[beyond\] What the confinement of an untrusted child refused while it ran — its
    /// commands' connects and metadata changes, which the parent's supervisor answers (a process
    /// tree has one) — bounded as a call's refusals are.
    pub(crate) sandbox_denials: Vec<Denial>,
}

/// §8: the parent's environment minus the `secrets.env` names and the provider key variables,
/// plus the child's depth and, when a key is handed over, `ODEK_API_KEY_FD=3`.
pub fn child_environment(
    parent: &[(String, String)],
    secret_names: &[String],
    depth: u32,
    key_on_fd3: bool,
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = parent
        .iter()
        .filter(|(name, _)| {
            !odek_contract::secret_names::PROVIDER_KEY_VARIABLES.contains(&name.as_str())
                && !secret_names.iter().any(|secret| secret == name)
                && name != "ODEK_SUBAGENT_DEPTH"
                && name != "ODEK_API_KEY_FD"
                && name != CONFIG_FD_VARIABLE
        })
        .cloned()
        .collect();
    env.push(("ODEK_SUBAGENT_DEPTH".to_owned(), (depth + 1).to_string()));
    if key_on_fd3 {
        env.push(("ODEK_API_KEY_FD".to_owned(), "3".to_owned()));
    }
    env
}

/// `bytes` in a `0600` temp file that is unlinked right after it is opened: the open
/// descriptor is all that is left, and it becomes one of the child's descriptors (the key on 3,
/// \[beyond\] the config on 4).
fn handed_descriptor(bytes: &[u8]) -> std::io::Result<OwnedFd> {
    let mut file = tempfile::tempfile()?;
    file.write_all(bytes)?;
    file.rewind()?;
    Ok(OwnedFd::from(file))
}

/// \[beyond\] The global config as the confined child gets it: the file's bytes (at most 5 MiB
/// and one byte, so the child's own limit applies), or `{}` when there is none.
fn global_config_bytes(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    const LIMIT: u64 = 5 * 1024 * 1024 + 1;
    match std::fs::File::open(path) {
        Ok(file) => {
            let mut bytes = Vec::new();
            file.take(LIMIT).read_to_end(&mut bytes)?;
            Ok(bytes)
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(b"{}".to_vec()),
        Err(err) => Err(err),
    }
}

/// The descriptors a child gets: the key on 3, and \[beyond\] for a confined child the global
/// config on 4 (with `ODEK_CONFIG_FD=4`).
fn hand_over(spec: &ChildSpec, command: &mut Command) -> std::io::Result<()> {
    let mut mappings = Vec::with_capacity(2);
    if let Some(key) = &spec.api_key {
        mappings.push(FdMapping { parent_fd: handed_descriptor(key.as_bytes())?, child_fd: 3 });
    }
    if let Some(confinement) = &spec.confinement {
        let config = global_config_bytes(&confinement.global_config)?;
        mappings.push(FdMapping { parent_fd: handed_descriptor(&config)?, child_fd: 4 });
        command.env(CONFIG_FD_VARIABLE, "4");
    }
    if mappings.is_empty() {
        return Ok(());
    }
    command.fd_mappings(mappings).map(|_| ()).map_err(std::io::Error::other)
}

/// What reading stdout produced.
#[derive(Debug, Default)]
struct Read {
    result: Option<Value>,
    raw: Vec<u8>,
    flood: Option<String>,
    error: Option<String>,
}

/// What has been read so far, shared with the supervisor: when the reader is stopped (200 ms
/// after exit, 1 s after a kill) what it already parsed still counts.
type SharedRead = Arc<Mutex<Read>>;

fn lock(read: &SharedRead) -> std::sync::MutexGuard<'_, Read> {
    read.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// **[beyond]** Hears each typed protocol record but `result` (`subagent_started`,
/// `subagent_progress`, …) as the child writes it, on the reader task: it must return quickly.
pub type RecordObserver = Arc<dyn Fn(&serde_json::Map<String, Value>) + Send + Sync>;

/// Reads protocol lines until EOF or a safety limit: a `result` record's `result` is the
/// result; an untyped JSON object is a legacy result (the last one wins); the rest goes to
/// `on_record`, if any.
async fn read_stream(stdout: ChildStdout, shared: SharedRead, on_record: Option<RecordObserver>) {
    let mut reader = BoundedLineReader::new(stdout, MAX_CHILD_LINE_BYTES, Overflow::Fail);
    let (mut lines, mut bytes) = (0_u64, 0_u64);
    loop {
        let next = reader.next_line().await;
        let mut read = lock(&shared);
        let line = match next {
            Ok(Some(line)) => line,
            Ok(None) => return,
            Err(LineError::TooLong { limit }) => {
                read.flood = Some(format!("a line over {limit} bytes"));
                return;
            }
            Err(LineError::Io(err)) => {
                read.error = Some(err.to_string());
                return;
            }
        };
        lines += 1;
        bytes += line.bytes.len() as u64 + 1;
        if lines > MAX_CHILD_LINES {
            read.flood = Some(format!("more than {MAX_CHILD_LINES} lines"));
            return;
        }
        if bytes > MAX_CHILD_STDOUT_BYTES {
            read.flood = Some(format!("more than {MAX_CHILD_STDOUT_BYTES} bytes"));
            return;
        }
        if read.raw.len() < RAW_OUTPUT_KEEP_BYTES + 1 {
            let room = RAW_OUTPUT_KEEP_BYTES + 1 - read.raw.len();
            read.raw.extend_from_slice(&line.bytes[..line.bytes.len().min(room)]);
            read.raw.push(b'\n');
        }
        let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(&line.bytes) else {
            continue;
        };
        match object.get("type").and_then(Value::as_str) {
            Some("result") => {
                if let Some(result @ Value::Object(_)) = object.get("result") {
                    read.result = Some(result.clone());
                }
            }
            Some(kind) if !kind.is_empty() => {
                if let Some(observer) = &on_record {
                    observer(&object);
                }
            }
            _ => read.result = Some(Value::Object(object)),
        }
    }
}

/// How the child ended, as far as the parent is concerned.
#[derive(Debug, Default)]
struct Ending {
    cancelled: bool,
    timed_out: bool,
    exit: Option<Result<std::process::ExitStatus, String>>,
}

/// Spawns the child, reads it to the end within the limits and the deadline, reaps it, and
/// applies §8's result precedence. `on_spawned` gets the pid once the child runs.
pub async fn run_child(spec: &ChildSpec, cancel: &CancellationToken, on_spawned: impl FnOnce(u32)) -> ChildReport {
    run_child_observed(spec, cancel, on_spawned, None).await
}

/// [`run_child`], with every progress record of the child handed to `on_record` as it is read.
pub async fn run_child_observed(
    spec: &ChildSpec,
    cancel: &CancellationToken,
    on_spawned: impl FnOnce(u32),
    on_record: Option<RecordObserver>,
) -> ChildReport {
    let mut command = Command::new(&spec.program);
    command
        .args(["subagent", "--task"])
        .arg(&spec.task_file)
        .args(["--quiet", "--stream"])
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(spec.env.iter().map(|(name, value)| (name, value)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    if let Err(error) = hand_over(spec, &mut command) {
        return failure(
            json!({"status": "error", "error": format!("exit: hand over the API key and config: {error}")}),
            None,
        );
    }
    // [beyond] Confined as a whole, or not started: a sandbox that cannot be set up fails the task.
    let mut confinement = match spec.confinement.as_ref().map(|confined| confined.sandbox.confine(&mut command)) {
        None => None,
        Some(Ok(confinement)) => Some(confinement),
        Some(Err(error)) => return failure(json!({"status": "error", "error": format!("exit: {error}")}), None),
    };
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(err) => return failure(json!({"status": "error", "error": format!("exit: {err}")}), None),
    };
    if let Some(confinement) = &mut confinement
        && let Err(error) = confinement.started()
    {
        let _ = stop_child(&mut child).await;
        return failure(json!({"status": "error", "error": format!("exit: {error}")}), child.id());
    }
    let pid = child.id();
    if let Some(pid) = pid {
        on_spawned(pid);
    }
    let Some(stdout) = child.stdout.take() else {
        let _ = stop_child(&mut child).await;
        return failure(json!({"status": "error", "error": "read stdout: no pipe"}), pid);
    };
    let shared = SharedRead::default();
    let mut reader = tokio::spawn(read_stream(stdout, Arc::clone(&shared), on_record));
    let mut ending = Ending::default();
    let deadline = tokio::time::sleep(spec.timeout);
    tokio::pin!(deadline);
    let mut reader_done = false;
    // A child stopped by the parent reports `cancelled` on its way out; that is not its result.
    let mut result_before_stop = None;
    // Until the child has exited: a deadline or a cancellation stops it; a flood kills it.
    loop {
        tokio::select! {
            () = cancel.cancelled() => {
                ending.cancelled = true;
                result_before_stop = Some(lock(&shared).result.clone());
                ending.exit = Some(stop_child(&mut child).await);
                break;
            }
            () = &mut deadline => {
                ending.timed_out = true;
                result_before_stop = Some(lock(&shared).result.clone());
                ending.exit = Some(stop_child(&mut child).await);
                break;
            }
            _ = &mut reader, if !reader_done => {
                reader_done = true;
                if lock(&shared).flood.is_some() {
                    ending.exit = Some(stop_child(&mut child).await);
                    break;
                }
            }
            status = child.wait() => {
                ending.exit = Some(status.map_err(|err| err.to_string()));
                break;
            }
        }
    }
    if !reader_done {
        // After an exit the reader may drain for 200 ms; after a kill its pipe is closed 1 s later.
        let grace = if ending.cancelled || ending.timed_out { FORCE_CLOSE_AFTER_KILL } else { DRAIN_AFTER_EXIT };
        if tokio::time::timeout(grace, &mut reader).await.is_err() {
            reader.abort();
        }
    }
    // [beyond] Whatever the child left running in its cgroup goes now; what it was refused is
    // reported.
    let sandbox_denials = match confinement {
        Some(confinement) => tokio::task::spawn_blocking(move || confinement.finish())
            .await
            .map(|finished| sandbox_denials(&finished))
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let mut read = std::mem::take(&mut *lock(&shared));
    if let Some(result) = result_before_stop {
        read.result = result;
    }
    ChildReport { sandbox_denials, ..precedence(read, &ending, spec.timeout, pid) }
}

/// Stops a child the way a user would first: SIGINT lets it cancel its run, stop its tools'
/// process groups and its MCP servers, and report; after [`FORCE_CLOSE_AFTER_KILL`] it is killed.
/// Either way it is reaped.
async fn stop_child(child: &mut Child) -> Result<std::process::ExitStatus, String> {
    if let Some(pid) = child.id().and_then(|pid| i32::try_from(pid).ok()) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGINT);
        if let Ok(status) = tokio::time::timeout(FORCE_CLOSE_AFTER_KILL, child.wait()).await {
            return status.map_err(|err| err.to_string());
        }
    }
    let _ = child.start_kill();
    child.wait().await.map_err(|err| err.to_string())
}

/// A report without a parsed result: the child failed to start, to run or to answer.
pub(crate) fn failure(result: Value, pid: Option<u32>) -> ChildReport {
    ChildReport { result, parsed: false, raw_stdout: Vec::new(), pid, sandbox_denials: Vec::new() }
}

/// §8: parsed result → cancelled → timeout → flood → read error → exit error → no result.
fn precedence(read: Read, ending: &Ending, timeout: Duration, pid: Option<u32>) -> ChildReport {
    let Read { result, raw, flood, error } = read;
    if let Some(mut result) = result {
        if result.get("status").and_then(Value::as_str).is_none_or(str::is_empty) {
            result["status"] = json!("completed");
        }
        return ChildReport { result, parsed: true, raw_stdout: raw, pid, sandbox_denials: Vec::new() };
    }
    let result = if ending.cancelled {
        json!({"status": "cancelled", "error": "sub-agent cancelled"})
    } else if ending.timed_out {
        json!({"status": "timeout", "error": format!("timeout after {}s", timeout.as_secs())})
    } else if let Some(limit) = flood {
        json!({"status": "killed_flood", "error": format!("sub-agent progress stream exceeded safety limits ({limit})")})
    } else if let Some(error) = error {
        json!({"status": "error", "error": format!("read stdout: {error}")})
    } else {
        match &ending.exit {
            Some(Err(error)) => json!({"status": "error", "error": format!("exit: {error}")}),
            Some(Ok(status)) => {
                let code = status.code().map_or_else(|| "signal".to_owned(), |code| code.to_string());
                json!({"status": "no_result", "error": format!("no result from sub-agent (exit {code})")})
            }
            None => json!({"status": "no_result", "error": "no result from sub-agent (exit unknown)"}),
        }
    };
    ChildReport { result, parsed: false, raw_stdout: raw, pid, sandbox_denials: Vec::new() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_drops_keys_and_secrets_and_sets_the_depth() {
        let parent = vec![
            ("PATH".to_owned(), "/bin".to_owned()),
            ("ODEK_API_KEY".to_owned(), "k".to_owned()),
            ("OPENAI_API_KEY".to_owned(), "k".to_owned()),
            ("MY_TOKEN".to_owned(), "t".to_owned()),
            ("ODEK_SUBAGENT_DEPTH".to_owned(), "1".to_owned()),
        ];
        let env = child_environment(&parent, &["MY_TOKEN".to_owned()], 1, true);
        assert_eq!(
            env,
            vec![
                ("PATH".to_owned(), "/bin".to_owned()),
                ("ODEK_SUBAGENT_DEPTH".to_owned(), "2".to_owned()),
                ("ODEK_API_KEY_FD".to_owned(), "3".to_owned()),
            ]
        );
    }

    #[test]
    fn precedence_order() {
        let ending = Ending { cancelled: true, timed_out: true, exit: None };
        let parsed = Read { result: Some(json!({"summary": "s"})), ..Read::default() };
        assert_eq!(precedence(parsed, &ending, Duration::from_secs(5), None).result["status"], "completed");
        let report = precedence(Read::default(), &ending, Duration::from_secs(5), None);
        assert_eq!(report.result, json!({"status": "cancelled", "error": "sub-agent cancelled"}));
        let timed_out = Ending { timed_out: true, ..Ending::default() };
        assert_eq!(
            precedence(Read::default(), &timed_out, Duration::from_secs(5), None).result["error"],
            "timeout after 5s"
        );
        let flood = Read { flood: Some("more than 100000 lines".into()), ..Read::default() };
        assert_eq!(
            precedence(flood, &Ending::default(), Duration::from_secs(5), None).result["status"],
            "killed_flood"
        );
    }
}
