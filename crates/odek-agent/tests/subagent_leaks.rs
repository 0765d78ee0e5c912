//! `delegate_tasks` called over and over, in process, against a stand-in child that answers at
//! once: after a warm-up, descriptors, child processes and resident memory stay where they
//! were. (Alone in its test binary, so no other test's children or descriptors count.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod subagent_support;

use odek_agent::tool::Tool;
use subagent_support::{stand_in, stand_in_delegate};

fn open_fds() -> Vec<String> {
    let mut fds: Vec<String> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .map(|entry| format!("{:?}", std::fs::read_link(entry.path()).unwrap_or_default()))
        .collect();
    fds.sort();
    fds
}

/// Resident memory of this process, KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|line| line.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Processes whose parent is this one, zombies included.
fn children() -> Vec<u32> {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| stat.rsplit_once(") ").map(|(_, rest)| rest.split_whitespace().nth(1) == Some(&me)))
                .unwrap_or(false)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_delegations_leak_no_descriptor_process_or_memory() {
    const TASKS: usize = 4;
    const WARM_UP: usize = 50;
    const CALLS: usize = 400;
    /// Allowed growth of resident memory from the warm-up to the end: 2 MiB (in KiB), less than
    /// 1.3 KiB for each of the 1,600 children.
    const RSS_SLACK_KIB: u64 = 2 * 1024;

    let dir = tempfile::tempdir().unwrap();
    let program = stand_in(
        dir.path(),
        r#"echo '{"type":"result","result":{"status":"success","summary":"done","iterations":1,"tokens_used":7}}'"#,
    );
    let (tool, ctx) = stand_in_delegate(dir.path(), program, TASKS, None);
    let tasks: Vec<serde_json::Value> =
        (0..TASKS).map(|i| serde_json::json!({"goal": format!("task {i}"), "trust_level": "trusted"})).collect();
    let arguments = serde_json::json!({"tasks": tasks}).to_string();
    let call = || async {
        let outcome = tool.call(&arguments, &ctx).await.unwrap();
        assert_eq!(outcome.output.matches("status: success").count(), TASKS, "{}", outcome.output);
    };

    for _ in 0..WARM_UP {
        call().await;
    }
    let fds_before = open_fds();
    let rss_before = rss_kib();
    for _ in 0..CALLS {
        call().await;
    }
    let rss_after = rss_kib();
    assert_eq!(open_fds(), fds_before, "descriptors leaked");
    assert_eq!(children(), Vec::<u32>::new(), "children left behind (or not reaped)");
    assert!(
        rss_after <= rss_before + RSS_SLACK_KIB,
        "resident memory grew from {rss_before} KiB to {rss_after} KiB over {} children",
        CALLS * TASKS
    );
    eprintln!("RSS {rss_before} KiB → {rss_after} KiB over {} children", CALLS * TASKS);
}
