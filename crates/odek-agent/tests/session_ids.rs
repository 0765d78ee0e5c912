//! Session IDs: the minted format and the path rule every ID passes before it reaches a path.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use odek_agent::session::{SessionError, SessionId, SessionStore};

#[test]
fn minted_id_is_utc_date_dash_32_lowercase_hex() {
    let id = SessionId::mint().unwrap();
    let text = id.as_str();
    assert_eq!(text.len(), 8 + 1 + 32, "{text}");
    assert!(text[..8].chars().all(|c| c.is_ascii_digit()));
    assert_eq!(&text[8..9], "-");
    assert!(text[9..].chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')), "{text}");
}

#[test]
fn session_id_path_traversal_red() {
    let cases = [
        ("..", r#"session: invalid session ID "..""#),
        ("../../etc/passwd", r#"session: invalid session ID "../../etc/passwd""#),
        ("a/b", r#"session: invalid session ID "a/b""#),
        ("/abs", r#"session: invalid session ID "/abs""#),
        (r"a\b", r#"session: invalid session ID "a\\b""#),
        ("a\0b", r#"session: invalid session ID "a\u0000b""#),
        ("x..y", r#"session: invalid session ID "x..y""#),
        (".", r#"session: invalid session ID ".""#),
        ("", r#"session: invalid session ID """#),
    ];
    for (id, expected) in cases {
        let err = SessionId::parse(id).unwrap_err();
        assert!(matches!(err, SessionError::InvalidId(_)));
        assert_eq!(err.to_string(), expected);
    }
}

#[test]
fn the_index_name_is_not_a_session_red() {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path().join("sessions")).unwrap();
    let err = store.session_path(&SessionId::parse("index").unwrap()).unwrap_err();
    assert_eq!(err.to_string(), r#"session: invalid session ID "index""#);
}
