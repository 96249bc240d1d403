//! The hostile corpus (`tests/hostile/<category>/<ID>.{js,py,sh}`), every case
//! on every tier it names, through a real plimsolld: wasm, docker on runc (with
//! the shipped seccomp profile), docker on runsc, and docker sessions on both;
//! the snippet cases again on members of a snippet pool under both runtimes
//! (`+pool`: waiting members are the only containers allowed to stay).
//!
//! A case's header says which tiers it runs on, the safe outcome and the
//! channel it must arrive on (a result that exits 0, exits non-zero or times
//! out; or a refusal with a Connect code, marked not dispatched), and text its
//! output must or must not hold. A case prints `BREACH <what>` when a probe
//! got through; any such line fails it. After every case [`Tier::assert_clean`]
//! checks the post-conditions that `tests/hostile/README.md` lists (and
//! docs/security.md relies on): the daemon is
//! ready and a benign run succeeds; no container, process, socket or temp dir
//! of the run is left; the daemon's fds are back to baseline; records verify
//! (the client verifies every answer and session chain); a canary secret held
//! in the daemon's environment and by the broker appears in no answer, log line
//! or metric; and no packet reached a sentinel listening on every host address.
#![expect(
    clippy::unwrap_used,
    reason = "a test harness that cannot do its job should fail the test loudly"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use plimsoll_core::client::{Runner, SessionOptions};
use plimsoll_core::request::{CellRun, JavaScriptRun, ProjectFile, ProjectRun};
use plimsoll_core::wire::json::encode;
use plimsoll_core::wire::{RunRequest, RunResponse};
use plimsoll_core::{ErrorCode, Output, Payload, Request};
use tokio_util::sync::CancellationToken;

const BIN: &str = env!("CARGO_BIN_EXE_plimsolld");
const TOKEN: &str = "hostile-corpus-token-0123456789abcdef";
/// The snippet pool's size on the pool tiers.
const POOL_SIZE: usize = 2;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

// ------------------------------------------------------------------ cases

/// The benign cell after a session case: prints `after`, then the pid of
/// every process still alive whose command line a case marked
/// `plimsoll-leftover` (the cleanup between calls must have ended them).
const AFTER_CELL: &str = r#"import os
left = []
for d in os.listdir("/proc"):
    try:
        if d.isdigit() and b"plimsoll-leftover" in open("/proc/%s/cmdline" % d, "rb").read():
            left.append(d)
    except OSError:
        pass
print("after", *left)"#;

/// The safe outcome, and the channel it arrives on.
#[derive(Debug, Clone, PartialEq)]
enum Expect {
    /// A result: exit 0, not timed out.
    Ok,
    /// A result: a non-zero exit (or a trap), not timed out.
    Fails,
    /// A result: the deadline ended it.
    Timeout,
    /// A result that did not succeed: a non-zero exit or the deadline.
    Stops,
    /// A result of any exit, not timed out (the probes in the output decide).
    Ends,
    /// A refusal with this Connect code, marked not dispatched.
    Refused(String),
}

impl Expect {
    fn parse(s: &str) -> Expect {
        match s.split_whitespace().collect::<Vec<_>>().as_slice() {
            ["ok"] => Expect::Ok,
            ["fails"] => Expect::Fails,
            ["timeout"] => Expect::Timeout,
            ["stops"] => Expect::Stops,
            ["ends"] => Expect::Ends,
            ["refused", code] => Expect::Refused((*code).to_owned()),
            _ => panic!("unknown expectation {s:?}"),
        }
    }
}

#[derive(Debug, Clone)]
struct Case {
    id: String,
    file: PathBuf,
    ext: String,
    source: String,
    tiers: BTreeSet<String>,
    expect: BTreeMap<String, Expect>,
    has: Vec<(String, String)>,
    lacks: Vec<String>,
    ends_session: Vec<String>,
    may_end_session: Vec<String>,
    timeout_ms: i32,
    grant: String,
    path: Option<String>,
    floor: String,
    artifacts: Vec<String>,
    runs: u32,
    truncated: bool,
    pad: usize,
    probe: Option<String>,
    /// Whether the pool tiers run it too (`pool: no` for cases about the
    /// interpreter, which a pool member runs unchanged, not about its walls).
    pool: bool,
}

impl Case {
    fn load(file: &Path) -> Case {
        let text = std::fs::read_to_string(file).unwrap();
        let ext = file.extension().unwrap().to_str().unwrap().to_owned();
        let marker = if ext == "js" { "//" } else { "#" };
        let mut case = Case {
            id: file.file_stem().unwrap().to_str().unwrap().to_owned(),
            file: file.to_owned(),
            ext,
            source: text.clone(),
            tiers: BTreeSet::new(),
            expect: BTreeMap::new(),
            has: vec![],
            lacks: vec![],
            ends_session: vec![],
            may_end_session: vec![],
            timeout_ms: 0,
            grant: String::new(),
            path: None,
            floor: String::new(),
            artifacts: vec![],
            runs: 1,
            truncated: false,
            pad: 0,
            probe: None,
            pool: true,
        };
        let mut why = false;
        for line in text.lines() {
            let Some(rest) = line.strip_prefix(marker) else {
                break;
            };
            let Some((key, value)) = rest.trim().split_once(':') else {
                continue;
            };
            let value = value.trim();
            match key.trim() {
                "tiers" => case.tiers = value.split_whitespace().map(str::to_owned).collect(),
                "expect" => {
                    case.expect.insert("*".into(), Expect::parse(value));
                }
                k if k.starts_with("expect.") => {
                    case.expect
                        .insert(k["expect.".len()..].to_owned(), Expect::parse(value));
                }
                "has" => case.has.push(("*".into(), value.to_owned())),
                "may_end_session" => {
                    case.may_end_session = value.split_whitespace().map(str::to_owned).collect()
                }
                "ends_session" => {
                    case.ends_session = value.split_whitespace().map(str::to_owned).collect()
                }
                k if k.starts_with("has.") => case
                    .has
                    .push((k["has.".len()..].to_owned(), value.to_owned())),
                "lacks" => case.lacks.push(value.to_owned()),
                "timeout_ms" => case.timeout_ms = value.parse().unwrap(),
                "grant" => case.grant = value.to_owned(),
                "path" => case.path = Some(value.to_owned()),
                "floor" => case.floor = value.to_owned(),
                "artifacts" => {
                    case.artifacts = value.split_whitespace().map(str::to_owned).collect()
                }
                "runs" => case.runs = value.parse().unwrap(),
                "truncated" => case.truncated = value == "yes",
                "pad" => case.pad = value.parse().unwrap(),
                "pool" => {
                    assert!(
                        matches!(value, "yes" | "no"),
                        "{}: pool is yes or no",
                        file.display()
                    );
                    case.pool = value == "yes";
                }
                "probe" => {
                    assert_eq!(value, "broker-uid", "{}: unknown probe", file.display());
                    case.probe = Some(value.to_owned());
                }
                "why" => why = true,
                "id" | "title" => {}
                other => panic!("{}: unknown header key {other:?}", file.display()),
            }
        }
        assert!(
            why && !case.tiers.is_empty() && case.expect.contains_key("*"),
            "{}: every case names its tiers, expectation and why",
            file.display()
        );
        assert!(
            case.ext == "js" || !case.tiers.contains("wasm"),
            "{}: only JavaScript runs on wasm",
            file.display()
        );
        case
    }

