//! The pipeline walker: a parsed line taken apart into pipelines, simple commands, redirections,
//! substitutions and nested lines (`bash -c`, `eval`, wrappers, `find -exec`) with bounded
//! nesting; the pipeline rules (`download | interpreter`, fork bombs); the line's own `cd`s; and
//! the class of every path a command writes. What one program does with its arguments is
//! decided in `programs` and the family modules, which extend [`Classifier`].

use std::cell::{Cell, RefCell};
use std::path::PathBuf;

use crate::class::DangerClass;
use crate::file_write::{Places, classify_target, normalize_lexically};
use crate::shell_syntax::{self, Command, Pipeline, RedirectKind, Script, Word};

use super::args::{
    assignment_name, code_loading_assignment, option_values, positionals, skip_assignments, skip_keywords,
};
use super::directory::DirEffect;
use super::verdict::Verdict;
use DangerClass::{Blocked, CodeExecution, LocalWrite, Safe, SystemWrite, Unknown};

/// Deepest nesting of `bash -c`, `eval`, wrappers and `find -exec` followed.
pub(super) const MAX_NESTING: usize = 12;

pub(super) struct Classifier<'a> {
    pub(super) places: &'a Places,
    functions: Vec<String>,
    nesting: Cell<usize>,
    /// The directory relative paths are written to, after the line's own `cd`s ("" = the
    /// working directory); `None` once a `cd` went somewhere computed at run time.
    pub(super) current_dir: RefCell<Option<PathBuf>>,
    /// One entry per substitution being walked whose `cd`s are recorded (innermost last):
    /// what they did to `current_dir` so far.
    recorded_cds: RefCell<Vec<DirEffect>>,
}

