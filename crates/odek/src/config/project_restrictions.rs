//! What an untrusted project file (`./odek.json`, and \[beyond\] `./.mcp.json`) may not do (spec
//! `config.md` §9), applied to the parsed JSON before anything else looks at it: each violation
//! is removed with one warning and the rest of the file still applies.
//!
//! Handled here: operator-only keys (top level and the nested `skills.dirs`,
//! `skills.embedding`, `tools.enabled`), `sandbox_*` knobs, `mcp_servers.<name>.auto_approve`, and
//! prices in `limits`, \[beyond\] credential-named `headers` ([`strip_credential_headers`]),
//! \[beyond\] secret-looking `env` entries that read a variable ([`refuse_project_env_references`]); and,
//! fatal rather than stripped, \[beyond\] `secret_env` in any server entry
//! ([`refuse_project_secret_env`]). The limit clamp (lower only) needs both files and lives in
//! [`super::limits`].

use odek_contract::quoting::quote;
use odek_contract::secret_names::is_secret_looking;
use serde_json::{Map, Value};

use super::ConfigError;
use super::limits::PRICE_KEYS;
use super::mcp_servers::SERVER_MAP_KEYS;

/// Top-level keys only the operator may set.
pub const OPERATOR_ONLY_KEYS: &[&str] = &[
    "base_url",
    "api_key",
    "provider",
    "providers",
    "fallback_models",
    "llm",
    "system",
    "dangerous",
    "subagent",
    "profiles",
    "verify",
    "embedding",
    "memory",
    "sessions",
    "web_search",
    "telegram",
    "guard",
    "trusted_proxies",
    "transcription",
    "vision",
    "maintenance",
    "schedules",
    "serve",
];

/// Operator-only keys nested one level down: (parent, child).
pub const OPERATOR_ONLY_NESTED_KEYS: &[(&str, &str)] =
    &[("skills", "dirs"), ("skills", "embedding"), ("tools", "enabled")];

/// Any `sandbox_*` knob (the reference's container options): the project may not set them.
/// \[beyond\] `sandbox` itself is not among them: a project may tighten it (`super::sandbox`).
pub fn is_sandbox_knob(key: &str) -> bool {
    key.starts_with("sandbox_")
}

/// \[beyond\] A project file may not give a server `secret_env` (the operator's way to hand a
/// server a key): its presence in any server entry, even empty, is fatal before anything is
/// expanded, so the project learns nothing and starts nothing.
pub(crate) fn refuse_project_secret_env(display: &str, top: &Map<String, Value>) -> Result<(), ConfigError> {
    for map_key in SERVER_MAP_KEYS {
        let Some(Value::Object(servers)) = top.get(*map_key) else {
            continue;
        };
        for (name, entry) in servers {
            if entry.get("secret_env").is_some() {
                return Err(ConfigError::ProjectSecretEnv { path: display.to_owned(), name: name.clone() });
            }
        }
    }
    Ok(())
}

/// \[beyond\] A project file may not send a remote server a header whose name looks like a
/// credential (`Authorization`, `X-Api-Key`, `Cookie`…): the operator's tokens reach a server
/// through the global file or `token_env`, which the approval card shows. Each such header is
/// removed with a warning that names it, never its value.
pub(crate) fn strip_credential_headers(display: &str, top: &mut Map<String, Value>, warnings: &mut Vec<String>) {
    for map_key in SERVER_MAP_KEYS {
        let Some(Value::Object(servers)) = top.get_mut(*map_key) else {
            continue;
        };
        for (name, entry) in servers.iter_mut() {
            let Some(Value::Object(headers)) = entry.get_mut("headers") else {
                continue;
            };
            headers.retain(|header, _| {
                let credential = is_secret_looking(header);
                if credential {
                    warnings.push(format!(
                        "{display}: mcp server {}: header {} looks like a credential, which only ~/.odek/config.json may send; ignored",
                        quote(name),
                        quote(header)
                    ));
                }
                !credential
            });
        }
    }
}

