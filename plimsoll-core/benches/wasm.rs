//! Latency of the hello snippet on the wasm provider, in process through the
//! engine (records sealed, as a daemon answers), next to a baseline measured in
//! the same run: `node -e 'console.log(6*7)'` spawned as a process.
//!
//! ```text
//! cargo bench -p plimsoll-core --bench wasm            # release build
//! PLIMSOLL_BENCH_RUNS=5000 cargo bench -p plimsoll-core --bench wasm
//! PLIMSOLL_BENCH_RUNS=3 cargo test -p plimsoll-core --bench wasm   # smoke run
//! ```
//!
//! PLIMSOLL_BENCH_RUNS (default 2000) is the sequential run count; warm-up is
//! up to 200 runs and the node baseline `RUNS / 40` (at least 20, at most
//! RUNS). A small count, in the test profile, is scripts/test.sh's smoke run of
//! this harness; its numbers are not figures. The engine has no admission
//! rate limit here (`Config::default()`'s 30 a minute would refuse the 31st
//! run): the benchmark measures runs, not the limiter.

use std::process::Command;
use std::time::{Duration, Instant};

use plimsoll_core::admission::Limits;
use plimsoll_core::config::{Config, WasmSettings};
use plimsoll_core::phase::{PhaseReport, medians};
use plimsoll_core::provider::Chosen;
use plimsoll_core::request::JavaScriptRun;
use plimsoll_core::{Caller, Engine, Output, Payload, Request};
use tokio_util::sync::CancellationToken;

const HELLO: &str = "console.log(6*7)";

struct Summary {
    p50: Duration,
    p99: Duration,
    mean: Duration,
    per_second: f64,
}

fn summarise(mut samples: Vec<Duration>, wall: Duration) -> Summary {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    let total: Duration = samples.iter().sum();
    Summary {
        p50: at(0.50),
        p99: at(0.99),
        mean: total / samples.len() as u32,
        per_second: samples.len() as f64 / wall.as_secs_f64(),
    }
}

/// The process's minor page faults so far (Linux's /proc/self/stat).
fn minor_faults() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // After "pid (comm) ": state, ppid, pgrp, session, tty, tpgid, flags, minflt.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split(' ').nth(7)?.parse().ok()
}

fn print(label: &str, n: usize, s: &Summary) {
    println!(
        "{label:<44} n={n:<6} p50 {:>9.3} ms  p99 {:>9.3} ms  mean {:>9.3} ms  {:>9.0} runs/s",
        s.p50.as_secs_f64() * 1e3,
        s.p99.as_secs_f64() * 1e3,
        s.mean.as_secs_f64() * 1e3,
        s.per_second
    );
}

async fn hello(engine: &Engine, request: &Request) -> (Duration, PhaseReport) {
    let started = Instant::now();
    let response = engine
        .run(
            &Caller::anonymous(),
            request.clone(),
            CancellationToken::new(),
        )
        .await
        .expect("the run is answered");
    let took = started.elapsed();
    let phases = response.phases.clone().unwrap_or_default();
    match response.output {
        Some(Output::JavaScript(r)) if r.stdout == b"42\n" && r.exit_code == 0 => (took, phases),
        other => panic!("the hello snippet printed something else: {other:?}"),
    }
}

fn main() {
    let runs: usize = std::env::var("PLIMSOLL_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000);
    let node_runs = (runs / 40).max(20).min(runs);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    rt.block_on(async {
        let defaults = Config::default();
        let config = Config {
            provider: Chosen::new(WasmSettings),
            instance: "plimsoll:bench".into(),
            admission: Limits {
                rate_per_min: 0,
                ..defaults.admission
            },
            ..defaults
        };
        let started = Instant::now();
        let engine = Engine::start(&config)
            .await
            .expect("the wasm engine starts");
        println!(
            "wasm engine start (compile + snapshot + proof): {:.0} ms",
            started.elapsed().as_secs_f64() * 1e3
        );
        let (snapshot, memory) = plimsoll_core::provider::wasm::snapshot_figures()
            .expect("the engine compiled the guest");
        println!(
            "guest snapshot: {snapshot} bytes; linear memory at instantiation: {memory} bytes"
        );
        let request = Request::new(Payload::JavaScript(JavaScriptRun {
            code: HELLO.into(),
            grant_profile: String::new(),
        }));
        for _ in 0..runs.min(200) {
            hello(&engine, &request).await;
        }

        let faults = minor_faults();
        let wall = Instant::now();
        let mut samples = Vec::with_capacity(runs);
        let mut phases = Vec::with_capacity(runs);
        for _ in 0..runs {
            let (took, p) = hello(&engine, &request).await;
            samples.push(took);
            phases.push(p);
        }
        if let (Some(before), Some(after)) = (faults, minor_faults()) {
            // Most of a hello run's cost: each is a page of the instance's
            // memory past the slot's resident part, touched again.
            println!(
                "minor page faults per sequential run: {:.1}",
                (after - before) as f64 / runs as f64
            );
        }
        print(
            "wasm, in process via Engine, sequential",
            runs,
            &summarise(samples, wall.elapsed()),
        );
        println!("  phases (p50 each): {}", medians(&phases));

        for concurrency in [2usize, 4] {
            let wall = Instant::now();
            let tasks: Vec<_> = (0..concurrency)
                .map(|_| {
                    let (engine, request) = (engine.clone(), request.clone());
                    tokio::spawn(async move {
                        let each = (runs / concurrency).max(1);
                        let mut samples = Vec::with_capacity(each);
                        for _ in 0..each {
                            samples.push(hello(&engine, &request).await.0);
                        }
                        samples
                    })
                })
                .collect();
            let mut samples = Vec::with_capacity(runs);
            for t in tasks {
                samples.extend(t.await.expect("a bench task"));
            }
            print(
                &format!("wasm, in process via Engine, {concurrency} concurrent"),
                samples.len(),
                &summarise(samples, wall.elapsed()),
            );
        }
    });

    let node = std::env::var("PLIMSOLL_BENCH_NODE").unwrap_or_else(|_| "/usr/bin/node".into());
    let wall = Instant::now();
    let mut samples = Vec::with_capacity(node_runs);
    for _ in 0..node_runs {
        let started = Instant::now();
        let out = Command::new(&node)
            .args(["-e", HELLO])
            .output()
            .expect("node runs");
        samples.push(started.elapsed());
        assert_eq!(out.stdout, b"42\n", "node printed something else");
    }
    print(
        "baseline: `node -e` spawned, sequential",
        node_runs,
        &summarise(samples, wall.elapsed()),
    );
    let version = Command::new(&node)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    println!("node {}", version.unwrap_or_default());
}
