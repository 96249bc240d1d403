//! The dockercloud provider against the Docker Cloud stand-in
//! (`plimsoll-standins`, served in this process; its sandboxes are local
//! containers). The behaviour every provider shares is in `conformance.rs`.
//!
//! - a snippet and a project run at tier `vm`, with their records;
//! - a sandbox whose network policy reads back with an allow rule: startup
//!   is refused, a run is refused, nothing runs and the sandbox is deleted;
//! - the account's policy allow-all: startup is refused;
//! - network-policy reads forbidden: startup is refused naming the permission;
//! - a container with a way out though its policy reads deny-all: the
//!   proof's probe gets out, and startup is refused;
//! - the reconcile deletes this instance's untracked sandbox and leaves
//!   another instance's young one alone; shutdown deletes all of this
//!   instance's;
//! - a wrong PAT: a clear startup error that carries no secret;
//! - management reads answered 429 are retried: startup and a run succeed;
//! - the in-guest wrapper: a flood is cut and drained (the guest runs on),
//!   a step at its deadline is exit 124, timed out, with its output so far;
//! - project files Docker refuses to place: a setup failure, no step runs;
//! - over Docker's Connect contract: the token's capabilities lacking
//!   network-policy read, the account allow-all and a sandbox's allow rule
//!   each refuse startup; the reconcile finds this instance's leftover by
//!   its name and leaves another instance's young one (by its expiry);
//! - grants over Connect: a granted snippet and a project step reach their
//!   broker through the guard (the guard rule set through the policy API
//!   and read back; the guest's own guard credential), a refused route is
//!   the broker's 403, nothing else is reachable, each run's credential
//!   ends with it; a rule that does not read back runs nothing;
//! - after each, no sandbox and no container is left.
//!
//! Docker unreachable fails these tests: they never skip.
#![cfg(all(feature = "dockercloud", feature = "docker"))]
#![expect(clippy::unwrap_used, reason = "integration tests fail loudly")]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use plimsoll_core::client::Runner;
use plimsoll_core::config::Config;
use plimsoll_core::engine::Engine;
use plimsoll_core::provider::dockercloud::{
    DockerCloudSettings, INSTANCE_LABEL, LEASE_LABEL, LIFETIME_LABEL, name_prefix,
};
use plimsoll_core::provider::{Chosen, ProviderSettings, RunContext, Setup};
use plimsoll_core::request::{JavaScriptRun, Payload, ProjectFile, ProjectRun, Request};
use plimsoll_core::result::{Output, ProjectOutcome};
use plimsoll_core::secret::Secret;
use plimsoll_standins::dockercloud::Faults;
use serde_json::{Value, json};
use support::{DOCKERCLOUD_IMAGE, DockerCloudStandIn};
use tokio_util::sync::CancellationToken;

fn settings(s: &DockerCloudStandIn, pat: &str) -> DockerCloudSettings {
    DockerCloudSettings {
        token: Some(Arc::new(Secret::new(pat.to_owned()))),
        username: s.username.clone(),
        auth_url: url::Url::parse(&s.auth).unwrap(),
        api_url: url::Url::parse(&s.api).unwrap(),
        image: DOCKERCLOUD_IMAGE.into(),
        ..DockerCloudSettings::default()
    }
}

fn config(s: &DockerCloudStandIn, pat: &str, instance: &str) -> Config {
    Config {
        provider: Chosen::new(settings(s, pat)),
        instance: instance.to_owned(),
        ..Config::default()
    }
}

fn instance() -> String {
    format!(
        "plimsoll-test:dockercloud-{}",
        hex::encode(rand::random::<[u8; 4]>())
    )
}

