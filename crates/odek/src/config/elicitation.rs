//! \[beyond\] The top-level `elicitation` and `elicitation_timeout_seconds` keys: what a face that
//! asks nobody answers an MCP server's request for input, and how long a face that asks a person
//! waits. Start at [`merge_elicitation`].
//!
//! `elicitation`: `"decline"` (the default), `"cancel"` or `"accept_defaults"` (a form with a
//! default for every required field accepted filled with its defaults alone; for CI). Another
//! word is fatal. Project rule: a project may choose `decline` or `cancel`, but
//! `accept_defaults` answers for the person, so it is the operator's alone: a project's is
//! ignored with a warning unless the global file says so too.
//!
//! `elicitation_timeout_seconds`: 1 to 86400, default 600; `0` or absent inherits; a negative
//! value or more than a day is fatal.

use odek_mcp::elicitation::{DEFAULT_ELICITATION_TIMEOUT, ElicitationPolicy};
use serde::Deserialize;

use super::limits::MAX_DEADLINE_SECONDS;
use super::{ConfigError, PROJECT_DISPLAY};

/// The two keys as written in one file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct ElicitationFile {
    elicitation: Option<String>,
    elicitation_timeout_seconds: Option<i64>,
}

/// The resolved elicitation settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElicitationConfig {
    /// What a face that asks nobody answers.
    pub policy: ElicitationPolicy,
    /// How long a person has to answer (seconds, never 0).
    pub timeout_seconds: u64,
}

impl Default for ElicitationConfig {
    fn default() -> Self {
        ElicitationConfig { policy: ElicitationPolicy::Decline, timeout_seconds: DEFAULT_ELICITATION_TIMEOUT.as_secs() }
    }
}

impl ElicitationConfig {
    /// The timeout as a duration.
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.timeout_seconds)
    }
}

/// Fails on an unknown `elicitation` word or a timeout outside 0..=86400:
/// `config <path>: elicitation must be "decline", "cancel" or "accept_defaults", got "<v>"`.
pub(crate) fn check_elicitation(path: &str, file: &ElicitationFile) -> Result<(), ConfigError> {
    if let Some(word) = file.elicitation.as_deref().filter(|word| !word.is_empty())
        && ElicitationPolicy::parse(word).is_none()
    {
        return Err(ConfigError::BadElicitation { path: path.to_owned(), value: word.to_owned() });
    }
    match file.elicitation_timeout_seconds {
        Some(value) if value < 0 || value.unsigned_abs() > MAX_DEADLINE_SECONDS => Err(ConfigError::OutOfRange {
            path: path.to_owned(),
            key: "elicitation_timeout_seconds".to_owned(),
            rule: "from 0 (the default) to 86400 seconds",
            value,
        }),
        _ => Ok(()),
    }
}

/// Merges the global and project keys (both checked) over the defaults.
pub(crate) fn merge_elicitation(
    global: &ElicitationFile,
    project: &ElicitationFile,
    warnings: &mut Vec<String>,
) -> ElicitationConfig {
    let policy_of = |file: &ElicitationFile| file.elicitation.as_deref().and_then(ElicitationPolicy::parse);
    let global_policy = policy_of(global).unwrap_or_default();
    let policy = match policy_of(project) {
        Some(ElicitationPolicy::AcceptDefaults) if global_policy != ElicitationPolicy::AcceptDefaults => {
            warnings.push(format!(
                "{PROJECT_DISPLAY}: elicitation \"accept_defaults\" is operator-only (it answers for the person) and was ignored"
            ));
            global_policy
        }
        Some(project) => project,
        None => global_policy,
    };
    let seconds = |file: &ElicitationFile| file.elicitation_timeout_seconds.filter(|&v| v > 0).map(i64::unsigned_abs);
    let timeout_seconds = seconds(project).or(seconds(global)).unwrap_or(DEFAULT_ELICITATION_TIMEOUT.as_secs());
    ElicitationConfig { policy, timeout_seconds }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(policy: Option<&str>, timeout: Option<i64>) -> ElicitationFile {
        ElicitationFile { elicitation: policy.map(str::to_owned), elicitation_timeout_seconds: timeout }
    }

    #[test]
    fn the_default_declines_within_ten_minutes() {
        let mut warnings = Vec::new();
        let merged = merge_elicitation(&file(None, None), &file(None, None), &mut warnings);
        assert_eq!(merged, ElicitationConfig { policy: ElicitationPolicy::Decline, timeout_seconds: 600 });
        assert!(warnings.is_empty());
    }

    #[test]
    fn the_project_chooses_unless_it_would_accept_for_the_person_red() {
        let mut warnings = Vec::new();
        let merged =
            merge_elicitation(&file(Some("decline"), Some(60)), &file(Some("cancel"), Some(30)), &mut warnings);
        assert_eq!(merged, ElicitationConfig { policy: ElicitationPolicy::Cancel, timeout_seconds: 30 });
        let merged = merge_elicitation(&file(None, None), &file(Some("accept_defaults"), None), &mut warnings);
        assert_eq!(merged.policy, ElicitationPolicy::Decline);
        assert_eq!(
            warnings,
            [
                "./odek.json: elicitation \"accept_defaults\" is operator-only (it answers for the person) and was ignored"
            ]
        );
        let merged = merge_elicitation(
            &file(Some("accept_defaults"), None),
            &file(Some("accept_defaults"), None),
            &mut warnings,
        );
        assert_eq!(merged.policy, ElicitationPolicy::AcceptDefaults);
        assert_eq!(warnings.len(), 1);
    }

    #[test]
    fn an_unknown_word_or_timeout_is_fatal() {
        assert_eq!(
            check_elicitation("/h/.odek/config.json", &file(Some("accept"), None)).unwrap_err().to_string(),
            "config /h/.odek/config.json: elicitation must be \"decline\", \"cancel\" or \"accept_defaults\", got \"accept\""
        );
        assert!(check_elicitation("p", &file(None, Some(-1))).is_err());
        assert!(check_elicitation("p", &file(None, Some(86_401))).is_err());
        assert!(check_elicitation("p", &file(Some(""), Some(0))).is_ok());
    }
}
