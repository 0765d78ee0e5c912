//! \[beyond\] Issue 35: a server's `elicitation/create` during a `tools/call`, answered through the
//! hub's elicitation settings — each policy, a person's answer, the bounds — over stdio and over
//! Streamable HTTP. The fixture's `elicit` tool (`--mode elicitation`) returns the reply it got.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use odek_mcp::approval::ApproveAll;
use odek_mcp::elicitation::{
    ElicitFuture, ElicitationAnswer, ElicitationKind, ElicitationPolicy, ElicitationRequest, Elicited, Elicitor,
};
use odek_mcp::{ElicitationSettings, McpEvent, McpHub};
use serde_json::{Map, Value, json};
use support::{Fixture, Recorder, Transport, call, options, spec};

support::over_both_transports!(
    async:
    the_default_policy_declines,
    cancel_policy_cancels,
    accept_defaults_accepts_the_form_filled_with_its_defaults,
    accept_defaults_declines_a_form_with_a_required_field_without_default_and_every_url,
    a_ten_thousand_field_schema_is_refused_with_an_error_red,
    a_person_s_answer_is_sent_and_never_in_the_events,
    an_answer_that_does_not_fit_the_form_is_cancelled_red,
    nobody_answering_in_time_cancels,
    a_person_slower_than_the_server_timeout_does_not_fail_the_call,
);

async fn start_with(
    transport: Transport,
    settings: ElicitationSettings,
    timeout_seconds: i64,
) -> (McpHub, Arc<Recorder>, Fixture) {
    let mut fixture = Fixture::over(transport, &["--mode", "elicitation"]);
    fixture.entry.timeout_seconds = timeout_seconds;
    let recorder = Arc::new(Recorder::default());
    let options = odek_mcp::HubOptions { elicitation: settings, ..options(&recorder, Arc::new(ApproveAll)) };
    let hub = McpHub::start(vec![spec("fx", &fixture.entry)], options).await.expect("servers start");
    (hub, recorder, fixture)
}

fn policy(policy: ElicitationPolicy) -> ElicitationSettings {
    ElicitationSettings::policy(policy)
}

fn elicitation_events(recorder: &Recorder) -> Vec<McpEvent> {
    recorder
        .events()
        .into_iter()
        .filter(|event| matches!(event, McpEvent::ElicitationAnswered { .. } | McpEvent::ElicitationDeclined { .. }))
        .collect()
}

fn declined(mode: &'static str, action: Option<&'static str>, reason: &'static str) -> McpEvent {
    McpEvent::ElicitationDeclined { server: "fx".into(), mode, action, reason }
}

