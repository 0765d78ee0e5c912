//! Config loading for the `odek` binary (spec `config.md` §1–§12): `~/.odek/secrets.env`,
//! then the global `~/.odek/config.json`, then the untrusted project `./odek.json` and, \[beyond\],
//! the project's `./.mcp.json` (its `mcpServers`, the format other agent CLIs use, read as
//! project-level servers under the same rules), merged into one [`Config`] by [`load_config`];
//! then the `ODEK_*` environment layer and the CLI flags on top, with the API key resolved, by
//! [`resolve_effective`].
//!
//! Start at [`load_config`], then [`resolve_effective`]. Every input comes from a
//! [`ConfigSources`] (home, working directory, an environment snapshot), so tests never touch the
//! real home or environment; the `ODEK_*` layer reads [`LoadedConfig::env`], never the process.
//! Nothing here prints: warnings are returned without the `odek: warning: ` prefix, and the
//! `secrets.env` variables are returned for the caller to inject with
//! [`SecretsEnv::apply_to_process_env`].
//!
//! Paths in messages: the global file is shown as its full path
//! (`/home/u/.odek/config.json`); the project file always as `./odek.json`, the spelling the
//! spec's warnings use. Warnings that the spec words with `~/.odek/…` keep that spelling.
//!
//! Processing order for each file: bounded read (5 MiB) → JSON object check → (`./.mcp.json`
//! only) its server map kept alone → (global only) secret-looking `env` entries that only
//! reference a variable become `secret_env` → (project only) `secret_env` refused, §9
//! restrictions and credential-named headers strip operator-only keys, `auto_approve` and
//! prices, and secret-looking `env` entries that reference a variable are dropped → server entry
//! keys checked (typo warnings, `type`, `headers`, the keys of other clients' formats) →
//! `${VAR}` substitution (in project files never of a secret: by name, by origin or by value) →
//! typed decode of the known keys (a wrong type names the key) → range checks → merge, then each
//! server's sandbox and `cwd` settled by its origin.

mod api_key;
mod core_keys;
mod dangerous;
mod effective;
mod elicitation;
mod env_layer;
mod error;
mod events;
pub(crate) mod file;
mod limits;
mod mcp_servers;
mod planning;
mod project_restrictions;
mod providers;
mod sandbox;
mod secrets_env;
mod serve;
mod server_keys;
mod subagent;
mod substitution;
mod tools;
mod variable_name;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use odek_contract::canonical_json::sorted_keys;
use odek_mcp::server_config::ServerEntry;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

pub use self::api_key::{API_KEY_VARIABLES, resolve_api_key};
pub use self::core_keys::{
    CoreConfig, DEFAULT_APPROVAL_TIMEOUT_SECONDS, DEFAULT_BASE_URL, DEFAULT_MAX_CONCURRENCY, DEFAULT_MAX_ITERATIONS,
    DEFAULT_MAX_TOOL_PARALLEL, DEFAULT_MODEL,
};
pub use self::dangerous::{DangerAction, DangerousConfig, NonInteractive, parse_max_risk};
pub use self::effective::{CliOverrides, EffectiveConfig, apply_cli_overrides, resolve_effective};
pub use self::elicitation::ElicitationConfig;
pub use self::env_layer::{EnvLayer, env_bool, env_count, read_env_layer};
pub use self::error::ConfigError;
pub use self::events::{DEFAULT_HEARTBEAT_SECONDS, EventsConfig};
pub use self::file::MAX_CONFIG_BYTES;
pub use self::limits::{
    DEADLINE_KEYS, DEFAULT_SHUTDOWN_DRAIN_SECONDS, LimitsConfig, MAX_DEADLINE_SECONDS, ModelPrice, PRICE_KEYS,
};
pub use self::mcp_servers::{
    MCP_JSON_MAP_KEY, McpServerConfig, SERVER_MAP_KEYS, ServerOrigin, project_server_auto_approved,
};
pub use self::planning::{
    DEFAULT_PLAN_MAX_RENDER_CHARS, DEFAULT_PLAN_MAX_STEPS, PLAN_MAX_RENDER_CHARS_RANGE, PLAN_MAX_STEPS_RANGE,
    PlanningConfig,
};
pub use self::project_restrictions::{OPERATOR_ONLY_KEYS, OPERATOR_ONLY_NESTED_KEYS, is_sandbox_knob};
pub use self::providers::{
    FallbackTarget, NamedProvider, ProviderKind, ResolvedProvider, fallback_chain, resolve_provider, split_fallback,
};
pub use self::sandbox::{SandboxConfig, apply_switches as apply_sandbox_switches};
pub use self::secrets_env::{SecretsEnv, load_secrets_env, parse_secrets_text};
pub use self::serve::{SERVE_MAX_CONCURRENT_RUNS, ServeConfig};
pub use self::server_keys::{SERVER_ENTRY_KEYS, SUPPORTED_SERVER_TYPES, likely_typo_of};
pub use self::subagent::{
    BudgetInherit, DEFAULT_PROFILE, DEFAULT_SUBAGENT_MAX_DEPTH, DEFAULT_SUBAGENT_MAX_ITERATIONS, NO_PROFILE, Profile,
    Profiles, SUBAGENT_MAX_CONCURRENCY, SUBAGENT_MAX_DEPTH, SUBAGENT_MAX_ITERATIONS, SUBAGENT_MAX_TIMEOUT_SECONDS,
    SubagentConfig,
};
pub use self::tools::{ToolsConfig, tool_allowed};

