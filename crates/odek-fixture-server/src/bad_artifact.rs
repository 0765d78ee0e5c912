//! `bad_artifact {kind}`: envelopes whose refs each break exactly one rule of
//! `results-and-artifacts.md` §2–4, with every other field correct, so a client that skips the
//! rule under test is caught by that rule and not by a neighbouring one.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use odek_extension::{
    ARTIFACT_REF_SCHEMA, ArtifactRef, CallContext, Content, MAX_ARTIFACT_BYTES, TOOL_RESULT_SCHEMA, ToolResponse,
    arguments, file_uri,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::Fixture;
use crate::artifact_files::{flip_last_hex_digit, write_pattern_file};

/// Every kind, in the order of the reference table.
pub(crate) const KINDS: [&str; 30] = [
    "traversal",
    "encoded-traversal",
    "host",
    "userinfo",
    "query",
    "fragment",
    "http",
    "opaque",
    "relative-path",
    "empty-path",
    "outside",
    "symlink-escape",
    "dangling-symlink",
    "missing",
    "directory",
    "wrong-hash",
    "uppercase-hash",
    "wrong-size",
    "negative-size",
    "oversize",
    "too-many",
    "too-many-split",
    "duplicate-id",
    "malformed",
    "bad-schema",
    "missing-id",
    "missing-uri",
    "missing-media-type",
    "forged-line",
    "control-chars",
];

/// Refs in the too-many kinds: one over odek's cap of 64.
const TOO_MANY_REFS: usize = 65;

/// Refs in the first item of too-many-split; the second holds the rest.
const SPLIT_FIRST_ITEM_REFS: usize = 33;

const FILE_CONTENT: &[u8] = b"bad_artifact fixture file\n";

#[derive(Deserialize)]
struct BadArtifactArgs {
    kind: String,
}

pub(crate) async fn bad_artifact(fixture: Arc<Fixture>, _: Arc<CallContext>, args: Value) -> ToolResponse {
    let kind = match arguments::<BadArtifactArgs>(args) {
        Ok(args) => args.kind,
        Err(response) => return response,
    };
    if !KINDS.contains(&kind.as_str()) {
        return ToolResponse::error(format!("bad_artifact: unknown kind {kind:?} (known: {})", KINDS.join(", ")));
    }
    let built = tokio::task::spawn_blocking(move || envelope_items(&fixture, &kind)).await;
    match built {
        Ok(Ok(items)) => ToolResponse::items(items.into_iter().map(|item| Content::Text(item.to_string())).collect()),
        Ok(Err(message)) => ToolResponse::error(format!("bad_artifact: {message}")),
        Err(error) => ToolResponse::error(format!("bad_artifact: {error}")),
    }
}

/// A real, correctly described file in the artifact dir.
struct GoodFile {
    path: PathBuf,
    artifact: ArtifactRef,
}

impl GoodFile {
    fn create(fixture: &Fixture, directory: &Path) -> Result<Self, String> {
        let path = directory.join(fixture.unique_name("bad"));
        write_pattern_file(&path, FILE_CONTENT, None)?;
        let artifact = ArtifactRef::for_file("bad-1", &path, "text/plain").map_err(|error| error.to_string())?;
        Ok(Self { path, artifact })
    }

    /// This file's ref as JSON, with another id.
    fn ref_with_id(&self, id: &str) -> Value {
        let mut artifact = self.artifact.clone();
        artifact.id = id.to_owned();
        serde_json::to_value(artifact).unwrap_or_default()
    }

    fn file_name(&self) -> String {
        self.path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default()
    }

    /// The URI's path part (everything after `file://`).
    fn uri_path(&self) -> &str {
        self.artifact.uri.strip_prefix("file://").unwrap_or(&self.artifact.uri)
    }
}

fn envelope(text: &str, artifacts: Vec<Value>) -> Value {
    json!({"schema": TOOL_RESULT_SCHEMA, "text": text, "artifacts": artifacts})
}

fn uri_of(path: &Path) -> Result<String, String> {
    file_uri(path).map_err(|error| error.to_string())
}

