//! \[beyond\] The `sandbox` section (issue 20): whether odek confines the processes it starts
//! (on by default), whether a kernel that cannot confine them is an error, the network mode and
//! allow-list, and extra readable and writable paths. `"sandbox": true|false` is short for
//! `{"enabled": …}`. The global file sets it; a project file may only tighten it (turn it on or
//! required, a stricter network, fewer allowed hosts or paths) — anything looser is ignored with
//! a warning. `ODEK_SANDBOX`, `ODEK_REQUIRE_SANDBOX`, `--sandbox` and `--no-sandbox` come on top
//! (`apply_switches`). Start at [`merge_sandbox`].

use std::path::{Path, PathBuf};

use odek_sandbox::{HostPort, Network, parse_allow_host};
use serde::Deserialize;

use super::{ConfigError, PROJECT_DISPLAY};

/// `sandbox` as written in one file: a switch or a section.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub(crate) enum SandboxFile {
    Switch(bool),
    Section(SandboxSection),
}

/// The section form.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct SandboxSection {
    enabled: Option<bool>,
    required: Option<bool>,
    network: Option<String>,
    allow_hosts: Option<Vec<String>>,
    writable: Option<Vec<String>>,
    readable: Option<Vec<String>>,
}

impl SandboxFile {
    fn section(&self) -> SandboxSection {
        match self {
            SandboxFile::Switch(enabled) => SandboxSection { enabled: Some(*enabled), ..SandboxSection::default() },
            SandboxFile::Section(section) => section.clone(),
        }
    }
}

/// The resolved sandbox settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxConfig {
    /// Confine the processes odek starts (when the kernel can).
    pub enabled: bool,
    /// A kernel that cannot confine them is a setup error instead of a warning.
    pub required: bool,
    /// Where confined processes may connect (`deny` by default).
    pub network: Network,
    /// `host:port` destinations allowed besides what `network` allows.
    pub allow_hosts: Vec<HostPort>,
    /// Extra paths to read, write and execute (besides the workspace and the run's temp dir).
    pub writable: Vec<PathBuf>,
    /// Extra paths to read and execute (besides the system directories and `PATH`).
    pub readable: Vec<PathBuf>,
}

impl Default for SandboxConfig {
    /// On, not required, no network, no extra paths.
    fn default() -> SandboxConfig {
        SandboxConfig {
            enabled: true,
            required: false,
            network: Network::Deny,
            allow_hosts: Vec::new(),
            writable: Vec::new(),
            readable: Vec::new(),
        }
    }
}

/// How strict a network mode is (higher is stricter).
fn strictness(network: Network) -> u8 {
    match network {
        Network::Allow => 0,
        Network::Loopback => 1,
        Network::Deny => 2,
    }
}

/// The global section over the defaults, then the project's tightening. Errors (the global
/// file's): an unknown network mode, a malformed allow-list entry, `/` writable, a relative path.
/// A path that does not exist is left out with a warning.
pub(crate) fn merge_sandbox(
    global_display: &str,
    global: Option<&SandboxFile>,
    project: Option<&SandboxFile>,
    home: &Path,
    warnings: &mut Vec<String>,
) -> Result<SandboxConfig, ConfigError> {
    let mut sandbox = SandboxConfig::default();
    if let Some(global) = global.map(SandboxFile::section) {
        let error = |detail: String| ConfigError::Sandbox { path: global_display.to_owned(), detail };
        sandbox.enabled = global.enabled.unwrap_or(true);
        sandbox.required = global.required.unwrap_or(false);
        if let Some(network) = &global.network {
            sandbox.network = parse_network(network).map_err(error)?;
        }
        for entry in global.allow_hosts.iter().flatten() {
            sandbox.allow_hosts.push(parse_allow_host(entry).map_err(|err| error(err.to_string()))?);
        }
        sandbox.writable =
            paths(global_display, "writable", global.writable.as_deref(), home, warnings).map_err(error)?;
        sandbox.readable =
            paths(global_display, "readable", global.readable.as_deref(), home, warnings).map_err(error)?;
        if sandbox.writable.iter().any(|path| path.parent().is_none()) {
            return Err(error("\"/\" cannot be writable".to_owned()));
        }
    }
    if let Some(project) = project.map(SandboxFile::section) {
        tighten(&mut sandbox, &project, home, warnings);
    }
    Ok(sandbox)
}