use self::core_keys::{CoreFile, check_counts_not_negative};
use self::dangerous::{DangerousFile, validate_dangerous};
use self::elicitation::{ElicitationFile, check_elicitation, merge_elicitation};
use self::events::{EventsFile, check_events, merge_events};
use self::file::{Bounded, is_group_or_world_accessible, open_if_exists, permission_bits, read_to_limit, render_mode};
use self::limits::{LimitsFile, check_deadlines, check_limits_not_negative, merge_limits};
use self::mcp_servers::{
    check_secret_env, default_protocol_version, join_project_servers, merge_mcp_servers, note_server_variables,
    pass_env_references_as_secrets, register_server_secret_values, servers_of_file, settle_server_cwd,
    settle_server_sandbox,
};
use self::planning::{PlanningFile, merge_planning};
use self::project_restrictions::{
    refuse_project_env_references, refuse_project_secret_env, strip_credential_headers, strip_operator_only,
};
use self::providers::{ProviderFile, check_fallback_models, check_providers};
use self::sandbox::{SandboxFile, merge_sandbox};
use self::serve::{ServeFile, validate_serve};
use self::server_keys::check_server_entries;
use self::subagent::{ProfileFile, SubagentFile, validate_profiles, validate_subagent};
use self::substitution::{ProtectedNames, Trust, secret_env_references, substitute_config_vars};
use self::tools::{ToolsFile, merge_tools};

/// How the project file is named in every message.
pub const PROJECT_DISPLAY: &str = "./odek.json";

/// How the project's `.mcp.json` is named in every message.
pub const MCP_JSON_DISPLAY: &str = "./.mcp.json";

/// Where config comes from. Tests build one by hand; `main` uses [`ConfigSources::from_process`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigSources {
    /// The directory holding `.odek` (normally `$HOME`).
    pub home: PathBuf,
    /// The working directory: `./odek.json` is looked up here (no parent search), and it is the
    /// `dir` of every approval key. Expected to be absolute.
    pub cwd: PathBuf,
    /// A snapshot of the environment before `secrets.env` is applied.
    pub env: BTreeMap<String, String>,
}

impl ConfigSources {
    /// The real process: `$HOME` (or the platform's home directory), the current directory, and
    /// the environment. Variables whose name is not UTF-8 are left out of the snapshot; values
    /// that are not UTF-8 are kept lossily (they are present, which is what "never overwrite"
    /// needs).
    pub fn from_process() -> Result<Self, ConfigError> {
        let env: BTreeMap<String, String> = std::env::vars_os()
            .filter_map(|(name, value)| Some((name.into_string().ok()?, value.to_string_lossy().into_owned())))
            .collect();
        let home = env
            .get("HOME")
            .filter(|home| !home.is_empty())
            .map(PathBuf::from)
            .or_else(std::env::home_dir)
            .ok_or(ConfigError::NoHome)?;
        let cwd = std::env::current_dir().map_err(ConfigError::CurrentDir)?;
        Ok(ConfigSources { home, cwd, env })
    }

