//! The gateway's own overhead, for docs/performance.md: the same tool calls the load test makes
//! through POST /call-tool, made directly against the MCP server over stdio with rmcp (the
//! client the gateway uses), by N concurrent callers over one connection for a while.
//!
//! `cargo run --release -p loadtest --example mcp_direct -- CONCURRENCY SECONDS TOOL ARGS_JSON -- COMMAND ARGS…`

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let split = args.iter().position(|a| a == "--").expect("-- COMMAND");
    let concurrency: usize = args[1].parse().unwrap();
    let seconds: u64 = args[2].parse().unwrap();
    let tool = args[3].clone();
    let arguments: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&args[4]).unwrap();
    let mut command = tokio::process::Command::new(&args[split + 1]);
    command.args(&args[split + 2..]);
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    let peer = Arc::new(client.peer().clone());
    let until = Instant::now() + Duration::from_secs(seconds);
    let callers: Vec<_> = (0..concurrency)
        .map(|_| {
            let peer = peer.clone();
            let tool = tool.clone();
            let arguments = arguments.clone();
            tokio::spawn(async move {
                let mut times = Vec::new();
                while Instant::now() < until {
                    let started = Instant::now();
                    let params =
                        CallToolRequestParams::new(tool.clone()).with_arguments(arguments.clone());
                    peer.call_tool_once(params).await.unwrap();
                    times.push(started.elapsed().as_micros() as u64);
                }
                times
            })
        })
        .collect();
    let mut times: Vec<u64> = Vec::new();
    for caller in callers {
        times.extend(caller.await.unwrap());
    }
    times.sort_unstable();
    let at =
        |p: f64| times[((times.len() as f64 * p) as usize).min(times.len() - 1)] as f64 / 1000.0;
    println!(
        "{} calls in {seconds} s at concurrency {concurrency}: {:.0} calls/s, p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms",
        times.len(),
        times.len() as f64 / seconds as f64,
        at(0.50),
        at(0.95),
        at(0.99)
    );
    client.cancel().await.unwrap();
}
