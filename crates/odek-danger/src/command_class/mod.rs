//! The per-program rules of the shell classifier: given a parsed command line, the class of
//! every simple command (its program, options and the paths it writes), of every redirection,
//! substitution and nested script (`bash -c`, `eval`, `xargs`, `find -exec`, `sudo …`), and the
//! pipeline rules (`curl … | sh`, fork bombs). The class of the line is the highest of its
//! parts, with that part's reason. Programs not listed are `unknown`.
//!
//! Entry points: [`classify_command`] and [`classify_command_in`].

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

use crate::class::{Classification, DangerClass};
use crate::file_write::{Places, classify_target, normalize_lexically};
use crate::shell_syntax::{self, Command, Pipeline, RedirectKind, Script, Word};

/// Longest command line classified (longer ⇒ `unknown`), in bytes.
const MAX_COMMAND_BYTES: usize = 256 * 1024;
/// Deepest nesting of `bash -c`, `eval`, wrappers and `find -exec` followed.
const MAX_NESTING: usize = 12;

use DangerClass::{
    Blocked, CodeExecution, Destructive, Install, LocalWrite, NetworkEgress, Persistence, Safe, SystemWrite, Unknown,
};

/// One part's class and reason, with the facts the pipeline rules need.
#[derive(Debug, Clone)]
struct Verdict {
    class: DangerClass,
    reason: String,
    /// Downloads from the network to its output (`curl`, `wget`, …).
    fetches: bool,
    /// An interpreter that reads the code it runs from standard input.
    reads_code_from_stdin: bool,
    /// Runs the code it is given (interpreters, `eval`, `source`).
    runs_code: bool,
}

impl Verdict {
    fn new(class: DangerClass, reason: impl Into<String>) -> Verdict {
        Verdict { class, reason: reason.into(), fetches: false, reads_code_from_stdin: false, runs_code: false }
    }

    fn nothing() -> Verdict {
        Verdict::new(Safe, "only reads")
    }

    fn fetching(mut self) -> Verdict {
        self.fetches = true;
        self
    }

    fn running_code(mut self) -> Verdict {
        self.runs_code = true;
        self
    }

    fn reading_code_from_stdin(mut self) -> Verdict {
        self.runs_code = true;
        self.reads_code_from_stdin = true;
        self
    }

    /// Keeps the higher class (and its reason); the flags accumulate.
    fn raise(&mut self, other: Verdict) {
        if other.class.severity() > self.class.severity() {
            self.class = other.class;
            self.reason = other.reason;
        }
        self.fetches |= other.fetches;
        self.reads_code_from_stdin |= other.reads_code_from_stdin;
        self.runs_code |= other.runs_code;
    }

    fn at_least(mut self, class: DangerClass, reason: impl Into<String>) -> Verdict {
        self.raise(Verdict::new(class, reason));
        self
    }
}

/// Classifies a shell command line without knowing where it runs: relative paths count as
/// inside the working directory, absolute ones outside it. Prefer [`classify_command_in`].
pub fn classify_command(command: &str) -> Classification {
    classify(command, &Places::unanchored())
}

/// Classifies a shell command line run in `cwd` (paths it writes are classified like
/// [`classify_write`](crate::classify_write)). The overall class is the highest of its parts.
pub fn classify_command_in(command: &str, cwd: &Path, odek_home: &Path) -> Classification {
    classify(command, &Places::anchored(cwd, odek_home))
}

/// Classifies a command line (see the module doc).
pub(crate) fn classify(command: &str, places: &Places) -> Classification {
    if command.len() > MAX_COMMAND_BYTES {
        return Classification::new(Unknown, "command is too long to classify");
    }
    if command.trim().is_empty() {
        return Classification::new(Safe, "nothing to run");
    }
    let verdict = Classifier::new(places).line(command);
    Classification::new(verdict.class, verdict.reason)
}

/// The simple commands of a line as token lists, for denylist matching: each command as
/// written (assignments dropped), with wrappers stripped, and with the program's base name.
pub(crate) fn command_forms(command: &str) -> Vec<Vec<String>> {
    let mut forms = Vec::new();
    if let Ok(script) = shell_syntax::parse(command) {
        collect_forms(&script, &mut forms, 0);
    }
    forms
}

fn collect_forms(script: &Script, forms: &mut Vec<Vec<String>>, depth: usize) {
    if depth > MAX_NESTING {
        return;
    }
    for stage in script.pipelines.iter().flat_map(|pipeline| &pipeline.stages) {
        for word in stage.words.iter().chain(stage.redirects.iter().map(|r| &r.target)) {
            for substitution in &word.substitutions {
                collect_forms(substitution, forms, depth + 1);
            }
        }
        if let Some(group) = &stage.group {
            collect_forms(group, forms, depth + 1);
        }
        let mut words = skip_assignments(&stage.words);
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
        collect_forms(substitution, forms, depth + 1);
    }
}

fn texts(words: &[Word]) -> Vec<String> {
    words.iter().map(|word| word.text.clone()).collect()
}

fn skip_assignments(words: &[Word]) -> &[Word] {
    let start = words.iter().take_while(|word| assignment_name(word).is_some()).count();
    &words[start..]
}

