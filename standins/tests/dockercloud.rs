//! The Docker Cloud Sandboxes stand-in driven over loopback HTTP, as a
//! client would: token exchange, the management API under `/sandboxes`, the
//! sandbox endpoint, faults, and no container left after shutdown.
//!
//! These tests need the local docker daemon and the image
//! `plimsoll/project:latest` (`images/build.sh`); without them they fail.
//! `STANDIN_RUNTIME=runsc` runs the sandboxes under gVisor.

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::http::HeaderMap;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use plimsoll_standins::dockercloud::{self, Faults, Settings, StandIn};
use serde_json::{Value, json};

const REF: &str = "registry.invalid/plimsoll/project:latest";
const USER: &str = "alice";
const PAT: &str = "dckr_pat_standin_test";

struct Harness {
    auth: String,
    api: String,
    standin: Arc<StandIn>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    served: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    client: Client<HttpConnector, Full<Bytes>>,
}

struct Answer {
    status: u16,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }
}

async fn start(faults: Faults, token_ttl: Duration) -> Harness {
    let settings = Settings {
        username: USER.into(),
        token: PAT.into(),
        images: HashMap::from([(REF.to_owned(), "plimsoll/project:latest".to_owned())]),
        extra_resources: vec![(1, 256)],
        runtime: std::env::var("STANDIN_RUNTIME").ok(),
        access_token_ttl: token_ttl,
        upstreams: Default::default(),
        faults,
    };
    let standin = StandIn::new(settings).expect("docker is required");
    standin.docker.ping().await.expect("docker is required");
    let bind = || async { tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap() };
    let (a, m, e) = (bind().await, bind().await, bind().await);
    let auth = format!("http://{}", a.local_addr().unwrap());
    let api = format!("http://{}/sandboxes", m.local_addr().unwrap());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(dockercloud::serve(standin.clone(), a, m, e, async {
        let _ = rx.await;
    }));
    Harness {
        auth,
        api,
        standin,
        stop: Some(tx),
        served: Some(served),
        client: Client::builder(TokioExecutor::new()).build_http(),
    }
}

