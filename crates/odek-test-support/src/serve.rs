//! `odek serve` as the tests and benchmarks that start it meet it: where it listens and its
//! token, read from the lines it shows on stderr once listening ([`announced`]); and the server
//! of a temporary home and project answering from a replay script ([`Replayed`]).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long a stopped server may take to exit before it is killed.
const STOP_DEADLINE: Duration = Duration::from_secs(60);

/// `odek serve --provider replay` in a temporary home (its `~/.odek/config.json`, 0600) and
/// project (its working directory), the replay script beside them. Stopped when dropped.
#[derive(Debug)]
pub struct Replayed {
    pub child: Child,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    pub token: String,
    /// The project directory.
    pub cwd: PathBuf,
    stopped: bool,
    _dir: tempfile::TempDir,
}

impl Replayed {
    /// Starts `binary` (the `odek` under test) serving `script` (a whole `odek.replay/v1`
    /// document) with `config` as the global config and `extra` flags.
    ///
    /// # Panics
    /// When the directories cannot be made or the server does not start.
    #[allow(clippy::unwrap_used)]
    pub fn start(binary: &Path, script: &Value, config: &Value, extra: &[&str]) -> Replayed {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (home, cwd) = (root.join("home"), root.join("project"));
        std::fs::create_dir_all(home.join(".odek")).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        let config_file = home.join(".odek/config.json");
        std::fs::write(&config_file, config.to_string()).unwrap();
        std::fs::set_permissions(&config_file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        let replay = root.join("replay.json");
        std::fs::write(&replay, script.to_string()).unwrap();
        let mut child = Command::new(binary)
            .args(["serve", "--addr", "127.0.0.1:0", "--provider", "replay", "--replay"])
            .arg(&replay)
            .args(extra)
            .current_dir(&cwd)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &home)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (base, token) = announced(&mut child);
        Replayed { child, base, token, cwd, stopped: false, _dir: dir }
    }

    /// SIGTERM, then a wait of at most a minute (killed past it); once.
    pub fn stop(&mut self) {
        if std::mem::replace(&mut self.stopped, true) {
            return;
        }
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM);
        }
        let started = Instant::now();
        while !matches!(self.child.try_wait(), Ok(Some(_))) {
            if started.elapsed() > STOP_DEADLINE {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Replayed {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The base address (`http://127.0.0.1:<port>`, no trailing slash) and the token a started
/// `odek serve` (`child`, its stderr piped) announced; the rest of its stderr is drained on a
/// thread of its own, so it never blocks on a full pipe.
///
/// # Panics
/// When the process ends before it announced both, or its stderr was not piped.
#[allow(clippy::expect_used)]
pub fn announced(child: &mut Child) -> (String, String) {
    let mut stderr = BufReader::new(child.stderr.take().expect("odek serve's stderr is piped"));
    let (mut base, mut token) = (String::new(), String::new());
    while base.is_empty() || token.is_empty() {
        let mut line = String::new();
        let read = stderr.read_line(&mut line).expect("odek serve's stderr reads");
        assert!(read > 0, "odek serve ended before it listened");
        if let Some(url) = line.trim().strip_prefix("odek serve: listening on ") {
            base = url.trim_end_matches('/').to_owned();
        } else if let Some((_, shown)) = line.trim().split_once("?token=") {
            token = shown.split_whitespace().next().unwrap_or_default().to_owned();
        }
    }
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    (base, token)
}
