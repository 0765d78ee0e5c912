//! Test support shared by odek's crates: where the workspace binaries are, built on demand so a
//! test run of one crate (`cargo test -p odek-mcp`) works as well as the whole workspace, a
//! scripted OpenAI-compatible server ([`openai::ScriptedServer`]) to point providers at (with
//! Anthropic Messages answers from [`anthropic`] and OpenAI Responses answers from
//! [`responses::Answer`]), a JSON-RPC client over pipes ([`peer::Peer`]) to drive an
//! extension server line by line, a forward proxy ([`forward_proxy::ForwardProxy`]) to point
//! `HTTP_PROXY` at, and an npm registry serving one package built in the test
//! ([`npm_registry::NpmRegistry`]).
//!
//! Start at [`fixture_server`], [`odek_binary`] and [`openai::ScriptedServer::start`].

pub mod anthropic;
pub mod events;
pub mod forward_proxy;
pub mod listening;
pub mod mcp_http;
pub mod npm_registry;
pub mod oauth_server;
pub mod openai;
pub mod peer;
pub mod responses;
pub mod serve;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The workspace root (the directory holding the top `Cargo.toml`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap_or_else(|_| PathBuf::from("."))
}

/// The directory cargo puts binaries in for the profile the tests run under: the parent of the
/// test executable's `deps/` directory.
pub fn binary_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let mut dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    if dir.ends_with("deps") {
        dir.pop();
    }
    dir
}

/// Path to the `odek-fixture-server` binary, building it first if this test run did not.
pub fn fixture_server() -> PathBuf {
    ensure_built("odek-fixture-server", "odek-fixture-server")
}

/// Path to the `odek` binary, building it first if this test run did not.
pub fn odek_binary() -> PathBuf {
    ensure_built("odek-cli", "odek")
}

fn ensure_built(package: &str, binary: &str) -> PathBuf {
    static BUILDS: OnceLock<std::sync::Mutex<Vec<String>>> = OnceLock::new();
    let path = binary_dir().join(binary);
    let built = BUILDS.get_or_init(Default::default);
    let mut built = built.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !built.iter().any(|name| name == binary) {
        // Always ask cargo: it is a no-op when the binary is fresh, and it rebuilds a stale one.
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let profile_release = binary_dir().ends_with("release");
        let mut command = Command::new(cargo);
        command.current_dir(workspace_root()).args(["build", "--quiet", "-p", package, "--bin", binary]);
        if profile_release {
            command.arg("--release");
        }
        let status = command.status();
        assert!(
            matches!(status, Ok(status) if status.success()) || path.exists(),
            "could not build {binary} ({status:?})"
        );
        built.push(binary.to_owned());
    }
    path
}

/// Standard base64 (RFC 4648) with padding: what a test expects a secret to look like encoded,
/// or npm's integrity strings.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut text = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let bits =
            group.iter().enumerate().fold(0_u32, |bits, (index, byte)| bits | u32::from(*byte) << (16 - 8 * index));
        for index in 0..4 {
            if index <= group.len() {
                text.push(char::from(ALPHABET[(bits >> (18 - 6 * index) & 63) as usize]));
            } else {
                text.push('=');
            }
        }
    }
    text
}

/// Live processes whose command line mentions `marker` (a sandbox path): how the leak checks
/// find a fixture server or child that outlived its test. A process that vanishes while the
/// list is read is simply not counted.
pub fn processes_mentioning(marker: &Path) -> Vec<u32> {
    let marker = marker.to_string_lossy().into_owned();
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut pids = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<u32>().ok()) else { continue };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        if cmdline.split(|byte| *byte == 0).any(|arg| String::from_utf8_lossy(arg).contains(&marker)) {
            pids.push(pid);
        }
    }
    pids
}

/// Path to the `sandbox-probe` binary (the confined process of the sandbox's red tests),
/// building it first if this test run did not.
pub fn sandbox_probe() -> PathBuf {
    ensure_built("odek-test-support", "sandbox-probe")
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_matches_the_rfc_4648_vectors() {
        for (plain, encoded) in
            [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE=")]
        {
            assert_eq!(super::base64(plain.as_bytes()), encoded);
        }
    }
}