    fn expect(&self, tier: &str) -> &Expect {
        self.expect.get(tier).unwrap_or(&self.expect["*"])
    }

    /// The request for `tier` (`wasm`, `runc`, `runsc` or `session`).
    fn request(&self, tier: &str, runtime: &str, sentinel: &str) -> Request {
        let mut code = self
            .source
            .replace("{{SENTINEL}}", sentinel)
            .replace("{{TIER}}", runtime);
        code.push_str(&" ".repeat(self.pad));
        let name = self
            .path
            .clone()
            .unwrap_or_else(|| format!("case.{}", self.ext));
        let files = vec![ProjectFile {
            path: name.clone(),
            content: code.clone(),
        }];
        let payload = match (tier, self.ext.as_str()) {
            ("session", "js") => Payload::Cell(CellRun {
                language: "javascript".into(),
                code,
                files: vec![],
            }),
            ("session", "py") => Payload::Cell(CellRun {
                language: "python".into(),
                code,
                files: vec![],
            }),
            (_, "js") => Payload::JavaScript(JavaScriptRun {
                code,
                grant_profile: self.grant.clone(),
            }),
            (_, ext) => Payload::Project(ProjectRun {
                files,
                steps: vec![format!(
                    "{} {name}",
                    if ext == "py" { "python3" } else { "sh" }
                )],
                artifacts: self.artifacts.clone(),
                grant_profile: self.grant.clone(),
            }),
        };
        let mut r = Request::new(payload);
        r.envelope.timeout_ms = self.timeout_ms;
        r.envelope.minimum_isolation = self.floor.clone();
        r
    }
}

fn corpus() -> Vec<Case> {
    let dir = root().join("tests/hostile");
    let mut cases = Vec::new();
    for cat in std::fs::read_dir(&dir).unwrap() {
        let cat = cat.unwrap().path();
        if !cat.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&cat).unwrap() {
            let f = f.unwrap().path();
            if matches!(
                f.extension().and_then(|e| e.to_str()),
                Some("js" | "py" | "sh")
            ) {
                cases.push(Case::load(&f));
            }
        }
    }
    cases.sort_by(|a, b| a.id.cmp(&b.id));
    // HOSTILE_ONLY=E1,K1 runs just those cases (while working on them).
    if let Ok(only) = std::env::var("HOSTILE_ONLY") {
        let only: Vec<&str> = only.split(',').collect();
        cases.retain(|c| only.iter().any(|o| c.id.split('-').next() == Some(o)));
    }
    cases
}

// ------------------------------------------------------------------ what one run gave

/// What a run gave, whatever its kind.
#[derive(Debug, Default)]
struct Seen {
    stdout: String,
    stderr: String,
    exit_code: i32,
    timed_out: bool,
    truncated: bool,
    detail: String,
    wire: String,
}

fn seen_from(output: &Output, wire: String) -> Seen {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    match output {
        Output::JavaScript(j) => Seen {
            stdout: text(&j.stdout),
            stderr: text(&j.stderr),
            exit_code: j.exit_code,
            timed_out: j.timed_out,
            truncated: j.stdout_truncated || j.stderr_truncated,
            detail: String::new(),
            wire,
        },
        Output::Cell(c) => Seen {
            stdout: text(&c.stdout),
            stderr: text(&c.stderr),
            exit_code: c.exit_code,
            timed_out: c.timed_out,
            truncated: c.stdout_truncated || c.stderr_truncated,
            detail: String::new(),
            wire,
        },
        Output::Project(p) => {
            let mut s = Seen {
                timed_out: p.outcome == plimsoll_core::result::ProjectOutcome::TimedOut,
                truncated: p.artifacts_truncated,
                detail: format!("{} {}", p.outcome.as_str(), p.outcome_detail),
                wire,
                ..Seen::default()
            };
            for step in &p.steps {
                s.stdout.push_str(&text(&step.stdout));
                s.stderr.push_str(&text(&step.stderr));
                s.exit_code = step.exit_code;
                s.timed_out |= step.timed_out;
                s.truncated |= step.stdout_truncated || step.stderr_truncated;
            }
            for a in &p.artifacts {
                s.stdout.push_str(&format!(
                    "artifact {} {}\n",
                    a.path,
                    text(&a.content[..a.content.len().min(64)])
                ));
            }
            s
        }
        Output::Module(_) => panic!("the corpus runs no modules"),
    }
}

/// What an answer gave, with its whole wire form for the canary sweep.
fn seen_of(resp: &RunResponse) -> Seen {
    let wire = String::from_utf8_lossy(&encode(resp)).into_owned();
    seen_from(resp.output.as_ref().unwrap(), wire)
}

// ------------------------------------------------------------------ fixtures

