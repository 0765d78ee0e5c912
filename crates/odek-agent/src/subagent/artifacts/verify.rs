//! Read-time verification (spec `results-and-artifacts.md` §8): every read of a registered
//! artifact's content — `artifact_read` and inline previews — re-checks the file before a byte of
//! it is returned, because validation happened earlier and the file may have been swapped or
//! rewritten since. Start at [`read_verified`].
//!
//! Guarantees: each step fails closed and returns nothing of the file; the path is opened with
//! no symlink on any component; size and digest are checked in one streaming pass that hashes
//! every byte while keeping only the requested window (never more than `limit` bytes held).

use std::io::{self, Read};

use sha2::{Digest, Sha256};
use thiserror::Error;

use super::MAX_ARTIFACT_BYTES;
use super::no_follow::open_file_without_symlinks;
use super::registry::RegisteredArtifact;
use odek_contract::artifact_ref::short_digest;

/// Read buffer of the hashing pass, in bytes (256 KiB: large enough that syscalls and copies
/// stay well under the hash's own cost).
const PASS_BUFFER_BYTES: usize = 256 * 1024;

/// The verified window of an artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedWindow {
    /// The bytes `offset..offset + bytes.len()` of the file.
    pub bytes: Vec<u8>,
    pub offset: u64,
    /// The file's size (equal to the registered size).
    pub total: u64,
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
pub fn read_verified(artifact: &RegisteredArtifact, offset: u64, limit: usize) -> Result<VerifiedWindow, ReadRefusal> {
    if artifact.sha256.is_empty() {
        return Err(VerificationFailure::NoDigest.into());
    }
    let path = artifact.path();
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
    if metadata.len() != artifact.size_bytes {
        return Err(VerificationFailure::SizeChanged { declared: artifact.size_bytes, actual: metadata.len() }.into());
    }
    let total = artifact.size_bytes;
    if offset > total {
        return Err(ReadRefusal::PastEnd { offset, total });
    }
    let pass =
        hash_pass(file, MAX_ARTIFACT_BYTES, offset, limit).map_err(|err| VerificationFailure::Read(err.to_string()))?;
    if pass.read > MAX_ARTIFACT_BYTES {
        return Err(VerificationFailure::GrewPastCap.into());
    }
    if pass.digest != artifact.sha256 {
        return Err(VerificationFailure::DigestMismatch {
            declared_prefix: short_digest(&artifact.sha256).to_owned(),
            actual_prefix: short_digest(&pass.digest).to_owned(),
        }
        .into());
    }
    Ok(VerifiedWindow { bytes: pass.window, offset, total })
}

/// What one streaming pass saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct HashPass {
    /// Lowercase hex SHA-256 of every byte read.
    pub digest: String,
    /// Bytes read: at most `cap + 1` (more than `cap` means the content is over the cap).
    pub read: u64,
    /// The bytes `window_start..window_start + window_len` that were read.
    pub window: Vec<u8>,
}

/// Hashes `reader` through one fixed buffer, reading at most `cap + 1` bytes, and keeps the
/// bytes of the window. Memory: the buffer plus at most `window_len` bytes.
pub(super) fn hash_pass(reader: impl Read, cap: u64, window_start: u64, window_len: usize) -> io::Result<HashPass> {
    let mut limited = reader.take(cap.saturating_add(1));
    let mut hasher = Sha256::new();
    let mut buffer = vec![0_u8; PASS_BUFFER_BYTES];
    let window_end = window_start.saturating_add(window_len as u64);
    let mut window = Vec::with_capacity(window_len.min(PASS_BUFFER_BYTES));
    let mut read: u64 = 0;
    loop {
        let n = match limited.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        let chunk = &buffer[..n];
        hasher.update(chunk);
        let chunk_start = read;
        read = read.saturating_add(n as u64);
        if read > window_start && chunk_start < window_end {
            let from = usize::try_from(window_start.saturating_sub(chunk_start)).unwrap_or(n);
            let to = usize::try_from(window_end.saturating_sub(chunk_start)).unwrap_or(n).min(n);
            window.extend_from_slice(&chunk[from..to]);
        }
    }
    Ok(HashPass { digest: hex::encode(hasher.finalize()), read, window })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn one_pass_keeps_only_the_window_and_hashes_everything() {
        let content: Vec<u8> = (0..PASS_BUFFER_BYTES * 3).map(|i| (i % 251) as u8).collect();
        let expected = hex::encode(Sha256::digest(&content));
        let start = PASS_BUFFER_BYTES as u64 - 10;
        let pass = hash_pass(&content[..], 1 << 30, start, PASS_BUFFER_BYTES + 20).unwrap();
        assert_eq!(pass.digest, expected);
        assert_eq!(pass.read, content.len() as u64);
        assert_eq!(pass.window, &content[PASS_BUFFER_BYTES - 10..2 * PASS_BUFFER_BYTES + 10]);
        let tail = hash_pass(&content[..], 1 << 30, content.len() as u64 - 3, 100).unwrap();
        assert_eq!(tail.window, &content[content.len() - 3..]);
        let past = hash_pass(&content[..], 1 << 30, content.len() as u64, 100).unwrap();
        assert!(past.window.is_empty());
    }

    #[test]
    fn one_pass_stops_after_cap_plus_one() {
        let pass = hash_pass(io::repeat(1).take(1000), 100, 0, 10).unwrap();
        assert_eq!(pass.read, 101);
        assert_eq!(pass.window, vec![1; 10]);
    }

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
