//! Programs that change the machine rather than files: services and boot-time start
//! (`persistence`), scheduled jobs, signals (`kill -1` is `blocked`), kernel and network
//! settings, the clock, disks.

use crate::class::DangerClass;
use crate::shell_syntax::Word;

use super::args::{first_positional, has_any, has_flag, positionals};
use super::verdict::Verdict;
use DangerClass::{Blocked, Destructive, Persistence, Safe, SystemWrite};

/// Programs that change the machine: clock, host name, kernel settings, network configuration,
/// processes, services, scheduled jobs, macOS preferences and disks.
pub(super) fn system_command(base: &str, args: &[Word]) -> Option<Verdict> {
    let verdict = match base {
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
        _ => return None,
    };
    Some(verdict)
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
