//! `odek session`: the saved sessions under `~/.odek/sessions/`, from the shell. `list` and
//! `show` read, `delete` and `trim` remove (a session's sub-agent artifacts go with it). All
//! storage rules live in `odek::agent::session`; this module only renders and selects.

use std::borrow::Cow;
use std::io::Write;

use odek::agent::session::{IndexEntry, Session, SessionError, SessionId, SessionStore};
use odek::llm::{Message, Role};
use odek_contract::runes::runes_with_ellipsis;
use odek_contract::terminal_text::{Layout, sanitise_for_terminal};

use crate::cli::SessionCommand;
use crate::outcome::CommandError;
use crate::terminal::print_warning;
use odek::config::ConfigSources;

/// Lines of a tool result (and of a system message) `show` prints before cutting.
const SHOWN_RESULT_LINES: usize = 6;
/// Characters of one shown line of a tool result or system message.
const SHOWN_LINE_CHARS: usize = 200;
/// Characters of a tool call's argument summary.
const SHOWN_ARGUMENT_CHARS: usize = 120;

pub async fn run(command: SessionCommand) -> Result<(), CommandError> {
    let store = open_store()?;
    match command {
        SessionCommand::List { json } => list(&store, json),
        SessionCommand::Show { id, json } => show(&store, &SessionId::parse(&id)?, json),
        SessionCommand::Delete { id } => {
            let id = SessionId::parse(&id)?;
            store.delete(&id)?;
            println!("deleted session {id}");
            Ok(())
        }
        SessionCommand::Trim { keep, older_than } => trim(&store, keep, older_than.as_deref()),
    }
}

/// `~/.odek/sessions`, deleting into `~/.odek/artifacts`.
fn open_store() -> Result<SessionStore, CommandError> {
    Ok(odek::setup::session_store_in(&ConfigSources::from_process()?.odek_dir())?)
}

fn list(store: &SessionStore, json: bool) -> Result<(), CommandError> {
    let entries = store.list()?;
    let mut stdout = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut stdout, &serde_json::json!({ "sessions": entries }))?;
        writeln!(stdout)?;
    } else {
        write_listing(&mut stdout, &entries)?;
    }
    stdout.flush()?;
    Ok(())
}

fn write_listing(out: &mut impl Write, entries: &[IndexEntry]) -> std::io::Result<()> {
    if entries.is_empty() {
        return writeln!(out, "no sessions (odek run --session saves one)");
    }
    let id_width = entries.iter().map(|entry| entry.id.chars().count()).max().unwrap_or(0).max(2);
    let model_width = entries.iter().map(|entry| entry.model.chars().count()).max().unwrap_or(0).max(5);
    writeln!(
        out,
        "{:id_width$}  {:20}  {:>5}  {:model_width$}  {:>15}  TITLE",
        "ID", "UPDATED", "TURNS", "MODEL", "TOKENS IN/OUT"
    )?;
    for entry in entries {
        let tokens = format!("{}/{}", entry.input_tokens, entry.output_tokens);
        let line = format!(
            "{:id_width$}  {:20}  {:>5}  {:model_width$}  {:>15}  {}",
            entry.id,
            display_time(&entry.updated_at),
            entry.turns,
            entry.model,
            tokens,
            entry.title
        );
        writeln!(out, "{}", one_line(&line))?;
    }
    Ok(())
}

fn show(store: &SessionStore, id: &SessionId, json: bool) -> Result<(), CommandError> {
    let mut stdout = std::io::stdout().lock();
    if json {
        writeln!(stdout, "{}", store.load_json(id)?)?;
    } else {
        write_session(&mut stdout, &store.load(id)?)?;
    }
    stdout.flush()?;
    Ok(())
}

/// The metadata block, then each message under a role header.
fn write_session(out: &mut impl Write, session: &Session) -> std::io::Result<()> {
    let mut meta = vec![
        ("session", session.id.to_string()),
        ("task", odek::agent::session::session_title(&session.task)),
        ("created", display_time(&session.created_at)),
        ("updated", display_time(&session.updated_at)),
        ("provider", session.provider.clone()),
        ("model", session.model.clone()),
    ];
    if !session.base_url.is_empty() {
        meta.push(("base url", session.base_url.clone()));
    }
    meta.push(("turns", session.turns.to_string()));
    meta.push(("tokens", format!("{} in, {} out", session.input_tokens, session.output_tokens)));
    meta.push(("sandbox", if session.sandbox { "yes" } else { "no" }.to_owned()));
    meta.push(("messages", session.messages.len().to_string()));
    for (label, value) in meta {
        writeln!(out, "{label:<9} {}", one_line(&value))?;
    }
    if !session.external_refs.is_empty() {
        writeln!(out, "external refs:")?;
        for external_ref in &session.external_refs {
            let read_only = if external_ref.read_only { ", read-only" } else { "" };
            let line = format!(
                "  {} {} (by {}{read_only}, {})",
                external_ref.kind, external_ref.uri, external_ref.created_by, external_ref.created_at
            );
            writeln!(out, "{}", one_line(&line))?;
        }
    }
    for message in &session.messages {
        writeln!(out)?;
        write_message(out, message)?;
    }
    Ok(())
}

