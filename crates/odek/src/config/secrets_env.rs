//! `~/.odek/secrets.env` (spec `config.md` §12): the operator's secrets, injected into the
//! process environment before any config file is read.
//!
//! [`load_secrets_env`] is pure apart from registering values for redaction: it returns the
//! variables to inject instead of touching the real environment, so tests stay hermetic.
//! [`SecretsEnv::apply_to_process_env`] is the one place that mutates the process environment.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::ConfigError;
use super::file::{
    Bounded, MAX_CONFIG_BYTES, is_group_or_world_accessible, open_if_exists, permission_bits, read_to_limit,
    render_mode,
};

/// What `secrets.env` contributed. `Debug` shows names only, never values.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SecretsEnv {
    /// Variables to add to the environment, in file order: only names not already present in
    /// the environment snapshot (an existing variable is never overwritten), first occurrence wins.
    pub injected: Vec<(String, String)>,
    /// Every valid name in the file, in file order, without duplicates — including names that
    /// were not injected because the environment already had them. Sub-agents get none of these.
    pub names: Vec<String>,
}

impl std::fmt::Debug for SecretsEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let injected: Vec<&str> = self.injected.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("SecretsEnv").field("injected", &injected).field("names", &self.names).finish()
    }
}

impl SecretsEnv {
    /// Adds [`Self::injected`] to the real process environment, skipping any name that is
    /// present by now.
    ///
    /// # Safety
    ///
    /// Mutating the environment is only sound while no other thread may read or write it:
    /// call this from `main` before the async runtime or any other thread is started
    /// (see [`std::env::set_var`]).
    #[allow(unsafe_code)]
    pub unsafe fn apply_to_process_env(&self) {
        for (name, value) in &self.injected {
            if std::env::var_os(name).is_none() {
                // SAFETY: the caller guarantees the process is still single-threaded. Names are
                // non-empty without `=` or NUL and values have no NUL (see `parse_secrets_line`),
                // so `set_var` cannot panic.
                unsafe { std::env::set_var(name, value) };
            }
        }
    }
}

