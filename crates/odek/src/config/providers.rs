//! \[beyond\] Which model API a run talks to: the wire kinds (`openai`, `openai-responses`,
//! `anthropic`), the named `providers` of the global file, `fallback_models`, and each one's
//! endpoint and key. Start at [`resolve_provider`] (one name to one endpoint) and
//! [`fallback_chain`].
//!
//! Rules:
//! - `provider` names a kind or a key of `providers`; a `providers` key may not be a kind's
//!   name (nor `replay`), so a name always means one thing.
//! - `providers` and `fallback_models` are operator-only: a project file can neither add an
//!   endpoint nor send headers anywhere.
//! - Keys never cross vendors: `anthropic` reads `ANTHROPIC_API_KEY` then the global `api_key`;
//!   `openai-responses` reads `ODEK_API_KEY`, the global `api_key`, then `OPENAI_API_KEY`;
//!   `openai` keeps spec §4's order. A named provider reads only the variable its `api_key_env`
//!   names (none: no key; its `headers` may carry the credential).
//! - A kind's endpoint is `base_url` when one is set (the file's, `ODEK_BASE_URL`, the flag),
//!   else the kind's public one; a named provider's is its own `base_url`, else its kind's.
//! - Header values (after `${VAR}` substitution) and keys are registered for redaction when
//!   resolved.

use std::collections::BTreeMap;

use odek_contract::quoting::quote;
use serde::Deserialize;

use super::{ConfigError, CoreConfig};
use crate::config::core_keys::DEFAULT_BASE_URL;

/// The kinds of model API odek speaks, by the name `provider` and `providers.*.kind` use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// OpenAI-compatible `/chat/completions` (DeepSeek, OpenAI, vLLM, llama.cpp, gateways).
    OpenAi,
    /// OpenAI's `/responses`.
    OpenAiResponses,
    /// Anthropic's `/messages`.
    Anthropic,
}

impl ProviderKind {
    /// Every kind with its name.
    pub const ALL: [(&'static str, ProviderKind); 3] = [
        ("openai", ProviderKind::OpenAi),
        ("openai-responses", ProviderKind::OpenAiResponses),
        ("anthropic", ProviderKind::Anthropic),
    ];

    /// The kind `name` names, if any.
    pub fn parse(name: &str) -> Option<ProviderKind> {
        ProviderKind::ALL.iter().find(|(known, _)| *known == name).map(|(_, kind)| *kind)
    }

    /// The vendor's public endpoint, used when no `base_url` is set.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => DEFAULT_BASE_URL,
            ProviderKind::OpenAiResponses => "https://api.openai.com/v1",
            ProviderKind::Anthropic => odek_llm::DEFAULT_ANTHROPIC_BASE_URL,
        }
    }

    /// The environment variables consulted for this kind's key, around the global `api_key`
    /// (which sits at the index returned second).
    fn key_sources(self) -> (&'static [&'static str], usize) {
        match self {
            ProviderKind::OpenAi => (&super::API_KEY_VARIABLES, 1),
            ProviderKind::OpenAiResponses => (&["ODEK_API_KEY", "OPENAI_API_KEY"], 1),
            ProviderKind::Anthropic => (&["ANTHROPIC_API_KEY"], 1),
        }
    }
}

/// One `providers.<name>` entry as written.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct ProviderFile {
    kind: Option<String>,
    base_url: Option<String>,
    api_key_env: Option<String>,
    headers: Option<BTreeMap<String, String>>,
    model: Option<String>,
}

/// One checked `providers.<name>` entry.
#[derive(Clone, PartialEq, Eq)]
pub struct NamedProvider {
    /// The API it speaks.
    pub kind: ProviderKind,
    /// Empty: the kind's public endpoint.
    pub base_url: String,
    /// The variable holding the key; empty: no key.
    pub api_key_env: String,
    /// Sent on every request (values after `${VAR}` substitution).
    pub headers: Vec<(String, String)>,
    /// The model used with this provider when no flag or `ODEK_MODEL` picks one; empty: the
    /// configured `model`.
    pub model: String,
}

