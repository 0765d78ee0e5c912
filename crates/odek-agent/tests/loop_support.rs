//! In-process doubles for the loop tests: a provider that answers from a queue and records every
//! request, and small tools with controllable behaviour.

#![allow(dead_code, clippy::unwrap_used)]

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use odek_agent::observer::SilentObserver;
use odek_agent::run::{Agent, LoopSettings, ToolSet};
use odek_agent::tool::{Tool, ToolContext, ToolError, ToolOutcome};
use odek_danger::DangerPolicy;
use odek_llm::{
    BoxFuture, ChatRequest, ChatResponse, LlmError, Message, Provider, StreamObserver, Thinking, ToolCall,
    ToolDefinition, Usage,
};

/// What the provider saw in one call.
#[derive(Debug, Clone)]
pub struct Seen {
    pub messages: Vec<Message>,
    pub tools: Vec<String>,
    pub side_call: bool,
}

#[derive(Default)]
pub struct QueueProvider {
    answers: Mutex<VecDeque<Result<ChatResponse, LlmError>>>,
    /// Answers for side calls; when empty, side calls take from `answers`.
    pub side_answers: Mutex<VecDeque<Result<ChatResponse, LlmError>>>,
    pub seen: Mutex<Vec<Seen>>,
}

impl QueueProvider {
    pub fn new(answers: Vec<Result<ChatResponse, LlmError>>) -> Arc<QueueProvider> {
        Arc::new(QueueProvider {
            answers: Mutex::new(answers.into()),
            side_answers: Mutex::default(),
            seen: Mutex::default(),
        })
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Provider for QueueProvider {
    fn id(&self) -> &str {
        "queue"
    }

    fn complete<'a>(
        &'a self,
        request: ChatRequest<'a>,
        _observer: &'a dyn StreamObserver,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        self.seen.lock().unwrap().push(Seen {
            messages: request.messages.to_vec(),
            tools: request.tools.iter().map(|tool| tool.name.clone()).collect(),
            side_call: request.side_call,
        });
        let side = if request.side_call { self.side_answers.lock().unwrap().pop_front() } else { None };
        let answer = side
            .or_else(|| self.answers.lock().unwrap().pop_front())
            .unwrap_or_else(|| Err(LlmError::Replay { path: "queue".into(), detail: "exhausted".into() }));
        Box::pin(async move { answer })
    }
}

pub fn answer(text: &str) -> Result<ChatResponse, LlmError> {
    Ok(ChatResponse { message: Message::assistant(text), usage: Usage::new(10, 2), finish_reason: None, model: None })
}

pub fn calls(list: &[(&str, &str, &str)]) -> Result<ChatResponse, LlmError> {
    let mut message = Message::assistant("");
    message.tool_calls = list.iter().map(|(id, name, args)| ToolCall::new(*id, *name, *args)).collect();
    Ok(ChatResponse { message, usage: Usage::new(10, 2), finish_reason: None, model: None })
}

type Behaviour = dyn Fn(String) -> BoxFuture<'static, Result<ToolOutcome, ToolError>> + Send + Sync;

/// A tool whose call runs a closure over the arguments.
pub struct FnTool {
    pub name: String,
    pub behaviour: Box<Behaviour>,
}

impl FnTool {
    #[allow(clippy::new_ret_no_self)]
    pub fn new(
        name: &str,
        behaviour: impl Fn(String) -> BoxFuture<'static, Result<ToolOutcome, ToolError>> + Send + Sync + 'static,
    ) -> Arc<dyn Tool> {
        Arc::new(FnTool { name: name.to_owned(), behaviour: Box::new(behaviour) })
    }
}

impl Tool for FnTool {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: self.name.clone(),
            description: "test tool".into(),
            parameters: serde_json::json!({"type": "object"}),
        }
    }

    fn call<'a>(&'a self, arguments: &'a str, _ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutcome, ToolError>> {
        (self.behaviour)(arguments.to_owned())
    }
}

/// Echoes its arguments as runtime text.
pub fn echo_tool() -> Arc<dyn Tool> {
    FnTool::new("echo", |args| Box::pin(async move { Ok(ToolOutcome::text(format!("echo:{args}"))) }))
}

pub fn settings(max_iterations: u32) -> LoopSettings {
    LoopSettings {
        model: "test-model".into(),
        thinking: Thinking::Default,
        stream: false,
        max_iterations,
        max_tool_parallel: 4,
        compaction: true,
        context_window: None,
        strict: false,
    }
}

pub fn agent(provider: Arc<QueueProvider>, tools: Vec<Arc<dyn Tool>>, settings: LoopSettings) -> Agent {
    Agent {
        provider,
        tools: ToolSet::new(tools, None, Arc::new(|_: &str| true)),
        settings,
        tool_context: ToolContext::new(
            PathBuf::from("."),
            PathBuf::from("/nonexistent/.odek"),
            DangerPolicy::default(),
        ),
        observer: Arc::new(SilentObserver),
        gate: None,
        checkpoint: None,
        budget: odek_agent::budget::Budget::unlimited(),
        finish: odek_agent::finish::FinishGates::default(),
    }
}

pub fn start() -> Vec<Message> {
    vec![Message::system("identity"), Message::user("do the task")]
}

/// A tool that classifies every call as `network_egress` and records whether it ran approved.
pub struct RiskyTool {
    pub ran: Mutex<Vec<bool>>,
}

impl Tool for RiskyTool {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: "fetch".into(),
            description: "risky".into(),
            parameters: serde_json::json!({"type": "object"}),
        }
    }

    fn risk(&self, arguments: &str, _ctx: &ToolContext) -> Option<odek_agent::tool::Risk> {
        Some(odek_agent::tool::Risk {
            class: odek_danger::DangerClass::NetworkEgress,
            resource: format!("fetch {arguments}"),
        })
    }

    fn call<'a>(&'a self, _arguments: &'a str, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutcome, ToolError>> {
        self.ran.lock().unwrap().push(ctx.approved);
        Box::pin(async { Ok(ToolOutcome::text("fetched")) })
    }
}
