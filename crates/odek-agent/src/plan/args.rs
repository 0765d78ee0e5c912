//! Decoding a `plan` call's arguments (spec `plan.md` §2) into a [`PlanRequest`], with the
//! spec's tolerance: bare-string steps get ids `s1`, `s2`, …; a call without `verb` holding one
//! verb-named object is unwrapped. Values are passed on raw; trimming, normalisation and
//! validation belong to [`super::state`]. Start at [`decode_plan_request`].
//!
//! Beyond the spec (models deviate in these ways too): an empty argument string is `{}`; an
//! array given as a JSON string is decoded; numeric ids and statuses are read as their text.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::PlanError;

/// The four verbs, in the order of the error text.
const VERBS: [&str; 4] = ["create", "update", "complete", "get"];

/// One step of a `create` call, as given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct StepInput {
    pub(crate) id: String,
    pub(crate) title: String,
    pub(crate) note: String,
}

/// One entry of an `update` call, as given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct UpdateInput {
    pub(crate) id: String,
    pub(crate) status: Option<String>,
    pub(crate) note: Option<String>,
}

/// A decoded call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PlanRequest {
    Create(Vec<StepInput>),
    Update(Vec<UpdateInput>),
    /// `step_id` as given (`""` when missing).
    Complete(String),
    Get,
}

/// The model's arguments as a [`PlanRequest`], or the spec's error.
pub(crate) fn decode_plan_request(arguments: &str) -> Result<PlanRequest, PlanError> {
    let text = if arguments.trim().is_empty() { "{}" } else { arguments };
    let value: Value = serde_json::from_str(text).map_err(|err| PlanError::ParseArgs(err.to_string()))?;
    let Value::Object(outer) = value else {
        return Err(PlanError::ParseArgs("arguments must be a JSON object".to_owned()));
    };
    let (verb, object) = match unwrap_verb_object(&outer) {
        Some((verb, inner)) => (verb.to_owned(), inner),
        None => (scalar_text(outer.get("verb")).unwrap_or_default(), &outer),
    };
    match verb.as_str() {
        "create" => {
            let steps =
                array_field(object, "steps").ok_or_else(|| PlanError::CreateRequiresSteps { keys: keys(object) })?;
            decode_steps(&steps).map(PlanRequest::Create)
        }
        "update" => {
            let updates = array_field(object, "updates")
                .ok_or_else(|| PlanError::UpdateRequiresUpdates { keys: keys(object) })?;
            decode_updates(&updates).map(PlanRequest::Update)
        }
        "complete" => Ok(PlanRequest::Complete(text_field(object, "step_id", "step_id")?.unwrap_or_default())),
        "get" => Ok(PlanRequest::Get),
        _ => Err(PlanError::UnknownVerb(verb)),
    }
}

/// `{"create":{…}}` without `verb` ⇒ (`create`, the inner object): only when exactly one key
/// of the object is a verb and it holds an object.
fn unwrap_verb_object(object: &Map<String, Value>) -> Option<(&'static str, &Map<String, Value>)> {
    if object.contains_key("verb") {
        return None;
    }
    let mut present = VERBS.iter().filter(|verb| object.contains_key(**verb));
    let verb = present.next()?;
    if present.next().is_some() {
        return None;
    }
    match object.get(*verb) {
        Some(Value::Object(inner)) => Some((verb, inner)),
        _ => None,
    }
}

/// The object's keys, sorted and space-separated (`received keys: [...]`).
fn keys(object: &Map<String, Value>) -> String {
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    keys.sort_unstable();
    keys.join(" ")
}

/// An array field, or an array serialised into a string; `None` when absent or anything else.
fn array_field(object: &Map<String, Value>, key: &str) -> Option<Vec<Value>> {
    match object.get(key)? {
        Value::Array(items) => Some(items.clone()),
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Array(items)) => Some(items),
            _ => None,
        },
        _ => None,
    }
}

/// A string as is, a number or boolean as its JSON text; `None` for absent, null and containers.
fn scalar_text(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

/// An optional text field: absent or null ⇒ `None`; a container ⇒ a parse error naming `path`.
fn text_field(object: &Map<String, Value>, key: &str, path: &str) -> Result<Option<String>, PlanError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(_) | Value::Object(_)) => Err(PlanError::ParseArgs(format!("{path} must be a string"))),
        value => Ok(scalar_text(value)),
    }
}

/// `steps`: objects as given, bare strings as titles with ids assigned by [`assign_bare_ids`].
fn decode_steps(items: &[Value]) -> Result<Vec<StepInput>, PlanError> {
    let mut steps = Vec::with_capacity(items.len());
    let mut bare = Vec::new();
    for (index, item) in items.iter().enumerate() {
        match item {
            Value::String(title) => {
                bare.push(index);
                steps.push(StepInput { title: title.clone(), ..StepInput::default() });
            }
            Value::Object(object) => {
                let field = |key: &str| text_field(object, key, &format!("steps[{index}].{key}"));
                steps.push(StepInput {
                    id: field("id")?.unwrap_or_default(),
                    title: field("title")?.unwrap_or_default(),
                    note: field("note")?.unwrap_or_default(),
                });
            }
            _ => return Err(PlanError::ParseArgs(format!("steps[{index}] must be a string or an object"))),
        }
    }
    assign_bare_ids(&mut steps, &bare);
    Ok(steps)
}

