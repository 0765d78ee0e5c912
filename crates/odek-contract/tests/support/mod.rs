//! Shared fixtures for the integration tests: a temporary directory with an artifact root, and
//! helpers to write files and build refs pointing at them.
#![allow(dead_code)]
#![allow(clippy::unwrap_used)] // test fixtures: a failing setup step should abort the test

use std::fs;
use std::path::{Path, PathBuf};

use odek_contract::artifact_ref::{ArtifactRef, ArtifactRoots, validate_artifact_ref};
use odek_contract::envelope::{ARTIFACT_REF_SCHEMA, RawArtifactRef};
use sha2::{Digest, Sha256};
use tempfile::TempDir;

/// A temporary directory holding `root/` (the configured artifact root) and `outside/`.
pub struct Fixture {
    _dir: TempDir,
    /// Symlink-resolved temporary directory.
    pub base: PathBuf,
    /// Symlink-resolved artifact root.
    pub root: PathBuf,
    /// A directory next to the root, never configured.
    pub outside: PathBuf,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(dir.path()).unwrap();
        let root = base.join("root");
        let outside = base.join("outside");
        fs::create_dir(&root).unwrap();
        fs::create_dir(&outside).unwrap();
        Self { _dir: dir, base, root, outside }
    }

    pub fn roots(&self) -> ArtifactRoots {
        ArtifactRoots::new([self.root.to_str().unwrap()])
    }

    /// Writes `content` at `relative` under the root and returns its path.
    pub fn write(&self, relative: &str, content: &[u8]) -> PathBuf {
        write_file(&self.root.join(relative), content)
    }

    /// Writes `content` at `relative` under `outside/`.
    pub fn write_outside(&self, relative: &str, content: &[u8]) -> PathBuf {
        write_file(&self.outside.join(relative), content)
    }
}

pub fn write_file(path: &Path, content: &[u8]) -> PathBuf {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).unwrap();
    }
    fs::write(path, content).unwrap();
    path.to_path_buf()
}

/// `file://` + the path as written (test paths need no escaping).
pub fn file_uri(path: &Path) -> String {
    format!("file://{}", path.to_str().unwrap())
}

/// A ref with the required fields set and nothing optional.
pub fn raw_ref(id: &str, uri: &str) -> RawArtifactRef {
    RawArtifactRef {
        schema: ARTIFACT_REF_SCHEMA.to_owned(),
        id: id.to_owned(),
        uri: uri.to_owned(),
        media_type: "text/plain".to_owned(),
        ..RawArtifactRef::default()
    }
}

/// A validated `text/plain` ref that declares nothing optional (no size, digest or summary),
/// resolved to `resolved_path`, a file of `file_size` bytes.
pub fn artifact_ref(id: &str, resolved_path: &str, file_size: u64) -> ArtifactRef {
    ArtifactRef {
        id: id.to_owned(),
        media_type: "text/plain".to_owned(),
        size_bytes: None,
        sha256: String::new(),
        summary: String::new(),
        resolved_path: PathBuf::from(resolved_path),
        file_size,
    }
}

pub fn sha256_hex(content: &[u8]) -> String {
    hex::encode(Sha256::digest(content))
}

/// The error text of a ref that must be rejected.
pub fn rejection(raw: &RawArtifactRef, roots: &ArtifactRoots) -> String {
    validate_artifact_ref(raw, roots).unwrap_err().to_string()
}

/// `artifact ref rejected: <rule>`.
pub fn rejected(rule: &str) -> String {
    format!("artifact ref rejected: {rule}")
}

/// An envelope JSON text carrying `refs`.
pub fn envelope_json(text: &str, refs: &[RawArtifactRef]) -> String {
    serde_json::json!({
        "schema": "odek.tool-result/v1",
        "text": text,
        "artifacts": refs,
    })
    .to_string()
}
