//! Envelope detection (spec `results-and-artifacts.md` §2): deciding whether one tool-result
//! text is an `odek.tool-result/v1` envelope, plain text, or a malformed envelope, and the
//! 64-ref cap. Validation of the refs themselves lives in `artifact_ref`; merging several items
//! in `tool_result`. Start at [`probe_envelope`].
//!
//! The plain-text path is the hot path: anything whose trimmed text does not start with `{` is
//! decided without touching a JSON parser.

use std::borrow::Cow;
use std::fmt;

use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use crate::error::ContractError;

/// Schema identifier of a tool-result envelope.
pub const TOOL_RESULT_SCHEMA: &str = "odek.tool-result/v1";

/// Schema identifier of an artifact ref.
pub const ARTIFACT_REF_SCHEMA: &str = "odek.artifact-ref/v1";

/// Most artifact refs one envelope (or one merged multi-item result) may carry.
pub const MAX_ARTIFACT_REFS: usize = 64;

/// An artifact ref as decoded from the wire, before any validation. Absent string fields and
/// JSON `null` decode to `""`, which means "absent"; `size_bytes` keeps absent (`None`) apart
/// from `0`. Unknown fields are ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RawArtifactRef {
    #[serde(deserialize_with = "null_as_empty", skip_serializing_if = "String::is_empty")]
    pub schema: String,
    #[serde(deserialize_with = "null_as_empty", skip_serializing_if = "String::is_empty")]
    pub id: String,
    #[serde(deserialize_with = "null_as_empty", skip_serializing_if = "String::is_empty")]
    pub uri: String,
    #[serde(deserialize_with = "null_as_empty", skip_serializing_if = "String::is_empty")]
    pub media_type: String,
    #[serde(deserialize_with = "null_as_empty", skip_serializing_if = "String::is_empty")]
    pub sha256: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<i64>,
    #[serde(deserialize_with = "null_as_empty", skip_serializing_if = "String::is_empty")]
    pub summary: String,
}

/// A detected envelope: its text (not yet sanitised) and at most [`MAX_ARTIFACT_REFS`]
/// unvalidated refs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Envelope {
    pub text: String,
    pub artifacts: Vec<RawArtifactRef>,
}

/// Spec §2 steps 1-5. `Ok(None)`: plain text, to be used verbatim. `Ok(Some)`: an envelope with
/// at most 64 refs. `Err`: the text claims the schema but does not decode
/// (`malformed odek.tool-result/v1 envelope: <decode error>`), or carries more than 64 refs
/// (`odek.tool-result/v1 envelope carries <n> artifacts; the cap is 64`).
pub fn probe_envelope(text: &str) -> Result<Option<Envelope>, ContractError> {
    let Some(candidate) = envelope_candidate(text) else {
        return Ok(None);
    };
    if !claims_tool_result_schema(candidate) {
        return Ok(None);
    }
    let wire: WireEnvelope =
        serde_json::from_str(candidate).map_err(|err| ContractError::MalformedEnvelope { detail: err.to_string() })?;
    let BoundedRefs { refs, total } = wire.artifacts.unwrap_or_default();
    check_artifact_count(total)?;
    Ok(Some(Envelope { text: wire.text.unwrap_or_default(), artifacts: refs }))
}

/// The §2 step 5 cap, shared with multi-item merging (§3), which checks the running total.
pub(crate) fn check_artifact_count(count: usize) -> Result<(), ContractError> {
    if count > MAX_ARTIFACT_REFS {
        return Err(ContractError::TooManyArtifacts { count });
    }
    Ok(())
}

/// Steps 1-2: trim, strip one BOM, and require a leading `{`.
fn envelope_candidate(text: &str) -> Option<&str> {
    let trimmed = text.trim();
    let trimmed = trimmed.strip_prefix('\u{feff}').unwrap_or(trimmed);
    trimmed.starts_with('{').then_some(trimmed)
}

/// Step 3: decode only `schema`; anything that is not JSON, or whose `schema` is not exactly
/// the tool-result identifier, is plain text.
fn claims_tool_result_schema(candidate: &str) -> bool {
    #[derive(Deserialize)]
    struct SchemaProbe<'a> {
        #[serde(borrow, default)]
        schema: Option<Cow<'a, str>>,
    }
    matches!(
        serde_json::from_str::<SchemaProbe<'_>>(candidate),
        Ok(SchemaProbe { schema: Some(schema) }) if schema == TOOL_RESULT_SCHEMA
    )
}

/// Step 4's shape. `null` is treated like an absent field. `schema` was checked in step 3 and
/// is ignored here like every unknown field.
#[derive(Deserialize)]
struct WireEnvelope {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    artifacts: Option<BoundedRefs>,
}

