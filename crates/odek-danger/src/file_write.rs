//! The file-write classifier (spec `loop-and-sessions.md` §11): the class of writing one path —
//! odek's own home, persistence locations, devices, the working directory, temporary and system
//! directories — judged as written and with symlinks resolved. Start at [`classify_write`].

use std::path::{Component, Path, PathBuf};

use crate::class::{Classification, DangerClass};

/// Classifies a file write (`write_file`, `patch`, and the targets of shell commands).
///
/// In order: under `odek_home` ⇒ `system_write`; shell start-up files, cron, autostart,
/// launch agents, systemd units, `authorized_keys`, git config and git hooks ⇒ `persistence`;
/// raw disk devices ⇒ `destructive`, `/dev/null` and friends ⇒ `safe`; inside `cwd` (unless
/// `cwd` is `/`) or a temporary directory ⇒ `local_write`; system directories ⇒
/// `system_write`; anywhere else, including the rest of the home directory ⇒ `system_write`
/// (outside the project: the user approves it). The path is judged both as written and with
/// symlinks resolved, and the higher class wins, so a link inside the project that points at
/// `~/.bashrc` is `persistence`.
pub fn classify_write(path: &Path, cwd: &Path, odek_home: &Path) -> Classification {
    classify_target(path, &Places::anchored(cwd, odek_home))
}

/// Where a command runs, for classifying the paths it writes.
#[derive(Debug, Clone)]
pub(crate) struct Places {
    /// `None`: not known; relative paths are taken as inside it.
    cwd: Option<PathBuf>,
    odek_home: PathBuf,
    home: PathBuf,
}

impl Places {
    pub(crate) fn anchored(cwd: &Path, odek_home: &Path) -> Places {
        let home = odek_home.parent().map(Path::to_path_buf).unwrap_or_else(home_from_env);
        Places { cwd: Some(cwd.to_path_buf()), odek_home: odek_home.to_path_buf(), home }
    }

    pub(crate) fn unanchored() -> Places {
        let home = home_from_env();
        Places { cwd: None, odek_home: home.join(".odek"), home }
    }

    pub(crate) fn home(&self) -> &Path {
        &self.home
    }
}

fn home_from_env() -> PathBuf {
    std::env::var_os("HOME").map(PathBuf::from).filter(|home| home.is_absolute()).unwrap_or_else(|| "/root".into())
}

