//! The hostile-callers suite: what a caller, not a guest, can do to plimsolld
//! over loopback, each case bounded in time. It trickles headers, floods
//! the listeners with idle connections past their caps, floods the RPC
//! listener with 8 MiB bodies, makes a granted guest send refused broker
//! calls with unique methods, and opens sessions concurrently past the cap.
//! Every case asserts its bound, and prints its figures as `figure:` lines
//! (docs/security.md, "Hostile callers", holds them).
#![expect(
    clippy::unwrap_used,
    reason = "a test helper that cannot do its job should fail the test loudly"
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Child;
use std::time::{Duration, Instant};

#[path = "support/spawn.rs"]
mod spawn;

const BIN: &str = env!("CARGO_BIN_EXE_plimsolld");
const TOKEN: &str = "callers-suite-token-0123456789abcdef";

struct Daemon {
    child: Child,
    addr: String,
    metrics: String,
}

impl Daemon {
    /// Starts plimsolld with `env`, under a descriptor limit when `nofile`.
    fn start(env: &[(&str, &str)], nofile: Option<u64>) -> Daemon {
        let mut env = env.to_vec();
        env.push(("PLIMSOLL_LOG", "warn,plimsolld=info"));
        let c = match nofile {
            Some(n) => {
                let mut c = spawn::command("prlimit", &env);
                c.arg(format!("--nofile={n}:{n}")).arg(BIN);
                c
            }
            None => spawn::command(BIN, &env),
        };
        let (child, addr, metrics) = spawn::spawn_listening(c);
        Daemon {
            child,
            addr,
            metrics,
        }
    }

    fn status_kib(&self, field: &str) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        s.lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap()
    }

    fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id()))
            .unwrap()
            .count()
    }

    fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// A real caller: Describe on a new connection; its status and how long
    /// the answer took.
    fn describe(&self) -> (u16, Duration) {
        let t = Instant::now();
        let (status, _, _) = call(&self.addr, "Describe", b"{}", &[]);
        (status, t.elapsed())
    }

    fn metrics_text(&self) -> String {
        let mut s = TcpStream::connect(&self.metrics).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut raw = String::new();
        let _ = s.read_to_string(&mut raw);
        assert!(raw.starts_with("HTTP/1.1 200 "), "{raw}");
        raw.split_once("\r\n\r\n").unwrap().1.to_owned()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One procedure call on a new connection: (status, lowercased head, body).
fn call(addr: &str, procedure: &str, body: &[u8], extra: &[&str]) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let mut head = format!(
        "POST /plimsoll.v1.SandboxService/{procedure} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for h in extra {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    let _ = s.write_all(body);
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    parse(&raw)
}

fn parse(raw: &[u8]) -> (u16, String, String) {
    let raw = String::from_utf8_lossy(raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head.split(' ').nth(1).unwrap_or("0").parse().unwrap_or(0);
    (status, head.to_ascii_lowercase(), body.to_owned())
}

/// How long until the daemon closes `s` (reads to EOF or an error), at most `limit`.
fn closed_after(mut s: TcpStream, limit: Duration) -> Option<Duration> {
    let t = Instant::now();
    s.set_read_timeout(Some(limit)).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return Some(t.elapsed()),
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return None;
            }
            Err(_) => return Some(t.elapsed()),
        }
    }
}

/// The RPC listener's header-read timeout (plimsolld's `serve::RPC`).
const HEADER_READ: Duration = Duration::from_secs(10);
/// The slack allowed on top of a timeout on a loaded 2-core machine.
const SLACK: Duration = Duration::from_secs(5);

#[test]
fn trickled_headers_and_idle_connections_are_closed_while_callers_are_answered() {
    let d = Daemon::start(&[("PLIMSOLL_TOKEN", TOKEN)], None);
    // One header byte every second: closed at the header-read timeout.
    let trickle = TcpStream::connect(&d.addr).unwrap();
    let mut w = trickle.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        let head =
            b"POST /plimsoll.v1.SandboxService/Describe HTTP/1.1\r\nHost: localhost\r\nX-Slow: ";
        let _ = w.write_all(head);
        for _ in 0..60 {
            std::thread::sleep(Duration::from_secs(1));
            if w.write_all(b"a").is_err() {
                return;
            }
        }
    });
    // A connection that sends nothing, and one idle after an answered call.
    let silent = TcpStream::connect(&d.addr).unwrap();
    let mut kept = TcpStream::connect(&d.addr).unwrap();
    write!(
        kept,
        "POST /plimsoll.v1.SandboxService/Describe HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}"
    )
    .unwrap();
    let mut first = [0u8; 12];
    kept.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");
    let watched = [
        ("trickled", trickle),
        ("silent", silent),
        ("kept-alive", kept),
    ]
    .map(|(what, s)| {
        (
            what,
            std::thread::spawn(move || closed_after(s, HEADER_READ + 3 * SLACK)),
        )
    });
    // Meanwhile a real caller is answered at once.
    let (status, took) = d.describe();
    assert_eq!(status, 200);
    for (what, w) in watched {
        let after = w.join().unwrap();
        println!("figure: {what} connection closed after {after:?}");
        let after = after.unwrap_or_else(|| panic!("the {what} connection was still open"));
        assert!(after <= HEADER_READ + SLACK, "{what}: {after:?}");
    }
    writer.join().unwrap();
    println!("figure: a caller beside them answered in {took:?}");
}

