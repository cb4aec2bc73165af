//! What the benchmarks measure with, shared by each: a process's
//! RSS and CPU time, the load average, medians, and a kept-alive HTTP/1.1 connection.

use std::time::Duration;

/// `MUR_BENCH_SMOKE=1`: every bench runs its smallest size, once, to prove it still
/// works (`just bench-smoke`, which CI runs in the debug build); its numbers mean
/// nothing then.
pub fn smoke() -> bool {
    std::env::var_os("MUR_BENCH_SMOKE").is_some_and(|v| v == "1")
}

/// `full` in a real run, `small` in a smoke run.
pub fn sized<T>(full: T, small: T) -> T {
    if smoke() { small } else { full }
}

/// The number in environment variable `name`, else `full` (`small` in a smoke run).
pub fn knob<T: std::str::FromStr>(name: &str, full: T, small: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| sized(full, small))
}

/// Appends one measured figure to the file named by `MUR_BENCH_OUT`, as a JSON line
/// `{"bench", "figure", "labels", "value", "unit", "smoke"}` (`just bench` sets it to
/// target/bench/results.jsonl and scripts/bench-report.py renders
/// benchmarks/report.md from it). Without `MUR_BENCH_OUT` nothing is written: the
/// bench's printed lines are its whole output. `labels` tells apart the figures of one
/// name (the server, the round, the member count...).
pub fn record(bench: &str, figure: &str, labels: serde_json::Value, value: f64, unit: &str) {
    use std::io::Write;
    let Some(path) = std::env::var_os("MUR_BENCH_OUT") else {
        return;
    };
    let line = serde_json::json!({
        "bench": bench, "figure": figure, "labels": labels,
        "value": value, "unit": unit, "smoke": smoke(),
    });
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("MUR_BENCH_OUT {}: {e}", path.display()));
    // One write per line, so benches run one after another never interleave.
    file.write_all(format!("{line}\n").as_bytes()).unwrap();
}

/// `record`s each of `samples`, in ms: the report takes their median and spread.
pub fn record_ms(bench: &str, figure: &str, labels: serde_json::Value, samples: &[Duration]) {
    for s in samples {
        record(bench, figure, labels.clone(), s.as_secs_f64() * 1e3, "ms");
    }
}

/// Prints the samples' mean, median, p90 and p99 after `label`, and records their
/// median as `figure` and their p99 as `figure`_p99; returns the median.
pub fn summary(
    bench: &str,
    figure: &str,
    labels: serde_json::Value,
    label: &str,
    samples: &[Duration],
) -> Duration {
    let mut s = samples.to_vec();
    s.sort();
    let at = |q: f64| s[((s.len() as f64 - 1.0) * q) as usize];
    let mean = s.iter().sum::<Duration>() / s.len() as u32;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{label}: n={} mean {:.3} ms, median {:.3} ms, p90 {:.3} ms, p99 {:.3} ms",
        s.len(),
        ms(mean),
        ms(at(0.5)),
        ms(at(0.9)),
        ms(at(0.99))
    );
    record(bench, figure, labels.clone(), ms(at(0.5)), "ms");
    record(bench, &format!("{figure}_p99"), labels, ms(at(0.99)), "ms");
    at(0.5)
}

/// VmRSS of a process, in MiB.
pub fn vm_rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib / 1024.0
}

/// User + system CPU time of a process, from /proc/<pid>/stat.
pub fn cpu_of(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    // After the command: state is field 3, utime 14 and stime 15 (1-based).
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    let hz = rustix::param::clock_ticks_per_second();
    Duration::from_micros(ticks * 1_000_000 / hz)
}

/// The 1, 5 and 15 minute load averages.
pub fn load() -> String {
    let s = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// The middle of `v` (the upper one of an even count).
pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// One kept-alive HTTP/1.1 connection, reading answers by their Content-Length.
pub struct Conn {
    stream: tokio::net::TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    pub async fn open(addr: &str) -> Conn {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.set_nodelay(true).unwrap();
        Conn {
            stream,
            buf: Vec::with_capacity(16 * 1024),
        }
    }

    /// Sends `request`; the answer's body, which must come with status 200.
    pub async fn call(&mut self, request: &[u8]) -> &[u8] {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        self.stream.write_all(request).await.unwrap();
        self.buf.clear();
        let mut chunk = [0u8; 16 * 1024];
        let (head, length) = loop {
            let n = self.stream.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the server closed the connection");
            self.buf.extend_from_slice(&chunk[..n]);
            if let Some(end) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&self.buf[..end]).to_ascii_lowercase();
                assert!(head.starts_with("http/1.1 200"), "{head}");
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .unwrap_or_else(|| panic!("no content-length: {head}"))
                    .trim()
                    .parse()
                    .unwrap();
                break (end + 4, length);
            }
        };
        while self.buf.len() < head + length {
            let n = self.stream.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the server closed the connection");
            self.buf.extend_from_slice(&chunk[..n]);
        }
        &self.buf[head..head + length]
    }
}
