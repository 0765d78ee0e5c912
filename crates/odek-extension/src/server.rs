//! The server: a builder ([`Server`]) and the stdio transport's reader loop.
//!
//! Tasks: one reader task parses stdin (one parse per line) and hands each message to the one
//! message path (`dispatch`), in arrival order: `initialize`, `ping`, `tools/list` and
//! `resources/list` are answered at once; every `tools/call` and `resources/read` (and, when an
//! interceptor is installed, every request) runs in its own tokio task, so a slow call never
//! holds up another. One writer task owns stdout (`transport`). Pipes are waited on by the
//! runtime itself; only stdio that cannot be (a terminal, a file, stdout shared with stderr)
//! costs a thread (`blocking_io`). Server-initiated requests wait in a table keyed by
//! id until the reader routes the client's reply to them. Streamable HTTP (`http`, feature
//! `http`) builds on the same builder and message path.
//!
//! Entry point: [`Server::new`], then [`Server::run_stdio`].

use std::future::Future;
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::runtime::Handle;
use tokio::sync::{Notify, oneshot};

use crate::Error;
use crate::blocking_io::{Input, Output, PipeModes, ThreadWriter};
use crate::bounded_lines::{BoundedLineReader, Line};
use crate::builtins::{Reply, Request};
use crate::completion::{CompletionOutcome, CompletionRequest, completer};
use crate::connection::Identity;
use crate::context::{CallContext, ToolSet, tool_handler};
use crate::dispatch::{Blueprint, Interceptor, NotificationHook, Route, Shared, handle_message};
use crate::jsonrpc;
use crate::offerings::Offerings;
use crate::prompts::{PromptArguments, PromptDef, PromptOutcome, prompt_handler};
use crate::resources::{ReadOutcome, ResourceBody, ResourceDef, ResourceTemplateDef, resource_reader, template_reader};
use crate::revision::VersionAnswer;
use crate::tools::{ToolDef, ToolResponse};
use crate::transport::{Outgoing, WriterExit, spawn_writer};
use crate::uri_template::TemplateVariables;

/// The MCP protocol version of the odek-extension/v1 contract: answered to a client that asks
/// for it, or names none (see [`negotiate_protocol_version`](crate::negotiate_protocol_version)).
pub use odek_contract::PROTOCOL_VERSION;

/// Default for [`Server::max_line_bytes`]: 64 MiB, odek's absolute response ceiling.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// Default for [`Server::max_in_flight`]: requests handled concurrently.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 1024;

/// Default for [`Server::eof_grace`]: 5 s, as long as odek waits for a server to exit.
pub const DEFAULT_EOF_GRACE: Duration = Duration::from_secs(5);

/// How long shutdown waits for the writer to flush, once in-flight calls are done.
const WRITER_SHUTDOWN_WAIT: Duration = Duration::from_secs(1);

/// How a `tools/call` that names no tool of the server is answered ([`Server::unknown_tool`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UnknownTool {
    /// An `isError` result, `unknown tool "<name>"`, which a client shows its model like any
    /// tool's failure. The default.
    #[default]
    ToolError,
    /// A JSON-RPC error `-32602` (invalid params) with the same message, as MCP lists an
    /// unknown tool among the protocol errors.
    InvalidParams,
}

/// What happens to a running handler when the client sends `notifications/cancelled`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CancelPolicy {
    /// Drop the handler's future at its next `.await` and send no reply (MCP's "SHOULD NOT
    /// respond"). The default.
    #[default]
    AbortHandler,
    /// Keep the handler running; it observes [`CallContext::cancelled`] and decides. Whatever it
    /// returns is sent.
    Signal,
}

#[derive(Clone, Debug)]
struct Settings {
    identity: Identity,
    cancel_policy: CancelPolicy,
    exit_on_eof: bool,
    eof_grace: Duration,
    max_line_bytes: usize,
    max_in_flight: usize,
    validate_tool_names: bool,
}

/// An odek-extension/v1 server under construction. Configure it, add tools, then run it.
///
/// ```no_run
/// use odek_extension::{Server, ToolDef, ToolResponse};
/// use serde_json::json;
///
/// # async fn serve() -> Result<(), odek_extension::Error> {
/// Server::new("hello", "1.0.0")
///     .tool(
///         ToolDef::new("greet", "Greets someone", json!({"type":"object"})),
///         |_context, arguments| async move {
///             let who = arguments["who"].as_str().unwrap_or("world").to_owned();
///             ToolResponse::text(format!("hello, {who}"))
///         },
///     )
///     .run_stdio()
///     .await
/// # }
/// ```
pub struct Server {
    settings: Settings,
    tools: ToolSet,
    offerings: Offerings,
    setup_error: Option<Error>,
    interceptor: Option<Interceptor>,
    notification_hook: Option<NotificationHook>,
    disconnect_hook: Option<DisconnectHook>,
}