/// `.` and `..` removed without touching the file system (`..` at `/` stays at `/`).
pub fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                Some(Component::CurDir | Component::ParentDir) | None => out.push(".."),
            },
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The path with symlinks resolved in its longest existing ancestor (the rest appended).
fn resolve_existing_prefix(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(canonical) = existing.canonicalize() {
            let mut resolved = canonical;
            for part in rest.iter().rev() {
                resolved.push(part);
            }
            return normalize_lexically(&resolved);
        }
        match (existing.file_name().map(std::ffi::OsStr::to_os_string), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// [`classify_write`] for a path that may still be relative to an unknown `cwd`.
pub(crate) fn classify_target(path: &Path, places: &Places) -> Classification {
    let absolute = match (&places.cwd, path.is_absolute()) {
        (_, true) => normalize_lexically(path),
        (Some(cwd), false) => normalize_lexically(&cwd.join(path)),
        (None, false) => return classify_unanchored_relative(path),
    };
    let resolved = resolve_existing_prefix(&absolute);
    let as_written = classify_absolute(&absolute, places);
    if resolved == absolute {
        return as_written;
    }
    let as_resolved = classify_absolute(&resolved, places);
    if as_resolved.class.severity() > as_written.class.severity() { as_resolved } else { as_written }
}

fn classify_unanchored_relative(path: &Path) -> Classification {
    let normalized = normalize_lexically(path);
    if normalized.starts_with("..") {
        return Classification::new(DangerClass::SystemWrite, "writes outside the working directory");
    }
    if let Some(reason) = persistence_reason(&normalized, None) {
        return Classification::new(DangerClass::Persistence, reason);
    }
    Classification::new(DangerClass::LocalWrite, "writes inside the working directory")
}

fn classify_absolute(path: &Path, places: &Places) -> Classification {
    let odek_homes = with_canonical(&places.odek_home);
    if odek_homes.iter().any(|odek_home| path.starts_with(odek_home)) {
        return Classification::new(DangerClass::SystemWrite, "writes under ~/.odek (odek's own configuration)");
    }
    for home in with_canonical(&places.home) {
        if let Some(reason) = persistence_reason(path, Some(&home)) {
            return Classification::new(DangerClass::Persistence, reason);
        }
    }
    if let Some(device) = device_class(path) {
        return device;
    }
    if let Some(cwd) = &places.cwd
        && with_canonical(cwd).iter().any(|cwd| cwd.parent().is_some() && path.starts_with(cwd))
    {
        return Classification::new(DangerClass::LocalWrite, "writes inside the working directory");
    }
    if is_temporary(path) {
        return Classification::new(DangerClass::LocalWrite, "writes to a temporary directory");
    }
    if let Some(dir) = system_directory(path) {
        return Classification::new(DangerClass::SystemWrite, format!("writes to the system directory {dir}"));
    }
    Classification::new(DangerClass::SystemWrite, "writes outside the working directory")
}

fn with_canonical(path: &Path) -> Vec<PathBuf> {
    let lexical = normalize_lexically(path);
    match path.canonicalize() {
        Ok(canonical) if canonical != lexical => vec![lexical, canonical],
        _ => vec![lexical],
    }
}

/// Files under the home directory that run code at login, on a schedule or on later commands.
const HOME_PERSISTENCE_FILES: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".mkshrc",
    ".cshrc",
    ".tcshrc",
    ".login",
    ".logout",
    ".xprofile",
    ".xinitrc",
    ".xsessionrc",
    ".pam_environment",
    ".gitconfig",
    ".config/git/config",
    ".ssh/authorized_keys",
    ".ssh/authorized_keys2",
    ".ssh/rc",
    ".ssh/config",
    ".config/fish/config.fish",
];

/// Directories under the home directory whose files start programs.
const HOME_PERSISTENCE_DIRS: &[&str] = &[
    ".config/autostart",
    ".config/systemd/user",
    ".config/fish/conf.d",
    ".config/environment.d",
    ".local/share/systemd/user",
    "Library/LaunchAgents",
];

/// System files and directories that start programs or change every login.
const SYSTEM_PERSISTENCE: &[&str] = &[
    "/etc/crontab",
    "/etc/anacrontab",
    "/etc/cron.d",
    "/etc/cron.hourly",
    "/etc/cron.daily",
    "/etc/cron.weekly",
    "/etc/cron.monthly",
    "/var/spool/cron",
    "/etc/profile",
    "/etc/profile.d",
    "/etc/bash.bashrc",
    "/etc/bashrc",
    "/etc/zshrc",
    "/etc/zsh",
    "/etc/environment",
    "/etc/rc.local",
    "/etc/init.d",
    "/etc/systemd",
    "/lib/systemd",
    "/usr/lib/systemd",
    "/etc/xdg/autostart",
    "/etc/ld.so.preload",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/Library/LaunchAgents",
    "/Library/LaunchDaemons",
];

fn persistence_reason(path: &Path, home: Option<&Path>) -> Option<String> {
    let components: Vec<_> = path.components().map(Component::as_os_str).collect();
    if components.windows(2).any(|pair| pair[0] == ".git" && pair[1] == "hooks") {
        return Some("writes a git hook (runs on later git commands)".to_owned());
    }
    if let Some(system) = SYSTEM_PERSISTENCE.iter().find(|prefix| path.starts_with(prefix)) {
        return Some(format!("changes {system}, which runs programs at login, boot or on a schedule"));
    }
    let relative = path.strip_prefix(home?).ok()?;
    if let Some(file) = HOME_PERSISTENCE_FILES.iter().find(|file| relative == Path::new(file)) {
        return Some(format!("changes ~/{file}, which runs on every login or later command"));
    }
    HOME_PERSISTENCE_DIRS
        .iter()
        .find(|dir| relative.starts_with(dir))
        .map(|dir| format!("writes into ~/{dir}, which starts programs automatically"))
}

fn device_class(path: &Path) -> Option<Classification> {
    let rest = path.strip_prefix("/dev").ok()?;
    let name = rest.to_string_lossy();
    if matches!(name.as_ref(), "null" | "stdout" | "stderr" | "tty" | "zero") || name.starts_with("fd/") {
        return Some(Classification::new(DangerClass::Safe, "writes to a standard stream"));
    }
    const DISKS: &[&str] =
        &["sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "rdisk", "md", "dm-", "loop", "mapper/"];
    if DISKS.iter().any(|disk| name.starts_with(disk)) {
        return Some(Classification::new(DangerClass::Destructive, "writes to a raw disk device"));
    }
    Some(Classification::new(DangerClass::SystemWrite, "writes to a device"))
}

fn is_temporary(path: &Path) -> bool {
    let mut roots: Vec<PathBuf> =
        ["/tmp", "/var/tmp", "/private/tmp", "/private/var/tmp"].iter().map(PathBuf::from).collect();
    roots.extend(with_canonical(&std::env::temp_dir()));
    roots.iter().any(|root| root.parent().is_some() && path.starts_with(root))
}

const SYSTEM_DIRECTORIES: &[&str] = &[
    "/etc",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/boot",
    "/opt",
    "/var",
    "/srv",
    "/root",
    "/sys",
    "/proc",
    "/snap",
    "/System",
    "/Library",
    "/Applications",
    "/private",
    "/nix",
];

fn system_directory(path: &Path) -> Option<&'static str> {
    if path == Path::new("/") {
        return Some("/");
    }
    SYSTEM_DIRECTORIES.iter().copied().find(|dir| path.starts_with(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_normalization() {
        assert_eq!(normalize_lexically(Path::new("/a/b/../c/./d")), PathBuf::from("/a/c/d"));
        assert_eq!(normalize_lexically(Path::new("/../etc")), PathBuf::from("/etc"));
        assert_eq!(normalize_lexically(Path::new("../x")), PathBuf::from("../x"));
    }
}
