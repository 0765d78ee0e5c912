//! External-state refs: the `--external-ref` syntax, field validation with the spec's exact
//! texts, deduplication and the add rules (spec `loop-and-sessions.md` §10.4).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use odek_agent::session::{ExternalRef, Session, SessionId, parse_external_ref_spec, validate_external_ref};

fn parsed(spec: &str) -> ExternalRef {
    parse_external_ref_spec(spec).unwrap_or_else(|err| panic!("{spec}: {err}"))
}

fn error(spec: &str) -> String {
    parse_external_ref_spec(spec).unwrap_err().to_string()
}

#[test]
fn shorthand_splits_at_the_first_equals() {
    let external_ref = parsed("issue=https://tracker/x?a=1,b=2");
    assert_eq!(external_ref, ExternalRef::new("issue", "https://tracker/x?a=1,b=2", "cli"));
    assert_eq!(parsed("branch=feature"), ExternalRef::new("branch", "feature", "cli"));
    // A comma with an unknown first key is still the shorthand.
    assert_eq!(parsed("pr=gh:1,2").uri, "gh:1,2");
}

#[test]
fn long_form_reads_every_key() {
    let external_ref = parsed("kind=bucket,uri=s3://b/k,created_by=ci,read_only=true");
    assert_eq!(
        external_ref,
        ExternalRef {
            kind: "bucket".into(),
            uri: "s3://b/k".into(),
            created_by: "ci".into(),
            read_only: true,
            created_at: String::new()
        }
    );
    let external_ref = parsed("uri=u,kind=k");
    assert_eq!(
        (external_ref.kind.as_str(), external_ref.created_by.as_str(), external_ref.read_only),
        ("k", "cli", false)
    );
    for yes in ["1", "t", "T", "TRUE", "true", "True"] {
        assert!(parsed(&format!("read_only={yes},kind=k,uri=u")).read_only, "{yes}");
    }
    for no in ["0", "f", "F", "FALSE", "false", "False"] {
        assert!(!parsed(&format!("kind=k,uri=u,read_only={no}")).read_only, "{no}");
    }
}