/// \[beyond\] A project file may not hand a server one of odek's secrets through `env` either: a
/// secret-looking `env` entry whose value reads a variable (`"GITHUB_TOKEN": "${GITHUB_TOKEN}"`,
/// the usual Claude Code line) is removed with a warning that says where such a variable can be
/// passed from. (Its variable would not expand in a project file anyway; without this, the entry
/// would reach the server's environment filter and be dropped there with less to go on.)
pub(crate) fn refuse_project_env_references(display: &str, top: &mut Map<String, Value>, warnings: &mut Vec<String>) {
    for map_key in SERVER_MAP_KEYS {
        let Some(Value::Object(servers)) = top.get_mut(*map_key) else { continue };
        for (name, entry) in servers.iter_mut() {
            let Some(Value::Object(env)) = entry.get_mut("env") else { continue };
            env.retain(|key, value| {
                let refused = is_secret_looking(key) && value.as_str().is_some_and(|value| value.contains("${"));
                if refused {
                    warnings.push(format!(
                        "{display}: mcp server {}: env {key} is not passed: a project file cannot give a server odek's secrets (only ~/.odek/config.json can, in env or secret_env)",
                        quote(name)
                    ));
                }
                !refused
            });
        }
    }
}

/// \[beyond\] The `oauth` keys that hand an authorization server a secret of the operator's.
const OAUTH_OPERATOR_ONLY_KEYS: &[&str] = &["client_secret_env", "private_key_file"];