/// The `artifacts` array decoded with bounded memory: every element is decoded (so a malformed
/// ref anywhere is still a decode error, as in step 4) but only the first
/// [`MAX_ARTIFACT_REFS`] are kept; `total` counts them all for the step 5 message. Without the
/// bound, a 64 MiB response of `{},{},…` would expand to gigabytes of empty refs.
#[derive(Default)]
struct BoundedRefs {
    refs: Vec<RawArtifactRef>,
    total: usize,
}

impl<'de> Deserialize<'de> for BoundedRefs {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct BoundedRefsVisitor;

        impl<'de> Visitor<'de> for BoundedRefsVisitor {
            type Value = BoundedRefs;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sequence of artifact refs")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<BoundedRefs, A::Error> {
                let mut bounded = BoundedRefs::default();
                while let Some(artifact) = seq.next_element::<RawArtifactRef>()? {
                    if bounded.refs.len() < MAX_ARTIFACT_REFS {
                        bounded.refs.push(artifact);
                    }
                    bounded.total += 1;
                }
                Ok(bounded)
            }
        }

        deserializer.deserialize_seq(BoundedRefsVisitor)
    }
}

fn null_as_empty<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_not_probed() {
        assert_eq!(probe_envelope("").unwrap(), None);
        assert_eq!(probe_envelope("   \n").unwrap(), None);
        assert_eq!(probe_envelope("hello").unwrap(), None);
        assert_eq!(probe_envelope(r#"note: {"schema":"odek.tool-result/v1"}"#).unwrap(), None);
    }

    #[test]
    fn json_without_the_schema_is_plain() {
        for text in [
            "{",
            "{not json}",
            r#"{"schema":"odek.event/v1","text":"x"}"#,
            r#"{"text":"x"}"#,
            r#"{"schema":5}"#,
            r#"{"schema":null}"#,
            r#"{"schema":"odek.tool-result/v1 "}"#,
            r#"{"schema":"odek.tool-result/v1"} trailing"#,
        ] {
            assert_eq!(probe_envelope(text).unwrap(), None, "{text}");
        }
    }

    #[test]
    fn envelope_with_whitespace_bom_and_escapes() {
        let text = " \n\u{feff}{\"schema\":\"odek.tool-result\\/v1\",\"text\":\"hi\",\"extra\":1}\n";
        let envelope = probe_envelope(text).unwrap().unwrap();
        assert_eq!(envelope.text, "hi");
        assert!(envelope.artifacts.is_empty());
    }

    #[test]
    fn text_and_artifacts_are_optional() {
        let envelope = probe_envelope(r#"{"schema":"odek.tool-result/v1"}"#).unwrap().unwrap();
        assert_eq!(envelope, Envelope::default());
        let envelope =
            probe_envelope(r#"{"schema":"odek.tool-result/v1","text":null,"artifacts":null}"#).unwrap().unwrap();
        assert_eq!(envelope, Envelope::default());
    }

    #[test]
    fn malformed_envelope_is_an_error() {
        let err =
            probe_envelope(r#"{"schema":"odek.tool-result/v1","artifacts":"malformed"}"#).unwrap_err().to_string();
        assert!(err.starts_with("malformed odek.tool-result/v1 envelope: invalid type: string \"malformed\""), "{err}");
    }

    #[test]
    fn raw_ref_fields_decode_with_unknown_fields_ignored() {
        let text = r#"{"schema":"odek.tool-result/v1","artifacts":[{"schema":"odek.artifact-ref/v1","id":"a","uri":"file:///x","media_type":"text/plain","sha256":null,"size_bytes":0,"summary":"s","future":{"x":1}}]}"#;
        let envelope = probe_envelope(text).unwrap().unwrap();
        let artifact = &envelope.artifacts[0];
        assert_eq!(artifact.id, "a");
        assert_eq!(artifact.sha256, "");
        assert_eq!(artifact.size_bytes, Some(0));
        assert_eq!(artifact.summary, "s");
    }

    #[test]
    fn sixty_five_refs_are_counted_but_not_kept() {
        let refs = vec!["{}"; 65].join(",");
        let text = format!(r#"{{"schema":"odek.tool-result/v1","artifacts":[{refs}]}}"#);
        assert_eq!(
            probe_envelope(&text).unwrap_err().to_string(),
            "odek.tool-result/v1 envelope carries 65 artifacts; the cap is 64"
        );
        let refs = vec!["{}"; 64].join(",");
        let text = format!(r#"{{"schema":"odek.tool-result/v1","artifacts":[{refs}]}}"#);
        assert_eq!(probe_envelope(&text).unwrap().unwrap().artifacts.len(), 64);
    }
}
