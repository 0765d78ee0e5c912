//! The process-count half of the confinement: one `pids` cgroup per confined command, so a fork
//! bomb stops at `pids.max` (root is exempt from `RLIMIT_NPROC`, a cgroup is not), and so every
//! process of the command — however it left its process group — can be found and killed at the
//! end. cgroup v2 where odek may create a child with the `pids` controller, else the v1 `pids`
//! hierarchy; neither is an error (the caller reports it). Start at [`PidsCgroup::create`].

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long [`PidsCgroup::kill_all`] keeps killing and waiting for the cgroup to empty.
const KILL_DEADLINE: Duration = Duration::from_secs(5);

static NEXT: AtomicU64 = AtomicU64::new(0);

/// One command's cgroup: created with its limit, joined by the child before `exec`, emptied and
/// removed at the end.
#[derive(Debug)]
pub(crate) struct PidsCgroup {
    dir: PathBuf,
    version: Version,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

impl PidsCgroup {
    /// A new cgroup under odek's own (so a delegated subtree works for an unprivileged user)
    /// with `pids.max = limit`; `None` where no `pids` hierarchy odek may write to exists.
    pub(crate) fn create(limit: u64) -> Option<PidsCgroup> {
        let name = format!("odek-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let candidates = [v2_base().map(|base| (base, Version::V2)), v1_base().map(|base| (base, Version::V1))];
        for (base, version) in candidates.into_iter().flatten() {
            if version == Version::V2 && !enable_pids(&base) {
                continue;
            }
            let dir = base.join(&name);
            if std::fs::create_dir(&dir).is_err() {
                continue;
            }
            let cgroup = PidsCgroup { dir, version };
            if write_file(&cgroup.dir.join("pids.max"), &limit.to_string()).is_ok() {
                return Some(cgroup);
            }
            cgroup.remove();
        }
        None
    }

    /// `cgroup.procs`, opened for the child to write `0` into (itself) before it runs anything.
    pub(crate) fn procs_for_join(&self) -> std::io::Result<File> {
        OpenOptions::new().write(true).custom_flags(libc::O_CLOEXEC).open(self.dir.join("cgroup.procs"))
    }

    /// The pids in the cgroup now.
    pub(crate) fn pids(&self) -> Vec<i32> {
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .map(|text| text.lines().filter_map(|line| line.trim().parse().ok()).collect())
            .unwrap_or_default()
    }

    /// SIGKILLs every process in the cgroup (`cgroup.kill` where there is one, else each listed
    /// pid, again and again while new ones appear) until it is empty or [`KILL_DEADLINE`]
    /// passes. Returns whether it emptied. Blocking.
    pub(crate) fn kill_all(&self) -> bool {
        let deadline = Instant::now() + KILL_DEADLINE;
        let kill_file = self.dir.join("cgroup.kill");
        let has_kill = self.version == Version::V2 && kill_file.exists();
        loop {
            let pids = self.pids();
            if pids.is_empty() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            if has_kill {
                let _ = write_file(&kill_file, "1");
            } else {
                for pid in pids {
                    // ESRCH (already gone) is expected.
                    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
                }
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Removes the (empty) cgroup; a cgroup still busy with unreaped children is retried
    /// briefly, then left for [`remove_stale`].
    pub(crate) fn remove(&self) {
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// Removes the empty `odek-<pid>-<n>` cgroups left by odek processes that no longer run.
pub(crate) fn remove_stale() {
    for base in [v2_base(), v1_base()].into_iter().flatten() {
        let Ok(entries) = std::fs::read_dir(&base) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(owner) =
                name.to_str().and_then(|name| name.strip_prefix("odek-")).and_then(|rest| rest.split('-').next())
            else {
                continue;
            };
            let alive = Path::new("/proc").join(owner).exists();
            if !alive {
                let _ = std::fs::remove_dir(entry.path());
            }
        }
    }
}

fn write_file(path: &Path, text: &str) -> std::io::Result<()> {
    OpenOptions::new().write(true).open(path)?.write_all(text.as_bytes())
}

/// odek's own cgroup in the v2 hierarchy, when `/sys/fs/cgroup` (or `/sys/fs/cgroup/unified`)
/// is a cgroup2 mount.
fn v2_base() -> Option<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|line| line.strip_prefix("0::"))?;
    let mount = cgroup_mounts().into_iter().find(|(kind, _, _)| kind == "cgroup2").map(|(_, point, _)| point)?;
    Some(mount.join(path.trim_start_matches('/')))
}

/// odek's own cgroup in the v1 `pids` hierarchy.
fn v1_base() -> Option<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        controllers.split(',').any(|controller| controller == "pids").then_some(path)
    })?;
    let mount = cgroup_mounts()
        .into_iter()
        .find(|(kind, _, options)| kind == "cgroup" && options.split(',').any(|option| option == "pids"))
        .map(|(_, point, _)| point)?;
    Some(mount.join(path.trim_start_matches('/')))
}

/// Every cgroup mount: (filesystem type, mount point, super options), from `/proc/self/mountinfo`.
fn cgroup_mounts() -> Vec<(String, PathBuf, String)> {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else { return Vec::new() };
    info.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let point = left.split(' ').nth(4)?;
            let mut right = right.split(' ');
            let (kind, _source, options) = (right.next()?, right.next()?, right.next()?);
            (kind == "cgroup" || kind == "cgroup2").then(|| (kind.to_owned(), PathBuf::from(point), options.to_owned()))
        })
        .collect()
}

/// Whether children of a v2 cgroup get the `pids` controller (enabling it when odek may).
fn enable_pids(base: &Path) -> bool {
    let enabled = |file: &str| {
        std::fs::read_to_string(base.join(file)).is_ok_and(|text| text.split_whitespace().any(|name| name == "pids"))
    };
    if enabled("cgroup.subtree_control") {
        return true;
    }
    enabled("cgroup.controllers") && write_file(&base.join("cgroup.subtree_control"), "+pids").is_ok()
}
