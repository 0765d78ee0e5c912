//! \[beyond\] Issue 32: package runners as Claude Code project configs use them —
//! `{"command": "npx", "args": ["-y", "<pkg>"]}` in `./.mcp.json` — start confined, through the
//! real `odek` binary and real `npx`: the interop set's server from an npm cache filled by
//! `.ci/install-interop` (offline), and a tiny server published on a scripted registry on
//! 127.0.0.1 into a fresh cache. The runner gets its own cache and its registry, and nothing
//! else: the same server unconfined can do more, so no `_red` test passes vacuously.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use std::collections::BTreeMap;
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Once;
use std::time::Duration;

use odek_mcp::package_runner::runner_cache_root;
use odek_test_support::npm_registry::{NpmRegistry, Package};
use run_support::*;
use serde_json::{Value, json};

/// The interop set's pin of `@modelcontextprotocol/server-everything` (`.ci/interop/package.json`).
const EVERYTHING: &str = "@modelcontextprotocol/server-everything@2026.8.31";

/// Longest an `odek ext call` here may take (npx installs the server first).
const CALL_DEADLINE: Duration = Duration::from_secs(120);

/// The npm cache `.ci/install-interop` filled, or `None` after a one-line notice when it is
/// missing. With `CI=true` a missing install fails the test instead.
fn interop_npm_cache(test: &str) -> Option<PathBuf> {
    let cache = odek_test_support::workspace_root().join(".ci/cache/interop/npm-cache");
    if cache.join("_npx").is_dir() {
        return Some(cache);
    }
    let message =
        format!("the interop npm cache is not installed (missing {}); run .ci/install-interop", cache.display());
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{test}: {message}");
    static NOTICE: Once = Once::new();
    NOTICE.call_once(|| {
        let _ = writeln!(std::io::stderr(), "odek runner interop test skipped: {message}");
    });
    None
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            copy_dir(&entry.path(), &target);
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path()).unwrap(), &target).unwrap();
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// odek's own directory for the runners of `scene`'s project (as odek computes it).
fn runner_root(scene: &Sandbox) -> PathBuf {
    let home = scene.home.canonicalize().unwrap();
    runner_cache_root(&home, &BTreeMap::new(), &scene.project.canonicalize().unwrap())
}

fn write_mcp_json(scene: &Sandbox, servers: Value) {
    std::fs::write(scene.project.join(".mcp.json"), json!({ "mcpServers": servers }).to_string()).unwrap();
}

/// `odek ext call <tool> <arguments>` in `scene`, project servers approved
/// (`ODEK_APPROVE_MCP=1`), with `env` added to odek's environment.
fn ext_call(scene: &Sandbox, tool: &str, arguments: &str, env: &[(&str, &str)]) -> Output {
    let mut command = scene.command(&["ext", "call", tool, arguments]);
    command.env("ODEK_APPROVE_MCP", "1");
    for (name, value) in env {
        command.env(name, value);
    }
    output_within(command, CALL_DEADLINE)
}

/// The tiny server of `tests/runners/tiny_server.js`, as `odek-runner-probe-server@1.0.0` (a name
/// the public registry does not have, should a request ever go astray).
fn tiny_server() -> Package {
    Package {
        name: "odek-runner-probe-server".into(),
        version: "1.0.0".into(),
        bin: Some(("odek-runner-probe-server".into(), "server.js".into())),
        files: vec![("server.js".into(), include_bytes!("runners/tiny_server.js").to_vec())],
    }
}

/// The tiny server published on a scripted registry, and a project whose `./.mcp.json` runs it
/// with `npx -y` (its entry with `extra`), told to try a loopback port that no allow-list names
/// (a listener is there).
struct Probe {
    registry: NpmRegistry,
    listener: TcpListener,
    scene: Sandbox,
}

impl Probe {
    fn new(extra: Value) -> Probe {
        let registry = NpmRegistry::start(tiny_server());
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let scene = Sandbox::new();
        let port = listener.local_addr().unwrap().port().to_string();
        let mut entry = json!({"command": "npx", "args": ["-y", "odek-runner-probe-server@1.0.0", port]});
        if let (Value::Object(entry), Value::Object(extra)) = (&mut entry, extra) {
            entry.extend(extra);
        }
        scene.global_config(&json!({}));
        write_mcp_json(&scene, json!({ "tiny": entry }));
        Probe { registry, listener, scene }
    }

    fn port(&self) -> u16 {
        self.listener.local_addr().unwrap().port()
    }

    /// `odek ext call tiny__probe`, the registry named in odek's environment.
    fn call(&self) -> Output {
        ext_call(&self.scene, "tiny__probe", "{}", &[("npm_config_registry", &self.registry.url())])
    }

    /// What the tiny server wrote about its attempts.
    fn report(&self) -> String {
        std::fs::read_to_string(self.scene.project.join("runner-report")).unwrap_or_default()
    }