impl Harness {
    async fn call(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Answer {
        let mut req = hyper::Request::builder().method(method).uri(url);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let res = self
            .client
            .request(req.body(Full::new(Bytes::from(body))).unwrap())
            .await
            .unwrap();
        let (parts, body) = res.into_parts();
        Answer {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body: body.collect().await.unwrap().to_bytes().to_vec(),
        }
    }

    async fn token(&self) -> String {
        let body = json!({"identifier": USER, "secret": PAT})
            .to_string()
            .into_bytes();
        let a = self
            .call("POST", &format!("{}/v2/auth/token", self.auth), &[], body)
            .await;
        assert_eq!(a.status, 200);
        a.json()["access_token"].as_str().unwrap().to_owned()
    }

    async fn api(
        &self,
        method: &str,
        path: &str,
        token: &str,
        extra: &[(&str, &str)],
        body: Value,
    ) -> Answer {
        let bearer = format!("Bearer {token}");
        let mut headers = vec![
            ("authorization", bearer.as_str()),
            ("content-type", "application/json"),
        ];
        headers.extend_from_slice(extra);
        let body = if body.is_null() {
            Vec::new()
        } else {
            body.to_string().into_bytes()
        };
        self.call(method, &format!("{}{path}", self.api), &headers, body)
            .await
    }

    /// Creates a sandbox and waits until it runs; returns its resource.
    async fn running(&self, token: &str, create: Value) -> Value {
        let a = self.api("POST", "/v1/sandboxes", token, &[], create).await;
        assert_eq!(a.status, 202, "{}", String::from_utf8_lossy(&a.body));
        assert_eq!(a.json()["core"]["status"], "creating");
        let uid = a.json()["uid"].as_str().unwrap().to_owned();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let a = self
                .api(
                    "GET",
                    &format!("/v1/sandboxes/{uid}"),
                    token,
                    &[],
                    Value::Null,
                )
                .await;
            assert_eq!(a.status, 200);
            let v = a.json();
            match v["core"]["status"].as_str().unwrap() {
                "running" => return v,
                "creating" => {}
                other => panic!("sandbox {other}: {v}"),
            }
            assert!(Instant::now() < deadline, "sandbox never ran");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn credential(&self, token: &str, uid: &str, ttl: &str) -> String {
        let a = self
            .api(
                "POST",
                &format!("/v1/sandboxes/{uid}/endpoint-credentials"),
                token,
                &[],
                json!({"ttl": ttl, "permissions": ["sandboxesExec", "sandboxesFilesRead", "sandboxesFilesWrite"]}),
            )
            .await;
        assert_eq!(a.status, 200);
        a.json()["token"].as_str().unwrap().to_owned()
    }

    async fn exec(&self, uri: &str, cred: &str, cmd: &[&str]) -> Answer {
        let bearer = format!("Bearer {cred}");
        let body = json!({"cmd": cmd}).to_string().into_bytes();
        self.call(
            "POST",
            &format!("{uri}/v1/processes/exec"),
            &[("authorization", &bearer)],
            body,
        )
        .await
    }

    /// Stops the stand-in; asserts no container of its run is left.
    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        self.served.take().unwrap().await.unwrap().unwrap();
        let filters = HashMap::from([(
            "label",
            vec![format!(
                "{}={}",
                dockercloud::vm::LABEL,
                self.standin.run_id
            )],
        )]);
        let opts = bollard::query_parameters::ListContainersOptionsBuilder::new()
            .all(true)
            .filters(&filters)
            .build();
        let left = self
            .standin
            .docker
            .list_containers(Some(opts))
            .await
            .unwrap();
        assert!(left.is_empty(), "containers left: {left:?}");
    }
}

/// The docker network mode of a sandbox's container.
async fn network_mode(h: &Harness, uid: &str) -> String {
    let c = h
        .standin
        .docker
        .inspect_container(&format!("dockercloud-standin-{uid}"), None)
        .await
        .unwrap();
    c.host_config.unwrap().network_mode.unwrap()
}

impl Drop for Harness {
    /// A test that failed before [`Harness::stop`] leaves no container either.
    fn drop(&mut self) {
        if self.stop.is_some() {
            let label = format!("label={}={}", dockercloud::vm::LABEL, self.standin.run_id);
            let ids = std::process::Command::new("docker")
                .args(["ps", "-aq", "--filter", &label])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            for id in ids.split_whitespace() {
                let _ = std::process::Command::new("docker")
                    .args(["rm", "-f", id])
                    .output();
            }
        }
    }
}

fn b64(v: &Value) -> String {
    String::from_utf8(B64.decode(v.as_str().unwrap()).unwrap()).unwrap()
}

fn small(extra: Value) -> Value {
    let mut v = json!({"imageRef": REF, "resources": {"cpus": 1, "memoryMib": "256"}});
    if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
        o.extend(e.clone());
    }
    v
}

fn multipart(boundary: &str, files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut b = Vec::new();
    for (path, bytes) in files {
        b.extend_from_slice(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"metadata\"\r\nContent-Type: application/json\r\n\r\n{}\r\n", json!({"path": path, "mode": 0o644})).as_bytes());
        b.extend_from_slice(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"content\"\r\nContent-Type: application/octet-stream\r\n\r\n").as_bytes());
        b.extend_from_slice(bytes);
        b.extend_from_slice(b"\r\n");
    }
    b.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    b
}

