//! `odek ext check`: resolves what to check (a configured server, a command after `--`, or a
//! Streamable HTTP server at `--url` with its `--header`s and `--token-env`), with odek's
//! environment, URL and header rules and the server's limits, hands it to the conformance checks
//! in `odek_conformance`, prints the report (text or `--json`) and returns a verdict that is not
//! a pass as the outcome ([`CommandError::Check`]: exit 1 any failure, 2 warnings only). Which
//! tools are called (`--calls`) defaults to read-only ones for a configured server — it runs
//! with the operator's real credentials — and to every non-destructive one otherwise; the plan
//! goes to stderr before the first call. A header value or token is never printed.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use odek::mcp::env_allowlist::{process_env, server_env};
use odek::mcp::remote::{bearer_token, check_endpoint};
use odek::mcp::server_config::SecretValue;
use odek::mcp::{Transport, validate_server};
use odek_conformance::{CallPolicy, CheckOptions, PlannedCall, Target, Verdict, render_plan, run_conformance};
use odek_contract::quoting::quote;

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
    let mut options = match (&args.server, &args.url, args.command.split_first()) {
        (Some(name), _, _) => configured_server(name)?,
        (None, Some(url), _) => url_server(args, url)?,
        (None, None, Some((command, command_args))) => {
            let server = chosen_name(args, command_stem(command))?;
            let (env, warnings) = server_env(&server, &Default::default(), &Default::default(), process_env());
            print_warnings(&warnings);
            CheckOptions::new(server, Target::Stdio { command: command.clone(), args: command_args.to_vec(), env })
        }
        (None, None, None) => {
            return Err(CommandError::Fatal(
                "ext check needs a configured server name, --url or a command after --".to_owned(),
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

/// `--name`, validated, else a name made from `stem`.
fn chosen_name(args: &ExtCheckArgs, stem: &str) -> Result<String, CommandError> {
    match &args.name {
        Some(name) => {
            odek_contract::names::validate_server_name(name).map_err(|err| CommandError::Fatal(err.to_string()))?;
            Ok(name.clone())
        }
        None => Ok(server_name_from(stem)),
    }
}

/// A server at `--url`, checked by the rules odek applies to a configured `url` (no credentials
/// in it, plain http only to loopback unless `--allow-insecure-http`, link-local refused; each
/// header a valid name and a one-line value), with the bearer token `--token-env` names.
fn url_server(args: &ExtCheckArgs, url: &str) -> Result<CheckOptions, CommandError> {
    let host = url::Url::parse(url).ok().and_then(|parsed| parsed.host_str().map(str::to_owned));
    let server = chosen_name(args, host.as_deref().unwrap_or_default())?;
    let headers = header_flags(&args.headers)?;
    let token_env = args.token_env.clone().unwrap_or_default();
    let endpoint = check_endpoint(&server, url, &headers, &token_env, args.allow_insecure_http)
        .map_err(|err| CommandError::Fatal(err.to_string()))?;
    let (token, warning) = bearer_token(&server, &token_env, process_env());
    print_warnings(&Vec::from_iter(warning));
    Ok(CheckOptions::new(server, Target::Http { endpoint, token, legacy_sse: false }))
}

/// `--header 'Name: value'` flags as odek's `headers`: the name trimmed, the value without the
/// spaces or tabs around it. Each value is registered for redaction at once, and no error ever
/// shows one.
fn header_flags(flags: &[String]) -> Result<BTreeMap<String, SecretValue>, CommandError> {
    let mut headers = BTreeMap::new();
    for flag in flags {
        let Some((name, value)) = flag.split_once(':') else {
            return Err(CommandError::Fatal("--header wants 'Name: value'; one has no ':'".to_owned()));
        };
        let (name, value) = (name.trim_matches([' ', '\t']), value.trim_matches([' ', '\t']));
        odek_contract::redaction::register_secret(value);
        if headers.keys().any(|known: &String| known.eq_ignore_ascii_case(name)) {
            return Err(CommandError::Fatal(format!("--header {}: given more than once", quote(name))));
        }
        headers.insert(name.to_owned(), SecretValue::new(value));
    }
    Ok(headers)
}

/// A configured server, validated, approved (project servers) and given its environment or its
/// token exactly as a run would.
fn configured_server(name: &str) -> Result<CheckOptions, CommandError> {
    let setup = load_setup()?;
    let Some(server) = setup.loaded.config.mcp_servers.iter().find(|server| server.name == name) else {
        return Err(CommandError::Fatal(format!(
            "no MCP server named {} in mcp_servers (give a command after -- to check an unconfigured server)",
            odek_contract::quoting::quote(name)
        )));
    };
    let (spec, warnings) = validate_server(&server.name, &server.entry)
        .map_err(|err| CommandError::Fatal(odek::mcp::McpError::at_startup(name, err).to_string()))?;
    print_warnings(&warnings);
    setup.approvals(Arc::new(StdConsole)).approve_project_servers(std::slice::from_ref(server))?;
    let parent = setup.loaded.env.iter().map(|(key, value)| (key.clone(), value.clone()));
    let target = match spec.transport {
        Transport::Stdio { command, args, env } => {
            let (env, warnings) = server_env(name, &env, &spec.secret_env, parent);
            print_warnings(&warnings);
            Target::Stdio { command, args, env }
        }
        Transport::Http { endpoint, token_env, legacy_sse } => {
            let (token, warning) = bearer_token(name, &token_env, parent);
            print_warnings(&Vec::from_iter(warning));
            Target::Http { endpoint, token, legacy_sse }
        }
    };
    Ok(CheckOptions {
        timeout: spec.limits.timeout,
        max_response_bytes: spec.limits.max_response_bytes,
        max_result_chars: spec.limits.max_result_chars,
        artifact_roots: spec.artifact_roots,
        exclude_tools: spec.exclude_tools,
        protocol: spec.protocol,
        // Real credentials: only tools that say they change nothing, unless --calls all.
        calls: CallPolicy::ReadOnly,
        ..CheckOptions::new(name.to_owned(), target)
    })
}

/// The command's file name without its extension.
fn command_stem(command: &str) -> &str {
    std::path::Path::new(command).file_stem().and_then(|stem| stem.to_str()).unwrap_or_default()
}

/// A valid server name from a command's file name or a URL's host: characters outside
/// `[A-Za-z0-9_-]` become `-`, `__` collapses, at most 64 bytes.
fn server_name_from(stem: &str) -> String {
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
    fn server_names_come_from_the_command_or_the_host() {
        let name = |command: &str| server_name_from(command_stem(command));
        assert_eq!(name("/usr/bin/odek-fixture-server"), "odek-fixture-server");
        assert_eq!(name("./my server.py"), "my-server");
        assert_eq!(name("a__b"), "a_b");
        assert_eq!(name(""), FALLBACK_SERVER_NAME);
        assert_eq!(name(&"x".repeat(80)).len(), 64);
        assert_eq!(server_name_from("127.0.0.1"), "127-0-0-1");
        assert_eq!(server_name_from("mcp.example.com"), "mcp-example-com");
    }

    /// Before: there was no --header; a value must never be echoed, whatever is wrong with it.
    #[test]
    fn header_flags_are_name_value_pairs_never_echoed_red() {
        let flags = |list: &[&str]| list.iter().map(|flag| (*flag).to_owned()).collect::<Vec<_>>();
        let headers = header_flags(&flags(&["X-Team:  team 1\t", "Authorization: Bearer b"])).unwrap();
        assert_eq!(headers["X-Team"].expose(), "team 1");
        assert_eq!(headers["Authorization"].expose(), "Bearer b");
        for (list, want) in [
            (&["no-colon-secret-value"][..], "--header wants 'Name: value'; one has no ':'"),
            (&["X-A: one-secret-value", "x-a: two-secret-value"][..], "--header \"x-a\": given more than once"),
        ] {
            let Err(CommandError::Fatal(error)) = header_flags(&flags(list)) else { panic!("{list:?} accepted") };
            assert_eq!(error, want);
        }
    }

    #[test]
    fn call_examples_are_pairs_of_tool_and_json() {
        let flat = vec!["echo".to_owned(), r#"{"text":"hi"}"#.to_owned()];
        let examples = call_examples(&flat).unwrap();
        assert_eq!(examples, vec![("echo".to_owned(), serde_json::json!({"text":"hi"}))]);
        assert!(call_examples(&["echo".to_owned(), "{".to_owned()]).is_err());
    }
}