    /// The grant odek reports: its own npm cache for this workspace, and the registry.
    fn notice(&self) -> String {
        format!(
            "odek: warning: mcpclient tiny: sandbox: as a package runner (npx) it may also write {} and reach {}\n",
            runner_root(&self.scene).join("npm").display(),
            self.registry.address()
        )
    }
}

#[test]
fn a_pasted_mcp_json_npx_server_of_the_interop_set_starts_confined_and_its_tools_work() {
    let Some(cache) = interop_npm_cache("a_pasted_mcp_json_npx_server_of_the_interop_set_starts_confined") else {
        return;
    };
    let scene = Sandbox::new();
    scene.global_config(&json!({}));
    // The operator's npx cache as odek keeps it for this workspace, filled beforehand: a link to
    // a copy of the installed one (npx writes to its cache). odek grants what the link resolves to.
    let copy = scene.artifacts.join("npm-cache");
    copy_dir(&cache, &copy);
    let root = runner_root(&scene);
    std::fs::create_dir_all(&root).unwrap();
    std::os::unix::fs::symlink(&copy, root.join("npm")).unwrap();
    // Offline: npx resolves from the cache and makes no request at all.
    let offline = json!({"npm_config_offline": "true", "npm_config_update_notifier": "false"});
    write_mcp_json(&scene, json!({"everything": {"command": "npx", "args": ["-y", EVERYTHING], "env": offline}}));

    let output = ext_call(&scene, "everything__echo", r#"{"message":"hi from odek"}"#, &[]);
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert_eq!(stdout(&output), "Echo: hi from odek\n", "{text}");
    assert!(
        text.contains(&format!(
            "odek: warning: mcpclient everything: sandbox: as a package runner (npx) it may also write {} and reach registry.npmjs.org:443\n",
            copy.canonicalize().unwrap().display()
        )),
        "{text}"
    );
    assert!(!text.contains("stopped during start-up"), "{text}");
}

#[test]
fn npx_installs_a_server_from_its_registry_into_its_own_fresh_cache_confined_red() {
    let probe = Probe::new(json!({}));
    let output = probe.call();
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(text.contains(&probe.notice()), "{text}");
    assert!(stdout(&output).starts_with("tiny-server: "), "{}", stdout(&output));
    assert!(probe.report().contains("write-cache: done\n"), "{}", probe.report());
    let cache = runner_root(&probe.scene).join("npm");
    assert_eq!(std::fs::read_to_string(cache.join("runner-probe.txt")).unwrap(), "cached\n");
    let requests = probe.registry.requests();
    assert!(requests.contains(&"GET /odek-runner-probe-server".to_owned()), "{requests:?}");
    assert!(
        requests.contains(&"GET /odek-runner-probe-server/-/odek-runner-probe-server-1.0.0.tgz".to_owned()),
        "{requests:?}"
    );
}

#[test]
fn a_runner_server_gets_nothing_beyond_its_cache_and_registry_red() {
    let probe = Probe::new(json!({}));
    let scene = &probe.scene;
    std::fs::create_dir(scene.home.join(".ssh")).unwrap();
    let escaped = scene.home.join(".ssh/authorized_keys");
    // Where npx finds the registry when odek does not hand it over (unconfined); unreadable
    // confined, which npx shrugs off.
    let npmrc = format!("registry={}\nupdate-notifier=false\n", probe.registry.url());
    std::fs::write(scene.home.join(".npmrc"), npmrc).unwrap();

    let output = probe.call();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report = probe.report();
    assert!(report.contains("write-home: EACCES\n"), "{report}");
    assert!(report.contains("write-cache: done\n"), "{report}");
    assert!(report.contains("connect: ") && !report.contains("connect: done"), "{report}");
    assert!(!escaped.exists());
    let refused = format!("connect 127.0.0.1:{} refused", probe.port());
    assert!(stderr(&output).contains(&refused), "{}", stderr(&output));

    // The same server unconfined: it writes the home and reaches the other port.
    std::fs::remove_file(scene.project.join("runner-report")).unwrap();
    scene.global_config(&json!({"sandbox": false}));
    let output = probe.call();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report = probe.report();
    assert!(report.contains("write-home: done\n") && report.contains("connect: done\n"), "{report}");
    assert!(escaped.exists());
}

#[test]
fn a_project_cannot_choose_where_a_runner_writes_red() {
    let chosen = tempfile::tempdir().unwrap();
    let probe = Probe::new(
        json!({"env": {"npm_config_cache": chosen.path(), "NPM_CONFIG_REGISTRY": "https://registry.example/"}}),
    );
    let output = probe.call();
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    for variable in ["NPM_CONFIG_REGISTRY", "npm_config_cache"] {
        assert!(
            text.contains(&format!(
                "odek: warning: project config: mcp server \"tiny\": env {variable} ignored (where a package runner writes and which registry it reaches are the operator's to choose)\n"
            )),
            "{text}"
        );
    }
    assert!(text.contains(&probe.notice()), "{text}");
    assert_eq!(std::fs::read_dir(chosen.path()).unwrap().count(), 0, "the project's cache was written");
}
