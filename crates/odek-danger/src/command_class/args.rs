//! Argument rules shared by every program family: options given alone or in clusters, option
//! values, positionals, `NAME=value` assignments (and the variables that change what programs
//! load), remote `host:path` specs, program names (base names, shells, Python), and
//! classifying a program by its subcommand.

use std::sync::LazyLock;

use regex::Regex;

use crate::class::DangerClass;
use crate::shell_syntax::Word;

use super::verdict::Verdict;
use DangerClass::{CodeExecution, Install, NetworkEgress};

/// Environment variables that change which code a program loads or runs.
const CODE_LOADING_VARIABLES: &[&str] = &[
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "DYLD_INSERT_LIBRARIES",
    "DYLD_LIBRARY_PATH",
    "BASH_ENV",
    "ENV",
    "PROMPT_COMMAND",
    "PATH",
    "SHELLOPTS",
    "BASHOPTS",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EXEC_PATH",
    "GIT_EDITOR",
    "GIT_PAGER",
    "GIT_ASKPASS",
    "GIT_EXTERNAL_DIFF",
    "GIT_CONFIG_PARAMETERS",
    "PERL5OPT",
    "PERL5LIB",
    "PYTHONSTARTUP",
    "PYTHONHOME",
    "NODE_OPTIONS",
    "RUBYOPT",
];

/// `NAME=value` for a variable that changes which code programs load: `code_execution`.
pub(super) fn code_loading_assignment(name: &str) -> Option<Verdict> {
    CODE_LOADING_VARIABLES
        .contains(&name)
        .then(|| Verdict::new(CodeExecution, format!("sets {name}, which changes what programs load")))
}

pub(super) fn texts(words: &[Word]) -> Vec<String> {
    words.iter().map(|word| word.text.clone()).collect()
}

pub(super) fn skip_assignments(words: &[Word]) -> &[Word] {
    let start = words.iter().take_while(|word| assignment_name(word).is_some()).count();
    &words[start..]
}

/// `NAME` of a `NAME=value` word.
pub(super) fn assignment_name(word: &Word) -> Option<&str> {
    let (name, _) = word.text.split_once('=')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    ((first.is_ascii_alphabetic() || first == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then_some(name)
}

/// The words after the shell keywords that can stand before a command (`{`, `!`, `if`, `then`,
/// `do`, `while`, …): the command the keywords lead into.
pub(super) fn skip_keywords(words: &[Word]) -> &[Word] {
    let start = words
        .iter()
        .take_while(|word| {
            matches!(
                word.text.as_str(),
                "{" | "!" | "if" | "then" | "else" | "elif" | "do" | "while" | "until" | "}" | "fi" | "done" | "esac"
            )
        })
        .count();
    &words[start..]
}

/// A shell that takes `-c <script>`.
pub(super) fn is_shell(program: &str) -> bool {
    matches!(program, "sh" | "bash" | "zsh" | "dash" | "ksh" | "mksh" | "ash" | "fish" | "yash" | "tcsh" | "csh")
}

/// `python`, `python3.12`, `pypy3`, ….
pub(super) fn is_python(program: &str) -> bool {
    static PYTHON: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"^(python|pypy)[0-9.]*$").ok());
    PYTHON.as_ref().is_some_and(|re| re.is_match(program))
}