impl<'a> Classifier<'a> {
    pub(super) fn new(places: &'a Places) -> Classifier<'a> {
        Classifier {
            places,
            functions: Vec::new(),
            nesting: Cell::new(0),
            current_dir: RefCell::new(Some(PathBuf::new())),
            recorded_cds: RefCell::default(),
        }
    }

    /// `cd <dir>` moves where later relative paths land; `cd -`, `popd` or a computed
    /// directory loses track (later relative writes are `unknown`).
    pub(super) fn change_directory(&self, program: &str, args: &[Word]) {
        let target = positionals(args, &[]).first().copied().cloned();
        let effect = match (program, target) {
            ("popd", _) => DirEffect::Set(None),
            (_, None) => DirEffect::Set(Some(self.places.home().to_path_buf())),
            (_, Some(word)) if word.text == "-" => DirEffect::Set(None),
            (_, Some(word)) => match self.expand(&word) {
                Some(text) => DirEffect::Append(PathBuf::from(text)),
                None => DirEffect::Set(None),
            },
        };
        self.apply_cd(effect);
    }

    /// Moves `current_dir` and adds the move to every recording in progress.
    fn apply_cd(&self, effect: DirEffect) {
        let next = effect.apply(self.current_dir.borrow_mut().take());
        *self.current_dir.borrow_mut() = next;
        for recorded in self.recorded_cds.borrow_mut().iter_mut() {
            *recorded = std::mem::take(recorded).then(effect.clone());
        }
    }

    /// A substitution of a command's words: its verdict and what its `cd`s did.
    fn recorded_substitution(&self, substitution: &Script) -> (Verdict, DirEffect) {
        self.recorded_cds.borrow_mut().push(DirEffect::Keep);
        let verdict = self.script(substitution);
        let effect = self.recorded_cds.borrow_mut().pop().unwrap_or_default();
        (verdict, effect)
    }

    /// A whole line (the top level, or the text of `bash -c` / `eval`).
    pub(super) fn line(&mut self, text: &str) -> Verdict {
        match shell_syntax::parse(text) {
            Ok(script) => {
                collect_functions(&script, &mut self.functions);
                self.script(&script)
            }
            Err(error) => Verdict::new(Unknown, format!("cannot parse the command ({})", error.0)),
        }
    }

    /// A nested line (`bash -c`, `eval`): bounded depth.
    pub(super) fn nested_line(&self, text: &str) -> Verdict {
        if self.nesting.get() >= MAX_NESTING {
            return Verdict::new(Unknown, "nested too deeply to classify");
        }
        self.nesting.set(self.nesting.get() + 1);
        let mut inner = Classifier {
            places: self.places,
            functions: self.functions.clone(),
            nesting: self.nesting.clone(),
            current_dir: self.current_dir.clone(),
            recorded_cds: RefCell::default(),
        };
        let verdict = inner.line(text);
        self.nesting.set(self.nesting.get() - 1);
        verdict
    }

    pub(super) fn script(&self, script: &Script) -> Verdict {
        let mut verdict = Verdict::new(Safe, "only reads");
        for pipeline in &script.pipelines {
            verdict.raise(self.pipeline(pipeline));
        }
        for substitution in &script.heredoc_substitutions {
            verdict.raise(self.script(substitution));
        }
        verdict
    }

    /// `download | interpreter` is blocked; a function piped into itself is a fork bomb.
    fn pipeline(&self, pipeline: &Pipeline) -> Verdict {
        let mut verdict = Verdict::nothing();
        let mut upstream_fetches = false;
        for (index, stage) in pipeline.stages.iter().enumerate() {
            let stage_verdict = self.command(stage);
            if index > 0 && upstream_fetches && stage_verdict.reads_code_from_stdin {
                verdict.raise(Verdict::new(Blocked, "piping a download into an interpreter runs unreviewed code"));
            }
            upstream_fetches |= stage_verdict.fetches;
            verdict.raise(stage_verdict);
        }
        let programs: Vec<&str> = pipeline.stages.iter().filter_map(stage_program).collect();
        if programs.len() > 1
            && programs.iter().any(|program| {
                self.functions.iter().any(|name| name == program)
                    && programs.iter().filter(|p| *p == program).count() > 1
            })
        {
            verdict.raise(Verdict::new(Blocked, "fork bomb: a function that pipes into itself"));
        }
        verdict
    }

    fn command(&self, command: &Command) -> Verdict {
        let mut verdict = Verdict::nothing();
        let mut word_substitutions = Vec::new();
        for word in &command.words {
            for substitution in &word.substitutions {
                let (substitution_verdict, cds) = self.recorded_substitution(substitution);
                word_substitutions.push((substitution_verdict.fetches, cds));
                verdict.raise(substitution_verdict);
            }
        }
        for redirect in &command.redirects {
            for substitution in &redirect.target.substitutions {
                verdict.raise(self.script(substitution));
            }
        }
        if command.defines_function.is_some() {
            verdict.raise(Verdict::new(CodeExecution, "defines a shell function"));
        }
        if let Some(group) = &command.group {
            verdict.raise(self.script(group));
        }
        for redirect in &command.redirects {
            if redirect.kind == RedirectKind::Write {
                verdict.raise(self.write_target(&redirect.target, "redirects output into"));
            }
        }
        let program = self.simple(&command.words);
        // The words' substitutions are looked at once more, in order, up to the first that
        // downloads: their `cd`s move `current_dir` again, as walking them again would, but
        // without the walk, which doubled the work at every level of `$( $( … ) )`.
        let mut downloads_code = false;
        for (fetches, cds) in word_substitutions {
            self.apply_cd(cds);
            if fetches {
                downloads_code = true;
                break;
            }
        }
        if program.runs_code && downloads_code {
            verdict.raise(Verdict::new(Blocked, "runs code downloaded from the network"));
        }
        verdict.raise(program);
        verdict
    }

    /// A simple command's words: assignments, keywords, then the program.
    fn simple(&self, words: &[Word]) -> Verdict {
        let mut verdict = Verdict::nothing();
        let mut words = words;
        while let Some(name) = words.first().and_then(assignment_name) {
            if let Some(sets) = code_loading_assignment(name) {
                verdict.raise(sets);
            }
            words = &words[1..];
        }
        let words = skip_keywords(words);
        let Some(program) = words.first() else {
            return verdict;
        };
        if program.dynamic {
            verdict.raise(Verdict::new(Unknown, "runs a program whose name is computed at run time"));
            return verdict;
        }
        verdict.raise(self.program(&program.text, &words[1..]));
        verdict
    }

    pub(super) fn nested_words(&self, words: &[Word], via: &str) -> Verdict {
        if self.nesting.get() >= MAX_NESTING {
            return Verdict::new(Unknown, format!("{via}: nested too deeply to classify"));
        }
        self.nesting.set(self.nesting.get() + 1);
        let verdict = self.simple(words);
        self.nesting.set(self.nesting.get() - 1);
        verdict
    }

    /// Every non-option argument is a written path.
    pub(super) fn each_path(&self, base: Verdict, args: &[Word], value_options: &[&str]) -> Verdict {
        let mut verdict = base;
        for path in positionals(args, value_options) {
            verdict.raise(self.write_target(path, "writes"));
        }
        verdict
    }

    /// The values of output options are written paths.
    pub(super) fn outputs(&self, base: Verdict, args: &[Word], short: &[&str], long: &[&str]) -> Verdict {
        let mut verdict = base;
        for output in option_values(args, short, long) {
            if verdict.class == Safe {
                verdict.raise(Verdict::new(LocalWrite, "writes an output file"));
            }
            verdict.raise(self.write_target(output, "writes"));
        }
        verdict
    }

    /// The class of writing to the path a word names (see `classify_write`).
    pub(super) fn write_target(&self, target: &Word, action: &str) -> Verdict {
        if target.text.starts_with('~') && !target.text.starts_with("~/") && target.text != "~" {
            return Verdict::new(SystemWrite, format!("{action} another user's home directory"));
        }
        let Some(path) = self.target_path(target) else {
            return Verdict::new(Unknown, format!("{action} a path computed at run time"));
        };
        let class = classify_target(&path, self.places);
        let reason = if class.class == LocalWrite { format!("{action} {}", target.text) } else { class.reason };
        Verdict::new(class.class, reason)
    }

    /// The path a word names, relative ones placed under the line's current directory.
    pub(super) fn target_path(&self, word: &Word) -> Option<PathBuf> {
        let expanded = PathBuf::from(self.expand(word)?);
        if expanded.is_absolute() {
            return Some(expanded);
        }
        let current = self.current_dir.borrow().clone()?;
        Some(normalize_lexically(&current.join(expanded)))
    }

    /// The word's path with `~`, `$HOME`, `$PWD` and `$TMPDIR` expanded; `None` when anything
    /// else is computed at run time.
    pub(super) fn expand(&self, word: &Word) -> Option<String> {
        let home = self.places.home().to_string_lossy().into_owned();
        let mut text = word.text.clone();
        if text == "~" || text.starts_with("~/") {
            text = format!("{home}{}", &text[1..]);
        }
        if word.dynamic {
            for (variable, value) in [
                ("${HOME}", home.as_str()),
                ("$HOME", home.as_str()),
                ("${TMPDIR}", "/tmp"),
                ("$TMPDIR", "/tmp"),
                ("${PWD}", "."),
                ("$PWD", "."),
            ] {
                if let Some(rest) = text.strip_prefix(variable)
                    && (rest.is_empty() || rest.starts_with('/'))
                {
                    text = format!("{value}{rest}");
                }
            }
            if text.contains('$') || text.contains('`') || !word.substitutions.is_empty() {
                return None;
            }
        }
        Some(text)
    }
}

/// The program name of a pipeline stage (after `{`, `!` and assignments), for the fork-bomb rule.
fn stage_program(command: &Command) -> Option<&str> {
    skip_assignments(&command.words)
        .iter()
        .map(|word| word.text.as_str())
        .find(|text| !matches!(*text, "{" | "!" | "}"))
}

fn collect_functions(script: &Script, names: &mut Vec<String>) {
    for stage in script.pipelines.iter().flat_map(|pipeline| &pipeline.stages) {
        if let Some(name) = &stage.defines_function {
            names.push(name.clone());
        }
        if let Some(group) = &stage.group {
            collect_functions(group, names);
        }
    }
}