/// §2: bare-string steps get `s1`, `s2`, … in order, skipping ids already used in the call.
fn assign_bare_ids(steps: &mut [StepInput], bare: &[usize]) {
    let mut used: HashSet<String> = steps
        .iter()
        .enumerate()
        .filter(|(index, _)| !bare.contains(index))
        .map(|(_, step)| step.id.trim().to_owned())
        .collect();
    let mut counter = 0_usize;
    for &index in bare {
        let id = loop {
            counter += 1;
            let candidate = format!("s{counter}");
            if !used.contains(&candidate) {
                break candidate;
            }
        };
        used.insert(id.clone());
        steps[index].id = id;
    }
}

/// `updates`: every entry must be an object.
fn decode_updates(items: &[Value]) -> Result<Vec<UpdateInput>, PlanError> {
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let Value::Object(object) = item else {
                return Err(PlanError::ParseArgs(format!("updates[{index}] must be an object")));
            };
            let field = |key: &str| text_field(object, key, &format!("updates[{index}].{key}"));
            Ok(UpdateInput { id: field("id")?.unwrap_or_default(), status: field("status")?, note: field("note")? })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(id: &str, title: &str) -> StepInput {
        StepInput { id: id.into(), title: title.into(), note: String::new() }
    }

    #[test]
    fn bare_string_steps_get_ids_skipping_used_ones() {
        let request = decode_plan_request(
            r#"{"verb":"create","steps":["a",{"id":" s2 ","title":"b"},"c",{"id":"s3","title":"d"},"e"]}"#,
        )
        .unwrap();
        assert_eq!(
            request,
            PlanRequest::Create(vec![
                step("s1", "a"),
                step(" s2 ", "b"),
                step("s4", "c"),
                step("s3", "d"),
                step("s5", "e")
            ])
        );
    }

    #[test]
    fn a_lone_verb_object_is_unwrapped() {
        let request = decode_plan_request(r#"{"create":{"steps":["x"]}}"#).unwrap();
        assert_eq!(request, PlanRequest::Create(vec![step("s1", "x")]));
        let request = decode_plan_request(r#"{"complete":{"step_id":"s1"},"other":1}"#).unwrap();
        assert_eq!(request, PlanRequest::Complete("s1".into()));
        // Two verb keys, or a verb key that is not an object: no unwrapping.
        let err = decode_plan_request(r#"{"create":{"steps":["x"]},"get":{}}"#).unwrap_err();
        assert_eq!(err.to_string(), "plan: unknown verb \"\" (want create/update/complete/get)");
        let err = decode_plan_request(r#"{"create":["x"]}"#).unwrap_err();
        assert_eq!(err.to_string(), "plan: unknown verb \"\" (want create/update/complete/get)");
    }

    #[test]
    fn missing_arrays_list_the_received_keys_sorted() {
        let err = decode_plan_request(r#"{"verb":"create","title":"x","items":[]}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "plan: create requires 'steps' (array of {id,title,note}); received keys: [items title verb]"
        );
        let err = decode_plan_request(r#"{"verb":"update","id":"s1","status":"done"}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "plan: update requires 'updates' (array of {id,status,note}); received keys: [id status verb]"
        );
        let err = decode_plan_request(r#"{"update":{}}"#).unwrap_err();
        assert_eq!(err.to_string(), "plan: update requires 'updates' (array of {id,status,note}); received keys: []");
    }

    #[test]
    fn unknown_verbs_and_bad_json_use_the_specs_texts() {
        let err = decode_plan_request(r#"{"verb":"delete"}"#).unwrap_err();
        assert_eq!(err.to_string(), "plan: unknown verb \"delete\" (want create/update/complete/get)");
        let err = decode_plan_request("{not json").unwrap_err();
        assert!(err.to_string().starts_with("plan: parse args: key must be a string"), "{err}");
        let err = decode_plan_request("[1]").unwrap_err();
        assert_eq!(err.to_string(), "plan: parse args: arguments must be a JSON object");
        assert_eq!(
            decode_plan_request("").unwrap_err().to_string(),
            "plan: unknown verb \"\" (want create/update/complete/get)"
        );
    }

    #[test]
    fn updates_and_complete_decode_their_fields() {
        let request = decode_plan_request(
            r#"{"verb":"update","updates":"[{\"id\":\"s1\",\"status\":\"done\"},{\"id\":2,\"note\":\"n\"}]"}"#,
        )
        .unwrap();
        assert_eq!(
            request,
            PlanRequest::Update(vec![
                UpdateInput { id: "s1".into(), status: Some("done".into()), note: None },
                UpdateInput { id: "2".into(), status: None, note: Some("n".into()) },
            ])
        );
        assert_eq!(decode_plan_request(r#"{"verb":"complete"}"#).unwrap(), PlanRequest::Complete(String::new()));
        assert_eq!(decode_plan_request(r#"{"verb":"get"}"#).unwrap(), PlanRequest::Get);
        let err = decode_plan_request(r#"{"verb":"update","updates":["s1"]}"#).unwrap_err();
        assert_eq!(err.to_string(), "plan: parse args: updates[0] must be an object");
        let err = decode_plan_request(r#"{"verb":"create","steps":[{"id":"a","title":["x"]}]}"#).unwrap_err();
        assert_eq!(err.to_string(), "plan: parse args: steps[0].title must be a string");
    }
}
