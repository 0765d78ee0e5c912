//! `${VAR}` substitution in config files (spec `config.md` §3).
//!
//! Only `${NAME}` with NAME matching `[A-Za-z_][A-Za-z0-9_]*` is expanded, in one pass: an
//! expanded value is never scanned again. `$NAME`, `${NAME:-x}` and malformed forms stay
//! literal. Object keys are never touched, and neither are the values of `mcp_servers.*.env`
//! (nor `mcpServers.*.env`), which reach the server literally.

use std::collections::{BTreeMap, BTreeSet};

use odek_contract::secret_names::is_secret_looking;
use serde_json::{Map, Value};

use super::mcp_servers::SERVER_MAP_KEYS;
use super::variable_name::variable_name_len;

/// Which file is being expanded: the project file may not read secret-looking variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trust {
    Operator,
    Project,
}

/// \[beyond\] The variables a project file may not expand besides the secret-looking ones: odek
/// knows their values are secrets whatever they are called.
#[derive(Debug, Default)]
pub(crate) struct ProtectedNames {
    /// The names `secrets.env` set.
    pub(crate) secrets_env: Vec<String>,
    /// The names a `${NAME}` in a global `secret_env` value reads ([`secret_env_references`]).
    pub(crate) secret_env: Vec<String>,
}

impl ProtectedNames {
    /// Why a project file may not expand `name`, or `None` when it may.
    fn refusal(&self, name: &str) -> Option<&'static str> {
        if is_secret_looking(name) {
            Some("secret-looking variable in project config")
        } else if self.secrets_env.iter().any(|known| known == name) {
            Some("variable from secrets.env in project config")
        } else if self.secret_env.iter().any(|known| known == name) {
            Some("variable a global secret_env reads, in project config")
        } else {
            None
        }
    }
}

/// Every NAME a `${NAME}` in a `secret_env` value of `top` (the global file, before
/// substitution) reads, in order of first use. Those values are handed to servers as secrets,
/// so a project file must not read the same variables into its args or url.
pub(crate) fn secret_env_references(top: &Map<String, Value>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let entries = SERVER_MAP_KEYS
        .iter()
        .filter_map(|map_key| top.get(*map_key).and_then(Value::as_object))
        .flat_map(|servers| servers.values());
    for entry in entries {
        let Some(Value::Object(secret_env)) = entry.get("secret_env") else {
            continue;
        };
        for text in secret_env.values().filter_map(Value::as_str) {
            for name in referenced_names(text) {
                if !names.iter().any(|known| known == name) {
                    names.push(name.to_owned());
                }
            }
        }
    }
    names
}

/// Values shorter than this (in runes) are not taken back out of messages: they would match
/// ordinary words of the message, and they are no secrets.
const MASK_MIN_RUNES: usize = 4;

/// The `${NAME}` expansions made in one file: `(name, value)`, one per name, longest value first.
#[derive(Debug, Default)]
pub(crate) struct Expansions(Vec<(String, String)>);

impl Expansions {
    fn record(&mut self, name: &str, value: &str) {
        if value.chars().count() >= MASK_MIN_RUNES && !self.0.iter().any(|(known, _)| known == name) {
            let at = self.0.partition_point(|(_, longer)| longer.len() >= value.len());
            self.0.insert(at, (name.to_owned(), value.to_owned()));
        }
    }

