//! The plan itself (spec `plan.md` §3–§5): steps with statuses and notes, the version, and the
//! four verbs applied to it with their validation, normalisation and version rules. A failed
//! call leaves the state untouched. Start at [`PlanState::apply`].

use std::collections::HashSet;

use super::args::{PlanRequest, StepInput, UpdateInput};
use super::{MAX_ID_BYTES, MAX_TITLE_BYTES, PlanCaps, PlanError};

/// A step's status. Any transition is allowed (the plan is advisory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Pending,
    InProgress,
    Done,
    Blocked,
}

impl Status {
    /// The status as the plan tool spells it (`pending`, `in_progress`, `done`, `blocked`).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::InProgress => "in_progress",
            Status::Done => "done",
            Status::Blocked => "blocked",
        }
    }

    /// The status named exactly `text`.
    pub(crate) fn parse(text: &str) -> Option<Status> {
        match text {
            "pending" => Some(Status::Pending),
            "in_progress" => Some(Status::InProgress),
            "done" => Some(Status::Done),
            "blocked" => Some(Status::Blocked),
            _ => None,
        }
    }
}

/// One step: a short token id, a one-line title, an optional one-line note (`""` = none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub id: String,
    pub title: String,
    pub note: String,
    pub status: Status,
}

/// Aggregate counts: what plan events carry (never titles or notes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlanCounts {
    pub steps: usize,
    pub done: usize,
    pub in_progress: usize,
    pub blocked: usize,
    pub pending: usize,
}

/// One version bump, for `plan_created` / `plan_updated`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanEvent {
    Created { steps: usize, version: u64 },
    Updated { counts: PlanCounts, version: u64 },
}

/// The run's plan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum PlanState {
    /// No plan yet: nothing is rendered and no plan message is written.
    #[default]
    Empty,
    Active {
        version: u64,
        steps: Vec<Step>,
    },
    /// Restored from an all-done line: the version and the step count only (§8).
    Complete {
        version: u64,
        total: usize,
    },
}

impl PlanState {
    /// The current version; `0` before the first `create`.
    pub fn version(&self) -> u64 {
        match self {
            PlanState::Empty => 0,
            PlanState::Active { version, .. } | PlanState::Complete { version, .. } => *version,
        }
    }

    /// The steps (none for [`PlanState::Empty`] and [`PlanState::Complete`]).
    pub fn steps(&self) -> &[Step] {
        match self {
            PlanState::Active { steps, .. } => steps,
            PlanState::Empty | PlanState::Complete { .. } => &[],
        }
    }

    pub(crate) fn counts(&self) -> PlanCounts {
        match self {
            PlanState::Empty => PlanCounts::default(),
            PlanState::Complete { total, .. } => PlanCounts { steps: *total, done: *total, ..PlanCounts::default() },
            PlanState::Active { steps, .. } => count_steps(steps),
        }
    }

    /// Applies one call. `Ok(Some(event))` when the version was bumped, `Ok(None)` for `get`
    /// and no-ops; on error the state is unchanged.
    pub(crate) fn apply(&mut self, request: PlanRequest, caps: &PlanCaps) -> Result<Option<PlanEvent>, PlanError> {
        match request {
            PlanRequest::Create(steps) => self.create(&steps, caps).map(Some),
            PlanRequest::Update(updates) => self.update(&updates),
            PlanRequest::Complete(step_id) => self.complete(&step_id),
            PlanRequest::Get => Ok(None),
        }
    }

    /// `create`: replaces the whole plan at the next version; every step starts `pending`.
    fn create(&mut self, inputs: &[StepInput], caps: &PlanCaps) -> Result<PlanEvent, PlanError> {
        let steps = validate_steps(inputs, caps.max_steps)?;
        let version = self.version().saturating_add(1);
        let event = PlanEvent::Created { steps: steps.len(), version };
        *self = PlanState::Active { version, steps };
        Ok(event)
    }

    /// `update`: all entries are checked before any is applied; bumps once if anything changed.
    fn update(&mut self, updates: &[UpdateInput]) -> Result<Option<PlanEvent>, PlanError> {
        if updates.is_empty() {
            return Err(PlanError::NoUpdates);
        }
        let current = self.steps();
        let mut changes = Vec::with_capacity(updates.len());
        for (index, update) in updates.iter().enumerate() {
            let id = update.id.trim();
            let position = current
                .iter()
                .position(|step| step.id == id)
                .ok_or_else(|| PlanError::UpdateUnknownId(id.to_owned()))?;
            let status = match update.status.as_deref().map(str::trim).filter(|status| !status.is_empty()) {
                None => None,
                Some(status) => Some(
                    Status::parse(status)
                        .ok_or_else(|| PlanError::UnknownStatus { index, status: status.to_owned() })?,
                ),
            };
            let note = update.note.as_deref().map(normalize_text).filter(|note| !note.is_empty());
            changes.push((position, status, note));
        }
        let mut steps = current.to_vec();
        for (position, status, note) in changes {
            let step = &mut steps[position];
            if let Some(status) = status {
                step.status = status;
            }
            if let Some(note) = note {
                step.note = note;
            }
        }
        Ok(self.commit_if_changed(steps))
    }

