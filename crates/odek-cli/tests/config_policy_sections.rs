//! The §7/§8 sections through `load_config`: `dangerous`, `tools`, `planning`, `subagent` and
//! `profiles`, their warnings, wrong-type errors, and what the project file may not do with them
//! (§9).

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns too.

mod config_support;

use std::collections::BTreeMap;

use config_support::Fixture;
use odek::config::{
    BudgetInherit, DangerAction, DangerousConfig, NonInteractive, PlanningConfig, Profile, SubagentConfig, ToolsConfig,
};
use odek_danger::DangerClass;

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|name| (*name).to_owned()).collect()
}

#[test]
fn defaults_when_nothing_is_configured() {
    let config = Fixture::new().load().unwrap().config;
    assert_eq!(config.dangerous, DangerousConfig::default());
    assert_eq!(config.dangerous.non_interactive, NonInteractive::ReadOnly);
    assert_eq!(config.tools, ToolsConfig { enabled: None, disabled: Vec::new() });
    assert_eq!(config.planning, PlanningConfig { enabled: true, max_steps: 12, max_render_chars: 2000 });
    assert_eq!(config.subagent, SubagentConfig::default());
    assert_eq!(config.subagent.timeout_seconds, 1800);
    assert_eq!(config.subagent.max_iterations, 15);
    assert_eq!(config.subagent.max_depth, 2);
    assert_eq!(config.subagent.max_concurrency_or(config.core.max_concurrency), 3);
    assert_eq!(config.subagent.default_profile, "default");
    assert_eq!(config.profiles.get("default"), Some(&Profile::builtin_default()));
    assert_eq!(config.profiles.get("default").unwrap().max_risk, DangerClass::LocalWrite);
}

#[test]
fn global_dangerous_section_is_validated() {
    let loaded = Fixture::new()
        .global(
            r#"{"dangerous": {
                "classes": {"install": "allow", "network_egress": "deny", "teleport": "allow", "unknown": "sure"},
                "action": "prompt",
                "allowlist": ["git status", ""],
                "denylist": ["rm -rf /", "  "],
                "non_interactive": "allow"
            }}"#,
        )
        .load()
        .unwrap();
    let dangerous = loaded.config.dangerous;
    assert_eq!(
        dangerous.classes,
        BTreeMap::from([(DangerClass::Install, DangerAction::Allow), (DangerClass::NetworkEgress, DangerAction::Deny)])
    );
    assert_eq!(dangerous.action, Some(DangerAction::Prompt));
    assert_eq!(dangerous.allowlist, names(&["git status"]));
    assert_eq!(dangerous.denylist, names(&["rm -rf /"]));
    assert_eq!(dangerous.non_interactive, NonInteractive::Allow);
    assert_eq!(
        loaded.warnings,
        vec![
            "dangerous.classes: unknown danger class \"teleport\"; ignored",
            "dangerous.classes.unknown: invalid action \"sure\"; ignored",
        ]
    );
}

