//! `odek repl`: turn after turn of one runtime session, at a terminal or scripted. Each input is
//! a turn (or a slash command, [`slash`]); the session is persisted and locked like a
//! `--session` run, saved after each step, so `odek repl --id` and `odek continue --id` resume
//! it. Budgets hold per turn (runtime, iterations) and for the whole REPL (tokens, cost, tool
//! calls); a budget stop ends that turn only.
//!
//! At a terminal (stdin and stdout both one) inputs come from the line editor ([`input`]) with
//! the history of [`history`]; otherwise each line of stdin is one input and stdout carries only
//! answers and command output. Ctrl-C cancels the running turn, at the prompt twice in a row (or
//! Ctrl-D) it leaves; SIGTERM and SIGHUP end the REPL once the running turn stopped
//! ([`crate::repl_interrupt`]). The exit code: 0 at a terminal; scripted, that of the last input
//! (0, 1 for a failure or a refused input, 4 for a budget stop); `128 + <signal>` after SIGTERM
//! or SIGHUP.

mod history;
mod input;
mod long_line;
mod slash;

use std::io::{IsTerminal, Write};
use std::sync::Arc;

use nix::sys::termios::{LocalFlags, SetArg, Termios, tcgetattr, tcsetattr};
use odek::agent::session::{SessionId, SessionLock, SessionStore, safe_state};
use odek::llm::Message;
use odek::{Runtime, Session};
use odek_contract::redaction::redact;
use odek_contract::terminal_text::{Layout, sanitise_for_terminal};

use self::history::History;
use self::input::{Input, Read};
use self::slash::{Entered, Slash};
use super::run::{load_setup, lock_and_load, overrides, print_answer};
use crate::cli::ReplArgs;
use crate::outcome::CommandError;
use crate::repl_interrupt::ReplSignals;
use crate::terminal::colour_allowed;
use crate::terminal::repl_face::ReplFace;

/// Flags `odek repl --id` refuses: the session pins its provider and endpoint.
const PINNED_BY_SESSION: [&str; 2] = ["--provider", "--base-url"];

pub async fn run(args: ReplArgs) -> Result<(), CommandError> {
    if args.events_jsonl.as_deref() == Some("-") {
        return Err(CommandError::Fatal(
            "events-jsonl: - writes the events to stdout, which carries the REPL's answers: give a file".into(),
        ));
    }
    if args.id.is_some() {
        let given = [args.provider.is_some(), args.base_url.is_some()];
        if let Some((flag, _)) = PINNED_BY_SESSION.iter().zip(given).find(|(_, given)| *given) {
            return Err(CommandError::Verbatim(format!(
                "odek repl: {flag} is pinned by the session and cannot be changed"
            )));
        }
    }
    let run_args = args.as_run_args();
    let overrides = overrides(&run_args.common, Some(&run_args))?;
    let setup = load_setup()?;
    let store = setup.session_store()?;
    let resumed = match &args.id {
        Some(id) => Some(lock_and_load(&store, &SessionId::parse(id)?)?),
        None => None,
    };
    let face = Arc::new(ReplFace::new(args.quiet));
    let mut runtime = Runtime::new(setup, &overrides, face.clone())?;
    let at_terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let settings = runtime.settings();
    face.terminal().set_colour(colour_allowed(&runtime.setup().loaded.env) && !settings.no_color);
    face.set_streaming(settings.stream && std::io::stdout().is_terminal());
    let (history, record, lock) = match resumed {
        Some((record, lock)) => {
            runtime.adopt_session(&record)?;
            (safe_state(&record.messages), record, lock)
        }
        None => {
            let (record, lock) = runtime.new_session_record()?;
            (vec![Message::system(runtime.system_prompt(None))], record, lock)
        }
    };
    let mut session = runtime.session(history, Some(record))?;
    if let Some(model) = &args.model {
        session.set_model(model);
    }
    let signals = ReplSignals::install();
    let (saved, entries) = History::load(&runtime.setup().sources.odek_dir());
    let input = if at_terminal { Input::editor(&entries) } else { None }.unwrap_or_else(Input::lines);
    let terminal_mode = TerminalMode::save(input.is_editor());
    let mut repl =
        Repl { runtime: &runtime, session, lock, store, face, signals, input, history: saved, terminal_mode };
    let outcome = repl.run().await;
    let Repl { session, lock, signals, terminal_mode, .. } = repl;
    session.close().await;
    drop(lock);
    terminal_mode.restore();
    match signals.ending() {
        Some(signal) => Err(CommandError::Stopped { signal, error: Box::new(CommandError::Reported) }),
        None if at_terminal => Ok(()),
        None => outcome,
    }
}

