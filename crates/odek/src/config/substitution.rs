//! `${VAR}` substitution in config files (spec `config.md` §3; \[beyond\] Claude Code's forms).
//!
//! `${NAME}` (NAME matching `[A-Za-z_][A-Za-z0-9_]*`) expands to the variable's value, `""` when
//! it is unset; \[beyond\] `${NAME:-default}` expands to the value when the variable is set (even
//! to `""`, as Claude Code does) and to `default` otherwise — the text up to the first `}`, taken
//! as it is. One pass: an expanded value is never scanned again. `$NAME` and malformed forms stay
//! literal, and object keys are never touched. \[beyond\] The values of `mcp_servers.*.env` expand
//! too, as Claude Code expands them (the spec passed them literally).
//!
//! A project file may not read the operator's secrets: a secret-looking NAME, a name
//! `secrets.env` set, a name a global `secret_env` reads, and \[beyond\] any variable whose value
//! the redactor would hide (a password-bearing DSN, a webhook URL, a token, a known secret) — or
//! that would form such a value with the text around it — expands to `""` with one warning per
//! name. Start at [`substitute_config_vars`].

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

/// Why a project file may not expand a variable because of its value (or of what it forms).
const SECRET_VALUE: &str = "its value looks like a secret, in project config";
const FORMS_A_SECRET: &str = "with the text around it, it would form a secret, in project config";

/// What one file's substitution did: the values it expanded (to mask them in messages) and,
/// per server entry, the variables the entry read.
#[derive(Debug, Default)]
pub(crate) struct Substituted {
    pub(crate) expansions: Expansions,
    /// Server name → the names of the variables its entry's `${...}` read (expanded, not
    /// refused), in order of first use: what the server approval card lists.
    pub(crate) server_variables: BTreeMap<String, Vec<String>>,
}

/// Expands every string value of a parsed config file in place and returns what it expanded. In
/// a project file (named `display` in warnings) a variable it may not read expands to `""` and
/// warns once per name (first occurrence order).
pub(crate) fn substitute_config_vars(
    display: &str,
    root: &mut Value,
    env: &BTreeMap<String, String>,
    trust: Trust,
    protected: &ProtectedNames,
    warnings: &mut Vec<String>,
) -> Substituted {
    let mut expander = Expander { env, trust, protected, refused: Vec::new(), substituted: Substituted::default() };
    let Value::Object(top) = root else {
        return expander.substituted;
    };
    let mut unused = Vec::new();
    for (key, value) in top.iter_mut() {
        let Value::Object(servers) = value else {
            walk_strings(value, &mut |text| expander.expand_in_place(text, &mut unused));
            continue;
        };
        if !SERVER_MAP_KEYS.contains(&key.as_str()) {
            walk_strings(value, &mut |text| expander.expand_in_place(text, &mut unused));
            continue;
        }
        for (name, entry) in servers.iter_mut() {
            let mut read = Vec::new();
            walk_strings(entry, &mut |text| expander.expand_in_place(text, &mut read));
            if !read.is_empty() {
                expander.substituted.server_variables.entry(name.clone()).or_default().extend(read);
            }
        }
    }
    let mut seen = BTreeSet::new();
    for (name, why) in expander.refused {
        if seen.insert(name.clone()) {
            warnings.push(format!("{display}: ${{{name}}} not expanded ({why})"));
        }
    }
    expander.substituted
}

