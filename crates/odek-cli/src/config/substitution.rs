//! `${VAR}` substitution in config files (spec `config.md` §3).
//!
//! Only `${NAME}` with NAME matching `[A-Za-z_][A-Za-z0-9_]*` is expanded, in one pass: an
//! expanded value is never scanned again. `$NAME`, `${NAME:-x}` and malformed forms stay
//! literal. Object keys are never touched, and neither are the values of `mcp_servers.*.env`
//! (nor `mcpServers.*.env`), which reach the server literally.

use std::collections::{BTreeMap, BTreeSet};

use odek_contract::secret_names::is_secret_looking;
use serde_json::Value;

use super::mcp_servers::SERVER_MAP_KEYS;

/// Which file is being expanded: the project file may not read secret-looking variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trust {
    Operator,
    Project,
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
/// a project file (named `display` in warnings) a secret-looking NAME, or [beyond] a name
/// `secrets.env` set (`secret_names`: odek knows those values are secrets whatever they are
/// called), expands to `""` and warns once per name (first occurrence order).
pub(crate) fn substitute_config_vars(
    display: &str,
    root: &mut Value,
    env: &BTreeMap<String, String>,
    trust: Trust,
    secret_names: &[String],
    warnings: &mut Vec<String>,
) -> Expansions {
    let mut refused = Vec::new();
    let mut expansions = Expansions::default();
    let mut expand = |text: &mut String| {
        if text.contains("${") {
            *text = expand_vars(text, env, trust, secret_names, &mut refused, &mut expansions);
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
        if seen.insert(name.clone()) {
            let why = if is_secret_looking(&name) {
                "secret-looking variable in project config"
            } else {
                "variable from secrets.env in project config"
            };
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
    secret_names: &[String],
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
                if trust == Trust::Project
                    && (is_secret_looking(name) || secret_names.iter().any(|known| known == name))
                {
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

/// The NAME of `NAME}` at the start of `text`, if it is a valid name closed by `}`.
fn var_name_then_brace(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    let first = *bytes.first()?;
    if !(first.is_ascii_alphabetic() || first == b'_') {
        return None;
    }
    let len = bytes.iter().position(|&b| !(b.is_ascii_alphanumeric() || b == b'_')).unwrap_or(bytes.len());
    (bytes.get(len) == Some(&b'}')).then(|| &text[..len])
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
        (expand_vars(text, &env(), trust, &[], &mut refused, &mut Expansions::default()), refused)
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
}
