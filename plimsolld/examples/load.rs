//! A bounded loopback load test of admission: many concurrent runs against a
//! real plimsolld, with random disconnects; afterwards nothing may be in flight.
//!
//! ```text
//! cargo run --release -p plimsolld --example load -- [RUNS] [CONCURRENCY] [DISCONNECT_PERCENT] [MIN_ANSWERED_PERCENT]
//! ```
//!
//! It starts its own daemon (the plimsolld of its own build: `$PLIMSOLLD`, else
//! target/<profile>/plimsolld beside the example; build it first with
//! `cargo build -p plimsolld --bins --examples`) on the
//! wasm provider (or `LOAD_PROVIDER=docker`, then also checking that no container
//! is left) with `SANDBOX_MAX_CONCURRENT=4`, sends RUNS requests (default
//! 2000) from CONCURRENCY connections (default 32), each a snippet that spins for
//! 0–20 ms; DISCONNECT_PERCENT of them (default 10) hang up before the answer.
//! It prints admitted, shed and dropped counts, refusal and run latencies, and
//! the daemon's /metrics at the end, and exits non-zero if anything leaked or
//! too few runs were answered: a daemon that sheds every run leaks nothing,
//! so at least MIN_ANSWERED_PERCENT (default [`MIN_ANSWERED_PERCENT`], and
//! never fewer than one run) of the runs the clients waited for (those not
//! hung up) must come back 200 with the snippet's output. Clients do not
//! retry a shed run, so the share answered is about slots × run time over the
//! burst's length: a docker run (~1 s) outlasts a short burst, and
//! scripts/test.sh asks 2% there.
#![expect(
    clippy::unwrap_used,
    reason = "a harness that cannot do its job should stop loudly"
)]

#[path = "support/daemon.rs"]
mod daemon;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Mutex;

/// The least share of waited-for runs that must be answered (200), percent,
/// unless the fourth argument says otherwise.
/// Four slots against 16–32 connections shed most runs by design; far fewer
/// answered than this means admission is refusing work it has room for.
const MIN_ANSWERED_PERCENT: u64 = 5;

