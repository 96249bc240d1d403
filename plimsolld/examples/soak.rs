//! A bounded loopback soak: many thousands of mixed runs (and, on docker,
//! sessions) against a real plimsolld; its memory, fds and threads must be
//! flat at the end, with nothing in flight and no container left.
//!
//! ```text
//! cargo build --release -p plimsolld --bins --examples
//! cargo run --release -p plimsolld --example soak -- [PROVIDER] [RUNS] [CONCURRENCY]
//! ```
//!
//! It starts the plimsolld of its own build: `$PLIMSOLLD`, else
//! target/<profile>/plimsolld beside the example (build it first, as above).
//!
//! PROVIDER is `wasm` (default) or `runc`/`runsc` (docker, sessions on). The
//! mix, per iteration: benign snippets; a granted snippet calling a loopback
//! API through the broker; an infinite loop ended by a 150 ms deadline; a
//! memory bomb; an output flood; a refused request (a floor above the tier);
//! a client that hangs up mid-run; on docker also a project with an artifact
//! and a session of three cells (Python and JavaScript). Every answer's record
//! is verified by the client, every outcome is checked. The run goes in ten
//! phases; after each, at rest, the daemon's RSS, fds and threads are sampled.
//! The end must be within bounds of the warm baseline (after phase two), and
//! the least-squares trend of RSS over the last six phases must project less
//! than 4 MiB of growth across them. Exits non-zero on any failure.
#![expect(
    clippy::unwrap_used,
    reason = "a harness that cannot do its job should stop loudly"
)]

#[path = "support/daemon.rs"]
mod daemon;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use plimsoll_core::client::{Runner, SessionOptions};
use plimsoll_core::request::{CellRun, JavaScriptRun, ProjectFile, ProjectRun};
use plimsoll_core::{Output, Payload, Request};
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

const TOKEN: &str = "soak-token-0123456789abcdef0123456789";

/// A loopback API for granted runs: answers 200 with a small JSON body.
fn api() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = c.read(&mut buf);
                let _ = c.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\nConnection: close\r\n\r\n{\"ok\":true}",
                );
            });
        }
    });
    url
}

fn js(code: &str, grant: &str, timeout_ms: i32) -> Request {
    let mut r = Request::new(Payload::JavaScript(JavaScriptRun {
        code: code.into(),
        grant_profile: grant.into(),
    }));
    r.envelope.timeout_ms = timeout_ms;
    r
}

fn text(o: &Output) -> (String, i32, bool) {
    match o {
        Output::JavaScript(j) => (
            String::from_utf8_lossy(&j.stdout).into_owned(),
            j.exit_code,
            j.timed_out,
        ),
        Output::Cell(c) => (
            String::from_utf8_lossy(&c.stdout).into_owned(),
            c.exit_code,
            c.timed_out,
        ),
        Output::Project(p) => (
            p.artifacts
                .iter()
                .map(|a| String::from_utf8_lossy(&a.content).into_owned())
                .collect(),
            p.steps.last().map(|s| s.exit_code).unwrap_or(-1),
            false,
        ),
        Output::Module(_) => (String::new(), -1, false),
    }
}