#[tokio::test]
async fn token_exchange_and_refusals_before_any_sandbox() {
    let h = start(Faults::default(), Duration::from_secs(2)).await;
    let url = format!("{}/v2/auth/token", h.auth);
    let bad = json!({"identifier": USER, "secret": "wrong"})
        .to_string()
        .into_bytes();
    assert_eq!(h.call("POST", &url, &[], bad).await.status, 401);
    let token = h.token().await;
    let claims = token.split('.').nth(1).unwrap();
    let claims: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(claims)
            .unwrap(),
    )
    .unwrap();
    assert!(claims["exp"].as_u64().unwrap() > claims["iat"].as_u64().unwrap());

    // The PAT is not a management token; nor is anything outside /sandboxes served.
    let a = h.api("GET", "/v1/sandboxes", PAT, &[], Value::Null).await;
    assert_eq!(
        (a.status, a.json()["code"].as_str()),
        (401, Some("unauthenticated"))
    );
    let a = h
        .call(
            "GET",
            &h.api.replace("/sandboxes", "/v1/sandboxes"),
            &[("authorization", &format!("Bearer {token}"))],
            Vec::new(),
        )
        .await;
    assert_eq!(
        (a.status, a.json()["code"].as_str()),
        (404, Some("notFound"))
    );

    // Refused creates: unknown field, policies, unsupported size, unknown image.
    let cases = [
        (small(json!({"bogus": 1})), 400, "invalidArgument"),
        (
            small(json!({"resources": {"cpus": 1, "memoryMib": 512}})),
            400,
            "invalidArgument",
        ),
        (
            small(json!({"features": {"timeouts": {"timeout": "10s", "extra": 1}}})),
            400,
            "invalidArgument",
        ),
        (
            small(json!({"networkPolicies": [{"mode": "denyAll"}]})),
            409,
            "failedPrecondition",
        ),
        (
            small(json!({"imageRef": "registry.invalid/unknown:1"})),
            404,
            "notFound",
        ),
    ];
    for (body, status, code) in cases {
        let a = h
            .api("POST", "/v1/sandboxes", &token, &[], body.clone())
            .await;
        assert_eq!(
            (a.status, a.json()["code"].as_str()),
            (status, Some(code)),
            "{body}"
        );
    }
    let a = h
        .api(
            "POST",
            "/v1/sandboxes",
            &token,
            &[],
            small(json!({"networkPolicies": [{"mode": "denyAll"}]})),
        )
        .await;
    assert!(
        a.json()["message"]
            .as_str()
            .unwrap()
            .contains("account-default policy")
    );
    let a = h
        .api("GET", "/v1/network-policies", &token, &[], Value::Null)
        .await;
    assert_eq!(
        a.json()["effective"],
        json!({"mode": "denyAll", "allowNetworks": [], "denyNetworks": []})
    );

    // The access token expires.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_eq!(
        h.api("GET", "/v1/sandboxes", &token, &[], Value::Null)
            .await
            .status,
        401
    );
    h.stop().await;
}

