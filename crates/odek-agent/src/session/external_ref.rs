//! External-state refs (spec `loop-and-sessions.md` §10.4): pointers to state kept outside the
//! session (a ticket, a branch, a bucket) that odek stores and transports but never dereferences.
//! This module owns their validation, the `--external-ref` spec syntax and deduplication; adding
//! refs to a session is [`super::Session::add_external_refs`].

use odek_contract::redaction::redact;
use serde::{Deserialize, Serialize};

use super::{ExternalRefError, ExternalRefSpecError, ExternalRefSpecProblem};

/// Longest `kind`, in bytes.
pub const MAX_KIND_BYTES: usize = 64;
/// Longest `uri`, in bytes.
pub const MAX_URI_BYTES: usize = 2048;
/// Longest `created_by`, in bytes.
pub const MAX_CREATED_BY_BYTES: usize = 128;
/// `created_by` of refs given on the command line without one.
const CLI_CREATED_BY: &str = "cli";

/// One external-state ref as the session file stores it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExternalRef {
    pub kind: String,
    pub uri: String,
    pub created_by: String,
    /// A hint for consumers; odek itself never writes through a ref.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
    /// RFC 3339 UTC. Empty until the ref is added to a session, which stamps it.
    #[serde(default)]
    pub created_at: String,
}

impl ExternalRef {
    pub fn new(kind: impl Into<String>, uri: impl Into<String>, created_by: impl Into<String>) -> ExternalRef {
        ExternalRef {
            kind: kind.into(),
            uri: uri.into(),
            created_by: created_by.into(),
            read_only: false,
            created_at: String::new(),
        }
    }
}

/// Checks the §10.4 field rules, in field order: kind length, kind characters, uri length, uri
/// control characters, created_by length.
pub fn validate_external_ref(external_ref: &ExternalRef) -> Result<(), ExternalRefError> {
    let kind = &external_ref.kind;
    if kind.is_empty() || kind.len() > MAX_KIND_BYTES {
        return Err(ExternalRefError::KindLength(kind.len()));
    }
    if !kind.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-') {
        return Err(ExternalRefError::KindCharacters(kind.clone()));
    }
    let uri = &external_ref.uri;
    if uri.is_empty() || uri.len() > MAX_URI_BYTES {
        return Err(ExternalRefError::UriLength(uri.len()));
    }
    if let Some(control) = uri.chars().find(|c| c.is_control()) {
        return Err(ExternalRefError::UriControlCharacter(control));
    }
    let created_by = &external_ref.created_by;
    if created_by.is_empty() || created_by.len() > MAX_CREATED_BY_BYTES {
        return Err(ExternalRefError::CreatedByLength(created_by.len()));
    }
    Ok(())
}

/// Whether two refs are the same for deduplication: equal `kind` and `created_by`, and URIs
/// equal either as written or once redacted (a ref re-added after its token rotated, or
/// compared with its already-redacted stored form, is still the same ref).
pub fn is_same_external_ref(a: &ExternalRef, b: &ExternalRef) -> bool {
    a.kind == b.kind && a.created_by == b.created_by && (a.uri == b.uri || redact(&a.uri) == redact(&b.uri))
}

/// Parses one `--external-ref <spec>` into a validated ref with `created_by` `cli` unless the
/// long form says otherwise. `created_at` is left empty for the session to stamp.
///
/// The long form (comma-separated `key=value` pairs) applies only when the spec contains `,` and
/// its first pair's key is `kind`, `uri`, `created_by` or `read_only`; anything else is the
/// `kind=uri` shorthand, split at the first `=` so the URI keeps any `=` and `,`.
pub fn parse_external_ref_spec(spec: &str) -> Result<ExternalRef, ExternalRefSpecError> {
    parse_spec_fields(spec)
        .map_err(|problem| ExternalRefSpecError { spec: redact(spec).into_owned(), problem: redact_problem(problem) })
}

