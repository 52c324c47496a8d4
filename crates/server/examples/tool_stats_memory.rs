//! How much memory the per-tool statistics hold with 1,000 tools, and what recording a call
//! costs: every tool gets 200 calls (more than its latency ring keeps), one in ten failing with
//! a 200-character message, and the heap is counted by a global allocator that adds up every
//! live allocation (map, names, records, messages).
//!
//! `cargo run --release -p mcp-http-gateway --example tool_stats_memory`; the numbers are in
//! docs/performance.md.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use contract::ErrorCode;
use mcp_http_gateway::service::stats::ToolStats;

/// The system allocator, counting the bytes live.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded as received.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded as received.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: forwarded as received.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const TOOLS: usize = 1_000;
const CALLS_PER_TOOL: usize = 200;

fn main() {
    let names: Vec<String> = (0..TOOLS).map(|i| format!("tool_{i:04}")).collect();
    let message = "x".repeat(200);
    let before = LIVE.load(Ordering::Relaxed);
    let stats = ToolStats::default();
    let started = Instant::now();
    for call in 0..CALLS_PER_TOOL {
        for name in &names {
            let took = Duration::from_micros(500 + (call as u64 * 37) % 5000);
            let outcome = if call % 10 == 0 {
                Err((ErrorCode::ExecutionError, message.as_str()))
            } else {
                Ok(())
            };
            stats.record(name, took, outcome);
        }
    }
    let recording = started.elapsed();
    let held = LIVE.load(Ordering::Relaxed) - before;
    let started = Instant::now();
    let snapshot = stats.snapshot();
    let snapshot_took = started.elapsed();
    assert_eq!(snapshot.len(), TOOLS);
    assert_eq!(snapshot["tool_0000"].calls, CALLS_PER_TOOL as u64);
    let records = TOOLS * CALLS_PER_TOOL;
    println!("tools: {TOOLS}, calls recorded: {records}");
    println!(
        "held by the statistics: {held} bytes ({:.2} MiB), {} bytes per tool",
        held as f64 / (1024.0 * 1024.0),
        held / TOOLS as isize
    );
    println!(
        "recording: {:.0} ns per call (one thread)",
        recording.as_nanos() as f64 / records as f64
    );
    println!(
        "snapshot of every tool (what GET /health reads): {:.2} ms",
        snapshot_took.as_secs_f64() * 1000.0
    );
}
