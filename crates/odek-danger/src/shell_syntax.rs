//! A small parser of shell command lines, just deep enough for risk classification: it splits a
//! line into pipelines of simple commands (`;`, `&&`, `||`, `&`, `|`, newlines, `( … )`), keeps
//! every word's unquoted text, records redirections, and parses command substitutions (`$( … )`,
//! backticks, `<( … )`) and unquoted here-document bodies recursively so nothing they run is
//! missed. It does not expand anything: a word that depends on the environment is marked
//! `dynamic`. Anything it cannot follow is a [`SyntaxError`] and the caller fails closed.
//!
//! Entry point: [`parse`].

/// Deepest nesting of substitutions and groups followed (deeper ⇒ [`SyntaxError`]).
pub const MAX_DEPTH: usize = 24;

/// A parsed command line: pipelines in order, plus commands found in here-document bodies.
#[derive(Debug, Default, Clone)]
pub struct Script {
    pub pipelines: Vec<Pipeline>,
    /// Substitutions inside unquoted here-document bodies (they run when the body is read).
    pub heredoc_substitutions: Vec<Script>,
}

/// Commands joined by `|` (a single command is a one-stage pipeline).
#[derive(Debug, Default, Clone)]
pub struct Pipeline {
    pub stages: Vec<Command>,
}

/// One simple command (or a `( … )` group) with its redirections.
#[derive(Debug, Default, Clone)]
pub struct Command {
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
    /// `( … )` subshell contents.
    pub group: Option<Box<Script>>,
    /// `name() …` defines a function called `name`.
    pub defines_function: Option<String>,
}

impl Command {
    fn is_empty(&self) -> bool {
        self.words.is_empty() && self.redirects.is_empty() && self.group.is_none() && self.defines_function.is_none()
    }
}

/// A word with quotes removed.
#[derive(Debug, Default, Clone)]
pub struct Word {
    /// The text with quoting removed; expansions keep their source spelling (`$HOME`, `$(…)`).
    pub text: String,
    /// Contains a parameter, arithmetic or command expansion.
    pub dynamic: bool,
    /// Contains an unquoted `*`, `?` or `[`.
    pub glob: bool,
    /// Any part was quoted or escaped.
    pub quoted: bool,
    /// Command and process substitutions inside the word.
    pub substitutions: Vec<Script>,
}

/// Redirection operators other than plain `<`, longest first where one is a prefix of another.
const REDIRECT_OPERATORS: [(&str, RedirectKind); 11] = [
    ("&>>", RedirectKind::Write),
    ("&>", RedirectKind::Write),
    ("<<<", RedirectKind::Inline),
    ("<<-", RedirectKind::Inline),
    ("<<", RedirectKind::Inline),
    ("<>", RedirectKind::Write),
    ("<&", RedirectKind::Duplicate),
    (">>", RedirectKind::Write),
    (">|", RedirectKind::Write),
    (">&", RedirectKind::Duplicate),
    (">", RedirectKind::Write),
];

/// What a redirection does with its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirectKind {
    /// `>`, `>>`, `>|`, `&>`, `&>>`, `<>`, `>&file`: the target is written.
    Write,
    /// `<`: the target is read.
    Read,
    /// `>&2`, `<&0`, `>&-`: a descriptor copy, no file.
    Duplicate,
    /// `<<`, `<<-`, `<<<`: inline text.
    Inline,
}

/// A redirection: what it does with its target.
#[derive(Debug, Clone)]
pub struct Redirect {
    pub kind: RedirectKind,
    pub target: Word,
}

/// The line could not be followed (unterminated quote, unbalanced parenthesis, too deep).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError(pub &'static str);

/// Parses a whole command line.
pub fn parse(text: &str) -> Result<Script, SyntaxError> {
    let mut parser = Parser::new(text, 0);
    parser.parse_script(None)
}

struct PendingHeredoc {
    delimiter: String,
    strip_tabs: bool,
    expands: bool,
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    depth: usize,
    pending_heredocs: Vec<PendingHeredoc>,
}

fn is_metachar(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | ';' | '&' | '|' | '(' | ')' | '<' | '>')
}

