//! The `max_result_chars` cap (`results-and-artifacts.md` §6): the spec's examples, the
//! envelope rule that keeps metadata lines when it can, and invariants over many sizes.

mod support;

use std::path::PathBuf;

use odek_contract::artifact_ref::{ArtifactRef, ArtifactRoots};
use odek_contract::render::{count_artifact_lines, render_envelope};
use odek_contract::runes::{first_runes, rune_count};
use odek_contract::tool_result::{ResultContext, cap_error_text, decode_tool_result};
use odek_contract::truncation::{apply_result_limit, cap_envelope, truncation_notice};
use support::{Fixture, envelope_json, file_uri, raw_ref};

fn artifact(id: &str, summary: &str) -> ArtifactRef {
    ArtifactRef {
        id: id.to_owned(),
        media_type: "text/plain".to_owned(),
        size_bytes: Some(3),
        sha256: String::new(),
        summary: summary.to_owned(),
        resolved_path: PathBuf::from("/r/x"),
        file_size: 3,
    }
}

#[test]
fn spec_notice_example_is_207_runes() {
    let notice = truncation_notice("limited", "large_result", 5000, 1000);
    assert_eq!(
        notice,
        "\n[odek: result truncated \u{2014} server \"limited\" tool \"large_result\" produced 5000 chars, exceeding the configured max_result_chars=1000; the full result is available via the retained artifact references, if any]"
    );
    assert_eq!(rune_count(&notice), 207);
}

#[test]
fn notice_quotes_server_and_tool() {
    let notice = truncation_notice("s\"1", "t\\2\n", 1, 0);
    assert!(notice.contains("server \"s\\\"1\" tool \"t\\\\2\\n\" produced"));
}

#[test]
fn spec_plain_example_793_x_plus_notice() {
    let capped = apply_result_limit(&"x".repeat(5000), "limited", "large_result", 1000);
    assert_eq!(capped.observed, Some(5000));
    assert_eq!(capped.text, format!("{}{}", "x".repeat(793), truncation_notice("limited", "large_result", 5000, 1000)));
    assert_eq!(rune_count(&capped.text), 1000);
}

#[test]
fn plain_within_limit_is_unchanged() {
    let capped = apply_result_limit(&"x".repeat(1000), "s", "t", 1000);
    assert_eq!(capped.observed, None);
    assert_eq!(capped.text.len(), 1000);
    // 1000 runes of 2 bytes each: more bytes than the limit, not more runes.
    let capped = apply_result_limit(&"é".repeat(1000), "s", "t", 1000);
    assert_eq!(capped.observed, None);
}

#[test]
fn plain_notice_longer_than_limit() {
    let capped = apply_result_limit(&"x".repeat(150), "limited", "large_result", 100);
    let notice = truncation_notice("limited", "large_result", 150, 100);
    assert_eq!(capped.text, first_runes(&notice, 100));
    assert_eq!(capped.observed, Some(150));
}

#[test]
fn envelope_cut_keeps_metadata_lines() {
    let refs = [artifact("a", "first"), artifact("b", "")];
    let text = "x".repeat(5000);
    let rendered = render_envelope(&text, &refs);
    let observed = rune_count(&rendered);
    let capped = cap_envelope(&text, &refs, "limited", "large_result", 1000);
    assert_eq!(capped.observed, Some(observed));
    let notice = truncation_notice("limited", "large_result", observed, 1000);
    let metadata = "\n- artifact \"a\" (text/plain, 3 bytes): first\n- artifact \"b\" (text/plain, 3 bytes)";
    let budget = 1000 - rune_count(metadata) - rune_count(&notice);
    assert_eq!(capped.text, format!("{}{metadata}{notice}", "x".repeat(budget)));
    assert_eq!(rune_count(&capped.text), 1000);
    assert_eq!(count_artifact_lines(&capped.text), 2);
}

