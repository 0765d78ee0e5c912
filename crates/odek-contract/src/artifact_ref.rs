//! Artifact-ref validation (spec `results-and-artifacts.md` §4 and §7): the 20 ordered rules
//! that turn an untrusted [`RawArtifactRef`] into an [`ArtifactRef`] whose file exists, is a
//! regular file inside a configured root, is within the absolute size cap and matches its
//! declared size and digest. Start at [`validate_artifact_ref`].
//!
//! Also here, for both sides of the wire: [`file_uri`], the inverse of the uri rules 6-10 (a
//! server writes refs with it, the child of a delegated task too), and [`hash_capped`], the one
//! hashing pass over an artifact (rule 19, read-time verification, a child's scan, the SDK's
//! measuring).
//!
//! Deliberately not here: read-time verification (§8), which re-checks a registered ref before
//! its content is returned, and rendering (`render`). Validation never returns file content.
//!
//! Guarantees callers rely on:
//! - `resolved_path` has every symlink resolved and lies inside a symlink-resolved root, compared
//!   by path components.
//! - The file is read at most once, through a fixed-size buffer, and never past
//!   [`MAX_ARTIFACT_BYTES`] + 1 bytes; nothing is read when no digest is declared.

use std::collections::HashSet;
use std::fs::{self, File, Metadata};
use std::io::{self, Read};
use std::ops::Range;
use std::path::{Component, Path, PathBuf};

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC};

use sha2::{Digest, Sha256};

use crate::envelope::{ARTIFACT_REF_SCHEMA, RawArtifactRef};
use crate::error::ContractError;
use crate::quoting::quote;

/// Absolute size cap of one artifact, in bytes (64 MiB).
pub const MAX_ARTIFACT_BYTES: u64 = 67_108_864;

/// Hex characters of a digest shown to the model and in mismatch errors.
pub(crate) const SHORT_DIGEST_CHARS: usize = 12;

/// Read buffer of one hashing pass, in bytes (256 KiB: large enough that syscalls and copies
/// stay well under the hash's own cost).
const HASH_BUFFER_BYTES: usize = 256 * 1024;

/// Bytes a path component keeps unencoded in a `file://` uri: RFC 3986's unreserved characters.
const URI_COMPONENT_KEEP: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// A server's configured `artifact_roots`. Blank entries are dropped here; the rest are made
/// absolute and symlink-resolved each time refs are validated, so a root created or re-pointed
/// after configuration is honoured, and a root that cannot be resolved confines nothing.
#[derive(Debug, Clone, Default)]
pub struct ArtifactRoots {
    configured: Vec<PathBuf>,
}

impl ArtifactRoots {
    /// Keeps every entry that is not empty or whitespace-only, as written (a blank entry never
    /// means the current directory).
    pub fn new<I, S>(configured: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let configured = configured
            .into_iter()
            .filter(|root| !root.as_ref().trim().is_empty())
            .map(|root| PathBuf::from(root.as_ref()))
            .collect();
        Self { configured }
    }

    /// Rule 5: whether at least one non-blank root is configured.
    pub fn has_configured_root(&self) -> bool {
        !self.configured.is_empty()
    }

    /// Resolves every root now (relative roots against the current directory); unresolvable
    /// roots are skipped. Validating many refs against one snapshot saves a `realpath` per
    /// root per ref.
    pub fn resolve(&self) -> ResolvedRoots {
        let resolved = self.configured.iter().filter_map(|root| fs::canonicalize(root).ok()).collect();
        ResolvedRoots { configured: self.has_configured_root(), resolved }
    }
}

/// A snapshot of [`ArtifactRoots`] with every root symlink-resolved.
#[derive(Debug, Clone)]
pub struct ResolvedRoots {
    configured: bool,
    resolved: Vec<PathBuf>,
}

impl ResolvedRoots {
    /// Rule 12: `path` equals a root or lies under one, by whole path components.
    pub fn contains(&self, path: &Path) -> bool {
        self.resolved.iter().any(|root| path.starts_with(root))
    }
}

/// A ref that passed every rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactRef {
    pub id: String,
    pub media_type: String,
    /// The declared `size_bytes`; rendered only when present.
    pub size_bytes: Option<u64>,
    /// The declared digest (verified), or empty when none was declared.
    pub sha256: String,
    pub summary: String,
    /// Symlink-resolved path, for local bookkeeping only: never rendered to the model.
    pub resolved_path: PathBuf,
    /// Size of the file when it was validated.
    pub file_size: u64,
}

