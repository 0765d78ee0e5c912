//! Building `odek.tool-result/v1` envelopes and `odek.artifact-ref/v1` refs.
//!
//! A tool whose output is too large for the model returns a short text plus refs to files; odek
//! verifies each ref (path inside its configured roots, `sha256`, `size_bytes`) before the model
//! sees one metadata line per ref. [`ArtifactRef::write_file`] and [`ArtifactRef::for_file`]
//! produce refs whose digest and size are right by construction. This module does not validate
//! refs the way odek does; it only avoids producing refs odek would reject for their shape.
//!
//! The schema ids, the caps, the wire form of a ref, the `file://` encoding and the hashing pass
//! are odek-contract's, the same the client decodes and checks with.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use odek_contract::ContractError;
pub use odek_contract::artifact_ref::MAX_ARTIFACT_BYTES;
use odek_contract::artifact_ref::hash_capped;
use odek_contract::envelope::RawArtifactRef;
pub use odek_contract::envelope::{
    ARTIFACT_REF_SCHEMA, MAX_ARTIFACT_REFS as MAX_ARTIFACTS_PER_RESULT, TOOL_RESULT_SCHEMA,
};
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::tools::{Content, ToolResponse};

/// An `odek.tool-result/v1` envelope: compact text plus artifact refs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    pub schema: String,
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub artifacts: Vec<ArtifactRef>,
}

impl Envelope {
    /// An envelope with `text` and no refs.
    pub fn new(text: impl Into<String>) -> Self {
        Self { schema: TOOL_RESULT_SCHEMA.to_owned(), text: text.into(), artifacts: Vec::new() }
    }

    /// Adds a ref.
    pub fn with_artifact(mut self, artifact: ArtifactRef) -> Self {
        self.artifacts.push(artifact);
        self
    }

    /// The envelope as compact JSON, the text of one content item.
    pub fn to_json(&self) -> String {
        // A struct of strings and integers always serialises.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The envelope as one text content item.
    pub fn to_content(&self) -> Content {
        Content::Text(self.to_json())
    }

    /// A successful tool response carrying only this envelope.
    pub fn into_response(self) -> ToolResponse {
        ToolResponse::items(vec![self.to_content()])
    }
}

/// An `odek.artifact-ref/v1` reference to a file. On the wire it is the contract's
/// [`RawArtifactRef`]: the same members, an absent digest or summary omitted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(into = "RawArtifactRef", try_from = "RawArtifactRef")]
pub struct ArtifactRef {
    pub schema: String,
    /// Unique within the envelope.
    pub id: String,
    /// `file://` URI with an absolute, clean path.
    pub uri: String,
    pub media_type: String,
    /// 64 lowercase hex characters; odek verifies it when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// odek verifies it when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// One line shown to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

impl From<ArtifactRef> for RawArtifactRef {
    fn from(artifact: ArtifactRef) -> RawArtifactRef {
        RawArtifactRef {
            schema: artifact.schema,
            id: artifact.id,
            uri: artifact.uri,
            media_type: artifact.media_type,
            sha256: artifact.sha256.unwrap_or_default(),
            size_bytes: artifact.size_bytes.map(|size| i64::try_from(size).unwrap_or(i64::MAX)),
            summary: artifact.summary.unwrap_or_default(),
        }
    }
}

impl TryFrom<RawArtifactRef> for ArtifactRef {
    type Error = String;

    /// An empty digest or summary reads as absent, as odek reads it; a negative size is refused.
    fn try_from(raw: RawArtifactRef) -> Result<ArtifactRef, String> {
        let size_bytes = match raw.size_bytes {
            None => None,
            Some(size) => Some(u64::try_from(size).map_err(|_| format!("size_bytes {size} is negative"))?),
        };
        let present = |text: String| (!text.is_empty()).then_some(text);
        Ok(ArtifactRef {
            schema: raw.schema,
            id: raw.id,
            uri: raw.uri,
            media_type: raw.media_type,
            sha256: present(raw.sha256),
            size_bytes,
            summary: present(raw.summary),
        })
    }
}

impl ArtifactRef {
    /// A ref without digest, size or summary.
    pub fn new(id: impl Into<String>, uri: impl Into<String>, media_type: impl Into<String>) -> Self {
        Self {
            schema: ARTIFACT_REF_SCHEMA.to_owned(),
            id: id.into(),
            uri: uri.into(),
            media_type: media_type.into(),
            sha256: None,
            size_bytes: None,
            summary: None,
        }
    }

