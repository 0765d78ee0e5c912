//! Prompts (MCP "prompts"): what `prompts/list` says about one ([`PromptDef`], its
//! [`PromptArgument`]s), what `prompts/get` answers ([`PromptResult`] of [`PromptMessage`]s),
//! and the server's fixed set of them ([`Prompts`]), each made by its handler from the client's
//! arguments. The builder method is [`Server::prompt`](crate::Server::prompt); the methods are
//! answered in `builtins`.
//!
//! The rules of `prompts/get` live here, one function each: [`Prompts::arguments_for`] checks
//! the arguments (strings only, every required one present) before a handler runs, so a
//! handler never sees a request its definition refuses.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::Arc;

use odek_contract::quoting::quote;
use serde::Serialize;
use serde_json::Value;

use crate::Error;
use crate::context::CallContext;
use crate::jsonrpc::RpcError;
use crate::tools::{BoxFuture, Content};

/// What `prompts/list` says about one prompt.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PromptDef {
    /// The prompt's identity, and what `prompts/get` asks for; unique within a server.
    pub name: String,
    /// A human-readable name; omitted from the wire when `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the prompt is for; omitted from the wire when `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments it takes, in order; omitted from the wire when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<PromptArgument>,
}

impl PromptDef {
    /// A prompt with a name and a description and no arguments.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self { name: name.into(), title: None, description: Some(description.into()), arguments: Vec::new() }
    }

    /// The same prompt with one more argument.
    #[must_use]
    pub fn with_argument(mut self, argument: PromptArgument) -> Self {
        self.arguments.push(argument);
        self
    }

    /// The same prompt with a `title`.
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }
}

/// One argument of a prompt.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PromptArgument {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether `prompts/get` without it is refused (`-32602`).
    pub required: bool,
}

impl PromptArgument {
    /// A required argument.
    pub fn required(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self { name: name.into(), description: Some(description.into()), required: true }
    }

    /// An optional argument.
    pub fn optional(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self { name: name.into(), description: Some(description.into()), required: false }
    }
}

/// Who says a message: the user or the assistant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One message of a prompt: a role and one content item (text, image, audio or an embedded
/// resource).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PromptMessage {
    pub role: Role,
    pub content: Content,
}

impl PromptMessage {
    /// A message from the user.
    pub fn user(content: Content) -> Self {
        Self { role: Role::User, content }
    }
}

/// What `prompts/get` answers: an optional description and the messages.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PromptResult {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub messages: Vec<PromptMessage>,
}

impl PromptResult {
    /// A result of these messages, without a description.
    pub fn messages(messages: Vec<PromptMessage>) -> Self {
        Self { description: None, messages }
    }
}

/// The arguments of one `prompts/get`, by name.
pub type PromptArguments = BTreeMap<String, String>;

/// What a prompt handler answers: the prompt, or the JSON-RPC error to send.
pub type PromptOutcome = Result<PromptResult, RpcError>;

/// A type-erased prompt handler.
pub(crate) type PromptHandler =
    Arc<dyn Fn(Arc<CallContext>, PromptArguments) -> BoxFuture<PromptOutcome> + Send + Sync>;

/// Erases an async closure into a [`PromptHandler`].
pub(crate) fn prompt_handler<F, Fut>(handler: F) -> PromptHandler
where
    F: Fn(Arc<CallContext>, PromptArguments) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = PromptOutcome> + Send + 'static,
{
    Arc::new(move |context, arguments| Box::pin(handler(context, arguments)))
}

pub(crate) struct PromptEntry {
    pub(crate) def: PromptDef,
    pub(crate) handler: PromptHandler,
}

/// The prompts of one server, fixed when it starts, in `prompts/list` order.
#[derive(Clone, Default)]
pub(crate) struct Prompts {
    entries: Vec<Arc<PromptEntry>>,
    index: HashMap<String, usize>,
}

impl std::fmt::Debug for Prompts {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_list().entries(self.entries.iter().map(|entry| &entry.def.name)).finish()
    }
}

impl Prompts {
    /// Adds a prompt at the end of the list; fails on a name already taken.
    pub(crate) fn add(&mut self, def: PromptDef, handler: PromptHandler) -> Result<(), Error> {
        if self.index.contains_key(&def.name) {
            return Err(Error::DuplicatePrompt { name: def.name });
        }
        self.index.insert(def.name.clone(), self.entries.len());
        self.entries.push(Arc::new(PromptEntry { def, handler }));
        Ok(())
    }

