//! `args_summary.argv0` (spec `events.md` §6): the program name an event shows for a shell
//! command, by the spec's whitespace rule rather than the classifier's parser.

/// `args_summary.argv0` (events.md §6): split on whitespace, skip leading `NAME=value`
/// tokens, take the next token, delete every `'` and `"`, keep what follows the last `/`.
pub fn argv0(command: &str) -> String {
    let program = command.split_whitespace().find(|token| !is_env_assignment_token(token)).unwrap_or("");
    let unquoted: String = program.chars().filter(|c| *c != '\'' && *c != '"').collect();
    match unquoted.rsplit_once('/') {
        Some((_, last)) => last.to_owned(),
        None => unquoted,
    }
}

/// `NAME=value` with a non-empty NAME of ASCII letters, digits and `_`.
fn is_env_assignment_token(token: &str) -> bool {
    match token.split_once('=') {
        Some((name, _)) => !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv0_follows_events_rule() {
        assert_eq!(argv0("FOO=1 /usr/bin/git status"), "git");
        assert_eq!(argv0("  'ls' -la"), "ls");
        assert_eq!(argv0("=x ls"), "=x");
        assert_eq!(argv0("A=1 B_2=2"), "");
        assert_eq!(argv0("\"./run.sh\" x"), "run.sh");
    }
}