#[test]
fn every_spec_error_is_exact() {
    let cases = [
        (
            "nothing",
            r#"invalid --external-ref "nothing": want the kind=uri shorthand or comma-separated key=value pairs"#,
        ),
        ("", r#"invalid --external-ref "": want the kind=uri shorthand or comma-separated key=value pairs"#),
        ("kind=k,uri", r#"invalid --external-ref "kind=k,uri": malformed pair "uri" (want key=value)"#),
        ("kind,uri=u", r#"invalid --external-ref "kind,uri=u": malformed pair "kind" (want key=value)"#),
        (
            "kind=k,uri=u,read_only=yes",
            r#"invalid --external-ref "kind=k,uri=u,read_only=yes": read_only must be true or false, got "yes""#,
        ),
        (
            "kind=k,url=u",
            r#"invalid --external-ref "kind=k,url=u": unknown key "url" (want kind, uri, created_by, read_only)"#,
        ),
        (
            "kind=k,uri=u,created_by=",
            r#"invalid --external-ref "kind=k,uri=u,created_by=": session: external ref created_by must be 1-128 chars, got 0"#,
        ),
        ("=u", r#"invalid --external-ref "=u": session: external ref kind must be 1-64 chars, got 0"#),
        (
            "Issue=u",
            r#"invalid --external-ref "Issue=u": session: external ref kind "Issue": only lowercase ASCII letters, digits, '_' and '-' allowed"#,
        ),
        ("issue=", r#"invalid --external-ref "issue=": session: external ref uri must be 1-2048 chars, got 0"#),
        (
            "issue=a\u{7}b",
            r#"invalid --external-ref "issue=a\u0007b": session: external ref uri contains a control character (U+0007)"#,
        ),
        (
            "kind=k,read_only=1",
            r#"invalid --external-ref "kind=k,read_only=1": session: external ref uri must be 1-2048 chars, got 0"#,
        ),
    ];
    for (spec, expected) in cases {
        assert_eq!(error(spec), expected, "{spec:?}");
    }
}

#[test]
fn validation_table() {
    let valid = ExternalRef::new("k", "u", "cli");
    let with = |edit: fn(&mut ExternalRef)| {
        let mut external_ref = valid.clone();
        edit(&mut external_ref);
        validate_external_ref(&external_ref).map_err(|err| err.to_string())
    };
    assert_eq!(with(|_| {}), Ok(()));
    assert_eq!(with(|r| r.kind = "a".repeat(64)), Ok(()));
    assert_eq!(with(|r| r.kind = "a-b_c9".into()), Ok(()));
    assert_eq!(with(|r| r.kind = "a".repeat(65)), Err("session: external ref kind must be 1-64 chars, got 65".into()));
    assert_eq!(
        with(|r| r.kind = "a b".into()),
        Err(r#"session: external ref kind "a b": only lowercase ASCII letters, digits, '_' and '-' allowed"#.into())
    );
    assert_eq!(
        with(|r| r.kind = "é".into()),
        Err(r#"session: external ref kind "é": only lowercase ASCII letters, digits, '_' and '-' allowed"#.into())
    );
    assert_eq!(with(|r| r.uri = "u".repeat(2048)), Ok(()));
    assert_eq!(
        with(|r| r.uri = "u".repeat(2049)),
        Err("session: external ref uri must be 1-2048 chars, got 2049".into())
    );
    // Bytes, not characters: 1025 two-byte characters are 2050 bytes.
    assert_eq!(
        with(|r| r.uri = "é".repeat(1025)),
        Err("session: external ref uri must be 1-2048 chars, got 2050".into())
    );
    assert_eq!(
        with(|r| r.uri = "a\u{85}b".into()),
        Err("session: external ref uri contains a control character (U+0085)".into())
    );
    assert_eq!(
        with(|r| r.uri = "a\u{7f}".into()),
        Err("session: external ref uri contains a control character (U+007F)".into())
    );
    assert_eq!(
        with(|r| r.uri = "line\nbreak".into()),
        Err("session: external ref uri contains a control character (U+000A)".into())
    );
    assert_eq!(with(|r| r.created_by = "c".repeat(128)), Ok(()));
    assert_eq!(
        with(|r| r.created_by = "c".repeat(129)),
        Err("session: external ref created_by must be 1-128 chars, got 129".into())
    );
}

#[test]
fn add_dedupes_stamps_and_stops_at_the_first_invalid_ref() {
    let mut session = Session::new(SessionId::mint().unwrap());
    let first = ExternalRef {
        created_at: "2024-05-06T07:08:09Z".to_owned(),
        ..ExternalRef::new("issue", "https://t/1", "cli")
    };
    session.add_external_refs([first.clone(), ExternalRef::new("issue", "https://t/1", "cli")]).unwrap();
    assert_eq!(session.external_refs, vec![first]);
    // Different created_by is a different ref; created_at is stamped in UTC when absent.
    session.add_external_refs([ExternalRef::new("issue", "https://t/1", "agent")]).unwrap();
    assert_eq!(session.external_refs.len(), 2);
    assert!(session.external_refs[1].created_at.ends_with('Z'), "{}", session.external_refs[1].created_at);
    assert!(chrono::DateTime::parse_from_rfc3339(&session.external_refs[1].created_at).is_ok());

    let err = session
        .add_external_refs([
            ExternalRef::new("branch", "main", "cli"),
            ExternalRef::new("BAD", "x", "cli"),
            ExternalRef::new("after", "x", "cli"),
        ])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"session: external ref kind "BAD": only lowercase ASCII letters, digits, '_' and '-' allowed"#
    );
    let kinds: Vec<&str> = session.external_refs.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(kinds, ["issue", "issue", "branch"]);
}

#[test]
fn uris_that_redact_alike_are_the_same_ref() {
    let mut session = Session::new(SessionId::mint().unwrap());
    let old_key = format!("sk-{}", "a".repeat(40));
    let new_key = format!("sk-{}", "b".repeat(40));
    session.add_external_refs([ExternalRef::new("api", format!("https://h/?k={old_key}"), "cli")]).unwrap();
    session.add_external_refs([ExternalRef::new("api", format!("https://h/?k={new_key}"), "cli")]).unwrap();
    session.add_external_refs([ExternalRef::new("api", "https://h/?k=[REDACTED]", "cli")]).unwrap();
    assert_eq!(session.external_refs.len(), 1);
}
