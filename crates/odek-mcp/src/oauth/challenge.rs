//! A protected resource's `WWW-Authenticate: Bearer …` challenge (RFC 6750 §3, RFC 9728 §5.1):
//! the `resource_metadata` URL, the `scope` it asks for and the `error`. Pure parsing, bounded.
//!
//! Start at [`Challenge::from_headers`].

use reqwest::header::{HeaderMap, WWW_AUTHENTICATE};

/// Longest `WWW-Authenticate` value looked at (bytes); the rest is ignored.
const MAX_CHALLENGE_BYTES: usize = 8 * 1024;

/// What a 401 or 403 asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    /// `resource_metadata`: where the Protected Resource Metadata is.
    pub resource_metadata: Option<String>,
    /// `scope`, split on spaces.
    pub scopes: Vec<String>,
    /// `error` (`invalid_token`, `insufficient_scope`, …).
    pub error: Option<String>,
}

impl Challenge {
    /// The Bearer challenge among the response's `WWW-Authenticate` headers, if any.
    pub fn from_headers(headers: &HeaderMap) -> Option<Challenge> {
        headers.get_all(WWW_AUTHENTICATE).iter().find_map(|value| {
            let bytes = value.as_bytes();
            let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_CHALLENGE_BYTES)]).into_owned();
            parse_bearer_challenge(&text)
        })
    }

    /// Whether this is the step-up answer (`403` with `error="insufficient_scope"`).
    pub fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// The parameters of the `Bearer` challenge in one header value (other schemes are skipped).
fn parse_bearer_challenge(value: &str) -> Option<Challenge> {
    let start = find_scheme(value, "bearer")?;
    let mut rest = &value[start + "bearer".len()..];
    let mut challenge = Challenge::default();
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        let Some(eq) = rest.find('=') else { break };
        let name = rest[..eq].trim();
        if name.is_empty() || name.contains([' ', '\t']) {
            // The next scheme of a header holding several challenges.
            break;
        }
        let after = rest[eq + 1..].trim_start();
        let (value, remaining) = match after.strip_prefix('"') {
            Some(quoted) => take_quoted(quoted),
            None => {
                let end = after.find(',').unwrap_or(after.len());
                (after[..end].trim().to_owned(), &after[end..])
            }
        };
        match name.to_ascii_lowercase().as_str() {
            "resource_metadata" => challenge.resource_metadata = Some(value),
            "scope" => challenge.scopes = value.split_whitespace().map(str::to_owned).collect(),
            "error" => challenge.error = Some(value),
            _ => {}
        }
        rest = remaining;
    }
    Some(challenge)
}

/// Where the scheme `name` starts as a word of `value` (case-insensitive).
fn find_scheme(value: &str, name: &str) -> Option<usize> {
    let lower = value.to_ascii_lowercase();
    let mut from = 0;
    while let Some(found) = lower[from..].find(name) {
        let at = from + found;
        let before_ok = at == 0 || lower.as_bytes()[at - 1] == b' ' || lower.as_bytes()[at - 1] == b',';
        let after = lower.as_bytes().get(at + name.len());
        if before_ok && after.is_none_or(|byte| *byte == b' ') {
            return Some(at);
        }
        from = at + name.len();
    }
    None
}

/// A quoted-string's value (backslash escapes undone) and what follows its closing quote.
fn take_quoted(text: &str) -> (String, &str) {
    let mut value = String::new();
    let mut chars = text.char_indices();
    while let Some((index, c)) = chars.next() {
        match c {
            '"' => return (value, &text[index + 1..]),
            '\\' => {
                if let Some((_, escaped)) = chars.next() {
                    value.push(escaped);
                }
            }
            c => value.push(c),
        }
    }
    (value, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(value: &str) -> Option<Challenge> {
        let mut headers = HeaderMap::new();
        headers.append(WWW_AUTHENTICATE, reqwest::header::HeaderValue::from_bytes(value.as_bytes()).unwrap());
        Challenge::from_headers(&headers)
    }

    #[test]
    fn bearer_parameters_are_read_quoted_or_not() {
        let challenge = parse(
            r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="files:read files:write""#,
        )
        .unwrap();
        assert_eq!(
            challenge.resource_metadata.as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource")
        );
        assert_eq!(challenge.scopes, ["files:read", "files:write"]);
        let step_up =
            parse(r#"Bearer error="insufficient_scope", scope="admin", error_description="need \"admin\"""#).unwrap();
        assert!(step_up.is_insufficient_scope());
        assert_eq!(step_up.scopes, ["admin"]);
        assert_eq!(parse("Bearer error=invalid_token").unwrap().error.as_deref(), Some("invalid_token"));
        assert_eq!(parse("bearer").unwrap(), Challenge::default());
    }

    #[test]
    fn other_schemes_are_skipped_and_odd_input_never_panics_red() {
        assert_eq!(parse(r#"Basic realm="x""#), None);
        let both = parse(r#"Basic realm="x", Bearer scope="a""#).unwrap();
        assert_eq!(both.scopes, ["a"]);
        for odd in
            ["Bearer =", "Bearer a=\"unterminated", "Bearer ,,,", "Bearer a=b=c", "Bearerx scope=a", "é Bearer x=\"é\\"]
        {
            let _ = parse(odd);
        }
        assert_eq!(parse("Bearerx scope=a"), None);
    }
}
