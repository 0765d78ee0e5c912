//! \[beyond\] Issue 32: package runners in the sandbox. A confined stdio server whose command is a
//! package runner — `npx` or `npm exec`, `uvx` or `uv tool run`, `pipx run`, `bunx` or `bun x` —
//! gets exactly what that runner needs on top of its server policy: its cache and install
//! directories writable and its registry reachable, and nothing else.
//!
//! The directories are odek's own, one set per workspace under `~/.cache/odek/runners/<key>/`
//! (`$XDG_CACHE_HOME` when odek's environment sets it), never the operator's `~/.npm` or
//! `~/.cache/uv`: a cache the operator's own, unconfined runs execute packages from is no place a
//! confined server may write. A global server may name its own (its `env`: the operator's
//! choice); a project server may not (the loader strips those variables, see
//! [`PackageRunner::is_setting`]). Each directory is created if missing, taken canonical, and
//! refused when it is `/`, the home directory or one of its ancestors, or overlaps a protected
//! path (`~/.odek`, other users' homes). The registry comes from the server's `env` (a global
//! server's), then odek's environment, else the runner's public default, and is added to the
//! allow-list as `host:port`; the variables are set in the server's environment so the runner
//! uses exactly what it was granted. A registry URL carrying credentials is never handed over.
//!
//! Start at [`PackageRunner::of`] and [`runner_grant`]. Not here: the policy these are added to
//! (`server_sandbox`), and the loader's rule for project entries (`odek::config`).

use std::collections::BTreeMap;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use odek_sandbox::policy::SYSTEM_READABLE;
use odek_sandbox::{HostPort, Policy, parse_allow_host};
use sha2::{Digest, Sha256};

/// A package runner odek recognises in a server's command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackageRunner {
    /// `npx`, `npm exec`, `npm x`.
    Npm,
    /// `uvx`, `uv tool run`.
    Uv,
    /// `pipx run`.
    Pipx,
    /// `bunx`, `bun x`.
    Bun,
}

/// A directory a runner writes: the variable that names it, and its place in odek's own runner
/// cache when nobody names it.
struct RunnerDirectory {
    variable: &'static str,
    dedicated: &'static str,
}

/// A variable naming a registry (index) URL; `extra` ones add a host without replacing the
/// default, and may hold several URLs separated by spaces.
struct RegistryVariable {
    variable: &'static str,
    extra: bool,
}

const fn directory(variable: &'static str, dedicated: &'static str) -> RunnerDirectory {
    RunnerDirectory { variable, dedicated }
}

const fn registry(variable: &'static str) -> RegistryVariable {
    RegistryVariable { variable, extra: false }
}

const fn extra_registry(variable: &'static str) -> RegistryVariable {
    RegistryVariable { variable, extra: true }
}

const NPM_DIRECTORIES: &[RunnerDirectory] = &[directory("npm_config_cache", "npm")];
const UV_DIRECTORIES: &[RunnerDirectory] = &[
    directory("UV_CACHE_DIR", "uv/cache"),
    directory("UV_TOOL_DIR", "uv/tools"),
    directory("UV_PYTHON_INSTALL_DIR", "uv/python"),
];
const PIPX_DIRECTORIES: &[RunnerDirectory] = &[
    directory("PIPX_HOME", "pipx"),
    directory("PIPX_BIN_DIR", "pipx/bin"),
    directory("PIPX_MAN_DIR", "pipx/man"),
    directory("PIP_CACHE_DIR", "pip"),
];
const BUN_DIRECTORIES: &[RunnerDirectory] = &[directory("BUN_INSTALL_CACHE_DIR", "bun")];

const NPM_REGISTRIES: &[RegistryVariable] = &[registry("npm_config_registry")];
const UV_REGISTRIES: &[RegistryVariable] = &[
    registry("UV_DEFAULT_INDEX"),
    registry("UV_INDEX_URL"),
    extra_registry("UV_INDEX"),
    extra_registry("UV_EXTRA_INDEX_URL"),
];
const PIP_REGISTRIES: &[RegistryVariable] = &[registry("PIP_INDEX_URL"), extra_registry("PIP_EXTRA_INDEX_URL")];
const BUN_REGISTRIES: &[RegistryVariable] = &[registry("BUN_CONFIG_REGISTRY"), registry("npm_config_registry")];

const NPM_REGISTRY: &[&str] = &["registry.npmjs.org:443"];
const PYPI: &[&str] = &["pypi.org:443", "files.pythonhosted.org:443"];

