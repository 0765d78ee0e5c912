//! The server of an HTTP probe: started by the probe itself (a client over HTTP spawns
//! nothing), once per probe so no client inherits another's connections or sessions. The
//! command is the pinned one `Setup::server_argv` gives (`taskset -c <cpu> <server> --http
//! 127.0.0.1:0`); the server prints `listening <url>` once bound and exits when its stdin
//! closes. Its CPU time is read before it is stopped, so a row can show what the server spent
//! per call. Start at [`HttpServer::start`].

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context, bail};

/// How long the server may take to print where it listens (10 s).
const LISTEN_DEADLINE: Duration = Duration::from_secs(10);
/// How long the server may take to exit once its stdin is closed (5 s).
const EXIT_DEADLINE: Duration = Duration::from_secs(5);
/// The unit of the times in `/proc/<pid>/stat`: Linux reports them in `USER_HZ`, which its ABI
/// fixes at 100 per second.
const CLOCK_TICKS_PER_SEC: u64 = 100;

/// A running server and its endpoint. Dropping it kills the server.
#[derive(Debug)]
pub struct HttpServer {
    child: Child,
    /// Held open: the server exits at EOF.
    stdin: Option<ChildStdin>,
    url: String,
}

impl HttpServer {
    /// Spawns `argv` and waits for its `listening <url>` line.
    pub fn start(argv: &[String]) -> anyhow::Result<HttpServer> {
        let Some((program, args)) = argv.split_first() else { bail!("empty server command") };
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("spawning {program}"))?;
        let stdin = child.stdin.take();
        let Some(stdout) = child.stdout.take() else { bail!("server stdout unavailable") };
        let (url_tx, url_rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut stdout = BufReader::new(stdout);
            let mut line = String::new();
            let _ = url_tx.send(stdout.read_line(&mut line).map(|_| line));
            // Whatever else it prints is read and dropped, so a write never fails on a closed pipe.
            let _ = std::io::copy(&mut stdout, &mut std::io::sink());
        });
        let mut server = HttpServer { child, stdin, url: String::new() };
        let line = match url_rx.recv_timeout(LISTEN_DEADLINE) {
            Ok(line) => line.context("reading the server's stdout")?,
            Err(_) => bail!("the server printed no `listening <url>` line within {} s", LISTEN_DEADLINE.as_secs()),
        };
        let Some(url) = line.trim().strip_prefix("listening ").filter(|url| url.starts_with("http://")) else {
            bail!("the server's first line is not `listening http://…`: {:?}", line.trim());
        };
        server.url = url.to_owned();
        Ok(server)
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// User + system CPU time of the server process (all its threads) so far.
    pub fn cpu_time(&self) -> anyhow::Result<Duration> {
        let pid = self.child.id();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).context("reading the server's stat")?;
        // Fields after the parenthesised command name (which may hold spaces): utime and stime
        // are the 14th and 15th fields of the line, the 12th and 13th after `)`.
        let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let ticks: Vec<u64> = after_name.split_whitespace().skip(11).take(2).filter_map(|v| v.parse().ok()).collect();
        let [user, system] = ticks[..] else { bail!("unexpected /proc/{pid}/stat: {stat:?}") };
        Ok(Duration::from_millis((user + system) * 1000 / CLOCK_TICKS_PER_SEC))
    }

    /// Closes the server's stdin and reaps it, killing it if it lingers.
    pub fn stop(mut self) {
        self.stdin.take();
        let deadline = std::time::Instant::now() + EXIT_DEADLINE;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
