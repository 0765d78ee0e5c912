//! The danger classes of §11 (spec `loop-and-sessions.md`): their spellings, ranks and default
//! actions, the configured actions and `non_interactive` modes, and the [`Classification`] a
//! classifier returns. Every other module of the crate builds on these names.

/// A danger class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DangerClass {
    Safe,
    LocalWrite,
    Install,
    NetworkEgress,
    CodeExecution,
    SystemWrite,
    Persistence,
    Unknown,
    Destructive,
    Blocked,
    UnreadExec,
}

impl DangerClass {
    /// Every class, in rank order (`unread_exec`, which has no rank, last).
    pub const ALL: [DangerClass; 11] = [
        DangerClass::Safe,
        DangerClass::LocalWrite,
        DangerClass::Install,
        DangerClass::NetworkEgress,
        DangerClass::CodeExecution,
        DangerClass::SystemWrite,
        DangerClass::Persistence,
        DangerClass::Unknown,
        DangerClass::Destructive,
        DangerClass::Blocked,
        DangerClass::UnreadExec,
    ];

    /// The spec spelling (`safe`, `local_write`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            DangerClass::Safe => "safe",
            DangerClass::LocalWrite => "local_write",
            DangerClass::Install => "install",
            DangerClass::NetworkEgress => "network_egress",
            DangerClass::CodeExecution => "code_execution",
            DangerClass::SystemWrite => "system_write",
            DangerClass::Persistence => "persistence",
            DangerClass::Unknown => "unknown",
            DangerClass::Destructive => "destructive",
            DangerClass::Blocked => "blocked",
            DangerClass::UnreadExec => "unread_exec",
        }
    }

    /// The rank of the §11 table; `unread_exec` is a gate and has none.
    pub fn rank(self) -> Option<u8> {
        match self {
            DangerClass::Safe => Some(1),
            DangerClass::LocalWrite => Some(2),
            DangerClass::Install => Some(3),
            DangerClass::NetworkEgress => Some(4),
            DangerClass::CodeExecution => Some(5),
            DangerClass::SystemWrite => Some(6),
            DangerClass::Persistence => Some(7),
            DangerClass::Unknown => Some(8),
            DangerClass::Destructive => Some(9),
            DangerClass::Blocked => Some(10),
            DangerClass::UnreadExec => None,
        }
    }

    /// The exact spec spelling; anything else is `None`.
    pub fn parse(text: &str) -> Option<DangerClass> {
        DangerClass::ALL.into_iter().find(|class| class.as_str() == text)
    }

    /// The default action of the §11 table.
    pub fn default_action(self) -> Action {
        match self {
            DangerClass::Safe | DangerClass::LocalWrite => Action::Allow,
            DangerClass::Unknown | DangerClass::Destructive | DangerClass::Blocked => Action::Deny,
            DangerClass::Install
            | DangerClass::NetworkEgress
            | DangerClass::CodeExecution
            | DangerClass::SystemWrite
            | DangerClass::Persistence
            | DangerClass::UnreadExec => Action::Prompt,
        }
    }

    /// Ordering used to pick the highest class of a compound command. `unread_exec` never comes
    /// out of the classifiers; it sorts with `code_execution` (running code nobody read).
    pub fn severity(self) -> u8 {
        self.rank().unwrap_or(5)
    }
}

impl std::fmt::Display for DangerClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the configuration does with a class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Allow,
    Prompt,
    Deny,
}

impl Action {
    /// `allow` | `prompt` | `deny`.
    pub fn parse(text: &str) -> Option<Action> {
        match text {
            "allow" => Some(Action::Allow),
            "prompt" => Some(Action::Prompt),
            "deny" => Some(Action::Deny),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Prompt => "prompt",
            Action::Deny => "deny",
        }
    }
}

/// `dangerous.non_interactive`: what a `prompt` action becomes without a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NonInteractive {
    /// Only `safe` operations proceed (the default).
    #[default]
    ReadOnly,
    Deny,
    Allow,
}

impl NonInteractive {
    /// `read_only` | `deny` | `allow`; anything else is `deny` (config.md §8: invalid ⇒ deny).
    pub fn parse(text: &str) -> NonInteractive {
        match text {
            "read_only" => NonInteractive::ReadOnly,
            "allow" => NonInteractive::Allow,
            _ => NonInteractive::Deny,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            NonInteractive::ReadOnly => "read_only",
            NonInteractive::Deny => "deny",
            NonInteractive::Allow => "allow",
        }
    }
}

/// The class of one command or write and a short human reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification {
    pub class: DangerClass,
    pub reason: String,
}

impl Classification {
    pub fn new(class: DangerClass, reason: impl Into<String>) -> Classification {
        Classification { class, reason: reason.into() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_names_round_trip() {
        for class in DangerClass::ALL {
            assert_eq!(DangerClass::parse(class.as_str()), Some(class));
        }
        assert_eq!(DangerClass::parse("Safe"), None);
        assert_eq!(DangerClass::UnreadExec.rank(), None);
        assert_eq!(DangerClass::Blocked.rank(), Some(10));
    }

    #[test]
    fn non_interactive_invalid_is_deny() {
        assert_eq!(NonInteractive::parse("read_only"), NonInteractive::ReadOnly);
        assert_eq!(NonInteractive::parse("allow"), NonInteractive::Allow);
        assert_eq!(NonInteractive::parse("yes"), NonInteractive::Deny);
    }
}