impl std::fmt::Debug for NamedProvider {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        formatter
            .debug_struct("NamedProvider")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("api_key_env", &self.api_key_env)
            .field("headers", &header_names)
            .finish()
    }
}

/// Checks the global file's `providers`: each needs a known `kind`, a name that is not a kind
/// (nor `replay`), and header names without control characters.
pub(crate) fn check_providers(
    display: &str,
    providers: Option<&BTreeMap<String, ProviderFile>>,
) -> Result<BTreeMap<String, NamedProvider>, ConfigError> {
    let invalid = |name: &str, detail: String| ConfigError::InvalidProvider {
        path: display.to_owned(),
        name: name.to_owned(),
        detail,
    };
    let mut checked = BTreeMap::new();
    for (name, entry) in providers.into_iter().flatten() {
        if ProviderKind::parse(name).is_some() || name == crate::agent_parts::REPLAY_PROVIDER || name.contains('/') {
            return Err(invalid(name, "the name is reserved or contains \"/\"; choose another".to_owned()));
        }
        let kind_name = entry.kind.as_deref().unwrap_or_default();
        let kind = ProviderKind::parse(kind_name).ok_or_else(|| {
            invalid(name, format!("kind {} is not one of openai, openai-responses, anthropic", quote(kind_name)))
        })?;
        let headers: Vec<(String, String)> = entry.headers.clone().unwrap_or_default().into_iter().collect();
        for (header, value) in &headers {
            let bad_name = header.is_empty() || !header.bytes().all(|byte| byte.is_ascii_graphic() && byte != b':');
            if bad_name || value.chars().any(char::is_control) {
                return Err(invalid(
                    name,
                    format!("header {}: newlines and control characters are refused", quote(header)),
                ));
            }
        }
        let provider = NamedProvider {
            kind,
            base_url: entry.base_url.clone().unwrap_or_default(),
            api_key_env: entry.api_key_env.clone().unwrap_or_default(),
            headers,
            model: entry.model.clone().unwrap_or_default(),
        };
        checked.insert(name.clone(), provider);
    }
    Ok(checked)
}

/// Checks `fallback_models`: each entry is `<provider>/<model>` with a provider that
/// [`resolve_provider`] knows.
pub(crate) fn check_fallback_models(
    display: &str,
    entries: &[String],
    providers: &BTreeMap<String, NamedProvider>,
) -> Result<(), ConfigError> {
    for entry in entries {
        let known = split_fallback(entry)
            .is_some_and(|(provider, _)| ProviderKind::parse(provider).is_some() || providers.contains_key(provider));
        if !known {
            return Err(ConfigError::InvalidFallback { path: display.to_owned(), entry: entry.clone() });
        }
    }
    Ok(())
}

/// `<provider>/<model>` split at the first `/` (model ids may hold more); `None` when either
/// side is empty.
pub fn split_fallback(entry: &str) -> Option<(&str, &str)> {
    entry.split_once('/').filter(|(provider, model)| !provider.is_empty() && !model.is_empty())
}

/// A provider ready to build: its kind, endpoint, key and headers.
#[derive(Clone, PartialEq, Eq)]
pub struct ResolvedProvider {
    /// As the operator wrote it: a kind's name or a `providers` key.
    pub name: String,
    /// The API it speaks.
    pub kind: ProviderKind,
    /// The endpoint, up to and including the version path.
    pub base_url: String,
    /// `None`: no key found (fine for a loopback endpoint).
    pub api_key: Option<String>,
    /// Extra request headers (a named provider's).
    pub headers: Vec<(String, String)>,
}

impl std::fmt::Debug for ResolvedProvider {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ResolvedProvider")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("headers", &self.headers.iter().map(|(name, _)| name.as_str()).collect::<Vec<_>>())
            .finish()
    }
}

