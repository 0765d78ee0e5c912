//! Shared pieces of the approvals tests: a scripted console, a temp home/project pair, and
//! ([`pty`]) the real binary driven through a pseudo-terminal.

#![allow(dead_code)] // Each test file uses a different subset.

pub mod pty;

use std::collections::{BTreeMap, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use odek::approvals::{Console, McpApprovals};
use odek::config::{ConfigSources, McpServerConfig, ServerOrigin};
use odek_mcp::server_config::ServerEntry;

/// A console with scripted answers that records every prompt and warning.
#[derive(Default)]
pub struct ScriptedConsole {
    interactive: bool,
    answers: Mutex<VecDeque<Option<String>>>,
    prompts: Mutex<Vec<String>>,
    warnings: Mutex<Vec<String>>,
}

impl ScriptedConsole {
    pub fn interactive(answers: &[Option<&str>]) -> Arc<Self> {
        Arc::new(ScriptedConsole {
            interactive: true,
            answers: Mutex::new(answers.iter().map(|answer| answer.map(str::to_owned)).collect()),
            ..ScriptedConsole::default()
        })
    }

    pub fn non_interactive() -> Arc<Self> {
        Arc::new(ScriptedConsole::default())
    }

    pub fn prompts(&self) -> Vec<String> {
        self.prompts.lock().unwrap().clone()
    }

    pub fn warnings(&self) -> Vec<String> {
        self.warnings.lock().unwrap().clone()
    }
}

impl Console for ScriptedConsole {
    fn is_interactive(&self) -> bool {
        self.interactive
    }

    fn prompt(&self, text: &str) -> Option<String> {
        assert!(self.interactive, "prompted without a terminal");
        self.prompts.lock().unwrap().push(text.to_owned());
        self.answers.lock().unwrap().pop_front().expect("an unexpected prompt")
    }

    fn warn(&self, text: &str) {
        self.warnings.lock().unwrap().push(text.to_owned());
    }
}

/// A temp `$HOME` (with `.odek` absent until something creates it) and a project directory.
pub struct Fixture {
    _dir: tempfile::TempDir,
    pub home: PathBuf,
    pub cwd: PathBuf,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let cwd = dir.path().join("project");
        fs::create_dir_all(&home).unwrap();
        fs::create_dir_all(&cwd).unwrap();
        Fixture { _dir: dir, home, cwd }
    }

    pub fn sources(&self) -> ConfigSources {
        ConfigSources { home: self.home.clone(), cwd: self.cwd.clone(), env: BTreeMap::new() }
    }

    pub fn approvals(&self, console: Arc<dyn Console>) -> McpApprovals {
        McpApprovals::new(&self.sources(), &BTreeMap::new(), console)
    }

    pub fn approvals_with_env(&self, name: &str, value: &str, console: Arc<dyn Console>) -> McpApprovals {
        let env = BTreeMap::from([(name.to_owned(), value.to_owned())]);
        McpApprovals::new(&self.sources(), &env, console)
    }

    pub fn server_approvals_path(&self) -> PathBuf {
        self.home.join(".odek/mcp_approvals.json")
    }

    pub fn tool_approvals_path(&self) -> PathBuf {
        self.home.join(".odek/mcp_tool_approvals.json")
    }

    pub fn write(&self, path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
}

pub fn stdio_entry(command: &str, args: &[&str]) -> ServerEntry {
    ServerEntry {
        command: Some(command.to_owned()),
        args: args.iter().map(|arg| (*arg).to_owned()).collect(),
        ..ServerEntry::default()
    }
}

pub fn project_server(name: &str, entry: ServerEntry) -> McpServerConfig {
    McpServerConfig {
        name: name.to_owned(),
        entry,
        origin: ServerOrigin::Project,
        auto_approve_effective: false,
        variables: Vec::new(),
    }
}

pub fn global_server(name: &str, entry: ServerEntry) -> McpServerConfig {
    let auto_approve_effective = entry.auto_approve;
    McpServerConfig {
        name: name.to_owned(),
        entry,
        origin: ServerOrigin::Global,
        auto_approve_effective,
        variables: Vec::new(),
    }
}

/// The keys of a persisted approval file, checking its exact layout on the way.
pub fn persisted_keys(path: &Path) -> Vec<String> {
    let text = fs::read_to_string(path).unwrap();
    let map: BTreeMap<String, bool> = serde_json::from_str(&text).unwrap();
    let mut expected = String::from("{\n");
    let lines: Vec<String> = map.keys().map(|key| format!("  \"{key}\": true")).collect();
    expected.push_str(&lines.join(",\n"));
    expected.push_str("\n}\n");
    assert_eq!(text, expected);
    for (key, approved) in &map {
        assert!(approved);
        assert_eq!(key.len(), 64);
        assert!(key.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)), "{key}");
    }
    map.into_keys().collect()
}
