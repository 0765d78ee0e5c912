//! \[beyond\] `fallback_models`: a chain of providers tried in order for each call. The first
//! entry is the run's provider and model; a call that fails before its first byte, after that
//! provider's own retries, for a reason another provider may not share (overloaded, 5xx, rate
//! limited, model not found, unreachable) moves to the next entry. Start at
//! [`FallbackProvider::new`].
//!
//! Every call starts at the first entry again, so a provider that recovers is used again at
//! once. An answer from a later entry carries its model in [`ChatResponse::model`], which is
//! what budgets price it at. The observer hears each move ([`StreamObserver::on_fallback`])
//! before the next entry is tried.

use crate::error::{LlmError, TransportKind};
use crate::provider::{BoxFuture, ChatRequest, ChatResponse, Fallback, Provider, StreamObserver};

/// One entry of the chain.
pub struct FallbackEntry {
    /// The provider's name as the operator wrote it (a kind such as `anthropic`, or a
    /// `providers` key).
    pub provider_name: String,
    /// The model asked of it. The first entry's is the run's model (the request's).
    pub model: String,
    pub provider: Box<dyn Provider>,
}

/// Providers tried in order.
pub struct FallbackProvider {
    entries: Vec<FallbackEntry>,
}

impl std::fmt::Debug for FallbackProvider {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> =
            self.entries.iter().map(|entry| format!("{}/{}", entry.provider_name, entry.model)).collect();
        formatter.debug_struct("FallbackProvider").field("entries", &names).finish()
    }
}

impl FallbackProvider {
    /// `primary` answers first; `fallbacks` in order after it.
    pub fn new(primary: FallbackEntry, fallbacks: Vec<FallbackEntry>) -> FallbackProvider {
        let mut entries = vec![primary];
        entries.extend(fallbacks);
        FallbackProvider { entries }
    }
}

/// Whether a failure may be cured by another provider: it came before any answer byte and is
/// the provider's state (overloaded, server error, rate limit, no such model, unreachable),
/// not the request's (a 400, a refused key, a context too long) nor a stall or a cancel.
pub fn falls_back(error: &LlmError) -> bool {
    match error {
        LlmError::Status { status, .. } => matches!(*status, 404 | 408 | 429) || *status >= 500,
        LlmError::Transport { kind, detail, .. } => {
            !detail.contains("stream ended mid-message") && *kind != TransportKind::Tls
        }
        _ => false,
    }
}

impl Provider for FallbackProvider {
    fn id(&self) -> &str {
        self.entries.first().map_or("fallback", |entry| entry.provider.id())
    }

    fn complete<'a>(
        &'a self,
        request: ChatRequest<'a>,
        observer: &'a dyn StreamObserver,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async move {
            let mut index = 0;
            loop {
                let Some(entry) = self.entries.get(index) else {
                    return Err(LlmError::InvalidConfig { detail: "no provider to call".to_owned() });
                };
                let model = if index == 0 { request.model } else { entry.model.as_str() };
                let result = entry.provider.complete(ChatRequest { model, ..request }, observer).await;
                match (result, self.entries.get(index + 1)) {
                    (Err(error), Some(next)) if falls_back(&error) => {
                        observer.on_fallback(&Fallback {
                            from_provider: &entry.provider_name,
                            from_model: model,
                            to_provider: &next.provider_name,
                            to_model: &next.model,
                            error: &error,
                        });
                        index += 1;
                    }
                    (Ok(mut response), _) if index > 0 => {
                        response.model = Some(entry.model.clone());
                        return Ok(response);
                    }
                    (result, _) => return result,
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(status: u16) -> LlmError {
        LlmError::Status { endpoint: "e".into(), status, detail: "d".into() }
    }

    #[test]
    fn only_provider_side_failures_before_an_answer_fall_back() {
        for code in [404, 408, 429, 500, 502, 503, 529] {
            assert!(falls_back(&status(code)), "{code}");
        }
        for code in [400, 401, 403, 413, 422] {
            assert!(!falls_back(&status(code)), "{code}");
        }
        let transport = |kind, detail: &str| LlmError::Transport { endpoint: "e".into(), kind, detail: detail.into() };
        assert!(falls_back(&transport(TransportKind::ConnectionRefused, "connection refused")));
        assert!(falls_back(&transport(TransportKind::Dns, "DNS lookup failed")));
        assert!(!falls_back(&transport(TransportKind::Tls, "TLS failure")));
        assert!(!falls_back(&transport(TransportKind::Other, "stream ended mid-message")));
        assert!(!falls_back(&LlmError::StreamError { endpoint: "e".into(), detail: "overloaded".into() }));
        assert!(!falls_back(&LlmError::Cancelled));
        let stall = LlmError::Timeout { endpoint: "e".into(), detail: "d".into(), silent_for: None };
        assert!(!falls_back(&stall));
    }
}
