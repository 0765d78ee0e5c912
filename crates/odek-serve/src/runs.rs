//! The runs `odek serve` knows: each one turn of a hosted session, with its state (status,
//! outcome, answer, usage, plan) and its `odek.event/v1` stream kept in a bounded log that
//! every subscriber reads at its own pace — a slow subscriber falls behind (and is told what
//! it lost), it never holds a run back — and the approvals and elicitations it waits on.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use odek::BudgetLimits;
use odek::host::{ApprovalAnswer, ElicitationAnswer, LowerLimits, PlanStep, TurnEnd};
use odek::mcp::elicitation::{Form, MAX_OPEN_ELICITATIONS};
use odek_contract::artifact_ref::ArtifactRef;
use odek_contract::redaction::redact;
use odek_contract::runes::runes_with_ellipsis;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::{Semaphore, oneshot, watch};

/// Events one run's log keeps; older ones are dropped (a subscriber that resumes before the
/// first kept one is told how many it lost).
pub const MAX_LOG_EVENTS: usize = 4096;

/// Bytes of event lines one run's log keeps.
pub const MAX_LOG_BYTES: usize = 4 * 1024 * 1024;

/// Finished runs remembered; the oldest is forgotten past this.
pub const MAX_FINISHED_RUNS: usize = 1000;

/// Event streams of one run open at once.
pub const MAX_SUBSCRIBERS_PER_RUN: usize = 32;

/// Characters of its task a run shows.
const TASK_PREVIEW_CHARS: usize = 200;

/// Artifacts one run lists; later ones are not listed (nor served).
pub const MAX_RUN_ARTIFACTS: usize = 512;

/// Elicitation ids one run remembers having asked (so a late answer to one is told it is over,
/// not unknown); older ones are forgotten.
const MAX_ASKED_ELICITATIONS: usize = 256;

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Running (or waiting for the host's bound on running turns).
    Running,
    /// Over: see the outcome.
    Finished,
}

/// What a run reports of itself.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunView {
    /// The run's id: the `run_id` of its events.
    pub run_id: String,
    /// The session it is a turn of.
    pub session_id: String,
    /// The start of its task (redacted, at most 200 characters).
    pub task: String,
    /// When it was accepted (RFC 3339 UTC).
    pub created_at: String,
    /// Running or finished.
    pub status: Status,
    /// odek's outcome class once finished (`success`, `budget_exceeded`, `cancelled`, …).
    pub outcome: Option<String>,
    /// The final answer (empty unless it succeeded).
    pub answer: String,
    /// Why it failed.
    pub error: Option<String>,
    /// For a budget stop: the limit that ran out.
    pub budget: Option<String>,
    /// Tokens so far (the turn's, once finished), and their estimated cost.
    pub usage: Usage,
    /// The budgets the run runs under: the operator's, lowered by the request.
    pub limits: LowerLimits,
    /// The plan's steps, when the run keeps one.
    pub plan: Vec<Step>,
    /// Approvals waiting for an answer.
    pub pending_approvals: Vec<u64>,
    /// Elicitations waiting for an answer.
    pub pending_elicitations: Vec<u64>,
    /// The verified artifacts its tools returned, each served by id at
    /// `/api/runs/{run_id}/artifacts/{id}`.
    pub artifacts: Vec<ArtifactView>,
}

/// Token counts.
#[derive(Debug, Clone, Copy, Default, Serialize, JsonSchema)]
pub struct Usage {
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Their estimated cost in USD, when the model's prices are known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// What a run tells of one artifact (never its path).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ArtifactView {
    /// The id it is served by (unique in the run).
    pub id: String,
    /// The tool whose result carried it.
    pub tool: String,
    /// Its declared media type.
    pub media_type: String,
    /// Its size when it was verified.
    pub size_bytes: u64,
    /// Its declared and verified digest; empty when it declared none (then it is not served).
    pub sha256: String,
    /// The summary its producer gave.
    pub summary: String,
}

/// One plan step.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Step {
    /// The step's title.
    pub title: String,
    /// `pending`, `in_progress`, `done`, `blocked`.
    pub status: String,
}

/// The bounded event log of a run.
#[derive(Default)]
struct Log {
    /// The sequence number of the first line kept (1-based; lines are numbered in order).
    first: u64,
    lines: VecDeque<Arc<str>>,
    bytes: usize,
    /// No line follows.
    closed: bool,
}

