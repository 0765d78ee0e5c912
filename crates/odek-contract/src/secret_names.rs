//! Which environment variable names are treated as secrets. Two rules with two purposes:
//! [`is_secret_looking`] strips variables from MCP server environments and project `${VAR}`
//! expansion (spec `mcp-client.md` §5); [`is_sensitive_env_name`] decides whose values are
//! registered for redaction (spec `loop-and-sessions.md` §9).

const SECRET_LOOKING_WORDS: &[&str] = &[
    "APIKEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "CREDENTIAL",
    "CREDS",
    "PRIVATEKEY",
    "ACCESSKEY",
    "PASSWD",
    "PASSPHRASE",
    "COOKIE",
    "AUTHORIZATION",
];

/// Uppercase the name, drop every `-` and `_`; secret-looking if the result contains any of the
/// secret words. False positives (`TOKENIZERS_PARALLELISM`) are intended.
pub fn is_secret_looking(name: &str) -> bool {
    let folded: String = name.chars().filter(|&c| c != '-' && c != '_').flat_map(char::to_uppercase).collect();
    SECRET_LOOKING_WORDS.iter().any(|word| folded.contains(word))
}

const SENSITIVE_SEGMENTS: &[&str] = &[
    "KEY",
    "APIKEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASS",
    "CREDENTIAL",
    "CREDENTIALS",
    "PRIVATEKEY",
    "ACCESSKEY",
    "SECRETKEY",
];

const SENSITIVE_SUFFIXES: &[&str] = &[
    "APIKEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "CREDENTIALS",
    "PRIVATEKEY",
    "ACCESSKEY",
    "SECRETKEY",
];

/// The environment variables odek reads its provider API key from, in resolution order after
/// `ODEK_API_KEY` (spec `config.md` §4). Processes odek starts for the model (the shell tool)
/// never inherit them.
pub const PROVIDER_KEY_VARIABLES: [&str; 3] = ["ODEK_API_KEY", "DEEPSEEK_API_KEY", "OPENAI_API_KEY"];

/// An env name is sensitive if, split on `_`/`-`, a segment is one of the sensitive words, or
/// if, uppercased without separators, it ends with one of the sensitive suffixes.
pub fn is_sensitive_env_name(name: &str) -> bool {
    let upper = name.to_uppercase();
    if upper.split(['_', '-']).any(|segment| SENSITIVE_SEGMENTS.contains(&segment)) {
        return true;
    }
    let folded: String = upper.chars().filter(|&c| c != '-' && c != '_').collect();
    SENSITIVE_SUFFIXES.iter().any(|suffix| folded.ends_with(suffix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_looking_names() {
        for name in [
            "OPENAI_API_KEY",
            "api-key",
            "GITHUB_TOKEN",
            "TOKENIZERS_PARALLELISM",
            "DB_PASSWORD",
            "AWS_SECRET_ACCESS_KEY",
            "my_creds",
            "SESSION_COOKIE",
            "PRIVATE_KEY_PATH",
            "PASS_PHRASE",
            "HTTP_AUTHORIZATION",
        ] {
            assert!(is_secret_looking(name), "{name}");
        }
        for name in ["PATH", "HOME", "LOG_LEVEL", "KEYBOARD", "PASS"] {
            assert!(!is_secret_looking(name), "{name}");
        }
    }

    #[test]
    fn sensitive_env_names() {
        for name in ["MY_KEY", "DB_PASS", "GITHUB_TOKEN", "OPENAI_APIKEY", "x-secret", "AWSSECRETKEY"] {
            assert!(is_sensitive_env_name(name), "{name}");
        }
        for name in ["PATH", "KEYBOARD_LAYOUT", "PASSAGE", "HOME"] {
            assert!(!is_sensitive_env_name(name), "{name}");
        }
    }
}
