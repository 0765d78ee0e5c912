//! A line too long for the line editor to redraw. The editor repaints the whole line each time
//! the text wraps to another row, so N bytes typed (or pasted by a terminal that does not
//! bracket pastes) wrote O(N²) bytes to the terminal: 150 KB typed, 73 MB written. Once a line
//! holds [`EDITED_LINE_BYTES`] and a character is typed at its end, the editor stops seeing the
//! keys: [`LongLine`] (a key handler) keeps them itself and echoes each character once,
//! terminal-safe, on the rows below, until Enter hands the line back ([`LongLine::take`] adds
//! the kept text). The keys still come through the editor's reader, so nothing typed is lost or
//! reordered. While it keeps them: Backspace removes what it kept, a bracketed paste is kept
//! whole (its line breaks included), Ctrl-C drops the whole input as usual, and any other key is
//! ignored.

use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use odek_contract::terminal_text::{Layout, sanitise_for_terminal};
use rustyline::{Cmd, ConditionalEventHandler, Event, EventContext, KeyCode, KeyEvent, Modifiers, RepeatCount};

/// Bytes of one line the editor edits; past them [`LongLine`] keeps the keys.
pub const EDITED_LINE_BYTES: usize = 4096;

/// Columns assumed when the terminal's width cannot be read.
const DEFAULT_COLUMNS: usize = 80;

/// The key handler, shared with the reader of the input (cheap to clone).
#[derive(Clone, Default)]
pub struct LongLine(Arc<Mutex<Kept>>);

/// What [`LongLine`] kept of the current line, and where its echo stands.
#[derive(Default)]
struct Kept {
    active: bool,
    text: String,
    /// Bytes typed in all (the text holds at most `cap + 1` of them).
    total: usize,
    cap: usize,
    in_paste: bool,
    /// The echo's rows below the editor's line, and the characters on its last row.
    row: usize,
    col: usize,
    columns: usize,
}

impl LongLine {
    /// Starts a line: nothing kept; at most `cap + 1` bytes will be.
    pub fn start(&self, cap: usize) {
        *self.lock() = Kept { cap, ..Kept::default() };
    }

    /// After the editor returned the line: the text kept past it (`None` when the editor saw
    /// every key) and how many bytes were typed in all; the cursor is moved below the echo.
    pub fn take(&self) -> Option<(String, usize)> {
        let mut kept = self.lock();
        if !kept.active {
            return None;
        }
        // The editor's own newline left the cursor on the echo's first row.
        write_out(&"\r\n".repeat(kept.row + 1));
        kept.active = false;
        Some((std::mem::take(&mut kept.text), kept.total))
    }

    /// After Ctrl-C: the kept text is dropped with the rest, and the next prompt starts below
    /// the echo.
    pub fn drop_kept(&self) {
        let mut kept = self.lock();
        if kept.active {
            write_out("\r\n");
        }
        *kept = Kept::default();
    }

    fn lock(&self) -> MutexGuard<'_, Kept> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ConditionalEventHandler for LongLine {
    fn handle(&self, event: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        let KeyEvent(key, modifiers) = *event.get(0)?;
        let mut kept = self.lock();
        if !kept.active {
            let KeyCode::Char(typed) = key else { return None };
            if modifiers != Modifiers::NONE || ctx.line().len() < EDITED_LINE_BYTES || ctx.pos() != ctx.line().len() {
                return None;
            }
            kept.active = true;
            kept.columns = terminal_columns();
            write_out("\r\n");
            kept.keep(typed);
            return Some(Cmd::Noop);
        }
        match (key, modifiers) {
            (KeyCode::Char(typed), Modifiers::NONE) => kept.keep(typed),
            (KeyCode::Tab, Modifiers::NONE) => kept.keep('\t'),
            (KeyCode::Enter, _) | (KeyCode::Char('J'), Modifiers::CTRL) if kept.in_paste => kept.keep('\n'),
            (KeyCode::Enter, _) | (KeyCode::Char('J'), Modifiers::CTRL) => {
                // Back to the row the editor believes it is on, which it redraws as it ends.
                write_out(&format!("\x1b[{}A", kept.row + 1));
                return None;
            }
            (KeyCode::BracketedPasteStart, _) => kept.in_paste = true,
            (KeyCode::BracketedPasteEnd, _) => kept.in_paste = false,
            (KeyCode::Backspace, _) => kept.erase(),
            _ => {}
        }
        Some(Cmd::Noop)
    }
}

impl Kept {
    fn keep(&mut self, typed: char) {
        self.total = self.total.saturating_add(typed.len_utf8());
        if self.text.len() <= self.cap {
            self.text.push(typed);
        }
        if typed == '\n' {
            self.row += 1;
            self.col = 0;
            write_out("\r\n");
            return;
        }
        if self.col == self.columns {
            self.row += 1;
            self.col = 0;
        }
        self.col += 1;
        let mut buffer = [0_u8; 4];
        write_out(&sanitise_for_terminal(typed.encode_utf8(&mut buffer), Layout::Line));
    }

    /// Backspace: the last character kept goes, on the screen too (within its row).
    fn erase(&mut self) {
        if self.total > self.text.len() {
            return;
        }
        let Some(gone) = self.text.pop() else { return };
        self.total -= gone.len_utf8();
        if gone != '\n' && self.col > 0 {
            self.col -= 1;
            write_out("\x08 \x08");
        }
    }
}

/// The terminal's width, from stdout.
fn terminal_columns() -> usize {
    rustix::termios::tcgetwinsize(std::io::stdout())
        .ok()
        .map(|size| usize::from(size.ws_col))
        .filter(|columns| *columns > 0)
        .unwrap_or(DEFAULT_COLUMNS)
}

/// Echo on the terminal; a failed write only costs the echo.
fn write_out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_cap_plus_one_bytes_are_kept_and_rows_are_counted() {
        let mut kept = Kept { active: true, cap: 3, columns: 4, ..Kept::default() };
        for typed in "abcdefghi".chars() {
            kept.keep(typed);
        }
        assert_eq!((kept.text.as_str(), kept.total), ("abcd", 9));
        assert_eq!((kept.row, kept.col), (2, 1), "rows of 4: abcd efgh i");
        kept.erase();
        assert_eq!(kept.text, "abcd", "past the cap nothing is erased");
    }

    #[test]
    fn backspace_erases_what_was_kept() {
        let mut kept = Kept { active: true, cap: 100, columns: 80, ..Kept::default() };
        for typed in "aé\nb".chars() {
            kept.keep(typed);
        }
        kept.erase();
        kept.erase();
        assert_eq!((kept.text.as_str(), kept.total), ("aé", 3));
    }
}
