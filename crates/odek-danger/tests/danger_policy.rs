//! The danger policy (spec `loop-and-sessions.md` §11, `config.md` §8).

use std::collections::BTreeMap;

use odek_danger::{
    Action, DangerClass, DangerPolicy, Decision, NonInteractive, PolicySettings, denial_output, denylist_matches,
};

fn policy(settings: PolicySettings) -> DangerPolicy {
    DangerPolicy::new(settings)
}

fn denied(decision: &Decision) -> bool {
    matches!(decision, Decision::Deny { .. })
}

#[test]
fn table_defaults_interactive() {
    use DangerClass::*;
    let policy = DangerPolicy::default();
    for class in [Safe, LocalWrite] {
        assert_eq!(policy.decide(class, "x", true, false), Decision::Allow, "{class}");
    }
    for class in [Install, NetworkEgress, CodeExecution, SystemWrite, Persistence, UnreadExec] {
        assert_eq!(policy.decide(class, "x", true, false), Decision::Prompt, "{class}");
        assert_eq!(policy.decide(class, "x", true, true), Decision::Allow, "{class} approved");
    }
    for class in [Unknown, Destructive, Blocked] {
        assert!(denied(&policy.decide(class, "x", true, true)), "{class}");
    }
}

#[test]
fn non_interactive_modes() {
    use DangerClass::*;
    let mut settings = PolicySettings::default();
    // Make `safe` a prompt class so read_only's "safe proceeds" is visible.
    settings.classes.insert(Safe, Action::Prompt);
    let read_only = policy(settings.clone());
    assert_eq!(read_only.decide(Safe, "ls", false, false), Decision::Allow);
    assert!(denied(&read_only.decide(Install, "pip install x", false, false)));
    assert_eq!(
        read_only.decide(LocalWrite, "touch x", false, false),
        Decision::Allow,
        "allow action needs no terminal"
    );

    settings.non_interactive = NonInteractive::Deny;
    let deny_all = policy(settings.clone());
    assert!(denied(&deny_all.decide(Safe, "ls", false, false)));
    assert!(denied(&deny_all.decide(CodeExecution, "make", false, true)));

    settings.non_interactive = NonInteractive::Allow;
    let allow_all = policy(settings);
    assert_eq!(allow_all.decide(CodeExecution, "make", false, false), Decision::Allow);
    assert!(denied(&allow_all.decide(Destructive, "rm -rf x", false, false)), "deny actions stay deny");
    assert_eq!(NonInteractive::parse("bogus"), NonInteractive::Deny);
}

#[test]
fn allowlist_beats_denylist() {
    let policy = policy(PolicySettings {
        allowlist: vec!["git push origin main".to_owned()],
        denylist: vec!["git push".to_owned()],
        ..PolicySettings::default()
    });
    assert_eq!(policy.decide(DangerClass::NetworkEgress, "git push origin main", false, false), Decision::Allow);
    assert_eq!(policy.decide(DangerClass::NetworkEgress, "  git push origin main\n", false, false), Decision::Allow);
    let other = policy.decide(DangerClass::NetworkEgress, "git push origin dev", true, true);
    assert_eq!(other, Decision::Deny { reason: "command matches denylist entry \"git push\"".to_owned() });
}

#[test]
fn allowlist_is_exact_and_lifts_class_denials() {
    let policy = policy(PolicySettings { allowlist: vec!["rm -rf build".to_owned()], ..PolicySettings::default() });
    assert_eq!(policy.decide(DangerClass::Destructive, "rm -rf build", false, false), Decision::Allow);
    assert!(denied(&policy.decide(DangerClass::Destructive, "rm -rf build2", false, false)));
    assert!(denied(&policy.decide(DangerClass::Destructive, "rm -rf build; rm -rf /", false, false)));
}

#[test]
fn max_risk_denies_higher_ranks() {
    let policy = policy(PolicySettings {
        max_risk: Some(DangerClass::LocalWrite),
        non_interactive: NonInteractive::Allow,
        ..PolicySettings::default()
    });
    assert_eq!(policy.decide(DangerClass::LocalWrite, "touch x", false, false), Decision::Allow);
    assert_eq!(
        policy.decide(DangerClass::Install, "pip install x", true, true),
        Decision::Deny { reason: "install is above max_risk local_write".to_owned() }
    );
    assert!(denied(&policy.decide(DangerClass::Blocked, "x", true, true)));
}

