//! `odek serve` as the tests and benchmarks that start it meet it: where it listens and its
//! token, read from the lines it shows on stderr once listening. Start at [`announced`].

use std::io::{BufRead, BufReader};
use std::process::Child;

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
