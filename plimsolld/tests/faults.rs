//! Fault tests (docs/faults.md): the real plimsolld binary under dockerd
//! loss, client disconnects, SIGTERM, SIGKILL and restart, a full docker disk
//! and an image removed underneath it.
//!
//! Everything destructive runs against a private containerd + dockerd that
//! each test starts and tears down itself (`support/private_docker.rs`); the
//! host's dockerd is only read from (`docker save`). The tests need root,
//! docker, runsc and the plimsoll images (`.ci/setup-host.sh`,
//! `images/build.sh`); without them they fail, they do not skip. They run one
//! at a time (a process-wide lock): the CI machine has two cores.
#![expect(
    clippy::unwrap_used,
    reason = "a fault test that cannot do its job should fail loudly"
)]

#[path = "support/private_docker.rs"]
mod private_docker;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use private_docker::PrivateDocker;

const BIN: &str = env!("CARGO_BIN_EXE_plimsolld");
/// Written to the guest's stderr by every long run: it must never come back
/// inside an infrastructure error.
const MARKER: &str = "guest-stderr-marker";

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// One plimsolld process.
struct Daemon {
    child: Child,
    addr: String,
    log: Arc<Mutex<Vec<String>>>,
}

fn command(env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(BIN);
    for (k, _) in std::env::vars() {
        if k.starts_with("SANDBOX_") || k.starts_with("PLIMSOLL_") || k == "DOCKER_HOST" {
            c.env_remove(k);
        }
    }
    c.env("PLIMSOLL_ADDR", "127.0.0.1:0")
        .env("PLIMSOLL_METRICS_ADDR", "off")
        .env("PLIMSOLL_LOG_FORMAT", "json")
        .env("PLIMSOLL_INSECURE", "1");
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

impl Daemon {
    /// Starts plimsolld and waits until it listens (after its startup proof
    /// and reconcile).
    fn start(env: &[(&str, &str)]) -> Daemon {
        let mut child = command(env)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
                if v["message"] == "listening" {
                    let _ = tx.send(v["addr"].as_str().unwrap_or_default().to_owned());
                }
                sink.lock().unwrap().push(line);
            }
        });
        let addr = match rx.recv_timeout(Duration::from_secs(180)) {
            Ok(a) => a,
            Err(_) => panic!(
                "plimsolld did not listen: {}",
                log.lock().unwrap().join("\n")
            ),
        };
        Daemon { child, addr, log }
    }

    fn logs(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    fn readyz(&self) -> u16 {
        http(&self.addr, "GET", "/readyz", "", Duration::from_secs(10)).0
    }

    fn run(&self, body: &str) -> (u16, serde_json::Value) {
        http(
            &self.addr,
            "POST",
            "/plimsoll.v1.SandboxService/Run",
            body,
            Duration::from_secs(120),
        )
    }

    fn rpc(&self, method: &str, body: &str) -> (u16, serde_json::Value) {
        http(
            &self.addr,
            "POST",
            &format!("/plimsoll.v1.SandboxService/{method}"),
            body,
            Duration::from_secs(120),
        )
    }

    /// Polls /readyz until it answers `status`; returns how long that took.
    fn await_readyz(&self, status: u16, within: Duration) -> Duration {
        let t = Instant::now();
        loop {
            if self.readyz() == status {
                return t.elapsed();
            }
            assert!(
                t.elapsed() < within,
                "/readyz did not turn {status} within {within:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
    }

    /// Waits for the process to exit; returns its status and how long.
    fn wait_exit(&mut self, within: Duration) -> (std::process::ExitStatus, Duration) {
        let t = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return (s, t.elapsed());
            }
            assert!(
                t.elapsed() < within,
                "plimsolld did not exit within {within:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // SIGTERM first, so its containers go before the private dockerd.
            let _ = Command::new("kill")
                .args(["-TERM", &self.child.id().to_string()])
                .status();
            let t = Instant::now();
            while t.elapsed() < Duration::from_secs(20) {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// One HTTP/1.1 request; returns (status, JSON body or Null). Status 0 means
/// the connection failed.
fn http(
    addr: &str,
    method: &str,
    path: &str,
    body: &str,
    timeout: Duration,
) -> (u16, serde_json::Value) {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return (0, serde_json::Value::Null);
    };
    s.set_read_timeout(Some(timeout)).unwrap();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    if s.write_all(req.as_bytes()).is_err() {
        return (0, serde_json::Value::Null);
    }
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let Some(split) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        return (0, serde_json::Value::Null);
    };
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut payload = raw[split + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        payload = dechunk(&payload);
    }
    (status, serde_json::from_slice(&payload).unwrap_or_default())
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = b.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let n = usize::from_str_radix(String::from_utf8_lossy(&b[..eol]).trim(), 16).unwrap_or(0);
        if n == 0 || b.len() < eol + 2 + n {
            return out;
        }
        out.extend_from_slice(&b[eol + 2..eol + 2 + n]);
        b = &b[(eol + 4 + n).min(b.len())..];
    }
}

/// A snippet that writes [`MARKER`] to stderr, then sleeps `secs`.
fn long_snippet(secs: u32) -> String {
    format!(
        r#"{{"protocol":4,"timeoutMs":30000,"javascript":{{"code":"console.error('{MARKER}');setTimeout(()=>console.log('finished'),{}000)"}}}}"#,
        secs
    )
}

/// A one-step project that writes [`MARKER`] to stderr, then sleeps `secs`.
fn long_project(secs: u32) -> String {
    format!(
        r#"{{"protocol":4,"timeoutMs":30000,"project":{{"steps":["node main.js"],"files":[{{"path":"main.js","content":"console.error('{MARKER}');setTimeout(()=>console.log('finished'),{}000)"}}]}}}}"#,
        secs
    )
}

const QUICK: &str = r#"{"protocol":4,"javascript":{"code":"console.log(6*7)"}}"#;

/// The daemon environment for a docker provider on `docker`.
fn docker_env<'a>(docker: &'a str, runtime: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("SANDBOX_PROVIDER", "docker"),
        ("SANDBOX_DOCKER_RUNTIME", runtime),
        ("DOCKER_HOST", docker),
    ]
}

