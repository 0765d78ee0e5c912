//! The official MCP conformance suite's server leg (`@modelcontextprotocol/conformance`, pinned
//! and installed by `.ci/install-interop`) against odek's two MCP servers over Streamable HTTP,
//! every scenario the 2025-11-25 revision requires:
//!
//! - the contract fixture (`odek-fixture-server --conformant --conformance-suite`), which
//!   offers the tools, resources, prompts, completion and logging the scenarios call by name,
//!   all built on the `odek-extension` SDK; its baseline
//!   (`.ci/conformance/server-fixture-baseline.yml`) is empty;
//! - `odek mcp --http`, which offers odek's own tools: every scenario of a capability it has
//!   passes, and its baseline (`.ci/conformance/server-odek-mcp-baseline.yml`) lists the
//!   suite's fixed-name tools and the capabilities it does not offer, each with its reason.
//!   `odek mcp` requires a bearer token the suite cannot send, so the suite talks to a gateway
//!   on 127.0.0.1 ([`ForwardProxy::gateway`]) that adds the token and forwards every other
//!   header verbatim — `Host` and `Origin` included, which the DNS-rebinding scenario needs.
//!
//! The suite judges; a baseline entry that passes fails the run too (the suite's rule), so the
//! baselines only shrink. Without the install each test prints a skip notice and passes, except
//! under `CI=true` (the rule of `interop.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code)]
#[path = "interop/support.rs"]
mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use odek_test_support::forward_proxy::ForwardProxy;
use odek_test_support::listening::ListeningServer;
use support::{Servers, wait_with_deadline, workspace_root};

/// The whole leg against one server: 33 scenarios (30 scored, 3 run unscored), a few seconds
/// when all goes well; a scenario that hangs meets the suite's own timeouts well within this.
const SUITE_DEADLINE: Duration = Duration::from_secs(300);

/// How long `odek mcp --http` may take to print its address and token.
const ANNOUNCE_DEADLINE: Duration = Duration::from_secs(60);

#[test]
fn fixture_server_meets_the_2025_11_25_server_requirements() {
    let Some(servers) = Servers::installed("fixture_server_meets_the_2025_11_25_server_requirements") else {
        return;
    };
    let mut command = Command::new(odek_test_support::fixture_server());
    command.args(["--http", "127.0.0.1:0", "--conformant", "--conformance-suite"]);
    let fixture = ListeningServer::start(command);
    let report = run_server_leg(&servers, &fixture.url, "server-fixture-baseline.yml");
    for scenario in ["tools-call-sampling", "tools-call-elicitation", "resources-subscribe", "prompts-get-with-args"] {
        assert!(report.contains(&format!("✓ {scenario}: ")), "{scenario} did not pass:\n{report}");
    }
    let total = report.lines().find(|line| line.starts_with("Total: ")).unwrap_or_default();
    assert!(total.ends_with(", 0 failed"), "every scenario passes:\n{report}");
}

#[test]
fn odek_mcp_meets_the_2025_11_25_server_requirements_of_what_it_offers() {
    let Some(servers) = Servers::installed("odek_mcp_meets_the_2025_11_25_server_requirements_of_what_it_offers")
    else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("project");
    std::fs::create_dir(&project).unwrap();
    let served = OdekMcp::start(home.path(), &project);
    let port = served.url.strip_prefix("http://127.0.0.1:").and_then(|rest| rest.split('/').next()).unwrap();
    let authorization = format!("Bearer {}", served.token);
    let gateway = ForwardProxy::gateway(port.parse().unwrap(), &[("Authorization", &authorization)]);
    let report = run_server_leg(&servers, &format!("{}/mcp", gateway.url()), "server-odek-mcp-baseline.yml");
    for scenario in ["server-initialize", "ping", "tools-list", "dns-rebinding-protection", "server-session-lifecycle"]
    {
        assert!(report.contains(&format!("✓ {scenario}: ")), "{scenario} did not pass:\n{report}");
    }
}

/// Runs the suite's server leg against `url` with the baseline `baseline` (under
/// `.ci/conformance/`), in a scratch `HOME`; fails unless it exits 0, and returns its report.
fn run_server_leg(servers: &Servers, url: &str, baseline: &str) -> String {
    let (node, suite) = servers.conformance_suite();
    let scratch = tempfile::tempdir().unwrap();
    let baseline = workspace_root().join(".ci/conformance").join(baseline);
    let output = scratch.path().join("suite.out");
    let mut child = Command::new(node)
        .args([suite.to_str().unwrap(), "server", "--url", url, "--requirements", "2025-11-25"])
        .args(["--expected-failures", baseline.to_str().unwrap()])
        .args(["--output-dir", scratch.path().join("results").to_str().unwrap()])
        .current_dir(scratch.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", scratch.path())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&output).unwrap())
        .stderr(std::fs::File::create(scratch.path().join("suite.err")).unwrap())
        .spawn()
        .unwrap();
    let status = wait_with_deadline(&mut child, SUITE_DEADLINE, &["conformance suite", "server", url]);
    let report = std::fs::read_to_string(&output).unwrap();
    let errors = std::fs::read_to_string(scratch.path().join("suite.err")).unwrap();
    assert!(status.success(), "the conformance suite's server leg failed against {url}:\n{report}\n{errors}");
    report
}

/// `odek mcp --http 127.0.0.1:0` in a temporary home and project, and the URL and bearer
/// token it announced on stderr; killed and reaped when dropped.
struct OdekMcp {
    child: Child,
    url: String,
    token: String,
}

impl OdekMcp {
    fn start(home: &Path, project: &Path) -> OdekMcp {
        let mut child = Command::new(env!("CARGO_BIN_EXE_odek"))
            .args(["mcp", "--http", "127.0.0.1:0"])
            .current_dir(project)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (lines, announced) = mpsc::channel();
        // Drained to the end, so odek never blocks on a full stderr pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = lines.send(line);
            }
        });
        let next = || announced.recv_timeout(ANNOUNCE_DEADLINE).expect("odek mcp announced nothing");
        let url = next().rsplit_once(" at ").map(|(_, url)| url.to_owned()).expect("the URL line");
        let token = next().rsplit_once(": ").map(|(_, token)| token.to_owned()).expect("the token line");
        OdekMcp { child, url, token }
    }
}

impl Drop for OdekMcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