impl Log {
    fn push(&mut self, line: Arc<str>) -> u64 {
        if self.first == 0 {
            self.first = 1;
        }
        self.bytes += line.len();
        self.lines.push_back(line);
        while self.lines.len() > MAX_LOG_EVENTS || (self.bytes > MAX_LOG_BYTES && self.lines.len() > 1) {
            if let Some(dropped) = self.lines.pop_front() {
                self.bytes -= dropped.len();
                self.first += 1;
            }
        }
        self.next() - 1
    }

    /// The number the next line gets.
    fn next(&self) -> u64 {
        self.first.max(1) + self.lines.len() as u64
    }
}

/// What a subscriber reads after `after`.
pub enum Read {
    /// Lines, each with its sequence number; `lost` lines before them are gone from the log.
    Lines { lines: Vec<(u64, Arc<str>)>, lost: u64 },
    /// Nothing new yet.
    Nothing,
    /// Nothing new, and nothing will come.
    Ended,
}

/// Whether `line` is a run's last event.
fn is_last_event(line: &str) -> bool {
    ["run_completed", "run_failed"]
        .iter()
        .any(|kind| line.starts_with(&format!("{{\"schema\":\"odek.event/v1\",\"type\":\"{kind}\"")))
}

/// One run.
pub struct Run {
    pub id: String,
    pub session_id: String,
    pub created_at: String,
    /// The start of the task, redacted.
    task: String,
    limits: LowerLimits,
    prices: BudgetLimits,
    state: Mutex<State>,
    log: Mutex<Log>,
    /// The next sequence number, for subscribers to wait on.
    written: watch::Sender<u64>,
    /// The run's last event, held until the run's state is final.
    last: Mutex<Option<Arc<str>>>,
    approvals: Mutex<HashMap<u64, oneshot::Sender<ApprovalAnswer>>>,
    elicitations: Mutex<Elicitations>,
    /// Event streams of this run open now.
    subscribers: Arc<Semaphore>,
}

/// The elicitations of a run: those waiting, and the ids asked lately.
#[derive(Default)]
struct Elicitations {
    open: HashMap<u64, OpenElicitation>,
    asked: VecDeque<u64>,
}

/// An elicitation waiting: its form (none for URL mode) and where its answer goes.
struct OpenElicitation {
    form: Option<Form>,
    answer: oneshot::Sender<ElicitationAnswer>,
}

/// Why an answer to an elicitation was not taken.
#[derive(Debug, PartialEq, Eq)]
pub enum ElicitationRefusal {
    /// The run never asked it (or asked it too long ago to remember).
    Unknown,
    /// Answered, expired, or the run is over.
    NotWaiting,
    /// The answer does not fit the request; it stays open.
    Invalid(String),
}

struct State {
    status: Status,
    end: Option<TurnEnd>,
    usage: odek::Usage,
    plan: Vec<Step>,
    artifacts: Vec<(String, String, ArtifactRef)>,
}

impl Run {
    pub fn new(id: String, session_id: String, task: &str, limits: LowerLimits, prices: BudgetLimits) -> Arc<Run> {
        let task = runes_with_ellipsis(&redact(task), TASK_PREVIEW_CHARS).into_owned();
        let created_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let state = State {
            status: Status::Running,
            end: None,
            usage: odek::Usage::default(),
            plan: Vec::new(),
            artifacts: Vec::new(),
        };
        Arc::new(Run {
            id,
            session_id,
            created_at,
            task,
            limits,
            prices,
            state: Mutex::new(state),
            log: Mutex::new(Log::default()),
            written: watch::Sender::new(0),
            last: Mutex::new(None),
            approvals: Mutex::new(HashMap::new()),
            elicitations: Mutex::new(Elicitations::default()),
            subscribers: Arc::new(Semaphore::new(MAX_SUBSCRIBERS_PER_RUN)),
        })
    }

