//! Grants on e2b through the egress guard, end to end: a real broker in
//! front of a real loopback API, the guard served on loopback, and the E2B
//! stand-in's egress proxy (its own CA, the create's header rule) standing
//! in for E2B's, its `guard.plimsoll.test` forwarded to the guard.
//!
//! - a granted snippet's allowed call gets the API's answer, a route the
//!   grant does not allow the broker's 403, and a project step's Python
//!   client the same; the API saw its credential and never a `crg_` token;
//! - the VM reaches nothing else (the internet, the guard host's other ports);
//! - the guard credential never enters the VM: the guest searches its
//!   environment, every `/proc/*/environ` and `cmdline` it can read and
//!   its files, and prints `BREACH` on a find;
//! - without `E2B_GUARD_URL` there is no guard, and a grants file is a
//!   startup error;
//! - the pass ends before the kill: when the control plane gets the
//!   DELETE, the guard admits no run, and the ended run's credential
//!   (read from the create on its way to E2B) gets a 401; two concurrent
//!   granted runs each reach their own broker.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use plimsoll_core::config::Config;
use plimsoll_core::engine::{Caller, Engine};
use plimsoll_core::grant::guard::Guard;
use plimsoll_core::grant::{Grants, profile};
use plimsoll_core::provider::Chosen;
use plimsoll_core::provider::e2b::GuardUrl;
use plimsoll_core::request::{JavaScriptRun, Payload, ProjectRun, Request};
use plimsoll_core::result::Output;
use plimsoll_standins::e2b::Faults;
use tokio_util::sync::CancellationToken;

use super::{E2bStandIn, instance, none_left, settings};

const HOST: &str = "guard.plimsoll.test";
const API_TOKEN: &str = "items-api-credential-0123456789abcdef";

fn grants(base: &str) -> Grants {
    let text = format!(
        r#"{{"profiles":{{"items":{{"base_url":"{base}","allow":["GET /v1/items/*"],
           "allowed_callers":["alice"],"token":{{"type":"static","env":"ITEMS_TOKEN"}}}}}}}}"#
    );
    let get = |k: &str| (k == "ITEMS_TOKEN").then(|| API_TOKEN.to_owned());
    Grants::from_profiles(profile::parse(text.as_bytes(), &get).unwrap())
}

/// What the control plane saw: the guard credentials the creates carried,
/// and the runs the guard admitted when each DELETE arrived.
#[derive(Default)]
struct Seen {
    credentials: Vec<String>,
    admitted_at_kill: Vec<usize>,
}

fn client() -> hyper_util::client::legacy::Client<
    hyper_util::client::legacy::connect::HttpConnector,
    Full<Bytes>,
> {
    hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build_http()
}

/// A pass-through in front of the stand-in's control plane that watches
/// creates and kills.
async fn watch(
    api: String,
    guard: Arc<std::sync::OnceLock<Arc<Guard>>>,
) -> (String, Arc<Mutex<Seen>>) {
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let (s, _) = listener.accept().await.unwrap();
            let (log, api, guard) = (log.clone(), api.clone(), guard.clone());
            let svc =
                hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let (log, api, guard) = (log.clone(), api.clone(), guard.clone());
                    async move {
                        let (parts, body) = req.into_parts();
                        let body = body.collect().await.unwrap().to_bytes();
                        if parts.method == hyper::Method::DELETE
                            && let Some(g) = guard.get()
                        {
                            log.lock().unwrap().admitted_at_kill.push(g.runs());
                        }
                        if parts.method == hyper::Method::POST && parts.uri.path() == "/sandboxes" {
                            let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
                            let auth = v
                                .pointer(&format!(
                                    "/network/rules/{HOST}/0/transform/headers/Authorization"
                                ))
                                .and_then(|a| a.as_str());
                            if let Some(a) = auth {
                                log.lock().unwrap().credentials.push(a.to_owned());
                            }
                        }
                        let mut out = hyper::Request::builder()
                            .method(parts.method)
                            .uri(format!("{api}{}", parts.uri.path_and_query().unwrap()));
                        for (k, v) in &parts.headers {
                            out = out.header(k, v);
                        }
                        let resp = client()
                            .request(out.body(Full::new(body)).unwrap())
                            .await
                            .unwrap();
                        let (parts, body) = resp.into_parts();
                        let body = body.collect().await.unwrap().to_bytes();
                        Ok::<_, std::convert::Infallible>(hyper::Response::from_parts(
                            parts,
                            Full::new(body),
                        ))
                    }
                });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(s), svc)
                    .await;
            });
        }
    });
    (format!("http://{addr}"), seen)
}

/// A granted e2b engine with everything in front of it.
struct Rig {
    engine: Engine,
    standin: E2bStandIn,
    guard_addr: std::net::SocketAddr,
    seen: Arc<Mutex<Seen>>,
    api: Arc<Mutex<Vec<super::support::Seen>>>,
}

