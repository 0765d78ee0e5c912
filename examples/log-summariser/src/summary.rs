//! Summarising one log file: reading it within a byte budget, the level of each line, the
//! grouping of error lines into messages (numbers and hex ids masked), and the two texts the
//! tool returns — the short summary for the model and the full report for the artifact.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// Most bytes read from one log (64 MiB); the rest is left out and the summary says so.
pub const MAX_LOG_BYTES: u64 = 64 * 1024 * 1024;

/// The level a line was logged at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    Error,
    Warn,
    Info,
    Debug,
    Other,
}

const LEVELS: [(Level, &str); 5] = [
    (Level::Error, "error"),
    (Level::Warn, "warn"),
    (Level::Info, "info"),
    (Level::Debug, "debug"),
    (Level::Other, "other"),
];

/// The lines of a log, with their levels.
#[derive(Debug, Default)]
pub struct Log {
    pub lines: Vec<(Level, String)>,
    /// True when the file was longer than [`MAX_LOG_BYTES`].
    pub truncated: bool,
}

impl Log {
    fn count(&self, level: Level) -> usize {
        self.lines.iter().filter(|(line_level, _)| *line_level == level).count()
    }
}

/// Reads at most [`MAX_LOG_BYTES`] of the file at `path`; invalid UTF-8 is replaced.
pub fn read_log(path: &Path) -> std::io::Result<Log> {
    let file = std::fs::File::open(path)?;
    let mut reader = BufReader::new(file.take(MAX_LOG_BYTES + 1));
    let mut log = Log::default();
    let mut read = 0u64;
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        let bytes = reader.read_until(b'\n', &mut buffer)?;
        if bytes == 0 {
            break;
        }
        read += bytes as u64;
        if read > MAX_LOG_BYTES {
            log.truncated = true;
            break;
        }
        let text = String::from_utf8_lossy(&buffer);
        let text = text.trim_end_matches(['\n', '\r']);
        log.lines.push((level_of(text), text.to_owned()));
    }
    Ok(log)
}

/// The first level word in the line (`ERROR`, `warning`, `[INFO]`, `level=debug` …).
pub fn level_of(line: &str) -> Level {
    level_words(line).next().map_or(Level::Other, |(_, level)| level)
}

/// The level words of a line, in order, each with the byte offset just past it.
fn level_words(line: &str) -> impl Iterator<Item = (usize, Level)> + '_ {
    line.split(|c: char| !c.is_ascii_alphabetic()).filter_map(move |word| {
        let level = match word.to_ascii_uppercase().as_str() {
            "ERROR" | "ERR" | "FATAL" | "CRITICAL" | "PANIC" => Level::Error,
            "WARN" | "WARNING" => Level::Warn,
            "INFO" | "NOTICE" => Level::Info,
            "DEBUG" | "TRACE" => Level::Debug,
            _ => return None,
        };
        // `word` borrows from `line`, so its end offset is its distance from the start.
        let end = word.as_ptr().addr() - line.as_ptr().addr() + word.len();
        Some((end, level))
    })
}

/// What an error line says, with what varies between occurrences masked: the text after the
/// level word, digits and hex runs of 8 or more as `#`.
pub fn message_of(line: &str) -> String {
    let start = level_words(line).find(|(_, level)| *level == Level::Error).map_or(0, |(end, _)| end);
    let rest = line[start..].trim_start_matches(|c: char| !c.is_alphanumeric());
    let mut message = String::with_capacity(rest.len());
    for word in rest.split(' ') {
        if !message.is_empty() {
            message.push(' ');
        }
        let hex_id = word.len() >= 8 && word.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
        if hex_id {
            message.push('#');
        } else {
            let mut previous_digit = false;
            for c in word.chars() {
                let digit = c.is_ascii_digit();
                if !digit {
                    message.push(c);
                } else if !previous_digit {
                    message.push('#');
                }
                previous_digit = digit;
            }
        }
    }
    message
}

