//! The danger policy (spec `loop-and-sessions.md` §11, `config.md` §8): what the `dangerous`
//! configuration does with a class and a command — hard denials, the allowlist, the denylist,
//! `max_risk`, then the class action and `non_interactive`. Start at [`DangerPolicy::decide`].

use std::collections::{BTreeMap, BTreeSet};

use crate::class::{Action, DangerClass, NonInteractive};
use crate::command_class::command_forms;

/// The `dangerous` configuration (plus what profiles and sub-agent trust add).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicySettings {
    /// `dangerous.classes`.
    pub classes: BTreeMap<DangerClass, Action>,
    /// `dangerous.action`: the action of classes not in `classes` (else the table default).
    pub default_action: Option<Action>,
    /// Exact command strings that are always allowed.
    pub allowlist: Vec<String>,
    /// Prefix / token-prefix entries that are always denied (unless allowlisted).
    pub denylist: Vec<String>,
    pub non_interactive: NonInteractive,
    /// Deny every class ranked above this one.
    pub max_risk: Option<DangerClass>,
    /// Classes denied before the allowlist is even consulted: the untrusted sub-agent denials of
    /// `subagents.md` §3, which a profile's allowlist must not lift.
    pub hard_deny: BTreeSet<DangerClass>,
}

/// What the policy says about one operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny {
        reason: String,
    },
    /// Needs the user's approval (interactive, not yet approved). The loop's batch gate asks
    /// before running; a tool that sees `Prompt` was not approved and denies.
    Prompt,
}

/// The danger policy: §11 applied to a class and a command.
#[derive(Debug, Clone, Default)]
pub struct DangerPolicy {
    settings: PolicySettings,
}

impl DangerPolicy {
    pub fn new(settings: PolicySettings) -> DangerPolicy {
        DangerPolicy { settings }
    }

    pub fn settings(&self) -> &PolicySettings {
        &self.settings
    }

    /// The configured action of a class: `classes`, else `action`, else the table default.
    pub fn action_for(&self, class: DangerClass) -> Action {
        self.settings.classes.get(&class).copied().or(self.settings.default_action).unwrap_or(class.default_action())
    }

    /// §11, in order: hard (trust) denials; the allowlist (exact command) allows; a denylist
    /// match denies; `max_risk` denies higher-ranked classes; then the class action, where
    /// `prompt` becomes allow (interactive, approved), [`Decision::Prompt`] (interactive, not
    /// approved) or the `non_interactive` rule (no terminal).
    pub fn decide(&self, class: DangerClass, command: &str, interactive: bool, approved: bool) -> Decision {
        if self.settings.hard_deny.contains(&class) {
            return deny(format!("{class} is not allowed in this context"));
        }
        if self.is_allowlisted(command) {
            return Decision::Allow;
        }
        if let Some(entry) = self.denylist_match(command) {
            return deny(format!("command matches denylist entry \"{entry}\""));
        }
        if let Some(cap) = self.settings.max_risk
            && exceeds_max_risk(class, cap)
        {
            return deny(format!("{class} is above max_risk {cap}"));
        }
        match self.action_for(class) {
            Action::Allow => Decision::Allow,
            Action::Deny => deny(format!("{class} is denied")),
            Action::Prompt if interactive && approved => Decision::Allow,
            Action::Prompt if interactive => Decision::Prompt,
            Action::Prompt => self.apply_non_interactive(class),
        }
    }

    /// `allowlist`: exact command match (surrounding whitespace ignored).
    pub fn is_allowlisted(&self, command: &str) -> bool {
        let command = command.trim();
        !command.is_empty() && self.settings.allowlist.iter().any(|entry| entry.trim() == command)
    }

    /// The first `denylist` entry the command matches (see [`denylist_matches`]).
    pub fn denylist_match(&self, command: &str) -> Option<&str> {
        self.settings.denylist.iter().map(String::as_str).find(|entry| denylist_matches(entry, command))
    }

    /// `non_interactive`: `read_only` lets `safe` through, `deny` denies, `allow` allows.
    fn apply_non_interactive(&self, class: DangerClass) -> Decision {
        match self.settings.non_interactive {
            NonInteractive::Allow => Decision::Allow,
            NonInteractive::ReadOnly if class == DangerClass::Safe => Decision::Allow,
            NonInteractive::ReadOnly => deny(format!("{class} needs approval and there is no terminal (read_only)")),
            NonInteractive::Deny => deny(format!("{class} needs approval and there is no terminal")),
        }
    }
}

fn deny(reason: String) -> Decision {
    Decision::Deny { reason }
}

/// `max_risk` denies every class ranked above the cap. `unread_exec` has no rank and is not
/// capped (its own action applies); a cap without a rank lets only `safe` through.
fn exceeds_max_risk(class: DangerClass, cap: DangerClass) -> bool {
    match (class.rank(), cap.rank()) {
        (Some(rank), Some(cap_rank)) => rank > cap_rank,
        (Some(rank), None) => rank > 1,
        (None, _) => false,
    }
}

/// `operation denied by configuration: <reason> (risk: <class>)`.
pub fn denial_output(reason: &str, class: DangerClass) -> String {
    format!("operation denied by configuration: {reason} (risk: {class})")
}

/// Whether a denylist entry matches a command, by string prefix or token prefix, on the raw
/// line with whitespace collapsed and on every simple command inside it (after `;`, `&&`, `|`,
/// inside `$( … )` and groups, at any depth), with environment assignments, the shell keywords
/// that lead into a command (`{`, `!`, `if`, `do`, …) and wrappers (`sudo`, `env`, `nohup`,
/// `timeout`, …) stripped and the program also tried by its base name. Extra spaces, quotes,
/// `FOO=1` prefixes or `/bin/` paths therefore do not slip past an entry.
pub fn denylist_matches(entry: &str, command: &str) -> bool {
    let entry_tokens = shlex::split(entry).unwrap_or_else(|| entry.split_whitespace().map(str::to_owned).collect());
    if entry_tokens.is_empty() {
        return false;
    }
    let entry_text = entry_tokens.join(" ");
    let raw: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
    let mut candidates = vec![raw];
    candidates.extend(command_forms(command));
    candidates.iter().any(|tokens| tokens.starts_with(&entry_tokens) || tokens.join(" ").starts_with(&entry_text))
}
