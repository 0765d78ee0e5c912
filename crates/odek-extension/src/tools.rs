//! What a tool is and answers: its definition ([`ToolDef`]), the name rule
//! ([`validate_tool_name`], the contract's), decoding its arguments ([`arguments`]) and its
//! result ([`ToolResponse`], [`ToolResult`], [`Content`]). A leaf: handlers, the tool set and the
//! call context build on it (`context`).

use std::future::Future;
use std::pin::Pin;

use serde::de::DeserializeOwned;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::Error;
use crate::jsonrpc::RpcError;
use crate::resources::ResourceContents;

/// Longest tool name odek accepts, in bytes.
pub use odek_contract::names::MAX_NAME_BYTES as MAX_TOOL_NAME_BYTES;

/// A boxed, sendable future, the return type of type-erased handlers.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What `tools/list` says about one tool.
#[derive(Clone, Debug, Serialize)]
pub struct ToolDef {
    /// Raw tool name; see [`validate_tool_name`].
    pub name: String,
    /// Human and model-facing description; omitted from the wire when empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// JSON Schema of the arguments (normally `{"type":"object",…}`; sent as given).
    #[serde(rename = "inputSchema")]
    pub input_schema: Value,
    /// JSON Schema of the result's `structuredContent`, when the tool declares one (sent as
    /// given); odek checks every `structuredContent` the tool returns against it.
    #[serde(rename = "outputSchema", skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// What the tool does to the world, as hints for clients (MCP 2025-03-26 `annotations`);
    /// omitted when none is set.
    #[serde(skip_serializing_if = "ToolAnnotations::is_empty")]
    pub annotations: ToolAnnotations,
}

/// A tool's `annotations` (MCP 2025-03-26): hints a client uses to decide how carefully to
/// call it — `odek ext check` only calls `readOnlyHint: true` tools of a configured server and
/// never a `destructiveHint: true` one. Hints, not guarantees: a client must not trust them
/// from a server it does not trust. Each is omitted from the wire while unset.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// A human-readable title for the tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not change its environment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy or overwrite (meaningful when not read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling it again with the same arguments has no further effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool reaches an open world (the network, other systems) rather than a closed one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl ToolAnnotations {
    /// Annotations of a tool that only reads: `readOnlyHint: true`.
    pub fn read_only() -> Self {
        Self { read_only_hint: Some(true), ..Self::default() }
    }

    /// Annotations of a tool that may change or destroy things: `readOnlyHint: false`,
    /// `destructiveHint: true`.
    pub fn destructive() -> Self {
        Self { read_only_hint: Some(false), destructive_hint: Some(true), ..Self::default() }
    }

    /// Whether no hint is set (the member is then left out of `tools/list`).
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

impl ToolDef {
    /// A definition from its three parts, without an output schema or annotations.
    pub fn new(name: impl Into<String>, description: impl Into<String>, input_schema: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            input_schema,
            output_schema: None,
            annotations: ToolAnnotations::default(),
        }
    }

    /// The same definition with `annotations`.
    #[must_use]
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// The same definition declaring `output_schema` as its `outputSchema`.
    #[must_use]
    pub fn with_output_schema(mut self, output_schema: Value) -> Self {
        self.output_schema = Some(output_schema);
        self
    }
}

/// One item of a tool result's `content` array (and of a prompt's or sampling message).
#[derive(Clone, Debug, PartialEq)]
pub enum Content {
    /// `{"type":"text","text":…}`.
    Text(String),
    /// `{"type":"image","data":<base64>,"mimeType":…}`.
    Image { data: String, mime_type: String },
    /// `{"type":"audio","data":<base64>,"mimeType":…}` (MCP 2025-03-26 and later).
    Audio { data: String, mime_type: String },
    /// `{"type":"resource","resource":{"uri",…,"text"|"blob"}}`: a resource embedded whole.
    Resource(ResourceContents),
    /// Any other item, sent verbatim (it should be an object with a `type`).
    Other(Value),
}

impl Serialize for Content {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(text) => {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("type", "text")?;
                map.serialize_entry("text", text)?;
                map.end()
            }
            Self::Image { data, mime_type } | Self::Audio { data, mime_type } => {
                let mut map = serializer.serialize_map(Some(3))?;
                map.serialize_entry("type", if matches!(self, Self::Image { .. }) { "image" } else { "audio" })?;
                map.serialize_entry("data", data)?;
                map.serialize_entry("mimeType", mime_type)?;
                map.end()
            }
            Self::Resource(resource) => {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("type", "resource")?;
                map.serialize_entry("resource", resource)?;
                map.end()
            }
            Self::Other(value) => value.serialize(serializer),
        }
    }
}

/// A `tools/call` result: `{"content":[…],"isError":…}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolResult {
    pub content: Vec<Content>,
    #[serde(rename = "isError")]
    pub is_error: bool,
}

/// What a tool handler answers.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolResponse {
    /// A result, successful or with `isError: true`.
    Result(ToolResult),
    /// A JSON-RPC error instead of a result.
    RpcError(RpcError),
    /// Send nothing: the handler wrote its own reply (through
    /// [`CallContext::raw_stream`](crate::CallContext::raw_stream)) or deliberately leaves the
    /// request unanswered.
    NoReply,
}

impl ToolResponse {
    /// A successful result with one text item.
    pub fn text(text: impl Into<String>) -> Self {
        Self::items(vec![Content::Text(text.into())])
    }

    /// A successful result with these items.
    pub fn items(content: Vec<Content>) -> Self {
        Self::Result(ToolResult { content, is_error: false })
    }

