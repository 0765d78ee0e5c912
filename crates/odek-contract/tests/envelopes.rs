//! Envelope detection and the decoding pipeline (`results-and-artifacts.md` §1-§3): plain text,
//! envelopes, malformed envelopes, the 64-ref cap, multi-item merging and extras.

mod support;

use odek_contract::artifact_ref::ArtifactRoots;
use odek_contract::envelope::{Envelope, RawArtifactRef, probe_envelope};
use odek_contract::render::count_artifact_lines;
use odek_contract::tool_result::{ResultContext, ToolOutput, decode_tool_result};
use support::{Fixture, envelope_json, file_uri, raw_ref, sha256_hex};

fn ctx(roots: &ArtifactRoots) -> ResultContext<'_> {
    ResultContext { server: "srv", tool: "tool", max_result_chars: 200_000, roots }
}

fn decode(items: &[&str], roots: &ArtifactRoots) -> Result<ToolOutput, String> {
    decode_tool_result(items, &ctx(roots)).map_err(|err| err.to_string())
}

fn no_roots() -> ArtifactRoots {
    ArtifactRoots::new(Vec::<String>::new())
}

#[test]
fn plain_text_is_returned_verbatim() {
    let roots = no_roots();
    for text in [
        "hello",
        "",
        "  padded  ",
        r#"note: {"schema":"odek.tool-result/v1","text":"x"}"#,
        r#"{"schema":"odek.event/v1","text":"x"}"#,
        r#"{"no":"schema"}"#,
        "{ not json",
        "[1,2,3]",
    ] {
        let out = decode(&[text], &roots).unwrap();
        assert_eq!(out, ToolOutput { text: text.to_owned(), artifacts: vec![], observed_chars: None }, "{text}");
    }
}

#[test]
fn no_text_items_is_empty_text() {
    assert_eq!(decode(&[], &no_roots()).unwrap().text, "");
}

