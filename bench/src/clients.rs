//! The clients under test: their names, whether this build and machine can run them, and the
//! version each row reports. How each one makes a call lives in its own module
//! (`odek_client`, `raw_line_client`, `rmcp_client`, `sdk_peers`).

use std::fmt;
use std::path::Path;

use clap::ValueEnum;

/// One client of the side-by-side table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClientKind {
    /// odek-mcp's full pipeline: `McpHub::call` (routing, decoding, envelope probe, truncation).
    #[value(name = "odek-mcp")]
    OdekMcp,
    /// A hand-written tokio line client: the floor of what any client can cost.
    #[value(name = "raw-line")]
    RawLine,
    /// The rmcp crate's client over its child-process transport.
    #[value(name = "rmcp")]
    Rmcp,
    /// `@modelcontextprotocol/sdk` `Client` + `StdioClientTransport` on Node.
    #[value(name = "typescript-sdk")]
    TypescriptSdk,
    /// The `mcp` PyPI package's `Client` over stdio on CPython.
    #[value(name = "python-sdk")]
    PythonSdk,
}

impl ClientKind {
    pub const ALL: [ClientKind; 5] =
        [ClientKind::OdekMcp, ClientKind::RawLine, ClientKind::Rmcp, ClientKind::TypescriptSdk, ClientKind::PythonSdk];

    pub fn name(self) -> &'static str {
        match self {
            ClientKind::OdekMcp => "odek-mcp",
            ClientKind::RawLine => "raw-line",
            ClientKind::Rmcp => "rmcp",
            ClientKind::TypescriptSdk => "typescript-sdk",
            ClientKind::PythonSdk => "python-sdk",
        }
    }

    /// True for the clients whose calls run inside the Rust probe process.
    pub fn is_rust(self) -> bool {
        matches!(self, ClientKind::OdekMcp | ClientKind::RawLine | ClientKind::Rmcp)
    }

    /// `Err(reason)` when this build or machine cannot run the client; the row then says so.
    pub fn availability(self, repo_root: &Path) -> Result<(), String> {
        match self {
            ClientKind::OdekMcp | ClientKind::RawLine => Ok(()),
            ClientKind::Rmcp if cfg!(feature = "peers") => Ok(()),
            ClientKind::Rmcp => Err("not installed (build with `--features peers`)".to_owned()),
            ClientKind::TypescriptSdk | ClientKind::PythonSdk => {
                crate::sdk_peers::SdkPeer::locate(self, repo_root).map(|_| ())
            }
        }
    }

    /// The version the row names: the workspace's own for odek-mcp, `Cargo.lock` for rmcp, the
    /// installed package for the SDKs.
    pub fn version(self, repo_root: &Path) -> String {
        let version = match self {
            ClientKind::OdekMcp => Some(format!("{} (this tree)", env!("CARGO_PKG_VERSION"))),
            ClientKind::RawLine => Some("-".to_owned()),
            ClientKind::Rmcp => locked_crate_version(repo_root, "rmcp"),
            ClientKind::TypescriptSdk | ClientKind::PythonSdk => crate::sdk_peers::installed_version(self, repo_root),
        };
        version.unwrap_or_else(|| "?".to_owned())
    }
}

impl fmt::Display for ClientKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The version `Cargo.lock` pins for `name` (the first entry of that name).
fn locked_crate_version(repo_root: &Path, name: &str) -> Option<String> {
    let lock = std::fs::read_to_string(repo_root.join("Cargo.lock")).ok()?;
    let wanted = format!("name = \"{name}\"");
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line == wanted {
            let version = lines.next()?.strip_prefix("version = \"")?.strip_suffix('"')?;
            return Some(version.to_owned());
        }
    }
    None
}