fn write_message(out: &mut impl Write, message: &Message) -> std::io::Result<()> {
    match message.role {
        Role::System => {
            writeln!(out, "── system ──")?;
            write_cut(out, &message.content, SHOWN_RESULT_LINES)
        }
        Role::User => {
            writeln!(out, "── user ──")?;
            writeln!(out, "{}", sanitise_for_terminal(&message.content, Layout::Lines))
        }
        Role::Assistant => {
            writeln!(out, "── assistant ──")?;
            if let Some(reasoning) = message.reasoning_content.as_deref().filter(|text| !text.is_empty()) {
                writeln!(out, "[reasoning: {} chars]", reasoning.chars().count())?;
            }
            if !message.content.is_empty() {
                writeln!(out, "{}", sanitise_for_terminal(&message.content, Layout::Lines))?;
            }
            for call in &message.tool_calls {
                let arguments = runes_with_ellipsis(&call.function.arguments, SHOWN_ARGUMENT_CHARS);
                writeln!(out, "→ {} {}", one_line(&call.function.name), one_line(&arguments))?;
            }
            Ok(())
        }
        Role::Tool => {
            let name = message.name.as_deref().unwrap_or("tool");
            let call_id = message.tool_call_id.as_deref().unwrap_or_default();
            writeln!(out, "── tool {} ({}) ──", one_line(name), one_line(call_id))?;
            write_cut(out, &message.content, SHOWN_RESULT_LINES)
        }
    }
}

/// At most `max_lines` lines, each cut to [`SHOWN_LINE_CHARS`], then `… <n> more line(s)`.
fn write_cut(out: &mut impl Write, text: &str, max_lines: usize) -> std::io::Result<()> {
    let total = text.lines().count();
    for line in text.lines().take(max_lines) {
        writeln!(out, "{}", one_line(&runes_with_ellipsis(line, SHOWN_LINE_CHARS)))?;
    }
    if total > max_lines {
        writeln!(out, "… {} more line(s)", total - max_lines)?;
    }
    Ok(())
}

/// Text on one terminal line ([`Layout::Flat`]: line feeds and tabs become spaces).
fn one_line(text: &str) -> Cow<'_, str> {
    sanitise_for_terminal(text, Layout::Flat)
}

/// `YYYY-MM-DD HH:MM:SSZ` for an RFC 3339 time; anything else as stored.
fn display_time(text: &str) -> String {
    odek::agent::session::parse_time(text)
        .map_or_else(|| text.to_owned(), |time| time.format("%Y-%m-%d %H:%M:%SZ").to_string())
}

fn trim(store: &SessionStore, keep: Option<usize>, older_than: Option<&str>) -> Result<(), CommandError> {
    if keep.is_none() && older_than.is_none() {
        return Err(CommandError::Fatal("session trim: give --keep <n>, --older-than <days>d, or both".to_owned()));
    }
    let cutoff = older_than.map(parse_older_than).transpose()?.map(|days| chrono::Utc::now() - days);
    let entries = store.list()?;
    let mut removed = 0usize;
    for (position, entry) in entries.iter().enumerate() {
        let beyond_keep = keep.is_none_or(|keep| position >= keep);
        // A session whose time cannot be read is never old enough: trimming fails safe.
        let too_old = cutoff
            .is_none_or(|cutoff| odek::agent::session::parse_time(&entry.updated_at).is_some_and(|time| time < cutoff));
        if !(beyond_keep && too_old) {
            continue;
        }
        let Ok(id) = SessionId::parse(&entry.id) else { continue };
        match store.delete(&id) {
            Ok(()) => {}
            Err(err @ SessionError::InUse { .. }) => {
                print_warning(&format!("{err}; not removed"));
                continue;
            }
            Err(err) => return Err(err.into()),
        }
        removed += 1;
        println!("removed {}  {}", id, one_line(&entry.title));
    }
    if removed == 0 {
        println!("no sessions to remove");
    } else {
        println!("removed {removed} session(s)");
    }
    Ok(())
}

/// `<days>d` as a duration.
fn parse_older_than(value: &str) -> Result<chrono::TimeDelta, CommandError> {
    value
        .strip_suffix('d')
        .and_then(|days| days.parse::<u32>().ok())
        .map(|days| chrono::TimeDelta::days(i64::from(days)))
        .ok_or_else(|| {
            CommandError::Fatal(format!(
                "invalid --older-than {}: want <days>d, e.g. 30d",
                odek_contract::quoting::quote(value)
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn older_than_takes_days_with_a_d() {
        assert_eq!(parse_older_than("30d").ok(), Some(chrono::TimeDelta::days(30)));
        assert_eq!(parse_older_than("0d").ok(), Some(chrono::TimeDelta::zero()));
        for bad in ["30", "d", "-1d", "1w", "1.5d"] {
            match parse_older_than(bad) {
                Err(CommandError::Fatal(message)) => {
                    assert_eq!(message, format!("invalid --older-than \"{bad}\": want <days>d, e.g. 30d"));
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn tool_results_are_cut_to_a_few_lines() {
        let mut out = Vec::new();
        let content: String = (1..=10).map(|n| format!("line {n}\n")).collect();
        write_message(&mut out, &Message::tool("c1", "shell", content)).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("── tool shell (c1) ──\nline 1\n"), "{text}");
        assert!(text.contains("line 6\n… 4 more line(s)\n") && !text.contains("line 7"), "{text}");
    }

    #[test]
    fn escape_sequences_cannot_reach_the_terminal() {
        let mut out = Vec::new();
        write_message(&mut out, &Message::user("\u{1b}]0;owned\u{7}hi")).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'), "{text:?}");
    }
}
