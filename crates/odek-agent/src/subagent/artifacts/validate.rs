//! Parent validation of a child's artifact entries (spec `subagents.md` §10, first rule): the
//! contract's 20 ref rules (`odek_contract::artifact_ref`, reused as is) with that task's
//! `artifact_root` as the only root. A failure drops that ref only. Start at
//! [`validate_task_artifacts`].
//!
//! The root comes from the parent's own record of the task, never from the child's result, so a
//! child can only hand back files the parent set aside for it: every path is symlink-resolved and
//! must lie inside the resolved root, and size and digest are re-measured.

use std::path::Path;

use odek_contract::artifact_ref::{ArtifactRef, ArtifactRoots, validate_artifact_ref_resolved};
use odek_contract::envelope::RawArtifactRef;

use super::notes::render_dropped_line;
use super::{MAX_REFS_PER_TASK, TASK_BUDGET_BYTES};

/// One task's refs after validation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskArtifacts {
    /// Refs that passed, in the child's order.
    pub valid: Vec<ArtifactRef>,
    /// `  [artifact] dropped "<id>": <error>` per rejected ref, in the child's order.
    pub dropped: Vec<String>,
}

/// §10: validates each ref against `artifact_root` alone (`None` rejects every ref, by the
/// contract's rule 5). The child's own caps are enforced again so a forged result cannot make
/// the parent hash more than one task's worth: refs past the 64th are dropped with
/// `ref cap (64) reached`, and refs past 64 MiB in total (declared size, then the measured one)
/// with `task budget (67108864 bytes) exhausted`, the scan's wording. Blocking (it hashes).
pub fn validate_task_artifacts(refs: &[RawArtifactRef], artifact_root: Option<&Path>) -> TaskArtifacts {
    let roots = ArtifactRoots::new(artifact_root.map(|root| root.to_string_lossy().into_owned())).resolve();
    let mut outcome = TaskArtifacts::default();
    let mut total: u64 = 0;
    for (index, raw) in refs.iter().enumerate() {
        if index >= MAX_REFS_PER_TASK {
            outcome.dropped.push(render_dropped_line(&raw.id, &format!("ref cap ({MAX_REFS_PER_TASK}) reached")));
            continue;
        }
        let declared = raw.size_bytes.and_then(|size| u64::try_from(size).ok()).unwrap_or(0);
        if total.saturating_add(declared) > TASK_BUDGET_BYTES {
            outcome.dropped.push(budget_line(&raw.id));
            continue;
        }
        match validate_artifact_ref_resolved(raw, &roots) {
            Ok(artifact) if total.saturating_add(artifact.file_size) > TASK_BUDGET_BYTES => {
                outcome.dropped.push(budget_line(&raw.id));
            }
            Ok(artifact) => {
                total += artifact.file_size;
                outcome.valid.push(artifact);
            }
            Err(err) => outcome.dropped.push(render_dropped_line(&raw.id, &err.artifact_rule().to_string())),
        }
    }
    outcome
}

fn budget_line(id: &str) -> String {
    render_dropped_line(id, &format!("task budget ({TASK_BUDGET_BYTES} bytes) exhausted"))
}
