//! Recovery and budget hints (spec `loop-and-sessions.md` §5): the runtime's notes to the model
//! after a batch, decided from each call's real outcome — never from scanning output text for
//! failure. Only the prefixes are exact; the guidance after them is ours.

use std::collections::HashMap;
use std::time::Duration;

/// Consecutive failures of one tool that trigger an error-streak hint.
const ERROR_STREAK: u32 = 3;
/// Consecutive identical successful calls that trigger a stall hint.
const STALL_STREAK: u32 = 3;
/// Budget-hint thresholds in percent.
const BUDGET_THRESHOLDS: [u32; 3] = [50, 75, 90];

/// The per-run state of the hints.
#[derive(Debug, Default)]
pub(crate) struct HintTracker {
    failures: HashMap<String, u32>,
    /// The last successful call (tool, arguments) and how many times in a row it was made.
    repeat: Option<(String, String, u32)>,
    budget_fired: [bool; 3],
}

impl HintTracker {
    /// Records one call of a batch, in call order; returns a hint when one fires. `output` is
    /// the (failed) output text the error-streak variants are tested on.
    pub(crate) fn observe_call(&mut self, tool: &str, arguments: &str, failed: bool, output: &str) -> Option<String> {
        if failed {
            self.repeat = None;
            let count = self.failures.entry(tool.to_owned()).or_insert(0);
            *count += 1;
            if *count < ERROR_STREAK {
                return None;
            }
            *count = 0;
            return Some(error_streak_hint(tool, output));
        }
        self.failures.remove(tool);
        let count = match &mut self.repeat {
            Some((last_tool, last_arguments, count)) if last_tool == tool && last_arguments == arguments => {
                *count += 1;
                *count
            }
            _ => {
                self.repeat = Some((tool.to_owned(), arguments.to_owned(), 1));
                1
            }
        };
        if count < STALL_STREAK {
            return None;
        }
        self.repeat = None;
        Some(format!(
            "⚠️ You called \"{tool}\" with identical arguments {STALL_STREAK} times in a row and got the same kind of result. Repeating it will not help: change your approach, use a different tool or different arguments, or conclude with what you have."
        ))
    }

    /// The budget hints of a sub-agent with `announce_budget`: each threshold at most once per
    /// run, by iterations first, else by wall clock against the deadline.
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "spec §5 budget hints: implemented and tested here, not yet called by the loop")
    )]
    fn budget_hint(
        &mut self,
        completed_iterations: u32,
        max_iterations: u32,
        elapsed: Duration,
        deadline: Option<Duration>,
    ) -> Option<String> {
        let mut fired = None;
        for (index, threshold) in BUDGET_THRESHOLDS.iter().enumerate() {
            if self.budget_fired[index] {
                continue;
            }
            let by_iterations =
                u64::from(completed_iterations) * 100 >= u64::from(*threshold) * u64::from(max_iterations);
            let detail = if by_iterations {
                Some(format!("{completed_iterations}/{max_iterations} iterations"))
            } else {
                deadline
                    .filter(|total| elapsed.as_secs_f64() * 100.0 >= f64::from(*threshold) * total.as_secs_f64())
                    .map(|total| format!("{} of {} elapsed", format_duration(elapsed), format_duration(total)))
            };
            if let Some(detail) = detail {
                self.budget_fired[index] = true;
                fired = Some(budget_hint_text(*threshold, &detail));
            }
        }
        fired
    }
}

fn budget_hint_text(threshold: u32, detail: &str) -> String {
    match threshold {
        50 => format!("[budget: 50% used ({detail}) — stay on plan; defer optional work.]"),
        75 => format!(
            "[budget: 75% used ({detail}) — begin consolidating findings; wrap up within the remaining budget.]"
        ),
        _ => format!("[budget: 90% used ({detail}) — final stretch: deliver your report with the next response.]"),
    }
}

/// The first matching variant of §5's error-streak hint.
fn error_streak_hint(tool: &str, output: &str) -> String {
    let lower = output.to_lowercase();
    if lower.contains("is a directory") {
        format!(
            "⚠️ Tool \"{tool}\" keeps failing because the path is a directory. List the directory first (search_files with mode \"files\", or `ls` through shell) and then open a file inside it."
        )
    } else if tool == "shell" && lower.contains("exit status") {
        "⚠️ Shell command failed repeatedly. Break the work into simpler commands, check the error output above, or read the relevant files instead of retrying the same command.".to_owned()
    } else if lower.contains("not found") || lower.contains("no such file") {
        format!(
            "⚠️ Tool \"{tool}\" cannot find the path. Search for it first (search_files with mode \"files\") instead of guessing paths."
        )
    } else if lower.contains("binary") {
        format!(
            "⚠️ Tool \"{tool}\" cannot read binary files. Use a shell command that summarises the file (for example `file` or `xxd | head`) instead."
        )
    } else {
        format!(
            "⚠️ Tool \"{tool}\" keeps failing. Read the error messages above and try a different tool or a different approach instead of repeating the call."
        )
    }
}

