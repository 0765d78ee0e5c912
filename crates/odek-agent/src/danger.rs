//! Danger classes, the shell-command and file-write classifiers and the policy that turns a
//! class into allow / prompt / deny (spec `loop-and-sessions.md` §11, `config.md` §8).

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

/// The policy (placeholder until the tools land).
#[derive(Debug, Clone, Default)]
pub struct DangerPolicy {}

/// What the policy decided (placeholder until the tools land).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny { reason: String },
    Prompt,
}

impl DangerPolicy {
    pub fn decide(&self, _class: DangerClass, _command: &str, _interactive: bool, _approved: bool) -> Decision {
        Decision::Allow
    }
}

impl DangerClass {
    pub fn as_str(self) -> &'static str {
        "unknown"
    }
}
