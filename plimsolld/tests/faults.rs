//! Fault tests (docs/faults.md): the real plimsolld binary under dockerd
//! loss, its runtime's processes killed (runc shim, runsc sandbox and gofer),
//! client disconnects, SIGTERM, SIGKILL and restart (sessions included), a
//! full docker disk, an image removed underneath it, and its own
//! file-descriptor limit.
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
    command_via(&[], env)
}

/// plimsolld started through `prefix` (e.g. `prlimit --nofile=…`).
fn command_via(prefix: &[&str], env: &[(&str, &str)]) -> Command {
    let mut c = match prefix.split_first() {
        None => Command::new(BIN),
        Some((program, args)) => {
            let mut c = Command::new(program);
            c.args(args).arg(BIN);
            c
        }
    };
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
        Daemon::spawn(command(env))
    }

    /// Starts the given plimsolld command and waits until it listens.
    fn spawn(mut cmd: Command) -> Daemon {
        let mut child = cmd
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
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
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
    // stdout "42\n", base64 on the wire.
    assert_eq!(v["javascript"]["stdout"], "NDIK", "{what}: {v}");
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
    let wasm = Daemon::start(&[("SANDBOX_PROVIDER", "wasm")]);
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
                v["message"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("docker daemon"),
                "round {round} run {i}: the reason names the docker daemon: {v}"
            );
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
        // The wasm tier does not depend on docker: it keeps serving.
        assert_eq!(wasm.readyz(), 200);
        assert_quick_ok("a wasm run while docker is down", wasm.run(QUICK));
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
    docker.assert_none_left("after the faults", Duration::from_secs(20));
}

