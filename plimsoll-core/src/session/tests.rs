//! The manager's rules with an in-memory sandbox: ownership, ordering, chain,
//! unanswered calls, ends, close summaries, capacity.

use super::*;
use crate::config::Config;
use crate::engine::Engine;
use crate::request::{CellRun, Envelope, JavaScriptRun, Payload};
use crate::result::Output;
use crate::testkit::{engine, on};
use crate::verify::Chain;
use std::sync::atomic::Ordering;

fn alice() -> Caller {
    Caller {
        principal: "alice".into(),
    }
}

fn open_req() -> OpenSessionRequest {
    OpenSessionRequest {
        protocol: PROTOCOL,
        minimum_isolation: "container".into(),
        ..Default::default()
    }
}

fn js(code: &str) -> Request {
    let mut r = Request::new(Payload::JavaScript(JavaScriptRun {
        code: code.into(),
        grant_profile: String::new(),
    }));
    r.envelope = Envelope {
        minimum_isolation: "container".into(),
        ..Envelope::new()
    };
    r
}

fn cell(code: &str) -> Request {
    Request::new(Payload::Cell(CellRun {
        language: "python".into(),
        code: code.into(),
        files: vec![],
    }))
}

#[tokio::test]
async fn a_chain_of_calls_verifies_and_closes() {
    let (e, flags, _) = engine(on()).await;
    let open = e.open_session(&alice(), &open_req()).await.unwrap();
    assert_eq!(open.session, session_fingerprint(&open.session_id));
    assert_eq!(open.session_id.len(), 32);
    let mut chain = Chain::new(&open.session_id);
    for (i, req) in [cell("x = 1"), js("console.log(1)"), cell("x")]
        .into_iter()
        .enumerate()
    {
        let answer = e
            .session_run(
                &alice(),
                &open.session_id,
                req.clone(),
                CancellationToken::new(),
            )
            .await
            .unwrap();
        chain
            .check_call(&req, answer.run.as_ref().unwrap())
            .unwrap();
        assert_eq!(answer.ended, SessionEnd::Open);
        if i == 2 {
            let Some(Output::Cell(c)) = &answer.run.as_ref().unwrap().output else {
                panic!()
            };
            assert_eq!(
                (c.stdout.as_slice(), c.interpreter_started),
                (&b"x = 1,x"[..], false),
                "state survived"
            );
        }
    }
    let close = e
        .close_session(&alice(), PROTOCOL, &open.session_id)
        .await
        .unwrap();
    chain
        .check_close(&close.session, close.calls, &close.last_record_sha256)
        .unwrap();
    assert_eq!((close.calls, close.ended), (3, SessionEnd::Closed));
    assert_eq!(flags.closed.load(Ordering::SeqCst), 1);
    assert!(flags.cleanups.load(Ordering::SeqCst) >= 2);
    // A call on an ended session is refused, typed, before dispatch.
    let err = e
        .session_run(
            &alice(),
            &open.session_id,
            js("1"),
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), err.not_dispatched()),
        (ErrorCode::SessionEnded, Some(Refusal::Request))
    );
    assert_eq!(err.session_end().unwrap().reason, SessionEnd::Closed);
    // Closing again still reports the summary.
    assert_eq!(
        e.close_session(&alice(), PROTOCOL, &open.session_id)
            .await
            .unwrap()
            .calls,
        3
    );
}