#[test]
fn an_idle_flood_past_the_caps_leaves_room_for_callers() {
    // 512 descriptors: the RPC listener keeps at most 288 connections, the
    // metrics listener 64.
    let mut d = Daemon::start(&[("PLIMSOLL_TOKEN", TOKEN)], Some(512));
    let (rpc_flood, metrics_flood) = (3000, 500);
    let t = Instant::now();
    let mut held = Vec::new();
    for i in 0..rpc_flood {
        let mut s = TcpStream::connect(&d.addr).unwrap();
        if i % 2 == 0 {
            // Half of them start a request and stop.
            let _ = s.write_all(b"POST /plimsoll.v1.SandboxService/Run HTTP/1.1\r\nHost: loc");
        }
        held.push(s);
    }
    for _ in 0..metrics_flood {
        held.push(TcpStream::connect(&d.metrics).unwrap());
    }
    let opened = t.elapsed();
    let daemon_fds = d.fds();
    let (status, took) = d.describe();
    assert_eq!(status, 200, "a real caller is served, not refused");
    let t = Instant::now();
    let text = d.metrics_text();
    let metrics_took = t.elapsed();
    assert!(text.contains("plimsoll_runs"), "{text}");
    assert!(d.alive());
    assert!(
        daemon_fds < 512,
        "the daemon stays under its descriptor limit: {daemon_fds}"
    );
    println!(
        "figure: {rpc_flood} idle RPC and {metrics_flood} idle metrics connections opened in {opened:?}; daemon holds {daemon_fds} descriptors (limit 512); a caller answered in {took:?}, /metrics in {metrics_took:?}"
    );
}