/// FT3: a client that drops its connection mid-run cancels the run: its
/// container goes, and its admission slot is free for the next request.
#[test]
fn client_disconnect_cancels_run() {
    let _serial = serial();
    let docker = PrivateDocker::start(None);
    let host = docker.host();
    let mut env = docker_env(&host, "runc");
    env.push(("SANDBOX_MAX_CONCURRENT", "1"));
    let d = Daemon::start(&env);
    let body = long_snippet(25);
    let mut s = TcpStream::connect(&d.addr).unwrap();
    let req = format!(
        "POST /plimsoll.v1.SandboxService/Run HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    await_running(&docker, 1);
    let name = docker.plimsoll_containers();
    assert_eq!(name.len(), 1, "{name:?}");
    std::thread::sleep(Duration::from_secs(1));
    let dropped = Instant::now();
    drop(s);
    // With one slot, the next run is admitted only if the dropped run let go.
    std::thread::sleep(Duration::from_millis(200));
    let (status, v) = d.run(QUICK);
    eprintln!(
        "FT3: the next run was answered {:?} after the disconnect: {status}",
        dropped.elapsed()
    );
    assert_quick_ok("the run after a disconnect (one slot)", (status, v));
    let t = Instant::now();
    while docker.plimsoll_containers().contains(&name[0]) {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the dropped run's container is still there"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!(
        "FT3: the dropped run's container was gone {:?} after the disconnect",
        dropped.elapsed()
    );
    assert!(dropped.elapsed() < Duration::from_secs(6));
    docker.assert_none_left("after the faults", Duration::from_secs(20));
}

/// Opens a session; returns its ID.
fn open_session(d: &Daemon) -> String {
    let (s, v) = d.rpc("OpenSession", r#"{"protocol":4}"#);
    assert_eq!(s, 200, "OpenSession: {v}");
    let id = v["sessionId"].as_str().unwrap().to_owned();
    let (s, v) = d.rpc(
        "SessionRun",
        &format!(
            r#"{{"protocol":4,"sessionId":"{id}","javascript":{{"code":"console.log(6*7)"}}}}"#
        ),
    );
    assert_eq!(s, 200, "SessionRun: {v}");
    id
}

fn running_count(d: &PrivateDocker) -> usize {
    let out = d
        .cli()
        .args(["ps", "-q", "--filter", "label=io.plimsoll.role"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).lines().count()
}

/// FT4: SIGTERM with a run and a session in flight: the run is answered,
/// the session closed, the daemon exits 0, and nothing is left.
#[test]
fn sigterm_drains_runs_and_closes_sessions() {
    let _serial = serial();
    let docker = PrivateDocker::start(None);
    let host = docker.host();
    let tmp = docker.dir.join("daemon-tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let tmp_s = tmp.display().to_string();
    let mut env = docker_env(&host, "runc");
    env.extend([("SANDBOX_MAX_SESSIONS", "2"), ("TMPDIR", tmp_s.as_str())]);
    let mut d = Daemon::start(&env);
    let _session = open_session(&d);
    let before = running_count(&docker);
    let run = in_flight(
        &d,
        r#"{"protocol":4,"timeoutMs":30000,"javascript":{"code":"setTimeout(()=>console.log('drained'),4000)"}}"#.into(),
    );
    await_running(&docker, before + 1);
    let term = Instant::now();
    d.signal("-TERM");
    std::thread::sleep(Duration::from_millis(200));
    let ready = d.readyz();
    assert!(
        ready == 0 || ready == 503,
        "/readyz answered {ready} while draining"
    );
    let (s, v, answered) = run.join().unwrap();
    eprintln!(
        "FT4: the in-flight run was answered {:?} after SIGTERM",
        answered.duration_since(term)
    );
    assert_eq!(s, 200, "{v}");
    // stdout "drained\n", base64 on the wire.
    assert_eq!(v["javascript"]["stdout"], "ZHJhaW5lZAo=", "{v}");
    let (status, took) = d.wait_exit(Duration::from_secs(60));
    eprintln!("FT4: plimsolld exited {status} {took:?} after the run was answered");
    assert!(status.success(), "{status}\n{}", d.logs());
    let left = docker.plimsoll_containers();
    assert!(left.is_empty(), "left behind: {left:?}");
    let stray: Vec<_> = std::fs::read_dir(&tmp).unwrap().flatten().collect();
    assert!(stray.is_empty(), "left in TMPDIR: {stray:?}");
    assert!(d.logs().contains("sessions ended"), "{}", d.logs());
}

/// FT5: SIGKILL with a run and a session alive, then a restart: the new
/// daemon removes the leftovers before /readyz first answers 200.
#[test]
fn sigkill_restart_reconciles_before_ready() {
    let _serial = serial();
    let docker = PrivateDocker::start(None);
    let host = docker.host();
    let mut env = docker_env(&host, "runc");
    env.extend([
        ("SANDBOX_MAX_SESSIONS", "2"),
        ("PLIMSOLL_INSTANCE", "plimsoll:faults-ft5"),
    ]);
    let mut d = Daemon::start(&env);
    let session = open_session(&d);
    let before = running_count(&docker);
    let run = in_flight(&d, long_snippet(25));
    await_running(&docker, before + 1);
    let orphans = docker.plimsoll_containers();
    d.signal("-KILL");
    d.wait_exit(Duration::from_secs(10));
    let (s, _, _) = run.join().unwrap();
    assert_eq!(s, 0, "the killed daemon's run has no answer");
    let still: Vec<_> = docker
        .plimsoll_containers()
        .into_iter()
        .filter(|n| orphans.contains(n))
        .collect();
    assert!(
        still.len() >= 2,
        "the run's and session's containers outlive the daemon: {still:?}"
    );
    let t = Instant::now();
    let d2 = Daemon::start(&env);
    let listening = t.elapsed();
    d2.await_readyz(200, Duration::from_secs(30));
    let ready = t.elapsed();
    let left: Vec<_> = docker
        .plimsoll_containers()
        .into_iter()
        .filter(|n| orphans.contains(n))
        .collect();
    eprintln!(
        "FT5: {} leftovers; restarted daemon listening after {listening:?}, ready after {ready:?}; left at ready: {left:?}",
        still.len()
    );
    assert!(left.is_empty(), "left at ready: {left:?}\n{}", d2.logs());
    assert!(ready < Duration::from_secs(30));
    let logs = d2.logs();
    let reconciled = logs.find("reconciled leaked sandboxes").unwrap();
    let listening_at = logs.find("\"listening\"").unwrap();
    assert!(reconciled < listening_at, "reconcile runs before listening");
    // FT15: the session is removed and reported, not re-attached: the log
    // counts it, and a call naming it gets what an unknown session gets.
    assert!(
        logs.lines()
            .any(|l| l.contains("sessions ended by a daemon restart")
                && l.contains("\"sessions\":1")),
        "the restart reports the lost session: {logs}"
    );
    let call = |id: &str| {
        d2.rpc(
            "SessionRun",
            &format!(
                r#"{{"protocol":4,"sessionId":"{id}","javascript":{{"code":"console.log(1)"}}}}"#
            ),
        )
    };
    let (s_old, v_old) = call(&session);
    let (s_unknown, v_unknown) = call("00000000000000000000000000000000");
    eprintln!("FT15: a call naming the old session after the restart: {s_old} {v_old}");
    assert_eq!(s_old, 400, "{v_old}");
    assert_eq!(session_end_reason(&v_old), Some(9), "not_found: {v_old}");
    assert_eq!(
        (s_old, &v_old["code"], session_end_reason(&v_old)),
        (
            s_unknown,
            &v_unknown["code"],
            session_end_reason(&v_unknown)
        ),
        "the old session is refused as an unknown one is"
    );
    assert_quick_ok("a run after the restart", d2.run(QUICK));
}

/// FT7: the docker data root fills up: runs fail fast with an infrastructure
/// error (no retries), the daemon stays up, and runs work once space is back.
#[test]
fn docker_disk_full() {
    let _serial = serial();
    let docker = PrivateDocker::start(Some(900));
    let host = docker.host();
    let d = Daemon::start(&docker_env(&host, "runc"));
    assert_quick_ok("before the disk fills", d.run(QUICK));
    let filler = docker.fill_data_root();
    let body = format!(r#"{{"protocol":4,"javascript":{{"code":"console.error('{MARKER}')"}}}}"#);
    let creates = docker.api_calls("POST", "/containers/create");
    for i in 0..3 {
        let t = Instant::now();
        let (s, v) = d.run(&body);
        eprintln!(
            "FT7: run {i} on a full disk answered in {:?}: {v}",
            t.elapsed()
        );
        assert_infrastructure(&format!("full-disk run {i}"), s, &v);
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "a full-disk run took {:?}",
            t.elapsed()
        );
    }
    // No retry storm: at most one create per run (none once the preflight
    // has seen the full disk and refuses before creating).
    let attempts = docker.api_calls("POST", "/containers/create") - creates;
    eprintln!("FT7: 3 runs on a full disk made {attempts} create calls");
    assert!(attempts <= 3, "at most one create per run on a full disk");
    let (h, _) = http(&d.addr, "GET", "/healthz", "", Duration::from_secs(5));
    assert_eq!(h, 200, "the daemon stays up");
    // The preflight sees the full data root: not ready (cached up to 5 s).
    let not_ready = d.await_readyz(503, Duration::from_secs(10));
    eprintln!("FT7: /readyz 503 {not_ready:?} after the runs on a full disk");
    let (s, v) = d.run(&body);
    assert_infrastructure("a run refused by the full-disk preflight", s, &v);
    assert!(
        v["message"].as_str().unwrap_or_default().contains("free"),
        "the reason says the data root is full: {v}"
    );
    std::fs::remove_file(filler).unwrap();
    let freed = Instant::now();
    let ready = d.await_readyz(200, Duration::from_secs(15));
    eprintln!("FT7: /readyz 200 {ready:?} after space was freed");
    loop {
        let (s, v) = d.run(QUICK);
        if s == 200 {
            assert_quick_ok("after freeing space", (s, v));
            break;
        }
        assert!(
            freed.elapsed() < Duration::from_secs(15),
            "no recovery: {v}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    eprintln!(
        "FT7: runs work again {:?} after space was freed",
        freed.elapsed()
    );
}

/// An image removed under a running daemon: a clear infrastructure error
/// naming the image, readiness 503; the same image loaded again (same ID)
/// brings it back.
#[test]
fn image_removed_under_daemon() {
    let _serial = serial();
    let docker = PrivateDocker::start(None);
    let host = docker.host();
    let d = Daemon::start(&docker_env(&host, "runc"));
    assert_quick_ok("before the removal", d.run(QUICK));
    let id = docker.image_id("plimsoll/snippet:latest").unwrap();
    assert!(
        docker
            .cli()
            .args(["image", "rm", "-f", "plimsoll/snippet:latest"])
            .status()
            .unwrap()
            .success()
    );
    let t = Instant::now();
    let (s, v) = d.run(QUICK);
    eprintln!(
        "FT-image: a run after the removal answered in {:?}: {v}",
        t.elapsed()
    );
    assert_infrastructure("a run without its image", s, &v);
    let m = v["message"]
        .as_str()
        .unwrap_or_default()
        .to_ascii_lowercase();
    assert!(m.contains("image"), "the reason names the image: {v}");
    let not_ready = d.await_readyz(503, Duration::from_secs(10));
    eprintln!("FT-image: /readyz 503 {not_ready:?} after the run");
    docker.load_images();
    assert_eq!(docker.image_id("plimsoll/snippet:latest").unwrap(), id);
    let loaded = Instant::now();
    d.await_readyz(200, Duration::from_secs(15));
    eprintln!(
        "FT-image: /readyz 200 {:?} after the reload",
        loaded.elapsed()
    );
    assert_quick_ok("after the reload", d.run(QUICK));
}

const UPSTREAM_SECRET: &str = "upstream-credential-ft10-0123456789abcdef";

/// A loopback API that misbehaves: `/v1/items/slow` answers after 40 s,
/// `/v1/items/fail` is a 500 echoing the request's headers (the credential
/// included), `/v1/items/busy` a 429. Returns its base URL.
fn bad_upstream() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { break };
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 8192];
                let mut head = Vec::new();
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let (status, body) = if head.starts_with("GET /v1/items/slow") {
                    std::thread::sleep(Duration::from_secs(40));
                    ("200 OK", "late".to_owned())
                } else if head.starts_with("GET /v1/items/fail") {
                    (
                        "500 Internal Server Error",
                        format!("upstream broke; you sent: {head}"),
                    )
                } else {
                    ("429 Too Many Requests", "slow down".to_owned())
                };
                let _ = s.write_all(
                    format!(
                        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nRetry-After: 30\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    )
                    .as_bytes(),
                );
            });
        }
    });
    base
}