/// What `name` (`core.provider`, or the provider half of a fallback entry) means: a kind (its
/// endpoint from `core.base_url` unless that is still the default of another kind) or a
/// `providers` entry. `None` for an unknown name. The key and the header values are registered
/// for redaction.
pub fn resolve_provider(
    name: &str,
    core: &CoreConfig,
    providers: &BTreeMap<String, NamedProvider>,
    env: &BTreeMap<String, String>,
    explicit_key: Option<&str>,
) -> Option<ResolvedProvider> {
    let name = if name.is_empty() { "openai" } else { name };
    let resolved = if let Some(kind) = ProviderKind::parse(name) {
        let base_url = if core.base_url == DEFAULT_BASE_URL || core.base_url.is_empty() {
            kind.default_base_url().to_owned()
        } else {
            core.base_url.clone()
        };
        let api_key = explicit_key.map(str::to_owned).or_else(|| kind_key(kind, core, env));
        ResolvedProvider { name: name.to_owned(), kind, base_url, api_key, headers: Vec::new() }
    } else {
        let named = providers.get(name)?;
        let base_url =
            if named.base_url.is_empty() { named.kind.default_base_url().to_owned() } else { named.base_url.clone() };
        let from_env = || env.get(&named.api_key_env).filter(|key| !key.trim().is_empty()).cloned();
        let api_key =
            explicit_key.map(str::to_owned).or_else(|| (!named.api_key_env.is_empty()).then(from_env).flatten());
        ResolvedProvider { name: name.to_owned(), kind: named.kind, base_url, api_key, headers: named.headers.clone() }
    };
    for secret in resolved.api_key.iter().chain(resolved.headers.iter().map(|(_, value)| value)) {
        odek_contract::redaction::register_secret(secret);
    }
    Some(resolved)
}

/// A kind's key: the first non-empty of its variables with the global `api_key` among them.
pub(crate) fn kind_key(kind: ProviderKind, core: &CoreConfig, env: &BTreeMap<String, String>) -> Option<String> {
    let (variables, global_at) = kind.key_sources();
    let mut sources: Vec<Option<&str>> = variables.iter().map(|name| env.get(*name).map(String::as_str)).collect();
    sources.insert(global_at.min(sources.len()), Some(core.api_key.as_str()));
    sources.into_iter().flatten().find(|key| !key.trim().is_empty()).map(str::to_owned)
}

/// One entry of the fallback chain after the run's own provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FallbackTarget {
    /// Where the call goes.
    pub provider: ResolvedProvider,
    /// The model asked of it.
    pub model: String,
}

