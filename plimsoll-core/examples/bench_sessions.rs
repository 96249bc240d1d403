//! Session latency under runc and runsc against the local dockerd: open plus
//! the first cell, a warm cell, a session snippet call, against a fresh
//! container per call. Run:
//! `cargo run --release -p plimsoll-core --example bench_sessions`.
//!
//! `PLIMSOLL_BENCH_RUNTIMES` (comma-separated, default `runc,runsc`) picks the
//! runtimes and `PLIMSOLL_BENCH_RUNS` (default 3) the sessions per measurement
//! (each with 5 warm cells and snippet calls, and 5 fresh runs; a RUNS below 3
//! cuts those to RUNS too). scripts/test.sh smoke-runs it with `runc` and 1 in the dev
//! profile so the harness cannot rot; those numbers are not figures.
#![expect(clippy::unwrap_used, reason = "a measurement program fails loudly")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use plimsoll_core::config::{Config, DockerRuntime, DockerSettings, SeccompSetting};
use plimsoll_core::engine::{Caller, Engine};
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

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let caller = Caller {
        principal: "bench".into(),
    };
    let runs: usize = std::env::var("PLIMSOLL_BENCH_RUNS")
        .map(|v| v.parse().expect("PLIMSOLL_BENCH_RUNS: a count"))
        .unwrap_or(3);
    let cells = if runs < 3 { runs } else { 5 };
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
        let (mut open_first, mut warm, mut call, mut fresh) = (vec![], vec![], vec![], vec![]);
        for _ in 0..runs {
            let t = Instant::now();
            let open = engine
                .open_session(
                    &caller,
                    &OpenSessionRequest {
                        protocol: PROTOCOL,
                        minimum_isolation: "container".into(),
                        ..Default::default()
                    },
                )
                .await
                .unwrap();
            let run = |r: Request| {
                engine.session_run(&caller, &open.session_id, r, CancellationToken::new())
            };
            run(cell("x = 41")).await.unwrap();
            open_first.push(t.elapsed());
            for _ in 0..cells {
                let t = Instant::now();
                run(cell("x + 1")).await.unwrap();
                warm.push(t.elapsed());
                let t = Instant::now();
                run(js()).await.unwrap();
                call.push(t.elapsed());
            }
            engine
                .close_session(&caller, PROTOCOL, &open.session_id)
                .await
                .unwrap();
        }
        for _ in 0..cells {
            let t = Instant::now();
            engine
                .run(&caller, js(), CancellationToken::new())
                .await
                .unwrap();
            fresh.push(t.elapsed());
        }
        drop(engine);
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
        let mut pooled = vec![];
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
        println!(
            "{}: pooled open+first cell {:?} | memory per waiting pool member {:.1} MiB",
            rt.as_str(),
            median(pooled),
            mem
        );
        println!(
            "{}: open+first cell {:?} | warm cell {:?} | session snippet call {:?} | fresh container per snippet {:?} (medians)",
            rt.as_str(),
            median(open_first),
            median(warm),
            median(call),
            median(fresh)
        );
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
