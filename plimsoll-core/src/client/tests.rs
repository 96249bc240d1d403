//! The one caller surface, embedded and remote side by side. The remote side
//! talks over real HTTP to a relay: a Connect JSON server in front of a real
//! engine (the same `Memo` engine the embedded side uses) that can tamper
//! with its answers. Each of the disagreements the language surfaces once had
//! is checked here on both links:
//!
//! - a session call's floor is raised to the session's, so the same call has
//!   the same request digest whichever way it goes;
//! - a rule intersection that shares no identity is refused before anything
//!   is sent;
//! - an answer that does not parse is a transport error;
//! - an answer whose record does not verify is refused, and the session then
//!   sends nothing but its close.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::engine::Caller;
use crate::request::{Envelope, JavaScriptRun};
use crate::result::Output;
use crate::testkit::{engine, on};
use crate::wire::connect::ConnectError;
use crate::wire::json::{decode, encode};
use crate::wire::{CloseSessionRequest, RunRequest, SessionRunResponse};

/// What the relay does to its next 200 answers.
#[derive(Clone, Copy, PartialEq)]
enum Tamper {
    Honest,
    /// A body that is not an answer.
    Garbage,
    /// The guest's stdout changed after the record was stamped.
    Stdout,
}

struct Relay {
    engine: Engine,
    tamper: Mutex<Tamper>,
    /// Calls that reached the engine, by method.
    session_runs: AtomicUsize,
    runs: AtomicUsize,
}

impl Relay {
    fn set(&self, t: Tamper) {
        *self.tamper.lock().unwrap() = t;
    }

    async fn dispatch(&self, method: &str, body: &[u8]) -> crate::Result<Vec<u8>> {
        let anon = Caller::anonymous();
        let bad = |e: String| Error::invalid(e);
        match method {
            "Describe" => Ok(encode(&self.engine.describe())),
            "Run" => {
                self.runs.fetch_add(1, Ordering::SeqCst);
                let req = decode::<RunRequest>(body).map_err(bad)?.into_request()?;
                let resp = self
                    .engine
                    .run(&anon, req, CancellationToken::new())
                    .await?;
                Ok(encode(&resp))
            }
            "OpenSession" => {
                let req = decode(body).map_err(bad)?;
                Ok(encode(&self.engine.open_session(&anon, &req).await?))
            }
            "SessionRun" => {
                self.session_runs.fetch_add(1, Ordering::SeqCst);
                let wire = decode::<RunRequest>(body).map_err(bad)?;
                let id = wire.session_id.clone();
                let req = wire.into_request()?;
                let resp = self
                    .engine
                    .session_run(&anon, &id, req, CancellationToken::new())
                    .await?;
                Ok(encode(&resp))
            }
            "CloseSession" => {
                let req: CloseSessionRequest = decode(body).map_err(bad)?;
                let resp = self
                    .engine
                    .close_session(&anon, req.protocol, &req.session_id)
                    .await?;
                Ok(encode(&resp))
            }
            other => Err(Error::unsupported(format!("no method {other}"))),
        }
    }

    /// A 200 body as the tamper setting has it.
    fn tampered(&self, method: &str, body: Vec<u8>) -> Vec<u8> {
        let restamp = |r: &mut RunResponse| {
            if let Some(Output::JavaScript(j)) = &mut r.output {
                j.stdout = b"tampered".to_vec();
            }
        };
        match (*self.tamper.lock().unwrap(), method) {
            (Tamper::Garbage, "Run" | "SessionRun") => b"[]".to_vec(),
            (Tamper::Stdout, "Run") => {
                let mut r: RunResponse = decode(&body).unwrap();
                restamp(&mut r);
                encode(&r)
            }
            (Tamper::Stdout, "SessionRun") => {
                let mut r: SessionRunResponse = decode(&body).unwrap();
                restamp(r.run.as_mut().unwrap());
                encode(&r)
            }
            _ => body,
        }
    }
}