/// One iteration of the mix; `Err` names what went wrong.
async fn one(client: &Runner, addr: &str, i: u64, docker: bool) -> Result<(), String> {
    let run = |r: Request| async move {
        client
            .run(r, CancellationToken::new())
            .await
            .map(|a| text(a.output.as_ref().unwrap()))
            .map_err(|e| format!("{:?}: {e}", e.code()))
    };
    let flood = if docker { 200 } else { 500 };
    match i % 10 {
        0..=3 => {
            let (out, code, _) = run(js(&format!("console.log({i} * 2)"), "", 0)).await?;
            (out == format!("{}\n", i * 2) && code == 0)
                .then_some(())
                .ok_or(format!("benign gave {out:?} {code}"))
        }
        4 => {
            let code = "const a = host.get('/v1/items/7'); Promise.resolve(a).then(a => console.log(a.status))";
            let (out, _, _) = run(js(code, "items", 0)).await?;
            (out == "200\n")
                .then_some(())
                .ok_or(format!("grant gave {out:?}"))
        }
        5 => {
            let t = if docker { 1500 } else { 150 };
            let (_, _, timed_out) = run(js("for (;;) {}", "", t)).await?;
            timed_out.then_some(()).ok_or("loop not ended".into())
        }
        6 => {
            let (_, code, _) = run(js(
                "const k = []; for (;;) k.push(new Array(1 << 20).fill(1));",
                "",
                20_000,
            ))
            .await?;
            (code != 0)
                .then_some(())
                .ok_or("memory bomb exited 0".into())
        }
        7 => {
            let code = format!(
                "const s = 'x'.repeat(65536); for (let i = 0; i < {flood}; i++) console.log(s)"
            );
            run(js(&code, "", 20_000)).await.map(|_| ())
        }
        8 => {
            let mut r = js("console.log('never')", "", 0);
            r.envelope.minimum_isolation = "vm".into();
            match client.run(r, CancellationToken::new()).await {
                Err(e) if e.not_dispatched().is_some() => Ok(()),
                other => Err(format!("floor above the tier gave {other:?}")),
            }
        }
        _ if !docker || i % 20 == 9 => {
            // A client that hangs up mid-run.
            let body = r#"{"protocol":4,"javascript":{"code":"const t=Date.now();while(Date.now()-t<300){}"}}"#;
            let mut s = tokio::net::TcpStream::connect(addr)
                .await
                .map_err(|e| e.to_string())?;
            let req = format!(
                "POST /plimsoll.v1.SandboxService/Run HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            s.write_all(req.as_bytes())
                .await
                .map_err(|e| e.to_string())?;
            tokio::time::sleep(Duration::from_millis(50)).await;
            drop(s);
            Ok(())
        }
        _ if i % 40 == 19 => {
            let s = client
                .open_session(SessionOptions::default())
                .await
                .map_err(|e| format!("open: {e}"))?;
            let cell = |lang: &str, code: &str| {
                Request::new(Payload::Cell(CellRun {
                    language: lang.into(),
                    code: code.into(),
                    files: vec![],
                }))
            };
            for (lang, code, want) in [
                ("python", "x = 20", ""),
                ("python", "print(x + 1)", "21\n"),
                ("javascript", "console.log(6 * 7)", "42\n"),
            ] {
                let a = s
                    .run(cell(lang, code), CancellationToken::new())
                    .await
                    .map_err(|e| e.to_string())?;
                let (out, _, _) = text(a.response.output.as_ref().unwrap());
                if out != want {
                    return Err(format!("cell {code:?} gave {out:?}"));
                }
            }
            s.close().await.map(|_| ()).map_err(|e| e.to_string())
        }
        _ => {
            let r = Request::new(Payload::Project(ProjectRun {
                files: vec![ProjectFile {
                    path: "in.txt".into(),
                    content: format!("{i}"),
                }],
                steps: vec![
                    "python3 -c \"print(int(open('in.txt').read()) + 1)\" > out.txt".into(),
                ],
                artifacts: vec!["out.txt".into()],
                grant_profile: String::new(),
            }));
            let (out, code, _) = run(r).await?;
            (out == format!("{}\n", i + 1) && code == 0)
                .then_some(())
                .ok_or(format!("project gave {out:?} {code}"))
        }
    }
}

fn proc_field(pid: u32, field: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

fn fds(pid: u32) -> f64 {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count() as f64
}

/// Least-squares slope of y over x.
fn slope(pts: &[(f64, f64)]) -> f64 {
    let n = pts.len() as f64;
    let (mx, my) = (
        pts.iter().map(|p| p.0).sum::<f64>() / n,
        pts.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let num: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let den: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if den == 0.0 { 0.0 } else { num / den }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let provider = args.first().cloned().unwrap_or_else(|| "wasm".into());
    let docker = provider != "wasm";
    let runs: u64 = args
        .get(1)
        .map(|a| a.parse().unwrap())
        .unwrap_or(if docker { 400 } else { 5000 });
    let conc: u64 = args
        .get(2)
        .map(|a| a.parse().unwrap())
        .unwrap_or(if docker { 4 } else { 8 });
    let instance = format!("plimsoll:soak-{}", std::process::id());
    let grants = std::env::temp_dir().join(format!("plimsoll-soak-{}.json", std::process::id()));
    std::fs::write(
        &grants,
        serde_json::json!({"profiles": {"items": {
            "base_url": api(), "allow": ["GET /v1/items/*"], "allowed_callers": ["static"],
            "token": {"type": "static", "env": "SOAK_API_TOKEN"},
        }}})
        .to_string(),
    )
    .unwrap();
    // The daemon of this example's own build (see support/daemon.rs).
    let bin = daemon::plimsolld();
    println!("binary: {}", bin.display());
    let mut cmd = Command::new(&bin);
    cmd.envs([
        ("PLIMSOLL_INSTANCE", instance.as_str()),
        ("PLIMSOLL_TOKEN", TOKEN),
        ("PLIMSOLL_ADDR", "127.0.0.1:0"),
        ("PLIMSOLL_METRICS_ADDR", "off"),
        ("PLIMSOLL_GRANTS_FILE", grants.to_str().unwrap()),
        ("SOAK_API_TOKEN", "soak-upstream-credential"),
        ("SANDBOX_MAX_CONCURRENT", if docker { "4" } else { "8" }),
        ("SANDBOX_PER_KEY_CONCURRENT", if docker { "4" } else { "8" }),
        ("SANDBOX_RATE_PER_MIN", "0"),
        ("SANDBOX_MEMORY_MB", "128"),
        ("PLIMSOLL_LOG", "info,plimsoll::audit=warn"),
        ("PLIMSOLL_LOG_FORMAT", "json"),
    ]);
    if docker {
        cmd.envs([
            ("SANDBOX_PROVIDER", "docker"),
            ("SANDBOX_DOCKER_RUNTIME", provider.as_str()),
            ("SANDBOX_MAX_SESSIONS", "2"),
        ]);
    } else {
        cmd.env("SANDBOX_PROVIDER", "wasm");
    }
    let mut child = cmd.stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("plimsolld exited").unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        if v["message"] == "listening" {
            break v["addr"].as_str().unwrap().to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    let client = Runner::remote(
        &format!("http://{addr}"),
        Some(TOKEN.into()),
        true,
        Some(Duration::from_secs(60)),
    )
    .unwrap();

    // Ten phases; after each, with nothing in flight, the daemon is sampled:
    // what it holds at rest is what could leak.
    let next = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let shed = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut samples: Vec<(f64, f64, f64, f64)> = Vec::new(); // (iterations, RSS KiB, fds, threads)
    let mut peak_rss: f64 = 0.0;
    for phase in 1..=10u64 {
        let upto = runs * phase / 10;
        let mut workers = Vec::new();
        for _ in 0..conc {
            let (client, addr, next, failed, shed) = (
                client.clone(),
                addr.clone(),
                next.clone(),
                failed.clone(),
                shed.clone(),
            );
            workers.push(tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= upto {
                        next.fetch_sub(1, Ordering::SeqCst);
                        return;
                    }
                    match one(&client, &addr, i, docker).await {
                        Ok(()) => {}
                        // A slot still held by a hung-up run: admission shedding, not a failure.
                        Err(e) if e.starts_with("AtCapacity") => {
                            shed.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(e) => {
                            eprintln!("iteration {i}: {e}");
                            failed.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                }
            }));
        }
        while !workers.iter().all(|w| w.is_finished()) {
            peak_rss = peak_rss.max(proc_field(pid, "VmRSS:"));
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        for w in workers {
            w.await.unwrap();
        }
        // Hung-up runs finish their cancellation.
        tokio::time::sleep(Duration::from_secs(1)).await;
        samples.push((
            upto as f64,
            proc_field(pid, "VmRSS:"),
            fds(pid),
            proc_field(pid, "Threads:"),
        ));
    }
    let wall = started.elapsed();
    // Idle blocking threads retire after 10 s.
    tokio::time::sleep(Duration::from_secs(12)).await;
    let end = (
        proc_field(pid, "VmRSS:"),
        fds(pid),
        proc_field(pid, "Threads:"),
    );
    let base = samples[1]; // warm: after the second phase
    let rest: Vec<(f64, f64)> = samples[4..].iter().map(|s| (s.0, s.1)).collect();
    let rss_slope = slope(&rest);
    let peak_threads = samples.iter().map(|s| s.3).fold(0.0, f64::max);

    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let status = child.wait().unwrap();
    let _ = std::fs::remove_file(&grants);
    let leaked = if docker {
        daemon::containers_left(&instance)
    } else {
        0
    };
    let failed = failed.load(Ordering::SeqCst);
    println!(
        "soak[{provider}]: {runs} iterations from {conc} clients in {:.1} s",
        wall.as_secs_f64()
    );
    println!("  failures               {failed}");
    println!("  shed (slot still held) {}", shed.load(Ordering::SeqCst));
    println!(
        "  RSS KiB  warm {:.0}  end {:.0}  ({:+.1}%)  slope over the last six phases {:.3} KiB/iteration",
        base.1,
        end.0,
        (end.0 - base.1) / base.1 * 100.0,
        rss_slope
    );
    println!("  fds      warm {:.0}  end {:.0}", base.2, end.1);
    println!(
        "  threads  warm {:.0}  highest at rest {peak_threads:.0}  end {:.0}",
        base.3, end.2
    );
    println!("  RSS under load peaked at {:.0} MiB", peak_rss / 1024.0);
    println!("  containers left        {leaked}");
    println!("  daemon exit            {status}");
    // Bounds, at rest: fds back to the warm baseline; threads no higher than
    // warm plus a few of tokio's workers; RSS within 10% (or 16 MiB) of warm,
    // and its trend over the last six phases projecting under 4 MiB of growth
    // across them (allocator noise is a few hundred KiB; a leak of 1 KiB per
    // run over a long soak is tens of MiB).
    let window = rest.last().map_or(0.0, |l| l.0) - rest.first().map_or(0.0, |f| f.0);
    let rss_ok = (end.0 <= base.1 * 1.10 || end.0 <= base.1 + 16.0 * 1024.0)
        && rss_slope * window < 4.0 * 1024.0;
    let ok = failed == 0
        && leaked == 0
        && status.success()
        && end.1 <= base.2 + 2.0
        && end.2 <= base.3 + 4.0
        && rss_ok;
    if !ok {
        eprintln!("FAILED: the soak did not end flat and clean");
        std::process::exit(1);
    }
    println!("soak: 1 passed, 0 failed");
}
