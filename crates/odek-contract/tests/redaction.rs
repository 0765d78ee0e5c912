//! Secret redaction (`loop-and-sessions.md` §9): every pattern, known values with their
//! encodings, the 8-rune minimum, idempotence and the process-wide registry.
//!
//! Sample credentials are assembled at run time so no secret-shaped literal sits in the source.

use std::borrow::Cow;

use odek_contract::redaction::{Redactor, SECRET_PATTERNS, go_to_rust_pattern, redact, register_secret};
use regex::Regex;

fn alnum(n: usize) -> String {
    "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zC".chars().cycle().take(n).collect()
}

fn upper_digits(n: usize) -> String {
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".chars().cycle().take(n).collect()
}

fn digits(n: usize) -> String {
    "1234567890".chars().cycle().take(n).collect()
}

/// One sample per pattern, in the spec's order.
fn samples() -> Vec<String> {
    vec![
        format!("gsk_{}", alnum(32)),
        format!("xai-{}", alnum(32)),
        format!("hf_{}", alnum(32)),
        format!("sk-{}", alnum(32)),
        format!("ghp_{}", alnum(36)),
        format!("ghs_{}", alnum(36)),
        format!("github_pat_{}", alnum(22)),
        format!("npm_{}", alnum(36)),
        format!("glpat-{}", alnum(20)),
        format!("pypi-{}", alnum(20)),
        format!("AKIA{}", upper_digits(16)),
        format!("-----BEGIN RSA PRIVATE KEY-----\n{}\n{}\n-----END RSA PRIVATE KEY-----", alnum(64), alnum(20)),
        format!("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{}\n-----END PGP PRIVATE KEY BLOCK-----", alnum(64)),
        format!("eyJ{}.{}.{}", alnum(20), alnum(24), alnum(30)),
        format!("api_key = \"{}\"", alnum(24)),
        format!("Authorization: Bearer {}", alnum(40)),
        format!("xoxb-{}-{}-{}", digits(11), digits(12), alnum(24)),
        format!("xapp-1-A{}-{}-{}", upper_digits(9), digits(13), alnum(64)),
        format!("AccountKey={}==", alnum(86)),
        format!("whsec_{}", alnum(32)),
        format!("sk_live_{}", alnum(24)),
        format!("{}:{}", digits(10), alnum(35)),
        format!("rk_test_{}", alnum(24)),
        format!("AIza{}", alnum(35)),
        format!("SK{}", "0123456789abcdef".repeat(2)),
        format!("export MY_SERVICE_API_KEY={}", alnum(32)),
        format!("hvs.{}", alnum(90)),
        format!("ya29.{}", alnum(60)),
        format!("1//0{}", alnum(40)),
        format!("SG.{}.{}", alnum(22), alnum(43)),
        format!("M{}.{}.{}", alnum(23), alnum(6), alnum(27)),
        format!("postgres://admin:{}@db.internal:5432/app", alnum(12)),
        format!("https://deploy:{}@git.internal.example/org/repo.git", alnum(12)),
        format!("https://{}@o450123.ingest.sentry.io/5501234", "0123456789abcdef".repeat(2)),
        format!("https://hooks.slack.com/services/T{}/B{}/{}", upper_digits(8), upper_digits(8), alnum(24)),
        format!("https://discord.com/api/webhooks/{}/{}", digits(18), alnum(68)),
        format!(
            "https://contoso.webhook.office.com/webhookb2/{}@{}/IncomingWebhook/{}/{}",
            alnum(36),
            alnum(36),
            alnum(32),
            alnum(36)
        ),
    ]
}

#[test]
fn every_pattern_matches_its_sample() {
    let samples = samples();
    assert_eq!(samples.len(), SECRET_PATTERNS.len());
    for (pattern, sample) in SECRET_PATTERNS.iter().zip(&samples) {
        let regex = Regex::new(&go_to_rust_pattern(pattern)).unwrap();
        let found = regex.find(sample).unwrap_or_else(|| panic!("{pattern} does not match {sample}"));
        assert_eq!(found.as_str(), sample, "{pattern} must match the whole sample");
    }
}

