//! The child's scan of its `artifact_root` (spec `subagents.md` §9, last two rules): which
//! top-level entries become result artifacts, under which caps, with which ids, media types and
//! summaries, and the flags for everything left out. Start at [`scan_artifact_root`].
//!
//! Nothing is followed: entries are seen with `lstat` semantics and opened relative to the root's
//! handle with `O_NOFOLLOW`, so a symlink is skipped as "not a regular file" and a nested folder
//! is skipped whole. Digest and size are measured here, by the runner, in one pass per file;
//! never taken from the model.

use std::ffi::OsStr;
use std::io;
use std::path::Path;

use odek_contract::artifact_ref::{file_uri, hash_capped};
use odek_contract::envelope::{ARTIFACT_REF_SCHEMA, RawArtifactRef};
use odek_contract::quoting::quote;
use odek_contract::runes::first_runes;
use serde::{Deserialize, Serialize};

use super::{MAX_ARTIFACT_BYTES, MAX_REFS_PER_TASK, TASK_BUDGET_BYTES};
use crate::no_follow::{EntryKind, list_dir, open_dir, open_file_at, stat_at};

/// Longest summary, in runes.
pub(crate) const MAX_SUMMARY_RUNES: usize = 120;

/// Longest id taken from a file name, in characters (`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`).
const MAX_NAME_ID_CHARS: usize = 64;

/// Bytes of a text file kept from the hashing pass to find its first line.
const SUMMARY_PREFIX_BYTES: u64 = 8 * 1024;

/// The scan's caps. The defaults are the spec's; the flags quote whatever is configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanLimits {
    /// Refs kept per task (default 64).
    pub max_refs: usize,
    /// Bytes of one artifact (default 64 MiB).
    pub max_artifact_bytes: u64,
    /// Bytes of all kept artifacts together (default 64 MiB).
    pub task_budget_bytes: u64,
}

impl Default for ScanLimits {
    fn default() -> ScanLimits {
        ScanLimits {
            max_refs: MAX_REFS_PER_TASK,
            max_artifact_bytes: MAX_ARTIFACT_BYTES,
            task_budget_bytes: TASK_BUDGET_BYTES,
        }
    }
}

/// The result's `artifacts` entries and the flags for the summary, in the order they arose.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanReport {
    pub artifacts: Vec<RawArtifactRef>,
    pub flags: Vec<String>,
}

/// One entry of `subagent_finished`'s `artifacts` (§6): `{"id","path","bytes"}`, `path` being
/// the uri.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FinishedArtifact {
    id: String,
    path: String,
    bytes: u64,
}

impl From<&RawArtifactRef> for FinishedArtifact {
    fn from(artifact: &RawArtifactRef) -> FinishedArtifact {
        FinishedArtifact {
            id: artifact.id.clone(),
            path: artifact.uri.clone(),
            bytes: artifact.size_bytes.and_then(|size| u64::try_from(size).ok()).unwrap_or(0),
        }
    }
}

/// §9 scan with the spec's caps; see [`scan_artifact_root_with`].
pub fn scan_artifact_root(artifact_root: &Path) -> ScanReport {
    scan_artifact_root_with(artifact_root, ScanLimits::default())
}