    /// Appends one event line (ignored once the run's log is closed). The run's last event
    /// (`run_completed`, `run_failed`) is held until [`Run::finish`]: a client that reads it
    /// finds the run finished, with its answer, when it asks.
    pub fn push_event(&self, line: &str) {
        if is_last_event(line) {
            *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::from(line));
            return;
        }
        self.append(Arc::from(line));
    }

    fn append(&self, line: Arc<str>) {
        let next = {
            let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
            if log.closed {
                return;
            }
            log.push(line);
            log.next()
        };
        self.written.send_replace(next);
    }

    /// Waits, at most `deadline`, until the log holds the `tool_call_started` of `call_id` —
    /// the runtime's events come through a queue, so an approval asked about that call can be
    /// ahead of them; its `approval_requested` follows the call's start, as events.md §11 has it.
    pub async fn wait_for_call(&self, call_id: &str, deadline: std::time::Duration) {
        let needle = format!("\"call_id\":{}", serde_json::Value::from(call_id));
        let mut written = self.subscribe();
        let started = |run: &Run| {
            let log = run.log.lock().unwrap_or_else(PoisonError::into_inner);
            log.lines.iter().rev().any(|line| line.contains("\"type\":\"tool_call_started\"") && line.contains(&needle))
        };
        let _ = tokio::time::timeout(deadline, async {
            loop {
                written.borrow_and_update();
                if started(self) || written.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
    }

    /// An event of serve's own (`approval_requested`, `approval_resolved`), shaped as the
    /// run's other events.
    pub fn push_own_event(&self, kind: &str, tool: Option<&str>, data: Value) {
        let timestamp = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        let mut event = serde_json::Map::new();
        event.insert("schema".into(), json!("odek.event/v1"));
        event.insert("type".into(), json!(kind));
        event.insert("run_id".into(), json!(self.id));
        event.insert("session_id".into(), json!(self.session_id));
        if let Some(tool) = tool {
            event.insert("tool".into(), json!(tool));
        }
        event.insert("timestamp".into(), json!(timestamp));
        event.insert("data".into(), odek_contract::canonical_json::sorted_value(data));
        self.push_event(&Value::Object(event).to_string());
    }

    /// The lines after sequence number `after`.
    pub fn read(&self, after: u64) -> Read {
        let log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        let next = log.next();
        if after + 1 >= next {
            return if log.closed { Read::Ended } else { Read::Nothing };
        }
        let start = (after + 1).max(log.first.max(1));
        let lost = start - (after + 1);
        let skip = usize::try_from(start - log.first.max(1)).unwrap_or(usize::MAX);
        let lines =
            log.lines.iter().skip(skip).enumerate().map(|(index, line)| (start + index as u64, Arc::clone(line)));
        Read::Lines { lines: lines.collect(), lost }
    }

    /// Waits until a line after `after` is written or the log closes.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.written.subscribe()
    }

    /// The turn ended: the state takes its end, and the log closes.
    pub fn finish(&self, end: TurnEnd) {
        {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.status = Status::Finished;
            state.usage = end.usage;
            state.end = Some(end);
        }
        if let Some(last) = self.last.lock().unwrap_or_else(PoisonError::into_inner).take() {
            self.append(last);
        }
        let next = {
            let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
            log.closed = true;
            // What an idle finished run holds is its events, nothing spare.
            log.lines.shrink_to_fit();
            log.next()
        };
        // Every subscriber wakes (a send marks the value changed even when it is the same)
        // and finds the stream ended.
        self.written.send_replace(next);
        self.approvals.lock().unwrap_or_else(PoisonError::into_inner).clear();
        self.elicitations.lock().unwrap_or_else(PoisonError::into_inner).open.clear();
    }

    pub fn set_usage(&self, usage: odek::Usage) {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).usage = usage;
    }

    /// Lists the artifacts a call of `tool` returned; an id the run lists already gets a
    /// `-<n>` suffix, so each is served by one id.
    pub fn add_artifacts(&self, tool: &str, artifacts: Vec<ArtifactRef>) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        for artifact in artifacts {
            if state.artifacts.len() >= MAX_RUN_ARTIFACTS {
                return;
            }
            let taken = |id: &str| state.artifacts.iter().any(|(listed, _, _)| listed == id);
            let mut id = artifact.id.clone();
            let mut copy = 1;
            while taken(&id) {
                copy += 1;
                id = format!("{}-{copy}", artifact.id);
            }
            state.artifacts.push((id, tool.to_owned(), artifact));
        }
    }

    /// The artifact the run lists as `id`.
    pub fn artifact(&self, id: &str) -> Option<ArtifactRef> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.artifacts.iter().find(|(listed, _, _)| listed == id).map(|(_, _, artifact)| artifact.clone())
    }

    pub fn set_plan(&self, steps: &[PlanStep]) {
        let plan =
            steps.iter().map(|step| Step { title: step.title.clone(), status: step.status.to_owned() }).collect();
        self.state.lock().unwrap_or_else(PoisonError::into_inner).plan = plan;
    }

    /// The places for this run's event streams (at most [`MAX_SUBSCRIBERS_PER_RUN`] open).
    pub fn subscribers(&self) -> Arc<Semaphore> {
        Arc::clone(&self.subscribers)
    }

    pub fn usage(&self) -> Usage {
        let usage = self.state.lock().unwrap_or_else(PoisonError::into_inner).usage;
        self.priced(usage)
    }

    /// `usage` with its estimated cost, when the run's model has prices.
    fn priced(&self, usage: odek::Usage) -> Usage {
        let priced = self.prices.input_price_per_million > 0.0 && self.prices.output_price_per_million > 0.0;
        Usage {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cost_usd: priced.then(|| self.prices.cost_usd(usage)),
        }
    }

    pub fn is_running(&self) -> bool {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).status == Status::Running
    }

    /// Waits for the answer to approval `id`.
    pub fn pend(&self, id: u64) -> oneshot::Receiver<ApprovalAnswer> {
        let (answer, answered) = oneshot::channel();
        self.approvals.lock().unwrap_or_else(PoisonError::into_inner).insert(id, answer);
        answered
    }

    /// Answers approval `id`; false when it is not (or no longer) waiting.
    pub fn answer(&self, id: u64, answer: ApprovalAnswer) -> bool {
        let pending = self.approvals.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
        pending.is_some_and(|pending| pending.send(answer).is_ok())
    }

    /// Forgets approval `id` (its asker gave up); true when it was still waiting.
    pub fn forget(&self, id: u64) -> bool {
        self.approvals.lock().unwrap_or_else(PoisonError::into_inner).remove(&id).is_some()
    }

    /// Waits for the answer to elicitation `id` (`form`: what an accepted answer must fill in;
    /// none for URL mode); `None` when [`MAX_OPEN_ELICITATIONS`] wait already or the run is over.
    pub fn pend_elicitation(&self, id: u64, form: Option<Form>) -> Option<oneshot::Receiver<ElicitationAnswer>> {
        if !self.is_running() {
            return None;
        }
        let mut elicitations = self.elicitations.lock().unwrap_or_else(PoisonError::into_inner);
        if elicitations.open.len() >= MAX_OPEN_ELICITATIONS {
            return None;
        }
        let (answer, answered) = oneshot::channel();
        elicitations.open.insert(id, OpenElicitation { form, answer });
        elicitations.asked.push_back(id);
        while elicitations.asked.len() > MAX_ASKED_ELICITATIONS {
            elicitations.asked.pop_front();
        }
        Some(answered)
    }

    /// Answers elicitation `id` once the answer fits its request: an accepted form by the form's
    /// rules ([`Form::check_answer`]), an accepted URL with no content. A refused answer leaves
    /// the elicitation waiting.
    pub fn answer_elicitation(&self, id: u64, answer: ElicitationAnswer) -> Result<(), ElicitationRefusal> {
        let mut elicitations = self.elicitations.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(open) = elicitations.open.get(&id) else {
            return Err(if elicitations.asked.contains(&id) {
                ElicitationRefusal::NotWaiting
            } else {
                ElicitationRefusal::Unknown
            });
        };
        if let ElicitationAnswer::Accept(content) = &answer {
            match &open.form {
                Some(form) => form.check_answer(content).map_err(ElicitationRefusal::Invalid)?,
                None if !content.is_empty() => {
                    return Err(ElicitationRefusal::Invalid("a URL elicitation's answer has no content".to_owned()));
                }
                None => {}
            }
        }
        let open = elicitations.open.remove(&id).ok_or(ElicitationRefusal::NotWaiting)?;
        open.answer.send(answer).map_err(|_| ElicitationRefusal::NotWaiting)
    }

    /// Forgets elicitation `id` (its asker gave up); true when it was still waiting.
    pub fn forget_elicitation(&self, id: u64) -> bool {
        self.elicitations.lock().unwrap_or_else(PoisonError::into_inner).open.remove(&id).is_some()
    }

    pub fn view(&self) -> RunView {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut pending: Vec<u64> =
            self.approvals.lock().unwrap_or_else(PoisonError::into_inner).keys().copied().collect();
        pending.sort_unstable();
        let mut eliciting: Vec<u64> =
            self.elicitations.lock().unwrap_or_else(PoisonError::into_inner).open.keys().copied().collect();
        eliciting.sort_unstable();
        let end = state.end.as_ref();
        RunView {
            run_id: self.id.clone(),
            session_id: self.session_id.clone(),
            task: self.task.clone(),
            created_at: self.created_at.clone(),
            status: state.status,
            outcome: end.map(|end| end.outcome.as_str().to_owned()),
            answer: end.map(|end| end.answer.clone()).unwrap_or_default(),
            error: end.and_then(|end| end.error.clone()),
            budget: end.and_then(|end| end.budget.clone()),
            usage: self.priced(state.usage),
            limits: self.limits,
            plan: state.plan.clone(),
            pending_approvals: pending,
            pending_elicitations: eliciting,
            artifacts: state
                .artifacts
                .iter()
                .map(|(id, tool, artifact)| ArtifactView {
                    id: id.clone(),
                    tool: tool.clone(),
                    media_type: artifact.media_type.clone(),
                    size_bytes: artifact.file_size,
                    sha256: artifact.sha256.clone(),
                    summary: artifact.summary.clone(),
                })
                .collect(),
        }
    }
}