    /// `~/.odek`.
    pub fn odek_dir(&self) -> PathBuf {
        self.home.join(".odek")
    }

    /// `~/.odek/config.json`.
    pub fn global_config_path(&self) -> PathBuf {
        self.odek_dir().join("config.json")
    }

    /// `~/.odek/secrets.env`.
    pub fn secrets_env_path(&self) -> PathBuf {
        self.odek_dir().join("secrets.env")
    }

    /// `./odek.json`.
    pub fn project_config_path(&self) -> PathBuf {
        self.cwd.join("odek.json")
    }

    /// `./.mcp.json`.
    pub fn mcp_json_path(&self) -> PathBuf {
        self.cwd.join(".mcp.json")
    }
}

/// Both files merged over the defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    /// The top-level keys: model, provider, endpoint, iterations, thinking, streaming, prompts.
    pub core: CoreConfig,
    /// The `limits` section: budgets, prices, caps and \[beyond\] the liveness deadlines.
    pub limits: LimitsConfig,
    /// \[beyond\] The `events` section: the heartbeat interval.
    pub events: EventsConfig,
    /// Every configured server, enabled or not, in ascending byte order of name.
    pub mcp_servers: Vec<McpServerConfig>,
    /// Global file only.
    pub dangerous: DangerousConfig,
    /// Global whitelist; blacklist from both files.
    pub tools: ToolsConfig,
    /// The `planning` section: the `plan` tool and its caps.
    pub planning: PlanningConfig,
    /// Global file only.
    pub subagent: SubagentConfig,
    /// Global file only, plus the built-in `default`.
    pub profiles: Profiles,
    /// \[beyond\] `checks`: shell command lines run on every final answer (`--check`); the
    /// global file's, then the project's (a project may add checks: they only make a run
    /// stricter, and they run under the danger policy like any shell command).
    pub checks: Vec<String>,
    /// \[beyond\] Global file only: named model endpoints (`--provider <name>`).
    pub providers: BTreeMap<String, NamedProvider>,
    /// \[beyond\] Global file only: `<provider>/<model>` entries a call moves to when its
    /// provider fails before answering.
    pub fallback_models: Vec<String>,
    /// \[beyond\] The `sandbox` section (global, tightened by the project).
    pub sandbox: SandboxConfig,
    /// `odek serve`'s bounds (operator-only).
    pub serve: ServeConfig,
    /// \[beyond\] `elicitation`, `elicitation_timeout_seconds`: how MCP servers' requests for
    /// input are answered.
    pub elicitation: ElicitationConfig,
}

/// The outcome of [`load_config`]. `Debug` lists the environment's names, not its values.
#[derive(Clone, PartialEq)]
pub struct LoadedConfig {
    /// The merged configuration.
    pub config: Config,
    /// What `secrets.env` contributed; `main` applies it to the process before starting threads.
    pub secrets: SecretsEnv,
    /// The environment snapshot plus the injected `secrets.env` variables: what `${VAR}` saw, and
    /// what later layers (`ODEK_*`, `ODEK_APPROVE_MCP`) should read.
    pub env: BTreeMap<String, String>,
    /// Warnings in the order they arose, without the `odek: warning: ` prefix.
    pub warnings: Vec<String>,
}

impl std::fmt::Debug for LoadedConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedConfig")
            .field("config", &self.config)
            .field("secrets", &self.secrets)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("warnings", &self.warnings)
            .finish()
    }
}

/// Registers for redaction the value of every variable whose name is sensitive
/// (`loop-and-sessions.md` §9: "env values whose names are sensitive" are known secrets), so a
/// token that only lives in odek's environment is redacted wherever a tool, a server or the
/// model repeats it.
fn register_sensitive_env_values(env: &BTreeMap<String, String>) {
    for (name, value) in env {
        if odek_contract::secret_names::is_sensitive_env_name(name) {
            odek_contract::redaction::register_secret(value);
        }
    }
}

