//! What one program is: a path outside the system directories runs code, a wrapper defers to
//! what it wraps, the program lists decide alone, and everything else goes to its family
//! (packages, infrastructure, files, text tools, system, network, git, shell builtins, script
//! runners).
//! A program no family knows is `unknown`.

use crate::class::DangerClass;
use crate::shell_syntax::Word;

use super::args::{base_name, is_python, is_shell, option_values};
use super::infra::infra_command;
use super::interpreters::interpreter_like;
use super::packages::package_command;
use super::system::system_command;
use super::verdict::Verdict;
use super::walker::Classifier;
use DangerClass::{CodeExecution, Destructive, LocalWrite, NetworkEgress, Safe, SystemWrite, Unknown};

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

impl Classifier<'_> {
    /// One program and its arguments (the walker already took off assignments and keywords).
    pub(super) fn program(&self, name: &str, args: &[Word]) -> Verdict {
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
        self.listed(base, args)
            .or_else(|| package_command(base, args))
            .or_else(|| infra_command(base, args))
            .or_else(|| self.file_command(base, args))
            .or_else(|| self.text_command(base, args))
            .or_else(|| system_command(base, args))
            .or_else(|| self.network_command(base, args))
            .or_else(|| self.git_command(base, args))
            .or_else(|| self.builtin_command(base, args))
            .or_else(|| self.script_runner(base, args))
            .unwrap_or_else(|| Verdict::new(Unknown, format!("{base} is not a recognised command")))
    }

    /// The programs classified by list alone (read-only tools, shells, interpreters and
    /// project runners, compilers, formatters, network, system and destructive tools), in that
    /// order.
    fn listed(&self, base: &str, args: &[Word]) -> Option<Verdict> {
        if READ_ONLY.contains(&base) {
            return Some(Verdict::new(Safe, format!("{base} only reads")));
        }
        if is_shell(base) {
            return Some(self.shell(base, args));
        }
        if is_python(base) {
            return Some(self.python(base, args));
        }
        if PROJECT_RUNNERS.contains(&base) {
            return Some(interpreter_like(base, args));
        }
        if COMPILERS.contains(&base) {
            let mut verdict = Verdict::new(LocalWrite, format!("{base} compiles into files"));
            for output in option_values(args, &["-o"], &["--output"]) {
                verdict.raise(self.write_target(output, "compiles into"));
            }
            return Some(verdict);
        }
        if FORMATTERS.contains(&base) {
            return Some(self.each_path(Verdict::new(LocalWrite, format!("{base} rewrites files")), args, &[]));
        }
        if NETWORK_TOOLS.contains(&base) {
            let verdict = Verdict::new(NetworkEgress, format!("{base} talks to other machines"));
            return Some(if FETCHERS.contains(&base) { verdict.fetching() } else { verdict });
        }
        if SYSTEM_TOOLS.contains(&base) {
            return Some(Verdict::new(SystemWrite, format!("{base} changes system configuration")));
        }
        if DESTRUCTIVE_TOOLS.contains(&base) || base.starts_with("mkfs.") {
            return Some(Verdict::new(Destructive, format!("{base} destroys data or stops the machine")));
        }
        None
    }
}
