//! Sub-agent result artifacts (spec `subagents.md` §9–10, §12 artifact lines): the child's
//! staging folder, relocation and scan on real directories, the parent's validation against the
//! task's root only, the registry's first-wins ids and aliases, inline previews re-verified right
//! before inlining, and session deletion removing the session's artifacts without following links.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use odek_agent::session::{Session, SessionStore};
use odek_agent::subagent::artifacts::{
    ArtifactRegistry, InlinePreview, STAGING_GITIGNORE, ScanLimits, TaskArtifactInput, TaskArtifactSection, TaskId,
    create_artifact_root, inline_previews, prepare_staging, register_call_artifacts, relocate_staged,
    render_artifact_block, scan_artifact_root, scan_artifact_root_with, validate_task_artifacts,
};
use odek_contract::envelope::RawArtifactRef;
use sha2::{Digest, Sha256};

/// A workspace (the child's cwd), an artifacts home, and a place outside both.
struct Setup {
    _temp: tempfile::TempDir,
    cwd: PathBuf,
    artifacts_dir: PathBuf,
    outside: PathBuf,
}

fn setup() -> Setup {
    let temp = tempfile::tempdir().unwrap();
    let base = temp.path().canonicalize().unwrap();
    let cwd = base.join("workspace");
    let artifacts_dir = base.join("home/.odek/artifacts");
    let outside = base.join("outside");
    for dir in [&cwd, &artifacts_dir, &outside] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(outside.join("secret.txt"), "FOREIGN-SECRET\n").unwrap();
    Setup { _temp: temp, cwd, artifacts_dir, outside }
}