async fn rig() -> Rig {
    let (base, api) = super::support::api().await;
    let guard_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let guard_addr = guard_listener.local_addr().unwrap();
    let standin = E2bStandIn::start_with(
        Faults::default(),
        HashMap::from([(HOST.to_owned(), guard_addr)]),
    )
    .await;
    let slot: Arc<std::sync::OnceLock<Arc<Guard>>> = Arc::default();
    let (watched, seen) = watch(standin.api.clone(), slot.clone()).await;
    let mut e2b = settings(&standin, &standin.key);
    e2b.api_url = url::Url::parse(&watched).unwrap();
    e2b.guard =
        Some(GuardUrl::parse("E2B_GUARD_URL", &format!("https://{HOST}/v1/e2b/guard")).unwrap());
    let config = Config {
        provider: Chosen::new(e2b),
        instance: instance(),
        grants: Arc::new(grants(&base)),
        ..Config::default()
    };
    let engine = Engine::start(&config).await.unwrap();
    let d = engine.describe();
    assert!(
        d.supports_javascript_grants && d.supports_project_grants,
        "{d:?}"
    );
    let guard = engine.guard().expect("a guard");
    let _ = slot.set(guard.clone());
    super::support::serve_guard(guard_listener, guard);
    Rig {
        engine,
        standin,
        guard_addr,
        seen,
        api,
    }
}

async fn run(e: &Engine, payload: Payload) -> Output {
    let mut request = Request::new(payload);
    request.envelope.timeout_ms = 60_000;
    let alice = Caller {
        principal: "alice".into(),
    };
    e.run(&alice, request, CancellationToken::new())
        .await
        .expect("the run is answered")
        .output
        .expect("an output")
}