/// A body of `len` bytes: a long string, or as many numbers as fit.
fn big_body(len: usize, numbers: bool) -> Vec<u8> {
    let (head, tail, fill): (&[u8], &[u8], &[u8]) = if numbers {
        (
            br#"{"protocol":4,"module":{"model":"m","rows":[{"values":["#,
            b"0]}]}}",
            b"0,",
        )
    } else {
        (br#"{"protocol":4,"javascript":{"code":""#, br#""}}"#, b"xx")
    };
    let mut b = head.to_vec();
    while b.len() + fill.len() + tail.len() <= len {
        b.extend_from_slice(fill);
    }
    b.extend_from_slice(tail);
    b
}

#[test]
fn a_flood_of_large_bodies_stays_within_its_memory_bound() {
    let d = Daemon::start(&[("PLIMSOLL_TOKEN", TOKEN)], None);
    assert_eq!(d.describe().0, 200);
    std::thread::sleep(Duration::from_millis(300));
    let rest = d.status_kib("VmRSS:");
    let len = 8 * 1024 * 1024 - 64;
    let bodies: Vec<_> = (0..16).map(|i| big_body(len, i % 2 == 1)).collect();
    let t = Instant::now();
    let answers: Vec<_> = bodies
        .into_iter()
        .enumerate()
        .map(|(i, body)| {
            let addr = d.addr.clone();
            std::thread::spawn(move || {
                if i % 4 == 0 {
                    // As curl sends a large body: the headers, then the body
                    // only once the server asks for it.
                    let mut s = TcpStream::connect(&addr).unwrap();
                    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
                    write!(
                        s,
                        "POST /plimsoll.v1.SandboxService/Run HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: {}\r\n\r\n",
                        body.len()
                    )
                    .unwrap();
                    let mut first = [0u8; 12];
                    s.read_exact(&mut first).unwrap();
                    let mut raw = first.to_vec();
                    if &first == b"HTTP/1.1 100" {
                        let mut line = Vec::new();
                        let mut b = [0u8; 1];
                        while !line.ends_with(b"\r\n\r\n") && s.read(&mut b).unwrap() == 1 {
                            line.push(b[0]);
                        }
                        s.write_all(&body).unwrap();
                        raw.clear();
                    }
                    let _ = s.read_to_end(&mut raw);
                    Some(parse(&raw))
                } else {
                    // As a flood sends it: all at once, whatever the answer.
                    let (status, head, body) = call(&addr, "Run", &body, &[]);
                    (status != 0).then_some((status, head, body))
                }
            })
        })
        .collect();
    let answers: Vec<_> = answers.into_iter().map(|a| a.join().unwrap()).collect();
    let took = t.elapsed();
    let peak = d.status_kib("VmHWM:");
    let above = peak.saturating_sub(rest);
    let statuses: Vec<u16> = answers
        .iter()
        .map(|a| a.as_ref().map_or(0, |a| a.0))
        .collect();
    println!(
        "figure: sixteen 8 MiB bodies in {took:?}: peak RSS {} MiB above a rest of {} MiB; answers {statuses:?}",
        above / 1024,
        rest / 1024
    );
    assert!(above <= 256 * 1024, "peak RSS {above} KiB above rest");
    // Every curl-style caller got a typed answer: its body was read and
    // refused (400: the disabled provider, too many values), or it was shed
    // unread as capacity.
    for (i, a) in answers.iter().enumerate().filter(|(i, _)| i % 4 == 0) {
        let (status, head, _) = a.as_ref().unwrap();
        assert!(
            *status == 400
                || *status == 412
                || *status == 503 && head.contains("plimsoll-not-dispatched: capacity"),
            "caller {i}: {status} {head}"
        );
    }
    assert!(
        statuses.contains(&503),
        "sixteen 8 MiB bodies at once exceed the memory budget: some are shed"
    );
    assert_eq!(d.describe().0, 200, "and the daemon still answers");
}

/// A stand-in API that answers every request 200.
fn api() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut conn) = conn else { continue };
            std::thread::spawn(move || {
                let mut r = BufReader::new(conn.try_clone().unwrap());
                let mut line = String::new();
                while r.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                    line.clear();
                }
                let _ = conn.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
                );
            });
        }
    });
    url
}

/// The sample lines of a /metrics text (its series).
fn series(text: &str) -> usize {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .count()
}

