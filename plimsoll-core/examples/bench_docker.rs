//! Fresh-run latency of the docker provider next to `docker run --rm` with the
//! same flags and image, measured in the same process, under runc and runsc.
//!
//! ```text
//! cargo run --release -p plimsoll-core --example bench_docker [-- N]
//! ```
//!
//! For each runtime: a fresh snippet (`console.log(6*7)`) and a fresh Python
//! project (one file, `python3 main.py`) through the engine, N times each
//! (default 30), then the same work with the docker CLI: `docker run --rm -i`
//! with the lockdown flags, the code on stdin (snippet) or written by `sh`
//! before `python3` runs (project). A third row runs the snippet through an
//! engine with a snippet pool (`SANDBOX_SNIPPET_POOL=1`), each run waiting
//! until the pool has refilled, so it measures a run that finds a member
//! waiting. Each engine run is interleaved with its baseline. Prints the
//! build profile, p50/p90 in ms and the ratio. Not a test: numbers depend on
//! the machine and its load.
//!
//! `PLIMSOLL_BENCH_RUNTIMES` (comma-separated, default `runc,runsc`) picks
//! the runtimes. scripts/test.sh smoke-runs it as
//! `PLIMSOLL_BENCH_RUNTIMES=runc cargo run --example bench_docker -- 1` (dev
//! profile), so the harness cannot rot; those numbers are not figures. The
//! engine has no admission rate limit (`Config::default()`'s 30 a minute
//! would refuse the 31st run).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use plimsoll_core::config::{Config, DockerRuntime, DockerSettings, SeccompSetting};
use plimsoll_core::engine::{Caller, Engine};
use plimsoll_core::phase::{PhaseReport, medians};
use plimsoll_core::provider::Chosen;
use plimsoll_core::request::{JavaScriptRun, Payload, ProjectFile, ProjectRun, Request};
use plimsoll_core::result::Output;
use tokio_util::sync::CancellationToken;

const PY: &str = "print(6*7)\n";

fn pct(samples: &mut [Duration], p: f64) -> f64 {
    samples.sort();
    let i = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[i].as_secs_f64() * 1000.0
}