/// TCP and UDP listeners on every host address: any packet a sandbox gets
/// out is counted.
struct Sentinel {
    port: u16,
    hits: Arc<AtomicU64>,
}

impl Sentinel {
    fn start() -> Sentinel {
        let tcp = TcpListener::bind("0.0.0.0:0").unwrap();
        let port = tcp.local_addr().unwrap().port();
        let udp = UdpSocket::bind(("0.0.0.0", port)).unwrap();
        let hits = Arc::new(AtomicU64::new(0));
        let h = hits.clone();
        std::thread::spawn(move || {
            for c in tcp.incoming() {
                drop(c);
                h.fetch_add(1, Ordering::SeqCst);
            }
        });
        let h = hits.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            while udp.recv_from(&mut buf).is_ok() {
                h.fetch_add(1, Ordering::SeqCst);
            }
        });
        Sentinel { port, hits }
    }

    /// `ip:port` for every host IPv4 address, the docker bridge's among them
    /// (not 127.0.0.1: inside a sandbox that is the sandbox's own loopback).
    fn targets(&self) -> String {
        let out = Command::new("hostname").arg("-I").output().unwrap();
        let ips: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .filter(|ip| !ip.contains(':'))
            .map(str::to_owned)
            .collect();
        ips.iter()
            .map(|ip| format!("{ip}:{}", self.port))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A loopback HTTP API behind the broker. It echoes the Authorization header
/// it receives, so the broker's redaction is exercised, and keeps every
/// target it was asked for.
struct Api {
    url: String,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Api {
    fn start() -> Api {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        std::thread::spawn(move || {
            for conn in l.incoming() {
                let Ok(mut conn) = conn else { continue };
                let s = s.clone();
                std::thread::spawn(move || {
                    let mut r = BufReader::new(conn.try_clone().unwrap());
                    let mut first = String::new();
                    if r.read_line(&mut first).is_err() {
                        return;
                    }
                    let (mut auth, mut len) = (String::new(), 0usize);
                    loop {
                        let mut h = String::new();
                        if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                            break;
                        }
                        let lower = h.to_ascii_lowercase();
                        if let Some(v) = lower.strip_prefix("authorization:") {
                            auth = h[h.len() - v.len()..].trim().to_owned();
                        }
                        if let Some(v) = lower.strip_prefix("content-length:") {
                            len = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; len];
                    let _ = r.read_exact(&mut body);
                    let target = first.split(' ').take(2).collect::<Vec<_>>().join(" ");
                    s.lock().unwrap().push(target.clone());
                    let out =
                        serde_json::json!({ "target": target, "authorization": auth }).to_string();
                    let _ = write!(
                        conn,
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{out}",
                        out.len()
                    );
                });
            }
        });
        Api { url, seen }
    }
}

/// One plimsolld under test, its log kept for the canary sweep.
struct Daemon {
    child: Child,
    addr: String,
    metrics: String,
    log: Arc<Mutex<String>>,
    instance: String,
    tmp: tempfile::TempDir,
}

impl Daemon {
    fn start(env: &[(&str, String)], instance: &str) -> Daemon {
        let tmp = tempfile::tempdir().unwrap();
        // Traversable by every uid, as the system temp dir is: the broker
        // socket's own directory must be what keeps other uids out.
        std::fs::set_permissions(
            tmp.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o1777),
        )
        .unwrap();
        let mut c = Command::new(BIN);
        for (k, _) in std::env::vars() {
            if k.starts_with("SANDBOX_") || k.starts_with("PLIMSOLL_") || k.starts_with("DOCKER_") {
                c.env_remove(k);
            }
        }
        c.env("PLIMSOLL_ADDR", "127.0.0.1:0")
            .env("PLIMSOLL_METRICS_ADDR", "127.0.0.1:0")
            .env("PLIMSOLL_LOG_FORMAT", "json")
            .env("PLIMSOLL_LOG", "info")
            .env("PLIMSOLL_INSTANCE", instance)
            .env("PLIMSOLL_TOKEN", TOKEN)
            .env("SANDBOX_RATE_PER_MIN", "0")
            // The daemon's temp dir (grant sockets live there): must be empty after every run.
            .env("TMPDIR", tmp.path());
        for (k, v) in env {
            c.env(k, v);
        }
        let mut child = c
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let log = Arc::new(Mutex::new(String::new()));
        let (mut addr, mut metrics) = (String::new(), String::new());
        while addr.is_empty() {
            let Some(Ok(line)) = lines.next() else {
                panic!(
                    "plimsolld exited before listening:\n{}",
                    log.lock().unwrap()
                );
            };
            log.lock().unwrap().push_str(&line);
            log.lock().unwrap().push('\n');
            let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
            match v["message"].as_str() {
                Some("listening") => addr = v["addr"].as_str().unwrap().to_owned(),
                Some("metrics listening") => metrics = v["addr"].as_str().unwrap().to_owned(),
                _ => {}
            }
        }
        let l = log.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(|l| l.ok()) {
                let mut l = l.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        Daemon {
            child,
            addr,
            metrics,
            log,
            instance: instance.to_owned(),
            tmp,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn client(&self) -> Runner {
        Runner::remote(
            &format!("http://{}", self.addr),
            Some(TOKEN.to_owned()),
            true,
            Some(Duration::from_secs(60)),
        )
        .unwrap()
    }

    fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .unwrap()
            .count()
    }

    fn status(&self, field: &str) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        s.lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.split_whitespace().nth(0))
            .and_then(|v| v.parse().ok())
            .unwrap()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Raw HTTP/1.1 to the daemon: (status, lowercased headers, body).
fn http(addr: &str, method: &str, path: &str, body: &[u8]) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.write_all(body).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head.split(' ').nth(1).unwrap_or("0").parse().unwrap_or(0);
    (status, head.to_ascii_lowercase(), body.to_owned())
}

/// Waits up to `secs` for `f` to hold.
fn eventually(secs: u64, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if f() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn docker(args: &[&str]) -> String {
    let out = Command::new("docker").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every container id docker reports for an instance, from `docker events`.
struct Containers {
    child: Child,
    ids: Arc<Mutex<BTreeSet<String>>>,
}

impl Containers {
    fn watch(instance: &str) -> Containers {
        let mut child = Command::new("docker")
            .args([
                "events",
                "--filter",
                "type=container",
                "--filter",
                &format!("label=io.plimsoll.instance={instance}"),
                "--format",
                "{{.ID}}",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("docker is required for the hostile corpus");
        let ids = Arc::new(Mutex::new(BTreeSet::new()));
        let i = ids.clone();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(|l| l.ok()) {
                i.lock().unwrap().insert(line.trim().to_owned());
            }
        });
        Containers { child, ids }
    }

    /// Host processes whose command line names one of the instance's containers.
    fn processes(&self) -> Vec<String> {
        let ids = self.ids.lock().unwrap().clone();
        let mut left = Vec::new();
        for p in std::fs::read_dir("/proc").unwrap().flatten() {
            let name = p.file_name();
            let Some(pid) = name
                .to_str()
                .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
            else {
                continue;
            };
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if ids
                .iter()
                .any(|id| !id.is_empty() && cmd.contains(id.as_str()))
            {
                left.push(format!("{pid}: {cmd}"));
            }
        }
        left
    }
}

impl Drop for Containers {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Host processes running as `uid` (runc guests run as the configured uid),
/// but for those in the cgroup of a container in `except`.
fn processes_of(uid: u32, except: &[String]) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|p| {
            let cgroup = std::fs::read_to_string(p.path().join("cgroup")).unwrap_or_default();
            !except.iter().any(|id| cgroup.contains(id.as_str()))
        })
        .filter(|p| {
            std::fs::read_to_string(p.path().join("status"))
                .ok()
                .and_then(|s| {
                    s.lines()
                        .find_map(|l| l.strip_prefix("Uid:"))
                        .map(|v| v.split_whitespace().next() == Some(&uid.to_string()))
                })
                .unwrap_or(false)
        })
        .count()
}

/// `curl` to `sock` as host uid `uid` (a real setuid child): curl's exit
/// code and the HTTP status (`000`: none).
fn curl_as(uid: u32, sock: &Path) -> (i32, String) {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new("curl");
    c.args([
        "-s",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "--max-time",
        "5",
    ])
    .arg("--unix-socket")
    .arg(sock)
    .arg("http://broker/v1/items/1");
    c.uid(uid).gid(uid);
    let out = c.output().expect("curl is needed for the broker probes");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The `broker-uid` probe: waits for the run's broker socket to appear in the
/// daemon's temp dir, then connects to it from the host as another uid
/// (65534, nobody) and as root (this harness: neither the guest uid nor the
/// runtime). Neither may get an answer; root must reach the socket (it passes
/// the directory's mode), so its refusal is the peer check's.
fn probe_broker(tmp: PathBuf) -> std::thread::JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(30);
        let sock = loop {
            let found = std::fs::read_dir(&tmp).unwrap().flatten().find(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("plimsoll-broker-")
                    && e.path().join("host-api.sock").exists()
            });
            if let Some(e) = found {
                break e.path().join("host-api.sock");
            }
            if Instant::now() > deadline {
                return vec!["the probe saw no broker socket during the granted run".into()];
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut p = Vec::new();
        let (code, status) = curl_as(65534, &sock);
        if status != "000" {
            p.push(format!(
                "BREACH uid 65534 got HTTP {status} from the broker socket"
            ));
        } else if ![7, 52, 56].contains(&code) {
            p.push(format!("uid 65534's probe ended with curl {code}"));
        }
        // Root, from this process: the connect must succeed (root passes the
        // modes), and the peer check must close it without a byte of answer.
        match std::os::unix::net::UnixStream::connect(&sock) {
            Err(e) => p.push(format!("root's probe did not reach the socket: {e}")),
            Ok(mut s) => {
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                let _ = s
                    .write_all(b"GET /v1/items/1 HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n");
                let mut got = Vec::new();
                match s.read_to_end(&mut got) {
                    Ok(_) if got.is_empty() => {}
                    Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset && got.is_empty() => {
                    }
                    Ok(_) => p.push(format!(
                        "BREACH root (not the runtime) got an answer from the broker socket: {:?}",
                        String::from_utf8_lossy(&got[..got.len().min(80)])
                    )),
                    Err(e) => p.push(format!("root's probe: {e}")),
                }
            }
        }
        eprintln!(
            "     broker probe: uid 65534 and root refused at {}",
            sock.display()
        );
        p
    })
}

// ------------------------------------------------------------------ a tier

/// What the benign cell after a hostile one must meet.
#[derive(Debug, Clone, Copy, PartialEq)]
enum After {
    /// The session goes on.
    Goes,
    /// The daemon ended the session, typed.
    Ended,
    /// Either of the two.
    Either,
}

/// Which of a tier's runs one test makes. Each kind has its own daemon,
/// instance, guest uid and grants file, so the kinds run side by side.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// Every case of the tier in a fresh sandbox.
    Fresh,
    /// The session cases, each as a cell of a fresh session.
    Sessions,
    /// The snippet cases on members of a snippet pool.
    Pool,
}

impl Kind {
    /// The suffix naming this kind's instance and grants file.
    fn suffix(self) -> &'static str {
        match self {
            Kind::Fresh => "",
            Kind::Sessions => "-sessions",
            Kind::Pool => "-pool",
        }
    }
}

