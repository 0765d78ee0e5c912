//! The clients under test: their names, which transport each speaks, whether this build and
//! machine can run them, and the version each row reports. How each one makes a call lives in
//! its own module (`odek_client`, `raw_line_client`, `raw_http_client`, `rmcp_client`,
//! `sdk_peers`).

use std::fmt;
use std::path::Path;

use clap::ValueEnum;

/// How the clients reach the echo server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Transport {
    /// The server is the client's child process, one JSON-RPC message per line.
    Stdio,
    /// Streamable HTTP to a server on 127.0.0.1 that the probe started.
    Http,
}

impl Transport {
    pub fn name(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::Http => "http",
        }
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One client of the side-by-side table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClientKind {
    /// odek-mcp's full pipeline: `McpHub::call` (routing, decoding, envelope probe, truncation).
    #[value(name = "odek-mcp")]
    OdekMcp,
    /// A hand-written tokio line client: the floor of what any client can cost.
    #[value(name = "raw-line")]
    RawLine,
    /// The same floor over HTTP: hand-written HTTP/1.1 requests on one kept-alive connection.
    #[value(name = "raw-http")]
    RawHttp,
    /// The rmcp crate's client over its child-process transport, or over HTTP its
    /// `StreamableHttpClientTransport::from_uri` (whose reqwest client keeps no idle connection).
    #[value(name = "rmcp")]
    Rmcp,
    /// HTTP only: rmcp's Streamable HTTP transport over a reqwest client with its default
    /// connection pool, so calls reuse one connection as the other clients' do.
    #[value(name = "rmcp-pooled")]
    RmcpPooled,
    /// `@modelcontextprotocol/sdk` `Client` + `StdioClientTransport` (or
    /// `StreamableHTTPClientTransport`) on Node.
    #[value(name = "typescript-sdk")]
    TypescriptSdk,
    /// The `mcp` PyPI package's `Client` over stdio on CPython.
    #[value(name = "python-sdk")]
    PythonSdk,
}

impl ClientKind {
    pub const ALL: [ClientKind; 7] = [
        ClientKind::OdekMcp,
        ClientKind::RawLine,
        ClientKind::RawHttp,
        ClientKind::Rmcp,
        ClientKind::RmcpPooled,
        ClientKind::TypescriptSdk,
        ClientKind::PythonSdk,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ClientKind::OdekMcp => "odek-mcp",
            ClientKind::RawLine => "raw-line",
            ClientKind::RawHttp => "raw-http",
            ClientKind::Rmcp => "rmcp",
            ClientKind::RmcpPooled => "rmcp-pooled",
            ClientKind::TypescriptSdk => "typescript-sdk",
            ClientKind::PythonSdk => "python-sdk",
        }
    }

    /// Whether the client has a row for `transport`.
    pub fn speaks(self, transport: Transport) -> bool {
        match self {
            ClientKind::OdekMcp | ClientKind::Rmcp | ClientKind::TypescriptSdk => true,
            ClientKind::RawLine | ClientKind::PythonSdk => transport == Transport::Stdio,
            ClientKind::RawHttp | ClientKind::RmcpPooled => transport == Transport::Http,
        }
    }

    /// Every client with a row for `transport`, in table order.
    pub fn all_for(transport: Transport) -> Vec<ClientKind> {
        ClientKind::ALL.into_iter().filter(|client| client.speaks(transport)).collect()
    }

    /// True for the clients whose calls run inside the Rust probe process.
    pub fn is_rust(self) -> bool {
        matches!(
            self,
            ClientKind::OdekMcp | ClientKind::RawLine | ClientKind::RawHttp | ClientKind::Rmcp | ClientKind::RmcpPooled
        )
    }

    /// `Err(reason)` when this build or machine cannot run the client; the row then says so.
    pub fn availability(self, repo_root: &Path) -> Result<(), String> {
        match self {
            ClientKind::OdekMcp | ClientKind::RawLine | ClientKind::RawHttp => Ok(()),
            ClientKind::Rmcp | ClientKind::RmcpPooled if cfg!(feature = "peers") => Ok(()),
            ClientKind::Rmcp | ClientKind::RmcpPooled => {
                Err("not installed (build with `--features peers`)".to_owned())
            }
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
            ClientKind::RawLine | ClientKind::RawHttp => Some("-".to_owned()),
            ClientKind::Rmcp | ClientKind::RmcpPooled => locked_crate_version(repo_root, "rmcp"),
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
