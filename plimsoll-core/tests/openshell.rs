//! The openshell provider against the OpenShell gateway stand-in
//! (`plimsoll-standins`, served in this process over mutual TLS; its
//! sandboxes are local containers, under gVisor unless a test says runc).
//! The behaviour every provider shares is in `conformance.rs`.
//!
//! - a snippet and a project (files in, steps, an artifact out) run at tier
//!   `container`, with their records;
//! - startup is refused when the gateway reports another compute driver,
//!   when a sandbox reads back different (labels and image), when the policy
//!   in force drifts from the one asked for, and when a sandbox has a way
//!   out (an interface besides loopback); nothing is left behind;
//! - under runc the proof holds exactly when the host's Yama stops a child
//!   from opening its parent's memory, and names that wall when it does not;
//! - the reconcile deletes this instance's untracked sandbox and leaves
//!   another instance's young one alone; shutdown deletes all of this
//!   instance's;
//! - readiness asks the gateway at most once every 5 s;
//! - a client certificate the gateway does not trust: a clear refusal.
//! - grants: snippets, project steps and session calls reach their broker
//!   through the relay in the sandbox (more calls at once than it keeps
//!   dialled in), the credential never in the guest, the relay gone and its
//!   tokens revoked when the run or call ends.
//!
//! Docker unreachable fails these tests: they never skip.
#![cfg(all(feature = "openshell", feature = "docker"))]
#![expect(clippy::unwrap_used, reason = "integration tests fail loudly")]

mod support;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use plimsoll_core::client::Runner;
use plimsoll_core::config::Config;
use plimsoll_core::engine::Engine;
use plimsoll_core::provider::openshell::{
    INSTANCE_LABEL, LIFETIME_LABEL, OpenShell, OpenShellSettings, RUN_LABEL,
};
use plimsoll_core::provider::{Chosen, Provider, Setup};
use plimsoll_core::request::{JavaScriptRun, Payload, ProjectFile, ProjectRun, Request};
use plimsoll_core::result::{Output, ProjectOutcome};
use plimsoll_standins::openshell::Faults;
use plimsoll_standins::openshell::proto::datamodel::v1::{
    WorkspaceSelector, workspace_selector::Selection,
};
use plimsoll_standins::openshell::proto::v1 as pb;
use support::OpenShellStandIn;
use tokio_util::sync::CancellationToken;

fn instance() -> String {
    format!(
        "plimsoll-test:openshell-{}",
        hex::encode(rand::random::<[u8; 4]>())
    )
}

fn config(settings: OpenShellSettings, instance: &str) -> Config {
    Config {
        provider: Chosen::new(settings),
        instance: instance.to_owned(),
        ..Config::default()
    }
}