impl PackageRunner {
    /// The runner `command` (a bare name or a path; its file name counts) with `args` is: `npx`,
    /// `uvx`, `bunx`, or `npm`/`uv`/`pipx`/`bun` whose first arguments that are no flags are
    /// `exec`/`x`, `tool run`, `run`, `x`.
    pub fn of(command: &str, args: &[String]) -> Option<PackageRunner> {
        let program = Path::new(command).file_name()?.to_str()?;
        let mut positional = args.iter().map(String::as_str).filter(|arg| !arg.starts_with('-'));
        match program {
            "npx" => Some(PackageRunner::Npm),
            "uvx" => Some(PackageRunner::Uv),
            "bunx" => Some(PackageRunner::Bun),
            "npm" => matches!(positional.next(), Some("exec" | "x")).then_some(PackageRunner::Npm),
            "uv" => {
                (positional.next() == Some("tool") && positional.next() == Some("run")).then_some(PackageRunner::Uv)
            }
            "pipx" => (positional.next() == Some("run")).then_some(PackageRunner::Pipx),
            "bun" => (positional.next() == Some("x")).then_some(PackageRunner::Bun),
            _ => None,
        }
    }

    /// How odek names the runner to the operator.
    pub fn name(self) -> &'static str {
        match self {
            PackageRunner::Npm => "npx",
            PackageRunner::Uv => "uvx",
            PackageRunner::Pipx => "pipx run",
            PackageRunner::Bun => "bunx",
        }
    }

    fn directories(self) -> &'static [RunnerDirectory] {
        match self {
            PackageRunner::Npm => NPM_DIRECTORIES,
            PackageRunner::Uv => UV_DIRECTORIES,
            PackageRunner::Pipx => PIPX_DIRECTORIES,
            PackageRunner::Bun => BUN_DIRECTORIES,
        }
    }

    fn registry_variables(self) -> &'static [RegistryVariable] {
        match self {
            PackageRunner::Npm => NPM_REGISTRIES,
            PackageRunner::Uv => UV_REGISTRIES,
            PackageRunner::Pipx => PIP_REGISTRIES,
            PackageRunner::Bun => BUN_REGISTRIES,
        }
    }

    /// The registries a runner reaches when no variable names one.
    pub fn default_registries(self) -> &'static [&'static str] {
        match self {
            PackageRunner::Npm | PackageRunner::Bun => NPM_REGISTRY,
            PackageRunner::Uv | PackageRunner::Pipx => PYPI,
        }
    }

    /// Whether the variable `name` is one the grant is made from (a directory or a registry):
    /// the operator's to set, never a project's. npm reads its `npm_config_*` in any case.
    pub fn is_setting(self, name: &str) -> bool {
        let directories = self.directories().iter().map(|directory| directory.variable);
        let registries = self.registry_variables().iter().map(|registry| registry.variable);
        directories.chain(registries).any(|variable| same_variable(variable, name))
    }

    /// The registries (`host:port`) the runner would be granted with `server_env` (the entry's
    /// own variables) and odek's environment `operator_env`: what the approval card shows.
    pub fn registries(
        self,
        server_env: &BTreeMap<String, String>,
        operator_env: &BTreeMap<String, String>,
    ) -> Vec<String> {
        let (hosts, _, _) = self.registry_hosts(server_env, operator_env);
        hosts.iter().map(ToString::to_string).collect()
    }

    /// The registry hosts, the variables to hand the server (those that came from odek's
    /// environment) and the warnings.
    fn registry_hosts(
        self,
        server_env: &BTreeMap<String, String>,
        operator_env: &BTreeMap<String, String>,
    ) -> (Vec<HostPort>, Vec<(String, String)>, Vec<String>) {
        let (mut hosts, mut handed, mut warnings) = (Vec::new(), Vec::new(), Vec::new());
        let mut replaced = false;
        for registry in self.registry_variables() {
            if replaced && !registry.extra {
                continue;
            }
            let (value, from_operator) = match lookup(server_env, registry.variable) {
                Some(value) => (value, false),
                None => match lookup(operator_env, registry.variable) {
                    Some(value) => (value, true),
                    None => continue,
                },
            };
            let mut parsed = Vec::new();
            for url in value.split_whitespace() {
                match registry_host(url) {
                    Ok(host) => parsed.push(host),
                    Err(reason) => warnings.push(format!("{}: {reason}; not granted", registry.variable)),
                }
            }
            if parsed.is_empty() {
                continue;
            }
            replaced |= !registry.extra;
            hosts.extend(parsed);
            if from_operator {
                handed.push((registry.variable.to_owned(), value.to_owned()));
            }
        }
        if !replaced {
            hosts.extend(self.default_registries().iter().filter_map(|entry| parse_allow_host(entry).ok()));
        }
        let mut unique = Vec::with_capacity(hosts.len());
        for host in hosts {
            if !unique.contains(&host) {
                unique.push(host);
            }
        }
        (unique, handed, warnings)
    }
}

