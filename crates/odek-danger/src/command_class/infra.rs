//! Containers, clusters and infrastructure as code (`docker`, `podman`, `kubectl`, `helm`,
//! `terraform`, …): what runs code, what changes or destroys remote state, what only reads.

use crate::class::DangerClass;
use crate::shell_syntax::Word;

use super::args::{by_subcommand, first_positional};
use super::verdict::Verdict;
use DangerClass::{CodeExecution, Destructive, NetworkEgress, Safe, SystemWrite, Unknown};

/// Container, cluster and infrastructure tools, by subcommand.
#[rustfmt::skip]
pub(super) fn infra_command(base: &str, args: &[Word]) -> Option<Verdict> {
    let verdict = match base {
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
