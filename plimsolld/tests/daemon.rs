//! plimsolld as a process: strict startup, the HTTP edge, and shutdown.
#![expect(
    clippy::unwrap_used,
    reason = "a test helper that cannot do its job should fail the test loudly"
)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plimsolld");

#[path = "support/spawn.rs"]
mod spawn;

fn command(env: &[(&str, &str)]) -> Command {
    spawn::command(BIN, env)
}

/// Runs a daemon expected to refuse to start; returns (exit code, stderr).
fn refuses(env: &[(&str, &str)]) -> (i32, String) {
    let out = command(env).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

struct Daemon {
    child: Child,
    addr: String,
    metrics: String,
}

impl Daemon {
    fn start(env: &[(&str, &str)]) -> Daemon {
        let (child, addr, metrics) = spawn::spawn_listening(command(env));
        Daemon {
            child,
            addr,
            metrics,
        }
    }

    /// Sends one raw HTTP/1.1 request; returns (status, headers lowercased, body).
    fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> (u16, Vec<(String, String)>, Vec<u8>) {
        let mut s = TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        s.write_all(req.as_bytes()).unwrap();
        let _ = s.write_all(body);
        let mut raw = Vec::new();
        let _ = s.read_to_end(&mut raw);
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("no header end");
        let head = String::from_utf8_lossy(&raw[..split]).into_owned();
        let mut lines = head.lines();
        let status = lines
            .next()
            .unwrap()
            .split(' ')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let hs = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        (status, hs, raw[split + 4..].to_vec())
    }

    fn rpc(
        &self,
        method: &str,
        extra: &[(&str, &str)],
        body: &str,
    ) -> (u16, Vec<(String, String)>, serde_json::Value) {
        let mut h = vec![("Content-Type", "application/json")];
        h.extend_from_slice(extra);
        let (s, hs, b) = self.send(
            "POST",
            &format!("/plimsoll.v1.SandboxService/{method}"),
            &h,
            body.as_bytes(),
        );
        (s, hs, serde_json::from_slice(&b).unwrap_or_default())
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn header<'a>(hs: &'a [(String, String)], name: &str) -> Vec<&'a str> {
    hs.iter()
        .filter(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .collect()
}

#[test]
fn startup_is_strict_and_names_the_variable() {
    let cases: &[(&[(&str, &str)], &str)] = &[
        (&[("SANDBOX_PROVIDER", "magic")], "SANDBOX_PROVIDER"),
        (
            &[("SANDBOX_MIN_ISOLATION", "strong")],
            "SANDBOX_MIN_ISOLATION",
        ),
        (
            &[("SANDBOX_MIN_ISOLATION", "process")],
            "SANDBOX_MIN_ISOLATION",
        ),
        (&[("PLIMSOLL_TOKEN", "too-short")], "PLIMSOLL_TOKEN"),
        (&[("PLIMSOLL_ADDR", "everywhere")], "PLIMSOLL_ADDR"),
        (&[("PLIMSOLL_INSECURE", "maybe")], "PLIMSOLL_INSECURE"),
        (&[("PLIMSOLL_LOG_FORMAT", "yaml")], "PLIMSOLL_LOG_FORMAT"),
        (&[("SANDBOX_MEMORY_MB", "lots")], "SANDBOX_MEMORY_MB"),
        (&[("SANDBOX_PIDS", "64")], "SANDBOX_PIDS"),
    ];
    for (env, var) in cases {
        let (code, stderr) = refuses(env);
        assert_ne!(code, 0, "{env:?} started");
        assert!(stderr.contains(var), "{env:?}: {stderr}");
    }
    let (code, stderr) = refuses(&[("PLIMSOLL_TOKEN", "x")]);
    assert!(
        code != 0 && !stderr.contains("PLIMSOLL_TOKEN: x"),
        "the token leaked: {stderr}"
    );
    let out = command(&[]).arg("--serve").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let version = command(&[]).arg("--version").output().unwrap();
    assert!(version.status.success());
    let version = String::from_utf8(version.stdout).unwrap();
    let commit = version
        .split("(commit ")
        .nth(1)
        .and_then(|r| r.split(';').next())
        .unwrap_or_default();
    assert!(
        version.starts_with(concat!(
            "plimsolld ",
            env!("CARGO_PKG_VERSION"),
            " (commit "
        )) && (commit == "unknown"
            || commit.trim_end_matches("-dirty").len() == 12
                && commit
                    .trim_end_matches("-dirty")
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit()))
            && version.contains("providers: disabled, wasm, docker"),
        "{version}"
    );
    let help = command(&[]).arg("-h").output().unwrap();
    assert!(help.status.success());
    let text = String::from_utf8(help.stdout).unwrap();
    for v in [
        "SANDBOX_PROVIDER",
        "SANDBOX_MIN_ISOLATION",
        "PLIMSOLL_TOKEN",
        "PLIMSOLL_CLIENTS_FILE",
        "PLIMSOLL_ADDR",
    ] {
        assert!(text.contains(v), "-h lacks {v}");
    }
}

const RID: &str = "0123456789abcdef0123456789abcdef";

#[test]
fn the_edge_binds_answers_and_marks_refusals() {
    let d = Daemon::start(&[]);
    let (s, _, b) = d.send("GET", "/healthz", &[], b"");
    assert_eq!((s, b.as_slice()), (200, &b"ok"[..]));
    let (s, _, b) = d.send("GET", "/readyz", &[], b"");
    assert_eq!((s, b.as_slice()), (200, &b"ready"[..]));

    // Answer binding: one well-formed id is echoed on success and on every error.
    let (s, hs, v) = d.rpc("Describe", &[("Plimsoll-Request-Id", RID)], "{}");
    assert_eq!((s, header(&hs, "plimsoll-request-id")), (200, vec![RID]));
    assert_eq!(
        (v["sandbox"].as_str(), v["protocol"].as_i64()),
        (Some("disabled"), Some(4))
    );
    let (_, hs, _) = d.rpc("Nope", &[("Plimsoll-Request-Id", RID)], "{}");
    assert_eq!(header(&hs, "plimsoll-request-id"), vec![RID]);
    let (_, hs, _) = d.rpc("Describe", &[("Plimsoll-Request-Id", "ABC")], "{}");
    assert!(header(&hs, "plimsoll-request-id").is_empty());
    let (_, hs, _) = d.rpc(
        "Describe",
        &[("Plimsoll-Request-Id", RID), ("Plimsoll-Request-Id", RID)],
        "{}",
    );
    assert!(header(&hs, "plimsoll-request-id").is_empty());

    // Unknown procedure: 404, unsupported.
    let (s, hs, v) = d.rpc("RunV2", &[], "{}");
    assert_eq!(
        (s, header(&hs, "plimsoll-not-dispatched")),
        (404, vec!["unsupported"])
    );
    assert_eq!(v["code"], "unimplemented");

    // Edge refusals before the handler: marked `request`.
    let (s, hs, v) = d.send(
        "POST",
        "/plimsoll.v1.SandboxService/Run",
        &[("Content-Type", "text/plain")],
        b"{}",
    );
    assert_eq!(
        (s, header(&hs, "plimsoll-not-dispatched")),
        (415, vec!["request"])
    );
    assert!(!v.is_empty());
    let big = vec![b' '; 8 * 1024 * 1024 + 1];
    let (s, hs, b) = d.send(
        "POST",
        "/plimsoll.v1.SandboxService/Run",
        &[("Content-Type", "application/json")],
        &big,
    );
    let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
    assert_eq!(
        (
            s,
            header(&hs, "plimsoll-not-dispatched"),
            v["code"].as_str()
        ),
        (413, vec!["request"], Some("resource_exhausted"))
    );

    // Handler refusals carry the binary NotDispatched detail.
    let detail = |v: &serde_json::Value| {
        v["details"][0]["value"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let (s, _, v) = d.rpc("Run", &[], r#"{"javascript":{"code":"1"}}"#);
    assert_eq!(
        (s, v["code"].as_str(), detail(&v).as_str()),
        (400, Some("invalid_argument"), "CAM=")
    );
    let (s, _, v) = d.rpc("Run", &[], r#"{"protocol":3,"javascript":{"code":"1"}}"#);
    assert_eq!(
        (s, v["code"].as_str(), detail(&v).as_str()),
        (501, Some("unimplemented"), "CAM=")
    );
    let (s, _, v) = d.rpc(
        "Run",
        &[],
        r#"{"protocol":4,"protocol":4,"javascript":{"code":"1"}}"#,
    );
    assert_eq!((s, detail(&v).as_str()), (400, "CAE="));
    let (s, _, v) = d.rpc(
        "Run",
        &[],
        r#"{"protocol":4,"cell":{"language":"python","code":"1"}}"#,
    );
    assert_eq!((s, detail(&v).as_str()), (400, "CAE="));
    let (s, _, v) = d.rpc("Run", &[], r#"{"protocol":4,"javascript":{"code":"1"}}"#);
    assert_eq!(
        (s, v["code"].as_str(), detail(&v).as_str()),
        (400, Some("failed_precondition"), "CAQ=")
    );

    // An unknown session: SessionEnded{NOT_FOUND} plus the not-dispatched mark.
    let (s, _, v) = d.rpc("SessionRun", &[], r#"{"protocol":4,"sessionId":"00112233445566778899aabbccddeeff","javascript":{"code":"1"}}"#);
    assert_eq!((s, v["code"].as_str()), (400, Some("failed_precondition")));
    let types: Vec<&str> = v["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        vec!["plimsoll.v1.NotDispatched", "plimsoll.v1.SessionEnded"]
    );
}

#[test]
fn sigterm_drains_and_exits_cleanly() {
    let mut d = Daemon::start(&[]);
    let (s, _, _) = d.rpc("Describe", &[], "{}");
    assert_eq!(s, 200);
    let pid = d.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = d.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn metrics_listener_serves_prometheus_text() {
    let d = Daemon::start(&[]);
    // A refused run is not a run, and not an infrastructure failure.
    let (s, _, _) = d.rpc("Run", &[], r#"{"protocol":4,"javascript":{"code":"1"}}"#);
    assert_eq!(s, 400);
    let m = Daemon {
        child: Command::new("true").spawn().unwrap(),
        addr: d.metrics.clone(),
        metrics: String::new(),
    };
    let (s, hs, body) = m.send("GET", "/metrics", &[], b"");
    let text = String::from_utf8(body).unwrap();
    assert_eq!(s, 200, "{text}");
    assert_eq!(
        header(&hs, "content-type"),
        ["application/openmetrics-text; version=1.0.0; charset=utf-8"]
    );
    assert!(text.ends_with("# EOF\n"), "{text}");
    for line in [
        "plimsoll_runs_total 0",
        "plimsoll_runs_failed_total 0",
        "plimsoll_inflight 0",
        "plimsoll_shed_total{reason=\"at_capacity\"} 0",
        "plimsoll_shed_total{reason=\"rate\"} 0",
        "plimsoll_provider_ready{provider=\"disabled\"} 1",
        "# TYPE plimsoll_run_duration_seconds histogram",
        "provider=\"disabled\",isolation=\"none\"",
        concat!(
            "plimsoll_build_info{version=\"",
            env!("CARGO_PKG_VERSION"),
            "\",commit=\""
        ),
        "providers=\"disabled,wasm,docker,e2b,dockercloud,openshell\"",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    let (s, _, _) = m.send("GET", "/other", &[], b"");
    assert_eq!(s, 404);
}

/// The samples of an OpenMetrics text: `name{labels}` (labels as written) → value.
fn samples(text: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').unwrap();
            (series.to_owned(), value.parse().unwrap())
        })
        .collect()
}

/// The sum of every sample whose series starts with `name{` or is `name`,
/// and holds every one of `labels`.
fn value(samples: &[(String, f64)], name: &str, labels: &[&str]) -> f64 {
    samples
        .iter()
        .filter(|(s, _)| s == name || s.starts_with(&format!("{name}{{")))
        .filter(|(s, _)| labels.iter().all(|l| s.contains(l)))
        .map(|(_, v)| v)
        .sum()
}

#[test]
fn metrics_after_real_runs_hold_durations_sheds_and_the_process() {
    // A burst of 4 and one more a minute: the fifth run is shed by the rate limit.
    let d = Daemon::start(&[
        ("SANDBOX_PROVIDER", "wasm"),
        ("PLIMSOLL_INSECURE", "1"),
        ("SANDBOX_RATE_PER_MIN", "1"),
        ("SANDBOX_RATE_BURST", "4"),
    ]);
    let run = |body: &str| d.rpc("Run", &[], body);
    for _ in 0..2 {
        let (s, _, b) = run(r#"{"protocol":4,"javascript":{"code":"console.log(1)"}}"#);
        assert_eq!(s, 200, "{b}");
    }
    let (s, _, b) = run(r#"{"protocol":4,"javascript":{"code":"throw new Error('no')"}}"#);
    assert_eq!(s, 200, "{b}");
    assert_ne!(b["javascript"]["exitCode"], serde_json::Value::Null, "{b}");
    let (s, _, b) = run(r#"{"protocol":4,"timeoutMs":300,"javascript":{"code":"for(;;){}"}}"#);
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["javascript"]["timedOut"], true, "{b}");
    let (s, _, b) = run(r#"{"protocol":4,"javascript":{"code":"1"}}"#);
    assert_eq!(s, 429, "{b}");

    let m = Daemon {
        child: Command::new("true").spawn().unwrap(),
        addr: d.metrics.clone(),
        metrics: String::new(),
    };
    let (s, _, body) = m.send("GET", "/metrics", &[], b"");
    assert_eq!(s, 200);
    let text = String::from_utf8(body).unwrap();
    let all = samples(&text);
    let v = |name: &str, labels: &[&str]| value(&all, name, labels);
    assert_eq!(v("plimsoll_runs_total", &[]), 4.0, "{text}");
    assert_eq!(v("plimsoll_runs_failed_total", &[]), 0.0);
    assert_eq!(v("plimsoll_shed_total", &["reason=\"rate\""]), 1.0);
    assert_eq!(v("plimsoll_inflight", &[]), 0.0);
    assert_eq!(v("plimsoll_provider_ready", &["provider=\"wasm\""]), 1.0);
    assert_eq!(v("plimsoll_sessions_open", &[]), 0.0);
    let series = |outcome: &str| {
        [
            "tier=\"process\"".to_owned(),
            "kind=\"snippet\"".to_owned(),
            format!("outcome=\"{outcome}\""),
        ]
    };
    for (outcome, runs) in [("ok", 2.0), ("guest_failed", 1.0), ("timed_out", 1.0)] {
        let l = series(outcome);
        let l: Vec<&str> = l.iter().map(String::as_str).collect();
        let count = v("plimsoll_run_duration_seconds_count", &l);
        assert_eq!(count, runs, "{outcome}: {text}");
        let mut buckets: Vec<(f64, f64)> = all
            .iter()
            .filter(|(s, _)| {
                s.starts_with("plimsoll_run_duration_seconds_bucket{")
                    && l.iter().all(|x| s.contains(x))
            })
            .map(|(s, n)| {
                let le = s.split("le=\"").nth(1).unwrap().split('"').next().unwrap();
                (le.parse::<f64>().unwrap_or(f64::INFINITY), *n)
            })
            .collect();
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert_eq!(buckets.len(), 16, "{buckets:?}");
        assert!(
            buckets.windows(2).all(|w| w[0].1 <= w[1].1),
            "cumulative: {buckets:?}"
        );
        assert_eq!(buckets.last().unwrap(), &(f64::INFINITY, count));
        let sum = v("plimsoll_run_duration_seconds_sum", &l);
        assert!(sum > 0.0 && sum < 60.0, "{outcome}: sum {sum}");
    }
    // The timed-out run took at least its budget: nothing at or below 0.25 s.
    let l = series("timed_out");
    let l: Vec<&str> = l.iter().map(String::as_str).collect();
    let mut le = l.clone();
    le.push("le=\"0.25\"");
    assert_eq!(v("plimsoll_run_duration_seconds_bucket", &le), 0.0);
    // The refused run was never dispatched, so never timed.
    assert_eq!(v("plimsoll_run_duration_seconds_count", &[]), 4.0);
    // Where the dispatched runs' time went: every phase of the wasm tier,
    // once per run (the timed-out run ran to its deadline and was collected).
    for phase in ["admitted", "acquired", "started", "running", "collected"] {
        let p = format!("phase=\"{phase}\"");
        let l = ["tier=\"process\"", p.as_str()];
        assert_eq!(
            v("plimsoll_run_phase_seconds_count", &l),
            4.0,
            "{phase}: {text}"
        );
    }
    assert!(
        !text.contains("phase=\"cleaned_up\""),
        "the wasm tier marks no cleanup: {text}"
    );
    // The process metrics, in their standard names.
    assert!(v("process_resident_memory_bytes", &[]) > 1e6);
    assert!(v("process_open_fds", &[]) >= 3.0);
    assert!(v("process_cpu_seconds_total", &[]) > 0.0);
    assert!(v("process_start_time_seconds", &[]) > 1.6e9);
}

#[tokio::test]
async fn the_rust_remote_client_gets_typed_refusals() {
    use plimsoll_core::client::{Runner, SessionOptions};
    use plimsoll_core::request::{JavaScriptRun, Payload, Request};
    use plimsoll_core::{ErrorCode, Refusal};
    use tokio_util::sync::CancellationToken;

    let token = "t".repeat(40);
    let d = Daemon::start(&[("PLIMSOLL_TOKEN", &token)]);
    let url = format!("http://{}", d.addr);
    let c = Runner::remote(&url, Some(token.clone()), false, None).unwrap();
    let info = c.describe().await.unwrap();
    assert_eq!(
        (info.sandbox.as_str(), info.isolation.as_str()),
        ("disabled", "none")
    );
    let js = |code: &str| {
        Request::new(Payload::JavaScript(JavaScriptRun {
            code: code.into(),
            grant_profile: String::new(),
        }))
    };

    let e = c.run(js("1"), CancellationToken::new()).await.unwrap_err();
    assert_eq!(
        (e.code(), e.not_dispatched()),
        (ErrorCode::Disabled, Some(Refusal::Unsupported))
    );
    let mut floored = js("1");
    floored.envelope.minimum_isolation = "vm".into();
    let e = c.run(floored, CancellationToken::new()).await.unwrap_err();
    assert_eq!(
        (e.code(), e.not_dispatched()),
        (ErrorCode::InsufficientIsolation, Some(Refusal::Isolation))
    );
    let e = c.open_session(SessionOptions::default()).await.unwrap_err();
    assert_eq!(
        (e.code(), e.not_dispatched()),
        (ErrorCode::Disabled, Some(Refusal::Unsupported))
    );
    // Refused locally, before anything is sent.
    let e = c.run(js(""), CancellationToken::new()).await.unwrap_err();
    assert_eq!(
        (e.code(), e.not_dispatched()),
        (ErrorCode::InvalidRequest, Some(Refusal::Request))
    );

    let wrong = Runner::remote(&url, Some("w".repeat(40)), false, None).unwrap();
    let e = wrong.describe().await.unwrap_err();
    assert_eq!(
        (e.code(), e.not_dispatched()),
        (ErrorCode::Unauthenticated, Some(Refusal::Permission))
    );
    assert!(Runner::remote("http://example.com", None, false, None).is_err());
}

#[test]
fn sigterm_lets_an_in_flight_run_finish() {
    let mut d = Daemon::start(&[("SANDBOX_PROVIDER", "wasm"), ("PLIMSOLL_INSECURE", "1")]);
    let addr = d.addr.clone();
    let run = std::thread::spawn(move || {
        let probe = Daemon {
            child: Command::new("true").spawn().unwrap(),
            addr,
            metrics: String::new(),
        };
        probe.rpc(
            "Run",
            &[],
            r#"{"protocol":4,"timeoutMs":10000,"javascript":{"code":"const t=Date.now();while(Date.now()-t<1500){};console.log('finished')"}}"#,
        )
    });
    std::thread::sleep(Duration::from_millis(400));
    let pid = d.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let (status, _, body) = run.join().unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["javascript"]["stdout"], "ZmluaXNoZWQK",
        "the run finished: {body}"
    );
    assert_eq!(d.child.wait().unwrap().code(), Some(0));
}

/// `plimsolld --check` on this host: the docker provider passes; a missing
/// docker socket fails with the reason; the wasm provider passes.
#[test]
fn check_reports_the_host() {
    let out = command(&[("SANDBOX_PROVIDER", "docker")])
        .args(["--check", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{v:#}");
    assert_eq!(
        (v["provider"].as_str(), v["ready"].as_bool()),
        (Some("docker"), Some(true))
    );
    let checks = v["checks"].as_array().unwrap();
    for name in [
        "daemon",
        "runtime runc",
        "runtime runsc",
        "snippet image",
        "startup proof",
    ] {
        let c = checks
            .iter()
            .find(|c| c["check"] == name)
            .unwrap_or_else(|| panic!("no {name}: {v:#}"));
        assert_ne!(c["level"], "fail", "{c}");
    }
    assert!(
        checks
            .iter()
            .all(|c| ["ok", "warn", "fail"].contains(&c["level"].as_str().unwrap()))
    );
    // Each runtime's wall, part by part, and the known escapes that match it:
    // the same as the advisory list gives for what the runtime reports when
    // this test asks it directly.
    let mut identities = Vec::new();
    for rt in ["runc", "runsc"] {
        let c = checks
            .iter()
            .find(|c| c["check"] == format!("wall {rt}"))
            .unwrap_or_else(|| panic!("no wall {rt}: {v:#}"));
        assert_eq!(c["level"], "ok", "{c}");
        let wall: plimsoll_core::wall::Wall = serde_json::from_value(c["wall"].clone()).unwrap();
        assert_eq!(
            c["wall"]["identity"].as_str(),
            Some(wall.identity().as_str())
        );
        identities.push(wall.identity());
        let names: Vec<&str> = wall.parts.iter().map(|p| p.name.as_str()).collect();
        for want in [
            "host kernel",
            "docker engine",
            "seccomp profile",
            "image snippet (plimsoll/snippet:latest)",
            "image project (plimsoll/project:latest)",
        ] {
            assert!(names.contains(&want), "{want}: {names:?}");
        }
        let part = wall
            .parts
            .iter()
            .find(|p| p.name.starts_with(&format!("oci runtime {rt} (")))
            .unwrap_or_else(|| panic!("{names:?}"));
        let path = part.name.trim_end_matches(')').rsplit('(').next().unwrap();
        let asked = Command::new(path).arg("--version").output().unwrap();
        let asked: Vec<String> = String::from_utf8_lossy(&asked.stdout)
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect();
        assert_eq!(part.version, asked.join("; "));
        let expected = plimsoll_core::advisory::assess(
            plimsoll_core::wall::Wall::default().part(&part.name, &part.version),
            &[],
        );
        let mut flagged: Vec<&str> = checks
            .iter()
            .filter_map(|c| {
                let name = c["check"].as_str()?;
                name.strip_prefix("advisory ")?
                    .strip_suffix(&format!(" {rt}"))
            })
            .collect();
        flagged.sort_unstable();
        let mut want: Vec<&str> = expected.advisories.iter().map(|f| f.id.as_str()).collect();
        want.sort_unstable();
        assert_eq!(flagged, want, "{rt}: {v:#}");
        // These machines' runc (Debian's 1.1.5) and runsc (20221219) both
        // predate fixes on the list: the doctor names them.
        assert!(!flagged.is_empty(), "{rt}: no advisory flagged: {v:#}");
        for f in &expected.advisories {
            let c = checks
                .iter()
                .find(|c| c["check"] == format!("advisory {} {rt}", f.id))
                .unwrap();
            // Ready means none of them refuses the configured runtime.
            assert_eq!(c["level"], "warn", "{c}");
            assert!(c["detail"].as_str().unwrap().contains(&f.advisory), "{c}");
        }
    }
    assert_ne!(identities[0], identities[1]);
    // An advisory the list does not know is refused, not silently accepted.
    let out = command(&[
        ("SANDBOX_PROVIDER", "docker"),
        ("SANDBOX_ACCEPT_ADVISORIES", "CVE-2024-2162"),
    ])
    .args(["--check", "--json"])
    .output()
    .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{v}");
    let e = v["error"].as_str().unwrap();
    assert!(
        e.contains("SANDBOX_ACCEPT_ADVISORIES")
            && e.contains("\"CVE-2024-2162\" is not a known advisory"),
        "{e}"
    );

    let out = command(&[
        ("SANDBOX_PROVIDER", "docker"),
        (
            "DOCKER_HOST",
            "unix:///nonexistent/plimsoll-check/docker.sock",
        ),
    ])
    .arg("--check")
    .output()
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let line = text.lines().find(|l| l.starts_with("fail")).unwrap();
    assert!(
        line.contains("daemon") && line.contains("/nonexistent/plimsoll-check/docker.sock"),
        "{line}"
    );
    assert!(text.contains("not ready"), "{text}");

    let out = command(&[("SANDBOX_PROVIDER", "wasm")])
        .arg("--check")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("ok") && l.contains("wasm") && l.contains("startup proof")),
        "{text}"
    );
}

/// A clients file with one caller, `alice`, in a fresh temporary directory.
fn clients_file() -> (tempfile::TempDir, String) {
    use sha2::Digest;
    let dir = tempfile::tempdir().unwrap();
    let token = "alice-token-0123456789abcdef0123456789";
    let path = dir.path().join("clients.json");
    std::fs::write(
        &path,
        serde_json::json!({"clients": [{
            "id": "alice",
            "token_sha256": hex::encode(sha2::Sha256::digest(token)),
            "scopes": ["code:run"],
        }]})
        .to_string(),
    )
    .unwrap();
    let path = path.display().to_string();
    (dir, path)
}

/// The content-addressed ID of a local image.
fn image_id(image: &str) -> String {
    let out = Command::new("docker")
        .args(["image", "inspect", "--format", "{{.Id}}", image])
        .output()
        .unwrap();
    assert!(out.status.success(), "docker image inspect {image}");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Hardened mode: every rule's violation refuses startup, all named at once
/// (and by `--check`); the isolation rule after the proof; a configuration
/// that keeps every rule serves.
#[test]
fn hardened_mode_names_every_broken_rule() {
    let (_dir, clients) = clients_file();
    let hardened = |extra: &[(&str, &str)]| {
        let mut env = vec![("PLIMSOLL_HARDENED", "1")];
        env.extend_from_slice(extra);
        refuses(&env)
    };
    let named = |stderr: &str, vars: &[&str]| {
        for var in vars {
            assert!(
                stderr.contains(&format!("plimsolld: hardened mode: {var}: ")),
                "{var} not named: {stderr}"
            );
        }
    };
    // The daemon's own rules, all at once.
    let (code, stderr) = hardened(&[
        (
            "PLIMSOLL_TOKEN",
            "a-shared-token-0123456789abcdef0123456789",
        ),
        ("PLIMSOLL_INSECURE", "1"),
        ("PLIMSOLL_ADDR", "0.0.0.0:0"),
        ("SANDBOX_RATE_PER_MIN", "0"),
        ("SANDBOX_PER_KEY_CONCURRENT", "8"),
    ]);
    assert_eq!(code, 1, "{stderr}");
    named(
        &stderr,
        &[
            "PLIMSOLL_TOKEN",
            "PLIMSOLL_INSECURE",
            "PLIMSOLL_ADDR",
            "SANDBOX_RATE_PER_MIN",
            "SANDBOX_PER_KEY_CONCURRENT",
        ],
    );
    assert!(stderr.contains("5 rules broken"), "{stderr}");
    let (_, stderr) = hardened(&[]);
    named(&stderr, &["PLIMSOLL_CLIENTS_FILE"]);
    let (_, stderr) = hardened(&[
        ("PLIMSOLL_CLIENTS_FILE", &clients),
        ("SANDBOX_RATE_PER_MIN", "10"),
        ("SANDBOX_RATE_BURST", "11"),
    ]);
    named(&stderr, &["SANDBOX_RATE_BURST"]);
    // The docker provider's: tags, unconfined seccomp, no envelope, and
    // sessions without a per-caller cap.
    let (_, stderr) = hardened(&[
        ("PLIMSOLL_CLIENTS_FILE", &clients),
        ("SANDBOX_PROVIDER", "docker"),
        ("SANDBOX_DOCKER_RUNTIME", "runsc"),
        ("SANDBOX_DOCKER_SECCOMP", "unconfined"),
        ("SANDBOX_MAX_SESSIONS", "2"),
    ]);
    named(
        &stderr,
        &[
            "SANDBOX_DOCKER_IMAGE",
            "SANDBOX_DOCKER_PROJECT_IMAGE",
            "SANDBOX_DOCKER_SECCOMP",
            "SANDBOX_MEMORY_MB",
            "SANDBOX_CPUS",
            "SANDBOX_DISK_MB",
            "SANDBOX_PIDS",
            "SANDBOX_TOTAL_MEMORY_MB",
            "SANDBOX_MAX_SESSIONS_PER_CALLER",
        ],
    );
    // e2b's: the template named explicitly.
    let (_, stderr) = hardened(&[
        ("PLIMSOLL_CLIENTS_FILE", &clients),
        ("SANDBOX_PROVIDER", "e2b"),
        (
            "E2B_API_KEY",
            "e2b_0123456789abcdef0123456789abcdef01234567",
        ),
        ("E2B_API_URL", "http://127.0.0.1:1"),
        ("E2B_SANDBOX_URL", "http://127.0.0.1:2"),
    ]);
    // (and the clients file names no paid allowance for alice).
    named(
        &stderr,
        &["E2B_TEMPLATE", "SANDBOX_MEMORY_MB", "PLIMSOLL_CLIENTS_FILE"],
    );
    // `--check` reports the same rules and fails.
    let out = command(&[("PLIMSOLL_HARDENED", "1"), ("SANDBOX_RATE_PER_MIN", "0")])
        .args(["--check", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ready"], false, "{v:#}");
    let broken: Vec<&str> = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["area"] == "hardened")
        .map(|c| c["check"].as_str().unwrap())
        .collect();
    assert_eq!(
        broken,
        ["PLIMSOLL_CLIENTS_FILE", "SANDBOX_RATE_PER_MIN"],
        "{v:#}"
    );
    // Every early rule kept, but the wasm provider proves only `process`.
    let (code, stderr) = hardened(&[
        ("PLIMSOLL_CLIENTS_FILE", &clients),
        ("SANDBOX_PROVIDER", "wasm"),
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("hardened mode: SANDBOX_PROVIDER: ") && stderr.contains("proved process"),
        "{stderr}"
    );
    // Every rule kept: docker on verified runsc, pinned by ID, serves.
    let snippet = image_id("plimsoll/snippet:latest");
    let project = image_id("plimsoll/project:latest");
    let d = Daemon::start(&[
        ("PLIMSOLL_HARDENED", "1"),
        ("PLIMSOLL_CLIENTS_FILE", &clients),
        ("SANDBOX_PROVIDER", "docker"),
        ("SANDBOX_DOCKER_RUNTIME", "runsc"),
        ("SANDBOX_DOCKER_IMAGE", &snippet),
        ("SANDBOX_DOCKER_PROJECT_IMAGE", &project),
        ("SANDBOX_MEMORY_MB", "256"),
        ("SANDBOX_CPUS", "1"),
        ("SANDBOX_DISK_MB", "64"),
        ("SANDBOX_PIDS", "256"),
        ("SANDBOX_TOTAL_MEMORY_MB", "2048"),
        ("SANDBOX_GUEST_UID", "54100"),
    ]);
    let (status, _, v) = d.rpc(
        "Describe",
        &[(
            "Authorization",
            "Bearer alice-token-0123456789abcdef0123456789",
        )],
        r#"{"protocol":4}"#,
    );
    assert_eq!(
        (status, v["isolation"].as_str()),
        (200, Some("kernel")),
        "{v}"
    );
}
