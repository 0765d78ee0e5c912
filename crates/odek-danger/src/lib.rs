//! odek's danger classifier (spec `loop-and-sessions.md` §11, `config.md` §8): the danger
//! classes, the shell-command and file-write classifiers, and the policy that turns a class into
//! allow / prompt / deny. It knows nothing of the agent loop, tools or configuration files; the
//! loop and the binary depend on it.
//!
//! Start at [`classify_command`] / [`classify_write`] (what a call risks) and
//! [`DangerPolicy::decide`] (what the configuration says about it). The shell grammar lives in
//! `shell_syntax`, the per-program rules in `command_class`. The batch approval card and the
//! `args_summary` event field belong to the loop; this crate only supplies [`argv0`] and the
//! classes. Everything here fails closed: what cannot be understood is `unknown`.

mod command_class;
mod shell_syntax;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

/// A danger class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DangerClass {
    Safe,
    LocalWrite,
    Install,
    NetworkEgress,
    CodeExecution,
    SystemWrite,
    Persistence,
    Unknown,
    Destructive,
    Blocked,
    UnreadExec,
}

impl DangerClass {
    /// Every class, in rank order (`unread_exec`, which has no rank, last).
    pub const ALL: [DangerClass; 11] = [
        DangerClass::Safe,
        DangerClass::LocalWrite,
        DangerClass::Install,
        DangerClass::NetworkEgress,
        DangerClass::CodeExecution,
        DangerClass::SystemWrite,
        DangerClass::Persistence,
        DangerClass::Unknown,
        DangerClass::Destructive,
        DangerClass::Blocked,
        DangerClass::UnreadExec,
    ];

    /// The spec spelling (`safe`, `local_write`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            DangerClass::Safe => "safe",
            DangerClass::LocalWrite => "local_write",
            DangerClass::Install => "install",
            DangerClass::NetworkEgress => "network_egress",
            DangerClass::CodeExecution => "code_execution",
            DangerClass::SystemWrite => "system_write",
            DangerClass::Persistence => "persistence",
            DangerClass::Unknown => "unknown",
            DangerClass::Destructive => "destructive",
            DangerClass::Blocked => "blocked",
            DangerClass::UnreadExec => "unread_exec",
        }
    }

    /// The rank of the §11 table; `unread_exec` is a gate and has none.
    pub fn rank(self) -> Option<u8> {
        match self {
            DangerClass::Safe => Some(1),
            DangerClass::LocalWrite => Some(2),
            DangerClass::Install => Some(3),
            DangerClass::NetworkEgress => Some(4),
            DangerClass::CodeExecution => Some(5),
            DangerClass::SystemWrite => Some(6),
            DangerClass::Persistence => Some(7),
            DangerClass::Unknown => Some(8),
            DangerClass::Destructive => Some(9),
            DangerClass::Blocked => Some(10),
            DangerClass::UnreadExec => None,
        }
    }

    /// The exact spec spelling; anything else is `None`.
    pub fn parse(text: &str) -> Option<DangerClass> {
        DangerClass::ALL.into_iter().find(|class| class.as_str() == text)
    }

    /// The default action of the §11 table.
    pub fn default_action(self) -> Action {
        match self {
            DangerClass::Safe | DangerClass::LocalWrite => Action::Allow,
            DangerClass::Unknown | DangerClass::Destructive | DangerClass::Blocked => Action::Deny,
            DangerClass::Install
            | DangerClass::NetworkEgress
            | DangerClass::CodeExecution
            | DangerClass::SystemWrite
            | DangerClass::Persistence
            | DangerClass::UnreadExec => Action::Prompt,
        }
    }

    /// Ordering used to pick the highest class of a compound command. `unread_exec` never comes
    /// out of the classifiers; it sorts with `code_execution` (running code nobody read).
    pub fn severity(self) -> u8 {
        self.rank().unwrap_or(5)
    }
}

impl std::fmt::Display for DangerClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the configuration does with a class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Allow,
    Prompt,
    Deny,
}

impl Action {
    /// `allow` | `prompt` | `deny`.
    pub fn parse(text: &str) -> Option<Action> {
        match text {
            "allow" => Some(Action::Allow),
            "prompt" => Some(Action::Prompt),
            "deny" => Some(Action::Deny),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Prompt => "prompt",
            Action::Deny => "deny",
        }
    }
}

/// `dangerous.non_interactive`: what a `prompt` action becomes without a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NonInteractive {
    /// Only `safe` operations proceed (the default).
    #[default]
    ReadOnly,
    Deny,
    Allow,
}

