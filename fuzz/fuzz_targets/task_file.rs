//! Task files (spec `subagents.md` §3–§4, `budgets.md` §9): `read_task_file` against the same
//! bytes parsed in memory, the serde round trip of an accepted file, and the share-mode
//! clamping of its budget block.
//!
//! Input: the task file's bytes.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use odek_agent::budget::{BudgetLimits, clamp_to_share, share_spawn_gate};
use odek_agent::subagent::task::{TaskFile, read_task_file};

fn task_path() -> &'static std::path::Path {
    static PATH: OnceLock<std::path::PathBuf> = OnceLock::new();
    PATH.get_or_init(|| odek_fuzz::scratch_dir("task").join("task.json"))
}

fuzz_target!(|data: &[u8]| {
    std::fs::write(task_path(), data).unwrap();
    let from_file = read_task_file(task_path());
    let in_memory = serde_json::from_slice::<TaskFile>(data);
    match (&from_file, &in_memory) {
        (Ok(file), Ok(memory)) => assert_eq!(file, memory),
        (Err(file), Err(memory)) => assert_eq!(file.to_string(), format!("parse task file: {memory}")),
        _ => panic!("read_task_file and serde disagree: {from_file:?} vs {in_memory:?}"),
    }
    let Ok(task) = from_file else { return };

    let json = serde_json::to_vec(&task).unwrap();
    // Exact, floats included (the cost, a replay script's arguments): serde_json parses with
    // `float_roundtrip`.
    let back: TaskFile = serde_json::from_slice(&json).unwrap();
    assert_eq!(back, task, "the task file does not survive a round trip");
    assert_eq!(task.wants_protocol_2(), !task.task_id.is_empty() && task.protocol >= 2);

    let Some(share) = task.budget else { return };
    let operator = BudgetLimits {
        max_runtime_seconds: 600,
        max_tool_calls: 0,
        max_input_tokens: 1_000_000,
        max_output_tokens: 7,
        max_cost_usd: 2.5,
        input_price_per_million: 1.0,
        output_price_per_million: 2.0,
        ..BudgetLimits::default()
    };
    let child = clamp_to_share(operator, &share);
    assert_eq!(child.max_output_tokens, operator.max_output_tokens, "output tokens are never shared");
    for (limit, operator, shared, exhausted) in [
        (child.max_runtime_seconds, operator.max_runtime_seconds, share.max_runtime_seconds, share.runtime_exhausted),
        (child.max_tool_calls, operator.max_tool_calls, share.max_tool_calls, share.tool_calls_exhausted),
        (child.max_input_tokens, operator.max_input_tokens, share.max_input_tokens, share.input_tokens_exhausted),
    ] {
        if exhausted {
            assert_eq!(limit, 0);
        } else if shared > 0 {
            assert!(limit > 0 && limit <= shared, "a child may not exceed the parent's remaining budget");
        } else {
            assert_eq!(limit, operator);
        }
    }
    if !share.cost_exhausted && share.max_cost_usd > 0.0 {
        assert!(child.max_cost_usd > 0.0 && child.max_cost_usd <= share.max_cost_usd);
    }
    let any_exhausted =
        share.runtime_exhausted || share.tool_calls_exhausted || share.cost_exhausted || share.input_tokens_exhausted;
    assert_eq!(share_spawn_gate(&share).is_some(), any_exhausted);
});
