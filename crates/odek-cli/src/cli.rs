//! Command-line parsing: clap does the work, this module turns its errors into odek's exact
//! console texts (spec README §5, `config.md` §10): `unknown command "<cmd>"` with usage,
//! `unknown flag "<flag>"`, `<flag> requires a value`, always exit 1.

use std::ffi::OsString;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{CommandFactory, Parser, Subcommand};

/// A fast, secure, single-binary agent runtime.
#[derive(Debug, Parser)]
#[command(
    name = "odek",
    version,
    about = "A fast, secure, single-binary agent runtime",
    long_about = None,
    disable_help_subcommand = true,
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Inspect and exercise the configured MCP extension servers
    #[command(subcommand)]
    Ext(ExtCommand),
    /// List, show, delete and trim saved sessions
    #[command(subcommand)]
    Session(crate::commands::session::SessionCommand),
}

#[derive(Debug, Subcommand)]
pub enum ExtCommand {
    /// Start every configured server and show its status, tools, limits and warnings
    List {
        /// Print one JSON document instead of text
        #[arg(long)]
        json: bool,
    },
    /// Call one tool through the same pipeline the agent uses and print what the model would see
    Call {
        /// Read `{"tool": …, "arguments": …}` lines from stdin and answer one JSON line per call
        #[arg(long, conflicts_with_all = ["tool", "arguments"])]
        jsonl: bool,
        /// The exposed tool name (`<server>__<tool>`)
        #[arg(required_unless_present = "jsonl")]
        tool: Option<String>,
        /// The tool arguments as JSON (default: none)
        arguments: Option<String>,
    },
}

/// The names `odek` accepts as its first word.
const COMMANDS: &[&str] = &["ext", "session"];

/// What parsing decided.
#[derive(Debug)]
pub enum Parsed {
    Command(Command),
    /// Help, version or an error: print and exit.
    Exit {
        stdout: String,
        stderr: String,
        code: u8,
    },
}

/// Parses `args` (including the program name).
pub fn parse_args(args: &[OsString]) -> Parsed {
    if let Some(first) = args.get(1).and_then(|arg| arg.to_str())
        && !first.starts_with('-')
        && !COMMANDS.contains(&first)
    {
        let usage = Cli::command().render_help().to_string();
        return Parsed::Exit {
            stdout: String::new(),
            stderr: format!("odek: unknown command {}\n\n{usage}", odek_contract::quoting::quote(first)),
            code: 1,
        };
    }
    match Cli::try_parse_from(args) {
        Ok(cli) => Parsed::Command(cli.command),
        Err(error) => from_clap_error(&error),
    }
}

fn from_clap_error(error: &clap::Error) -> Parsed {
    let rendered = error.render().to_string();
    match error.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            Parsed::Exit { stdout: rendered, stderr: String::new(), code: 0 }
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand | ErrorKind::MissingSubcommand => {
            Parsed::Exit { stdout: String::new(), stderr: rendered, code: 1 }
        }
        kind => {
            let message = match (kind, context_string(error, ContextKind::InvalidArg)) {
                (ErrorKind::UnknownArgument, Some(flag)) => {
                    let flag = flag.split('=').next().unwrap_or(&flag).to_owned();
                    format!("unknown flag {}", odek_contract::quoting::quote(&flag))
                }
                (ErrorKind::InvalidSubcommand, _) => match context_string(error, ContextKind::InvalidSubcommand) {
                    Some(command) => format!("unknown command {}", odek_contract::quoting::quote(&command)),
                    None => first_line(&rendered),
                },
                (ErrorKind::InvalidValue | ErrorKind::NoEquals, Some(flag)) if is_missing_value(error) => {
                    format!("{} requires a value", flag.split_whitespace().next().unwrap_or(&flag))
                }
                _ => first_line(&rendered),
            };
            Parsed::Exit { stdout: String::new(), stderr: format!("odek: {message}\n"), code: 1 }
        }
    }
}

fn context_string(error: &clap::Error, kind: ContextKind) -> Option<String> {
    match error.get(kind)? {
        ContextValue::String(value) => Some(value.clone()),
        ContextValue::Strings(values) => values.first().cloned(),
        _ => None,
    }
}

fn is_missing_value(error: &clap::Error) -> bool {
    matches!(error.get(ContextKind::InvalidValue), Some(ContextValue::String(value)) if value.is_empty())
}

fn first_line(rendered: &str) -> String {
    let line = rendered.lines().next().unwrap_or_default();
    line.strip_prefix("error: ").unwrap_or(line).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Parsed {
        let args: Vec<OsString> = std::iter::once("odek").chain(args.iter().copied()).map(OsString::from).collect();
        parse_args(&args)
    }

    fn exit(parsed: Parsed) -> (String, String, u8) {
        match parsed {
            Parsed::Exit { stdout, stderr, code } => (stdout, stderr, code),
            Parsed::Command(command) => panic!("expected exit, got {command:?}"),
        }
    }

    #[test]
    fn unknown_command_prints_usage_and_exits_1() {
        let (stdout, stderr, code) = exit(parse(&["frobnicate", "--x"]));
        assert_eq!(code, 1);
        assert!(stdout.is_empty());
        assert!(stderr.starts_with("odek: unknown command \"frobnicate\"\n\n"), "{stderr}");
        assert!(stderr.contains("Usage: odek"), "{stderr}");
    }

    #[test]
    fn unknown_flag_is_named() {
        let (_, stderr, code) = exit(parse(&["ext", "list", "--bogus=1"]));
        assert_eq!((stderr.as_str(), code), ("odek: unknown flag \"--bogus\"\n", 1));
    }

    #[test]
    fn unknown_ext_subcommand() {
        let (_, stderr, code) = exit(parse(&["ext", "nope"]));
        assert_eq!((stderr.as_str(), code), ("odek: unknown command \"nope\"\n", 1));
    }

    #[test]
    fn version_and_help_go_to_stdout() {
        let (stdout, stderr, code) = exit(parse(&["--version"]));
        assert_eq!(stdout, format!("odek {}\n", env!("CARGO_PKG_VERSION")));
        assert!(stderr.is_empty());
        assert_eq!(code, 0);
        let (stdout, _, code) = exit(parse(&["--help"]));
        assert!(stdout.contains("ext"));
        assert_eq!(code, 0);
    }

    #[test]
    fn ext_call_forms() {
        match parse(&["ext", "call", "fixture__echo", r#"{"text":"hi"}"#]) {
            Parsed::Command(Command::Ext(ExtCommand::Call {
                jsonl: false,
                tool: Some(tool),
                arguments: Some(args),
            })) => {
                assert_eq!(tool, "fixture__echo");
                assert_eq!(args, r#"{"text":"hi"}"#);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse(&["ext", "call", "--jsonl"]),
            Parsed::Command(Command::Ext(ExtCommand::Call { jsonl: true, .. }))
        ));
        let (_, _, code) = exit(parse(&["ext", "call"]));
        assert_eq!(code, 1);
    }
}