/// Loads `secrets.env`, the global file and the project file, in that order (spec §1).
pub fn load_config(sources: &ConfigSources) -> Result<LoadedConfig, ConfigError> {
    load_config_from(sources, None, None)
}

/// Where warnings and errors about the MCP servers a face's client offered say they come from.
pub const CLIENT_SERVERS_DISPLAY: &str = "the client's mcpServers";

/// \[beyond\] As [`load_config`], with the MCP servers a face's client offered (an editor's
/// `mcpServers`), as a map of name → entry in the config files' format. They are project servers
/// in every way: the project file's restrictions, approval before anything is spawned, the
/// sandbox; a name the project files define too is refused.
pub fn load_config_with_client_servers(
    sources: &ConfigSources,
    servers: &Map<String, Value>,
) -> Result<LoadedConfig, ConfigError> {
    load_config_from(sources, None, Some(servers))
}

/// \[beyond\] As [`load_config`], for an untrusted sub-agent confined by the sandbox, which may
/// not read `~/.odek`: the global file's bytes as its parent handed them over, and no
/// `secrets.env` (its names never reach a child anyway).
pub fn load_handed_config(sources: &ConfigSources, global: &[u8]) -> Result<LoadedConfig, ConfigError> {
    load_config_from(sources, Some(global), None)
}