    /// `text` with every expanded value written back as the `${NAME}` it came from, so a message
    /// about a substituted string (serde quotes what it rejected) shows the reference, not the
    /// value: the value may be a secret the operator meant for a header or a URL.
    pub(crate) fn mask(&self, text: &str) -> String {
        if self.0.is_empty() {
            return text.to_owned();
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(first) = rest.chars().next() {
            match self.0.iter().find(|(_, value)| rest.starts_with(value.as_str())) {
                Some((name, value)) => {
                    out.push_str("${");
                    out.push_str(name);
                    out.push('}');
                    rest = &rest[value.len()..];
                }
                None => {
                    out.push(first);
                    rest = &rest[first.len_utf8()..];
                }
            }
        }
        out
    }
}

/// Expands every string value of a parsed config file in place and returns what it expanded. In
/// a project file (named `display` in warnings) a secret-looking NAME, or \[beyond\] one of the
/// `protected` names, expands to `""` and warns once per name (first occurrence order).
pub(crate) fn substitute_config_vars(
    display: &str,
    root: &mut Value,
    env: &BTreeMap<String, String>,
    trust: Trust,
    protected: &ProtectedNames,
    warnings: &mut Vec<String>,
) -> Expansions {
    let mut refused = Vec::new();
    let mut expansions = Expansions::default();
    let mut expand = |text: &mut String| {
        if text.contains("${") {
            *text = expand_vars(text, env, trust, protected, &mut refused, &mut expansions);
        }
    };
    let Value::Object(top) = root else {
        return expansions;
    };
    for (key, value) in top.iter_mut() {
        if SERVER_MAP_KEYS.contains(&key.as_str()) {
            let Value::Object(servers) = value else {
                walk_strings(value, &mut expand);
                continue;
            };
            for entry in servers.values_mut() {
                let Value::Object(fields) = entry else {
                    walk_strings(entry, &mut expand);
                    continue;
                };
                for (field, field_value) in fields.iter_mut() {
                    if field != "env" {
                        walk_strings(field_value, &mut expand);
                    }
                }
            }
        } else {
            walk_strings(value, &mut expand);
        }
    }
    let mut seen = BTreeSet::new();
    for name in refused {
        if seen.insert(name.clone())
            && let Some(why) = protected.refusal(&name)
        {
            warnings.push(format!("{display}: ${{{name}}} not expanded ({why})"));
        }
    }
    expansions
}

fn walk_strings(value: &mut Value, visit: &mut impl FnMut(&mut String)) {
    match value {
        Value::String(text) => visit(text),
        Value::Array(items) => items.iter_mut().for_each(|item| walk_strings(item, visit)),
        Value::Object(map) => map.values_mut().for_each(|item| walk_strings(item, visit)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Expands `${NAME}` occurrences of one string. Names refused under [`Trust::Project`] are
/// appended to `refused`, expansions recorded in `expansions`.
fn expand_vars(
    text: &str,
    env: &BTreeMap<String, String>,
    trust: Trust,
    protected: &ProtectedNames,
    refused: &mut Vec<String>,
    expansions: &mut Expansions,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match var_name_then_brace(after) {
            Some(name) => {
                if trust == Trust::Project && protected.refusal(name).is_some() {
                    refused.push(name.to_owned());
                } else if let Some(value) = env.get(name) {
                    out.push_str(value);
                    expansions.record(name, value);
                }
                rest = &after[name.len() + 1..];
            }
            None => {
                out.push('$');
                rest = &rest[start + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The NAMEs of the `${NAME}` references of `text`, as [`expand_vars`] would expand them.
fn referenced_names(text: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        match var_name_then_brace(after) {
            Some(name) => {
                names.push(name);
                rest = &after[name.len() + 1..];
            }
            None => rest = &rest[start + 1..],
        }
    }
    names
}

/// The NAME of `NAME}` at the start of `text`, if it is a valid name closed by `}`.
fn var_name_then_brace(text: &str) -> Option<&str> {
    let len = variable_name_len(text);
    (len > 0 && text.as_bytes().get(len) == Some(&b'}')).then(|| &text[..len])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> BTreeMap<String, String> {
        [("HOME", "/home/u"), ("A_1", "x"), ("GITHUB_TOKEN", "ghp_secret"), ("LOOP", "${HOME}")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    fn expand(text: &str, trust: Trust) -> (String, Vec<String>) {
        let mut refused = Vec::new();
        (
            expand_vars(text, &env(), trust, &ProtectedNames::default(), &mut refused, &mut Expansions::default()),
            refused,
        )
    }

    #[test]
    fn expansions_are_written_back_longest_first_and_short_values_stay() {
        let mut expansions = Expansions::default();
        for (name, value) in [("SHORT", "abc"), ("TOKEN", "secret"), ("LONG", "secret-longer"), ("TOKEN", "other")] {
            expansions.record(name, value);
        }
        assert_eq!(
            expansions.mask("\"secret-longer/secret/abc/secretsecret\" é"),
            "\"${LONG}/${TOKEN}/abc/${TOKEN}${TOKEN}\" é"
        );
        assert_eq!(Expansions::default().mask("secret"), "secret");
    }

    #[test]
    fn only_braced_valid_names_expand() {
        for (input, want) in [
            ("${HOME}/bin", "/home/u/bin"),
            ("a${A_1}b${A_1}", "axbx"),
            ("${UNSET}", ""),
            ("$HOME", "$HOME"),
            ("${HOME:-x}", "${HOME:-x}"),
            ("${1A}", "${1A}"),
            ("${}", "${}"),
            ("${HOME", "${HOME"),
            ("$${HOME}", "$/home/u"),
            ("${${HOME}}", "${/home/u}"),
            ("${LOOP}", "${HOME}"),
            ("é${HOME}ü", "é/home/uü"),
            ("${_}", ""),
        ] {
            assert_eq!(expand(input, Trust::Operator).0, want, "{input}");
        }
    }

    #[test]
    fn project_refuses_secret_looking_names() {
        assert_eq!(expand("${GITHUB_TOKEN}", Trust::Operator).0, "ghp_secret");
        let (text, refused) = expand("t=${GITHUB_TOKEN};h=${HOME}", Trust::Project);
        assert_eq!(text, "t=;h=/home/u");
        assert_eq!(refused, vec!["GITHUB_TOKEN".to_owned()]);
    }

    #[test]
    fn secret_env_references_are_the_names_its_values_read() {
        let Value::Object(top) = serde_json::json!({
            "mcp_servers": {"a": {"secret_env": {"K": "${BRAVE_KEY}", "L": "x${A}y${BRAVE_KEY}", "M": "$NOT ${1X}"}}},
            "mcpServers": {"b": {"secret_env": {"K": "${OTHER}"}, "args": ["${ARGS_ONLY}"]}, "c": "junk"},
            "other": {"secret_env": {"K": "${NOT_A_SERVER}"}}
        }) else {
            unreachable!()
        };
        assert_eq!(secret_env_references(&top), ["BRAVE_KEY", "A", "OTHER"]);
    }

    #[test]
    fn project_refuses_the_variables_a_global_secret_env_reads() {
        let protected = ProtectedNames { secrets_env: Vec::new(), secret_env: vec!["HOME".into()] };
        let mut refused = Vec::new();
        let text = expand_vars(
            "h=${HOME};a=${A_1}",
            &env(),
            Trust::Project,
            &protected,
            &mut refused,
            &mut Expansions::default(),
        );
        assert_eq!(text, "h=;a=x");
        assert_eq!(refused, ["HOME"]);
        assert_eq!(protected.refusal("HOME"), Some("variable a global secret_env reads, in project config"));
    }
}
