//! Server and tool names (spec `mcp-client.md` §3): validation in the spec's order, the
//! `<server>__<tool>` qualification and the [beyond] shortening of exposed names over 64
//! characters. Start at [`qualify_tool_name`].

use std::fmt;

use sha2::{Digest, Sha256};

use crate::error::ContractError;
use crate::quoting::{quote, quote_char};

/// Longest server, tool or exposed name, in bytes.
pub const MAX_NAME_BYTES: usize = 64;

/// Separator between server and tool in an exposed name; reserved in raw names.
pub const QUALIFIER: &str = "__";

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Checks a configured server name: empty, length, `__`, then the first invalid character with
/// its byte position.
pub fn validate_server_name(name: &str) -> Result<(), ContractError> {
    if name.is_empty() {
        return Err(ContractError::ServerNameEmpty);
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(ContractError::ServerNameTooLong { quoted: quote(name), len: name.len() });
    }
    if name.contains(QUALIFIER) {
        return Err(ContractError::ServerNameQualifier { quoted: quote(name) });
    }
    if let Some((position, c)) = name.char_indices().find(|&(_, c)| !is_name_char(c)) {
        return Err(ContractError::ServerNameChar { quoted: quote(name), c: quote_char(c), position });
    }
    Ok(())
}

/// Checks a raw tool name from `tools/list`: empty, length, `__`, then the first invalid
/// character.
pub fn validate_tool_name(name: &str) -> Result<(), ContractError> {
    if name.is_empty() {
        return Err(ContractError::ToolNameEmpty);
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(ContractError::ToolNameTooLong { quoted: quote(name) });
    }
    if name.contains(QUALIFIER) {
        return Err(ContractError::ToolNameQualifier { quoted: quote(name) });
    }
    if let Some(c) = name.chars().find(|&c| !is_name_char(c)) {
        return Err(ContractError::ToolNameChar { quoted: quote(name), c: quote_char(c) });
    }
    Ok(())
}

/// The name the model, the tool filter and events see for an MCP tool. Never sent on the wire.
/// [beyond] It always contains `__` (or is a 64-character shortened form), which no built-in
/// tool name does, so an MCP tool never shadows a built-in whatever its raw name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExposedName(String);

impl ExposedName {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for ExposedName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for ExposedName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// `<server>__<tool>`; when longer than 64 characters, its first 55 characters, `_`, and the
/// first 8 hex digits of the SHA-256 of the full qualified name (exactly 64 characters).
/// Both names are valid (ASCII) by the time they are qualified.
pub fn qualify_tool_name(server: &str, tool: &str) -> ExposedName {
    let full = format!("{server}{QUALIFIER}{tool}");
    if full.len() <= MAX_NAME_BYTES {
        return ExposedName(full);
    }
    let digest = hex::encode(Sha256::digest(full.as_bytes()));
    let head: String = full.chars().take(55).collect();
    ExposedName(format!("{head}_{}", &digest[..8]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_name_rules_in_order() {
        assert_eq!(validate_server_name("").unwrap_err().to_string(), "server name cannot be empty");
        let long = "a".repeat(65);
        assert_eq!(
            validate_server_name(&long).unwrap_err().to_string(),
            format!("server name \"{long}\" too long (65 > 64)")
        );
        assert_eq!(
            validate_server_name("a__b c").unwrap_err().to_string(),
            r#"server name "a__b c" cannot contain "__""#
        );
        assert_eq!(
            validate_server_name("my srv").unwrap_err().to_string(),
            r#"server name "my srv" contains invalid character ' ' at position 2"#
        );
        assert_eq!(
            validate_server_name("é").unwrap_err().to_string(),
            r#"server name "é" contains invalid character 'é' at position 0"#
        );
        assert!(validate_server_name(&"a".repeat(64)).is_ok());
        assert!(validate_server_name("log-analyzer_2").is_ok());
    }

    #[test]
    fn tool_name_rules_in_order() {
        assert_eq!(validate_tool_name("").unwrap_err().to_string(), "tool name is empty");
        let long = "t".repeat(65);
        assert_eq!(
            validate_tool_name(&long).unwrap_err().to_string(),
            format!("tool name \"{long}\" exceeds 64 characters")
        );
        assert_eq!(validate_tool_name("a__b").unwrap_err().to_string(), r#"tool name "a__b" cannot contain "__""#);
        assert_eq!(
            validate_tool_name("read file").unwrap_err().to_string(),
            r#"tool name "read file" contains invalid character ' '"#
        );
        assert_eq!(
            validate_tool_name("bad\nname").unwrap_err().to_string(),
            r#"tool name "bad\nname" contains invalid character '\n'"#
        );
        assert!(validate_tool_name(&"t".repeat(64)).is_ok());
    }

    #[test]
    fn qualification_and_shortening() {
        assert_eq!(qualify_tool_name("fixture", "echo").as_str(), "fixture__echo");
        let server = "s".repeat(30);
        let tool = "t".repeat(32); // 30 + 2 + 32 = 64: not shortened
        assert_eq!(qualify_tool_name(&server, &tool).as_str().len(), 64);

        let tool = "t".repeat(33);
        let exposed = qualify_tool_name(&server, &tool);
        let full = format!("{server}__{tool}");
        let digest = hex::encode(Sha256::digest(full.as_bytes()));
        assert_eq!(exposed.as_str(), format!("{}_{}", &full[..55], &digest[..8]));
        assert_eq!(exposed.as_str().len(), 64);
    }
}
