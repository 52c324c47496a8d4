//! `hello-provider` (hello-rs): an example provider of the gateway's gRPC Provider contract
//! (`proto/mcpgateway/provider/v1/provider.proto`). It serves the Provider service and the
//! standard `grpc.health.v1.Health` service on one port, and prints `listening on ADDR` as
//! its first stdout line so that a script or test that asked for port 0 learns the port.

mod catalog;
mod deadline;
mod events;
mod log;
mod provider;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;

use provider_proto::health;
use provider_proto::v1::provider_server::ProviderServer;

use crate::events::Events;
use crate::log::Log;
use crate::provider::{Break, Hello};

#[derive(Parser)]
#[command(
    name = "hello-provider",
    version,
    about = "An example gRPC provider for mcp-http-gateway"
)]
struct Cli {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:50051")]
    listen: String,
    /// The provider's name, in its greetings, events and log lines.
    #[arg(long, default_value = "hello-rs")]
    name: String,
    /// Write the JSON log lines to this file (appended) instead of stderr.
    #[arg(long, value_name = "PATH")]
    log_file: Option<PathBuf>,
    /// How often to emit a `provider.metric.reported` event.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    metric_interval_ms: u64,
    /// Break the contract on purpose (for testing the conformance tester).
    #[arg(long = "break", value_enum, hide = true)]
    breaks: Vec<Break>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let log = Log::open(&cli.name, cli.log_file.as_deref())
        .with_context(|| format!("opening the log file {:?}", cli.log_file))?;
    let events = Events::new(&cli.name);
    let hello = Hello::new(&cli.name, events.clone(), log, cli.breaks);

    let listener = tokio::net::TcpListener::bind(&cli.listen)
        .await
        .with_context(|| format!("listening on {}", cli.listen))?;
    // Printed only once the port is bound, so a reader may connect as soon as it sees it.
    println!("listening on {}", listener.local_addr()?);

    // "" (the whole server) is SERVING from the start; the Provider service is added here.
    let (reporter, health_service) = health::server::health_reporter();
    reporter.set_serving::<ProviderServer<Hello>>().await;

    let interval = Duration::from_millis(cli.metric_interval_ms.max(1));
    let reporting = hello.clone();
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(interval);
        ticks.tick().await; // the first tick is immediate: report after one interval
        loop {
            ticks.tick().await;
            events.metric("invocations_total", reporting.invocations() as f64, "count");
        }
    });

    Server::builder()
        .add_service(health_service)
        .add_service(ProviderServer::new(hello))
        .serve_with_incoming_shutdown(TcpIncoming::from(listener), shutdown())
        .await
        .context("serving")
}

/// Resolves on Ctrl-C or SIGTERM, for a graceful stop.
async fn shutdown() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("installing the SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