impl NonInteractive {
    /// `read_only` | `deny` | `allow`; anything else is `deny` (config.md §8: invalid ⇒ deny).
    pub fn parse(text: &str) -> NonInteractive {
        match text {
            "read_only" => NonInteractive::ReadOnly,
            "allow" => NonInteractive::Allow,
            _ => NonInteractive::Deny,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            NonInteractive::ReadOnly => "read_only",
            NonInteractive::Deny => "deny",
            NonInteractive::Allow => "allow",
        }
    }
}

/// The class of one command or write and a short human reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification {
    pub class: DangerClass,
    pub reason: String,
}

impl Classification {
    pub fn new(class: DangerClass, reason: impl Into<String>) -> Classification {
        Classification { class, reason: reason.into() }
    }
}

/// The `dangerous` configuration (plus what profiles and sub-agent trust add).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicySettings {
    /// `dangerous.classes`.
    pub classes: BTreeMap<DangerClass, Action>,
    /// `dangerous.action`: the action of classes not in `classes` (else the table default).
    pub default_action: Option<Action>,
    /// Exact command strings that are always allowed.
    pub allowlist: Vec<String>,
    /// Prefix / token-prefix entries that are always denied (unless allowlisted).
    pub denylist: Vec<String>,
    pub non_interactive: NonInteractive,
    /// Deny every class ranked above this one.
    pub max_risk: Option<DangerClass>,
    /// Classes denied before the allowlist is even consulted: the untrusted sub-agent denials of
    /// `subagents.md` §3, which a profile's allowlist must not lift.
    pub hard_deny: BTreeSet<DangerClass>,
}

/// What the policy says about one operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny {
        reason: String,
    },
    /// Needs the user's approval (interactive, not yet approved). The loop's batch gate asks
    /// before running; a tool that sees `Prompt` was not approved and denies.
    Prompt,
}

/// The danger policy: §11 applied to a class and a command.
#[derive(Debug, Clone, Default)]
pub struct DangerPolicy {
    settings: PolicySettings,
}

impl DangerPolicy {
    pub fn new(settings: PolicySettings) -> DangerPolicy {
        DangerPolicy { settings }
    }

    pub fn settings(&self) -> &PolicySettings {
        &self.settings
    }

    /// The configured action of a class: `classes`, else `action`, else the table default.
    pub fn action_for(&self, class: DangerClass) -> Action {
        self.settings.classes.get(&class).copied().or(self.settings.default_action).unwrap_or(class.default_action())
    }

    /// §11, in order: hard (trust) denials; the allowlist (exact command) allows; a denylist
    /// match denies; `max_risk` denies higher-ranked classes; then the class action, where
    /// `prompt` becomes allow (interactive, approved), [`Decision::Prompt`] (interactive, not
    /// approved) or the `non_interactive` rule (no terminal).
    pub fn decide(&self, class: DangerClass, command: &str, interactive: bool, approved: bool) -> Decision {
        if self.settings.hard_deny.contains(&class) {
            return deny(format!("{class} is not allowed in this context"));
        }
        if self.is_allowlisted(command) {
            return Decision::Allow;
        }
        if let Some(entry) = self.denylist_match(command) {
            return deny(format!("command matches denylist entry \"{entry}\""));
        }
        if let Some(cap) = self.settings.max_risk
            && exceeds_max_risk(class, cap)
        {
            return deny(format!("{class} is above max_risk {cap}"));
        }
        match self.action_for(class) {
            Action::Allow => Decision::Allow,
            Action::Deny => deny(format!("{class} is denied")),
            Action::Prompt if interactive && approved => Decision::Allow,
            Action::Prompt if interactive => Decision::Prompt,
            Action::Prompt => self.apply_non_interactive(class),
        }
    }

    /// `allowlist`: exact command match (surrounding whitespace ignored).
    pub fn is_allowlisted(&self, command: &str) -> bool {
        let command = command.trim();
        !command.is_empty() && self.settings.allowlist.iter().any(|entry| entry.trim() == command)
    }

    /// The first `denylist` entry the command matches (see [`denylist_matches`]).
    pub fn denylist_match(&self, command: &str) -> Option<&str> {
        self.settings.denylist.iter().map(String::as_str).find(|entry| denylist_matches(entry, command))
    }

    /// `non_interactive`: `read_only` lets `safe` through, `deny` denies, `allow` allows.
    fn apply_non_interactive(&self, class: DangerClass) -> Decision {
        match self.settings.non_interactive {
            NonInteractive::Allow => Decision::Allow,
            NonInteractive::ReadOnly if class == DangerClass::Safe => Decision::Allow,
            NonInteractive::ReadOnly => deny(format!("{class} needs approval and there is no terminal (read_only)")),
            NonInteractive::Deny => deny(format!("{class} needs approval and there is no terminal")),
        }
    }
}

fn deny(reason: String) -> Decision {
    Decision::Deny { reason }
}