/// Serves `relay` on a loopback port; returns its base URL.
async fn serve(relay: Arc<Relay>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (s, _) = listener.accept().await.unwrap();
            let relay = relay.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let relay = relay.clone();
                        async move {
                            let method =
                                req.uri().path().rsplit('/').next().unwrap_or("").to_owned();
                            let id = req.headers().get("plimsoll-request-id").cloned();
                            let body = req.into_body().collect().await.unwrap().to_bytes();
                            let (status, body) = match relay.dispatch(&method, &body).await {
                                Ok(b) => (200, relay.tampered(&method, b)),
                                Err(e) => {
                                    let ce = ConnectError::from(&e);
                                    (ce.code.http_status(), ce.to_json())
                                }
                            };
                            let mut resp = hyper::Response::builder()
                                .status(status)
                                .header("content-type", "application/json");
                            if let Some(id) = id {
                                resp = resp.header("plimsoll-request-id", id);
                            }
                            Ok::<_, Infallible>(resp.body(Full::new(Bytes::from(body))).unwrap())
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(s), svc)
                    .await;
            });
        }
    });
    format!("http://{addr}")
}

/// An embedded runner and a remote one, each over its own `Memo` engine.
async fn both() -> (Runner, Runner, Arc<Relay>) {
    let (embedded, _, _) = engine(on()).await;
    let (behind, _, _) = engine(on()).await;
    let relay = Arc::new(Relay {
        engine: behind,
        tamper: Mutex::new(Tamper::Honest),
        session_runs: AtomicUsize::new(0),
        runs: AtomicUsize::new(0),
    });
    let url = serve(relay.clone()).await;
    let remote = Runner::remote(&url, None, false, None).unwrap();
    (Runner::from_engine(embedded), remote, relay)
}

fn js(code: &str) -> Request {
    Request::new(Payload::JavaScript(JavaScriptRun {
        code: code.into(),
        ..Default::default()
    }))
}

fn rule(ids: &[&str]) -> SoftwareRule {
    SoftwareRule {
        mode: if ids.len() == 1 { "exact" } else { "approved" }.into(),
        identities: ids.iter().map(|s| (*s).to_owned()).collect(),
    }
}

fn go() -> CancellationToken {
    CancellationToken::new()
}

#[tokio::test]
async fn a_session_call_carries_the_session_floor_on_every_link() {
    let (embedded, remote, _) = both().await;
    let mut digests = Vec::new();
    for runner in [&embedded, &remote] {
        let s = runner
            .open_session(SessionOptions {
                minimum_isolation: "container".into(),
                ..Default::default()
            })
            .await
            .unwrap();
        // The call names no floor (and then a lower one): it goes with the session's.
        for floor in ["", "process"] {
            let mut req = js("a");
            req.envelope.minimum_isolation = floor.into();
            let a = s.run(req, go()).await.unwrap();
            assert_eq!(a.request.envelope.minimum_isolation, "container");
            let record = a.response.record.as_ref().unwrap();
            assert_eq!(
                record.request_sha256,
                crate::digest::request_digest(&a.request.envelope, Some(&a.request.payload))
            );
            digests.push(record.request_sha256.clone());
        }
        s.close().await.unwrap();
    }
    // The same calls, the same request digests, embedded and remote.
    assert_eq!(digests[..2], digests[2..]);
}

