//! Shared pieces of the config tests: a temp home (with `.odek/`) and project directory, an
//! environment, writers for the global config, the project config and `secrets.env`, and
//! `load_config` over them.

#![allow(dead_code)] // Each test file uses a different subset.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use odek::config::{ConfigError, ConfigSources, LoadedConfig, McpServerConfig, load_config};

pub struct Fixture {
    _dir: tempfile::TempDir,
    pub home: PathBuf,
    pub cwd: PathBuf,
    pub env: BTreeMap<String, String>,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let cwd = dir.path().join("project");
        fs::create_dir_all(home.join(".odek")).unwrap();
        fs::create_dir_all(&cwd).unwrap();
        Fixture { _dir: dir, home, cwd, env: BTreeMap::new() }
    }

    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.insert(name.to_owned(), value.to_owned());
        self
    }

    pub fn global_path(&self) -> PathBuf {
        self.home.join(".odek/config.json")
    }

    /// Writes the global config, mode 0600.
    pub fn global(self, text: &str) -> Self {
        fs::write(self.global_path(), text).unwrap();
        fs::set_permissions(self.global_path(), fs::Permissions::from_mode(0o600)).unwrap();
        self
    }

    /// Writes the project config (`odek.json` in the project directory).
    pub fn project(self, text: &str) -> Self {
        fs::write(self.cwd.join("odek.json"), text).unwrap();
        self
    }

    /// Writes `~/.odek/secrets.env` with the given mode.
    pub fn secrets(self, text: &str, mode: u32) -> Self {
        let path = self.home.join(".odek/secrets.env");
        fs::write(&path, text).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
        self
    }

    pub fn load(&self) -> Result<LoadedConfig, ConfigError> {
        load_config(&ConfigSources { home: self.home.clone(), cwd: self.cwd.clone(), env: self.env.clone() })
    }

    pub fn error(&self) -> String {
        self.load().unwrap_err().to_string()
    }

    pub fn servers(&self) -> Vec<McpServerConfig> {
        self.load().unwrap().config.mcp_servers
    }

    pub fn global_display(&self) -> String {
        self.global_path().display().to_string()
    }
}