fn load_config_from(
    sources: &ConfigSources,
    handed_global: Option<&[u8]>,
    client_servers: Option<&Map<String, Value>>,
) -> Result<LoadedConfig, ConfigError> {
    let mut warnings = Vec::new();
    let secrets = match handed_global {
        Some(_) => SecretsEnv::default(),
        None => load_secrets_env(&sources.secrets_env_path(), &sources.env, &mut warnings)?,
    };
    let mut env = sources.env.clone();
    for (name, value) in &secrets.injected {
        env.entry(name.clone()).or_insert_with(|| value.clone());
    }
    register_sensitive_env_values(&env);

    let global_path = sources.global_config_path();
    let global_display = global_path.display().to_string();
    let mut protected = ProtectedNames { secrets_env: secrets.names.clone(), secret_env: Vec::new() };
    let global_object = match handed_global {
        Some(bytes) => Some(config_object(bytes, &global_display)?),
        None => read_config_object(&global_path, &global_display, Trust::Operator, &mut warnings)?,
    };
    let mut passed_by_reference = Vec::new();
    let global = match global_object {
        Some(mut top) => {
            passed_by_reference = pass_env_references_as_secrets(&global_display, &mut top, &mut warnings);
            protected.secret_env = secret_env_references(&top);
            parse_config_file(&global_display, top, Trust::Operator, &env, &protected, &mut warnings)?
        }
        None => ParsedFile::default(),
    };
    check_secret_env(&global_display, &global.servers, &passed_by_reference, &mut warnings)?;
    register_server_secret_values(&global.servers);
    let project_path = sources.project_config_path();
    let project = match read_config_object(&project_path, PROJECT_DISPLAY, Trust::Project, &mut warnings)? {
        Some(top) => parse_config_file(PROJECT_DISPLAY, top, Trust::Project, &env, &protected, &mut warnings)?,
        None => ParsedFile::default(),
    };
    let mcp_json = match read_config_object(&sources.mcp_json_path(), MCP_JSON_DISPLAY, Trust::Project, &mut warnings)?
    {
        Some(mut top) => {
            // Only the server map: the rest of the file belongs to whichever CLI wrote it.
            top.retain(|key, _| key == MCP_JSON_MAP_KEY);
            parse_config_file(MCP_JSON_DISPLAY, top, Trust::Project, &env, &protected, &mut warnings)?
        }
        None => ParsedFile::default(),
    };
    let mut project_servers =
        join_project_servers(MCP_JSON_DISPLAY, project.servers, mcp_json.servers, PROJECT_DISPLAY)?;
    let mut project_variables = project.server_variables;
    project_variables.extend(mcp_json.server_variables);
    if let Some(servers) = client_servers {
        let mut top = Map::new();
        top.insert(MCP_JSON_MAP_KEY.to_owned(), Value::Object(sorted_keys(servers.clone())));
        let client = parse_config_file(CLIENT_SERVERS_DISPLAY, top, Trust::Project, &env, &protected, &mut warnings)?;
        project_servers = join_project_servers(
            CLIENT_SERVERS_DISPLAY,
            project_servers,
            client.servers,
            "./odek.json or ./.mcp.json",
        )?;
        project_variables.extend(client.server_variables);
    }
    register_server_secret_values(&project_servers);

    let mut core = CoreConfig::default();
    core.apply_file(&global.core);
    core.apply_file(&project.core);
    let limits = merge_limits(&global.limits, &project.limits, &mut warnings);
    let events = merge_events(global.policy.events.as_ref(), project.policy.events.as_ref(), &mut warnings);
    let elicitation = merge_elicitation(&global.elicitation, &project.elicitation, &mut warnings);
    let mut mcp_servers = merge_mcp_servers(&global.servers, project_servers);
    note_server_variables(&mut mcp_servers, global.server_variables, project_variables);
    settle_server_sandbox(&mut mcp_servers, &global.servers, &sources.home, &sources.cwd, &mut warnings);
    settle_server_cwd(&mut mcp_servers, &sources.home, &sources.cwd, &mut warnings);
    let named = |policy: &PolicySections| policy.mcp_protocol_version.clone().filter(|version| !version.is_empty());
    let protocol_version = named(&project.policy)
        .map(|version| (PROJECT_DISPLAY, version))
        .or(named(&global.policy).map(|version| (&*global_display, version)));
    default_protocol_version(&mut mcp_servers, protocol_version)?;
    // The project's `dangerous`, `subagent`, `profiles` and `tools.enabled` were stripped (§9).
    let dangerous = validate_dangerous(global.policy.dangerous.as_ref(), &mut warnings);
    let tools = merge_tools(global.policy.tools.as_ref(), project.policy.tools.as_ref());
    let planning = merge_planning(
        &global_display,
        global.policy.planning.as_ref(),
        project.policy.planning.as_ref(),
        &mut warnings,
    );
    let sandbox = merge_sandbox(
        &global_display,
        global.policy.sandbox.as_ref(),
        project.policy.sandbox.as_ref(),
        &sources.home,
        &mut warnings,
    )?;
    let subagent = validate_subagent(global.policy.subagent.as_ref(), &mut warnings);
    let profiles = validate_profiles(global.policy.profiles.as_ref(), &mut warnings);
    let serve = validate_serve(global.policy.serve.as_ref(), &mut warnings);
    let checks = merge_checks([&global.policy.checks, &project.policy.checks].into_iter().flatten().flatten());
    // `providers` and `fallback_models` are operator-only: the project's were stripped.
    let providers = check_providers(&global_display, global.policy.providers.as_ref())?;
    let fallback_models = global.policy.fallback_models.clone().unwrap_or_default();
    check_fallback_models(&global_display, &fallback_models, &providers)?;
    let config = Config {
        core,
        limits,
        events,
        mcp_servers,
        dangerous,
        tools,
        planning,
        subagent,
        profiles,
        checks,
        providers,
        fallback_models,
        sandbox,
        serve,
        elicitation,
    };
    Ok(LoadedConfig { config, secrets, env, warnings })
}

/// One file after decoding; the empty default stands for a missing file.
#[derive(Debug, Default)]
struct ParsedFile {
    core: CoreFile,
    limits: LimitsFile,
    servers: BTreeMap<String, ServerEntry>,
    /// Server name → the variables its entry read (`Substituted::server_variables`).
    server_variables: BTreeMap<String, Vec<String>>,
    policy: PolicySections,
    elicitation: ElicitationFile,
}