/// What [`Server::on_disconnect`] runs.
type DisconnectHook = Box<dyn FnOnce() + Send>;

impl std::fmt::Debug for Server {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Server")
            .field("settings", &self.settings)
            .field("tools", &self.tools)
            .field("offerings", &self.offerings)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// A server that reports `name` and `version` in `serverInfo`, negotiates the protocol
    /// revision ([`negotiate_protocol_version`](crate::negotiate_protocol_version)), answers
    /// without `instructions`, offers tools only (no resources, prompts, completion or
    /// logging), lists all tools on one page, validates tool names, aborts cancelled handlers
    /// and exits on stdin EOF.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            settings: Settings {
                identity: Identity {
                    name: name.into(),
                    version: version.into(),
                    protocol_version: VersionAnswer::Negotiate,
                    instructions: None,
                    page_size: None,
                    unknown_tool: UnknownTool::default(),
                },
                cancel_policy: CancelPolicy::default(),
                exit_on_eof: true,
                eof_grace: DEFAULT_EOF_GRACE,
                max_line_bytes: DEFAULT_MAX_LINE_BYTES,
                max_in_flight: DEFAULT_MAX_IN_FLIGHT,
                validate_tool_names: true,
            },
            tools: ToolSet::new(false),
            offerings: Offerings::default(),
            setup_error: None,
            interceptor: None,
            notification_hook: None,
            disconnect_hook: None,
        }
    }

    /// Answers `initialize` with this `protocolVersion` whatever the client asked for,
    /// instead of negotiating (for fixtures). Over HTTP, `MCP-Protocol-Version: <version>` is
    /// then accepted besides the revisions the SDK speaks.
    pub fn protocol_version(mut self, version: impl Into<String>) -> Self {
        self.settings.identity.protocol_version = VersionAnswer::Fixed(version.into());
        self
    }

    /// Leaves `protocolVersion` out of the `initialize` result (for fixtures).
    pub fn omit_protocol_version(mut self) -> Self {
        self.settings.identity.protocol_version = VersionAnswer::Omit;
        self
    }

    /// The `instructions` answered to `initialize`: how to use this server's tools and
    /// resources, in a few lines. A client may show them to its model (odek does, screened and
    /// marked as the server's words), so write them as a manual, not as orders. None by default.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.settings.identity.instructions = Some(text.into());
        self
    }

    /// Paginates `tools/list` and `resources/list` with at most `per_page` entries per page;
    /// `0` (the default) lists everything on one page.
    pub fn page_size(mut self, per_page: usize) -> Self {
        self.settings.identity.page_size = (per_page > 0).then_some(per_page);
        self
    }

    /// How a call of a tool the server does not have is answered; see [`UnknownTool`].
    pub fn unknown_tool(mut self, answer: UnknownTool) -> Self {
        self.settings.identity.unknown_tool = answer;
        self
    }

    /// What a cancellation does to a running handler; see [`CancelPolicy`].
    pub fn cancel_policy(mut self, policy: CancelPolicy) -> Self {
        self.settings.cancel_policy = policy;
        self
    }

    /// Whether [`Server::run`] returns when stdin reaches EOF (default `true`). With `false` the
    /// server keeps running until the process is killed or a handler exits it.
    pub fn exit_on_eof(mut self, exit: bool) -> Self {
        self.settings.exit_on_eof = exit;
        self
    }

    /// How long calls still running at stdin EOF may take to finish and have their replies
    /// written before [`Server::run`] returns (default [`DEFAULT_EOF_GRACE`]).
    pub fn eof_grace(mut self, grace: Duration) -> Self {
        self.settings.eof_grace = grace;
        self
    }

    /// Longest incoming line accepted, in bytes without the newline (default
    /// [`DEFAULT_MAX_LINE_BYTES`]). A longer line is discarded without being buffered and
    /// reported on stderr; its request gets no reply because its id is never read. Over HTTP
    /// this is the largest request body: a longer one gets `413` and is not read further.
    pub fn max_line_bytes(mut self, bytes: usize) -> Self {
        self.settings.max_line_bytes = bytes;
        self
    }

    /// How many requests may run at once (default [`DEFAULT_MAX_IN_FLIGHT`], at least 1). At
    /// the limit the reader stops reading stdin until one finishes, which pushes back on the
    /// client. Consequence: if every running handler waits for a reply from the client (a
    /// server-initiated request) and the client keeps sending requests, the server stalls until
    /// those handlers' deadlines pass. Over HTTP the limit is per session, and a POST carrying
    /// a request waits for a slot, while POSTs carrying the client's replies always get
    /// through.
    pub fn max_in_flight(mut self, requests: usize) -> Self {
        self.settings.max_in_flight = requests.max(1);
        self
    }

    /// Whether tool names must follow the contract (default `true`): checked by
    /// [`Server::run`] for the initial tools and by [`ToolSet::add`] at runtime. Only a
    /// fixture that must offer invalid names turns this off.
    pub fn validate_tool_names(mut self, validate: bool) -> Self {
        self.settings.validate_tool_names = validate;
        self
    }

    /// Adds a tool. A duplicate name makes [`Server::run`] fail.
    pub fn tool<F, Fut>(mut self, def: ToolDef, handler: F) -> Self
    where
        F: Fn(Arc<CallContext>, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolResponse> + Send + 'static,
    {
        let added = self.tools.add_handler(def, tool_handler(handler));
        self.keep_setup_error(added);
        self
    }

    /// Adds a tool whose arguments are the type `A`: its `inputSchema` is derived from `A`
    /// (doc comments become descriptions), its handler gets the decoded value, arguments that do
    /// not decode get the isError result `invalid arguments: <reason>`, and unknown argument
    /// members are ignored even when `A` denies them (the contract's additive rule).
    ///
    /// ```no_run
    /// # async fn serve() -> Result<(), odek_extension::Error> {
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Greet {
    ///     /// Who to greet.
    ///     who: String,
    /// }
    /// odek_extension::Server::new("hello", "1.0.0")
    ///     .typed_tool("greet", "Greets someone", |_context, args: Greet| async move {
    ///         odek_extension::ToolResponse::text(format!("hello, {}", args.who))
    ///     })
    ///     .run_stdio()
    ///     .await
    /// # }
    /// ```
    pub fn typed_tool<A, F, Fut>(mut self, name: impl Into<String>, description: impl Into<String>, handler: F) -> Self
    where
        A: serde::de::DeserializeOwned + schemars::JsonSchema + Send + 'static,
        F: Fn(Arc<CallContext>, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolResponse> + Send + 'static,
    {
        let added = self.tools.add_typed(name, description, handler);
        self.keep_setup_error(added);
        self
    }

    /// Adds a static resource: listed by `resources/list` as `def` says (in the order added),
    /// and read by `resources/read` as one contents item, `body` with `def`'s uri and
    /// `mimeType`. The server then announces the `resources` capability (`listChanged: false`:
    /// the list is fixed once it runs). A uri added twice makes [`Server::run`] fail.
    ///
    /// ```no_run
    /// use odek_extension::{ResourceBody, ResourceDef, Server};
    ///
    /// # async fn serve() -> Result<(), odek_extension::Error> {
    /// Server::new("docs", "1.0.0")
    ///     .instructions("Read docs://guide before calling any tool.")
    ///     .resource(
    ///         ResourceDef::new("docs://guide", "guide").with_mime_type("text/markdown"),
    ///         ResourceBody::text("# Guide\nCall `search` first."),
    ///     )
    ///     .run_stdio()
    ///     .await
    /// # }
    /// ```
    pub fn resource(mut self, def: ResourceDef, body: ResourceBody) -> Self {
        let added = self.offerings.resources.add(def, body);
        self.keep_setup_error(added);
        self
    }

    /// Adds a resource whose contents are made on each read: listed by `resources/list` as
    /// `def` says (in the order added, among the static ones), and read by `reader`, which gets
    /// the request's context and the uri and returns the contents or the error to send. Each
    /// read runs in its own task, like a tool call, and is cancelled the same way. A uri added
    /// twice makes [`Server::run`] fail.
    pub fn dynamic_resource<F, Fut>(mut self, def: ResourceDef, reader: F) -> Self
    where
        F: Fn(Arc<CallContext>, String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ReadOutcome> + Send + 'static,
    {
        let added = self.offerings.resources.add_dynamic(def, resource_reader(reader));
        self.keep_setup_error(added);
        self
    }

    /// Answers `resources/read` of every uri no listed resource ([`Server::resource`],
    /// [`Server::dynamic_resource`]) has: `reader` gets the request's context and the uri, and
    /// returns the contents or the error to send —
    /// [`RpcError::resource_not_found`](crate::RpcError::resource_not_found) for a uri it does
    /// not serve. Reads run in tasks as with [`Server::dynamic_resource`]. Such uris are not
    /// listed by `resources/list`; a later call replaces an earlier reader. With a reader the
    /// server announces the `resources` capability even without listed resources.
    pub fn resource_reader<F, Fut>(mut self, reader: F) -> Self
    where
        F: Fn(Arc<CallContext>, String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ReadOutcome> + Send + 'static,
    {
        self.offerings.resources.set_reader(resource_reader(reader));
        self
    }

    /// Adds a resource template: listed by `resources/templates/list` (in the order added),
    /// and serving `resources/read` of every uri its `uriTemplate` matches that no listed
    /// resource has (the first matching template wins), through `reader`, which gets the
    /// request's context, the uri and the variables the uri gave (as they appear in it, not
    /// percent-decoded). Only RFC 6570 level-1 templates (`a://items/{id}`: literal text and
    /// plain `{name}` variables, separated; each matches a non-empty run without `/`); another
    /// template, or one added twice, makes [`Server::run`] fail. The server then announces the
    /// `resources` capability.
    pub fn resource_template<F, Fut>(mut self, def: ResourceTemplateDef, reader: F) -> Self
    where
        F: Fn(Arc<CallContext>, String, TemplateVariables) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ReadOutcome> + Send + 'static,
    {
        let added = self.offerings.resources.add_template(def, template_reader(reader));
        self.keep_setup_error(added);
        self
    }

    /// Answers `resources/subscribe` and `resources/unsubscribe` and announces
    /// `"subscribe": true` with the resources. A client may subscribe to any uri the server
    /// serves (else `-32002`), at most [`MAX_SUBSCRIPTIONS`](crate::MAX_SUBSCRIPTIONS) per
    /// connection; a handler tells it about a change with
    /// [`CallContext::notify_resource_updated`]. Without resources it changes nothing.
    pub fn resource_subscriptions(mut self) -> Self {
        self.offerings.subscriptions = true;
        self
    }

    /// Adds a prompt: listed by `prompts/list` as `def` says (in the order added), and made by
    /// `handler` on `prompts/get`, with the client's arguments once they are checked against
    /// `def` (all strings, every required one given; else `-32602`). Each get runs in its own
    /// task, like a tool call. The server then announces `"prompts":{"listChanged":false}`. A
    /// name added twice makes [`Server::run`] fail.
    pub fn prompt<F, Fut>(mut self, def: PromptDef, handler: F) -> Self
    where
        F: Fn(Arc<CallContext>, PromptArguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = PromptOutcome> + Send + 'static,
    {
        let added = self.offerings.prompts.add(def, prompt_handler(handler));
        self.keep_setup_error(added);
        self
    }

    /// Answers `completion/complete` with `completer` (in a task of its own), which gets the
    /// checked request and returns suggestions; more than
    /// [`MAX_COMPLETION_VALUES`](crate::MAX_COMPLETION_VALUES) are cut, with `hasMore` set.
    /// The server then announces `"completions":{}`. A later call replaces an earlier completer.
    pub fn completion<F, Fut>(mut self, completer_fn: F) -> Self
    where
        F: Fn(Arc<CallContext>, CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = CompletionOutcome> + Send + 'static,
    {
        self.offerings.completer = Some(completer(completer_fn));
        self
    }

    /// Speaks MCP logging: announces `"logging":{}` and answers `logging/setLevel`, after which
    /// [`CallContext::log`] sends nothing below the level the client chose on that connection
    /// (until then, everything).
    pub fn logging(mut self) -> Self {
        self.offerings.logging = true;
        self
    }

    /// Keeps the first error of the builder's methods, for [`Server::run`] to fail with.
    fn keep_setup_error(&mut self, outcome: Result<(), Error>) {
        if let Err(error) = outcome
            && self.setup_error.is_none()
        {
            self.setup_error = Some(error);
        }
    }

    /// Removes a tool added earlier (nothing happens if there is none), so a server assembled
    /// from shared tool sets can leave one out: it is not listed, and calls to it get the
    /// unknown-tool result.
    pub fn without_tool(mut self, name: &str) -> Self {
        self.tools.remove(name);
        self
    }

    /// Routes every client request through `interceptor` (each in its own task). It may answer
    /// by itself, or delegate to the built-in handling with [`CallContext::builtin`].
    pub fn intercept<F, Fut>(mut self, interceptor: F) -> Self
    where
        F: Fn(Arc<CallContext>, Request) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Reply> + Send + 'static,
    {
        self.interceptor = Some(Arc::new(move |context, request| Box::pin(interceptor(context, request))));
        self
    }

    /// Calls `hook` with the method and params of every client notification except
    /// `notifications/cancelled` (which the server handles itself), in the reader task (over
    /// HTTP, the task handling the POST), in arrival order, so it must return quickly. A
    /// conforming server returns `None`: a notification gets no reply. `Some(message)` is
    /// written as is to stdout (over HTTP, to the session's standalone `GET` stream), which
    /// only a fixture that misbehaves on purpose wants.
    pub fn on_notification<F>(mut self, hook: F) -> Self
    where
        F: Fn(&str, Option<&Value>) -> Option<Value> + Send + Sync + 'static,
    {
        self.notification_hook = Some(Arc::new(hook));
        self
    }

    /// Runs `hook` once when the stdio client goes away — stdin reaches EOF or writing stdout
    /// fails — before calls still running get [`Server::eof_grace`] to finish. A server whose
    /// calls run long (a build, an agent run, a child process) stops them here, so they end
    /// within the grace instead of being dropped mid-way when the process exits. Runs on the
    /// runtime's task that serves, so it must return quickly (cancel a token, signal a task).
    pub fn on_disconnect<F>(mut self, hook: F) -> Self
    where
        F: FnOnce() + Send + 'static,
    {
        self.disconnect_hook = Some(Box::new(hook));
        self
    }

    /// Serves on the process's stdin and stdout until stdin closes (see
    /// [`Server::exit_on_eof`]). Nothing else in the process may write to stdout. Must be called
    /// inside a tokio runtime with its I/O and time drivers enabled (`enable_all`, as
    /// `#[tokio::main]` does): pipes are waited on by the runtime itself, and switched back to
    /// blocking mode when serving ends.
    pub async fn run_stdio(self) -> Result<(), Error> {
        let runtime = Handle::try_current().map_err(|_| Error::NoRuntime)?;
        let stdio = crate::blocking_io::stdio(&runtime)?;
        self.serve(runtime, stdio.input, stdio.output, stdio.pipe_modes).await
    }

    /// Serves on any blocking byte pipes (for tests: `std::io::pipe()`), each read or written
    /// on a thread of its own. Must be called inside a tokio runtime. Fails before serving if a
    /// tool name is invalid or duplicated, and after serving if writing stdout failed for a
    /// reason other than the client closing it.
    pub async fn run<R, W>(self, input: R, output: W) -> Result<(), Error>
    where
        R: Read + Send + 'static,
        W: Write + Send + 'static,
    {
        let runtime = Handle::try_current().map_err(|_| Error::NoRuntime)?;
        let input = crate::blocking_io::blocking_input(input, &runtime)?;
        let output = Output::Thread(ThreadWriter::spawn(output)?);
        self.serve(runtime, input, output, PipeModes::default()).await
    }

    /// [`Server::run`] on async byte streams (a `tokio::net::unix::pipe`, a socket half):
    /// no thread besides the runtime's.
    pub async fn run_async<R, W>(self, input: R, output: W) -> Result<(), Error>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let runtime = Handle::try_current().map_err(|_| Error::NoRuntime)?;
        self.serve(runtime, Box::new(input), Output::of_async(Box::new(output)), PipeModes::default()).await
    }

    /// Serves until the input closes or the output fails. `pipe_modes` are restored only when
    /// the writer and the reader are known to be done with the pipes.
    async fn serve(
        mut self,
        runtime: Handle,
        input: Input,
        output: Output,
        pipe_modes: PipeModes,
    ) -> Result<(), Error> {
        let disconnect_hook = self.disconnect_hook.take();
        let Prepared { blueprint, exit_on_eof, eof_grace, max_line_bytes } = self.prepare()?;

        let output_failed = Arc::new(Notify::new());
        let (outgoing, writer_exit) = spawn_writer(output, {
            let output_failed = Arc::clone(&output_failed);
            Box::new(move || output_failed.notify_one())
        });
        // On stdio every message shares the one pipe: the connection's and every request's.
        let route = Route { outgoing: outgoing.clone(), hold_unanswered: false };
        let shared = blueprint.connect(outgoing, runtime);

        let (input_closed, input_closed_signal) = oneshot::channel::<()>();
        let reader = {
            let shared = Arc::clone(&shared);
            tokio::spawn(async move {
                read_loop(&shared, input, max_line_bytes, &route).await;
                let _ = input_closed.send(());
            })
        };

        let closed = tokio::select! {
            _ = input_closed_signal => "stdin closed",
            () = output_failed.notified() => "writing stdout failed",
        };
        shared.connection.close_pending();
        if let Some(hook) = disconnect_hook {
            hook();
        }
        if !exit_on_eof {
            log_to_stderr(format_args!("{closed}; staying up because exit_on_eof is off"));
            std::future::pending::<()>().await;
        }
        shared.wait_idle(eof_grace).await;
        // `Some` once the writer ended, which also dropped the output.
        let writer_ended = tokio::time::timeout(WRITER_SHUTDOWN_WAIT, async {
            shared.connection.outgoing.send(Outgoing::Shutdown).await.ok()?;
            writer_exit.await.ok()
        })
        .await
        .ok()
        .flatten();
        // After stdout failed the reader may still wait on stdin: it stops here, so the input
        // is released before serving returns.
        reader.abort();
        let reader_ended = tokio::time::timeout(WRITER_SHUTDOWN_WAIT, reader).await.is_ok();
        // A pipe still in use stays non-blocking: made blocking under a task that still polls
        // it, a read or write would hold a runtime thread.
        if writer_ended.is_some() && reader_ended {
            pipe_modes.restore();
        }
        match writer_ended.and_then(|WriterExit { error }| error) {
            // The client closing stdout is an ordinary way for a session to end.
            Some(error) if error.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::io("write stdout", error)),
            _ => Ok(()),
        }
    }

    /// Checks the tools and splits the builder into what every connection starts from and the
    /// transport's own settings.
    pub(crate) fn prepare(self) -> Result<Prepared, Error> {
        if let Some(error) = self.setup_error {
            return Err(error);
        }
        let Settings {
            identity,
            cancel_policy,
            exit_on_eof,
            eof_grace,
            max_line_bytes,
            max_in_flight,
            validate_tool_names,
        } = self.settings;
        let mut tools = self.tools;
        tools.set_validation(validate_tool_names);
        tools.validate()?;
        Ok(Prepared {
            blueprint: Blueprint {
                identity,
                cancel_policy,
                max_in_flight,
                tools,
                offerings: Arc::new(self.offerings),
                interceptor: self.interceptor,
                notification_hook: self.notification_hook,
            },
            exit_on_eof,
            eof_grace,
            max_line_bytes,
        })
    }
}

/// A checked [`Server`]: what each connection starts from, and the transport settings.
pub(crate) struct Prepared {
    pub(crate) blueprint: Blueprint,
    pub(crate) exit_on_eof: bool,
    pub(crate) eof_grace: Duration,
    /// The longest stdio line, and the largest HTTP request body.
    pub(crate) max_line_bytes: usize,
}

/// One `odek-extension: …` line on stderr. Unlike `eprintln!`, never panics when stderr is
/// closed: losing a log line must not take the reader down.
pub(crate) fn log_to_stderr(message: std::fmt::Arguments<'_>) {
    let _ = writeln!(std::io::stderr(), "odek-extension: {message}");
}

/// The reader: one parse per line, then the shared message path, driven to completion before
/// the next line is read, so messages are handled in arrival order.
async fn read_loop<R: AsyncRead + Unpin>(shared: &Arc<Shared>, input: R, max_line_bytes: usize, route: &Route) {
    let mut reader = BoundedLineReader::new(input, max_line_bytes);
    loop {
        match reader.next_line().await {
            Ok(Some(Line::Complete(line))) => {
                if !line.iter().all(u8::is_ascii_whitespace) {
                    handle_message(shared, jsonrpc::parse_message(line), route).await;
                }
            }
            Ok(Some(Line::TooLong { bytes })) => log_to_stderr(format_args!(
                "dropped an incoming line of {bytes} bytes (max_line_bytes={max_line_bytes})"
            )),
            Ok(None) => return,
            Err(error) => {
                log_to_stderr(format_args!("read stdin: {error}"));
                return;
            }
        }
    }
}
