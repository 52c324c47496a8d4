//! The end-to-end tests' harness, a file per role: [`process`] runs the gateway binary,
//! [`http`] talks to it over HTTP and holds answers to the envelope, [`mcp`] talks to its MCP
//! server by hand, [`fixtures`] is what it runs against and the configs that say so. What
//! every end-to-end test of the workspace shares (ports, polling, kill-on-drop, installed
//! servers, the Bolt database) comes from `testkit`. Tests `use crate::harness::*`.

mod fixtures;
mod http;
mod mcp;
mod process;

pub use fixtures::*;
pub use http::*;
pub use mcp::*;
pub use process::*;
pub use testkit::{eventually, free_port, repo};
