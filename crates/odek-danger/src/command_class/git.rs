//! `git`: global options that make it run commands (`-c`, `--exec-path`), then the subcommand —
//! reads, local changes, talking to a remote, discarding work (`reset --hard`, `clean -f`,
//! `push --force`, …), and the `git config` keys that make git run commands.

use std::sync::LazyLock;

use regex::Regex;

use crate::class::DangerClass;
use crate::shell_syntax::Word;

use super::args::{first_positional, has_any, has_flag, positionals};
use super::verdict::Verdict;
use super::walker::Classifier;
use DangerClass::{CodeExecution, Destructive, LocalWrite, NetworkEgress, Persistence, Safe, Unknown};

impl Classifier<'_> {
    /// `git`, by its global options and subcommand.
    pub(super) fn git_command(&self, base: &str, args: &[Word]) -> Option<Verdict> {
        (base == "git").then(|| self.git(args))
    }

    fn git(&self, args: &[Word]) -> Verdict {
        let mut verdict = Verdict::nothing();
        let mut index = 0;
        while let Some(word) = args.get(index) {
            match word.text.as_str() {
                "-C" | "--git-dir" | "--work-tree" | "--namespace" => index += 2,
                "-c" | "--config-env" => {
                    verdict.raise(Verdict::new(CodeExecution, "git -c can make git run commands"));
                    index += 2;
                }
                text if text.starts_with("--exec-path=") => {
                    verdict.raise(Verdict::new(CodeExecution, "git --exec-path runs other programs"));
                    index += 1;
                }
                text if text.starts_with('-') => index += 1,
                _ => break,
            }
        }
        let Some(subcommand) = args.get(index) else {
            return verdict.at_least(Safe, "git only prints help");
        };
        let rest = &args[index + 1..];
        let sub = subcommand.text.as_str();
        verdict.raise(self.git_subcommand(sub, rest));
        verdict
    }

    fn git_subcommand(&self, sub: &str, rest: &[Word]) -> Verdict {
        if let Some(verdict) = git_discarding(sub, rest) {
            return verdict;
        }
        match sub {
            "status" | "log" | "diff" | "show" | "blame" | "annotate" | "describe" | "shortlog" | "grep"
            | "rev-parse" | "rev-list" | "ls-files" | "ls-tree" | "cat-file" | "merge-base" | "name-rev"
            | "whatchanged" | "count-objects" | "for-each-ref" | "show-ref" | "show-branch" | "help" | "version"
            | "check-ignore" | "check-attr" | "diff-tree" | "diff-files" | "diff-index" | "var" | "verify-commit"
            | "verify-tag" | "fsck" | "cherry" | "range-diff" | "reflog" | "check-ref-format" => git_reads(sub),
            "branch" => git_branch(sub, rest),
            "tag" => git_tag(sub, rest),
            "stash" => match first_positional(rest) {
                Some("list" | "show") => git_reads("stash list"),
                Some("drop" | "clear") => Verdict::new(Destructive, "git stash drop discards stashed changes"),
                _ => git_local(sub),
            },
            "config" => git_config(rest),
            "maintenance" => match first_positional(rest) {
                Some("start" | "register") => {
                    Verdict::new(Persistence, "git maintenance start schedules background jobs")
                }
                _ => git_local(sub),
            },
            "worktree" => match first_positional(rest) {
                Some("list") => git_reads("worktree list"),
                _ => git_local(sub),
            },
            "add" | "commit" | "mv" | "rm" | "merge" | "rebase" | "cherry-pick" | "revert" | "init" | "apply"
            | "am" | "notes" | "bisect" | "sparse-checkout" | "update-index" | "read-tree" | "write-tree"
            | "commit-tree" | "update-ref" | "symbolic-ref" | "gc" | "repack" | "pack-refs" | "prune"
            | "format-patch" | "bundle" | "stage" | "mergetool" | "replace" | "lfs" => git_local(sub),
            "clone" | "fetch" | "pull" | "ls-remote" | "send-email" | "request-pull" | "fetch-pack" | "svn" => {
                git_network(sub)
            }
            "submodule" => match first_positional(rest) {
                Some("status" | "summary") => git_reads("submodule status"),
                Some("foreach") => Verdict::new(CodeExecution, "git submodule foreach runs a command"),
                _ => git_network(sub),
            },
            "remote" => match first_positional(rest) {
                None | Some("get-url") => git_reads("remote"),
                Some("add" | "remove" | "rm" | "rename" | "set-url" | "set-head" | "set-branches") => {
                    git_local("remote")
                }
                _ => git_network("remote"),
            },
            "archive" => {
                if rest.iter().any(|a| a.text.starts_with("--remote")) {
                    git_network(sub)
                } else {
                    self.outputs(git_local(sub), rest, &["-o"], &["--output"])
                }
            }
            "push" => git_push(rest),
            other => Verdict::new(Unknown, format!("git {other} is not a recognised git command")),
        }
    }
}

fn git_reads(what: &str) -> Verdict {
    Verdict::new(Safe, format!("git {what} only reads the repository"))
}

