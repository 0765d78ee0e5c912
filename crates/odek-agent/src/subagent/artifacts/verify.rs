//! Read-time verification (spec `results-and-artifacts.md` §8): every read of a registered
//! artifact's content — `artifact_read` and inline previews — re-checks the file before a byte of
//! it is returned, because validation happened earlier and the file may have been swapped or
//! rewritten since. Start at [`read_verified`].
//!
//! Guarantees: each step fails closed and returns nothing of the file; the path is opened with
//! no symlink on any component; size and digest are checked in one streaming pass that hashes
//! every byte while keeping only the requested window (never more than `limit` bytes held).

use std::io;
use std::path::Path;

use thiserror::Error;

use super::MAX_ARTIFACT_BYTES;
use super::registry::RegisteredArtifact;
use crate::no_follow::open_file_without_symlinks;
use odek_contract::artifact_ref::{ArtifactRef, hash_capped, short_digest};

/// The verified window of an artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VerifiedWindow {
    /// The bytes `offset..offset + bytes.len()` of the file.
    pub(crate) bytes: Vec<u8>,
    pub(crate) offset: u64,
    /// The file's size (equal to the registered size).
    pub(crate) total: u64,
}

/// Why a verified read returned nothing.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ReadRefusal {
    /// §8 step 2: the recorded path no longer exists; the caller reports it as removed.
    #[error("file is no longer available (removed by cleanup)")]
    Removed,
    /// The requested offset lies past the end of the (verified-size) file.
    #[error("offset {offset} is past the end of {total} bytes")]
    PastEnd { offset: u64, total: u64 },
    /// A §8 step failed; the text is the spec's `<reason>`.
    #[error("{0}")]
    Failed(VerificationFailure),
}

/// The reasons of §8, each the spec's exact text.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum VerificationFailure {
    #[error("ref carries no sha256; contents cannot be verified at read time")]
    NoDigest,
    #[error("artifact path is a symlink; file was likely swapped after registration")]
    Symlink,
    /// Not in the spec's list: `lstat` failed other than with "not found".
    #[error("lstat: {0}")]
    Lstat(String),
    #[error("open: {0}")]
    Open(String),
    #[error("not a regular file")]
    NotRegularFile,
    #[error("file is {0} bytes; the absolute artifact cap is 67108864 bytes")]
    OverCap(u64),
    #[error("file size changed since registration: ref declares {declared} bytes, file has {actual}")]
    SizeChanged { declared: u64, actual: u64 },
    #[error("file grew past the absolute artifact cap during read")]
    GrewPastCap,
    /// Not in the spec's list: reading the open file failed.
    #[error("read: {0}")]
    Read(String),
    #[error("sha256 mismatch: ref declares {declared_prefix}\u{2026}, file hashes to {actual_prefix}\u{2026}")]
    DigestMismatch { declared_prefix: String, actual_prefix: String },
}

impl From<VerificationFailure> for ReadRefusal {
    fn from(failure: VerificationFailure) -> ReadRefusal {
        ReadRefusal::Failed(failure)
    }
}

/// §8 steps 1-6 for the window `offset..offset + limit` of `artifact` (cut at the end of the
/// file). An offset past the end is refused after the file's size is verified (step 4) and
/// before any hashing. Blocking: call it off the async executor.
pub(crate) fn read_verified(
    artifact: &RegisteredArtifact,
    offset: u64,
    limit: usize,
) -> Result<VerifiedWindow, ReadRefusal> {
    verified_window(
        Recorded { path: artifact.path(), size: artifact.size_bytes, sha256: &artifact.sha256 },
        offset,
        limit,
    )
}

/// \[beyond\] The whole file of a verified ref (an MCP tool's, a child's), checked again now
/// as [`read_verified`] checks a registered artifact — for a face that serves a run's artifact
/// by id. At most 64 MiB. Blocking: call it off the async executor.
pub fn read_ref_verified(artifact: &ArtifactRef) -> Result<Vec<u8>, ReadRefusal> {
    let recorded = Recorded { path: &artifact.resolved_path, size: artifact.file_size, sha256: &artifact.sha256 };
    let limit = usize::try_from(artifact.file_size).unwrap_or(usize::MAX);
    verified_window(recorded, 0, limit).map(|window| window.bytes)
}

/// What validation recorded of a file.
struct Recorded<'a> {
    path: &'a Path,
    size: u64,
    sha256: &'a str,
}

fn verified_window(artifact: Recorded<'_>, offset: u64, limit: usize) -> Result<VerifiedWindow, ReadRefusal> {
    if artifact.sha256.is_empty() {
        return Err(VerificationFailure::NoDigest.into());
    }
    let path = artifact.path;
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_symlink() => return Err(VerificationFailure::Symlink.into()),
        Ok(_) => {}
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Err(ReadRefusal::Removed),
        Err(err) => return Err(VerificationFailure::Lstat(err.to_string()).into()),
    }
    let file = open_file_without_symlinks(path).map_err(|err| VerificationFailure::Open(err.to_string()))?;
    let metadata = file.metadata().map_err(|err| VerificationFailure::Open(err.to_string()))?;
    if !metadata.is_file() {
        return Err(VerificationFailure::NotRegularFile.into());
    }
    if metadata.len() > MAX_ARTIFACT_BYTES {
        return Err(VerificationFailure::OverCap(metadata.len()).into());
    }
    if metadata.len() != artifact.size {
        return Err(VerificationFailure::SizeChanged { declared: artifact.size, actual: metadata.len() }.into());
    }
    let total = artifact.size;
    if offset > total {
        return Err(ReadRefusal::PastEnd { offset, total });
    }
    let window = offset..offset.saturating_add(limit as u64);
    let pass =
        hash_capped(file, MAX_ARTIFACT_BYTES, window).map_err(|err| VerificationFailure::Read(err.to_string()))?;
    if pass.read > MAX_ARTIFACT_BYTES {
        return Err(VerificationFailure::GrewPastCap.into());
    }
    if pass.digest != artifact.sha256 {
        return Err(VerificationFailure::DigestMismatch {
            declared_prefix: short_digest(artifact.sha256).to_owned(),
            actual_prefix: short_digest(&pass.digest).to_owned(),
        }
        .into());
    }
    Ok(VerifiedWindow { bytes: pass.window, offset, total })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn reasons_are_the_spec_text() {
        assert_eq!(
            VerificationFailure::DigestMismatch {
                declared_prefix: "aaaaaaaaaaaa".into(),
                actual_prefix: "bbbbbbbbbbbb".into()
            }
            .to_string(),
            "sha256 mismatch: ref declares aaaaaaaaaaaa…, file hashes to bbbbbbbbbbbb…"
        );
        assert_eq!(
            VerificationFailure::SizeChanged { declared: 5, actual: 7 }.to_string(),
            "file size changed since registration: ref declares 5 bytes, file has 7"
        );
        assert_eq!(
            VerificationFailure::OverCap(67108865).to_string(),
            "file is 67108865 bytes; the absolute artifact cap is 67108864 bytes"
        );
        assert_eq!(
            VerificationFailure::GrewPastCap.to_string(),
            "file grew past the absolute artifact cap during read"
        );
        assert_eq!(VerificationFailure::NotRegularFile.to_string(), "not a regular file");
    }
}
