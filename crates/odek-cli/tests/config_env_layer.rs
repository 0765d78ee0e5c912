//! The `ODEK_*` layer, the flag layer and API key resolution (spec `config.md` §1, §4, §10,
//! §11), through `load_config` + `resolve_effective` with a hand-made environment.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns too.

mod config_support;

use std::collections::BTreeMap;

use config_support::Fixture;
use odek::config::{
    CliOverrides, ConfigError, EffectiveConfig, EnvLayer, read_env_layer, resolve_api_key, resolve_effective,
    tool_allowed,
};

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|name| (*name).to_owned()).collect()
}

fn effective(fixture: &Fixture, cli: &CliOverrides) -> EffectiveConfig {
    resolve_effective(&fixture.load().unwrap(), cli).unwrap()
}

fn env_of(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(name, value)| ((*name).to_owned(), (*value).to_owned())).collect()
}

#[test]
fn env_overrides_the_files_key_by_key() {
    let fixture = Fixture::new()
        .global(r#"{"model": "g-model", "base_url": "https://g.example/v1", "max_iterations": 20, "stream": true}"#)
        .project(r#"{"model": "p-model", "compaction": false}"#)
        .env("ODEK_MODEL", "env-model")
        .env("ODEK_PROVIDER", "anthropic")
        .env("ODEK_MAX_ITER", "7")
        .env("ODEK_THINKING", "high")
        .env("ODEK_SYSTEM", "env identity")
        .env("ODEK_STREAM", "FALSE")
        .env("ODEK_COMPACTION", "True")
        .env("ODEK_PLANNING", "0")
        .env("ODEK_NO_AGENTS", "1")
        .env("ODEK_NO_COLOR", "true")
        .env("ODEK_MAX_TOOL_PARALLEL", "1")
        .env("ODEK_MAX_CONCURRENCY", "6");
    let effective = effective(&fixture, &CliOverrides::default());
    let core = &effective.config.core;
    assert_eq!(core.model, "env-model");
    assert_eq!(core.provider, "anthropic");
    assert_eq!(core.base_url, "https://g.example/v1");
    assert_eq!(core.max_iterations, 7);
    assert_eq!(core.thinking, "high");
    assert_eq!(core.system, "env identity");
    assert!(!core.stream);
    assert!(core.compaction);
    assert!(core.no_agents);
    assert_eq!(core.max_tool_parallel, 1);
    assert_eq!(core.max_concurrency, 6);
    assert!(!effective.config.planning.enabled);
    assert!(effective.no_color);
    assert_eq!(effective.config.subagent.max_concurrency_or(core.max_concurrency), 6);
    assert!(effective.warnings.is_empty());
}

#[test]
fn empty_variables_are_not_set() {
    let fixture = Fixture::new()
        .global(r#"{"model": "g-model", "max_iterations": 20}"#)
        .env("ODEK_MODEL", "")
        .env("ODEK_MAX_CONCURRENCY", "")
        .env("ODEK_STREAM", "")
        .env("ODEK_MAX_ITER", "0")
        .env("ODEK_TOOLS_ENABLED", "")
        .env("ODEK_TOOLS_DISABLED", " , ");
    let effective = effective(&fixture, &CliOverrides::default());
    assert_eq!(effective.config.core.model, "g-model");
    assert_eq!(effective.config.core.max_iterations, 20);
    assert_eq!(effective.config.tools.enabled, None);
    assert!(effective.config.tools.disabled.is_empty());
    assert!(effective.warnings.is_empty());
}

#[test]
fn invalid_booleans_and_integers_warn_and_are_ignored() {
    let env = env_of(&[
        ("ODEK_STREAM", "yes"),
        ("ODEK_COMPACTION", "on"),
        ("ODEK_PLANNING", "2"),
        ("ODEK_NO_AGENTS", " true"),
        ("ODEK_NO_COLOR", "\"1\"\n"),
        ("ODEK_MAX_ITER", "ten"),
        ("ODEK_MAX_TOOL_PARALLEL", "-1"),
        ("ODEK_MAX_CONCURRENCY", "99999999999"),
        ("ODEK_SANDBOX", "nope"),
    ]);
    let mut warnings = Vec::new();
    let layer = read_env_layer(&env, &mut warnings).unwrap();
    assert_eq!(layer, EnvLayer::default());
    assert_eq!(
        warnings,
        vec![
            "ODEK_SANDBOX: invalid boolean \"nope\"; ignored",
            "ODEK_MAX_ITER: invalid integer \"ten\"; ignored",
            "ODEK_STREAM: invalid boolean \"yes\"; ignored",
            "ODEK_COMPACTION: invalid boolean \"on\"; ignored",
            "ODEK_PLANNING: invalid boolean \"2\"; ignored",
            "ODEK_NO_AGENTS: invalid boolean \" true\"; ignored",
            "ODEK_NO_COLOR: invalid boolean \"\\\"1\\\"\\n\"; ignored",
            "ODEK_MAX_TOOL_PARALLEL: invalid integer \"-1\"; ignored",
            "ODEK_MAX_CONCURRENCY: invalid integer \"99999999999\"; ignored",
        ]
    );
}

#[test]
fn env_warnings_follow_the_loader_warnings() {
    let fixture = Fixture::new().project(r#"{"api_key": "x"}"#).env("ODEK_STREAM", "maybe");
    let effective = effective(&fixture, &CliOverrides::default());
    assert_eq!(
        effective.warnings,
        vec![
            "./odek.json: \"api_key\" is operator-only and was ignored",
            "ODEK_STREAM: invalid boolean \"maybe\"; ignored",
        ]
    );
}

#[test]
fn sandbox_switches_from_env_and_flags() {
    for value in ["0", "false", "FALSE"] {
        let loaded = Fixture::new().env("ODEK_SANDBOX", value).load().unwrap();
        assert!(!resolve_effective(&loaded, &CliOverrides::default()).unwrap().config.sandbox.enabled);
        // The flag is above the environment.
        let on = resolve_effective(&loaded, &CliOverrides { sandbox: Some(true), ..CliOverrides::default() }).unwrap();
        assert!(on.config.sandbox.enabled);
    }
    let loaded = Fixture::new().global(r#"{"sandbox": false}"#).env("ODEK_SANDBOX", "1").load().unwrap();
    assert!(resolve_effective(&loaded, &CliOverrides::default()).unwrap().config.sandbox.enabled);
    let loaded = Fixture::new().load().unwrap();
    let off = resolve_effective(&loaded, &CliOverrides { sandbox: Some(false), ..CliOverrides::default() }).unwrap();
    assert!(!off.config.sandbox.enabled);
}

#[test]
fn a_required_sandbox_cannot_be_switched_off_red() {
    let required = "sandbox.required is set: the sandbox cannot be turned off";
    let loaded = Fixture::new().env("ODEK_REQUIRE_SANDBOX", "1").env("ODEK_SANDBOX", "0").load().unwrap();
    let err = resolve_effective(&loaded, &CliOverrides::default()).unwrap_err();
    assert!(matches!(err, ConfigError::SandboxRequired));
    assert_eq!(err.to_string(), required);
    let loaded = Fixture::new().global(r#"{"sandbox": {"required": true}}"#).load().unwrap();
    let err =
        resolve_effective(&loaded, &CliOverrides { sandbox: Some(false), ..CliOverrides::default() }).unwrap_err();
    assert_eq!(err.to_string(), required);
    let effective = resolve_effective(&loaded, &CliOverrides::default()).unwrap();
    assert!(effective.config.sandbox.enabled && effective.config.sandbox.required);
}

#[test]
fn flags_override_env_and_files() {
    let fixture = Fixture::new()
        .global(r#"{"max_iterations": 20, "planning": {"enabled": false}, "limits": {"max_tool_calls": 10, "max_cost_usd": 1.5}}"#)
        .env("ODEK_MODEL", "env-model")
        .env("ODEK_MAX_ITER", "7")
        .env("ODEK_COMPACTION", "1");
    let cli = CliOverrides {
        model: Some("flag-model".into()),
        base_url: Some("http://127.0.0.1:9/v1".into()),
        max_iterations: Some(3),
        no_agents: true,
        planning: Some(true),
        compaction: Some(false),
        max_tool_calls: Some(50),
        max_cost_usd: Some(0.25),
        max_runtime_seconds: Some(60),
        ..CliOverrides::default()
    };
    let effective = effective(&fixture, &cli);
    let config = &effective.config;
    assert_eq!(config.core.model, "flag-model");
    assert_eq!(config.core.base_url, "http://127.0.0.1:9/v1");
    assert_eq!(config.core.max_iterations, 3);
    assert!(config.core.no_agents);
    assert!(!config.core.compaction);
    assert!(config.planning.enabled);
    assert_eq!(config.limits.max_tool_calls, 50, "--max-* override the files in either direction");
    assert_eq!(config.limits.max_cost_usd, 0.25);
    assert_eq!(config.limits.max_runtime_seconds, 60);
}

#[test]
fn tool_layers_merge_enabled_replaced_disabled_accumulated() {
    let fixture = Fixture::new()
        .global(r#"{"tools": {"enabled": ["read_file", "shell"], "disabled": ["write_file"]}}"#)
        .project(r#"{"tools": {"disabled": ["web_fetch"]}}"#)
        .env("ODEK_TOOLS_ENABLED", "read_file, search_files,shell,web_fetch,write_file")
        .env("ODEK_TOOLS_DISABLED", "shell");
    let effective_tools = effective(&fixture, &CliOverrides::default()).config.tools;
    assert_eq!(
        effective_tools.enabled,
        Some(names(&["read_file", "search_files", "shell", "web_fetch", "write_file"]))
    );
    assert_eq!(effective_tools.disabled, names(&["write_file", "web_fetch", "shell"]));
    assert!(effective_tools.allows("read_file"));
    assert!(effective_tools.allows("search_files"));
    for refused in ["shell", "web_fetch", "write_file", "fs__read"] {
        assert!(!effective_tools.allows(refused), "{refused}");
    }

    let cli = CliOverrides {
        tools: names(&["search_files", "fs__read", "shell"]),
        no_tools: names(&["search_files"]),
        ..CliOverrides::default()
    };
    let tools = effective(&fixture, &cli).config.tools;
    assert!(tools.allows("fs__read"), "--tool is the highest-layer whitelist");
    assert!(!tools.allows("read_file"));
    assert!(!tools.allows("search_files"), "--no-tool is merged into disabled");
    assert!(!tools.allows("shell"), "a lower layer's disabled still applies");
}

#[test]
fn tool_allowed_takes_the_flags_directly() {
    let tools =
        Fixture::new().global(r#"{"tools": {"enabled": [], "disabled": ["shell"]}}"#).load().unwrap().config.tools;
    assert!(!tool_allowed("read_file", &tools, &[], &[]), "enabled: [] means no tools");
    assert!(tool_allowed("read_file", &tools, &names(&["read_file"]), &[]));
    assert!(!tool_allowed("shell", &tools, &names(&["shell"]), &[]));
    assert!(!tool_allowed("read_file", &tools, &names(&["read_file"]), &names(&["read_file"])));
    assert!(!tool_allowed("no_such_tool", &tools, &names(&["read_file"]), &[]), "unknown names match nothing");
}

/// (global file, environment, expected key)
type KeyCase = (&'static str, &'static [(&'static str, &'static str)], Option<&'static str>);

#[test]
fn api_key_resolution_order() {
    let global_key = r#"{"api_key": "global-key-0123456789"}"#;
    let cases: [KeyCase; 7] = [
        (
            global_key,
            &[("ODEK_API_KEY", "odek-key-0123456789"), ("DEEPSEEK_API_KEY", "ds-key-0123456789")],
            Some("odek-key-0123456789"),
        ),
        (global_key, &[("ODEK_API_KEY", ""), ("DEEPSEEK_API_KEY", "ds-key-0123456789")], Some("global-key-0123456789")),
        (
            "{}",
            &[("DEEPSEEK_API_KEY", "ds-key-0123456789"), ("OPENAI_API_KEY", "oa-key-0123456789")],
            Some("ds-key-0123456789"),
        ),
        ("{}", &[("DEEPSEEK_API_KEY", "  "), ("OPENAI_API_KEY", "oa-key-0123456789")], Some("oa-key-0123456789")),
        (r#"{"api_key": ""}"#, &[("OPENAI_API_KEY", "oa-key-0123456789")], Some("oa-key-0123456789")),
        ("{}", &[("ODEK_API_KEY", "")], None),
        ("{}", &[], None),
    ];
    for (global, env, expected) in cases {
        let mut fixture = Fixture::new().global(global);
        for (name, value) in env {
            fixture = fixture.env(name, value);
        }
        let loaded = fixture.load().unwrap();
        assert_eq!(resolve_api_key(&loaded.env, &loaded.config).as_deref(), expected, "{global} {env:?}");
        assert_eq!(resolve_effective(&loaded, &CliOverrides::default()).unwrap().api_key.as_deref(), expected);
    }
}

#[test]
fn project_api_key_is_never_used_red() {
    let loaded = Fixture::new().project(r#"{"api_key": "project-key-0123456789"}"#).load().unwrap();
    assert_eq!(resolve_api_key(&loaded.env, &loaded.config), None);
}

#[test]
fn api_key_from_secrets_env_is_resolved() {
    let loaded = Fixture::new().secrets("DEEPSEEK_API_KEY=from-secrets-0123456789\n", 0o600).load().unwrap();
    assert_eq!(resolve_api_key(&loaded.env, &loaded.config).as_deref(), Some("from-secrets-0123456789"));
}

#[test]
fn resolved_api_key_is_registered_for_redaction_red() {
    // From the global file: no env name marks it as a secret before resolution does.
    let key = "resolved.key.for.redaction.4471";
    let loaded = Fixture::new().global(&format!(r#"{{"api_key": "{key}"}}"#)).load().unwrap();
    assert_eq!(odek_contract::redaction::redact(&format!("auth {key}")), format!("auth {key}"));
    let effective = resolve_effective(&loaded, &CliOverrides::default()).unwrap();
    assert_eq!(effective.api_key.as_deref(), Some(key));
    assert_eq!(odek_contract::redaction::redact(&format!("auth {key}")), "auth [REDACTED]");
    assert!(!format!("{effective:?}").contains(key));
}

#[test]
fn env_values_with_sensitive_names_are_registered_at_load_red() {
    let token = "service.token.value.9931";
    let _ = Fixture::new().env("BILLING_SERVICE_TOKEN", token).env("PLAIN_SETTING", "plain.value.1234").load().unwrap();
    assert_eq!(odek_contract::redaction::redact(&format!("t {token}")), "t [REDACTED]");
    assert_eq!(odek_contract::redaction::redact("p plain.value.1234"), "p plain.value.1234");
}
