//! A tiny real HTTP upstream with faults on demand, so that every verdict can be seen to fail:
//! it answers each request `{"ok":true}` after a delay; `serial` answers one request at a time
//! (an upstream — or a gateway — that has lost its concurrency); `drop_nth` closes the n-th
//! request's connection without answering (a lost call). The faults live here, in front of
//! the gateway, never as a sleep inside it. `GET /health` (the gateway's dependency check) is
//! answered at once and is not counted. Used by the tests and by `examples/slow_upstream`
//! (the overload scenario of scripts/loadtest-ci.sh and scripts/perf.sh).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the upstream does to each request.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// Time before each answer.
    pub delay: Duration,
    /// One request at a time, the others wait their turn.
    pub serial: bool,
    /// The n-th request (from 1) gets its connection closed instead of an answer.
    pub drop_nth: Option<u64>,
}

/// A running upstream on a loopback port; stops when dropped.
pub struct Upstream {
    pub port: u16,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Upstream {
    /// Starts the upstream on its own thread and runtime (usable from sync tests).
    pub fn spawn(port: u16, faults: Faults) -> std::io::Result<Upstream> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", port))?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a tokio runtime");
            runtime.block_on(async move {
                let listener = TcpListener::from_std(listener).expect("a tokio listener");
                tokio::select! {
                    _ = serve(listener, faults) => {}
                    _ = stopped => {}
                }
            });
        });
        Ok(Upstream {
            port,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Serves until the process ends (the example binary).
    pub fn join(mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct Shared {
    faults: Faults,
    seen: AtomicU64,
    one_at_a_time: tokio::sync::Mutex<()>,
}

async fn serve(listener: TcpListener, faults: Faults) {
    let shared = Arc::new(Shared {
        faults,
        seen: AtomicU64::new(0),
        one_at_a_time: tokio::sync::Mutex::new(()),
    });
    while let Ok((stream, _)) = listener.accept().await {
        let _ = stream.set_nodelay(true);
        tokio::spawn(connection(stream, shared.clone()));
    }
}

/// HTTP/1.1 with keep-alive, just enough for reqwest: a request head, a Content-Length body.
async fn connection(mut stream: TcpStream, shared: Arc<Shared>) {
    let mut buffer = Vec::with_capacity(4096);
    loop {
        let Some(head_end) = read_head(&mut stream, &mut buffer).await else {
            return;
        };
        let body_len = content_length(&buffer[..head_end]);
        while buffer.len() < head_end + body_len {
            let mut chunk = [0u8; 4096];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        }
        let health = buffer.starts_with(b"GET /health ");
        buffer.drain(..head_end + body_len);
        if !health {
            let n = shared.seen.fetch_add(1, Ordering::SeqCst) + 1;
            if shared.faults.drop_nth == Some(n) {
                return; // closes the connection with the request unanswered
            }
            let _turn = if shared.faults.serial {
                Some(shared.one_at_a_time.lock().await)
            } else {
                None
            };
            if !shared.faults.delay.is_zero() {
                tokio::time::sleep(shared.faults.delay).await;
            }
        }
        let body = br#"{"ok":true}"#;
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        if stream.write_all(head.as_bytes()).await.is_err() || stream.write_all(body).await.is_err()
        {
            return;
        }
    }
}

/// Reads until the buffer holds a whole request head; its length, or None at end of stream.
async fn read_head(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<usize> {
    loop {
        if let Some(i) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            return Some(i + 4);
        }
        let mut chunk = [0u8; 4096];
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
}

fn content_length(head: &[u8]) -> usize {
    String::from_utf8_lossy(head)
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(port: u16) -> Result<String, reqwest::Error> {
        reqwest::blocking::Client::new()
            .post(format!("http://127.0.0.1:{port}/slow"))
            .body("{\"a\":1}")
            .send()?
            .text()
    }

    #[test]
    fn answers_after_its_delay_and_drops_the_nth_request() {
        let upstream = Upstream::spawn(
            0,
            Faults {
                delay: Duration::from_millis(30),
                serial: false,
                drop_nth: Some(2),
            },
        )
        .unwrap();
        let started = std::time::Instant::now();
        assert_eq!(get(upstream.port).unwrap(), r#"{"ok":true}"#);
        assert!(started.elapsed() >= Duration::from_millis(30));
        let health = reqwest::blocking::get(format!("http://127.0.0.1:{}/health", upstream.port));
        assert_eq!(
            health.unwrap().text().unwrap(),
            r#"{"ok":true}"#,
            "not counted"
        );
        assert!(get(upstream.port).is_err(), "the 2nd request is dropped");
        assert_eq!(get(upstream.port).unwrap(), r#"{"ok":true}"#);
    }
}
