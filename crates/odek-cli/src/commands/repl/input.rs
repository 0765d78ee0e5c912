//! Where the REPL's inputs come from. At a terminal (stdin and stdout both one): the line
//! editor (rustyline: editing keys, history, bracketed paste), where a line ending in `\`
//! continues on the next, and Ctrl-C / Ctrl-D come back as [`Read::Interrupted`] / [`Read::Eof`]
//! (Ctrl-C over typed text drops the text instead: [`Read::Dropped`]).
//! Otherwise: no editor and no prompt, each line of stdin is one input. Either way an input over
//! [`MAX_INPUT_BYTES`] or not UTF-8 is refused for itself ([`Read::Refused`]) and the next one is
//! read (at a terminal, what was typed after the bad bytes is discarded with them). A line past
//! `long_line::EDITED_LINE_BYTES` is read to its end without the editor ([`long_line`](super::long_line)),
//! which would redraw it whole at every wrap. Reads run on a blocking thread one at a time, so
//! nothing reads the terminal while a turn asks for an approval.

use std::io::{BufRead, BufReader, Stdin};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use nix::sys::termios::{FlushArg, tcflush};
use rustyline::error::ReadlineError;
use rustyline::history::MemHistory;
use rustyline::{
    Cmd, ConditionalEventHandler, Config, Editor, Event, EventContext, EventHandler, KeyEvent, RepeatCount,
};

use super::history::{History, MAX_ENTRIES};
use super::long_line::LongLine;

/// The longest input accepted (bytes); a longer one is refused and the REPL goes on.
pub const MAX_INPUT_BYTES: usize = 1024 * 1024;

/// The prompt, and the prompt of a continued line.
const PROMPT: &str = "odek> ";
const CONTINUATION_PROMPT: &str = "...> ";

/// What one read gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Read {
    Line(String),
    /// Not an input: why (for an `odek: ` line).
    Refused(String),
    /// Ctrl-C at an empty prompt.
    Interrupted,
    /// Ctrl-C over typed text: the text is dropped, and it does not count towards leaving.
    Dropped,
    /// Ctrl-D, or the end of stdin.
    Eof,
}

/// The input source of a REPL.
pub enum Input {
    Editor(Option<Box<LineEditor>>),
    Lines(Option<BufReader<Stdin>>),
}

/// The editor, what its Ctrl-C key saw ([`CtrlC`]), and what it did not see of a long line
/// ([`LongLine`]).
pub struct LineEditor {
    editor: Editor<(), MemHistory>,
    ctrl_c_over_text: Arc<AtomicBool>,
    long_line: LongLine,
}

/// Ctrl-C does what it always does (interrupts the read); first it notes whether text was on
/// the line, which the key's error cannot say.
struct CtrlC(Arc<AtomicBool>);

impl ConditionalEventHandler for CtrlC {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        self.0.store(!ctx.line().is_empty(), Ordering::Relaxed);
        None
    }
}

impl Input {
    /// The editor with `entries` as its history; `None` when the terminal cannot have one.
    pub fn editor(entries: &[String]) -> Option<Input> {
        let config =
            Config::builder().max_history_size(MAX_ENTRIES).ok()?.auto_add_history(false).bracketed_paste(true).build();
        let mut editor = Editor::<(), MemHistory>::with_history(config, MemHistory::new()).ok()?;
        for entry in entries {
            let _ = editor.add_history_entry(entry.as_str());
        }
        let ctrl_c_over_text = Arc::new(AtomicBool::new(false));
        editor.bind_sequence(
            KeyEvent::ctrl('C'),
            EventHandler::Conditional(Box::new(CtrlC(Arc::clone(&ctrl_c_over_text)))),
        );
        let long_line = LongLine::default();
        editor.bind_sequence(Event::Any, EventHandler::Conditional(Box::new(long_line.clone())));
        Some(Input::Editor(Some(Box::new(LineEditor { editor, ctrl_c_over_text, long_line }))))
    }

    pub fn lines() -> Input {
        Input::Lines(Some(BufReader::new(std::io::stdin())))
    }

    pub fn is_editor(&self) -> bool {
        matches!(self, Input::Editor(_))
    }

    /// Reads the next input on a blocking thread.
    pub async fn read(&mut self) -> Read {
        match self {
            Input::Editor(slot) => {
                let Some(mut editor) = slot.take() else { return Read::Eof };
                let Ok((editor, read)) = tokio::task::spawn_blocking(move || {
                    let read = read_edited(&mut editor);
                    (editor, read)
                })
                .await
                else {
                    return Read::Eof;
                };
                *slot = Some(editor);
                read
            }
            Input::Lines(slot) => {
                let Some(mut reader) = slot.take() else { return Read::Eof };
                let Ok((reader, read)) = tokio::task::spawn_blocking(move || {
                    let read = read_line(&mut reader, MAX_INPUT_BYTES);
                    (reader, read)
                })
                .await
                else {
                    return Read::Eof;
                };
                *slot = Some(reader);
                read
            }
        }
    }

    /// Adds `entry` to the editor's history (and the file's, through `history`).
    pub fn remember(&mut self, entry: &str, history: &mut History) {
        if let Input::Editor(Some(editor)) = self
            && History::keeps(entry)
        {
            let _ = editor.editor.add_history_entry(entry);
            history.append(entry);
        }
    }
}