#[tokio::test]
async fn a_sandbox_from_create_to_delete() {
    let h = start(Faults::default(), Duration::from_secs(900)).await;
    let token = h.token().await;
    let create = small(json!({"displayNamePrefix": "dct-", "labels": {"run": "x"}}));
    let key = [("idempotency-key", "key-1")];
    let first = h
        .api("POST", "/v1/sandboxes", &token, &key, create.clone())
        .await;
    assert_eq!(first.status, 202);
    let uid = first.json()["uid"].as_str().unwrap().to_owned();
    let other = h
        .api("POST", "/v1/sandboxes", &token, &key, small(json!({})))
        .await;
    assert_eq!(
        (other.status, other.json()["code"].as_str()),
        (409, Some("failedPrecondition"))
    );

    let mut v = Value::Null;
    for _ in 0..600 {
        v = h
            .api(
                "GET",
                &format!("/v1/sandboxes/{uid}"),
                &token,
                &[],
                Value::Null,
            )
            .await
            .json();
        if v["core"]["status"] == "running" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(v["core"]["status"], "running");
    let replay = h.api("POST", "/v1/sandboxes", &token, &key, create).await;
    assert_eq!(
        (replay.status, replay.json()["uid"].as_str()),
        (201, Some(uid.as_str()))
    );
    assert_eq!(v["name"], format!("sandboxes/{uid}"));
    assert!(v["displayName"].as_str().unwrap().starts_with("dct-"));
    assert_eq!(
        v["core"]["resources"],
        json!({"cpus": 1, "memoryMib": "256"})
    );
    assert_eq!(v["core"]["labels"], json!({"run": "x"}));
    let ep = &v["core"]["endpoint"];
    assert_eq!(ep["capabilities"], json!(["exec", "upload", "download"]));
    assert_eq!(ep["authentication"]["scheme"], "scopedBearer");
    let uri = ep["uri"].as_str().unwrap().to_owned();
    assert!(uri.ends_with(&format!("/sbx/{uid}")));

    let got = h
        .api(
            "GET",
            &format!("/v1/sandboxes/{uid}"),
            &token,
            &[],
            Value::Null,
        )
        .await;
    let etag = got.headers["etag"].to_str().unwrap().to_owned();
    assert!(etag.starts_with('"') && etag.ends_with('"'));
    assert_eq!(got.json()["core"]["etag"], etag);
    let unchanged = h
        .api(
            "GET",
            &format!("/v1/sandboxes/{uid}"),
            &token,
            &[("if-none-match", &etag)],
            Value::Null,
        )
        .await;
    assert_eq!(unchanged.status, 304);

    let name = v["displayName"].as_str().unwrap();
    let listed = h
        .api(
            "GET",
            &format!("/v1/sandboxes?pageSize=1&filter=display_name%3D{name}"),
            &token,
            &[],
            Value::Null,
        )
        .await
        .json();
    assert_eq!(listed["sandboxes"].as_array().unwrap().len(), 1);
    assert_eq!(listed["sandboxes"][0]["uid"], uid);
    assert_eq!(listed["nextPageToken"], "");
    let none = h
        .api(
            "GET",
            "/v1/sandboxes?filter=status%3Dstopped",
            &token,
            &[],
            Value::Null,
        )
        .await
        .json();
    assert_eq!(none["sandboxes"], json!([]));
    let policy = h
        .api(
            "GET",
            &format!("/v1/sandboxes/{uid}/network-policies"),
            &token,
            &[],
            Value::Null,
        )
        .await
        .json();
    assert_eq!(policy["effective"]["mode"], "denyAll");
    assert_eq!(policy["effective"]["allowNetworks"], json!([]));

    // The endpoint: only a credential for this sandbox.
    let c = h.api("POST", &format!("/v1/sandboxes/{uid}/endpoint-credentials"), &token, &[], json!({"ttl": "900s", "permissions": ["sandboxesExec", "sandboxesFilesRead", "sandboxesFilesWrite"]})).await;
    assert_eq!(c.headers["cache-control"], "no-store");
    assert_eq!(c.json()["sandbox"], format!("sandboxes/{uid}"));
    let cred = c.json()["token"].as_str().unwrap().to_owned();
    let refused = h.exec(&uri, &token, &["true"]).await;
    assert_eq!(refused.status, 401);
    assert_eq!(refused.json()["message"], "invalid endpoint credential");

    let a = h.exec(&uri, &cred, &["echo", "hello"]).await.json();
    assert_eq!(
        (
            b64(&a["stdout"]).as_str(),
            a["exitCode"].as_i64(),
            a["incomplete"].as_bool()
        ),
        ("hello\n", Some(0), Some(false))
    );
    let a = h
        .exec(&uri, &cred, &["sh", "-c", "echo oops >&2; exit 3"])
        .await;
    assert_eq!(a.status, 200);
    assert_eq!(
        (
            a.json()["exitCode"].as_i64(),
            b64(&a.json()["stderr"]).as_str()
        ),
        (Some(3), "oops\n")
    );
    let ifaces = "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; id -u";
    let a = h.exec(&uri, &cred, &["sh", "-c", ifaces]).await.json();
    assert_eq!(b64(&a["stdout"]), "lo\n61000\n");
    assert_eq!(network_mode(&h, &uid).await, "none");
    let a = h
        .exec(&uri, &cred, &["head", "-c", "5000000", "/dev/zero"])
        .await
        .json();
    assert_eq!(a["incomplete"], true);
    assert_eq!(
        B64.decode(a["stdout"].as_str().unwrap()).unwrap().len(),
        dockercloud::endpoint::EXEC_OUTPUT_CAP
    );

    // A credential carries only the permissions it was minted with.
    let exec_only = h
        .api(
            "POST",
            &format!("/v1/sandboxes/{uid}/endpoint-credentials"),
            &token,
            &[],
            json!({"permissions": ["sandboxesExec"]}),
        )
        .await
        .json();
    let bearer = format!("Bearer {}", exec_only["token"].as_str().unwrap());
    let body = multipart("bnd", &[("/tmp/denied.txt", b"x")]);
    let up = h
        .call(
            "POST",
            &format!("{uri}/v1/files/upload"),
            &[
                ("authorization", &bearer),
                ("content-type", "multipart/form-data; boundary=bnd"),
            ],
            body,
        )
        .await;
    assert_eq!(
        (up.status, up.json()["code"].as_str()),
        (403, Some("permissionDenied"))
    );

    // Files: two uploaded (one nested), read back by exec and by download.
    let bearer = format!("Bearer {cred}");
    let body = multipart(
        "bnd",
        &[("/tmp/up/a.txt", b"alpha"), ("/tmp/up/x/y/b.txt", b"beta")],
    );
    let up = h
        .call(
            "POST",
            &format!("{uri}/v1/files/upload"),
            &[
                ("authorization", &bearer),
                ("content-type", "multipart/form-data; boundary=bnd"),
            ],
            body,
        )
        .await;
    assert_eq!((up.status, up.json()), (200, json!({"filesWritten": 2})));
    let a = h
        .exec(&uri, &cred, &["cat", "/tmp/up/a.txt", "/tmp/up/x/y/b.txt"])
        .await
        .json();
    assert_eq!(b64(&a["stdout"]), "alphabeta");
    let down = h
        .call(
            "GET",
            &format!("{uri}/v1/files/download?paths=/tmp/up/x/y/b.txt&paths=/tmp/missing"),
            &[("authorization", &bearer)],
            Vec::new(),
        )
        .await;
    assert_eq!(down.status, 200);
    let ctype = down.headers["content-type"].to_str().unwrap().to_owned();
    let boundary = ctype.strip_prefix("multipart/mixed; boundary=").unwrap();
    let text = String::from_utf8(down.body.clone()).unwrap();
    assert!(text.contains("name=\"metadata\"") && text.contains("\r\n\r\nbeta\r\n"));
    assert!(text.contains("name=\"error\"") && text.contains("\"notFound\""));
    assert!(text.ends_with(&format!("--{boundary}--\r\n")));
    let content = h
        .call(
            "GET",
            &format!("{uri}/v1/files/content?path=/tmp/up/a.txt"),
            &[("authorization", &bearer)],
            Vec::new(),
        )
        .await;
    assert_eq!(
        (content.status, content.body.as_slice()),
        (200, b"alpha".as_slice())
    );

    // A symlink escape and a wrong part name are refused.
    h.exec(&uri, &cred, &["ln", "-s", "/etc", "/tmp/up/esc"])
        .await;
    let body = multipart("bnd", &[("/tmp/up/esc/evil", b"x")]);
    let up = h
        .call(
            "POST",
            &format!("{uri}/v1/files/upload"),
            &[
                ("authorization", &bearer),
                ("content-type", "multipart/form-data; boundary=bnd"),
            ],
            body,
        )
        .await;
    assert_eq!(
        (up.status, up.json()["code"].as_str()),
        (409, Some("failedPrecondition"))
    );
    let body = multipart("bnd", &[("/tmp/up/c.txt", b"x")])
        .replace_all(b"name=\"metadata\"", b"name=\"header\"");
    let up = h
        .call(
            "POST",
            &format!("{uri}/v1/files/upload"),
            &[
                ("authorization", &bearer),
                ("content-type", "multipart/form-data; boundary=bnd"),
            ],
            body,
        )
        .await;
    assert_eq!(
        (up.status, up.json()["code"].as_str()),
        (400, Some("invalidArgument"))
    );

    // Renewing the timeout restarts it and changes the etag.
    let path = format!("/v1/sandboxes/{uid}");
    let renewed = h
        .api(
            "POST",
            &format!("{path}/renew-timeout"),
            &token,
            &[],
            json!({"timeout": "7200s"}),
        )
        .await;
    assert_eq!(renewed.status, 200);
    assert_ne!(
        renewed.json()["effectiveFeatures"]["timeouts"]["expiresAt"],
        v["effectiveFeatures"]["timeouts"]["expiresAt"]
    );
    let old_etag = etag;
    let etag = renewed.headers["etag"].to_str().unwrap().to_owned();
    assert_ne!(etag, old_etag);

    // Delete: If-Match required, then current.
    let a = h.api("DELETE", &path, &token, &[], Value::Null).await;
    assert_eq!(a.status, 428);
    let a = h
        .api(
            "DELETE",
            &path,
            &token,
            &[("if-match", &old_etag)],
            Value::Null,
        )
        .await;
    assert_eq!(a.status, 412);
    assert_eq!(
        a.json()["details"][0]["@type"],
        "type.googleapis.com/docker.sandboxes.v1.EtagMismatch"
    );
    let a = h
        .api("DELETE", &path, &token, &[("if-match", &etag)], Value::Null)
        .await;
    assert!(a.status == 202 || a.status == 204, "{}", a.status);
    for _ in 0..100 {
        if h.api("GET", &path, &token, &[], Value::Null).await.status == 404 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let a = h.api("GET", &path, &token, &[], Value::Null).await;
    assert_eq!(
        (a.status, a.json()["code"].as_str()),
        (404, Some("notFound"))
    );
    h.stop().await;
}

#[tokio::test]
async fn credentials_expire_mid_exec_and_sandboxes_at_their_timeout() {
    let h = start(Faults::default(), Duration::from_secs(900)).await;
    let token = h.token().await;
    let v = h
        .running(
            &token,
            small(json!({"features": {"timeouts": {"timeout": "5s", "onTimeout": "delete"}}})),
        )
        .await;
    let (uid, uri) = (
        v["uid"].as_str().unwrap(),
        v["core"]["endpoint"]["uri"].as_str().unwrap(),
    );
    assert_eq!(v["effectiveFeatures"]["timeouts"]["initialTimeout"], "5s");
    let cred = h.credential(&token, uid, "1s").await;
    let started = Instant::now();
    let a = h.exec(uri, &cred, &["sleep", "3"]).await;
    assert_eq!(a.status, 401);
    assert_eq!(
        a.json()["details"][0]["reason"],
        "ENDPOINT_CREDENTIAL_EXPIRED"
    );
    assert!(started.elapsed() < Duration::from_millis(2500));
    let deadline = Instant::now() + Duration::from_secs(15);
    while h
        .api(
            "GET",
            &format!("/v1/sandboxes/{uid}"),
            &token,
            &[],
            Value::Null,
        )
        .await
        .status
        != 404
    {
        assert!(
            Instant::now() < deadline,
            "the sandbox outlived its timeout"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    h.stop().await;
}

#[tokio::test]
async fn faults_show() {
    // throttle-reads: every second GET is 429 with Retry-After; POSTs pass.
    let faults = Faults {
        throttle_reads: true,
        ..Faults::default()
    };
    let h = start(faults, Duration::from_secs(900)).await;
    let token = h.token().await;
    let mut seen = Vec::new();
    for _ in 0..4 {
        let a = h
            .api("GET", "/v1/network-policies", &token, &[], Value::Null)
            .await;
        if a.status == 429 {
            assert_eq!(a.headers["retry-after"], "1");
            assert_eq!(a.json()["code"], "resourceExhausted");
        }
        seen.push(a.status);
    }
    seen.sort_unstable();
    assert_eq!(seen, [200, 200, 429, 429]);
    h.stop().await;

    // deny-policy-read: both reads are 403.
    let h = start(
        Faults {
            deny_policy_read: true,
            ..Faults::default()
        },
        Duration::from_secs(900),
    )
    .await;
    let token = h.token().await;
    for path in [
        "/v1/network-policies",
        "/v1/sandboxes/none/network-policies",
    ] {
        let a = h.api("GET", path, &token, &[], Value::Null).await;
        assert_eq!(
            (a.status, a.json()["code"].as_str()),
            (403, Some("permissionDenied"))
        );
    }
    h.stop().await;

    // account-allow-all and policy-allows: the policies say so, and the container has a network.
    let h = start(
        Faults {
            account_allow_all: true,
            policy_allows: true,
            ..Faults::default()
        },
        Duration::from_secs(900),
    )
    .await;
    let token = h.token().await;
    let account = h
        .api("GET", "/v1/network-policies", &token, &[], Value::Null)
        .await
        .json();
    assert_eq!(account["effective"]["mode"], "allowAll");
    let v = h.running(&token, small(json!({}))).await;
    let uid = v["uid"].as_str().unwrap();
    let policy = h
        .api(
            "GET",
            &format!("/v1/sandboxes/{uid}/network-policies"),
            &token,
            &[],
            Value::Null,
        )
        .await
        .json();
    assert_eq!(
        policy["effective"]["allowNetworks"],
        json!([{"network": "0.0.0.0/0", "layer": "l4"}])
    );
    assert_eq!(network_mode(&h, uid).await, "plimsoll-standin");
    h.stop().await;

    // allow-egress: the policy reads deny-all, yet the container has a network.
    let h = start(
        Faults {
            allow_egress: true,
            ..Faults::default()
        },
        Duration::from_secs(900),
    )
    .await;
    let token = h.token().await;
    let v = h.running(&token, small(json!({}))).await;
    let uid = v["uid"].as_str().unwrap();
    let policy = h
        .api(
            "GET",
            &format!("/v1/sandboxes/{uid}/network-policies"),
            &token,
            &[],
            Value::Null,
        )
        .await
        .json();
    assert_eq!(
        policy["effective"],
        json!({"mode": "denyAll", "allowNetworks": [], "denyNetworks": []})
    );
    assert_eq!(network_mode(&h, uid).await, "plimsoll-standin");
    h.stop().await;
}

trait ReplaceAll {
    fn replace_all(self, from: &[u8], to: &[u8]) -> Vec<u8>;
}

impl ReplaceAll for Vec<u8> {
    fn replace_all(self, from: &[u8], to: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len());
        let mut i = 0;
        while i < self.len() {
            if self[i..].starts_with(from) {
                out.extend_from_slice(to);
                i += from.len();
            } else {
                out.push(self[i]);
                i += 1;
            }
        }
        out
    }
}