/// A running REPL.
struct Repl<'r> {
    runtime: &'r Runtime,
    session: Session<'r>,
    /// The lock of the session file in use (`/new` swaps it).
    lock: SessionLock,
    store: SessionStore,
    face: Arc<ReplFace>,
    signals: ReplSignals,
    input: Input,
    history: History,
    terminal_mode: TerminalMode,
}

/// What an input asks of the loop.
enum Next {
    Go(Result<(), CommandError>),
    Exit,
}

impl Repl<'_> {
    /// Reads and runs inputs until the end; the outcome of the last one.
    async fn run(&mut self) -> Result<(), CommandError> {
        let mut last = Ok(());
        let mut interrupted = false;
        loop {
            let read = tokio::select! {
                read = self.input.read() => read,
                () = self.signals.ended() => break,
            };
            let was_interrupted = std::mem::replace(&mut interrupted, false);
            let line = match read {
                Read::Eof => break,
                Read::Interrupted if was_interrupted => break,
                Read::Dropped => continue,
                Read::Interrupted => {
                    interrupted = true;
                    notice("(Ctrl-C again or Ctrl-D to leave; /help lists the commands)");
                    continue;
                }
                Read::Refused(text) => {
                    error_line(&text);
                    last = Err(CommandError::Reported);
                    continue;
                }
                Read::Line(line) => line,
            };
            self.input.remember(&line, &mut self.history);
            if line.trim().is_empty() {
                continue;
            }
            match self.enter(&line).await {
                Next::Go(outcome) => last = outcome,
                Next::Exit => return Ok(()),
            }
            if self.signals.ending().is_some() {
                break;
            }
        }
        last
    }

    async fn enter(&mut self, line: &str) -> Next {
        let command = match slash::parse(line) {
            Entered::Task(task) => return Next::Go(self.turn(task).await),
            Entered::Command(command) => command,
        };
        let outcome = match command {
            Slash::Exit => return Next::Exit,
            Slash::Help => output(slash::HELP),
            Slash::Tools => match self.session.ready().await {
                Ok(()) => output(&slash::tools_text(&self.session.catalogue())),
                Err(err) => failed(&err.to_string()),
            },
            Slash::Plan => match self.session.plan() {
                Some(plan) => output(&plan),
                None if self.runtime.settings().config.planning.enabled => output("no plan yet"),
                None => output("planning is off (odek repl --planning turns it on)"),
            },
            Slash::Usage => output(&slash::usage_text(self.session.spent(), &self.session.limits())),
            Slash::Model(None) => output(&format!("model: {}", self.session.model())),
            Slash::Model(Some(model)) => {
                self.session.set_model(model);
                output(&format!("model: {model} (from the next turn on)"))
            }
            Slash::Session => self.show_session(),
            Slash::New => self.new_session(),
            Slash::Unknown(word) => failed(&slash::unknown_text(word)),
            Slash::Extra(word) => failed(&format!("{word} takes no argument (nothing was sent)")),
        };
        Next::Go(outcome)
    }

    /// One turn on `task`; its answer on stdout, or its error on stderr.
    async fn turn(&mut self, task: &str) -> Result<(), CommandError> {
        let user = match self.runtime.user_message(task, &[]) {
            Ok(user) => user,
            Err(err) => return failed(&err.to_string()),
        };
        let cancel = self.signals.begin_turn();
        self.terminal_mode.ctrl_c_signals(true);
        let outcome = self.session.turn(user, &cancel).await;
        self.terminal_mode.ctrl_c_signals(false);
        self.signals.end_turn();
        let streamed = self.face.finish_stream();
        match outcome {
            Ok(outcome) => {
                if !streamed {
                    // After a hangup the terminal is gone; the session is saved all the same.
                    let _ = print_answer(&outcome, false, self.session.denials());
                }
                Ok(())
            }
            Err(err) => {
                error_line(&err.to_string());
                Err(CommandError::ReportedRun(err.outcome()))
            }
        }
    }

    fn show_session(&self) -> Result<(), CommandError> {
        let Some(id) = self.session.id() else { return failed("the session is not persisted") };
        let path = SessionId::parse(&id)
            .and_then(|id| self.store.session_path(&id))
            .map(|path| path.display().to_string())
            .unwrap_or_default();
        let turns = self.session.messages().iter().filter(|message| message.role == odek::llm::Role::User).count();
        output(&slash::session_text(&id, turns, &path))
    }

    /// `/new`: a fresh persisted session (its own id and lock) on the same servers.
    fn new_session(&mut self) -> Result<(), CommandError> {
        let (record, lock) = match self.runtime.new_session_record() {
            Ok(fresh) => fresh,
            Err(err) => return failed(&err.to_string()),
        };
        let id = record.id.as_str().to_owned();
        let history = vec![Message::system(self.runtime.system_prompt(None))];
        if let Err(err) = self.session.reset(history, Some(record)) {
            return failed(&err.to_string());
        }
        self.lock = lock;
        output(&format!("new session {id}"))
    }
}