/// The §7/§8 sections of one file, decoded but not yet validated.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct PolicySections {
    dangerous: Option<DangerousFile>,
    tools: Option<ToolsFile>,
    planning: Option<PlanningFile>,
    subagent: Option<SubagentFile>,
    profiles: Option<BTreeMap<String, ProfileFile>>,
    events: Option<EventsFile>,
    checks: Option<Vec<String>>,
    providers: Option<BTreeMap<String, ProviderFile>>,
    fallback_models: Option<Vec<String>>,
    sandbox: Option<SandboxFile>,
    serve: Option<ServeFile>,
    /// \[beyond\] The MCP revision every server entry without a `protocol_version` asks for.
    mcp_protocol_version: Option<String>,
}

/// Check command lines from their sources in order (the global file's, the project's, then a
/// caller's); blank and repeated lines are dropped.
pub(crate) fn merge_checks<'a>(sources: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    let mut checks: Vec<String> = Vec::new();
    for check in sources {
        if !check.trim().is_empty() && !checks.contains(check) {
            checks.push(check.clone());
        }
    }
    checks
}

/// The structured sections of a file (the core keys are decoded separately as [`CoreFile`]).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SectionsFile {
    limits: Option<LimitsFile>,
    mcp_servers: Option<BTreeMap<String, ServerEntry>>,
    #[serde(rename = "mcpServers")]
    claude_style_mcp_servers: Option<BTreeMap<String, ServerEntry>>,
}

/// Reads one config file through the 5 MiB limit and parses its top-level object. `None` when
/// the file does not exist. The global file's permissions are checked on the open handle.
fn read_config_object(
    path: &Path,
    display: &str,
    trust: Trust,
    warnings: &mut Vec<String>,
) -> Result<Option<Map<String, Value>>, ConfigError> {
    let read_error = |source| ConfigError::Read { path: display.to_owned(), source };
    let Some(file) = open_if_exists(path).map_err(read_error)? else {
        return Ok(None);
    };
    if trust == Trust::Operator {
        let mode = permission_bits(&file).map_err(read_error)?;
        if is_group_or_world_accessible(mode) {
            let mode = render_mode(mode);
            warnings.push(format!(
                "~/.odek/config.json is readable by group or others (mode {mode}); run chmod 600 ~/.odek/config.json"
            ));
        }
    }
    let bytes = match read_to_limit(&file, MAX_CONFIG_BYTES).map_err(read_error)? {
        Bounded::Contents(bytes) => bytes,
        Bounded::TooLarge { size } => {
            return Err(ConfigError::TooLarge { path: display.to_owned(), size });
        }
    };
    config_object(&bytes, display).map(Some)
}

/// A config file's bytes parsed as its top-level object.
fn config_object(bytes: &[u8], display: &str) -> Result<Map<String, Value>, ConfigError> {
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(ConfigError::TooLarge { path: display.to_owned(), size: bytes.len() as u64 });
    }
    let value: Value =
        serde_json::from_slice(bytes).map_err(|source| ConfigError::Parse { path: display.to_owned(), source })?;
    match value {
        // Keys in ascending order at every depth, whatever order `serde_json` keeps: warnings
        // and server entries are reported in that order.
        Value::Object(top) => Ok(sorted_keys(top)),
        _ => Err(ConfigError::NotAnObject { path: display.to_owned() }),
    }
}

fn parse_config_file(
    display: &str,
    mut top: Map<String, Value>,
    trust: Trust,
    env: &BTreeMap<String, String>,
    protected: &ProtectedNames,
    warnings: &mut Vec<String>,
) -> Result<ParsedFile, ConfigError> {
    if trust == Trust::Project {
        refuse_project_secret_env(display, &top)?;
        strip_operator_only(display, &mut top, warnings);
        strip_credential_headers(display, &mut top, warnings);
        refuse_project_env_references(display, &mut top, warnings);
    }
    check_server_entries(display, &mut top, trust, warnings);
    let mut root = Value::Object(top);
    let substituted = substitute_config_vars(display, &mut root, env, trust, protected, warnings);
    let mut parsed = decode_config_file(display, &root).map_err(|err| match err {
        ConfigError::KeyType { path, key, detail } => {
            ConfigError::KeyType { path, key, detail: substituted.expansions.mask(&detail) }
        }
        other => other,
    })?;
    parsed.server_variables = substituted.server_variables;
    Ok(parsed)
}