/// `NAME` of a `NAME=value` word.
fn assignment_name(word: &Word) -> Option<&str> {
    let (name, _) = word.text.split_once('=')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    ((first.is_ascii_alphabetic() || first == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then_some(name)
}

fn base_name(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

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

/// Where the wrapped command starts in `args` for a program that runs another one
/// (`sudo`, `env`, `nohup`, `timeout`, …); `None` when it is not a wrapper or wraps nothing.
fn wrapped_command(program: &str, args: &[Word]) -> Option<usize> {
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
fn inline_script(program: &str, args: &[Word]) -> Option<String> {
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

fn joined(words: &[Word]) -> String {
    words.iter().map(|word| word.text.as_str()).collect::<Vec<_>>().join(" ")
}

fn wrapped_after_options(args: &[Word], value_options: &[&str]) -> Option<usize> {
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

fn is_short_cluster(text: &str) -> bool {
    text.len() > 1
        && text.starts_with('-')
        && !text.starts_with("--")
        && text[1..].chars().all(|c| c.is_ascii_alphabetic())
}

/// `-x` given alone, inside a cluster (`-rf`), or as one of the long spellings.
fn has_flag(args: &[Word], short: char, long: &[&str]) -> bool {
    args.iter().take_while(|word| word.text != "--").any(|word| {
        long.contains(&word.text.as_str()) || (is_short_cluster(&word.text) && word.text[1..].contains(short))
    })
}

fn has_any(args: &[Word], spellings: &[&str]) -> bool {
    args.iter().any(|word| spellings.contains(&word.text.as_str()))
}

/// Non-option arguments (everything after `--`), skipping the values of `value_options`.
fn positionals<'a>(args: &'a [Word], value_options: &[&str]) -> Vec<&'a Word> {
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
fn option_values<'a>(args: &'a [Word], short: &[&str], long: &[&str]) -> Vec<&'a Word> {
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

fn is_shell(program: &str) -> bool {
    matches!(program, "sh" | "bash" | "zsh" | "dash" | "ksh" | "mksh" | "ash" | "fish" | "yash" | "tcsh" | "csh")
}

fn is_python(program: &str) -> bool {
    static PYTHON: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"^(python|pypy)[0-9.]*$").ok());
    PYTHON.as_ref().is_some_and(|re| re.is_match(program))
}

/// Programs whose every use only reads (or prints) and changes nothing.
#[rustfmt::skip]
const READ_ONLY: &[&str] = &[
    "ls", "ll", "dir", "vdir", "cat", "bat", "batcat", "head", "tail", "less", "more", "most", "grep", "egrep", "fgrep",
    "rg", "ag", "ack", "wc", "pwd", "echo", "printf", "true", "false", ":", "test", "[", "[[", "which", "whereis",
    "type", "file", "stat", "du", "df", "tree", "cut", "tr", "diff", "cmp", "comm", "basename", "dirname", "realpath",
    "readlink", "whoami", "id", "groups", "uname", "printenv", "ps", "pgrep", "pidof", "uptime", "free", "nproc", "seq",
    "sleep", "md5sum", "md5", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "shasum", "cksum", "b2sum",
    "sum", "base32", "base64", "basenc", "xxd", "od", "hexdump", "hd", "strings", "nl", "column", "paste", "join",
    "fold", "fmt", "expand", "unexpand", "rev", "tac", "jq", "gojq", "look", "locale", "lsof", "lsblk", "lscpu",
    "lsusb", "lspci", "lsb_release", "arch", "tty", "logname", "users", "who", "w", "last", "cal", "expr", "factor",
    "numfmt", "getconf", "getent", "dirs", "unset", "set", "shopt", "umask", "ulimit", "read",
    "wait", "jobs", "fg", "bg", "disown", "exit", "return", "shift", "break", "continue", "getopts", "let", "hash",
    "help", "man", "info", "apropos", "whatis", "clear", "reset", "tput", "yes", "locate", "bc", "tokei", "cloc",
    "scc", "diff3", "sdiff", "zcat", "zgrep", "zless", "zdiff", "bzcat", "xzcat", "zstdcat", "lz4cat", "iconv",
    "envsubst", "dircolors", "mypy", "pyright", "flake8", "pylint", "pycodestyle", "pydocstyle", "shellcheck",
    "hadolint", "yamllint", "vmstat", "iostat", "top", "htop", "btop", "nvidia-smi", "sw_vers",
    "system_profiler", "lsattr", "namei", "fc-list", "pstree", "uuidgen", "mdfind", "sha3sum", ];

/// Build, test and task runners: they run the project's own code.
#[rustfmt::skip]
const PROJECT_RUNNERS: &[&str] = &[
    "make", "gmake", "cmake", "ninja", "meson", "just", "task", "mvn", "mvnw", "./mvnw", "gradle", "gradlew", "ant",
    "bazel", "bazelisk", "buck", "buck2", "sbt", "lein", "mix", "rake", "tox", "nox", "pytest", "py.test", "jest",
    "vitest", "mocha", "rspec", "phpunit", "ctest", "scons", "waf", "xcodebuild", "msbuild", "webpack", "vite",
    "esbuild", "rollup", "parcel", "turbo", "nx", "lerna", "tsx", "ts-node", "eslint", "playwright", "cypress",
    "hardhat", "truffle", "forge", "anchor", "nodemon", "dotnet", "swift", "zig", "deno", "java", "kotlin", "scala",
    "groovy", "ruby", "irb", "perl", "php", "lua", "luajit", "Rscript", "R", "julia", "tclsh", "wish", "osascript",
    "pwsh", "powershell", "runghc", "runhaskell", "ghci", "elixir", "erl", "iex", "gdb", "lldb", "node", "nodejs",
    "expect", "dc", "m4", "busybox", "pre-commit", "hatch", "flit", "maturin", "manage.py",
    "uvicorn", "gunicorn", "flask", "django-admin", "jupyter", "ipython", "streamlit", "celery",
];

/// Compilers: they write their outputs but do not run what they compile.
#[rustfmt::skip]
const COMPILERS: &[&str] = &[
    "gcc", "g++", "cc", "c++", "clang", "clang++", "rustc", "javac", "tsc", "ld", "as", "ar", "nasm", "kotlinc",
    "scalac", "swiftc", "ghc", "gfortran", "protoc", "cython", "sass", "lessc", "pandoc", "convert", "magick",
    "ffmpeg", ];

/// Formatters that rewrite files by default.
#[rustfmt::skip]
const FORMATTERS: &[&str] = &["black", "isort", "autopep8", "yapf", "rustfmt", "autoflake", "dos2unix", "unix2dos"];

/// Tools whose only job is to talk to other machines.
#[rustfmt::skip]
const NETWORK_TOOLS: &[&str] = &[
    "ssh-keyscan", "ftp", "tftp", "lftp", "sftp", "telnet", "ping", "ping6", "traceroute", "traceroute6", "tracepath",
    "mtr", "dig", "nslookup", "host", "whois", "nmap", "http", "https", "xh", "aria2c", "fetch", "gh", "glab", "hub",
    "aws", "gcloud", "gsutil", "az", "doctl", "heroku", "flyctl", "fly", "vercel", "netlify", "wrangler", "firebase",
    "s3cmd", "rclone", "mosh", "ssh-copy-id", "ngrok", "cloudflared", "twine", "youtube-dl", "yt-dlp",
];

/// Programs that download data to their output (the left side of `… | sh`).
#[rustfmt::skip]
const FETCHERS: &[&str] = &["curl", "wget", "http", "https", "xh", "aria2c", "fetch", "nc", "ncat", "netcat", "socat", "ftp", "tftp"];

/// Tools that change system configuration.
#[rustfmt::skip]
const SYSTEM_TOOLS: &[&str] = &[
    "mount", "umount", "swapon", "swapoff", "losetup", "modprobe", "insmod", "rmmod", "useradd", "userdel", "usermod",
    "adduser", "deluser", "groupadd", "groupdel", "groupmod", "passwd", "chpasswd", "chsh", "chfn", "visudo",
    "iptables", "ip6tables", "nft", "ufw", "firewall-cmd", "setenforce", "update-alternatives", "ldconfig",
    "hostnamectl", "timedatectl", "localectl", "route", "nmcli", "scutil", "networksetup", "pmset", "csrutil", "spctl",
    "chattr", "setfacl", "setcap", "mknod", "tune2fs", "resize2fs", "lvcreate", "lvremove", "vgcreate", "pvcreate",
    "kextload", "dscl", "sntp", "ntpdate", "grub-install", "update-grub", "efibootmgr", "pkill", "killall",
    "renice", "service", "ifconfig", "ifup", "ifdown", "brctl", "tc",
];

/// Tools that destroy data or take the machine down.
#[rustfmt::skip]
const DESTRUCTIVE_TOOLS: &[&str] = &[
    "mkfs", "mke2fs", "mkswap", "fdisk", "sfdisk", "cfdisk", "gdisk", "sgdisk", "parted", "wipefs", "blkdiscard",
    "shred", "wipe", "srm", "badblocks", "shutdown", "reboot", "halt", "poweroff", "init", "telinit", "killall5",
];

struct Classifier<'a> {
    places: &'a Places,
    functions: Vec<String>,
    nesting: Cell<usize>,
    /// The directory relative paths are written to, after the line's own `cd`s ("" = the
    /// working directory); `None` once a `cd` went somewhere computed at run time.
    current_dir: RefCell<Option<PathBuf>>,
}

impl<'a> Classifier<'a> {
    fn new(places: &'a Places) -> Classifier<'a> {
        Classifier {
            places,
            functions: Vec::new(),
            nesting: Cell::new(0),
            current_dir: RefCell::new(Some(PathBuf::new())),
        }
    }

    /// `cd <dir>` moves where later relative paths land; `cd -`, `popd` or a computed
    /// directory loses track (later relative writes are `unknown`).
    fn change_directory(&self, program: &str, args: &[Word]) {
        let target = positionals(args, &[]).first().copied().cloned();
        let next = match (program, target) {
            ("popd", _) => None,
            (_, None) => Some(self.places.home().to_path_buf()),
            (_, Some(word)) if word.text == "-" => None,
            (_, Some(word)) => self.expand(&word).map(|text| {
                let current = self.current_dir.borrow().clone().unwrap_or_default();
                normalize_lexically(&current.join(text))
            }),
        };
        *self.current_dir.borrow_mut() = next;
    }

    /// A whole line (the top level, or the text of `bash -c` / `eval`).
    fn line(&mut self, text: &str) -> Verdict {
        match shell_syntax::parse(text) {
            Ok(script) => {
                collect_functions(&script, &mut self.functions);
                self.script(&script)
            }
            Err(error) => Verdict::new(Unknown, format!("cannot parse the command ({})", error.0)),
        }
    }

    /// A nested line (`bash -c`, `eval`): bounded depth.
    fn nested_line(&self, text: &str) -> Verdict {
        if self.nesting.get() >= MAX_NESTING {
            return Verdict::new(Unknown, "nested too deeply to classify");
        }
        self.nesting.set(self.nesting.get() + 1);
        let mut inner = Classifier {
            places: self.places,
            functions: self.functions.clone(),
            nesting: self.nesting.clone(),
            current_dir: self.current_dir.clone(),
        };
        let verdict = inner.line(text);
        self.nesting.set(self.nesting.get() - 1);
        verdict
    }

    fn script(&self, script: &Script) -> Verdict {
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
        for word in command.words.iter().chain(command.redirects.iter().map(|redirect| &redirect.target)) {
            for substitution in &word.substitutions {
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
        let downloads_code = command.words.iter().any(|word| word.substitutions.iter().any(|s| self.script(s).fetches));
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
            if CODE_LOADING_VARIABLES.contains(&name) {
                verdict.raise(Verdict::new(CodeExecution, format!("sets {name}, which changes what programs load")));
            }
            words = &words[1..];
        }
        while let Some(first) = words.first() {
            match first.text.as_str() {
                "{" | "!" | "if" | "then" | "else" | "elif" | "do" | "while" | "until" | "}" | "fi" | "done"
                | "esac" => {
                    words = &words[1..];
                }
                _ => break,
            }
        }
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

    fn program(&self, name: &str, args: &[Word]) -> Verdict {
        let base = if name.contains('/') {
            let system_bin = ["/bin/", "/usr/bin/", "/usr/local/bin/", "/sbin/", "/usr/sbin/", "/opt/homebrew/bin/"]
                .iter()
                .any(|dir| name.starts_with(dir) && !name[dir.len()..].contains('/'));
            if !system_bin {
                return Verdict::new(CodeExecution, format!("runs the program {name}")).running_code();
            }
            base_name(name)
        } else {
            name
        };
        if let Some(verdict) = self.wrapper(base, args) {
            return verdict;
        }
        if READ_ONLY.contains(&base) {
            return Verdict::new(Safe, format!("{base} only reads"));
        }
        if is_shell(base) {
            return self.shell(base, args);
        }
        if is_python(base) {
            return self.python(base, args);
        }
        if PROJECT_RUNNERS.contains(&base) {
            return interpreter_like(base, args);
        }
        if COMPILERS.contains(&base) {
            let mut verdict = Verdict::new(LocalWrite, format!("{base} compiles into files"));
            for output in option_values(args, &["-o"], &["--output"]) {
                verdict.raise(self.write_target(output, "compiles into"));
            }
            return verdict;
        }
        if FORMATTERS.contains(&base) {
            return self.each_path(Verdict::new(LocalWrite, format!("{base} rewrites files")), args, &[]);
        }
        if NETWORK_TOOLS.contains(&base) {
            let verdict = Verdict::new(NetworkEgress, format!("{base} talks to other machines"));
            return if FETCHERS.contains(&base) { verdict.fetching() } else { verdict };
        }
        if SYSTEM_TOOLS.contains(&base) {
            return Verdict::new(SystemWrite, format!("{base} changes system configuration"));
        }
        if DESTRUCTIVE_TOOLS.contains(&base) || base.starts_with("mkfs.") {
            return Verdict::new(Destructive, format!("{base} destroys data or stops the machine"));
        }
        if let Some(verdict) = package_tool(base, args) {
            return verdict;
        }
        match base {
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
            "sed" => self.sed(args),
            "awk" | "gawk" | "mawk" | "nawk" => awk(base, args),
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
            "date" => {
                if has_any(args, &["-s", "--set"]) || args.iter().any(|a| a.text.starts_with("--set=")) {
                    Verdict::new(SystemWrite, "date -s sets the system clock")
                } else {
                    Verdict::new(Safe, "date only reads")
                }
            }
            "hostname" => match positionals(args, &["-F"]).first() {
                Some(_) => Verdict::new(SystemWrite, "hostname sets the host name"),
                None => Verdict::new(Safe, "hostname only reads"),
            },
            "sysctl" => {
                if has_flag(args, 'w', &["--write"]) || args.iter().any(|a| a.text.contains('=')) {
                    Verdict::new(SystemWrite, "sysctl changes kernel settings")
                } else {
                    Verdict::new(Safe, "sysctl only reads")
                }
            }
            "ip" => match positionals(args, &[])
                .iter()
                .any(|w| matches!(w.text.as_str(), "add" | "del" | "delete" | "set" | "change" | "replace" | "flush"))
            {
                true => Verdict::new(SystemWrite, "ip changes network configuration"),
                false => Verdict::new(Safe, "ip only reads"),
            },
            "kill" => {
                let targets_everything = args.iter().skip(1).any(|a| a.text == "-1")
                    || positionals(args, &["-s", "-n"]).iter().any(|a| a.text == "-1");
                if targets_everything {
                    Verdict::new(Blocked, "kill -1 signals every process")
                } else {
                    Verdict::new(SystemWrite, "kill stops processes")
                }
            }
            "systemctl" => systemctl(args),
            "launchctl" => match first_positional(args) {
                Some("load" | "bootstrap" | "enable" | "submit") => {
                    Verdict::new(Persistence, "launchctl makes a job start automatically")
                }
                Some("list" | "print" | "print-disabled" | "getenv" | "version" | "help" | "blame") => {
                    Verdict::new(Safe, "launchctl only reads")
                }
                _ => Verdict::new(SystemWrite, "launchctl changes system services"),
            },
            "update-rc.d" | "chkconfig" | "rc-update" => {
                Verdict::new(Persistence, format!("{base} starts a service at boot"))
            }
            "crontab" => {
                if has_flag(args, 'l', &[]) {
                    Verdict::new(Safe, "crontab -l only reads")
                } else if has_flag(args, 'r', &[]) {
                    Verdict::new(Destructive, "crontab -r deletes all scheduled jobs")
                } else {
                    Verdict::new(Persistence, "crontab installs scheduled jobs")
                }
            }
            "at" | "batch" => {
                if has_flag(args, 'l', &[]) {
                    Verdict::new(Safe, "at -l only reads")
                } else {
                    Verdict::new(Persistence, format!("{base} schedules a command to run later"))
                }
            }
            "atq" => Verdict::new(Safe, "atq only reads"),
            "defaults" => match first_positional(args) {
                Some("read" | "read-type" | "domains" | "find" | "help") => Verdict::new(Safe, "defaults only reads"),
                _ => Verdict::new(SystemWrite, "defaults changes macOS preferences"),
            },
            "diskutil" => match first_positional(args) {
                Some("list" | "info" | "activity") => Verdict::new(Safe, "diskutil only reads"),
                Some(sub) if sub.to_ascii_lowercase().contains("erase") || sub.contains("partition") => {
                    Verdict::new(Destructive, "diskutil erases or repartitions a disk")
                }
                _ => Verdict::new(SystemWrite, "diskutil changes disks"),
            },
            "curl" => self.curl(args),
            "wget" => self.wget(args),
            "ssh" => ssh(args),
            "nc" | "ncat" | "netcat" => {
                if has_any(args, &["-e", "-c", "--exec", "--sh-exec", "--lua-exec"]) {
                    Verdict::new(Blocked, "nc -e connects a shell to the network")
                } else {
                    Verdict::new(NetworkEgress, format!("{base} opens network connections")).fetching()
                }
            }
            "socat" => {
                if args.iter().any(|a| {
                    let upper = a.text.to_ascii_uppercase();
                    upper.contains("EXEC:") || upper.contains("SYSTEM:")
                }) {
                    Verdict::new(Blocked, "socat connects a program to the network")
                } else {
                    Verdict::new(NetworkEgress, "socat opens network connections").fetching()
                }
            }
            "openssl" => match first_positional(args) {
                Some("s_client" | "s_server" | "ocsp") => {
                    Verdict::new(NetworkEgress, "openssl talks to other machines")
                }
                _ => Verdict::new(LocalWrite, "openssl may write keys or certificates"),
            },
            "git" => self.git(args),
            "pip" | "pip3" => pip(args),
            "npm" => npm(args),
            "npx" | "pnpx" | "bunx" | "uvx" => {
                Verdict::new(CodeExecution, format!("{base} runs a package, downloading it if needed")).running_code()
            }
            "yarn" => yarn(args),
            "pnpm" => pnpm(args),
            "bun" => bun(args),
            "cargo" => cargo(args),
            "go" => go(args),
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
                    if CODE_LOADING_VARIABLES.contains(&name) {
                        verdict.raise(Verdict::new(
                            CodeExecution,
                            format!("sets {name}, which changes what programs load"),
                        ));
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
            "su" => match inline_script("su", args) {
                Some(text) => self.nested_line(&text).at_least(SystemWrite, "su runs it as another user"),
                None => Verdict::new(SystemWrite, "su opens a shell as another user").running_code(),
            },
            "watch" => match inline_script("watch", args) {
                Some(text) => self.nested_line(&text),
                None => Verdict::new(Unknown, "watch runs a command computed at run time"),
            },
            _ => Verdict::new(Unknown, format!("{base} is not a recognised command")),
        }
    }

    /// `sudo`, `env`, `nohup`, `timeout`, `xargs`, `exec`, `chroot`, `flock`, …
    fn wrapper(&self, program: &str, args: &[Word]) -> Option<Verdict> {
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
                if CODE_LOADING_VARIABLES.contains(&name) {
                    assignments
                        .raise(Verdict::new(CodeExecution, format!("sets {name}, which changes what programs load")));
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

    fn nested_words(&self, words: &[Word], via: &str) -> Verdict {
        if self.nesting.get() >= MAX_NESTING {
            return Verdict::new(Unknown, format!("{via}: nested too deeply to classify"));
        }
        self.nesting.set(self.nesting.get() + 1);
        let verdict = self.simple(words);
        self.nesting.set(self.nesting.get() - 1);
        verdict
    }

    fn shell(&self, shell: &str, args: &[Word]) -> Verdict {
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

    fn python(&self, python: &str, args: &[Word]) -> Verdict {
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

    fn curl(&self, args: &[Word]) -> Verdict {
        let mut verdict = Verdict::new(NetworkEgress, "curl talks to other machines").fetching();
        let mut outputs = option_values(
            args,
            &["-o", "-c", "-D"],
            &[
                "--output",
                "--cookie-jar",
                "--dump-header",
                "--trace",
                "--trace-ascii",
                "--libcurl",
                "--stderr",
                "--output-dir",
            ],
        );
        for (index, word) in args.iter().enumerate() {
            if is_short_cluster(&word.text)
                && word.text.len() > 2
                && word.text.ends_with('o')
                && let Some(value) = args.get(index + 1)
            {
                outputs.push(value);
            }
        }
        for output in outputs {
            verdict.raise(self.write_target(output, "curl saves into"));
        }
        verdict
    }

    fn wget(&self, args: &[Word]) -> Verdict {
        let mut verdict = Verdict::new(NetworkEgress, "wget downloads from other machines").fetching();
        for output in option_values(
            args,
            &["-O", "-P", "-o", "-a"],
            &["--output-document", "--directory-prefix", "--output-file", "--append-output"],
        ) {
            if output.text != "-" {
                verdict.raise(self.write_target(output, "wget saves into"));
            }
        }
        verdict
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
        let reads = |what: &str| Verdict::new(Safe, format!("git {what} only reads the repository"));
        let local = |what: &str| Verdict::new(LocalWrite, format!("git {what} changes the local repository"));
        let network = |what: &str| Verdict::new(NetworkEgress, format!("git {what} talks to a remote"));
        let sub_verdict = match sub {
            "status" | "log" | "diff" | "show" | "blame" | "annotate" | "describe" | "shortlog" | "grep"
            | "rev-parse" | "rev-list" | "ls-files" | "ls-tree" | "cat-file" | "merge-base" | "name-rev"
            | "whatchanged" | "count-objects" | "for-each-ref" | "show-ref" | "show-branch" | "help" | "version"
            | "check-ignore" | "check-attr" | "diff-tree" | "diff-files" | "diff-index" | "var" | "verify-commit"
            | "verify-tag" | "fsck" | "cherry" | "range-diff" | "reflog" | "check-ref-format" => reads(sub),
            "branch" => {
                if has_flag(rest, 'D', &[]) || (has_flag(rest, 'd', &["--delete"]) && has_flag(rest, 'f', &["--force"]))
                {
                    Verdict::new(Destructive, "git branch -D deletes a branch that may not be merged")
                } else if positionals(
                    rest,
                    &["--format", "--sort", "--contains", "--merged", "--no-merged", "--points-at"],
                )
                .is_empty()
                    && !has_flag(rest, 'd', &["--delete"])
                    && !has_flag(rest, 'm', &["--move"])
                {
                    reads(sub)
                } else {
                    local(sub)
                }
            }
            "tag" => {
                if has_flag(rest, 'l', &["--list"])
                    || positionals(rest, &["--sort", "--format", "--contains", "--points-at"]).is_empty()
                        && !has_flag(rest, 'd', &["--delete"])
                {
                    reads(sub)
                } else {
                    local(sub)
                }
            }
            "stash" => match first_positional(rest) {
                Some("list" | "show") => reads("stash list"),
                Some("drop" | "clear") => Verdict::new(Destructive, "git stash drop discards stashed changes"),
                _ => local(sub),
            },
            "config" => git_config(rest),
            "reset" => {
                if has_any(rest, &["--hard", "--merge", "--keep"]) {
                    Verdict::new(Destructive, "git reset --hard discards uncommitted changes")
                } else {
                    local(sub)
                }
            }
            "clean" => {
                if has_flag(rest, 'n', &["--dry-run"]) {
                    reads("clean -n")
                } else if has_flag(rest, 'f', &["--force"]) {
                    Verdict::new(Destructive, "git clean -f deletes untracked files")
                } else {
                    local(sub)
                }
            }
            "checkout" => {
                if has_flag(rest, 'f', &["--force"]) || has_any(rest, &["--", "."]) {
                    Verdict::new(Destructive, "git checkout of paths discards uncommitted changes")
                } else {
                    local(sub)
                }
            }
            "restore" => {
                if has_flag(rest, 'S', &["--staged"]) && !has_flag(rest, 'W', &["--worktree"]) {
                    local(sub)
                } else {
                    Verdict::new(Destructive, "git restore discards uncommitted changes")
                }
            }
            "switch" => {
                if has_flag(rest, 'f', &["--force", "--discard-changes"]) {
                    Verdict::new(Destructive, "git switch --discard-changes discards uncommitted changes")
                } else {
                    local(sub)
                }
            }
            "filter-branch" | "filter-repo" => Verdict::new(Destructive, "rewrites the repository history"),
            "maintenance" => match first_positional(rest) {
                Some("start" | "register") => {
                    Verdict::new(Persistence, "git maintenance start schedules background jobs")
                }
                _ => local(sub),
            },
            "worktree" => match first_positional(rest) {
                Some("list") => reads("worktree list"),
                _ => local(sub),
            },
            "add" | "commit" | "mv" | "rm" | "merge" | "rebase" | "cherry-pick" | "revert" | "init" | "apply"
            | "am" | "notes" | "bisect" | "sparse-checkout" | "update-index" | "read-tree" | "write-tree"
            | "commit-tree" | "update-ref" | "symbolic-ref" | "gc" | "repack" | "pack-refs" | "prune"
            | "format-patch" | "bundle" | "stage" | "mergetool" | "replace" | "lfs" => local(sub),
            "clone" | "fetch" | "pull" | "ls-remote" | "send-email" | "request-pull" | "fetch-pack" | "svn" => {
                network(sub)
            }
            "submodule" => match first_positional(rest) {
                Some("status" | "summary") => reads("submodule status"),
                Some("foreach") => Verdict::new(CodeExecution, "git submodule foreach runs a command"),
                _ => network(sub),
            },
            "remote" => match first_positional(rest) {
                None | Some("get-url") => reads("remote"),
                Some("add" | "remove" | "rm" | "rename" | "set-url" | "set-head" | "set-branches") => local("remote"),
                _ => network("remote"),
            },
            "archive" => {
                if rest.iter().any(|a| a.text.starts_with("--remote")) {
                    network(sub)
                } else {
                    self.outputs(local(sub), rest, &["-o"], &["--output"])
                }
            }
            "push" => {
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
            other => Verdict::new(Unknown, format!("git {other} is not a recognised git command")),
        };
        verdict.raise(sub_verdict);
        verdict
    }

    /// Every non-option argument is a written path.
    fn each_path(&self, base: Verdict, args: &[Word], value_options: &[&str]) -> Verdict {
        let mut verdict = base;
        for path in positionals(args, value_options) {
            verdict.raise(self.write_target(path, "writes"));
        }
        verdict
    }

    /// The values of output options are written paths.
    fn outputs(&self, base: Verdict, args: &[Word], short: &[&str], long: &[&str]) -> Verdict {
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
    fn write_target(&self, target: &Word, action: &str) -> Verdict {
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
    fn target_path(&self, word: &Word) -> Option<PathBuf> {
        let expanded = PathBuf::from(self.expand(word)?);
        if expanded.is_absolute() {
            return Some(expanded);
        }
        let current = self.current_dir.borrow().clone()?;
        Some(normalize_lexically(&current.join(expanded)))
    }

    /// The word's path with `~`, `$HOME`, `$PWD` and `$TMPDIR` expanded; `None` when anything
    /// else is computed at run time.
    fn expand(&self, word: &Word) -> Option<String> {
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

/// Package managers, container and cluster tools: classified by subcommand.
#[rustfmt::skip]
fn package_tool(base: &str, args: &[Word]) -> Option<Verdict> {
    let verdict = match base {
            "gem" => by_subcommand(base, args, &[
                (&["install", "uninstall", "update", "cleanup"], Install, "installs packages"),
                (&["list", "search", "info", "env", "which", "contents", "help", "query", "specification", "outdated"], Safe, "only reads"),
                (&["push", "yank", "signin"], NetworkEgress, "talks to the package registry"),
            ], Unknown),
            "bundle" | "bundler" => by_subcommand(base, args, &[
                (&["install", "update", "add", "remove", "lock", "cache", "package"], Install, "installs packages"),
                (&["exec", "console"], CodeExecution, "runs project code"),
                (&["list", "show", "check", "info", "outdated", "config", "help", "version"], Safe, "only reads"),
            ], Unknown),
            "composer" => by_subcommand(base, args, &[
                (&["install", "require", "update", "remove", "upgrade", "reinstall"], Install, "installs packages"),
                (&["run-script", "run", "exec", "test"], CodeExecution, "runs project code"),
                (&["show", "info", "depends", "why", "outdated", "validate", "diagnose", "config", "help", "list"], Safe, "only reads"),
            ], Unknown),
            "apt" | "apt-get" | "aptitude" => by_subcommand(base, args, &[
                (&["install", "remove", "purge", "upgrade", "dist-upgrade", "full-upgrade", "update", "autoremove", "build-dep", "reinstall", "source"], Install, "installs or removes system packages"),
                (&["list", "search", "show", "policy", "depends", "rdepends", "showpkg", "changelog", "help", "moo"], Safe, "only reads"),
            ], Unknown),
            "apt-cache" | "dpkg-query" => Verdict::new(Safe, format!("{base} only reads")),
            "dpkg" => {
                if has_flag(args, 'l', &["--list", "--listfiles", "--search", "--status"]) || has_flag(args, 'L', &[]) || has_flag(args, 'S', &[]) || has_flag(args, 's', &[]) {
                    Verdict::new(Safe, "dpkg only reads")
                } else {
                    Verdict::new(Install, "dpkg installs or removes system packages")
                }
            }
            "yum" | "dnf" | "zypper" | "apk" | "port" | "snap" | "flatpak" | "brew" | "pkg" | "emerge" | "nix-env" | "xbps-install" | "opkg" => {
                if base == "brew" && first_positional(args) == Some("services") {
                    return Some(Verdict::new(Persistence, "brew services starts a service at login"));
                }
                by_subcommand(base, args, &[
                    (&["list", "info", "search", "show", "provides", "whatprovides", "repolist", "history", "deps", "uses", "leaves", "outdated", "doctor", "config", "help", "home", "desc", "cat", "log", "--version", "-v", "-q"], Safe, "only reads"),
                ], Install)
            }
            "pacman" | "yay" | "paru" => {
                let query = args.iter().any(|a| a.text.starts_with("-Q") || a.text.starts_with("-F"))
                    || args.iter().any(|a| a.text.starts_with("-S") && (a.text.contains('s') || a.text.contains('i')) && !a.text.contains('y') && !a.text.contains('u'));
                if query { Verdict::new(Safe, format!("{base} only reads")) } else { Verdict::new(Install, format!("{base} installs or removes system packages")) }
            }
            "conda" | "mamba" | "micromamba" => by_subcommand(base, args, &[
                (&["install", "create", "remove", "uninstall", "update", "upgrade", "env"], Install, "installs packages"),
                (&["run"], CodeExecution, "runs a program"),
                (&["list", "info", "search", "config", "activate", "deactivate", "--version"], Safe, "only reads"),
            ], Unknown),
            "uv" => uv(args),
            "poetry" | "pipenv" | "pdm" => by_subcommand(base, args, &[
                (&["add", "install", "remove", "uninstall", "update", "lock", "sync"], Install, "installs packages"),
                (&["run", "shell", "build"], CodeExecution, "runs project code"),
                (&["show", "check", "version", "env", "config", "search", "graph", "--version", "--venv"], Safe, "only reads"),
                (&["publish"], NetworkEgress, "uploads a package"),
                (&["new", "init"], LocalWrite, "creates project files"),
            ], Unknown),
            "pipx" => by_subcommand(base, args, &[
                (&["install", "uninstall", "upgrade", "upgrade-all", "inject", "reinstall", "reinstall-all", "uninstall-all"], Install, "installs packages"),
                (&["run"], CodeExecution, "runs a package, downloading it if needed"),
                (&["list", "environment", "--version"], Safe, "only reads"),
            ], Unknown),
            "rustup" => by_subcommand(base, args, &[
                (&["show", "which", "--version", "doc", "help", "check"], Safe, "only reads"),
                (&["run"], CodeExecution, "runs a program"),
                (&["toolchain", "component", "target"], Install, "installs toolchains"),
                (&["update", "install", "default", "self", "set", "override", "uninstall"], Install, "installs toolchains"),
            ], Unknown),
            "docker" | "podman" | "nerdctl" => containers(base, args),
            "kubectl" | "oc" => by_subcommand(base, args, &[
                (&["delete", "drain"], Destructive, "deletes cluster resources"),
                (&["apply", "create", "edit", "patch", "replace", "scale", "rollout", "set", "label", "annotate", "cordon", "uncordon", "taint", "autoscale"], SystemWrite, "changes a cluster"),
                (&["exec", "run", "debug", "attach", "port-forward", "cp", "proxy"], CodeExecution, "runs code in a cluster"),
            ], NetworkEgress),
            "helm" => by_subcommand(base, args, &[
                (&["uninstall", "delete"], Destructive, "deletes a release"),
                (&["install", "upgrade", "rollback"], SystemWrite, "changes a cluster"),
                (&["template", "lint", "version", "help", "show", "env"], Safe, "only reads"),
            ], NetworkEgress),
            "terraform" | "tofu" | "pulumi" => by_subcommand(base, args, &[
                (&["destroy"], Destructive, "destroys infrastructure"),
                (&["apply", "import", "up", "taint", "state"], SystemWrite, "changes infrastructure"),
                (&["fmt", "validate", "version", "show", "output", "graph", "providers"], Safe, "only reads"),
            ], NetworkEgress),
            _ => return None,
    };
    Some(verdict)
}

fn wrapped_after_options_named(args: &[Word], names: &[&str]) -> Option<usize> {
    let position = args.iter().position(|word| names.contains(&word.text.as_str()))?;
    (position + 1 < args.len()).then_some(position + 1)
}

fn first_positional(args: &[Word]) -> Option<&str> {
    args.iter().find(|word| !word.text.starts_with('-')).map(|word| word.text.as_str())
}

fn is_remote_spec(text: &str) -> bool {
    if text.starts_with("rsync://") || text.contains("::") {
        return true;
    }
    match text.split_once(':') {
        Some((host, _)) => !host.is_empty() && !host.contains('/') && !text.starts_with('-'),
        None => false,
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

/// Interpreters and project runners: `--version` only reads; anything else runs code.
fn interpreter_like(program: &str, args: &[Word]) -> Verdict {
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

fn ssh(args: &[Word]) -> Verdict {
    if args.iter().any(|a| {
        a.text.contains("ProxyCommand") || a.text.contains("LocalCommand") || a.text.contains("PermitLocalCommand")
    }) {
        return Verdict::new(CodeExecution, "ssh -o ProxyCommand runs a local command");
    }
    let operands = positionals(
        args,
        &[
            "-b", "-c", "-D", "-E", "-e", "-F", "-I", "-i", "-J", "-L", "-l", "-m", "-O", "-o", "-p", "-Q", "-R", "-S",
            "-W", "-w", "-B",
        ],
    );
    if operands.len() > 1 {
        Verdict::new(CodeExecution, "ssh runs a command on another machine")
    } else {
        Verdict::new(NetworkEgress, "ssh opens a session on another machine")
    }
}

fn systemctl(args: &[Word]) -> Verdict {
    match first_positional(args) {
        None
        | Some(
            "status" | "show" | "is-active" | "is-enabled" | "is-failed" | "list-units" | "list-unit-files"
            | "list-timers" | "list-sockets" | "list-dependencies" | "list-jobs" | "cat" | "help" | "get-default",
        ) => Verdict::new(Safe, "systemctl only reads"),
        Some(
            "enable" | "reenable" | "link" | "preset" | "preset-all" | "set-default" | "add-wants" | "add-requires"
            | "edit",
        ) => Verdict::new(Persistence, "systemctl enable starts a service at every boot"),
        Some("poweroff" | "reboot" | "halt" | "kexec" | "emergency" | "rescue" | "suspend" | "hibernate") => {
            Verdict::new(Destructive, "systemctl stops or restarts the machine")
        }
        Some(_) => Verdict::new(SystemWrite, "systemctl changes system services"),
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

/// Classifies by the first non-option argument: the first rule that lists it, else `default`
/// (`None` subcommand ⇒ `default` too).
fn by_subcommand(
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

#[rustfmt::skip]
fn pip(args: &[Word]) -> Verdict {
    by_subcommand("pip", args, &[
        (&["install", "uninstall", "wheel"], Install, "installs or removes packages"),
        (&["download", "search", "index"], NetworkEgress, "talks to the package index"),
        (&["list", "show", "freeze", "check", "help", "config", "hash", "debug", "inspect", "cache", "--version", "-V"], Safe, "only reads"),
    ], Unknown)
}

#[rustfmt::skip]
fn npm(args: &[Word]) -> Verdict {
    by_subcommand("npm", args, &[
        (&["install", "i", "ci", "add", "uninstall", "un", "remove", "rm", "r", "update", "up", "upgrade", "link", "ln", "dedupe", "prune", "rebuild", "rb", "install-test", "it"], Install, "installs packages"),
        (&["run", "run-script", "rum", "urn", "test", "t", "tst", "start", "stop", "restart", "exec", "x", "explore", "init", "create", "pack", "version"], CodeExecution, "runs package scripts"),
        (&["ls", "list", "ll", "la", "config", "get", "help", "root", "prefix", "bin", "why", "explain", "--version", "-v"], Safe, "only reads"),
        (&["view", "v", "info", "show", "outdated", "search", "audit", "publish", "login", "logout", "adduser", "owner", "deprecate", "unpublish", "dist-tag", "token", "access", "ping", "whoami", "fund"], NetworkEgress, "talks to the package registry"),
    ], Unknown)
}

#[rustfmt::skip]
fn yarn(args: &[Word]) -> Verdict {
    if first_positional(args).is_none() && args.is_empty() {
        return Verdict::new(Install, "yarn installs packages");
    }
    by_subcommand("yarn", args, &[
        (&["add", "install", "remove", "upgrade", "up", "import", "link", "unlink", "dedupe"], Install, "installs packages"),
        (&["list", "info", "why", "config", "help", "bin", "--version", "-v"], Safe, "only reads"),
        (&["outdated", "audit", "publish", "npm", "login"], NetworkEgress, "talks to the package registry"),
    ], CodeExecution)
}

#[rustfmt::skip]
fn pnpm(args: &[Word]) -> Verdict {
    by_subcommand("pnpm", args, &[
        (&["add", "install", "i", "remove", "rm", "uninstall", "update", "up", "upgrade", "link", "prune", "fetch", "dedupe", "import", "rebuild"], Install, "installs packages"),
        (&["list", "ls", "why", "config", "root", "bin", "help", "store", "--version", "-v"], Safe, "only reads"),
        (&["outdated", "audit", "publish"], NetworkEgress, "talks to the package registry"),
    ], CodeExecution)
}

#[rustfmt::skip]
fn bun(args: &[Word]) -> Verdict {
    by_subcommand("bun", args, &[
        (&["add", "install", "i", "remove", "rm", "update", "link", "pm"], Install, "installs packages"),
        (&["--version", "-v", "help"], Safe, "only reads"),
    ], CodeExecution)
}

#[rustfmt::skip]
fn cargo(args: &[Word]) -> Verdict {
    by_subcommand("cargo", args, &[
        (&["install", "uninstall", "add", "remove", "rm", "update", "fetch", "vendor", "generate-lockfile"], Install, "installs or updates crates"),
        (&["fmt", "new", "init", "clean"], LocalWrite, "writes project files"),
        (&["metadata", "tree", "version", "-V", "--version", "help", "locate-project", "pkgid", "verify-project", "read-manifest", "config", "--list"], Safe, "only reads"),
        (&["search", "info", "publish", "login", "logout", "owner", "yank", "report"], NetworkEgress, "talks to the registry"),
    ], CodeExecution)
}

#[rustfmt::skip]
fn go(args: &[Word]) -> Verdict {
    if first_positional(args) == Some("mod") {
        let rest = args.iter().skip_while(|a| a.text != "mod").skip(1).cloned().collect::<Vec<_>>();
        return by_subcommand("go mod", &rest, &[
            (&["download", "tidy"], Install, "downloads modules"),
            (&["init", "edit", "vendor"], LocalWrite, "writes go.mod"),
            (&["graph", "why", "verify"], Safe, "only reads"),
        ], Unknown);
    }
    by_subcommand("go", args, &[
        (&["install", "get"], Install, "installs modules"),
        (&["build", "test", "run", "generate", "vet", "tool", "bench"], CodeExecution, "runs or builds code"),
        (&["fmt", "work", "clean", "fix"], LocalWrite, "writes project files"),
        (&["version", "env", "list", "doc", "help"], Safe, "only reads"),
    ], Unknown)
}

#[rustfmt::skip]
fn uv(args: &[Word]) -> Verdict {
    match first_positional(args) {
        Some("pip") => {
            let rest: Vec<Word> = args.iter().skip_while(|a| a.text != "pip").skip(1).cloned().collect();
            pip(&rest)
        }
        Some("tool") => {
            let rest: Vec<Word> = args.iter().skip_while(|a| a.text != "tool").skip(1).cloned().collect();
            by_subcommand("uv tool", &rest, &[
                (&["install", "uninstall", "upgrade"], Install, "installs tools"),
                (&["run"], CodeExecution, "runs a tool, downloading it if needed"),
                (&["list", "dir"], Safe, "only reads"),
            ], Unknown)
        }
        Some("python") => {
            let rest: Vec<Word> = args.iter().skip_while(|a| a.text != "python").skip(1).cloned().collect();
            by_subcommand("uv python", &rest, &[
                (&["install", "uninstall", "pin"], Install, "installs Python"),
                (&["list", "find", "dir"], Safe, "only reads"),
            ], Unknown)
        }
        _ => by_subcommand("uv", args, &[
            (&["add", "remove", "sync", "lock"], Install, "installs packages"),
            (&["run"], CodeExecution, "runs project code"),
            (&["build"], CodeExecution, "runs the build backend"),
            (&["venv", "init"], LocalWrite, "writes project files"),
            (&["tree", "version", "help", "--version"], Safe, "only reads"),
            (&["publish"], NetworkEgress, "uploads a package"),
        ], Unknown),
    }
}

#[rustfmt::skip]
fn containers(program: &str, args: &[Word]) -> Verdict {
    if first_positional(args) == Some("compose") {
        let rest: Vec<Word> = args.iter().skip_while(|a| a.text != "compose").skip(1).cloned().collect();
        return compose(program, &rest);
    }
    by_subcommand(program, args, &[
        (&["ps", "images", "logs", "inspect", "version", "info", "stats", "top", "port", "diff", "history", "--version", "events"], Safe, "only reads"),
        (&["pull", "push", "login", "logout", "search"], NetworkEgress, "talks to a registry"),
        (&["run", "exec", "build", "create", "start", "restart", "attach", "buildx", "cp"], CodeExecution, "runs a container"),
        (&["rm", "rmi", "kill", "prune", "system", "volume", "network", "stop"], Destructive, "removes or stops containers or data"),
    ], Unknown)
}

#[rustfmt::skip]
fn compose(program: &str, args: &[Word]) -> Verdict {
    by_subcommand(&format!("{program} compose"), args, &[
        (&["ps", "logs", "config", "ls", "images", "top", "version", "port"], Safe, "only reads"),
        (&["pull", "push"], NetworkEgress, "talks to a registry"),
        (&["up", "run", "exec", "build", "start", "restart", "create"], CodeExecution, "runs containers"),
        (&["down", "rm", "kill", "stop"], SystemWrite, "stops or removes containers"),
    ], Unknown)
}