/// Loads `secrets.env` at `path`. A missing file is empty. A file that group or others may
/// access is not read at all (one warning). Every loaded value is registered for redaction.
/// Warnings are pushed without the `odek: warning: ` prefix.
pub fn load_secrets_env(
    path: &Path,
    env: &BTreeMap<String, String>,
    warnings: &mut Vec<String>,
) -> Result<SecretsEnv, ConfigError> {
    let display = path.display().to_string();
    let read_error = |source| ConfigError::Read { path: display.clone(), source };
    let Some(file) = open_if_exists(path).map_err(read_error)? else {
        return Ok(SecretsEnv::default());
    };
    let mode = permission_bits(&file).map_err(read_error)?;
    if is_group_or_world_accessible(mode) {
        let mode = render_mode(mode);
        warnings.push(format!(
            "~/.odek/secrets.env is readable by group or others (mode {mode}); refusing to load it — run chmod 600 ~/.odek/secrets.env"
        ));
        return Ok(SecretsEnv::default());
    }
    let bytes = match read_to_limit(&file, MAX_CONFIG_BYTES).map_err(read_error)? {
        Bounded::Contents(bytes) => bytes,
        Bounded::TooLarge { size } => {
            return Err(ConfigError::TooLarge { path: display, size });
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    Ok(parse_secrets_text(&text, env, warnings, &mut register_for_redaction))
}

/// The §12 file rules on `text`, without touching the file system or the redactor: every
/// `KEY=VALUE` value (duplicates and names already in `env` included) is handed to `on_value`
/// before anything else sees it; the first occurrence of a name wins; a name present in `env` is
/// listed but not injected. Malformed lines are skipped with a warning that names the line only.
pub fn parse_secrets_text(
    text: &str,
    env: &BTreeMap<String, String>,
    warnings: &mut Vec<String>,
    on_value: &mut dyn FnMut(&str),
) -> SecretsEnv {
    let mut secrets = SecretsEnv::default();
    let mut seen = BTreeSet::new();
    for (index, line) in text.split('\n').enumerate() {
        match parse_secrets_line(line) {
            SecretsLine::Skip => {}
            SecretsLine::Malformed => {
                warnings.push(format!("secrets.env line {}: expected KEY=VALUE; skipped", index + 1));
            }
            SecretsLine::Pair(name, value) => {
                on_value(&value);
                if !seen.insert(name.clone()) {
                    continue;
                }
                secrets.names.push(name.clone());
                if !env.contains_key(&name) {
                    secrets.injected.push((name, value));
                }
            }
        }
    }
    secrets
}

/// One line of `secrets.env`.
#[derive(Debug, PartialEq, Eq)]
enum SecretsLine {
    /// Blank or a `#` comment.
    Skip,
    /// No `=`, an empty key, or a NUL byte (which no environment can hold).
    Malformed,
    Pair(String, String),
}

/// The §12 line rule: key = text before the first `=`, trimmed; value = the rest, trimmed, with
/// one pair of matching surrounding `"` or `'` removed. No `export`, no escapes.
fn parse_secrets_line(line: &str) -> SecretsLine {
    let trimmed = line.trim();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return SecretsLine::Skip;
    }
    let Some((key, value)) = line.split_once('=') else {
        return SecretsLine::Malformed;
    };
    let key = key.trim();
    let value = strip_matching_quotes(value.trim());
    if key.is_empty() || key.contains('\0') || value.contains('\0') {
        return SecretsLine::Malformed;
    }
    SecretsLine::Pair(key.to_owned(), value.to_owned())
}

fn strip_matching_quotes(value: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = value.strip_prefix(quote).and_then(|rest| rest.strip_suffix(quote)) {
            return inner;
        }
    }
    value
}

/// The single place that registers a `secrets.env` value as a known secret. An empty value is
/// no secret (and would match everywhere).
fn register_for_redaction(value: &str) {
    if !value.is_empty() {
        odek_contract::redaction::register_secret(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_rules() {
        assert_eq!(parse_secrets_line(""), SecretsLine::Skip);
        assert_eq!(parse_secrets_line("   \t"), SecretsLine::Skip);
        assert_eq!(parse_secrets_line("  # A=b"), SecretsLine::Skip);
        assert_eq!(parse_secrets_line("A=b"), SecretsLine::Pair("A".into(), "b".into()));
        assert_eq!(parse_secrets_line("  A = b c  \r"), SecretsLine::Pair("A".into(), "b c".into()));
        assert_eq!(parse_secrets_line("A=\"b\""), SecretsLine::Pair("A".into(), "b".into()));
        assert_eq!(parse_secrets_line("A='b'"), SecretsLine::Pair("A".into(), "b".into()));
        assert_eq!(parse_secrets_line("A=\"'b'\""), SecretsLine::Pair("A".into(), "'b'".into()));
        assert_eq!(parse_secrets_line("A=\"b'"), SecretsLine::Pair("A".into(), "\"b'".into()));
        assert_eq!(parse_secrets_line("A=\""), SecretsLine::Pair("A".into(), "\"".into()));
        assert_eq!(parse_secrets_line("A=b=c"), SecretsLine::Pair("A".into(), "b=c".into()));
        assert_eq!(parse_secrets_line("A="), SecretsLine::Pair("A".into(), String::new()));
        assert_eq!(parse_secrets_line("export A=b"), SecretsLine::Pair("export A".into(), "b".into()));
        assert_eq!(parse_secrets_line("no equals"), SecretsLine::Malformed);
        assert_eq!(parse_secrets_line(" =value"), SecretsLine::Malformed);
        assert_eq!(parse_secrets_line("A=b\0c"), SecretsLine::Malformed);
    }
}