/// Error messages by how often they occur, most frequent first (ties by message).
fn frequent_errors(log: &Log) -> Vec<(String, usize)> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for (_, line) in log.lines.iter().filter(|(level, _)| *level == Level::Error) {
        *counts.entry(message_of(line)).or_default() += 1;
    }
    let mut counts: Vec<(String, usize)> = counts.into_iter().collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    counts
}

fn counts_line(log: &Log) -> String {
    let counts: Vec<String> = LEVELS.iter().map(|(level, name)| format!("{} {name}", log.count(*level))).collect();
    counts.join(", ")
}

/// A few lines for the model.
pub fn short_summary(path: &Path, log: &Log, top: usize) -> String {
    let mut text = format!("{}: {} lines ({}).", path.display(), log.lines.len(), counts_line(log));
    if log.truncated {
        let _ = write!(text, " Only the first {MAX_LOG_BYTES} bytes were read.");
    }
    let frequent = frequent_errors(log);
    if !frequent.is_empty() && top > 0 {
        text.push_str(" Most frequent errors:");
        for (message, count) in frequent.iter().take(top) {
            let message: String = message.chars().take(120).collect();
            let _ = write!(text, "\n  {count}x {message}");
        }
    }
    text.push_str("\nThe full report (every error and warning line) is attached as artifact \"report\".");
    text
}

/// The full report: counts, every error message with its count, every error and warning line
/// with its number.
pub fn full_report(path: &Path, log: &Log) -> String {
    let mut report = format!("Log report for {}\n{} lines: {}\n", path.display(), log.lines.len(), counts_line(log));
    if log.truncated {
        let _ = writeln!(report, "(only the first {MAX_LOG_BYTES} bytes were read)");
    }
    report.push_str("\nError messages by frequency:\n");
    for (message, count) in frequent_errors(log) {
        let _ = writeln!(report, "{count:>6}  {message}");
    }
    report.push_str("\nError and warning lines:\n");
    for (number, (level, line)) in log.lines.iter().enumerate() {
        if matches!(level, Level::Error | Level::Warn) {
            let _ = writeln!(report, "{:>6}  {line}", number + 1);
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_found_in_common_formats() {
        assert_eq!(level_of("2026-01-01T00:00:00Z ERROR db: connection refused"), Level::Error);
        assert_eq!(level_of("[warning] disk 91% full"), Level::Warn);
        assert_eq!(level_of("level=info msg=started"), Level::Info);
        assert_eq!(level_of("TRACE entering"), Level::Debug);
        assert_eq!(level_of("no level here"), Level::Other);
        assert_eq!(level_of("errors=0 INFO all good"), Level::Info, "a longer word is not a level");
    }

    #[test]
    fn error_messages_mask_what_varies() {
        assert_eq!(message_of("12:00:01 ERROR request 4411 failed after 30s"), "request # failed after #s");
        assert_eq!(message_of("ERROR: job 3fa85f64-5717-4562 crashed"), "job # crashed");
    }

    #[test]
    fn summary_and_report_agree_with_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.log");
        let text = "INFO start\nERROR request 1 failed\nWARN slow disk\nERROR request 2 failed\nERROR oom\nDEBUG x\n";
        std::fs::write(&path, text).unwrap();
        let log = read_log(&path).unwrap();
        let summary = short_summary(&path, &log, 1);
        assert!(summary.contains("6 lines (3 error, 1 warn, 1 info, 1 debug, 0 other)."), "{summary}");
        assert!(summary.contains("\n  2x request # failed\n"), "{summary}");
        assert!(!summary.contains("oom"), "only the top message is named");
        let report = full_report(&path, &log);
        assert!(report.contains("     2  ERROR request 1 failed\n     3  WARN slow disk\n"), "{report}");
        assert!(report.contains("     1  oom\n"), "{report}");
        assert!(!report.contains("INFO start"));
    }
}