#[test]
fn class_actions_and_default_action() {
    let mut classes = BTreeMap::new();
    classes.insert(DangerClass::Install, Action::Allow);
    let policy = policy(PolicySettings { classes, default_action: Some(Action::Deny), ..PolicySettings::default() });
    assert_eq!(policy.decide(DangerClass::Install, "pip install x", false, false), Decision::Allow);
    assert_eq!(
        policy.decide(DangerClass::Safe, "ls", true, true),
        Decision::Deny { reason: "safe is denied".to_owned() }
    );
}

#[test]
fn hard_denials_beat_the_allowlist() {
    let policy = policy(PolicySettings {
        allowlist: vec!["curl https://example.com".to_owned()],
        hard_deny: [DangerClass::NetworkEgress].into_iter().collect(),
        ..PolicySettings::default()
    });
    assert!(denied(&policy.decide(DangerClass::NetworkEgress, "curl https://example.com", true, true)));
}

#[test]
fn denial_marker_exact_text() {
    assert_eq!(
        denial_output("rm -rf removes files recursively", DangerClass::Destructive),
        "operation denied by configuration: rm -rf removes files recursively (risk: destructive)"
    );
}

#[test]
fn denylist_cannot_be_bypassed_red() {
    let entry = "rm -rf";
    for command in [
        "rm -rf build",
        "rm   -rf    build",
        "  rm\t-rf build",
        "FOO=1 rm -rf build",
        "FOO=1 BAR=2 rm -rf build",
        "env FOO=1 rm -rf build",
        "sudo rm -rf build",
        "nohup rm -rf build",
        "time rm -rf build",
        "timeout 10 rm -rf build",
        "/bin/rm -rf build",
        "'rm' \"-rf\" build",
        "\\rm -rf build",
        "ls; rm -rf build",
        "ls && rm -rf build",
        "true | rm -rf build",
        "echo $(rm -rf build)",
        "(rm -rf build)",
        "bash -c 'rm -rf build'",
        "eval 'rm -rf build'",
        "ls | xargs rm -rf",
    ] {
        assert!(denylist_matches(entry, command), "{command:?} slipped past {entry:?}");
    }
    assert!(!denylist_matches(entry, "ls -la"));
    assert!(!denylist_matches("", "anything"));
    let policy = policy(PolicySettings {
        denylist: vec!["git push".to_owned()],
        non_interactive: NonInteractive::Allow,
        ..PolicySettings::default()
    });
    assert!(denied(&policy.decide(DangerClass::NetworkEgress, "GIT_TRACE=1   git   push", false, false)));
}

/// The denylist saw a simple command as written, so a shell keyword in front of it hid the
/// program from every entry (`{ rm -rf x; }`, `! rm`, `if rm …; then`, `do rm …`).
#[test]
fn denylist_sees_commands_after_shell_keywords_red() {
    for command in [
        "{ rm -rf x; }",
        "! rm -rf x",
        "if rm -rf x; then :; fi",
        "while rm -rf x; do :; done",
        "for f in a; do rm -rf $f; done",
        "true && { sudo rm -rf x; }",
        "if true; then FOO=1 /bin/rm -rf x; fi",
    ] {
        assert!(denylist_matches("rm -rf", command), "{command:?} slipped past the denylist");
    }
}

/// Commands more than 12 groups or substitutions deep were not looked at (the limit meant for
/// `bash -c` inside `bash -c` counted every level), though the classifier walks them.
#[test]
fn denylist_sees_commands_in_deep_groups_red() {
    let grouped = format!("{}rm -rf x{}", "(".repeat(20), ")".repeat(20));
    assert!(denylist_matches("rm", &grouped), "{grouped:?}");
    let substituted = format!("echo {}rm -rf x{}", "$(".repeat(20), ")".repeat(20));
    assert!(denylist_matches("rm", &substituted), "{substituted:?}");
    assert!(denylist_matches("rm", "bash -c \"bash -c 'rm -rf x'\""));
}
