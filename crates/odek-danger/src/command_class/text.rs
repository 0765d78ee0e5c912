//! Text tools whose scripts can run commands or write files: `sed` (`e`, `w`, `-i`) and `awk`
//! (`system()`, pipes, redirections, `-i inplace`).

use std::sync::LazyLock;

use regex::Regex;

use crate::class::DangerClass;
use crate::shell_syntax::Word;

use super::args::{has_any, is_short_cluster, option_values, positionals};
use super::verdict::Verdict;
use super::walker::Classifier;
use DangerClass::{CodeExecution, LocalWrite, Safe};

fn awk(program: &str, args: &[Word]) -> Verdict {
    static RUNS_OR_WRITES: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(r#"system\s*\(|\|\s*getline|\|&|print[f]?\b[^;{}]*(?:[|>])|getline\s*<|fflush\s*\(\s*"|close\s*\("#)
            .ok()
    });
    if has_any(args, &["-f", "--file"]) {
        return Verdict::new(CodeExecution, format!("{program} runs a program file"));
    }
    if args.iter().any(|a| a.text == "inplace" || a.text.contains("-i")) && has_any(args, &["-i"]) {
        return Verdict::new(LocalWrite, format!("{program} -i inplace edits files"));
    }
    let Some(text) = positionals(args, &["-F", "-v", "--assign", "--field-separator"]).first().map(|w| w.text.as_str())
    else {
        return Verdict::new(Safe, format!("{program} only prints"));
    };
    if RUNS_OR_WRITES.as_ref().is_none_or(|re| re.is_match(text)) {
        return Verdict::new(CodeExecution, format!("{program} program runs commands or writes files"));
    }
    Verdict::new(Safe, format!("{program} only prints"))
}

impl Classifier<'_> {
    /// `sed` and `awk`.
    pub(super) fn text_command(&self, base: &str, args: &[Word]) -> Option<Verdict> {
        let verdict = match base {
            "sed" => self.sed(args),
            "awk" | "gawk" | "mawk" | "nawk" => awk(base, args),
            _ => return None,
        };
        Some(verdict)
    }

    fn sed(&self, args: &[Word]) -> Verdict {
        static EXEC_OR_WRITE: LazyLock<Option<Regex>> = LazyLock::new(|| {
            Regex::new(r"(?:^|[;{}\n])\s*(?:[0-9$]+|/[^/]*/)?(?:,\s*(?:[0-9$]+|/[^/]*/))?\s*!?\s*[ewW](?:\s|$)|s/(?:[^/\\]|\\.)*/(?:[^/\\]|\\.)*/[gpIiMm0-9]*[ew]").ok()
        });
        let in_place = args.iter().any(|a| {
            a.text.starts_with("--in-place")
                || (is_short_cluster(&a.text) && a.text.contains('i'))
                || a.text.starts_with("-i")
        });
        let scripts: Vec<&Word> = option_values(args, &["-e"], &["--expression"]);
        let uses_file = has_any(args, &["-f", "--file"]);
        let mut operands = positionals(args, &["-e", "--expression", "-f", "--file", "-l", "--line-length"]);
        let mut verdict = Verdict::new(Safe, "sed only prints");
        let mut texts: Vec<&str> = scripts.iter().map(|w| w.text.as_str()).collect();
        if scripts.is_empty() && !uses_file && !operands.is_empty() {
            texts.push(operands.remove(0).text.as_str());
        }
        if uses_file {
            verdict.raise(Verdict::new(CodeExecution, "sed runs a script file"));
        }
        if texts.iter().any(|text| EXEC_OR_WRITE.as_ref().is_none_or(|re| re.is_match(text))) {
            verdict.raise(Verdict::new(CodeExecution, "sed script runs commands or writes files"));
        }
        if in_place {
            verdict.raise(Verdict::new(LocalWrite, "sed -i edits files in place"));
            for file in operands {
                verdict.raise(self.write_target(file, "sed -i edits"));
            }
        }
        verdict
    }
}
