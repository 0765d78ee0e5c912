//! \[beyond\] Issue 20: the sandbox an untrusted sub-agent runs in — its whole `odek subagent`
//! process, not only the commands it starts. The run's policy, plus exactly what the child needs
//! and nothing of `~/.odek` besides: its own artifact folder writable (that directory alone,
//! beneath the protected `~/.odek`), the odek program readable and executable, and its model
//! endpoint reachable (the child talks to its model itself). Its task file goes into the run's
//! temporary directory, which it may read and delete; its config comes on a descriptor
//! (`spawn`). Start at [`child_confinement`].
//!
//! Not here: the confinement itself (`odek_sandbox::Sandbox::for_odek_process`), and what the
//! child's own sandbox does inside this one (no second supervisor, no cgroup of its own).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use odek_sandbox::{HostPort, Policy, Sandbox, parse_allow_host};

use super::spawn::ChildConfinement;

/// The confinement of an untrusted child of a run confined by `policy`: `program` (the odek
/// executable) readable, `base_url`'s host and port reachable, `own_state` writable (its
/// artifact folder; `run_task`'s operator-chosen events file too — exactly those paths, even
/// beneath `~/.odek`), and `odek_home`'s `config.json` handed over. An error is why the sandbox cannot be set up (the
/// task then fails; the child never runs unconfined).
pub fn child_confinement(
    policy: &Policy,
    program: &Path,
    base_url: &str,
    own_state: &[PathBuf],
    odek_home: &Path,
) -> Result<ChildConfinement, String> {
    let mut policy = policy.clone();
    if let Ok(program) = std::fs::canonicalize(program) {
        policy.readable.push(program);
    }
    if let Some(endpoint) = endpoint_of(base_url)
        && !policy.allow_hosts.contains(&endpoint)
    {
        policy.allow_hosts.push(endpoint);
    }
    let sandbox = Sandbox::for_odek_process(policy, own_state).map_err(|err| err.to_string())?;
    Ok(ChildConfinement { sandbox: Arc::new(sandbox), global_config: odek_home.join("config.json") })
}

/// `host:port` of an `http(s)://` URL (the scheme's port when none is written); `None` for
/// anything else (a replayed or unset endpoint).
fn endpoint_of(base_url: &str) -> Option<HostPort> {
    let (scheme, rest) = base_url.split_once("://")?;
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "https" => 443,
        "http" => 80,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let has_port = authority.rfind(':').is_some_and(|colon| {
        let port = &authority[colon + 1..];
        !port.is_empty()
            && port.bytes().all(|byte| byte.is_ascii_digit())
            && (!authority.starts_with('[') || authority[..colon].ends_with(']'))
    });
    let entry = if has_port { authority.to_owned() } else { format!("{authority}:{default_port}") };
    parse_allow_host(&entry).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_is_the_url_host_and_port() {
        let text = |url: &str| endpoint_of(url).map(|endpoint| endpoint.to_string());
        assert_eq!(text("http://127.0.0.1:4242/v1").as_deref(), Some("127.0.0.1:4242"));
        assert_eq!(text("https://api.openai.com/v1").as_deref(), Some("api.openai.com:443"));
        assert_eq!(text("http://user@[::1]/v1").as_deref(), Some("[::1]:80"));
        assert_eq!(text("https://[::1]:8443").as_deref(), Some("[::1]:8443"));
        assert_eq!(text(""), None);
        assert_eq!(text("file:///tmp/x"), None);
    }
}
