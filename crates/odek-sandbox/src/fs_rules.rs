//! The filesystem and scope half of the confinement, as a Landlock ruleset: read and execute the
//! system directories and the `readable` paths; read, write and execute the workspace, the run's
//! temporary directory and the `writable` paths; use the usual device files — and never read a
//! protected path (`~/.odek`, other users' homes), even beneath an allowed one. Built in the
//! parent (it opens every path), enforced in the child by `landlock_restrict_self`. Start at
//! [`build_ruleset`].
//!
//! Landlock only adds access beneath a directory; it cannot carve an exception out of a granted
//! tree. So an allowed directory that holds a protected one is *split*: it is granted listing
//! only, and each of its entries is granted instead — except the protected one, and recursively
//! along the way to it. What is created later directly in a split directory is therefore not
//! reachable (a run started in `~` cannot create new files directly in `~`), and a symlink in a
//! split directory grants nothing (its target stays what it is: a run started in `~` does not
//! make the target of `~/link` writable).

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, RulesetError, Scope,
};

use crate::policy::{DEVICES, NetworkMode, Policy, SYSTEM_READABLE};

/// The newest Landlock ABI odek asks for; older kernels get what they support (best effort).
const TARGET_ABI: ABI = ABI::V6;

/// The directories and files the ruleset grants, each with its access, after splitting around
/// protected paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Grants {
    pub entries: Vec<(PathBuf, Grant)>,
}

impl Grants {
    /// The paths granted [`Grant::Write`]: where writes may go, and so where the supervisor lets
    /// Unix sockets be reached and metadata change.
    pub(crate) fn writable(&self) -> Vec<PathBuf> {
        self.entries.iter().filter(|(_, grant)| *grant == Grant::Write).map(|(path, _)| path.clone()).collect()
    }
}

/// How a path is granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Grant {
    /// Read files, list directories, execute.
    ReadExecute,
    /// Everything, beneath the path.
    Write,
    /// Read and write a device file.
    Device,
    /// List the directory itself (a split directory), nothing beneath it.
    ListOnly,
}

impl Grant {
    fn access(self, abi: ABI) -> BitFlags<AccessFs> {
        match self {
            Grant::ReadExecute => AccessFs::from_read(abi),
            Grant::Write => AccessFs::from_all(abi),
            Grant::Device => AccessFs::from_read(abi) | AccessFs::WriteFile | AccessFs::IoctlDev,
            Grant::ListOnly => BitFlags::from(AccessFs::ReadDir),
        }
    }
}

/// Every path `policy` grants, split around its protected paths, and `own_state` — writable
/// though beneath a protected path (an untrusted sub-agent's own artifact folder), exactly those
/// directories and nothing around them; paths that do not exist are left out (a Landlock rule
/// needs an open file).
pub(crate) fn grants(policy: &Policy, own_state: &[PathBuf]) -> Grants {
    let mut entries = Vec::new();
    let system = SYSTEM_READABLE.iter().map(PathBuf::from);
    for path in system.chain(policy.readable.iter().cloned()) {
        grant_split(&path, Grant::ReadExecute, &policy.protected, &mut entries);
    }
    for path in DEVICES {
        entries.push((PathBuf::from(path), Grant::Device));
    }
    let writable =
        [policy.workspace.clone(), policy.temp_dir.clone()].into_iter().chain(policy.writable.iter().cloned());
    for path in writable {
        grant_split(&path, Grant::Write, &policy.protected, &mut entries);
    }
    entries.extend(own_state.iter().map(|path| (canonical(path), Grant::Write)));
    entries.retain(|(path, _)| path.exists());
    Grants { entries }
}

/// Grants `path`, or — when a protected path lies beneath it — lists it and grants each entry
/// instead, recursing towards the protected path. A path inside a protected one is not granted.
fn grant_split(path: &Path, grant: Grant, protected: &[PathBuf], out: &mut Vec<(PathBuf, Grant)>) {
    let path = canonical(path);
    let protected: Vec<PathBuf> = protected.iter().map(|path| canonical(path)).collect();
    split_into(&path, grant, &protected, out, 0);
}

/// Deepest split followed (a protected path deeper than this below a granted one is unusual;
/// past it the directory is left out rather than granted whole).
const MAX_SPLIT_DEPTH: usize = 16;

fn split_into(path: &Path, grant: Grant, protected: &[PathBuf], out: &mut Vec<(PathBuf, Grant)>, depth: usize) {
    if protected.iter().any(|protected| path.starts_with(protected)) {
        return;
    }
    if !protected.iter().any(|protected| protected.starts_with(path)) {
        out.push((path.to_path_buf(), grant));
        return;
    }
    if depth >= MAX_SPLIT_DEPTH {
        return;
    }
    out.push((path.to_path_buf(), Grant::ListOnly));
    let Ok(entries) = std::fs::read_dir(path) else { return };
    for entry in entries.flatten() {
        // A symlink is not granted at all: what it points to is judged on its own path, as
        // beneath a directory granted whole (granting the entry would grant its target, since
        // a Landlock rule follows the path it is given).
        if entry.file_type().is_ok_and(|kind| kind.is_symlink()) {
            continue;
        }
        split_into(&entry.path(), grant, protected, out, depth + 1);
    }
}