#[test]
fn refused_broker_calls_spend_the_budget_and_add_no_series() {
    let dir = tempfile::tempdir().unwrap();
    let grants = dir.path().join("grants.json");
    std::fs::write(
        &grants,
        serde_json::json!({"profiles": {"items": {
            "base_url": api(),
            "allow": ["GET /v1/items/*"],
            "allowed_callers": ["static"],
            "max_calls": 100,
            "token": {"type": "static", "env": "CALLERS_API_TOKEN"},
        }}})
        .to_string(),
    )
    .unwrap();
    let d = Daemon::start(
        &[
            ("PLIMSOLL_TOKEN", TOKEN),
            ("SANDBOX_PROVIDER", "wasm"),
            ("PLIMSOLL_GRANTS_FILE", grants.to_str().unwrap()),
            ("CALLERS_API_TOKEN", "api-token-0123456789"),
        ],
        None,
    );
    let run = |code: &str| {
        let body = serde_json::json!({"protocol": 4, "javascript": {"code": code, "grantProfile": "items"}});
        let (status, head, body) = call(&d.addr, "Run", body.to_string().as_bytes(), &[]);
        assert_eq!(status, 200, "{head}{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let out = v["javascript"]["stdout"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        use base64::Engine as _;
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(out)
                .unwrap(),
        )
        .unwrap()
    };
    assert_eq!(
        run("console.log(host.get('/v1/items/1').status)").trim(),
        "200"
    );
    let before = d.metrics_text();
    // 300 calls, each with its own 4 KiB method: the first 100 spend the
    // budget (refused: no route names the method), the rest find it spent.
    let flood = |seed: &str| {
        format!(
            "const seen = {{}};
             for (let i = 0; i < 300; i++) {{
               const m = '{seed}' + String(i).padStart(4, '0') + 'X'.repeat(4096);
               const a = host.call(m, '/v1/items/1');
               seen[a.status] = (seen[a.status] || 0) + 1;
             }}
             console.log(JSON.stringify(seen));"
        )
    };
    assert_eq!(run(&flood("M")).trim(), r#"{"403":100,"429":200}"#);
    let after_one = d.metrics_text();
    assert_eq!(run(&flood("N")).trim(), r#"{"403":100,"429":200}"#);
    let after_two = d.metrics_text();
    println!(
        "figure: /metrics {} bytes and {} series before; {} bytes and {} series after 300 refused calls with unique 4 KiB methods; {} bytes and {} series after 300 more",
        before.len(),
        series(&before),
        after_one.len(),
        series(&after_one),
        after_two.len(),
        series(&after_two)
    );
    assert!(!after_two.contains("XXXX"), "no method reaches a label");
    assert_eq!(
        series(&after_one),
        series(&after_two),
        "the series do not depend on what the guest sends"
    );
    assert!(series(&after_one) <= series(&before) + 4);
    assert!(after_two.len() < before.len() + 4096);
}

#[test]
fn concurrent_session_opens_stay_within_the_cap() {
    let d = Daemon::start(
        &[
            ("PLIMSOLL_TOKEN", TOKEN),
            ("SANDBOX_PROVIDER", "docker"),
            ("SANDBOX_DOCKER_RUNTIME", "runc"),
            ("SANDBOX_GUEST_UID", "54000"),
            ("SANDBOX_MAX_SESSIONS", "2"),
            ("SANDBOX_MAX_CONCURRENT", "8"),
            ("SANDBOX_RATE_PER_MIN", "600"),
            (
                "PLIMSOLL_INSTANCE",
                &format!("plimsoll:callers-{}", std::process::id()),
            ),
        ],
        None,
    );
    let opens: Vec<_> = (0..8)
        .map(|_| {
            let addr = d.addr.clone();
            std::thread::spawn(move || call(&addr, "OpenSession", br#"{"protocol":4}"#, &[]))
        })
        .collect();
    let answers: Vec<_> = opens.into_iter().map(|o| o.join().unwrap()).collect();
    let opened: Vec<String> = answers
        .iter()
        .filter(|a| a.0 == 200)
        .map(|a| {
            let v: serde_json::Value = serde_json::from_str(&a.2).unwrap();
            v["sessionId"].as_str().unwrap().to_owned()
        })
        .collect();
    for (status, head, body) in answers.iter().filter(|a| a.0 != 200) {
        assert!(
            *status == 429 || *status == 503,
            "an open past the cap is refused as capacity: {status} {head}{body}"
        );
        assert!(body.contains("resource_exhausted"), "{body}");
    }
    println!(
        "figure: 8 concurrent OpenSession calls against SANDBOX_MAX_SESSIONS=2: {} opened",
        opened.len()
    );
    assert_eq!(opened.len(), 2, "{answers:?}");
    for id in opened {
        let body = serde_json::json!({"protocol": 4, "sessionId": id}).to_string();
        assert_eq!(call(&d.addr, "CloseSession", body.as_bytes(), &[]).0, 200);
    }
}

/// A raw request with the given `Host` and path: (status, lowercased head).
fn with_host(addr: &str, host: &str, path: &str, token: bool) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let auth = if token {
        format!("Authorization: Bearer {TOKEN}\r\n")
    } else {
        String::new()
    };
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n{auth}Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}"
    )
    .unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let (status, head, _) = parse(&raw);
    (status, head)
}

#[test]
fn a_rebinding_page_and_a_prefixed_path_reach_nothing() {
    const DESCRIBE: &str = "/plimsoll.v1.SandboxService/Describe";
    // No authentication: only IP literals and localhost are answered.
    let open = Daemon::start(&[], None);
    let (status, head) = with_host(&open.addr, "rebind.evil.example:8746", DESCRIBE, false);
    assert_eq!(status, 421, "{head}");
    assert!(head.contains("plimsoll-not-dispatched: request"), "{head}");
    for host in ["localhost:8746", "127.0.0.1", "[::1]:1"] {
        assert_eq!(
            with_host(&open.addr, host, DESCRIBE, false).0,
            200,
            "{host}"
        );
    }
    // With authentication, any name may front the daemon.
    let authed = Daemon::start(&[("PLIMSOLL_TOKEN", TOKEN)], None);
    assert_eq!(
        with_host(&authed.addr, "plimsoll.example:443", DESCRIBE, true).0,
        200
    );
    // The service lives at the root: a path that only contains it is not it.
    for path in [
        "/x/plimsoll.v1.SandboxService/Describe",
        "//plimsoll.v1.SandboxService/Describe",
    ] {
        let (status, head) = with_host(&authed.addr, "localhost", path, true);
        assert_eq!(status, 404, "{path}: {head}");
        assert!(
            head.contains("plimsoll-not-dispatched: unsupported"),
            "{head}"
        );
    }
}