/// The typed sections of a file after substitution.
fn decode_config_file(display: &str, root: &Value) -> Result<ParsedFile, ConfigError> {
    check_object_shapes(display, root)?;
    let core: CoreFile = decode_known_keys(display, root)?;
    check_counts_not_negative(display, &core)?;
    let sections: SectionsFile = decode_known_keys(display, root)?;
    let limits = sections.limits.unwrap_or_default();
    check_limits_not_negative(display, &limits)?;
    check_deadlines(display, &limits)?;
    let servers = servers_of_file(display, sections.mcp_servers, sections.claude_style_mcp_servers)?;
    let policy: PolicySections = decode_known_keys(display, root)?;
    if let Some(events) = &policy.events {
        check_events(display, events)?;
    }
    let elicitation: ElicitationFile = decode_known_keys(display, root)?;
    check_elicitation(display, &elicitation)?;
    Ok(ParsedFile { core, limits, servers, server_variables: BTreeMap::new(), policy, elicitation })
}

/// The top-level keys that decode into a struct (`null` allowed, meaning absent).
const STRUCT_SECTIONS: &[&str] = &["limits", "dangerous", "tools", "planning", "subagent", "events", "serve"];

/// Serde would decode a struct from a JSON array positionally (`"limits": [60]`), so the keys
/// that hold objects are checked at the JSON level first: each of [`STRUCT_SECTIONS`] (object or
/// `null`), each `limits.model_prices.<model>`, each `mcp_servers.<name>` /
/// `mcpServers.<name>`, each `profiles.<name>` and its `tools` (object or `null`).
fn check_object_shapes(display: &str, root: &Value) -> Result<(), ConfigError> {
    let mut objects: Vec<(String, &Value)> = Vec::new();
    for section in STRUCT_SECTIONS {
        if let Some(value) = root.get(*section).filter(|value| !value.is_null()) {
            objects.push(((*section).to_owned(), value));
        }
    }
    if let Some(Value::Object(profiles)) = root.get("profiles") {
        for (name, profile) in profiles {
            objects.push((format!("profiles.{name}"), profile));
            if let Some(tools) = profile.get("tools").filter(|tools| !tools.is_null()) {
                objects.push((format!("profiles.{name}.tools"), tools));
            }
        }
    }
    if let Some(Value::Object(providers)) = root.get("providers") {
        objects.extend(providers.iter().map(|(name, entry)| (format!("providers.{name}"), entry)));
    }
    if let Some(Value::Object(prices)) = root.get("limits").and_then(|limits| limits.get("model_prices")) {
        objects.extend(prices.iter().map(|(model, price)| (format!("limits.model_prices.{model}"), price)));
    }
    for map_key in SERVER_MAP_KEYS {
        if let Some(Value::Object(servers)) = root.get(*map_key) {
            objects.extend(servers.iter().map(|(name, entry)| (format!("{map_key}.{name}"), entry)));
        }
    }
    for (key, value) in objects {
        if let Err(source) = Map::<String, Value>::deserialize(value) {
            return Err(ConfigError::KeyType { path: display.to_owned(), key, detail: source.to_string() });
        }
    }
    Ok(())
}

/// Decodes the known keys of a file; a wrong JSON type is fatal and names the key by its dotted
/// path (`config <path>: limits.max_tool_calls: invalid type: …`).
fn decode_known_keys<T: DeserializeOwned>(display: &str, root: &Value) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(root).map_err(|err| ConfigError::KeyType {
        path: display.to_owned(),
        key: err.path().to_string(),
        detail: err.into_inner().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_are_the_global_files_then_the_projects_without_blanks_or_repeats() {
        let global = ["cargo test".to_owned(), " ".to_owned()];
        let project = ["cargo clippy".to_owned(), "cargo test".to_owned()];
        assert_eq!(merge_checks(global.iter().chain(&project)), ["cargo test", "cargo clippy"]);
        assert_eq!(merge_checks(&project[..1]), ["cargo clippy"]);
        assert!(merge_checks(&[]).is_empty());
    }
}