pub(super) fn base_name(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

pub(super) fn joined(words: &[Word]) -> String {
    words.iter().map(|word| word.text.as_str()).collect::<Vec<_>>().join(" ")
}

pub(super) fn wrapped_after_options(args: &[Word], value_options: &[&str]) -> Option<usize> {
    let mut index = 0;
    while let Some(word) = args.get(index) {
        if word.text == "--" {
            return (index + 1 < args.len()).then_some(index + 1);
        }
        if word.text.starts_with('-') && word.text.len() > 1 {
            index += if value_options.contains(&word.text.as_str()) { 2 } else { 1 };
            continue;
        }
        return Some(index);
    }
    None
}

pub(super) fn wrapped_after_options_named(args: &[Word], names: &[&str]) -> Option<usize> {
    let position = args.iter().position(|word| names.contains(&word.text.as_str()))?;
    (position + 1 < args.len()).then_some(position + 1)
}

pub(super) fn is_short_cluster(text: &str) -> bool {
    text.len() > 1
        && text.starts_with('-')
        && !text.starts_with("--")
        && text[1..].chars().all(|c| c.is_ascii_alphabetic())
}

/// `-x` given alone, inside a cluster (`-rf`), or as one of the long spellings.
pub(super) fn has_flag(args: &[Word], short: char, long: &[&str]) -> bool {
    args.iter().take_while(|word| word.text != "--").any(|word| {
        long.contains(&word.text.as_str()) || (is_short_cluster(&word.text) && word.text[1..].contains(short))
    })
}

pub(super) fn has_any(args: &[Word], spellings: &[&str]) -> bool {
    args.iter().any(|word| spellings.contains(&word.text.as_str()))
}

/// Non-option arguments (everything after `--`), skipping the values of `value_options`.
pub(super) fn positionals<'a>(args: &'a [Word], value_options: &[&str]) -> Vec<&'a Word> {
    let mut out = Vec::new();
    let mut index = 0;
    let mut options_done = false;
    while let Some(word) = args.get(index) {
        index += 1;
        if options_done || word.text == "-" || !word.text.starts_with('-') {
            out.push(word);
        } else if word.text == "--" {
            options_done = true;
        } else if value_options.contains(&word.text.as_str()) {
            index += 1;
        }
    }
    out
}

/// The value of `-o FILE`, `-oFILE` (short) or `--output=FILE` / `--output FILE` (long).
pub(super) fn option_values<'a>(args: &'a [Word], short: &[&str], long: &[&str]) -> Vec<&'a Word> {
    let mut values = Vec::new();
    for (index, word) in args.iter().enumerate() {
        let text = word.text.as_str();
        if short.contains(&text) || long.contains(&text) {
            if let Some(value) = args.get(index + 1) {
                values.push(value);
            }
        } else if long.iter().any(|option| text.starts_with(&format!("{option}="))) {
            values.push(word);
        }
    }
    values
}

pub(super) fn first_positional(args: &[Word]) -> Option<&str> {
    args.iter().find(|word| !word.text.starts_with('-')).map(|word| word.text.as_str())
}

pub(super) fn is_remote_spec(text: &str) -> bool {
    if text.starts_with("rsync://") || text.contains("::") {
        return true;
    }
    match text.split_once(':') {
        Some((host, _)) => !host.is_empty() && !host.contains('/') && !text.starts_with('-'),
        None => false,
    }
}

/// Classifies by the first non-option argument: the first rule that lists it, else `default`
/// (`None` subcommand ⇒ `default` too).
pub(super) fn by_subcommand(
    program: &str,
    args: &[Word],
    rules: &[(&[&str], DangerClass, &str)],
    default: DangerClass,
) -> Verdict {
    let sub = first_positional(args).or_else(|| args.first().map(|w| w.text.as_str()));
    if let Some(sub) = sub
        && let Some((_, class, what)) = rules.iter().find(|(names, _, _)| names.contains(&sub))
    {
        let verdict = Verdict::new(*class, format!("{program} {sub} {what}"));
        return if *class == CodeExecution { verdict.running_code() } else { verdict };
    }
    let what = match default {
        Install => "installs or changes packages",
        NetworkEgress => "talks to other machines",
        CodeExecution => "runs code",
        _ => "is not a recognised subcommand",
    };
    let verdict = Verdict::new(default, format!("{program} {} {what}", sub.unwrap_or("")).replace("  ", " "));
    if default == CodeExecution { verdict.running_code() } else { verdict }
}