/// Variable names as the runner reads them: npm's `npm_config_*` in any case, the rest exactly.
fn same_variable(variable: &str, name: &str) -> bool {
    if variable.starts_with("npm_config_") { variable.eq_ignore_ascii_case(name) } else { variable == name }
}

/// The non-empty value of `variable` in `env` (any spelling npm accepts).
fn lookup<'a>(env: &'a BTreeMap<String, String>, variable: &str) -> Option<&'a str> {
    env.iter().find(|(name, value)| same_variable(variable, name) && !value.is_empty()).map(|(_, value)| value.as_str())
}

/// `host:port` of a registry URL (`https` 443, `http` 80 unless it says); one entry of a list
/// may be written `name=url` (uv's `UV_INDEX`). A URL with credentials is refused: they would
/// reach the server.
fn registry_host(text: &str) -> Result<HostPort, String> {
    let text = text.split_once('=').filter(|(name, _)| !name.contains(':')).map_or(text, |(_, url)| url);
    let url = url::Url::parse(text).map_err(|_| "is not a URL".to_owned())?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err("the URL holds credentials".to_owned());
    }
    let port = url.port_or_known_default().filter(|_| matches!(url.scheme(), "http" | "https"));
    let (Some(host), Some(port)) = (url.host_str(), port) else {
        return Err("is not an http(s) URL with a host".to_owned());
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let entry = if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") };
    parse_allow_host(&entry).map_err(|error| error.to_string())
}

/// What a runner server gets on top of its server policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunnerGrant {
    pub runner: PackageRunner,
    /// Its installation, read-only, where the run's policy does not open it already.
    pub readable: Vec<PathBuf>,
    /// Its directories: created, canonical, checked.
    pub writable: Vec<PathBuf>,
    /// Its registries.
    pub allow_hosts: Vec<HostPort>,
}

impl RunnerGrant {
    /// The line telling the operator what the server got (without the `odek: warning: `
    /// prefix).
    pub fn notice(&self, server: &str) -> String {
        let list =
            |paths: &[PathBuf]| paths.iter().map(|path| path.display().to_string()).collect::<Vec<_>>().join(", ");
        let hosts: Vec<String> = self.allow_hosts.iter().map(ToString::to_string).collect();
        let read = if self.readable.is_empty() { String::new() } else { format!("read {}, ", list(&self.readable)) };
        format!(
            "mcpclient {server}: sandbox: as a package runner ({}) it may also {read}write {} and reach {}",
            self.runner.name(),
            if self.writable.is_empty() { "nothing else".to_owned() } else { list(&self.writable) },
            if hosts.is_empty() { "no registry".to_owned() } else { hosts.join(", ") },
        )
    }
}