#[test]
fn envelope_within_limit_is_unchanged() {
    let refs = [artifact("a", "")];
    let capped = cap_envelope("short", &refs, "s", "t", 1000);
    assert_eq!(capped.text, render_envelope("short", &refs));
    assert_eq!(capped.observed, None);
}

#[test]
fn envelope_observed_counts_the_whole_rendering() {
    // The text alone fits; with its metadata line it does not.
    let refs = [artifact("a", "")];
    let text = "x".repeat(990);
    let capped = cap_envelope(&text, &refs, "s", "t", 1000);
    assert_eq!(capped.observed, Some(rune_count(&render_envelope(&text, &refs))));
    assert!(rune_count(&capped.text) <= 1000);
    assert_eq!(count_artifact_lines(&capped.text), 1);
}

#[test]
fn envelope_metadata_longer_than_room_is_cut_too() {
    let summary = "s".repeat(4000);
    let refs: Vec<ArtifactRef> = (0..3).map(|i| artifact(&format!("r{i}"), &summary)).collect();
    let capped = cap_envelope("text", &refs, "limited", "large_result", 1000);
    let observed = rune_count(&render_envelope("text", &refs));
    let notice = truncation_notice("limited", "large_result", observed, 1000);
    assert_eq!(rune_count(&capped.text), 1000);
    assert!(capped.text.ends_with(&notice));
    assert!(capped.text.starts_with("- artifact \"r0\""), "the text was cut to nothing first");
}

#[test]
fn envelope_notice_longer_than_limit() {
    let capped = cap_envelope(&"x".repeat(500), &[artifact("a", "")], "limited", "large_result", 150);
    assert_eq!(rune_count(&capped.text), 150);
    assert!(capped.text.starts_with("\n[odek: result truncated"));
}

/// Texts made of one repeated character of each UTF-8 width.
const FILLERS: [&str; 4] = ["x", "é", "✓", "🦀"];

#[test]
fn plain_cap_never_exceeds_limit_over_many_sizes() {
    for limit in [0, 1, 2, 50, 150, 206, 207, 208, 209, 300, 1000, 4096] {
        for len in [0, 1, 2, 100, 206, 207, 208, 999, 1000, 1001, 1500, 5000] {
            for filler in FILLERS {
                let text = filler.repeat(len);
                let capped = apply_result_limit(&text, "limited", "large_result", limit);
                let runes = rune_count(&capped.text);
                assert!(runes <= limit, "limit {limit} len {len} {filler}: {runes}");
                if len <= limit {
                    assert_eq!((capped.text.as_str(), capped.observed), (text.as_str(), None));
                } else {
                    assert_eq!(capped.observed, Some(len));
                    assert_eq!(runes, limit, "a cut output is exactly the limit");
                    let notice = truncation_notice("limited", "large_result", len, limit);
                    if rune_count(&notice) <= limit {
                        assert!(capped.text.ends_with(&notice));
                        assert!(text.starts_with(capped.text.strip_suffix(notice.as_str()).unwrap()));
                    }
                }
            }
        }
    }
}

#[test]
fn envelope_cap_never_exceeds_limit_over_many_sizes() {
    let summaries = ["", "short summary", &"long summary ".repeat(40)];
    for limit in [0, 1, 100, 206, 207, 210, 250, 300, 500, 1000, 3000] {
        for len in [0, 1, 50, 200, 999, 1000, 2500, 6000] {
            for ref_count in 0..=4 {
                for filler in FILLERS {
                    let refs: Vec<ArtifactRef> =
                        (0..ref_count).map(|i| artifact(&format!("r{i}"), summaries[i % summaries.len()])).collect();
                    let text = filler.repeat(len);
                    let rendered = render_envelope(&text, &refs);
                    let observed = rune_count(&rendered);
                    let capped = cap_envelope(&text, &refs, "limited", "large_result", limit);
                    let runes = rune_count(&capped.text);
                    let case = format!("limit {limit} len {len} refs {ref_count} {filler}");
                    assert!(runes <= limit, "{case}: {runes}");
                    if observed <= limit {
                        assert_eq!(capped.text, rendered, "{case}");
                        assert_eq!(capped.observed, None, "{case}");
                        continue;
                    }
                    assert_eq!(capped.observed, Some(observed), "{case}");
                    let notice = truncation_notice("limited", "large_result", observed, limit);
                    let notice_runes = rune_count(&notice);
                    if notice_runes > limit {
                        assert_eq!(capped.text, first_runes(&notice, limit), "{case}");
                        continue;
                    }
                    assert!(capped.text.ends_with(&notice), "{case}");
                    let metadata_runes = observed - len;
                    if metadata_runes + notice_runes <= limit {
                        assert_eq!(count_artifact_lines(&capped.text), ref_count, "metadata kept: {case}");
                    }
                }
            }
        }
    }
}

