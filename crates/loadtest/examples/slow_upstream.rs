//! A slow HTTP upstream for the overload scenario (scripts/loadtest-ci.sh, scripts/perf.sh):
//! answers every request `{"ok":true}` after DELAY_MS, many at once.
//! `slow_upstream PORT DELAY_MS` (PORT 0: any free port, printed on stdout).

fn main() {
    let mut args = std::env::args().skip(1);
    let port: u16 = args.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let delay_ms: u64 = args.next().and_then(|d| d.parse().ok()).unwrap_or(100);
    let upstream = loadtest::upstream::Upstream::spawn(
        port,
        loadtest::upstream::Faults {
            delay: std::time::Duration::from_millis(delay_ms),
            ..Default::default()
        },
    )
    .expect("binding the port");
    println!("{}", upstream.port);
    upstream.join();
}