async fn the_default_policy_declines(transport: Transport) {
    let (hub, recorder, _fixture) = start_with(transport, ElicitationSettings::default(), 0).await;
    assert_eq!(call(&hub, "fx__elicit", "{}").await.unwrap(), r#"elicitation result: {"action":"decline"}"#);
    assert_eq!(elicitation_events(&recorder), [declined("form", Some("decline"), "policy")]);
    hub.shutdown().await;
}

async fn cancel_policy_cancels(transport: Transport) {
    let (hub, recorder, _fixture) = start_with(transport, policy(ElicitationPolicy::Cancel), 0).await;
    assert_eq!(call(&hub, "fx__elicit", "{}").await.unwrap(), r#"elicitation result: {"action":"cancel"}"#);
    assert_eq!(elicitation_events(&recorder), [declined("form", Some("cancel"), "policy")]);
    hub.shutdown().await;
}

async fn accept_defaults_accepts_the_form_filled_with_its_defaults(transport: Transport) {
    let (hub, recorder, _fixture) = start_with(transport, policy(ElicitationPolicy::AcceptDefaults), 0).await;
    assert_eq!(
        call(&hub, "fx__elicit", "{}").await.unwrap(),
        r#"elicitation result: {"action":"accept","content":{"age":36,"colour":"green","name":"Ada"}}"#
    );
    assert_eq!(
        elicitation_events(&recorder),
        [McpEvent::ElicitationAnswered { server: "fx".into(), mode: "form", action: "accept" }]
    );
    hub.shutdown().await;
}

async fn accept_defaults_declines_a_form_with_a_required_field_without_default_and_every_url(transport: Transport) {
    let (hub, recorder, _fixture) = start_with(transport, policy(ElicitationPolicy::AcceptDefaults), 0).await;
    let schema =
        json!({"schema": {"type": "object", "properties": {"token": {"type": "string"}}, "required": ["token"]}});
    assert_eq!(
        call(&hub, "fx__elicit", &schema.to_string()).await.unwrap(),
        r#"elicitation result: {"action":"decline"}"#
    );
    let url = json!({"url": "https://example.com/connect", "message": "Connect your account"});
    assert_eq!(
        call(&hub, "fx__elicit", &url.to_string()).await.unwrap(),
        r#"elicitation result: {"action":"decline"}"#
    );
    assert_eq!(
        elicitation_events(&recorder),
        [declined("form", Some("decline"), "policy"), declined("url", Some("decline"), "policy")]
    );
    hub.shutdown().await;
}

async fn a_ten_thousand_field_schema_is_refused_with_an_error_red(transport: Transport) {
    let (hub, recorder, _fixture) = start_with(transport, policy(ElicitationPolicy::AcceptDefaults), 0).await;
    assert_eq!(
        call(&hub, "fx__elicit", r#"{"fields":10000}"#).await.unwrap_err(),
        "mcpclient fx: tool elicit returned error: elicit: MCP error -32602: requestedSchema has more than 100 properties"
    );
    assert_eq!(elicitation_events(&recorder), [declined("form", None, "invalid_request")]);
    assert_eq!(
        recorder.warnings(),
        ["mcp server \"fx\": elicitation refused: requestedSchema has more than 100 properties"]
    );
    // The connection goes on.
    assert_eq!(call(&hub, "fx__echo", r#"{"text":"still here"}"#).await.unwrap(), "still here");
    hub.shutdown().await;
}

/// Answers each form with `content` (after recording what it was asked).
struct Person {
    content: Value,
    asked: Mutex<Vec<ElicitationRequest>>,
}

impl Elicitor for Person {
    fn elicit(&self, request: ElicitationRequest) -> ElicitFuture {
        self.asked.lock().unwrap().push(request);
        let content: Map<String, Value> = self.content.as_object().unwrap().clone();
        Box::pin(async move { Elicited::Answered(ElicitationAnswer::Accept(content)) })
    }
}

fn person(content: Value) -> Arc<Person> {
    Arc::new(Person { content, asked: Mutex::new(Vec::new()) })
}

async fn a_person_s_answer_is_sent_and_never_in_the_events(transport: Transport) {
    let person = person(json!({"name": "Grace", "age": 85, "colour": "blue"}));
    let settings = ElicitationSettings { elicitor: person.clone(), timeout: Duration::from_secs(60) };
    let (hub, recorder, _fixture) = start_with(transport, settings, 0).await;
    assert_eq!(
        call(&hub, "fx__elicit", r#"{"message":"Who are you?"}"#).await.unwrap(),
        r#"elicitation result: {"action":"accept","content":{"age":85,"colour":"blue","name":"Grace"}}"#
    );
    let asked = person.asked.lock().unwrap().clone();
    let [request] = asked.as_slice() else { panic!("asked once: {asked:?}") };
    assert_eq!((request.server.as_str(), request.message.as_str()), ("fx", "Who are you?"));
    let ElicitationKind::Form(form) = &request.kind else { panic!("a form") };
    let names: Vec<&str> = form.fields.iter().map(|field| field.name.as_str()).collect();
    assert_eq!(names, ["age", "colour", "name"], "in the server's order");
    assert_eq!(form.defaults(), json!({"name": "Ada", "age": 36, "colour": "green"}).as_object().unwrap().clone());
    let events = elicitation_events(&recorder);
    assert_eq!(events, [McpEvent::ElicitationAnswered { server: "fx".into(), mode: "form", action: "accept" }]);
    assert!(!format!("{events:?}").contains("Grace"));
    hub.shutdown().await;
}

async fn an_answer_that_does_not_fit_the_form_is_cancelled_red(transport: Transport) {
    let settings =
        ElicitationSettings { elicitor: person(json!({"age": 500, "extra": "x"})), timeout: Duration::from_secs(60) };
    let (hub, recorder, _fixture) = start_with(transport, settings, 0).await;
    assert_eq!(call(&hub, "fx__elicit", "{}").await.unwrap(), r#"elicitation result: {"action":"cancel"}"#);
    assert_eq!(elicitation_events(&recorder), [declined("form", Some("cancel"), "invalid_answer")]);
    hub.shutdown().await;
}

/// Never answers.
struct Away;

impl Elicitor for Away {
    fn elicit(&self, _request: ElicitationRequest) -> ElicitFuture {
        Box::pin(std::future::pending())
    }
}

async fn nobody_answering_in_time_cancels(transport: Transport) {
    let settings = ElicitationSettings { elicitor: Arc::new(Away), timeout: Duration::from_millis(300) };
    let (hub, recorder, _fixture) = start_with(transport, settings, 0).await;
    assert_eq!(call(&hub, "fx__elicit", "{}").await.unwrap(), r#"elicitation result: {"action":"cancel"}"#);
    assert_eq!(elicitation_events(&recorder), [declined("form", Some("cancel"), "no_answer")]);
    hub.shutdown().await;
}

/// Answers once `answer` is sent (or declines when it is dropped).
struct Waiting(Mutex<Option<tokio::sync::oneshot::Receiver<()>>>, tokio::sync::Notify);

impl Elicitor for Waiting {
    fn elicit(&self, request: ElicitationRequest) -> ElicitFuture {
        let receiver = self.0.lock().unwrap().take();
        self.1.notify_one();
        let ElicitationKind::Form(form) = request.kind else { panic!("a form") };
        Box::pin(async move {
            let answered = match receiver {
                Some(receiver) => receiver.await.is_ok(),
                None => false,
            };
            if answered {
                Elicited::Answered(ElicitationAnswer::Accept(form.filled_with_defaults().unwrap()))
            } else {
                Elicited::Answered(ElicitationAnswer::Decline)
            }
        })
    }
}

/// The server's `timeout_seconds` is 1; the person takes longer. Before: the call failed with
/// the server's timeout while the form was on the screen.
async fn a_person_slower_than_the_server_timeout_does_not_fail_the_call(transport: Transport) {
    let (answer, receiver) = tokio::sync::oneshot::channel();
    let waiting = Arc::new(Waiting(Mutex::new(Some(receiver)), tokio::sync::Notify::new()));
    let settings = ElicitationSettings { elicitor: waiting.clone(), timeout: Duration::from_secs(60) };
    let (hub, _recorder, _fixture) = start_with(transport, settings, 1).await;
    let hub = Arc::new(hub);
    let asked = waiting.1.notified();
    let calling = tokio::spawn({
        let hub = Arc::clone(&hub);
        async move { call(&hub, "fx__elicit", "{}").await }
    });
    asked.await;
    // The person thinks for longer than the server's own timeout: that is the case under test.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    answer.send(()).unwrap();
    assert_eq!(
        calling.await.unwrap().unwrap(),
        r#"elicitation result: {"action":"accept","content":{"age":36,"colour":"green","name":"Ada"}}"#
    );
    hub.shutdown().await;
}