/// The project's section, applied only where it makes the sandbox stricter.
fn tighten(sandbox: &mut SandboxConfig, project: &SandboxSection, home: &Path, warnings: &mut Vec<String>) {
    let looser = |key: &str, warnings: &mut Vec<String>| {
        warnings.push(format!("{PROJECT_DISPLAY}: sandbox.{key} ignored (a project may only tighten the sandbox)"));
    };
    match project.enabled {
        Some(true) => sandbox.enabled = true,
        Some(false) => looser("enabled", warnings),
        None => {}
    }
    match project.required {
        Some(true) => sandbox.required = true,
        Some(false) if sandbox.required => looser("required", warnings),
        _ => {}
    }
    if let Some(network) = &project.network {
        match parse_network(network) {
            Ok(network) if strictness(network) >= strictness(sandbox.network) => sandbox.network = network,
            Ok(_) => looser("network", warnings),
            Err(detail) => warnings.push(format!("{PROJECT_DISPLAY}: {detail}; ignored")),
        }
    }
    if let Some(entries) = &project.allow_hosts {
        let mut kept = Vec::new();
        for entry in entries {
            match parse_allow_host(entry) {
                Ok(host) if sandbox.allow_hosts.contains(&host) => kept.push(host),
                Ok(_) => warnings.push(format!(
                    "{PROJECT_DISPLAY}: sandbox.allow_hosts entry {entry:?} is not in the global allow_hosts; ignored"
                )),
                Err(error) => warnings.push(format!("{PROJECT_DISPLAY}: {error}; ignored")),
            }
        }
        sandbox.allow_hosts = kept;
    }
    for (key, project_paths, current) in
        [("writable", &project.writable, &mut sandbox.writable), ("readable", &project.readable, &mut sandbox.readable)]
    {
        let Some(entries) = project_paths else { continue };
        let listed = paths(PROJECT_DISPLAY, key, Some(entries), home, warnings).unwrap_or_default();
        let (kept, dropped): (Vec<PathBuf>, Vec<PathBuf>) =
            listed.into_iter().partition(|path| current.iter().any(|allowed| path.starts_with(allowed)));
        for path in dropped {
            warnings.push(format!(
                "{PROJECT_DISPLAY}: sandbox.{key} entry {} is not beneath a global {key} path; ignored",
                path.display()
            ));
        }
        *current = kept;
    }
}

fn parse_network(text: &str) -> Result<Network, String> {
    Network::parse(text).ok_or_else(|| format!("sandbox.network: {text:?} is not deny, loopback or allow"))
}

/// The listed paths made absolute (`~/` is the home directory); a relative path is an error, a
/// missing one is left out with a warning.
fn paths(
    display: &str,
    key: &str,
    entries: Option<&[String]>,
    home: &Path,
    warnings: &mut Vec<String>,
) -> Result<Vec<PathBuf>, String> {
    let mut resolved = Vec::new();
    for entry in entries.unwrap_or_default() {
        let path = match entry.strip_prefix("~/") {
            Some(rest) => home.join(rest),
            None if entry == "~" => home.to_path_buf(),
            None => PathBuf::from(entry),
        };
        if !path.is_absolute() {
            return Err(format!("sandbox.{key}: {entry:?} must be an absolute path or start with ~/"));
        }
        if !path.exists() {
            warnings.push(format!("{display}: sandbox.{key} entry {} does not exist; ignored", path.display()));
            continue;
        }
        resolved.push(std::fs::canonicalize(&path).unwrap_or(path));
    }
    Ok(resolved)
}

