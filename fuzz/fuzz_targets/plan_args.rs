//! The `plan` tool (spec `plan.md`): a sequence of calls with model-written arguments against
//! one board. Invariants: a render fits `max_render_chars`, a rejected call leaves the state
//! unchanged, the step count never exceeds `max_steps`, versions only grow, and every plan
//! message the renderer writes without cutting parses back (to the same state).
//!
//! Input: `[max steps, max render chars, arguments, 0xFF, arguments, …]`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use odek_agent::plan::TRUNCATION_LINE;
use odek_agent::plan::{PlanBoard, PlanCaps, parse_plan_message, plan_message};
use odek_contract::runes::rune_count;
use odek_fuzz::PART_SEPARATOR;

fuzz_target!(|data: &[u8]| {
    let [max_steps, max_render, calls @ ..] = data else { return };
    let caps = PlanCaps::new(usize::from(*max_steps), usize::from(*max_render) * 40);
    let board = PlanBoard::new(caps);
    let mut last_version = 0;
    for arguments in calls.split(|byte| *byte == PART_SEPARATOR).take(16) {
        let arguments = String::from_utf8_lossy(arguments);
        let before = board.state();
        match board.handle(&arguments) {
            Ok(render) => {
                assert!(rune_count(&render) <= caps.max_render_chars, "render over the cap: {render:?}");
            }
            Err(_) => assert_eq!(board.state(), before, "a rejected call changed the state"),
        }
        let state = board.state();
        assert!(state.version() >= last_version, "the version went back");
        last_version = state.version();
        assert!(state.steps().len() <= caps.max_steps);
        // Resume (§8) drops a message whose render was cut or omitted steps; every other
        // message the renderer writes parses back, to the same state unless it is the one-line
        // all-done message, which keeps only the counts.
        if let Some(message) = plan_message(&state, caps.max_render_chars) {
            let cut = message.contains(TRUNCATION_LINE) || message.contains("done steps omitted]");
            if !cut {
                let parsed = parse_plan_message(&message, &caps);
                assert!(parsed.is_some(), "the renderer's own message does not parse: {message:?}");
                if message.contains('\n') {
                    assert_eq!(parsed, Some(state));
                }
            }
        }
    }
});
