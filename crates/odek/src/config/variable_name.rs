//! The variable-name rule of the config (`[A-Za-z_][A-Za-z0-9_]*`): what `${NAME}` expands
//! (`substitution`) and what a `secret_env` key may be (`mcp_servers`).

/// Whether `name` is a variable name, `[A-Za-z_][A-Za-z0-9_]*`: what `${NAME}` expands and what
/// a `secret_env` key may be.
pub(super) fn is_variable_name(name: &str) -> bool {
    !name.is_empty() && variable_name_len(name) == name.len()
}

/// Length in bytes of the longest variable name at the start of `text` (0 when there is none):
/// the one rule behind [`is_variable_name`] and `${NAME}`.
pub(super) fn variable_name_len(text: &str) -> usize {
    let bytes = text.as_bytes();
    match bytes.first() {
        Some(first) if first.is_ascii_alphabetic() || *first == b'_' => {
            bytes.iter().position(|&b| !(b.is_ascii_alphanumeric() || b == b'_')).unwrap_or(bytes.len())
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variable_names() {
        for name in ["A", "_", "a_1", "GITHUB_TOKEN"] {
            assert!(is_variable_name(name), "{name}");
        }
        for name in ["", "1A", "A-B", "A B", "É", "A}"] {
            assert!(!is_variable_name(name), "{name}");
        }
    }
}