#[tokio::test]
async fn rules_that_share_no_identity_are_refused_before_sending() {
    let (embedded, remote, relay) = both().await;
    for runner in [&embedded, &remote] {
        let s = runner
            .open_session(SessionOptions {
                software_rule: Some(rule(&["memo:1", "other:2"])),
                ..Default::default()
            })
            .await
            .unwrap();
        let mut req = js("a");
        req.envelope.software_rule = Some(rule(&["other:3"]));
        let e = s.run(req, go()).await.unwrap_err();
        assert_eq!(
            (e.code(), e.not_dispatched()),
            (ErrorCode::InvalidRequest, Some(Refusal::Request)),
            "{e}"
        );
        // An overlap narrows the rule; the session goes on.
        let mut req = js("b");
        req.envelope.software_rule = Some(rule(&["other:2", "memo:1"]));
        let a = s.run(req, go()).await.unwrap();
        assert_eq!(
            a.request.envelope.software_rule,
            Some(rule(&["memo:1", "other:2"]))
        );
        assert_eq!(s.close().await.unwrap().calls, 1);
    }
    assert_eq!(relay.session_runs.load(Ordering::SeqCst), 1);
    // The engine holds a call to the same rule: a caller that skips the
    // intersection is refused there too.
    let open = relay
        .engine
        .open_session(
            &Caller::anonymous(),
            &OpenSessionRequest {
                protocol: PROTOCOL,
                software_rule: Some(rule(&["memo:1"])),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let mut req = js("c");
    req.envelope = Envelope {
        software_rule: Some(rule(&["other:3"])),
        ..req.envelope
    };
    let e = relay
        .engine
        .session_run(&Caller::anonymous(), &open.session_id, req, go())
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidRequest);
}

#[tokio::test]
async fn a_malformed_answer_is_a_transport_error() {
    let (_, remote, relay) = both().await;
    let s = remote
        .open_session(SessionOptions::default())
        .await
        .unwrap();
    relay.set(Tamper::Garbage);
    let e = remote.run(js("a"), go()).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Transport, "{e}");
    let e = s.run(js("a"), go()).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Transport, "{e}");
    // The same bytes kept and verified later: the same code, in every language.
    let e = crate::verify::response_from_json(b"[]").unwrap_err();
    assert_eq!(e.code(), ErrorCode::Transport);
    let e = crate::verify::request_from_json(b"[]").unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidRequest);
}

#[tokio::test]
async fn an_unverifiable_answer_stops_the_session_but_its_close() {
    let (_, remote, relay) = both().await;
    relay.set(Tamper::Stdout);
    let e = remote.run(js("a"), go()).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::RecordMismatch, "{e}");
    assert_eq!(e.not_dispatched(), None, "a tampered answer may have run");

    relay.set(Tamper::Honest);
    let s = remote
        .open_session(SessionOptions::default())
        .await
        .unwrap();
    s.run(js("a"), go()).await.unwrap();
    relay.set(Tamper::Stdout);
    let e = s.run(js("b"), go()).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::RecordMismatch, "{e}");
    relay.set(Tamper::Honest);
    let e = s.run(js("c"), go()).await.unwrap_err();
    assert_eq!(
        (e.code(), e.not_dispatched()),
        (ErrorCode::RecordMismatch, Some(Refusal::Request)),
        "{e}"
    );
    assert_eq!(
        relay.session_runs.load(Ordering::SeqCst),
        2,
        "nothing sent after"
    );
    // The close still goes, and its summary (two calls the daemon ran, the
    // chain seen holding one) is checked against the chain: a mismatch.
    let e = s.close().await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::RecordMismatch, "{e}");
    assert_eq!(s.ended().await, Some(SessionEnd::Closed));
    assert!(s.is_closed().await);
}

#[tokio::test]
async fn runs_and_cancellation_are_alike_on_both_links() {
    let (embedded, remote, relay) = both().await;
    for runner in [&embedded, &remote] {
        assert_eq!(runner.describe().await.unwrap().isolation, "container");
        // Memo's fresh runs answer an empty result; its record is verified.
        let a = runner.run(js("hello"), go()).await.unwrap();
        assert!(matches!(a.output, Some(Output::JavaScript(_))), "{a:?}");
        assert_eq!(a.evidence.isolation, "container");
        // Cancelled before sending: refused, nothing ran.
        let cancel = go();
        cancel.cancel();
        let e = runner.run(js("never"), cancel).await.unwrap_err();
        assert_eq!(
            (e.code(), e.not_dispatched()),
            (ErrorCode::Cancelled, Some(Refusal::Request))
        );
        // A cell runs only in a session; a module never in one.
        let cell = Request::new(Payload::Cell(crate::request::CellRun {
            language: "python".into(),
            code: "1".into(),
            files: vec![],
        }));
        let e = runner.run(cell, go()).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidRequest);
    }
    assert_eq!(relay.runs.load(Ordering::SeqCst), 1);
}