/// Applies rules 1-20 in order; the first failure is returned as
/// `artifact ref rejected: <rule error>` ([`ContractError::ArtifactRefRejected`]). Roots are
/// resolved at call time; use [`validate_artifact_ref_resolved`] to share one snapshot.
pub fn validate_artifact_ref(raw: &RawArtifactRef, roots: &ArtifactRoots) -> Result<ArtifactRef, ContractError> {
    check_rules(raw, roots.has_configured_root(), |path| roots.resolve().contains(path)).map_err(reject)
}

/// [`validate_artifact_ref`] against roots resolved once by [`ArtifactRoots::resolve`].
pub fn validate_artifact_ref_resolved(
    raw: &RawArtifactRef,
    roots: &ResolvedRoots,
) -> Result<ArtifactRef, ContractError> {
    check_rules(raw, roots.configured, |path| roots.contains(path)).map_err(reject)
}

/// Fails on the first repeated id (compared exactly as the server sent it), in ref order:
/// `odek.tool-result/v1 envelope carries duplicate artifact id "<id>"`.
pub fn check_unique_ids(refs: &[ArtifactRef]) -> Result<(), ContractError> {
    let mut seen = HashSet::with_capacity(refs.len());
    for artifact in refs {
        if !seen.insert(artifact.id.as_str()) {
            return Err(ContractError::DuplicateArtifactId { quoted_id: quote(&artifact.id) });
        }
    }
    Ok(())
}

fn reject(rule: ContractError) -> ContractError {
    ContractError::ArtifactRefRejected(Box::new(rule))
}

/// Rules 1-20, each group in its own function, in the spec's order.
fn check_rules(
    raw: &RawArtifactRef,
    has_configured_root: bool,
    within_roots: impl FnOnce(&Path) -> bool,
) -> Result<ArtifactRef, ContractError> {
    let quoted_id = check_required_fields(raw)?;
    if !has_configured_root {
        // Rule 5: fail closed without roots, before the uri is even parsed.
        return Err(ContractError::ArtifactNoRoots { quoted_id });
    }
    let decoded = decode_file_uri(&raw.uri, &quoted_id)?;
    let resolved_path = resolve_within_roots(&decoded, within_roots, &quoted_id)?;
    let file_size = stat_regular_file(&resolved_path, &quoted_id)?;
    let size_bytes = check_declared_size(raw.size_bytes, file_size, &quoted_id)?;
    if !raw.sha256.is_empty() {
        verify_declared_digest(&raw.sha256, &resolved_path, &quoted_id)?;
    }
    Ok(ArtifactRef {
        id: raw.id.clone(),
        media_type: raw.media_type.clone(),
        size_bytes,
        sha256: raw.sha256.clone(),
        summary: raw.summary.clone(),
        resolved_path,
        file_size,
    })
}

/// Rules 1-4; returns the quoted id every later message uses.
fn check_required_fields(raw: &RawArtifactRef) -> Result<String, ContractError> {
    if raw.schema != ARTIFACT_REF_SCHEMA {
        return Err(ContractError::ArtifactSchemaMismatch { quoted_schema: quote(&raw.schema) });
    }
    if raw.id.is_empty() {
        return Err(ContractError::ArtifactMissingId);
    }
    let quoted_id = quote(&raw.id);
    if raw.uri.is_empty() {
        return Err(ContractError::ArtifactMissingUri { quoted_id });
    }
    if raw.media_type.is_empty() {
        return Err(ContractError::ArtifactMissingMediaType { quoted_id });
    }
    Ok(quoted_id)
}

/// Rules 6-10: the percent-decoded path a plain `file://` uri names, absolute and clean. Every
/// uri [`file_uri`] writes passes.
fn decode_file_uri(uri: &str, quoted_id: &str) -> Result<Vec<u8>, ContractError> {
    let raw_path = parse_plain_file_uri(uri).map_err(|problem| problem.into_error(quoted_id))?;
    decode_clean_absolute_path(raw_path, quoted_id)
}

