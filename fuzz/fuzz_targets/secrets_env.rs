//! The `secrets.env` file rules (spec `config.md` §12) on any bytes, decoded as `load_secrets_env`
//! decodes them. Invariants: every value the file sets is handed to the redactor before anything
//! else sees it; whatever is injected can be set in a process environment (`set_var` would not
//! panic); the first occurrence of a name wins and a name the environment has is never injected;
//! warnings name a line and nothing else; rewriting the injected pairs as a file parses back to
//! the same pairs.
//!
//! Input: the file's bytes. Values are collected instead of registered with the process-wide
//! redactor, so fuzzed values do not slow later runs (`config_load` covers the registration).

#![no_main]

use std::collections::{BTreeMap, BTreeSet};

use libfuzzer_sys::fuzz_target;
use odek_cli::config::parse_secrets_text;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let env = BTreeMap::from([("HOME".to_owned(), "/home/fuzz".to_owned()), ("A".to_owned(), "1".to_owned())]);
    let mut warnings = Vec::new();
    let mut values = Vec::new();
    let secrets = parse_secrets_text(&text, &env, &mut warnings, &mut |value| values.push(value.to_owned()));

    let line_count = text.split('\n').count();
    let mut last_line = 0;
    for warning in &warnings {
        let number = warning
            .strip_prefix("secrets.env line ")
            .and_then(|rest| rest.strip_suffix(": expected KEY=VALUE; skipped"))
            .and_then(|number| number.parse::<usize>().ok())
            .unwrap_or_else(|| panic!("unexpected warning {warning:?}"));
        assert!(number > last_line && number <= line_count, "{warning:?} after line {last_line} of {line_count}");
        last_line = number;
    }

    let mut names = BTreeSet::new();
    for name in &secrets.names {
        assert!(names.insert(name.as_str()), "{name:?} listed twice");
        assert!(!name.is_empty() && !name.contains(['=', '\0', '\n']), "{name:?}");
        assert_eq!(name.trim(), name);
    }
    let mut listed = secrets.names.iter().filter(|name| !env.contains_key(name.as_str()));
    for (name, value) in &secrets.injected {
        assert_eq!(listed.next(), Some(name), "injected names follow the listed order");
        assert!(!value.contains(['\0', '\n']), "{value:?}");
        assert!(values.contains(value), "{name:?}'s value was not handed to the redactor");
    }
    assert_eq!(listed.next(), None, "a listed name missing from the environment was not injected");
    assert!(values.len() >= secrets.names.len());

    let rewritten: String = secrets.injected.iter().map(|(name, value)| format!("{name}='{value}'\n")).collect();
    let mut again_warnings = Vec::new();
    let again = parse_secrets_text(&rewritten, &BTreeMap::new(), &mut again_warnings, &mut |_| {});
    assert!(again_warnings.is_empty(), "{again_warnings:?}");
    assert_eq!(again.injected, secrets.injected);
});
