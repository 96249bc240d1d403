//! Session latency under runc and runsc against the local dockerd, each
//! figure next to its baseline from the same run: open plus the first cell
//! (cold, and from a warm pool of two), a warm Python cell, a session snippet
//! call (`console.log(1)`), a session call of one `echo` step, and — the
//! baseline, interleaved with the session calls — a fresh container per
//! snippet; and the memory of a waiting pool member warmed for both
//! languages (before any open) and for Python (after Python-hinted opens).
//! Run:
//! `cargo run --release -p plimsoll-core --example bench_sessions`.
//!
//! `PLIMSOLL_BENCH_RUNTIMES` (comma-separated, default `runc,runsc`) picks the
//! runtimes and `PLIMSOLL_BENCH_RUNS` (default 30) the samples per figure.
//! scripts/test.sh smoke-runs it with `runc` and 1 in the dev profile so the
//! harness cannot rot; those numbers are not figures.
#![expect(clippy::unwrap_used, reason = "a measurement program fails loudly")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use plimsoll_core::config::{Config, DockerRuntime, DockerSettings, SeccompSetting};
use plimsoll_core::engine::{Caller, Engine};
use plimsoll_core::phase::medians;
use plimsoll_core::provider::Chosen;
use plimsoll_core::provider::docker::DockerProvider;
use plimsoll_core::request::{CellRun, Envelope, JavaScriptRun, PROTOCOL, Payload, Request};
use plimsoll_core::session::SessionSettings;
use plimsoll_core::wire::OpenSessionRequest;
use tokio_util::sync::CancellationToken;

fn req(payload: Payload) -> Request {
    let mut r = Request::new(payload);
    r.envelope = Envelope {
        minimum_isolation: "container".into(),
        timeout_ms: 20_000,
        ..Envelope::new()
    };
    r
}

fn cell(code: &str) -> Request {
    req(Payload::Cell(CellRun {
        language: "python".into(),
        code: code.into(),
        files: vec![],
    }))
}

fn echo() -> Request {
    req(Payload::Project(plimsoll_core::request::ProjectRun {
        steps: vec!["echo 1".into()],
        ..Default::default()
    }))
}

fn js() -> Request {
    req(Payload::JavaScript(JavaScriptRun {
        code: "console.log(1)".into(),
        grant_profile: String::new(),
    }))
}

/// The runtimes `PLIMSOLL_BENCH_RUNTIMES` names (default both).
fn runtimes() -> Vec<DockerRuntime> {
    std::env::var("PLIMSOLL_BENCH_RUNTIMES")
        .unwrap_or_else(|_| "runc,runsc".into())
        .split(',')
        .map(|name| match name.trim() {
            "runc" => DockerRuntime::Runc,
            "runsc" => DockerRuntime::Runsc,
            other => panic!("PLIMSOLL_BENCH_RUNTIMES: {other:?} is neither runc nor runsc"),
        })
        .collect()
}