/// The `file://` uri of `path`: `file://`, then each component of the path after a `/`, every
/// byte outside RFC 3986's unreserved set (`A-Z a-z 0-9 - . _ ~`) percent-encoded, non-UTF-8
/// bytes included (`/a b/r\xff` is `file:///a%20b/r%FF`). Symlinks are not resolved: validation
/// resolves them (rule 11).
///
/// The path must be absolute ([`ContractError::FileUriNotAbsolute`]) and hold no `..`
/// ([`ContractError::FileUriNotClean`]). It is read as [`Path::components`] reads it, so a
/// repeated or trailing `/` and a `.` segment are dropped and the uri is always clean. What it
/// returns, rules 6-10 always accept, and they decode it to the path it was made from (equal as
/// a [`Path`]; byte for byte when the path was clean): the round-trip test below checks it for
/// arbitrary byte paths, `%`, `#`, `?`, spaces and non-UTF-8 bytes included. Off Unix, a
/// component that is not Unicode is written lossily.
pub fn file_uri(path: &Path) -> Result<String, ContractError> {
    let quoted_path = || quote(&path.to_string_lossy());
    if !path.is_absolute() {
        return Err(ContractError::FileUriNotAbsolute { quoted_path: quoted_path() });
    }
    if path.components().any(|component| matches!(component, Component::CurDir | Component::ParentDir)) {
        return Err(ContractError::FileUriNotClean { quoted_path: quoted_path() });
    }
    let mut uri = String::from("file://");
    for component in path.components() {
        if let Component::Normal(name) = component {
            uri.push('/');
            uri.extend(percent_encoding::percent_encode(&component_bytes(name), URI_COMPONENT_KEEP));
        }
    }
    if uri.len() == "file://".len() {
        uri.push('/');
    }
    Ok(uri)
}

#[cfg(unix)]
fn component_bytes(name: &std::ffi::OsStr) -> std::borrow::Cow<'_, [u8]> {
    use std::os::unix::ffi::OsStrExt;
    std::borrow::Cow::Borrowed(name.as_bytes())
}

#[cfg(not(unix))]
fn component_bytes(name: &std::ffi::OsStr) -> std::borrow::Cow<'_, [u8]> {
    std::borrow::Cow::Owned(name.to_string_lossy().into_owned().into_bytes())
}

/// Rules 9-10 on the percent-decoded path (so `%2e%2e` is `..` and `%2F` a separator).
fn decode_clean_absolute_path(raw_path: &str, quoted_id: &str) -> Result<Vec<u8>, ContractError> {
    let decoded: Vec<u8> = percent_encoding::percent_decode_str(raw_path).collect();
    if !decoded.starts_with(b"/") {
        return Err(ContractError::ArtifactPathNotAbsolute {
            quoted_id: quoted_id.to_owned(),
            quoted_path: quote(&String::from_utf8_lossy(&decoded)),
        });
    }
    if !is_clean_absolute_path(&decoded) {
        return Err(ContractError::ArtifactPathNotClean {
            quoted_id: quoted_id.to_owned(),
            quoted_path: quote(&String::from_utf8_lossy(&decoded)),
        });
    }
    Ok(decoded)
}

/// Rules 11-12: every symlink resolved (a missing file or dangling link fails), then
/// containment of the resolved path in a resolved root.
fn resolve_within_roots(
    decoded: &[u8],
    within_roots: impl FnOnce(&Path) -> bool,
    quoted_id: &str,
) -> Result<PathBuf, ContractError> {
    let not_resolvable =
        |detail: String| ContractError::ArtifactNotResolvable { quoted_id: quoted_id.to_owned(), detail };
    let requested = path_from_bytes(decoded).map_err(not_resolvable)?;
    let resolved = fs::canonicalize(&requested).map_err(|err| not_resolvable(err.to_string()))?;
    if !within_roots(&resolved) {
        return Err(ContractError::ArtifactOutsideRoots { quoted_id: quoted_id.to_owned() });
    }
    Ok(resolved)
}

/// Rules 13-15: stat, regular file, absolute cap (before any hashing). Returns the size.
fn stat_regular_file(resolved_path: &Path, quoted_id: &str) -> Result<u64, ContractError> {
    let metadata = fs::metadata(resolved_path)
        .map_err(|err| ContractError::ArtifactStat { quoted_id: quoted_id.to_owned(), detail: err.to_string() })?;
    check_regular_within_cap(&metadata, quoted_id)?;
    Ok(metadata.len())
}