    /// A result with `isError: true` and one text item: the tool ran and failed.
    pub fn error(message: impl Into<String>) -> Self {
        Self::Result(ToolResult { content: vec![Content::Text(message.into())], is_error: true })
    }

    /// A JSON-RPC error: the request itself failed.
    pub fn rpc_error(code: i64, message: impl Into<String>) -> Self {
        Self::RpcError(RpcError::new(code, message))
    }
}

impl From<ToolResult> for ToolResponse {
    fn from(result: ToolResult) -> Self {
        Self::Result(result)
    }
}

/// Checks a tool name against the contract: 1–64 bytes of `[A-Za-z0-9_-]`, no `__`. It is odek's
/// own check ([`odek_contract::names::validate_tool_name`]), so the error is the one odek reports.
pub fn validate_tool_name(name: &str) -> Result<(), Error> {
    odek_contract::names::validate_tool_name(name).map_err(Error::ToolName)
}

/// Deserialises tool arguments into `T`. `null` (no arguments) is read as `{}`, and unknown
/// members are ignored unless `T` denies them, per the contract's additive rule. On failure the
/// `Err` is ready to return: an `isError` result `invalid arguments: <reason>`.
pub fn arguments<T: DeserializeOwned>(arguments: Value) -> Result<T, ToolResponse> {
    let arguments = if arguments.is_null() { Value::Object(serde_json::Map::new()) } else { arguments };
    serde_json::from_value(arguments).map_err(|error| ToolResponse::error(format!("invalid arguments: {error}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_names_follow_the_contract() {
        assert!(validate_tool_name("echo").is_ok());
        assert!(validate_tool_name("a-b_c9").is_ok());
        assert!(validate_tool_name(&"t".repeat(64)).is_ok());
        assert_eq!(
            validate_tool_name(&"t".repeat(65)).unwrap_err().to_string(),
            format!("tool name \"{}\" exceeds 64 characters", "t".repeat(65))
        );
        assert_eq!(validate_tool_name("a__b").unwrap_err().to_string(), "tool name \"a__b\" cannot contain \"__\"");
        assert_eq!(
            validate_tool_name("read file").unwrap_err().to_string(),
            "tool name \"read file\" contains invalid character ' '"
        );
        assert_eq!(validate_tool_name("").unwrap_err().to_string(), "tool name is empty");
        assert_eq!(
            validate_tool_name("a\tb").unwrap_err().to_string(),
            "tool name \"a\\tb\" contains invalid character '\\t'"
        );
    }

    #[test]
    fn every_content_item_has_its_mcp_shape() {
        use crate::resources::ResourceBody;
        let items = [
            Content::Text("t".into()),
            Content::Image { data: "AA==".into(), mime_type: "image/png".into() },
            Content::Audio { data: "AA==".into(), mime_type: "audio/wav".into() },
            Content::Resource(ResourceContents::new("a://b", ResourceBody::text("x")).with_mime_type("text/plain")),
            Content::Other(json!({"type":"resource_link","uri":"a://b","name":"b"})),
        ];
        assert_eq!(
            serde_json::to_value(items).unwrap(),
            json!([
                {"type":"text","text":"t"},
                {"type":"image","data":"AA==","mimeType":"image/png"},
                {"type":"audio","data":"AA==","mimeType":"audio/wav"},
                {"type":"resource","resource":{"uri":"a://b","mimeType":"text/plain","text":"x"}},
                {"type":"resource_link","uri":"a://b","name":"b"}
            ])
        );
    }

    #[test]
    fn annotations_are_sent_only_when_set() {
        let plain = serde_json::to_value(ToolDef::new("t", "", json!({"type":"object"}))).unwrap();
        assert!(plain.get("annotations").is_none(), "{plain}");
        let read = serde_json::to_value(
            ToolDef::new("t", "", json!({"type":"object"})).with_annotations(ToolAnnotations::read_only()),
        )
        .unwrap();
        assert_eq!(read["annotations"], json!({"readOnlyHint": true}));
        let titled = ToolAnnotations { title: Some("Shell".into()), ..ToolAnnotations::destructive() };
        assert_eq!(
            serde_json::to_value(&titled).unwrap(),
            json!({"title": "Shell", "readOnlyHint": false, "destructiveHint": true})
        );
    }

    #[test]
    fn content_and_results_serialise_to_mcp_shapes() {
        let result = ToolResult {
            content: vec![
                Content::Text("hi".into()),
                Content::Image { data: "AA==".into(), mime_type: "image/png".into() },
                Content::Other(json!({"type":"audio","data":"","mimeType":"audio/wav"})),
            ],
            is_error: false,
        };
        assert_eq!(
            serde_json::to_value(&result).unwrap(),
            json!({"content":[
                {"type":"text","text":"hi"},
                {"type":"image","data":"AA==","mimeType":"image/png"},
                {"type":"audio","data":"","mimeType":"audio/wav"}
            ],"isError":false})
        );
    }

    #[test]
    fn arguments_accept_null_and_ignore_unknown_members() {
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct Args {
            #[serde(default)]
            text: String,
        }
        assert_eq!(arguments::<Args>(Value::Null).unwrap(), Args { text: String::new() });
        assert_eq!(arguments::<Args>(json!({"text":"a","extra":1})).unwrap(), Args { text: "a".into() });
        assert!(matches!(
            arguments::<Args>(json!({"text":5})),
            Err(ToolResponse::Result(ToolResult { is_error: true, .. }))
        ));
    }
}
