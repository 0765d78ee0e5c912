//! The artifact registry (spec `subagents.md` §10; \[beyond\] one per session, not per process):
//! validated refs keyed by id, the only way `artifact_read` finds a file (paths never enter the
//! model's context). Start at [`ArtifactRegistry::begin_call`] and
//! [`RegistrationCall::register_task`].
//!
//! Rules kept here: the first entry of an id wins and a later copy gets an alias
//! (`<id>.t<n>`, `<id>.t<n>-2` … `<id>.t<n>-128`, then `artifact-<seq>`); at most 512 entries are
//! live, the oldest evicted first, never one registered by a call still in progress.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use odek_contract::artifact_ref::ArtifactRef;
use odek_contract::quoting::quote;

use super::notes::render_dropped_line;

/// Most live entries.
const MAX_LIVE_ENTRIES: usize = 512;

/// Highest `-<k>` suffix tried for an alias before falling back to `artifact-<seq>`.
const MAX_ALIAS_SUFFIX: usize = 128;

/// One registered artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisteredArtifact {
    /// The registry id the model uses (the child's id, or its alias).
    pub id: String,
    /// The id the child gave.
    pub original_id: String,
    pub(crate) media_type: String,
    /// Size measured at validation.
    pub(crate) size_bytes: u64,
    /// Declared and verified digest; empty when the ref declared none (then it cannot be read).
    pub(crate) sha256: String,
    pub(crate) summary: String,
    /// 1-based task number within its `delegate_tasks` call.
    pub task_number: usize,
    path: PathBuf,
    call: u64,
}

impl RegisteredArtifact {
    /// The symlink-resolved path recorded at validation; for reads, never for the model.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// \[beyond\] The entry as a verified ref (its id in the registry), for a face that lists
    /// and serves the run's artifacts.
    pub fn to_ref(&self) -> ArtifactRef {
        ArtifactRef {
            id: self.id.clone(),
            media_type: self.media_type.clone(),
            size_bytes: Some(self.size_bytes),
            sha256: self.sha256.clone(),
            summary: self.summary.clone(),
            resolved_path: self.path.clone(),
            file_size: self.size_bytes,
        }
    }
}

/// What registering one task's refs produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskRegistration {
    /// Registered entries, in the task's ref order.
    pub artifacts: Vec<Arc<RegisteredArtifact>>,
    /// Note lines: `  [artifact] duplicate id "<id>" — task <n> copy registered as "<alias>"`,
    /// or a `dropped` line when the registry is full of entries of calls in progress.
    pub notes: Vec<String>,
}

/// The registry: one per session (its `delegate_tasks` registers, its `artifact_read` reads; a
/// session never finds another's artifacts, even with many in one process); tests make their own.
#[derive(Debug, Default)]
pub struct ArtifactRegistry {
    state: Mutex<RegistryState>,
}

#[derive(Debug, Default)]
struct RegistryState {
    /// Live entries in registration order.
    entries: Vec<Arc<RegisteredArtifact>>,
    next_call: u64,
    active_calls: Vec<u64>,
    /// Counter behind `artifact-<seq>` aliases.
    next_seq: u64,
}

impl ArtifactRegistry {
    pub fn new() -> ArtifactRegistry {
        ArtifactRegistry::default()
    }

    fn lock(&self) -> MutexGuard<'_, RegistryState> {
        // The state stays consistent at every await-free step, so a panic elsewhere while
        // holding the lock leaves nothing half-done.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts a `delegate_tasks` call: until the returned guard is dropped, its entries are
    /// never evicted.
    pub fn begin_call(self: &Arc<Self>) -> RegistrationCall {
        let mut state = self.lock();
        state.next_call += 1;
        let call = state.next_call;
        state.active_calls.push(call);
        RegistrationCall { registry: Arc::clone(self), call }
    }

    /// The live entry registered under `id` (compared exactly).
    pub fn get(&self, id: &str) -> Option<Arc<RegisteredArtifact>> {
        self.lock().entries.iter().find(|entry| entry.id == id).cloned()
    }

    /// Live ids in registration order.
    pub fn ids(&self) -> Vec<String> {
        self.lock().entries.iter().map(|entry| entry.id.clone()).collect()
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().entries.len()
    }
}

/// A `delegate_tasks` call in progress (see [`ArtifactRegistry::begin_call`]).
#[derive(Debug)]
pub struct RegistrationCall {
    registry: Arc<ArtifactRegistry>,
    call: u64,
}

