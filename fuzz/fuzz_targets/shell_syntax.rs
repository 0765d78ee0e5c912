//! The danger classifier's shell-syntax parser (`odek_danger::shell_syntax::parse`) and the
//! classifier and denylist on top of it (spec `loop-and-sessions.md` §11). Invariants: parsing
//! and classifying never panic and are bounded (libFuzzer `-timeout`); the parser invents
//! nothing (every word and redirection target of the tree is made of input characters it
//! consumed, so there are never more of them than characters) and stays within `MAX_DEPTH`; a
//! word with a substitution is dynamic; the tree survives a round trip (rendered with every word
//! single-quoted, it parses back to the same pipelines, words, redirections, groups and
//! function names); classification is total and fails closed (a line that does not parse is
//! `unknown`, no class is `unread_exec`, every reason is non-empty); and a denylist entry naming
//! the program of any simple command in the tree, at any depth, matches the line.
//!
//! Input: the command line's bytes (invalid UTF-8 replaced).

#![no_main]

use libfuzzer_sys::fuzz_target;
use odek_danger::shell_syntax::{Command, MAX_DEPTH, RedirectKind, Script, parse};
use odek_danger::{DangerClass, classify_command, denylist_matches};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let classification = classify_command(&text);
    assert!(!classification.reason.is_empty(), "an empty reason for {text:?}");
    assert_ne!(classification.class, DangerClass::UnreadExec);
    let script = match parse(&text) {
        Ok(script) => script,
        Err(error) => {
            assert!(!error.0.is_empty());
            assert_eq!(classification.class, DangerClass::Unknown, "{text:?} does not parse but is {classification:?}");
            assert!(classification.reason.starts_with("cannot parse the command ("), "{classification:?}");
            return;
        }
    };
    let mut items = 0;
    check_tree(&script, 0, &mut items);
    assert!(items <= text.chars().count(), "{items} words and targets from {} characters", text.chars().count());

    let rendered = render_script(&script);
    let reparsed =
        parse(&rendered).unwrap_or_else(|error| panic!("{rendered:?} (from {text:?}) does not parse: {error:?}"));
    assert_eq!(shape(&reparsed), shape(&script), "{text:?} rendered as {rendered:?}");

    for program in programs(&script) {
        assert!(denylist_matches(&program, &text), "{text:?} runs {program:?}, which the denylist does not see");
    }
});

/// Words and targets counted into `items`; depth, dynamic flags checked.
fn check_tree(script: &Script, depth: usize, items: &mut usize) {
    assert!(depth <= MAX_DEPTH, "nested {depth} deep");
    for stage in script.pipelines.iter().flat_map(|pipeline| &pipeline.stages) {
        assert!(
            !stage.words.is_empty()
                || !stage.redirects.is_empty()
                || stage.group.is_some()
                || stage.defines_function.is_some(),
            "an empty command"
        );
        for word in stage.words.iter().chain(stage.redirects.iter().map(|redirect| &redirect.target)) {
            *items += 1;
            assert!(
                word.substitutions.is_empty() || word.dynamic,
                "{:?} has a substitution but is not dynamic",
                word.text
            );
            for substitution in &word.substitutions {
                check_tree(substitution, depth + 1, items);
            }
        }
        if let Some(group) = &stage.group {
            check_tree(group, depth + 1, items);
        }
    }
    for substitution in &script.heredoc_substitutions {
        check_tree(substitution, depth + 1, items);
    }
}

fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

fn render_script(script: &Script) -> String {
    let pipelines: Vec<String> = script
        .pipelines
        .iter()
        .map(|pipeline| pipeline.stages.iter().map(render_command).collect::<Vec<_>>().join(" | "))
        .collect();
    pipelines.join(" ; ")
}

/// Group first, then words, redirections, and the function name last (where the parser took
/// it from).
fn render_command(command: &Command) -> String {
    let mut parts = Vec::new();
    if let Some(group) = &command.group {
        parts.push(format!("( {} )", render_script(group)));
    }
    parts.extend(command.words.iter().map(|word| quote(&word.text)));
    for redirect in &command.redirects {
        let operator = match redirect.kind {
            RedirectKind::Write => ">",
            RedirectKind::Read => "<",
            RedirectKind::Duplicate => "<&",
            RedirectKind::Inline => "<<<",
        };
        parts.push(format!("{operator} {}", quote(&redirect.target.text)));
    }
    if let Some(name) = &command.defines_function {
        parts.push(format!("{}()", quote(name)));
    }
    parts.join(" ")
}

#[derive(Debug, PartialEq)]
struct StageShape {
    words: Vec<String>,
    redirects: Vec<(RedirectKind, String)>,
    group: Option<Vec<Vec<StageShape>>>,
    function: Option<String>,
}

fn shape(script: &Script) -> Vec<Vec<StageShape>> {
    script
        .pipelines
        .iter()
        .map(|pipeline| {
            pipeline
                .stages
                .iter()
                .map(|stage| StageShape {
                    words: stage.words.iter().map(|word| word.text.clone()).collect(),
                    redirects: stage
                        .redirects
                        .iter()
                        .map(|redirect| (redirect.kind, redirect.target.text.clone()))
                        .collect(),
                    group: stage.group.as_deref().map(shape),
                    function: stage.defines_function.clone(),
                })
                .collect()
        })
        .collect()
}

/// The program of every simple command in the tree that a plain denylist entry can name: after
/// `NAME=value` assignments and the keywords that lead into a command, a fixed word of
/// ordinary characters.
fn programs(script: &Script) -> Vec<String> {
    let mut found = Vec::new();
    collect_programs(script, &mut found);
    found
}

fn collect_programs(script: &Script, found: &mut Vec<String>) {
    for stage in script.pipelines.iter().flat_map(|pipeline| &pipeline.stages) {
        for word in stage.words.iter().chain(stage.redirects.iter().map(|redirect| &redirect.target)) {
            for substitution in &word.substitutions {
                collect_programs(substitution, found);
            }
        }
        if let Some(group) = &stage.group {
            collect_programs(group, found);
        }
        let mut words = stage.words.iter().peekable();
        while words.next_if(|word| is_assignment(&word.text)).is_some() {}
        while words.next_if(|word| is_keyword(&word.text)).is_some() {}
        while words.next_if(|word| is_assignment(&word.text)).is_some() {}
        if let Some(program) = words.next()
            && !program.dynamic
            && !program.text.starts_with('-')
            && !program.text.is_empty()
            && program.text.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '+' | '-'))
        {
            found.push(program.text.clone());
        }
    }
    for substitution in &script.heredoc_substitutions {
        collect_programs(substitution, found);
    }
}

fn is_assignment(text: &str) -> bool {
    let Some((name, _)) = text.split_once('=') else { return false };
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_keyword(text: &str) -> bool {
    matches!(
        text,
        "{" | "!" | "if" | "then" | "else" | "elif" | "do" | "while" | "until" | "}" | "fi" | "done" | "esac"
    )
}
