//! `~/.odek/secrets.env` (spec `config.md` §12) through `load_config`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns too.

mod config_support;

use config_support::Fixture;

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

#[test]
fn missing_file_injects_nothing() {
    let loaded = Fixture::new().load().unwrap();
    assert!(loaded.secrets.injected.is_empty());
    assert!(loaded.secrets.names.is_empty());
    assert!(loaded.warnings.is_empty());
}

#[test]
fn parses_lines_and_warns_on_malformed_ones() {
    let text = "# comment\n\n  OPENAI_API_KEY = \"sk-one\"  \nTOKEN2='two'\nnot a pair\n=novalue\n  # indented comment\nPLAIN=a=b\r\nEMPTY=\n";
    let loaded = Fixture::new().secrets(text, 0o600).load().unwrap();
    assert_eq!(
        loaded.secrets.injected,
        pairs(&[("OPENAI_API_KEY", "sk-one"), ("TOKEN2", "two"), ("PLAIN", "a=b"), ("EMPTY", "")])
    );
    assert_eq!(loaded.secrets.names, vec!["OPENAI_API_KEY", "TOKEN2", "PLAIN", "EMPTY"]);
    assert_eq!(
        loaded.warnings,
        vec!["secrets.env line 5: expected KEY=VALUE; skipped", "secrets.env line 6: expected KEY=VALUE; skipped",]
    );
    assert_eq!(loaded.env["OPENAI_API_KEY"], "sk-one");
    let debug = format!("{loaded:?}");
    assert!(debug.contains("OPENAI_API_KEY") && !debug.contains("sk-one"), "{debug}");
}

#[test]
fn existing_variables_are_never_overwritten() {
    let loaded = Fixture::new()
        .env("OPENAI_API_KEY", "from-shell")
        .secrets("OPENAI_API_KEY=from-file\nDEEPSEEK_API_KEY=ds\nDEEPSEEK_API_KEY=second\n", 0o600)
        .load()
        .unwrap();
    assert_eq!(loaded.secrets.injected, pairs(&[("DEEPSEEK_API_KEY", "ds")]));
    assert_eq!(loaded.secrets.names, vec!["OPENAI_API_KEY", "DEEPSEEK_API_KEY"]);
    assert_eq!(loaded.env["OPENAI_API_KEY"], "from-shell");
    assert_eq!(loaded.env["DEEPSEEK_API_KEY"], "ds");
}

#[test]
fn loaded_values_feed_substitution_in_the_global_file() {
    let loaded = Fixture::new()
        .secrets("GH_TOKEN=ghp_x\n", 0o600)
        .global(r#"{"mcp_servers": {"gh": {"command": "gh-mcp", "args": ["--token", "${GH_TOKEN}"]}}}"#)
        .load()
        .unwrap();
    assert_eq!(loaded.config.mcp_servers[0].entry.args, vec!["--token", "ghp_x"]);
}

#[test]
fn loaded_values_are_registered_for_redaction() {
    let secret = "odek-secrets-env-redaction-probe-7f3a9c";
    Fixture::new().secrets(&format!("PROBE_SECRET={secret}\n"), 0o600).load().unwrap();
    let text = format!("value: {secret}");
    let redacted = odek_contract::redaction::redact(&text);
    assert!(!redacted.contains(secret), "{redacted}");
}

#[test]
fn world_readable_secrets_env_not_loaded_red() {
    for (mode, shown) in [(0o644, "0644"), (0o640, "0640"), (0o604, "0604"), (0o620, "0620")] {
        let loaded = Fixture::new()
            .secrets("LEAKED_TOKEN=abc\n", mode)
            .global(r#"{"system": "${LEAKED_TOKEN}"}"#)
            .load()
            .unwrap();
        assert!(loaded.secrets.injected.is_empty(), "{shown}");
        assert!(loaded.secrets.names.is_empty(), "{shown}");
        assert!(!loaded.env.contains_key("LEAKED_TOKEN"), "{shown}");
        assert_eq!(loaded.config.core.system, "", "{shown}");
        assert_eq!(
            loaded.warnings,
            vec![format!(
                "~/.odek/secrets.env is readable by group or others (mode {shown}); refusing to load it — run chmod 600 ~/.odek/secrets.env"
            )]
        );
    }
}