/// Command output on stdout.
fn output(text: &str) -> Result<(), CommandError> {
    let mut stdout = std::io::stdout().lock();
    let text = text.strip_suffix('\n').unwrap_or(text);
    let _ = writeln!(stdout, "{}", sanitise_for_terminal(text, Layout::Block));
    let _ = stdout.flush();
    Ok(())
}

/// A failed input: its error line, and a failure for the exit code.
fn failed(text: &str) -> Result<(), CommandError> {
    error_line(text);
    Err(CommandError::Reported)
}

/// `odek: <text>` on stderr, redacted and terminal-safe as every final error line.
fn error_line(text: &str) {
    let line = sanitise_for_terminal(&redact(text), Layout::Lines).into_owned();
    let _ = writeln!(std::io::stderr().lock(), "odek: {line}");
}

/// A hint for the operator on stderr.
fn notice(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

/// The terminal's mode when the REPL started, put back when it ends (a SIGTERM may end it while
/// the editor has the terminal in raw mode). In between, Ctrl-C is a signal only while a turn
/// runs ([`TerminalMode::ctrl_c_signals`]): typed at any other moment — between two prompts, or
/// before the editor took the terminal — it is a key the next prompt reads, never a SIGINT
/// that nothing would act on.
struct TerminalMode(Option<Termios>);

impl TerminalMode {
    fn save(editor: bool) -> TerminalMode {
        let mode = TerminalMode(editor.then(|| tcgetattr(std::io::stdin()).ok()).flatten());
        mode.ctrl_c_signals(false);
        mode
    }

    /// Whether Ctrl-C (and the other signal keys) raise signals from now on.
    fn ctrl_c_signals(&self, on: bool) {
        if self.0.is_none() {
            return;
        }
        let Ok(mut mode) = tcgetattr(std::io::stdin()) else { return };
        mode.local_flags.set(LocalFlags::ISIG, on);
        let _ = tcsetattr(std::io::stdin(), SetArg::TCSANOW, &mode);
    }

    fn restore(self) {
        if let Some(mode) = self.0 {
            let _ = tcsetattr(std::io::stdin(), SetArg::TCSANOW, &mode);
        }
    }
}
