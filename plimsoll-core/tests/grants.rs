//! Granted runs end to end: a real HTTP API on loopback, an engine with grant
//! profiles, and snippets that call the API through the `host` client. The API
//! sees the credential (a static token, or a JWT whose `sub` is the caller,
//! verified here with jsonwebtoken); the guest sees neither, and every refused
//! call is answered by the broker without reaching the API.
#![cfg(feature = "wasm")]
#![expect(
    clippy::unwrap_used,
    reason = "a test helper that cannot do its job should fail the test loudly"
)]

mod support;

use std::sync::Arc;

use plimsoll_core::config::{Config, WasmSettings};
use plimsoll_core::grant::{Grants, profile};
use plimsoll_core::provider::Chosen;
use plimsoll_core::request::JavaScriptRun;
use plimsoll_core::result::JavaScriptResult;
use plimsoll_core::{Caller, Engine, Output, Payload, Request};
use tokio_util::sync::CancellationToken;

use support::api;

const STATIC_TOKEN: &str = "static-upstream-credential-0123456789";
const JWT_SECRET: &str = "jwt-signing-secret-0123456789-abcdefghij";

fn grants(base: &str) -> Grants {
    let text = format!(
        r#"{{"profiles":{{
          "items":{{"base_url":"{base}","allow":["GET /v1/items/*","POST /v1/items"],"allowed_callers":["alice"],"max_calls":8,"token":{{"type":"static","env":"ITEMS_TOKEN"}}}},
          "jwt":{{"base_url":"{base}","allow":["GET /v1/items/*"],"allowed_callers":["alice"],"scopes":["items:read"],"token":{{"type":"jwt","secret_env":"ITEMS_JWT","audience":"items-api"}}}}}}}}"#
    );
    let get = |k: &str| match k {
        "ITEMS_TOKEN" => Some(STATIC_TOKEN.to_owned()),
        "ITEMS_JWT" => Some(JWT_SECRET.to_owned()),
        _ => None,
    };
    Grants::from_profiles(profile::parse(text.as_bytes(), &get).unwrap())
}

async fn wasm_engine(base: &str) -> Engine {
    let config = Config {
        provider: Chosen::new(WasmSettings),
        instance: "plimsoll:grants-test".into(),
        grants: Arc::new(grants(base)),
        ..Config::default()
    };
    Engine::start(&config)
        .await
        .expect("the wasm engine starts")
}

async fn run(e: &Engine, code: &str, grant: &str) -> JavaScriptResult {
    let request = Request::new(Payload::JavaScript(JavaScriptRun {
        code: code.into(),
        grant_profile: grant.into(),
    }));
    let alice = Caller {
        principal: "alice".into(),
    };
    let response = e
        .run(&alice, request, CancellationToken::new())
        .await
        .expect("the run is answered");
    match response.output {
        Some(Output::JavaScript(j)) => j,
        other => panic!("not a snippet result: {other:?}"),
    }
}

/// What the snippet prints: every answer's status and body, and what it can
/// see of its environment and globals.
const SNIPPET: &str = r#"
const show = (what, a) => console.log(what, a.status, a.body);
show('get', host.get('/v1/items/42'));
console.log('json', host.get('/v1/items/7').json().target);
show('del', host.del('/v1/items/42'));
show('admin', host.get('/v1/admin'));
show('traversal', host.get('/v1/items/../admin'));
show('slash', host.get('/v1/items/a%2Fb'));
show('query', host.get('/v1/items/42?all=1'));
show('big', host.post('/v1/items', 'x'.repeat(1024 * 1024 + 1)));
show('budget', host.post('/v1/items', { name: 'x' }));
console.log('env', JSON.stringify(process.env));
console.log('globals', Object.getOwnPropertyNames(globalThis).join());
console.log('host', Object.keys(host).join());
"#;

