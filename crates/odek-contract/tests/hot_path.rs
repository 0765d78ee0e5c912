//! The plain-text path of `decode_tool_result` runs for every ordinary tool call: a single small
//! item must cost one allocation (the output string) and no JSON parsing. Counted with a global
//! allocator, so this file holds a single test (the harness runs tests on parallel threads).

#![allow(unsafe_code)] // A counting `GlobalAlloc` wrapper around `System`; test-only.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use odek_contract::artifact_ref::ArtifactRoots;
use odek_contract::tool_result::{ResultContext, decode_tool_result};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn plain_item_allocates_only_the_output() {
    let roots = ArtifactRoots::new(["/data"]);
    let ctx = ResultContext { server: "srv", tool: "echo", max_result_chars: 200_000, roots: &roots };
    for text in ["hello world", "  plain with a {\"schema\":\"odek.tool-result/v1\"} inside", "[1,2,3]", ""] {
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        let out = decode_tool_result(&[text], &ctx).unwrap();
        let allocations = ALLOCATIONS.load(Ordering::Relaxed) - before;
        assert_eq!(out.text, text);
        assert!(allocations <= 1, "{text:?}: {allocations} allocations");
    }
}