/// Waits up to 20 s for the stand-in to have no sandbox and no container.
async fn none_left(s: &OpenShellStandIn, after: &str) {
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
async fn refused(s: &OpenShellStandIn) -> String {
    match Engine::start(&config(s.settings(), &instance())).await {
        Ok(_) => panic!("startup must be refused"),
        Err(e) => e.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snippet_and_a_project_run_at_tier_container_with_their_records() {
    let s = OpenShellStandIn::start(Some("runsc"), Faults::default()).await;
    let engine = Engine::start(&config(s.settings(), &instance()))
        .await
        .unwrap();
    let r = Runner::from_engine(engine);

    let mut req = Request::new(Payload::JavaScript(JavaScriptRun {
        code: "console.log('hi from', process.getuid() !== 0, process.cwd()); \
               console.error('to stderr'); process.exit(3)"
            .into(),
        grant_profile: String::new(),
    }));
    req.envelope.timeout_ms = 30_000;
    let resp = r.run(req, CancellationToken::new()).await.unwrap();
    assert_eq!(resp.evidence.isolation, "container");
    let record = resp.record.clone().unwrap();
    assert_eq!(
        (record.provider.as_str(), record.isolation.as_str()),
        ("openshell", "container")
    );
    assert!(
        record.environment.contains(support::OPENSHELL_IMAGE),
        "{record:?}"
    );
    let Some(Output::JavaScript(j)) = resp.output else {
        panic!("not a snippet result")
    };
    assert_eq!(
        (
            String::from_utf8_lossy(&j.stdout).as_ref(),
            String::from_utf8_lossy(&j.stderr).as_ref(),
            j.exit_code,
            j.timed_out
        ),
        ("hi from true /tmp/work\n", "to stderr\n", 3, false)
    );

    let mut req = Request::new(Payload::Project(ProjectRun {
        files: vec![
            ProjectFile {
                path: "src/lib/add.js".into(),
                content: "module.exports = (a, b) => a + b;\n".into(),
            },
            ProjectFile {
                path: "main.js".into(),
                content: "const add = require('./src/lib/add');\n\
                          require('fs').mkdirSync('out', {recursive: true});\n\
                          require('fs').writeFileSync('out/sum.txt', String(add(40, 2)));\n\
                          console.log('sum', add(40, 2));\n"
                    .into(),
            },
        ],
        steps: vec![
            "node main.js && ln -s /etc/passwd out/link".into(),
            "cat out/sum.txt; exit 4".into(),
            "echo never".into(),
        ],
        artifacts: vec!["out/sum.txt".into(), "out/link".into()],
        ..ProjectRun::default()
    }));
    req.envelope.timeout_ms = 60_000;
    let resp = r.run(req, CancellationToken::new()).await.unwrap();
    let Some(Output::Project(p)) = resp.output else {
        panic!("not a project result")
    };
    assert_eq!(p.outcome, ProjectOutcome::Completed, "{p:?}");
    assert_eq!(p.steps.len(), 2, "{p:?}");
    assert_eq!(p.steps[0].stdout, b"sum 42\n");
    assert_eq!(
        (p.steps[1].stdout.as_slice(), p.steps[1].exit_code),
        (b"42".as_slice(), 4)
    );
    assert!(
        p.outcome_detail.contains("step 2 exited with code 4"),
        "{}",
        p.outcome_detail
    );
    assert_eq!(p.artifacts.len(), 1, "{p:?}");
    assert_eq!(
        (
            p.artifacts[0].path.as_str(),
            p.artifacts[0].content.as_slice()
        ),
        ("out/sum.txt", b"42".as_slice())
    );
    assert!(
        p.outcome_detail.contains("out/link (escapes)"),
        "{}",
        p.outcome_detail
    );
    none_left(&s, "a snippet and a project").await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn startup_is_refused_on_another_driver_a_differing_read_back_drift_or_a_way_out() {
    // runsc here runs with `--network=none` whatever docker asks for, so the
    // way out is opened under runc (whose proof also names the parent's
    // memory on a host without Yama: every wrong is named).
    for (runtime, faults, why) in [
        (
            Some("runsc"),
            Faults {
                other_driver: true,
                ..Faults::default()
            },
            "reports the compute driver(s) [\"kubernetes\"]",
        ),
        (
            Some("runsc"),
            Faults {
                readback_differs: true,
                ..Faults::default()
            },
            "its labels differ from those asked for; its image is",
        ),
        (
            Some("runsc"),
            Faults {
                policy_drift: true,
                ..Faults::default()
            },
            "the policy in force differs from the one asked for",
        ),
        (
            None,
            Faults {
                egress_open: true,
                ..Faults::default()
            },
            "loopback must be the only one",
        ),
    ] {
        let s = OpenShellStandIn::start(runtime, faults).await;
        let e = refused(&s).await;
        assert!(e.contains(why), "{faults:?}: {e}");
        none_left(&s, &format!("{faults:?}")).await;
        s.stop().await;
    }
}

/// Whether this host's Yama keeps a process from opening its parent's memory.
fn host_has_yama() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .is_some_and(|n| n >= 1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_runc_the_proof_holds_only_where_a_child_cannot_open_its_parents_memory() {
    let s = OpenShellStandIn::start(None, Faults::default()).await;
    let started = Engine::start(&config(s.settings(), &instance())).await;
    if host_has_yama() {
        started.unwrap();
    } else {
        let e = started.map(drop).unwrap_err().to_string();
        assert!(e.contains("a child could open its parent's memory"), "{e}");
        // Every other wall held.
        assert!(!e.contains("could write") && !e.contains("loopback"), "{e}");
    }
    none_left(&s, "the runc proof").await;
    s.stop().await;
}

async fn raw_client(
    s: &OpenShellStandIn,
) -> pb::open_shell_client::OpenShellClient<tonic::transport::Channel> {
    use tonic::transport::{Certificate, ClientTlsConfig, Identity};
    let read = |f: &str| std::fs::read(s.certs.path().join(f)).unwrap();
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(read("ca.crt")))
        .identity(Identity::from_pem(read("tls.crt"), read("tls.key")))
        .domain_name("localhost");
    let channel = tonic::transport::Endpoint::from_shared(s.url.clone())
        .unwrap()
        .tls_config(tls)
        .unwrap()
        .connect()
        .await
        .unwrap();
    pb::open_shell_client::OpenShellClient::new(channel)
}

/// Creates a sandbox as an instance whose digest is `digest` would.
async fn plant(s: &OpenShellStandIn, name: &str, digest: &str) {
    let mut c = raw_client(s).await;
    c.create_sandbox(pb::CreateSandboxRequest {
        workspace_scope: Some(WorkspaceSelector {
            selection: Some(Selection::Workspace("default".into())),
        }),
        spec: Some(pb::SandboxSpec {
            template: Some(pb::SandboxTemplate {
                image: support::OPENSHELL_IMAGE.into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        name: name.into(),
        labels: HashMap::from([
            (RUN_LABEL.to_owned(), "1".to_owned()),
            (INSTANCE_LABEL.to_owned(), digest.to_owned()),
            (LIFETIME_LABEL.to_owned(), "60".to_owned()),
        ]),
        ..Default::default()
    })
    .await
    .unwrap();
}

fn digest(instance: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(instance.as_bytes()))[..12].to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reconcile_takes_this_instances_leftovers_and_leaves_anothers_young_one() {
    let s = OpenShellStandIn::start(Some("runsc"), Faults::default()).await;
    let me = instance();
    let provider = OpenShell::new(
        &s.settings(),
        &Setup {
            instance: me.clone(),
            ..Setup::default()
        },
    )
    .unwrap();
    let mine = format!("plimsoll-{}-leftover", digest(&me));
    let other = "plimsoll-0123456789ab-young".to_owned();
    plant(&s, &mine, &digest(&me)).await;
    plant(&s, &other, "0123456789ab").await;
    assert_eq!(provider.reconcile_orphans().await.unwrap(), 1);
    let left = s.sandboxes();
    assert_eq!(left, vec![other.clone()], "{left:?}");
    // Shutdown takes only this instance's (none now): the other stays.
    provider.shutdown().await;
    assert_eq!(s.sandboxes(), vec![other]);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_asks_the_gateway_at_most_once_every_five_seconds() {
    let s = OpenShellStandIn::start(None, Faults::default()).await;
    let provider = OpenShell::new(&s.settings(), &Setup::default()).unwrap();
    provider.preflight().await.unwrap();
    let asked = Instant::now();
    s.stop().await;
    // The gateway is gone, but the answer had is reused for 5 s.
    provider.preflight().await.unwrap();
    assert!(asked.elapsed() < Duration::from_secs(5));
    tokio::time::sleep(
        Duration::from_secs(5).saturating_sub(asked.elapsed()) + Duration::from_millis(200),
    )
    .await;
    let e = provider.preflight().await.unwrap_err();
    assert!(e.message().contains("OpenShell gateway"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificate_the_gateway_does_not_trust_is_a_clear_refusal() {
    let s = OpenShellStandIn::start(None, Faults::default()).await;
    let stranger = tempfile::tempdir().unwrap();
    plimsoll_standins::openshell::tls::generate(stranger.path()).unwrap();
    let read = |f: &str| std::fs::read(stranger.path().join(f)).unwrap();
    let mut settings = s.settings();
    settings.cert_pem = read("tls.crt");
    settings.key_pem = Some(std::sync::Arc::new(plimsoll_core::secret::Secret::new(
        String::from_utf8(read("tls.key")).unwrap(),
    )));
    let key = String::from_utf8(read("tls.key")).unwrap();
    let provider = OpenShell::new(&settings, &Setup::default()).unwrap();
    let e = provider.preflight().await.unwrap_err().to_string();
    assert!(e.contains("OpenShell gateway"), "{e}");
    assert!(
        !e.contains(key.lines().nth(1).unwrap()),
        "the key leaked: {e}"
    );
    s.stop().await;
}

/// One session call on `engine`, its record checked against the chain.
async fn session_call(
    engine: &Engine,
    id: &str,
    chain: &mut plimsoll_core::verify::Chain,
    payload: Payload,
) -> Result<plimsoll_core::result::Output, plimsoll_core::Error> {
    let mut req = Request::new(payload);
    req.envelope.timeout_ms = 20_000;
    let caller = plimsoll_core::engine::Caller {
        principal: "alice".into(),
    };
    let a = engine
        .session_run(&caller, id, req.clone(), CancellationToken::new())
        .await?;
    let run = a.run.unwrap();
    chain.check_call(&req, &run).unwrap();
    Ok(run.output.unwrap())
}

fn cell(language: &str, code: &str) -> Payload {
    Payload::Cell(plimsoll_core::request::CellRun {
        language: language.into(),
        code: code.into(),
        files: vec![],
    })
}

fn step(script: &str) -> Payload {
    Payload::Project(ProjectRun {
        steps: vec![script.into()],
        ..ProjectRun::default()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_keeps_files_and_interpreters_cleans_between_calls_and_ends_honestly() {
    use plimsoll_core::error::SessionEnd;
    use plimsoll_core::result::CellResult;
    use plimsoll_core::wire::OpenSessionRequest;

    let s = OpenShellStandIn::start(Some("runsc"), Faults::default()).await;
    let mut cfg = config(s.settings(), &instance());
    cfg.sessions = plimsoll_core::session::SessionSettings {
        max_sessions: 2,
        max_per_caller: 2,
        disk_mb: 2,
        ..Default::default()
    };
    let engine = Engine::start(&cfg).await.unwrap();
    let d = engine.describe();
    assert!(d.supports_sessions, "{d:?}");
    // The wall: what the gateway reports of itself and the image it boots.
    let wall = d.wall.clone().expect("openshell names its wall");
    assert_eq!(wall.version_of("openshell gateway"), Some("0.1.5"));
    assert!(
        wall.version_of("openshell compute driver docker")
            .is_some_and(|v| v.starts_with("docker ")),
        "{wall:?}"
    );
    assert!(
        wall.version_of("openshell image")
            .is_some_and(|i| !i.is_empty())
    );
    assert!(
        d.policy.ends_with(&format!(";wall={}", wall.identity())),
        "{}",
        d.policy
    );
    let caller = plimsoll_core::engine::Caller {
        principal: "alice".into(),
    };
    let open = engine
        .open_session(
            &caller,
            &OpenSessionRequest {
                protocol: plimsoll_core::request::PROTOCOL,
                minimum_isolation: "container".into(),
                languages: vec!["python".into()],
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(open.isolation, "container");
    let id = open.session_id.clone();
    let mut chain = plimsoll_core::verify::Chain::new(&id);
    let cell_of = |o: Output| match o {
        Output::Cell(c) => c,
        o => panic!("{o:?}"),
    };
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();

    // The hinted interpreter was started at open; its first cell says so.
    let a: CellResult = cell_of(
        session_call(&engine, &id, &mut chain, cell("python", "x = 41"))
            .await
            .unwrap(),
    );
    assert!(a.interpreter_started && a.exit_code == 0, "{a:?}");
    let b = cell_of(
        session_call(&engine, &id, &mut chain, cell("python", "print(x + 1)"))
            .await
            .unwrap(),
    );
    assert_eq!(
        (text(&b.stdout).as_str(), b.interpreter_started),
        ("42\n", false)
    );

    // What a call leaves running is gone by the next; its files stay.
    let Output::Project(p) = session_call(
        &engine,
        &id,
        &mut chain,
        step("echo kept > kept.txt; setsid sleep 301 >/dev/null 2>&1 < /dev/null & (sleep 302 &) ; true"),
    )
    .await
    .unwrap() else {
        panic!("not a project")
    };
    assert_eq!(p.outcome, ProjectOutcome::Completed, "{p:?}");
    let count = "n=0; for d in /proc/[0-9]*; do c=$(tr '\\0' ' ' < $d/cmdline 2>/dev/null); \
                 case \"$c\" in 'sleep 30'[12]*) n=$((n+1));; esac; done; echo $n; cat kept.txt";
    let Output::Project(p) = session_call(&engine, &id, &mut chain, step(count))
        .await
        .unwrap()
    else {
        panic!("not a project")
    };
    assert_eq!(text(&p.steps[0].stdout), "0\nkept\n", "{p:?}");

    // A cell past its deadline ends its interpreter; the next one starts fresh.
    let mut req = Request::new(cell("python", "import time; time.sleep(30)"));
    req.envelope.timeout_ms = 1_500;
    let slow = engine
        .session_run(&caller, &id, req.clone(), CancellationToken::new())
        .await
        .unwrap()
        .run
        .unwrap();
    chain.check_call(&req, &slow).unwrap();
    let slow = cell_of(slow.output.unwrap());
    assert!(slow.timed_out && slow.interpreter_ended, "{slow:?}");
    let c = cell_of(
        session_call(
            &engine,
            &id,
            &mut chain,
            cell("python", "print('x' in dir())"),
        )
        .await
        .unwrap(),
    );
    assert_eq!(
        (text(&c.stdout).as_str(), c.interpreter_started),
        ("False\n", true)
    );
    let j = cell_of(
        session_call(&engine, &id, &mut chain, cell("javascript", "6 * 7"))
            .await
            .unwrap(),
    );
    assert_eq!(
        (text(&j.stdout).as_str(), j.interpreter_started),
        ("42\n", true)
    );

    // Past the disk budget (2 MiB of /tmp), the session ends after the call.
    session_call(
        &engine,
        &id,
        &mut chain,
        step("head -c 3145728 /dev/zero > big"),
    )
    .await
    .unwrap();
    let err = session_call(&engine, &id, &mut chain, cell("python", "1"))
        .await
        .unwrap_err();
    assert_eq!(
        err.session_end().map(|e| e.reason),
        Some(SessionEnd::DiskExceeded),
        "{err}"
    );
    none_left(&s, "a session ended by its disk budget").await;

    // A session whose sandbox dies ends with its main process.
    let open = engine
        .open_session(
            &caller,
            &OpenSessionRequest {
                protocol: plimsoll_core::request::PROTOCOL,
                minimum_isolation: "container".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let mut chain = plimsoll_core::verify::Chain::new(&open.session_id);
    session_call(&engine, &open.session_id, &mut chain, cell("python", "1"))
        .await
        .unwrap();
    let containers = s.containers().await;
    assert_eq!(containers.len(), 1, "{containers:?}");
    support::docker()
        .kill_container(
            containers[0].trim_start_matches('/'),
            None::<bollard::query_parameters::KillContainerOptions>,
        )
        .await
        .unwrap();
    let err = session_call(&engine, &open.session_id, &mut chain, cell("python", "1"))
        .await
        .unwrap_err();
    assert_eq!(
        err.session_end().map(|e| e.reason),
        Some(SessionEnd::MainProcessEnded),
        "{err}"
    );
    none_left(&s, "a session whose sandbox died").await;
}

/// The credential the `items` profile holds outside the sandbox.
const TOKEN: &str = "openshell-upstream-credential-0123456789";

/// Waits up to 10 s for the stand-in to hold no forward token.
async fn no_tokens_left(s: &OpenShellStandIn, after: &str) {
    let t = Instant::now();
    loop {
        let minted = s.standin.tokens.lock().unwrap().minted();
        if minted == 0 {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "after {after}: {minted} tokens left"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn granted_runs_and_session_calls_reach_their_broker_through_the_relay() {
    use plimsoll_core::grant::{Grants, profile};
    use plimsoll_core::wire::OpenSessionRequest;

    let (base, seen) = support::api().await;
    let text = format!(
        r#"{{"profiles":{{"items":{{"base_url":"{base}","allow":["GET /v1/items/*"],"allowed_callers":["anon","alice"],"allow_in_sessions":true,"token":{{"type":"static","env":"ITEMS_TOKEN"}}}}}}}}"#
    );
    let get = |k: &str| (k == "ITEMS_TOKEN").then(|| TOKEN.to_owned());
    let grants = Grants::from_profiles(profile::parse(text.as_bytes(), &get).unwrap());
    let s = OpenShellStandIn::start(Some("runsc"), Faults::default()).await;
    let mut cfg = config(s.settings(), &instance());
    cfg.grants = std::sync::Arc::new(grants);
    cfg.sessions = plimsoll_core::session::SessionSettings {
        max_sessions: 1,
        max_per_caller: 1,
        ..Default::default()
    };
    let engine = Engine::start(&cfg).await.unwrap();
    let d = engine.describe();
    assert!(
        d.supports_javascript_grants && d.supports_project_grants,
        "{d:?}"
    );
    let r = Runner::from_engine(engine.clone());

    // A snippet making more calls at once than the relay keeps dialled in;
    // the sandbox still has no way out and no credential.
    let mut req = Request::new(Payload::JavaScript(JavaScriptRun {
        code: "(async () => { \
               const all = await Promise.all([...Array(8).keys()].map(i => host.get('/v1/items/' + i))); \
               const denied = await host.get('/v1/admin'); \
               console.log(all.map(a => a.status).join(','), denied.status, \
                           JSON.stringify(process.env).includes('credential')); })()"
            .into(),
        grant_profile: "items".into(),
    }));
    req.envelope.timeout_ms = 30_000;
    let resp = r.run(req, CancellationToken::new()).await.unwrap();
    let Some(Output::JavaScript(j)) = resp.output else {
        panic!("not a snippet result")
    };
    assert_eq!(
        String::from_utf8_lossy(&j.stdout),
        "200,200,200,200,200,200,200,200 403 false\n",
        "stderr: {}",
        String::from_utf8_lossy(&j.stderr)
    );
    let mut targets: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|x| x.target.clone())
        .collect();
    targets.sort();
    assert_eq!(
        targets,
        (0..8).map(|i| format!("/v1/items/{i}")).collect::<Vec<_>>()
    );
    assert!(
        seen.lock()
            .unwrap()
            .iter()
            .all(|x| x.auth == format!("Bearer {TOKEN}")),
        "the broker's credential on every call"
    );
    none_left(&s, "a granted snippet").await;
    no_tokens_left(&s, "a granted snippet").await;

    // A project step reaches it too, from the host API client it requires.
    let mut req = Request::new(Payload::Project(ProjectRun {
        steps: vec![
            "node -e \"require('/usr/local/lib/plimsoll/host.js').get('/v1/items/p').then(a => console.log(a.status, a.json().target))\"".into(),
        ],
        ..ProjectRun::default()
    }));
    if let Payload::Project(p) = &mut req.payload {
        p.grant_profile = "items".into();
    }
    req.envelope.timeout_ms = 30_000;
    let resp = r.run(req, CancellationToken::new()).await.unwrap();
    let Some(Output::Project(p)) = resp.output else {
        panic!("not a project result")
    };
    assert_eq!(
        String::from_utf8_lossy(&p.steps[0].stdout),
        "200 /v1/items/p\n",
        "{p:?}"
    );
    none_left(&s, "a granted project").await;
    no_tokens_left(&s, "a granted project").await;

    // In a session: the granted call reaches it; the next call, ungranted,
    // finds no relay left and no host API address.
    let caller = plimsoll_core::engine::Caller {
        principal: "alice".into(),
    };
    let open = engine
        .open_session(
            &caller,
            &OpenSessionRequest {
                protocol: plimsoll_core::request::PROTOCOL,
                minimum_isolation: "container".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let id = open.session_id.clone();
    let mut chain = plimsoll_core::verify::Chain::new(&id);
    let granted = Payload::JavaScript(JavaScriptRun {
        code: "host.get('/v1/items/s').then(a => console.log(a.status))".into(),
        grant_profile: "items".into(),
    });
    let Output::JavaScript(j) = session_call(&engine, &id, &mut chain, granted)
        .await
        .unwrap()
    else {
        panic!("not a snippet result")
    };
    assert_eq!(String::from_utf8_lossy(&j.stdout), "200\n", "{j:?}");
    let probe = "n=0; for d in /proc/[0-9]*; do case \"$(tr '\\0' ' ' < $d/cmdline 2>/dev/null)\" in \
                 *plimsoll-rela[y]*) n=$((n+1));; esac; done; echo $n ${HOST_API_SOCKET:-unset}";
    let Output::Project(p) = session_call(&engine, &id, &mut chain, step(probe))
        .await
        .unwrap()
    else {
        panic!("not a project")
    };
    assert_eq!(
        String::from_utf8_lossy(&p.steps[0].stdout),
        "0 unset\n",
        "{p:?}"
    );
    no_tokens_left(&s, "a granted session call").await;
    engine
        .close_session(&caller, plimsoll_core::request::PROTOCOL, &id)
        .await
        .unwrap();
    none_left(&s, "a session with a granted call").await;
    s.stop().await;
}
