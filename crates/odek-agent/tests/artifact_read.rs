//! `artifact_read` (spec `subagents.md` §11, `results-and-artifacts.md` §8): reads by registry
//! id, the exact header, offset/limit caps, and read-time verification refusing every file that
//! changed after registration without returning a byte of it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::symlink;
use std::path::PathBuf;
use std::sync::Arc;

use odek_agent::subagent::artifact_read::{ArtifactReadTool, read_artifact};
use odek_agent::subagent::artifacts::{
    ArtifactRegistry, TaskId, create_artifact_root, scan_artifact_root, validate_task_artifacts,
};
use odek_agent::tool::{Tool, ToolContext};
use odek_contract::envelope::RawArtifactRef;
use odek_danger::DangerPolicy;
use sha2::{Digest, Sha256};

struct Fixture {
    _temp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    registry: Arc<ArtifactRegistry>,
}

/// Files written to one task root, scanned, validated and registered as task `task_number`.
fn fixture_with_task(task_number: usize, files: &[(&str, &[u8])]) -> Fixture {
    let temp = tempfile::tempdir().unwrap();
    let base = temp.path().canonicalize().unwrap();
    let outside = base.join("outside");
    std::fs::create_dir(&outside).unwrap();
    let root = create_artifact_root(&base.join("artifacts"), Some("s1"), &TaskId::parse("task-1").unwrap()).unwrap();
    for (name, content) in files {
        std::fs::write(root.join(name), content).unwrap();
    }
    let scanned = scan_artifact_root(&root);
    assert_eq!(scanned.flags, Vec::<String>::new());
    let validated = validate_task_artifacts(&scanned.artifacts, Some(&root));
    assert_eq!(validated.dropped, Vec::<String>::new());
    let registry = Arc::new(ArtifactRegistry::new());
    registry.begin_call().register_task(task_number, validated.valid);
    Fixture { _temp: temp, root, outside, registry }
}

fn fixture(files: &[(&str, &[u8])]) -> Fixture {
    fixture_with_task(1, files)
}

fn short_sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))[..12].to_owned()
}

fn read(fixture: &Fixture, arguments: &str) -> String {
    read_artifact(&fixture.registry, arguments).output
}

const REPORT: &[u8] = b"# Report\nline two\n";

