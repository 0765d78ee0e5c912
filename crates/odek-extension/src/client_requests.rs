//! What a handler may ask the client while it runs, typed: a model completion
//! (`sampling/createMessage`, [`CallContext::create_message`]) and input from the user
//! (`elicitation/create` in form mode, [`CallContext::elicit`]). Each is sent only when the
//! client declared the capability in `initialize` ([`Error::ClientCapabilityMissing`]
//! otherwise), waits at most the given time, and checks the reply's shape
//! ([`Error::InvalidReply`]).
//!
//! Not here: the untyped request ([`CallContext::request`]), which these build on.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::Error;
use crate::context::CallContext;
use crate::prompts::Role;
use crate::tools::Content;

/// One message of a sampling request.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SamplingMessage {
    pub role: Role,
    pub content: Content,
}

/// A `sampling/createMessage` request: the conversation and how long the answer may be.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SamplingRequest {
    pub messages: Vec<SamplingMessage>,
    pub max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
}

impl SamplingRequest {
    /// One user message of text, answered in at most `max_tokens` tokens.
    pub fn user_text(text: impl Into<String>, max_tokens: u32) -> Self {
        Self {
            messages: vec![SamplingMessage { role: Role::User, content: Content::Text(text.into()) }],
            max_tokens,
            system_prompt: None,
        }
    }
}

/// The client's answer to a sampling request.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SamplingResult {
    pub role: Role,
    /// The content item as the client sent it (`{"type":"text","text":…}`, an image, …).
    pub content: Value,
    /// The model that answered.
    pub model: String,
    #[serde(default)]
    pub stop_reason: Option<String>,
}

impl SamplingResult {
    /// The answer's text, when it is a text item.
    pub fn text(&self) -> Option<&str> {
        (self.content["type"] == "text").then(|| self.content["text"].as_str()).flatten()
    }
}

/// A form-mode `elicitation/create` request: a message for the user and the flat JSON Schema
/// of the answer (`{"type":"object","properties":{…}}` of strings, numbers, booleans and enums).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationRequest {
    pub message: String,
    pub requested_schema: Value,
}

/// What the user did with an elicitation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    Accept,
    Decline,
    Cancel,
}

/// The client's answer to an elicitation: the action and, when accepted, the form's content.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct ElicitationResult {
    pub action: ElicitAction,
    #[serde(default)]
    pub content: Option<Map<String, Value>>,
}

impl CallContext {
    /// Whether the client declared `capability` (`"sampling"`, `"elicitation"`, `"roots"`, …)
    /// in its `initialize` request.
    pub fn client_supports(&self, capability: &str) -> bool {
        self.connection.client_capabilities().is_some_and(|capabilities| capabilities.get(capability).is_some())
    }

    /// Asks the client's model for a message (`sampling/createMessage`) and waits at most
    /// `timeout` for it. Fails without sending when the client did not declare `sampling`.
    pub async fn create_message(&self, request: &SamplingRequest, timeout: Duration) -> Result<SamplingResult, Error> {
        self.typed_request("sampling", "sampling/createMessage", request, timeout).await
    }

    /// Asks the user to fill a form (`elicitation/create`, form mode) and waits at most `timeout`
    /// for the answer. Fails without sending when the client did not declare `elicitation`.
    pub async fn elicit(&self, request: &ElicitationRequest, timeout: Duration) -> Result<ElicitationResult, Error> {
        self.typed_request("elicitation", "elicitation/create", request, timeout).await
    }

    async fn typed_request<Q: Serialize, A: serde::de::DeserializeOwned>(
        &self,
        capability: &'static str,
        method: &'static str,
        request: &Q,
        timeout: Duration,
    ) -> Result<A, Error> {
        if !self.client_supports(capability) {
            return Err(Error::ClientCapabilityMissing { capability });
        }
        let params = serde_json::to_value(request)
            .map_err(|error| Error::InvalidReply { method, reason: format!("serialise the request: {error}") })?;
        let reply = self.request(method, Some(params), timeout).await?;
        serde_json::from_value(reply).map_err(|error| Error::InvalidReply { method, reason: error.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn requests_and_replies_have_the_mcp_shapes() {
        assert_eq!(
            serde_json::to_value(SamplingRequest::user_text("hi", 50)).unwrap(),
            json!({"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":50})
        );
        let answer: SamplingResult = serde_json::from_value(json!({
            "role":"assistant","content":{"type":"text","text":"ok"},"model":"m","stopReason":"endTurn"
        }))
        .unwrap();
        assert_eq!(
            (answer.text(), answer.model.as_str(), answer.stop_reason.as_deref()),
            (Some("ok"), "m", Some("endTurn"))
        );
        let form = ElicitationRequest { message: "who?".into(), requested_schema: json!({"type":"object"}) };
        assert_eq!(serde_json::to_value(form).unwrap(), json!({"message":"who?","requestedSchema":{"type":"object"}}));
        let accepted: ElicitationResult =
            serde_json::from_value(json!({"action":"accept","content":{"name":"x"}})).unwrap();
        assert_eq!(accepted.action, ElicitAction::Accept);
        assert_eq!(accepted.content.unwrap()["name"], json!("x"));
        let declined: ElicitationResult = serde_json::from_value(json!({"action":"decline"})).unwrap();
        assert_eq!((declined.action, declined.content), (ElicitAction::Decline, None));
        assert!(serde_json::from_value::<ElicitationResult>(json!({"action":"maybe"})).is_err());
    }
}
