//! Resource templates' `uriTemplate`s (RFC 6570 level 1, as MCP uses them): a template such as
//! `test://template/{id}/data` is literal text and `{name}` variables ([`UriTemplate::parse`]),
//! and a uri matches it when the literals line up and each variable takes a non-empty run of
//! characters other than `/` ([`UriTemplate::match_uri`]).
//!
//! Deliberately small: no operators (`{+x}`, `{/x}`, `{?x}` …) and no value lists; such a
//! template is refused when the server is built. Values are given as they appear in the uri
//! (not percent-decoded).

use std::collections::BTreeMap;

/// The most variables one template may have.
pub const MAX_TEMPLATE_VARIABLES: usize = 16;

/// The variables a uri gave a template, by name.
pub type TemplateVariables = BTreeMap<String, String>;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    Variable(String),
}

/// A parsed `uriTemplate`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UriTemplate {
    parts: Vec<Part>,
}

impl UriTemplate {
    /// Parses `template`, or says why it is not one this SDK matches.
    pub(crate) fn parse(template: &str) -> Result<UriTemplate, String> {
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let after = &rest[open + 1..];
            let close = after.find('}').ok_or("a \"{\" is never closed")?;
            let name = &after[..close];
            if name.is_empty() || !name.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'_') {
                return Err(format!("variable {{{name}}} is not a plain name (operators are not supported)"));
            }
            if matches!(parts.last(), Some(Part::Variable(_))) {
                return Err("two variables must be separated by literal text".to_owned());
            }
            parts.push(Part::Variable(name.to_owned()));
            rest = &after[close + 1..];
        }
        if rest.contains('}') {
            return Err("a \"}\" was never opened".to_owned());
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        let variables = parts.iter().filter(|part| matches!(part, Part::Variable(_))).count();
        if variables > MAX_TEMPLATE_VARIABLES {
            return Err(format!("more than {MAX_TEMPLATE_VARIABLES} variables"));
        }
        Ok(UriTemplate { parts })
    }

    /// The variables of `uri` when it matches: each variable takes the shortest non-empty run
    /// without `/` after which the next literal follows (the uri's end, for a last variable).
    /// Time is linear in the uri's length times the number of parts.
    pub(crate) fn match_uri(&self, uri: &str) -> Option<TemplateVariables> {
        let mut variables = TemplateVariables::new();
        let mut rest = uri;
        let mut parts = self.parts.iter().peekable();
        while let Some(part) = parts.next() {
            match part {
                Part::Literal(literal) => rest = rest.strip_prefix(literal.as_str())?,
                Part::Variable(name) => {
                    let end = match parts.peek() {
                        Some(Part::Literal(next)) => {
                            let first = rest.chars().next()?.len_utf8();
                            rest[first..].find(next.as_str())? + first
                        }
                        _ => rest.len(),
                    };
                    let value = &rest[..end];
                    if value.is_empty() || value.contains('/') {
                        return None;
                    }
                    variables.insert(name.clone(), value.to_owned());
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(variables)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variables(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
        UriTemplate::parse(template).unwrap().match_uri(uri).map(|found| found.into_iter().collect())
    }

    #[test]
    fn variables_are_taken_between_the_literals() {
        assert_eq!(
            variables("test://template/{id}/data", "test://template/123/data"),
            Some(vec![("id".into(), "123".into())])
        );
        assert_eq!(variables("test://template/{id}/data", "test://template//data"), None);
        assert_eq!(variables("test://template/{id}/data", "test://template/1/2/data"), None);
        assert_eq!(variables("test://template/{id}/data", "test://template/1/data/more"), None);
        assert_eq!(variables("a://{x}", "a://tail"), Some(vec![("x".into(), "tail".into())]));
        assert_eq!(variables("a://{x}", "a://tail/more"), None);
        assert_eq!(
            variables("a://{x}-{y}.txt", "a://1-2-3.txt"),
            Some(vec![("x".into(), "1".into()), ("y".into(), "2-3".into())])
        );
        assert_eq!(variables("a://fixed", "a://fixed"), Some(vec![]));
        assert_eq!(variables("a://é/{x}", "a://é/ü"), Some(vec![("x".into(), "ü".into())]));
        assert_eq!(variables("a://{x}.txt", "a://ü.txt"), Some(vec![("x".into(), "ü".into())]));
    }

    #[test]
    fn templates_this_sdk_cannot_match_are_refused() {
        assert!(UriTemplate::parse("a://{+path}").is_err());
        assert!(UriTemplate::parse("a://{x}{y}").is_err());
        assert!(UriTemplate::parse("a://{x").is_err());
        assert!(UriTemplate::parse("a://x}").is_err());
        assert!(UriTemplate::parse("a://{}").is_err());
        let many: String = (0..=MAX_TEMPLATE_VARIABLES).map(|n| format!("{{v{n}}}/")).collect();
        assert!(UriTemplate::parse(&many).is_err());
    }

    #[test]
    fn a_huge_uri_is_matched_in_bounded_work() {
        let template = UriTemplate::parse("a://{x}/b").unwrap();
        let uri = format!("a://{}", "x".repeat(1_000_000));
        assert_eq!(template.match_uri(&uri), None);
    }
}
