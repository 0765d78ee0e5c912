//! Shell builtins and keywords: `source` and `eval` run code, `alias` values are classified as
//! lines, `export` of a code-loading variable runs code, `cd` moves where later relative paths
//! land, `case` is not classified.

use crate::class::DangerClass;
use crate::shell_syntax::Word;

use super::args::{assignment_name, code_loading_assignment};
use super::verdict::Verdict;
use super::walker::Classifier;
use super::wrappers::inline_script;
use DangerClass::{CodeExecution, Safe, Unknown};

impl Classifier<'_> {
    /// Shell builtins and keywords: `source`, `eval`, `trap`, functions, aliases, variables,
    /// `cd`, loop and `case` headers.
    pub(super) fn builtin_command(&self, base: &str, args: &[Word]) -> Option<Verdict> {
        let verdict = match base {
            "source" | "." => {
                Verdict::new(CodeExecution, format!("{base} runs a shell script in this shell")).running_code()
            }
            "eval" => match inline_script("eval", args) {
                Some(text) => self
                    .nested_line(&text)
                    .at_least(CodeExecution, "eval runs its arguments as a command")
                    .running_code(),
                None => Verdict::new(CodeExecution, "eval runs text computed at run time").running_code(),
            },
            "trap" => Verdict::new(CodeExecution, "trap runs a command on a signal"),
            "function" => Verdict::new(CodeExecution, "defines a shell function"),
            "alias" => {
                let mut verdict = Verdict::new(Safe, "alias only names a command");
                for value in args.iter().filter_map(|a| a.text.split_once('=').map(|(_, v)| v.to_owned())) {
                    verdict.raise(self.nested_line(&value));
                }
                verdict
            }
            "export" | "declare" | "typeset" | "local" | "readonly" => {
                let mut verdict = Verdict::new(Safe, format!("{base} sets shell variables"));
                for name in args.iter().filter_map(assignment_name) {
                    if let Some(sets) = code_loading_assignment(name) {
                        verdict.raise(sets);
                    }
                }
                verdict
            }
            "cd" | "pushd" | "popd" => {
                self.change_directory(base, args);
                Verdict::new(Safe, format!("{base} changes the shell's directory"))
            }
            "for" | "select" => Verdict::new(Safe, "loop header"),
            "case" => Verdict::new(Unknown, "case statements are not classified"),
            _ => return None,
        };
        Some(verdict)
    }
}