/// Every piece of the spec a problem quotes is redacted like the spec itself: a mistyped pair
/// may be the credential.
fn redact_problem(problem: ExternalRefSpecProblem) -> ExternalRefSpecProblem {
    let scrub = |text: String| redact(&text).into_owned();
    match problem {
        ExternalRefSpecProblem::MalformedPair(pair) => ExternalRefSpecProblem::MalformedPair(scrub(pair)),
        ExternalRefSpecProblem::ReadOnly(value) => ExternalRefSpecProblem::ReadOnly(scrub(value)),
        ExternalRefSpecProblem::UnknownKey(key) => ExternalRefSpecProblem::UnknownKey(scrub(key)),
        ExternalRefSpecProblem::Invalid(ExternalRefError::KindCharacters(kind)) => {
            ExternalRefSpecProblem::Invalid(ExternalRefError::KindCharacters(scrub(kind)))
        }
        other => other,
    }
}

fn parse_spec_fields(spec: &str) -> Result<ExternalRef, ExternalRefSpecProblem> {
    let external_ref = if is_long_form_spec(spec) { parse_long_form(spec)? } else { parse_shorthand(spec)? };
    validate_external_ref(&external_ref)?;
    Ok(external_ref)
}

const SPEC_KEYS: [&str; 4] = ["kind", "uri", "created_by", "read_only"];

fn is_long_form_spec(spec: &str) -> bool {
    let Some((first_pair, _)) = spec.split_once(',') else {
        return false;
    };
    let key = first_pair.split_once('=').map_or(first_pair, |(key, _)| key);
    SPEC_KEYS.contains(&key)
}

fn parse_long_form(spec: &str) -> Result<ExternalRef, ExternalRefSpecProblem> {
    let mut external_ref = ExternalRef::new("", "", CLI_CREATED_BY);
    for pair in spec.split(',') {
        let (key, value) =
            pair.split_once('=').ok_or_else(|| ExternalRefSpecProblem::MalformedPair(pair.to_owned()))?;
        match key {
            "kind" => value.clone_into(&mut external_ref.kind),
            "uri" => value.clone_into(&mut external_ref.uri),
            "created_by" => value.clone_into(&mut external_ref.created_by),
            "read_only" => {
                external_ref.read_only =
                    parse_read_only(value).ok_or_else(|| ExternalRefSpecProblem::ReadOnly(value.to_owned()))?;
            }
            unknown => return Err(ExternalRefSpecProblem::UnknownKey(unknown.to_owned())),
        }
    }
    Ok(external_ref)
}

fn parse_shorthand(spec: &str) -> Result<ExternalRef, ExternalRefSpecProblem> {
    let (kind, uri) = spec.split_once('=').ok_or(ExternalRefSpecProblem::NoForm)?;
    Ok(ExternalRef::new(kind, uri, CLI_CREATED_BY))
}

/// The boolean spellings `read_only` accepts (Go's `strconv.ParseBool` set).
fn parse_read_only(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_spellings() {
        for yes in ["1", "t", "T", "TRUE", "true", "True"] {
            assert_eq!(parse_read_only(yes), Some(true));
        }
        for no in ["0", "f", "F", "FALSE", "false", "False"] {
            assert_eq!(parse_read_only(no), Some(false));
        }
        for bad in ["", "yes", "tRUE", " true"] {
            assert_eq!(parse_read_only(bad), None);
        }
    }

    /// Found by the `external_ref` fuzz target: the spec was redacted in the message, but the
    /// problem quoted the offending key or value verbatim.
    #[test]
    fn secret_in_a_mistyped_spec_is_redacted_red() {
        let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
        for spec in [
            format!("kind=a,{token}=1"),
            format!("kind=a,uri=https://x,read_only={token}"),
            format!("{token}=https://x"),
            format!("kind=a,{token}"),
        ] {
            let message = parse_external_ref_spec(&spec).unwrap_err().to_string();
            assert!(!message.contains(token), "{message}");
            assert!(message.contains("[REDACTED]"), "{message}");
        }
    }

    #[test]
    fn long_form_needs_a_comma_and_a_known_first_key() {
        assert!(is_long_form_spec("kind=a,uri=b"));
        assert!(is_long_form_spec("read_only=true,kind=a"));
        assert!(is_long_form_spec("kind,uri=b"));
        assert!(!is_long_form_spec("kind=a"));
        assert!(!is_long_form_spec("issue=https://x/?a=1,b=2"));
    }
}
