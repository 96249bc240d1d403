//! One conformance suite for every provider (as `object_store` has one for
//! its backends): [`conform`] takes any started engine and what it claims,
//! and runs the same behavioural cases through the one caller surface
//! (`client::Runner`, so every answer's record and every session's chain is
//! verified as a client verifies it):
//!
//! - Describe says the tier the engine proved and the provider's name, and
//!   claims projects and sessions exactly where they run;
//! - hello runs at that tier; a floor above it is refused before dispatch;
//! - a non-zero exit is a result; the deadline ends a run as exit 124 with
//!   its output so far; a memory bomb ends in a non-zero exit, not a hang;
//!   each output stream is capped at 64 KiB and flagged;
//! - a cancelled run answers `cancelled`;
//! - after every case the admission slot is free and no sandbox is left;
//! - projects and sessions run where claimed (a session's chain verifies and
//!   its close summary counts every call) and are refused, not dispatched,
//!   where not;
//! - grants where claimed: a granted snippet reaches an allowed route of a
//!   real loopback API with the credential the broker holds, a refused route
//!   never reaches it, and the guest sees no credential; refused, not
//!   dispatched, where not claimed.
//!
//! wasm, docker on runc, docker on runsc, and e2b, dockercloud (over both
//! of Docker's contracts) and openshell (against their stand-ins, in
//! process) run it here; every later
//! provider runs it unchanged, with its own subject. Docker unreachable, or a runtime
//! unregistered, fails these tests: they never skip.
#![expect(clippy::unwrap_used, reason = "integration tests fail loudly")]

mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use plimsoll_core::client::{Runner, SessionOptions};
use plimsoll_core::engine::Engine;
use plimsoll_core::grant::{Grants, profile};
use plimsoll_core::request::{CellRun, JavaScriptRun, Payload, ProjectRun, Request};
use plimsoll_core::result::{JavaScriptResult, Output};
use plimsoll_core::{ErrorCode, Isolation, Refusal};
use tokio_util::sync::CancellationToken;

/// The sandboxes an engine still has (docker: its instance's containers).
type Sandboxes = Box<dyn Fn() -> Pin<Box<dyn Future<Output = Vec<String>> + Send>> + Send + Sync>;

/// A provider under test: a started engine and what the suite is told about it.
struct Subject {
    /// For messages.
    name: String,
    engine: Engine,
    /// The tier it must prove and paint on every answer.
    tier: Isolation,
    /// The provider's name on Describe and in records.
    provider: &'static str,
    sandboxes: Sandboxes,
    /// Whether its sandboxes start fresh per run (a run's cancel is seen
    /// once the sandbox is up): the wait before cancelling.
    start_wait: Duration,
    /// What the loopback API behind its grant profile saw.
    api: Arc<Mutex<Vec<support::Seen>>>,
}

/// The credential the `items` profile holds outside the sandbox.
const TOKEN: &str = "conformance-upstream-credential-0123456789";

/// A loopback API and the configuration's grant profile over it: `items`
/// lets the anonymous caller `GET /v1/items/*` with a static token.
async fn granted_api() -> (Arc<Grants>, Arc<Mutex<Vec<support::Seen>>>) {
    let (base, seen) = support::api().await;
    let text = format!(
        r#"{{"profiles":{{"items":{{"base_url":"{base}","allow":["GET /v1/items/*"],"allowed_callers":["anon"],"token":{{"type":"static","env":"ITEMS_TOKEN"}}}}}}}}"#
    );
    let get = |k: &str| (k == "ITEMS_TOKEN").then(|| TOKEN.to_owned());
    let grants = Grants::from_profiles(profile::parse(text.as_bytes(), &get).unwrap());
    (Arc::new(grants), seen)
}

/// The snippet output cap on every provider (`spec/behaviour.md`).
const OUTPUT_CAP: usize = 64 * 1024;

fn js(code: &str, timeout_ms: i32) -> Request {
    let mut r = Request::new(Payload::JavaScript(JavaScriptRun {
        code: code.into(),
        grant_profile: String::new(),
    }));
    r.envelope.timeout_ms = timeout_ms;
    r
}