/// One input from the editor: lines ending in `\` joined with newlines.
fn read_edited(line_editor: &mut LineEditor) -> Read {
    let LineEditor { editor, ctrl_c_over_text, long_line } = line_editor;
    let mut input = String::new();
    let mut prompt = PROMPT;
    loop {
        ctrl_c_over_text.store(false, Ordering::Relaxed);
        long_line.start(MAX_INPUT_BYTES);
        let read = editor.readline(prompt);
        if read.is_err() {
            // Whatever the long-line handler kept belongs to an input that ends here unsent.
            long_line.drop_kept();
        }
        match read {
            Ok(mut line) => {
                if let Some((rest, total)) = long_line.take() {
                    if input.len() + line.len() + total > MAX_INPUT_BYTES {
                        return Read::Refused(too_long(input.len() + line.len() + total));
                    }
                    line.push_str(&rest);
                }
                let (line, continued) = match line.strip_suffix('\\') {
                    Some(line) => (line, true),
                    None => (line.as_str(), false),
                };
                input.push_str(line);
                if input.len() > MAX_INPUT_BYTES {
                    return Read::Refused(too_long(input.len()));
                }
                if !continued {
                    return Read::Line(input);
                }
                input.push('\n');
                prompt = CONTINUATION_PROMPT;
            }
            Err(ReadlineError::Interrupted) if input.is_empty() && !ctrl_c_over_text.load(Ordering::Relaxed) => {
                return Read::Interrupted;
            }
            Err(ReadlineError::Interrupted) => return Read::Dropped,
            // The editor stops at the first byte that is not UTF-8; what came with it (the rest
            // of a paste, typed-ahead text) would otherwise be read as a new input.
            Err(ReadlineError::Io(err)) if err.kind() == std::io::ErrorKind::InvalidData => {
                let _ = tcflush(std::io::stdin(), FlushArg::TCIFLUSH);
                return Read::Refused(not_utf8(None));
            }
            Err(_) => return Read::Eof,
        }
    }
}

fn too_long(bytes: usize) -> String {
    format!("input too long: {bytes} bytes (at most {MAX_INPUT_BYTES} per input); nothing was sent")
}

/// An input that is not UTF-8, and where, when that is known.
fn not_utf8(at: Option<usize>) -> String {
    match at {
        Some(at) => format!("input is not valid UTF-8 (at byte {at}); nothing was sent"),
        None => "input is not valid UTF-8; nothing was sent".to_owned(),
    }
}

/// One line of `reader` without its line ending, holding at most `cap` bytes of it: a longer
/// line is read to its end and refused, and so is one that is not UTF-8.
pub fn read_line(reader: &mut impl BufRead, cap: usize) -> Read {
    let mut line = Vec::new();
    let mut total = 0_usize;
    loop {
        let buffer = match reader.fill_buf() {
            Ok(buffer) => buffer,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => return if total == 0 { Read::Eof } else { Read::Refused(format!("stdin: {err}")) },
        };
        if buffer.is_empty() {
            if total == 0 {
                return Read::Eof;
            }
            break;
        }
        let (chunk, done) = match newline_at(buffer) {
            Some(at) => (&buffer[..at], Some(at + 1)),
            None => (buffer, None),
        };
        total = total.saturating_add(chunk.len());
        if total <= cap {
            line.extend_from_slice(chunk);
        }
        let consumed = done.unwrap_or(buffer.len());
        reader.consume(consumed);
        if done.is_some() {
            break;
        }
    }
    if total > cap {
        return Read::Refused(too_long(total));
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    match String::from_utf8(line) {
        Ok(line) => Read::Line(line),
        Err(err) => Read::Refused(not_utf8(Some(err.utf8_error().valid_up_to()))),
    }
}

fn newline_at(buffer: &[u8]) -> Option<usize> {
    buffer.iter().position(|byte| *byte == b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], cap: usize) -> Vec<Read> {
        let mut reader = std::io::BufReader::with_capacity(7, input);
        let mut reads = Vec::new();
        loop {
            match read_line(&mut reader, cap) {
                Read::Eof => return reads,
                read => reads.push(read),
            }
        }
    }

    #[test]
    fn each_line_is_one_input() {
        assert_eq!(
            lines(b"one\r\ntwo\n\nlast", 100),
            [Read::Line("one".into()), Read::Line("two".into()), Read::Line(String::new()), Read::Line("last".into())]
        );
    }

    #[test]
    fn a_line_over_the_cap_is_refused_and_the_next_one_read_red() {
        let mut input = vec![b'x'; 50];
        input.extend_from_slice(b"\nafter\n");
        let reads = lines(&input, 20);
        assert!(matches!(&reads[0], Read::Refused(text) if text.starts_with("input too long: 50 bytes")), "{reads:?}");
        assert_eq!(reads[1], Read::Line("after".into()));
    }

    #[test]
    fn invalid_utf8_is_refused_for_its_line_only_red() {
        let reads = lines(b"ok\n\xff\xfebad\nfine\n", 100);
        assert_eq!(reads[0], Read::Line("ok".into()));
        assert!(matches!(&reads[1], Read::Refused(text) if text.contains("not valid UTF-8")), "{reads:?}");
        assert_eq!(reads[2], Read::Line("fine".into()));
    }
}