/// The `fallback_models` entries resolved, in order (already checked at load; an entry whose
/// provider vanished is skipped).
pub fn fallback_chain(
    entries: &[String],
    core: &CoreConfig,
    providers: &BTreeMap<String, NamedProvider>,
    env: &BTreeMap<String, String>,
) -> Vec<FallbackTarget> {
    entries
        .iter()
        .filter_map(|entry| {
            let (provider, model) = split_fallback(entry)?;
            let provider = resolve_provider(provider, core, providers, env, None)?;
            Some(FallbackTarget { provider, model: model.to_owned() })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(name, value)| ((*name).to_owned(), (*value).to_owned())).collect()
    }

    fn named(kind: &str, headers: &[(&str, &str)]) -> ProviderFile {
        ProviderFile {
            kind: Some(kind.to_owned()),
            headers: Some(headers.iter().map(|(name, value)| ((*name).to_owned(), (*value).to_owned())).collect()),
            ..ProviderFile::default()
        }
    }

    #[test]
    fn keys_never_cross_vendors_red() {
        let core = CoreConfig::default();
        let env = env(&[("ODEK_API_KEY", "odek-key-1"), ("DEEPSEEK_API_KEY", "ds-key-1")]);
        let anthropic = resolve_provider("anthropic", &core, &BTreeMap::new(), &env, None).unwrap();
        assert_eq!(anthropic.api_key, None, "a DeepSeek or generic key is never sent to Anthropic");
        assert_eq!(anthropic.base_url, "https://api.anthropic.com/v1");
        let responses = resolve_provider("openai-responses", &core, &BTreeMap::new(), &env, None).unwrap();
        assert_eq!(responses.api_key.as_deref(), Some("odek-key-1"));
        assert_eq!(responses.base_url, "https://api.openai.com/v1");
        let only_deepseek = self::env(&[("DEEPSEEK_API_KEY", "ds-key-1")]);
        let responses = resolve_provider("openai-responses", &core, &BTreeMap::new(), &only_deepseek, None).unwrap();
        assert_eq!(responses.api_key, None);
        let with_anthropic = self::env(&[("ANTHROPIC_API_KEY", "ak-1"), ("ODEK_API_KEY", "odek-key-1")]);
        let anthropic = resolve_provider("anthropic", &core, &BTreeMap::new(), &with_anthropic, None).unwrap();
        assert_eq!(anthropic.api_key.as_deref(), Some("ak-1"));
        let global = CoreConfig { api_key: "global-key".to_owned(), ..CoreConfig::default() };
        let anthropic = resolve_provider("anthropic", &global, &BTreeMap::new(), &env, None).unwrap();
        assert_eq!(anthropic.api_key.as_deref(), Some("global-key"));
        let openai = resolve_provider("", &core, &BTreeMap::new(), &env, None).unwrap();
        assert_eq!((openai.kind, openai.api_key.as_deref()), (ProviderKind::OpenAi, Some("odek-key-1")));
    }

    #[test]
    fn a_named_provider_reads_only_its_own_variable() {
        let file = BTreeMap::from([(
            "gateway".to_owned(),
            ProviderFile {
                base_url: Some("http://127.0.0.1:9/v1".to_owned()),
                api_key_env: Some("GATEWAY_KEY".to_owned()),
                model: Some("claude-x".to_owned()),
                ..named("anthropic", &[("x-team", "t-123")])
            },
        )]);
        let providers = check_providers("cfg", Some(&file)).unwrap();
        let env = env(&[("GATEWAY_KEY", "gw-secret"), ("ANTHROPIC_API_KEY", "ak")]);
        let gateway = resolve_provider("gateway", &CoreConfig::default(), &providers, &env, None).unwrap();
        assert_eq!(gateway.kind, ProviderKind::Anthropic);
        assert_eq!(gateway.api_key.as_deref(), Some("gw-secret"));
        assert_eq!(gateway.base_url, "http://127.0.0.1:9/v1");
        assert_eq!(gateway.headers, [("x-team".to_owned(), "t-123".to_owned())]);
        assert_eq!(providers["gateway"].model, "claude-x");
        assert!(!format!("{gateway:?}").contains("gw-secret"));
        assert!(resolve_provider("nope", &CoreConfig::default(), &providers, &env, None).is_none());
    }

    #[test]
    fn provider_entries_are_checked() {
        let check = |name: &str, entry: ProviderFile| {
            check_providers("cfg", Some(&BTreeMap::from([(name.to_owned(), entry)]))).unwrap_err().to_string()
        };
        assert!(check("anthropic", named("anthropic", &[])).contains("reserved"));
        assert!(check("a/b", named("openai", &[])).contains("reserved"));
        assert!(check("x", named("gemini", &[])).contains("kind \"gemini\""));
        assert!(check("x", ProviderFile::default()).contains("kind \"\""));
        let injected = check("x", named("openai", &[("x-a", "v\r\nx-b: 1")]));
        assert!(injected.contains("header \"x-a\""), "{injected}");
        assert!(check("x", named("openai", &[("bad name", "v")])).contains("header"));
    }

    #[test]
    fn fallback_entries_name_a_known_provider() {
        let providers =
            check_providers("cfg", Some(&BTreeMap::from([("gw".to_owned(), named("openai", &[]))]))).unwrap();
        let ok = ["anthropic/claude-sonnet".to_owned(), "gw/org/model".to_owned()];
        check_fallback_models("cfg", &ok, &providers).unwrap();
        for bad in ["claude", "nope/m", "anthropic/", "/m"] {
            let err = check_fallback_models("cfg", &[bad.to_owned()], &providers).unwrap_err().to_string();
            assert!(err.contains(bad), "{err}");
        }
        let chain = fallback_chain(&ok, &CoreConfig::default(), &providers, &BTreeMap::new());
        assert_eq!(chain.len(), 2);
        assert_eq!((chain[1].provider.name.as_str(), chain[1].model.as_str()), ("gw", "org/model"));
    }
}
