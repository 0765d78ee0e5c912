//! Package managers (language and system) and toolchain installers: `install`, registry
//! talk, the subcommands that run package scripts, and the ones that only read.

use crate::class::DangerClass;
use crate::shell_syntax::Word;

use super::args::{by_subcommand, first_positional, has_flag};
use super::verdict::Verdict;
use DangerClass::{CodeExecution, Install, LocalWrite, NetworkEgress, Persistence, Safe, Unknown};

/// Package managers and toolchain installers, by subcommand.
#[rustfmt::skip]
pub(super) fn package_command(base: &str, args: &[Word]) -> Option<Verdict> {
    let verdict = match base {
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
            _ => return None,
    };
    Some(verdict)
}

#[rustfmt::skip]
pub(super) fn pip(args: &[Word]) -> Verdict {
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
