//! The egress guard over real TCP in front of a real HTTP API on loopback:
//! each run's credential reaches only that run's broker, and the guard's
//! per-run admission holds.
#![expect(
    clippy::unwrap_used,
    reason = "a test helper that cannot do its job should fail the test loudly"
)]

mod support;

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Bytes, Frame};
use plimsoll_core::grant::guard::{self, Guard};
use plimsoll_core::grant::{Grants, profile};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use support::api;

const STATIC_TOKEN: &str = "static-upstream-credential-0123456789";

fn grants(base: &str) -> Grants {
    let text = format!(
        r#"{{"profiles":{{
          "items":{{"base_url":"{base}","allow":["GET /v1/items/*","POST /v1/items"],"allowed_callers":["alice"],"token":{{"type":"static","env":"ITEMS_TOKEN"}}}},
          "nothing":{{"base_url":"{base}","allow":[],"allowed_callers":["bob"],"token":{{"type":"static","env":"ITEMS_TOKEN"}}}}}}}}"#
    );
    let get = |k: &str| (k == "ITEMS_TOKEN").then(|| STATIC_TOKEN.to_owned());
    Grants::from_profiles(profile::parse(text.as_bytes(), &get).unwrap())
}

fn broker(g: &Grants, name: &str, who: &str) -> Arc<plimsoll_core::grant::Broker> {
    g.open(
        g.check(name, who, false).unwrap(),
        who,
        Duration::from_secs(30),
    )
    .unwrap()
}

/// Serves `guard` on a loopback port, as plimsolld's guard listener does.
async fn serve(guard: Arc<Guard>) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (s, _) = listener.accept().await.unwrap();
            let guard = guard.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req| {
                    let guard = guard.clone();
                    async move { Ok::<_, std::convert::Infallible>(guard.handle(req).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(s), svc)
                    .await;
            });
        }
    });
    addr
}

/// One request; the status and body of its answer.
async fn send(addr: std::net::SocketAddr, head: &str, body: &str) -> (u16, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "{head}\r\nHost: guard\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    let text = String::from_utf8(out).unwrap();
    let status = text[9..12].parse().unwrap();
    let body = text.split_once("\r\n\r\n").unwrap().1.to_owned();
    (status, body)
}

fn bearer(pass: &guard::GuardPass) -> String {
    format!("Authorization: Bearer {}", pass.credential().expose())
}

#[tokio::test]
async fn a_run_credential_reaches_only_its_own_runs_broker() {
    let (base, seen) = api().await;
    let g = grants(&base);
    let guard = Guard::new(guard::DEFAULT_PATH);
    let addr = serve(guard.clone()).await;
    let alice = guard.admit(broker(&g, "items", "alice"));
    let bob = guard.admit(broker(&g, "nothing", "bob"));
    assert_eq!(guard.runs(), 2);
    assert!(alice.credential().expose().starts_with("crg_"));
    assert_eq!(alice.credential().len(), 4 + 64);
    assert_ne!(alice.credential().expose(), bob.credential().expose());

    let get = "GET /v1/e2b/guard/v1/items/42 HTTP/1.1";
    let (status, body) = send(addr, &format!("{get}\r\n{}", bearer(&alice)), "").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, r#"{"ok":true,"target":"/v1/items/42"}"#);
    let (status, _) = send(
        addr,
        &format!("POST /v1/e2b/guard/v1/items HTTP/1.1\r\n{}", bearer(&alice)),
        r#"{"name":"n"}"#,
    )
    .await;
    assert_eq!(status, 200);
    // Bob's run has a grant that allows nothing: his credential gets his
    // broker's refusal, never Alice's grant.
    let (status, _) = send(addr, &format!("{get}\r\n{}", bearer(&bob)), "").await;
    assert_eq!(status, 403);
    // The route rules are the broker's, below the guard path.
    let (status, _) = send(
        addr,
        &format!(
            "DELETE /v1/e2b/guard/v1/items/42 HTTP/1.1\r\n{}",
            bearer(&alice)
        ),
        "",
    )
    .await;
    assert_eq!(status, 403);

    // No credential, a malformed one, one never minted: 401, nothing sent.
    let never = format!("Authorization: Bearer crg_{}", "0".repeat(64));
    for auth in [
        String::new(),
        "Authorization: Bearer crg_short".into(),
        format!("Authorization: {}", alice.credential().expose()),
        never,
    ] {
        let head = if auth.is_empty() {
            get.to_owned()
        } else {
            format!("{get}\r\n{auth}")
        };
        assert_eq!(send(addr, &head, "").await.0, 401, "{auth}");
    }
    // Outside the guard path: 404, whoever asks.
    let (status, _) = send(
        addr,
        &format!("GET /v1/items/42 HTTP/1.1\r\n{}", bearer(&alice)),
        "",
    )
    .await;
    assert_eq!(status, 404);

    // A run that ended: its credential is refused.
    let ended = bearer(&alice);
    drop(alice);
    assert_eq!(guard.runs(), 1);
    assert_eq!(send(addr, &format!("{get}\r\n{ended}"), "").await.0, 401);

    let log = seen.lock().unwrap();
    let sent: Vec<String> = log
        .iter()
        .map(|s| format!("{} {}", s.method, s.target))
        .collect();
    assert_eq!(sent, ["GET /v1/items/42", "POST /v1/items"]);
    assert!(
        log.iter()
            .all(|s| s.auth == format!("Bearer {STATIC_TOKEN}"))
    );
    assert!(
        log.iter().all(|s| !s.auth.contains("crg_")),
        "the guard credential never goes upstream"
    );
}

