//! What the workspace's end-to-end tests share (the server's, the load test's, the wrapper
//! generator's), so there is one of each: free loopback ports, child processes killed when the
//! test ends, the workspace's built binaries, the servers `scripts/install-*.sh` installed,
//! polling with a deadline (never a sleep as synchronisation), the shipped configurations on
//! a port of the test's choosing, a Bolt database with the fixture code graph, and the example
//! gRPC providers.

pub mod bolt;
pub mod checkout;
pub mod installed;
pub mod poll;
pub mod ports;
pub mod process;
pub mod providers;

pub use bolt::BoltDb;
pub use checkout::{BULK_RATE_LIMIT, repo, shipped_config};
pub use poll::{eventually, poll, until};
pub use ports::free_port;
pub use process::{Killed, workspace_bin};
