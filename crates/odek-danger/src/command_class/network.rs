//! Programs that talk to other machines: downloads (which mark a pipeline as fetching, for
//! `curl … | sh`) and the files they save, `ssh` sessions and remote commands, `nc` / `socat`
//! connected to a program (`blocked`), `openssl` clients.

use crate::class::DangerClass;
use crate::shell_syntax::Word;

use super::args::{first_positional, has_any, is_short_cluster, option_values, positionals};
use super::verdict::Verdict;
use super::walker::Classifier;
use DangerClass::{Blocked, CodeExecution, LocalWrite, NetworkEgress};

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

impl Classifier<'_> {
    /// Programs that talk to other machines (and, for `curl` and `wget`, where they save).
    pub(super) fn network_command(&self, base: &str, args: &[Word]) -> Option<Verdict> {
        let verdict = match base {
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
            _ => return None,
        };
        Some(verdict)
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
}