fn task(id: &str) -> TaskId {
    TaskId::parse(id).unwrap()
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn set_mtime(path: &Path, age: Duration) {
    let file = std::fs::File::open(path).unwrap();
    file.set_modified(SystemTime::now() - age).unwrap();
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn staging_folder_is_private_and_ignored_by_git() {
    let s = setup();
    let staged = prepare_staging(&s.cwd, &task("task-0000000000000001")).unwrap();
    assert_eq!(staged, s.cwd.join(".odek-artifacts/task-0000000000000001"));
    let root = s.cwd.join(".odek-artifacts");
    assert_eq!(std::fs::read_to_string(root.join(".gitignore")).unwrap(), "*\n!.gitignore\n");
    assert_eq!(STAGING_GITIGNORE, "*\n!.gitignore\n");
    assert_eq!(mode(&root), 0o700);
    assert_eq!(mode(&staged), 0o700);
    assert!(staged.is_dir());
}

#[test]
fn stale_sibling_staging_folders_are_removed_but_never_this_task() {
    let s = setup();
    let root = s.cwd.join(".odek-artifacts");
    for name in ["task-old", "task-fresh", "task-0000000000000001"] {
        std::fs::create_dir_all(root.join(name)).unwrap();
        std::fs::write(root.join(name).join("f.txt"), "x").unwrap();
    }
    std::fs::write(root.join("stray-file"), "x").unwrap();
    set_mtime(&root.join("task-old"), Duration::from_secs(25 * 3600));
    set_mtime(&root.join("task-0000000000000001"), Duration::from_secs(25 * 3600));
    set_mtime(&root.join("task-fresh"), Duration::from_secs(23 * 3600));
    prepare_staging(&s.cwd, &task("task-0000000000000001")).unwrap();
    assert_eq!(names_in(&root), vec![".gitignore", "stray-file", "task-0000000000000001", "task-fresh"]);
    assert!(root.join("task-0000000000000001/f.txt").exists());
}

#[test]
fn stale_cleanup_never_follows_a_link_red() {
    let s = setup();
    let root = s.cwd.join(".odek-artifacts");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir(s.outside.join("old-dir")).unwrap();
    std::fs::write(s.outside.join("old-dir/keep.txt"), "x").unwrap();
    set_mtime(&s.outside.join("old-dir"), Duration::from_secs(48 * 3600));
    symlink(s.outside.join("old-dir"), root.join("task-link")).unwrap();
    prepare_staging(&s.cwd, &task("task-0000000000000001")).unwrap();
    assert!(s.outside.join("old-dir/keep.txt").exists());
}

#[test]
fn staging_root_that_is_a_symlink_is_refused_red() {
    let s = setup();
    symlink(&s.outside, s.cwd.join(".odek-artifacts")).unwrap();
    let err = prepare_staging(&s.cwd, &task("task-0000000000000001")).unwrap_err();
    assert!(
        err.to_string().starts_with(&format!("prepare artifact staging {}/.odek-artifacts: ", s.cwd.display())),
        "{err}"
    );
    assert_eq!(names_in(&s.outside), vec!["secret.txt"]);
}

#[test]
fn relocation_moves_flat_files_discards_folders_and_moves_links_unfollowed() {
    let s = setup();
    let id = task("task-00000000000000aa");
    let root = create_artifact_root(&s.artifacts_dir, Some("20260101-abc"), &id).unwrap();
    assert_eq!(root, s.artifacts_dir.join("20260101-abc/task-00000000000000aa"));
    assert_eq!(mode(&root), 0o700);
    let staged = prepare_staging(&s.cwd, &id).unwrap();
    std::fs::write(staged.join("report.md"), "# Findings\n\nAll good.\n").unwrap();
    std::fs::write(staged.join("data.json"), "{\"a\":1}").unwrap();
    std::fs::create_dir_all(staged.join("nested/deeper")).unwrap();
    std::fs::write(staged.join("nested/inner.txt"), "nested").unwrap();
    symlink(s.outside.join("secret.txt"), staged.join("leak.txt")).unwrap();

    let flags = relocate_staged(&s.cwd, &id, &root);
    assert_eq!(flags, Vec::<String>::new());
    assert_eq!(names_in(&root), vec!["data.json", "leak.txt", "report.md"]);
    assert!(std::fs::symlink_metadata(root.join("leak.txt")).unwrap().file_type().is_symlink());
    assert!(!s.cwd.join(".odek-artifacts/task-00000000000000aa").exists());
    assert_eq!(names_in(&s.cwd.join(".odek-artifacts")), vec![".gitignore"]);
    assert_eq!(std::fs::read_to_string(s.outside.join("secret.txt")).unwrap(), "FOREIGN-SECRET\n");

    std::fs::create_dir(root.join("subdir")).unwrap();
    let report = scan_artifact_root(&root);
    assert_eq!(
        report.flags,
        vec![
            "[artifact] skipped \"leak.txt\": not a regular file".to_owned(),
            "[artifact] skipped \"subdir\": directories are not collected".to_owned(),
        ]
    );
    let ids: Vec<&str> = report.artifacts.iter().map(|artifact| artifact.id.as_str()).collect();
    assert_eq!(ids, vec!["report", "data"]);
    assert!(report.artifacts.iter().all(|artifact| !artifact.summary.contains("FOREIGN")));
}

#[test]
fn staged_folder_swapped_for_a_symlink_is_not_followed_red() {
    let s = setup();
    let id = task("task-00000000000000bb");
    let root = create_artifact_root(&s.artifacts_dir, None, &id).unwrap();
    assert_eq!(root, s.artifacts_dir.join("unfiled/task-00000000000000bb"));
    prepare_staging(&s.cwd, &id).unwrap();
    let staged = s.cwd.join(".odek-artifacts/task-00000000000000bb");
    std::fs::remove_dir(&staged).unwrap();
    symlink(&s.outside, &staged).unwrap();

    let flags = relocate_staged(&s.cwd, &id, &root);
    assert_eq!(flags.len(), 1, "{flags:?}");
    assert!(
        flags[0].starts_with("[artifact] staging lookup failed: open .odek-artifacts/task-00000000000000bb: "),
        "{}",
        flags[0]
    );
    assert_eq!(names_in(&root), Vec::<String>::new());
    assert_eq!(names_in(&s.outside), vec!["secret.txt"]);
    assert!(!staged.exists() && std::fs::symlink_metadata(&staged).is_err(), "the planted link itself is removed");
}

#[test]
fn relocation_without_anything_staged_recreates_the_staging_root() {
    let s = setup();
    let id = task("task-00000000000000cc");
    let root = create_artifact_root(&s.artifacts_dir, Some("s1"), &id).unwrap();
    assert_eq!(relocate_staged(&s.cwd, &id, &root), Vec::<String>::new());
    assert_eq!(std::fs::read_to_string(s.cwd.join(".odek-artifacts/.gitignore")).unwrap(), "*\n!.gitignore\n");
}

#[test]
fn scan_measures_every_field_itself() {
    let s = setup();
    let root = create_artifact_root(&s.artifacts_dir, Some("s1"), &task("task-1")).unwrap();
    let report_md = "  # Weekly report  \nbody\n";
    std::fs::write(root.join("report.md"), report_md).unwrap();
    std::fs::write(root.join("notes.txt"), "n").unwrap();
    std::fs::write(root.join("notes.md"), "nn").unwrap();
    std::fs::write(root.join("blob.bin"), [0_u8, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]).unwrap();
    std::fs::write(root.join("with space.csv"), "a,b\n1,2\n3,4\n5,6\n7,8\n").unwrap();
    let report = scan_artifact_root(&root);
    assert_eq!(report.flags, Vec::<String>::new());
    let root_uri = format!("file://{}", root.display());
    let expected = vec![
        RawArtifactRef {
            schema: "odek.artifact-ref/v1".into(),
            id: "report".into(),
            uri: format!("{root_uri}/report.md"),
            media_type: "text/markdown".into(),
            sha256: sha256_hex(report_md.as_bytes()),
            size_bytes: Some(report_md.len() as i64),
            summary: "# Weekly report".into(),
        },
        RawArtifactRef {
            schema: "odek.artifact-ref/v1".into(),
            id: "artifact-2".into(),
            uri: format!("{root_uri}/with%20space.csv"),
            media_type: "text/csv".into(),
            sha256: sha256_hex(b"a,b\n1,2\n3,4\n5,6\n7,8\n"),
            size_bytes: Some(20),
            summary: "a,b".into(),
        },
        RawArtifactRef {
            schema: "odek.artifact-ref/v1".into(),
            id: "blob".into(),
            uri: format!("{root_uri}/blob.bin"),
            media_type: "application/octet-stream".into(),
            sha256: sha256_hex(&[0_u8, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]),
            size_bytes: Some(15),
            summary: String::new(),
        },
        RawArtifactRef {
            schema: "odek.artifact-ref/v1".into(),
            id: "notes".into(),
            uri: format!("{root_uri}/notes.md"),
            media_type: "text/markdown".into(),
            sha256: sha256_hex(b"nn"),
            size_bytes: Some(2),
            summary: "nn".into(),
        },
        RawArtifactRef {
            schema: "odek.artifact-ref/v1".into(),
            id: "artifact-5".into(),
            uri: format!("{root_uri}/notes.txt"),
            media_type: "text/plain".into(),
            sha256: sha256_hex(b"n"),
            size_bytes: Some(1),
            summary: "n".into(),
        },
    ];
    assert_eq!(report.artifacts, expected);
    let json = serde_json::to_value(&report.artifacts[2]).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"schema":"odek.artifact-ref/v1","id":"blob","uri":format!("{root_uri}/blob.bin"),
            "media_type":"application/octet-stream","sha256":sha256_hex(&[0_u8,1,2,3,4,5,6,7,8,9,10,11,12,13,14]),"size_bytes":15})
    );
    // What the child hands back passes the parent's validation unchanged.
    let validated = validate_task_artifacts(&report.artifacts, Some(&root));
    assert_eq!(validated.dropped, Vec::<String>::new());
    assert_eq!(validated.valid.len(), 5);
}