impl Parser {
    fn new(text: &str, depth: usize) -> Parser {
        Parser { chars: text.chars().collect(), pos: 0, depth, pending_heredocs: Vec::new() }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn starts_with(&self, text: &str) -> bool {
        text.chars().enumerate().all(|(i, c)| self.peek_at(i) == Some(c))
    }

    fn skip_blanks(&mut self) {
        loop {
            match self.peek() {
                Some(' ' | '\t' | '\r') => self.pos += 1,
                Some('\\') if self.peek_at(1) == Some('\n') => self.pos += 2,
                _ => return,
            }
        }
    }

    fn nested(&mut self) -> Result<(), SyntaxError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(SyntaxError("nested too deeply"));
        }
        Ok(())
    }

    /// Parses until end of input (`closing == None`) or the matching `)`.
    fn parse_script(&mut self, closing: Option<char>) -> Result<Script, SyntaxError> {
        let mut script = Script::default();
        let mut pipeline = Pipeline::default();
        let mut command = Command::default();
        loop {
            self.skip_blanks();
            let Some(c) = self.peek() else {
                if closing.is_some() {
                    return Err(SyntaxError("unbalanced parenthesis"));
                }
                finish_command(&mut pipeline, &mut command);
                finish_pipeline(&mut script, &mut pipeline);
                return Ok(script);
            };
            match c {
                '#' => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                '\n' => {
                    self.pos += 1;
                    finish_command(&mut pipeline, &mut command);
                    finish_pipeline(&mut script, &mut pipeline);
                    self.read_heredoc_bodies(&mut script)?;
                }
                ';' => {
                    while self.peek() == Some(';') || self.peek() == Some('&') {
                        self.pos += 1;
                    }
                    finish_command(&mut pipeline, &mut command);
                    finish_pipeline(&mut script, &mut pipeline);
                }
                '&' if self.peek_at(1) == Some('>') => self.parse_redirect(&mut command)?,
                '&' => {
                    self.pos += if self.peek_at(1) == Some('&') { 2 } else { 1 };
                    finish_command(&mut pipeline, &mut command);
                    finish_pipeline(&mut script, &mut pipeline);
                }
                '|' => {
                    if self.peek_at(1) == Some('|') {
                        self.pos += 2;
                        finish_command(&mut pipeline, &mut command);
                        finish_pipeline(&mut script, &mut pipeline);
                    } else {
                        self.pos += if self.peek_at(1) == Some('&') { 2 } else { 1 };
                        finish_command(&mut pipeline, &mut command);
                    }
                }
                '(' => {
                    self.pos += 1;
                    self.skip_blanks();
                    if !command.words.is_empty() && self.peek() == Some(')') {
                        self.pos += 1;
                        let name = command.words.last().map(|word| word.text.clone()).unwrap_or_default();
                        command.words.pop();
                        command.defines_function = Some(name);
                        finish_command(&mut pipeline, &mut command);
                    } else if command.is_empty() {
                        self.nested()?;
                        let inner = self.parse_script(Some(')'))?;
                        self.depth -= 1;
                        command.group = Some(Box::new(inner));
                    } else {
                        return Err(SyntaxError("unexpected parenthesis"));
                    }
                }
                ')' => {
                    if closing == Some(')') {
                        self.pos += 1;
                        finish_command(&mut pipeline, &mut command);
                        finish_pipeline(&mut script, &mut pipeline);
                        return Ok(script);
                    }
                    return Err(SyntaxError("unbalanced parenthesis"));
                }
                '<' | '>' if self.peek_at(1) == Some('(') => {
                    let word = self.parse_word()?;
                    command.words.push(word);
                }
                '<' | '>' => self.parse_redirect(&mut command)?,
                _ => {
                    if let Some(digits) = self.descriptor_prefix() {
                        self.pos += digits;
                        self.parse_redirect(&mut command)?;
                        continue;
                    }
                    let word = self.parse_word()?;
                    command.words.push(word);
                }
            }
        }
    }

    /// Length of a `2>`-style descriptor number directly before a redirection operator.
    fn descriptor_prefix(&self) -> Option<usize> {
        let digits = self.chars[self.pos..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        match self.peek_at(digits) {
            Some('<' | '>') if self.peek_at(digits + 1) != Some('(') => Some(digits),
            _ => None,
        }
    }

    fn parse_redirect(&mut self, command: &mut Command) -> Result<(), SyntaxError> {
        // Longest operators first, so `>>` is not read as `>` followed by `>`.
        let (operator, kind) = REDIRECT_OPERATORS
            .iter()
            .copied()
            .find(|(operator, _)| self.starts_with(operator))
            .unwrap_or(("<", RedirectKind::Read));
        self.pos += operator.chars().count();
        self.skip_blanks();
        if self.peek().is_none_or(|c| is_metachar(c) && !matches!(c, '<' | '>')) {
            return Err(SyntaxError("redirection without a target"));
        }
        let target = self.parse_word()?;
        let kind = match kind {
            // `>&file` (not a descriptor number) writes to a file, like `&>`.
            RedirectKind::Duplicate
                if operator == ">&" && !(target.text == "-" || target.text.chars().all(|c| c.is_ascii_digit())) =>
            {
                RedirectKind::Write
            }
            other => other,
        };
        if operator == "<<" || operator == "<<-" {
            self.pending_heredocs.push(PendingHeredoc {
                delimiter: target.text.clone(),
                strip_tabs: operator == "<<-",
                expands: !target.quoted,
            });
        }
        command.redirects.push(Redirect { kind, target });
        Ok(())
    }

    fn read_heredoc_bodies(&mut self, script: &mut Script) -> Result<(), SyntaxError> {
        for heredoc in std::mem::take(&mut self.pending_heredocs) {
            let mut body = String::new();
            loop {
                let start = self.pos;
                while self.peek().is_some_and(|c| c != '\n') {
                    self.pos += 1;
                }
                let line: String = self.chars[start..self.pos].iter().collect();
                let at_end = self.peek().is_none();
                if !at_end {
                    self.pos += 1;
                }
                let compared = if heredoc.strip_tabs { line.trim_start_matches('\t') } else { line.as_str() };
                if compared == heredoc.delimiter {
                    break;
                }
                body.push_str(&line);
                body.push('\n');
                if at_end {
                    break;
                }
            }
            if heredoc.expands {
                let mut body_parser = Parser::new(&body, self.depth + 1);
                let mut word = Word::default();
                body_parser.parse_double_quoted(&mut word, None)?;
                script.heredoc_substitutions.extend(word.substitutions);
            }
        }
        Ok(())
    }

    fn parse_word(&mut self) -> Result<Word, SyntaxError> {
        let mut word = Word::default();
        let start = self.pos;
        while let Some(c) = self.peek() {
            match c {
                '<' | '>' if self.pos == start && self.peek_at(1) == Some('(') => {
                    self.pos += 2;
                    self.nested()?;
                    let inner = self.parse_script(Some(')'))?;
                    self.depth -= 1;
                    word.substitutions.push(inner);
                    word.dynamic = true;
                    word.text.push_str(if c == '<' { "<(…)" } else { ">(…)" });
                }
                c if is_metachar(c) => break,
                '\\' => {
                    self.pos += 1;
                    match self.peek() {
                        Some('\n') => self.pos += 1,
                        Some(escaped) => {
                            word.text.push(escaped);
                            word.quoted = true;
                            self.pos += 1;
                        }
                        None => {}
                    }
                }
                '\'' => {
                    self.pos += 1;
                    word.quoted = true;
                    loop {
                        match self.peek() {
                            None => return Err(SyntaxError("unterminated single quote")),
                            Some('\'') => {
                                self.pos += 1;
                                break;
                            }
                            Some(other) => {
                                word.text.push(other);
                                self.pos += 1;
                            }
                        }
                    }
                }
                '"' => {
                    self.pos += 1;
                    word.quoted = true;
                    self.parse_double_quoted(&mut word, Some('"'))?;
                }
                '$' => self.parse_dollar(&mut word)?,
                '`' => self.parse_backticks(&mut word)?,
                '*' | '?' | '[' => {
                    word.glob = true;
                    word.text.push(c);
                    self.pos += 1;
                }
                _ => {
                    word.text.push(c);
                    self.pos += 1;
                }
            }
        }
        Ok(word)
    }

    /// Inside `"…"` (`closing = Some('"')`) or an unquoted here-document body (`None`).
    fn parse_double_quoted(&mut self, word: &mut Word, closing: Option<char>) -> Result<(), SyntaxError> {
        loop {
            match self.peek() {
                None if closing.is_some() => return Err(SyntaxError("unterminated double quote")),
                None => return Ok(()),
                Some(c) if Some(c) == closing => {
                    self.pos += 1;
                    return Ok(());
                }
                Some('\\') => {
                    self.pos += 1;
                    match self.peek() {
                        Some('\n') => self.pos += 1,
                        Some(escaped @ ('$' | '`' | '"' | '\\')) => {
                            word.text.push(escaped);
                            self.pos += 1;
                        }
                        Some(_) | None => word.text.push('\\'),
                    }
                }
                Some('$') => self.parse_dollar(word)?,
                Some('`') => self.parse_backticks(word)?,
                Some(other) => {
                    word.text.push(other);
                    self.pos += 1;
                }
            }
        }
    }

    fn parse_backticks(&mut self, word: &mut Word) -> Result<(), SyntaxError> {
        self.pos += 1;
        let mut inner = String::new();
        loop {
            match self.peek() {
                None => return Err(SyntaxError("unterminated backquote")),
                Some('`') => {
                    self.pos += 1;
                    break;
                }
                Some('\\') if matches!(self.peek_at(1), Some('`' | '\\' | '$')) => {
                    if let Some(escaped) = self.peek_at(1) {
                        inner.push(escaped);
                    }
                    self.pos += 2;
                }
                Some(other) => {
                    inner.push(other);
                    self.pos += 1;
                }
            }
        }
        if self.depth + 1 > MAX_DEPTH {
            return Err(SyntaxError("nested too deeply"));
        }
        let mut sub = Parser::new(&inner, self.depth + 1);
        word.substitutions.push(sub.parse_script(None)?);
        word.dynamic = true;
        word.text.push_str("`…`");
        Ok(())
    }

    fn parse_dollar(&mut self, word: &mut Word) -> Result<(), SyntaxError> {
        match self.peek_at(1) {
            Some('(') if self.peek_at(2) == Some('(') => {
                self.pos += 3;
                let inner = self.scan_balanced('(', ')', 2)?;
                if inner.contains("$(") || inner.contains('`') {
                    return Err(SyntaxError("command substitution inside arithmetic"));
                }
                word.dynamic = true;
                word.text.push_str("$((…))");
            }
            Some('(') => {
                self.pos += 2;
                self.nested()?;
                let inner = self.parse_script(Some(')'))?;
                self.depth -= 1;
                word.substitutions.push(inner);
                word.dynamic = true;
                word.text.push_str("$(…)");
            }
            Some('{') => {
                self.pos += 2;
                let inner = self.scan_balanced('{', '}', 1)?;
                if inner.contains("$(") || inner.contains('`') {
                    return Err(SyntaxError("command substitution inside a parameter expansion"));
                }
                word.dynamic = true;
                word.text.push_str("${");
                word.text.push_str(&inner);
                word.text.push('}');
            }
            Some('\'') => {
                // ANSI-C quoting: escapes are kept as written, which is enough to classify.
                self.pos += 2;
                word.quoted = true;
                loop {
                    match self.peek() {
                        None => return Err(SyntaxError("unterminated single quote")),
                        Some('\\') => {
                            if let Some(escaped) = self.peek_at(1) {
                                word.text.push('\\');
                                word.text.push(escaped);
                            }
                            self.pos += 2;
                        }
                        Some('\'') => {
                            self.pos += 1;
                            break;
                        }
                        Some(other) => {
                            word.text.push(other);
                            self.pos += 1;
                        }
                    }
                }
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                self.pos += 1;
                word.text.push('$');
                while let Some(c) = self.peek().filter(|c| c.is_ascii_alphanumeric() || *c == '_') {
                    word.text.push(c);
                    self.pos += 1;
                }
                word.dynamic = true;
            }
            Some(c) if c.is_ascii_digit() || matches!(c, '@' | '*' | '#' | '?' | '$' | '!' | '-') => {
                self.pos += 2;
                word.text.push('$');
                word.text.push(c);
                word.dynamic = true;
            }
            _ => {
                self.pos += 1;
                word.text.push('$');
            }
        }
        Ok(())
    }

    /// Text up to the matching close (the opening was consumed; `closes` closers end it, as in
    /// `))`), respecting nesting; the closers are consumed.
    fn scan_balanced(&mut self, open: char, close: char, closes: usize) -> Result<String, SyntaxError> {
        let mut depth = 0usize;
        let mut inner = String::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(SyntaxError("unbalanced expansion"));
            };
            self.pos += 1;
            if c == open {
                depth += 1;
            } else if c == close {
                if depth == 0 {
                    if closes == 2 {
                        if self.peek() != Some(close) {
                            return Err(SyntaxError("unbalanced expansion"));
                        }
                        self.pos += 1;
                    }
                    return Ok(inner);
                }
                depth -= 1;
            }
            inner.push(c);
        }
    }
}