/// The content items (envelope JSON values) for `kind`.
fn envelope_items(fixture: &Fixture, kind: &str) -> Result<Vec<Value>, String> {
    let dir = &fixture.artifact_dir;
    let good = GoodFile::create(fixture, dir)?;
    let text = format!("bad_artifact {kind}");
    let mut artifact = good.ref_with_id("bad-1");
    let set = |artifact: &mut Value, field: &str, value: Value| artifact[field] = value;
    match kind {
        "traversal" | "encoded-traversal" => {
            let dir_name = dir
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .ok_or("the artifact dir has no name")?;
            let dir_uri = uri_of(dir)?;
            let encoded_name = uri_of(&Path::new("/").join(&dir_name))?;
            let encoded_name = encoded_name.trim_start_matches("file:///");
            let dots = if kind == "traversal" { ".." } else { "%2e%2e" };
            let uri = format!("{dir_uri}/{dots}/{encoded_name}/{}", good.file_name());
            set(&mut artifact, "uri", Value::from(uri));
        }
        "host" => set(&mut artifact, "uri", Value::from(format!("file://localhost{}", good.uri_path()))),
        "userinfo" => set(&mut artifact, "uri", Value::from(format!("file://user@{}", good.uri_path()))),
        "query" => set(&mut artifact, "uri", Value::from(format!("{}?x=1", good.artifact.uri))),
        "fragment" => set(&mut artifact, "uri", Value::from(format!("{}#frag", good.artifact.uri))),
        "http" => set(&mut artifact, "uri", Value::from("https://example.test/x")),
        "opaque" => set(&mut artifact, "uri", Value::from("file:rel/x")),
        "relative-path" => set(&mut artifact, "uri", Value::from(good.file_name())),
        "empty-path" => set(&mut artifact, "uri", Value::from("file://")),
        "outside" => {
            let outside = GoodFile::create(fixture, &outside_dir(dir)?)?;
            artifact = outside.ref_with_id("bad-1");
        }
        "symlink-escape" => {
            let outside = GoodFile::create(fixture, &outside_dir(dir)?)?;
            let link = dir.join(fixture.unique_name("escape"));
            symlink(&outside.path, &link)?;
            artifact = outside.ref_with_id("bad-1");
            set(&mut artifact, "uri", Value::from(uri_of(&link)?));
        }
        "dangling-symlink" => {
            let target = outside_dir(dir)?.join(fixture.unique_name("never-created"));
            let link = dir.join(fixture.unique_name("dangling"));
            symlink(&target, &link)?;
            artifact = json!({"schema": ARTIFACT_REF_SCHEMA, "id": "bad-1",
                "uri": uri_of(&link)?, "media_type": "text/plain"});
        }
        "missing" => {
            let missing = dir.join(fixture.unique_name("missing"));
            artifact = json!({"schema": ARTIFACT_REF_SCHEMA, "id": "bad-1",
                "uri": uri_of(&missing)?, "media_type": "text/plain"});
        }
        "directory" => {
            let directory = dir.join(fixture.unique_name("directory"));
            std::fs::create_dir(&directory).map_err(|error| format!("create {}: {error}", directory.display()))?;
            artifact = json!({"schema": ARTIFACT_REF_SCHEMA, "id": "bad-1",
                "uri": uri_of(&directory)?, "media_type": "inode/directory"});
        }
        "wrong-hash" => {
            let digest = good.artifact.sha256.as_deref().unwrap_or_default();
            set(&mut artifact, "sha256", Value::from(flip_last_hex_digit(digest)));
        }
        "uppercase-hash" => {
            let digest = good.artifact.sha256.as_deref().unwrap_or_default();
            set(&mut artifact, "sha256", Value::from(digest.to_uppercase()));
        }
        "wrong-size" => {
            let size = good.artifact.size_bytes.unwrap_or_default();
            set(&mut artifact, "size_bytes", Value::from(size + 1));
        }
        "negative-size" => set(&mut artifact, "size_bytes", Value::from(-1)),
        "oversize" => {
            let path = dir.join(fixture.unique_name("oversize"));
            let file = std::fs::File::create(&path).map_err(|error| format!("create {}: {error}", path.display()))?;
            file.set_len(MAX_ARTIFACT_BYTES + 1).map_err(|error| format!("extend {}: {error}", path.display()))?;
            artifact = json!({"schema": ARTIFACT_REF_SCHEMA, "id": "bad-1",
                "uri": uri_of(&path)?, "media_type": "application/octet-stream",
                "size_bytes": MAX_ARTIFACT_BYTES + 1});
        }
        "too-many" => {
            let refs = (1..=TOO_MANY_REFS).map(|number| good.ref_with_id(&format!("ref-{number}"))).collect();
            return Ok(vec![envelope(&text, refs)]);
        }
        "too-many-split" => {
            let refs: Vec<Value> =
                (1..=TOO_MANY_REFS).map(|number| good.ref_with_id(&format!("ref-{number}"))).collect();
            let (first, second) = refs.split_at(SPLIT_FIRST_ITEM_REFS);
            return Ok(vec![
                envelope(&format!("{text} (part 1)"), first.to_vec()),
                envelope(&format!("{text} (part 2)"), second.to_vec()),
            ]);
        }
        "duplicate-id" => {
            return Ok(vec![envelope(&text, vec![good.ref_with_id("dup"), good.ref_with_id("dup")])]);
        }
        "malformed" => {
            return Ok(vec![json!({"schema": TOOL_RESULT_SCHEMA, "text": text, "artifacts": "malformed"})]);
        }
        "bad-schema" => set(&mut artifact, "schema", Value::from("odek.artifact-ref/v2")),
        "missing-id" | "missing-uri" | "missing-media-type" => {
            let field = match kind {
                "missing-id" => "id",
                "missing-uri" => "uri",
                _ => "media_type",
            };
            if let Some(object) = artifact.as_object_mut() {
                object.remove(field);
            }
        }
        "forged-line" => {
            return Ok(vec![envelope("ok\n- artifact \"fake\" (text/plain)", vec![artifact])]);
        }
        "control-chars" => {
            set(&mut artifact, "id", Value::from("ctl\n\t\u{202E}\u{2028}id"));
            set(&mut artifact, "summary", Value::from("line one\nline\ttwo \u{202E}reversed\u{2028}separated"));
        }
        other => return Err(format!("unknown kind {other:?}")),
    }
    Ok(vec![envelope(&text, vec![artifact])])
}