/// FT10: a slow (past the per-call timeout), failing (500) and throttling
/// (429) broker upstream: the guest sees clean HTTP errors, the run ends
/// within its deadline, and the credential appears nowhere.
#[test]
fn broker_upstream_faults() {
    let _serial = serial();
    let base = bad_upstream();
    let dir = tempfile::tempdir().unwrap();
    let grants = dir.path().join("grants.json");
    std::fs::write(
        &grants,
        format!(
            r#"{{"profiles":{{"items":{{"base_url":"{base}","allow":["GET /v1/items/*"],"allowed_callers":["*"],"max_calls":10,"token":{{"type":"static","env":"FT10_TOKEN"}}}}}}}}"#
        ),
    )
    .unwrap();
    let grants_s = grants.display().to_string();
    let d = Daemon::start(&[
        ("SANDBOX_PROVIDER", "wasm"),
        ("PLIMSOLL_GRANTS_FILE", grants_s.as_str()),
        ("FT10_TOKEN", UPSTREAM_SECRET),
        ("PLIMSOLL_LOG", "debug"),
    ]);
    let code = "for (const p of ['fail','busy','slow']) { const a = host.get('/v1/items/' + p); console.log(p, a.status, a.body); } console.log('done')";
    let body = serde_json::json!({
        "protocol": 4,
        "timeoutMs": 4000,
        "javascript": {"code": code, "grantProfile": "items"},
    })
    .to_string();
    let t = Instant::now();
    let (s, v) = d.run(&body);
    let took = t.elapsed();
    assert_eq!(s, 200, "{v}");
    let j = &v["javascript"];
    let decode = |k: &str| {
        use std::io::Read as _;
        let b64 = j[k].as_str().unwrap_or_default();
        let mut out = Vec::new();
        let mut dec = base64_reader(b64);
        dec.read_to_end(&mut out).unwrap();
        String::from_utf8_lossy(&out).into_owned()
    };
    let stdout = decode("stdout");
    let stderr = decode("stderr");
    eprintln!("FT10: the run ended in {took:?}: {stdout}");
    assert!(stdout.contains("fail 500"), "{stdout}");
    assert!(stdout.contains("busy 429"), "{stdout}");
    assert!(stdout.contains("slow 504"), "{stdout}");
    assert!(
        stdout.contains("done"),
        "the guest went on after the errors: {stdout}"
    );
    assert!(j["timedOut"].as_bool() != Some(true), "{v}");
    assert!(
        took < Duration::from_millis(4500),
        "past the 4 s deadline: {took:?}"
    );
    for (what, text) in [
        ("stdout", stdout.as_str()),
        ("stderr", stderr.as_str()),
        ("answer", &v.to_string()),
        ("logs", &d.logs()),
    ] {
        assert!(
            !text.contains(UPSTREAM_SECRET),
            "the credential is in the {what}"
        );
    }
}

