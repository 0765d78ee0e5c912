//! Typed tools: the arguments are a Rust type (serde), and the `inputSchema` odek and the model
//! see is derived from that same type (schemars), so the two cannot drift apart.
//!
//! Unknown argument members are tolerated, as the contract's additive rule requires: even a type
//! with `#[serde(deny_unknown_fields)]` (whose schema says `"additionalProperties": false`) gets
//! only the members its schema lists. Start at [`Server::typed_tool`](crate::Server::typed_tool)
//! or [`typed_handler`].

use std::future::Future;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::Error;
use crate::context::{CallContext, ToolHandler, ToolSet, tool_handler};
use crate::tools::{ToolDef, ToolResponse, arguments};

/// The `inputSchema` for arguments of type `A`: the JSON Schema schemars derives (doc comments
/// become descriptions), without the `$schema` and `title` members a tool list has no use for.
/// A type that is not an object (a unit struct, say) gives `{"type":"object"}`.
pub fn input_schema_for<A: JsonSchema>() -> Value {
    let mut schema = schemars::schema_for!(A).to_value();
    if let Value::Object(members) = &mut schema {
        members.remove("$schema");
        members.remove("title");
        if members.get("type") != Some(&Value::from("object")) && !members.contains_key("properties") {
            return serde_json::json!({"type": "object"});
        }
    }
    schema
}

/// A tool definition whose schema comes from `A`.
pub fn typed_def<A: JsonSchema>(name: impl Into<String>, description: impl Into<String>) -> ToolDef {
    ToolDef::new(name, description, input_schema_for::<A>())
}

/// The top-level property names a schema lists when it forbids others (`additionalProperties:
/// false`); `None` when it accepts any member.
fn closed_properties(schema: &Value) -> Option<Arc<[String]>> {
    if schema.get("additionalProperties") != Some(&Value::Bool(false)) {
        return None;
    }
    let mut names: Vec<String> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default();
    names.sort();
    Some(names.into())
}

/// Leaves out the members `known` does not list, so a closed type still reads arguments that
/// carry extra members.
fn drop_unknown_members(arguments: Value, known: Option<&[String]>) -> Value {
    match (arguments, known) {
        (Value::Object(members), Some(known)) => {
            Value::Object(members.into_iter().filter(|(name, _)| known.contains(name)).collect::<Map<_, _>>())
        }
        (arguments, _) => arguments,
    }
}

/// Erases a handler taking typed arguments into a [`ToolHandler`]. Arguments that do not decode
/// into `A` get the isError result `invalid arguments: <reason>` without running the handler.
pub fn typed_handler<A, F, Fut>(handler: F) -> ToolHandler
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(Arc<CallContext>, A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolResponse> + Send + 'static,
{
    let known = closed_properties(&input_schema_for::<A>());
    let handler = Arc::new(handler);
    tool_handler(move |context, raw: Value| {
        let handler = Arc::clone(&handler);
        let decoded = arguments::<A>(drop_unknown_members(raw, known.as_deref()));
        async move {
            match decoded {
                Ok(typed) => handler(context, typed).await,
                Err(response) => response,
            }
        }
    })
}

/// Typed tools added at runtime. Here rather than beside the rest of [`ToolSet`], so the tool
/// set does not depend on the typed layer built on it.
impl ToolSet {
    /// [`ToolSet::add`] for a tool with typed arguments, as
    /// [`Server::typed_tool`](crate::Server::typed_tool) adds them: schema derived from `A`,
    /// unknown argument members ignored.
    pub fn add_typed<A, F, Fut>(
        &mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        handler: F,
    ) -> Result<(), Error>
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(Arc<CallContext>, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolResponse> + Send + 'static,
    {
        self.add_handler(typed_def::<A>(name, description), typed_handler(handler))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(serde::Deserialize, JsonSchema, Debug, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Closed {
        /// The file to read.
        path: String,
        #[serde(default)]
        limit: Option<u32>,
    }

    #[test]
    fn schemas_come_from_the_type_and_its_doc_comments() {
        let schema = input_schema_for::<Closed>();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["path"]["type"], "string");
        assert_eq!(schema["properties"]["path"]["description"], "The file to read.");
        assert_eq!(schema["required"], json!(["path"]));
        assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
        assert_eq!(input_schema_for::<()>(), json!({"type": "object"}));
    }

    #[test]
    fn closed_types_still_tolerate_unknown_members() {
        let known = closed_properties(&input_schema_for::<Closed>());
        assert_eq!(known.as_deref(), Some(&["limit".to_owned(), "path".to_owned()][..]));
        let arguments = drop_unknown_members(json!({"path": "/x", "extra": true}), known.as_deref());
        assert_eq!(serde_json::from_value::<Closed>(arguments).unwrap(), Closed { path: "/x".into(), limit: None });
        assert_eq!(drop_unknown_members(json!({"a": 1}), None), json!({"a": 1}));
    }
}
