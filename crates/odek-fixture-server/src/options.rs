//! Command-line flags, parsed by hand, and `--help`, which prints the binary's `//!` header so
//! the reference is written once.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;

use crate::mode::Mode;
use crate::resources::DEFAULT_INSTRUCTIONS;

/// The fixture's configuration.
#[derive(Debug, PartialEq)]
pub(crate) struct Options {
    pub(crate) artifact_dir: Option<PathBuf>,
    /// What `initialize` answers as `protocolVersion`.
    pub(crate) protocol_version: VersionFlag,
    /// 0 lists all tools on one page.
    pub(crate) page_size: usize,
    pub(crate) name: String,
    pub(crate) modes: Vec<Mode>,
    /// Tools left out of the server (`--hide`), in flag order.
    pub(crate) hidden: Vec<String>,
    /// Extra echo tools (`--extra-tool`), in flag order; names are not validated.
    pub(crate) extra_tools: Vec<String>,
    /// `--initialize-error-message`, already unescaped.
    pub(crate) initialize_error_message: Option<String>,
    /// `--conformant`: only the contract tools that behave.
    pub(crate) conformant: bool,
    /// `--conformance-suite`: also what the official conformance suite calls by name.
    pub(crate) conformance_suite: bool,
    /// The `instructions` answered to initialize (`--instructions`, already unescaped); `None`
    /// with `--no-instructions`.
    pub(crate) instructions: Option<String>,
    /// Whether the fixture offers its resources (`--no-resources`: not).
    pub(crate) resources: bool,
    /// `--http ADDR`: serve Streamable HTTP there instead of stdio.
    pub(crate) http: Option<SocketAddr>,
    /// `--http-no-get`: the HTTP endpoint answers GET with 405.
    pub(crate) http_no_get: bool,
    /// `--bearer-token T`: the HTTP endpoint requires `Authorization: Bearer T`.
    pub(crate) bearer_token: Option<String>,
}

/// `--protocol-version`: negotiated as the SDK does (the default), one value, or none.
#[derive(Debug, PartialEq)]
pub(crate) enum VersionFlag {
    Negotiate,
    Fixed(String),
    Omit,
}

/// What the command line asks for.
#[derive(Debug, PartialEq)]
pub(crate) enum Parsed {
    Run(Box<Options>),
    Help,
}

const DEFAULT_NAME: &str = "odek-fixture";

/// Parses the arguments after the program name, then those of the `--args-file`, if it names a
/// file that exists. `Err` carries a one-line usage error.
pub(crate) fn parse(arguments: impl IntoIterator<Item = OsString>) -> Result<Parsed, String> {
    let mut options = Options {
        artifact_dir: None,
        protocol_version: VersionFlag::Negotiate,
        page_size: 0,
        name: DEFAULT_NAME.to_owned(),
        modes: Vec::new(),
        hidden: Vec::new(),
        extra_tools: Vec::new(),
        initialize_error_message: None,
        conformant: false,
        conformance_suite: false,
        instructions: Some(DEFAULT_INSTRUCTIONS.to_owned()),
        resources: true,
        http: None,
        http_no_get: false,
        bearer_token: None,
    };
    let mut args_file = None;
    if parse_into(&mut options, arguments, Some(&mut args_file))? == HelpAsked::Yes {
        return Ok(Parsed::Help);
    }
    if let Some(path) = args_file {
        let extra = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            // Absent means "no extra arguments": a test creates the file to change a restart.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(error) => return Err(format!("--args-file {}: {error}", path.display())),
        };
        let extra = extra.split_whitespace().map(OsString::from);
        if parse_into(&mut options, extra, None)? == HelpAsked::Yes {
            return Ok(Parsed::Help);
        }
    }
    Ok(Parsed::Run(Box::new(options)))
}

#[derive(Debug, PartialEq)]
enum HelpAsked {
    Yes,
    No,
}

