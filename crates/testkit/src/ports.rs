//! Loopback ports for the servers a test starts.

use std::net::TcpListener;

/// A loopback port nothing listens on (now).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}
