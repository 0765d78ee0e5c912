//! The `secrets.env` file rules (spec `config.md` §12) on any bytes, decoded as `load_secrets_env`
//! decodes them. Invariants: every value the file sets (duplicates and names the environment has
//! included) is handed to the redactor, in file order; the first occurrence of a name wins and a
//! name the environment has is listed but never injected (checked against the file's lines
//! parsed one at a time); whatever is injected can be set in a process environment (`set_var`
//! would not panic); warnings name a line and nothing else; rewriting the injected pairs as a file
//! parses back to the same pairs.
//!
//! Input: the file's bytes. Values are collected instead of registered with the process-wide
//! redactor, so fuzzed values do not slow later runs (`config_load` covers the registration).

#![no_main]

use std::collections::{BTreeMap, BTreeSet};

use libfuzzer_sys::fuzz_target;
use odek::config::parse_secrets_text;

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

    // The file-level rules, rebuilt from the file's lines one at a time: every pair's value is
    // handed over in file order (duplicates and names the environment has included), the first
    // occurrence of a name wins, and a name the environment has is listed but not injected.
    let mut line_values = Vec::new();
    let mut line_warnings = 0;
    let mut first: Vec<(String, String)> = Vec::new();
    let mut seen = BTreeSet::new();
    for line in text.split('\n') {
        let mut warned = Vec::new();
        let pair =
            parse_secrets_text(line, &BTreeMap::new(), &mut warned, &mut |value| line_values.push(value.to_owned()));
        line_warnings += warned.len();
        for (name, value) in pair.injected {
            if seen.insert(name.clone()) {
                first.push((name, value));
            }
        }
    }
    assert_eq!(values, line_values, "not every value was handed to the redactor, in file order");
    assert_eq!(warnings.len(), line_warnings);
    let names: Vec<&String> = first.iter().map(|(name, _)| name).collect();
    assert_eq!(secrets.names.iter().collect::<Vec<_>>(), names, "names: first occurrence, file order");
    let injected: Vec<&(String, String)> = first.iter().filter(|(name, _)| !env.contains_key(name)).collect();
    assert_eq!(
        secrets.injected.iter().collect::<Vec<_>>(),
        injected,
        "injected: first values, minus the environment's"
    );

    let mut unique = BTreeSet::new();
    for name in &secrets.names {
        assert!(unique.insert(name.as_str()), "{name:?} listed twice");
        assert!(!name.is_empty() && !name.contains(['=', '\0', '\n']), "{name:?}");
        assert_eq!(name.trim(), name);
    }
    for (_, value) in &secrets.injected {
        assert!(!value.contains(['\0', '\n']), "{value:?}");
    }

    let rewritten: String = secrets.injected.iter().map(|(name, value)| format!("{name}='{value}'\n")).collect();
    let mut again_warnings = Vec::new();
    let again = parse_secrets_text(&rewritten, &BTreeMap::new(), &mut again_warnings, &mut |_| {});
    assert!(again_warnings.is_empty(), "{again_warnings:?}");
    assert_eq!(again.injected, secrets.injected);
});