impl RegistrationCall {
    /// Registers one task's validated refs (`task_number` 1-based), in order. A duplicate id keeps
    /// the first entry and registers this copy under an alias, with a note.
    pub fn register_task(&self, task_number: usize, refs: Vec<ArtifactRef>) -> TaskRegistration {
        let mut state = self.registry.lock();
        let mut registration = TaskRegistration::default();
        for artifact in refs {
            if state.entries.len() >= MAX_LIVE_ENTRIES && !state.evict_oldest() {
                registration.notes.push(render_dropped_line(
                    &artifact.id,
                    &format!("artifact registry is full ({MAX_LIVE_ENTRIES} live entries)"),
                ));
                continue;
            }
            let id = if state.is_live(&artifact.id) {
                let alias = state.alias_for(&artifact.id, task_number);
                registration.notes.push(duplicate_note(&artifact.id, task_number, &alias));
                alias
            } else {
                artifact.id.clone()
            };
            let entry = Arc::new(RegisteredArtifact {
                id,
                original_id: artifact.id,
                media_type: artifact.media_type,
                size_bytes: artifact.file_size,
                sha256: artifact.sha256,
                summary: artifact.summary,
                task_number,
                path: artifact.resolved_path,
                call: self.call,
            });
            state.entries.push(Arc::clone(&entry));
            registration.artifacts.push(entry);
        }
        registration
    }
}

impl Drop for RegistrationCall {
    fn drop(&mut self) {
        self.registry.lock().active_calls.retain(|call| *call != self.call);
    }
}

impl RegistryState {
    fn is_live(&self, id: &str) -> bool {
        self.entries.iter().any(|entry| entry.id == id)
    }

    /// Removes the oldest entry whose call has ended; `false` when every entry belongs to a call
    /// in progress.
    fn evict_oldest(&mut self) -> bool {
        let active = &self.active_calls;
        match self.entries.iter().position(|entry| !active.contains(&entry.call)) {
            Some(index) => {
                self.entries.remove(index);
                true
            }
            None => false,
        }
    }

    /// `<id>.t<n>`, then `<id>.t<n>-2` … `<id>.t<n>-128`, then `artifact-<seq>`: the first unused.
    fn alias_for(&mut self, id: &str, task_number: usize) -> String {
        let base = format!("{id}.t{task_number}");
        if !self.is_live(&base) {
            return base;
        }
        for suffix in 2..=MAX_ALIAS_SUFFIX {
            let alias = format!("{base}-{suffix}");
            if !self.is_live(&alias) {
                return alias;
            }
        }
        loop {
            self.next_seq += 1;
            let alias = format!("artifact-{}", self.next_seq);
            if !self.is_live(&alias) {
                return alias;
            }
        }
    }
}

/// `  [artifact] duplicate id "<id>" — task <n> copy registered as "<alias>"`.
fn duplicate_note(id: &str, task_number: usize, alias: &str) -> String {
    format!("  [artifact] duplicate id {} \u{2014} task {task_number} copy registered as {}", quote(id), quote(alias))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn artifact(id: &str) -> ArtifactRef {
        ArtifactRef {
            id: id.to_owned(),
            media_type: "text/plain".to_owned(),
            size_bytes: Some(1),
            sha256: String::new(),
            summary: String::new(),
            resolved_path: PathBuf::from(format!("/nowhere/{id}")),
            file_size: 1,
        }
    }

    #[test]
    fn alias_chain_runs_to_128_then_falls_back_to_a_sequence() {
        let registry = Arc::new(ArtifactRegistry::new());
        let call = registry.begin_call();
        let first = call.register_task(1, vec![artifact("r")]);
        assert!(first.notes.is_empty());
        let copies = call.register_task(2, (0..129).map(|_| artifact("r")).collect());
        let ids: Vec<&str> = copies.artifacts.iter().map(|entry| entry.id.as_str()).collect();
        assert_eq!(ids[0], "r.t2");
        assert_eq!(ids[1], "r.t2-2");
        assert_eq!(ids[127], "r.t2-128");
        assert_eq!(ids[128], "artifact-1");
        assert_eq!(copies.notes[0], "  [artifact] duplicate id \"r\" — task 2 copy registered as \"r.t2\"");
        assert_eq!(copies.notes[128], "  [artifact] duplicate id \"r\" — task 2 copy registered as \"artifact-1\"");
        assert!(copies.artifacts.iter().all(|entry| entry.original_id == "r" && entry.task_number == 2));
    }

    #[test]
    fn eviction_spares_the_call_in_progress() {
        let registry = Arc::new(ArtifactRegistry::new());
        {
            let old = registry.begin_call();
            old.register_task(1, vec![artifact("old-1"), artifact("old-2")]);
        }
        let call = registry.begin_call();
        call.register_task(1, (0..510).map(|i| artifact(&format!("new-{i}"))).collect());
        assert_eq!(registry.len(), 512);
        call.register_task(2, vec![artifact("new-510")]);
        assert_eq!(registry.len(), 512);
        assert!(registry.get("old-1").is_none());
        assert!(registry.get("old-2").is_some());
        call.register_task(2, vec![artifact("new-511")]);
        assert!(registry.get("old-2").is_none());
        let full = call.register_task(3, vec![artifact("new-512")]);
        assert!(full.artifacts.is_empty());
        assert_eq!(full.notes, vec!["  [artifact] dropped \"new-512\": artifact registry is full (512 live entries)"]);
        drop(call);
        let next = registry.begin_call();
        next.register_task(1, vec![artifact("later")]);
        assert!(registry.get("new-0").is_none());
        assert!(registry.get("later").is_some());
    }
}