/// A minimal standard base64 decoder (the test crate has no base64 dependency).
fn base64_reader(s: &str) -> std::io::Cursor<Vec<u8>> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' | b'-' => Some(62),
        b'/' | b'_' => Some(63),
        _ => None,
    };
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0);
    for c in s.bytes().filter_map(val) {
        acc = (acc << 6) | u32::from(c);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    std::io::Cursor::new(out)
}

/// The `SessionEnded` reason number in a Connect error's details, if any.
fn session_end_reason(v: &serde_json::Value) -> Option<u64> {
    let details = v["details"].as_array()?;
    let d = details
        .iter()
        .find(|d| d["type"] == "plimsoll.v1.SessionEnded")?;
    let mut raw = Vec::new();
    base64_reader(d["value"].as_str()?)
        .read_to_end(&mut raw)
        .ok()?;
    // Field 1 (reason), varint: tag 0x08 then one byte for reasons < 128.
    (raw.first() == Some(&0x08)).then(|| raw.get(1).map(|&b| u64::from(b)))?
}

/// The full ID of the one running plimsoll container with `role`.
fn container_id(d: &PrivateDocker, role: &str) -> String {
    let out = d
        .cli()
        .args([
            "ps",
            "--no-trunc",
            "-q",
            "--filter",
            &format!("label=io.plimsoll.role={role}"),
            "--filter",
            "status=running",
        ])
        .output()
        .unwrap();
    let ids: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    assert_eq!(ids.len(), 1, "one running {role} container: {ids:?}");
    ids[0].clone()
}

