//! What a server offers besides tools, fixed when it starts ([`Offerings`]): resources and
//! their templates, whether clients may subscribe to them, prompts, the completer, and whether
//! it speaks MCP logging. Built by the [`Server`](crate::Server) builder, shared by every
//! connection; what `initialize` announces follows from it ([`Offerings::capabilities`]).

use serde_json::{Value, json};

use crate::completion::Completer;
use crate::prompts::Prompts;
use crate::resources::Resources;

/// Everything but the tools a server offers.
#[derive(Clone, Default)]
pub(crate) struct Offerings {
    pub(crate) resources: Resources,
    /// `resources/subscribe` and `resources/unsubscribe` are answered
    /// ([`Server::resource_subscriptions`](crate::Server::resource_subscriptions)).
    pub(crate) subscriptions: bool,
    pub(crate) prompts: Prompts,
    pub(crate) completer: Option<Completer>,
    /// `logging/setLevel` is answered ([`Server::logging`](crate::Server::logging)).
    pub(crate) logging: bool,
}

impl std::fmt::Debug for Offerings {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Offerings")
            .field("resources", &self.resources)
            .field("subscriptions", &self.subscriptions)
            .field("prompts", &self.prompts)
            .field("completion", &self.completer.is_some())
            .field("logging", &self.logging)
            .finish()
    }
}

impl Offerings {
    /// The `capabilities` of the `initialize` result: tools always (their list may change),
    /// and each other feature only when offered. Lists other than the tools' never change.
    pub(crate) fn capabilities(&self) -> Value {
        let mut capabilities = json!({"tools": {"listChanged": true}});
        if self.resources.offered() {
            capabilities["resources"] = if self.subscriptions {
                json!({"subscribe": true, "listChanged": false})
            } else {
                json!({"listChanged": false})
            };
        }
        if self.prompts.offered() {
            capabilities["prompts"] = json!({"listChanged": false});
        }
        if self.completer.is_some() {
            capabilities["completions"] = json!({});
        }
        if self.logging {
            capabilities["logging"] = json!({});
        }
        capabilities
    }
}
