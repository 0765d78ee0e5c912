//! docs/EXTENDING.md shows the SDK's minimal server; the code there must be the example that
//! compiles (`examples/minimal.rs`), and it must keep the "under 40 lines" promise.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

/// The body of the first fenced block with this language tag.
fn fenced_block(markdown: &str, language: &str) -> String {
    let opening = format!("```{language}\n");
    let start = markdown.find(&opening).unwrap_or_else(|| panic!("no ```{language} block")) + opening.len();
    let length = markdown[start..].find("```\n").unwrap();
    markdown[start..start + length].to_owned()
}

#[test]
fn the_documented_server_is_the_compiled_minimal_example() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = std::fs::read_to_string(crate_dir.join("../../docs/EXTENDING.md")).unwrap();
    let example = std::fs::read_to_string(crate_dir.join("examples/minimal.rs")).unwrap();
    assert_eq!(fenced_block(&docs, "rust"), example);
    assert!(example.lines().count() < 40, "{} lines", example.lines().count());
}
