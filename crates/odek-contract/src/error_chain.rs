//! One line for an error and its causes, as odek shows a transport failure (a model provider's,
//! an HTTP MCP server's). Owns which layers of an HTTP library's errors are left out.
//! Start at [`one_line`].

/// The error's causes, `: `-joined, without what says nothing the rest does not: the outermost
/// text when a cause follows it (reqwest's `error sending request for url (…)` names only the
/// stage, and the URL, which may carry a credential), hyper's stage layers (`client error
/// (Connect)`), and a text a layer before already contains. With no cause, the error's own text.
pub fn one_line(error: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !text.starts_with("client error (") && !parts.iter().any(|part| part.contains(&text)) {
            parts.push(text);
        }
        source = cause.source();
    }
    if parts.is_empty() {
        return error.to_string();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error of one layer over another, as reqwest and hyper nest theirs.
    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);

    impl std::fmt::Display for Layer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Layer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|layer| layer as &(dyn std::error::Error + 'static))
        }
    }

    fn layers(texts: &[&'static str]) -> Layer {
        let mut chain = None;
        for text in texts.iter().rev() {
            chain = Some(Layer(text, chain.map(Box::new)));
        }
        chain.unwrap()
    }

    #[test]
    fn the_layers_that_only_name_a_stage_are_left_out() {
        let dns = layers(&[
            "error sending request for url (https://example.test/mcp?key=k)",
            "client error (Connect)",
            "dns error",
            "failed to lookup address information: Name or service not known",
        ]);
        assert_eq!(one_line(&dns), "dns error: failed to lookup address information: Name or service not known");
        let refused = layers(&[
            "error sending request",
            "client error (Connect)",
            "tcp connect error",
            "Connection refused (os error 111)",
        ]);
        assert_eq!(one_line(&refused), "tcp connect error: Connection refused (os error 111)");
    }

    #[test]
    fn repeated_texts_appear_once_and_a_lone_error_is_its_own_text() {
        let repeated =
            layers(&["error decoding response body", "expected value at line 1: eof", "expected value at line 1"]);
        assert_eq!(one_line(&repeated), "expected value at line 1: eof");
        assert_eq!(one_line(&layers(&["builder error"])), "builder error");
    }
}