/// `path` with its symlinks resolved, or as given when it does not exist.
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The ruleset enforcing `grants` (and, when the network is denied, no TCP connect or bind;
/// and the scopes: no signal to, and no abstract socket of, a process outside the sandbox),
/// degraded to what the kernel supports.
pub(crate) fn build_ruleset(grants: &Grants, network: NetworkMode) -> Result<RulesetCreated, RulesetError> {
    let abi = TARGET_ABI;
    let mut ruleset =
        Ruleset::default().set_compatibility(CompatLevel::BestEffort).handle_access(AccessFs::from_all(abi))?;
    if network == NetworkMode::Deny {
        ruleset = ruleset.handle_access(AccessNet::from_all(abi))?;
    }
    let mut created = ruleset.scope(Scope::from_all(abi))?.create()?;
    for (path, grant) in &grants.entries {
        let Ok(fd) = PathFd::new(path) else { continue };
        let mut access = grant.access(abi);
        // File rules may only carry file rights.
        if !path.is_dir() {
            access &= AccessFs::from_file(abi);
        }
        created = created.add_rule(PathBeneath::new(fd, access))?;
    }
    Ok(created)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Limits;

    fn policy(workspace: &Path, protected: Vec<PathBuf>) -> Policy {
        Policy {
            workspace: workspace.to_path_buf(),
            temp_dir: workspace.join("tmp"),
            readable: Vec::new(),
            writable: Vec::new(),
            protected,
            network: NetworkMode::Deny,
            allow_hosts: Vec::new(),
            limits: Limits::default(),
        }
    }

    #[test]
    fn a_workspace_holding_a_protected_directory_is_split_around_it_red() {
        let home = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(home.path()).unwrap();
        for dir in [".odek/sessions", "project/src", ".cache"] {
            std::fs::create_dir_all(home.join(dir)).unwrap();
        }
        std::fs::write(home.join("notes.txt"), "n").unwrap();
        let grants = grants(&policy(&home, vec![home.join(".odek")]), &[]);
        let mine: Vec<(PathBuf, Grant)> =
            grants.entries.into_iter().filter(|(path, _)| path.starts_with(&home)).collect();
        assert!(mine.contains(&(home.clone(), Grant::ListOnly)), "{mine:?}");
        for granted in ["project", ".cache", "notes.txt"] {
            assert!(mine.contains(&(home.join(granted), Grant::Write)), "{granted}: {mine:?}");
        }
        assert!(!mine.iter().any(|(path, _)| path.starts_with(home.join(".odek"))), "{mine:?}");
    }

    #[test]
    fn a_path_inside_a_protected_one_is_never_granted_red() {
        let home = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(home.path()).unwrap();
        std::fs::create_dir_all(home.join(".odek/artifacts")).unwrap();
        let mut inside = policy(&home.join("elsewhere"), vec![home.join(".odek")]);
        inside.readable.push(home.join(".odek/artifacts"));
        let grants = grants(&inside, &[]);
        assert!(!grants.entries.iter().any(|(path, _)| path.starts_with(home.join(".odek"))), "{grants:?}");
    }

    #[test]
    fn a_symlink_into_a_protected_directory_is_not_granted_red() {
        let home = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(home.path()).unwrap();
        std::fs::create_dir_all(home.join(".odek")).unwrap();
        std::fs::create_dir_all(home.join("work")).unwrap();
        std::os::unix::fs::symlink(home.join(".odek"), home.join("work/state")).unwrap();
        let grants = grants(&policy(&home.join("work"), vec![home.join(".odek")]), &[]);
        assert!(!grants.entries.iter().any(|(path, _)| path.starts_with(home.join(".odek"))), "{grants:?}");
    }

    #[test]
    fn a_symlink_in_a_split_workspace_grants_nothing_red() {
        let home = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(home.path()).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let elsewhere = std::fs::canonicalize(elsewhere.path()).unwrap();
        std::fs::create_dir_all(home.join(".odek")).unwrap();
        std::fs::create_dir_all(home.join("project")).unwrap();
        std::fs::write(elsewhere.join("file.txt"), "f").unwrap();
        std::os::unix::fs::symlink(&elsewhere, home.join("door")).unwrap();
        std::os::unix::fs::symlink(elsewhere.join("file.txt"), home.join("file-door")).unwrap();
        std::os::unix::fs::symlink(home.join(".odek"), home.join("state")).unwrap();
        let grants = grants(&policy(&home, vec![home.join(".odek")]), &[]);
        assert!(grants.entries.contains(&(home.join("project"), Grant::Write)), "{grants:?}");
        let leaked: Vec<_> = grants
            .entries
            .iter()
            .filter(|(path, _)| path.starts_with(&elsewhere) || path.starts_with(home.join(".odek")))
            .collect();
        assert!(leaked.is_empty(), "symlink targets were granted: {leaked:?}");
        assert!(!grants.entries.iter().any(|(path, _)| path.ends_with("door") || path.ends_with("state")));
    }

    #[test]
    fn own_state_is_granted_exactly_beneath_a_protected_path() {
        let home = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(home.path()).unwrap();
        let own = home.join(".odek/artifacts/s1/t1");
        std::fs::create_dir_all(&own).unwrap();
        let grants = grants(&policy(&home.join("work"), vec![home.join(".odek")]), std::slice::from_ref(&own));
        let odek: Vec<_> = grants.entries.iter().filter(|(path, _)| path.starts_with(home.join(".odek"))).collect();
        assert_eq!(odek, vec![&(own, Grant::Write)]);
    }

    #[test]
    fn missing_paths_are_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let mut with_missing = policy(dir.path(), Vec::new());
        with_missing.readable.push(dir.path().join("nope"));
        let grants = grants(&with_missing, &[]);
        assert!(!grants.entries.iter().any(|(path, _)| path.ends_with("nope")));
    }
}