/// A body that never arrives.
struct Stalled;

impl hyper::body::Body for Stalled {
    type Data = Bytes;
    type Error = std::convert::Infallible;
    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Poll::Pending
    }
}

fn request<B>(pass: &guard::GuardPass, body: B) -> hyper::Request<B> {
    hyper::Request::builder()
        .method("POST")
        .uri("/v1/e2b/guard/v1/items")
        .header(
            "authorization",
            format!("Bearer {}", pass.credential().expose()),
        )
        .body(body)
        .unwrap()
}

#[tokio::test]
async fn per_run_admission_bounds_handlers_decoders_and_body_time() {
    let (base, _) = api().await;
    let g = grants(&base);
    let guard = Guard::new(guard::DEFAULT_PATH);
    let decoding = guard.admit(broker(&g, "items", "alice"));
    let handling = guard.admit(broker(&g, "items", "alice"));
    let other = guard.admit(broker(&g, "items", "alice"));
    let spawn = |pass: &guard::GuardPass| {
        let guard = guard.clone();
        let req = request(pass, Stalled);
        tokio::spawn(async move { guard.handle(req).await.status() })
    };
    let whole = || http_body_util::Full::new(Bytes::from_static(br#"{"name":"n"}"#));
    let started = tokio::time::Instant::now();

    // Stalled bodies hold one run's two decode slots; a third request of that
    // run, with a whole body, cannot start reading until they are cut off.
    let stalled: Vec<_> = (0..guard::DECODE_SLOTS).map(|_| spawn(&decoding)).collect();
    // Another run fills its MAX_HANDLING handler places: its next request
    // gets 429 at once.
    let held: Vec<_> = (0..guard::MAX_HANDLING).map(|_| spawn(&handling)).collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let waiting = {
        let guard = guard.clone();
        let req = request(&decoding, whole());
        tokio::spawn(async move { guard.handle(req).await.status() })
    };
    assert_eq!(
        guard.handle(request(&handling, whole())).await.status(),
        429
    );
    // Neither starves a third run.
    assert_eq!(guard.handle(request(&other, whole())).await.status(), 200);
    assert!(started.elapsed() < guard::BODY_WITHIN);

    assert_eq!(waiting.await.unwrap(), 200);
    assert!(
        started.elapsed() >= guard::BODY_WITHIN,
        "it read its body only once the stalled ones gave their slots back"
    );
    for s in stalled.into_iter().chain(held) {
        assert_eq!(s.await.unwrap(), 408, "a body that never ends is cut off");
    }
}
