//! \[beyond\] The run's sandbox (issue 20): the [`Policy`] every process a runtime starts is
//! confined with — made from the `sandbox` config section and the run's own paths — and the
//! honest fallback when the kernel cannot enforce it (a one-line warning and no sandbox, or a
//! setup error when the sandbox is required). Start at [`prepare_sandbox`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use odek_sandbox::{Limits, Policy, Sandbox, SandboxError};

use crate::config::{ConfigSources, SandboxConfig};
use crate::error::RuntimeError;

/// A sandbox in force: the prepared confinement and the run's own temporary directory (`TMPDIR`
/// inside), removed with it.
#[derive(Debug)]
pub(crate) struct RunSandbox {
    pub(crate) sandbox: Arc<Sandbox>,
    _temp_dir: tempfile::TempDir,
}

/// The warning of a kernel that cannot confine commands (they run unconfined).
fn unavailable_warning(error: &SandboxError) -> String {
    format!("{error}; commands run unconfined (set ODEK_REQUIRE_SANDBOX=1 to refuse instead)")
}

/// The sandbox of a run in `sources.cwd` under `config`: `None` when it is off, or — with a
/// warning through `warn` — when this kernel cannot enforce it and it is not required. A
/// required sandbox the kernel cannot enforce, and a policy that breaks a rule (`/` writable),
/// are errors. What a sandbox in force cannot enforce here (no supervisor) is a warning too.
pub(crate) fn prepare_sandbox(
    config: &SandboxConfig,
    sources: &ConfigSources,
    warn: &dyn Fn(&str),
) -> Result<Option<RunSandbox>, RuntimeError> {
    if !config.enabled {
        return Ok(None);
    }
    let temp_dir = run_temp_dir()?;
    let policy = run_policy(config, sources, temp_dir.path());
    match Sandbox::new(policy) {
        Ok(sandbox) => {
            if let Some(limitation) = sandbox.limitation() {
                warn(limitation);
            }
            Ok(Some(RunSandbox { sandbox: Arc::new(sandbox), _temp_dir: temp_dir }))
        }
        Err(error @ SandboxError::Policy(_)) => Err(RuntimeError::Setup(error.to_string())),
        Err(error) if config.required => Err(RuntimeError::Setup(format!(
            "sandbox.required is set but the sandbox cannot be enforced here: {error}"
        ))),
        Err(error) => {
            warn(&unavailable_warning(&error));
            Ok(None)
        }
    }
}

/// \[beyond\] How the MCP servers that ask for the sandbox are confined: in the run's policy
/// when the sandbox is in force, not at all when the operator turned it off, and — when it is on
/// but this kernel cannot enforce it — not started (they fail closed, with this reason).
pub(crate) fn server_sandbox(config: &SandboxConfig, run: Option<&RunSandbox>) -> odek_mcp::ServerSandbox {
    match run {
        Some(run) => odek_mcp::ServerSandbox::Policy(run.sandbox.policy().clone()),
        None if config.enabled => odek_mcp::ServerSandbox::Unavailable("cannot be enforced on this machine".to_owned()),
        None => odek_mcp::ServerSandbox::Off,
    }
}

/// The run's own temporary directory (mode 0700): under `TMPDIR`, or `/tmp` when `TMPDIR`
/// names a directory that cannot take it.
fn run_temp_dir() -> Result<tempfile::TempDir, RuntimeError> {
    let mut builder = tempfile::Builder::new();
    builder.prefix("odek-sandbox-");
    builder
        .tempdir()
        .or_else(|_| builder.tempdir_in("/tmp"))
        .map_err(|err| RuntimeError::Setup(format!("sandbox: cannot create the run's temporary directory: {err}")))
}

/// Toolchains and settings in the home directory a command may read (those that exist): what
/// `git`, `rustup`/`cargo`, `pyenv` and `nvm` need to start. The rest of the home — keys, cloud
/// credentials, shell history — stays unreadable.
pub(crate) const HOME_READABLE: &[&str] =
    &[".gitconfig", ".config/git", ".rustup", ".cargo", ".pyenv", ".nvm", ".local/bin", ".local/lib"];

/// Credential files beneath [`HOME_READABLE`] that stay unreadable.
pub(crate) const HOME_SECRETS: &[&str] = &[".cargo/credentials", ".cargo/credentials.toml", ".config/git/credentials"];

