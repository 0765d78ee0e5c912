//! Artifact-ref validation: the 20 ordered rules of `results-and-artifacts.md` §4 with their
//! exact texts, root handling, and one `_red` regression test per attack.

mod support;

use std::fs;
use std::os::unix::fs::symlink;
use std::time::Instant;

use odek_contract::artifact_ref::{
    ArtifactRef, ArtifactRoots, MAX_ARTIFACT_BYTES, check_unique_ids, validate_artifact_ref,
};
use odek_contract::error::ContractError;
use support::{Fixture, artifact_ref, file_uri, raw_ref, rejected, rejection, sha256_hex};

const ABC_SHA256: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

#[test]
fn valid_ref_is_accepted_with_resolved_path_and_size() {
    let fixture = Fixture::new();
    let path = fixture.write("run-1/report.txt", b"abc");
    let raw = odek_contract::envelope::RawArtifactRef {
        size_bytes: Some(3),
        sha256: ABC_SHA256.to_owned(),
        summary: "the report".to_owned(),
        ..raw_ref("report-1", &file_uri(&path))
    };
    let artifact = validate_artifact_ref(&raw, &fixture.roots()).unwrap();
    assert_eq!(
        artifact,
        ArtifactRef {
            id: "report-1".to_owned(),
            media_type: "text/plain".to_owned(),
            size_bytes: Some(3),
            sha256: ABC_SHA256.to_owned(),
            summary: "the report".to_owned(),
            resolved_path: path,
            file_size: 3,
        }
    );
}

#[test]
fn optional_fields_absent_is_accepted() {
    let fixture = Fixture::new();
    let path = fixture.write("a.txt", b"hello");
    let artifact = validate_artifact_ref(&raw_ref("a", &file_uri(&path)), &fixture.roots()).unwrap();
    assert_eq!(artifact.size_bytes, None);
    assert_eq!(artifact.sha256, "");
    assert_eq!(artifact.file_size, 5);
}

