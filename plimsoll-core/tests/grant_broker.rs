//! The broker against a real HTTP API on loopback, directly and through the
//! per-run Unix socket a container would use.
#![expect(
    clippy::unwrap_used,
    reason = "a test helper that cannot do its job should fail the test loudly"
)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use plimsoll_core::grant::socket::HostSocket;
use plimsoll_core::grant::{Grants, GuestCall, profile};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Debug, Clone)]
struct Seen {
    method: String,
    target: String,
    auth: String,
    body: Vec<u8>,
}

/// A real HTTP API: records every request; `/v1/echo-auth` echoes the credential back.
async fn api() -> (String, Arc<Mutex<Vec<Seen>>>) {
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let (s, _) = listener.accept().await.unwrap();
            let log = log.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let log = log.clone();
                        async move {
                            let method = req.method().to_string();
                            let target = req.uri().to_string();
                            let auth = req
                                .headers()
                                .get("authorization")
                                .map(|v| v.to_str().unwrap().to_owned())
                                .unwrap_or_default();
                            let body = req.into_body().collect().await.unwrap().to_bytes().to_vec();
                            log.lock().unwrap().push(Seen {
                                method,
                                target: target.clone(),
                                auth: auth.clone(),
                                body,
                            });
                            let answer = if target == "/v1/echo-auth" {
                                auth
                            } else {
                                format!("{{\"ok\":true,\"target\":{target:?}}}")
                            };
                            Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(
                                Bytes::from(answer),
                            )))
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(s), svc)
                    .await;
            });
        }
    });
    (format!("http://{addr}"), seen)
}

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
    let g = grants(&base, 5);
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
    // Budget 5: three sent above, two more, then the budget is spent.
    assert_eq!(b.call(call("GET", "/v1/items/1", b"")).await.status, 200);
    assert_eq!(b.call(call("GET", "/v1/items/2", b"")).await.status, 200);
    assert_eq!(b.call(call("GET", "/v1/items/3", b"")).await.status, 429);

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
    assert_eq!((s.sent, s.denied, s.failed), (5, 7, 0));
    let counted: u64 = g.metrics().snapshot().iter().map(|(_, n)| n).sum();
    assert_eq!(counted, 12, "every call is counted, as metadata only");
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
    let mut s = tokio::net::UnixStream::connect(path).await.unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    String::from_utf8(out).unwrap()
}

#[tokio::test]
async fn the_unix_socket_serves_only_the_current_grant() {
    let (base, seen) = api().await;
    let g = grants(&base, 50);
    let dir = tempfile::tempdir().unwrap();
    let sock = HostSocket::start(dir.path()).unwrap();
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