    /// `complete`: marks one step done; completing a done step is a no-op.
    fn complete(&mut self, step_id: &str) -> Result<Option<PlanEvent>, PlanError> {
        let id = step_id.trim();
        let Some(position) = self.steps().iter().position(|step| step.id == id) else {
            return Err(PlanError::CompleteUnknownId(id.to_owned()));
        };
        let mut steps = self.steps().to_vec();
        steps[position].status = Status::Done;
        Ok(self.commit_if_changed(steps))
    }

    /// §5: `steps` become the plan at version + 1 only when they differ from the current steps.
    fn commit_if_changed(&mut self, steps: Vec<Step>) -> Option<PlanEvent> {
        if steps == self.steps() {
            return None;
        }
        let version = self.version().saturating_add(1);
        let counts = count_steps(&steps);
        *self = PlanState::Active { version, steps };
        Some(PlanEvent::Updated { counts, version })
    }
}

fn count_steps(steps: &[Step]) -> PlanCounts {
    let mut counts = PlanCounts { steps: steps.len(), ..PlanCounts::default() };
    for step in steps {
        match step.status {
            Status::Pending => counts.pending += 1,
            Status::InProgress => counts.in_progress += 1,
            Status::Done => counts.done += 1,
            Status::Blocked => counts.blocked += 1,
        }
    }
    counts
}

/// §4 for titles and notes: CRLF, LF and CR become a space, `—` becomes `-` (the renderer
/// reserves ` — `), surrounding whitespace is trimmed.
pub(crate) fn normalize_text(text: &str) -> String {
    text.replace("\r\n", " ").replace(['\r', '\n'], " ").replace('\u{2014}', "-").trim().to_owned()
}

/// §4: a short token — no space, tab, LF, CR, `[` or `]`.
pub(crate) fn is_token_id(id: &str) -> bool {
    !id.contains([' ', '\t', '\n', '\r', '[', ']'])
}

/// §4: the step count, then every step's checks in the table's order, step by step.
fn validate_steps(inputs: &[StepInput], max_steps: usize) -> Result<Vec<Step>, PlanError> {
    if inputs.is_empty() || inputs.len() > max_steps {
        return Err(PlanError::StepCount { max_steps, got: inputs.len() });
    }
    let mut seen = HashSet::with_capacity(inputs.len());
    let mut steps = Vec::with_capacity(inputs.len());
    for (index, input) in inputs.iter().enumerate() {
        let id = validate_step_id(index, &input.id)?;
        if !seen.insert(id.clone()) {
            return Err(PlanError::DuplicateId { index, id });
        }
        let title = validate_step_title(index, &input.title)?;
        steps.push(Step { id, title, note: normalize_text(&input.note), status: Status::Pending });
    }
    Ok(steps)
}

/// The id checks of one step: required, at most 32 bytes, a token. Returns the trimmed id.
fn validate_step_id(index: usize, raw: &str) -> Result<String, PlanError> {
    let id = raw.trim();
    if id.is_empty() {
        return Err(PlanError::IdRequired { index });
    }
    if id.len() > MAX_ID_BYTES {
        return Err(PlanError::IdTooLong { index, bytes: id.len() });
    }
    if !is_token_id(id) {
        return Err(PlanError::IdNotToken { index, id: id.to_owned() });
    }
    Ok(id.to_owned())
}