/// Calls the API, then searches everything it can read for a guard credential.
const SNIPPET: &str = r#"
(async () => {
  const a = await host.get('/v1/items/1');
  console.log('ALLOWED', a.status, a.body);
  const b = await host.get('/v1/other');
  console.log('REFUSED', b.status);
  // Nothing else is reachable: not the internet, not the guard host on another port.
  const net = require('net');
  const tryConnect = (port, to) => new Promise((done) => {
    const c = net.connect({ port, host: to, timeout: 2000 });
    c.on('connect', () => { console.log('ESCAPED', to, port); c.destroy(); done(); });
    c.on('timeout', () => { c.destroy(); done(); });
    c.on('error', () => done());
  });
  await Promise.all([tryConnect(443, '1.1.1.1'), tryConnect(53, '8.8.8.8'),
                     tryConnect(80, 'guard.plimsoll.test')]);
  console.log('PROBED');
  const needle = new RegExp('crg' + '_[0-9a-f]{64}');
  const fs = require('fs');
  if (needle.test(JSON.stringify(process.env))) console.log('BREACH env');
  for (const p of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    for (const f of ['environ', 'cmdline']) {
      try { if (needle.test(fs.readFileSync(`/proc/${p}/${f}`, 'latin1'))) console.log('BREACH', p, f); } catch (_) {}
    }
  }
  const r = require('child_process').spawnSync('grep',
    ['-rlaE', '--exclude-dir=proc', '--exclude-dir=sys', '--exclude-dir=dev', 'crg[_][0-9a-f]{64}', '/'],
    { encoding: 'latin1', timeout: 50000 });
  for (const f of (r.stdout || '').split('\n').filter(Boolean)) console.log('BREACH file', f);
  // Status 2 is files it may not read; a timeout or a spawn failure is not a search.
  console.log('SEARCHED', r.error === undefined && r.signal === null, r.status);
})().catch((e) => { console.log('ERROR', e && e.message); process.exit(3); });
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_granted_run_reaches_its_broker_and_the_credential_never_enters_the_vm() {
    let r = rig().await;
    let out = run(
        &r.engine,
        Payload::JavaScript(JavaScriptRun {
            code: SNIPPET.into(),
            grant_profile: "items".into(),
        }),
    )
    .await;
    let Output::JavaScript(j) = out else {
        panic!("not a snippet result")
    };
    let stdout = String::from_utf8_lossy(&j.stdout);
    let stderr = String::from_utf8_lossy(&j.stderr);
    assert_eq!(j.exit_code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains(r#"ALLOWED 200 {"ok":true,"target":"/v1/items/1"}"#),
        "{stdout}\n{stderr}"
    );
    assert!(stdout.contains("REFUSED 403"), "{stdout}");
    assert!(
        stdout.contains("PROBED") && !stdout.contains("ESCAPED"),
        "{stdout}"
    );
    assert!(stdout.contains("SEARCHED true "), "{stdout}\n{stderr}");
    assert!(!stdout.contains("BREACH"), "{stdout}");
    // A project step's Python client takes the same way.
    let project = ProjectRun {
        steps: vec!["python3 -c \"import plimsoll_host as h; a = h.get('/v1/items/2'); print('PY', a.status, a.body)\"".into()],
        grant_profile: "items".into(),
        ..ProjectRun::default()
    };
    let Output::Project(p) = run(&r.engine, Payload::Project(project)).await else {
        panic!("not a project result")
    };
    let step = String::from_utf8_lossy(&p.steps[0].stdout).into_owned();
    assert!(
        step.contains(r#"PY 200 {"ok":true,"target":"/v1/items/2"}"#),
        "{p:?}"
    );
    let api = r.api.lock().unwrap().clone();
    assert_eq!(
        api.len(),
        2,
        "only the allowed calls reach the API: {api:?}"
    );
    for s in &api {
        assert_eq!(s.auth, format!("Bearer {API_TOKEN}"));
        let all = format!(
            "{} {} {}",
            s.target,
            s.auth,
            String::from_utf8_lossy(&s.body)
        );
        assert!(!all.contains("crg_"), "{all}");
    }
    let credentials = r.seen.lock().unwrap().credentials.clone();
    assert_eq!(credentials.len(), 2);
    assert!(
        credentials[0] != credentials[1],
        "a fresh credential per run"
    );
    none_left(&r.standin, "the granted runs").await;
    r.standin.stop().await;
}

/// A guard call with `credential`, straight to the guard listener.
async fn guard_call(addr: std::net::SocketAddr, credential: &str) -> u16 {
    let req = hyper::Request::get(format!("http://{addr}/v1/e2b/guard/v1/items/9"))
        .header("authorization", credential)
        .body(Full::new(Bytes::new()))
        .unwrap();
    client().request(req).await.unwrap().status().as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pass_ends_before_the_kill_and_an_ended_runs_credential_is_refused() {
    let r = rig().await;
    let code = |n: u32| {
        format!(
            "(async () => {{ await new Promise((s) => setTimeout(s, 1500)); \
             const a = await host.get('/v1/items/{n}'); console.log('GOT', a.status, a.body); }})()"
        )
    };
    let js = |n| {
        Payload::JavaScript(JavaScriptRun {
            code: code(n),
            grant_profile: "items".into(),
        })
    };
    let (a, b) = tokio::join!(run(&r.engine, js(1)), run(&r.engine, js(2)));
    for (out, n) in [(a, 1), (b, 2)] {
        let Output::JavaScript(j) = out else {
            panic!("not a snippet result")
        };
        let stdout = String::from_utf8_lossy(&j.stdout);
        assert!(
            stdout.contains(&format!(
                r#"GOT 200 {{"ok":true,"target":"/v1/items/{n}"}}"#
            )),
            "{stdout} {}",
            String::from_utf8_lossy(&j.stderr)
        );
    }
    let (credentials, at_kill) = {
        let seen = r.seen.lock().unwrap();
        (seen.credentials.clone(), seen.admitted_at_kill.clone())
    };
    assert_eq!(credentials.len(), 2);
    // Each DELETE found the guard already without that run; the last one, none.
    assert!(at_kill.len() >= 2, "{at_kill:?}");
    assert!(at_kill.iter().all(|&n| n <= 1), "{at_kill:?}");
    assert_eq!(at_kill.iter().min(), Some(&0));
    for c in &credentials {
        assert!(c.starts_with("Bearer crg_") && c.len() == "Bearer crg_".len() + 64);
        assert_eq!(
            guard_call(r.guard_addr, c).await,
            401,
            "an ended run's credential"
        );
    }
    assert_eq!(guard_call(r.guard_addr, "Bearer crg_nope").await, 401);
    assert_eq!(r.engine.guard().unwrap().runs(), 0);
    none_left(&r.standin, "the concurrent runs").await;
    r.standin.stop().await;
}

#[tokio::test]
async fn without_a_guard_url_e2b_has_no_grants_and_a_grants_file_is_refused() {
    let e2b = plimsoll_core::provider::e2b::E2bSettings {
        api_key: Some(Arc::new(plimsoll_core::secret::Secret::new(
            "e2b_00".into(),
        ))),
        api_url: url::Url::parse("http://127.0.0.1:9").unwrap(),
        ..Default::default()
    };
    let config = Config {
        provider: Chosen::new(e2b),
        instance: instance(),
        grants: Arc::new(grants("http://127.0.0.1:9")),
        ..Config::default()
    };
    // Refused before the provider talks to anything.
    let Err(e) = Engine::start(&config).await else {
        panic!("a grants file without E2B_GUARD_URL must fail startup")
    };
    assert!(e.to_string().contains("PLIMSOLL_GRANTS_FILE"), "{e}");
    assert!(config.build_provider().unwrap().guard().is_none());
}