#[test]
fn scan_per_artifact_cap_drops_before_hashing() {
    let s = setup();
    let root = create_artifact_root(&s.artifacts_dir, Some("s1"), &task("task-1")).unwrap();
    std::fs::File::create(root.join("huge.log")).unwrap().set_len(67_108_865).unwrap();
    std::fs::write(root.join("small.txt"), "ok").unwrap();
    let report = scan_artifact_root(&root);
    assert_eq!(report.flags, vec!["[artifact] dropped \"huge.log\": 67108865 bytes exceeds the per-artifact cap"]);
    assert_eq!(report.artifacts.len(), 1);
}

#[test]
fn scan_ref_cap_keeps_64() {
    let s = setup();
    let root = create_artifact_root(&s.artifacts_dir, Some("s1"), &task("task-1")).unwrap();
    for i in 0..65 {
        std::fs::write(root.join(format!("f{i:02}.txt")), "x").unwrap();
    }
    let report = scan_artifact_root(&root);
    assert_eq!(report.artifacts.len(), 64);
    assert_eq!(report.flags, vec!["[artifact] dropped \"f64.txt\": ref cap (64) reached"]);
}

#[test]
fn scan_task_budget_is_spent_largest_first() {
    let s = setup();
    let root = create_artifact_root(&s.artifacts_dir, Some("s1"), &task("task-1")).unwrap();
    std::fs::write(root.join("a.txt"), vec![b'a'; 60]).unwrap();
    std::fs::write(root.join("b.txt"), vec![b'b'; 50]).unwrap();
    std::fs::write(root.join("c.txt"), vec![b'c'; 30]).unwrap();
    let limits = ScanLimits { task_budget_bytes: 100, ..ScanLimits::default() };
    let report = scan_artifact_root_with(&root, limits);
    assert_eq!(report.flags, vec!["[artifact] dropped \"b.txt\": task budget (100 bytes) exhausted"]);
    let ids: Vec<&str> = report.artifacts.iter().map(|artifact| artifact.id.as_str()).collect();
    assert_eq!(ids, vec!["a", "c"]);
    assert!(report.artifacts.iter().map(|a| a.size_bytes.unwrap()).sum::<i64>() <= 100);
}

