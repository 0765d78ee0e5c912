//! API key resolution (spec `config.md` §4): the first non-empty of `ODEK_API_KEY`, the global
//! `api_key`, `DEEPSEEK_API_KEY`, `OPENAI_API_KEY`. Start at [`resolve_api_key`].
//!
//! The resolved key is registered for redaction here, inside the one function that produces it,
//! so no caller can obtain the key without it being known to the redactor. (A sub-agent reads
//! its key from fd 3 instead; that path registers its own.)

use std::collections::BTreeMap;

use super::Config;
use super::providers::{ProviderKind, kind_key, resolve_provider};

/// The environment variables consulted, around the global `api_key` (which sits second).
pub const API_KEY_VARIABLES: [&str; 3] = odek_contract::secret_names::PROVIDER_KEY_VARIABLES;

/// The key to send, or `None` when no source has one. A value of only whitespace counts as
/// empty. The key is registered with [`odek_contract::redaction::register_secret`] before it is
/// returned.
///
/// \[beyond\] This is the key of the run's provider ([`super::providers::resolve_provider`]):
/// the OpenAI-compatible kind reads the order above; `anthropic`, `openai-responses` and a
/// named provider read their own sources, so a key never reaches another vendor.
pub fn resolve_api_key(env: &BTreeMap<String, String>, config: &Config) -> Option<String> {
    let key = match resolve_provider(&config.core.provider, &config.core, &config.providers, env, None) {
        Some(provider) => provider.api_key?,
        None => kind_key(ProviderKind::OpenAi, &config.core, env)?,
    };
    odek_contract::redaction::register_secret(&key);
    Some(key)
}
