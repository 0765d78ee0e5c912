//! The binary's [`Console`]: approvals asked on the process's own terminal — an answer line read
//! from fd 0 a byte at a time, a single key read the way the batch approval card reads one —
//! and warnings printed as `odek: warning: ` lines.

use std::io::{IsTerminal, Write};

use odek::approvals::Console;

use crate::terminal::batch_gate::{read_key, read_stdin_byte, stop_signal_received};
use crate::terminal::print_warning;

/// Longest answer line read from stdin (bytes); the rest of a longer line is not read.
pub const MAX_ANSWER_BYTES: usize = 4096;

/// The process's stdin, stdout and stderr.
#[derive(Debug, Clone, Copy, Default)]
pub struct StdConsole;

impl Console for StdConsole {
    fn warn(&self, text: &str) {
        print_warning(text);
    }

    fn is_interactive(&self) -> bool {
        std::io::stdin().is_terminal()
    }

    /// The line is read from fd 0 a byte at a time ([`read_answer_line`]), so nothing past it is
    /// taken from the terminal, and a stop signal ends the wait with no answer.
    fn prompt(&self, text: &str) -> Option<String> {
        if stop_signal_received() {
            return None;
        }
        {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(text.as_bytes()).ok()?;
            stdout.flush().ok()?;
        }
        read_answer_line()
    }

    /// Read the way the batch approval card reads its key ([`read_key`]): type-ahead (the rest
    /// of an earlier answer line, keys pressed while a server started) is discarded before, the
    /// rest of a multi-byte key after, so an approval is only ever answered by the key pressed
    /// for it. The key is echoed (`-` when it is not printable) so the record on screen shows
    /// every answer.
    fn prompt_key(&self, text: &str) -> Option<char> {
        let mut stdout = std::io::stdout().lock();
        let key = read_key(|| {
            stdout.write_all(text.as_bytes())?;
            stdout.flush()
        })
        .map(char::from);
        let echo = key.filter(char::is_ascii_graphic).unwrap_or('-');
        let _ = writeln!(stdout, "{echo}");
        let _ = stdout.flush();
        key
    }
}

/// One answer line from stdin: the bytes up to and including `\n`, at most [`MAX_ANSWER_BYTES`]
/// (the rest of a longer line is not read), decoded lossily. `None` when nothing was read before
/// end of input, an error or a stop signal — and after a stop signal whatever was typed is no
/// answer either.
pub(crate) fn read_answer_line() -> Option<String> {
    let mut line = Vec::new();
    while line.len() < MAX_ANSWER_BYTES {
        let Some(byte) = read_stdin_byte() else { break };
        line.push(byte);
        if byte == b'\n' {
            break;
        }
    }
    if line.is_empty() || stop_signal_received() {
        return None;
    }
    Some(String::from_utf8_lossy(&line).into_owned())
}