/// Every run of the process, and which run each session is running.
#[derive(Default)]
pub struct Runs {
    by_id: Mutex<HashMap<String, Arc<Run>>>,
    /// Run ids, oldest first.
    order: Mutex<VecDeque<String>>,
    /// Session id → its running run.
    running: Mutex<HashMap<String, Arc<Run>>>,
}

impl Runs {
    pub fn get(&self, id: &str) -> Option<Arc<Run>> {
        self.by_id.lock().unwrap_or_else(PoisonError::into_inner).get(id).cloned()
    }

    /// The running run of session `session`.
    pub fn of_session(&self, session: &str) -> Option<Arc<Run>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner).get(session).cloned()
    }

    /// How many runs are running.
    pub fn running_count(&self) -> usize {
        self.running.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// Registers `run` as its session's running run, unless `max` runs run already (`false`).
    pub fn start(&self, run: &Arc<Run>, max: usize) -> bool {
        {
            let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
            if running.len() >= max || running.contains_key(&run.session_id) {
                return false;
            }
            running.insert(run.session_id.clone(), Arc::clone(run));
        }
        self.by_id.lock().unwrap_or_else(PoisonError::into_inner).insert(run.id.clone(), Arc::clone(run));
        let mut order = self.order.lock().unwrap_or_else(PoisonError::into_inner);
        order.push_back(run.id.clone());
        // Past the bound the oldest finished runs are forgotten.
        while order.len() > MAX_FINISHED_RUNS {
            let Some(oldest) = order.front().cloned() else { break };
            let mut by_id = self.by_id.lock().unwrap_or_else(PoisonError::into_inner);
            if by_id.get(&oldest).is_some_and(|run| run.is_running()) {
                break;
            }
            by_id.remove(&oldest);
            order.pop_front();
        }
        true
    }

    /// The run of its session is over.
    pub fn ended(&self, run: &Run) {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        if running.get(&run.session_id).is_some_and(|current| current.id == run.id) {
            running.remove(&run.session_id);
        }
    }

    /// Every run, newest first.
    pub fn list(&self) -> Vec<RunView> {
        let order = self.order.lock().unwrap_or_else(PoisonError::into_inner).clone();
        order.iter().rev().filter_map(|id| self.get(id)).map(|run| run.view()).collect()
    }

    /// Token totals of every run remembered.
    pub fn usage(&self) -> Usage {
        self.by_id.lock().unwrap_or_else(PoisonError::into_inner).values().map(|run| run.usage()).fold(
            Usage::default(),
            |total, usage| Usage {
                input_tokens: total.input_tokens + usage.input_tokens,
                output_tokens: total.output_tokens + usage.output_tokens,
                cost_usd: match (total.cost_usd, usage.cost_usd) {
                    (Some(total), Some(cost)) => Some(total + cost),
                    (total, cost) => total.or(cost),
                },
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_is_bounded_and_a_late_reader_learns_what_it_lost() {
        let run = Run::new("r".into(), "s".into(), "t", LowerLimits::default(), BudgetLimits::default());
        for index in 0..(MAX_LOG_EVENTS + 10) {
            run.push_event(&format!("{{\"n\":{index}}}"));
        }
        let Read::Lines { lines, lost } = run.read(0) else { panic!("lines expected") };
        assert_eq!(lost, 10);
        assert_eq!(lines.len(), MAX_LOG_EVENTS);
        assert_eq!(lines[0].0, 11);
        let Read::Lines { lines, lost } = run.read(MAX_LOG_EVENTS as u64 + 8) else { panic!() };
        assert_eq!((lost, lines.len(), lines[0].0), (0, 2, MAX_LOG_EVENTS as u64 + 9));
        assert!(matches!(run.read(MAX_LOG_EVENTS as u64 + 10), Read::Nothing));
    }

    #[test]
    fn the_last_event_is_read_only_once_the_run_is_finished() {
        let run = Run::new("r".into(), "s".into(), "t", LowerLimits::default(), BudgetLimits::default());
        run.push_event(r#"{"schema":"odek.event/v1","type":"run_started"}"#);
        run.push_event(r#"{"schema":"odek.event/v1","type":"run_completed","data":{}}"#);
        let Read::Lines { lines, .. } = run.read(0) else { panic!() };
        assert_eq!(lines.len(), 1, "held back");
        assert!(matches!(run.read(1), Read::Nothing));
        run.finish(odek::host::TurnEnd {
            outcome: odek_contract::outcome::Outcome::Success,
            stop: odek::host::StopReason::EndTurn,
            answer: "a".into(),
            usage: odek::Usage::default(),
            error: None,
            budget: None,
        });
        let Read::Lines { lines, .. } = run.read(1) else { panic!() };
        assert!(lines[0].1.contains("run_completed"));
        assert_eq!(run.view().status, Status::Finished);
        assert!(matches!(run.read(2), Read::Ended));
    }

    #[test]
    fn an_elicitation_answer_must_fit_its_form_and_at_most_the_bound_wait_red() {
        use odek::mcp::elicitation::{ElicitationKind, read_elicitation};
        let params = r#"{"message": "m", "requestedSchema": {"type": "object",
            "properties": {"age": {"type": "integer", "maximum": 150}}, "required": ["age"]}}"#;
        let ElicitationKind::Form(form) = read_elicitation("s", Some(params)).unwrap().kind else { panic!() };
        let run = Run::new("r".into(), "s".into(), "t", LowerLimits::default(), BudgetLimits::default());
        let mut answered = run.pend_elicitation(1, Some(form.clone())).unwrap();
        let accept = |content: Value| ElicitationAnswer::Accept(content.as_object().unwrap().clone());
        assert_eq!(
            run.answer_elicitation(1, accept(json!({"age": 151}))),
            Err(ElicitationRefusal::Invalid("age: at most 150".into()))
        );
        assert!(answered.try_recv().is_err(), "a refused answer reaches nobody");
        assert_eq!(run.view().pending_elicitations, [1], "and the request stays open");
        assert_eq!(run.answer_elicitation(1, accept(json!({"age": 7}))), Ok(()));
        assert_eq!(answered.try_recv().unwrap(), accept(json!({"age": 7})));
        assert_eq!(run.answer_elicitation(1, ElicitationAnswer::Decline), Err(ElicitationRefusal::NotWaiting));
        assert_eq!(run.answer_elicitation(2, ElicitationAnswer::Decline), Err(ElicitationRefusal::Unknown));

        for id in 10..10 + MAX_OPEN_ELICITATIONS as u64 {
            assert!(run.pend_elicitation(id, None).is_some());
        }
        assert!(run.pend_elicitation(99, Some(form)).is_none(), "past the bound the policy answers");
        assert_eq!(
            run.answer_elicitation(10, accept(json!({"x": 1}))),
            Err(ElicitationRefusal::Invalid("a URL elicitation's answer has no content".into()))
        );
        assert!(run.forget_elicitation(10));
        assert!(!run.forget_elicitation(10));
    }

    #[test]
    fn a_resumed_reader_gets_each_line_once_in_order() {
        let run = Run::new("r".into(), "s".into(), "t", LowerLimits::default(), BudgetLimits::default());
        for index in 1..=5 {
            run.push_event(&format!("line {index}"));
        }
        let Read::Lines { lines, lost } = run.read(2) else { panic!() };
        assert_eq!(lost, 0);
        let numbers: Vec<u64> = lines.iter().map(|(seq, _)| *seq).collect();
        assert_eq!(numbers, [3, 4, 5]);
        assert_eq!(&*lines[0].1, "line 3");
    }
}
