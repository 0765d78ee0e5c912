//! Programs that run another command: the wrappers (`sudo`, `env`, `nohup`, `timeout`, `xargs`,
//! `exec`, `chroot`, `flock`, …) whose wrapped command is classified in their place, and the
//! programs that run a command line given as text (`bash -c`, `eval`, `su -c`, `watch`).

use crate::class::DangerClass;
use crate::shell_syntax::Word;

use super::args::{
    assignment_name, base_name, code_loading_assignment, has_any, has_flag, is_shell, is_short_cluster, joined,
    option_values, wrapped_after_options,
};
use super::verdict::Verdict;
use super::walker::Classifier;
use DangerClass::{Safe, SystemWrite, Unknown};

/// Where the wrapped command starts in `args` for a program that runs another one
/// (`sudo`, `env`, `nohup`, `timeout`, …); `None` when it is not a wrapper or wraps nothing.
pub(super) fn wrapped_command(program: &str, args: &[Word]) -> Option<usize> {
    let (value_options, positionals_before): (&[&str], usize) = match program {
        "sudo" | "doas" => (&["-u", "-g", "-p", "-C", "-D", "-h", "-r", "-t", "-U", "-T", "--user", "--group"], 0),
        "pkexec" => (&["--user"], 0),
        "env" => (&["-u", "--unset", "-C", "--chdir"], 0),
        "nohup" | "setsid" | "unbuffer" | "builtin" | "caffeinate" | "command" => (&[], 0),
        "time" => (&["-f", "--format", "-o", "--output"], 0),
        "nice" => (&["-n", "--adjustment"], 0),
        "ionice" => (&["-c", "-n", "-p", "--class", "--classdata"], 0),
        "timeout" => (&["-s", "-k", "--signal", "--kill-after"], 1),
        "stdbuf" => (&["-i", "-o", "-e"], 0),
        "exec" => (&["-a"], 0),
        "chroot" => (&["--userspec", "--groups"], 1),
        "flock" => (&["-w", "-E", "--timeout", "--conflict-exit-code"], 1),
        "strace" | "ltrace" => (&["-o", "-p", "-e", "-s", "-u", "-E", "-a", "-P"], 0),
        "taskset" => (&[], 1),
        "xargs" => (&["-I", "-d", "-E", "-e", "-L", "-l", "-n", "-P", "-s", "-a", "--arg-file", "--delimiter"], 0),
        _ => return None,
    };
    let mut index = 0;
    let mut positionals = 0;
    while let Some(word) = args.get(index) {
        let text = word.text.as_str();
        if text == "--" {
            index += 1;
            break;
        }
        if program == "env" && assignment_name(word).is_some() {
            index += 1;
            continue;
        }
        if text.starts_with('-') && text.len() > 1 && positionals == 0 {
            index += if value_options.contains(&text) { 2 } else { 1 };
            continue;
        }
        if positionals < positionals_before {
            positionals += 1;
            index += 1;
            continue;
        }
        break;
    }
    (index < args.len()).then_some(index)
}

/// The script text of `bash -c '<text>'`, `eval <text>`, `su -c '<text>'`, `flock -c`,
/// `watch <text>` when it is fixed (no expansion).
pub(super) fn inline_script(program: &str, args: &[Word]) -> Option<String> {
    let static_text = |words: &[Word]| -> Option<String> {
        (!words.is_empty() && words.iter().all(|word| !word.dynamic)).then(|| joined(words))
    };
    match program {
        "eval" => static_text(args),
        "watch" => {
            wrapped_after_options(args, &["-n", "--interval", "-d"]).and_then(|start| static_text(&args[start..]))
        }
        _ if is_shell(program) || matches!(program, "su" | "flock") => {
            let position = args.iter().position(|word| {
                word.text == "-c"
                    || word.text == "--command"
                    || (is_short_cluster(&word.text) && word.text.ends_with('c'))
            })?;
            let script = args.get(position + 1)?;
            (!script.dynamic).then(|| script.text.clone())
        }
        _ => None,
    }
}

impl Classifier<'_> {
    /// `sudo`, `env`, `nohup`, `timeout`, `xargs`, `exec`, `chroot`, `flock`, …
    pub(super) fn wrapper(&self, program: &str, args: &[Word]) -> Option<Verdict> {
        let start = wrapped_command(program, args);
        let root = matches!(program, "sudo" | "doas" | "pkexec");
        if start.is_none() {
            return match program {
                "sudo" | "doas" if has_flag(args, 's', &["--shell"]) || has_flag(args, 'i', &["--login"]) => {
                    Some(Verdict::new(SystemWrite, format!("{program} opens a root shell")).running_code())
                }
                "sudo" | "doas" | "pkexec" => {
                    Some(Verdict::new(Safe, format!("{program} without a command only reads")))
                }
                "env" if has_any(args, &["-S", "--split-string"]) => {
                    Some(Verdict::new(Unknown, "env -S runs a command string"))
                }
                "xargs" => Some(Verdict::new(Safe, "xargs echo only prints")),
                "command" | "exec" | "env" | "nohup" | "time" | "builtin" => {
                    Some(Verdict::new(Safe, format!("{program} only reads")))
                }
                "flock" => inline_script("flock", args).map(|text| self.nested_line(&text)),
                _ => None,
            };
        }
        let start = start?;
        if program == "command" && (has_flag(args, 'v', &[]) || has_flag(args, 'V', &[])) {
            return Some(Verdict::new(Safe, "command -v only looks a program up"));
        }
        if program == "env" && has_any(args, &["-S", "--split-string"]) {
            return Some(Verdict::new(Unknown, "env -S runs a command string"));
        }
        let inner = &args[start..];
        let mut assignments = Verdict::nothing();
        if program == "env" {
            for name in args[..start].iter().filter_map(assignment_name) {
                if let Some(sets) = code_loading_assignment(name) {
                    assignments.raise(sets);
                }
            }
        }
        let mut verdict = if program == "xargs" {
            let mut with_input = inner.to_vec();
            with_input.push(Word { text: "{xargs input}".to_owned(), dynamic: true, ..Word::default() });
            self.nested_words(&with_input, "xargs")
        } else {
            self.nested_words(inner, program)
        };
        if root {
            let inner_program = inner.first().map(|word| base_name(&word.text).to_owned()).unwrap_or_default();
            verdict = verdict.at_least(SystemWrite, format!("{program} runs {inner_program} as root"));
        }
        if program == "chroot" {
            verdict = verdict.at_least(SystemWrite, "chroot runs a program in another root");
        }
        verdict.raise(assignments);
        if matches!(program, "time" | "strace" | "ltrace") {
            for output in option_values(args, &["-o"], &["--output"]) {
                verdict.raise(self.write_target(output, "writes"));
            }
        }
        Some(verdict)
    }

    /// `su -c` and `watch`: programs that run a command line given to them as text.
    pub(super) fn script_runner(&self, base: &str, args: &[Word]) -> Option<Verdict> {
        let verdict = match base {
            "su" => match inline_script("su", args) {
                Some(text) => self.nested_line(&text).at_least(SystemWrite, "su runs it as another user"),
                None => Verdict::new(SystemWrite, "su opens a shell as another user").running_code(),
            },
            "watch" => match inline_script("watch", args) {
                Some(text) => self.nested_line(&text),
                None => Verdict::new(Unknown, "watch runs a command computed at run time"),
            },
            _ => return None,
        };
        Some(verdict)
    }
}
