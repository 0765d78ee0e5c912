//! `acplint` (PyPI, pinned and installed by `.ci/install-interop`) run against `odek acp`: every
//! category, with the replay provider. Each check that fails must be listed, with its reason, in
//! `tests/acp_clients/acplint-baseline.json`; a failure not listed turns this red, and so does a
//! listed check that now passes (the baseline only shrinks). Without the install the test prints
//! a skip notice and passes, except under `CI=true` (the rule of `interop.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code)]
#[path = "interop/support.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use support::{Project, Servers, wait_with_deadline, workspace_root};

#[test]
fn acplint_finds_nothing_beyond_its_baseline() {
    let Some(_servers) = Servers::installed("acplint_finds_nothing_beyond_its_baseline") else { return };
    let acplint = workspace_root().join(".ci/cache/interop/acplint-venv/bin/acplint");
    assert!(acplint.is_file(), "acplint is missing: run .ci/install-interop");
    let project = Project::new();
    let script = project.home.join("lint.replay.json");
    let turns: Vec<Value> = (0..64).map(|_| json!({"content": "hello"})).collect();
    std::fs::write(&script, json!({"schema": "odek.replay/v1", "turns": turns}).to_string()).unwrap();
    let report_path = project.home.join("acplint.json");
    let agent_args = format!("acp --provider replay --replay {}", script.display());
    let mut child = project
        .client(&acplint)
        .arg("--agent")
        .arg(env!("CARGO_BIN_EXE_odek"))
        .args(["--agent-args", &agent_args, "--timeout", "30", "--output", "json", "--output-file"])
        .arg(&report_path)
        .arg("--cwd")
        .arg(&project.cwd)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_with_deadline(&mut child, Duration::from_secs(600), &["acplint"]);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    let failed: BTreeMap<String, String> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|result| result["status"] != "PASS")
        .map(|result| {
            let name = format!("{}/{}", result["category"].as_str().unwrap(), result["name"].as_str().unwrap());
            (name, result["message"].as_str().unwrap_or_default().to_owned())
        })
        .collect();
    let baseline_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp_clients/acplint-baseline.json");
    let baseline: Value = serde_json::from_str(&std::fs::read_to_string(baseline_path).unwrap()).unwrap();
    let listed = baseline["failures"].as_object().unwrap();
    let unlisted: Vec<String> = failed
        .iter()
        .filter(|(name, _)| !listed.contains_key(*name))
        .map(|(name, why)| format!("{name}: {why}"))
        .collect();
    assert!(unlisted.is_empty(), "acplint failures not in the baseline:\n{}", unlisted.join("\n"));
    let fixed: Vec<&String> = listed.keys().filter(|name| !failed.contains_key(*name)).collect();
    assert!(fixed.is_empty(), "these checks pass now; take them out of the baseline: {fixed:?}");
    let ran = report["results"].as_array().unwrap().len();
    assert!(ran >= 40, "acplint ran only {ran} checks: {report}");
}