    /// Whether the server offers prompts (then `initialize` announces them).
    pub(crate) fn offered(&self) -> bool {
        !self.entries.is_empty()
    }

    pub(crate) fn entries(&self) -> &[Arc<PromptEntry>] {
        &self.entries
    }

    /// The prompt called `name`, or `-32602 unknown prompt "<name>"`.
    pub(crate) fn get(&self, name: &str) -> Result<Arc<PromptEntry>, RpcError> {
        match self.index.get(name) {
            Some(&position) => Ok(Arc::clone(&self.entries[position])),
            None => Err(RpcError::invalid_params(format!("unknown prompt {}", quote(name)))),
        }
    }
}

impl PromptEntry {
    /// The arguments of a `prompts/get` as its handler receives them: `arguments` must be an
    /// object of strings (or absent), and carry every argument the definition requires;
    /// members the definition does not name are passed on (the contract's additive rule).
    pub(crate) fn arguments_for(&self, arguments: Option<Value>) -> Result<PromptArguments, RpcError> {
        let given = match arguments {
            None | Some(Value::Null) => serde_json::Map::new(),
            Some(Value::Object(given)) => given,
            Some(_) => return Err(RpcError::invalid_params("prompts/get params.arguments must be an object")),
        };
        let mut arguments = PromptArguments::new();
        for (name, value) in given {
            let Value::String(value) = value else {
                return Err(RpcError::invalid_params(format!("prompt argument {} must be a string", quote(&name))));
            };
            arguments.insert(name, value);
        }
        if let Some(missing) =
            self.def.arguments.iter().find(|argument| argument.required && !arguments.contains_key(&argument.name))
        {
            return Err(RpcError::invalid_params(format!(
                "prompt {} needs the argument {}",
                quote(&self.def.name),
                quote(&missing.name)
            )));
        }
        Ok(arguments)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn entry(def: PromptDef) -> PromptEntry {
        PromptEntry { def, handler: prompt_handler(|_, _| async { Ok(PromptResult::default()) }) }
    }

    #[test]
    fn definitions_and_results_serialise_to_mcp_shapes() {
        let def = PromptDef::new("greet", "Greets")
            .with_title("Greeting")
            .with_argument(PromptArgument::required("who", "Whom"))
            .with_argument(PromptArgument::optional("tone", "How"));
        assert_eq!(
            serde_json::to_value(&def).unwrap(),
            json!({"name":"greet","title":"Greeting","description":"Greets","arguments":[
                {"name":"who","description":"Whom","required":true},
                {"name":"tone","description":"How","required":false}]})
        );
        let result = PromptResult::messages(vec![PromptMessage::user(Content::Text("hi".into()))]);
        assert_eq!(
            serde_json::to_value(&result).unwrap(),
            json!({"messages":[{"role":"user","content":{"type":"text","text":"hi"}}]})
        );
    }

    #[test]
    fn arguments_must_be_strings_and_the_required_ones_present() {
        let greet = entry(PromptDef::new("greet", "").with_argument(PromptArgument::required("who", "")));
        let arguments = greet.arguments_for(Some(json!({"who":"ann","extra":"kept"}))).unwrap();
        assert_eq!(arguments.get("who").map(String::as_str), Some("ann"));
        assert_eq!(arguments.get("extra").map(String::as_str), Some("kept"));
        assert_eq!(
            greet.arguments_for(None).unwrap_err(),
            RpcError::invalid_params("prompt \"greet\" needs the argument \"who\"")
        );
        assert_eq!(
            greet.arguments_for(Some(json!({"who":1}))).unwrap_err(),
            RpcError::invalid_params("prompt argument \"who\" must be a string")
        );
        assert_eq!(
            greet.arguments_for(Some(json!(["who"]))).unwrap_err(),
            RpcError::invalid_params("prompts/get params.arguments must be an object")
        );
    }

    #[test]
    fn names_are_unique_and_unknown_ones_refused() {
        let mut prompts = Prompts::default();
        assert!(!prompts.offered());
        let handler = prompt_handler(|_, _| async { Ok(PromptResult::default()) });
        prompts.add(PromptDef::new("a", ""), Arc::clone(&handler)).unwrap();
        assert!(matches!(prompts.add(PromptDef::new("a", ""), handler), Err(Error::DuplicatePrompt { .. })));
        assert!(prompts.offered() && prompts.get("a").is_ok());
        assert_eq!(prompts.get("b\n").err(), Some(RpcError::invalid_params("unknown prompt \"b\\n\"")));
    }
}
