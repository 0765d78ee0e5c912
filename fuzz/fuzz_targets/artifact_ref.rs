//! Artifact-ref validation (spec `results-and-artifacts.md` §4) for any URI and declared size
//! and digest, against a fixed tree with links out of the root, a loop and a named pipe.
//!
//! Input: `[flags, uri…]`; `$ROOT`, `$OUT`, `$BASE` in the URI name the tree.

#![no_main]

use libfuzzer_sys::fuzz_target;
use odek_contract::artifact_ref::{MAX_ARTIFACT_BYTES, validate_artifact_ref};
use odek_contract::envelope::{ARTIFACT_REF_SCHEMA, RawArtifactRef};
use odek_contract::render::render_artifact_line;
use odek_fuzz::{A_TXT_SHA256, OUTSIDE_CONTENT, artifact_tree, expand_placeholders};

fuzz_target!(|data: &[u8]| {
    let Some((flags, uri)) = data.split_first() else { return };
    let tree = artifact_tree();
    let uri = expand_placeholders(&String::from_utf8_lossy(uri));
    let raw = RawArtifactRef {
        schema: if flags & 1 == 0 { ARTIFACT_REF_SCHEMA.to_owned() } else { String::new() },
        id: "report".to_owned(),
        uri: uri.clone(),
        media_type: "text/plain".to_owned(),
        sha256: match (flags >> 1) & 3 {
            0 => String::new(),
            1 => A_TXT_SHA256.to_owned(),
            2 => A_TXT_SHA256.to_uppercase(),
            _ => "0".repeat(64),
        },
        size_bytes: match (flags >> 3) & 3 {
            0 => None,
            1 => Some(6),
            2 => Some(-1),
            _ => Some(0),
        },
        summary: "weekly numbers".to_owned(),
    };
    match validate_artifact_ref(&raw, &tree.roots) {
        Ok(artifact) => {
            assert!(uri.len() >= "file:///".len());
            let path = &artifact.resolved_path;
            assert!(path.starts_with(&tree.root), "validated outside the root: {path:?} from {uri:?}");
            let metadata = std::fs::symlink_metadata(path).unwrap();
            assert!(metadata.is_file(), "validated a non-regular file: {path:?}");
            assert_eq!(metadata.len(), artifact.file_size);
            assert!(artifact.file_size <= MAX_ARTIFACT_BYTES);
            assert_eq!(path, &std::fs::canonicalize(path).unwrap(), "path not fully resolved");
            if let Some(declared) = artifact.size_bytes {
                assert_eq!(declared, artifact.file_size);
            }
            if !artifact.sha256.is_empty() {
                assert_eq!(artifact.sha256, A_TXT_SHA256);
                assert_eq!(std::fs::read(path).unwrap(), b"hello\n");
            }
            let line = render_artifact_line(&artifact);
            assert!(!line.contains('\n'));
            assert!(!line.contains(&*path.to_string_lossy()), "the resolved path is rendered: {line:?}");
        }
        Err(err) => {
            let text = err.to_string();
            assert!(text.starts_with("artifact ref rejected: "), "{text}");
            if !uri.contains(OUTSIDE_CONTENT) {
                assert!(!text.contains(OUTSIDE_CONTENT), "file content in an error: {text}");
            }
        }
    }
});
