//! The gRPC Provider contract of `proto/mcpgateway/provider/v1/provider.proto`, compiled:
//! message types, the client the gateway and the conformance tester use, and the server trait
//! a provider written in Rust implements.

/// `mcpgateway.provider.v1`.
pub mod v1 {
    #![allow(clippy::all, clippy::pedantic)]
    tonic::include_proto!("mcpgateway.provider.v1");
}

/// The standard `grpc.health.v1` service providers serve for heartbeats.
pub use tonic_health as health;