/// Rules 16-17: a declared size is non-negative and equals the real size. Absent stays absent.
fn check_declared_size(declared: Option<i64>, file_size: u64, quoted_id: &str) -> Result<Option<u64>, ContractError> {
    let Some(declared) = declared else {
        return Ok(None);
    };
    let Ok(declared_unsigned) = u64::try_from(declared) else {
        return Err(ContractError::ArtifactNegativeSize { quoted_id: quoted_id.to_owned() });
    };
    if declared_unsigned != file_size {
        return Err(ContractError::ArtifactSizeMismatch {
            quoted_id: quoted_id.to_owned(),
            declared,
            actual: file_size,
        });
    }
    Ok(Some(declared_unsigned))
}

/// Rules 18-20: the declared digest is well-formed, the file hashes within the cap, and the
/// digests agree.
fn verify_declared_digest(declared: &str, resolved_path: &Path, quoted_id: &str) -> Result<(), ContractError> {
    if !is_lowercase_sha256_hex(declared) {
        return Err(ContractError::ArtifactMalformedDigest {
            quoted_id: quoted_id.to_owned(),
            quoted_sha256: quote(declared),
        });
    }
    let actual = hash_file_within_cap(resolved_path, quoted_id)?;
    if actual != declared {
        return Err(ContractError::ArtifactDigestMismatch {
            quoted_id: quoted_id.to_owned(),
            declared_prefix: short_digest(declared).to_owned(),
            actual_prefix: short_digest(&actual).to_owned(),
        });
    }
    Ok(())
}

/// The first `SHORT_DIGEST_CHARS` characters of a digest (all of it when shorter).
pub fn short_digest(digest: &str) -> &str {
    crate::runes::first_runes(digest, SHORT_DIGEST_CHARS)
}

/// Rule 18: exactly 64 characters of `0-9a-f`.
pub(crate) fn is_lowercase_sha256_hex(digest: &str) -> bool {
    digest.len() == 64 && digest.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Rules 14-15 on one `stat` result.
fn check_regular_within_cap(metadata: &Metadata, quoted_id: &str) -> Result<(), ContractError> {
    if !metadata.is_file() {
        return Err(ContractError::ArtifactNotRegularFile { quoted_id: quoted_id.to_owned() });
    }
    if metadata.len() > MAX_ARTIFACT_BYTES {
        return Err(ContractError::ArtifactTooLarge { quoted_id: quoted_id.to_owned(), size: metadata.len() });
    }
    Ok(())
}

/// Rule 19: one streaming pass over at most `MAX_ARTIFACT_BYTES + 1` bytes. The final component
/// is opened without following symlinks (it was resolved a moment ago, so a symlink there now
/// means a swap) and non-blocking (a FIFO swapped in cannot hang validation); the open handle
/// is re-checked to be a regular file.
fn hash_file_within_cap(resolved_path: &Path, quoted_id: &str) -> Result<String, ContractError> {
    let hash_io =
        |err: io::Error| ContractError::ArtifactHashIo { quoted_id: quoted_id.to_owned(), detail: err.to_string() };
    let file = open_no_follow(resolved_path).map_err(hash_io)?;
    let metadata = file.metadata().map_err(hash_io)?;
    check_regular_within_cap(&metadata, quoted_id)?;
    let pass = hash_capped(file, MAX_ARTIFACT_BYTES, 0..0).map_err(hash_io)?;
    if pass.read > MAX_ARTIFACT_BYTES {
        return Err(ContractError::ArtifactGrewWhileHashing { quoted_id: quoted_id.to_owned(), read: pass.read });
    }
    Ok(pass.digest)
}

/// What one [`hash_capped`] pass read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CappedHash {
    /// Lowercase hex SHA-256 of every byte read.
    pub digest: String,
    /// Bytes read: at most `cap + 1`, so more than `cap` means the content goes on past the cap
    /// (and `digest` covers only its start).
    pub read: u64,
    /// The bytes of the window that were read.
    pub window: Vec<u8>,
}

/// Hashes `reader` in one pass through one fixed buffer, reading at most `cap + 1` bytes, and
/// keeps the bytes of `window` (offsets into the content; `0..0` keeps none). Memory: the buffer
/// plus the window. A content that grows while it is read is still cut off at the bound.
pub fn hash_capped(reader: impl Read, cap: u64, window: Range<u64>) -> io::Result<CappedHash> {
    let mut limited = reader.take(cap.saturating_add(1));
    let mut hasher = Sha256::new();
    let mut buffer = vec![0_u8; HASH_BUFFER_BYTES];
    let window_len = usize::try_from(window.end.saturating_sub(window.start)).unwrap_or(usize::MAX);
    let mut kept = Vec::with_capacity(window_len.min(HASH_BUFFER_BYTES));
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
        if read > window.start && chunk_start < window.end {
            let from = usize::try_from(window.start.saturating_sub(chunk_start)).unwrap_or(n);
            let to = usize::try_from(window.end.saturating_sub(chunk_start)).unwrap_or(n).min(n);
            kept.extend_from_slice(&chunk[from..to]);
        }
    }
    Ok(CappedHash { digest: hex::encode(hasher.finalize()), read, window: kept })
}