fn walk_strings(value: &mut Value, visit: &mut impl FnMut(&mut String)) {
    match value {
        Value::String(text) => visit(text),
        Value::Array(items) => items.iter_mut().for_each(|item| walk_strings(item, visit)),
        Value::Object(map) => map.values_mut().for_each(|item| walk_strings(item, visit)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// One `${NAME}` or `${NAME:-default}`, as read after its `${`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Reference<'a> {
    name: &'a str,
    default: Option<&'a str>,
    /// Bytes after the `${`, the closing `}` included.
    len: usize,
}

/// The reference at the start of `text` (the text after a `${`), if it is one: a valid name,
/// then `}`, or `:-`, a default without `}`, and `}`.
fn reference_after(text: &str) -> Option<Reference<'_>> {
    let name_len = variable_name_len(text);
    if name_len == 0 {
        return None;
    }
    let (name, rest) = text.split_at(name_len);
    if rest.starts_with('}') {
        return Some(Reference { name, default: None, len: name_len + 1 });
    }
    let default_and_rest = rest.strip_prefix(":-")?;
    let default_len = default_and_rest.find('}')?;
    Some(Reference { name, default: Some(&default_and_rest[..default_len]), len: name_len + 2 + default_len + 1 })
}

/// \[beyond\] The NAME when `text` is nothing but one reference (`${NAME}` or
/// `${NAME:-default}`): an `env` entry that passes one of odek's variables by reference.
pub(crate) fn only_reference(text: &str) -> Option<&str> {
    let after = text.strip_prefix("${")?;
    reference_after(after).filter(|reference| reference.len == after.len()).map(|reference| reference.name)
}

/// Whether the redactor would hide something of `text` (a known secret or a credential's shape):
/// the one test of "a value the redactor would hide".
fn redactor_would_hide(text: &str) -> bool {
    odek_contract::redaction::redact(text) != text
}

/// The expansion of one file: what it may read, and what it refused and expanded so far.
struct Expander<'a> {
    env: &'a BTreeMap<String, String>,
    trust: Trust,
    protected: &'a ProtectedNames,
    /// `(name, why)` of every refused reference, in order.
    refused: Vec<(String, &'static str)>,
    substituted: Substituted,
}

impl Expander<'_> {
    fn expand_in_place(&mut self, text: &mut String, read: &mut Vec<String>) {
        if text.contains("${") {
            *text = self.expand(text, read);
        }
    }

    /// Expands the references of one string; the names it read are added to `read` (once each).
    fn expand(&mut self, text: &str, read: &mut Vec<String>) -> String {
        let mut out = String::with_capacity(text.len());
        // What the string is without the values read from the environment (for the check that
        // they do not complete a secret together with the project's own text).
        let mut literal = String::with_capacity(text.len());
        let mut expanded: Vec<(&str, &str)> = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            literal.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let Some(reference) = reference_after(after) else {
                out.push('$');
                literal.push('$');
                rest = &rest[start + 1..];
                continue;
            };
            rest = &after[reference.len..];
            let value = self.env.get(reference.name);
            if let Some(why) = self.refusal(reference.name, value.map(String::as_str)) {
                self.refused.push((reference.name.to_owned(), why));
                continue;
            }
            match (value, reference.default) {
                (Some(value), _) => {
                    out.push_str(value);
                    expanded.push((reference.name, value));
                }
                (None, Some(default)) => {
                    out.push_str(default);
                    literal.push_str(default);
                }
                (None, None) => {}
            }
        }
        out.push_str(rest);
        literal.push_str(rest);
        if self.trust == Trust::Project
            && !expanded.is_empty()
            && redactor_would_hide(&out)
            && !redactor_would_hide(&literal)
        {
            self.refused.extend(expanded.iter().map(|(name, _)| ((*name).to_owned(), FORMS_A_SECRET)));
            return literal;
        }
        for (name, value) in expanded {
            self.substituted.expansions.record(name, value);
            if !read.iter().any(|known| known == name) {
                read.push(name.to_owned());
            }
        }
        out
    }

    /// Why this file may not expand `name` (whose value is `value`, `None` when unset), or
    /// `None` when it may: the operator's file reads anything.
    fn refusal(&self, name: &str, value: Option<&str>) -> Option<&'static str> {
        if self.trust == Trust::Operator {
            return None;
        }
        self.protected.refusal(name).or_else(|| value.filter(|value| redactor_would_hide(value)).map(|_| SECRET_VALUE))
    }
}