    /// A ref to the existing file at `path`, with `sha256` and `size_bytes` measured in one
    /// streaming pass. Blocking I/O: from async code, prefer `spawn_blocking` for large files.
    pub fn for_file(id: impl Into<String>, path: &Path, media_type: impl Into<String>) -> Result<Self, Error> {
        let uri = file_uri(path)?;
        let (size_bytes, sha256) = measure_file(path)?;
        Ok(Self { sha256: Some(sha256), size_bytes: Some(size_bytes), ..Self::new(id, uri, media_type) })
    }

    /// Writes `contents` to `path` (creating or truncating it) and returns a ref with the
    /// digest and size of exactly those bytes. Blocking I/O.
    pub fn write_file(
        id: impl Into<String>,
        path: &Path,
        contents: &[u8],
        media_type: impl Into<String>,
    ) -> Result<Self, Error> {
        let uri = file_uri(path)?;
        let mut file = File::create(path).map_err(|error| Error::io(format!("create {}", path.display()), error))?;
        file.write_all(contents)
            .and_then(|()| file.flush())
            .map_err(|error| Error::io(format!("write {}", path.display()), error))?;
        Ok(Self {
            sha256: Some(digest_of(contents)),
            size_bytes: Some(contents.len() as u64),
            ..Self::new(id, uri, media_type)
        })
    }

    /// Sets the one-line summary.
    pub fn with_summary(mut self, summary: impl Into<String>) -> Self {
        self.summary = Some(summary.into());
        self
    }
}

/// A directory artifacts are written under: the directory odek is configured to accept refs
/// from (`artifact_roots`). Its path is resolved once, so refs name the real location even when
/// the configured path is a symlink.
#[derive(Clone, Debug)]
pub struct ArtifactRoot {
    dir: PathBuf,
}

/// Attempts at finding a free file name before [`ArtifactRoot::write`] gives up.
const MAX_NAME_ATTEMPTS: u32 = 1000;

static NEXT_ARTIFACT: AtomicU64 = AtomicU64::new(1);

impl ArtifactRoot {
    /// Creates `dir` (and its parents) if missing and resolves it.
    pub fn new(dir: impl AsRef<Path>) -> Result<Self, Error> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir).map_err(|error| Error::io(format!("create {}", dir.display()), error))?;
        let dir = std::fs::canonicalize(dir).map_err(|error| Error::io(format!("resolve {}", dir.display()), error))?;
        Ok(Self { dir })
    }

    /// The resolved directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Writes `contents` to a new file `<pid>-<n>-<file_name>` directly under the root (never
    /// overwriting another file, so concurrent calls cannot change each other's artifacts) and
    /// returns its ref with `sha256` and `size_bytes` of exactly those bytes. `file_name` must be
    /// one plain path component (`report.txt`, not `../x` or `a/b`). Blocking I/O.
    pub fn write(&self, id: &str, file_name: &str, contents: &[u8], media_type: &str) -> Result<ArtifactRef, Error> {
        let plain = matches!(Path::new(file_name).components().collect::<Vec<_>>().as_slice(), [Component::Normal(_)]);
        if !plain || file_name.contains('/') {
            return Err(Error::ArtifactFileName { name: file_name.to_owned() });
        }
        for _ in 0..MAX_NAME_ATTEMPTS {
            let number = NEXT_ARTIFACT.fetch_add(1, Ordering::Relaxed);
            let path = self.dir.join(format!("{}-{number}-{file_name}", std::process::id()));
            let mut file = match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(file) => file,
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(error) => return Err(Error::io(format!("create {}", path.display()), error)),
            };
            file.write_all(contents)
                .and_then(|()| file.flush())
                .map_err(|error| Error::io(format!("write {}", path.display()), error))?;
            return Ok(ArtifactRef {
                sha256: Some(digest_of(contents)),
                size_bytes: Some(contents.len() as u64),
                ..ArtifactRef::new(id, file_uri(&path)?, media_type)
            });
        }
        Err(Error::io(
            format!("create a file for {file_name:?} in {}", self.dir.display()),
            io::Error::from(io::ErrorKind::AlreadyExists),
        ))
    }
}