#[cfg(unix)]
fn open_no_follow(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path)
}

#[cfg(not(unix))]
fn open_no_follow(path: &Path) -> io::Result<File> {
    File::open(path)
}

#[cfg(unix)]
fn path_from_bytes(bytes: &[u8]) -> Result<PathBuf, String> {
    use std::os::unix::ffi::OsStrExt;
    Ok(PathBuf::from(std::ffi::OsStr::from_bytes(bytes)))
}

#[cfg(not(unix))]
fn path_from_bytes(bytes: &[u8]) -> Result<PathBuf, String> {
    String::from_utf8(bytes.to_vec()).map(PathBuf::from).map_err(|err| err.to_string())
}

/// Rule 10 on an absolute decoded path: no `.` or `..` segment, no empty segment (`//`), no
/// trailing `/`. `/` itself is clean (it is what cleaning `/` yields).
fn is_clean_absolute_path(path: &[u8]) -> bool {
    if path == b"/" {
        return true;
    }
    path.get(1..).is_some_and(|rest| rest.split(|&b| b == b'/').all(|segment| !matches!(segment, b"" | b"." | b"..")))
}

/// Why a uri failed rules 6-8.
#[derive(Debug, PartialEq, Eq)]
enum UriProblem {
    /// Rule 6, with the parser's message.
    Unparseable(String),
    /// Rule 7, with the scheme in lowercase.
    Scheme(String),
    /// Rule 8.
    NotPlain,
}

impl UriProblem {
    fn into_error(self, quoted_id: &str) -> ContractError {
        let quoted_id = quoted_id.to_owned();
        match self {
            UriProblem::Unparseable(detail) => ContractError::ArtifactUnparseableUri { quoted_id, detail },
            UriProblem::Scheme(scheme) => ContractError::ArtifactUriScheme { quoted_id, quoted_scheme: quote(&scheme) },
            UriProblem::NotPlain => ContractError::ArtifactUriNotPlain { quoted_id },
        }
    }
}

/// Rules 6-8 on the raw text, returning the still percent-encoded path. The uri is split by
/// RFC 3986's generic syntax (leniently, like Go's `net/url`: non-ASCII and spaces are
/// accepted, control characters and broken `%` escapes are not). No normalising parser is
/// involved, so `localhost`, `..`, `\`, tabs and empty `?`/`#` are all seen as written.
fn parse_plain_file_uri(uri: &str) -> Result<&str, UriProblem> {
    if uri.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err(UriProblem::Unparseable("invalid control character in URL".to_owned()));
    }
    if let Some(bad) = find_invalid_percent_escape(uri) {
        return Err(UriProblem::Unparseable(format!("invalid URL escape {}", quote(bad))));
    }
    let (scheme, rest) = split_scheme(uri)?;
    if !scheme.eq_ignore_ascii_case("file") {
        return Err(UriProblem::Scheme(scheme.to_ascii_lowercase()));
    }
    if rest.contains(['?', '#']) {
        return Err(UriProblem::NotPlain);
    }
    if let Some(after_slashes) = rest.strip_prefix("//") {
        // Anything between `//` and the path is an authority: a host (`localhost` included),
        // userinfo or a port.
        let authority_end = after_slashes.find('/').unwrap_or(after_slashes.len());
        if authority_end > 0 {
            return Err(UriProblem::NotPlain);
        }
        return Ok(after_slashes);
    }
    if rest.is_empty() || rest.starts_with('/') {
        return Ok(rest);
    }
    // `file:rel/x`: the opaque form.
    Err(UriProblem::NotPlain)
}

