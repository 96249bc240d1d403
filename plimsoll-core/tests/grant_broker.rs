//! The broker against a real HTTP API on loopback, directly and through the
//! per-run Unix socket a container would use.
#![expect(
    clippy::unwrap_used,
    reason = "a test helper that cannot do its job should fail the test loudly"
)]

mod support;

use std::time::Duration;

use plimsoll_core::grant::socket::{Access, HostSocket};
use plimsoll_core::grant::{Grants, GuestCall, profile};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use support::api;

const STATIC_TOKEN: &str = "static-upstream-credential-0123456789";
const JWT_SECRET: &str = "jwt-signing-secret-0123456789-abcdefghij";

fn grants(base: &str, max_calls: u32) -> Grants {
    let text = format!(
        r#"{{"profiles":{{
          "items":{{"base_url":"{base}","allow":["GET /v1/items/*","POST /v1/items","GET /v1/echo-auth"],"allowed_callers":["alice"],"max_calls":{max_calls},"token":{{"type":"static","env":"ITEMS_TOKEN"}}}},
          "jwt":{{"base_url":"{base}","allow":["GET /v1/items/*"],"allowed_callers":["alice"],"scopes":["items:read"],"token":{{"type":"jwt","secret_env":"ITEMS_JWT","audience":"items-api"}}}},
          "nothing":{{"base_url":"{base}","allow":[],"allowed_callers":["alice"],"token":{{"type":"static","env":"ITEMS_TOKEN"}}}}}}}}"#
    );
    let get = |k: &str| match k {
        "ITEMS_TOKEN" => Some(STATIC_TOKEN.to_owned()),
        "ITEMS_JWT" => Some(JWT_SECRET.to_owned()),
        _ => None,
    };
    Grants::from_profiles(profile::parse(text.as_bytes(), &get).unwrap())
}

fn call(method: &str, target: &str, body: &[u8]) -> GuestCall {
    GuestCall {
        method: method.into(),
        target: target.into(),
        body: body.to_vec(),
        content_type: Some("application/json".into()),
    }
}