#[test]
fn every_sample_is_redacted_in_context() {
    let redactor = Redactor::new();
    for sample in samples() {
        let text = format!("before {sample} after");
        let redacted = redactor.redact(&text);
        // An earlier pattern may claim part of a sample first (the generic credential pattern
        // takes `API_KEY=…` out of the `export` line); the secret part is gone either way.
        let secret_tail: String = sample.chars().rev().take(12).collect();
        assert!(redacted.starts_with("before ") && redacted.ends_with("[REDACTED] after"), "{redacted}");
        assert!(!redacted.contains(&secret_tail.chars().rev().collect::<String>()), "{redacted}");
    }
    assert_eq!(redactor.redact(&format!("export MY_SERVICE_API_KEY={}", alnum(32))), "export MY_SERVICE_[REDACTED]");
}

#[test]
fn near_misses_are_kept() {
    let redactor = Redactor::new();
    for text in [
        format!("gsk_{}", alnum(31)),
        format!("ghp_{}", alnum(35)),
        format!("AKIA{}", upper_digits(15)),
        format!("task-{}", alnum(40)), // `\bsk-` needs a word boundary
        "password: short".to_owned(),
        "the api key is configured".to_owned(),
        "postgres://localhost/app".to_owned(),
        "ssh://git@github.com/org/repo.git".to_owned(),
        "https://hooks.slack.com/".to_owned(),
        "https://discord.com/api/webhooks".to_owned(),
        "mailto:someone@example.com".to_owned(),
    ] {
        assert_eq!(redactor.redact(&text), text.as_str(), "{text}");
    }
}

#[test]
fn generic_credential_value_runs_to_whitespace() {
    let redactor = Redactor::new();
    let text = format!("password={},{};x'y next", alnum(12), alnum(12));
    assert_eq!(redactor.redact(&text), "[REDACTED] next");
    let text = format!("client_secret: '{}' rest", alnum(25));
    assert_eq!(redactor.redact(&text), "[REDACTED] rest");
}

#[test]
fn private_key_block_spans_lines() {
    let redactor = Redactor::new();
    let text =
        format!("key:\n-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----\ndone", alnum(70));
    assert_eq!(redactor.redact(&text), "key:\n[REDACTED]\ndone");
}

#[test]
fn nothing_to_redact_is_borrowed() {
    let redactor = Redactor::new();
    assert!(matches!(redactor.redact("ordinary tool output\nwith lines"), Cow::Borrowed(_)));
    assert!(matches!(redactor.redact(""), Cow::Borrowed("")));
}

fn base64(bytes: &[u8], url: bool, padded: bool) -> String {
    let alphabet: &[u8] = if url {
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    } else {
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    };
    // Independent, bit-by-bit reference encoder.
    let bits: Vec<u8> = bytes.iter().flat_map(|b| (0..8).rev().map(move |i| (b >> i) & 1)).collect();
    let mut out: String = bits
        .chunks(6)
        .map(|chunk| {
            let value = chunk.iter().chain(std::iter::repeat(&0)).take(6).fold(0, |acc, bit| (acc << 1) | bit);
            char::from(alphabet[usize::from(value)])
        })
        .collect();
    if padded {
        while !out.len().is_multiple_of(4) {
            out.push('=');
        }
    }
    out
}

