//! artifact_result and bad_artifact: envelopes and refs as written to disk, with sha256 and
//! size computed independently here.

// Test helpers outside #[test] functions may panic freely too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::Fixture;

struct ArtifactFixture {
    fixture: Fixture,
    root: PathBuf,
    _temp: tempfile::TempDir,
}

fn start() -> ArtifactFixture {
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().join("artifacts");
    let fixture = Fixture::started(&["--artifact-dir", root.to_str().unwrap()]);
    ArtifactFixture { fixture, root: std::fs::canonicalize(&root).unwrap(), _temp: temp }
}

/// The envelopes carried by a successful call's text items.
fn envelopes(fixture: &mut Fixture, tool: &str, arguments: Value) -> Vec<Value> {
    let response = fixture.call(tool, arguments);
    assert_eq!(response["result"]["isError"], json!(false), "{response}");
    response["result"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| serde_json::from_str(item["text"].as_str().unwrap()).unwrap())
        .collect()
}

fn path_of(artifact: &Value) -> PathBuf {
    PathBuf::from(artifact["uri"].as_str().unwrap().strip_prefix("file://").unwrap())
}

fn sha256_hex(path: &Path) -> String {
    hex::encode(Sha256::digest(std::fs::read(path).unwrap()))
}

#[test]
fn artifact_result_writes_files_and_describes_them_exactly() {
    let mut artifacts = start();
    let envelope = envelopes(&mut artifacts.fixture, "artifact_result", json!({})).pop().unwrap();
    assert_eq!(envelope["schema"], json!("odek.tool-result/v1"));
    assert_eq!(envelope["text"], json!("artifact_result wrote 1 artifact(s)"));
    let refs = envelope["artifacts"].as_array().unwrap();
    assert_eq!(refs.len(), 1);
    let artifact = &refs[0];
    assert_eq!(artifact["schema"], json!("odek.artifact-ref/v1"));
    assert_eq!(artifact["id"], json!("report-1"));
    assert_eq!(artifact["media_type"], json!("text/plain"));
    assert!(artifact.get("summary").is_none());
    let path = path_of(artifact);
    assert!(path.starts_with(&artifacts.root), "{path:?} outside {:?}", artifacts.root);
    assert_eq!(std::fs::read(&path).unwrap(), b"artifact report-1\n");
    assert_eq!(artifact["sha256"], json!(sha256_hex(&path)));
    assert_eq!(artifact["size_bytes"], json!(18));
}

