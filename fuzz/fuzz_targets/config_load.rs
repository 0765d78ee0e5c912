//! Config loading (spec `config.md`): `secrets.env`, the global `config.json` and the project
//! `odek.json` written from the input into a scratch home and working directory, then
//! `load_config` and `resolve_effective`. Invariants: no panic; no secret (from the environment
//! or `secrets.env`) reaches the config, a warning or an error unless the operator's global file
//! asked for it with `${…}` or a file holds it literally; a project file cannot set the
//! operator-only sections or `auto_approve`.
//!
//! Input: `[secrets.env lines, config.json…, 0xFF, odek.json…]` (an empty part: no such file).
//! `secrets.env` is assembled from [`SECRETS_ENV_LINES`] by the bits of the first byte rather
//! than fuzzed: every value it holds is registered with the process-wide redactor for the life
//! of the process, so fuzzed values would make each run slower than the last.

#![no_main]

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use odek::config::{CliOverrides, ConfigSources, ServerOrigin, load_config, resolve_effective};
use odek_fuzz::{SEEDED_SECRETS, parts, register_seeded_secrets};

struct Scratch {
    sources: ConfigSources,
    /// The operator-only sections as they load with no global file at all.
    baseline: odek::config::Config,
}

fn scratch() -> &'static Scratch {
    static SCRATCH: OnceLock<Scratch> = OnceLock::new();
    SCRATCH.get_or_init(|| {
        let base = odek_fuzz::scratch_dir("config");
        let home = base.join("home");
        let cwd = base.join("project");
        std::fs::create_dir_all(home.join(".odek")).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        let env = BTreeMap::from([
            ("HOME".to_owned(), home.to_string_lossy().into_owned()),
            ("PATH".to_owned(), "/usr/bin:/bin".to_owned()),
            ("FUZZ_API_TOKEN".to_owned(), SEEDED_SECRETS[0].to_owned()),
            ("GITHUB_TOKEN".to_owned(), SEEDED_SECRETS[1].to_owned()),
            ("ODEK_MODEL".to_owned(), "fuzz-model".to_owned()),
        ]);
        let sources = ConfigSources { home, cwd, env };
        let baseline = load_config(&sources).unwrap().config;
        Scratch { sources, baseline }
    })
}

/// The lines `secrets.env` is made of: seeded secrets under secret-looking and plain names, a
/// name the environment already has, an `ODEK_*` setting, and malformed lines.
const SECRETS_ENV_LINES: [&str; 8] = [
    "DB_PASSWORD=hunter2hunter2hunter2",
    "export OPENAI_API_KEY=sk-fuzzSeededKey0123456789abcdefghijKLMN",
    "GITHUB_TOKEN=ghp_FuzzSeeded0123456789abcdefghijklmnopqrs",
    "# a comment",
    "NOT A VALID LINE",
    "ODEK_MODEL=model-correct-horse-battery-staple-fuzz",
    "PLAIN_NAME='AKIAFUZZSEEDED000001'",
    "=no-name",
];

/// Writes `content` to `path` with mode 0600, or removes the file when `content` is empty.
fn put(path: &Path, content: &[u8]) {
    if content.is_empty() {
        let _ = std::fs::remove_file(path);
        return;
    }
    let mut file = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path).unwrap();
    file.write_all(content).unwrap();
}

fuzz_target!(|data: &[u8]| {
    register_seeded_secrets();
    let scratch = scratch();
    let sources = &scratch.sources;
    let Some((selector, files)) = data.split_first() else { return };
    let secrets_env: String = SECRETS_ENV_LINES
        .iter()
        .enumerate()
        .filter(|(bit, _)| selector & (1 << bit) != 0)
        .map(|(_, line)| format!("{line}\n"))
        .collect();
    let secrets_env = secrets_env.as_bytes();
    let [global, project] = parts::<2>(files);
    put(&sources.secrets_env_path(), secrets_env);
    put(&sources.global_config_path(), global);
    put(&sources.project_config_path(), project);

    let global_text = String::from_utf8_lossy(global);
    let project_text = String::from_utf8_lossy(project);
    let global_substitutes = global_text.contains("${");
    let secrets_text = String::from_utf8_lossy(secrets_env);
    // `ODEK_*` values the operator put in secrets.env reach the effective config on purpose.
    let check_with = |text: &str, what: &str, secrets_env_allowed: bool| {
        for secret in SEEDED_SECRETS {
            let written = global_text.contains(secret)
                || project_text.contains(secret)
                || (secrets_env_allowed && secrets_text.contains(secret));
            assert!(written || !text.contains(secret), "{what} shows the secret {secret:?}: {text}");
        }
    };
    let check = |text: &str, what: &str| check_with(text, what, false);

    let loaded = match load_config(sources) {
        Ok(loaded) => loaded,
        Err(err) => return check(&err.to_string(), "a config error"),
    };
    for warning in &loaded.warnings {
        check(warning, "a config warning");
    }
    if !global_substitutes {
        check(&format!("{:?}", loaded.config), "the loaded config");
    }
    for server in &loaded.config.mcp_servers {
        if server.origin == ServerOrigin::Project {
            assert!(!server.entry.auto_approve, "a project server set auto_approve");
        }
    }
    if global.is_empty() {
        let config = &loaded.config;
        assert_eq!(config.dangerous, scratch.baseline.dangerous, "the project set `dangerous`");
        assert_eq!(config.subagent, scratch.baseline.subagent, "the project set `subagent`");
        assert_eq!(config.profiles, scratch.baseline.profiles, "the project set `profiles`");
    }
    match resolve_effective(&loaded, &CliOverrides::default()) {
        Ok(effective) => {
            if !global_substitutes {
                check_with(&format!("{:?}", effective.config), "the effective config", true);
            }
            for warning in &effective.warnings {
                check_with(warning, "an effective-config warning", true);
            }
        }
        Err(err) => check_with(&err.to_string(), "an effective-config error", true),
    }
});