/// Removes everything §9 forbids from a project file's top-level object, in place; `display` is
/// the file as messages name it.
pub(crate) fn strip_operator_only(display: &str, top: &mut Map<String, Value>, warnings: &mut Vec<String>) {
    let operator_only_warning = |key: &str| format!("{display}: {} is operator-only and was ignored", quote(key));
    let forbidden: Vec<String> =
        top.keys().filter(|key| OPERATOR_ONLY_KEYS.contains(&key.as_str()) || is_sandbox_knob(key)).cloned().collect();
    for key in forbidden {
        top.remove(&key);
        warnings.push(operator_only_warning(&key));
    }

    for (parent, child) in OPERATOR_ONLY_NESTED_KEYS {
        if let Some(Value::Object(section)) = top.get_mut(*parent)
            && section.remove(*child).is_some()
        {
            warnings.push(operator_only_warning(&format!("{parent}.{child}")));
        }
    }

    for map_key in SERVER_MAP_KEYS {
        let Some(Value::Object(servers)) = top.get_mut(*map_key) else {
            continue;
        };
        for (name, entry) in servers.iter_mut() {
            let Value::Object(fields) = entry else { continue };
            if fields.remove("auto_approve").is_some() {
                warnings.push(operator_only_warning(&format!("{map_key}.{name}.auto_approve")));
            }
            // \[beyond\] A project's server may not have odek send the operator's secrets to an
            // authorization server of the project's choosing.
            if let Some(Value::Object(oauth)) = fields.get_mut("oauth") {
                for key in OAUTH_OPERATOR_ONLY_KEYS {
                    if oauth.remove(*key).is_some() {
                        warnings.push(operator_only_warning(&format!("{map_key}.{name}.oauth.{key}")));
                    }
                }
            }
        }
    }

    if let Some(Value::Object(limits)) = top.get_mut("limits") {
        for key in PRICE_KEYS {
            if limits.remove(*key).is_some() {
                warnings.push(format!("{display}: limits.{key} sets a price; prices are operator-only; ignored"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strips_and_warns_in_a_stable_order() {
        let Value::Object(mut top) = json!({
            "model": "m",
            "api_key": "k",
            "sandbox": false,
            "sandbox_image": "x",
            "skills": {"dirs": ["/"], "other": 1},
            "tools": {"enabled": ["a"], "disabled": ["b"]},
            "mcp_servers": {"fs": {"command": "x", "auto_approve": true}},
            "limits": {"max_tool_calls": 3, "model_prices": {}, "input_cost_per_million_usd": 1.0}
        }) else {
            unreachable!()
        };
        let mut warnings = Vec::new();
        strip_operator_only("./odek.json", &mut top, &mut warnings);
        assert_eq!(
            Value::Object(top),
            json!({
                "model": "m",
                "sandbox": false,
                "skills": {"other": 1},
                "tools": {"disabled": ["b"]},
                "mcp_servers": {"fs": {"command": "x"}},
                "limits": {"max_tool_calls": 3}
            })
        );
        assert_eq!(
            warnings,
            vec![
                "./odek.json: \"api_key\" is operator-only and was ignored",
                "./odek.json: \"sandbox_image\" is operator-only and was ignored",
                "./odek.json: \"skills.dirs\" is operator-only and was ignored",
                "./odek.json: \"tools.enabled\" is operator-only and was ignored",
                "./odek.json: \"mcp_servers.fs.auto_approve\" is operator-only and was ignored",
                "./odek.json: limits.input_cost_per_million_usd sets a price; prices are operator-only; ignored",
                "./odek.json: limits.model_prices sets a price; prices are operator-only; ignored",
            ]
        );
    }

    #[test]
    fn a_project_server_cannot_send_an_operator_secret_to_an_authorization_server_red() {
        let Value::Object(mut top) = json!({"mcp_servers": {"gh": {"url": "https://x.example/mcp", "oauth": {
            "client_id": "c", "client_secret_env": "OPENAI_API_KEY", "private_key_file": "/home/u/.ssh/id"}}}})
        else {
            unreachable!()
        };
        let mut warnings = Vec::new();
        strip_operator_only("./odek.json", &mut top, &mut warnings);
        assert_eq!(top["mcp_servers"]["gh"]["oauth"], json!({"client_id": "c"}));
        assert_eq!(
            warnings,
            [
                "./odek.json: \"mcp_servers.gh.oauth.client_secret_env\" is operator-only and was ignored",
                "./odek.json: \"mcp_servers.gh.oauth.private_key_file\" is operator-only and was ignored",
            ]
        );
    }

    #[test]
    fn secret_env_in_a_project_file_is_fatal_even_when_empty() {
        for entry in [json!({"secret_env": {}}), json!({"secret_env": null}), json!({"secret_env": {"T": "${T}"}})] {
            let Value::Object(top) = json!({"mcpServers": {"gh": entry}}) else { unreachable!() };
            assert_eq!(
                refuse_project_secret_env("./.mcp.json", &top).unwrap_err().to_string(),
                "config ./.mcp.json: mcp server \"gh\": secret_env is allowed only in ~/.odek/config.json"
            );
        }
        let Value::Object(top) = json!({"mcp_servers": {"gh": {"env": {"secret_env": "x"}}}}) else { unreachable!() };
        assert!(refuse_project_secret_env("./odek.json", &top).is_ok());
    }

    #[test]
    fn a_project_env_entry_that_reads_a_secret_is_removed_with_a_warning() {
        let Value::Object(mut top) = json!({"mcpServers": {"gh": {"command": "gh-mcp", "env": {
            "GITHUB_TOKEN": "${GITHUB_TOKEN}", "X_API_KEY": "pre-${KEY}", "LOG": "${LOG_LEVEL}", "MY_TOKEN": "literal"
        }}}}) else {
            unreachable!()
        };
        let mut warnings = Vec::new();
        refuse_project_env_references("./.mcp.json", &mut top, &mut warnings);
        assert_eq!(top["mcpServers"]["gh"]["env"], json!({"LOG": "${LOG_LEVEL}", "MY_TOKEN": "literal"}));
        assert_eq!(
            warnings,
            [
                "./.mcp.json: mcp server \"gh\": env GITHUB_TOKEN is not passed: a project file cannot give a server odek's secrets (only ~/.odek/config.json can, in env or secret_env)",
                "./.mcp.json: mcp server \"gh\": env X_API_KEY is not passed: a project file cannot give a server odek's secrets (only ~/.odek/config.json can, in env or secret_env)",
            ]
        );
    }

    #[test]
    fn credential_headers_in_a_project_file_are_ignored_red() {
        let Value::Object(mut top) = json!({"mcpServers": {"r": {"url": "https://x.example", "headers": {
            "Authorization": "Bearer s3cret", "X-Api-Key": "k", "x-auth-token": "t", "Cookie": "c",
            "Private-Token": "p", "X-Team": "t-1",
        }}}}) else {
            unreachable!()
        };
        let mut warnings = Vec::new();
        strip_credential_headers("./.mcp.json", &mut top, &mut warnings);
        assert_eq!(top["mcpServers"]["r"]["headers"], json!({"X-Team": "t-1"}));
        assert_eq!(warnings.len(), 5, "{warnings:?}");
        assert_eq!(
            warnings[0],
            "./.mcp.json: mcp server \"r\": header \"Authorization\" looks like a credential, which only ~/.odek/config.json may send; ignored"
        );
        assert!(!warnings.concat().contains("s3cret"));
    }
}