#[test]
fn decoded_output_never_exceeds_limit_with_extras() {
    let fixture = Fixture::new();
    let path = fixture.write("a.txt", b"abc");
    let roots = fixture.roots();
    for limit in [340, 400, 600, 1000, 5000] {
        for len in [0, 10, 400, 2000, 9000] {
            let json = envelope_json(&"e".repeat(len), &[raw_ref("a", &file_uri(&path))]);
            let extra = "x".repeat(len);
            let ctx = ResultContext { server: "srv", tool: "tool", max_result_chars: limit, roots: &roots };
            for items in [vec![json.as_str()], vec![json.as_str(), extra.as_str()], vec![extra.as_str(), json.as_str()]]
            {
                let out = decode_tool_result(&items, &ctx).unwrap();
                assert!(rune_count(&out.text) <= limit, "limit {limit} len {len}");
                assert_eq!(out.artifacts.len(), 1);
            }
        }
    }
}

#[test]
fn extras_cut_reports_the_last_notice() {
    let fixture = Fixture::new();
    let path = fixture.write("a.txt", b"abc");
    let roots = fixture.roots();
    let ctx = ResultContext { server: "srv", tool: "tool", max_result_chars: 1000, roots: &roots };
    let json = envelope_json(&"e".repeat(3000), &[raw_ref("a", &file_uri(&path))]);
    let extra = "x".repeat(3000);
    let out = decode_tool_result(&[&json, &extra], &ctx).unwrap();
    // The envelope was capped to exactly 1000, then 1 + 3000 extra runes were appended and cut.
    assert_eq!(out.observed_chars, Some(1000 + 1 + 3000));
    assert_eq!(rune_count(&out.text), 1000);
    // Only the envelope was cut: its own observed count is reported.
    let out = decode_tool_result(&[&json], &ctx).unwrap();
    assert_eq!(out.observed_chars, Some(3000 + 1 + rune_count("- artifact \"a\" (text/plain)")));
}

#[test]
fn decoded_plain_text_reports_observed() {
    let roots = ArtifactRoots::new(Vec::<String>::new());
    let ctx = ResultContext { server: "limited", tool: "large_result", max_result_chars: 1000, roots: &roots };
    let text = "x".repeat(5000);
    let out = decode_tool_result(&[&text], &ctx).unwrap();
    assert_eq!(out.observed_chars, Some(5000));
    assert!(out.text.starts_with(&"x".repeat(793)) && !out.text.starts_with(&"x".repeat(794)));
    let out = decode_tool_result(&["small"], &ctx).unwrap();
    assert_eq!(out.observed_chars, None);
}

#[test]
fn error_text_is_capped_with_the_same_notice() {
    let roots = ArtifactRoots::new(Vec::<String>::new());
    let ctx = ResultContext { server: "limited", tool: "large_result", max_result_chars: 1000, roots: &roots };
    let capped = cap_error_text(&"x".repeat(5000), &ctx);
    assert_eq!(capped.observed, Some(5000));
    assert_eq!(capped.text, format!("{}{}", "x".repeat(793), truncation_notice("limited", "large_result", 5000, 1000)));
}