/// Waits up to 20 s for the stand-in to have no sandbox and no container.
async fn none_left(s: &DockerCloudStandIn, after: &str) {
    let t = Instant::now();
    loop {
        let (sandboxes, containers) = (s.sandboxes(), s.containers().await);
        if sandboxes.is_empty() && containers.is_empty() {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "after {after}: {sandboxes:?} {containers:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Starts an engine that must fail its startup; its message.
async fn refused(s: &DockerCloudStandIn, pat: &str) -> String {
    match Engine::start(&config(s, pat, &instance())).await {
        Ok(_) => panic!("startup must be refused"),
        Err(e) => e.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snippet_and_a_project_run_at_tier_vm_with_their_records() {
    let s = DockerCloudStandIn::start(Faults::default()).await;
    let engine = Engine::start(&config(&s, &s.pat, &instance()))
        .await
        .unwrap();
    let r = Runner::from_engine(engine);

    let mut req = Request::new(Payload::JavaScript(JavaScriptRun {
        code: "console.log('hi from', process.getuid(), process.cwd()); \
               console.error('to stderr'); process.exit(3)"
            .into(),
        grant_profile: String::new(),
    }));
    req.envelope.timeout_ms = 30_000;
    let resp = r.run(req, CancellationToken::new()).await.unwrap();
    assert_eq!(resp.evidence.isolation, "vm");
    let record = resp.record.clone().unwrap();
    assert_eq!(
        (record.provider.as_str(), record.isolation.as_str()),
        ("dockercloud", "vm")
    );
    assert!(record.environment.contains(DOCKERCLOUD_IMAGE), "{record:?}");
    let Some(Output::JavaScript(j)) = resp.output else {
        panic!("not a snippet result")
    };
    assert_eq!(
        (
            j.stdout.as_slice(),
            j.stderr.as_slice(),
            j.exit_code,
            j.timed_out
        ),
        (
            b"hi from 61000 /work\n".as_slice(),
            b"to stderr\n".as_slice(),
            3,
            false
        )
    );

    let file = |path: &str, content: &str| ProjectFile {
        path: path.into(),
        content: content.into(),
    };
    let req = Request::new(Payload::Project(ProjectRun {
        files: vec![
            file(
                "src/main.js",
                "require('fs').writeFileSync('out/result.txt', 'made ' + require('./lib/n.js'))",
            ),
            file("src/lib/n.js", "module.exports = 42"),
        ],
        steps: vec![
            "mkdir -p out && node src/main.js".into(),
            "cat out/result.txt; id -u".into(),
        ],
        artifacts: vec!["out/result.txt".into(), "missing.txt".into()],
        ..ProjectRun::default()
    }));
    let resp = r.run(req, CancellationToken::new()).await.unwrap();
    assert_eq!(resp.evidence.isolation, "vm");
    assert_eq!(resp.record.as_ref().unwrap().provider, "dockercloud");
    let Some(Output::Project(p)) = resp.output else {
        panic!("not a project result")
    };
    assert_eq!(p.outcome, ProjectOutcome::Completed, "{p:?}");
    assert_eq!(p.steps.len(), 2, "{p:?}");
    assert_eq!(p.steps[1].stdout, b"made 4261000\n", "{p:?}");
    assert_eq!(p.artifacts.len(), 1, "{p:?}");
    assert_eq!(p.artifacts[0].content, b"made 42");
    assert!(p.outcome_detail.contains("missing.txt (missing)"), "{p:?}");
    none_left(&s, "the runs").await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_whose_policy_allows_anything_runs_nothing_and_is_deleted() {
    let s = DockerCloudStandIn::start(Faults {
        policy_allows: true,
        ..Faults::default()
    })
    .await;
    let m = refused(&s, &s.pat).await;
    assert!(m.contains("not deny-all with nothing allowed"), "{m}");
    assert!(m.contains("0.0.0.0/0"), "{m}");
    none_left(&s, "the refused startup").await;

    // A run is held to the same read-back (the provider unproven, called directly).
    let setup = Setup {
        instance: instance(),
        ..Setup::default()
    };
    let provider = settings(&s, &s.pat).build(&setup).unwrap();
    let ctx = RunContext {
        timeout: Duration::from_secs(10),
        cancel: CancellationToken::new(),
        principal: "anon".into(),
        grant: None,
        warm: Default::default(),
        phases: Default::default(),
    };
    let job = JavaScriptRun {
        code: "console.log('ran')".into(),
        grant_profile: String::new(),
    };
    let e = provider.run_javascript(&job, &ctx).await.unwrap_err();
    assert!(
        e.message().contains("nothing runs in it and it is deleted"),
        "{e}"
    );
    none_left(&s, "the refused run").await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_policy_that_allows_all_refuses_startup() {
    let s = DockerCloudStandIn::start(Faults {
        account_allow_all: true,
        ..Faults::default()
    })
    .await;
    let m = refused(&s, &s.pat).await;
    assert!(
        m.contains("the account's network policy is not deny-all"),
        "{m}"
    );
    assert!(m.contains("sbx --cloud policy init deny-all"), "{m}");
    none_left(&s, "the refused startup").await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forbidden_policy_read_refuses_startup_naming_the_permission() {
    let s = DockerCloudStandIn::start(Faults {
        deny_policy_read: true,
        ..Faults::default()
    })
    .await;
    let m = refused(&s, &s.pat).await;
    assert!(m.contains("403"), "{m}");
    assert!(
        m.contains("lacks the network-policies read permission"),
        "{m}"
    );
    none_left(&s, "the refused startup").await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn egress_open_during_the_proof_refuses_startup() {
    // The policy reads deny-all, yet the container has a network: the
    // probe's connection out succeeds, so the mark is not earned.
    support::host_reaches_1_1_1_1().await;
    let s = DockerCloudStandIn::start(Faults {
        allow_egress: true,
        ..Faults::default()
    })
    .await;
    let m = refused(&s, &s.pat).await;
    assert!(m.contains("egress is open"), "{m}");
    none_left(&s, "the refused proof").await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_pat_is_a_clear_error_without_the_secret() {
    let s = DockerCloudStandIn::start(Faults::default()).await;
    let wrong = format!("dckr_pat_{}", "0123456789abcdef".repeat(2));
    let m = refused(&s, &wrong).await;
    assert!(m.contains("exchanging the Docker access token"), "{m}");
    assert!(m.contains("401"), "{m}");
    assert!(m.contains("DOCKER_SBX_TOKEN"), "{m}");
    assert!(
        !m.contains("0123456789abcdef") && !m.contains(&s.pat),
        "{m}"
    );
    none_left(&s, "the refused token").await;
    s.stop().await;
}

/// Creates a sandbox on the stand-in directly: `prefix`, `labels`.
async fn create_directly(s: &DockerCloudStandIn, prefix: &str, labels: Value) -> String {
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Full<Bytes>>();
    let call = |uri: String, auth: Option<String>, body: Value| {
        let client = client.clone();
        async move {
            let mut req = hyper::Request::post(uri).header("content-type", "application/json");
            if let Some(a) = auth {
                req = req.header("authorization", format!("Bearer {a}"));
            }
            let resp = client
                .request(req.body(Full::new(Bytes::from(body.to_string()))).unwrap())
                .await
                .unwrap();
            let status = resp.status().as_u16();
            let body = resp.into_body().collect().await.unwrap().to_bytes();
            (status, serde_json::from_slice::<Value>(&body).unwrap())
        }
    };
    let (status, v) = call(
        s.auth.clone(),
        None,
        json!({"identifier": s.username, "secret": s.pat}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    let token = v["access_token"].as_str().unwrap().to_owned();
    let (status, v) = call(
        format!("{}/v1/sandboxes", s.api),
        Some(token),
        json!({
            "displayNamePrefix": prefix,
            "imageRef": DOCKERCLOUD_IMAGE,
            "resources": {"cpus": 1, "memoryMib": 2048},
            "labels": labels,
            "startupExecution": {"rawImage": {"start": {"argv": ["sleep", "infinity"]}}},
            "features": {"timeouts": {"timeout": "600s", "onTimeout": "delete"}},
        }),
    )
    .await;
    assert!(status == 201 || status == 202, "{status} {v}");
    v["uid"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reconcile_deletes_this_instances_leftover_and_leaves_anothers_young_one() {
    let s = DockerCloudStandIn::start(Faults::default()).await;
    let ours = instance();
    let theirs = "plimsoll-test:someone-else";
    let orphan = create_directly(
        &s,
        &name_prefix(&ours),
        json!({INSTANCE_LABEL: ours, LEASE_LABEL: "a-lease-nobody-tracks", LIFETIME_LABEL: "150"}),
    )
    .await;
    let young = create_directly(
        &s,
        &name_prefix(theirs),
        json!({INSTANCE_LABEL: theirs, LEASE_LABEL: "x", LIFETIME_LABEL: "150"}),
    )
    .await;
    let setup = Setup {
        instance: ours,
        ..Setup::default()
    };
    let provider = settings(&s, &s.pat).build(&setup).unwrap();
    assert_eq!(provider.reconcile_orphans().await.unwrap(), 1);
    let left: Vec<String> = s.sandboxes().into_iter().map(|(u, _)| u).collect();
    assert_eq!(left, vec![young.clone()], "orphan {orphan}");
    assert_eq!(provider.reconcile_orphans().await.unwrap(), 0);
    // At shutdown nothing is in flight: every sandbox of this instance goes,
    // tracked or not; another instance's young one still stays.
    let ours_again = create_directly(
        &s,
        &name_prefix(&setup.instance),
        json!({INSTANCE_LABEL: setup.instance, LEASE_LABEL: "another", LIFETIME_LABEL: "150"}),
    )
    .await;
    provider.shutdown().await;
    let left: Vec<String> = s.sandboxes().into_iter().map(|(u, _)| u).collect();
    assert_eq!(left, vec![young.clone()], "ours {ours_again}");
    s.standin.delete(&young).await;
    none_left(&s, "the reconcile").await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttled_reads_are_retried() {
    let s = DockerCloudStandIn::start(Faults {
        throttle_reads: true,
        ..Faults::default()
    })
    .await;
    let engine = Engine::start(&config(&s, &s.pat, &instance()))
        .await
        .unwrap();
    let r = Runner::from_engine(engine);
    let req = Request::new(Payload::JavaScript(JavaScriptRun {
        code: "console.log('through')".into(),
        grant_profile: String::new(),
    }));
    let resp = r.run(req, CancellationToken::new()).await.unwrap();
    let Some(Output::JavaScript(j)) = resp.output else {
        panic!("not a snippet result")
    };
    assert_eq!(
        (j.stdout.as_slice(), j.exit_code),
        (b"through\n".as_slice(), 0)
    );
    none_left(&s, "the throttled run").await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guest_bounds_itself_a_flood_runs_on_and_a_deadline_is_124() {
    let s = DockerCloudStandIn::start(Faults::default()).await;
    let engine = Engine::start(&config(&s, &s.pat, &instance()))
        .await
        .unwrap();
    let r = Runner::from_engine(engine);

    // A flood is cut in the guest and drained: the guest is not killed by
    // SIGPIPE, it runs on and exits as it chooses. Each write waits for the
    // one before it: node's stdout pipe may be non-blocking, and a busy loop
    // would only queue writes past the first pipe-full, which the exit drops.
    let mut req = Request::new(Payload::JavaScript(JavaScriptRun {
        code: "const s = 'x'.repeat(1 << 16); const end = Date.now() + 1500; \
               (async () => { \
                 while (Date.now() < end) await new Promise(r => process.stdout.write(s, r)); \
                 console.error('survived'); process.exit(5); \
               })()"
            .into(),
        grant_profile: String::new(),
    }));
    req.envelope.timeout_ms = 20_000;
    let resp = r.run(req, CancellationToken::new()).await.unwrap();
    let Some(Output::JavaScript(j)) = resp.output else {
        panic!("not a snippet result")
    };
    assert_eq!(
        (j.exit_code, j.timed_out, j.stdout_truncated, j.stdout.len()),
        (5, false, true, 64 * 1024)
    );
    assert_eq!(
        (j.stderr.as_slice(), j.stderr_truncated),
        (b"survived\n".as_slice(), false)
    );

    // A step still running at the deadline: 124, timed out, its output so
    // far, and what it started in the background gone with it.
    let mut req = Request::new(Payload::Project(ProjectRun {
        steps: vec![
            "echo started; sleep 60 & sleep 60".into(),
            "echo never".into(),
        ],
        ..ProjectRun::default()
    }));
    req.envelope.timeout_ms = 2_000;
    let started = Instant::now();
    let resp = r.run(req, CancellationToken::new()).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let Some(Output::Project(p)) = resp.output else {
        panic!("not a project result")
    };
    assert_eq!(p.outcome, ProjectOutcome::TimedOut, "{p:?}");
    assert_eq!(p.steps.len(), 1, "{p:?}");
    assert_eq!(
        (
            p.steps[0].exit_code,
            p.steps[0].timed_out,
            p.steps[0].stdout.as_slice()
        ),
        (124, true, b"started\n".as_slice())
    );
    none_left(&s, "the bounded runs").await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_docker_refuses_to_place_are_a_setup_failure_and_nothing_runs() {
    let s = DockerCloudStandIn::start(Faults::default()).await;
    let engine = Engine::start(&config(&s, &s.pat, &instance()))
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
    assert!(p.outcome_detail.contains("answered 409"), "{p:?}");
    none_left(&s, "the setup failure").await;
    s.stop().await;
}

/// The settings for Docker's Connect contract on the stand-in.
fn connect_settings(s: &DockerCloudStandIn) -> DockerCloudSettings {
    DockerCloudSettings {
        api: plimsoll_core::provider::dockercloud::Api::Connect,
        api_url: url::Url::parse(&s.connect).unwrap(),
        ..settings(s, &s.pat)
    }
}

/// Starts an engine over Connect that must fail its startup; its message.
async fn refused_over_connect(s: &DockerCloudStandIn) -> String {
    let config = Config {
        provider: Chosen::new(connect_settings(s)),
        instance: instance(),
        ..Config::default()
    };
    match Engine::start(&config).await {
        Ok(_) => panic!("startup must be refused"),
        Err(e) => e.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_connect_the_same_walls_hold_and_the_reconcile_reads_names_and_expiries() {
    // The token's capabilities lack network-policy read: refused before any sandbox.
    let s = DockerCloudStandIn::start(Faults {
        deny_policy_read: true,
        ..Faults::default()
    })
    .await;
    let m = refused_over_connect(&s).await;
    assert!(
        m.contains("lacks the network-policies read permission"),
        "{m}"
    );
    assert!(s.sandboxes().is_empty(), "no sandbox was made");
    s.stop().await;

    // The account (the owner scope) allows all: refused.
    let s = DockerCloudStandIn::start(Faults {
        account_allow_all: true,
        ..Faults::default()
    })
    .await;
    let m = refused_over_connect(&s).await;
    assert!(
        m.contains("the account's network policy is not deny-all"),
        "{m}"
    );
    s.stop().await;

    // A sandbox whose policy allows a network: refused, and it is deleted.
    let s = DockerCloudStandIn::start(Faults {
        policy_allows: true,
        ..Faults::default()
    })
    .await;
    let m = refused_over_connect(&s).await;
    assert!(
        m.contains("not deny-all with nothing allowed") && m.contains("0.0.0.0/0"),
        "{m}"
    );
    none_left(&s, "the refused startup over Connect").await;
    s.stop().await;

    // The reconcile: the contract has no labels, so this instance's
    // leftover is known by its name's prefix (its lease untracked) and
    // another instance's young one by its expiry.
    let s = DockerCloudStandIn::start(Faults::default()).await;
    let ours = instance();
    let orphan = create_directly(&s, &name_prefix(&ours), json!({})).await;
    let young = create_directly(&s, &name_prefix("plimsoll-test:someone-else"), json!({})).await;
    let setup = Setup {
        instance: ours,
        ..Setup::default()
    };
    let provider = connect_settings(&s).build(&setup).unwrap();
    assert_eq!(provider.reconcile_orphans().await.unwrap(), 1);
    let left: Vec<String> = s.sandboxes().into_iter().map(|(u, _)| u).collect();
    assert_eq!(left, vec![young.clone()], "orphan {orphan}");
    s.standin.delete(&young).await;
    none_left(&s, "the reconcile over Connect").await;
    s.stop().await;
}

/// The guard's hostname the stand-in's egress proxy forwards to the guard.
const GUARD_HOST: &str = "guard.plimsoll.test";
/// The credential the `items` profile holds outside the sandbox.
const API_TOKEN: &str = "dockercloud-items-credential-0123456789";

/// A granted engine over Connect with everything in front of it: a real
/// API behind the broker, the guard served on loopback, the stand-in's
/// egress proxy forwarding `GUARD_HOST` to it.
async fn granted_rig(
    faults: Faults,
) -> (
    Engine,
    DockerCloudStandIn,
    Arc<std::sync::Mutex<Vec<support::Seen>>>,
) {
    use plimsoll_core::grant::{Grants, profile};
    use plimsoll_core::provider::dockercloud::GuardUrl;
    let (base, seen) = support::api().await;
    let text = format!(
        r#"{{"profiles":{{"items":{{"base_url":"{base}","allow":["GET /v1/items/*"],"allowed_callers":["alice"],"token":{{"type":"static","env":"ITEMS_TOKEN"}}}}}}}}"#
    );
    let get = |k: &str| (k == "ITEMS_TOKEN").then(|| API_TOKEN.to_owned());
    let grants = Grants::from_profiles(profile::parse(text.as_bytes(), &get).unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let s = DockerCloudStandIn::start_with(
        faults,
        std::collections::HashMap::from([(GUARD_HOST.to_owned(), listener.local_addr().unwrap())]),
    )
    .await;
    let settings = DockerCloudSettings {
        guard: Some(
            GuardUrl::parse(
                "SANDBOX_DOCKERCLOUD_GUARD_URL",
                &format!("https://{GUARD_HOST}/v1/dockercloud/guard"),
            )
            .unwrap(),
        ),
        policy_url: url::Url::parse(&s.policy).unwrap(),
        ..connect_settings(&s)
    };
    let api = format!("connect docker.sbx.v1 {}", settings.api_url);
    let config = Config {
        provider: Chosen::new(settings),
        instance: instance(),
        grants: Arc::new(grants),
        ..Config::default()
    };
    let engine = Engine::start(&config).await.unwrap();
    let d = engine.describe();
    assert!(
        d.supports_javascript_grants && d.supports_project_grants,
        "{d:?}"
    );
    // The wall: the contract spoken and the image booted, pinned by digest.
    let wall = d.wall.clone().expect("dockercloud names its wall");
    assert_eq!(wall.version_of("docker cloud api"), Some(api.as_str()));
    assert_eq!(
        wall.version_of("docker cloud image"),
        Some(DOCKERCLOUD_IMAGE)
    );
    assert!(
        d.policy.ends_with(&format!(";wall={}", wall.identity())),
        "{}",
        d.policy
    );
    support::serve_guard(listener, engine.guard().expect("a guard"));
    (engine, s, seen)
}

async fn run_as_alice(e: &Engine, payload: Payload) -> Result<Output, plimsoll_core::Error> {
    let mut request = Request::new(payload);
    request.envelope.timeout_ms = 60_000;
    let alice = plimsoll_core::engine::Caller {
        principal: "alice".into(),
    };
    Ok(e.run(&alice, request, CancellationToken::new())
        .await?
        .output
        .expect("an output"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_connect_a_granted_run_reaches_its_broker_through_the_guard_and_nothing_else() {
    let (engine, s, seen) = granted_rig(Faults::default()).await;
    let snippet = r#"
(async () => {
  const a = await host.get('/v1/items/1');
  console.log('ALLOWED', a.status, a.json().target);
  console.log('REFUSED', (await host.get('/v1/other')).status);
  const net = require('net');
  const tryConnect = (port, to) => new Promise((done) => {
    const c = net.connect({ port, host: to, timeout: 2000 });
    c.on('connect', () => { console.log('ESCAPED', to, port); c.destroy(); done(); });
    c.on('timeout', () => { c.destroy(); done(); });
    c.on('error', () => done());
  });
  await Promise.all([tryConnect(443, '1.1.1.1'), tryConnect(80, 'guard.plimsoll.test')]);
  console.log('PROBED');
})().catch((e) => { console.log('ERROR', e && e.message); process.exit(3); });
"#;
    let out = run_as_alice(
        &engine,
        Payload::JavaScript(JavaScriptRun {
            code: snippet.into(),
            grant_profile: "items".into(),
        }),
    )
    .await
    .unwrap();
    let Output::JavaScript(j) = out else {
        panic!("not a snippet result")
    };
    assert_eq!(
        String::from_utf8_lossy(&j.stdout),
        "ALLOWED 200 /v1/items/1\nREFUSED 403\nPROBED\n",
        "stderr: {}",
        String::from_utf8_lossy(&j.stderr)
    );
    // A project step's Python client reaches it too.
    let out = run_as_alice(
        &engine,
        Payload::Project(ProjectRun {
            steps: vec![
                "python3 -c \"import plimsoll_host; print(plimsoll_host.get('/v1/items/2').status)\""
                    .into(),
            ],
            grant_profile: "items".into(),
            ..ProjectRun::default()
        }),
    )
    .await
    .unwrap();
    let Output::Project(p) = out else {
        panic!("not a project result")
    };
    assert_eq!(
        String::from_utf8_lossy(&p.steps[0].stdout),
        "200\n",
        "{p:?}"
    );
    let got: Vec<(String, String)> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|x| (x.target.clone(), x.auth.clone()))
        .collect();
    let bearer = format!("Bearer {API_TOKEN}");
    assert_eq!(
        got,
        [
            ("/v1/items/1".to_owned(), bearer.clone()),
            ("/v1/items/2".to_owned(), bearer)
        ]
    );
    // Each run's guard credential ended with it.
    assert_eq!(engine.guard().unwrap().runs(), 0);
    none_left(&s, "granted runs over Connect").await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_connect_a_guard_rule_that_does_not_read_back_runs_nothing() {
    let (engine, s, seen) = granted_rig(Faults {
        policy_ignores_rule: true,
        ..Faults::default()
    })
    .await;
    let e = run_as_alice(
        &engine,
        Payload::JavaScript(JavaScriptRun {
            code: "host.get('/v1/items/1').then((a) => console.log(a.status))".into(),
            grant_profile: "items".into(),
        }),
    )
    .await
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("only the guard rule guard.plimsoll.test:443 allowed"),
        "{e}"
    );
    assert!(seen.lock().unwrap().is_empty());
    assert_eq!(engine.guard().unwrap().runs(), 0);
    none_left(&s, "a refused guard rule").await;
    s.stop().await;
}