struct Tier {
    name: &'static str,
    /// Snippets run on members of a snippet pool (`SANDBOX_SNIPPET_POOL`).
    pool: bool,
    daemon: Daemon,
    containers: Option<Containers>,
    guest_uid: Option<u32>,
    rt: tokio::runtime::Runtime,
    client: Runner,
    sentinel: Sentinel,
    api: Api,
    canary: String,
    base_fds: usize,
    base_threads: u64,
    base_rss_kib: u64,
    failures: Vec<String>,
    ran: usize,
}

impl Tier {
    fn start(name: &'static str, kind: Kind) -> Tier {
        let pool = kind == Kind::Pool;
        let canary = format!("canary-{:032x}", rand::random::<u128>());
        let api = Api::start();
        let grants = root().join(format!(
            "target/hostile-grants-{name}{}.json",
            kind.suffix()
        ));
        std::fs::create_dir_all(grants.parent().unwrap()).unwrap();
        std::fs::write(
            &grants,
            serde_json::json!({"profiles": {"items": {
                "base_url": api.url,
                "allow": ["GET /v1/items/*", "POST /v1/items"],
                "allowed_callers": ["static"],
                "max_calls": 12,
                "token": {"type": "static", "env": "HOSTILE_API_TOKEN"},
            }}})
            .to_string(),
        )
        .unwrap();
        let instance = format!(
            "plimsoll:hostile-{name}{}-{}",
            kind.suffix(),
            std::process::id()
        );
        let mut env = vec![
            ("PLIMSOLL_GRANTS_FILE", grants.display().to_string()),
            // The canary: a daemon environment variable and the broker's credential.
            ("HOSTILE_CANARY", canary.clone()),
            ("HOSTILE_API_TOKEN", canary.clone()),
            ("SANDBOX_MAX_CONCURRENT", "4".into()),
        ];
        let mut guest_uid = None;
        match name {
            "wasm" => env.push(("SANDBOX_PROVIDER", "wasm".into())),
            rt => {
                // A uid (and uid+1) per tier and kind: the leftover-process
                // check counts the guest uid's host processes, and the tiers
                // and kinds run side by side.
                let base = if rt == "runc" { 52000 } else { 53000 };
                let uid = base
                    + match kind {
                        Kind::Fresh => 0,
                        Kind::Pool => 10,
                        Kind::Sessions => 20,
                    };
                guest_uid = Some(uid);
                env.extend([
                    ("SANDBOX_PROVIDER", "docker".into()),
                    ("SANDBOX_DOCKER_RUNTIME", rt.into()),
                    ("SANDBOX_GUEST_UID", uid.to_string()),
                    ("SANDBOX_MAX_SESSIONS", "2".into()),
                    ("SANDBOX_MEMORY_MB", "256".into()),
                ]);
            }
        }
        if pool {
            env.push(("SANDBOX_SNIPPET_POOL", POOL_SIZE.to_string()));
        }
        let containers = (name != "wasm").then(|| Containers::watch(&instance));
        let daemon = Daemon::start(&env, &instance);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let client = daemon.client();
        let mut t = Tier {
            name,
            pool,
            daemon,
            containers,
            guest_uid,
            rt,
            client,
            sentinel: Sentinel::start(),
            api,
            canary,
            base_fds: 0,
            base_threads: 0,
            base_rss_kib: 0,
            failures: vec![],
            ran: 0,
        };
        // Warm up, then take the baseline.
        for _ in 0..3 {
            t.benign().unwrap();
        }
        std::thread::sleep(Duration::from_millis(300));
        // A pool's members hold fds (their attach stream, pidfds): the
        // baseline is taken with the pool full, and so is every comparison.
        assert!(
            eventually(60, || t.pool_full()),
            "the snippet pool did not fill"
        );
        t.base_fds = t.daemon.fds();
        t.base_threads = t.daemon.status("Threads:");
        t.base_rss_kib = t.daemon.status("VmRSS:");
        t
    }