fn lockdown_flags(rt: DockerRuntime, seccomp: &str, work: bool) -> Vec<String> {
    let mut f: Vec<String> = [
        "run",
        "--rm",
        "-i",
        "--runtime",
        rt.as_str(),
        "--read-only",
        "--tmpfs",
        "/tmp:rw,noexec,nosuid,nodev,size=16m",
        "--tmpfs",
        "/dev/shm:rw,noexec,nosuid,nodev,size=16m,mode=1777",
        "--tmpfs",
        "/dev/mqueue:ro,noexec,nosuid,nodev,size=4k",
        "--network",
        "none",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges:true",
        "--user",
        "61000:61000",
        "--memory",
        "256m",
        "--memory-swap",
        "256m",
        "--cpus",
        "1",
        "--pids-limit",
        "256",
        "--ulimit",
        "core=0",
        "--ulimit",
        "nofile=4096:4096",
        "--ipc",
        "private",
        "--init",
        "--log-driver",
        "none",
        "--no-healthcheck",
        "--oom-score-adj",
        "1000",
        "--workdir",
        "/tmp",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if work {
        f.extend([
            "--tmpfs".into(),
            "/work:rw,noexec,nosuid,nodev,size=128m,mode=1777".into(),
        ]);
    }
    let profile = match rt {
        DockerRuntime::Runc => seccomp.to_owned(),
        DockerRuntime::Runsc => gvisor_profile(seccomp),
    };
    f.extend(["--security-opt".into(), format!("seccomp={profile}")]);
    f
}

/// The shipped profile as the provider hands it to gVisor (`--oci-seccomp`),
/// written to a temporary file; its path. With docker's default profile
/// instead, node cannot start a thread under runsc.
fn gvisor_profile(seccomp: &str) -> String {
    let text = std::fs::read_to_string(seccomp).expect("the profile");
    let variant = plimsoll_core::provider::docker::seccomp_for_gvisor(&text).expect("a profile");
    let path = std::env::temp_dir().join("plimsoll-bench-seccomp-gvisor.json");
    std::fs::write(&path, variant).expect("writing the profile");
    path.display().to_string()
}

/// One `docker run` of the baseline; `None` when it did not print 42 (its
/// stderr is shown).
fn docker_run(args: &[String], stdin: &str) -> Option<Duration> {
    use std::io::Write;
    let t = Instant::now();
    let mut child = Command::new("docker")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("docker CLI");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("docker run");
    let d = t.elapsed();
    (out.stdout == b"42\n").then_some(d)
}

async fn engine(rt: DockerRuntime, seccomp: &str, snippet_pool: u32) -> Engine {
    let mut docker = DockerSettings {
        runtime: rt,
        runtime_name: rt.as_str().into(),
        snippet_pool,
        ..DockerSettings::default()
    };
    if rt == DockerRuntime::Runc {
        docker.seccomp = SeccompSetting::Profile(seccomp.into());
    }
    let config = Config {
        instance: format!("plimsoll-bench:{}", hex::encode(rand::random::<[u8; 4]>())),
        provider: Chosen::new(docker),
        ..Config::default()
    };
    let config = Config {
        admission: plimsoll_core::admission::Limits {
            rate_per_min: 0,
            ..config.admission
        },
        ..config
    };
    Engine::start(&config).await.expect("start")
}

async fn through_engine(engine: &Engine, request: &Request) -> (Duration, PhaseReport) {
    // With a snippet pool: start once a member waits (not counted).
    if engine.metrics().snippet_pool.target > 0 {
        let t = Instant::now();
        while engine.metrics().snippet_pool.ready == 0 {
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "the pool did not refill"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    let t = Instant::now();
    let r = engine
        .run(
            &Caller::anonymous(),
            request.clone(),
            CancellationToken::new(),
        )
        .await
        .expect("run");
    let d = t.elapsed();
    let phases = r.phases.clone().unwrap_or_default();
    let stdout = match r.output {
        Some(Output::JavaScript(j)) => j.stdout,
        Some(Output::Project(p)) => p.steps[0].stdout.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(stdout, b"42\n");
    (d, phases)
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

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(30);
    let seccomp = concat!(env!("CARGO_MANIFEST_DIR"), "/../images/seccomp.json");
    let snippet = Request::new(Payload::JavaScript(JavaScriptRun {
        code: "console.log(6*7)".into(),
        ..JavaScriptRun::default()
    }));
    let python = Request::new(Payload::Project(ProjectRun {
        files: vec![ProjectFile {
            path: "main.py".into(),
            content: PY.into(),
        }],
        steps: vec!["python3 main.py".into()],
        ..ProjectRun::default()
    }));
    let py_cli = format!(
        "cd /work && printf '%s' '{}' > main.py && python3 main.py",
        PY.trim_end()
    );
    let profile = if cfg!(debug_assertions) {
        "dev (debug assertions on: not figures)"
    } else {
        "release"
    };
    println!("build profile: {profile}\n");
    println!("| runtime | kind | plimsoll p50 | p90 | docker run --rm p50 | p90 | ratio p50 |");
    println!("|---|---|---|---|---|---|---|");
    for rt in runtimes() {
        let engine_fresh = engine(rt, seccomp, 0).await;
        let pooled = engine(rt, seccomp, 1).await;
        let describe = engine_fresh.describe();
        let image = |env: Option<plimsoll_core::wire::PayloadEnvironment>| {
            env.expect("env")
                .identity
                .trim_start_matches("docker-image:")
                .to_owned()
        };
        let (js_image, py_image) = (
            image(describe.javascript_environment),
            image(describe.project_environment),
        );
        // One warm-up each, not counted.
        through_engine(&engine_fresh, &snippet).await;
        through_engine(&engine_fresh, &python).await;
        through_engine(&pooled, &snippet).await;
        let snippet_cli = {
            let mut a = lockdown_flags(rt, seccomp, false);
            a.extend([js_image.clone(), "node".into(), "-".into()]);
            (a, "console.log(6*7)".to_string())
        };
        let mut cases = Vec::new();
        let mut breakdowns = Vec::new();
        for (kind, engine, request, cli) in [
            ("snippet", &engine_fresh, &snippet, snippet_cli.clone()),
            ("snippet, pool", &pooled, &snippet, snippet_cli),
            ("python project", &engine_fresh, &python, {
                let mut a = lockdown_flags(rt, seccomp, true);
                a.extend([py_image.clone(), "sh".into(), "-c".into(), py_cli.clone()]);
                (a, String::new())
            }),
        ] {
            docker_run(&cli.0, &cli.1);
            let mut ours = Vec::new();
            let mut phases = Vec::new();
            let mut theirs = Vec::new();
            let mut failed = 0;
            // Interleaved, so drift on the machine hits both alike.
            for _ in 0..n {
                let (d, p) = through_engine(engine, request).await;
                ours.push(d);
                phases.push(p);
                match docker_run(&cli.0, &cli.1) {
                    Some(d) => theirs.push(d),
                    None => failed += 1,
                }
            }
            assert!(
                !theirs.is_empty(),
                "every docker run of the baseline failed"
            );
            let (o50, o90, t50, t90) = (
                pct(&mut ours, 0.5),
                pct(&mut ours, 0.9),
                pct(&mut theirs, 0.5),
                pct(&mut theirs, 0.9),
            );
            cases.push(format!(
                "| {} | {kind} | {o50:.0} ms | {o90:.0} ms | {t50:.0} ms | {t90:.0} ms | {:.2} |{}",
                rt.as_str(),
                o50 / t50,
                if failed > 0 {
                    format!(" ({failed} of {n} docker runs failed, left out)")
                } else {
                    String::new()
                }
            ));
            breakdowns.push(format!(
                "{} {kind}, phases (p50 each): {}",
                rt.as_str(),
                medians(&phases)
            ));
        }
        for c in cases {
            println!("{c}");
        }
        for b in breakdowns {
            println!("  {b}");
        }
        engine_fresh.shutdown().await;
        pooled.shutdown().await;
    }
    println!("\nN = {n} per cell, fresh container per run, both paths measured in this process.");
}