/// §9 scan: every top-level entry of `artifact_root`, seen without following links. Directories
/// and non-regular entries are skipped; files over the per-artifact cap dropped; the rest, largest
/// first (ties by name), kept until the ref cap or the task budget is reached. A missing root
/// yields nothing. Blocking.
pub fn scan_artifact_root_with(artifact_root: &Path, limits: ScanLimits) -> ScanReport {
    let mut report = ScanReport::default();
    let root = match open_dir(artifact_root) {
        Ok(root) => root,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return report,
        Err(err) => {
            report.flags.push(format!("[artifact] scan failed: {err}"));
            return report;
        }
    };
    let names = match list_dir(&root) {
        Ok(names) => names,
        Err(err) => {
            report.flags.push(format!("[artifact] scan failed: {err}"));
            return report;
        }
    };
    let mut candidates = Vec::new();
    for name in names {
        let shown = quote(&name.to_string_lossy());
        match stat_at(&root, &name) {
            Err(err) => report.flags.push(format!("[artifact] skipped {shown}: stat: {err}")),
            Ok(stat) if stat.kind == EntryKind::Directory => {
                report.flags.push(format!("[artifact] skipped {shown}: directories are not collected"));
            }
            Ok(stat) if stat.kind != EntryKind::RegularFile => {
                report.flags.push(format!("[artifact] skipped {shown}: not a regular file"));
            }
            Ok(stat) if stat.size > limits.max_artifact_bytes => {
                report.flags.push(over_artifact_cap(&shown, stat.size));
            }
            Ok(stat) => candidates.push((name, stat.size)),
        }
    }
    candidates.sort_by(|(a_name, a_size), (b_name, b_size)| b_size.cmp(a_size).then_with(|| a_name.cmp(b_name)));
    let mut total: u64 = 0;
    for (name, size) in candidates {
        let shown = quote(&name.to_string_lossy());
        if report.artifacts.len() >= limits.max_refs {
            report.flags.push(format!("[artifact] dropped {shown}: ref cap ({}) reached", limits.max_refs));
            continue;
        }
        if total.saturating_add(size) > limits.task_budget_bytes {
            report.flags.push(budget_exhausted(&shown, limits));
            continue;
        }
        let measured = match measure_file(&root, &name, limits.max_artifact_bytes) {
            Ok(measured) => measured,
            Err(err) => {
                report.flags.push(format!("[artifact] skipped {shown}: read: {err}"));
                continue;
            }
        };
        if measured.size > limits.max_artifact_bytes {
            report.flags.push(over_artifact_cap(&shown, measured.size));
            continue;
        }
        if total.saturating_add(measured.size) > limits.task_budget_bytes {
            report.flags.push(budget_exhausted(&shown, limits));
            continue;
        }
        // A root that is not absolute and clean names nothing a parent could find.
        let uri = match file_uri(&artifact_root.join(&name)) {
            Ok(uri) => uri,
            Err(err) => {
                report.flags.push(format!("[artifact] skipped {shown}: {err}"));
                continue;
            }
        };
        total += measured.size;
        let id = assign_artifact_id(&name, &report.artifacts);
        report.artifacts.push(build_ref(id, uri, &name, measured));
    }
    report
}

fn over_artifact_cap(shown: &str, size: u64) -> String {
    format!("[artifact] dropped {shown}: {size} bytes exceeds the per-artifact cap")
}

fn budget_exhausted(shown: &str, limits: ScanLimits) -> String {
    format!("[artifact] dropped {shown}: task budget ({} bytes) exhausted", limits.task_budget_bytes)
}

/// Size, digest and first bytes of one file, from one pass over an `O_NOFOLLOW` handle.
struct Measured {
    size: u64,
    sha256: String,
    prefix: Vec<u8>,
}

fn measure_file(root: &std::os::fd::OwnedFd, name: &OsStr, cap: u64) -> io::Result<Measured> {
    let file = open_file_at(root, name)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    let pass = hash_capped(file, cap, 0..SUMMARY_PREFIX_BYTES)?;
    Ok(Measured { size: pass.read, sha256: pass.digest, prefix: pass.window })
}

fn build_ref(id: String, uri: String, name: &OsStr, measured: Measured) -> RawArtifactRef {
    let file_name = name.to_string_lossy();
    let media_type = media_type_for_name(&file_name);
    let summary = if media_type.starts_with("text/") { first_line_summary(&measured.prefix) } else { String::new() };
    RawArtifactRef {
        schema: ARTIFACT_REF_SCHEMA.to_owned(),
        id,
        uri,
        media_type: media_type.to_owned(),
        sha256: measured.sha256,
        size_bytes: i64::try_from(measured.size).ok(),
        summary,
    }
}

/// §9 ids: the file name without its last extension when it matches
/// `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$` and no earlier ref of the task uses it, else
/// `artifact-<n>` with n = refs so far + 1 (counting on while a file-name id already took it, so
/// ids stay unique within the task).
fn assign_artifact_id(name: &OsStr, earlier: &[RawArtifactRef]) -> String {
    let used = |id: &str| earlier.iter().any(|artifact| artifact.id == id);
    if let Some(stem) = name.to_str().map(strip_last_extension)
        && is_name_id(stem)
        && !used(stem)
    {
        return stem.to_owned();
    }
    let mut n = earlier.len() + 1;
    loop {
        let id = format!("artifact-{n}");
        if !used(&id) {
            return id;
        }
        n += 1;
    }
}

/// `report.tar.gz` → `report.tar`; `.hidden` → `` (the extension is the whole name).
fn strip_last_extension(name: &str) -> &str {
    name.rfind('.').map_or(name, |dot| &name[..dot])
}

fn is_name_id(stem: &str) -> bool {
    let bytes = stem.as_bytes();
    matches!(bytes.first(), Some(first) if first.is_ascii_alphanumeric())
        && bytes.len() <= MAX_NAME_ID_CHARS
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// §9 media types by the last extension (ASCII case-insensitive); anything else is
/// `application/octet-stream`.
fn media_type_for_name(name: &str) -> &'static str {
    let Some(dot) = name.rfind('.') else {
        return "application/octet-stream";
    };
    match name[dot + 1..].to_ascii_lowercase().as_str() {
        "md" | "markdown" => "text/markdown",
        "txt" | "log" => "text/plain",
        "json" => "application/json",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        "yaml" | "yml" => "text/yaml",
        "xml" => "text/xml",
        _ => "application/octet-stream",
    }
}

