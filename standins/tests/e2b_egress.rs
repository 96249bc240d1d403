//! The E2B stand-in's egress proxy, driven as E2B's API is: a create that
//! denies everything and allows out one hostname with a header rule puts
//! its VM behind the proxy. From inside the VM (`docker exec`, as the
//! template's user): HTTPS to the allowed name verifies against the OS
//! bundle and reaches the upstream with the rule's header replacing the
//! guest's; any other TLS name, and the internet, are unreachable. Creates
//! the stand-in cannot enforce are refused with 400, and the egress network
//! is gone once the stand-in stops.
//!
//! Needs the local docker daemon, `plimsoll/e2b:latest` (`images/build.sh`),
//! and root (the proxy listens on port 443 of the bridge address).

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use plimsoll_standins::e2b::{self, Faults, Settings, StandIn, Template};
use serde_json::{Value, json};

const HOST: &str = "api.plimsoll.test";
const KEY: &str = "e2b_egress_test_key";

/// A loopback upstream that records each request's Host and Authorization.
async fn upstream() -> (
    std::net::SocketAddr,
    Arc<Mutex<Vec<(String, String, String)>>>,
) {
    let seen: Arc<Mutex<Vec<(String, String, String)>>> = Arc::default();
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let (s, _) = l.accept().await.unwrap();
            let log = log.clone();
            let svc =
                hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let h = |k: &str| {
                        req.headers()
                            .get(k)
                            .map(|v| v.to_str().unwrap().to_owned())
                            .unwrap_or_default()
                    };
                    log.lock().unwrap().push((
                        req.uri().to_string(),
                        h("host"),
                        h("authorization"),
                    ));
                    async {
                        Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(
                            Bytes::from("upstream says hi"),
                        )))
                    }
                });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(s), svc)
                    .await;
            });
        }
    });
    (addr, seen)
}

async fn create(api: &str, network: Value) -> (u16, Value) {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let body = json!({"templateID": "base", "timeout": 120, "secure": true,
                      "allow_internet_access": false, "network": network});
    let req = hyper::Request::post(format!("{api}/sandboxes"))
        .header("x-api-key", KEY)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let resp = client.request(req).await.unwrap();
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

/// Runs `node -e script` in the VM as `user`.
async fn node(standin: &StandIn, id: &str, script: &str) -> String {
    let s = standin.get(id).unwrap();
    let argv = [
        "env",
        "NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt",
        "node",
        "-e",
        script,
    ];
    let out = s
        .machine
        .run("user", argv.iter().map(|a| (*a).to_owned()).collect(), None)
        .await
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

const PROBE: &str = r#"
const https = require('https'), tls = require('tls'), net = require('net');
const get = () => new Promise((done) => {
  https.get({ host: 'api.plimsoll.test', path: '/v1/x?y=1', headers: { authorization: 'guest-sent' } }, (r) => {
    let b = ''; r.on('data', (c) => b += c); r.on('end', () => { console.log('GET', r.statusCode, b); done(); });
  }).on('error', (e) => { console.log('GET failed', e.message); done(); });
});
const otherName = () => new Promise((done) => {
  const s = tls.connect({ host: 'api.plimsoll.test', port: 443, servername: 'other.plimsoll.test', timeout: 3000 });
  s.on('secureConnect', () => { console.log('OTHER NAME CONNECTED'); s.destroy(); done(); });
  s.on('error', () => { console.log('other name refused'); done(); });
  s.on('timeout', () => { console.log('other name refused'); s.destroy(); done(); });
});
const out = () => new Promise((done) => {
  const c = net.connect({ host: '1.1.1.1', port: 443, timeout: 2000 });
  c.on('connect', () => { console.log('ESCAPED'); c.destroy(); done(); });
  c.on('error', () => { console.log('no way out'); done(); });
  c.on('timeout', () => { console.log('no way out'); c.destroy(); done(); });
});
(async () => { await get(); await otherName(); await out(); })();
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guarded_vm_reaches_its_host_with_the_rules_headers_and_nothing_else() {
    let (addr, seen) = upstream().await;
    let standin = StandIn::new(Settings {
        api_key: KEY.into(),
        templates: HashMap::from([(
            "base".to_owned(),
            Template {
                image: "plimsoll/e2b:latest".into(),
                cpu_count: 1,
                memory_mb: 512,
                disk_size_mb: 1024,
            },
        )]),
        runtime: std::env::var("STANDIN_RUNTIME").ok(),
        domain: "e2b.local".into(),
        faults: Faults::default(),
        upstreams: HashMap::from([(HOST.to_owned(), addr)]),
    })
    .unwrap();
    let bind = || async { tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap() };
    let (a, e) = (bind().await, bind().await);
    let api = format!("http://{}", a.local_addr().unwrap());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(e2b::serve(standin.clone(), a, e, async {
        let _ = rx.await;
    }));
    // What the stand-in cannot enforce is refused.
    for bad in [
        json!({"denyOut": ["0.0.0.0/0"], "allowOut": ["1.2.3.4/32"]}),
        json!({"denyOut": ["0.0.0.0/0"], "allowOut": ["nope.plimsoll.test"]}),
        json!({"denyOut": ["0.0.0.0/0"], "allowOut": ["*.plimsoll.test"]}),
    ] {
        assert_eq!(create(&api, bad.clone()).await.0, 400, "{bad}");
    }
    let rules = json!({HOST: [{"transform": {"headers": {"Authorization": "Bearer rule-set"}}}]});
    let (status, created) = create(
        &api,
        json!({"denyOut": ["0.0.0.0/0"], "allowOut": [HOST], "rules": rules}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["sandboxID"].as_str().unwrap().to_owned();
    let network = standin.egress.get().unwrap().network.clone();
    let out = node(&standin, &id, PROBE).await;
    assert!(out.contains("GET 200 upstream says hi"), "{out}");
    assert!(
        out.contains("other name refused") && out.contains("no way out"),
        "{out}"
    );
    assert!(
        !out.contains("ESCAPED") && !out.contains("OTHER NAME CONNECTED"),
        "{out}"
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![(
            "/v1/x?y=1".to_owned(),
            HOST.to_owned(),
            "Bearer rule-set".to_owned()
        )]
    );
    // A VM without allowOut has no network at all.
    let (status, closed) = create(&api, json!({"denyOut": ["0.0.0.0/0"]})).await;
    assert_eq!(status, 201);
    let out = node(&standin, closed["sandboxID"].as_str().unwrap(), PROBE).await;
    assert!(
        out.contains("GET failed") && !out.contains("ESCAPED"),
        "{out}"
    );
    let _ = tx.send(());
    served.await.unwrap().unwrap();
    assert!(
        standin
            .docker
            .inspect_network(&network, None)
            .await
            .is_err(),
        "the egress network is removed"
    );
}
