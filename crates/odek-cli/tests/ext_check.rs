//! End-to-end tests of `odek ext check`: the real binary against the real fixture server in its
//! good mode (`--conformant`: every check passes) and in one misbehaving mode per check (that
//! check fails, every other check still runs and reports), the exit codes and both report forms,
//! the SDK's examples and the documented Python server, and the pinned third-party servers that
//! `.ci/install-interop` installs (skipped with a notice when they are missing, outside CI).
//! Over Streamable HTTP (`--url`, or a configured `url`): the fixture served with `--http`, its
//! bearer token by `--header` or `--token-env` (never shown), the URL and header rules odek's
//! client applies (refused before anything is sent), and hostile servers from
//! `odek_test_support::mcp_http` (an oversized answer, another content type).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use odek_test_support::listening::ListeningServer;
use odek_test_support::mcp_http::{McpHttpServer, McpScript, ToolAnswer};
use serde_json::{Value, json};

// Shared with `interop.rs`, which uses all of it; this file only needs where the servers are.
#[allow(dead_code)]
#[path = "interop/support.rs"]
mod interop_support;

/// Checks every run reports whatever the server does (after it started).
const ALWAYS_REPORTED: &[&str] = &[
    "server_starts",
    "initialize_answers",
    "protocol_version_supported",
    "initialized_notification_accepted",
    "ping_answers",
    "stdout_only_json_rpc",
    "stdout_lines_within_limit",
    "responses_match_requests",
    "tools_list_answers",
    "tool_names_valid",
    "tool_names_unique",
    "tool_schemas_accepted",
    "tool_descriptions_clean",
    "exposed_names_fit",
    "tools_exercised",
    "concurrent_calls_answered",
    "exits_on_stdin_close",
];

/// A temporary home, working directory and artifact directory.
struct Sandbox {
    _root: tempfile::TempDir,
    home: PathBuf,
    artifacts: PathBuf,
}

impl Sandbox {
    fn new() -> Sandbox {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        let artifacts = root.path().join("artifacts");
        std::fs::create_dir(&home).unwrap();
        std::fs::create_dir(&artifacts).unwrap();
        Sandbox { _root: root, home, artifacts }
    }

    fn odek(&self, args: &[&str]) -> Output {
        self.odek_with_env(args, &[])
    }

    /// `odek` with these variables besides `HOME` and `PATH`.
    fn odek_with_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        Command::new(odek_test_support::odek_binary())
            .args(args)
            .current_dir(&self.home)
            .env_clear()
            .env("HOME", &self.home)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .envs(env.iter().copied())
            .output()
            .unwrap()
    }

    /// `odek ext check --json` against the fixture with `fixture_args` after `--conformant`;
    /// `slow` gets a short example so runs stay quick.
    fn check_fixture(&self, check_args: &[&str], fixture_args: &[&str]) -> (Value, i32) {
        let root = self.artifacts.to_str().unwrap();
        let fixture = odek_test_support::fixture_server();
        let mut args = vec!["ext", "check", "--json", "--artifact-root", root];
        if !check_args.contains(&"--timeout") {
            args.extend_from_slice(&["--timeout", "5"]);
        }
        args.extend_from_slice(&["--call", "slow", r#"{"ms":20}"#]);
        args.extend_from_slice(check_args);
        args.extend_from_slice(&["--", fixture.to_str().unwrap(), "--conformant", "--artifact-dir", root]);
        args.extend_from_slice(fixture_args);
        let output = self.odek(&args);
        let report: Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|err| panic!("{err}: {}", String::from_utf8_lossy(&output.stdout)));
        (report, output.status.code().unwrap())
    }
}

impl Sandbox {
    /// Writes `~/.odek/config.json` (private) with these `mcp_servers`.
    fn configure(&self, servers: &Value) {
        let dir = self.home.join(".odek");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.json");
        std::fs::write(&path, json!({ "mcp_servers": servers }).to_string()).unwrap();
        set_private(&path);
    }

    /// A configured fixture named `fx` with these extra fixture arguments.
    fn configure_fixture(&self, fixture_args: &[&str]) {
        let mut args = vec![json!("--conformant"), json!("--artifact-dir"), json!(self.artifacts)];
        args.extend(fixture_args.iter().map(|arg| json!(arg)));
        self.configure(&json!({"fx": {
            "command": odek_test_support::fixture_server(),
            "args": args,
            "artifact_roots": [self.artifacts],
            "timeout_seconds": 5,
        }}));
    }
}

/// The report on stdout and the exit code.
fn json_report(output: &Output) -> (Value, i32) {
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!("{err}: {}\n{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
    });
    (report, output.status.code().unwrap())
}

/// `(tool, called)` for every entry of the report's plan, in order.
fn plan(report: &Value) -> Vec<(String, bool)> {
    report["plan"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| (entry["tool"].as_str().unwrap().to_owned(), entry["call"].as_bool().unwrap()))
        .collect()
}

fn called(report: &Value) -> BTreeSet<String> {
    plan(report).into_iter().filter(|(_, call)| *call).map(|(tool, _)| tool).collect()
}

fn checks(report: &Value) -> &Vec<Value> {
    report["checks"].as_array().unwrap()
}

/// Names of the checks with this status.
fn with_status(report: &Value, status: &str) -> BTreeSet<String> {
    checks(report)
        .iter()
        .filter(|check| check["status"] == status)
        .map(|check| check["check"].as_str().unwrap().to_owned())
        .collect()
}

fn find<'a>(report: &'a Value, check: &str, tool: Option<&str>) -> &'a Value {
    checks(report)
        .iter()
        .find(|entry| entry["check"] == check && entry["tool"].as_str() == tool)
        .unwrap_or_else(|| panic!("no {check} {tool:?} in {report:#}"))
}

fn names(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|name| (*name).to_owned()).collect()
}

/// Exactly `failing` fail, nothing warns, and the rest of the run still happened: every
/// always-reported check and the echo call are in the report, the echo call passed.
fn assert_only_failures(report: &Value, code: i32, failing: &[&str]) {
    assert_eq!(with_status(report, "fail"), names(failing), "{report:#}");
    assert_eq!(with_status(report, "warn"), BTreeSet::new(), "{report:#}");
    assert_eq!(report["verdict"], "fail");
    assert_eq!(code, 1);
    let reported: BTreeSet<String> =
        checks(report).iter().map(|check| check["check"].as_str().unwrap().to_owned()).collect();
    assert!(reported.is_superset(&names(ALWAYS_REPORTED)), "{report:#}");
    if report["server"] == "odek-fixture-server" {
        assert_eq!(find(report, "call_answers", Some("echo"))["status"], "pass", "{report:#}");
    }
}