#[test]
fn whole_artifact_with_the_exact_header() {
    let f = fixture_with_task(3, &[("report.md", REPORT)]);
    let outcome = read_artifact(&f.registry, r#"{"id":"report"}"#);
    assert_eq!(outcome.untrusted_source.as_deref(), Some("artifact_read"));
    assert_eq!(
        outcome.output,
        format!(
            "artifact report (text/markdown, 18 bytes, sha256:{}) — task 3 — bytes 0..18 of 18\n\n# Report\nline two\n",
            short_sha(REPORT)
        )
    );
}

#[test]
fn windows_and_truncation_notice() {
    let f = fixture(&[("report.md", REPORT)]);
    let sha = short_sha(REPORT);
    assert_eq!(
        read(&f, r#"{"id":"report","offset":2,"limit":6}"#),
        format!(
            "artifact report (text/markdown, 18 bytes, sha256:{sha}) — task 1 — bytes 2..8 of 18 — TRUNCATED, call again with offset to continue\n\nReport"
        )
    );
    assert_eq!(
        read(&f, r#"{"id":"report","offset":9}"#),
        format!("artifact report (text/markdown, 18 bytes, sha256:{sha}) — task 1 — bytes 9..18 of 18\n\nline two\n")
    );
    assert_eq!(
        read(&f, r#"{"id":"report","offset":18}"#),
        format!("artifact report (text/markdown, 18 bytes, sha256:{sha}) — task 1 — bytes 18..18 of 18\n\n")
    );
    assert_eq!(
        read(&f, r#"{"id":"report","offset":-4,"limit":-1}"#),
        format!(
            "artifact report (text/markdown, 18 bytes, sha256:{sha}) — task 1 — bytes 0..18 of 18\n\n# Report\nline two\n"
        )
    );
    assert_eq!(
        read(&f, r#"{"id":"report","offset":19}"#),
        "{\"error\":\"artifact \"report\" is 18 bytes; offset 19 is past the end\"}"
    );
}

#[test]
fn limit_is_capped_at_256_kib_and_defaults_to_64_kib() {
    let content = vec![b'x'; 300_000];
    let f = fixture(&[("big.log", &content)]);
    let sha = short_sha(&content);
    let capped = read(&f, r#"{"id":"big","limit":1000000}"#);
    let (header, body) = capped.split_once("\n\n").unwrap();
    assert_eq!(
        header,
        format!(
            "artifact big (text/plain, 300000 bytes, sha256:{sha}) — task 1 — bytes 0..262144 of 300000 — TRUNCATED, call again with offset to continue"
        )
    );
    assert_eq!(body.len(), 262_144);
    for arguments in [r#"{"id":"big"}"#, r#"{"id":"big","limit":0}"#] {
        let default = read(&f, arguments);
        let (header, body) = default.split_once("\n\n").unwrap();
        assert!(header.ends_with("bytes 0..65536 of 300000 — TRUNCATED, call again with offset to continue"));
        assert_eq!(body.len(), 65_536);
    }
    let tail = read(&f, r#"{"id":"big","offset":262144,"limit":262144}"#);
    assert!(tail.split_once("\n\n").unwrap().0.ends_with("bytes 262144..300000 of 300000"), "{}", &tail[..200]);
}

#[test]
fn invalid_utf8_is_replaced() {
    let f = fixture(&[("bytes.txt", b"a\xffb")]);
    assert!(read(&f, r#"{"id":"bytes"}"#).ends_with("\n\na\u{fffd}b"));
}

#[test]
fn unknown_ids_list_what_is_registered() {
    let files: Vec<(String, Vec<u8>)> = (0..18).map(|i| (format!("f{i:02}.txt"), vec![b'x'; 100 - i])).collect();
    let borrowed: Vec<(&str, &[u8])> =
        files.iter().map(|(name, content)| (name.as_str(), content.as_slice())).collect();
    let f = fixture(&borrowed);
    assert_eq!(
        read(&f, r#"{"id":"nope"}"#),
        "{\"error\":\"unknown artifact id \"nope\" — registered artifacts: f00, f01, f02, f03, f04, f05, f06, f07, f08, f09, f10, f11, f12, f13, f14, f15 (+2 more)\"}"
    );
    let empty = ArtifactRegistry::new();
    assert_eq!(
        read_artifact(&empty, r#"{"id":"x"}"#).output,
        "{\"error\":\"unknown artifact id \"x\" — registered artifacts: no artifacts registered this session\"}"
    );
}

#[test]
fn argument_errors() {
    let f = fixture(&[("report.md", REPORT)]);
    assert_eq!(read(&f, "{}"), "{\"error\":\"id is required\"}");
    assert_eq!(read(&f, r#"{"offset":1}"#), "{\"error\":\"id is required\"}");
    assert_eq!(read(&f, "not json"), "{\"error\":\"parse failed: expected ident at line 1 column 2\"}");
    assert_eq!(
        read(&f, r#"{"id":"report","offset":1.5}"#),
        "{\"error\":\"parse failed: invalid type: floating point `1.5`, expected i64 at line 1 column 27\"}"
    );
}

#[test]
fn removed_artifact_is_reported_as_gone() {
    let f = fixture(&[("report.md", REPORT)]);
    std::fs::remove_file(f.root.join("report.md")).unwrap();
    assert_eq!(
        read(&f, r#"{"id":"report"}"#),
        "{\"error\":\"artifact \"report\" is no longer available (removed by cleanup)\"}"
    );
}

#[test]
fn artifact_swapped_for_a_symlink_after_registration_red() {
    let f = fixture(&[("report.md", REPORT)]);
    std::fs::write(f.outside.join("secret.md"), "FOREIGN-SECRET-BYTES").unwrap();
    std::fs::remove_file(f.root.join("report.md")).unwrap();
    symlink(f.outside.join("secret.md"), f.root.join("report.md")).unwrap();
    let output = read(&f, r#"{"id":"report"}"#);
    assert_eq!(
        output,
        "{\"error\":\"artifact \"report\" failed read-time verification: artifact path is a symlink; file was likely swapped after registration\"}"
    );
    assert!(!output.contains("FOREIGN"));
}

#[test]
fn artifact_folder_swapped_for_a_symlink_after_registration_red() {
    let f = fixture(&[("report.md", REPORT)]);
    // Same name, same size, same content: only the path changed. The read still refuses,
    // because a link now sits on the recorded path.
    let foreign = f.outside.join("task-1");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("report.md"), REPORT).unwrap();
    std::fs::rename(&f.root, f.outside.join("moved-away")).unwrap();
    symlink(&foreign, &f.root).unwrap();
    let output = read(&f, r#"{"id":"report"}"#);
    assert!(output.starts_with("{\"error\":\"artifact \"report\" failed read-time verification: open: "), "{output}");
    assert!(!output.contains("line two"));
}

#[test]
fn artifact_rewritten_with_the_same_size_after_registration_red() {
    let f = fixture(&[("report.md", REPORT)]);
    let tampered = b"# Report\nLINE TWO\n";
    std::fs::write(f.root.join("report.md"), tampered).unwrap();
    let output = read(&f, r#"{"id":"report","limit":4}"#);
    assert_eq!(
        output,
        format!(
            "{{\"error\":\"artifact \"report\" failed read-time verification: sha256 mismatch: ref declares {}…, file hashes to {}…\"}}",
            short_sha(REPORT),
            short_sha(tampered)
        )
    );
}

#[test]
fn artifact_rewritten_with_another_size_after_registration_red() {
    let f = fixture(&[("report.md", REPORT)]);
    std::fs::write(f.root.join("report.md"), "short").unwrap();
    assert_eq!(
        read(&f, r#"{"id":"report"}"#),
        "{\"error\":\"artifact \"report\" failed read-time verification: file size changed since registration: ref declares 18 bytes, file has 5\"}"
    );
}

#[test]
fn artifact_swapped_for_a_fifo_after_registration_red() {
    let f = fixture(&[("report.md", REPORT)]);
    std::fs::remove_file(f.root.join("report.md")).unwrap();
    nix::unistd::mkfifo(&f.root.join("report.md"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    assert_eq!(
        read(&f, r#"{"id":"report"}"#),
        "{\"error\":\"artifact \"report\" failed read-time verification: not a regular file\"}"
    );
}

#[test]
fn artifact_without_a_digest_cannot_be_read_red() {
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().canonicalize().unwrap();
    std::fs::write(root.join("plain.txt"), "text").unwrap();
    let raw = RawArtifactRef {
        schema: "odek.artifact-ref/v1".into(),
        id: "plain".into(),
        uri: format!("file://{}/plain.txt", root.display()),
        media_type: "text/plain".into(),
        ..RawArtifactRef::default()
    };
    let validated = validate_task_artifacts(&[raw], Some(&root));
    let registry = Arc::new(ArtifactRegistry::new());
    registry.begin_call().register_task(1, validated.valid);
    assert_eq!(
        read_artifact(&registry, r#"{"id":"plain"}"#).output,
        "{\"error\":\"artifact \"plain\" failed read-time verification: ref carries no sha256; contents cannot be verified at read time\"}"
    );
}

#[tokio::test]
async fn the_tool_definition_and_call() {
    let f = fixture(&[("report.md", REPORT)]);
    let tool = ArtifactReadTool::new(Arc::clone(&f.registry));
    let definition = tool.definition();
    assert_eq!(definition.name, "artifact_read");
    assert_eq!(
        definition.parameters,
        serde_json::json!({"type":"object","required":["id"],"properties":{"id":{"type":"string"},"offset":{"type":"integer"},"limit":{"type":"integer"}}})
    );
    let ctx = ToolContext::new(f.root.clone(), f.root.join("home/.odek"), DangerPolicy::default());
    let outcome = tool.call(r#"{"id":"report","limit":8}"#, &ctx).await.unwrap();
    assert_eq!(outcome.untrusted_source.as_deref(), Some("artifact_read"));
    assert!(outcome.output.ends_with("\n\n# Report"), "{}", outcome.output);
    let error = tool.call(r#"{"id":"missing"}"#, &ctx).await.unwrap();
    assert_eq!(error.untrusted_source, None);
    assert!(error.output.starts_with("{\"error\":\"unknown artifact id \"missing\""));
}
