//! The MCP protocol revisions odek's client asks for (issue 35): which a server entry may select
//! (`protocol_version`, or the config's top-level `mcp_protocol_version`), and what the
//! `initialize` request of each carries. Start at [`Revision`].
//!
//! The contract's handshake stays the default: `2025-03-26` with `"capabilities":{}`, byte for
//! byte (spec `mcp-client.md` §3). A newer revision is opt-in; the server may answer an older
//! one it supports, which the connection then speaks (the `MCP-Protocol-Version` header follows
//! the answer, [`crate::connection`]).

use odek_contract::quoting::quote;

use crate::wire::json_string;

/// A revision odek's client can ask for in `initialize`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub enum Revision {
    /// The contract's handshake (`odek-extension/v1`).
    #[default]
    V2025_03_26,
    /// Adds form elicitation, structured tool output and the `MCP-Protocol-Version` header.
    V2025_06_18,
    /// Adds URL elicitation and SSE polling (SEP-1699).
    V2025_11_25,
    /// \[beyond\] Opt-in: the stateless revision — no `initialize`; every request carries the
    /// client's revision, info and capabilities in `params._meta`, and over HTTP the
    /// `Mcp-Method` / `Mcp-Name` headers (SEP-2575, SEP-2243).
    V2026_07_28,
}

impl Revision {
    /// Every revision a config may name, oldest first.
    pub const ALL: [Revision; 4] =
        [Revision::V2025_03_26, Revision::V2025_06_18, Revision::V2025_11_25, Revision::V2026_07_28];
    /// The newest revision with the `initialize` handshake.
    pub const NEWEST_STATEFUL: Revision = Revision::V2025_11_25;

    /// The revision's date, as `protocolVersion` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Revision::V2025_03_26 => "2025-03-26",
            Revision::V2025_06_18 => "2025-06-18",
            Revision::V2025_11_25 => "2025-11-25",
            Revision::V2026_07_28 => "2026-07-28",
        }
    }

    /// Whether requests go without a handshake, each carrying [`Revision::request_meta`].
    pub fn is_stateless(self) -> bool {
        self == Revision::V2026_07_28
    }

    /// The `_meta` members every request of a stateless revision carries.
    pub fn request_meta(self, client_version: &str) -> serde_json::Map<String, serde_json::Value> {
        let mut meta = serde_json::Map::new();
        meta.insert("io.modelcontextprotocol/protocolVersion".to_owned(), self.as_str().into());
        meta.insert(
            "io.modelcontextprotocol/clientInfo".to_owned(),
            serde_json::json!({"name": "odek", "version": client_version}),
        );
        let capabilities = serde_json::from_str(self.capabilities()).unwrap_or_default();
        meta.insert("io.modelcontextprotocol/clientCapabilities".to_owned(), capabilities);
        meta
    }

    /// The revision a config value names (`""` is the default).
    pub fn parse(text: &str) -> Result<Revision, String> {
        if text.is_empty() {
            return Ok(Revision::default());
        }
        Revision::ALL.into_iter().find(|revision| revision.as_str() == text).ok_or_else(|| {
            let known: Vec<&str> = Revision::ALL.iter().map(|revision| revision.as_str()).collect();
            format!("protocol_version {} is not one odek speaks ({})", quote(text), known.join(", "))
        })
    }

    /// The client capabilities this revision's `initialize` declares: none for the contract's
    /// handshake; elicitation from 2025-06-18 (form mode), and URL mode from 2025-11-25.
    fn capabilities(self) -> &'static str {
        match self {
            Revision::V2025_03_26 => "{}",
            Revision::V2025_06_18 => "{\"elicitation\":{}}",
            Revision::V2025_11_25 | Revision::V2026_07_28 => "{\"elicitation\":{\"form\":{},\"url\":{}}}",
        }
    }

    /// The `initialize` params, key order as the spec shows them.
    pub fn initialize_params(self, client_version: &str) -> String {
        format!(
            "{{\"protocolVersion\":\"{}\",\"capabilities\":{},\"clientInfo\":{{\"name\":\"odek\",\"version\":{}}}}}",
            self.as_str(),
            self.capabilities(),
            json_string(client_version)
        )
    }
}

impl std::fmt::Display for Revision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_handshake_is_the_contracts_byte_for_byte() {
        assert_eq!(Revision::default().as_str(), odek_contract::PROTOCOL_VERSION);
        assert_eq!(
            Revision::default().initialize_params("1.2.3"),
            r#"{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"odek","version":"1.2.3"}}"#
        );
    }

    #[test]
    fn newer_revisions_declare_elicitation() {
        let params: serde_json::Value =
            serde_json::from_str(&Revision::V2025_11_25.initialize_params("1")).expect("json");
        assert_eq!(params["protocolVersion"], "2025-11-25");
        assert_eq!(params["capabilities"], serde_json::json!({"elicitation": {"form": {}, "url": {}}}));
        let params: serde_json::Value =
            serde_json::from_str(&Revision::V2025_06_18.initialize_params("1")).expect("json");
        assert_eq!(params["capabilities"], serde_json::json!({"elicitation": {}}));
    }

    #[test]
    fn a_config_names_a_known_revision_or_gets_the_list() {
        assert_eq!(Revision::parse(""), Ok(Revision::V2025_03_26));
        assert_eq!(Revision::parse("2025-11-25"), Ok(Revision::V2025_11_25));
        assert_eq!(
            Revision::parse("2024-01-01"),
            Err("protocol_version \"2024-01-01\" is not one odek speaks (2025-03-26, 2025-06-18, 2025-11-25, \
                 2026-07-28)"
                .to_owned())
        );
    }
}
