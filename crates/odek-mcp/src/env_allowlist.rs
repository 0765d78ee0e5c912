//! The environment of a spawned MCP server (spec `mcp-client.md` §5): built from scratch from an
//! allowlist of parent variables, then the configured overrides, never inherited wholesale and
//! never carrying a secret-looking variable — except the operator's [beyond] `secret_env`, which
//! [`apply_secret_env`] adds last, on purpose. Start at [`server_env`].

use std::collections::BTreeMap;

use odek_contract::quoting::quote;
use odek_contract::secret_names::is_secret_looking;

use crate::server_config::SecretValue;

/// Parent variables a server may see (when not secret-looking).
pub(crate) const FORWARDED_VARIABLES: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TMPDIR",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "LC_NUMERIC",
    "LC_TIME",
    "LC_COLLATE",
    "LC_MONETARY",
    "LC_PAPER",
    "LC_NAME",
    "LC_ADDRESS",
    "LC_TELEPHONE",
    "LC_MEASUREMENT",
    "LC_IDENTIFICATION",
    "TZ",
    "TERM",
];

/// The environment a stdio server is started with (by the hub and by `odek ext check`):
/// allowlisted parent variables, then `overrides` (secret-looking keys dropped with a warning,
/// `""` deletes, anything else sets), then its `secret_env` ([`apply_secret_env`]). Returns the
/// variables in byte order of name and the warnings.
pub fn server_env<I, K, V>(
    server: &str,
    overrides: &BTreeMap<String, String>,
    secret_env: &BTreeMap<String, SecretValue>,
    parent: I,
) -> (BTreeMap<String, String>, Vec<String>)
where
    I: IntoIterator<Item = (K, V)>,
    K: Into<String>,
    V: Into<String>,
{
    let mut env: BTreeMap<String, String> = parent
        .into_iter()
        .map(|(key, value)| (key.into(), value.into()))
        .filter(|(key, _)| FORWARDED_VARIABLES.contains(&key.as_str()) && !is_secret_looking(key))
        .collect();
    let mut warnings = Vec::new();
    for (key, value) in overrides {
        if is_secret_looking(key) {
            warnings.push(secret_override_dropped(server, key));
        } else if value.is_empty() {
            env.remove(key);
        } else {
            env.insert(key.clone(), value.clone());
        }
    }
    apply_secret_env(&mut env, secret_env);
    (env, warnings)
}

/// The warning for a secret-looking `env` override: the spec's words, then \[beyond\] how a
/// server does get a secret (issue 32: a key in `env` was silently useless).
fn secret_override_dropped(server: &str, key: &str) -> String {
    format!(
        "mcp server {}: env override {key} looks like a secret and was dropped; pass secrets with secret_env in ~/.odek/config.json, or there as \"{key}\": \"${{{key}}}\"",
        quote(server)
    )
}

/// [beyond] Applies `secret_env` after the `env` overrides: each name is set to its value whether
/// or not it looks like a secret (handing a server its key is what `secret_env` is for). An empty
/// value — a `${VAR}` that was unset — leaves the name unset rather than passing an empty token.
fn apply_secret_env(env: &mut BTreeMap<String, String>, secret_env: &BTreeMap<String, SecretValue>) {
    for (name, value) in secret_env {
        if value.is_empty() {
            env.remove(name);
        } else {
            env.insert(name.clone(), value.expose().to_owned());
        }
    }
}

/// The parent environment of this process, as UTF-8 pairs (others are never forwarded).
pub fn process_env() -> impl Iterator<Item = (String, String)> {
    std::env::vars_os().filter_map(|(key, value)| Some((key.into_string().ok()?, value.into_string().ok()?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent() -> Vec<(&'static str, &'static str)> {
        vec![
            ("PATH", "/usr/bin"),
            ("HOME", "/home/u"),
            ("OPENAI_API_KEY", "sk-123"),
            ("GITHUB_TOKEN", "ghp"),
            ("AWS_REGION", "eu"),
            ("LANG", "C.UTF-8"),
        ]
    }

    #[test]
    fn only_allowlisted_parent_variables_are_forwarded_red() {
        let (env, warnings) = server_env("srv", &BTreeMap::new(), &BTreeMap::new(), parent());
        assert_eq!(
            env.into_iter().collect::<Vec<_>>(),
            vec![
                ("HOME".to_owned(), "/home/u".to_owned()),
                ("LANG".to_owned(), "C.UTF-8".to_owned()),
                ("PATH".to_owned(), "/usr/bin".to_owned()),
            ]
        );
        assert!(warnings.is_empty());
    }

    #[test]
    fn secret_looking_overrides_are_dropped_red() {
        let overrides = BTreeMap::from([
            ("MY_API_KEY".to_owned(), "x".to_owned()),
            ("TOKENIZERS_PARALLELISM".to_owned(), "false".to_owned()),
            ("LOG_LEVEL".to_owned(), "debug".to_owned()),
        ]);
        let (env, warnings) = server_env("srv", &overrides, &BTreeMap::new(), parent());
        assert_eq!(env.get("LOG_LEVEL").map(String::as_str), Some("debug"));
        assert!(!env.contains_key("MY_API_KEY"));
        assert!(!env.contains_key("TOKENIZERS_PARALLELISM"));
        assert_eq!(
            warnings,
            vec![
                "mcp server \"srv\": env override MY_API_KEY looks like a secret and was dropped; pass secrets with secret_env in ~/.odek/config.json, or there as \"MY_API_KEY\": \"${MY_API_KEY}\"",
                "mcp server \"srv\": env override TOKENIZERS_PARALLELISM looks like a secret and was dropped; pass secrets with secret_env in ~/.odek/config.json, or there as \"TOKENIZERS_PARALLELISM\": \"${TOKENIZERS_PARALLELISM}\"",
            ]
        );
    }

    #[test]
    fn secret_env_passes_the_filter_after_the_overrides() {
        let overrides = BTreeMap::from([("GITHUB_TOKEN".to_owned(), "from-env".to_owned())]);
        let (mut env, _) = server_env("srv", &overrides, &BTreeMap::new(), parent());
        let secrets = BTreeMap::from([
            ("GITHUB_TOKEN".to_owned(), SecretValue::new("ghp_granted")),
            ("HOME".to_owned(), SecretValue::new("")),
        ]);
        apply_secret_env(&mut env, &secrets);
        assert_eq!(env.get("GITHUB_TOKEN").map(String::as_str), Some("ghp_granted"));
        assert!(!env.contains_key("HOME"), "an empty value leaves the name unset");
        assert!(!env.contains_key("OPENAI_API_KEY"), "only the named secrets pass");
    }

    #[test]
    fn empty_override_deletes_even_path() {
        let overrides = BTreeMap::from([("PATH".to_owned(), String::new()), ("NEW".to_owned(), "1".to_owned())]);
        let (env, _) = server_env("srv", &overrides, &BTreeMap::new(), parent());
        assert!(!env.contains_key("PATH"));
        assert_eq!(env.get("NEW").map(String::as_str), Some("1"));
    }
}