/// The switches above the files: `ODEK_SANDBOX` (on or off), `ODEK_REQUIRE_SANDBOX` (required,
/// hence on), then `--sandbox` / `--no-sandbox`. Turning a required sandbox off is refused.
pub fn apply_switches(
    sandbox: &mut SandboxConfig,
    env_enabled: Option<bool>,
    env_required: Option<bool>,
    flag: Option<bool>,
) -> Result<(), ConfigError> {
    if env_required == Some(true) {
        sandbox.required = true;
    }
    for switch in [env_enabled, flag].into_iter().flatten() {
        if !switch && sandbox.required {
            return Err(ConfigError::SandboxRequired);
        }
        sandbox.enabled = switch;
    }
    if sandbox.required {
        sandbox.enabled = true;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(json: serde_json::Value) -> SandboxFile {
        serde_json::from_value(json).unwrap()
    }

    fn merge(global: serde_json::Value, project: Option<serde_json::Value>) -> (SandboxConfig, Vec<String>) {
        let home = tempfile::tempdir().unwrap();
        let mut warnings = Vec::new();
        let config = merge_sandbox(
            "~/.odek/config.json",
            Some(&section(global)),
            project.map(section).as_ref(),
            home.path(),
            &mut warnings,
        )
        .unwrap();
        (config, warnings)
    }

    #[test]
    fn on_by_default_and_a_switch_or_a_section() {
        assert!(SandboxConfig::default().enabled);
        assert!(!merge(serde_json::json!(false), None).0.enabled);
        let (config, warnings) = merge(
            serde_json::json!({"network": "loopback", "allow_hosts": ["api.github.com:443"], "writable": ["/tmp"]}),
            None,
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(config.network, Network::Loopback);
        assert_eq!(config.allow_hosts, vec![parse_allow_host("api.github.com:443").unwrap()]);
        assert_eq!(config.writable, vec![std::fs::canonicalize("/tmp").unwrap()]);
    }

    #[test]
    fn bad_global_values_are_errors() {
        let home = Path::new("/nonexistent-home");
        let cases = [
            (serde_json::json!({"network": "open"}), "sandbox.network: \"open\" is not deny, loopback or allow"),
            (
                serde_json::json!({"allow_hosts": ["https://x:1"]}),
                "sandbox: allow_hosts entry \"https://x:1\": give host:port, without a scheme",
            ),
            (serde_json::json!({"writable": ["/"]}), "\"/\" cannot be writable"),
            (
                serde_json::json!({"readable": ["relative"]}),
                "sandbox.readable: \"relative\" must be an absolute path or start with ~/",
            ),
        ];
        for (global, detail) in cases {
            let error = merge_sandbox("g", Some(&section(global)), None, home, &mut Vec::new()).unwrap_err();
            assert_eq!(error.to_string(), format!("config g: {detail}"));
        }
    }

    #[test]
    fn a_project_may_only_tighten_red() {
        let (config, warnings) = merge(
            serde_json::json!({"enabled": true, "network": "loopback", "allow_hosts": ["a.example:443", "b.example:443"], "writable": ["/tmp"]}),
            Some(
                serde_json::json!({"enabled": false, "network": "allow", "allow_hosts": ["b.example:443", "c.example:443"], "writable": ["/usr"]}),
            ),
        );
        assert!(config.enabled);
        assert_eq!(config.network, Network::Loopback);
        assert_eq!(config.allow_hosts, vec![parse_allow_host("b.example:443").unwrap()]);
        assert!(config.writable.is_empty());
        assert_eq!(
            warnings,
            [
                "./odek.json: sandbox.enabled ignored (a project may only tighten the sandbox)",
                "./odek.json: sandbox.network ignored (a project may only tighten the sandbox)",
                "./odek.json: sandbox.allow_hosts entry \"c.example:443\" is not in the global allow_hosts; ignored",
                "./odek.json: sandbox.writable entry /usr is not beneath a global writable path; ignored",
            ]
        );
        let (stricter, _) = merge(
            serde_json::json!({"network": "allow"}),
            Some(serde_json::json!({"network": "deny", "required": true})),
        );
        assert_eq!((stricter.network, stricter.required), (Network::Deny, true));
        let (on, _) = merge(serde_json::json!(false), Some(serde_json::json!(true)));
        assert!(on.enabled);
    }

    #[test]
    fn switches_apply_on_top_and_a_required_sandbox_cannot_be_turned_off() {
        let mut sandbox = SandboxConfig::default();
        apply_switches(&mut sandbox, Some(false), None, None).unwrap();
        assert!(!sandbox.enabled);
        apply_switches(&mut sandbox, None, None, Some(true)).unwrap();
        assert!(sandbox.enabled);
        apply_switches(&mut sandbox, None, Some(true), None).unwrap();
        assert!(sandbox.required && sandbox.enabled);
        let error = apply_switches(&mut sandbox, None, None, Some(false)).unwrap_err();
        assert_eq!(error.to_string(), "sandbox.required is set: the sandbox cannot be turned off");
    }
}