async fn send(addr: &str, body: &str, hang_up: bool) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(addr).await.ok()?;
    let req = format!(
        "POST /plimsoll.v1.SandboxService/Run HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.ok()?;
    if hang_up {
        tokio::time::sleep(Duration::from_millis(2)).await;
        return None; // dropping the stream disconnects mid-run
    }
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.ok()?;
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text.split(' ').nth(1)?.parse().ok()?;
    Some((status, text))
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn metric(text: &str, line: &str) -> u64 {
    text.lines()
        .find(|l| l.starts_with(line))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

async fn metrics(addr: &str) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out
}

#[tokio::main]
async fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().unwrap())
        .collect();
    let runs = *args.first().unwrap_or(&2000);
    let conc = *args.get(1).unwrap_or(&32);
    let drop_pct = *args.get(2).unwrap_or(&10);
    let min_pct = *args.get(3).unwrap_or(&MIN_ANSWERED_PERCENT);
    let provider = std::env::var("LOAD_PROVIDER").unwrap_or_else(|_| "wasm".into());
    let instance = format!("plimsoll:load-{}", std::process::id());
    let bin = daemon::plimsolld();
    let mut child = Command::new(&bin)
        .envs([
            ("SANDBOX_PROVIDER", provider.as_str()),
            ("PLIMSOLL_INSTANCE", instance.as_str()),
            ("PLIMSOLL_INSECURE", "1"),
            ("PLIMSOLL_ADDR", "127.0.0.1:0"),
            ("PLIMSOLL_METRICS_ADDR", "127.0.0.1:0"),
            ("SANDBOX_MAX_CONCURRENT", "4"),
            ("SANDBOX_PER_KEY_CONCURRENT", "4"),
            ("SANDBOX_RATE_PER_MIN", "0"),
            ("PLIMSOLL_LOG", "info,plimsoll::audit=warn"),
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let (mut addr, mut maddr) = (String::new(), String::new());
    while addr.is_empty() {
        let line = lines.next().expect("plimsolld exited").unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        match v["message"].as_str() {
            Some("listening") => addr = v["addr"].as_str().unwrap().to_owned(),
            Some("metrics listening") => maddr = v["addr"].as_str().unwrap().to_owned(),
            _ => {}
        }
    }
    std::thread::spawn(move || for _ in lines {});

    let next = Arc::new(AtomicU64::new(0));
    let (ok, shed, dropped, other) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
    );
    let refusal_ms = Arc::new(Mutex::new(Vec::new()));
    let run_ms = Arc::new(Mutex::new(Vec::new()));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..conc {
        let (addr, next, ok, shed, dropped, other, refusal_ms, run_ms) = (
            addr.clone(),
            next.clone(),
            ok.clone(),
            shed.clone(),
            dropped.clone(),
            other.clone(),
            refusal_ms.clone(),
            run_ms.clone(),
        );
        workers.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= runs {
                    return;
                }
                let spin = rand::random::<u64>() % 21;
                let hang_up = rand::random::<u64>() % 100 < drop_pct;
                let body = format!(
                    r#"{{"protocol":4,"javascript":{{"code":"const t=Date.now();while(Date.now()-t<{spin}){{}}console.log('answered')"}}}}"#
                );
                let t = Instant::now();
                match send(&addr, &body, hang_up).await {
                    None => dropped.fetch_add(1, Ordering::SeqCst),
                    // An answer is the snippet's own output ("answered\n"), exit 0.
                    Some((200, text)) if text.contains(r#""stdout":"YW5zd2VyZWQK""#) => {
                        run_ms.lock().await.push(t.elapsed().as_secs_f64() * 1e3);
                        ok.fetch_add(1, Ordering::SeqCst)
                    }
                    Some((429, text)) if text.contains("resource_exhausted") => {
                        refusal_ms.lock().await.push(t.elapsed().as_secs_f64() * 1e3);
                        shed.fetch_add(1, Ordering::SeqCst)
                    }
                    Some((s, text)) => {
                        eprintln!("unexpected answer {s}: {}", text.lines().last().unwrap_or(""));
                        other.fetch_add(1, Ordering::SeqCst)
                    }
                };
            }
        }));
    }
    for w in workers {
        w.await.unwrap();
    }
    let wall = started.elapsed();
    // Let disconnected runs finish their cancellation, then read the daemon's view.
    let mut m = String::new();
    for _ in 0..100 {
        m = metrics(&maddr).await;
        if metric(&m, "plimsoll_inflight ") == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let inflight = metric(&m, "plimsoll_inflight ");
    let mut refusals = refusal_ms.lock().await.clone();
    let mut answered = run_ms.lock().await.clone();
    println!(
        "runs sent              {runs} from {conc} connections in {:.2} s",
        wall.as_secs_f64()
    );
    println!("admitted (200)         {}", ok.load(Ordering::SeqCst));
    println!("shed (429)             {}", shed.load(Ordering::SeqCst));
    println!("client hung up         {}", dropped.load(Ordering::SeqCst));
    println!("other answers          {}", other.load(Ordering::SeqCst));
    println!(
        "refusal latency ms     p50 {:.2}  p99 {:.2}",
        pct(&mut refusals, 0.5),
        pct(&mut refusals, 0.99)
    );
    println!(
        "answered run ms        p50 {:.2}  p99 {:.2}",
        pct(&mut answered, 0.5),
        pct(&mut answered, 0.99)
    );
    println!(
        "daemon: runs_total {} shed at_capacity {} per_key {} rate {} in flight {inflight}",
        metric(&m, "plimsoll_runs_total "),
        metric(&m, "plimsoll_shed_total{reason=\"at_capacity\"}"),
        metric(&m, "plimsoll_shed_total{reason=\"per_key\"}"),
        metric(&m, "plimsoll_shed_total{reason=\"rate\"}")
    );
    // SIGTERM: the daemon drains and exits on its own.
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
    let mut leaked = 0;
    if provider == "docker" {
        // Every run's container is removed on every path out, disconnects included.
        leaked = daemon::containers_left(&instance);
        println!("containers left        {leaked}");
    }
    let answered_runs = ok.load(Ordering::SeqCst);
    let waited = runs - dropped.load(Ordering::SeqCst);
    let min_answered = (waited * min_pct).div_ceil(100).max(1);
    println!(
        "answered               {answered_runs} of {waited} waited for (minimum {min_answered}, {min_pct}%)"
    );
    if inflight != 0 || other.load(Ordering::SeqCst) != 0 || leaked != 0 {
        eprintln!("FAILED: slots leaked or unexpected answers");
        std::process::exit(1);
    }
    if answered_runs < min_answered {
        eprintln!(
            "FAILED: only {answered_runs} runs answered, fewer than {min_answered}: shedding is not all admission must do"
        );
        std::process::exit(1);
    }
    println!("load: 1 passed, 0 failed");
}
