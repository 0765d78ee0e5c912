//! The `planning` section (spec `config.md` §8, `plan.md` §9): whether the `plan` tool is
//! registered and its two caps. Start at [`merge_planning`].
//!
//! Range rule: absent or `0` = the default; any other value outside the range is clamped into it
//! with a warning. Project rule (§9): the project may turn planning off or lower a cap, never the
//! reverse; a project cap above the global one (the default when the global file sets none) is
//! clamped to it with a warning, in the words of the `limits` clamp.

use serde::Deserialize;

use super::PROJECT_DISPLAY;

/// Default `planning.max_steps`.
pub const DEFAULT_PLAN_MAX_STEPS: u32 = 12;
/// Allowed `planning.max_steps` (steps).
pub const PLAN_MAX_STEPS_RANGE: (u32, u32) = (1, 50);
/// Default `planning.max_render_chars` (runes).
pub const DEFAULT_PLAN_MAX_RENDER_CHARS: u32 = 2000;
/// Allowed `planning.max_render_chars` (runes).
pub const PLAN_MAX_RENDER_CHARS_RANGE: (u32, u32) = (200, 8000);

/// `planning` as written in one file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct PlanningFile {
    enabled: Option<bool>,
    max_steps: Option<i64>,
    max_render_chars: Option<i64>,
}

/// The resolved planning settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanningConfig {
    /// Register the `plan` tool.
    pub enabled: bool,
    /// Most steps a plan may have (1..=50).
    pub max_steps: u32,
    /// Longest rendered plan message, in runes (200..=8000).
    pub max_render_chars: u32,
}

impl Default for PlanningConfig {
    fn default() -> Self {
        PlanningConfig {
            enabled: true,
            max_steps: DEFAULT_PLAN_MAX_STEPS,
            max_render_chars: DEFAULT_PLAN_MAX_RENDER_CHARS,
        }
    }
}

/// Merges the global and project `planning` over the defaults.
pub(crate) fn merge_planning(
    global_display: &str,
    global: Option<&PlanningFile>,
    project: Option<&PlanningFile>,
    warnings: &mut Vec<String>,
) -> PlanningConfig {
    let mut planning = PlanningConfig::default();
    if let Some(global) = global {
        planning.enabled = global.enabled.unwrap_or(true);
        planning.max_steps = clamp_plan_cap(
            global_display,
            "max_steps",
            global.max_steps,
            DEFAULT_PLAN_MAX_STEPS,
            PLAN_MAX_STEPS_RANGE,
            warnings,
        );
        planning.max_render_chars = clamp_plan_cap(
            global_display,
            "max_render_chars",
            global.max_render_chars,
            DEFAULT_PLAN_MAX_RENDER_CHARS,
            PLAN_MAX_RENDER_CHARS_RANGE,
            warnings,
        );
    }
    if let Some(project) = project {
        apply_project_planning(&mut planning, project, warnings);
    }
    planning
}

/// §9 for `planning`: opt out or lower only.
fn apply_project_planning(planning: &mut PlanningConfig, project: &PlanningFile, warnings: &mut Vec<String>) {
    match project.enabled {
        Some(false) => planning.enabled = false,
        Some(true) if !planning.enabled => warnings
            .push(format!("{PROJECT_DISPLAY}: planning.enabled cannot enable planning the operator disabled; ignored")),
        _ => {}
    }
    let caps = [
        ("max_steps", project.max_steps, &mut planning.max_steps, PLAN_MAX_STEPS_RANGE),
        ("max_render_chars", project.max_render_chars, &mut planning.max_render_chars, PLAN_MAX_RENDER_CHARS_RANGE),
    ];
    for (key, value, cap, range) in caps {
        let global = *cap;
        let wanted = clamp_plan_cap(PROJECT_DISPLAY, key, value, global, range, warnings);
        if wanted > global {
            warnings.push(format!(
                "{PROJECT_DISPLAY}: planning.{key} {wanted} exceeds the global limit {global}; clamped to {global}"
            ));
        } else {
            *cap = wanted;
        }
    }
}

/// The range rule for one cap: absent or `0` ⇒ `default`; otherwise clamped into `range`, with a
/// warning when the value moved.
fn clamp_plan_cap(
    display: &str,
    key: &str,
    value: Option<i64>,
    default: u32,
    (min, max): (u32, u32),
    warnings: &mut Vec<String>,
) -> u32 {
    let Some(value) = value.filter(|&value| value != 0) else {
        return default;
    };
    let clamped = value.clamp(i64::from(min), i64::from(max));
    if clamped != value {
        warnings.push(format!("{display}: planning.{key} {value} is outside {min}..{max}; clamped to {clamped}"));
    }
    u32::try_from(clamped).unwrap_or(default)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(enabled: Option<bool>, max_steps: Option<i64>, max_render_chars: Option<i64>) -> PlanningFile {
        PlanningFile { enabled, max_steps, max_render_chars }
    }

    #[test]
    fn global_caps_are_clamped_and_zero_is_default() {
        let mut warnings = Vec::new();
        let planning =
            merge_planning("/h/.odek/config.json", Some(&file(None, Some(80), Some(0))), None, &mut warnings);
        assert_eq!(planning, PlanningConfig { enabled: true, max_steps: 50, max_render_chars: 2000 });
        let planning =
            merge_planning("/h/.odek/config.json", Some(&file(None, Some(-3), Some(100))), None, &mut warnings);
        assert_eq!(planning, PlanningConfig { enabled: true, max_steps: 1, max_render_chars: 200 });
        assert_eq!(
            warnings,
            vec![
                "/h/.odek/config.json: planning.max_steps 80 is outside 1..50; clamped to 50",
                "/h/.odek/config.json: planning.max_steps -3 is outside 1..50; clamped to 1",
                "/h/.odek/config.json: planning.max_render_chars 100 is outside 200..8000; clamped to 200",
            ]
        );
    }

    #[test]
    fn project_may_lower_and_opt_out() {
        let mut warnings = Vec::new();
        let planning = merge_planning("g", None, Some(&file(Some(false), Some(5), Some(500))), &mut warnings);
        assert_eq!(planning, PlanningConfig { enabled: false, max_steps: 5, max_render_chars: 500 });
        assert!(warnings.is_empty());
    }
}
