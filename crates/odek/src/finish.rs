//! \[beyond\] The runtime's side of the final-answer gates (`odek_agent::finish`): the caller's
//! `--output-schema`, `--output-retries`, `--check`, `--check-timeout`, `--max-check-cycles` and
//! `--output-file` ([`FinishOverrides`]) resolved with the config's `checks` into the settings
//! every turn's gates are built from ([`finish_settings`]) — the schema file read and compiled,
//! the output path checked, both before any server starts or any model is called — and the
//! accepted answer written to the output file ([`write_answer`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use odek_agent::finish::FinishSettings;
use odek_agent::finish::output_file::{OutputWritten, check_output_path, write_output_file};
use odek_agent::finish::output_schema::load_output_schema;
use odek_contract::redaction::redact;

use crate::config::{Config, merge_checks};
use crate::error::RuntimeError;

/// What a caller sets about the final answer (for the binary: the flags of `run` and
/// `continue`). `None` means the default.
#[derive(Debug, Clone, Default)]
pub struct FinishOverrides {
    /// `--output-schema <file>`: the JSON Schema (2020-12) the final answer must match.
    pub output_schema: Option<PathBuf>,
    /// `--output-retries <n>` (default 2).
    pub output_retries: Option<u32>,
    /// `--output-file <path>`: where the accepted answer is written.
    pub output_file: Option<PathBuf>,
    /// `--check <command>`, in order, after the config's `checks`.
    pub checks: Vec<String>,
    /// `--check-timeout <seconds>` (default 300).
    pub check_timeout_seconds: Option<u64>,
    /// `--max-check-cycles <n>` (default 3).
    pub max_check_cycles: Option<u32>,
}

/// The gates' settings from `overrides` and `config`: the schema loaded and compiled, the
/// checks of the config then the flags (repeats dropped), the output path checked.
pub(crate) fn finish_settings(overrides: &FinishOverrides, config: &Config) -> Result<FinishSettings, RuntimeError> {
    let mut settings = FinishSettings::default();
    if let Some(path) = &overrides.output_schema {
        settings.output_schema = Some(Arc::new(load_output_schema(path)?));
    }
    if let Some(retries) = overrides.output_retries {
        settings.output_retries = retries;
    }
    settings.checks = merge_checks(config.checks.iter().chain(&overrides.checks));
    if let Some(seconds) = overrides.check_timeout_seconds {
        settings.check_timeout = Duration::from_secs(seconds);
    }
    if let Some(cycles) = overrides.max_check_cycles {
        settings.max_check_cycles = cycles;
    }
    if let Some(path) = &overrides.output_file {
        check_output_path(path)?;
    }
    Ok(settings)
}

/// Writes the accepted `answer` (redacted, as stdout shows it) to `path`, off the runtime.
pub(crate) async fn write_answer(path: &Path, answer: &str) -> Result<OutputWritten, RuntimeError> {
    let path = path.to_path_buf();
    let bytes = redact(answer).into_owned().into_bytes();
    tokio::task::spawn_blocking(move || write_output_file(&path, &bytes))
        .await
        .map_err(|err| RuntimeError::Setup(format!("--output-file: {err}")))?
        .map_err(RuntimeError::from)
}