/// Size in bytes and lowercase hex SHA-256 of the file at `path`, measured in one pass over the
/// same bytes (so the two always agree).
pub fn measure_file(path: &Path) -> Result<(u64, String), Error> {
    let file = File::open(path).map_err(|error| Error::io(format!("open {}", path.display()), error))?;
    let pass =
        hash_capped(file, u64::MAX, 0..0).map_err(|error| Error::io(format!("read {}", path.display()), error))?;
    Ok((pass.read, pass.digest))
}

/// Lowercase hex SHA-256 of `contents`, by the same pass that measures files.
fn digest_of(contents: &[u8]) -> String {
    // Reading a slice cannot fail.
    hash_capped(contents, u64::MAX, 0..0).map(|pass| pass.digest).unwrap_or_default()
}

/// The `file://` URI of an absolute, clean path, percent-encoding every byte outside
/// `A-Z a-z 0-9 - . _ ~ /` ([`odek_contract::artifact_ref::file_uri`], the encoding odek's
/// decoder is the inverse of). Symlinks are not resolved (odek resolves them itself).
pub fn file_uri(path: &Path) -> Result<String, Error> {
    odek_contract::artifact_ref::file_uri(path).map_err(|error| match error {
        ContractError::FileUriNotAbsolute { .. } => Error::ArtifactPathNotAbsolute { path: path.to_owned() },
        _ => Error::ArtifactPathNotClean { path: path.to_owned() },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn file_uri_errors_name_the_path() {
        assert!(matches!(file_uri(Path::new("rel/x")), Err(Error::ArtifactPathNotAbsolute { .. })));
        assert!(matches!(file_uri(Path::new("/tmp/../etc/x")), Err(Error::ArtifactPathNotClean { .. })));
        assert_eq!(file_uri(Path::new("/tmp/a b")).unwrap(), "file:///tmp/a%20b");
    }

    #[test]
    fn written_and_measured_refs_agree_with_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.txt");
        let written =
            ArtifactRef::write_file("report-1", &path, b"hello\n", "text/plain").unwrap().with_summary("a greeting");
        assert_eq!(written.sha256.as_deref(), Some("5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"));
        assert_eq!(written.size_bytes, Some(6));
        let measured = ArtifactRef::for_file("report-1", &path, "text/plain").unwrap();
        assert_eq!(measured.sha256, written.sha256);
        assert_eq!(measured.uri, written.uri);
        assert!(measured.uri.starts_with("file:///"));
    }

    #[test]
    fn roots_write_fresh_files_with_their_digest() {
        let dir = tempfile::tempdir().unwrap();
        let root = ArtifactRoot::new(dir.path().join("nested/root")).unwrap();
        let first = root.write("a", "report.txt", b"hello\n", "text/plain").unwrap();
        let second = root.write("b", "report.txt", b"other", "text/plain").unwrap();
        assert_ne!(first.uri, second.uri, "a second write never replaces the first file");
        assert_eq!(first.sha256.as_deref(), Some("5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"));
        assert_eq!(first.size_bytes, Some(6));
        let path = first.uri.strip_prefix("file://").unwrap();
        assert!(Path::new(path).starts_with(root.path()));
        assert_eq!(std::fs::read(path).unwrap(), b"hello\n");
        for bad in ["", "../x", "a/b", ".", ".."] {
            assert!(matches!(root.write("c", bad, b"", "text/plain"), Err(Error::ArtifactFileName { .. })), "{bad}");
        }
    }

    #[test]
    fn envelopes_serialise_with_their_schemas_and_omit_absent_fields() {
        let envelope = Envelope::new("done").with_artifact(ArtifactRef::new("a", "file:///x", "text/plain"));
        let value: serde_json::Value = serde_json::from_str(&envelope.to_json()).unwrap();
        assert_eq!(
            value,
            json!({"schema":"odek.tool-result/v1","text":"done","artifacts":[
                {"schema":"odek.artifact-ref/v1","id":"a","uri":"file:///x","media_type":"text/plain"}
            ]})
        );
    }
}
