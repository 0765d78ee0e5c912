//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned and installed
//! by `.ci/install-interop`) against odek's client: every scenario the 2025-11-25 revision
//! requires runs `odek ext conformance-client`, which drives the hub a run uses. The suite
//! judges; `.ci/conformance/client-baseline.yml` lists what is known to fail, each with its
//! reason, and a listed scenario that passes fails the run too (the suite's rule), so the
//! baseline only shrinks. Without the install the test prints a skip notice and passes, except
//! under `CI=true` (the rule of `interop.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code)]
#[path = "interop/support.rs"]
mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use support::{Servers, wait_with_deadline, workspace_root};

/// The whole client leg: 18 required scenarios and the extensions, run in parallel by the suite.
const SUITE_DEADLINE: Duration = Duration::from_secs(600);

#[test]
fn client_meets_the_2025_11_25_requirements_but_its_baseline() {
    let Some(servers) = Servers::installed("client_meets_the_2025_11_25_requirements_but_its_baseline") else {
        return;
    };
    let baseline = workspace_root().join(".ci/conformance/client-baseline.yml");
    let (status, report) =
        client_leg(&servers, &["--requirements", "2025-11-25", "--expected-failures", baseline.to_str().unwrap()]);
    assert!(status, "the conformance suite's client leg failed:\n{report}");
    assert!(report.contains("initialize: 1 passed, 0 failed"), "{report}");
}

/// \[beyond\] The opt-in stateless revision: the suite's 2026-07-28 requirements, held to the
/// record of what passes there (`.ci/conformance/client-2026-07-28-baseline.yml`).
#[test]
fn client_at_2026_07_28_keeps_its_record() {
    let Some(servers) = Servers::installed("client_at_2026_07_28_keeps_its_record") else { return };
    let baseline = workspace_root().join(".ci/conformance/client-2026-07-28-baseline.yml");
    let (status, report) =
        client_leg(&servers, &["--requirements", "2026-07-28", "--expected-failures", baseline.to_str().unwrap()]);
    assert!(status, "the conformance suite's client leg at 2026-07-28 strayed from its record:\n{report}");
    assert!(report.contains("tools_call: 2 passed, 0 failed"), "{report}");
}

/// \[beyond\] The client-credentials extension (`io.modelcontextprotocol/oauth-client-credentials`),
/// which the 2025-11-25 requirements run without scoring: odek's CI path, so it must pass, with a
/// client secret (`client_secret_basic`) and a signed assertion (`private_key_jwt`).
#[test]
fn client_credentials_extension_scenarios_pass() {
    let Some(servers) = Servers::installed("client_credentials_extension_scenarios_pass") else { return };
    for scenario in ["auth/client-credentials-basic", "auth/client-credentials-jwt"] {
        let (status, report) = client_leg(&servers, &["--scenario", scenario]);
        assert!(status && report.contains("OVERALL: PASSED"), "{scenario}:\n{report}");
    }
}

/// The suite's client leg with `selection` (which scenarios, which baseline), driving
/// `odek ext conformance-client`, in a scratch directory of its own.
fn client_leg(servers: &Servers, selection: &[&str]) -> (bool, String) {
    let (node, suite) = servers.conformance_suite();
    let scratch = tempfile::tempdir().unwrap();
    let results = scratch.path().join("results");
    let client = format!("'{}' ext conformance-client", env!("CARGO_BIN_EXE_odek"));
    let mut args = vec![suite.to_str().unwrap(), "client", "--command", &client];
    args.extend_from_slice(selection);
    args.extend(["--output-dir", results.to_str().unwrap()]);
    run_suite(&node, &args, scratch.path())
}

/// Runs the suite with a scratch `HOME` (odek's token store lives under it); returns whether it
/// exited 0 and what it printed.
fn run_suite(node: &Path, args: &[&str], home: &Path) -> (bool, String) {
    let output = scratch_file(home, "suite.out");
    let mut child = Command::new(node)
        .args(args)
        .current_dir(home)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(output.try_clone().unwrap())
        .stderr(output)
        .spawn()
        .unwrap();
    let status = wait_with_deadline(&mut child, SUITE_DEADLINE, &["conformance suite"]);
    (status.success(), std::fs::read_to_string(home.join("suite.out")).unwrap())
}

fn scratch_file(dir: &Path, name: &str) -> std::fs::File {
    std::fs::File::create(dir.join(name)).unwrap()
}
