//! \[beyond\] Issue 20: which stdio servers start confined by the kernel sandbox, and in what.
//! The run hands the hub a [`ServerSandbox`] — off, the run's policy, or why the sandbox cannot
//! be enforced here — and each start (a restart too) of a server whose spec says `sandbox` gets a
//! fresh [`Sandbox`]: the run's policy plus that server's own `writable` paths, and \[beyond\]
//! (issue 32) for a package runner what [`ServerSandbox::grant_runner`] gave it. A server that
//! must be confined but cannot be fails to start; it never runs unconfined. A confined server
//! that stops or stalls during start-up gets [`startup_hint`]. Start at
//! [`ServerSandbox::for_server`].
//!
//! Not here: the confinement itself (`odek_sandbox`), which entries set `sandbox` (the config
//! loader: project servers by default, and a project may not turn it off), and what a runner
//! needs (`package_runner`).

use std::collections::BTreeMap;

use odek_sandbox::{Policy, Sandbox};

use crate::observer::McpObserver;
use crate::package_runner::{PackageRunner, RunnerGrant, runner_grant};
use crate::server_config::{ServerSpec, Transport};

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
    /// The sandbox `spec`'s process starts in (with `runner`'s grant, for a package runner):
    /// `None` for an unconfined server; an error (the reason, for the start-up failure) when it
    /// must be confined and cannot be.
    pub(crate) fn for_server(
        &self,
        spec: &ServerSpec,
        runner: Option<&RunnerGrant>,
    ) -> Result<Option<Sandbox>, String> {
        if !spec.sandbox {
            return Ok(None);
        }
        match self {
            ServerSandbox::Off => Ok(None),
            ServerSandbox::Unavailable(reason) => {
                Err(format!("sandbox: the server must run confined, but the sandbox {reason}"))
            }
            ServerSandbox::Policy(policy) => {
                Sandbox::new(server_policy(policy, spec, runner)).map(Some).map_err(|error| error.to_string())
            }
        }
    }

    /// Whether `spec`'s process runs confined (a stdio server asking for it under a policy).
    pub(crate) fn confines(&self, spec: &ServerSpec) -> bool {
        spec.sandbox && matches!(self, ServerSandbox::Policy(_)) && matches!(spec.transport, Transport::Stdio { .. })
    }

    /// \[beyond\] Issue 32: for a confined server whose command is a package runner, what that
    /// runner needs ([`runner_grant`]) — its directories prepared and set in `env` (the server's
    /// environment), the grant told to the operator once through `observer`, with every refusal.
    /// `None` for any other server. `operator_env` is odek's own environment.
    pub(crate) fn grant_runner(
        &self,
        spec: &ServerSpec,
        env: &mut BTreeMap<String, String>,
        operator_env: &BTreeMap<String, String>,
        observer: &dyn McpObserver,
    ) -> Option<RunnerGrant> {
        let (ServerSandbox::Policy(policy), Transport::Stdio { command, args, .. }) = (self, &spec.transport) else {
            return None;
        };
        let runner = PackageRunner::of(command, args).filter(|_| spec.sandbox)?;
        let (grant, warnings) = runner_grant(runner, command, env, operator_env, policy);
        for warning in warnings {
            observer.warning(&spec.name, &format!("mcpclient {}: sandbox: {}: {warning}", spec.name, runner.name()));
        }
        observer.warning(&spec.name, &grant.notice(&spec.name));
        Some(grant)
    }

    /// Tells the operator what to check when `spec`'s server stopped or stalled during start-up
    /// while confined ([`startup_hint`]); nothing for an unconfined one.
    pub(crate) fn hint_startup_failure(&self, spec: &ServerSpec, observer: &dyn McpObserver) {
        if self.confines(spec) {
            observer.warning(&spec.name, &startup_hint(&spec.name));
        }
    }
}

/// What the operator is told when a confined server stops or stalls during its start-up (before
/// its error): the first thing to check is whether it could read its own files; the way out is
/// to run it unconfined, which only the operator's own config can say.
pub(crate) fn startup_hint(server: &str) -> String {
    format!(
        "mcpclient {server}: sandbox: the server ran confined and stopped during start-up; if its program or \
         packages lie outside the workspace, make them readable with sandbox.readable in ~/.odek/config.json, \
         or run it unconfined: its entry in ~/.odek/config.json with \"sandbox\": false"
    )
}

/// The run's policy with the server's own `writable` paths added (those that exist: a Landlock
/// rule needs an open file), its program readable and executable when the command names it by
/// path (a bare name is found on `PATH`, whose directories the run's policy already opens), and
/// a package runner's directories and registries.
fn server_policy(run: &Policy, spec: &ServerSpec, runner: Option<&RunnerGrant>) -> Policy {
    let mut policy = run.clone();
    if let Transport::Stdio { command, .. } = &spec.transport
        && command.contains('/')
    {
        let program = policy.workspace.join(command);
        if let Ok(program) = std::fs::canonicalize(program) {
            policy.readable.push(program);
        }
    }
    let writable = spec.writable.iter().map(|path| std::fs::canonicalize(path).unwrap_or_else(|_| path.clone()));
    push_new(&mut policy.writable, writable);
    if let Some(runner) = runner {
        push_new(&mut policy.readable, runner.readable.iter().cloned());
        push_new(&mut policy.writable, runner.writable.iter().cloned());
        push_new(&mut policy.allow_hosts, runner.allow_hosts.iter().cloned());
    }
    policy
}

/// Appends each item the list does not hold yet, in order.
fn push_new<T: PartialEq>(list: &mut Vec<T>, items: impl IntoIterator<Item = T>) {
    for item in items {
        if !list.contains(&item) {
            list.push(item);
        }
    }
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
        assert!(unavailable.for_server(&spec(false, &[]), None).unwrap().is_none());
        assert!(ServerSandbox::Off.for_server(&spec(true, &[]), None).unwrap().is_none());
    }

    #[test]
    fn a_confined_server_without_a_sandbox_fails_closed_red() {
        let unavailable = ServerSandbox::Unavailable("cannot be enforced on this machine".into());
        assert_eq!(
            unavailable.for_server(&spec(true, &[]), None).unwrap_err(),
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
        let policy = server_policy(&run, &spec(true, &["/nonexistent/odek-cache"]), None);
        assert_eq!(policy.writable, vec![std::path::PathBuf::from("/var/cache/a"), "/nonexistent/odek-cache".into()]);
        assert_eq!(policy.workspace, run.workspace);
    }
}