#[test]
fn envelope_text_without_refs() {
    let out = decode(&[r#"{"schema":"odek.tool-result/v1","text":"summary"}"#], &no_roots()).unwrap();
    assert_eq!(out.text, "summary");
    let out = decode(&[r#"{"schema":"odek.tool-result/v1"}"#], &no_roots()).unwrap();
    assert_eq!(out.text, "");
}

#[test]
fn envelope_detection_trims_and_strips_one_bom() {
    let envelope = probe_envelope("\n\t \u{feff}{\"schema\":\"odek.tool-result/v1\",\"text\":\"t\"}  ").unwrap();
    assert_eq!(envelope, Some(Envelope { text: "t".to_owned(), artifacts: vec![] }));
    // Only one BOM is stripped.
    assert_eq!(probe_envelope("\u{feff}\u{feff}{\"schema\":\"odek.tool-result/v1\"}").unwrap(), None);
}

#[test]
fn envelope_unknown_fields_are_ignored() {
    let text = r#"{"schema":"odek.tool-result/v1","text":"t","v2_field":{"a":[1]},"artifacts":[{"schema":"odek.artifact-ref/v1","id":"a","uri":"file:///x","media_type":"m","later":true}]}"#;
    let envelope = probe_envelope(text).unwrap().unwrap();
    assert_eq!(envelope.artifacts[0].id, "a");
}

#[test]
fn malformed_envelope_fails_the_call() {
    let err = decode(&[r#"{"schema":"odek.tool-result/v1","artifacts":"malformed"}"#], &no_roots()).unwrap_err();
    assert!(err.starts_with("malformed odek.tool-result/v1 envelope: "), "{err}");
    let err = decode(&[r#"{"schema":"odek.tool-result/v1","text":5}"#], &no_roots()).unwrap_err();
    assert!(err.starts_with("malformed odek.tool-result/v1 envelope: invalid type: integer `5`"), "{err}");
    let err =
        decode(&[r#"{"schema":"odek.tool-result/v1","artifacts":[{"size_bytes":"3"}]}"#], &no_roots()).unwrap_err();
    assert!(err.starts_with("malformed odek.tool-result/v1 envelope: "), "{err}");
}

#[test]
fn envelope_with_a_validated_ref_is_rendered() {
    let fixture = Fixture::new();
    let path = fixture.write("junit.xml", b"<testsuite/>\n");
    let raw = RawArtifactRef {
        size_bytes: Some(13),
        sha256: sha256_hex(b"<testsuite/>\n"),
        summary: "Full CI test results (JUnit XML)".to_owned(),
        media_type: "application/xml".to_owned(),
        ..raw_ref("report-1", &file_uri(&path))
    };
    let json = envelope_json("Analyzed 1284 test cases.", std::slice::from_ref(&raw));
    let out = decode(&[&json], &fixture.roots()).unwrap();
    assert_eq!(
        out.text,
        format!(
            "Analyzed 1284 test cases.\n- artifact \"report-1\" (application/xml, 13 bytes, sha256 {}\u{2026}): Full CI test results (JUnit XML)",
            &raw.sha256[..12]
        )
    );
    assert_eq!(out.artifacts.len(), 1);
    assert_eq!(out.artifacts[0].resolved_path, path);
    assert_eq!(out.observed_chars, None);
    assert_eq!(count_artifact_lines(&out.text), 1);
    assert!(!out.text.contains(path.to_str().unwrap()) && !out.text.contains("junit.xml"));
}

#[test]
fn one_bad_ref_fails_the_whole_call() {
    let fixture = Fixture::new();
    let good = fixture.write("good.txt", b"abc");
    let json = envelope_json("t", &[raw_ref("good", &file_uri(&good)), raw_ref("bad", "https://x/y")]);
    assert_eq!(
        decode(&[&json], &fixture.roots()).unwrap_err(),
        r#"artifact ref rejected: artifact "bad" uses uri scheme "https"; only file:// is accepted"#
    );
}

#[test]
fn refs_without_roots_fail_closed() {
    let fixture = Fixture::new();
    let path = fixture.write("a.txt", b"abc");
    let json = envelope_json("t", &[raw_ref("a", &file_uri(&path))]);
    assert_eq!(
        decode(&[&json], &no_roots()).unwrap_err(),
        r#"artifact ref rejected: artifact "a" rejected: no artifact roots configured for this server"#
    );
}

fn many_refs(fixture: &Fixture, prefix: &str, count: usize) -> Vec<RawArtifactRef> {
    let path = fixture.write("shared.txt", b"abc");
    (0..count).map(|i| raw_ref(&format!("{prefix}{i}"), &file_uri(&path))).collect()
}

#[test]
fn sixty_four_refs_are_accepted() {
    let fixture = Fixture::new();
    let json = envelope_json("", &many_refs(&fixture, "r", 64));
    let out = decode(&[&json], &fixture.roots()).unwrap();
    assert_eq!(out.artifacts.len(), 64);
    assert_eq!(count_artifact_lines(&out.text), 64);
    assert!(out.text.starts_with("- artifact \"r0\""));
}

#[test]
fn sixty_five_refs_red() {
    let fixture = Fixture::new();
    let json = envelope_json("", &many_refs(&fixture, "r", 65));
    assert_eq!(
        decode(&[&json], &fixture.roots()).unwrap_err(),
        "odek.tool-result/v1 envelope carries 65 artifacts; the cap is 64"
    );
    // The cap is enforced before validation: even refs that would fail are only counted.
    let junk = vec![RawArtifactRef::default(); 1000];
    assert_eq!(
        decode(&[&envelope_json("", &junk)], &no_roots()).unwrap_err(),
        "odek.tool-result/v1 envelope carries 1000 artifacts; the cap is 64"
    );
}

#[test]
fn sixty_five_refs_across_merged_items_red() {
    let fixture = Fixture::new();
    let first = envelope_json("one", &many_refs(&fixture, "a", 40));
    let second = envelope_json("two", &many_refs(&fixture, "b", 25));
    assert_eq!(
        decode(&[&first, "extra", &second], &fixture.roots()).unwrap_err(),
        "odek.tool-result/v1 envelope carries 65 artifacts; the cap is 64"
    );
    let second = envelope_json("two", &many_refs(&fixture, "b", 24));
    assert_eq!(decode(&[&first, &second], &fixture.roots()).unwrap().artifacts.len(), 64);
}

#[test]
fn duplicate_id_red() {
    let fixture = Fixture::new();
    let a = fixture.write("a.txt", b"a");
    let b = fixture.write("b.txt", b"b");
    let json = envelope_json("t", &[raw_ref("x", &file_uri(&a)), raw_ref("x", &file_uri(&b))]);
    assert_eq!(
        decode(&[&json], &fixture.roots()).unwrap_err(),
        r#"odek.tool-result/v1 envelope carries duplicate artifact id "x""#
    );
    // Across merged items too.
    let first = envelope_json("1", &[raw_ref("x", &file_uri(&a))]);
    let second = envelope_json("2", &[raw_ref("x", &file_uri(&b))]);
    assert_eq!(
        decode(&[&first, &second], &fixture.roots()).unwrap_err(),
        r#"odek.tool-result/v1 envelope carries duplicate artifact id "x""#
    );
}

#[test]
fn ref_rules_are_checked_before_duplicate_ids() {
    let fixture = Fixture::new();
    let a = fixture.write("a.txt", b"a");
    let json =
        envelope_json("t", &[raw_ref("x", &file_uri(&a)), raw_ref("x", &file_uri(&a)), raw_ref("y", "ftp://h/x")]);
    assert!(decode(&[&json], &fixture.roots()).unwrap_err().starts_with("artifact ref rejected: artifact \"y\""));
}

#[test]
fn multi_item_plain_text_is_joined() {
    let out = decode(&["first", "second", "", "third"], &no_roots()).unwrap();
    assert_eq!(out.text, "first\nsecond\n\nthird");
}

#[test]
fn joined_items_forming_an_envelope_are_one_envelope() {
    let out = decode(&[r#"{"schema":"odek.tool-result/v1","#, r#""text":"joined"}"#], &no_roots()).unwrap();
    assert_eq!(out.text, "joined");
}

#[test]
fn multi_item_envelope_base_texts_and_extras() {
    let fixture = Fixture::new();
    let a = fixture.write("a.txt", b"a");
    let b = fixture.write("b.txt", b"b");
    let first = envelope_json("first text", &[raw_ref("a", &file_uri(&a))]);
    let second = envelope_json("second text", &[raw_ref("b", &file_uri(&b))]);
    let out = decode(&["leading extra", &first, "  \n ", &second, "trailing extra"], &fixture.roots()).unwrap();
    assert_eq!(
        out.text,
        "first text\nsecond text\n- artifact \"a\" (text/plain)\n- artifact \"b\" (text/plain)\nleading extra\ntrailing extra"
    );
    assert_eq!(out.artifacts.iter().map(|a| a.id.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(count_artifact_lines(&out.text), 2);
}

#[test]
fn multi_item_envelope_without_extras() {
    let out = decode(&[r#"{"schema":"odek.tool-result/v1","text":"only"}"#, "   "], &no_roots()).unwrap();
    assert_eq!(out.text, "only");
}

#[test]
fn multi_item_malformed_item_fails_the_call() {
    let err = decode(&["fine", r#"{"schema":"odek.tool-result/v1","artifacts":{}}"#], &no_roots()).unwrap_err();
    assert!(err.starts_with("malformed odek.tool-result/v1 envelope: "), "{err}");
}

#[test]
fn multi_item_refs_are_validated_against_roots() {
    let fixture = Fixture::new();
    let outside = fixture.write_outside("x.txt", b"x");
    let item = envelope_json("t", &[raw_ref("o", &file_uri(&outside))]);
    assert_eq!(
        decode(&["extra", &item], &fixture.roots()).unwrap_err(),
        r#"artifact ref rejected: artifact "o" resolves outside every configured artifact root"#
    );
}

#[test]
fn multi_item_non_envelope_json_is_an_extra() {
    let out = decode(&[r#"{"schema":"odek.tool-result/v1","text":"env"}"#, r#"{"k":1}"#], &no_roots());
    // The joined text is not an envelope (two objects), the items are probed one by one.
    assert_eq!(out.unwrap().text, "env\n{\"k\":1}");
}