#[tokio::test]
async fn wasm_granted_snippet_reaches_only_allowed_routes() {
    let (base, seen) = api().await;
    let e = wasm_engine(&base).await;
    let r = run(&e, SNIPPET, "items").await;
    let out = String::from_utf8(r.stdout.clone()).unwrap();
    let err = String::from_utf8(r.stderr.clone()).unwrap();
    assert_eq!(r.exit_code, 0, "stdout {out}\nstderr {err}");
    let line = |what: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("{what} ")))
            .unwrap_or_else(|| panic!("no {what} line in {out}"))
            .to_owned()
    };
    assert_eq!(
        line("get"),
        r#"get 200 {"ok":true,"target":"/v1/items/42"}"#
    );
    assert_eq!(line("json"), "json /v1/items/7");
    for (what, status) in [
        ("del", 403),
        ("admin", 403),
        ("traversal", 400),
        ("slash", 400),
        ("query", 400),
        ("big", 413),
        ("budget", 429),
    ] {
        assert!(
            line(what).starts_with(&format!("{what} {status} ")),
            "{what}: {}",
            line(what)
        );
    }
    assert_eq!(line("env"), "env {}");
    assert_eq!(line("host"), "host call,get,post,put,patch,del");
    // The guest saw no credential: not in anything it printed.
    assert!(!out.contains(STATIC_TOKEN) && !err.contains(STATIC_TOKEN));
    assert!(!out.contains("Bearer") && !err.contains("Bearer"));

    // The API saw exactly the two allowed calls within budget, with the token.
    let seen = seen.lock().unwrap().clone();
    let got: Vec<(&str, &str)> = seen
        .iter()
        .map(|s| (s.method.as_str(), s.target.as_str()))
        .collect();
    assert_eq!(got, [("GET", "/v1/items/42"), ("GET", "/v1/items/7")]);
    for s in &seen {
        assert_eq!(s.auth, format!("Bearer {STATIC_TOKEN}"));
        assert!(s.body.is_empty());
    }
}

#[tokio::test]
async fn wasm_json_body_and_jwt_subject() {
    let (base, seen) = api().await;
    let e = wasm_engine(&base).await;
    let r = run(
        &e,
        "const a = host.post('/v1/items', {name: 'widget'}); console.log(a.status, a.json().ok)",
        "items",
    )
    .await;
    assert_eq!(String::from_utf8(r.stdout).unwrap(), "200 true\n");
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].body, br#"{"name":"widget"}"#);
    }

    let r = run(
        &e,
        "const a = host.get('/v1/items/1'); console.log(a.status, a.body)",
        "jwt",
    )
    .await;
    let out = String::from_utf8(r.stdout).unwrap();
    assert_eq!(out, "200 {\"ok\":true,\"target\":\"/v1/items/1\"}\n");
    let auth = seen.lock().unwrap()[1].auth.clone();
    let jwt = auth.strip_prefix("Bearer ").expect("a bearer token");
    assert!(!out.contains(jwt));
    let mut v = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::HS256);
    v.set_audience(&["items-api"]);
    let claims = jsonwebtoken::decode::<serde_json::Value>(
        jwt,
        &jsonwebtoken::DecodingKey::from_secret(JWT_SECRET.as_bytes()).unwrap(),
        &v,
    )
    .expect("the JWT verifies")
    .claims;
    assert_eq!(claims["sub"], "alice");
}

#[tokio::test]
async fn wasm_host_call_stops_at_the_run_deadline() {
    let (base, _seen) = api().await;
    let e = wasm_engine(&base).await;
    let mut request = Request::new(Payload::JavaScript(JavaScriptRun {
        code: "console.log(host.get('/v1/items/slow').status, 'returned')".into(),
        grant_profile: "items".into(),
    }));
    request.envelope.timeout_ms = 1000;
    let alice = Caller {
        principal: "alice".into(),
    };
    let started = std::time::Instant::now();
    let response = e
        .run(&alice, request, CancellationToken::new())
        .await
        .expect("the run is answered");
    let elapsed = started.elapsed();
    let Some(Output::JavaScript(r)) = response.output else {
        panic!("not a snippet result")
    };
    // The call is cut before the run's deadline (a quarter of the time left
    // stays the guest's): the guest sees a 504 and finishes in time.
    let out = String::from_utf8_lossy(&r.stdout);
    assert!(!r.timed_out && r.exit_code == 0, "{r:?}");
    assert!(out.contains("504 returned"), "{out}");
    assert!(
        elapsed < std::time::Duration::from_secs(5),
        "the blocked host call outlived the deadline: {elapsed:?}"
    );
}