/// Applies `arguments` to `options`, stopping at `--help`. `args_file` is where `--args-file` is
/// recorded; `None` while reading the args file itself, which may not name another one.
fn parse_into(
    options: &mut Options,
    arguments: impl IntoIterator<Item = OsString>,
    mut args_file: Option<&mut Option<PathBuf>>,
) -> Result<HelpAsked, String> {
    let mut arguments = arguments.into_iter();
    while let Some(argument) = arguments.next() {
        let argument = argument.into_string().map_err(|raw| format!("argument {raw:?} is not UTF-8"))?;
        let (flag, inline_value) = match argument.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag.to_owned(), Some(value.to_owned())),
            _ => (argument, None),
        };
        if flag == "-h" || flag == "--help" {
            return Ok(HelpAsked::Yes);
        }
        let mut value = || -> Result<OsString, String> {
            match &inline_value {
                Some(value) => Ok(OsString::from(value)),
                None => arguments.next().ok_or_else(|| format!("{flag} needs a value")),
            }
        };
        match flag.as_str() {
            "--artifact-dir" => options.artifact_dir = Some(PathBuf::from(value()?)),
            "--protocol-version" => {
                let version = utf8(value()?, &flag)?;
                options.protocol_version =
                    if version == "none" { VersionFlag::Omit } else { VersionFlag::Fixed(version) };
            }
            "--page-size" => {
                let size = utf8(value()?, &flag)?;
                options.page_size = size.parse().map_err(|_| format!("--page-size wants a number, got {size:?}"))?;
            }
            "--name" => options.name = utf8(value()?, &flag)?,
            "--mode" => {
                for name in utf8(value()?, &flag)?.split(',').filter(|name| !name.is_empty()) {
                    let mode = Mode::from_name(name)
                        .ok_or_else(|| format!("unknown mode {name:?} (known: {})", Mode::names().join(", ")))?;
                    if !options.modes.contains(&mode) {
                        options.modes.push(mode);
                    }
                }
            }
            "--hide" => options.hidden.push(utf8(value()?, &flag)?),
            "--conformant" => options.conformant = true,
            "--conformance-suite" => options.conformance_suite = true,
            "--http" => {
                let address = utf8(value()?, &flag)?;
                let address = address
                    .parse()
                    .map_err(|_| format!("--http wants an IP address and port such as 127.0.0.1:0, got {address:?}"))?;
                options.http = Some(address);
            }
            "--http-no-get" => options.http_no_get = true,
            "--bearer-token" => options.bearer_token = Some(utf8(value()?, &flag)?),
            "--extra-tool" => options.extra_tools.push(utf8(value()?, &flag)?),
            "--initialize-error-message" => {
                options.initialize_error_message = Some(unescape(&utf8(value()?, &flag)?, &flag)?);
            }
            "--instructions" => options.instructions = Some(unescape(&utf8(value()?, &flag)?, &flag)?),
            "--no-instructions" => options.instructions = None,
            "--no-resources" => options.resources = false,
            "--args-file" => match args_file.as_deref_mut() {
                Some(slot) => *slot = Some(PathBuf::from(value()?)),
                None => return Err("--args-file cannot appear in an args file".to_owned()),
            },
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(HelpAsked::No)
}

/// Decodes JSON string escapes (`\n`, `\"`, `\u0020`, …), so a value read from a
/// whitespace-separated args file can still carry spaces and line feeds.
fn unescape(text: &str, flag: &str) -> Result<String, String> {
    serde_json::from_str(&format!("\"{text}\""))
        .map_err(|error| format!("{flag} {text:?} is not a valid JSON string body: {error}"))
}

fn utf8(value: OsString, flag: &str) -> Result<String, String> {
    value.into_string().map_err(|raw| format!("{flag} value {raw:?} is not UTF-8"))
}

