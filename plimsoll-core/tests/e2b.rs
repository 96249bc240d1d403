//! The e2b provider's refusals and its cleanup, against the E2B stand-in
//! (`plimsoll-standins`, served in this process; its VMs are local
//! containers). The behaviour every provider shares is in `conformance.rs`.
//!
//! - a create answered without envd's access token: the startup proof
//!   fails, naming it, and the VM that create made is killed;
//! - a VM with a way out (the stand-in's `allow_egress`): the proof's probe
//!   gets out, and startup is refused;
//! - a wrong API key: startup fails with E2B's refusal, the key in no message;
//! - a run flooding past the stream's transfer budget ends as exit 153 with
//!   both streams flagged truncated, and its VM goes;
//! - the reconcile kills a VM stamped with this instance that no run tracks,
//!   and leaves another instance's alone;
//! - project files envd refuses to place are a setup failure, and no step runs.
//!
//! - grants through the egress guard, end to end ([`grants`]).
//!
//! Docker unreachable fails these tests: they never skip.
#![cfg(all(feature = "e2b", feature = "docker"))]
#![expect(clippy::unwrap_used, reason = "integration tests fail loudly")]

#[path = "e2b/grants.rs"]
mod grants;
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use plimsoll_core::client::Runner;
use plimsoll_core::config::Config;
use plimsoll_core::engine::Engine;
use plimsoll_core::provider::e2b::{E2bSettings, EnvdAddress, INSTANCE_KEY, LEASE_KEY};
use plimsoll_core::provider::{Chosen, ProviderSettings, Setup};
use plimsoll_core::request::{JavaScriptRun, Payload, Request};
use plimsoll_core::result::Output;
use plimsoll_core::secret::Secret;
use plimsoll_standins::e2b::Faults;
use support::E2bStandIn;
use tokio_util::sync::CancellationToken;

fn settings(s: &E2bStandIn, key: &str) -> E2bSettings {
    E2bSettings {
        api_key: Some(Arc::new(Secret::new(key.to_owned()))),
        api_url: url::Url::parse(&s.api).unwrap(),
        envd: EnvdAddress::Proxy(url::Url::parse(&s.envd).unwrap()),
        ..E2bSettings::default()
    }
}

fn config(s: &E2bStandIn, key: &str, instance: &str) -> Config {
    Config {
        provider: Chosen::new(settings(s, key)),
        instance: instance.to_owned(),
        ..Config::default()
    }
}

fn instance() -> String {
    format!(
        "plimsoll-test:e2b-{}",
        hex::encode(rand::random::<[u8; 4]>())
    )
}