/// Splits `scheme ":" rest`; a text that does not start with a scheme is a relative reference
/// with the empty scheme (rule 7 then rejects it by name).
fn split_scheme(uri: &str) -> Result<(&str, &str), UriProblem> {
    for (index, byte) in uri.bytes().enumerate() {
        match byte {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if index > 0 => {}
            b':' if index == 0 => {
                return Err(UriProblem::Unparseable("missing protocol scheme".to_owned()));
            }
            b':' => return Ok((&uri[..index], &uri[index + 1..])),
            _ => break,
        }
    }
    let first_segment = uri.split(['/', '?', '#']).next().unwrap_or_default();
    if first_segment.contains(':') {
        return Err(UriProblem::Unparseable("first path segment in URL cannot contain colon".to_owned()));
    }
    Ok(("", uri))
}

/// The first `%` not followed by two hex digits, with what follows it (up to 3 bytes).
fn find_invalid_percent_escape(uri: &str) -> Option<&str> {
    let bytes = uri.as_bytes();
    let mut index = 0;
    while let Some(offset) = bytes.get(index..).and_then(|tail| tail.iter().position(|&b| b == b'%')) {
        let start = index + offset;
        let valid = matches!(
            (bytes.get(start + 1), bytes.get(start + 2)),
            (Some(a), Some(b)) if a.is_ascii_hexdigit() && b.is_ascii_hexdigit()
        );
        if !valid {
            let end = (start + 3).min(uri.len());
            let end = (start..=end).rev().find(|&i| uri.is_char_boundary(i)).unwrap_or(start);
            return Some(uri.get(start..end).unwrap_or("%"));
        }
        index = start + 3;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_file_uris() {
        assert_eq!(parse_plain_file_uri("file:///data/a.txt"), Ok("/data/a.txt"));
        assert_eq!(parse_plain_file_uri("FILE:///data/a.txt"), Ok("/data/a.txt"));
        assert_eq!(parse_plain_file_uri("file:/data/a.txt"), Ok("/data/a.txt"));
        assert_eq!(parse_plain_file_uri("file:///data/a%20b"), Ok("/data/a%20b"));
        assert_eq!(parse_plain_file_uri("file:///data/résumé a.txt"), Ok("/data/résumé a.txt"));
        assert_eq!(parse_plain_file_uri("file://"), Ok(""));
        assert_eq!(parse_plain_file_uri("file:///data/../etc"), Ok("/data/../etc"));
    }

    #[test]
    fn uris_that_are_not_plain() {
        for uri in [
            "file://localhost/data/a",
            "file://host/data/a",
            "file://user@/data/a",
            "file://user@host/data/a",
            "file://user:pw@host/data/a",
            "file://:80/data/a",
            "file:///data/a?",
            "file:///data/a?x=1",
            "file:///data/a#",
            "file:///data/a#frag",
            "file:rel/x",
            "file:\\\\host\\x",
        ] {
            assert_eq!(parse_plain_file_uri(uri), Err(UriProblem::NotPlain), "{uri}");
        }
    }

    #[test]
    fn schemes_and_parse_errors() {
        assert_eq!(parse_plain_file_uri("HTTPS://x/y"), Err(UriProblem::Scheme("https".to_owned())));
        assert_eq!(parse_plain_file_uri("s3+x.y-z:a"), Err(UriProblem::Scheme("s3+x.y-z".to_owned())));
        assert_eq!(parse_plain_file_uri("relative/path"), Err(UriProblem::Scheme(String::new())));
        assert_eq!(parse_plain_file_uri("/data/a"), Err(UriProblem::Scheme(String::new())));
        assert_eq!(
            parse_plain_file_uri("1file:///a"),
            Err(UriProblem::Unparseable("first path segment in URL cannot contain colon".to_owned()))
        );
        assert_eq!(parse_plain_file_uri("://a"), Err(UriProblem::Unparseable("missing protocol scheme".to_owned())));
        assert!(matches!(parse_plain_file_uri("file:///a\n/b"), Err(UriProblem::Unparseable(_))));
        assert!(matches!(parse_plain_file_uri("file:///a\u{7f}"), Err(UriProblem::Unparseable(_))));
        assert!(matches!(parse_plain_file_uri(" file:///a"), Err(UriProblem::Unparseable(_))));
        assert_eq!(
            parse_plain_file_uri("file:///a%zz"),
            Err(UriProblem::Unparseable("invalid URL escape \"%zz\"".to_owned()))
        );
        assert_eq!(
            parse_plain_file_uri("file:///a%4"),
            Err(UriProblem::Unparseable("invalid URL escape \"%4\"".to_owned()))
        );
        assert!(matches!(parse_plain_file_uri("file:///a%é"), Err(UriProblem::Unparseable(_))));
    }

    #[test]
    fn clean_paths() {
        assert!(is_clean_absolute_path(b"/"));
        assert!(is_clean_absolute_path(b"/data/a.txt"));
        assert!(is_clean_absolute_path(b"/data/..a/.b/a..b"));
        for dirty in [&b"/data/"[..], b"//data", b"/data//a", b"/data/./a", b"/data/../a", b"/.", b"/.."] {
            assert!(!is_clean_absolute_path(dirty), "{}", String::from_utf8_lossy(dirty));
        }
    }

    #[test]
    fn digest_format() {
        assert!(is_lowercase_sha256_hex(&"a".repeat(64)));
        assert!(!is_lowercase_sha256_hex(&"A".repeat(64)));
        assert!(!is_lowercase_sha256_hex(&"a".repeat(63)));
        assert!(!is_lowercase_sha256_hex(&"g".repeat(64)));
    }

    #[test]
    fn grows_past_cap_while_hashing() {
        // The same routine rule 19 runs with MAX_ARTIFACT_BYTES, with a small cap so the test
        // does not hash 64 MiB: content beyond the cap is detected after reading cap + 1 bytes.
        let outcome = hash_capped(io::repeat(7).take(1000), 100, 0..0).unwrap();
        assert_eq!(outcome.read, 101);
        let outcome = hash_capped(&b"abc"[..], 3, 0..0).unwrap();
        assert_eq!(outcome.read, 3);
        assert_eq!(outcome.digest, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        let err = ContractError::ArtifactGrewWhileHashing { quoted_id: quote("a"), read: MAX_ARTIFACT_BYTES + 1 };
        assert_eq!(
            err.to_string(),
            "artifact \"a\": hash: content is at least 67108865 bytes; the absolute artifact cap is 67108864 bytes"
        );
    }

    #[test]
    fn blank_roots_are_dropped() {
        assert!(!ArtifactRoots::new(["", "  ", "\t"]).has_configured_root());
        assert!(ArtifactRoots::new(["", "/nonexistent-root"]).has_configured_root());
        assert!(!ArtifactRoots::new(Vec::<String>::new()).has_configured_root());
    }

    #[test]
    fn file_uris_are_plain_absolute_and_encoded() {
        assert_eq!(file_uri(Path::new("/tmp/a b/ü%.txt")).unwrap(), "file:///tmp/a%20b/%C3%BC%25.txt");
        assert_eq!(file_uri(Path::new("/")).unwrap(), "file:///");
        assert!(matches!(file_uri(Path::new("rel/x")), Err(ContractError::FileUriNotAbsolute { .. })));
        assert!(matches!(file_uri(Path::new("/tmp/../etc/x")), Err(ContractError::FileUriNotClean { .. })));
        assert_eq!(file_uri(Path::new("/a/b c/r%1é.md")).unwrap(), "file:///a/b%20c/r%251%C3%A9.md");
        assert_eq!(file_uri(Path::new("/a/x-y_z.~1")).unwrap(), "file:///a/x-y_z.~1");
        assert_eq!(file_uri(Path::new("/a//b/./c/")).unwrap(), "file:///a/b/c");
        assert_eq!(file_uri(Path::new("rel")).unwrap_err().to_string(), "artifact path \"rel\" is not absolute");
        assert_eq!(
            file_uri(Path::new("/a/../b")).unwrap_err().to_string(),
            "artifact path \"/a/../b\" is not clean (contains .. or . elements)"
        );
    }

    /// The next value of a xorshift64* sequence: the same paths on every run.
    #[cfg(unix)]
    fn next_random(state: &mut u64) -> u64 {
        *state ^= *state >> 12;
        *state ^= *state << 25;
        *state ^= *state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A path of random bytes, weighted towards what a uri treats specially: `%`, `#`, `?`,
    /// spaces, `/` (so `//` and a trailing `/` occur), `.` and `..` segments, controls and
    /// non-UTF-8 bytes; about one in eight is relative.
    #[cfg(unix)]
    fn random_path(state: &mut u64) -> Vec<u8> {
        const SPECIAL: &[u8] = b"%#?/ .:@\\+&=;,~-_";
        let mut path = if next_random(state).is_multiple_of(8) { Vec::new() } else { vec![b'/'] };
        for _ in 0..next_random(state) % 5 {
            match next_random(state) % 10 {
                0 => path.extend_from_slice(b"."),
                1 => path.extend_from_slice(b".."),
                _ => {
                    for _ in 0..1 + next_random(state) % 8 {
                        let roll = next_random(state);
                        path.push(match roll % 4 {
                            0 => SPECIAL[(roll >> 8) as usize % SPECIAL.len()],
                            1 => (roll >> 8) as u8 | 0x80,
                            2 => (roll >> 8) as u8 % 0x20,
                            _ => b'a' + (roll >> 8) as u8 % 26,
                        });
                    }
                }
            }
            path.push(b'/');
            if next_random(state).is_multiple_of(3) {
                path.pop();
            }
        }
        path
    }

    /// `path` as [`Path::components`] reads an absolute path: `/`, then the segments that are
    /// neither empty nor `.`, joined by `/`.
    #[cfg(unix)]
    fn components_of(path: &[u8]) -> Vec<u8> {
        let segments: Vec<&[u8]> =
            path.split(|&b| b == b'/').filter(|segment| !matches!(*segment, b"" | b".")).collect();
        let mut clean = b"/".to_vec();
        clean.extend_from_slice(&segments.join(&b'/'));
        clean
    }

    /// Property: for any byte path, `file_uri` either refuses it for the documented reason or
    /// writes a uri of only unreserved characters, `/` and `%XX` escapes that rules 6-10 accept
    /// and decode to the same path.
    #[cfg(unix)]
    #[test]
    fn file_uris_round_trip_through_the_decoder() {
        use std::ffi::OsStr;
        use std::os::unix::ffi::OsStrExt;
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut round_trips = 0;
        for _ in 0..20_000 {
            let bytes = random_path(&mut state);
            let path = Path::new(OsStr::from_bytes(&bytes));
            let shown = String::from_utf8_lossy(&bytes).into_owned();
            match file_uri(path) {
                Ok(uri) => {
                    let rest = uri.strip_prefix("file://").unwrap();
                    assert!(
                        rest.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~/%".contains(&b)),
                        "{shown:?} -> {uri}"
                    );
                    let decoded =
                        decode_file_uri(&uri, "\"t\"").unwrap_or_else(|err| panic!("{shown:?} -> {uri}: {err}"));
                    assert_eq!(Path::new(OsStr::from_bytes(&decoded)), path, "{shown:?} -> {uri}");
                    assert_eq!(decoded, components_of(&bytes), "{shown:?} -> {uri}");
                    round_trips += 1;
                }
                Err(ContractError::FileUriNotAbsolute { .. }) => assert!(!bytes.starts_with(b"/"), "{shown:?}"),
                Err(ContractError::FileUriNotClean { .. }) => {
                    assert!(bytes.split(|&b| b == b'/').any(|segment| segment == b".."), "{shown:?}");
                }
                Err(other) => panic!("{shown:?}: {other}"),
            }
        }
        assert!(round_trips > 10_000, "{round_trips}");
        let non_utf8 = Path::new(OsStr::from_bytes(b"/d/r\xff\xfe.txt"));
        assert_eq!(file_uri(non_utf8).unwrap(), "file:///d/r%FF%FE.txt");
    }

    #[test]
    fn one_pass_keeps_only_the_window_and_hashes_everything() {
        let content: Vec<u8> = (0..HASH_BUFFER_BYTES * 3).map(|i| (i % 251) as u8).collect();
        let expected = hex::encode(Sha256::digest(&content));
        let start = HASH_BUFFER_BYTES as u64 - 10;
        let pass = hash_capped(&content[..], 1 << 30, start..start + HASH_BUFFER_BYTES as u64 + 20).unwrap();
        assert_eq!(pass.digest, expected);
        assert_eq!(pass.read, content.len() as u64);
        assert_eq!(pass.window, &content[HASH_BUFFER_BYTES - 10..2 * HASH_BUFFER_BYTES + 10]);
        let end = content.len() as u64;
        let tail = hash_capped(&content[..], 1 << 30, end - 3..end + 97).unwrap();
        assert_eq!(tail.window, &content[content.len() - 3..]);
        let past = hash_capped(&content[..], 1 << 30, end..end + 100).unwrap();
        assert!(past.window.is_empty());
    }

    #[test]
    fn one_pass_stops_after_cap_plus_one() {
        let pass = hash_capped(io::repeat(1).take(1000), 100, 0..10).unwrap();
        assert_eq!(pass.read, 101);
        assert_eq!(pass.window, vec![1; 10]);
    }
}
