//! The wasm hello snippet through plimsolld: per-run latency p50/p99 and runs
//! per second over HTTP, with one connection per request (as the published
//! client does) and with keep-alive connections (one per client thread, as a
//! long-lived caller holds), the daemon's resident memory at rest, under load
//! and after, and `node -e 'console.log(6*7)'` as a process measured in the
//! same run.
//!
//! ```text
//! cargo build --release -p plimsolld && cargo run --release -p plimsolld --example bench_wasm -- [RUNS]
//! ```
//!
//! RUNS (default 2000) is per measurement; a small RUNS (scripts/test.sh runs
//! it with 3, in the dev profile) is a smoke run of the harness, not a figure.
//! It starts the plimsolld of its own build (`$PLIMSOLLD`, else
//! target/<profile>/plimsolld beside the example).
#![expect(
    clippy::unwrap_used,
    reason = "a harness that cannot do its job should stop loudly"
)]

#[path = "support/daemon.rs"]
mod daemon;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Instant;

fn rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn hello(addr: &str) -> f64 {
    let body = r#"{"protocol":4,"javascript":{"code":"console.log(6*7)"}}"#;
    let t = Instant::now();
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "POST /plimsoll.v1.SandboxService/Run HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}", body.len()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(
        out.starts_with("HTTP/1.1 200") && out.contains("\"stdout\":\"NDIK\""),
        "{out}"
    );
    t.elapsed().as_secs_f64() * 1e3
}

/// One keep-alive HTTP/1.1 connection to the daemon.
struct KeepAlive {
    conn: BufReader<TcpStream>,
}

impl KeepAlive {
    fn open(addr: &str) -> KeepAlive {
        let s = TcpStream::connect(addr).unwrap();
        s.set_nodelay(true).unwrap();
        KeepAlive {
            conn: BufReader::new(s),
        }
    }

    /// One hello run on the held connection; its latency in ms.
    fn hello(&mut self) -> f64 {
        let body = r#"{"protocol":4,"javascript":{"code":"console.log(6*7)"}}"#;
        let t = Instant::now();
        write!(self.conn.get_mut(), "POST /plimsoll.v1.SandboxService/Run HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        let mut status = String::new();
        self.conn.read_line(&mut status).unwrap();
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
        let mut length = None;
        loop {
            let mut h = String::new();
            self.conn.read_line(&mut h).unwrap();
            if h == "\r\n" {
                break;
            }
            let lower = h.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                length = Some(v.trim().parse::<usize>().unwrap());
            }
        }
        let mut out = vec![0; length.expect("a Content-Length")];
        self.conn.read_exact(&mut out).unwrap();
        let d = t.elapsed().as_secs_f64() * 1e3;
        let out = String::from_utf8(out).unwrap();
        assert!(out.contains("\"stdout\":\"NDIK\""), "{out}");
        d
    }
}

/// `conc` client threads sharing `runs` hello runs, each on a connection per
/// request or (`keep_alive`, after one unmeasured run) on one held connection;
/// each thread's latencies, ms.
fn clients(
    addr: &str,
    conc: usize,
    runs: usize,
    keep_alive: bool,
) -> Vec<std::thread::JoinHandle<Vec<f64>>> {
    (0..conc)
        .map(|_| {
            let addr = addr.to_owned();
            std::thread::spawn(move || {
                let mut held = keep_alive.then(|| {
                    let mut c = KeepAlive::open(&addr);
                    c.hello();
                    c
                });
                (0..(runs / conc).max(1))
                    .map(|_| match held.as_mut() {
                        Some(c) => c.hello(),
                        None => hello(&addr),
                    })
                    .collect()
            })
        })
        .collect()
}

fn stats(mut v: Vec<f64>, wall_s: f64) -> String {
    v.sort_by(f64::total_cmp);
    let p = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    format!(
        "p50 {:.3} ms  p99 {:.3} ms  {:.0} runs/s",
        p(0.5),
        p(0.99),
        v.len() as f64 / wall_s
    )
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().unwrap())
        .unwrap_or(2000);
    let bin = daemon::plimsolld();
    let mut child = Command::new(&bin)
        .envs([
            ("SANDBOX_PROVIDER", "wasm"),
            ("PLIMSOLL_INSECURE", "1"),
            ("PLIMSOLL_ADDR", "127.0.0.1:0"),
            ("PLIMSOLL_METRICS_ADDR", "off"),
            ("SANDBOX_RATE_PER_MIN", "0"),
            ("SANDBOX_MAX_CONCURRENT", "64"),
            ("SANDBOX_PER_KEY_CONCURRENT", "64"),
            ("PLIMSOLL_LOG", "info,plimsoll::audit=warn"),
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let v: serde_json::Value =
            serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap_or_default();
        if v["message"] == "listening" {
            break v["addr"].as_str().unwrap().to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    let pid = child.id();
    println!("binary: {}", bin.display());
    for _ in 0..runs.min(50) {
        hello(&addr);
    }
    let at_rest = rss_kib(pid);
    let t = Instant::now();
    let seq: Vec<f64> = (0..runs).map(|_| hello(&addr)).collect();
    println!(
        "through plimsolld, 1 client:  {}",
        stats(seq, t.elapsed().as_secs_f64())
    );
    let mut peak = 0;
    for conc in [2usize, 4] {
        let t = Instant::now();
        let handles = clients(&addr, conc, runs, false);
        let watcher = std::thread::spawn(move || {
            (0..20)
                .map(|_| {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                    rss_kib(pid)
                })
                .max()
                .unwrap_or(0)
        });
        let all: Vec<f64> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        peak = peak.max(watcher.join().unwrap());
        println!(
            "through plimsolld, {conc} clients: {}",
            stats(all, t.elapsed().as_secs_f64())
        );
    }
    for conc in [1usize, 2] {
        let t = Instant::now();
        let handles = clients(&addr, conc, runs, true);
        let all: Vec<f64> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        println!(
            "through plimsolld, {conc} keep-alive client(s): {}",
            stats(all, t.elapsed().as_secs_f64())
        );
    }
    let after = rss_kib(pid);
    println!(
        "daemon RSS: at rest {} MiB, under load (peak sampled) {} MiB, after {} MiB",
        at_rest / 1024,
        peak / 1024,
        after / 1024
    );
    let node_runs = runs.min(30);
    let t = Instant::now();
    let node: Vec<f64> = (0..node_runs)
        .map(|_| {
            let t = Instant::now();
            let out = Command::new("node")
                .args(["-e", "console.log(6*7)"])
                .output()
                .unwrap();
            assert_eq!(out.stdout, b"42\n");
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    println!(
        "baseline node -e (process):   {}",
        stats(node, t.elapsed().as_secs_f64())
    );
    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let _ = child.wait();
}