/// `max_risk` denies every class ranked above the cap. `unread_exec` has no rank and is not
/// capped (its own action applies); a cap without a rank lets only `safe` through.
fn exceeds_max_risk(class: DangerClass, cap: DangerClass) -> bool {
    match (class.rank(), cap.rank()) {
        (Some(rank), Some(cap_rank)) => rank > cap_rank,
        (Some(rank), None) => rank > 1,
        (None, _) => false,
    }
}

/// `operation denied by configuration: <reason> (risk: <class>)`.
pub fn denial_output(reason: &str, class: DangerClass) -> String {
    format!("operation denied by configuration: {reason} (risk: {class})")
}

/// Whether a denylist entry matches a command, by string prefix or token prefix, on the raw
/// line with whitespace collapsed and on every simple command inside it (after `;`, `&&`, `|`,
/// inside `$( … )`), with environment assignments and wrappers (`sudo`, `env`, `nohup`,
/// `timeout`, …) stripped and the program also tried by its base name. Extra spaces, quotes,
/// `FOO=1` prefixes or `/bin/` paths therefore do not slip past an entry.
pub fn denylist_matches(entry: &str, command: &str) -> bool {
    let entry_tokens = shlex::split(entry).unwrap_or_else(|| entry.split_whitespace().map(str::to_owned).collect());
    if entry_tokens.is_empty() {
        return false;
    }
    let entry_text = entry_tokens.join(" ");
    let raw: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
    let mut candidates = vec![raw];
    candidates.extend(command_class::command_forms(command));
    candidates.iter().any(|tokens| tokens.starts_with(&entry_tokens) || tokens.join(" ").starts_with(&entry_text))
}

/// `args_summary.argv0` (events.md §6): split on whitespace, skip leading `NAME=value`
/// tokens, take the next token, delete every `'` and `"`, keep what follows the last `/`.
pub fn argv0(command: &str) -> String {
    let program = command.split_whitespace().find(|token| !is_env_assignment_token(token)).unwrap_or("");
    let unquoted: String = program.chars().filter(|c| *c != '\'' && *c != '"').collect();
    match unquoted.rsplit_once('/') {
        Some((_, last)) => last.to_owned(),
        None => unquoted,
    }
}

/// `NAME=value` with a non-empty NAME of ASCII letters, digits and `_`.
fn is_env_assignment_token(token: &str) -> bool {
    match token.split_once('=') {
        Some((name, _)) => !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
        None => false,
    }
}

/// Classifies a shell command line without knowing where it runs: relative paths count as
/// inside the working directory, absolute ones outside it. Prefer [`classify_command_in`].
pub fn classify_command(command: &str) -> Classification {
    command_class::classify(command, &Places::unanchored())
}

/// Classifies a shell command line run in `cwd` (paths it writes are classified like
/// [`classify_write`]). The overall class is the highest of its parts.
pub fn classify_command_in(command: &str, cwd: &Path, odek_home: &Path) -> Classification {
    command_class::classify(command, &Places::anchored(cwd, odek_home))
}

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
    fn anchored(cwd: &Path, odek_home: &Path) -> Places {
        let home = odek_home.parent().map(Path::to_path_buf).unwrap_or_else(home_from_env);
        Places { cwd: Some(cwd.to_path_buf()), odek_home: odek_home.to_path_buf(), home }
    }

    fn unanchored() -> Places {
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
    fn class_names_round_trip() {
        for class in DangerClass::ALL {
            assert_eq!(DangerClass::parse(class.as_str()), Some(class));
        }
        assert_eq!(DangerClass::parse("Safe"), None);
        assert_eq!(DangerClass::UnreadExec.rank(), None);
        assert_eq!(DangerClass::Blocked.rank(), Some(10));
    }

    #[test]
    fn argv0_follows_events_rule() {
        assert_eq!(argv0("FOO=1 /usr/bin/git status"), "git");
        assert_eq!(argv0("  'ls' -la"), "ls");
        assert_eq!(argv0("=x ls"), "=x");
        assert_eq!(argv0("A=1 B_2=2"), "");
        assert_eq!(argv0("\"./run.sh\" x"), "run.sh");
    }

    #[test]
    fn non_interactive_invalid_is_deny() {
        assert_eq!(NonInteractive::parse("read_only"), NonInteractive::ReadOnly);
        assert_eq!(NonInteractive::parse("allow"), NonInteractive::Allow);
        assert_eq!(NonInteractive::parse("yes"), NonInteractive::Deny);
    }

    #[test]
    fn lexical_normalization() {
        assert_eq!(normalize_lexically(Path::new("/a/b/../c/./d")), PathBuf::from("/a/c/d"));
        assert_eq!(normalize_lexically(Path::new("/../etc")), PathBuf::from("/etc"));
        assert_eq!(normalize_lexically(Path::new("../x")), PathBuf::from("../x"));
    }
}