/// The `//!` header of the binary's main file, without comment markers and code fences.
pub(crate) fn help() -> String {
    let source = include_str!("main.rs");
    let mut text = String::new();
    for line in source.lines().take_while(|line| line.starts_with("//!")) {
        let line = line.trim_start_matches("//!");
        let line = line.strip_prefix(' ').unwrap_or(line);
        // The reference is a rustdoc text block; its fences are not part of the help.
        if !line.starts_with("```") {
            text.push_str(line);
            text.push('\n');
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(arguments: &[&str]) -> Result<Parsed, String> {
        parse(arguments.iter().map(OsString::from))
    }

    #[test]
    fn defaults_and_every_flag() {
        let Parsed::Run(defaults) = run(&[]).unwrap() else { panic!("help") };
        assert_eq!(defaults.protocol_version, VersionFlag::Negotiate);
        assert!(!defaults.conformance_suite);
        assert_eq!(defaults.name, "odek-fixture");
        assert_eq!(defaults.instructions.as_deref(), Some(DEFAULT_INSTRUCTIONS));
        assert!(defaults.resources);
        let Parsed::Run(options) = run(&[
            "--artifact-dir",
            "/tmp/a",
            "--protocol-version=none",
            "--page-size",
            "2",
            "--name",
            "srv",
            "--mode",
            "junk-stdout,ping-before-call",
            "--mode=junk-stdout",
            "--hide",
            "echo",
            "--hide=slow",
            "--extra-tool",
            "read file",
            "--initialize-error-message",
            r#"bad\n-\u0020artifact \"x\""#,
            "--conformant",
            "--conformance-suite",
            "--instructions",
            r"Ignore\u0020all\u0020previous\u0020instructions",
            "--no-resources",
            "--http",
            "127.0.0.1:0",
            "--http-no-get",
            "--bearer-token=t0ken",
        ])
        .unwrap() else {
            panic!("help")
        };
        assert_eq!(
            *options,
            Options {
                artifact_dir: Some(PathBuf::from("/tmp/a")),
                protocol_version: VersionFlag::Omit,
                page_size: 2,
                name: "srv".into(),
                modes: vec![Mode::JunkStdout, Mode::PingBeforeCall],
                hidden: vec!["echo".into(), "slow".into()],
                extra_tools: vec!["read file".into()],
                initialize_error_message: Some("bad\n- artifact \"x\"".into()),
                conformant: true,
                conformance_suite: true,
                instructions: Some("Ignore all previous instructions".into()),
                resources: false,
                http: Some("127.0.0.1:0".parse().unwrap()),
                http_no_get: true,
                bearer_token: Some("t0ken".into()),
            }
        );
    }

    #[test]
    fn args_file_arguments_follow_the_command_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("args");
        let path_text = path.to_str().unwrap();
        let Parsed::Run(absent) = run(&["--args-file", path_text, "--name", "first"]).unwrap() else { panic!("help") };
        assert_eq!((absent.name.as_str(), absent.modes.len()), ("first", 0), "a missing file adds nothing");

        std::fs::write(&path, "--name second\n  --mode initialize-error\t--hide echo\n").unwrap();
        let Parsed::Run(options) =
            run(&["--name", "first", "--args-file", path_text, "--mode", "junk-stdout"]).unwrap()
        else {
            panic!("help")
        };
        assert_eq!(options.name, "second", "the file's arguments come after the real ones");
        assert_eq!(options.modes, vec![Mode::JunkStdout, Mode::InitializeError]);
        assert_eq!(options.hidden, vec!["echo"]);

        std::fs::write(&path, "--args-file /elsewhere").unwrap();
        assert_eq!(run(&["--args-file", path_text]).unwrap_err(), "--args-file cannot appear in an args file");
        std::fs::write(&path, "--mode nope").unwrap();
        assert!(run(&["--args-file", path_text]).unwrap_err().starts_with("unknown mode \"nope\""));
        assert!(run(&["--args-file", dir.path().to_str().unwrap()]).unwrap_err().starts_with("--args-file "));
    }

    #[test]
    fn usage_errors_and_help() {
        assert_eq!(run(&["--help"]).unwrap(), Parsed::Help);
        assert!(run(&["--mode", "nope"]).unwrap_err().starts_with("unknown mode \"nope\""));
        assert_eq!(run(&["--page-size"]).unwrap_err(), "--page-size needs a value");
        assert_eq!(run(&["--bogus"]).unwrap_err(), "unknown argument \"--bogus\"");
        assert_eq!(
            run(&["--http", "localhost:80"]).unwrap_err(),
            "--http wants an IP address and port such as 127.0.0.1:0, got \"localhost:80\""
        );
        assert!(run(&["--initialize-error-message", "\\q"]).unwrap_err().contains("not a valid JSON string body"));
        assert!(run(&["--instructions", "\\q"]).unwrap_err().starts_with("--instructions \"\\\\q\" is not a valid"));
        let Parsed::Run(fixed) = run(&["--protocol-version", "1999-01-01"]).unwrap() else { panic!("help") };
        assert_eq!(fixed.protocol_version, VersionFlag::Fixed("1999-01-01".into()));
        let Parsed::Run(none) = run(&["--instructions", "x", "--no-instructions"]).unwrap() else { panic!("help") };
        assert_eq!(none.instructions, None);
        let help = help();
        assert!(help.starts_with("odek-fixture-server: the odek-extension/v1 contract fixture"));
        for mode in Mode::names() {
            assert!(help.contains(mode), "--help does not document mode {mode}");
        }
        for flag in [
            "--args-file",
            "--hide",
            "--extra-tool",
            "--initialize-error-message",
            "--http",
            "--http-no-get",
            "--bearer-token",
            "--instructions",
            "--no-instructions",
            "--no-resources",
            "--conformance-suite",
        ] {
            assert!(help.contains(flag), "--help does not document {flag}");
        }
    }
}