/// What a command of this run may do: read and execute the system directories, `PATH`, the
/// home's toolchains ([`HOME_READABLE`]) and the configured `readable` paths; write the
/// workspace (the working directory), the run's temporary directory and the configured
/// `writable` paths; never read odek's own state (`~/.odek`), the credential files
/// ([`HOME_SECRETS`]) or another user's home; the configured network.
fn run_policy(config: &SandboxConfig, sources: &ConfigSources, temp_dir: &Path) -> Policy {
    let canonical = |path: &Path| std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let home = canonical(&sources.home);
    let mut readable = config.readable.clone();
    readable.extend(path_directories(sources.env.get("PATH").map(String::as_str), &home));
    readable.extend(HOME_READABLE.iter().map(|path| home.join(path)).filter(|path| path.exists()));
    let mut protected = protected_paths(&canonical(&sources.odek_dir()), &home, nix::unistd::geteuid().as_raw());
    protected.extend(HOME_SECRETS.iter().map(|path| home.join(path)));
    Policy {
        workspace: canonical(&sources.cwd),
        temp_dir: canonical(temp_dir),
        readable,
        writable: config.writable.clone(),
        protected,
        network: config.network,
        allow_hosts: config.allow_hosts.clone(),
        limits: Limits::default(),
    }
}

/// The directories of `PATH` a command may run programs from: absolute, existing, and neither
/// `/` nor the home directory itself (which would open everything beneath them).
fn path_directories(path: Option<&str>, home: &Path) -> Vec<PathBuf> {
    let Some(path) = path else { return Vec::new() };
    let mut directories: Vec<PathBuf> = Vec::new();
    for entry in std::env::split_paths(path) {
        let Ok(directory) = std::fs::canonicalize(&entry) else { continue };
        if !entry.is_absolute() || directory.parent().is_none() || directory == home || !directory.is_dir() {
            continue;
        }
        if !directories.contains(&directory) {
            directories.push(directory);
        }
    }
    directories
}

/// Never readable from inside: odek's state directory, and the home directories of other users
/// — each directory under `/home`, and `/root`, that belongs to another user and is not `home`.
/// The running user's own home stays unprotected when `HOME` points elsewhere (a CI job with a
/// scratch `HOME`): it is not granted either, but the operator's `readable` may reach into it.
fn protected_paths(odek_dir: &Path, home: &Path, own_uid: u32) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let mut protected = vec![odek_dir.to_path_buf()];
    let homes = std::fs::read_dir("/home").into_iter().flatten().flatten().map(|entry| entry.path());
    for path in homes.chain([PathBuf::from("/root")]) {
        let Ok(path) = std::fs::canonicalize(&path) else { continue };
        let theirs = std::fs::metadata(&path).map_or(true, |metadata| metadata.uid() != own_uid);
        if theirs && path != home && !home.starts_with(&path) {
            protected.push(path);
        }
    }
    protected
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_directories_leave_out_root_home_and_relative_entries() {
        let home = tempfile::tempdir().unwrap();
        let home_path = std::fs::canonicalize(home.path()).unwrap();
        let bin = home_path.join("bin");
        std::fs::create_dir(&bin).unwrap();
        let path =
            format!("/:{}:relative:{}:/usr/bin:/nonexistent:{}", home_path.display(), bin.display(), bin.display());
        let directories = path_directories(Some(&path), &home_path);
        assert_eq!(directories, vec![bin, std::fs::canonicalize("/usr/bin").unwrap()]);
    }

    #[test]
    fn odek_state_and_other_homes_are_protected_red() {
        use std::os::unix::fs::MetadataExt;
        let odek = PathBuf::from("/home/me/.odek");
        let root_owner = std::fs::metadata("/root").unwrap().uid();
        let stranger = root_owner + 4242;
        let protected = protected_paths(&odek, Path::new("/home/me"), stranger);
        assert_eq!(protected[0], odek);
        assert!(protected.contains(&PathBuf::from("/root")));
        assert!(!protected.contains(&PathBuf::from("/home/me")));
        let as_root = protected_paths(Path::new("/root/.odek"), Path::new("/root"), stranger);
        assert!(!as_root.contains(&PathBuf::from("/root")), "the home is never protected from itself");
        let owner_elsewhere = protected_paths(Path::new("/tmp/h/.odek"), Path::new("/tmp/h"), root_owner);
        assert!(!owner_elsewhere.contains(&PathBuf::from("/root")), "the running user's own home is not another's");
    }
}
