//! The `max_result_chars` cap (spec `results-and-artifacts.md` §6) for any text, names and
//! limit: plain results and error channels, and rendered envelopes with refs built from the
//! input; plus the field cleaning and forged-line indentation the renders rely on.
//!
//! Input: `[limit hi, limit lo, text…, 0xFF, server, 0xFF, tool, 0xFF, ref id, 0xFF, summary]`.

#![no_main]

use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;
use odek_contract::artifact_ref::ArtifactRef;
use odek_contract::render::{
    ARTIFACT_LINE_PREFIX, MAX_FIELD_RUNES, clean_field, render_artifact_line, render_envelope, sanitise,
    starts_with_rendered_prefix,
};
use odek_contract::runes::{first_runes, rune_count};
use odek_contract::truncation::{apply_result_limit, cap_envelope, truncation_notice};
use odek_fuzz::parts;

fuzz_target!(|data: &[u8]| {
    let [limit_hi, limit_lo, rest @ ..] = data else { return };
    let limit = usize::from(u16::from_be_bytes([*limit_hi, *limit_lo]));
    let [text, server, tool, id, summary] = parts::<5>(rest).map(String::from_utf8_lossy);

    // Plain text: unchanged when it fits; else exactly the limit, body prefix + notice.
    let capped = apply_result_limit(&text, &server, &tool, limit);
    let runes = rune_count(&text);
    if runes <= limit {
        assert_eq!(capped.text, text);
        assert_eq!(capped.observed, None);
    } else {
        assert_eq!(capped.observed, Some(runes));
        assert_eq!(rune_count(&capped.text), limit, "a cut result is exactly the limit");
        let notice = truncation_notice(&server, &tool, runes, limit);
        if rune_count(&notice) > limit {
            assert_eq!(capped.text, first_runes(&notice, limit));
        } else {
            let body = capped.text.strip_suffix(notice.as_str()).unwrap();
            assert!(text.starts_with(body));
        }
    }

    // Field cleaning and sanitising.
    let cleaned = clean_field(&summary);
    assert!(rune_count(&cleaned) <= MAX_FIELD_RUNES + 1);
    assert!(!cleaned.chars().any(char::is_control));
    let sanitised = sanitise(&text);
    // [beyond] No line starts like a line odek renders (artifact or content metadata).
    assert!(!sanitised.split('\n').any(starts_with_rendered_prefix), "a forged line survived");
    // Sanitising only indents the forged lines, by one space each.
    assert_eq!(sanitised.split('\n').count(), text.split('\n').count());
    for (after, before) in sanitised.split('\n').zip(text.split('\n')) {
        if starts_with_rendered_prefix(before) {
            assert_eq!(after.strip_prefix(' '), Some(before));
        } else {
            assert_eq!(after, before);
        }
    }

    // Envelopes: refs built from the input render on one line each and survive the cap when
    // they fit.
    let refs: Vec<ArtifactRef> = (0..usize::from(limit_lo % 4))
        .map(|n| ArtifactRef {
            id: format!("{id}{n}"),
            media_type: "text/plain".to_owned(),
            size_bytes: (n % 2 == 0).then_some(n as u64),
            sha256: if n == 1 { "ab".repeat(32) } else { String::new() },
            summary: summary.clone().into_owned(),
            resolved_path: PathBuf::from("/never/rendered"),
            file_size: 0,
        })
        .collect();
    for artifact in &refs {
        let line = render_artifact_line(artifact);
        assert!(line.starts_with(ARTIFACT_LINE_PREFIX) && !line.contains('\n'), "{line:?}");
        assert!(
            !line.contains("/never/rendered") || id.contains("/never/rendered") || summary.contains("/never/rendered")
        );
    }
    let rendered = render_envelope(&sanitised, &refs);
    let capped = cap_envelope(&sanitised, &refs, &server, &tool, limit);
    let observed = rune_count(&rendered);
    assert!(rune_count(&capped.text) <= limit, "envelope over the cap");
    if observed <= limit {
        assert_eq!(capped.text, rendered);
        assert_eq!(capped.observed, None);
    } else {
        assert_eq!(capped.observed, Some(observed));
    }
});
