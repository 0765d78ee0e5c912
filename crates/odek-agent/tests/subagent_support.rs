//! Stand-in children for the parent's side of delegation: a shell script in place of
//! `odek subagent`, and a `delegate_tasks` tool (with its tool context) that spawns it.

#![allow(dead_code, clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use odek_agent::budget::BudgetShare;
use odek_agent::subagent::delegate::{DelegateSettings, DelegateTool};
use odek_agent::tool::ToolContext;
use odek_danger::DangerPolicy;

/// `dir/child.sh`, executable, running `body` under `/bin/sh`. It is called as
/// `child.sh subagent --task <task file> --quiet --stream`.
///
/// The script is written by a `cp` child, never through a descriptor of this process: a test on
/// another thread forking at that moment would inherit such a descriptor, and executing a file
/// some process still has open for writing fails with `ETXTBSY` ("Text file busy").
pub fn stand_in(dir: &Path, body: &str) -> PathBuf {
    let source = dir.join("child.sh.txt");
    let path = dir.join("child.sh");
    std::fs::write(&source, format!("#!/bin/sh\n{body}\n")).unwrap();
    assert!(std::process::Command::new("cp").arg(&source).arg(&path).status().unwrap().success());
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// `delegate_tasks` at depth 0 spawning `program` (at most `max_concurrency` at once, a 120 s
/// deadline), and a tool context, both rooted in `dir`.
pub fn stand_in_delegate(
    dir: &Path,
    program: PathBuf,
    max_concurrency: usize,
    share: Option<BudgetShare>,
) -> (DelegateTool, ToolContext) {
    let tool = DelegateTool::new(
        DelegateSettings {
            program,
            cwd: dir.to_path_buf(),
            odek_home: dir.join("home"),
            max_depth: 1,
            max_concurrency,
            timeout: Duration::from_secs(120),
            profiles: vec!["default".to_owned()],
            share,
            ..DelegateSettings::default()
        },
        None,
    );
    (tool, ToolContext::new(dir.to_path_buf(), dir.join("home"), DangerPolicy::default()))
}