/// A task root with one file, scanned into refs the way the child hands them back.
fn task_with_file(s: &Setup, task_id: &str, name: &str, content: &[u8]) -> (PathBuf, Vec<RawArtifactRef>) {
    let root = create_artifact_root(&s.artifacts_dir, Some("s1"), &task(task_id)).unwrap();
    std::fs::write(root.join(name), content).unwrap();
    let report = scan_artifact_root(&root);
    (root, report.artifacts)
}

fn raw_ref(id: &str, path: &Path) -> RawArtifactRef {
    RawArtifactRef {
        schema: "odek.artifact-ref/v1".into(),
        id: id.into(),
        uri: format!("file://{}", path.display()),
        media_type: "text/plain".into(),
        ..RawArtifactRef::default()
    }
}

#[test]
fn parent_accepts_only_files_under_that_tasks_root_red() {
    let s = setup();
    let (root_1, mut refs) = task_with_file(&s, "task-1", "ok.txt", b"fine");
    let (root_2, _) = task_with_file(&s, "task-2", "other.txt", b"sibling task");
    symlink(s.outside.join("secret.txt"), root_1.join("escape.txt")).unwrap();
    refs.push(raw_ref("outside", &s.outside.join("secret.txt")));
    refs.push(raw_ref("sibling", &root_2.join("other.txt")));
    refs.push(raw_ref("escape", &root_1.join("escape.txt")));
    refs.push(raw_ref("dotdot", &root_1.join("../task-2/other.txt")));
    let mut forged = refs[0].clone();
    forged.id = "forged".into();
    forged.sha256 = sha256_hex(b"something else");
    refs.push(forged);

    let outcome = validate_task_artifacts(&refs, Some(&root_1));
    assert_eq!(outcome.valid.len(), 1);
    assert_eq!(outcome.valid[0].id, "ok");
    assert_eq!(outcome.valid[0].resolved_path, root_1.join("ok.txt"));
    let dotdot = format!("{}/../task-2/other.txt", root_1.display());
    assert_eq!(
        outcome.dropped,
        vec![
            "  [artifact] dropped \"outside\": artifact \"outside\" resolves outside every configured artifact root"
                .to_owned(),
            "  [artifact] dropped \"sibling\": artifact \"sibling\" resolves outside every configured artifact root"
                .to_owned(),
            "  [artifact] dropped \"escape\": artifact \"escape\" resolves outside every configured artifact root"
                .to_owned(),
            format!(
                "  [artifact] dropped \"dotdot\": artifact \"dotdot\" path \"{dotdot}\" is not clean (contains .., //, or . elements)"
            ),
            format!(
                "  [artifact] dropped \"forged\": artifact \"forged\" sha256 mismatch: ref declares {}…, file hashes to {}…",
                &sha256_hex(b"something else")[..12],
                &sha256_hex(b"fine")[..12]
            ),
        ]
    );
}

#[test]
fn parent_without_a_root_rejects_every_ref_red() {
    let s = setup();
    let (_, refs) = task_with_file(&s, "task-1", "ok.txt", b"fine");
    let outcome = validate_task_artifacts(&refs, None);
    assert!(outcome.valid.is_empty());
    assert_eq!(
        outcome.dropped,
        vec!["  [artifact] dropped \"ok\": artifact \"ok\" rejected: no artifact roots configured for this server"]
    );
}