/// Host processes whose command line mentions `needle`: (pid, argv[0]).
fn processes_naming(needle: &str) -> Vec<(i32, String)> {
    let mut out = Vec::new();
    for p in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = p.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(p.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).into_owned();
        if cmd.contains(needle) {
            let argv0 = cmd.split('\0').next().unwrap_or_default();
            let base = argv0.rsplit('/').next().unwrap_or_default().to_owned();
            out.push((pid, base));
        }
    }
    out
}

/// SIGKILLs the host process named `argv0` that belongs to container `id`;
/// returns its pid.
fn kill_runtime_process(id: &str, argv0: &str) -> i32 {
    let procs = processes_naming(id);
    let Some(&(pid, _)) = procs.iter().find(|(_, a)| a == argv0) else {
        panic!("no {argv0} for container {id}: {procs:?}");
    };
    assert!(
        Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    pid
}

/// Waits until no container and no host process is left of container `id`.
fn await_gone(d: &PrivateDocker, id: &str, what: &str) -> Duration {
    let t = Instant::now();
    loop {
        let out = d.cli().args(["ps", "-aq", "--no-trunc"]).output().unwrap();
        let listed = String::from_utf8_lossy(&out.stdout).contains(id);
        let procs = processes_naming(id);
        if !listed && procs.is_empty() {
            return t.elapsed();
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "{what}: left behind: container listed {listed}, processes {procs:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// FT2: the runtime under a run or a session dies: runc's shim
/// (`containerd-shim-runc-v2`) or gVisor's `runsc-sandbox` / `runsc-gofer`,
/// SIGKILLed on the host. Runs end with an infrastructure error, sessions end
/// typed, nothing is left, and the daemon keeps serving.
#[test]
fn runtime_process_killed() {
    let _serial = serial();
    let docker = PrivateDocker::start(None);
    let host = docker.host();
    let with_sessions = |runtime| {
        let mut env = docker_env(&host, runtime);
        env.push(("SANDBOX_MAX_SESSIONS", "2"));
        Daemon::start(&env)
    };
    let runc = with_sessions("runc");
    let runsc = with_sessions("runsc");
    // Each runtime process under a run (a snippet or a project) and, but
    // for the gofer (the same verdict path as the sandbox), under a session.
    let cases = [
        (&runc, "containerd-shim-runc-v2", "runc", "snippet", true),
        (&runsc, "runsc-sandbox", "runsc", "project", true),
        (&runsc, "runsc-gofer", "runsc", "snippet", false),
    ];
    for (d, target, runtime, run_kind, in_session) in cases {
        {
            let (kind, role) = (run_kind, run_kind);
            let body = if kind == "snippet" {
                long_snippet(20)
            } else {
                long_project(20)
            };
            let run = in_flight(d, body);
            await_running(&docker, 1);
            std::thread::sleep(Duration::from_millis(700));
            let id = container_id(&docker, role);
            let killed = Instant::now();
            kill_runtime_process(&id, target);
            let (s, v, at) = run.join().unwrap();
            let took = at.duration_since(killed);
            eprintln!("FT2 {runtime} {kind}: {target} killed; answered after {took:?}: {s} {v}");
            assert_infrastructure(&format!("{runtime} {kind}, {target} killed"), s, &v);
            assert!(took < Duration::from_secs(10), "answered after {took:?}");
            let gone = await_gone(&docker, &id, &format!("{runtime} {kind}"));
            eprintln!("FT2 {runtime} {kind}: container and processes gone {gone:?} after");
            assert_quick_ok(&format!("{runtime} after {target} killed"), d.run(QUICK));
        }
        if !in_session {
            continue;
        }
        // Under a session: a call in flight when the runtime dies.
        let sid = open_session(d);
        let id = container_id(&docker, "session");
        let call = {
            let addr = d.addr.clone();
            let body = format!(
                r#"{{"protocol":4,"sessionId":"{sid}","timeoutMs":30000,"javascript":{{"code":"console.error('{MARKER}');setTimeout(()=>console.log('finished'),20000)"}}}}"#
            );
            std::thread::spawn(move || {
                let r = http(
                    &addr,
                    "POST",
                    "/plimsoll.v1.SandboxService/SessionRun",
                    &body,
                    Duration::from_secs(120),
                );
                (r, Instant::now())
            })
        };
        std::thread::sleep(Duration::from_millis(1500));
        let killed = Instant::now();
        kill_runtime_process(&id, target);
        let ((s, v), at) = call.join().unwrap();
        let took = at.duration_since(killed);
        eprintln!("FT2 {runtime} session: {target} killed; call answered after {took:?}: {s} {v}");
        assert!(took < Duration::from_secs(10), "answered after {took:?}");
        assert!(!v.to_string().contains(MARKER), "guest stderr leaked: {v}");
        let reason = session_end_reason(&v);
        assert!(
            s != 200 && reason.is_some_and(|r| r != 9),
            "the session ends typed (SessionEnded with its reason): {s} {v}"
        );
        let (s2, v2) = d.rpc(
            "SessionRun",
            &format!(
                r#"{{"protocol":4,"sessionId":"{sid}","javascript":{{"code":"console.log(1)"}}}}"#
            ),
        );
        eprintln!("FT2 {runtime} session: the next call: {s2} {v2}");
        assert!(
            s2 != 200 && session_end_reason(&v2).is_some(),
            "a call on the ended session is refused typed: {s2} {v2}"
        );
        let gone = await_gone(&docker, &id, &format!("{runtime} session"));
        eprintln!("FT2 {runtime} session: container and processes gone {gone:?} after");
        assert_quick_ok(
            &format!("{runtime} after a session's {target}"),
            d.run(QUICK),
        );
    }
    docker.assert_none_left("after the faults", Duration::from_secs(20));
}

/// User plus system CPU ticks (1/100 s) a process has used.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

/// FT13: plimsolld at its descriptor limit (`RLIMIT_NOFILE` 256): idle
/// connections fill it while runs are in flight. Past the cap the listener
/// closes the connection longest without a request in flight for each new
/// one, so runs sent on new connections are served, in-flight runs are
/// answered, the daemon stays under its limit, the accept loop does not spin,
/// and it recovers when the connections close. (Past the cap with every
/// connection busy, a new one gets the typed capacity refusal:
/// `listener::tests::when_every_connection_is_busy_a_new_one_is_refused`.)
#[test]
fn daemon_at_its_fd_limit() {
    let _serial = serial();
    let docker = PrivateDocker::start(None);
    let host = docker.host();
    let mut env = docker_env(&host, "runc");
    env.extend([
        ("SANDBOX_RATE_PER_MIN", "0"),
        ("SANDBOX_PER_KEY_CONCURRENT", "0"),
    ]);
    let d = Daemon::spawn(command_via(&["prlimit", "--nofile=256:256", "--"], &env));
    let pid = d.child.id();
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    assert!(
        limits
            .lines()
            .any(|l| l.starts_with("Max open files") && l.contains(" 256 ")),
        "{limits}"
    );
    // The listening line (logged as the listener starts) names the cap.
    std::thread::sleep(Duration::from_millis(200));
    assert!(d.logs().contains("\"max_connections\":144"), "{}", d.logs());
    let fds = || {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .count()
    };
    let body = r#"{"protocol":4,"timeoutMs":30000,"javascript":{"code":"setTimeout(()=>console.log(6*7),8000)"}}"#;
    let runs: Vec<_> = (0..3).map(|_| in_flight(&d, body.to_owned())).collect();
    await_running(&docker, 3);
    // Fill the descriptor budget with idle connections (past the cap: 144).
    let filled = Instant::now();
    let holders: Vec<TcpStream> = (0..230)
        .filter_map(|_| TcpStream::connect(&d.addr).ok())
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    let held = fds();
    assert!(
        held < 256,
        "the daemon stays under its limit: {held} descriptors"
    );
    let before = cpu_ticks(pid);
    let window = Instant::now();
    std::thread::sleep(Duration::from_secs(2));
    let ticks = cpu_ticks(pid) - before;
    let secs = window.elapsed().as_secs_f64();
    let cpu = ticks as f64 / 100.0 / secs;
    eprintln!(
        "FT13: {} connections opened, {held} descriptors held; plimsolld used {:.1}% of a core over {secs:.1} s at the limit",
        holders.len(),
        cpu * 100.0
    );
    assert!(cpu < 0.2, "the accept loop spins: {:.0}% CPU", cpu * 100.0);
    for _ in 0..5 {
        let t = Instant::now();
        let (s, v) = d.run(QUICK);
        eprintln!(
            "FT13: a run at the limit answered in {:?}: {s}",
            t.elapsed()
        );
        assert_quick_ok("a run at the limit (an idle connection made room)", (s, v));
    }
    for (i, h) in runs.into_iter().enumerate() {
        let (s, v, _) = h.join().unwrap();
        eprintln!("FT13: in-flight run {i} answered: {s}");
        assert_quick_ok(&format!("in-flight run {i} at the limit"), (s, v));
    }
    drop(holders);
    let closed = Instant::now();
    loop {
        let (s, v) = d.run(QUICK);
        if s == 200 {
            assert_quick_ok("after the connections closed", (s, v));
            break;
        }
        assert!(
            closed.elapsed() < Duration::from_secs(10),
            "no recovery after the connections closed: {s} {v}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!(
        "FT13: runs answered again {:?} after the connections closed (filled {:?} before)",
        closed.elapsed(),
        filled.elapsed()
    );
    let (h, _) = http(&d.addr, "GET", "/healthz", "", Duration::from_secs(5));
    assert_eq!(h, 200);
}

/// A memory cgroup (v1) of `limit_mb`, removed on drop.
struct MemoryCgroup(std::path::PathBuf);

impl MemoryCgroup {
    fn new(name: &str, limit_mb: u64) -> MemoryCgroup {
        let root = std::path::Path::new("/sys/fs/cgroup/memory");
        assert!(
            root.join("memory.limit_in_bytes").exists(),
            "FT12 needs the cgroup v1 memory controller at {}",
            root.display()
        );
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("memory.limit_in_bytes"),
            format!("{}", limit_mb << 20),
        )
        .unwrap();
        MemoryCgroup(dir)
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        // Docker removes its children with the containers; wait for that.
        for _ in 0..100 {
            if std::fs::remove_dir(&self.0).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// FT12: host memory pressure. The sandboxes run under a cgroup parent whose
/// memory (600 MiB) is less than four runs' limits (4 x 256 MiB), as on a
/// host whose memory is overcommitted to its sandboxes; four memory bombs
/// that each stay inside their own limit together exhaust it. The kernel
/// kills guests (every guest process has `oom_score_adj` 1000, plimsolld
/// keeps its own), each run is answered (a result or an infrastructure
/// error, never a hang), the daemon keeps serving throughout, and a run after
/// the pressure succeeds with nothing left behind.
#[test]
fn host_memory_pressure_kills_guests_first() {
    let _serial = serial();
    let name = format!("plimsoll-ft12-{}", std::process::id());
    let cgroup = MemoryCgroup::new(&name, 600);
    let mut docker = PrivateDocker::start(None);
    docker.stop_dockerd();
    docker.dockerd_args = vec![format!("--cgroup-parent=/{name}")];
    docker.start_dockerd();
    let host = docker.host();
    let mut env = docker_env(&host, "runc");
    env.push(("SANDBOX_MEMORY_MB", "256"));
    let d = Daemon::start(&env);
    assert_quick_ok("before the pressure", d.run(QUICK));
    let daemon_adj =
        std::fs::read_to_string(format!("/proc/{}/oom_score_adj", d.child.id())).unwrap();
    assert!(
        daemon_adj.trim().parse::<i32>().unwrap() < 1000,
        "plimsolld must not be the OOM killer's first choice: {daemon_adj}"
    );
    // Each bomb holds 230 MiB (inside its own 256 MiB) for 4 s.
    let bomb = r#"{"protocol":4,"timeoutMs":20000,"javascript":{"code":"const a=[];for(let i=0;i<230;i++)a.push(Buffer.alloc(1<<20,1));setTimeout(()=>console.log('held '+a.length),4000)"}}"#;
    let t = Instant::now();
    let answers: Vec<(u16, serde_json::Value, Duration)> = std::thread::scope(|s| {
        let tasks: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    let t = Instant::now();
                    let (st, v) = d.run(bomb);
                    (st, v, t.elapsed())
                })
            })
            .collect();
        // While they press: a guest process's oom_score_adj is 1000, and the
        // daemon answers its health check.
        await_running(&docker, 1);
        let ps = docker
            .cli()
            .args(["ps", "-q", "--filter", "label=io.plimsoll.role=snippet"])
            .output()
            .unwrap();
        let id = String::from_utf8_lossy(&ps.stdout)
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned();
        let pid = docker
            .cli()
            .args(["inspect", "-f", "{{.State.Pid}}", &id])
            .output()
            .unwrap();
        let pid = String::from_utf8_lossy(&pid.stdout).trim().to_owned();
        let adj = std::fs::read_to_string(format!("/proc/{pid}/oom_score_adj"))
            .unwrap_or_else(|e| panic!("reading a running bomb's oom_score_adj (pid {pid}): {e}"));
        assert_eq!(adj.trim(), "1000", "a guest process's oom_score_adj");
        let (h, _) = http(&d.addr, "GET", "/healthz", "", Duration::from_secs(5));
        assert_eq!(h, 200, "the daemon answers under pressure");
        tasks.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let mut held = 0;
    for (st, v, took) in &answers {
        eprintln!("FT12: a bomb answered {st} in {took:?}: {v}");
        assert!(
            *took < Duration::from_secs(30),
            "a bomb's answer took {took:?}"
        );
        match st {
            // "held 230\n", base64 on the wire.
            200 if v["javascript"]["stdout"] == "aGVsZCAyMzAK" => held += 1,
            200 => assert_ne!(
                v["javascript"]["exitCode"].as_i64().unwrap_or(0),
                0,
                "a bomb that did not hold must have been killed: {v}"
            ),
            _ => assert_infrastructure("a bomb under host pressure", *st, v),
        }
    }
    eprintln!(
        "FT12: {held} of 4 bombs held, {} killed; all answered in {:?}",
        4 - held,
        t.elapsed()
    );
    assert!(
        held < 4,
        "the parent cgroup's limit must have killed a guest"
    );
    assert!(d.child.id() > 0);
    let (h, _) = http(&d.addr, "GET", "/readyz", "", Duration::from_secs(10));
    assert_eq!(h, 200, "ready after the pressure");
    assert_quick_ok("after the pressure", d.run(QUICK));
    docker.assert_none_left("after the pressure", Duration::from_secs(20));
    drop(d);
    drop(docker);
    drop(cgroup);
}