/// §9 summary: the first line, trimmed, at most 120 runes (invalid UTF-8 replaced).
fn first_line_summary(prefix: &[u8]) -> String {
    let line = prefix.split(|&b| b == b'\n').next().unwrap_or_default();
    let text = String::from_utf8_lossy(line);
    first_runes(text.trim(), MAX_SUMMARY_RUNES).trim_end().to_owned()
}

/// §5: the artifact flags appended to the summary after `\n`, one per line, the whole trimmed.
pub fn append_artifact_flags(summary: &str, flags: &[String]) -> String {
    let mut out = summary.to_owned();
    for flag in flags {
        out.push('\n');
        out.push_str(flag);
    }
    out.trim().to_owned()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn media_types() {
        for (name, expected) in [
            ("a.md", "text/markdown"),
            ("a.markdown", "text/markdown"),
            ("a.txt", "text/plain"),
            ("a.log", "text/plain"),
            ("a.json", "application/json"),
            ("a.csv", "text/csv"),
            ("a.html", "text/html"),
            ("a.htm", "text/html"),
            ("a.yaml", "text/yaml"),
            ("a.yml", "text/yaml"),
            ("a.xml", "text/xml"),
            ("A.MD", "text/markdown"),
            ("a.png", "application/octet-stream"),
            ("Makefile", "application/octet-stream"),
            ("a.md.gz", "application/octet-stream"),
        ] {
            assert_eq!(media_type_for_name(name), expected, "{name}");
        }
    }

    #[test]
    fn ids_from_names() {
        let id = |name: &str, earlier: &[&str]| {
            let earlier: Vec<RawArtifactRef> =
                earlier.iter().map(|id| RawArtifactRef { id: (*id).to_owned(), ..RawArtifactRef::default() }).collect();
            assign_artifact_id(OsStr::new(name), &earlier)
        };
        assert_eq!(id("report.md", &[]), "report");
        assert_eq!(id("data.tar.gz", &[]), "data.tar");
        assert_eq!(id("noext", &[]), "noext");
        assert_eq!(id(".hidden", &[]), "artifact-1");
        assert_eq!(id("has space.txt", &["x"]), "artifact-2");
        assert_eq!(id("report.txt", &["report"]), "artifact-2");
        assert_eq!(id(&format!("{}.txt", "a".repeat(64)), &[]), "a".repeat(64));
        assert_eq!(id(&format!("{}.txt", "a".repeat(65)), &[]), "artifact-1");
        assert_eq!(id("_x.txt", &[]), "artifact-1");
        assert_eq!(id("report.md", &["report", "artifact-2"]), "artifact-3");
    }

    #[test]
    fn summaries() {
        assert_eq!(first_line_summary(b"  # Title  \nbody"), "# Title");
        assert_eq!(first_line_summary(b"\nsecond"), "");
        assert_eq!(first_line_summary("é".repeat(200).as_bytes()), "é".repeat(120));
        assert_eq!(first_line_summary(b"a\xffb"), "a\u{fffd}b");
    }

    /// Before: the uri was `file://` plus the path's bytes, so a root with `..` gave a ref the
    /// parent rejects (rule 10) and a relative root a uri whose first segment reads as a host.
    #[test]
    fn a_root_no_uri_can_name_is_flagged_red() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("root")).unwrap();
        std::fs::write(dir.path().join("root/report.md"), "# Report\n").unwrap();
        let report = scan_artifact_root(&dir.path().join("root/../root"));
        assert!(report.artifacts.is_empty(), "{:?}", report.artifacts);
        assert_eq!(report.flags.len(), 1, "{:?}", report.flags);
        assert!(
            report.flags[0].starts_with("[artifact] skipped \"report.md\": artifact path \""),
            "{:?}",
            report.flags
        );
        assert!(report.flags[0].ends_with("\" is not clean (contains .. or . elements)"), "{:?}", report.flags);
        let clean = scan_artifact_root(&dir.path().join("root"));
        assert_eq!(clean.artifacts.len(), 1);
        assert_eq!(clean.artifacts[0].uri, format!("file://{}/report.md", dir.path().join("root").display()));
    }

    #[test]
    fn flags_follow_the_summary() {
        let flags = vec!["[artifact] skipped \"d\": directories are not collected".to_owned()];
        assert_eq!(
            append_artifact_flags("done\n", &flags),
            "done\n\n[artifact] skipped \"d\": directories are not collected"
        );
        assert_eq!(append_artifact_flags("", &flags), "[artifact] skipped \"d\": directories are not collected");
        assert_eq!(append_artifact_flags(" done ", &[]), "done");
    }
}
