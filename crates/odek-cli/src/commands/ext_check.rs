//! `odek ext check`: resolves what to start (a configured server, or a command after `--`), with
//! odek's environment rules and the server's limits, hands it to the conformance checks in
//! `odek_conformance`, prints the report (text or `--json`) and returns a verdict that is
//! not a pass as the outcome ([`CommandError::Check`]: exit 1 any failure, 2 warnings only).
//! Which tools are called (`--calls`) defaults to read-only ones for a configured server — it
//! runs with the operator's real credentials — and to every non-destructive one for a command
//! after `--`; the plan goes to stderr before the first call.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use odek_conformance::{CallPolicy, CheckOptions, PlannedCall, Verdict, render_plan, run_conformance};
use odek_mcp::env_allowlist::{process_env, server_env};
use odek_mcp::{Transport, validate_server};

use crate::cli::ExtCheckArgs;
use crate::commands::run::load_setup;
use crate::outcome::CommandError;
use crate::terminal::console::StdConsole;
use crate::terminal::print_warnings;

/// The server name when the command's file name does not make a valid one.
const FALLBACK_SERVER_NAME: &str = "server";

pub(crate) async fn check(args: ExtCheckArgs) -> Result<(), CommandError> {
    let options = check_options(&args)?;
    let policy = options.calls;
    let announce = move |plan: &[PlannedCall]| {
        let _ = std::io::stderr().write_all(render_plan(policy, plan).as_bytes());
    };
    let report = run_conformance(&options, &announce).await;
    let mut stdout = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut stdout, &report)?;
        writeln!(stdout)?;
    } else {
        stdout.write_all(report.render_text().as_bytes())?;
    }
    stdout.flush()?;
    drop(stdout);
    match report.verdict {
        Verdict::Pass => Ok(()),
        verdict => Err(CommandError::Check(verdict)),
    }
}

/// What to start and with which limits, from the flags and (for a configured server) the config.
fn check_options(args: &ExtCheckArgs) -> Result<CheckOptions, CommandError> {
    let examples = call_examples(&args.calls)?;
    let mut options = match (&args.server, args.command.split_first()) {
        (Some(name), _) => configured_server(name)?,
        (None, Some((command, command_args))) => {
            let server = match &args.name {
                Some(name) => {
                    odek_contract::names::validate_server_name(name)
                        .map_err(|err| CommandError::Fatal(err.to_string()))?;
                    name.clone()
                }
                None => server_name_for(command),
            };
            let (env, warnings) = server_env(&server, &Default::default(), &Default::default(), process_env());
            print_warnings(&warnings);
            CheckOptions::new(server, command.clone(), command_args.to_vec(), env)
        }
        (None, None) => {
            return Err(CommandError::Fatal(
                "ext check needs a configured server name or a command after --".to_owned(),
            ));
        }
    };
    if let Some(seconds) = args.timeout {
        if seconds == 0 {
            return Err(CommandError::Fatal("--timeout must be at least 1 second".to_owned()));
        }
        options.timeout = Duration::from_secs(seconds.min(3600));
    }
    options.artifact_roots.extend(args.artifact_roots.iter().cloned());
    options.examples = examples;
    options.skip_calls.extend(args.skip_calls.iter().cloned());
    match args.call_policy.as_deref() {
        Some("all") => options.calls = CallPolicy::All,
        Some("read-only") => options.calls = CallPolicy::ReadOnly,
        _ => {}
    }
    options.concurrency = args.concurrency.max(1);
    Ok(options)
}

/// `--call TOOL JSON` pairs, the JSON parsed.
fn call_examples(flat: &[String]) -> Result<Vec<(String, serde_json::Value)>, CommandError> {
    flat.chunks(2)
        .map(|pair| match pair {
            [tool, json] => serde_json::from_str(json)
                .map(|arguments| (tool.clone(), arguments))
                .map_err(|err| CommandError::Fatal(format!("--call {tool}: the arguments are not JSON: {err}"))),
            _ => Err(CommandError::Fatal("--call needs a tool name and a JSON object".to_owned())),
        })
        .collect()
}

/// A configured stdio server, validated, approved (project servers) and given its environment
/// exactly as a run would.
fn configured_server(name: &str) -> Result<CheckOptions, CommandError> {
    let setup = load_setup()?;
    let Some(server) = setup.loaded.config.mcp_servers.iter().find(|server| server.name == name) else {
        return Err(CommandError::Fatal(format!(
            "no MCP server named {} in mcp_servers (give a command after -- to check an unconfigured server)",
            odek_contract::quoting::quote(name)
        )));
    };
    let (spec, warnings) = validate_server(&server.name, &server.entry)
        .map_err(|err| CommandError::Fatal(odek_mcp::McpError::at_startup(name, err).to_string()))?;
    print_warnings(&warnings);
    setup.approvals(Arc::new(StdConsole)).approve_project_servers(std::slice::from_ref(server))?;
    let Transport::Stdio { command, args, env } = spec.transport else {
        return Err(CommandError::Fatal(format!(
            "mcp server {}: ext check runs stdio servers; this one is configured with a url",
            odek_contract::quoting::quote(name)
        )));
    };
    let parent = setup.loaded.env.iter().map(|(key, value)| (key.clone(), value.clone()));
    let (env, warnings) = server_env(name, &env, &spec.secret_env, parent);
    print_warnings(&warnings);
    Ok(CheckOptions {
        timeout: spec.limits.timeout,
        max_response_bytes: spec.limits.max_response_bytes,
        max_result_chars: spec.limits.max_result_chars,
        artifact_roots: spec.artifact_roots,
        exclude_tools: spec.exclude_tools,
        // Real credentials: only tools that say they change nothing, unless --calls all.
        calls: CallPolicy::ReadOnly,
        ..CheckOptions::new(name.to_owned(), command, args, env)
    })
}

/// A valid server name from the command's file name: characters outside `[A-Za-z0-9_-]` become
/// `-`, `__` collapses, at most 64 bytes.
fn server_name_for(command: &str) -> String {
    let stem = std::path::Path::new(command).file_stem().and_then(|stem| stem.to_str()).unwrap_or_default();
    let mut name = String::with_capacity(stem.len());
    for c in stem.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' };
        if !(c == '_' && name.ends_with('_')) {
            name.push(c);
        }
    }
    name.truncate(64);
    if odek_contract::names::validate_server_name(&name).is_ok() { name } else { FALLBACK_SERVER_NAME.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_names_come_from_the_command() {
        assert_eq!(server_name_for("/usr/bin/odek-fixture-server"), "odek-fixture-server");
        assert_eq!(server_name_for("./my server.py"), "my-server");
        assert_eq!(server_name_for("a__b"), "a_b");
        assert_eq!(server_name_for(""), FALLBACK_SERVER_NAME);
        assert_eq!(server_name_for(&"x".repeat(80)).len(), 64);
    }

    #[test]
    fn call_examples_are_pairs_of_tool_and_json() {
        let flat = vec!["echo".to_owned(), r#"{"text":"hi"}"#.to_owned()];
        let examples = call_examples(&flat).unwrap();
        assert_eq!(examples, vec![("echo".to_owned(), serde_json::json!({"text":"hi"}))]);
        assert!(call_examples(&["echo".to_owned(), "{".to_owned()]).is_err());
    }
}