/// Waits until `n` plimsoll containers run on `d`.
fn await_running(d: &PrivateDocker, n: usize) {
    let t = Instant::now();
    loop {
        let out = d
            .cli()
            .args([
                "ps",
                "--filter",
                "label=io.plimsoll.role",
                "--filter",
                "status=running",
                "-q",
            ])
            .output()
            .unwrap();
        let running = String::from_utf8_lossy(&out.stdout).lines().count();
        if running >= n {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "only {running} of {n} runs' containers started"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Asserts an answer is an infrastructure error (Connect `internal`), not a
/// result, and carries nothing of the guest's output.
fn assert_infrastructure(what: &str, status: u16, v: &serde_json::Value) {
    assert_eq!(
        (status, v["code"].as_str()),
        (500, Some("internal")),
        "{what}: expected an infrastructure error, got {status} {v}"
    );
    let text = v.to_string();
    assert!(
        !text.contains(MARKER),
        "{what}: the guest's stderr leaked: {v}"
    );
    assert!(
        v.get("result").is_none() && v.get("exitCode").is_none(),
        "{what}: {v}"
    );
}

/// Asserts a successful QUICK run.
fn assert_quick_ok(what: &str, (status, v): (u16, serde_json::Value)) {
    assert_eq!(status, 200, "{what}: {v}");
    let text = v.to_string();
    assert!(text.contains("42"), "{what}: {v}");
}

fn in_flight(
    d: &Daemon,
    body: String,
) -> std::thread::JoinHandle<(u16, serde_json::Value, Instant)> {
    let addr = d.addr.clone();
    std::thread::spawn(move || {
        let (s, v) = http(
            &addr,
            "POST",
            "/plimsoll.v1.SandboxService/Run",
            &body,
            Duration::from_secs(120),
        );
        (s, v, Instant::now())
    })
}

/// FT1: dockerd dies (SIGKILL, then a graceful stop) while runc and runsc
/// snippets and projects are in flight.
#[test]
fn dockerd_lost_mid_run() {
    let _serial = serial();
    let mut docker = PrivateDocker::start(None);
    let host = docker.host();
    let runc = Daemon::start(&docker_env(&host, "runc"));
    let runsc = Daemon::start(&docker_env(&host, "runsc"));
    for (round, signal) in [(1, "-KILL"), (2, "-TERM")] {
        let runs: Vec<_> = [&runc, &runsc]
            .into_iter()
            .flat_map(|d| {
                [
                    in_flight(d, long_snippet(20)),
                    in_flight(d, long_project(20)),
                ]
            })
            .collect();
        await_running(&docker, 4);
        std::thread::sleep(Duration::from_millis(500));
        let killed = Instant::now();
        if signal == "-KILL" {
            docker.kill_dockerd();
        } else {
            docker.stop_dockerd();
        }
        for (i, h) in runs.into_iter().enumerate() {
            let (s, v, at) = h.join().unwrap();
            let took = at.duration_since(killed);
            eprintln!("FT1 round {round} ({signal}): in-flight run {i} ended after {took:?}: {v}");
            assert_infrastructure(&format!("round {round} run {i}"), s, &v);
            assert!(
                took < Duration::from_secs(10),
                "run {i} took {took:?} to fail"
            );
        }
        for d in [&runc, &runsc] {
            let detect = d.await_readyz(503, Duration::from_secs(10));
            eprintln!(
                "FT1 round {round}: /readyz 503 {:?} after the loss",
                killed.elapsed().max(detect)
            );
            let t = Instant::now();
            let (s, v) = d.run(QUICK);
            eprintln!(
                "FT1 round {round}: a new run while docker is down failed in {:?}",
                t.elapsed()
            );
            assert_infrastructure("a run while docker is down", s, &v);
            assert!(
                t.elapsed() < Duration::from_secs(2),
                "a run while down took {:?}",
                t.elapsed()
            );
        }
        std::thread::sleep(Duration::from_secs(2));
        let up = docker.start_dockerd();
        let back = Instant::now();
        for d in [&runc, &runsc] {
            let ready = d.await_readyz(200, Duration::from_secs(15));
            eprintln!(
                "FT1 round {round}: dockerd answered after {up:?}; /readyz 200 {:?} after that",
                back.elapsed().max(ready)
            );
        }
        // What the loss left is reconciled on recovery, not a minute later.
        let t = Instant::now();
        loop {
            let left = docker.plimsoll_containers();
            if left.is_empty() {
                eprintln!(
                    "FT1 round {round}: leftovers reconciled {:?} after ready",
                    t.elapsed()
                );
                break;
            }
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "leftovers not reconciled: {left:?}\n{}\n{}",
                runc.logs(),
                runsc.logs()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
        assert_quick_ok("runc after recovery", runc.run(QUICK));
        assert_quick_ok("runsc after recovery", runsc.run(QUICK));
    }
    // Round 3: docker itself kills the containers while docker stays up (an
    // operator's `docker kill`, or a restart's cleanup that answers before
    // the run looks). Docker's kill is not the guest's exit: infrastructure.
    let runs: Vec<_> = [&runc, &runsc]
        .into_iter()
        .flat_map(|d| {
            [
                in_flight(d, long_snippet(20)),
                in_flight(d, long_project(20)),
            ]
        })
        .collect();
    await_running(&docker, 4);
    std::thread::sleep(Duration::from_millis(500));
    let out = docker
        .cli()
        .args(["ps", "-q", "--filter", "label=io.plimsoll.role"])
        .output()
        .unwrap();
    let ids: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let killed = Instant::now();
    assert!(
        docker
            .cli()
            .arg("kill")
            .args(&ids)
            .status()
            .unwrap()
            .success()
    );
    for (i, h) in runs.into_iter().enumerate() {
        let (s, v, at) = h.join().unwrap();
        let took = at.duration_since(killed);
        eprintln!("FT1 round 3 (docker kill): in-flight run {i} ended after {took:?}: {v}");
        assert_infrastructure(&format!("round 3 run {i}"), s, &v);
        assert!(
            v["message"].as_str().unwrap_or_default().contains("docker"),
            "round 3 run {i}: the reason names docker: {v}"
        );
        assert!(
            took < Duration::from_secs(10),
            "run {i} took {took:?} to fail"
        );
    }
    assert_quick_ok("runc after docker kill", runc.run(QUICK));
    assert_quick_ok("runsc after docker kill", runsc.run(QUICK));
    assert!(docker.plimsoll_containers().is_empty());
}