/// The NAMEs of the `${NAME}` and `${NAME:-default}` references of `text`, as expansion reads
/// them.
fn referenced_names(text: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        match reference_after(after) {
            Some(reference) => {
                names.push(reference.name);
                rest = &after[reference.len..];
            }
            None => rest = &rest[start + 1..],
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> BTreeMap<String, String> {
        [
            ("HOME", "/home/u"),
            ("A_1", "x"),
            ("EMPTY", ""),
            ("GITHUB_TOKEN", "ghp_secret"),
            ("LOOP", "${HOME}"),
            ("DATABASE_URL", "postgres://app:hunter2-long@db.internal:5432/app"),
            ("SLACK_HOOK", "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"),
            ("PG_PW", "hunter2x"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    /// `text` expanded under `trust`, and the names refused.
    fn expand_with(text: &str, trust: Trust, protected: &ProtectedNames) -> (String, Vec<String>) {
        let env = env();
        let mut expander =
            Expander { env: &env, trust, protected, refused: Vec::new(), substituted: Substituted::default() };
        let out = expander.expand(text, &mut Vec::new());
        (out, expander.refused.into_iter().map(|(name, _)| name).collect())
    }

    fn expand(text: &str, trust: Trust) -> (String, Vec<String>) {
        expand_with(text, trust, &ProtectedNames::default())
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
    fn braced_names_and_claude_defaults_expand() {
        for (input, want) in [
            ("${HOME}/bin", "/home/u/bin"),
            ("a${A_1}b${A_1}", "axbx"),
            ("${UNSET}", ""),
            ("$HOME", "$HOME"),
            ("${HOME:-x}", "/home/u"),
            ("${UNSET:-x}", "x"),
            ("${UNSET:-}", ""),
            ("${UNSET:-a b:-c}", "a b:-c"),
            ("${UNSET:-${HOME}}", "${HOME}"),
            ("${EMPTY:-x}", ""),
            ("${HOME:x}", "${HOME:x}"),
            ("${HOME-x}", "${HOME-x}"),
            ("${UNSET:-x", "${UNSET:-x"),
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
    fn only_a_whole_reference_is_a_reference() {
        assert_eq!(only_reference("${GITHUB_TOKEN}"), Some("GITHUB_TOKEN"));
        assert_eq!(only_reference("${X_API_KEY:-}"), Some("X_API_KEY"));
        for text in ["Bearer ${TOKEN}", "${TOKEN}x", "${A}${B}", "$TOKEN", "${TOKEN", "token"] {
            assert_eq!(only_reference(text), None, "{text}");
        }
    }

    #[test]
    fn project_refuses_secret_looking_names() {
        assert_eq!(expand("${GITHUB_TOKEN}", Trust::Operator).0, "ghp_secret");
        let (text, refused) = expand("t=${GITHUB_TOKEN};h=${HOME}", Trust::Project);
        assert_eq!(text, "t=;h=/home/u");
        assert_eq!(refused, vec!["GITHUB_TOKEN".to_owned()]);
        // A default does not stand in for a refused variable: the project learns nothing.
        assert_eq!(expand("${GITHUB_TOKEN:-none}", Trust::Project).0, "");
    }

    /// Red team M4: a variable whose name says nothing, holding a DSN with its password or a
    /// webhook URL, never reaches a project's url, args, env or headers.
    #[test]
    fn project_refuses_values_the_redactor_would_hide_red() {
        for reference in ["${DATABASE_URL}", "${SLACK_HOOK}", "${DATABASE_URL:-x}"] {
            let (text, refused) = expand(&format!("https://collector.example/?d={reference}"), Trust::Project);
            assert_eq!(text, "https://collector.example/?d=", "{reference}");
            assert_eq!(refused.len(), 1, "{reference}");
        }
        assert_eq!(expand("${DATABASE_URL}", Trust::Operator).0, env()["DATABASE_URL"]);
    }

    /// Nor do innocent-looking pieces that form a credential with the project's own text.
    #[test]
    fn project_refuses_variables_that_complete_a_secret_red() {
        let (text, refused) = expand("postgres://app:${PG_PW}@db.internal/app", Trust::Project);
        assert_eq!(text, "postgres://app:@db.internal/app");
        assert_eq!(refused, ["PG_PW"]);
        assert_eq!(expand("--password-file=${HOME}/pw", Trust::Project).0, "--password-file=/home/u/pw");
    }

    #[test]
    fn secret_env_references_are_the_names_its_values_read() {
        let Value::Object(top) = serde_json::json!({
            "mcp_servers": {"a": {"secret_env": {"K": "${BRAVE_KEY}", "L": "x${A}y${BRAVE_KEY}", "M": "$NOT ${1X}", "N": "${D:-d}"}}},
            "mcpServers": {"b": {"secret_env": {"K": "${OTHER}"}, "args": ["${ARGS_ONLY}"]}, "c": "junk"},
            "other": {"secret_env": {"K": "${NOT_A_SERVER}"}}
        }) else {
            unreachable!()
        };
        assert_eq!(secret_env_references(&top), ["BRAVE_KEY", "A", "D", "OTHER"]);
    }

    #[test]
    fn project_refuses_the_variables_a_global_secret_env_reads() {
        let protected = ProtectedNames { secrets_env: Vec::new(), secret_env: vec!["HOME".into()] };
        let (text, refused) = expand_with("h=${HOME};a=${A_1}", Trust::Project, &protected);
        assert_eq!(text, "h=;a=x");
        assert_eq!(refused, ["HOME"]);
        assert_eq!(protected.refusal("HOME"), Some("variable a global secret_env reads, in project config"));
    }

    #[test]
    fn the_variables_each_server_read_are_kept_and_env_expands() {
        // Config files reach the substitution with their keys sorted (`config_object`).
        let mut root = odek_contract::canonical_json::sorted_value(serde_json::json!({
            "model": "${A_1}",
            "mcpServers": {"fs": {"command": "${HOME}/bin/fs", "args": ["${A_1}", "${HOME}"], "env": {"LOG": "${A_1}"}}},
            "mcp_servers": {"gh": {"url": "https://x.example/${UNSET:-mcp}", "env": {"T": "${GITHUB_TOKEN}"}}}
        }));
        let mut warnings = Vec::new();
        let substituted = substitute_config_vars(
            "./.mcp.json",
            &mut root,
            &env(),
            Trust::Project,
            &ProtectedNames::default(),
            &mut warnings,
        );
        assert_eq!(root["mcpServers"]["fs"]["env"]["LOG"], "x");
        assert_eq!(root["mcp_servers"]["gh"]["url"], "https://x.example/mcp");
        assert_eq!(substituted.server_variables["fs"], ["A_1", "HOME"]);
        assert!(!substituted.server_variables.contains_key("gh"), "defaults and refusals read nothing");
        assert_eq!(warnings, ["./.mcp.json: ${GITHUB_TOKEN} not expanded (secret-looking variable in project config)"]);
    }
}
