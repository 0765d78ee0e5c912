//! `${VAR}` substitution in config files (spec `config.md` §3).
//!
//! Only `${NAME}` with NAME matching `[A-Za-z_][A-Za-z0-9_]*` is expanded, in one pass: an
//! expanded value is never scanned again. `$NAME`, `${NAME:-x}` and malformed forms stay
//! literal. Object keys are never touched, and neither are the values of `mcp_servers.*.env`
//! (nor `mcpServers.*.env`), which reach the server literally.

use std::collections::{BTreeMap, BTreeSet};

use odek_contract::secret_names::is_secret_looking;
use serde_json::Value;

use super::PROJECT_DISPLAY;
use super::mcp_servers::SERVER_MAP_KEYS;

/// Which file is being expanded: the project file may not read secret-looking variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trust {
    Operator,
    Project,
}

/// Expands every string value of a parsed config file in place. In the project file a
/// secret-looking NAME, or [beyond] a name `secrets.env` set (`secret_names`: odek knows those
/// values are secrets whatever they are called), expands to `""` and warns once per name (first
/// occurrence order).
pub(crate) fn substitute_config_vars(
    root: &mut Value,
    env: &BTreeMap<String, String>,
    trust: Trust,
    secret_names: &[String],
    warnings: &mut Vec<String>,
) {
    let mut refused = Vec::new();
    let mut expand = |text: &mut String| {
        if text.contains("${") {
            *text = expand_vars(text, env, trust, secret_names, &mut refused);
        }
    };
    let Value::Object(top) = root else {
        return;
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
            warnings.push(format!("{PROJECT_DISPLAY}: ${{{name}}} not expanded ({why})"));
        }
    }
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
/// appended to `refused`.
fn expand_vars(
    text: &str,
    env: &BTreeMap<String, String>,
    trust: Trust,
    secret_names: &[String],
    refused: &mut Vec<String>,
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
        (expand_vars(text, &env(), trust, &[], &mut refused), refused)
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