/// Waits up to 10 s for the stand-in to have no VM.
async fn none_left(s: &E2bStandIn, after: &str) {
    let t = Instant::now();
    loop {
        let left = s.vms().await;
        if left.is_empty() {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "after {after}: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_without_the_envd_token_is_refused_and_its_vm_killed() {
    let s = E2bStandIn::start(Faults {
        omit_envd_token: true,
        ..Faults::default()
    })
    .await;
    let Err(e) = Engine::start(&config(&s, &s.key, &instance())).await else {
        panic!("the proof must fail")
    };
    let m = e.to_string();
    assert!(m.contains("no envd access token"), "{m}");
    assert!(m.contains("refused and killed"), "{m}");
    none_left(&s, "the refused create").await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn egress_open_during_the_proof_refuses_startup() {
    // The VM gets a network whatever the create asked: the probe's
    // connection out succeeds, so the mark is not earned.
    support::host_reaches_1_1_1_1().await;
    let s = E2bStandIn::start(Faults {
        allow_egress: true,
        ..Faults::default()
    })
    .await;
    let Err(e) = Engine::start(&config(&s, &s.key, &instance())).await else {
        panic!("the proof must fail")
    };
    let m = e.to_string();
    assert!(m.contains("egress is open"), "{m}");
    none_left(&s, "the refused proof").await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_key_fails_startup_and_is_never_printed() {
    let s = E2bStandIn::start(Faults::default()).await;
    let wrong = format!("e2b_{}", "0123456789abcdef".repeat(2));
    let Err(e) = Engine::start(&config(&s, &wrong, &instance())).await else {
        panic!("a wrong key must fail startup")
    };
    let m = e.to_string();
    assert!(m.contains("E2B answered 401"), "{m}");
    assert!(!m.contains("0123456789abcdef"), "{m}");
    none_left(&s, "the refused key").await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_past_the_transfer_budget_ends_as_exit_153() {
    let s = E2bStandIn::start(Faults::default()).await;
    let engine = Engine::start(&config(&s, &s.key, &instance()))
        .await
        .unwrap();
    let r = Runner::from_engine(engine);
    let mut req = Request::new(Payload::JavaScript(JavaScriptRun {
        code: "const s = 'x'.repeat(1 << 20); for (let i = 0; i < 24; i++) { \
               process.stdout.write(s); process.stderr.write(s) }"
            .into(),
        grant_profile: String::new(),
    }));
    req.envelope.timeout_ms = 60_000;
    let resp = r.run(req, CancellationToken::new()).await.unwrap();
    let Some(Output::JavaScript(j)) = resp.output else {
        panic!("not a snippet result")
    };
    assert_eq!(
        (
            j.exit_code,
            j.timed_out,
            j.stdout_truncated,
            j.stderr_truncated
        ),
        (153, false, true, true),
        "{j:?}"
    );
    assert!(j.stdout.len() <= 64 * 1024 && j.stdout.starts_with(b"xxx"));
    none_left(&s, "the flood").await;
    s.stop().await;
}

/// Creates a VM on the stand-in directly, stamped with `metadata`.
async fn create_directly(s: &E2bStandIn, metadata: serde_json::Value) -> String {
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Full<Bytes>>();
    let body = serde_json::json!({"templateID": "base", "timeout": 300, "secure": true,
                                  "allow_internet_access": false, "metadata": metadata});
    let req = hyper::Request::post(format!("{}/sandboxes", s.api))
        .header("x-api-key", &s.key)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let resp = client.request(req).await.unwrap();
    assert_eq!(resp.status(), 201);
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    v["sandboxID"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reconcile_kills_this_instances_untracked_vms_only() {
    let s = E2bStandIn::start(Faults::default()).await;
    let ours = instance();
    let orphan = create_directly(
        &s,
        serde_json::json!({INSTANCE_KEY: ours, LEASE_KEY: "a-lease-nobody-tracks"}),
    )
    .await;
    let theirs = create_directly(
        &s,
        serde_json::json!({INSTANCE_KEY: "plimsoll-test:someone-else", LEASE_KEY: "x"}),
    )
    .await;
    let setup = Setup {
        instance: ours,
        ..Setup::default()
    };
    let provider = settings(&s, &s.key).build(&setup).unwrap();
    assert_eq!(provider.reconcile_orphans().await.unwrap(), 1);
    let left = s.vms().await;
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(
        left[0].contains(&theirs) && !left[0].contains(&orphan),
        "{left:?} (orphan {orphan}, theirs {theirs})"
    );
    assert_eq!(provider.reconcile_orphans().await.unwrap(), 0);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_envd_cannot_place_are_a_setup_failure_and_nothing_runs() {
    use plimsoll_core::request::{ProjectFile, ProjectRun};
    use plimsoll_core::result::ProjectOutcome;
    let s = E2bStandIn::start(Faults::default()).await;
    let engine = Engine::start(&config(&s, &s.key, &instance()))
        .await
        .unwrap();
    let r = Runner::from_engine(engine);
    let file = |path: &str| ProjectFile {
        path: path.into(),
        content: "x".into(),
    };
    // `x` is a directory once `x/y` is written: the file `x` cannot go there.
    let req = Request::new(Payload::Project(ProjectRun {
        files: vec![file("x/y"), file("x")],
        steps: vec!["echo ran".into()],
        ..ProjectRun::default()
    }));
    let resp = r.run(req, CancellationToken::new()).await.unwrap();
    let Some(Output::Project(p)) = resp.output else {
        panic!("not a project result")
    };
    assert_eq!(p.outcome, ProjectOutcome::SetupFailed, "{p:?}");
    assert!(p.steps.is_empty(), "{p:?}");
    assert!(p.outcome_detail.contains("envd answered 400"), "{p:?}");
    none_left(&s, "the setup failure").await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_pauses_when_idle_and_resumes_with_its_files_and_fresh_interpreters() {
    use plimsoll_core::engine::Caller;
    use plimsoll_core::error::SessionEnd;
    use plimsoll_core::request::{CellRun, PROTOCOL, ProjectRun};
    use plimsoll_core::verify::Chain;
    use plimsoll_core::wire::OpenSessionRequest;

    let s = E2bStandIn::start(Faults::default()).await;
    let mut cfg = config(&s, &s.key, &instance());
    cfg.sessions = plimsoll_core::session::SessionSettings {
        max_sessions: 2,
        max_per_caller: 2,
        idle: Duration::from_secs(1),
        disk_mb: 2,
        ..Default::default()
    };
    let engine = Engine::start(&cfg).await.unwrap();
    let d = engine.describe();
    assert!(d.supports_sessions, "{d:?}");
    // The wall: the API, the template, and the envd version the proof read
    // from its own VM; its identity ends the policy every record carries.
    let wall = d.wall.clone().expect("e2b names its wall");
    assert_eq!(
        wall.version_of("e2b api"),
        Some(url::Url::parse(&s.api).unwrap().as_str())
    );
    assert_eq!(
        wall.version_of("e2b template"),
        Some(plimsoll_core::provider::e2b::DEFAULT_TEMPLATE)
    );
    let envd = wall.version_of("e2b envd").unwrap_or_default();
    assert!(
        d.javascript_environment
            .as_ref()
            .unwrap()
            .identity
            .ends_with(&format!(";envd:{envd}"))
            && !envd.is_empty(),
        "{wall:?}"
    );
    assert!(
        d.policy.ends_with(&format!(";wall={}", wall.identity())),
        "{}",
        d.policy
    );
    let caller = Caller {
        principal: "alice".into(),
    };
    let open = engine
        .open_session(
            &caller,
            &OpenSessionRequest {
                protocol: PROTOCOL,
                minimum_isolation: "vm".into(),
                languages: vec!["python".into()],
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(open.isolation, "vm");
    let id = open.session_id.clone();
    let mut chain = Chain::new(&id);
    let mut call = async |payload: Payload| {
        let mut req = Request::new(payload);
        req.envelope.timeout_ms = 20_000;
        let a = engine
            .session_run(&caller, &id, req.clone(), CancellationToken::new())
            .await?;
        let run = a.run.unwrap();
        chain.check_call(&req, &run).unwrap();
        Ok::<_, plimsoll_core::Error>(run.output.unwrap())
    };
    let cell = |code: &str| {
        Payload::Cell(CellRun {
            language: "python".into(),
            code: code.into(),
            files: vec![],
        })
    };
    let step = |script: &str| {
        Payload::Project(ProjectRun {
            steps: vec![script.into()],
            ..ProjectRun::default()
        })
    };
    let cell_of = |o: Output| match o {
        Output::Cell(c) => c,
        o => panic!("{o:?}"),
    };
    let stdout_of = |o: Output| match o {
        Output::Project(p) => String::from_utf8_lossy(&p.steps[0].stdout).into_owned(),
        o => panic!("{o:?}"),
    };

    let a = cell_of(call(cell("x = 41")).await.unwrap());
    assert!(a.interpreter_started && a.exit_code == 0, "{a:?}");
    call(step(
        "echo kept > kept.txt; setsid sleep 301 >/dev/null 2>&1 < /dev/null & (sleep 302 &); true",
    ))
    .await
    .unwrap();
    let count = "n=0; for d in /proc/[0-9]*; do c=$(tr '\\0' ' ' < $d/cmdline 2>/dev/null); \
                 case \"$c\" in 'sleep 30'[12]*) n=$((n+1));; esac; done; echo $n; cat kept.txt";
    assert_eq!(stdout_of(call(step(count)).await.unwrap()), "0\nkept\n");
    let b = cell_of(call(cell("print(x + 1)")).await.unwrap());
    assert_eq!(
        (
            String::from_utf8_lossy(&b.stdout).as_ref(),
            b.interpreter_started
        ),
        ("42\n", false)
    );

    // Idle past SANDBOX_SESSION_IDLE: the VM is paused (its container stops).
    let vm = s.vms().await.pop().expect("the session's VM");
    let vm = vm.trim_start_matches('/');
    let docker = support::docker();
    let t = Instant::now();
    loop {
        let c = docker.inspect_container(vm, None).await.unwrap();
        if c.state.and_then(|st| st.running) == Some(false) {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(20), "never paused");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The next call resumes it: the file is kept, the interpreter is fresh.
    let c = cell_of(call(cell("print('x' in dir())")).await.unwrap());
    assert_eq!(
        (
            String::from_utf8_lossy(&c.stdout).as_ref(),
            c.interpreter_started
        ),
        ("False\n", true)
    );
    assert_eq!(
        stdout_of(call(step("cat kept.txt")).await.unwrap()),
        "kept\n"
    );

    // Past the disk budget (2 MiB), the session ends after the call.
    call(step("head -c 3145728 /dev/zero > big")).await.unwrap();
    let err = call(cell("1")).await.unwrap_err();
    assert_eq!(
        err.session_end().map(|e| e.reason),
        Some(SessionEnd::DiskExceeded),
        "{err}"
    );
    none_left(&s, "a session ended by its disk budget").await;
    s.stop().await;
}