    fn benign(&self) -> Result<(), String> {
        let r = Request::new(Payload::JavaScript(JavaScriptRun {
            code: "console.log('benign')".into(),
            grant_profile: String::new(),
        }));
        let resp = self
            .rt
            .block_on(self.client.run(r, CancellationToken::new()))
            .map_err(|e| format!("benign run: {e}"))?;
        let s = seen_from(resp.output.as_ref().unwrap(), String::new());
        (s.stdout == "benign\n" && s.exit_code == 0)
            .then_some(())
            .ok_or_else(|| format!("benign run gave {s:?}"))
    }

    /// Runs one case (on `session` tiers: as a cell of a fresh session),
    /// checks its outcome and channel, then the post-conditions.
    fn run(&mut self, case: &Case, tier: &str) {
        let label = format!(
            "{}@{}",
            case.id,
            if tier == "session" {
                format!("session-{}", self.name)
            } else if self.pool {
                format!("{}+pool", self.name)
            } else {
                self.name.to_owned()
            }
        );
        let expect = case
            .expect
            .get(&format!("session-{}", self.name))
            .filter(|_| tier == "session")
            .or_else(|| case.expect.get(self.name).filter(|_| tier != "session"))
            .or_else(|| case.expect.get(tier))
            .unwrap_or(case.expect("*"))
            .clone();
        let started = Instant::now();
        let mut problems = Vec::new();
        for round in 0..case.runs {
            if self.pool && !eventually(60, || self.members_ready() > 0) {
                problems.push(format!("round {round}: the snippet pool did not refill"));
            }
            let req = case.request(tier, self.name, &self.sentinel.targets());
            let got = match &expect {
                Expect::Refused(code) => self.refused(&req, code),
                _ if tier == "session" => {
                    let label = format!("session-{}", self.name);
                    let after = if case.ends_session.contains(&label) {
                        After::Ended
                    } else if case.may_end_session.contains(&label) {
                        After::Either
                    } else {
                        After::Goes
                    };
                    self.in_session(req, after)
                }
                _ if case.probe.is_some() => {
                    // Host-side probes of the run's broker socket while it runs.
                    let probe = probe_broker(self.daemon.tmp.path().to_owned());
                    let got = self.answered(req);
                    problems.extend(probe.join().unwrap());
                    got
                }
                _ => self.answered(req),
            };
            match got {
                Err(e) => problems.push(format!("round {round}: {e}")),
                Ok(None) => {}
                Ok(Some(seen)) => {
                    problems.extend(judge(case, tier, &expect, &seen, &self.canary));
                }
            }
        }
        let elapsed = started.elapsed();
        problems.extend(self.assert_clean());
        self.ran += 1;
        if problems.is_empty() {
            eprintln!("ok   {label} ({} ms)", elapsed.as_millis());
        } else {
            eprintln!("FAIL {label}: {problems:?}");
            self.failures.push(format!("{label}: {problems:?}"));
        }
    }