#[test]
fn zero_size_declared_is_verified_not_absent() {
    let fixture = Fixture::new();
    let empty = fixture.write("empty", b"");
    let raw = odek_contract::envelope::RawArtifactRef {
        size_bytes: Some(0),
        sha256: sha256_hex(b""),
        ..raw_ref("e", &file_uri(&empty))
    };
    assert_eq!(validate_artifact_ref(&raw, &fixture.roots()).unwrap().size_bytes, Some(0));
    let full = fixture.write("full", b"x");
    let raw = odek_contract::envelope::RawArtifactRef { size_bytes: Some(0), ..raw_ref("f", &file_uri(&full)) };
    assert_eq!(
        rejection(&raw, &fixture.roots()),
        rejected(r#"artifact "f" size mismatch: ref declares 0 bytes, file has 1"#)
    );
}

#[test]
fn rule_1_schema() {
    let fixture = Fixture::new();
    let mut raw = raw_ref("a", "file:///x");
    raw.schema = "odek.event/v1".to_owned();
    assert_eq!(
        rejection(&raw, &fixture.roots()),
        rejected(r#"artifact schema "odek.event/v1" does not match "odek.artifact-ref/v1""#)
    );
    raw.schema = String::new();
    assert_eq!(
        rejection(&raw, &fixture.roots()),
        rejected(r#"artifact schema "" does not match "odek.artifact-ref/v1""#)
    );
}

#[test]
fn rule_2_id() {
    let fixture = Fixture::new();
    assert_eq!(
        rejection(&raw_ref("", "file:///x"), &fixture.roots()),
        rejected("artifact ref is missing required field id")
    );
}

#[test]
fn rule_3_uri() {
    let fixture = Fixture::new();
    assert_eq!(
        rejection(&raw_ref("a", ""), &fixture.roots()),
        rejected(r#"artifact "a" is missing required field uri"#)
    );
}

#[test]
fn rule_4_media_type() {
    let fixture = Fixture::new();
    let mut raw = raw_ref("a", "file:///x");
    raw.media_type = String::new();
    assert_eq!(rejection(&raw, &fixture.roots()), rejected(r#"artifact "a" is missing required field media_type"#));
}

#[test]
fn no_roots_configured_red() {
    // Fail closed: a real, readable file is still rejected when the server has no roots.
    let fixture = Fixture::new();
    let path = fixture.write("a.txt", b"abc");
    let expected = rejected(r#"artifact "a" rejected: no artifact roots configured for this server"#);
    let none = ArtifactRoots::new(Vec::<String>::new());
    assert!(!none.has_configured_root());
    assert_eq!(rejection(&raw_ref("a", &file_uri(&path)), &none), expected);
    // Rule 5 comes before the uri is even parsed.
    assert_eq!(rejection(&raw_ref("a", "https://evil.example/x"), &none), expected);
}

#[test]
fn blank_root_is_not_cwd_red() {
    // A blank or whitespace-only root must not turn into the current directory.
    let cwd_file = std::env::current_dir().unwrap().join("Cargo.toml");
    let raw = raw_ref("a", &file_uri(&cwd_file));
    let blank = ArtifactRoots::new(["", "   ", "\t\n"]);
    assert!(!blank.has_configured_root());
    assert_eq!(
        rejection(&raw, &blank),
        rejected(r#"artifact "a" rejected: no artifact roots configured for this server"#)
    );
    let fixture = Fixture::new();
    let mixed = ArtifactRoots::new(["", " ", fixture.root.to_str().unwrap()]);
    assert_eq!(rejection(&raw, &mixed), rejected(r#"artifact "a" resolves outside every configured artifact root"#));
}

#[test]
fn relative_root_is_made_absolute_against_cwd() {
    let cwd_file = fs::canonicalize("Cargo.toml").unwrap();
    let artifact = validate_artifact_ref(&raw_ref("a", &file_uri(&cwd_file)), &ArtifactRoots::new(["."])).unwrap();
    assert_eq!(artifact.resolved_path, cwd_file);
}

#[test]
fn rule_6_unparseable_uri() {
    let fixture = Fixture::new();
    let roots = fixture.roots();
    assert_eq!(
        rejection(&raw_ref("a", "file:///data/%zz"), &roots),
        rejected(r#"artifact "a" has an unparseable uri: invalid URL escape "%zz""#)
    );
    assert_eq!(
        rejection(&raw_ref("a", "file:///data/a\nb"), &roots),
        rejected(r#"artifact "a" has an unparseable uri: invalid control character in URL"#)
    );
    assert_eq!(
        rejection(&raw_ref("a", "://x"), &roots),
        rejected(r#"artifact "a" has an unparseable uri: missing protocol scheme"#)
    );
}

#[test]
fn non_file_scheme_red() {
    let fixture = Fixture::new();
    let roots = fixture.roots();
    for (uri, scheme) in [
        ("https://example.com/x", "https"),
        ("HTTP://example.com/x", "http"),
        ("s3://bucket/key", "s3"),
        ("data:text/plain,hello", "data"),
        ("/etc/passwd", ""),
        ("relative/path", ""),
    ] {
        assert_eq!(
            rejection(&raw_ref("a", uri), &roots),
            rejected(&format!(r#"artifact "a" uses uri scheme "{scheme}"; only file:// is accepted"#)),
            "{uri}"
        );
    }
}

#[test]
fn file_scheme_is_case_insensitive() {
    let fixture = Fixture::new();
    let path = fixture.write("a.txt", b"abc");
    let uri = format!("FiLe://{}", path.to_str().unwrap());
    assert!(validate_artifact_ref(&raw_ref("a", &uri), &fixture.roots()).is_ok());
}

const NOT_PLAIN: &str = r#"artifact "a" uri must be a plain file:// path (no host, userinfo, query, or fragment)"#;

#[test]
fn localhost_host_red() {
    let fixture = Fixture::new();
    let path = fixture.write("a.txt", b"abc");
    let path = path.to_str().unwrap();
    for uri in [
        format!("file://localhost{path}"),
        format!("file://LOCALHOST{path}"),
        format!("file://127.0.0.1{path}"),
        format!("file://evil.example{path}"),
        format!("file://localhost:8080{path}"),
        format!("file://[::1]{path}"),
    ] {
        assert_eq!(rejection(&raw_ref("a", &uri), &fixture.roots()), rejected(NOT_PLAIN), "{uri}");
    }
}

#[test]
fn userinfo_red() {
    let fixture = Fixture::new();
    let path = fixture.write("a.txt", b"abc");
    let path = path.to_str().unwrap();
    for uri in [format!("file://user@{path}"), format!("file://user:pw@localhost{path}")] {
        assert_eq!(rejection(&raw_ref("a", &uri), &fixture.roots()), rejected(NOT_PLAIN), "{uri}");
    }
}

#[test]
fn query_red() {
    let fixture = Fixture::new();
    let path = fixture.write("a.txt", b"abc");
    let path = path.to_str().unwrap();
    for uri in [format!("file://{path}?"), format!("file://{path}?x=1"), format!("file://{path}?#")] {
        assert_eq!(rejection(&raw_ref("a", &uri), &fixture.roots()), rejected(NOT_PLAIN), "{uri}");
    }
}

#[test]
fn fragment_red() {
    let fixture = Fixture::new();
    let path = fixture.write("a.txt", b"abc");
    let path = path.to_str().unwrap();
    for uri in [format!("file://{path}#"), format!("file://{path}#section")] {
        assert_eq!(rejection(&raw_ref("a", &uri), &fixture.roots()), rejected(NOT_PLAIN), "{uri}");
    }
}

#[test]
fn opaque_file_uri_red() {
    let fixture = Fixture::new();
    for uri in ["file:rel/x", "file:a.txt", "file:\\\\host\\share\\x", "file:.."] {
        assert_eq!(rejection(&raw_ref("a", uri), &fixture.roots()), rejected(NOT_PLAIN), "{uri}");
    }
}

#[test]
fn rule_9_path_not_absolute() {
    let fixture = Fixture::new();
    for uri in ["file://", "file:"] {
        assert_eq!(
            rejection(&raw_ref("a", uri), &fixture.roots()),
            rejected(r#"artifact "a" path "" is not absolute"#),
            "{uri}"
        );
    }
}

#[test]
fn dotdot_traversal_red() {
    let fixture = Fixture::new();
    let secret = fixture.write_outside("secret.txt", b"secret");
    let root = fixture.root.to_str().unwrap();
    let traversal = format!("{root}/../outside/secret.txt");
    assert!(fs::canonicalize(&traversal).unwrap() == secret, "the traversal really reaches the file");
    assert_eq!(
        rejection(&raw_ref("a", &format!("file://{traversal}")), &fixture.roots()),
        rejected(&format!(r#"artifact "a" path "{traversal}" is not clean (contains .., //, or . elements)"#))
    );
}

#[test]
fn percent_encoded_traversal_red() {
    let fixture = Fixture::new();
    fixture.write_outside("secret.txt", b"secret");
    let root = fixture.root.to_str().unwrap();
    for encoded in ["%2e%2e", "%2E%2E", "%2e.", ".%2E"] {
        let uri = format!("file://{root}/{encoded}/outside/secret.txt");
        assert_eq!(
            rejection(&raw_ref("a", &uri), &fixture.roots()),
            rejected(&format!(
                r#"artifact "a" path "{root}/../outside/secret.txt" is not clean (contains .., //, or . elements)"#
            )),
            "{uri}"
        );
    }
    // An encoded slash cannot smuggle a `..` segment or an empty one either.
    let uri = format!("file://{root}%2F..%2Foutside/secret.txt");
    assert!(rejection(&raw_ref("a", &uri), &fixture.roots()).contains("is not clean"));
    let uri = format!("file://{root}/%2Fa.txt");
    assert!(rejection(&raw_ref("a", &uri), &fixture.roots()).contains("is not clean"));
}

#[test]
fn unclean_paths_red() {
    let fixture = Fixture::new();
    fixture.write("a.txt", b"abc");
    let root = fixture.root.to_str().unwrap();
    for path in [format!("{root}/./a.txt"), format!("{root}//a.txt"), format!("{root}/"), format!("/{root}/a.txt")] {
        assert_eq!(
            rejection(&raw_ref("a", &format!("file://{path}")), &fixture.roots()),
            rejected(&format!(r#"artifact "a" path "{path}" is not clean (contains .., //, or . elements)"#)),
            "{path}"
        );
    }
}

#[test]
fn percent_encoded_names_are_decoded() {
    let fixture = Fixture::new();
    let path = fixture.write("a b#c.txt", b"abc");
    let uri = format!("file://{}/a%20b%23c.txt", fixture.root.to_str().unwrap());
    assert_eq!(validate_artifact_ref(&raw_ref("a", &uri), &fixture.roots()).unwrap().resolved_path, path);
}

#[test]
fn non_utf8_file_names_are_supported() {
    use std::os::unix::ffi::OsStrExt;
    let fixture = Fixture::new();
    let path = fixture.root.join(std::ffi::OsStr::from_bytes(b"caf\xe9.txt"));
    fs::write(&path, b"abc").unwrap();
    let uri = format!("file://{}/caf%E9.txt", fixture.root.to_str().unwrap());
    assert_eq!(validate_artifact_ref(&raw_ref("a", &uri), &fixture.roots()).unwrap().resolved_path, path);
}

#[test]
fn rule_11_missing_file() {
    let fixture = Fixture::new();
    let missing = fixture.root.join("missing.txt");
    assert_eq!(
        rejection(&raw_ref("a", &file_uri(&missing)), &fixture.roots()),
        rejected(
            r#"artifact "a" file is not resolvable (missing or dangling symlink): No such file or directory (os error 2)"#
        )
    );
}

#[test]
fn dangling_symlink_red() {
    let fixture = Fixture::new();
    let link = fixture.root.join("dangling");
    symlink(fixture.outside.join("does-not-exist"), &link).unwrap();
    assert_eq!(
        rejection(&raw_ref("a", &file_uri(&link)), &fixture.roots()),
        rejected(
            r#"artifact "a" file is not resolvable (missing or dangling symlink): No such file or directory (os error 2)"#
        )
    );
}

const OUTSIDE: &str = r#"artifact "a" resolves outside every configured artifact root"#;

#[test]
fn outside_every_root() {
    let fixture = Fixture::new();
    let outside = fixture.write_outside("x.txt", b"abc");
    assert_eq!(rejection(&raw_ref("a", &file_uri(&outside)), &fixture.roots()), rejected(OUTSIDE));
    assert_eq!(rejection(&raw_ref("a", "file:///etc/passwd"), &fixture.roots()), rejected(OUTSIDE));
}

#[test]
fn symlink_escape_red() {
    let fixture = Fixture::new();
    let secret = fixture.write_outside("secret.txt", b"secret");
    let link = fixture.root.join("innocent.txt");
    symlink(&secret, &link).unwrap();
    assert_eq!(rejection(&raw_ref("a", &file_uri(&link)), &fixture.roots()), rejected(OUTSIDE));
    // A symlinked directory inside the root pointing out is no better.
    let dir_link = fixture.root.join("dir");
    symlink(&fixture.outside, &dir_link).unwrap();
    assert_eq!(rejection(&raw_ref("a", &file_uri(&dir_link.join("secret.txt"))), &fixture.roots()), rejected(OUTSIDE));
}

#[test]
fn symlink_inside_root_is_followed() {
    let fixture = Fixture::new();
    let target = fixture.write("real/data.txt", b"abc");
    let link = fixture.root.join("alias.txt");
    symlink(&target, &link).unwrap();
    let artifact = validate_artifact_ref(&raw_ref("a", &file_uri(&link)), &fixture.roots()).unwrap();
    assert_eq!(artifact.resolved_path, target);
}

#[test]
fn root_prefix_sibling_red() {
    // `/x/root` must not contain `/x/rootsibling/…` (string-prefix containment would).
    let fixture = Fixture::new();
    let sibling = support::write_file(&fixture.base.join("rootsibling/x.txt"), b"abc");
    assert_eq!(rejection(&raw_ref("a", &file_uri(&sibling)), &fixture.roots()), rejected(OUTSIDE));
    let sibling = support::write_file(&fixture.base.join("root-evil.txt"), b"abc");
    assert_eq!(rejection(&raw_ref("a", &file_uri(&sibling)), &fixture.roots()), rejected(OUTSIDE));
}

#[test]
fn root_is_symlink_still_confines() {
    let fixture = Fixture::new();
    let inside = fixture.write("a.txt", b"abc");
    let secret = fixture.write_outside("secret.txt", b"secret");
    let root_link = fixture.base.join("root-link");
    symlink(&fixture.root, &root_link).unwrap();
    let roots = ArtifactRoots::new([root_link.to_str().unwrap()]);
    // Through the link or by the real path: both resolve inside the resolved root.
    let via_link = validate_artifact_ref(&raw_ref("a", &file_uri(&root_link.join("a.txt"))), &roots).unwrap();
    assert_eq!(via_link.resolved_path, inside);
    assert!(validate_artifact_ref(&raw_ref("a", &file_uri(&inside)), &roots).is_ok());
    // The link's own directory is not a root.
    assert_eq!(rejection(&raw_ref("a", &file_uri(&secret)), &roots), rejected(OUTSIDE));
}

#[test]
fn roots_are_resolved_at_validation_time() {
    let fixture = Fixture::new();
    let later = fixture.base.join("later");
    let roots = ArtifactRoots::new([later.to_str().unwrap()]);
    let other = fixture.write("a.txt", b"abc");
    assert_eq!(rejection(&raw_ref("a", &file_uri(&other)), &roots), rejected(OUTSIDE));
    // Created after configuration: honoured.
    let path = support::write_file(&later.join("a.txt"), b"abc");
    assert!(validate_artifact_ref(&raw_ref("a", &file_uri(&path)), &roots).is_ok());
}

#[test]
fn unresolvable_roots_are_skipped() {
    let fixture = Fixture::new();
    let path = fixture.write("a.txt", b"abc");
    let roots = ArtifactRoots::new(["/nonexistent-odek-root", fixture.root.to_str().unwrap()]);
    assert!(validate_artifact_ref(&raw_ref("a", &file_uri(&path)), &roots).is_ok());
    let only_missing = ArtifactRoots::new(["/nonexistent-odek-root"]);
    assert!(only_missing.has_configured_root());
    assert_eq!(rejection(&raw_ref("a", &file_uri(&path)), &only_missing), rejected(OUTSIDE));
}

#[test]
fn rule_13_stat_error_text() {
    // Between a successful realpath and stat only a race can fail; the text is pinned here.
    let rule = ContractError::ArtifactStat {
        quoted_id: "\"a\"".to_owned(),
        detail: "Permission denied (os error 13)".to_owned(),
    };
    assert_eq!(
        ContractError::ArtifactRefRejected(Box::new(rule)).to_string(),
        rejected(r#"artifact "a": stat: Permission denied (os error 13)"#)
    );
}

#[test]
fn directory_not_regular_red() {
    let fixture = Fixture::new();
    fs::create_dir(fixture.root.join("sub")).unwrap();
    let expected = rejected(r#"artifact "a" is not a regular file"#);
    assert_eq!(rejection(&raw_ref("a", &file_uri(&fixture.root.join("sub"))), &fixture.roots()), expected);
    // The root itself is contained (it equals a root) but is no file.
    assert_eq!(rejection(&raw_ref("a", &file_uri(&fixture.root)), &fixture.roots()), expected);
}

#[test]
fn fifo_not_regular_and_never_blocks_red() {
    let fixture = Fixture::new();
    let fifo = fixture.root.join("pipe");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let raw =
        odek_contract::envelope::RawArtifactRef { sha256: ABC_SHA256.to_owned(), ..raw_ref("a", &file_uri(&fifo)) };
    assert_eq!(rejection(&raw, &fixture.roots()), rejected(r#"artifact "a" is not a regular file"#));
}

#[test]
fn oversize_file_64mib_plus_one_red() {
    let fixture = Fixture::new();
    let path = fixture.root.join("huge.bin");
    let file = fs::File::create(&path).unwrap();
    file.set_len(MAX_ARTIFACT_BYTES + 1).unwrap();
    // A digest is declared, yet the cap is enforced from stat alone: no 64 MiB read happens.
    let raw = odek_contract::envelope::RawArtifactRef {
        sha256: ABC_SHA256.to_owned(),
        size_bytes: Some(i64::try_from(MAX_ARTIFACT_BYTES + 1).unwrap()),
        ..raw_ref("a", &file_uri(&path))
    };
    let started = Instant::now();
    assert_eq!(
        rejection(&raw, &fixture.roots()),
        rejected(r#"artifact "a" is 67108865 bytes; the absolute artifact cap is 67108864 bytes"#)
    );
    assert!(started.elapsed().as_secs() < 2, "rejected before hashing");
}

#[test]
fn exactly_64mib_is_accepted_without_digest() {
    let fixture = Fixture::new();
    let path = fixture.root.join("max.bin");
    fs::File::create(&path).unwrap().set_len(MAX_ARTIFACT_BYTES).unwrap();
    let artifact = validate_artifact_ref(&raw_ref("a", &file_uri(&path)), &fixture.roots()).unwrap();
    assert_eq!(artifact.file_size, MAX_ARTIFACT_BYTES);
}

#[test]
fn negative_size_red() {
    let fixture = Fixture::new();
    let path = fixture.write("a.txt", b"abc");
    for declared in [-1, i64::MIN] {
        let raw = odek_contract::envelope::RawArtifactRef {
            size_bytes: Some(declared),
            sha256: "not-even-hex".to_owned(),
            ..raw_ref("a", &file_uri(&path))
        };
        assert_eq!(rejection(&raw, &fixture.roots()), rejected(r#"artifact "a" declares a negative size_bytes"#));
    }
}

#[test]
fn wrong_size_red() {
    let fixture = Fixture::new();
    let path = fixture.write("a.txt", b"abc");
    let raw = odek_contract::envelope::RawArtifactRef { size_bytes: Some(10), ..raw_ref("a", &file_uri(&path)) };
    assert_eq!(
        rejection(&raw, &fixture.roots()),
        rejected(r#"artifact "a" size mismatch: ref declares 10 bytes, file has 3"#)
    );
}

#[test]
fn uppercase_hash_red() {
    let fixture = Fixture::new();
    let path = fixture.write("a.txt", b"abc");
    let upper = ABC_SHA256.to_uppercase();
    for digest in [upper.as_str(), &ABC_SHA256[..63], "xyz", "sha256:ba7816bf"] {
        let raw =
            odek_contract::envelope::RawArtifactRef { sha256: digest.to_owned(), ..raw_ref("a", &file_uri(&path)) };
        assert_eq!(
            rejection(&raw, &fixture.roots()),
            rejected(&format!(r#"artifact "a" sha256 "{digest}" is not a lowercase hex SHA-256 digest"#))
        );
    }
}

#[test]
fn wrong_hash_red() {
    let fixture = Fixture::new();
    let path = fixture.write("a.txt", b"abc");
    let raw = odek_contract::envelope::RawArtifactRef {
        sha256: sha256_hex(b"something else"),
        ..raw_ref("a", &file_uri(&path))
    };
    let declared = &raw.sha256[..12];
    assert_eq!(
        rejection(&raw, &fixture.roots()),
        rejected(&format!(
            "artifact \"a\" sha256 mismatch: ref declares {declared}\u{2026}, file hashes to ba7816bf8f01\u{2026}"
        ))
    );
}

#[test]
fn unreadable_file_without_digest_is_accepted_but_hashing_it_fails() {
    use std::os::unix::fs::PermissionsExt;
    let fixture = Fixture::new();
    let path = fixture.write("locked.txt", b"abc");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o000)).unwrap();
    if fs::File::open(&path).is_ok() {
        return; // privileged (root) processes read mode-000 files; nothing to observe.
    }
    assert!(validate_artifact_ref(&raw_ref("a", &file_uri(&path)), &fixture.roots()).is_ok());
    let raw =
        odek_contract::envelope::RawArtifactRef { sha256: ABC_SHA256.to_owned(), ..raw_ref("a", &file_uri(&path)) };
    assert!(rejection(&raw, &fixture.roots()).starts_with(r#"artifact ref rejected: artifact "a": hash: "#));
}

#[test]
fn rules_apply_in_order() {
    let fixture = Fixture::new();
    let none = ArtifactRoots::new(Vec::<String>::new());
    // Rule 1 before 2.
    let mut raw = raw_ref("", "");
    raw.schema = "x".to_owned();
    assert!(rejection(&raw, &none).contains("artifact schema \"x\""));
    // Rule 3 before 4 and 5.
    let mut raw = raw_ref("a", "");
    raw.media_type = String::new();
    assert!(rejection(&raw, &none).ends_with("missing required field uri"));
    // Rule 7 before 8.
    assert!(rejection(&raw_ref("a", "https://h/x?q#f"), &fixture.roots()).contains("uses uri scheme \"https\""));
    // Rule 10 before 11 (missing file behind a `..`).
    let uri = format!("file://{}/../nope", fixture.root.to_str().unwrap());
    assert!(rejection(&raw_ref("a", &uri), &fixture.roots()).contains("is not clean"));
    // Rule 12 before 14: an outside directory.
    assert_eq!(rejection(&raw_ref("a", &file_uri(&fixture.outside)), &fixture.roots()), rejected(OUTSIDE));
    // Rule 17 before 18.
    let path = fixture.write("a.txt", b"abc");
    let raw = odek_contract::envelope::RawArtifactRef {
        size_bytes: Some(4),
        sha256: "BAD".to_owned(),
        ..raw_ref("a", &file_uri(&path))
    };
    assert!(rejection(&raw, &fixture.roots()).contains("size mismatch"));
}

#[test]
fn ids_are_quoted_with_json_escaping() {
    let fixture = Fixture::new();
    assert_eq!(
        rejection(&raw_ref("a\"b\n\\", ""), &fixture.roots()),
        rejected(r#"artifact "a\"b\n\\" is missing required field uri"#)
    );
}

#[test]
fn rejection_exposes_the_rule() {
    let fixture = Fixture::new();
    let err = validate_artifact_ref(&raw_ref("a", "https://x/y"), &fixture.roots()).unwrap_err();
    assert!(matches!(err.artifact_rule(), ContractError::ArtifactUriScheme { .. }));
}

fn validated(id: &str) -> ArtifactRef {
    artifact_ref(id, "/r/x", 0)
}

#[test]
fn duplicate_id_red() {
    assert!(check_unique_ids(&[validated("a"), validated("b")]).is_ok());
    assert_eq!(
        check_unique_ids(&[validated("a"), validated("b"), validated("b"), validated("a")]).unwrap_err().to_string(),
        r#"odek.tool-result/v1 envelope carries duplicate artifact id "b""#
    );
    // Ids compare exactly as sent: these are distinct.
    assert!(check_unique_ids(&[validated("a"), validated("A"), validated("a ")]).is_ok());
}