#[tokio::test]
async fn unknown_and_foreign_ids_get_the_same_refusal() {
    let (e, _, _) = engine(on()).await;
    let open = e.open_session(&alice(), &open_req()).await.unwrap();
    let bob = Caller {
        principal: "bob".into(),
    };
    let foreign = e
        .session_run(&bob, &open.session_id, js("1"), CancellationToken::new())
        .await
        .unwrap_err();
    let unknown = e
        .session_run(
            &alice(),
            "00112233445566778899aabbccddeeff",
            js("1"),
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(foreign.message(), unknown.message());
    assert_eq!(foreign.session_end(), unknown.session_end());
    assert_eq!(foreign.session_end().unwrap().reason, SessionEnd::NotFound);
    assert!(
        e.close_session(&bob, PROTOCOL, &open.session_id)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn an_infrastructure_failure_is_an_unanswered_link_in_the_chain() {
    let (e, _, _) = engine(on()).await;
    let open = e.open_session(&alice(), &open_req()).await.unwrap();
    let mut chain = Chain::new(&open.session_id);
    let opened = Evidence {
        sandbox: open.sandbox.clone(),
        isolation: open.isolation.clone(),
        software_identity: open.software_identity.clone(),
        ..Evidence::default()
    };
    let req = js("crash");
    let err = e
        .session_run(
            &alice(),
            &open.session_id,
            req.clone(),
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.not_dispatched(), None);
    let rec = err.unanswered().unwrap().clone();
    assert_eq!((rec.unanswered.as_str(), rec.sequence), ("internal", 1));
    chain.check_unanswered(&req, &rec, &opened).unwrap();
    let next = js("after");
    let answer = e
        .session_run(
            &alice(),
            &open.session_id,
            next.clone(),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    chain
        .check_call(&next, answer.run.as_ref().unwrap())
        .unwrap();
    let close = e
        .close_session(&alice(), PROTOCOL, &open.session_id)
        .await
        .unwrap();
    chain
        .check_close(&close.session, close.calls, &close.last_record_sha256)
        .unwrap();
}

#[tokio::test]
async fn a_changed_sandbox_or_a_dirty_boundary_ends_the_session() {
    let (e, flags, _) = engine(on()).await;
    let open = e.open_session(&alice(), &open_req()).await.unwrap();
    flags.changed.store(true, Ordering::SeqCst);
    let err = e
        .session_run(
            &alice(),
            &open.session_id,
            js("1"),
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), err.session_end().unwrap().reason),
        (ErrorCode::SessionEnded, SessionEnd::SandboxChanged)
    );
    flags.changed.store(false, Ordering::SeqCst);

    let open = e.open_session(&alice(), &open_req()).await.unwrap();
    flags.dirty.store(true, Ordering::SeqCst);
    e.session_run(
        &alice(),
        &open.session_id,
        js("1"),
        CancellationToken::new(),
    )
    .await
    .unwrap();
    // The cleanup after the answer could not prove the boundary: the next call is refused.
    let err = e
        .session_run(
            &alice(),
            &open.session_id,
            js("2"),
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.session_end().unwrap().reason,
        SessionEnd::BoundaryFailed
    );
    assert_eq!(
        e.close_session(&alice(), PROTOCOL, &open.session_id)
            .await
            .unwrap()
            .ended,
        SessionEnd::BoundaryFailed
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_call_runs_one_waits_the_next_is_shed() {
    let (e, _, gate) = engine(on()).await;
    let open = e.open_session(&alice(), &open_req()).await.unwrap();
    let id = open.session_id.clone();
    let first = tokio::spawn({
        let (e, id) = (e.clone(), id.clone());
        async move {
            e.session_run(&alice(), &id, js("block"), CancellationToken::new())
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let second = tokio::spawn({
        let (e, id) = (e.clone(), id.clone());
        async move {
            e.session_run(&alice(), &id, js("second"), CancellationToken::new())
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let third = e
        .session_run(&alice(), &id, js("third"), CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(
        (third.code(), third.not_dispatched()),
        (ErrorCode::AtCapacity, Some(Refusal::Capacity))
    );
    gate.add_permits(1);
    let a = first.await.unwrap().unwrap();
    let b = second.await.unwrap().unwrap();
    assert_eq!(
        (
            a.run.unwrap().record.unwrap().sequence,
            b.run.unwrap().record.unwrap().sequence
        ),
        (1, 2)
    );
    // The second waited its turn, the third was shed as busy; both calls
    // that ran are timed as session snippets.
    let m = e.metrics();
    let count = |what: crate::metrics::SessionShed| {
        m.session_shed.iter().find(|(w, _)| *w == what).map(|x| x.1)
    };
    assert_eq!(count(crate::metrics::SessionShed::SessionBusy), Some(1));
    assert_eq!(count(crate::metrics::SessionShed::SessionsFull), Some(0));
    assert_eq!(m.waits, [(crate::metrics::Wait::SessionTurn, 1)]);
    let timed: u64 = m
        .durations
        .iter()
        .filter(|(k, _, _)| *k == crate::metrics::RunKind::SessionSnippet)
        .map(|(_, _, h)| h.count)
        .sum();
    assert_eq!(timed, 2);
    assert_eq!((m.sessions.open, m.sessions.opened_total), (1, 1));
}

#[tokio::test]
async fn capacity_floor_and_rules_at_open() {
    let (e, _, _) = engine(on()).await;
    let a = e.open_session(&alice(), &open_req()).await.unwrap();
    let _b = e.open_session(&alice(), &open_req()).await.unwrap();
    let err = e.open_session(&alice(), &open_req()).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::AtCapacity, "two per caller");
    let m = e.metrics();
    assert_eq!(
        m.session_shed[1],
        (crate::metrics::SessionShed::SessionsPerCaller, 1)
    );
    assert_eq!((m.sessions.open, m.sessions.suspended), (2, 0));
    let err = e
        .open_session(
            &alice(),
            &OpenSessionRequest {
                minimum_isolation: "kernel".into(),
                ..open_req()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InsufficientIsolation);
    let rule = SoftwareRule {
        mode: "exact".into(),
        identities: vec!["other:1".into()],
    };
    let err = e
        .open_session(
            &alice(),
            &OpenSessionRequest {
                software_rule: Some(rule),
                ..open_req()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::SoftwareMismatch);
    let err = e
        .session_run(
            &alice(),
            &a.session_id,
            js("1").with_floor("kernel"),
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InsufficientIsolation);
    e.close_session(&alice(), PROTOCOL, &a.session_id)
        .await
        .unwrap();
    assert!(
        e.open_session(&alice(), &open_req()).await.is_ok(),
        "a closed session frees its place"
    );
    e.shutdown().await;
    assert_eq!(e.sessions().unwrap().open_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_opens_stay_within_the_caps() {
    let (e, flags, _) = engine(on()).await;
    flags.open_ms.store(200, Ordering::SeqCst);
    let caller = |p: &str| Caller {
        principal: p.into(),
    };
    // Six callers at once against four slots; then three from one caller
    // against its two.
    let opens = ["a", "b", "c", "d", "e", "f"].map(|p| {
        let (e, c) = (e.clone(), caller(p));
        tokio::spawn(async move { e.open_session(&c, &open_req()).await })
    });
    let mut opened = 0;
    for o in opens {
        match o.await.unwrap() {
            Ok(_) => opened += 1,
            Err(err) => assert_eq!(err.code(), ErrorCode::AtCapacity),
        }
    }
    assert_eq!(
        opened, 4,
        "SANDBOX_MAX_SESSIONS holds under concurrent opens"
    );
    assert_eq!(e.sessions().unwrap().open_count(), 4);
    let (e, flags, _) = engine(on()).await;
    flags.open_ms.store(200, Ordering::SeqCst);
    let opens = [0, 1, 2].map(|_| {
        let e = e.clone();
        tokio::spawn(async move { e.open_session(&alice(), &open_req()).await })
    });
    let mut opened = 0;
    for o in opens {
        opened += usize::from(o.await.unwrap().is_ok());
    }
    assert_eq!(opened, 2, "the per-caller cap holds under concurrent opens");
}

#[tokio::test]
async fn sessions_off_or_unsupported() {
    let (e, _, _) = engine(SessionSettings::default()).await;
    let err = e.open_session(&alice(), &open_req()).await.unwrap_err();
    assert_eq!(
        (err.code(), err.not_dispatched()),
        (ErrorCode::Unsupported, Some(Refusal::Unsupported))
    );
    let config = Config {
        sessions: on(),
        ..Config::default()
    };
    let started = Engine::start(&config).await;
    assert!(
        matches!(started, Err(crate::engine::StartError::Config(ref c)) if c.variable == "SANDBOX_MAX_SESSIONS")
    );
}

trait WithFloor {
    fn with_floor(self, f: &str) -> Self;
}

impl WithFloor for Request {
    fn with_floor(mut self, f: &str) -> Request {
        self.envelope.minimum_isolation = f.into();
        self
    }
}

/// The language surfaces' session path (`client::Session`) over an embedded
/// engine: the chain a binding sees verifies from the JSON it is handed, the
/// session's rule is carried on every call, a second close is refused, and a
/// call cancelled while another holds the session never runs.
#[tokio::test]
async fn the_surface_session_path_keeps_the_chain() {
    use crate::client::Runner;
    use crate::wire::json::{decode, encode};
    use crate::wire::{RunRequest, RunResponse};

    let (e, _flags, gate) = engine(on()).await;
    let runner = Runner::from_engine(e);
    let rule = SoftwareRule {
        mode: "exact".into(),
        identities: vec!["memo:1".into()],
    };
    let s = runner
        .open_session(crate::client::SessionOptions {
            minimum_isolation: "container".into(),
            software_rule: Some(rule.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(s.isolation(), "container");
    let mut chain = Chain::from_fingerprint(s.fingerprint().to_owned());
    for req in [js("a"), cell("x = 1"), cell("x")] {
        let a = s.run(req, CancellationToken::new()).await.unwrap();
        assert_eq!(a.request.envelope.software_rule.as_ref(), Some(&rule));
        // What a binding hands its caller, read back as a verifier would.
        let wire_req: RunRequest = decode(&encode(&RunRequest::from_request(&a.request))).unwrap();
        let wire_resp: RunResponse = decode(&encode(&a.response)).unwrap();
        chain
            .check_call(&wire_req.into_request().unwrap(), &wire_resp)
            .unwrap();
    }
    // A call waiting for the session gives up when cancelled, and never runs.
    let s2 = s.clone();
    let blocked = tokio::spawn(async move { s2.run(js("block"), CancellationToken::new()).await });
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let cancel = CancellationToken::new();
    cancel.cancel();
    let e = s.run(js("never"), cancel).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Cancelled);
    gate.add_permits(1);
    let a = blocked.await.unwrap().unwrap();
    chain.check_call(&a.request, &a.response).unwrap();
    let summary = s.close().await.unwrap();
    chain
        .check_close(&summary.session, summary.calls, &summary.last_record_sha256)
        .unwrap();
    assert_eq!(summary.calls, 4);
    let again = s.close().await.unwrap_err();
    assert_eq!(again.code(), ErrorCode::SessionEnded);
    assert_eq!(
        s.run(js("late"), CancellationToken::new())
            .await
            .unwrap_err()
            .code(),
        ErrorCode::SessionEnded
    );
}
