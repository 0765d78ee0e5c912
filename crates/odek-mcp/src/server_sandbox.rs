//! \[beyond\] Issue 20: which stdio servers start confined by the kernel sandbox, and in what.
//! The run hands the hub a [`ServerSandbox`] — off, the run's policy, or why the sandbox cannot
//! be enforced here — and each start (a restart too) of a server whose spec says `sandbox` gets a
//! fresh [`Sandbox`]: the run's policy plus that server's own `writable` paths. A server that
//! must be confined but cannot be fails to start; it never runs unconfined. Start at
//! [`ServerSandbox::for_server`].
//!
//! Not here: the confinement itself (`odek_sandbox`), and which entries set `sandbox` (the
//! config loader: project servers by default, and a project may not turn it off).

use odek_sandbox::{Policy, Sandbox};

use crate::server_config::ServerSpec;

/// How the hub confines the stdio servers whose spec says `sandbox`.
#[derive(Debug, Clone, Default)]
pub enum ServerSandbox {
    /// The operator turned the sandbox off (`--no-sandbox`, `"sandbox": false`): every server
    /// runs unconfined.
    #[default]
    Off,
    /// The run's policy; a confined server gets it with its own `writable` paths added.
    Policy(Policy),
    /// The sandbox is on but cannot be enforced here (the reason, completing "the sandbox …"): a
    /// server that asks for it fails to start.
    Unavailable(String),
}

impl ServerSandbox {
    /// The sandbox `spec`'s process starts in: `None` for an unconfined server; an error (the
    /// reason, for the start-up failure) when it must be confined and cannot be.
    pub(crate) fn for_server(&self, spec: &ServerSpec) -> Result<Option<Sandbox>, String> {
        if !spec.sandbox {
            return Ok(None);
        }
        match self {
            ServerSandbox::Off => Ok(None),
            ServerSandbox::Unavailable(reason) => {
                Err(format!("sandbox: the server must run confined, but the sandbox {reason}"))
            }
            ServerSandbox::Policy(policy) => {
                Sandbox::new(server_policy(policy, spec)).map(Some).map_err(|error| error.to_string())
            }
        }
    }
}

/// What the operator is told when a confined server stops during its start-up (before its
/// error): the first thing to check is whether it could read its own files.
pub(crate) fn startup_hint(server: &str) -> String {
    format!(
        "mcpclient {server}: sandbox: the server ran confined and stopped during start-up; if its program or \
         packages lie outside the workspace, make them readable with sandbox.readable in ~/.odek/config.json"
    )
}

impl ServerSandbox {
    /// Whether `spec`'s process runs confined (a stdio server asking for it under a policy).
    pub(crate) fn confines(&self, spec: &ServerSpec) -> bool {
        spec.sandbox
            && matches!(self, ServerSandbox::Policy(_))
            && matches!(spec.transport, crate::server_config::Transport::Stdio { .. })
    }
}

/// The run's policy with the server's own `writable` paths added (those that exist: a Landlock
/// rule needs an open file), and its program readable and executable when the command names it
/// by path (a bare name is found on `PATH`, whose directories the run's policy already opens).
fn server_policy(run: &Policy, spec: &ServerSpec) -> Policy {
    let mut policy = run.clone();
    if let crate::server_config::Transport::Stdio { command, .. } = &spec.transport
        && command.contains('/')
    {
        let program = policy.workspace.join(command);
        if let Ok(program) = std::fs::canonicalize(program) {
            policy.readable.push(program);
        }
    }
    for path in &spec.writable {
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
        if !policy.writable.contains(&path) {
            policy.writable.push(path);
        }
    }
    policy
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server_config::{ServerEntry, validate_server};

    fn spec(sandbox: bool, writable: &[&str]) -> ServerSpec {
        let entry = ServerEntry {
            command: Some("/bin/true".into()),
            sandbox: Some(sandbox),
            writable: writable.iter().map(|path| (*path).to_owned()).collect(),
            ..ServerEntry::default()
        };
        validate_server("s", &entry).unwrap().0
    }

    #[test]
    fn an_unconfined_server_or_a_sandbox_turned_off_starts_unconfined() {
        let unavailable = ServerSandbox::Unavailable("is not supported by this kernel".into());
        assert!(unavailable.for_server(&spec(false, &[])).unwrap().is_none());
        assert!(ServerSandbox::Off.for_server(&spec(true, &[])).unwrap().is_none());
    }

    #[test]
    fn a_confined_server_without_a_sandbox_fails_closed_red() {
        let unavailable = ServerSandbox::Unavailable("cannot be enforced on this machine".into());
        assert_eq!(
            unavailable.for_server(&spec(true, &[])).unwrap_err(),
            "sandbox: the server must run confined, but the sandbox cannot be enforced on this machine"
        );
    }

    #[test]
    fn a_relative_or_root_writable_path_is_refused() {
        let relative =
            ServerEntry { command: Some("x".into()), writable: vec!["cache".into()], ..ServerEntry::default() };
        assert!(validate_server("s", &relative).unwrap_err().to_string().contains("must be an absolute path"));
        let root = ServerEntry { command: Some("x".into()), writable: vec!["/".into()], ..ServerEntry::default() };
        assert!(validate_server("s", &root).unwrap_err().to_string().contains("cannot be writable"));
    }

    #[test]
    fn the_server_writable_paths_join_the_run_policy() {
        let run = Policy {
            workspace: "/work/p".into(),
            temp_dir: "/tmp/odek-run".into(),
            readable: Vec::new(),
            writable: vec!["/var/cache/a".into()],
            protected: Vec::new(),
            network: odek_sandbox::Network::Deny,
            allow_hosts: Vec::new(),
            limits: odek_sandbox::Limits::default(),
        };
        let policy = server_policy(&run, &spec(true, &["/nonexistent/odek-cache"]));
        assert_eq!(policy.writable, vec![std::path::PathBuf::from("/var/cache/a"), "/nonexistent/odek-cache".into()]);
        assert_eq!(policy.workspace, run.workspace);
    }
}