/// odek's own directory for `runner`'s files in `workspace`: `<cache>/odek/runners/<key>` where
/// `<cache>` is `$XDG_CACHE_HOME` (absolute, from odek's environment) else `~/.cache`, and `<key>`
/// the first 16 hex digits of the SHA-256 of the workspace's path, so no two workspaces share
/// what a confined server may write.
pub fn runner_cache_root(home: &Path, operator_env: &BTreeMap<String, String>, workspace: &Path) -> PathBuf {
    let cache = operator_env
        .get("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
        .unwrap_or_else(|| home.join(".cache"));
    let digest = Sha256::digest(workspace.as_os_str().as_encoded_bytes());
    let key: String = digest.iter().take(8).map(|byte| format!("{byte:02x}")).collect();
    cache.join("odek").join("runners").join(key)
}

/// The grant of `runner` for the server `server` confined under `policy`: each directory (the
/// server's `env` value — which only a global entry can set — else odek's own) created and
/// checked, each registry on the allow-list; the variables set in `server_env` so the runner uses
/// them. Returns the grant and the warnings (a directory or registry that was refused).
pub fn runner_grant(
    runner: PackageRunner,
    command: &str,
    server_env: &mut BTreeMap<String, String>,
    operator_env: &BTreeMap<String, String>,
    policy: &Policy,
) -> (RunnerGrant, Vec<String>) {
    let mut warnings = Vec::new();
    let home = operator_env.get("HOME").map(PathBuf::from).filter(|home| home.is_absolute());
    let home = home.map(|home| std::fs::canonicalize(&home).unwrap_or(home));
    let root = home.as_deref().map(|home| runner_cache_root(home, operator_env, &policy.workspace));
    let mut writable = Vec::new();
    let mut settings = Vec::new();
    for directory in runner.directories() {
        let named = lookup(server_env, directory.variable).map(|text| match (text.strip_prefix("~/"), &home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => PathBuf::from(text),
        });
        let path = match (named, &root) {
            (Some(path), _) if path.is_absolute() => path,
            (Some(path), _) => {
                warnings.push(format!(
                    "{} {} is not an absolute path; not granted",
                    directory.variable,
                    path.display()
                ));
                continue;
            }
            (None, Some(root)) => root.join(directory.dedicated),
            (None, None) => {
                warnings.push(format!("{}: no home directory to keep it in; not granted", directory.variable));
                continue;
            }
        };
        match prepare_directory(&path, home.as_deref(), &policy.protected) {
            Ok(path) => {
                settings.push((directory.variable.to_owned(), path.to_string_lossy().into_owned()));
                if !writable.iter().any(|granted: &PathBuf| path.starts_with(granted)) {
                    writable.push(path);
                }
            }
            Err(reason) => warnings.push(format!("{} {}: {reason}; not granted", directory.variable, path.display())),
        }
    }
    let (allow_hosts, handed, registry_warnings) = runner.registry_hosts(server_env, operator_env);
    warnings.extend(registry_warnings);
    let readable = installation_prefixes(runner, command, server_env, home.as_deref(), policy);
    for (variable, value) in settings.into_iter().chain(handed) {
        server_env.retain(|name, _| !same_variable(&variable, name));
        server_env.insert(variable, value);
    }
    (RunnerGrant { runner, readable, writable, allow_hosts }, warnings)
}

/// The installations the runner's programs run from, read-only, where the run's policy does not
/// already open them — for the runners that are scripts, whose interpreter and libraries live
/// beside them (npx: npm's `lib/` and the `node` it runs; pipx: its virtualenv), not for uv's and
/// bun's single binaries: `command` (and for npx `node`), found as the server would
/// find it (a path from the workspace, a bare name on the server's `PATH`), the directory above
/// its `bin/` directory — as named and as resolved (a link from `~/.local/bin` into a virtualenv)
/// — when that is no more than a prefix: never `/`, the home directory or anything holding it,
/// `~/.local`, or a path overlapping a protected one.
fn installation_prefixes(
    runner: PackageRunner,
    command: &str,
    server_env: &BTreeMap<String, String>,
    home: Option<&Path>,
    policy: &Policy,
) -> Vec<PathBuf> {
    let programs: &[&str] = match runner {
        PackageRunner::Npm => &[command, "node"],
        PackageRunner::Pipx => &[command],
        PackageRunner::Uv | PackageRunner::Bun => &[],
    };
    let search = server_env.get("PATH").map(String::as_str).unwrap_or_default();
    let granted = |path: &Path| {
        policy
            .readable
            .iter()
            .chain(&policy.writable)
            .chain([&policy.workspace, &policy.temp_dir])
            .any(|root| path.starts_with(root))
            || SYSTEM_READABLE.iter().any(|root| path.starts_with(root))
    };
    let mut prefixes: Vec<PathBuf> = Vec::new();
    for program in programs {
        let Some(found) = find_program(program, search, &policy.workspace) else { continue };
        let resolved = std::fs::canonicalize(&found).unwrap_or_else(|_| found.clone());
        for path in [found, resolved] {
            let Some(prefix) = path.parent().filter(|bin| bin.ends_with("bin")).and_then(Path::parent) else {
                continue;
            };
            let Ok(prefix) = std::fs::canonicalize(prefix) else { continue };
            let too_wide = home.is_some_and(|home| home.starts_with(&prefix) || prefix == home.join(".local"));
            if too_wide || refuse_forbidden(&prefix, home, &policy.protected).is_err() || granted(&prefix) {
                continue;
            }
            if !prefixes.contains(&prefix) {
                prefixes.push(prefix);
            }
        }
    }
    prefixes
}

/// Where `program` is found: a path (relative ones from the workspace), or the first of that name
/// in the directories of `search` — an executable file either way, so naming a path opens nothing
/// that holds no such program.
fn find_program(program: &str, search: &str, workspace: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |path: &PathBuf| {
        std::fs::metadata(path).is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        return Some(workspace.join(program)).filter(executable);
    }
    std::env::split_paths(search).filter(|dir| dir.is_absolute()).map(|dir| dir.join(program)).find(executable)
}

/// Checks `path` as written, creates it (mode 0700 for what is created), resolves it and checks
/// it again: a confined server must never write `/`, the home directory or anything holding it,
/// or anything holding or beneath a protected path — nor may asking for one create it there.
fn prepare_directory(path: &Path, home: Option<&Path>, protected: &[PathBuf]) -> Result<PathBuf, String> {
    if path.components().any(|part| part == std::path::Component::ParentDir) {
        return Err("it must not contain \"..\"".to_owned());
    }
    refuse_forbidden(path, home, protected)?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(|error| format!("cannot create it ({error})"))?;
    let path = std::fs::canonicalize(path).map_err(|error| format!("cannot resolve it ({error})"))?;
    refuse_forbidden(&path, home, protected)?;
    Ok(path)
}

fn refuse_forbidden(path: &Path, home: Option<&Path>, protected: &[PathBuf]) -> Result<(), String> {
    if path.parent().is_none() || home.is_some_and(|home| home.starts_with(path)) {
        return Err("it is / or holds the home directory".to_owned());
    }
    let overlaps = protected.iter().any(|protected| {
        let protected = std::fs::canonicalize(protected).unwrap_or_else(|_| protected.clone());
        path.starts_with(&protected) || protected.starts_with(path)
    });
    if overlaps {
        return Err("it overlaps a path the sandbox protects".to_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|arg| (*arg).to_owned()).collect()
    }

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(name, value)| ((*name).to_owned(), (*value).to_owned())).collect()
    }

    fn policy(workspace: &Path, protected: Vec<PathBuf>) -> Policy {
        Policy {
            workspace: workspace.to_path_buf(),
            temp_dir: PathBuf::from("/nonexistent/odek-run-tmp"),
            readable: Vec::new(),
            writable: Vec::new(),
            protected,
            network: odek_sandbox::Network::Deny,
            allow_hosts: Vec::new(),
            limits: odek_sandbox::Limits::default(),
        }
    }

    #[test]
    fn the_runners_are_recognised_by_program_and_subcommand() {
        let cases: &[(&str, &[&str], Option<PackageRunner>)] = &[
            ("npx", &["-y", "@scope/server@1.0.0"], Some(PackageRunner::Npm)),
            ("/usr/local/bin/npx", &["pkg"], Some(PackageRunner::Npm)),
            ("npm", &["exec", "--yes", "--", "pkg"], Some(PackageRunner::Npm)),
            ("npm", &["--yes", "x", "pkg"], Some(PackageRunner::Npm)),
            ("npm", &["run", "serve"], None),
            ("uvx", &["mcp-server-time"], Some(PackageRunner::Uv)),
            ("uv", &["tool", "run", "mcp-server-time"], Some(PackageRunner::Uv)),
            ("uv", &["run", "server.py"], None),
            ("pipx", &["run", "mcp-server-fetch"], Some(PackageRunner::Pipx)),
            ("pipx", &["install", "x"], None),
            ("bunx", &["pkg"], Some(PackageRunner::Bun)),
            ("bun", &["x", "pkg"], Some(PackageRunner::Bun)),
            ("bun", &["server.ts"], None),
            ("node", &["npx"], None),
            ("npx-like", &[], None),
        ];
        for (command, list, expected) in cases {
            assert_eq!(PackageRunner::of(command, &args(list)), *expected, "{command} {list:?}");
        }
    }

    #[test]
    fn registries_come_from_the_server_then_odek_then_the_default() {
        let none = BTreeMap::new();
        assert_eq!(PackageRunner::Npm.registries(&none, &none), vec!["registry.npmjs.org:443"]);
        assert_eq!(PackageRunner::Bun.registries(&none, &none), vec!["registry.npmjs.org:443"]);
        assert_eq!(PackageRunner::Uv.registries(&none, &none), vec!["pypi.org:443", "files.pythonhosted.org:443"]);
        let operator = env(&[("NPM_CONFIG_REGISTRY", "http://127.0.0.1:4873/")]);
        assert_eq!(PackageRunner::Npm.registries(&none, &operator), vec!["127.0.0.1:4873"]);
        let server = env(&[("npm_config_registry", "https://npm.example.com/")]);
        assert_eq!(PackageRunner::Npm.registries(&server, &operator), vec!["npm.example.com:443"]);
        let uv = env(&[
            ("UV_DEFAULT_INDEX", "https://pypi.internal/simple"),
            ("UV_INDEX", "extra=http://mirror:8080/simple"),
        ]);
        assert_eq!(PackageRunner::Uv.registries(&uv, &none), vec!["pypi.internal:443", "mirror:8080"]);
        let extra_only = env(&[("PIP_EXTRA_INDEX_URL", "https://extra.example/simple")]);
        assert_eq!(
            PackageRunner::Pipx.registries(&none, &extra_only),
            vec!["extra.example:443", "pypi.org:443", "files.pythonhosted.org:443"]
        );
    }

    #[test]
    fn a_registry_url_with_credentials_is_neither_granted_nor_handed_over_red() {
        let dir = tempfile::tempdir().unwrap();
        let operator = env(&[
            ("HOME", dir.path().to_str().unwrap()),
            ("PIP_INDEX_URL", "https://user:s3cret@pypi.internal/simple"),
        ]);
        let mut server_env = BTreeMap::new();
        let (grant, warnings) =
            runner_grant(PackageRunner::Pipx, "pipx", &mut server_env, &operator, &policy(dir.path(), Vec::new()));
        assert_eq!(grant.allow_hosts, PYPI.iter().map(|entry| parse_allow_host(entry).unwrap()).collect::<Vec<_>>());
        assert!(!server_env.contains_key("PIP_INDEX_URL"), "{server_env:?}");
        assert_eq!(warnings, vec!["PIP_INDEX_URL: the URL holds credentials; not granted"]);
    }

    #[test]
    fn odek_keeps_each_workspace_s_runner_files_apart_and_tells_the_runner() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let (one, two) = (dir.path().join("one"), dir.path().join("two"));
        for path in [&home, &one, &two] {
            std::fs::create_dir(path).unwrap();
        }
        let operator = env(&[("HOME", home.to_str().unwrap())]);
        let mut server_env = BTreeMap::new();
        let (grant, warnings) =
            runner_grant(PackageRunner::Uv, "uvx", &mut server_env, &operator, &policy(&one, Vec::new()));
        assert!(warnings.is_empty(), "{warnings:?}");
        let root = runner_cache_root(&home.canonicalize().unwrap(), &operator, &one);
        assert!(root.starts_with(home.canonicalize().unwrap().join(".cache/odek/runners")), "{root:?}");
        assert_eq!(grant.writable, vec![root.join("uv/cache"), root.join("uv/tools"), root.join("uv/python")]);
        assert_eq!(server_env.get("UV_CACHE_DIR").map(PathBuf::from), Some(root.join("uv/cache")));
        assert!(grant.writable.iter().all(|path| path.is_dir()));
        assert_ne!(root, runner_cache_root(&home, &operator, &two));
        assert_eq!(
            grant.notice("tm"),
            format!(
                "mcpclient tm: sandbox: as a package runner (uvx) it may also write {}, {}, {} and reach pypi.org:443, files.pythonhosted.org:443",
                root.join("uv/cache").display(),
                root.join("uv/tools").display(),
                root.join("uv/python").display()
            )
        );
    }

    #[test]
    fn a_directory_the_server_names_replaces_odek_s_and_npm_reads_any_case() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("npm-cache");
        let operator = env(&[("HOME", dir.path().to_str().unwrap())]);
        let mut server_env = env(&[("NPM_CONFIG_CACHE", cache.to_str().unwrap())]);
        let (grant, warnings) =
            runner_grant(PackageRunner::Npm, "npx", &mut server_env, &operator, &policy(dir.path(), Vec::new()));
        assert!(warnings.is_empty(), "{warnings:?}");
        let cache = cache.canonicalize().unwrap();
        assert_eq!(grant.writable, vec![cache.clone()]);
        assert_eq!(server_env, env(&[("npm_config_cache", cache.to_str().unwrap())]));
    }

    #[test]
    fn the_home_odek_state_and_root_are_never_granted_red() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let odek = home.join(".odek");
        std::fs::create_dir_all(&odek).unwrap();
        let policy = policy(dir.path(), vec![odek.clone()]);
        let operator = env(&[("HOME", home.to_str().unwrap())]);
        for named in ["~/", "/", dir.path().to_str().unwrap(), odek.join("cache").to_str().unwrap(), "relative/cache"] {
            let mut server_env = env(&[("BUN_INSTALL_CACHE_DIR", named)]);
            let (grant, warnings) = runner_grant(PackageRunner::Bun, "bunx", &mut server_env, &operator, &policy);
            assert!(grant.writable.is_empty(), "{named}: {grant:?}");
            assert_eq!(warnings.len(), 1, "{named}: {warnings:?}");
            assert!(warnings[0].starts_with("BUN_INSTALL_CACHE_DIR "), "{warnings:?}");
        }
        let mut server_env = BTreeMap::new();
        let operator = env(&[("HOME", home.to_str().unwrap()), ("XDG_CACHE_HOME", odek.to_str().unwrap())]);
        let (grant, warnings) = runner_grant(PackageRunner::Bun, "bunx", &mut server_env, &operator, &policy);
        assert!(grant.writable.is_empty(), "{grant:?}");
        assert!(warnings[0].ends_with("it overlaps a path the sandbox protects; not granted"), "{warnings:?}");
    }

    #[test]
    fn the_runner_s_installation_is_readable_but_never_the_home_or_local_red() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = root.join("home");
        let venv = home.join(".local/share/pipx/venvs/pipx");
        for bin in [venv.join("bin"), home.join(".local/bin"), home.join("bin"), root.join("tools/bin")] {
            std::fs::create_dir_all(bin).unwrap();
        }
        for program in
            [venv.join("bin/pipx"), home.join("bin/npx"), root.join("tools/bin/npx"), root.join("tools/bin/uvx")]
        {
            std::fs::write(&program, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::os::unix::fs::symlink(venv.join("bin/pipx"), home.join(".local/bin/pipx")).unwrap();
        let workspace = root.join("work");
        std::fs::create_dir(&workspace).unwrap();
        let policy = policy(&workspace, Vec::new());
        let search = format!(
            "{}:{}:{}",
            home.join(".local/bin").display(),
            home.join("bin").display(),
            root.join("tools/bin").display()
        );
        let server_env = env(&[("PATH", &search)]);
        let prefixes = |runner, command| installation_prefixes(runner, command, &server_env, Some(&home), &policy);
        // Through ~/.local/bin (not granted) into its virtualenv (granted).
        assert_eq!(prefixes(PackageRunner::Pipx, "pipx"), vec![venv]);
        // In ~/bin: its prefix would be the home.
        assert!(prefixes(PackageRunner::Npm, "npx").is_empty());
        let tools_npx = root.join("tools/bin/npx");
        assert_eq!(prefixes(PackageRunner::Npm, tools_npx.to_str().unwrap()), vec![root.join("tools")]);
        // A path to no program opens nothing.
        std::fs::create_dir_all(root.join("private/bin")).unwrap();
        let missing = root.join("private/bin/npx");
        assert!(prefixes(PackageRunner::Npm, missing.to_str().unwrap()).is_empty());
        // A single binary needs nothing beside it.
        assert!(prefixes(PackageRunner::Uv, "uvx").is_empty());
        let mut readable = policy.clone();
        readable.readable.push(root.join("tools"));
        let command = tools_npx.to_str().unwrap();
        assert!(installation_prefixes(PackageRunner::Npm, command, &server_env, Some(&home), &readable).is_empty());
    }

    #[test]
    fn only_the_runner_s_own_variables_are_settings() {
        assert!(PackageRunner::Npm.is_setting("npm_config_cache"));
        assert!(PackageRunner::Npm.is_setting("NPM_CONFIG_REGISTRY"));
        assert!(!PackageRunner::Npm.is_setting("npm_config_offline"));
        assert!(PackageRunner::Uv.is_setting("UV_CACHE_DIR"));
        assert!(!PackageRunner::Uv.is_setting("uv_cache_dir"));
        assert!(PackageRunner::Pipx.is_setting("PIPX_HOME"));
        assert!(PackageRunner::Bun.is_setting("npm_config_registry"));
    }
}