#[tokio::test]
async fn wasm_host_exists_only_in_granted_runs() {
    let (base, seen) = api().await;
    let e = wasm_engine(&base).await;
    let r = run(&e, "console.log(typeof host, typeof globalThis.host)", "").await;
    assert_eq!(
        String::from_utf8(r.stdout).unwrap(),
        "undefined undefined\n"
    );
    let r = run(&e, "console.log(typeof host)", "items").await;
    assert_eq!(String::from_utf8(r.stdout).unwrap(), "object\n");
    assert!(seen.lock().unwrap().is_empty());
    assert!(e.describe().supports_javascript_grants);
}

/// The docker side: the same API, a granted snippet under runc and runsc
/// (`host` preloaded, calls over the bind-mounted broker socket), and a
/// granted project whose steps use the Node and Python clients.
#[cfg(feature = "docker")]
mod docker {
    use super::*;
    use plimsoll_core::config::{DockerRuntime, DockerSettings};
    use plimsoll_core::request::{ProjectFile, ProjectRun};
    use plimsoll_core::result::ProjectResult;

    /// The images built from this branch's recipe (images/build.sh with
    /// PLIMSOLL_SNIPPET_IMAGE / PLIMSOLL_PROJECT_IMAGE), or the defaults.
    fn image(var: &str, default: &str) -> String {
        std::env::var(var).unwrap_or_else(|_| default.into())
    }

    async fn engine(base: &str, rt: DockerRuntime) -> Engine {
        let docker = DockerSettings {
            runtime: rt,
            runtime_name: rt.as_str().into(),
            image: image("PLIMSOLL_SNIPPET_IMAGE", "plimsoll/snippet:latest"),
            project_image: image("PLIMSOLL_PROJECT_IMAGE", "plimsoll/project:latest"),
            ..DockerSettings::default()
        };
        let config = Config {
            provider: Chosen::new(docker),
            instance: format!(
                "plimsoll-test:grants-{}-{}",
                rt.as_str(),
                hex::encode(rand::random::<[u8; 4]>())
            ),
            grants: Arc::new(grants(base)),
            ..Config::default()
        };
        Engine::start(&config)
            .await
            .unwrap_or_else(|e| panic!("the docker engine starts under {}: {e}", rt.as_str()))
    }

    const SNIPPET: &str = r#"
const show = async (what, p) => {
  try { const a = await p; console.log(what, a.status, a.body); }
  catch (e) { console.log(what, 'ERR', e.message); }
};
(async () => {
  await show('get', host.get('/v1/items/42'));
  console.log('json', (await host.get('/v1/items/7')).json().target);
  await show('del', host.del('/v1/items/42'));
  await show('admin', host.get('/v1/admin'));
  await show('traversal', host.get('/v1/items/../admin'));
  await show('slash', host.get('/v1/items/a%2Fb'));
  await show('query', host.get('/v1/items/42?all=1'));
  await show('big', host.post('/v1/items', 'x'.repeat(1024 * 1024 + 1)));
  await show('budget', host.post('/v1/items', { name: 'x' }));
  console.log('env', JSON.stringify(process.env));
  const fs = require('fs');
  console.log('environ', fs.readFileSync('/proc/self/environ', 'latin1').split('\0').join(' '));
  console.log('dir', fs.readdirSync('/run/plimsoll').join());
})();
"#;