#[test]
fn known_secret_and_every_encoding_are_redacted() {
    let secret = "s3cr3t value/with+odd?chars~ü";
    let mut redactor = Redactor::new();
    redactor.add_known_secret(&format!("  {secret}\n"));
    let bytes = secret.as_bytes();
    let encodings = [
        secret.to_owned(),
        base64(bytes, false, true),
        base64(bytes, false, false),
        base64(bytes, true, true),
        base64(bytes, true, false),
        hex::encode(bytes),
        hex::encode_upper(bytes),
        "s3cr3t+value%2Fwith%2Bodd%3Fchars~%C3%BC".to_owned(),
        secret.chars().rev().collect(),
    ];
    for encoded in encodings {
        let text = format!("<<{encoded}>>");
        assert_eq!(redactor.redact(&text), "<<[REDACTED]>>", "{encoded}");
    }
}

#[test]
fn secrets_shorter_than_eight_runes_are_ignored() {
    let mut redactor = Redactor::new();
    redactor.add_known_secret("short12");
    redactor.add_known_secret("   abcdefg   "); // 7 runes after trimming
    redactor.add_known_secret("üüüüüüü"); // 7 runes, 14 bytes
    assert_eq!(redactor.redact("short12 abcdefg üüüüüüü"), "short12 abcdefg üüüüüüü");
    redactor.add_known_secret("exactly8");
    assert_eq!(redactor.redact("x exactly8 y"), "x [REDACTED] y");
}

#[test]
fn short_encodings_are_ignored_but_the_value_is_not() {
    // 8 runes: hex and base64 are longer and kept; the value itself is kept.
    let mut redactor = Redactor::new();
    redactor.add_known_secret("abcdefgh");
    assert_eq!(redactor.redact("abcdefgh"), "[REDACTED]");
    assert_eq!(redactor.redact("hgfedcba"), "[REDACTED]");
    assert_eq!(redactor.redact(&hex::encode("abcdefgh")), "[REDACTED]");
}

#[test]
fn longest_known_value_wins() {
    let mut redactor = Redactor::new();
    redactor.add_known_secret("abcdefgh");
    redactor.add_known_secret("abcdefgh-and-more");
    assert_eq!(redactor.redact("x abcdefgh-and-more y"), "x [REDACTED] y");
}

#[test]
fn known_values_are_literal_not_regex() {
    let mut redactor = Redactor::new();
    redactor.add_known_secret("a.b*c+d?(e)$1");
    assert_eq!(redactor.redact("axb*c+d?(e)$1 a.b*c+d?(e)$1"), "axb*c+d?(e)$1 [REDACTED]");
}

#[test]
fn redaction_is_idempotent() {
    let mut redactor = Redactor::new();
    redactor.add_known_secret("registered-secret-1");
    let all_samples = samples().join(" | ");
    let tricky = [
        // A replacement creating a word boundary for `\bsk-`.
        format!("AKIA{}sk-{}", upper_digits(16), alnum(32)),
        // A known value next to a generic credential.
        format!("api_key=registered-secret-1{}", alnum(4)),
        format!("password=registered-secret-1 {}", alnum(30)),
        "[REDACTED] already [REDACTED]".to_owned(),
        all_samples,
    ];
    for text in tricky {
        let once = redactor.redact(&text).into_owned();
        let twice = redactor.redact(&once).into_owned();
        assert_eq!(once, twice, "{text}");
        assert!(!once.contains("registered-secret-1"));
    }
}

#[test]
fn marker_lookalike_secrets_do_not_break_idempotence() {
    let mut redactor = Redactor::new();
    redactor.add_known_secret("REDACTED");
    redactor.add_known_secret("[REDACTED][RE");
    let once = redactor.redact("value [REDACTED] x").into_owned();
    assert_eq!(redactor.redact(&once), once.as_str());
}

#[test]
fn process_wide_registry() {
    let secret = "process-wide-secret-5e1f";
    assert_eq!(redact(&format!("v={secret}")), format!("v={secret}"));
    register_secret(secret);
    assert_eq!(redact(&format!("v={secret}")), "v=[REDACTED]");
    assert_eq!(redact(&hex::encode(secret)), "[REDACTED]");
    assert!(matches!(redact("nothing here"), Cow::Borrowed(_)));
}