#[test]
fn good_mode_passes_every_check() {
    let sandbox = Sandbox::new();
    let (report, code) = sandbox.check_fixture(&[], &[]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["verdict"], "pass");
    assert_eq!(with_status(&report, "fail"), BTreeSet::new());
    assert_eq!(with_status(&report, "warn"), BTreeSet::new());
    assert_eq!(report["counts"]["fail"], 0);
    for tool in ["echo", "large_result", "artifact_result", "slow", "error_result"] {
        assert_eq!(find(&report, "call_answers", Some(tool))["status"], "pass", "{tool}");
    }
    assert_eq!(find(&report, "artifacts_validate", Some("artifact_result"))["status"], "pass");
    assert_eq!(find(&report, "envelope_well_formed", Some("artifact_result"))["status"], "pass");
    // No tool of the good mode is annotated readOnlyHint: true, so none is repeated: the burst
    // is pings.
    let load = find(&report, "concurrent_calls_answered", None);
    assert!(load["reason"].as_str().unwrap().starts_with("8 concurrent ping answered"), "{load}");
    assert_eq!(report["server"], "odek-fixture-server");
}

#[test]
fn initialize_error_fails_the_handshake_check() {
    let (report, code) = Sandbox::new().check_fixture(&[], &["--mode", "initialize-error"]);
    assert_only_failures(&report, code, &["initialize_answers"]);
    assert!(
        find(&report, "initialize_answers", None)["reason"].as_str().unwrap().contains("JSON-RPC error -32603: boom")
    );
}

#[test]
fn progress_does_not_stretch_the_initialize_deadline() {
    // As in odek, only tools/call carries a progress token: an initialize kept "in progress"
    // forever still fails at its deadline.
    let (report, code) = Sandbox::new().check_fixture(&["--timeout", "1"], &["--mode", "progress-before-initialize"]);
    assert_only_failures(&report, code, &["initialize_answers"]);
    let reason = find(&report, "initialize_answers", None)["reason"].as_str().unwrap().to_owned();
    assert!(reason.starts_with("initialize failed: no answer within 1 s"), "{reason}");
}

#[test]
fn unanswered_ping_fails_ping_answers() {
    let (report, code) = Sandbox::new().check_fixture(&[], &["--mode", "no-ping-reply"]);
    assert_only_failures(&report, code, &["ping_answers"]);
}