/// Durations as `45s`, `1m30s`, `2h5m0s`.
pub fn format_duration(duration: Duration) -> String {
    let total = duration.as_secs();
    let (hours, minutes, seconds) = (total / 3600, (total % 3600) / 60, total % 60);
    match (hours, minutes) {
        (0, 0) => format!("{seconds}s"),
        (0, _) => format!("{minutes}m{seconds}s"),
        _ => format!("{hours}h{minutes}m{seconds}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn third_failure_of_a_tool_hints_once_and_resets() {
        let mut hints = HintTracker::default();
        assert_eq!(hints.observe_call("read_file", "{}", true, "error: no such file"), None);
        assert_eq!(hints.observe_call("read_file", "{}", true, "error: no such file"), None);
        let hint = hints.observe_call("read_file", "{}", true, "error: no such file").unwrap();
        assert!(hint.starts_with("⚠️ Tool \"read_file\" cannot find the path"), "{hint}");
        assert_eq!(hints.observe_call("read_file", "{}", true, "error: x"), None);
    }

    #[test]
    fn a_success_resets_the_error_streak() {
        let mut hints = HintTracker::default();
        hints.observe_call("shell", "a", true, "error: exit status 1");
        hints.observe_call("shell", "b", true, "error: exit status 1");
        hints.observe_call("shell", "c", false, "ok");
        assert_eq!(hints.observe_call("shell", "d", true, "error: exit status 1"), None);
    }

    #[test]
    fn error_variants_match_in_order() {
        let cases = [
            ("read_file", "error: /x is a directory (not found)", "⚠️ Tool \"read_file\" keeps failing"),
            ("shell", "error: exit status 2: not found", "⚠️ Shell command failed repeatedly"),
            ("patch", "error: old_string not found", "⚠️ Tool \"patch\" cannot find the path"),
            ("read_file", "error: binary file", "⚠️ Tool \"read_file\" cannot read binary files"),
            ("x__y", "error: boom", "⚠️ Tool \"x__y\" keeps failing"),
        ];
        for (tool, output, prefix) in cases {
            let mut hints = HintTracker::default();
            hints.observe_call(tool, "", true, output);
            hints.observe_call(tool, "", true, output);
            let hint = hints.observe_call(tool, "", true, output).unwrap();
            assert!(hint.starts_with(prefix), "{tool} {output}: {hint}");
        }
    }

    #[test]
    fn identical_successful_calls_stall_on_the_third() {
        let mut hints = HintTracker::default();
        assert_eq!(hints.observe_call("shell", "{\"command\":\"ls\"}", false, ""), None);
        assert_eq!(hints.observe_call("shell", "{\"command\":\"ls\"}", false, ""), None);
        let hint = hints.observe_call("shell", "{\"command\":\"ls\"}", false, "").unwrap();
        assert!(hint.starts_with("⚠️ You called \"shell\" with identical arguments 3 times in a row"));
        assert_eq!(hints.observe_call("shell", "{\"command\":\"ls\"}", false, ""), None);
    }

    #[test]
    fn a_different_or_failed_call_resets_the_stall() {
        let mut hints = HintTracker::default();
        hints.observe_call("shell", "a", false, "");
        hints.observe_call("shell", "a", false, "");
        hints.observe_call("shell", "b", false, "");
        assert_eq!(hints.observe_call("shell", "a", false, ""), None);
        hints.observe_call("shell", "a", true, "error");
        assert_eq!(hints.observe_call("shell", "a", false, ""), None);
    }

    #[test]
    fn budget_hints_fire_once_each() {
        let mut hints = HintTracker::default();
        assert_eq!(hints.budget_hint(4, 10, Duration::ZERO, None), None);
        assert_eq!(
            hints.budget_hint(5, 10, Duration::ZERO, None).unwrap(),
            "[budget: 50% used (5/10 iterations) — stay on plan; defer optional work.]"
        );
        assert_eq!(hints.budget_hint(5, 10, Duration::ZERO, None), None);
        let by_clock = hints.budget_hint(5, 10, Duration::from_secs(80), Some(Duration::from_secs(100))).unwrap();
        assert!(by_clock.starts_with("[budget: 75% used (1m20s of 1m40s elapsed)"), "{by_clock}");
    }

    #[test]
    fn durations_render_like_go() {
        assert_eq!(format_duration(Duration::from_secs(45)), "45s");
        assert_eq!(format_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(format_duration(Duration::from_secs(7500)), "2h5m0s");
    }
}
