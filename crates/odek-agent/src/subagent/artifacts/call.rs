//! One `delegate_tasks` call's artifacts, end to end on the parent side (spec `subagents.md`
//! §10 and §12): validate each task's refs against its own root, register them while the call
//! is in progress, inline previews within the call's budget, and render each task's
//! `artifacts:` lines. Start at [`register_call_artifacts`]; `delegate_tasks` calls it once per
//! call, after every task finished.

use std::path::Path;
use std::sync::Arc;

use odek_contract::artifact_ref::ArtifactRef;
use odek_contract::envelope::RawArtifactRef;

use super::inline::{InlinePreview, inline_previews};
use super::registry::{ArtifactRegistry, RegisteredArtifact};
use super::render::render_artifact_block;
use super::validate::validate_task_artifacts;

/// One finished task's artifact entries as the parent holds them.
#[derive(Debug, Clone, Copy)]
pub struct TaskArtifactInput<'a> {
    /// 1-based task number within the call.
    pub task_number: usize,
    /// The `artifacts` of the task's parsed result (empty when it had none or no result).
    pub refs: &'a [RawArtifactRef],
    /// The task's `artifact_root` from the parent's own record; `None` rejects every ref.
    pub artifact_root: Option<&'a Path>,
}

/// What one task contributes to the call's output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskArtifactSection {
    /// Registered entries, in the child's order.
    artifacts: Vec<Arc<RegisteredArtifact>>,
    /// The task's `artifacts:` block (§12) without a trailing newline; empty when the task had
    /// no refs at all.
    pub rendered: String,
}

impl TaskArtifactSection {
    /// `artifact_count` of `subagent_completed`: registered artifacts of the task.
    pub fn artifact_count(&self) -> usize {
        self.artifacts.len()
    }

    /// The registered entries as verified refs (ids as registered).
    pub fn refs(&self) -> Vec<ArtifactRef> {
        self.artifacts.iter().map(|entry| entry.to_ref()).collect()
    }
}

/// §10 for a whole call, returning one section per input, in input order. The call stays "in
/// progress" for the registry's eviction until this returns. Blocking (validation and previews
/// hash files): run it off the async executor.
pub fn register_call_artifacts(
    registry: &Arc<ArtifactRegistry>,
    tasks: &[TaskArtifactInput<'_>],
) -> Vec<TaskArtifactSection> {
    let call = registry.begin_call();
    let registered: Vec<(Vec<Arc<RegisteredArtifact>>, Vec<String>)> = tasks
        .iter()
        .map(|task| {
            let validated = validate_task_artifacts(task.refs, task.artifact_root);
            let registration = call.register_task(task.task_number, validated.valid);
            let mut notes = registration.notes;
            notes.extend(validated.dropped);
            (registration.artifacts, notes)
        })
        .collect();
    let every_artifact: Vec<Arc<RegisteredArtifact>> =
        registered.iter().flat_map(|(artifacts, _)| artifacts.iter().cloned()).collect();
    let previews = inline_previews(&every_artifact);
    registered
        .into_iter()
        .map(|(artifacts, notes)| {
            let rendered = render_artifacts_section(&artifacts, |id| previews.get(id), &notes);
            TaskArtifactSection { artifacts, rendered }
        })
        .collect()
}

/// §12's block for one task: `artifacts:`, then each artifact's line with its preview or skip
/// note, then the task's notes (duplicate aliases, then dropped refs). Empty when there is
/// nothing to show.
fn render_artifacts_section<'p>(
    artifacts: &[Arc<RegisteredArtifact>],
    preview_for: impl Fn(&str) -> Option<&'p InlinePreview>,
    notes: &[String],
) -> String {
    if artifacts.is_empty() && notes.is_empty() {
        return String::new();
    }
    let mut lines = vec!["artifacts:".to_owned()];
    lines.extend(artifacts.iter().map(|artifact| render_artifact_block(artifact, preview_for(&artifact.id))));
    lines.extend(notes.iter().cloned());
    lines.join("\n")
}