#[test]
fn answering_the_initialized_notification_fails() {
    let (report, code) = Sandbox::new().check_fixture(&[], &["--mode", "reject-initialized"]);
    assert_only_failures(&report, code, &["initialized_notification_accepted"]);
    let check = find(&report, "initialized_notification_accepted", None);
    assert!(check["evidence"].as_str().unwrap().contains(r#""id":null"#), "{check}");
}

#[test]
fn unsupported_protocol_version_warns_with_exit_2() {
    let (report, code) = Sandbox::new().check_fixture(&[], &["--protocol-version", "1999-01-01"]);
    assert_eq!(with_status(&report, "warn"), names(&["protocol_version_supported"]), "{report:#}");
    assert_eq!(with_status(&report, "fail"), BTreeSet::new());
    assert_eq!(report["verdict"], "warn");
    assert_eq!(code, 2);
}

#[test]
fn junk_on_stdout_fails_hygiene_with_the_line_as_evidence() {
    let (report, code) = Sandbox::new().check_fixture(&[], &["--mode", "junk-stdout"]);
    assert_only_failures(&report, code, &["stdout_only_json_rpc", "responses_match_requests"]);
    assert_eq!(find(&report, "stdout_only_json_rpc", None)["evidence"], "this line is not JSON");
}

#[test]
fn a_line_over_max_response_bytes_fails_and_the_run_goes_on() {
    let (report, code) = Sandbox::new().check_fixture(&[], &["--mode", "oversized-reply"]);
    assert_only_failures(&report, code, &["stdout_lines_within_limit", "call_answers"]);
    assert_eq!(find(&report, "call_answers", Some("oversized_reply"))["status"], "fail");
    assert_eq!(
        report["notes"],
        json!(["the server was restarted after tools/call oversized_reply closed the connection"])
    );
}

#[test]
fn broken_tool_lists_fail_their_checks() {
    let sandbox = Sandbox::new();
    for (mode, failing) in [
        ("repeat-cursor", "tools_list_answers"),
        ("invalid-tool-name", "tool_names_valid"),
        ("duplicate-tool", "tool_names_unique"),
        ("bad-schema", "tool_schemas_accepted"),
        ("big-schema", "tool_schemas_accepted"),
        ("injection-schema", "tool_schemas_accepted"),
        ("injection-description", "tool_descriptions_clean"),
    ] {
        let (report, code) = sandbox.check_fixture(&[], &["--mode", mode]);
        assert_eq!(with_status(&report, "fail"), names(&[failing]), "{mode}: {report:#}");
        assert_eq!(code, 1, "{mode}");
    }
}

#[test]
fn a_tool_named_like_a_builtin_passes_the_name_check() {
    // [beyond] odek exposes it as <server>__shell: nothing is shadowed, the server is not refused.
    let (report, code) = Sandbox::new().check_fixture(&[], &["--mode", "shadow-builtin"]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(find(&report, "tool_names_valid", None)["status"], "pass");
    assert_eq!(find(&report, "call_answers", Some("shell"))["status"], "pass");
}

#[test]
fn every_invalid_name_is_reported_with_the_exclude_tools_way_out() {
    let (report, code) =
        Sandbox::new().check_fixture(&[], &["--mode", "invalid-tool-name,dunder-tool-name", "--extra-tool", "fs.read"]);
    assert_eq!(with_status(&report, "fail"), names(&["tool_names_valid"]), "{report:#}");
    assert_eq!(code, 1);
    let check = find(&report, "tool_names_valid", None);
    assert_eq!(
        check["reason"],
        "3 tool name(s) break the naming rules; odek rejects the whole server: mcpclient odek-fixture-server: tools/list: tool name \"read file\" contains invalid character ' ' (and 2 more: tool name \"a__b\" cannot contain \"__\"; tool name \"fs.read\" contains invalid character '.'); to use the server without these 3 tools, add them to its \"exclude_tools\": [\"read file\",\"a__b\",\"fs.read\"]"
    );
}

#[test]
fn protocol_2024_11_05_is_supported() {
    let (report, code) = Sandbox::new().check_fixture(&[], &["--protocol-version", "2024-11-05"]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(find(&report, "protocol_version_supported", None)["reason"], "protocol 2024-11-05");
}

#[test]
fn destructive_tools_are_never_called_red() {
    let sandbox = Sandbox::new();
    let marker = sandbox.artifacts.join("destructive_delete-was-called");
    for check_args in [&[][..], &["--calls", "all"][..]] {
        let (report, code) = sandbox.check_fixture(check_args, &["--mode", "annotated-tools"]);
        assert_eq!(code, 0, "{report:#}");
        assert!(!marker.exists(), "destructive_delete was called with {check_args:?}");
        let planned = plan(&report);
        assert!(planned.contains(&("destructive_delete".to_owned(), false)), "{planned:?}");
        assert!(planned.contains(&("open_world_write".to_owned(), true)), "{planned:?}");
        assert!(planned.contains(&("read_only_lookup".to_owned(), true)), "{planned:?}");
        let entry =
            report["plan"].as_array().unwrap().iter().find(|entry| entry["tool"] == "destructive_delete").unwrap();
        assert_eq!(
            entry["reason"],
            "annotated destructiveHint: true, so never called (give a --call destructive_delete '<json>' example to call it anyway)"
        );
        assert_eq!(find(&report, "call_answers", Some("destructive_delete"))["status"], "skip");
    }
    // A --call example for it is the author's explicit request.
    let (report, code) = sandbox.check_fixture(&["--call", "destructive_delete", "{}"], &["--mode", "annotated-tools"]);
    assert_eq!(code, 0, "{report:#}");
    assert!(marker.exists(), "the named tool was called");
    assert_eq!(find(&report, "call_answers", Some("destructive_delete"))["status"], "pass");
}

#[test]
fn a_configured_server_gets_only_read_only_calls_red() {
    let sandbox = Sandbox::new();
    sandbox.configure_fixture(&["--mode", "annotated-tools"]);
    let output = sandbox.odek(&["ext", "check", "--json", "fx"]);
    let (report, code) = json_report(&output);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["call_policy"], "read-only");
    assert_eq!(called(&report), names(&["read_only_lookup"]), "{report:#}");
    assert!(!sandbox.artifacts.join("destructive_delete-was-called").exists());
    let entry = report["plan"].as_array().unwrap().iter().find(|entry| entry["tool"] == "echo").unwrap();
    assert!(
        entry["reason"].as_str().unwrap().starts_with(
            "not annotated readOnlyHint: true, and only read-only tools are called under --calls read-only"
        ),
        "{entry}"
    );
    // The plan is on stderr before the calls are made.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("plan (--calls read-only): 1 of 8 tool(s) called\n"), "{stderr}");
    assert!(
        stderr.contains("  call  read_only_lookup: annotated readOnlyHint: true; arguments derived from the schema\n"),
        "{stderr}"
    );
    assert!(stderr.contains("  skip  open_world_write: not annotated readOnlyHint: true"), "{stderr}");

    // --calls all calls every tool not annotated destructive.
    let (report, code) = json_report(&sandbox.odek(&["ext", "check", "--json", "--calls", "all", "fx"]));
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(
        called(&report),
        names(&[
            "echo",
            "large_result",
            "artifact_result",
            "slow",
            "error_result",
            "read_only_lookup",
            "open_world_write"
        ])
    );
    assert!(!sandbox.artifacts.join("destructive_delete-was-called").exists());
}

#[test]
fn a_run_in_which_no_call_succeeds_warns_red() {
    let sandbox = Sandbox::new();
    sandbox.configure_fixture(&[]);
    // No fixture tool says it is read-only: nothing is called, which is no pass.
    let (report, code) = json_report(&sandbox.odek(&["ext", "check", "--json", "fx"]));
    assert_eq!(with_status(&report, "warn"), names(&["tools_exercised"]), "{report:#}");
    assert_eq!(with_status(&report, "fail"), BTreeSet::new(), "{report:#}");
    assert_eq!((report["verdict"].as_str(), code), (Some("warn"), 2));
    let reason = find(&report, "tools_exercised", None)["reason"].as_str().unwrap().to_owned();
    assert!(
        reason.starts_with("no tool was exercised: none of the 5 listed tool(s) was called (see the plan)"),
        "{reason}"
    );

    // Every call failing is no pass either.
    let fixture = odek_test_support::fixture_server();
    let output = sandbox.odek(&[
        "ext",
        "check",
        "--json",
        "--",
        fixture.to_str().unwrap(),
        "--conformant",
        "--hide",
        "echo",
        "--hide",
        "large_result",
        "--hide",
        "artifact_result",
        "--hide",
        "slow",
    ]);
    let (report, code) = json_report(&output);
    assert_eq!(with_status(&report, "warn"), names(&["tools_exercised"]), "{report:#}");
    assert_eq!(code, 2);
    let reason = find(&report, "tools_exercised", None)["reason"].as_str().unwrap().to_owned();
    assert!(reason.starts_with("no tool was exercised: none of the 1 call(s) made succeeded"), "{reason}");
}

#[test]
fn a_closed_schema_turns_the_unknown_argument_failure_into_a_warning() {
    let (report, code) = Sandbox::new().check_fixture(&[], &["--mode", "closed-schema"]);
    assert_eq!(with_status(&report, "warn"), names(&["unknown_arguments_tolerated"]), "{report:#}");
    assert_eq!(with_status(&report, "fail"), BTreeSet::new(), "{report:#}");
    assert_eq!(code, 2);
    let check = find(&report, "unknown_arguments_tolerated", Some("strict_lookup"));
    assert_eq!(check["status"], "warn");
    assert!(
        check["reason"].as_str().unwrap().contains("the tool's schema declares additionalProperties: false, which odek shows the model, so the model is told not to send unknown arguments"),
        "{check}"
    );
    // Without additionalProperties: false the same rejection is a failure (of the read-only
    // tool: only those are called a second time).
    let (report, _) = Sandbox::new().check_fixture(&[], &["--mode", "strict-arguments,annotated-tools"]);
    assert_eq!(find(&report, "unknown_arguments_tolerated", Some("read_only_lookup"))["status"], "fail");
}

#[test]
fn derived_arguments_honour_formats_enums_and_consts() {
    let (report, code) = Sandbox::new().check_fixture(&[], &["--mode", "formatted-arguments"]);
    assert_eq!(code, 0, "{report:#}");
    let check = find(&report, "call_answers", Some("formatted_lookup"));
    let reason = check["reason"].as_str().unwrap();
    assert!(reason.ends_with("with arguments derived from the schema"), "the fixture rejected them: {check}");
}

#[test]
fn failure_reasons_keep_the_whole_message() {
    let message = format!("the tool failed because {}", "of a long explanation ".repeat(20));
    let example = json!({ "message": message }).to_string();
    let (report, _) = Sandbox::new().check_fixture(&["--call", "error_result", &example], &[]);
    let reason = find(&report, "call_answers", Some("error_result"))["reason"].as_str().unwrap().to_owned();
    assert!(reason.ends_with(&format!("(isError: {message})")), "{reason}");
}

#[test]
fn long_exposed_names_warn() {
    let long = "a_tool_name_long_enough_that_server_and_tool_exceed_64";
    let (report, code) = Sandbox::new().check_fixture(&[], &["--extra-tool", long]);
    assert_eq!(with_status(&report, "warn"), names(&["exposed_names_fit"]), "{report:#}");
    assert_eq!(code, 2);
    let evidence = find(&report, "exposed_names_fit", None)["evidence"].as_str().unwrap().to_owned();
    assert!(evidence.starts_with(&format!("{long} -> odek-fixture-server__")), "{evidence}");
}

#[test]
fn unanswered_call_fails_call_answers() {
    let (report, code) = Sandbox::new().check_fixture(&["--timeout", "1"], &["--mode", "unanswered-call"]);
    assert_only_failures(&report, code, &["call_answers"]);
    let check = find(&report, "call_answers", Some("unanswered_call"));
    assert!(check["reason"].as_str().unwrap().starts_with("no answer within 1 s"), "{check}");
}

#[test]
fn rejecting_unknown_arguments_fails_the_additive_rule() {
    // Only a tool annotated readOnlyHint: true is called again with an unknown argument.
    let (report, code) = Sandbox::new().check_fixture(&[], &["--mode", "strict-arguments,annotated-tools"]);
    assert_only_failures(&report, code, &["unknown_arguments_tolerated"]);
    let check = find(&report, "unknown_arguments_tolerated", Some("read_only_lookup"));
    assert_eq!(check["status"], "fail");
    assert_eq!(check["evidence"], "invalid arguments");
}

#[test]
fn undecodable_result_fails_result_decodes() {
    let (report, code) = Sandbox::new().check_fixture(&[], &["--mode", "undecodable-result"]);
    assert_only_failures(&report, code, &["result_decodes"]);
}

#[test]
fn malformed_envelope_fails_envelope_well_formed() {
    let (report, code) = Sandbox::new().check_fixture(&[], &["--mode", "malformed-envelope"]);
    assert_only_failures(&report, code, &["envelope_well_formed"]);
    let reason =
        find(&report, "envelope_well_formed", Some("malformed_envelope"))["reason"].as_str().unwrap().to_owned();
    assert!(reason.starts_with("malformed odek.tool-result/v1 envelope: "), "{reason}");
}

#[test]
fn tampered_artifact_fails_artifacts_validate() {
    let (report, code) = Sandbox::new().check_fixture(&[], &["--mode", "tampered-artifact"]);
    assert_only_failures(&report, code, &["artifacts_validate"]);
    let reason = find(&report, "artifacts_validate", Some("tampered_artifact"))["reason"].as_str().unwrap().to_owned();
    assert!(reason.contains("sha256 mismatch"), "{reason}");
}

#[test]
fn artifacts_without_a_root_fail_with_a_hint() {
    let sandbox = Sandbox::new();
    let root = sandbox.artifacts.to_str().unwrap();
    let fixture = odek_test_support::fixture_server();
    let output = sandbox.odek(&[
        "ext",
        "check",
        "--json",
        "--call",
        "slow",
        r#"{"ms":20}"#,
        "--",
        fixture.to_str().unwrap(),
        "--conformant",
        "--artifact-dir",
        root,
    ]);
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_only_failures(&report, output.status.code().unwrap(), &["artifacts_validate"]);
    let reason = find(&report, "artifacts_validate", Some("artifact_result"))["reason"].as_str().unwrap().to_owned();
    assert!(reason.contains("no artifact roots configured") && reason.contains("--artifact-root"), "{reason}");
}

#[test]
fn oversized_results_warn_about_the_cap() {
    let (report, code) = Sandbox::new().check_fixture(&["--call", "large_result", r#"{"chars":250000}"#], &[]);
    assert_eq!(with_status(&report, "warn"), names(&["result_within_caps"]), "{report:#}");
    assert_eq!(code, 2);
    let reason = find(&report, "result_within_caps", Some("large_result"))["reason"].as_str().unwrap().to_owned();
    assert!(reason.starts_with("the result is 250000 chars; odek cuts it to max_result_chars=200000"), "{reason}");
}

#[test]
fn crossed_ids_under_load_fail_the_load_check() {
    // The burst repeats a read-only tool's call (else it is pings, which the mode does not cross).
    let (report, code) = Sandbox::new().check_fixture(&["--timeout", "2"], &["--mode", "crossed-ids,annotated-tools"]);
    assert_only_failures(&report, code, &["concurrent_calls_answered", "responses_match_requests"]);
}

#[test]
fn ignoring_stdin_eof_fails_shutdown() {
    let (report, code) = Sandbox::new().check_fixture(&[], &["--mode", "ignore-stdin-eof"]);
    assert_only_failures(&report, code, &["exits_on_stdin_close"]);
}

#[test]
fn a_command_that_cannot_start_fails_and_nothing_else_runs() {
    let sandbox = Sandbox::new();
    let missing = sandbox.home.join("no-such-server");
    let output = sandbox.odek(&["ext", "check", "--json", "--", missing.to_str().unwrap()]);
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(checks(&report).len(), 1);
    assert_eq!(find(&report, "server_starts", None)["status"], "fail");
}

#[test]
fn text_report_ends_with_the_verdict_line() {
    let sandbox = Sandbox::new();
    let root = sandbox.artifacts.to_str().unwrap();
    let fixture = odek_test_support::fixture_server();
    let output = sandbox.odek(&[
        "ext",
        "check",
        "--artifact-root",
        root,
        "--call",
        "slow",
        r#"{"ms":20}"#,
        "--",
        fixture.to_str().unwrap(),
        "--conformant",
        "--artifact-dir",
        root,
        "--mode",
        "junk-stdout",
    ]);
    let text = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("odek ext check: server \"odek-fixture-server\": "), "{text}");
    assert!(lines.contains(&"stdout"), "{text}");
    assert!(lines.iter().any(|line| line.starts_with("  fail  stdout_only_json_rpc: ")), "{text}");
    assert!(lines.contains(&"        evidence: this line is not JSON"), "{text}");
    let verdict = lines.last().unwrap();
    assert!(verdict.starts_with("verdict: fail (2 failed, 0 warning(s), "), "{verdict}");
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn configured_servers_are_checked_with_their_config() {
    let sandbox = Sandbox::new();
    let dir = sandbox.home.join(".odek");
    std::fs::create_dir(&dir).unwrap();
    let config = json!({"mcp_servers": {"fx": {
        "command": odek_test_support::fixture_server(),
        "args": ["--conformant", "--artifact-dir", sandbox.artifacts],
        "artifact_roots": [sandbox.artifacts],
        "timeout_seconds": 5,
        "exclude_tools": ["slow"],
    }}});
    let path = dir.join("config.json");
    std::fs::write(&path, config.to_string()).unwrap();
    set_private(&path);
    // The fixture's tools carry no annotations: --calls all, or a configured server calls none.
    let output = sandbox.odek(&["ext", "check", "--json", "--calls", "all", "fx"]);
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("{err}: {}", String::from_utf8_lossy(&output.stderr)));
    assert_eq!(output.status.code(), Some(0), "{report:#}");
    assert_eq!(report["server"], "fx");
    assert_eq!(find(&report, "artifacts_validate", Some("artifact_result"))["status"], "pass");
    assert!(checks(&report).iter().all(|check| check["tool"] != "slow"), "exclude_tools are not listed");

    let output = sandbox.odek(&["ext", "check", "nope"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("no MCP server named \"nope\""));
}

/// Builds a workspace binary or example for this test profile (a no-op when it is fresh) and
/// returns its path.
fn build(cargo_args: &[&str], relative_path: &str) -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command.current_dir(odek_test_support::workspace_root()).arg("build").arg("--quiet").args(cargo_args);
    if odek_test_support::binary_dir().ends_with("release") {
        command.arg("--release");
    }
    assert!(command.status().unwrap().success(), "cargo build {cargo_args:?}");
    odek_test_support::binary_dir().join(relative_path)
}

/// Every check passed or did not apply: exit 0, no warning, no failure.
fn assert_clean_pass(output: &Output) -> Value {
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(0), "{report:#}");
    assert_eq!(report["counts"]["warn"], 0, "{report:#}");
    assert_eq!(report["counts"]["fail"], 0, "{report:#}");
    report
}

#[test]
fn the_example_log_summariser_passes_with_no_warnings() {
    let sandbox = Sandbox::new();
    let server = build(&["-p", "odek-log-summariser"], "odek-log-summariser");
    let log = sandbox.home.join("app.log");
    std::fs::write(&log, "INFO up\nERROR request 7 failed\nWARN slow\nERROR request 9 failed\n").unwrap();
    let example = json!({"path": log}).to_string();
    let root = sandbox.artifacts.to_str().unwrap();
    let output = sandbox.odek(&[
        "ext",
        "check",
        "--json",
        "--artifact-root",
        root,
        "--call",
        "summarise_log",
        &example,
        "--",
        server.to_str().unwrap(),
        "--artifact-dir",
        root,
    ]);
    let report = assert_clean_pass(&output);
    assert_eq!(find(&report, "artifacts_validate", Some("summarise_log"))["status"], "pass");
    // It writes an artifact and is not annotated readOnlyHint: true, so it is called once only.
    assert_eq!(with_status(&report, "skip"), names(&["unknown_arguments_tolerated"]), "{report:#}");
}

#[test]
fn the_minimal_sdk_example_passes_with_no_warnings() {
    let sandbox = Sandbox::new();
    let server = build(&["-p", "odek-extension", "--example", "minimal"], "examples/minimal");
    let root = sandbox.artifacts.to_str().unwrap();
    let output =
        sandbox.odek(&["ext", "check", "--json", "--artifact-root", root, "--", server.to_str().unwrap(), root]);
    let report = assert_clean_pass(&output);
    assert_eq!(find(&report, "artifacts_validate", Some("keep_note"))["status"], "pass");
}

#[test]
fn the_hand_written_python_server_in_the_docs_passes_with_no_warnings() {
    let sandbox = Sandbox::new();
    let docs = std::fs::read_to_string(odek_test_support::workspace_root().join("docs/EXTENDING.md")).unwrap();
    let start = docs.find("```python\n").unwrap() + "```python\n".len();
    let length = docs[start..].find("```\n").unwrap();
    let script = sandbox.home.join("word_count.py");
    std::fs::write(&script, &docs[start..start + length]).unwrap();
    // The interpreter's own path: a version-manager shim may need variables odek does not pass.
    let python = Command::new("python3").args(["-c", "import sys; print(sys.executable)"]).output().unwrap();
    let python = String::from_utf8(python.stdout).unwrap().trim().to_owned();
    let output = sandbox.odek(&["ext", "check", "--json", "--", &python, script.to_str().unwrap()]);
    let report = assert_clean_pass(&output);
    assert_eq!(find(&report, "call_answers", Some("word_count"))["status"], "pass");
    assert_eq!(find(&report, "unknown_arguments_tolerated", Some("word_count"))["status"], "pass");
}

#[test]
fn third_party_everything_server_passes() {
    let Some(servers) = interop_support::Servers::installed("third_party_everything_server_passes") else { return };
    let sandbox = Sandbox::new();
    let script = servers.everything();
    // The two toggles are not annotated readOnlyHint: true, so each is called once (no longer
    // twice, which toggled them back off): simulated logging left on keeps the server from
    // exiting within 5 s of its stdin closing, so they are skipped here.
    let output = sandbox.odek(&[
        "ext",
        "check",
        "--json",
        "--name",
        "everything",
        "--timeout",
        "30",
        "--call",
        "trigger-long-running-operation",
        r#"{"duration":1,"steps":2}"#,
        "--skip-call",
        "toggle-simulated-logging",
        "--skip-call",
        "toggle-subscriber-updates",
        "--",
        "node",
        script.to_str().unwrap(),
    ]);
    let report = assert_clean_pass(&output);
    assert_eq!(find(&report, "tools_list_answers", None)["reason"], "13 tool(s)");
    assert_eq!(find(&report, "call_answers", Some("trigger-long-running-operation"))["status"], "pass");
}

#[test]
fn third_party_filesystem_server_passes_without_calling_its_destructive_tools() {
    let Some(servers) = interop_support::Servers::installed(
        "third_party_filesystem_server_passes_without_calling_its_destructive_tools",
    ) else {
        return;
    };
    let sandbox = Sandbox::new();
    let script = servers.filesystem();
    let scratch = sandbox.artifacts.to_str().unwrap();
    std::fs::write(sandbox.artifacts.join("keep.txt"), "kept\n").unwrap();
    // [beyond] read_file, write_file and search_files no longer fail the name check (odek
    // exposes them qualified), and no --skip-call is needed: write_file, edit_file and
    // move_file are annotated destructiveHint: true, so they are never called.
    let output = sandbox.odek(&[
        "ext",
        "check",
        "--json",
        "--name",
        "filesystem",
        "--",
        "node",
        script.to_str().unwrap(),
        scratch,
    ]);
    let report = assert_clean_pass(&output);
    assert_eq!(find(&report, "tool_names_valid", None)["reason"], "14 valid name(s)");
    let skipped: BTreeSet<String> =
        plan(&report).into_iter().filter(|(_, call)| !*call).map(|(tool, _)| tool).collect();
    assert_eq!(skipped, names(&["write_file", "edit_file", "move_file"]));
    assert_eq!(find(&report, "call_answers", Some("read_file"))["status"], "pass");
    assert_eq!(std::fs::read_to_string(sandbox.artifacts.join("keep.txt")).unwrap(), "kept\n");

    // Configured (real credentials): only the tools annotated readOnlyHint: true are called,
    // and no exclude_tools is needed.
    sandbox.configure(&json!({"filesystem": {"command": "node", "args": [script, scratch]}}));
    let report = assert_clean_pass(&sandbox.odek(&["ext", "check", "--json", "filesystem"]));
    let skipped: BTreeSet<String> =
        plan(&report).into_iter().filter(|(_, call)| !*call).map(|(tool, _)| tool).collect();
    assert_eq!(skipped, names(&["write_file", "edit_file", "create_directory", "move_file"]));
}

#[test]
fn third_party_everything_server_configured_gets_only_its_read_only_calls() {
    let Some(servers) =
        interop_support::Servers::installed("third_party_everything_server_configured_gets_only_its_read_only_calls")
    else {
        return;
    };
    let sandbox = Sandbox::new();
    sandbox.configure(&json!({"everything": {
        "command": "node",
        "args": [servers.everything()],
        "timeout_seconds": 30,
    }}));
    let output = sandbox.odek(&[
        "ext",
        "check",
        "--json",
        "--call",
        "trigger-long-running-operation",
        r#"{"duration":1,"steps":2}"#,
        "everything",
    ]);
    let report = assert_clean_pass(&output);
    // The server annotates every tool; the four not marked readOnlyHint: true are not called.
    let skipped: BTreeSet<String> =
        plan(&report).into_iter().filter(|(_, call)| !*call).map(|(tool, _)| tool).collect();
    assert_eq!(
        skipped,
        names(&[
            "toggle-simulated-logging",
            "toggle-subscriber-updates",
            "gzip-file-as-resource",
            "simulate-research-query"
        ])
    );
    assert_eq!(find(&report, "call_answers", Some("get-sum"))["status"], "pass");
    assert_eq!(find(&report, "tools_exercised", None)["status"], "pass");
}

// ---- Streamable HTTP ------------------------------------------------------------------------

/// The fixture's bearer token in these tests (long enough for odek's redaction).
const FIXTURE_TOKEN: &str = "fixture-bearer-token-4b2e9d17";

/// Checks a process has and an HTTP server has not: reported, never judged.
const NOT_OVER_HTTP: &[&str] = &[
    "initialized_notification_accepted",
    "stdout_only_json_rpc",
    "stdout_lines_within_limit",
    "responses_match_requests",
    "exits_on_stdin_close",
];

impl Sandbox {
    /// The fixture serving Streamable HTTP on a port the kernel picks, writing artifacts into
    /// the sandbox, with these extra arguments.
    fn http_fixture(&self, fixture_args: &[&str]) -> ListeningServer {
        let mut command = Command::new(odek_test_support::fixture_server());
        command.args(["--http", "127.0.0.1:0", "--conformant", "--artifact-dir"]).arg(&self.artifacts);
        command.args(fixture_args);
        ListeningServer::start(command)
    }

    /// `odek ext check --json --url <url>` with the flags the fixture's checks need, then these.
    fn check_url(&self, url: &str, check_args: &[&str], env: &[(&str, &str)]) -> Output {
        let root = self.artifacts.to_str().unwrap();
        let mut args = vec!["ext", "check", "--json", "--timeout", "5", "--artifact-root", root];
        args.extend_from_slice(&["--call", "slow", r#"{"ms":20}"#, "--url", url]);
        args.extend_from_slice(check_args);
        self.odek_with_env(&args, env)
    }
}

/// Stdout and stderr, for "never shown" assertions.
fn all_output(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

/// A clean pass over HTTP: no failure, no warning, every process-only check reported as not
/// applicable, the HTTP checks passed.
fn assert_http_pass(output: &Output) -> Value {
    let (report, code) = json_report(output);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(with_status(&report, "fail"), BTreeSet::new(), "{report:#}");
    assert_eq!(with_status(&report, "warn"), BTreeSet::new(), "{report:#}");
    assert_eq!(report["transport"], "streamable-http");
    assert!(report.get("command").is_none(), "{report:#}");
    for name in NOT_OVER_HTTP {
        let check = find(&report, name, None);
        assert_eq!(check["status"], "skip", "{check}");
        assert!(check["reason"].as_str().unwrap().starts_with("not applicable over HTTP: "), "{check}");
    }
    for name in ["server_reachable", "session_id_issued", "answers_are_json_rpc", "answers_within_limit"] {
        assert_eq!(find(&report, name, None)["status"], "pass", "{name}: {report:#}");
    }
    assert!(checks(&report).iter().all(|check| check["check"] != "server_starts"), "{report:#}");
    report
}

#[test]
fn the_fixture_over_streamable_http_passes_with_no_failure() {
    let sandbox = Sandbox::new();
    let fixture = sandbox.http_fixture(&[]);
    let report = assert_http_pass(&sandbox.check_url(&fixture.url, &[], &[]));
    assert_eq!(report["url"], fixture.url.as_str());
    assert_eq!(report["server"], "127-0-0-1", "named after the URL's host");
    for tool in ["echo", "large_result", "artifact_result", "slow", "error_result"] {
        assert_eq!(find(&report, "call_answers", Some(tool))["status"], "pass", "{tool}");
    }
    assert_eq!(find(&report, "artifacts_validate", Some("artifact_result"))["status"], "pass");
    assert_eq!(
        find(&report, "session_id_issued", None)["reason"],
        "the server issued a session id on initialize; odek sends it with every request and ends the session with DELETE"
    );
    let load = find(&report, "concurrent_calls_answered", None);
    assert!(load["reason"].as_str().unwrap().starts_with("8 concurrent ping answered"), "{load}");

    // The text form names the URL and the transport.
    let root = sandbox.artifacts.to_str().unwrap();
    let output = sandbox.odek(&["ext", "check", "--name", "fx", "--artifact-root", root, "--url", &fixture.url]);
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.starts_with(&format!("odek ext check: server \"fx\": {} (Streamable HTTP)\n", fixture.url)), "{text}");
    assert!(text.contains("\nhttp\n  pass  session_id_issued: "), "{text}");
    assert!(text.contains("  skip  exits_on_stdin_close: not applicable over HTTP: there is no process"), "{text}");
}

#[test]
fn a_bearer_token_by_header_or_token_env_is_sent_and_never_shown_red() {
    let sandbox = Sandbox::new();
    let fixture = sandbox.http_fixture(&["--bearer-token", FIXTURE_TOKEN]);
    let bearer = format!("Authorization: Bearer {FIXTURE_TOKEN}");
    for (check_args, env) in [
        (vec!["--header", bearer.as_str()], vec![]),
        (vec!["--token-env", "FX_TOKEN"], vec![("FX_TOKEN", FIXTURE_TOKEN)]),
    ] {
        let output = sandbox.check_url(&fixture.url, &check_args, &env);
        let report = assert_http_pass(&output);
        assert_eq!(report["headers"], json!(["Authorization"]), "only the header's name");
        assert!(!all_output(&output).contains(FIXTURE_TOKEN), "the token leaked: {}", all_output(&output));
    }
}

#[test]
fn a_wrong_or_missing_token_fails_clearly_and_is_never_shown_red() {
    let sandbox = Sandbox::new();
    let fixture = sandbox.http_fixture(&["--bearer-token", FIXTURE_TOKEN]);
    let wrong = "wrong-bearer-token-0c5a8e33";
    let header = format!("Authorization: Bearer {wrong}");
    for check_args in [vec!["--header", header.as_str()], vec![]] {
        let output = sandbox.check_url(&fixture.url, &check_args, &[]);
        let (report, code) = json_report(&output);
        assert_eq!(code, 1, "{report:#}");
        assert_eq!(checks(&report).len(), 1, "nothing else runs against a server that refused us: {report:#}");
        let check = find(&report, "server_reachable", None);
        assert_eq!(check["status"], "fail");
        let reason = check["reason"].as_str().unwrap();
        assert!(reason.starts_with("the server refused the request's credentials: http 401: "), "{reason}");
        assert!(reason.ends_with("give the right ones with --token-env VAR or --header 'Authorization: Bearer …' (for a configured server: its token_env or headers)"), "{reason}");
        let shown = all_output(&output);
        assert!(!shown.contains(wrong) && !shown.contains(FIXTURE_TOKEN), "a token leaked: {shown}");
    }
}

/// What odek refuses before it sends anything: the exact error, exit 1, no report, no request.
fn assert_refused(sandbox: &Sandbox, check_args: &[&str], want: &str, hidden: &str) {
    let server = McpHttpServer::start(McpScript::new());
    let url = server.url();
    let args: Vec<&str> = ["ext", "check"]
        .into_iter()
        .chain(check_args.iter().map(|arg| if *arg == "URL" { url.as_str() } else { arg }))
        .collect();
    let output = sandbox.odek(&args);
    assert_eq!(output.status.code(), Some(1), "{}", all_output(&output));
    assert_eq!(String::from_utf8_lossy(&output.stderr), format!("odek: {want}\n"));
    assert!(output.stdout.is_empty(), "{}", all_output(&output));
    assert!(!hidden.is_empty() && !all_output(&output).contains(hidden), "{}", all_output(&output));
    assert!(server.requests().is_empty(), "nothing is sent: {:?}", server.requests());
}

#[test]
fn credentials_in_the_url_are_refused_and_never_echoed_red() {
    let sandbox = Sandbox::new();
    let server = McpHttpServer::start(McpScript::new());
    let with_credentials = server.url().replacen("http://", "http://checker:url-password-77d1@", 1);
    assert_refused(
        &sandbox,
        &["--url", &with_credentials],
        "mcpclient 127-0-0-1: credentials in the URL are not allowed; use token_env instead",
        "url-password-77d1",
    );
    assert!(server.requests().is_empty());
}

#[test]
fn a_header_value_with_a_line_break_is_refused_red() {
    let sandbox = Sandbox::new();
    for value in ["team-7\r\nX-Injected: smuggled-header-value", "team-7\nX-Injected: smuggled-header-value"] {
        let header = format!("X-Team: {value}");
        assert_refused(
            &sandbox,
            &["--url", "URL", "--header", &header],
            "mcpclient 127-0-0-1: header \"X-Team\": the value contains a line break",
            "smuggled-header-value",
        );
    }
    assert_refused(
        &sandbox,
        &["--url", "URL", "--header", "no-colon-secret-value-31"],
        "--header wants 'Name: value'; one has no ':'",
        "no-colon-secret-value-31",
    );
}

#[test]
fn plain_http_beyond_loopback_and_link_local_addresses_are_refused_red() {
    let sandbox = Sandbox::new();
    let output = sandbox.odek(&["ext", "check", "--url", "http://mcp.example.com/mcp"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "odek: mcpclient mcp-example-com: plain http is allowed only to a loopback host; use https, or set \"allow_insecure_http\": true\n"
    );
    let output = sandbox.odek(&["ext", "check", "--allow-insecure-http", "--url", "http://169.254.169.254/latest"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "odek: mcpclient 169-254-169-254: refusing to connect to link-local address 169.254.169.254\n"
    );
}

/// A remote server whose `echo` answers and whose other tool answers with `answer`; both
/// annotated read-only, so a configured server's default `--calls read-only` calls them.
fn hostile_server(tool: &str, answer: fn() -> ToolAnswer) -> McpHttpServer {
    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
    let annotations = json!({"readOnlyHint": true});
    let echo = json!({"name": "echo", "description": "Echo.", "inputSchema": schema, "annotations": annotations});
    let hostile =
        json!({"name": tool, "description": "Misbehaves.", "inputSchema": schema, "annotations": annotations});
    McpHttpServer::start(
        McpScript::new()
            .tool(echo, |args: &Value| ToolAnswer::text(args["text"].as_str().unwrap_or("echoed").to_owned()))
            .tool(hostile, move |_: &Value| answer()),
    )
}

#[test]
fn an_oversized_answer_fails_its_call_within_the_limit_and_the_run_goes_on() {
    let sandbox = Sandbox::new();
    // 64 MiB, generated while it is sent: odek reads at most max_response_bytes + 1 of it.
    let server = hostile_server("flood", || ToolAnswer::huge_text(64 * 1024 * 1024));
    let token = "configured-token-value-6a1f";
    sandbox.configure(&json!({"remote": {
        "url": server.url(), "token_env": "REMOTE_TOKEN", "headers": {"X-Team": "team-header-value-93"},
        "max_response_bytes": 65536, "timeout_seconds": 5,
    }}));
    let output = sandbox.odek_with_env(&["ext", "check", "--json", "remote"], &[("REMOTE_TOKEN", token)]);
    let (report, code) = json_report(&output);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(with_status(&report, "fail"), names(&["answers_within_limit", "call_answers"]), "{report:#}");
    assert_eq!(find(&report, "call_answers", Some("flood"))["reason"], "response exceeds max_response_bytes=65536");
    assert!(
        find(&report, "answers_within_limit", None)["reason"].as_str().unwrap().starts_with(
            "an answer longer than max_response_bytes (65536 bytes) arrived while waiting for tools/call flood; "
        ),
        "{report:#}"
    );
    // The run went on: the other tool, the repeat with an unknown argument and the burst.
    assert_eq!(find(&report, "call_answers", Some("echo"))["status"], "pass");
    assert_eq!(find(&report, "unknown_arguments_tolerated", Some("echo"))["status"], "pass");
    assert_eq!(find(&report, "concurrent_calls_answered", None)["status"], "pass");
    assert_eq!(report["headers"], json!(["X-Team", "Authorization"]));
    // Every request carried the configured header and the token, which no output shows.
    let requests = server.requests();
    assert!(requests.iter().any(|request| request.method == "DELETE"), "the session is ended");
    for request in &requests {
        assert_eq!(request.header("authorization"), Some(format!("Bearer {token}").as_str()));
        assert_eq!(request.header("x-team"), Some("team-header-value-93"));
    }
    let shown = all_output(&output);
    assert!(!shown.contains(token) && !shown.contains("team-header-value-93"), "{shown}");
}

#[test]
fn an_answer_of_another_content_type_fails_answers_are_json_rpc() {
    let sandbox = Sandbox::new();
    let server = hostile_server("html", || ToolAnswer::text("not for odek").content_type("text/html"));
    let output = sandbox.odek(&["ext", "check", "--json", "--timeout", "5", "--url", &server.url()]);
    let (report, code) = json_report(&output);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(with_status(&report, "fail"), names(&["answers_are_json_rpc", "call_answers"]), "{report:#}");
    let check = find(&report, "answers_are_json_rpc", None);
    assert_eq!(check["evidence"], "unexpected response content type \"text/html\"");
    assert!(
        check["reason"].as_str().unwrap().starts_with(
            "1 answer(s) could not be used and failed their request (first while waiting for tools/call html); "
        ),
        "{check}"
    );
}

/// [beyond] `@modelcontextprotocol/server-everything` over Streamable HTTP and over the
/// deprecated HTTP+SSE transport (`"type": "sse"`), configured by `url`: the same checks pass
/// as over stdio, and over HTTP+SSE there is no session id to judge.
#[test]
fn third_party_everything_server_over_http_and_legacy_sse_is_checked() {
    let Some(servers) =
        interop_support::Servers::installed("third_party_everything_server_over_http_and_legacy_sse_is_checked")
    else {
        return;
    };
    for (mode, kind, transport) in [("streamableHttp", "http", "streamable-http"), ("sse", "sse", "http+sse")] {
        let server = interop_support::everything_http(&servers, mode);
        let sandbox = Sandbox::new();
        sandbox.configure(&json!({"everything": {"type": kind, "url": server.url, "timeout_seconds": 30}}));
        let long_operation = ["--call", "trigger-long-running-operation", r#"{"duration":1,"steps":2}"#];
        let output = sandbox.odek(&[&["ext", "check", "--json"][..], &long_operation, &["everything"]].concat());
        let report = assert_clean_pass(&output);
        assert_eq!(report["transport"], transport, "{mode}");
        assert_eq!(find(&report, "tools_list_answers", None)["reason"], "13 tool(s)", "{mode}");
        assert_eq!(find(&report, "tools_exercised", None)["status"], "pass", "{mode}: {report:#}");
        let session = find(&report, "session_id_issued", None);
        let want = if kind == "sse" { "skip" } else { "pass" };
        assert_eq!(session["status"], want, "{mode}: {session}");
    }
}

fn set_private(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}