#[test]
fn parent_enforces_the_ref_cap_on_a_forged_result_red() {
    let s = setup();
    let (_, refs) = task_with_file(&s, "task-1", "ok.txt", b"fine");
    let root = s.artifacts_dir.join("s1/task-1");
    let many: Vec<RawArtifactRef> = (0..66)
        .map(|i| {
            let mut copy = refs[0].clone();
            copy.id = format!("r{i}");
            copy
        })
        .collect();
    let outcome = validate_task_artifacts(&many, Some(&root));
    assert_eq!(outcome.valid.len(), 64);
    assert_eq!(
        outcome.dropped,
        vec![
            "  [artifact] dropped \"r64\": ref cap (64) reached".to_owned(),
            "  [artifact] dropped \"r65\": ref cap (64) reached".to_owned(),
        ]
    );
}

#[test]
fn registry_keeps_the_first_id_and_aliases_later_copies() {
    let s = setup();
    let (root_1, refs_1) = task_with_file(&s, "task-1", "report.md", b"# first\n");
    let (root_2, refs_2) = task_with_file(&s, "task-2", "report.md", b"# second\n");
    let (root_3, refs_3) = task_with_file(&s, "task-3", "report.txt", b"third\n");
    let registry = Arc::new(ArtifactRegistry::new());
    let call = registry.begin_call();
    let first = call.register_task(1, validate_task_artifacts(&refs_1, Some(&root_1)).valid);
    let second = call.register_task(2, validate_task_artifacts(&refs_2, Some(&root_2)).valid);
    let third = call.register_task(3, validate_task_artifacts(&refs_3, Some(&root_3)).valid);
    assert!(first.notes.is_empty());
    assert_eq!(second.notes, vec!["  [artifact] duplicate id \"report\" — task 2 copy registered as \"report.t2\""]);
    assert_eq!(third.notes, vec!["  [artifact] duplicate id \"report\" — task 3 copy registered as \"report.t3\""]);
    assert_eq!(registry.ids(), vec!["report", "report.t2", "report.t3"]);
    assert_eq!(registry.get("report").unwrap().path(), root_1.join("report.md"));
    assert_eq!(registry.get("report").unwrap().task_number, 1);
    assert_eq!(registry.get("report.t2").unwrap().path(), root_2.join("report.md"));
    assert_eq!(registry.get("report.t2").unwrap().original_id, "report");

    // A later call's copy of an id still live also gets an alias; the first entry stays.
    drop(call);
    let (root_4, refs_4) = task_with_file(&s, "task-4", "report.md", b"# fourth\n");
    let later = registry.begin_call();
    let fourth = later.register_task(2, validate_task_artifacts(&refs_4, Some(&root_4)).valid);
    assert_eq!(fourth.notes, vec!["  [artifact] duplicate id \"report\" — task 2 copy registered as \"report.t2-2\""]);
    assert_eq!(registry.get("report").unwrap().path(), root_1.join("report.md"));
}

/// Registers `files` (name, content) as task 1 of a fresh call.
fn register_files(
    s: &Setup,
    files: &[(&str, Vec<u8>)],
) -> (PathBuf, Arc<ArtifactRegistry>, Vec<Arc<odek_agent::subagent::artifacts::RegisteredArtifact>>) {
    let root = create_artifact_root(&s.artifacts_dir, Some("s1"), &task("task-1")).unwrap();
    for (name, content) in files {
        std::fs::write(root.join(name), content).unwrap();
    }
    let scanned = scan_artifact_root(&root);
    assert_eq!(scanned.flags, Vec::<String>::new());
    let validated = validate_task_artifacts(&scanned.artifacts, Some(&root));
    assert_eq!(validated.dropped, Vec::<String>::new());
    let registry = Arc::new(ArtifactRegistry::new());
    let registered = registry.begin_call().register_task(1, validated.valid).artifacts;
    (root, registry, registered)
}