#[tokio::test]
async fn allowed_calls_carry_the_credential_and_refusals_never_leave() {
    let (base, seen) = api().await;
    let g = grants(&base, 11);
    assert!(
        g.check("items", "bob", false).is_err(),
        "bob is not an allowed caller"
    );
    assert_eq!(
        g.check("items", "bob", false).unwrap_err().message(),
        g.check("no-such", "alice", false).unwrap_err().message(),
        "unknown and forbidden profiles get the same refusal"
    );
    assert!(
        g.check("items", "alice", true).is_err(),
        "not allowed in sessions"
    );
    let b = g
        .open(
            g.check("items", "alice", false).unwrap(),
            "alice",
            Duration::from_secs(10),
        )
        .unwrap();

    let a = b.call(call("GET", "/v1/items/42", b"")).await;
    assert_eq!(a.status, 200);
    assert_eq!(
        String::from_utf8(a.body).unwrap(),
        r#"{"ok":true,"target":"/v1/items/42"}"#
    );
    let refused = [
        (call("DELETE", "/v1/items/42", b""), 403),
        (call("GET", "/v1/admin", b""), 403),
        (call("GET", "/v1/items/../admin", b""), 400),
        (call("GET", "/v1/items/a%2Fb", b""), 400),
        (call("GET", "/v1/items/42?all=1", b""), 400),
        (call("POST", "/v1/items", &vec![b'x'; 1024 * 1024 + 1]), 413),
    ];
    for (c, status) in refused {
        assert_eq!(
            b.call(c.clone()).await.status,
            status,
            "{} {}",
            c.method,
            c.target
        );
    }
    let a = b.call(call("POST", "/v1/items", br#"{"name":"n"}"#)).await;
    assert_eq!(a.status, 200);
    // An API that echoes the credential: the guest never sees it.
    let a = b.call(call("GET", "/v1/echo-auth", b"")).await;
    assert!(!String::from_utf8_lossy(&a.body).contains(STATIC_TOKEN));
    // Budget 11: three sent and six refused above (a refusal is spent too),
    // two more, then the budget is spent, for allowed and refused calls alike.
    assert_eq!(b.call(call("GET", "/v1/items/1", b"")).await.status, 200);
    assert_eq!(b.call(call("GET", "/v1/items/2", b"")).await.status, 200);
    assert_eq!(b.call(call("GET", "/v1/items/3", b"")).await.status, 429);
    assert_eq!(b.call(call("DELETE", "/v1/items/3", b"")).await.status, 429);

    let log = seen.lock().unwrap().clone();
    let targets: Vec<String> = log
        .iter()
        .map(|s| format!("{} {}", s.method, s.target))
        .collect();
    assert_eq!(
        targets,
        [
            "GET /v1/items/42",
            "POST /v1/items",
            "GET /v1/echo-auth",
            "GET /v1/items/1",
            "GET /v1/items/2"
        ]
    );
    assert!(
        log.iter()
            .all(|s| s.auth == format!("Bearer {STATIC_TOKEN}"))
    );
    assert_eq!(log[1].body, br#"{"name":"n"}"#);
    let s = b.summary();
    assert_eq!((s.sent, s.denied, s.failed), (5, 8, 0));
    let counted: u64 = g.metrics().snapshot().iter().map(|(_, n)| n).sum();
    assert_eq!(counted, 13, "every call is counted, as metadata only");
}

#[tokio::test]
async fn jwt_subject_is_the_caller_and_empty_routes_reach_nothing() {
    let (base, seen) = api().await;
    let g = grants(&base, 5);
    let b = g
        .open(
            g.check("jwt", "alice", false).unwrap(),
            "alice",
            Duration::from_secs(10),
        )
        .unwrap();
    assert_eq!(b.call(call("GET", "/v1/items/7", b"")).await.status, 200);
    let auth = seen.lock().unwrap()[0].auth.clone();
    let token = auth.strip_prefix("Bearer ").unwrap();
    let mut v = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::HS256);
    v.set_audience(&["items-api"]);
    let key = jsonwebtoken::DecodingKey::from_secret(JWT_SECRET.as_bytes()).unwrap();
    let claims = jsonwebtoken::decode::<serde_json::Value>(token, &key, &v)
        .unwrap()
        .claims;
    assert_eq!(
        (claims["sub"].as_str(), claims["scope"].as_str()),
        (Some("alice"), Some("items:read"))
    );

    let nothing = g
        .open(
            g.check("nothing", "alice", false).unwrap(),
            "alice",
            Duration::from_secs(10),
        )
        .unwrap();
    assert_eq!(nothing.call(call("GET", "/", b"")).await.status, 403);
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn an_unreachable_api_is_an_http_error_to_the_guest() {
    let g = grants("http://127.0.0.1:1", 5);
    let b = g
        .open(
            g.check("items", "alice", false).unwrap(),
            "alice",
            Duration::from_secs(10),
        )
        .unwrap();
    let a = b.call(call("GET", "/v1/items/1", b"")).await;
    assert_eq!(a.status, 502);
    assert_eq!(b.summary().failed, 1);
}

async fn over_socket(path: &std::path::Path, request: &str) -> String {
    over_socket_bytes(path, request.as_bytes()).await
}

#[tokio::test]
async fn the_unix_socket_serves_only_the_current_grant() {
    let (base, seen) = api().await;
    let g = grants(&base, 50);
    let dir = tempfile::tempdir().unwrap();
    let sock = HostSocket::start(dir.path(), own()).unwrap();
    let get = |t: &str| {
        format!(
            "GET {t} HTTP/1.1\r\nHost: broker\r\nAuthorization: Bearer guest-forged\r\nConnection: close\r\n\r\n"
        )
    };
    assert!(
        over_socket(&sock.path(), &get("/v1/items/1"))
            .await
            .starts_with("HTTP/1.1 503")
    );
    let b = g
        .open(
            g.check("items", "alice", false).unwrap(),
            "alice",
            Duration::from_secs(10),
        )
        .unwrap();
    sock.serve(Some(b));
    let ok = over_socket(&sock.path(), &get("/v1/items/9")).await;
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    assert!(
        ok.ends_with(r#"{"ok":true,"target":"/v1/items/9"}"#),
        "{ok}"
    );
    assert!(
        over_socket(&sock.path(), &get("/v1/items/9?x=1"))
            .await
            .starts_with("HTTP/1.1 400")
    );
    assert!(
        over_socket(&sock.path(), &get("/v1/items/%2e%2e"))
            .await
            .starts_with("HTTP/1.1 400")
    );
    sock.serve(None);
    assert!(
        over_socket(&sock.path(), &get("/v1/items/9"))
            .await
            .starts_with("HTTP/1.1 503")
    );
    let log = seen.lock().unwrap().clone();
    assert_eq!(log.len(), 1);
    assert_eq!(
        log[0].auth,
        format!("Bearer {STATIC_TOKEN}"),
        "the guest's own Authorization header is dropped"
    );
    let d = sock.dir().to_owned();
    drop(sock);
    assert!(!d.exists(), "the socket directory is removed");
}

/// An oversized body is refused with a 413 the sender can read: the socket
/// reads the rest of the body (within its discard bound) before answering, so
/// a client still writing gets no `EPIPE`. 3 MiB is well past the kernel's
/// socket buffers, so closing early would fail the write here every time.
#[tokio::test]
async fn an_oversized_body_gets_a_413_the_sender_reads() {
    let (base, seen) = api().await;
    let g = grants(&base, 50);
    let dir = tempfile::tempdir().unwrap();
    let sock = HostSocket::start(dir.path(), own()).unwrap();
    let b = g
        .open(
            g.check("items", "alice", false).unwrap(),
            "alice",
            Duration::from_secs(10),
        )
        .unwrap();
    sock.serve(Some(b));
    let post = |len: usize| {
        let mut r = format!(
            "POST /v1/items HTTP/1.1\r\nHost: broker\r\nContent-Type: text/plain\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n"
        )
        .into_bytes();
        r.resize(r.len() + len, b'x');
        r
    };
    let mut s = tokio::net::UnixStream::connect(sock.path()).await.unwrap();
    s.write_all(&post(3 * 1024 * 1024))
        .await
        .expect("the whole oversized request is written");
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    let out = String::from_utf8(out).unwrap();
    assert!(out.starts_with("HTTP/1.1 413"), "{out}");
    assert!(
        out.ends_with(r#"{"error":"the request body exceeds 1 MiB"}"#),
        "{out}"
    );
    // Exactly the limit is still served.
    let ok = over_socket_bytes(&sock.path(), &post(1024 * 1024)).await;
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    let log = seen.lock().unwrap().clone();
    assert_eq!(
        log.len(),
        1,
        "only the body within the limit reached the API"
    );
    assert_eq!(log[0].body.len(), 1024 * 1024);
}

async fn over_socket_bytes(path: &std::path::Path, request: &[u8]) -> String {
    let mut s = tokio::net::UnixStream::connect(path).await.unwrap();
    s.write_all(request).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    String::from_utf8(out).unwrap()
}

/// The test process's own uid as the guest's: this process may connect.
fn own() -> Access {
    use std::os::unix::fs::MetadataExt;
    Access {
        guest_uid: std::fs::metadata("/proc/self").unwrap().uid(),
        via_runsc: false,
    }
}

/// Connects (as this process), sends a request, and reports whether the
/// connection ended without a byte of answer (closed or reset).
async fn no_answer(path: &std::path::Path) -> bool {
    let mut s = tokio::net::UnixStream::connect(path).await.unwrap();
    let _ = s
        .write_all(b"GET /v1/items/8 HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n")
        .await;
    let mut out = Vec::new();
    match tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out)).await {
        Ok(Ok(_)) => out.is_empty(),
        Ok(Err(e)) => e.kind() == std::io::ErrorKind::ConnectionReset && out.is_empty(),
        Err(_) => false,
    }
}

/// A uid no host account has (the guest uid must be one), and a parent
/// directory others may traverse, as the system temp dir is.
const GUEST_UID: u32 = 54000;

fn open_parent() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// `curl` over the socket as host uid `uid` (a real setuid child): curl's
/// exit code and the HTTP status it got (`000` for none).
fn curl_as(uid: u32, path: &std::path::Path) -> (i32, String) {
    use std::os::unix::process::CommandExt;
    assert_eq!(
        own().guest_uid,
        0,
        "this test switches uids: run it as root (as the docker tests are)"
    );
    let out = std::process::Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--max-time",
            "10",
        ])
        .arg("--unix-socket")
        .arg(path)
        .arg("http://broker/v1/items/7")
        .uid(uid)
        .gid(uid)
        .output()
        .expect("curl is needed to connect as another uid");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[tokio::test]
async fn only_the_guest_uid_reaches_the_socket() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let (base, seen) = api().await;
    let g = grants(&base, 50);
    let parent = open_parent();
    let access = Access {
        guest_uid: GUEST_UID,
        via_runsc: false,
    };
    let sock = HostSocket::start(parent.path(), access).unwrap();
    let b = g
        .open(
            g.check("items", "alice", false).unwrap(),
            "alice",
            Duration::from_secs(10),
        )
        .unwrap();
    sock.serve(Some(b));
    // The walls on disk: the directory and the socket belong to the guest
    // uid alone.
    let d = std::fs::metadata(sock.dir()).unwrap();
    let f = std::fs::metadata(sock.path()).unwrap();
    assert_eq!((d.uid(), d.mode() & 0o777), (GUEST_UID, 0o700));
    assert_eq!((f.uid(), f.mode() & 0o777), (GUEST_UID, 0o600));

    let path = sock.path();
    let (code, status) = tokio::task::spawn_blocking(move || curl_as(GUEST_UID, &path))
        .await
        .unwrap();
    assert_eq!(
        (code, status.as_str()),
        (0, "200"),
        "the guest uid is served"
    );

    // Another unprivileged uid cannot even reach the socket (curl: couldn't connect).
    let path = sock.path();
    let (code, _) = tokio::task::spawn_blocking(move || curl_as(65534, &path))
        .await
        .unwrap();
    assert_eq!(code, 7, "uid 65534 must not connect");

    // Root passes the directory's mode; the peer check refuses it: the
    // connection closes without an answer.
    assert!(
        no_answer(&sock.path()).await,
        "a peer that is not the guest gets no answer"
    );
    assert_eq!(sock.refused_peers(), 1);

    // With the directory opened up (as the socket used to be), the peer
    // check alone still refuses another uid: curl sees an empty reply.
    std::fs::set_permissions(sock.dir(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(sock.path(), std::fs::Permissions::from_mode(0o666)).unwrap();
    let path = sock.path();
    let (code, status) = tokio::task::spawn_blocking(move || curl_as(65534, &path))
        .await
        .unwrap();
    // curl sees the close as 7 (before its connect check), 52 (empty reply),
    // 55 (the close came while it was still sending) or 56 (reset: the
    // request unread); the counter shows the peer check, not the file modes,
    // turned it away.
    assert!(
        status == "000" && [7, 52, 55, 56].contains(&code),
        "uid 65534 gets no answer: curl {code} {status}"
    );
    assert_eq!(sock.refused_peers(), 2, "the peer check refused uid 65534");

    let log = seen.lock().unwrap().clone();
    assert_eq!(
        log.len(),
        1,
        "only the guest's call reached the API: {log:?}"
    );
    assert_eq!(log[0].target, "/v1/items/7");
}

#[tokio::test]
async fn under_runsc_only_a_runsc_process_stands_in_for_the_guest() {
    // The gofer connects as root; a root process that is not runsc (this
    // test) is refused even though root may traverse the directory.
    let parent = open_parent();
    let sock = HostSocket::start(
        parent.path(),
        Access {
            guest_uid: GUEST_UID,
            via_runsc: true,
        },
    )
    .unwrap();
    assert!(no_answer(&sock.path()).await);
    assert_eq!(sock.refused_peers(), 1);
    let path = sock.path();
    let (code, status) = tokio::task::spawn_blocking(move || curl_as(GUEST_UID, &path))
        .await
        .unwrap();
    assert_eq!(
        (code, status.as_str()),
        (0, "503"),
        "the guest uid itself is still served (no grant set: 503)"
    );
}

/// CPU time (user + system, clock ticks) a process has used so far.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 1..];
    let f: Vec<&str> = after.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

const EMFILE_CHILD: &str = "PLIMSOLL_TEST_EMFILE_CHILD";

/// The child half of [`an_accept_error_backs_off_instead_of_spinning`]: a
/// process whose fd table is full while a connection waits on its socket.
fn emfile_child(parent: &str) {
    use std::io::BufRead;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let _guard = rt.enter();
    let sock = HostSocket::start(std::path::Path::new(parent), own()).unwrap();
    let pid = std::process::id().to_string();
    let limited = std::process::Command::new("prlimit")
        .args(["--pid", &pid, "--nofile=64:64"])
        .status()
        .unwrap();
    assert!(limited.success(), "prlimit failed");
    let mut fillers = Vec::new();
    loop {
        match std::fs::File::open("/dev/null") {
            Ok(f) => fillers.push(f),
            Err(e) if e.raw_os_error() == Some(24) => break,
            Err(e) => panic!("filling the fd table: {e}"),
        }
    }
    println!("CHILD full {}", sock.path().display());
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).unwrap();
    println!("CHILD errors {}", sock.accept_errors());
    drop(fillers);
    line.clear();
    // Served once fds are free; wait for the parent to say it has its answer.
    std::io::stdin().lock().read_line(&mut line).unwrap();
}

#[test]
fn an_accept_error_backs_off_instead_of_spinning() {
    use std::io::{BufRead, BufReader, Read, Write};
    if let Ok(parent) = std::env::var(EMFILE_CHILD) {
        return emfile_child(&parent);
    }
    let parent = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "an_accept_error_backs_off_instead_of_spinning",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(EMFILE_CHILD, parent.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // The child's lines, read on a thread so that a stuck child fails the
    // test instead of hanging it. libtest prints `test <name> ... ` without
    // a newline first, so a marker may sit mid-line.
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let next = |marker: &str| loop {
        let l = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the child ended or stalled");
        if let Some((_, rest)) = l.split_once(marker) {
            return rest.to_owned();
        }
    };
    let path = next("CHILD full ");
    // A connection waits in the backlog; every accept fails with EMFILE.
    let mut conn = std::os::unix::net::UnixStream::connect(&path).unwrap();
    conn.write_all(b"GET /v1/items/1 HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let cpu0 = cpu_ticks(child.id());
    std::thread::sleep(Duration::from_secs(1));
    let cpu1 = cpu_ticks(child.id());
    stdin.write_all(b"release\n").unwrap();
    let errors: u64 = next("CHILD errors ").parse().unwrap();
    // Once fds are free again the waiting connection is served.
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).unwrap();
    stdin.write_all(b"bye\n").unwrap();
    assert!(child.wait().unwrap().success(), "the child failed");
    assert!(errors >= 3, "the accepts did fail with EMFILE ({errors})");
    assert!(
        errors <= 60,
        "{errors} failed accepts in ~1.2 s: the loop did not back off"
    );
    assert!(
        cpu1 - cpu0 <= 20,
        "the child used {} ticks of CPU in 1 s while accepts failed: it spun",
        cpu1 - cpu0
    );
    assert!(
        answer.starts_with("HTTP/1.1 503"),
        "the waiting connection was not served after recovery: {answer:?}"
    );
}
