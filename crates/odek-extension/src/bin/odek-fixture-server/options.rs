//! Command-line flags, parsed by hand, and `--help`, which prints the binary's `//!` header so
//! the reference is written once.

use std::ffi::OsString;
use std::path::PathBuf;

use odek_extension::PROTOCOL_VERSION;

use crate::modes::Mode;

/// The fixture's configuration.
#[derive(Debug, PartialEq)]
pub(crate) struct Options {
    pub(crate) artifact_dir: Option<PathBuf>,
    /// `None` omits `protocolVersion` from the initialize result.
    pub(crate) protocol_version: Option<String>,
    /// 0 lists all tools on one page.
    pub(crate) page_size: usize,
    pub(crate) name: String,
    pub(crate) modes: Vec<Mode>,
}

/// What the command line asks for.
#[derive(Debug, PartialEq)]
pub(crate) enum Parsed {
    Run(Options),
    Help,
}

const DEFAULT_NAME: &str = "odek-fixture";

/// Parses the arguments after the program name. `Err` carries a one-line usage error.
pub(crate) fn parse(arguments: impl IntoIterator<Item = OsString>) -> Result<Parsed, String> {
    let mut options = Options {
        artifact_dir: None,
        protocol_version: Some(PROTOCOL_VERSION.to_owned()),
        page_size: 0,
        name: DEFAULT_NAME.to_owned(),
        modes: Vec::new(),
    };
    let mut arguments = arguments.into_iter();
    while let Some(argument) = arguments.next() {
        let argument = argument.into_string().map_err(|raw| format!("argument {raw:?} is not UTF-8"))?;
        let (flag, inline_value) = match argument.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag.to_owned(), Some(value.to_owned())),
            _ => (argument, None),
        };
        if flag == "-h" || flag == "--help" {
            return Ok(Parsed::Help);
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
                options.protocol_version = (version != "none").then_some(version);
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
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(Parsed::Run(options))
}

fn utf8(value: OsString, flag: &str) -> Result<String, String> {
    value.into_string().map_err(|raw| format!("{flag} value {raw:?} is not UTF-8"))
}

/// The `//!` header of the binary's main file, without comment markers and code fences.
pub(crate) fn help() -> String {
    let source = include_str!("../odek-fixture-server.rs");
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
        assert_eq!(defaults.protocol_version.as_deref(), Some("2025-03-26"));
        assert_eq!(defaults.name, "odek-fixture");
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
        ])
        .unwrap() else {
            panic!("help")
        };
        assert_eq!(
            options,
            Options {
                artifact_dir: Some(PathBuf::from("/tmp/a")),
                protocol_version: None,
                page_size: 2,
                name: "srv".into(),
                modes: vec![Mode::JunkStdout, Mode::PingBeforeCall],
            }
        );
    }

    #[test]
    fn usage_errors_and_help() {
        assert_eq!(run(&["--help"]).unwrap(), Parsed::Help);
        assert!(run(&["--mode", "nope"]).unwrap_err().starts_with("unknown mode \"nope\""));
        assert_eq!(run(&["--page-size"]).unwrap_err(), "--page-size needs a value");
        assert_eq!(run(&["--bogus"]).unwrap_err(), "unknown argument \"--bogus\"");
        let help = help();
        assert!(help.starts_with("odek-fixture-server: the odek-extension/v1 contract fixture"));
        for mode in Mode::names() {
            assert!(help.contains(mode), "--help does not document mode {mode}");
        }
    }
}