fn finish_command(pipeline: &mut Pipeline, command: &mut Command) {
    let command = std::mem::take(command);
    if !command.is_empty() {
        pipeline.stages.push(command);
    }
}

fn finish_pipeline(script: &mut Script, pipeline: &mut Pipeline) {
    let pipeline = std::mem::take(pipeline);
    if !pipeline.stages.is_empty() {
        script.pipelines.push(pipeline);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn programs(script: &Script) -> Vec<Vec<String>> {
        script
            .pipelines
            .iter()
            .map(|p| p.stages.iter().map(|s| s.words.first().map(|w| w.text.clone()).unwrap_or_default()).collect())
            .collect()
    }

    #[test]
    fn splits_lists_and_pipelines() {
        let script = parse("a 1 && b | c; d || e & f\ng").unwrap();
        assert_eq!(programs(&script), vec![vec!["a"], vec!["b", "c"], vec!["d"], vec!["e"], vec!["f"], vec!["g"]]);
    }

    #[test]
    fn quotes_and_escapes_are_removed() {
        let script = parse(r#"'r''m' "-rf" \x "a b""#).unwrap();
        let words: Vec<_> = script.pipelines[0].stages[0].words.iter().map(|w| w.text.as_str()).collect();
        assert_eq!(words, vec!["rm", "-rf", "x", "a b"]);
    }

    #[test]
    fn substitutions_are_parsed() {
        let script = parse("echo $(rm -rf x) `ls` \"$(date)\"").unwrap();
        let words = &script.pipelines[0].stages[0].words;
        assert_eq!(words[1].substitutions.len(), 1);
        assert_eq!(programs(&words[1].substitutions[0]), vec![vec!["rm"]]);
        assert_eq!(programs(&words[2].substitutions[0]), vec![vec!["ls"]]);
        assert!(words[3].dynamic);
    }

    #[test]
    fn redirections_and_heredocs() {
        let script = parse("cat > out.txt 2>&1 <<'EOF'\nrm -rf /\nEOF\nls").unwrap();
        assert_eq!(programs(&script), vec![vec!["cat"], vec!["ls"]]);
        let redirects = &script.pipelines[0].stages[0].redirects;
        assert_eq!(redirects[0].kind, RedirectKind::Write);
        assert_eq!(redirects[0].target.text, "out.txt");
        assert_eq!(redirects[1].kind, RedirectKind::Duplicate);
        assert_eq!(redirects[2].kind, RedirectKind::Inline);
        let expanding = parse("cat <<EOF\n$(rm -rf x)\nEOF").unwrap();
        assert_eq!(expanding.heredoc_substitutions.len(), 1);
    }

    #[test]
    fn function_definitions_and_groups() {
        let script = parse(":(){ :|:& };:").unwrap();
        assert_eq!(script.pipelines[0].stages[0].defines_function.as_deref(), Some(":"));
        let group = parse("(cd x && rm y) > log").unwrap();
        assert!(group.pipelines[0].stages[0].group.is_some());
    }

    #[test]
    fn broken_lines_are_errors() {
        assert!(parse("echo 'x").is_err());
        assert!(parse("echo \"x").is_err());
        assert!(parse("echo $(ls").is_err());
        assert!(parse("echo )").is_err());
        assert!(parse(&"$(".repeat(100)).is_err());
    }
}