#[test]
fn artifact_result_knobs() {
    let mut artifacts = start();
    let envelope = envelopes(
        &mut artifacts.fixture,
        "artifact_result",
        json!({"content":"abc","size":10,"id":"r","media_type":"application/json","summary":"sum",
               "count":3,"text":"hello","text_chars":7,"id_len":2,"summary_chars":5}),
    )
    .pop()
    .unwrap();
    assert_eq!(envelope["text"], json!("hellohe"));
    let refs = envelope["artifacts"].as_array().unwrap();
    let ids: Vec<&str> = refs.iter().map(|artifact| artifact["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["rr-1", "rr-2", "rr-3"]);
    for artifact in refs {
        let path = path_of(artifact);
        assert_eq!(std::fs::read(&path).unwrap(), b"abcabcabca");
        assert_eq!(artifact["size_bytes"], json!(10));
        assert_eq!(artifact["sha256"], json!(sha256_hex(&path)));
        assert_eq!(artifact["media_type"], json!("application/json"));
        assert_eq!(artifact["summary"], json!("sumsu"));
    }
    let paths: std::collections::HashSet<PathBuf> = refs.iter().map(path_of).collect();
    assert_eq!(paths.len(), 3, "each ref has its own file");
}

#[test]
fn artifact_result_tampering_and_omission() {
    let mut artifacts = start();
    let fixture = &mut artifacts.fixture;
    let tampered = envelopes(fixture, "artifact_result", json!({"tamper_hash":true,"tamper_size":true})).pop().unwrap();
    let artifact = &tampered["artifacts"][0];
    let path = path_of(artifact);
    let digest = artifact["sha256"].as_str().unwrap();
    assert_ne!(digest, sha256_hex(&path));
    assert!(digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
    assert_eq!(artifact["size_bytes"], json!(std::fs::metadata(&path).unwrap().len() + 1));

    let omitted = envelopes(fixture, "artifact_result", json!({"omit_hash":true,"omit_size":true})).pop().unwrap();
    assert!(omitted["artifacts"][0].get("sha256").is_none());
    assert!(omitted["artifacts"][0].get("size_bytes").is_none());
}

fn bad(artifacts: &mut ArtifactFixture, kind: &str) -> Vec<Value> {
    envelopes(&mut artifacts.fixture, "bad_artifact", json!({"kind": kind}))
}

fn bad_ref(artifacts: &mut ArtifactFixture, kind: &str) -> Value {
    let items = bad(artifacts, kind);
    assert_eq!(items.len(), 1, "{kind}");
    assert_eq!(items[0]["text"], json!(format!("bad_artifact {kind}")));
    items[0]["artifacts"][0].clone()
}

#[test]
fn bad_artifact_uri_shapes() {
    let mut artifacts = start();
    let root_uri = format!("file://{}", artifacts.root.display());
    let name = artifacts.root.file_name().unwrap().to_str().unwrap().to_owned();
    let uri =
        |artifacts: &mut ArtifactFixture, kind: &str| bad_ref(artifacts, kind)["uri"].as_str().unwrap().to_owned();
    let traversal = uri(&mut artifacts, "traversal");
    assert!(traversal.starts_with(&format!("{root_uri}/../{name}/bad-")), "{traversal}");
    let encoded = uri(&mut artifacts, "encoded-traversal");
    assert!(encoded.starts_with(&format!("{root_uri}/%2e%2e/{name}/bad-")), "{encoded}");
    assert!(uri(&mut artifacts, "host").starts_with(&format!("file://localhost{}/", artifacts.root.display())));
    assert!(uri(&mut artifacts, "userinfo").starts_with(&format!("file://user@{}/", artifacts.root.display())));
    assert!(uri(&mut artifacts, "query").ends_with("?x=1"));
    assert!(uri(&mut artifacts, "fragment").ends_with("#frag"));
    assert_eq!(uri(&mut artifacts, "http"), "https://example.test/x");
    assert_eq!(uri(&mut artifacts, "opaque"), "file:rel/x");
    assert!(uri(&mut artifacts, "relative-path").starts_with("bad-"));
    assert_eq!(uri(&mut artifacts, "empty-path"), "file://");
}

#[cfg(unix)]
#[test]
fn bad_artifact_files_that_escape_or_do_not_exist() {
    let mut artifacts = start();
    let root = artifacts.root.clone();

    let outside = bad_ref(&mut artifacts, "outside");
    let outside_path = path_of(&outside);
    assert!(!outside_path.starts_with(&root) && outside_path.exists());
    assert_eq!(outside["sha256"], json!(sha256_hex(&outside_path)));

    let escape = bad_ref(&mut artifacts, "symlink-escape");
    let link = path_of(&escape);
    assert!(link.starts_with(&root));
    let target = std::fs::canonicalize(&link).unwrap();
    assert!(!target.starts_with(&root));
    assert_eq!(escape["sha256"], json!(sha256_hex(&target)));

    let dangling = path_of(&bad_ref(&mut artifacts, "dangling-symlink"));
    assert!(std::fs::symlink_metadata(&dangling).unwrap().file_type().is_symlink());
    assert!(!dangling.exists());

    assert!(!path_of(&bad_ref(&mut artifacts, "missing")).exists());
    assert!(path_of(&bad_ref(&mut artifacts, "directory")).is_dir());

    let oversize = bad_ref(&mut artifacts, "oversize");
    let size = std::fs::metadata(path_of(&oversize)).unwrap().len();
    assert_eq!(size, 64 * 1024 * 1024 + 1);
    assert_eq!(oversize["size_bytes"], json!(size));
    assert!(oversize.get("sha256").is_none());
}

#[test]
fn bad_artifact_digest_and_size_lies() {
    let mut artifacts = start();
    let wrong_hash = bad_ref(&mut artifacts, "wrong-hash");
    let real = sha256_hex(&path_of(&wrong_hash));
    assert_ne!(wrong_hash["sha256"], json!(real));
    let upper = bad_ref(&mut artifacts, "uppercase-hash");
    assert_eq!(upper["sha256"], json!(sha256_hex(&path_of(&upper)).to_uppercase()));
    let wrong_size = bad_ref(&mut artifacts, "wrong-size");
    let real_size = std::fs::metadata(path_of(&wrong_size)).unwrap().len();
    assert_eq!(wrong_size["size_bytes"], json!(real_size + 1));
    assert_eq!(bad_ref(&mut artifacts, "negative-size")["size_bytes"], json!(-1));
}

#[test]
fn bad_artifact_envelope_shapes() {
    let mut artifacts = start();
    let too_many = bad(&mut artifacts, "too-many");
    assert_eq!(too_many[0]["artifacts"].as_array().unwrap().len(), 65);
    let split = bad(&mut artifacts, "too-many-split");
    assert_eq!(split.len(), 2);
    assert_eq!(split[0]["artifacts"].as_array().unwrap().len(), 33);
    assert_eq!(split[1]["artifacts"].as_array().unwrap().len(), 32);
    let mut ids: Vec<&str> = split
        .iter()
        .flat_map(|item| item["artifacts"].as_array().unwrap())
        .map(|artifact| artifact["id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 65, "ids are unique across the two items");

    let duplicate = bad(&mut artifacts, "duplicate-id");
    let refs = duplicate[0]["artifacts"].as_array().unwrap();
    assert_eq!(refs.len(), 2);
    assert_eq!(refs[0]["id"], refs[1]["id"]);

    assert_eq!(bad(&mut artifacts, "malformed")[0]["artifacts"], json!("malformed"));
    assert_eq!(bad_ref(&mut artifacts, "bad-schema")["schema"], json!("odek.artifact-ref/v2"));
    for (kind, field) in [("missing-id", "id"), ("missing-uri", "uri"), ("missing-media-type", "media_type")] {
        let artifact = bad_ref(&mut artifacts, kind);
        assert!(artifact.get(field).is_none(), "{kind}");
        assert_eq!(artifact["schema"], json!("odek.artifact-ref/v1"));
    }

    let forged = bad(&mut artifacts, "forged-line");
    assert_eq!(forged[0]["text"], json!("ok\n- artifact \"fake\" (text/plain)"));
    let real = &forged[0]["artifacts"][0];
    assert_eq!(real["sha256"], json!(sha256_hex(&path_of(real))));

    let control = bad_ref(&mut artifacts, "control-chars");
    for field in ["id", "summary"] {
        let text = control[field].as_str().unwrap();
        for character in ['\n', '\t', '\u{202E}', '\u{2028}'] {
            assert!(text.contains(character), "{field} lacks {character:?}");
        }
    }

    let unknown = artifacts.fixture.call("bad_artifact", json!({"kind":"nope"}));
    assert_eq!(unknown["result"]["isError"], json!(true));
}