    async fn snippet(rt: DockerRuntime) {
        let (base, seen) = api().await;
        let e = engine(&base, rt).await;
        assert!(e.describe().supports_javascript_grants);
        assert!(e.describe().supports_project_grants);
        let r = run(&e, SNIPPET, "items").await;
        let out = String::from_utf8(r.stdout.clone()).unwrap();
        let err = String::from_utf8(r.stderr.clone()).unwrap();
        assert_eq!(r.exit_code, 0, "stdout {out}\nstderr {err}");
        let line = |what: &str| {
            out.lines()
                .find(|l| l.starts_with(&format!("{what} ")))
                .unwrap_or_else(|| panic!("no {what} line in {out}"))
                .to_owned()
        };
        assert_eq!(
            line("get"),
            r#"get 200 {"ok":true,"target":"/v1/items/42"}"#
        );
        assert_eq!(line("json"), "json /v1/items/7");
        for (what, status) in [
            ("del", 403),
            ("admin", 403),
            ("traversal", 400),
            ("slash", 400),
            ("query", 400),
            ("big", 413),
            ("budget", 429),
        ] {
            assert!(
                line(what).starts_with(&format!("{what} {status} ")),
                "{}: {}",
                rt.as_str(),
                line(what)
            );
        }
        assert!(line("env").contains("HOST_API_SOCKET"), "{}", line("env"));
        assert_eq!(line("dir"), "dir host-api.sock");
        assert!(!out.contains(STATIC_TOKEN) && !err.contains(STATIC_TOKEN));
        assert!(!out.contains("Bearer") && !err.contains("Bearer"));
        let seen = seen.lock().unwrap().clone();
        let got: Vec<(&str, &str)> = seen
            .iter()
            .map(|s| (s.method.as_str(), s.target.as_str()))
            .collect();
        assert_eq!(got, [("GET", "/v1/items/42"), ("GET", "/v1/items/7")]);
        for s in &seen {
            assert_eq!(s.auth, format!("Bearer {STATIC_TOKEN}"));
        }
        // Without a grant: no socket, no variable, no `host`.
        let r = run(
            &e,
            "console.log(typeof host, process.env.HOST_API_SOCKET, require('fs').existsSync('/run/plimsoll'))",
            "",
        )
        .await;
        assert_eq!(
            String::from_utf8(r.stdout).unwrap(),
            "undefined undefined false\n"
        );
    }

    async fn project(rt: DockerRuntime) {
        let (base, seen) = api().await;
        let e = engine(&base, rt).await;
        let request = Request::new(Payload::Project(ProjectRun {
            files: vec![ProjectFile {
                path: "call.py".into(),
                content: "import plimsoll_host\na = plimsoll_host.post('/v1/items', {'n': 1})\nprint('py', a.status, a.json()['target'])\nprint('py-denied', plimsoll_host.delete('/v1/items/1').status)\n".into(),
            }],
            steps: vec![
                "python3 call.py".into(),
                "node -e \"require('/usr/local/lib/plimsoll/host.js').get('/v1/items/3').then(a => console.log('node', a.status, a.json().target))\"".into(),
                // Nothing on the filesystem the guest can read holds the token
                // (the pattern is split so this command line does not).
                "T=static-upstream-; grep -rIlqs --exclude-dir=proc --exclude-dir=sys \"${T}credential\" / && echo token-found || echo token-absent; cat /proc/self/environ | tr '\\0' ' '".into(),
            ],
            grant_profile: "items".into(),
            ..ProjectRun::default()
        }));
        let alice = Caller {
            principal: "alice".into(),
        };
        let response = e
            .run(&alice, request, CancellationToken::new())
            .await
            .expect("the project is answered");
        let p: ProjectResult = match response.output {
            Some(Output::Project(p)) => p,
            other => panic!("not a project result: {other:?}"),
        };
        let out: Vec<String> = p
            .steps
            .iter()
            .map(|s| String::from_utf8_lossy(&s.stdout).into_owned())
            .collect();
        let all = out.join("");
        assert!(all.contains("py 200 /v1/items\n"), "{}: {all}", rt.as_str());
        assert!(all.contains("py-denied 403\n"), "{all}");
        assert!(all.contains("node 200 /v1/items/3\n"), "{all}");
        assert!(all.contains("token-absent\n"), "{all}");
        assert!(all.contains("HOST_API_SOCKET=/run/plimsoll/host-api.sock"));
        assert!(!all.contains(STATIC_TOKEN));
        for s in &p.steps {
            assert!(!String::from_utf8_lossy(&s.stderr).contains(STATIC_TOKEN));
        }
        let seen = seen.lock().unwrap().clone();
        let got: Vec<(&str, &str)> = seen
            .iter()
            .map(|s| (s.method.as_str(), s.target.as_str()))
            .collect();
        assert_eq!(got, [("POST", "/v1/items"), ("GET", "/v1/items/3")]);
        assert_eq!(seen[0].body, br#"{"n": 1}"#);
        for s in &seen {
            assert_eq!(s.auth, format!("Bearer {STATIC_TOKEN}"));
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn runc_granted_snippet() {
        snippet(DockerRuntime::Runc).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn runsc_granted_snippet() {
        snippet(DockerRuntime::Runsc).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn runc_granted_project() {
        project(DockerRuntime::Runc).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn runsc_granted_project() {
        project(DockerRuntime::Runsc).await;
    }
}
