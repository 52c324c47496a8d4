//! The example gRPC providers (examples/hello-provider, examples/hello-py) as real processes
//! on a free loopback port, killed when the test ends.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::installed::hello_py;
use crate::process::{Killed, workspace_bin};

/// A running provider: its process and the `host:port` it listens on.
pub struct Provider {
    pub process: Killed,
    pub address: String,
}

/// hello-rs (`hello-provider`), started with `args` after `--listen 127.0.0.1:0`.
pub fn hello_rs(args: &[&str]) -> Provider {
    start(Command::new(workspace_bin("hello-provider")), args)
}

/// hello-py, with the venv examples/hello-py/install.sh made.
pub fn hello_py_provider(args: &[&str]) -> Provider {
    let (python, script) = hello_py();
    let mut command = Command::new(python);
    command.arg(script);
    start(command, args)
}

/// Starts it on port 0 and reads the port from its first stdout line, `listening on ADDR`.
fn start(mut command: Command, args: &[&str]) -> Provider {
    let mut child = command
        .args(["--listen", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        // Its log lines would drown the test output; pass --log-file to read them.
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {command:?}: {e}"));
    let stdout = child.stdout.take().expect("piped stdout");
    let process = Killed(child);
    let (sender, receiver) = mpsc::channel();
    // A reader thread, so that a provider that never prints fails the test instead of hanging it.
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = sender.send(line);
    });
    let line = receiver
        .recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| panic!("{command:?} printed no 'listening on' line within 30 s"));
    let address = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("{command:?}: first stdout line {line:?}"))
        .to_owned();
    Provider { process, address }
}