fn git_local(what: &str) -> Verdict {
    Verdict::new(LocalWrite, format!("git {what} changes the local repository"))
}

fn git_network(what: &str) -> Verdict {
    Verdict::new(NetworkEgress, format!("git {what} talks to a remote"))
}

/// The subcommands that can throw away uncommitted work or history.
fn git_discarding(sub: &str, rest: &[Word]) -> Option<Verdict> {
    let verdict = match sub {
        "reset" => {
            if has_any(rest, &["--hard", "--merge", "--keep"]) {
                Verdict::new(Destructive, "git reset --hard discards uncommitted changes")
            } else {
                git_local(sub)
            }
        }
        "clean" => {
            if has_flag(rest, 'n', &["--dry-run"]) {
                git_reads("clean -n")
            } else if has_flag(rest, 'f', &["--force"]) {
                Verdict::new(Destructive, "git clean -f deletes untracked files")
            } else {
                git_local(sub)
            }
        }
        "checkout" => {
            if has_flag(rest, 'f', &["--force"]) || has_any(rest, &["--", "."]) {
                Verdict::new(Destructive, "git checkout of paths discards uncommitted changes")
            } else {
                git_local(sub)
            }
        }
        "restore" => {
            if has_flag(rest, 'S', &["--staged"]) && !has_flag(rest, 'W', &["--worktree"]) {
                git_local(sub)
            } else {
                Verdict::new(Destructive, "git restore discards uncommitted changes")
            }
        }
        "switch" => {
            if has_flag(rest, 'f', &["--force", "--discard-changes"]) {
                Verdict::new(Destructive, "git switch --discard-changes discards uncommitted changes")
            } else {
                git_local(sub)
            }
        }
        "filter-branch" | "filter-repo" => Verdict::new(Destructive, "rewrites the repository history"),
        _ => return None,
    };
    Some(verdict)
}

fn git_branch(sub: &str, rest: &[Word]) -> Verdict {
    if has_flag(rest, 'D', &[]) || (has_flag(rest, 'd', &["--delete"]) && has_flag(rest, 'f', &["--force"])) {
        Verdict::new(Destructive, "git branch -D deletes a branch that may not be merged")
    } else if positionals(rest, &["--format", "--sort", "--contains", "--merged", "--no-merged", "--points-at"])
        .is_empty()
        && !has_flag(rest, 'd', &["--delete"])
        && !has_flag(rest, 'm', &["--move"])
    {
        git_reads(sub)
    } else {
        git_local(sub)
    }
}

fn git_tag(sub: &str, rest: &[Word]) -> Verdict {
    if has_flag(rest, 'l', &["--list"])
        || positionals(rest, &["--sort", "--format", "--contains", "--points-at"]).is_empty()
            && !has_flag(rest, 'd', &["--delete"])
    {
        git_reads(sub)
    } else {
        git_local(sub)
    }
}

fn git_push(rest: &[Word]) -> Verdict {
    let forced = has_flag(rest, 'f', &["--force", "--mirror", "--delete", "--prune"])
        || has_flag(rest, 'd', &[])
        || rest.iter().any(|a| {
            a.text.starts_with("--force")
                || (!a.text.starts_with('-') && (a.text.starts_with('+') || a.text.starts_with(':')))
        });
    if forced {
        Verdict::new(Destructive, "git push --force overwrites or deletes remote history")
    } else {
        Verdict::new(NetworkEgress, "git push uploads to a remote")
    }
}

fn git_config(rest: &[Word]) -> Verdict {
    static RUNS_COMMANDS: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(r"(?i)^(alias\.|core\.(hookspath|sshcommand|pager|editor|fsmonitor|gitproxy|askpass)$|credential\.|filter\.|diff\..*\.(textconv|command)$|merge\..*\.driver$|sequence\.editor$|.*\.(command|cmd)$|include\.|includeif\.)").ok()
    });
    let global =
        has_any(rest, &["--global", "--system", "--file", "-f"]) || rest.iter().any(|a| a.text.starts_with("--file="));
    let reads = has_any(
        rest,
        &["--get", "--get-all", "--get-regexp", "--list", "-l", "--show-origin", "--show-scope", "--get-urlmatch"],
    ) || positionals(rest, &["--file", "-f", "--type", "--default", "--blob"]).len() < 2
        && !has_any(
            rest,
            &[
                "--unset",
                "--unset-all",
                "--add",
                "--replace-all",
                "--remove-section",
                "--rename-section",
                "-e",
                "--edit",
            ],
        );
    if reads {
        return Verdict::new(Safe, "git config only reads settings");
    }
    if global {
        return Verdict::new(Persistence, "git config --global changes settings every repository uses");
    }
    let key =
        positionals(rest, &["--file", "-f", "--type", "--default"]).first().map(|w| w.text.clone()).unwrap_or_default();
    if RUNS_COMMANDS.as_ref().is_none_or(|re| re.is_match(&key)) {
        return Verdict::new(CodeExecution, format!("git config {key} makes git run commands"));
    }
    Verdict::new(LocalWrite, "git config changes the repository settings")
}
