//! The denylist's view of a line: every simple command as a token list, as written, after the
//! shell keywords that lead into it, with its wrappers taken off and with the program's base
//! name, down groups, substitutions (as deep as the parser goes) and nested lines (`bash -c`,
//! `eval`: at most `MAX_NESTING` deep, each one parsed again).

use crate::shell_syntax::{self, Script};

use super::args::{base_name, skip_assignments, skip_keywords, texts};
use super::walker::MAX_NESTING;
use super::wrappers::{inline_script, wrapped_command};

/// `depth`: how many nested lines deep `script` is.
pub(super) fn collect_forms(script: &Script, forms: &mut Vec<Vec<String>>, depth: usize) {
    if depth > MAX_NESTING {
        return;
    }
    for stage in script.pipelines.iter().flat_map(|pipeline| &pipeline.stages) {
        for word in stage.words.iter().chain(stage.redirects.iter().map(|r| &r.target)) {
            for substitution in &word.substitutions {
                collect_forms(substitution, forms, depth);
            }
        }
        if let Some(group) = &stage.group {
            collect_forms(group, forms, depth);
        }
        let written = skip_assignments(&stage.words);
        let mut words = skip_assignments(skip_keywords(written));
        if words.len() != written.len() {
            forms.push(texts(written));
        }
        loop {
            forms.push(texts(words));
            let Some(program) = words.first() else { break };
            let base = base_name(&program.text);
            if base != program.text {
                let mut with_base = vec![base.to_owned()];
                with_base.extend(texts(&words[1..]));
                forms.push(with_base);
            }
            if let Some(script_text) = inline_script(base, &words[1..])
                && let Ok(inner) = shell_syntax::parse(&script_text)
            {
                collect_forms(&inner, forms, depth + 1);
            }
            match wrapped_command(base, &words[1..]) {
                Some(start) => words = skip_assignments(&words[1 + start..]),
                None => break,
            }
        }
    }
    for substitution in &script.heredoc_substitutions {
        collect_forms(substitution, forms, depth);
    }
}