/// The title checks of one step: required after normalisation, at most 200 bytes.
fn validate_step_title(index: usize, raw: &str) -> Result<String, PlanError> {
    let title = normalize_text(raw);
    if title.is_empty() {
        return Err(PlanError::TitleRequired { index });
    }
    if title.len() > MAX_TITLE_BYTES {
        return Err(PlanError::TitleTooLong { index, bytes: title.len() });
    }
    Ok(title)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::args::decode_plan_request;

    fn run(state: &mut PlanState, arguments: &str) -> Result<Option<PlanEvent>, PlanError> {
        state.apply(decode_plan_request(arguments)?, &PlanCaps::default())
    }

    fn created(titles: &[&str]) -> PlanState {
        let mut state = PlanState::default();
        let steps: Vec<String> = titles.iter().map(|title| serde_json::json!(title).to_string()).collect();
        run(&mut state, &format!(r#"{{"verb":"create","steps":[{}]}}"#, steps.join(","))).unwrap();
        state
    }

    fn error(state: &mut PlanState, arguments: &str) -> String {
        let before = state.clone();
        let err = run(state, arguments).unwrap_err().to_string();
        assert_eq!(*state, before, "a failed call changed the state");
        err
    }

    #[test]
    fn normalisation_joins_lines_replaces_em_dashes_and_trims() {
        assert_eq!(normalize_text("  a\r\nb\nc\rd — e\u{2014}f \t"), "a b c d - e-f");
        assert_eq!(normalize_text("\r\n \n"), "");
    }

    #[test]
    fn create_starts_pending_at_version_one_and_replans_continue_the_sequence() {
        let mut state = PlanState::default();
        let event = run(&mut state, r#"{"verb":"create","steps":[{"id":" a ","title":" One\nline ","note":"x—y"}]}"#);
        assert_eq!(event, Ok(Some(PlanEvent::Created { steps: 1, version: 1 })));
        assert_eq!(
            state.steps(),
            [Step { id: "a".into(), title: "One line".into(), note: "x-y".into(), status: Status::Pending }]
        );
        let event = run(&mut state, r#"{"verb":"create","steps":["p","q"]}"#);
        assert_eq!(event, Ok(Some(PlanEvent::Created { steps: 2, version: 2 })));
        assert_eq!(state.version(), 2);
    }

    #[test]
    fn step_count_is_checked_first() {
        let mut state = PlanState::default();
        assert_eq!(error(&mut state, r#"{"verb":"create","steps":[]}"#), "plan: create wants 1..12 steps, got 0");
        let many: Vec<String> = (0..13).map(|i| format!("\"t{i}\"")).collect();
        assert_eq!(
            error(&mut state, &format!(r#"{{"verb":"create","steps":[{}]}}"#, many.join(","))),
            "plan: create wants 1..12 steps, got 13"
        );
        let caps = PlanCaps::new(2, 2000);
        let request = decode_plan_request(r#"{"verb":"create","steps":["a","b","c"]}"#).unwrap();
        assert_eq!(state.apply(request, &caps).unwrap_err().to_string(), "plan: create wants 1..2 steps, got 3");
    }

    #[test]
    fn every_step_error_has_the_exact_text() {
        let mut state = created(&["keep"]);
        let cases = [
            (r#"[{"id":"  ","title":"t"}]"#, "plan: step[0]: id is required"),
            (r#"[{"title":"t"}]"#, "plan: step[0]: id is required"),
            (
                r#"[{"id":"a","title":"t"},{"id":"abcdefghijklmnopqrstuvwxyz0123456","title":"t"}]"#,
                "plan: step[1]: id is too long (33 > 32 chars)",
            ),
            (
                r#"[{"id":"a b","title":"t"}]"#,
                "plan: step[0]: id \"a b\" must be a short token without whitespace or brackets",
            ),
            (
                r#"[{"id":"a\tb","title":"t"}]"#,
                "plan: step[0]: id \"a\\tb\" must be a short token without whitespace or brackets",
            ),
            (
                r#"[{"id":"[x]","title":"t"}]"#,
                "plan: step[0]: id \"[x]\" must be a short token without whitespace or brackets",
            ),
            (r#"[{"id":"a","title":"t"},{"id":" a","title":"u"}]"#, "plan: step[1]: duplicate step id \"a\""),
            (r#"[{"id":"a","title":" \r\n "}]"#, "plan: step[0]: title is required"),
            (r#"[{"id":"a"}]"#, "plan: step[0]: title is required"),
        ];
        for (steps, text) in cases {
            assert_eq!(error(&mut state, &format!(r#"{{"verb":"create","steps":{steps}}}"#)), text, "{steps}");
        }
        let long = "é".repeat(101);
        assert_eq!(
            error(&mut state, &format!(r#"{{"verb":"create","steps":[{{"id":"a","title":"{long}"}}]}}"#)),
            "plan: step[0]: title is too long (202 > 200 chars)"
        );
        let exact = "x".repeat(200);
        assert!(run(&mut state, &format!(r#"{{"verb":"create","steps":[{{"id":"a","title":"{exact}"}}]}}"#)).is_ok());
        let id = "i".repeat(32);
        assert!(run(&mut state, &format!(r#"{{"verb":"create","steps":[{{"id":"{id}","title":"t"}}]}}"#)).is_ok());
    }

    #[test]
    fn step_checks_run_step_by_step_in_table_order() {
        let mut state = PlanState::default();
        // Step 0's bad title is reported before step 1's bad id.
        assert_eq!(
            error(&mut state, r#"{"verb":"create","steps":[{"id":"a","title":""},{"id":"","title":"t"}]}"#),
            "plan: step[0]: title is required"
        );
        // Within a step, the id rules come before the title rules.
        assert_eq!(
            error(&mut state, r#"{"verb":"create","steps":[{"id":"a b","title":""}]}"#),
            "plan: step[0]: id \"a b\" must be a short token without whitespace or brackets"
        );
    }

    #[test]
    fn update_errors_are_exact_and_all_or_nothing() {
        let mut state = created(&["One", "Two"]);
        assert_eq!(error(&mut state, r#"{"verb":"update","updates":[]}"#), "plan: update: no updates given");
        assert_eq!(
            error(
                &mut state,
                r#"{"verb":"update","updates":[{"id":"s1","status":"done"},{"id":"s9","status":"done"}]}"#
            ),
            "plan: update: unknown step id \"s9\""
        );
        assert_eq!(
            error(
                &mut state,
                r#"{"verb":"update","updates":[{"id":"s1","status":"done"},{"id":"s2","status":"finished"}]}"#
            ),
            "plan: update: step[1]: unknown status \"finished\""
        );
        assert_eq!(state.version(), 1);
        assert!(state.steps().iter().all(|step| step.status == Status::Pending));
        let mut empty = PlanState::default();
        assert_eq!(
            error(&mut empty, r#"{"verb":"update","updates":[{"id":"s1","status":"done"}]}"#),
            "plan: update: unknown step id \"s1\""
        );
    }

    #[test]
    fn update_bumps_once_per_call_and_counts_the_result() {
        let mut state = created(&["One", "Two", "Three"]);
        let event = run(
            &mut state,
            r#"{"verb":"update","updates":[{"id":"s1","status":"done"},{"id":"s2","status":"in_progress"},{"id":"s3","status":"blocked","note":"waiting"}]}"#,
        );
        let counts = PlanCounts { steps: 3, done: 1, in_progress: 1, blocked: 1, pending: 0 };
        assert_eq!(event, Ok(Some(PlanEvent::Updated { counts, version: 2 })));
        assert_eq!(state.steps()[2].note, "waiting");
    }

    #[test]
    fn no_ops_do_not_bump_and_notes_follow_the_rules() {
        let mut state = created(&["One"]);
        assert_eq!(run(&mut state, r#"{"verb":"update","updates":[{"id":"s1","status":"pending"}]}"#), Ok(None));
        // A note-only change bumps with unchanged counts.
        let counts = PlanCounts { steps: 1, pending: 1, ..PlanCounts::default() };
        assert_eq!(
            run(&mut state, r#"{"verb":"update","updates":[{"id":"s1","note":"n1"}]}"#),
            Ok(Some(PlanEvent::Updated { counts, version: 2 }))
        );
        // The same note, an empty note or a blank note change nothing; an empty note never clears.
        for note in ["n1", "", " \n "] {
            let arguments =
                format!(r#"{{"verb":"update","updates":[{{"id":"s1","note":"{}"}}]}}"#, note.escape_default());
            assert_eq!(run(&mut state, &arguments), Ok(None), "{note:?}");
        }
        assert_eq!(state.steps()[0].note, "n1");
        assert_eq!(state.version(), 2);
    }

    #[test]
    fn complete_marks_done_once() {
        let mut state = created(&["One", "Two"]);
        let counts = PlanCounts { steps: 2, done: 1, pending: 1, ..PlanCounts::default() };
        assert_eq!(
            run(&mut state, r#"{"verb":"complete","step_id":" s1 "}"#),
            Ok(Some(PlanEvent::Updated { counts, version: 2 }))
        );
        assert_eq!(run(&mut state, r#"{"verb":"complete","step_id":"s1"}"#), Ok(None));
        assert_eq!(
            error(&mut state, r#"{"verb":"complete","step_id":"s7"}"#),
            "plan: complete: unknown step id \"s7\""
        );
        assert_eq!(error(&mut state, r#"{"verb":"complete"}"#), "plan: complete: unknown step id \"\"");
        assert_eq!(state.version(), 2);
    }

    #[test]
    fn a_restored_complete_plan_keeps_its_version_only() {
        let mut state = PlanState::Complete { version: 4, total: 3 };
        assert_eq!(
            error(&mut state, r#"{"verb":"complete","step_id":"s1"}"#),
            "plan: complete: unknown step id \"s1\""
        );
        assert_eq!(
            error(&mut state, r#"{"verb":"update","updates":[{"id":"s1","status":"done"}]}"#),
            "plan: update: unknown step id \"s1\""
        );
        assert_eq!(
            run(&mut state, r#"{"verb":"create","steps":["next"]}"#),
            Ok(Some(PlanEvent::Created { steps: 1, version: 5 }))
        );
    }
}