#[test]
fn inline_previews_reverify_right_before_inlining_red() {
    let s = setup();
    let (root, _registry, registered) = register_files(
        &s,
        &[
            ("good.md", b"# Good\nline two\n".to_vec()),
            ("rewritten.txt", b"original text".to_vec()),
            ("swapped.txt", b"will be a link".to_vec()),
            ("gone.txt", b"deleted soon".to_vec()),
        ],
    );
    std::fs::write(root.join("rewritten.txt"), b"tampered text").unwrap();
    std::fs::remove_file(root.join("swapped.txt")).unwrap();
    symlink(s.outside.join("secret.txt"), root.join("swapped.txt")).unwrap();
    std::fs::remove_file(root.join("gone.txt")).unwrap();

    let previews = inline_previews(&registered);
    assert_eq!(previews.get("good"), Some(&InlinePreview::Content("# Good\nline two\n".to_owned())));
    assert_eq!(
        previews.get("rewritten"),
        Some(&InlinePreview::Skipped(format!(
            "sha256 mismatch: ref declares {}…, file hashes to {}…",
            &sha256_hex(b"original text")[..12],
            &sha256_hex(b"tampered text")[..12]
        )))
    );
    assert_eq!(
        previews.get("swapped"),
        Some(&InlinePreview::Skipped(
            "artifact path is a symlink; file was likely swapped after registration".to_owned()
        ))
    );
    assert_eq!(
        previews.get("gone"),
        Some(&InlinePreview::Skipped("file is no longer available (removed by cleanup)".to_owned()))
    );
    assert!(previews.values().all(|preview| !format!("{preview:?}").contains("FOREIGN")));

    let good = registered.iter().find(|artifact| artifact.id == "good").unwrap();
    assert_eq!(
        render_artifact_block(good, previews.get("good")),
        format!(
            "  - good (text/markdown, 16 bytes, sha256:{}, task 1) — # Good\n  --- artifact: good ---\n# Good\nline two\n  --- end artifact ---",
            &sha256_hex(b"# Good\nline two\n")[..12]
        )
    );
    let swapped = registered.iter().find(|artifact| artifact.id == "swapped").unwrap();
    assert_eq!(
        render_artifact_block(swapped, previews.get("swapped")),
        format!(
            "  - swapped (text/plain, 14 bytes, sha256:{}, task 1) — will be a link\n  [artifact] inline preview skipped \"swapped\": artifact path is a symlink; file was likely swapped after registration",
            &sha256_hex(b"will be a link")[..12]
        )
    );
}

#[test]
fn inline_previews_stay_within_the_size_and_call_budgets() {
    let s = setup();
    let (_root, _registry, registered) = register_files(
        &s,
        &[
            ("a.txt", vec![b'a'; 32_768]),
            ("b.txt", vec![b'b'; 32_768]),
            ("c.txt", vec![b'c'; 32_768]),
            ("d.txt", vec![b'd'; 32_000]),
            ("e.txt", vec![b'e'; 1_000]),
            ("f.txt", vec![b'f'; 700]),
            ("big.txt", vec![b'g'; 32_769]),
            ("data.json", b"{}".to_vec()),
            ("blob.bin", b"bin".to_vec()),
        ],
    );
    let previews = inline_previews(&registered);
    let inlined: Vec<&str> = previews.keys().map(String::as_str).collect();
    // Largest first: 3 × 32768 + 32000 = 130304; e (1000) no longer fits, the smaller f (700)
    // does (131004); big.txt is over 32768, json and binary are not text/*.
    assert_eq!(inlined, vec!["a", "b", "c", "d", "f"]);
    let spent: usize = previews
        .values()
        .map(|preview| match preview {
            InlinePreview::Content(content) => content.len(),
            InlinePreview::Skipped(_) => 0,
        })
        .sum();
    assert!(spent <= 131_072);
}

#[test]
fn deleting_a_session_removes_its_artifacts() {
    let s = setup();
    let store = SessionStore::new(s.artifacts_dir.parent().unwrap().join("sessions"))
        .unwrap()
        .with_artifacts_dir(s.artifacts_dir.clone());
    let mut session = Session::new(odek_agent::session::SessionId::mint().unwrap());
    store.save(&mut session).unwrap();
    let id = session.id.as_str().to_owned();
    let root = create_artifact_root(&s.artifacts_dir, Some(&id), &task("task-1")).unwrap();
    std::fs::write(root.join("r.txt"), "x").unwrap();
    let unfiled = create_artifact_root(&s.artifacts_dir, None, &task("task-2")).unwrap();
    store.delete(&session.id).unwrap();
    assert!(!s.artifacts_dir.join(&id).exists());
    assert!(unfiled.exists());
}