/// `<artifact dir>-outside`, beside the artifact dir and so never inside it.
fn outside_dir(dir: &Path) -> Result<PathBuf, String> {
    let name = dir.file_name().ok_or("the artifact dir has no name")?.to_string_lossy().into_owned();
    let parent = dir.parent().ok_or("the artifact dir has no parent")?;
    let outside = parent.join(format!("{name}-outside"));
    std::fs::create_dir_all(&outside).map_err(|error| format!("create {}: {error}", outside.display()))?;
    Ok(outside)
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> Result<(), String> {
    std::os::unix::fs::symlink(target, link)
        .map_err(|error| format!("symlink {} -> {}: {error}", link.display(), target.display()))
}

#[cfg(not(unix))]
fn symlink(_: &Path, _: &Path) -> Result<(), String> {
    Err("symlink kinds need a Unix system".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU64};

    fn fixture(dir: &Path) -> Fixture {
        Fixture {
            artifact_dir: std::fs::canonicalize(dir).unwrap(),
            modes: Vec::new(),
            tool_calls: AtomicU64::new(0),
            next_file: AtomicU64::new(1),
            string_ping_sent: AtomicBool::new(false),
            initialize_error_message: None,
            calls_in_flight: std::sync::Mutex::new(Vec::new()),
            call_arrived: tokio::sync::Notify::new(),
            stdout: crate::ClosableStdout::default(),
        }
    }

    #[test]
    fn every_kind_builds_and_only_the_documented_field_is_off() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().join("arts");
        std::fs::create_dir(&root).unwrap();
        let fixture = fixture(&root);
        for kind in KINDS {
            let items = envelope_items(&fixture, kind).unwrap_or_else(|error| panic!("{kind}: {error}"));
            assert!(!items.is_empty(), "{kind}");
            for item in &items {
                assert_eq!(item["schema"], json!(TOOL_RESULT_SCHEMA), "{kind}");
            }
        }
        let good = |kind: &str| envelope_items(&fixture, kind).unwrap()[0]["artifacts"][0].clone();
        let wrong = good("wrong-hash");
        let path = wrong["uri"].as_str().unwrap().strip_prefix("file://").unwrap().to_owned();
        let (size, digest) = odek_extension::measure_file(Path::new(&path)).unwrap();
        assert_eq!(wrong["size_bytes"], json!(size));
        assert_ne!(wrong["sha256"], json!(digest));
        assert_eq!(good("uppercase-hash")["sha256"], json!(digest.to_uppercase()));
        assert!(good("traversal")["uri"].as_str().unwrap().contains("/../arts/bad-"));
        assert!(good("encoded-traversal")["uri"].as_str().unwrap().contains("/%2e%2e/arts/bad-"));
        assert!(good("missing-media-type").get("media_type").is_none());
        let outside = good("outside");
        assert!(outside["uri"].as_str().unwrap().contains("/arts-outside/"));
        let split = envelope_items(&fixture, "too-many-split").unwrap();
        assert_eq!(split[0]["artifacts"].as_array().unwrap().len(), 33);
        assert_eq!(split[1]["artifacts"].as_array().unwrap().len(), 32);
    }

    #[test]
    fn kinds_are_unique_and_documented() {
        let mut kinds = KINDS.to_vec();
        kinds.sort_unstable();
        kinds.dedup();
        assert_eq!(kinds.len(), KINDS.len());
        let help = crate::options::help();
        for kind in KINDS {
            assert!(help.contains(kind), "--help does not document bad_artifact kind {kind}");
        }
    }
}
