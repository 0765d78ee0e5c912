//! \[beyond\] The `events` section: how often a run reports that it is alive
//! (`events.heartbeat_seconds`, the interval of `run_heartbeat` events). Start at
//! [`merge_events`].
//!
//! Range rule: `0` turns heartbeats off; a negative value, a non-integer or more than a day is
//! fatal. Project rule: like a limit, a project may only make heartbeats more frequent (a value
//! above the global one, the default when the global file sets none, is clamped with a
//! warning); a project `0` inherits, so a project cannot switch off what a CI operator
//! watches for.

use serde::Deserialize;

use super::limits::MAX_DEADLINE_SECONDS;
use super::{ConfigError, PROJECT_DISPLAY};

/// Default `events.heartbeat_seconds`.
pub const DEFAULT_HEARTBEAT_SECONDS: u64 = 30;

/// `events` as written in one file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct EventsFile {
    heartbeat_seconds: Option<i64>,
}

/// The resolved `events` settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventsConfig {
    /// Seconds between two `run_heartbeat` events; `0` = none.
    pub heartbeat_seconds: u64,
}

impl Default for EventsConfig {
    fn default() -> Self {
        EventsConfig { heartbeat_seconds: DEFAULT_HEARTBEAT_SECONDS }
    }
}

/// Fails on a `heartbeat_seconds` below 0 or above a day:
/// `config <path>: events.heartbeat_seconds must be from 0 (off) to 86400 seconds, got <v>`.
pub(crate) fn check_events(path: &str, events: &EventsFile) -> Result<(), ConfigError> {
    match events.heartbeat_seconds {
        Some(value) if value < 0 || value.unsigned_abs() > MAX_DEADLINE_SECONDS => Err(ConfigError::OutOfRange {
            path: path.to_owned(),
            key: "events.heartbeat_seconds".to_owned(),
            rule: "from 0 (off) to 86400 seconds",
            value,
        }),
        _ => Ok(()),
    }
}

/// Merges the global and project `events` (both checked) over the defaults.
pub(crate) fn merge_events(
    global: Option<&EventsFile>,
    project: Option<&EventsFile>,
    warnings: &mut Vec<String>,
) -> EventsConfig {
    let global = global.and_then(|file| file.heartbeat_seconds).map_or(DEFAULT_HEARTBEAT_SECONDS, i64::unsigned_abs);
    let project = project.and_then(|file| file.heartbeat_seconds).map_or(0, i64::unsigned_abs);
    let heartbeat_seconds = match (global, project) {
        (global, 0) => global,
        // Off globally: a project may still ask for heartbeats.
        (0, project) => project,
        (global, project) if project > global => {
            warnings.push(format!(
                "{PROJECT_DISPLAY}: events.heartbeat_seconds {project} exceeds the global value {global}; clamped to {global}"
            ));
            global
        }
        (_, project) => project,
    };
    EventsConfig { heartbeat_seconds }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(seconds: i64) -> EventsFile {
        EventsFile { heartbeat_seconds: Some(seconds) }
    }

    #[test]
    fn heartbeats_default_to_30_seconds_and_0_turns_them_off() {
        let mut warnings = Vec::new();
        assert_eq!(merge_events(None, None, &mut warnings).heartbeat_seconds, 30);
        assert_eq!(merge_events(Some(&file(0)), None, &mut warnings).heartbeat_seconds, 0);
        assert_eq!(merge_events(Some(&file(5)), None, &mut warnings).heartbeat_seconds, 5);
        assert!(warnings.is_empty());
        assert_eq!(EventsConfig::default().heartbeat_seconds, 30);
    }

    #[test]
    fn a_project_may_not_turn_heartbeats_off_or_make_them_rarer_red() {
        let mut warnings = Vec::new();
        assert_eq!(merge_events(None, Some(&file(0)), &mut warnings).heartbeat_seconds, 30);
        assert_eq!(merge_events(None, Some(&file(10)), &mut warnings).heartbeat_seconds, 10);
        assert!(warnings.is_empty());
        assert_eq!(merge_events(None, Some(&file(3600)), &mut warnings).heartbeat_seconds, 30);
        assert_eq!(warnings, ["./odek.json: events.heartbeat_seconds 3600 exceeds the global value 30; clamped to 30"]);
    }

    #[test]
    fn out_of_range_values_are_fatal() {
        for (value, shown) in [(-1, "-1"), (86_401, "86401")] {
            let error = check_events("x.json", &file(value)).unwrap_err();
            assert_eq!(
                error.to_string(),
                format!("config x.json: events.heartbeat_seconds must be from 0 (off) to 86400 seconds, got {shown}")
            );
        }
        assert!(check_events("x.json", &file(0)).is_ok());
    }
}
