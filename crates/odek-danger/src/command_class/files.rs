//! Programs that write or remove files: `rm` (and the root-like targets that make it
//! `blocked`), copies and moves, permissions, archives and compressors, `dd`, `find -delete` /
//! `-exec`, formatters that rewrite in place. Each written path is classified by the walker.

use std::path::Path;

use crate::class::DangerClass;
use crate::shell_syntax::Word;

use super::args::{
    first_positional, has_any, has_flag, is_remote_spec, option_values, positionals, wrapped_after_options_named,
};
use super::verdict::Verdict;
use super::walker::Classifier;
use DangerClass::{Blocked, CodeExecution, Destructive, LocalWrite, NetworkEgress, Safe, SystemWrite};

impl Classifier<'_> {
    /// Programs that create, change, copy, remove or archive files.
    pub(super) fn file_command(&self, base: &str, args: &[Word]) -> Option<Verdict> {
        let verdict = match base {
            "rm" => self.rm(args),
            "unlink" => self.each_path(Verdict::new(LocalWrite, "unlink removes a file"), args, &[]),
            "rmdir" | "mkdir" | "touch" | "truncate" | "tee" | "mkfifo" => self.each_path(
                Verdict::new(LocalWrite, format!("{base} creates or changes files")),
                args,
                &["-m", "--mode", "-d", "-t", "-r", "-s", "--size", "--reference", "--date"],
            ),
            "cp" | "mv" | "ln" | "install" | "rsync" | "scp" => self.copy(base, args),
            "chmod" | "chown" | "chgrp" => self.change_mode(base, args),
            "mktemp" => Verdict::new(LocalWrite, "mktemp creates a temporary file"),
            "find" => self.find(args),
            "fd" | "fdfind" => match wrapped_after_options_named(args, &["-x", "--exec", "-X", "--exec-batch"]) {
                Some(start) => self.nested_words(&args[start..], "fd --exec"),
                None => Verdict::new(Safe, "fd only lists files"),
            },
            "sort" => self.outputs(Verdict::new(Safe, "sort only reads"), args, &["-o"], &["--output"]),
            "uniq" => match positionals(args, &["-f", "-s", "-w"]).get(1) {
                Some(output) => self.write_target(output, "uniq writes"),
                None => Verdict::new(Safe, "uniq only reads"),
            },
            "split" | "csplit" | "patch" | "zip" | "gzip" | "gunzip" | "bzip2" | "bunzip2" | "xz" | "unxz" | "zstd"
            | "unzstd" | "lz4" | "7z" | "7za" | "unrar" | "uncompress" | "compress" => self.each_path(
                Verdict::new(LocalWrite, format!("{base} writes files")),
                args,
                &["-o", "-p", "-b", "-l", "-n"],
            ),
            "unzip" => self.outputs(Verdict::new(LocalWrite, "unzip extracts files"), args, &["-d"], &[]),
            "tar" => self.tar(args),
            "dd" => self.dd(args),
            "prettier" | "gofmt" | "goimports" | "clang-format" | "shfmt" => {
                if has_any(args, &["-w", "--write", "-i"]) {
                    self.each_path(Verdict::new(LocalWrite, format!("{base} rewrites files")), args, &[])
                } else {
                    Verdict::new(Safe, format!("{base} only prints"))
                }
            }
            "ruff" => {
                if first_positional(args) == Some("format") || has_any(args, &["--fix"]) {
                    Verdict::new(LocalWrite, "ruff rewrites files")
                } else {
                    Verdict::new(Safe, "ruff only checks code")
                }
            }
            _ => return None,
        };
        Some(verdict)
    }

    fn rm(&self, args: &[Word]) -> Verdict {
        let recursive = has_flag(args, 'r', &["--recursive"]) || has_flag(args, 'R', &[]);
        let force = has_flag(args, 'f', &["--force"]);
        if has_any(args, &["--no-preserve-root"]) {
            return Verdict::new(Blocked, "rm --no-preserve-root deletes the whole system");
        }
        let targets = positionals(args, &[]);
        for target in &targets {
            if recursive && self.is_root_like(target) {
                return Verdict::new(
                    Blocked,
                    format!("rm -r {} deletes the system or the home directory", target.text),
                );
            }
        }
        if targets.iter().any(|t| t.dynamic || t.text == "*" || t.text.starts_with("..")) {
            return Verdict::new(Destructive, "rm removes files chosen at run time or outside this directory");
        }
        let mut verdict = match (recursive, force) {
            (true, true) => Verdict::new(Destructive, "rm -rf removes files recursively"),
            (true, false) => Verdict::new(Destructive, "rm -r removes directories recursively"),
            (false, true) => Verdict::new(Destructive, "rm -f removes files without asking"),
            (false, false) => Verdict::new(LocalWrite, "rm removes files in the working directory"),
        };
        for target in targets {
            let place = self.write_target(target, "removes");
            if place.class.severity() > LocalWrite.severity() {
                verdict.raise(Verdict::new(
                    Destructive,
                    format!("rm removes {} outside the working directory", target.text),
                ));
            }
        }
        verdict
    }

    /// `/`, `/*`, `~`, `$HOME`, a top-level system directory, the home directory itself.
    fn is_root_like(&self, target: &Word) -> bool {
        let text = target.text.trim_end_matches("/*").trim_end_matches('/');
        if text.is_empty() || matches!(text, "~" | "$HOME" | "${HOME}" | "/*" | "~/*") {
            return true;
        }
        let Some(mut path) = self.target_path(target) else { return false };
        if path.file_name().is_some_and(|name| name == "*") {
            path.pop();
        }
        if path == Path::new("/") || path == self.places.home() {
            return true;
        }
        path.parent() == Some(Path::new("/"))
            && path.components().count() == 2
            && !matches!(path.to_str(), Some("/tmp" | "/mnt" | "/media"))
    }

    fn copy(&self, program: &str, args: &[Word]) -> Verdict {
        let remote = args.iter().any(|a| is_remote_spec(&a.text));
        let mut verdict = if program == "scp" || remote {
            Verdict::new(NetworkEgress, format!("{program} copies to or from another machine"))
        } else {
            Verdict::new(LocalWrite, format!("{program} copies or moves files"))
        };
        let value_options: &[&str] = &[
            "-t",
            "-S",
            "-m",
            "-o",
            "-g",
            "-e",
            "-P",
            "-i",
            "-F",
            "--target-directory",
            "--suffix",
            "--mode",
            "--owner",
            "--group",
            "--rsh",
        ];
        let operands = positionals(args, value_options);
        let explicit = option_values(args, &["-t"], &["--target-directory"]);
        let destination =
            explicit.first().copied().or(if operands.len() > 1 { operands.last().copied() } else { None });
        if let Some(destination) = destination.filter(|d| !is_remote_spec(&d.text)) {
            if program == "mv" && self.expand(destination).as_deref() == Some("/dev/null") {
                return Verdict::new(Destructive, "mv to /dev/null destroys the file");
            }
            verdict.raise(self.write_target(destination, &format!("{program} writes into")));
        }
        if program == "mv" {
            for source in operands.iter().take(operands.len().saturating_sub(1)) {
                let place = self.write_target(source, "mv moves away");
                if place.class.severity() > LocalWrite.severity() {
                    verdict.raise(place);
                }
            }
        }
        if program == "rsync"
            && has_any(
                args,
                &["--delete", "--delete-before", "--delete-after", "--delete-during", "--remove-source-files"],
            )
        {
            verdict.raise(Verdict::new(Destructive, "rsync --delete removes files at the destination"));
        }
        verdict
    }

    fn change_mode(&self, program: &str, args: &[Word]) -> Verdict {
        let recursive = has_flag(args, 'R', &["--recursive"]);
        let operands = positionals(args, &["--reference"]);
        let has_reference = args.iter().any(|a| a.text.starts_with("--reference"));
        let (mode, targets) = match (has_reference, operands.split_first()) {
            (false, Some((mode, targets))) => (Some(*mode), targets.to_vec()),
            _ => (None, operands.clone()),
        };
        let mut verdict = Verdict::new(LocalWrite, format!("{program} changes file permissions"));
        if program == "chmod"
            && let Some(mode) = mode
            && (mode.text.contains('s')
                || (mode.text.len() == 4 && matches!(mode.text.chars().next(), Some('2' | '4' | '6' | '7'))))
        {
            verdict.raise(Verdict::new(SystemWrite, "chmod sets the setuid or setgid bit"));
        }
        for target in targets {
            if recursive && self.is_root_like(target) {
                return Verdict::new(Blocked, format!("{program} -R {} changes the whole system", target.text));
            }
            verdict.raise(self.write_target(target, &format!("{program} changes")));
        }
        verdict
    }

    fn find(&self, args: &[Word]) -> Verdict {
        let mut verdict = Verdict::new(Safe, "find only lists files");
        let mut index = 0;
        while let Some(word) = args.get(index) {
            index += 1;
            match word.text.as_str() {
                "-delete" => verdict.raise(Verdict::new(Destructive, "find -delete removes files")),
                "-exec" | "-execdir" | "-ok" | "-okdir" => {
                    let end = args[index..]
                        .iter()
                        .position(|w| w.text == ";" || w.text == "+")
                        .map_or(args.len(), |p| index + p);
                    let command: Vec<Word> = args[index..end]
                        .iter()
                        .map(|w| if w.text.contains("{}") { Word { dynamic: true, ..w.clone() } } else { w.clone() })
                        .collect();
                    verdict.raise(self.nested_words(&command, "find -exec"));
                    index = end + 1;
                }
                "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                    if let Some(file) = args.get(index) {
                        verdict.raise(self.write_target(file, "find writes"));
                    }
                }
                _ => {}
            }
        }
        verdict
    }

    fn tar(&self, args: &[Word]) -> Verdict {
        if args.iter().any(|a| {
            a.text.contains("--to-command")
                || a.text.contains("checkpoint-action")
                || a.text.starts_with("--use-compress-program")
                || a.text == "-I"
        }) {
            return Verdict::new(CodeExecution, "tar runs a helper program");
        }
        let mode = args.first().map(|a| a.text.trim_start_matches('-')).unwrap_or("");
        let listing = mode.contains('t') && !mode.contains('c') && !mode.contains('x') || has_any(args, &["--list"]);
        if listing {
            return Verdict::new(Safe, "tar -t only lists an archive");
        }
        let mut verdict = Verdict::new(LocalWrite, "tar writes an archive or extracts files");
        for target in option_values(args, &["-C", "-f"], &["--directory", "--file"]) {
            verdict.raise(self.write_target(target, "tar writes"));
        }
        if mode.contains('f')
            && !mode.contains('-')
            && let Some(archive) = args.get(1)
        {
            verdict.raise(self.write_target(archive, "tar writes"));
        }
        verdict
    }

    fn dd(&self, args: &[Word]) -> Verdict {
        let mut verdict = Verdict::new(Safe, "dd copies to its output");
        for arg in args {
            if let Some(target) = arg.text.strip_prefix("of=") {
                let word = Word { text: target.to_owned(), ..arg.clone() };
                verdict.raise(Verdict::new(LocalWrite, "dd writes a file"));
                verdict.raise(self.write_target(&word, "dd writes"));
            }
        }
        verdict
    }
}
