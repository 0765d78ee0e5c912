//! Argument completion (MCP `completion/complete`): what a client asks ([`CompletionRequest`]:
//! which prompt or resource template, which argument, what was typed so far) and what the
//! server's completer answers ([`Completion`]), capped at [`MAX_COMPLETION_VALUES`] values as
//! the spec says. The builder method is [`Server::completion`](crate::Server::completion); the
//! method is answered in `builtins`.

use std::future::Future;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::context::CallContext;
use crate::jsonrpc::RpcError;
use crate::prompts::PromptArguments;
use crate::tools::BoxFuture;

/// Most values one completion answer carries (MCP's limit); a completer's extra values are cut
/// and `hasMore` is set.
pub const MAX_COMPLETION_VALUES: usize = 100;

/// What is being completed: an argument of a prompt, or a variable of a resource template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompletionReference {
    /// `{"type":"ref/prompt","name":…}`.
    Prompt { name: String },
    /// `{"type":"ref/resource","uri":…}`: a resource template's `uriTemplate`.
    ResourceTemplate { uri: String },
}

/// One `completion/complete` request, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompletionRequest {
    pub reference: CompletionReference,
    /// The argument (or template variable) being completed.
    pub argument: String,
    /// What the user typed so far.
    pub value: String,
    /// Arguments already chosen (`context.arguments`, MCP 2025-06-18), by name.
    pub context: PromptArguments,
}

impl CompletionRequest {
    /// The request `params` describe, or `-32602` naming what is wrong with them.
    pub(crate) fn from_params(params: Option<Value>) -> Result<CompletionRequest, RpcError> {
        let invalid = |what: &str| RpcError::invalid_params(format!("completion/complete params.{what}"));
        let params = params.unwrap_or(Value::Null);
        let string = |value: &Value, what: &str| value.as_str().map(str::to_owned).ok_or_else(|| invalid(what));
        let reference = &params["ref"];
        let reference = match reference["type"].as_str() {
            Some("ref/prompt") => {
                CompletionReference::Prompt { name: string(&reference["name"], "ref.name must be a string")? }
            }
            Some("ref/resource") => {
                CompletionReference::ResourceTemplate { uri: string(&reference["uri"], "ref.uri must be a string")? }
            }
            _ => return Err(invalid("ref.type must be \"ref/prompt\" or \"ref/resource\"")),
        };
        let argument = string(&params["argument"]["name"], "argument.name must be a string")?;
        let value = string(&params["argument"]["value"], "argument.value must be a string")?;
        let mut context = PromptArguments::new();
        if let Some(arguments) = params["context"]["arguments"].as_object() {
            for (name, value) in arguments {
                context.insert(name.clone(), string(value, "context.arguments must hold strings")?);
            }
        }
        Ok(CompletionRequest { reference, argument, value, context })
    }
}

/// A completer's answer: suggestions, best first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Completion {
    pub values: Vec<String>,
    /// How many values there are in all, when known.
    pub total: Option<u64>,
    /// Whether there are more values than these.
    pub has_more: bool,
}

impl Completion {
    /// These values, nothing more known.
    pub fn values(values: Vec<String>) -> Self {
        Self { values, total: None, has_more: false }
    }

    /// The `completion/complete` result: `{"completion":{"values":[…],"total"?,"hasMore"?}}`,
    /// with at most [`MAX_COMPLETION_VALUES`] values (`hasMore` set when some were cut).
    pub(crate) fn into_result(mut self) -> Value {
        if self.values.len() > MAX_COMPLETION_VALUES {
            self.values.truncate(MAX_COMPLETION_VALUES);
            self.has_more = true;
        }
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Wire {
            values: Vec<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            total: Option<u64>,
            #[serde(skip_serializing_if = "std::ops::Not::not")]
            has_more: bool,
        }
        let wire = Wire { values: self.values, total: self.total, has_more: self.has_more };
        serde_json::json!({ "completion": wire })
    }
}

/// What a completer answers: the completion, or the JSON-RPC error to send.
pub type CompletionOutcome = Result<Completion, RpcError>;

/// A type-erased completer.
pub(crate) type Completer =
    Arc<dyn Fn(Arc<CallContext>, CompletionRequest) -> BoxFuture<CompletionOutcome> + Send + Sync>;

/// Erases an async closure into a [`Completer`].
pub(crate) fn completer<F, Fut>(completer: F) -> Completer
where
    F: Fn(Arc<CallContext>, CompletionRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = CompletionOutcome> + Send + 'static,
{
    Arc::new(move |context, request| Box::pin(completer(context, request)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn requests_are_checked_and_typed() {
        let request = CompletionRequest::from_params(Some(json!({
            "ref": {"type": "ref/prompt", "name": "p"},
            "argument": {"name": "arg1", "value": "te"},
            "context": {"arguments": {"arg0": "x"}}
        })))
        .unwrap();
        assert_eq!(request.reference, CompletionReference::Prompt { name: "p".into() });
        assert_eq!((request.argument.as_str(), request.value.as_str()), ("arg1", "te"));
        assert_eq!(request.context.get("arg0").map(String::as_str), Some("x"));
        let template = CompletionRequest::from_params(Some(json!({
            "ref": {"type": "ref/resource", "uri": "a://{id}"}, "argument": {"name": "id", "value": ""}
        })))
        .unwrap();
        assert_eq!(template.reference, CompletionReference::ResourceTemplate { uri: "a://{id}".into() });
        for (params, error) in [
            (json!({}), "ref.type must be \"ref/prompt\" or \"ref/resource\""),
            (json!({"ref": {"type": "ref/prompt"}}), "ref.name must be a string"),
            (
                json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a"}}),
                "argument.value must be a string",
            ),
        ] {
            assert_eq!(
                CompletionRequest::from_params(Some(params)).unwrap_err().message,
                format!("completion/complete params.{error}")
            );
        }
    }

    #[test]
    fn answers_never_carry_more_than_the_cap() {
        assert_eq!(Completion::values(vec!["a".into()]).into_result(), json!({"completion": {"values": ["a"]}}));
        let many = Completion { values: (0..250).map(|n| n.to_string()).collect(), total: Some(250), has_more: false };
        let result = many.into_result();
        assert_eq!(result["completion"]["values"].as_array().unwrap().len(), MAX_COMPLETION_VALUES);
        assert_eq!(result["completion"]["hasMore"], json!(true));
        assert_eq!(result["completion"]["total"], json!(250));
    }
}
