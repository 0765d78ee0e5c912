//! Building `odek.tool-result/v1` envelopes and `odek.artifact-ref/v1` refs.
//!
//! A tool whose output is too large for the model returns a short text plus refs to files; odek
//! verifies each ref (path inside its configured roots, `sha256`, `size_bytes`) before the model
//! sees one metadata line per ref. [`ArtifactRef::write_file`] and [`ArtifactRef::for_file`]
//! produce refs whose digest and size are right by construction. This module does not validate
//! refs the way odek does; it only avoids producing refs odek would reject for their shape.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::Error;
use crate::tools::{Content, ToolResponse};

/// `schema` of a tool-result envelope.
pub const TOOL_RESULT_SCHEMA: &str = "odek.tool-result/v1";

/// `schema` of an artifact ref.
pub const ARTIFACT_REF_SCHEMA: &str = "odek.artifact-ref/v1";

/// Most refs odek accepts in one result (across all envelope items).
pub const MAX_ARTIFACTS_PER_RESULT: usize = 64;

/// Largest artifact odek accepts, in bytes (64 MiB).
pub const MAX_ARTIFACT_BYTES: u64 = 64 * 1024 * 1024;

/// Read size while hashing, in bytes.
const HASH_CHUNK_BYTES: usize = 64 * 1024;

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

/// An `odek.artifact-ref/v1` reference to a file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
            sha256: Some(hex::encode(Sha256::digest(contents))),
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
                sha256: Some(hex::encode(Sha256::digest(contents))),
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
    let mut file = File::open(path).map_err(|error| Error::io(format!("open {}", path.display()), error))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0; HASH_CHUNK_BYTES];
    let mut size = 0u64;
    loop {
        let read = match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(Error::io(format!("read {}", path.display()), error)),
        };
        hasher.update(&buffer[..read]);
        size += read as u64;
    }
    Ok((size, hex::encode(hasher.finalize())))
}

/// The `file://` URI of an absolute, clean path, percent-encoding every byte outside
/// `A-Z a-z 0-9 - . _ ~ /`. Symlinks are not resolved (odek resolves them itself).
pub fn file_uri(path: &Path) -> Result<String, Error> {
    if !path.is_absolute() {
        return Err(Error::ArtifactPathNotAbsolute { path: path.to_owned() });
    }
    if path.components().any(|component| matches!(component, Component::CurDir | Component::ParentDir)) {
        return Err(Error::ArtifactPathNotClean { path: path.to_owned() });
    }
    let mut uri = String::from("file://");
    for component in path.components() {
        if let Component::Normal(name) = component {
            uri.push('/');
            percent_encode_into(&os_bytes(name), &mut uri);
        }
    }
    if uri.len() == "file://".len() {
        uri.push('/');
    }
    Ok(uri)
}

#[cfg(unix)]
fn os_bytes(name: &std::ffi::OsStr) -> std::borrow::Cow<'_, [u8]> {
    use std::os::unix::ffi::OsStrExt;
    std::borrow::Cow::Borrowed(name.as_bytes())
}

#[cfg(not(unix))]
fn os_bytes(name: &std::ffi::OsStr) -> std::borrow::Cow<'_, [u8]> {
    std::borrow::Cow::Owned(name.to_string_lossy().into_owned().into_bytes())
}

fn percent_encode_into(bytes: &[u8], out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &byte in bytes {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0x0f)]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn file_uris_are_plain_absolute_and_encoded() {
        assert_eq!(file_uri(Path::new("/tmp/a b/ü%.txt")).unwrap(), "file:///tmp/a%20b/%C3%BC%25.txt");
        assert_eq!(file_uri(Path::new("/")).unwrap(), "file:///");
        assert!(matches!(file_uri(Path::new("rel/x")), Err(Error::ArtifactPathNotAbsolute { .. })));
        assert!(matches!(file_uri(Path::new("/tmp/../etc/x")), Err(Error::ArtifactPathNotClean { .. })));
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