    fn answered(&self, req: Request) -> Result<Option<Seen>, String> {
        let resp = self
            .rt
            .block_on(self.client.run(req, CancellationToken::new()))
            .map_err(|e| format!("expected a result, got {:?}: {e}", e.code()))?;
        let policy = &resp
            .record
            .as_ref()
            .map(|r| r.policy.clone())
            .unwrap_or_default();
        if self.pool && !policy.ends_with(plimsoll_core::record::WARM_POOL_POLICY) {
            return Err(format!("not run on a pool member: policy {policy:?}"));
        }
        Ok(Some(seen_of(&resp)))
    }

    /// Snippet pool members waiting now, as the daemon's metrics say.
    fn members_ready(&self) -> u64 {
        let (_, _, metrics) = http(&self.daemon.metrics, "GET", "/metrics", b"");
        metrics
            .lines()
            .find_map(|l| l.strip_prefix("plimsoll_snippet_pool_ready "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Whether the snippet pool is full (always, without one).
    fn pool_full(&self) -> bool {
        !self.pool || self.members_ready() == POOL_SIZE as u64
    }

    /// Full ids of this tier's snippet pool members still present (none
    /// without a pool).
    fn members(&self) -> Vec<String> {
        if !self.pool {
            return Vec::new();
        }
        let filter = format!("label=io.plimsoll.instance={}", self.daemon.instance);
        docker(&[
            "ps",
            "-aq",
            "--no-trunc",
            "--filter",
            &filter,
            "--filter",
            "label=io.plimsoll.pool=snippet",
        ])
        .lines()
        .map(str::to_owned)
        .collect()
    }

    /// Runs `req` as a cell of a fresh session, then a benign cell (which
    /// also names any process a case marked `plimsoll-leftover` still alive): the
    /// session survives its hostile cell or, where the case says the daemon
    /// ends it (`ends_session`, or `may_end_session`), the next call is
    /// refused, typed.
    fn in_session(&self, req: Request, after_case: After) -> Result<Option<Seen>, String> {
        self.rt.block_on(async {
            let s = self
                .client
                .open_session(SessionOptions::default())
                .await
                .map_err(|e| format!("open session: {e}"))?;
            let resp = s
                .run(req, CancellationToken::new())
                .await
                .map(|a| a.response);
            let after = s
                .run(Request::new(Payload::Cell(CellRun {
                    language: "python".into(),
                    code: AFTER_CELL.into(),
                    files: vec![],
                })), CancellationToken::new())
                .await
                .map(|a| a.response);
            let closed = s.close().await.map_err(|e| format!("close: {e}"));
            let ended = |r: &plimsoll_core::Result<RunResponse>| {
                matches!(r, Err(e) if e.code() == ErrorCode::SessionEnded)
            };
            if after_case == After::Ended && ended(&resp) {
                // The sandbox's end was seen during the hostile call itself:
                // that call and the next are refused, typed.
                return if ended(&after) {
                    Ok(None)
                } else {
                    Err(format!("expected the session ended, got {after:?}"))
                };
            }
            let resp = resp.map_err(|e| format!("expected a result, got {:?}: {e}", e.code()))?;
            if after_case != After::Goes {
                return match after {
                    Ok(_) if after_case == After::Either => {
                        closed?;
                        Ok(Some(seen_of(&resp)))
                    }
                    Err(e) if e.code() == ErrorCode::SessionEnded => Ok(Some(seen_of(&resp))),
                    other => Err(format!("expected the session ended, got {other:?}")),
                };
            }
            let after = after.map_err(|e| format!("benign cell after: {e}"))?;
            closed?;
            let a = seen_from(after.output.as_ref().unwrap(), String::new());
            if a.stdout != "after\n" {
                return Err(format!("benign cell after the case gave {a:?}"));
            }
            Ok(Some(seen_of(&resp)))
        })
    }

    /// Sends the request raw (the client would refuse it itself) and expects
    /// the daemon's refusal, marked not dispatched.
    fn refused(&self, req: &Request, code: &str) -> Result<Option<Seen>, String> {
        let body = encode(&RunRequest::from_request(req));
        let (status, head, body) = http(
            &self.daemon.addr,
            "POST",
            "/plimsoll.v1.SandboxService/Run",
            &body,
        );
        let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let mut p = Vec::new();
        if status == 200 || v["code"] != code {
            p.push(format!("expected refusal {code}, got {status}: {body}"));
        }
        // Not dispatched: the edge's header, or the NotDispatched detail a
        // procedure's refusal carries (wire.md).
        let detail = v["details"]
            .as_array()
            .is_some_and(|d| d.iter().any(|d| d["type"] == "plimsoll.v1.NotDispatched"));
        if !head.contains("plimsoll-not-dispatched:") && !detail {
            p.push("refusal not marked not dispatched".into());
        }
        if body.contains(&self.canary) {
            p.push("canary in the refusal".into());
        }
        if p.is_empty() {
            Ok(None)
        } else {
            Err(p.join("; "))
        }
    }

    /// The post-conditions after every case.
    fn assert_clean(&self) -> Vec<String> {
        let mut p = Vec::new();
        let (status, _, _) = http(&self.daemon.addr, "GET", "/readyz", b"");
        if status != 200 {
            p.push(format!("/readyz answered {status}"));
        }
        if let Err(e) = self.benign() {
            p.push(e);
        }
        if let Some(c) = &self.containers {
            let filter = format!("label=io.plimsoll.instance={}", self.daemon.instance);
            // Waiting pool members stay: at most the pool's size of them, and
            // nothing else (a used member that outlived its run would be one more).
            if !eventually(15, || {
                let all = docker(&["ps", "-aq", "--no-trunc", "--filter", &filter]);
                let members = self.members();
                all.lines().all(|id| members.iter().any(|m| m == id)) && members.len() <= POOL_SIZE
            }) {
                p.push(format!(
                    "containers left: {}",
                    docker(&["ps", "-a", "--filter", &filter])
                ));
            }
            let left = || {
                let members = self.members();
                c.processes()
                    .into_iter()
                    .filter(|p| !members.iter().any(|m| p.contains(m.as_str())))
                    .collect::<Vec<_>>()
            };
            if !eventually(15, || left().is_empty()) {
                p.push(format!("processes left: {:?}", left()));
            }
        }
        if let Some(uid) = self.guest_uid
            && !eventually(10, || {
                let members = self.members();
                processes_of(uid, &members) == 0 && processes_of(uid + 1, &members) == 0
            })
        {
            p.push(format!("processes of guest uid {uid} left"));
        }
        let tmp = self.daemon.tmp.path();
        if !eventually(5, || std::fs::read_dir(tmp).unwrap().next().is_none()) {
            let left: Vec<_> = std::fs::read_dir(tmp)
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .collect();
            p.push(format!("temp files left: {left:?}"));
        }
        if !eventually(10, || {
            self.pool_full() && self.daemon.fds() <= self.base_fds + 2
        }) {
            p.push(format!(
                "daemon fds {} (baseline {})",
                self.daemon.fds(),
                self.base_fds
            ));
        }
        if self.daemon.log.lock().unwrap().contains(&self.canary) {
            p.push("canary in the daemon's log".into());
        }
        let (_, _, metrics) = http(&self.daemon.metrics, "GET", "/metrics", b"");
        if metrics.is_empty() || metrics.contains(&self.canary) {
            p.push("metrics missing or holding the canary".into());
        }
        let hits = self.sentinel.hits.load(Ordering::SeqCst);
        if hits != 0 {
            p.push(format!("{hits} packets reached the host sentinel"));
        }
        p
    }

    /// The tier's closing figures, and the resource check against the baseline.
    fn finish(self) {
        std::thread::sleep(Duration::from_secs(1));
        eventually(60, || self.pool_full());
        let fds = self.daemon.fds();
        let threads = self.daemon.status("Threads:");
        let rss = self.daemon.status("VmRSS:");
        let api_seen = self.api.seen.lock().unwrap().clone();
        eprintln!(
            "hostile[{}]: {} case runs, {} failed; daemon fds {} -> {fds}, threads {} -> {threads}, RSS {} -> {} MiB; API saw {:?}",
            self.name,
            self.ran,
            self.failures.len(),
            self.base_fds,
            self.base_threads,
            self.base_rss_kib / 1024,
            rss / 1024,
            api_seen
        );
        let mut failures = self.failures.clone();
        let listed = |t: &String| {
            t == "POST /v1/items"
                || t.strip_prefix("GET /v1/items/").is_some_and(|seg| {
                    !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_alphanumeric())
                })
        };
        if !api_seen.iter().all(listed) {
            failures.push(format!("a refused route reached the API: {api_seen:?}"));
        }
        if fds > self.base_fds + 2 {
            failures.push(format!("daemon fds {fds} vs baseline {}", self.base_fds));
        }
        // The wasm engine's pooled instances and tokio's blocking pool settle
        // above a cold start; a leak per run would be far past this bound.
        if rss > self.base_rss_kib + 256 * 1024 {
            failures.push(format!(
                "daemon RSS grew {} -> {rss} KiB",
                self.base_rss_kib
            ));
        }
        assert!(self.ran > 0, "no case ran on {}", self.name);
        assert!(
            failures.is_empty(),
            "hostile corpus on {}:\n{}",
            self.name,
            failures.join("\n")
        );
    }
}

/// The outcome and channel checks for one answered run.
fn judge(case: &Case, tier: &str, expect: &Expect, s: &Seen, canary: &str) -> Vec<String> {
    let mut p = Vec::new();
    let ok = match expect {
        Expect::Ok => s.exit_code == 0 && !s.timed_out,
        Expect::Fails => s.exit_code != 0 && !s.timed_out,
        Expect::Timeout => s.timed_out,
        Expect::Stops => s.timed_out || s.exit_code != 0,
        Expect::Ends => !s.timed_out,
        Expect::Refused(_) => false,
    };
    if !ok {
        p.push(format!(
            "expected {expect:?}, got exit {} timed_out {} {}",
            s.exit_code, s.timed_out, s.detail
        ));
    }
    for line in s.stdout.lines().chain(s.stderr.lines()) {
        if line.starts_with("BREACH") {
            p.push(line.to_owned());
        }
    }
    // A capped stream holds at most its cap (1 MiB for steps, 64 KiB for
    // snippets and cells) plus one chunk, whatever the guest wrote.
    if case.truncated
        && !(s.truncated
            && s.stdout.len() <= (1 << 20) + (64 << 10)
            && s.stderr.len() <= (1 << 20) + (64 << 10))
    {
        p.push(format!(
            "expected capped, flagged output: truncated {} stdout {} B stderr {} B",
            s.truncated,
            s.stdout.len(),
            s.stderr.len()
        ));
    }
    for (only, h) in &case.has {
        if (only == "*" || only == tier) && !s.stdout.contains(h.as_str()) {
            p.push(format!("stdout lacks {h:?}"));
        }
    }
    for l in &case.lacks {
        if s.stdout.contains(l.as_str()) || s.stderr.contains(l.as_str()) {
            p.push(format!("output holds {l:?}"));
        }
    }
    if s.stdout.contains(canary) || s.stderr.contains(canary) || s.wire.contains(canary) {
        p.push("the canary secret reached the answer".into());
    }
    if !ok || !p.is_empty() {
        p.push(format!(
            "stdout {:?} stderr {:?}",
            s.stdout.chars().take(600).collect::<String>(),
            s.stderr.chars().take(600).collect::<String>()
        ));
    }
    p
}

/// Every case of tier `name` in a fresh sandbox.
fn run_tier(name: &'static str) {
    let cases = corpus();
    assert!(!cases.is_empty(), "the corpus is missing");
    let mut tier = Tier::start(name, Kind::Fresh);
    for case in &cases {
        if case.tiers.contains(name) {
            tier.run(case, name);
        }
    }
    tier.finish();
}

/// The session cases on docker runtime `name`, each as a cell of a fresh
/// session (the same cases and checks the fresh tier's test ran with them
/// before the two were split to run side by side).
fn run_tier_sessions(name: &'static str) {
    let cases = corpus();
    assert!(!cases.is_empty(), "the corpus is missing");
    let mut tier = Tier::start(name, Kind::Sessions);
    let mut ran = 0;
    for case in &cases {
        if case.tiers.contains("session") || case.tiers.contains(&format!("session-{name}")) {
            tier.run(case, "session");
            ran += 1;
        }
    }
    assert!(ran > 0, "no session case for {name}");
    tier.finish();
}

/// The snippet cases of `name` (those a snippet pool serves: no grant) on
/// members of a snippet pool: the same expectations as fresh containers, and
/// every answer must say it ran on a member.
fn run_tier_pool(name: &'static str) {
    let cases = corpus();
    let mut tier = Tier::start(name, Kind::Pool);
    for case in &cases {
        if case.tiers.contains(name) && case.ext == "js" && case.grant.is_empty() && case.pool {
            tier.run(case, name);
        }
    }
    tier.finish();
}

#[test]
fn corpus_covers_every_category() {
    let cases = corpus();
    let cats: BTreeSet<String> = cases
        .iter()
        .map(|c| {
            c.file
                .parent()
                .unwrap()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    for want in [
        "a-cpu",
        "b-memory",
        "c-processes",
        "d-filesystem",
        "e-output",
        "f-proc",
        "g-privilege",
        "h-network",
        "i-credentials",
        "j-archives",
        "k-cross-run",
        "l-engine",
        "m-api",
    ] {
        assert!(cats.contains(want), "no case in category {want}");
    }
    for tier in ["wasm", "runc", "runsc", "session"] {
        assert!(
            cases.iter().any(|c| c.tiers.contains(tier)),
            "no case runs on {tier}"
        );
    }
}

#[test]
fn hostile_wasm() {
    run_tier("wasm");
}

#[test]
fn hostile_runc() {
    run_tier("runc");
}

#[test]
fn hostile_runsc() {
    run_tier("runsc");
}

#[test]
fn hostile_runc_sessions() {
    run_tier_sessions("runc");
}

#[test]
fn hostile_runsc_sessions() {
    run_tier_sessions("runsc");
}

#[test]
fn hostile_runc_pool() {
    run_tier_pool("runc");
}

#[test]
fn hostile_runsc_pool() {
    run_tier_pool("runsc");
}

/// Hosts that only look like loopback: a grant profile naming one over
/// cleartext http stops the daemon at startup (the credential would travel in
/// clear), and the remote client refuses one as a base URL; the real loopback
/// forms start and are accepted.
#[test]
fn lookalike_loopback_hosts_are_refused_at_startup() {
    let dir = tempfile::tempdir().unwrap();
    let canary = format!("canary-{:032x}", rand::random::<u128>());
    let grants = |host: &str| {
        let f = dir
            .path()
            .join(format!("grants-{:x}.json", rand::random::<u64>()));
        std::fs::write(
            &f,
            serde_json::json!({"profiles": {"items": {
                "base_url": format!("http://{host}"),
                "allow": ["GET /v1/items/*"],
                "allowed_callers": ["static"],
                "token": {"type": "static", "env": "HOSTILE_API_TOKEN"},
            }}})
            .to_string(),
        )
        .unwrap();
        f.display().to_string()
    };
    let lookalikes = [
        "127.attacker.example",
        "127.x.example:8080",
        "127.0.0.1.nip.io",
        "localhost.",
        "localhost.attacker.example",
        "0.0.0.0:9",
        "[::ffff:10.0.0.1]:9",
    ];
    for host in lookalikes {
        let mut c = Command::new(BIN);
        for (k, _) in std::env::vars() {
            if k.starts_with("SANDBOX_") || k.starts_with("PLIMSOLL_") || k.starts_with("DOCKER_") {
                c.env_remove(k);
            }
        }
        let out = c
            .env("PLIMSOLL_ADDR", "127.0.0.1:0")
            .env("PLIMSOLL_METRICS_ADDR", "off")
            .env("PLIMSOLL_TOKEN", TOKEN)
            .env("PLIMSOLL_GRANTS_FILE", grants(host))
            .env("HOSTILE_API_TOKEN", &canary)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains("https off loopback"),
            "http://{host}: the daemon must refuse to start, got {:?}: {stderr}",
            out.status
        );
        assert!(!stderr.contains(&canary), "the credential reached stderr");
        assert!(
            Runner::remote(&format!("http://{host}"), Some(TOKEN.into()), false, None).is_err(),
            "the client must refuse http://{host}"
        );
    }
    // The real loopback forms, one profile each, in one daemon (wasm: the
    // disabled provider takes no grants file).
    let real = ["LOCALHOST:9", "[::1]:9", "0x7f.1:9", "[::ffff:127.0.0.1]:9"];
    let profiles: serde_json::Map<String, serde_json::Value> = real
        .iter()
        .enumerate()
        .map(|(i, host)| {
            (
                format!("p{i}"),
                serde_json::json!({
                    "base_url": format!("http://{host}"),
                    "allow": ["GET /v1/items/*"],
                    "allowed_callers": ["static"],
                    "token": {"type": "static", "env": "HOSTILE_API_TOKEN"},
                }),
            )
        })
        .collect();
    let file = dir.path().join("grants-real.json");
    std::fs::write(
        &file,
        serde_json::json!({ "profiles": profiles }).to_string(),
    )
    .unwrap();
    let d = Daemon::start(
        &[
            ("SANDBOX_PROVIDER", "wasm".into()),
            ("PLIMSOLL_GRANTS_FILE", file.display().to_string()),
            ("HOSTILE_API_TOKEN", canary.clone()),
        ],
        &format!("plimsoll:hostile-loopback-{}", std::process::id()),
    );
    assert!(!d.addr.is_empty(), "real loopback hosts: the daemon serves");
    assert!(!d.log.lock().unwrap().contains(&canary));
    for host in real {
        assert!(
            Runner::remote(&format!("http://{host}"), Some(TOKEN.into()), false, None).is_ok(),
            "the client accepts http://{host}"
        );
    }
}
