//! The operator-only `dangerous` section (spec `config.md` §8, semantics in
//! `loop-and-sessions.md` §11): per-class actions, the default action, the exact-match
//! allowlist, the prefix denylist and the non-interactive policy. This module only validates
//! and stores them; the danger policy in `odek-agent` applies them.
//!
//! Invalid values are never fatal (a wrong JSON *type* is, like every known key, §2): the spec's
//! style for operator sections is warn-and-fall-back (`budget_inherit`, a profile's `max_risk`,
//! `non_interactive` ⇒ `deny`). So an unknown class name or an invalid action is ignored with one
//! warning and the class keeps its default action from the §11 table — every default is at
//! least as strict as `prompt` for the risky classes, so a typo never widens what runs. An
//! invalid `non_interactive` falls back to `deny` as the spec says. The project file never
//! reaches this module (§9 strips `dangerous` first).

use std::collections::BTreeMap;

use odek_contract::quoting::quote;
use odek_danger::{Action, DangerClass, PolicySettings};
pub use odek_danger::{Action as DangerAction, NonInteractive};
use serde::Deserialize;

/// `dangerous` as written in the global file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct DangerousFile {
    classes: Option<BTreeMap<String, String>>,
    action: Option<String>,
    allowlist: Option<Vec<String>>,
    denylist: Option<Vec<String>>,
    non_interactive: Option<String>,
}

/// The validated `dangerous` section. `Default` is "nothing configured".
/// [`DangerousConfig::policy_settings`] hands it to the policy in `odek-agent`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DangerousConfig {
    /// Per-class overrides of the §11 default actions.
    pub classes: BTreeMap<DangerClass, DangerAction>,
    /// The action for classes not in `classes`; `None` = the §11 default of each class.
    pub action: Option<DangerAction>,
    /// Exact command strings that are always allowed (blank entries dropped).
    pub allowlist: Vec<String>,
    /// Prefix / token-prefix matches that are always denied (blank entries dropped: an empty
    /// prefix would match every command).
    pub denylist: Vec<String>,
    /// What a risky call does when nobody can be asked (`non_interactive`: deny or allow).
    pub non_interactive: NonInteractive,
}

/// A class that may cap a profile's risk: every ranked class (`unread_exec` has no rank).
pub fn parse_max_risk(name: &str) -> Option<DangerClass> {
    DangerClass::parse(name).filter(|class| *class != DangerClass::UnreadExec)
}

impl DangerousConfig {
    /// The policy settings this section configures (no `max_risk` cap, no hard denials: those
    /// come from sub-agent profiles).
    pub fn policy_settings(&self) -> PolicySettings {
        PolicySettings {
            classes: self.classes.clone(),
            default_action: self.action,
            allowlist: self.allowlist.clone(),
            denylist: self.denylist.clone(),
            non_interactive: self.non_interactive,
            ..PolicySettings::default()
        }
    }
}

/// Validates the global file's `dangerous` section, warning once per ignored value.
pub(crate) fn validate_dangerous(file: Option<&DangerousFile>, warnings: &mut Vec<String>) -> DangerousConfig {
    let Some(file) = file else {
        return DangerousConfig::default();
    };
    let mut config = DangerousConfig::default();
    for (name, action) in file.classes.iter().flatten() {
        let Some(class) = DangerClass::parse(name) else {
            warnings.push(format!("dangerous.classes: unknown danger class {}; ignored", quote(name)));
            continue;
        };
        match Action::parse(action) {
            Some(action) => {
                config.classes.insert(class, action);
            }
            None => warnings.push(format!("dangerous.classes.{name}: invalid action {}; ignored", quote(action))),
        }
    }
    if let Some(action) = file.action.as_deref().filter(|action| !action.is_empty()) {
        config.action = Action::parse(action);
        if config.action.is_none() {
            warnings.push(format!("dangerous.action: invalid action {}; ignored", quote(action)));
        }
    }
    config.allowlist = non_blank(file.allowlist.as_deref());
    config.denylist = non_blank(file.denylist.as_deref());
    config.non_interactive = non_interactive_policy(file.non_interactive.as_deref(), warnings);
    config
}

/// `non_interactive`: absent or empty = `read_only`; an invalid value means `deny` (fail closed).
fn non_interactive_policy(value: Option<&str>, warnings: &mut Vec<String>) -> NonInteractive {
    match value.unwrap_or("") {
        "" | "read_only" => NonInteractive::ReadOnly,
        "deny" => NonInteractive::Deny,
        "allow" => NonInteractive::Allow,
        other => {
            warnings.push(format!("dangerous.non_interactive: invalid value {}; using \"deny\"", quote(other)));
            NonInteractive::Deny
        }
    }
}

/// The entries of a string list that are not blank, as written.
pub(crate) fn non_blank(values: Option<&[String]>) -> Vec<String> {
    values.unwrap_or_default().iter().filter(|value| !value.trim().is_empty()).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_round_trips_and_unread_exec_is_no_max_risk() {
        assert_eq!(parse_max_risk("unread_exec"), None);
        assert_eq!(parse_max_risk("blocked"), Some(DangerClass::Blocked));
    }

    #[test]
    fn invalid_values_warn_and_fall_back() {
        let file = DangerousFile {
            classes: Some(BTreeMap::from([
                ("install".to_owned(), "allow".to_owned()),
                ("nuclear".to_owned(), "deny".to_owned()),
                ("destructive".to_owned(), "maybe".to_owned()),
            ])),
            action: Some("ALLOW".to_owned()),
            allowlist: Some(vec!["git status".to_owned(), " ".to_owned()]),
            denylist: Some(vec![String::new(), "rm -rf".to_owned()]),
            non_interactive: Some("yes".to_owned()),
        };
        let mut warnings = Vec::new();
        let config = validate_dangerous(Some(&file), &mut warnings);
        assert_eq!(config.classes, BTreeMap::from([(DangerClass::Install, DangerAction::Allow)]));
        assert_eq!(config.action, None);
        assert_eq!(config.allowlist, vec!["git status"]);
        assert_eq!(config.denylist, vec!["rm -rf"]);
        assert_eq!(config.non_interactive, NonInteractive::Deny);
        assert_eq!(
            warnings,
            vec![
                "dangerous.classes.destructive: invalid action \"maybe\"; ignored",
                "dangerous.classes: unknown danger class \"nuclear\"; ignored",
                "dangerous.action: invalid action \"ALLOW\"; ignored",
                "dangerous.non_interactive: invalid value \"yes\"; using \"deny\"",
            ]
        );
    }
}