#[test]
fn deleting_a_session_never_follows_its_artifacts_link_red() {
    let s = setup();
    let store = SessionStore::new(s.artifacts_dir.parent().unwrap().join("sessions"))
        .unwrap()
        .with_artifacts_dir(s.artifacts_dir.clone());
    let mut session = Session::new(odek_agent::session::SessionId::mint().unwrap());
    store.save(&mut session).unwrap();
    let planted = s.artifacts_dir.join(session.id.as_str());
    symlink(&s.outside, &planted).unwrap();
    store.delete(&session.id).unwrap();
    assert!(std::fs::symlink_metadata(&planted).is_err());
    assert_eq!(names_in(&s.outside), vec!["secret.txt"]);
}

#[test]
fn deleting_a_session_inside_a_symlinked_tree_leaves_the_link_target_red() {
    let s = setup();
    let store = SessionStore::new(s.artifacts_dir.parent().unwrap().join("sessions"))
        .unwrap()
        .with_artifacts_dir(s.artifacts_dir.clone());
    let mut session = Session::new(odek_agent::session::SessionId::mint().unwrap());
    store.save(&mut session).unwrap();
    let root = create_artifact_root(&s.artifacts_dir, Some(session.id.as_str()), &task("task-1")).unwrap();
    symlink(&s.outside, root.join("link")).unwrap();
    store.delete(&session.id).unwrap();
    assert!(!s.artifacts_dir.join(session.id.as_str()).exists());
    assert_eq!(names_in(&s.outside), vec!["secret.txt"]);
}

#[test]
fn one_call_renders_each_tasks_artifacts_section() {
    let s = setup();
    let (root_1, refs_1) = task_with_file(&s, "task-1", "report.md", b"# First report\n");
    let (root_2, mut refs_2) = task_with_file(&s, "task-2", "report.md", b"# Second report\n");
    refs_2.push(raw_ref("stolen", &s.outside.join("secret.txt")));
    let registry = Arc::new(ArtifactRegistry::new());
    let sections = register_call_artifacts(
        &registry,
        &[
            TaskArtifactInput { task_number: 1, refs: &refs_1, artifact_root: Some(&root_1) },
            TaskArtifactInput { task_number: 2, refs: &refs_2, artifact_root: Some(&root_2) },
            TaskArtifactInput { task_number: 3, refs: &[], artifact_root: None },
        ],
    );
    assert_eq!(sections.len(), 3);
    assert_eq!(
        sections[0].rendered,
        format!(
            "artifacts:\n  - report (text/markdown, 15 bytes, sha256:{}, task 1) — # First report\n  --- artifact: report ---\n# First report\n  --- end artifact ---",
            &sha256_hex(b"# First report\n")[..12]
        )
    );
    assert_eq!(
        sections[1].rendered,
        format!(
            "artifacts:\n  - report.t2 (text/markdown, 16 bytes, sha256:{}, task 2) — # Second report\n  --- artifact: report.t2 ---\n# Second report\n  --- end artifact ---\n  [artifact] duplicate id \"report\" — task 2 copy registered as \"report.t2\"\n  [artifact] dropped \"stolen\": artifact \"stolen\" resolves outside every configured artifact root",
            &sha256_hex(b"# Second report\n")[..12]
        )
    );
    assert_eq!(sections[2].rendered, "");
    assert_eq!(sections.iter().map(TaskArtifactSection::artifact_count).collect::<Vec<_>>(), vec![1, 1, 0]);
    assert!(sections.iter().all(|section| !section.rendered.contains(&s.artifacts_dir.display().to_string())));
}

#[test]
fn non_utf8_file_names_get_a_numbered_id_and_an_encoded_uri() {
    use std::os::unix::ffi::OsStrExt;
    let s = setup();
    let root = create_artifact_root(&s.artifacts_dir, Some("s1"), &task("task-1")).unwrap();
    let name = std::ffi::OsStr::from_bytes(b"r\xff\xfe.txt");
    std::fs::write(root.join(name), "bytes\n").unwrap();
    let report = scan_artifact_root(&root);
    assert_eq!(report.flags, Vec::<String>::new());
    assert_eq!(report.artifacts[0].id, "artifact-1");
    assert_eq!(report.artifacts[0].uri, format!("file://{}/r%FF%FE.txt", root.display()));
    let validated = validate_task_artifacts(&report.artifacts, Some(&root));
    assert_eq!(validated.dropped, Vec::<String>::new());
    assert_eq!(validated.valid[0].resolved_path, root.join(name));
}