fn go() -> CancellationToken {
    CancellationToken::new()
}

/// Runs a snippet through the caller surface (record verified) at the tier.
async fn snippet(s: &Subject, r: &Runner, code: &str, timeout_ms: i32) -> JavaScriptResult {
    let resp = r
        .run(js(code, timeout_ms), go())
        .await
        .unwrap_or_else(|e| panic!("[{}] {code:?}: {e}", s.name));
    assert_eq!(resp.evidence.isolation, s.tier.as_str(), "[{}]", s.name);
    assert_eq!(resp.evidence.sandbox, s.provider, "[{}]", s.name);
    match resp.output {
        Some(Output::JavaScript(j)) => j,
        other => panic!("[{}] not a snippet result: {other:?}", s.name),
    }
}

/// The slot is free and no sandbox is left (waiting up to 20 s for removals).
async fn released(s: &Subject, after: &str) {
    let t = Instant::now();
    loop {
        let in_flight = s.engine.admission().in_flight();
        let left = (s.sandboxes)().await;
        if in_flight == 0 && left.is_empty() {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "[{}] after {after}: {in_flight} slots held, sandboxes left: {left:?}",
            s.name
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The suite. Panics, naming the subject and the case, on the first failure.
async fn conform(s: Subject) {
    let r = Runner::from_engine(s.engine.clone());
    let d = r.describe().await.unwrap();
    assert_eq!(s.engine.isolation(), s.tier, "[{}] proven tier", s.name);
    assert_eq!(
        (d.isolation.as_str(), d.sandbox.as_str()),
        (s.tier.as_str(), s.provider),
        "[{}] describe",
        s.name
    );

    // Hello, at its tier.
    let j = snippet(&s, &r, "console.log('hello', 6 * 7)", 0).await;
    assert_eq!((j.stdout.as_slice(), j.exit_code), (&b"hello 42\n"[..], 0));
    released(&s, "hello").await;

    // A floor above the tier is refused before anything is dispatched; the
    // tier's own floor runs.
    if let Some(above) = [Isolation::Process, Isolation::Container, Isolation::Kernel]
        .into_iter()
        .chain([Isolation::Vm])
        .find(|t| *t > s.tier)
    {
        let mut req = js("console.log('never')", 0);
        req.envelope.minimum_isolation = above.as_str().into();
        let e = r.run(req, go()).await.unwrap_err();
        assert_eq!(
            (e.code(), e.not_dispatched()),
            (ErrorCode::InsufficientIsolation, Some(Refusal::Isolation)),
            "[{}] floor {above}",
            s.name
        );
        assert!(
            (s.sandboxes)().await.is_empty(),
            "[{}] a refused floor made a sandbox",
            s.name
        );
    }
    let mut req = js("console.log(1)", 0);
    req.envelope.minimum_isolation = s.tier.as_str().into();
    r.run(req, go()).await.unwrap();

    // A non-zero exit is a result; stderr is its own stream.
    let j = snippet(&s, &r, "console.error('bad'); process.exit(3)", 0).await;
    assert_eq!(
        (j.exit_code, j.stderr.as_slice()),
        (3, &b"bad\n"[..]),
        "[{}]",
        s.name
    );
    assert!(j.stdout.is_empty());
    released(&s, "exit 3").await;

    // The deadline: exit 124, timed out, the output so far kept.
    let t = Instant::now();
    let j = snippet(&s, &r, "console.log('before'); for (;;) {}", 1500).await;
    assert_eq!(
        (j.exit_code, j.timed_out),
        (124, true),
        "[{}] deadline",
        s.name
    );
    assert_eq!(j.stdout, b"before\n", "[{}]", s.name);
    assert!(
        t.elapsed() < Duration::from_secs(12),
        "[{}] deadline took {:?}",
        s.name,
        t.elapsed()
    );
    released(&s, "deadline").await;

    // The memory cap: a bomb ends in a non-zero exit, well before its deadline.
    let j = snippet(
        &s,
        &r,
        "const k = []; for (;;) k.push(new Array(1 << 20).fill(1));",
        20_000,
    )
    .await;
    assert!(
        j.exit_code != 0 && !j.timed_out,
        "[{}] memory bomb: {j:?}",
        s.name
    );
    released(&s, "memory bomb").await;

    // Output caps: each stream at most 64 KiB, flagged.
    let j = snippet(
        &s,
        &r,
        "const l = 'x'.repeat(1023); for (let i = 0; i < 200; i++) { console.log(l); console.error(l); }",
        0,
    )
    .await;
    assert_eq!(
        j.exit_code,
        0,
        "[{}] flood: {}",
        s.name,
        String::from_utf8_lossy(&j.stderr)
    );
    assert!(
        j.stdout_truncated && j.stderr_truncated,
        "[{}] flags",
        s.name
    );
    assert!(
        j.stdout.len() <= OUTPUT_CAP && j.stderr.len() <= OUTPUT_CAP,
        "[{}] {} and {} bytes",
        s.name,
        j.stdout.len(),
        j.stderr.len()
    );
    assert!(
        j.stdout.starts_with(b"xxxx"),
        "[{}] the output kept is the first",
        s.name
    );
    released(&s, "flood").await;

    // Cancel: the run answers `cancelled`, and its slot and sandbox go.
    let cancel = go();
    let (r2, c2) = (r.clone(), cancel.clone());
    let t = Instant::now();
    let task = tokio::spawn(async move { r2.run(js("for (;;) {}", 20_000), c2).await });
    tokio::time::sleep(s.start_wait).await;
    cancel.cancel();
    let e = task.await.unwrap().unwrap_err();
    assert_eq!(e.code(), ErrorCode::Cancelled, "[{}] cancel: {e}", s.name);
    assert!(
        t.elapsed() < Duration::from_secs(15),
        "[{}] cancel took {:?}",
        s.name,
        t.elapsed()
    );
    released(&s, "cancel").await;

    // Projects, where claimed.
    let project = Request::new(Payload::Project(ProjectRun {
        steps: vec!["python3 -c \"open('out.txt', 'w').write('made')\"".into()],
        artifacts: vec!["out.txt".into()],
        ..ProjectRun::default()
    }));
    match r.run(project, go()).await {
        Ok(resp) => {
            assert!(
                d.supports_project,
                "[{}] ran a project it does not claim",
                s.name
            );
            let Some(Output::Project(p)) = resp.output else {
                panic!("[{}] not a project result", s.name)
            };
            let art: Vec<_> = p
                .artifacts
                .iter()
                .map(|a| (a.path.as_str(), &a.content[..]))
                .collect();
            assert_eq!(art, [("out.txt", &b"made"[..])], "[{}] {p:?}", s.name);
        }
        Err(e) => {
            assert!(!d.supports_project, "[{}] claims projects: {e}", s.name);
            assert!(e.not_dispatched().is_some(), "[{}] {e}", s.name);
        }
    }
    released(&s, "project").await;

    // Grants, where claimed: the allowed route with the broker's credential,
    // the refused one answered by the broker alone, no credential in the guest.
    // `await` takes the wasm tier's synchronous answers and the docker tier's
    // promises alike.
    let mut granted = js(
        "(async () => { const a = await host.get('/v1/items/1'); \
         const b = await host.get('/v1/admin'); \
         console.log(a.status, a.json().target, b.status) })()",
        0,
    );
    if let Payload::JavaScript(j) = &mut granted.payload {
        j.grant_profile = "items".into();
    }
    match r.run(granted, go()).await {
        Ok(resp) => {
            assert!(
                d.supports_javascript_grants,
                "[{}] ran a grant it does not claim",
                s.name
            );
            let Some(Output::JavaScript(j)) = resp.output else {
                panic!("[{}] not a snippet result", s.name)
            };
            let (out, err) = (
                String::from_utf8_lossy(&j.stdout),
                String::from_utf8_lossy(&j.stderr),
            );
            assert_eq!(out, "200 /v1/items/1 403\n", "[{}] stderr {err}", s.name);
            assert!(!out.contains(TOKEN) && !err.contains(TOKEN), "[{}]", s.name);
            let seen = s.api.lock().unwrap().clone();
            let got: Vec<(&str, &str, &str)> = seen
                .iter()
                .map(|x| (x.method.as_str(), x.target.as_str(), x.auth.as_str()))
                .collect();
            let bearer = format!("Bearer {TOKEN}");
            assert_eq!(
                got,
                [("GET", "/v1/items/1", bearer.as_str())],
                "[{}]",
                s.name
            );
        }
        Err(e) => {
            assert!(
                !d.supports_javascript_grants,
                "[{}] claims grants: {e}",
                s.name
            );
            assert!(e.not_dispatched().is_some(), "[{}] {e}", s.name);
            assert!(s.api.lock().unwrap().is_empty(), "[{}]", s.name);
        }
    }
    released(&s, "grant").await;

    // Sessions, where claimed: state kept across calls, the chain verified
    // on every answer and at the close.
    match r.open_session(SessionOptions::default()).await {
        Ok(session) => {
            assert!(
                d.supports_sessions,
                "[{}] opened a session it does not claim",
                s.name
            );
            assert_eq!(session.isolation(), s.tier.as_str());
            let cell = |code: &str| {
                Request::new(Payload::Cell(CellRun {
                    language: "python".into(),
                    code: code.into(),
                    files: vec![],
                }))
            };
            for (req, want) in [
                (cell("x = 20"), ""),
                (cell("print(x + 1)"), "21\n"),
                (js("console.log('in the session')", 0), "in the session\n"),
            ] {
                let a = session.run(req, go()).await.unwrap();
                let stdout = match a.response.output {
                    Some(Output::Cell(c)) => c.stdout,
                    Some(Output::JavaScript(j)) => j.stdout,
                    other => panic!("[{}] {other:?}", s.name),
                };
                assert_eq!(String::from_utf8_lossy(&stdout), want, "[{}]", s.name);
            }
            assert_eq!(session.close().await.unwrap().calls, 3, "[{}]", s.name);
        }
        Err(e) => {
            assert!(!d.supports_sessions, "[{}] claims sessions: {e}", s.name);
            assert!(e.not_dispatched().is_some(), "[{}] {e}", s.name);
        }
    }
    released(&s, "session").await;
    eprintln!("[{}] conforms", s.name);
}

#[cfg(feature = "wasm")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wasm_conforms() {
    use plimsoll_core::config::{Config, WasmSettings};
    use plimsoll_core::provider::Chosen;
    let (grants, api) = granted_api().await;
    let config = Config {
        provider: Chosen::new(WasmSettings),
        instance: "plimsoll-test:conformance-wasm".into(),
        grants,
        ..Config::default()
    };
    conform(Subject {
        name: "wasm".into(),
        engine: Engine::start(&config).await.unwrap(),
        tier: Isolation::Process,
        provider: "wasm",
        sandboxes: Box::new(|| Box::pin(async { Vec::new() })),
        start_wait: Duration::from_millis(300),
        api,
    })
    .await;
}

#[cfg(feature = "docker")]
mod docker {
    use plimsoll_core::config::{Config, DockerRuntime, DockerSettings};
    use plimsoll_core::provider::Chosen;
    use plimsoll_core::session::SessionSettings;

    use super::*;

    async fn subject(rt: DockerRuntime, tier: Isolation) -> Subject {
        let instance = format!(
            "plimsoll-test:conformance-{}-{}",
            rt.as_str(),
            hex::encode(rand::random::<[u8; 4]>())
        );
        let (grants, api) = granted_api().await;
        let config = Config {
            grants,
            provider: Chosen::new(DockerSettings {
                runtime: rt,
                runtime_name: rt.as_str().into(),
                ..DockerSettings::default()
            }),
            instance: instance.clone(),
            sessions: SessionSettings {
                max_sessions: 2,
                max_per_caller: 2,
                ..SessionSettings::default()
            },
            ..Config::default()
        };
        let engine = Engine::start(&config)
            .await
            .unwrap_or_else(|e| panic!("docker under {}: {e}", rt.as_str()));
        Subject {
            name: format!("docker/{}", rt.as_str()),
            engine,
            tier,
            provider: "docker",
            sandboxes: Box::new(move || {
                let instance = instance.clone();
                Box::pin(async move { support::containers_of(&instance).await })
            }),
            start_wait: Duration::from_millis(2500),
            api,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn docker_on_runc_conforms() {
        conform(subject(DockerRuntime::Runc, Isolation::Container).await).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn docker_on_runsc_conforms() {
        conform(subject(DockerRuntime::Runsc, Isolation::Kernel).await).await;
    }
}

/// e2b against the E2B stand-in (its VMs are local containers; the tier is
/// the provider's claim for E2B's Firecracker VMs).
#[cfg(all(feature = "e2b", feature = "docker"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2b_conforms() {
    use plimsoll_core::config::Config;
    use plimsoll_core::provider::Chosen;
    use plimsoll_core::provider::e2b::{E2bSettings, EnvdAddress};
    use plimsoll_core::secret::Secret;

    let standin = Arc::new(support::E2bStandIn::start(Default::default()).await);
    // No grant path on e2b in this build: a configuration with profiles is
    // refused at startup, so the granted case must be refused per run.
    let api = Arc::default();
    let config = Config {
        provider: Chosen::new(E2bSettings {
            api_key: Some(Arc::new(Secret::new(standin.key.clone()))),
            api_url: url::Url::parse(&standin.api).unwrap(),
            envd: EnvdAddress::Proxy(url::Url::parse(&standin.envd).unwrap()),
            ..E2bSettings::default()
        }),
        instance: format!(
            "plimsoll-test:conformance-e2b-{}",
            hex::encode(rand::random::<[u8; 4]>())
        ),
        sessions: plimsoll_core::session::SessionSettings {
            max_sessions: 2,
            max_per_caller: 2,
            ..Default::default()
        },
        ..Config::default()
    };
    let engine = Engine::start(&config)
        .await
        .unwrap_or_else(|e| panic!("e2b against the stand-in: {e}"));
    let vms = standin.clone();
    conform(Subject {
        name: "e2b (stand-in)".into(),
        engine,
        tier: Isolation::Vm,
        provider: "e2b",
        sandboxes: Box::new(move || {
            let vms = vms.clone();
            Box::pin(async move { vms.vms().await })
        }),
        start_wait: Duration::from_millis(2500),
        api,
    })
    .await;
    Arc::into_inner(standin).unwrap().stop().await;
}

/// dockercloud against the Docker Cloud stand-in (its sandboxes are local
/// containers; the tier is the provider's claim for Docker's cloud VMs),
/// over each of Docker's two contracts.
#[cfg(all(feature = "dockercloud", feature = "docker"))]
async fn dockercloud_conforms_over(api: plimsoll_core::provider::dockercloud::Api) {
    use plimsoll_core::config::Config;
    use plimsoll_core::provider::Chosen;
    use plimsoll_core::provider::dockercloud::{Api, DockerCloudSettings, GuardUrl};
    use plimsoll_core::secret::Secret;

    // Over Connect, grants go through the guard (served here on loopback;
    // the stand-in's egress proxy forwards the guard's host to it). REST
    // has no grant path: there the granted case must be refused per run.
    const GUARD_HOST: &str = "guard.plimsoll.test";
    let guard_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstreams = match api {
        Api::Rest => Default::default(),
        Api::Connect => std::collections::HashMap::from([(
            GUARD_HOST.to_owned(),
            guard_listener.local_addr().unwrap(),
        )]),
    };
    let standin =
        Arc::new(support::DockerCloudStandIn::start_with(Default::default(), upstreams).await);
    let (grants, grants_seen, guard, api_url) = match api {
        Api::Rest => (Arc::default(), Arc::default(), None, &standin.api),
        Api::Connect => {
            let (grants, seen) = granted_api().await;
            let url = format!("https://{GUARD_HOST}/v1/dockercloud/guard");
            let guard = GuardUrl::parse("SANDBOX_DOCKERCLOUD_GUARD_URL", &url).unwrap();
            (grants, seen, Some(guard), &standin.connect)
        }
    };
    let config = Config {
        grants,
        provider: Chosen::new(DockerCloudSettings {
            api,
            token: Some(Arc::new(Secret::new(standin.pat.clone()))),
            username: standin.username.clone(),
            auth_url: url::Url::parse(&standin.auth).unwrap(),
            api_url: url::Url::parse(api_url).unwrap(),
            image: support::DOCKERCLOUD_IMAGE.into(),
            guard,
            policy_url: url::Url::parse(&standin.policy).unwrap(),
            ..DockerCloudSettings::default()
        }),
        instance: format!(
            "plimsoll-test:conformance-dockercloud-{}-{}",
            api.as_str(),
            hex::encode(rand::random::<[u8; 4]>())
        ),
        ..Config::default()
    };
    let engine = Engine::start(&config)
        .await
        .unwrap_or_else(|e| panic!("dockercloud ({}) against the stand-in: {e}", api.as_str()));
    if let Some(g) = engine.guard() {
        support::serve_guard(guard_listener, g);
    }
    let left = standin.clone();
    conform(Subject {
        name: format!("dockercloud over {} (stand-in)", api.as_str()),
        engine,
        tier: Isolation::Vm,
        provider: "dockercloud",
        sandboxes: Box::new(move || {
            let left = left.clone();
            Box::pin(async move {
                let mut all: Vec<String> = left.sandboxes().into_iter().map(|(u, _)| u).collect();
                all.extend(left.containers().await);
                all
            })
        }),
        start_wait: Duration::from_millis(2500),
        api: grants_seen,
    })
    .await;
    Arc::into_inner(standin).unwrap().stop().await;
}

/// dockercloud over Docker's documented REST API.
#[cfg(all(feature = "dockercloud", feature = "docker"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dockercloud_conforms() {
    dockercloud_conforms_over(plimsoll_core::provider::dockercloud::Api::Rest).await;
}

/// dockercloud over Docker's Connect contract (docker.sbx.v1).
#[cfg(all(feature = "dockercloud", feature = "docker"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dockercloud_conforms_over_connect() {
    dockercloud_conforms_over(plimsoll_core::provider::dockercloud::Api::Connect).await;
}

/// openshell against the OpenShell gateway stand-in (mutual TLS, the 0.1.5
/// protocol; its sandboxes are local containers under gVisor, where the
/// proof's walls hold on a host without Yama).
#[cfg(all(feature = "openshell", feature = "docker"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openshell_conforms() {
    use plimsoll_core::config::Config;
    use plimsoll_core::provider::Chosen;

    let standin =
        Arc::new(support::OpenShellStandIn::start(Some("runsc"), Default::default()).await);
    // Grants through the relay in the sandbox, dialled into with ForwardTcp.
    let (grants, api) = granted_api().await;
    let config = Config {
        grants,
        provider: Chosen::new(standin.settings()),
        instance: format!(
            "plimsoll-test:conformance-openshell-{}",
            hex::encode(rand::random::<[u8; 4]>())
        ),
        sessions: plimsoll_core::session::SessionSettings {
            max_sessions: 2,
            max_per_caller: 2,
            ..Default::default()
        },
        ..Config::default()
    };
    let engine = Engine::start(&config)
        .await
        .unwrap_or_else(|e| panic!("openshell against the stand-in: {e}"));
    let left = standin.clone();
    conform(Subject {
        name: "openshell (stand-in, runsc)".into(),
        engine,
        tier: Isolation::Container,
        provider: "openshell",
        sandboxes: Box::new(move || {
            let left = left.clone();
            Box::pin(async move {
                let mut all = left.sandboxes();
                all.extend(left.containers().await);
                all
            })
        }),
        start_wait: Duration::from_millis(2500),
        api,
    })
    .await;
    Arc::into_inner(standin).unwrap().stop().await;
}
