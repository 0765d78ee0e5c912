//! Shells, Python and the other interpreters and project runners: what they run (inline code,
//! a script, a module, or code read from standard input — the right side of `curl … | sh`).

use crate::class::DangerClass;
use crate::shell_syntax::Word;

use super::args::{has_any, has_flag, is_short_cluster, positionals};
use super::packages::pip;
use super::verdict::Verdict;
use super::walker::Classifier;
use super::wrappers::inline_script;
use DangerClass::{CodeExecution, LocalWrite, Safe};

/// Interpreters and project runners: `--version` only reads; anything else runs code.
pub(super) fn interpreter_like(program: &str, args: &[Word]) -> Verdict {
    if args.len() == 1 && matches!(args[0].text.as_str(), "--version" | "-v" | "-V" | "version" | "--help") {
        return Verdict::new(Safe, format!("{program} only prints its version"));
    }
    let verdict = Verdict::new(CodeExecution, format!("{program} runs code"));
    let inline = has_any(args, &["-e", "-E", "-p", "-r", "--eval", "--print"]);
    if args.is_empty()
        && matches!(
            program,
            "node" | "nodejs" | "ruby" | "perl" | "php" | "lua" | "luajit" | "Rscript" | "julia" | "tclsh" | "deno"
        )
    {
        return verdict.reading_code_from_stdin();
    }
    if inline {
        return Verdict::new(CodeExecution, format!("{program} runs inline code")).running_code();
    }
    verdict.running_code()
}

impl Classifier<'_> {
    pub(super) fn shell(&self, shell: &str, args: &[Word]) -> Verdict {
        if let Some(text) = inline_script(shell, args) {
            return self
                .nested_line(&text)
                .at_least(CodeExecution, format!("{shell} -c runs a shell script"))
                .running_code();
        }
        if has_any(args, &["-c"]) || args.iter().any(|a| is_short_cluster(&a.text) && a.text.ends_with('c')) {
            return Verdict::new(CodeExecution, format!("{shell} -c runs a script computed at run time"))
                .running_code();
        }
        if has_any(args, &["--version", "--help"]) {
            return Verdict::new(Safe, format!("{shell} only prints its version"));
        }
        let script = positionals(args, &["-o", "+o", "-O", "+O", "--rcfile", "--init-file"]).into_iter().next();
        match script {
            Some(file) if file.text != "-" && !has_flag(args, 's', &[]) => {
                Verdict::new(CodeExecution, format!("{shell} runs the script {}", file.text)).running_code()
            }
            _ => Verdict::new(CodeExecution, format!("{shell} runs commands from its input")).reading_code_from_stdin(),
        }
    }

    pub(super) fn python(&self, python: &str, args: &[Word]) -> Verdict {
        let mut index = 0;
        while let Some(word) = args.get(index) {
            match word.text.as_str() {
                "-c" => return Verdict::new(CodeExecution, format!("{python} -c runs inline code")).running_code(),
                "-m" => {
                    let module = args.get(index + 1).map(|w| w.text.as_str()).unwrap_or("");
                    let rest = args.get(index + 2..).unwrap_or(&[]);
                    return match module {
                        "pip" => pip(rest),
                        "venv" | "virtualenv" => self.each_path(
                            Verdict::new(LocalWrite, "creates a virtual environment"),
                            rest,
                            &["--prompt"],
                        ),
                        "json.tool" | "py_compile" | "compileall" | "tabnanny" => {
                            Verdict::new(Safe, format!("{python} -m {module} only reads"))
                        }
                        _ => Verdict::new(CodeExecution, format!("{python} -m {module} runs a module")).running_code(),
                    };
                }
                "--version" | "-V" | "--help" | "-h" => {
                    return Verdict::new(Safe, format!("{python} only prints its version"));
                }
                "-W" | "-X" | "-Q" => index += 2,
                "-" => {
                    return Verdict::new(CodeExecution, format!("{python} runs code from its input"))
                        .reading_code_from_stdin();
                }
                text if text.starts_with('-') => index += 1,
                script => return Verdict::new(CodeExecution, format!("{python} runs {script}")).running_code(),
            }
        }
        Verdict::new(CodeExecution, format!("{python} runs code from its input")).reading_code_from_stdin()
    }
}