/// Prints one figure: its samples' p50 and p90, and its p50 over the
/// baseline's.
fn report(rt: &str, what: &str, mut v: Vec<Duration>, baseline: Option<Duration>) -> Duration {
    v.sort();
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let ratio = baseline.map_or(String::new(), |b| {
        format!("  = {:.3}x the fresh container", ms(at(0.5)) / ms(b))
    });
    println!(
        "{rt:<6} {what:<40} n={:<4} p50 {:>8.2} ms  p90 {:>8.2} ms{ratio}",
        v.len(),
        ms(at(0.5)),
        ms(at(0.9)),
    );
    at(0.5)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let caller = Caller {
        principal: "bench".into(),
    };
    let runs: usize = std::env::var("PLIMSOLL_BENCH_RUNS")
        .map(|v| v.parse().expect("PLIMSOLL_BENCH_RUNS: a count"))
        .unwrap_or(30)
        .max(1);
    let profile = if cfg!(debug_assertions) {
        "dev (not figures)"
    } else {
        "release"
    };
    println!("bench_sessions: {runs} samples per figure, {profile} build");
    for rt in runtimes() {
        let mut docker = DockerSettings {
            runtime: rt,
            runtime_name: rt.as_str().into(),
            ..DockerSettings::default()
        };
        if rt == DockerRuntime::Runc {
            docker.seccomp = SeccompSetting::Profile(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../images/seccomp.json"),
            );
        }
        let config = Config {
            instance: format!("plimsoll-bench:sessions-{}", rt.as_str()),
            provider: Chosen::new(docker),
            sessions: SessionSettings {
                max_sessions: 8,
                max_per_caller: 8,
                ..SessionSettings::default()
            },
            ..Config::default()
        };
        let config = Config {
            admission: plimsoll_core::admission::Limits {
                rate_per_min: 100_000,
                rate_burst: 10_000,
                ..config.admission
            },
            ..config
        };
        let engine = Engine::start(&config).await.unwrap();
        let pooled_config = Config {
            sessions: SessionSettings {
                pool: 2,
                ..config.sessions
            },
            instance: format!("{}-pool", config.instance),
            ..config.clone()
        };
        let open = |languages: Vec<String>| {
            let engine = &engine;
            let caller = &caller;
            async move {
                engine
                    .open_session(
                        caller,
                        &OpenSessionRequest {
                            protocol: PROTOCOL,
                            minimum_isolation: "container".into(),
                            languages,
                            ..Default::default()
                        },
                    )
                    .await
                    .unwrap()
            }
        };
        let mut open_first = vec![];
        for _ in 0..runs {
            let t = Instant::now();
            let open = open(vec![]).await;
            engine
                .session_run(
                    &caller,
                    &open.session_id,
                    cell("x = 41"),
                    CancellationToken::new(),
                )
                .await
                .unwrap();
            open_first.push(t.elapsed());
            engine
                .close_session(&caller, PROTOCOL, &open.session_id)
                .await
                .unwrap();
        }
        // One session's calls, each kind in turn, with a fresh run between.
        let (mut warm, mut call, mut step, mut fresh) = (vec![], vec![], vec![], vec![]);
        let session = open(vec!["python".into()]).await;
        let run = |r: Request| {
            engine.session_run(&caller, &session.session_id, r, CancellationToken::new())
        };
        run(cell("x = 41")).await.unwrap();
        let mut warm_phases = vec![];
        for _ in 0..runs {
            let t = Instant::now();
            let answered = run(cell("x + 1")).await.unwrap();
            warm.push(t.elapsed());
            warm_phases.push(answered.run.and_then(|r| r.phases).unwrap_or_default());
            let t = Instant::now();
            run(js()).await.unwrap();
            call.push(t.elapsed());
            let t = Instant::now();
            run(echo()).await.unwrap();
            step.push(t.elapsed());
            let t = Instant::now();
            engine
                .run(&caller, js(), CancellationToken::new())
                .await
                .unwrap();
            fresh.push(t.elapsed());
        }
        engine
            .close_session(&caller, PROTOCOL, &session.session_id)
            .await
            .unwrap();
        let name = rt.as_str();
        let base = report(name, "fresh container per snippet (baseline)", fresh, None);
        report(name, "open + first cell", open_first, Some(base));
        report(name, "warm Python cell (x + 1)", warm, Some(base));
        println!("{name:<6}   phases (p50 each): {}", medians(&warm_phases));
        report(name, "session snippet call (console.log)", call, Some(base));
        report(name, "session call, one echo step", step, Some(base));
        engine.shutdown().await;
        // With a warm pool of two.
        let provider = Arc::new(
            DockerProvider::new(
                &pooled_config.setup(),
                pooled_config.provider.get().unwrap(),
            )
            .unwrap(),
        );
        let engine = Engine::with_provider(provider.clone(), &pooled_config)
            .await
            .unwrap();
        // Before any open, members warm both kernels.
        while provider.pool_ready() < 2 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        let mem_both = pool_memory().await;
        let mut pooled = vec![];
        let mut open_phases = vec![];
        for _ in 0..runs {
            while provider.pool_ready() < 2 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let t = Instant::now();
            let open = engine
                .open_session(
                    &caller,
                    &OpenSessionRequest {
                        protocol: PROTOCOL,
                        minimum_isolation: "container".into(),
                        languages: vec!["python".into()],
                        ..Default::default()
                    },
                )
                .await
                .unwrap();
            open_phases.push(open.phases.clone().unwrap_or_default());
            engine
                .session_run(
                    &caller,
                    &open.session_id,
                    cell("x = 41"),
                    CancellationToken::new(),
                )
                .await
                .unwrap();
            pooled.push(t.elapsed());
            engine
                .close_session(&caller, PROTOCOL, &open.session_id)
                .await
                .unwrap();
        }
        while provider.pool_ready() < 2 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        let mem = pool_memory().await;
        report(name, "pooled open + first cell", pooled, None);
        println!(
            "{name:<6}   pooled open, phases (p50 each): {}",
            medians(&open_phases)
        );
        println!(
            "{name:<6} memory per waiting pool member, both kernels (before any open): {mem_both:.1} MiB (docker stats)"
        );
        println!(
            "{name:<6} memory per waiting pool member, Python kernel (after Python-hinted opens): {mem:.1} MiB (docker stats)"
        );
        // The waiting members go with the engine, not with the process.
        engine.shutdown().await;
    }
}

/// The mean memory use of waiting pool members, MiB (docker stats).
async fn pool_memory() -> f64 {
    use bollard::query_parameters::{ListContainersOptionsBuilder, StatsOptionsBuilder};
    use futures_util::StreamExt;
    let docker = bollard::Docker::connect_with_unix(
        "/var/run/docker.sock",
        60,
        bollard::API_DEFAULT_VERSION,
    )
    .unwrap();
    let opts = ListContainersOptionsBuilder::new()
        .filters(&std::collections::HashMap::from([(
            "label",
            vec!["io.plimsoll.session=pool".to_string()],
        )]))
        .build();
    let ids: Vec<String> = docker
        .list_containers(Some(opts))
        .await
        .unwrap()
        .into_iter()
        .filter_map(|c| c.id)
        .collect();
    let mut total = 0.0;
    for id in &ids {
        let opts = StatsOptionsBuilder::new()
            .stream(false)
            .one_shot(true)
            .build();
        if let Some(Ok(s)) = docker.stats(id, Some(opts)).next().await {
            let m = s.memory_stats.unwrap_or_default();
            total += m.usage.unwrap_or(0) as f64 / (1024.0 * 1024.0);
        }
    }
    total / ids.len().max(1) as f64
}