#[test]
fn invalid_non_interactive_fails_closed_to_deny() {
    let loaded = Fixture::new().global(r#"{"dangerous": {"non_interactive": "whatever"}}"#).load().unwrap();
    assert_eq!(loaded.config.dangerous.non_interactive, NonInteractive::Deny);
    assert_eq!(loaded.warnings, vec!["dangerous.non_interactive: invalid value \"whatever\"; using \"deny\""]);
    let loaded =
        Fixture::new().global(r#"{"dangerous": {"non_interactive": "deny", "action": "yolo"}}"#).load().unwrap();
    assert_eq!(loaded.config.dangerous.non_interactive, NonInteractive::Deny);
    assert_eq!(loaded.config.dangerous.action, None);
    assert_eq!(loaded.warnings, vec!["dangerous.action: invalid action \"yolo\"; ignored"]);
}

#[test]
fn wrong_types_in_the_new_sections_are_fatal_and_name_the_key() {
    let cases = [
        (r#"{"dangerous": []}"#, "dangerous: invalid type: sequence, expected a map"),
        (
            r#"{"dangerous": {"classes": {"install": 1}}}"#,
            "dangerous.classes.install: invalid type: integer `1`, expected a string",
        ),
        (
            r#"{"dangerous": {"allowlist": "git status"}}"#,
            "dangerous.allowlist: invalid type: string \"git status\", expected a sequence",
        ),
        (r#"{"tools": ["shell"]}"#, "tools: invalid type: sequence, expected a map"),
        (r#"{"planning": {"max_steps": "5"}}"#, "planning.max_steps: invalid type: string \"5\", expected i64"),
        (
            r#"{"subagent": {"announce_budget": "yes"}}"#,
            "subagent.announce_budget: invalid type: string \"yes\", expected a boolean",
        ),
        (r#"{"profiles": {"p": []}}"#, "profiles.p: invalid type: sequence, expected a map"),
        (
            r#"{"profiles": {"p": {"max_risk": "safe", "tools": [1]}}}"#,
            "profiles.p.tools: invalid type: sequence, expected a map",
        ),
    ];
    for (text, expected) in cases {
        let fixture = Fixture::new().global(text);
        assert_eq!(fixture.error(), format!("config {}: {expected}", fixture.global_display()), "{text}");
    }
    let fixture = Fixture::new().project(r#"{"planning": [false]}"#);
    assert_eq!(fixture.error(), "config ./odek.json: planning: invalid type: sequence, expected a map");
}

#[test]
fn null_sections_mean_absent() {
    let loaded = Fixture::new()
        .global(r#"{"dangerous": null, "tools": null, "planning": null, "subagent": null}"#)
        .load()
        .unwrap();
    assert_eq!(loaded.config.planning, PlanningConfig::default());
    assert!(loaded.warnings.is_empty());
}

#[test]
fn project_cannot_set_dangerous_red() {
    let loaded = Fixture::new()
        .global(r#"{"dangerous": {"classes": {"destructive": "deny"}, "non_interactive": "deny"}}"#)
        .project(
            r#"{"dangerous": {"classes": {"destructive": "allow"}, "action": "allow", "allowlist": ["rm -rf /"], "non_interactive": "allow"},
                "subagent": {"max_depth": 8}, "profiles": {"default": {"max_risk": "blocked"}}}"#,
        )
        .load()
        .unwrap();
    let dangerous = loaded.config.dangerous;
    assert_eq!(dangerous.classes, BTreeMap::from([(DangerClass::Destructive, DangerAction::Deny)]));
    assert_eq!(dangerous.action, None);
    assert!(dangerous.allowlist.is_empty());
    assert_eq!(dangerous.non_interactive, NonInteractive::Deny);
    assert_eq!(loaded.config.subagent.max_depth, 2);
    assert_eq!(loaded.config.profiles.get("default"), Some(&Profile::builtin_default()));
    assert_eq!(
        loaded.warnings,
        vec![
            "./odek.json: \"dangerous\" is operator-only and was ignored",
            "./odek.json: \"profiles\" is operator-only and was ignored",
            "./odek.json: \"subagent\" is operator-only and was ignored",
        ]
    );
}

#[test]
fn project_cannot_enable_tools_red() {
    let loaded = Fixture::new()
        .global(r#"{"tools": {"enabled": ["read_file", "search_files"], "disabled": ["shell"]}}"#)
        .project(r#"{"tools": {"enabled": ["read_file", "search_files", "shell", "write_file"], "disabled": ["search_files"]}}"#)
        .load()
        .unwrap();
    let tools = loaded.config.tools;
    assert_eq!(tools.enabled, Some(names(&["read_file", "search_files"])));
    assert_eq!(tools.disabled, names(&["shell", "search_files"]));
    assert!(tools.allows("read_file"));
    for refused in ["search_files", "shell", "write_file"] {
        assert!(!tools.allows(refused), "{refused}");
    }
    assert_eq!(loaded.warnings, vec!["./odek.json: \"tools.enabled\" is operator-only and was ignored"]);

    // Without a global whitelist the project still cannot create one (that would not widen
    // anything, but `enabled` is operator-only whatever it says).
    let loaded = Fixture::new().project(r#"{"tools": {"enabled": []}}"#).load().unwrap();
    assert_eq!(loaded.config.tools.enabled, None);
}

#[test]
fn global_tools_whitelist_empty_means_no_tools() {
    let tools = Fixture::new().global(r#"{"tools": {"enabled": []}}"#).load().unwrap().config.tools;
    assert_eq!(tools.enabled, Some(Vec::new()));
    assert!(!tools.allows("read_file"));
}

#[test]
fn planning_global_caps_are_clamped() {
    let fixture =
        Fixture::new().global(r#"{"planning": {"enabled": false, "max_steps": 51, "max_render_chars": 9000}}"#);
    let loaded = fixture.load().unwrap();
    assert_eq!(loaded.config.planning, PlanningConfig { enabled: false, max_steps: 50, max_render_chars: 8000 });
    let global = fixture.global_display();
    assert_eq!(
        loaded.warnings,
        vec![
            format!("{global}: planning.max_steps 51 is outside 1..50; clamped to 50"),
            format!("{global}: planning.max_render_chars 9000 is outside 200..8000; clamped to 8000"),
        ]
    );
}

#[test]
fn project_cannot_raise_planning_caps_red() {
    let loaded = Fixture::new()
        .global(r#"{"planning": {"enabled": false, "max_steps": 8}}"#)
        .project(r#"{"planning": {"enabled": true, "max_steps": 20, "max_render_chars": 4000}}"#)
        .load()
        .unwrap();
    assert_eq!(loaded.config.planning, PlanningConfig { enabled: false, max_steps: 8, max_render_chars: 2000 });
    assert_eq!(
        loaded.warnings,
        vec![
            "./odek.json: planning.enabled cannot enable planning the operator disabled; ignored",
            "./odek.json: planning.max_steps 20 exceeds the global limit 8; clamped to 8",
            "./odek.json: planning.max_render_chars 4000 exceeds the global limit 2000; clamped to 2000",
        ]
    );
}

#[test]
fn project_may_opt_out_of_planning_and_lower_caps() {
    let loaded = Fixture::new()
        .project(r#"{"planning": {"enabled": false, "max_steps": 3, "max_render_chars": 300}}"#)
        .load()
        .unwrap();
    assert_eq!(loaded.config.planning, PlanningConfig { enabled: false, max_steps: 3, max_render_chars: 300 });
    assert!(loaded.warnings.is_empty());
    let loaded = Fixture::new().project(r#"{"planning": {"enabled": true, "max_steps": 0}}"#).load().unwrap();
    assert_eq!(loaded.config.planning, PlanningConfig::default());
    assert!(loaded.warnings.is_empty());
}

#[test]
fn subagent_section_is_clamped() {
    let loaded = Fixture::new()
        .global(
            r#"{"max_concurrency": 5, "subagent": {"timeout_seconds": 7200, "max_iterations": 0, "max_depth": 9,
                "announce_budget": false, "budget_inherit": "share", "default_profile": "none"}}"#,
        )
        .load()
        .unwrap();
    let subagent = loaded.config.subagent;
    assert_eq!(
        subagent,
        SubagentConfig {
            max_concurrency: None,
            timeout_seconds: 1800,
            max_iterations: 15,
            max_depth: 8,
            announce_budget: false,
            budget_inherit: BudgetInherit::Share,
            default_profile: "none".to_owned(),
        }
    );
    assert_eq!(subagent.max_concurrency_or(loaded.config.core.max_concurrency), 5);
    assert_eq!(
        loaded.warnings,
        vec![
            "subagent.timeout_seconds 7200 exceeds the maximum 1800; clamped to 1800",
            "subagent.max_depth 9 exceeds the maximum 8; clamped to 8",
        ]
    );
    let loaded = Fixture::new().global(r#"{"subagent": {"budget_inherit": "all"}}"#).load().unwrap();
    assert_eq!(loaded.config.subagent.budget_inherit, BudgetInherit::Operator);
    assert_eq!(loaded.warnings, vec!["subagent.budget_inherit: invalid value \"all\"; using \"operator\""]);
}

#[test]
fn profiles_with_invalid_max_risk_are_dropped() {
    let loaded = Fixture::new()
        .global(
            r#"{"profiles": {
                "reader": {"max_risk": "safe", "allowlist": ["ls"], "tools": {"enabled": ["read_file"], "disabled": ["shell"]}},
                "bad": {"max_risk": "nuclear"},
                "gate": {"max_risk": "unread_exec"},
                "empty": {},
                "default": {"max_risk": "install"}
            }}"#,
        )
        .load()
        .unwrap();
    let profiles = &loaded.config.profiles;
    assert_eq!(
        profiles.get("reader"),
        Some(&Profile {
            max_risk: DangerClass::Safe,
            allowlist: Some(names(&["ls"])),
            tools: Some(ToolsConfig { enabled: Some(names(&["read_file"])), disabled: names(&["shell"]) }),
        })
    );
    assert_eq!(profiles.get("default").unwrap().max_risk, DangerClass::Install);
    assert_eq!(profiles.get("bad"), None);
    assert_eq!(profiles.iter().map(|(name, _)| name).collect::<Vec<_>>(), vec!["default", "reader"]);
    assert_eq!(
        loaded.warnings,
        vec![
            "profile \"bad\": invalid max_risk \"nuclear\"; profile ignored",
            "profile \"empty\": invalid max_risk \"\"; profile ignored",
            "profile \"gate\": invalid max_risk \"unread_exec\"; profile ignored",
        ]
    );
}

#[test]
fn an_invalid_operator_default_profile_falls_back_to_the_builtin() {
    let loaded = Fixture::new().global(r#"{"profiles": {"default": {"max_risk": "everything"}}}"#).load().unwrap();
    assert_eq!(loaded.config.profiles.get("default"), Some(&Profile::builtin_default()));
    assert_eq!(loaded.warnings, vec!["profile \"default\": invalid max_risk \"everything\"; profile ignored"]);
}
