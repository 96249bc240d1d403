//! Test support shared by the core's integration tests (each test binary
//! compiles it with `mod support;` and uses what it needs).
//!
//! - [`api`]: a real HTTP API on loopback behind the grant broker;
//! - [`containers_of`] and [`assert_none_left`]: what a docker engine left.
#![allow(dead_code, reason = "each test binary uses a part")]
#![allow(clippy::unwrap_used, reason = "test support fails loudly")]

use std::sync::{Arc, Mutex};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;

/// One request the API saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub target: String,
    pub auth: String,
    pub body: Vec<u8>,
}

/// A real HTTP API on loopback: records every request; `/v1/echo-auth`
/// echoes the credential back, `/v1/items/slow` answers after 20 s, and every
/// other target answers `{"ok":true,"target":…}`.
pub async fn api() -> (String, Arc<Mutex<Vec<Seen>>>) {
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let (s, _) = listener.accept().await.unwrap();
            let log = log.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let log = log.clone();
                        async move {
                            let method = req.method().to_string();
                            let target = req.uri().to_string();
                            let auth = req
                                .headers()
                                .get("authorization")
                                .map(|v| v.to_str().unwrap().to_owned())
                                .unwrap_or_default();
                            let body = req.into_body().collect().await.unwrap().to_bytes().to_vec();
                            log.lock().unwrap().push(Seen {
                                method,
                                target: target.clone(),
                                auth: auth.clone(),
                                body,
                            });
                            if target == "/v1/items/slow" {
                                tokio::time::sleep(std::time::Duration::from_secs(20)).await;
                            }
                            let answer = if target == "/v1/echo-auth" {
                                auth
                            } else {
                                format!("{{\"ok\":true,\"target\":{target:?}}}")
                            };
                            Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(
                                Bytes::from(answer),
                            )))
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(s), svc)
                    .await;
            });
        }
    });
    (format!("http://{addr}"), seen)
}

/// The local docker daemon (these tests fail, never skip, without it).
#[cfg(feature = "docker")]
pub fn docker() -> bollard::Docker {
    bollard::Docker::connect_with_unix("/var/run/docker.sock", 60, bollard::API_DEFAULT_VERSION)
        .expect("docker is required for these tests: /var/run/docker.sock")
}

/// The containers carrying `label=value`, running or not.
#[cfg(feature = "docker")]
pub async fn labelled(label: &str, value: &str) -> Vec<bollard::models::ContainerSummary> {
    let filters = std::collections::HashMap::from([("label", vec![format!("{label}={value}")])]);
    let opts = bollard::query_parameters::ListContainersOptionsBuilder::new()
        .all(true)
        .filters(&filters)
        .build();
    docker().list_containers(Some(opts)).await.unwrap()
}

/// Names of the containers of the plimsoll instance `instance`.
#[cfg(feature = "docker")]
pub async fn containers_of(instance: &str) -> Vec<String> {
    labelled("io.plimsoll.instance", instance)
        .await
        .into_iter()
        .flat_map(|c| c.names.unwrap_or_default())
        .collect()
}

/// Ids of the containers of the session with `fingerprint` (`pool` for the
/// warm pool's).
#[cfg(feature = "docker")]
pub async fn session_containers(fingerprint: &str) -> Vec<String> {
    labelled("io.plimsoll.session", fingerprint)
        .await
        .into_iter()
        .filter_map(|c| c.id)
        .collect()
}

/// Waits (up to 20 s) until no container of `instance` is left.
#[cfg(feature = "docker")]
pub async fn assert_none_left(instance: &str) {
    let t = std::time::Instant::now();
    loop {
        let left = containers_of(instance).await;
        if left.is_empty() {
            return;
        }
        assert!(
            t.elapsed() < std::time::Duration::from_secs(20),
            "containers left behind for {instance}: {left:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// The docker settings of a docker configuration.
#[cfg(feature = "docker")]
pub fn docker_of(c: &plimsoll_core::config::Config) -> &plimsoll_core::config::DockerSettings {
    c.provider
        .get()
        .expect("a docker configuration (SANDBOX_PROVIDER=docker)")
}

/// The docker provider a docker configuration builds.
#[cfg(feature = "docker")]
pub fn docker_provider(
    c: &plimsoll_core::config::Config,
) -> Result<plimsoll_core::provider::docker::DockerProvider, plimsoll_core::config::ConfigError> {
    plimsoll_core::provider::docker::DockerProvider::new(&c.setup(), docker_of(c))
}

/// An E2B stand-in (`plimsoll-standins`) served in this process on two
/// loopback ports; stopped (its VMs removed) by [`E2bStandIn::stop`].
#[cfg(all(feature = "e2b", feature = "docker"))]
pub struct E2bStandIn {
    /// The control plane, `http://127.0.0.1:<port>`.
    pub api: String,
    /// envd, `http://127.0.0.1:<port>` (sandboxes named by header).
    pub envd: String,
    /// The one API key it accepts.
    pub key: String,
    run_id: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    served: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

#[cfg(all(feature = "e2b", feature = "docker"))]
impl E2bStandIn {
    /// Starts one whose template `base` is `plimsoll/e2b:latest` (1 vCPU,
    /// 512 MB, 1 GB disk) under docker's default runtime, with `faults`.
    pub async fn start(faults: plimsoll_standins::e2b::Faults) -> E2bStandIn {
        E2bStandIn::start_with(faults, std::collections::HashMap::new()).await
    }

    /// Starts one whose egress proxy lets VMs out to `upstreams`' hostnames,
    /// forwarded to their loopback addresses (as `--upstream HOST=ADDR`).
    pub async fn start_with(
        faults: plimsoll_standins::e2b::Faults,
        upstreams: std::collections::HashMap<String, std::net::SocketAddr>,
    ) -> E2bStandIn {
        use plimsoll_standins::e2b::{self, Settings, StandIn, Template};
        let key = format!("e2b_{}", hex::encode(rand::random::<[u8; 20]>()));
        let standin = StandIn::new(Settings {
            api_key: key.clone(),
            templates: std::collections::HashMap::from([(
                "base".to_owned(),
                Template {
                    image: "plimsoll/e2b:latest".into(),
                    cpu_count: 1,
                    memory_mb: 512,
                    disk_size_mb: 1024,
                },
            )]),
            runtime: None,
            domain: "e2b.local".into(),
            faults,
            upstreams,
        })
        .unwrap();
        let run_id = standin.run_id.clone();
        let api = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let envd = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (api_url, envd_url) = (
            format!("http://{}", api.local_addr().unwrap()),
            format!("http://{}", envd.local_addr().unwrap()),
        );
        let (tx, rx) = tokio::sync::oneshot::channel();
        let served = tokio::spawn(e2b::serve(standin, api, envd, async {
            let _ = rx.await;
        }));
        E2bStandIn {
            api: api_url,
            envd: envd_url,
            key,
            run_id,
            stop: Some(tx),
            served: Some(served),
        }
    }

    /// The VMs (containers) it has now.
    pub async fn vms(&self) -> Vec<String> {
        labelled(plimsoll_standins::e2b::vm::LABEL, &self.run_id)
            .await
            .into_iter()
            .flat_map(|c| c.names.unwrap_or_default())
            .collect()
    }

    /// Stops it and waits until its VMs are removed.
    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(s) = self.served.take() {
            s.await.unwrap().unwrap();
        }
    }
}

/// The pinned image reference the Docker Cloud stand-in maps to
/// [`DOCKERCLOUD_LOCAL_IMAGE`].
#[cfg(all(feature = "dockercloud", feature = "docker"))]
pub const DOCKERCLOUD_IMAGE: &str = "registry.invalid/plimsoll/project@sha256:5f0186dafefab8895f0186dafefab8895f0186dafefab8895f0186dafefab889";

/// The Docker Cloud image `images/build.sh` makes (`images/dockercloud.Dockerfile`:
/// the project image with root as the image's user, since Docker's service
/// writes uploads and runs an exec that names no user as the image's user; the
/// guest still runs as 61000, which the provider names on every exec).
#[cfg(all(feature = "dockercloud", feature = "docker"))]
pub const DOCKERCLOUD_LOCAL_IMAGE: &str = "plimsoll/dockercloud:latest";

/// The Docker Cloud stand-in (`plimsoll-standins`), served in this process
/// on loopback ports; stopped (its sandboxes removed) by
/// [`DockerCloudStandIn::stop`].
#[cfg(all(feature = "dockercloud", feature = "docker"))]
pub struct DockerCloudStandIn {
    /// The token exchange, `http://127.0.0.1:<port>/v2/auth/token`.
    pub auth: String,
    /// The management API, `http://127.0.0.1:<port>/sandboxes`.
    pub api: String,
    /// The Connect contract's management URL, `http://127.0.0.1:<port>/sbx`.
    pub connect: String,
    /// The undocumented policy API, `http://127.0.0.1:<port>/v1`.
    pub policy: String,
    /// The Docker ID it accepts.
    pub username: String,
    /// The one personal access token it accepts.
    pub pat: String,
    /// The stand-in's state.
    pub standin: Arc<plimsoll_standins::dockercloud::StandIn>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    served: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

#[cfg(all(feature = "dockercloud", feature = "docker"))]
impl DockerCloudStandIn {
    /// Starts one whose image table maps [`DOCKERCLOUD_IMAGE`] to
    /// [`DOCKERCLOUD_LOCAL_IMAGE`] under docker's default runtime, with `faults`.
    pub async fn start(faults: plimsoll_standins::dockercloud::Faults) -> DockerCloudStandIn {
        Self::start_with(faults, Default::default()).await
    }

    /// Starts one whose policy API may let a sandbox out to `upstreams`'
    /// hostnames (port 443), forwarded by its egress proxy to their loopback
    /// addresses (as `--upstream HOST=ADDR`).
    pub async fn start_with(
        faults: plimsoll_standins::dockercloud::Faults,
        upstreams: std::collections::HashMap<String, std::net::SocketAddr>,
    ) -> DockerCloudStandIn {
        use plimsoll_standins::dockercloud::{self, Settings, StandIn};
        let pat = format!("dckr_pat_{}", hex::encode(rand::random::<[u8; 16]>()));
        let username = "plimsoll-test".to_owned();
        let standin = StandIn::new(Settings {
            username: username.clone(),
            token: pat.clone(),
            images: std::collections::HashMap::from([(
                DOCKERCLOUD_IMAGE.to_owned(),
                DOCKERCLOUD_LOCAL_IMAGE.to_owned(),
            )]),
            extra_resources: Vec::new(),
            runtime: None,
            access_token_ttl: std::time::Duration::from_secs(900),
            upstreams,
            faults,
        })
        .unwrap();
        let bind = || tokio::net::TcpListener::bind("127.0.0.1:0");
        let (auth, api, endpoint) = (
            bind().await.unwrap(),
            bind().await.unwrap(),
            bind().await.unwrap(),
        );
        let a = api.local_addr().unwrap();
        let (auth_url, api_url, connect_url, policy_url) = (
            format!("http://{}/v2/auth/token", auth.local_addr().unwrap()),
            format!("http://{a}/sandboxes"),
            format!("http://{a}/sbx"),
            format!("http://{a}/v1"),
        );
        let (tx, rx) = tokio::sync::oneshot::channel();
        let served = tokio::spawn(dockercloud::serve(
            standin.clone(),
            auth,
            api,
            endpoint,
            async {
                let _ = rx.await;
            },
        ));
        DockerCloudStandIn {
            auth: auth_url,
            api: api_url,
            connect: connect_url,
            policy: policy_url,
            username,
            pat,
            standin,
            stop: Some(tx),
            served: Some(served),
        }
    }

    /// The sandboxes it has now (uid, displayName).
    pub fn sandboxes(&self) -> Vec<(String, String)> {
        plimsoll_standins::dockercloud::lock(&self.standin.sandboxes)
            .values()
            .map(|s| (s.uid.clone(), s.display_name.clone()))
            .collect()
    }

    /// The containers it has now.
    pub async fn containers(&self) -> Vec<String> {
        labelled(
            plimsoll_standins::dockercloud::vm::LABEL,
            &self.standin.run_id,
        )
        .await
        .into_iter()
        .flat_map(|c| c.names.unwrap_or_default())
        .collect()
    }

    /// Stops it and waits until its sandboxes are removed.
    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(s) = self.served.take() {
            s.await.unwrap().unwrap();
        }
    }
}

/// The image reference the OpenShell stand-in maps to the local project image.
#[cfg(all(feature = "openshell", feature = "docker"))]
pub const OPENSHELL_IMAGE: &str = "registry.invalid/plimsoll/project:latest";

/// The OpenShell gateway stand-in (`plimsoll-standins`), served in this
/// process over mutual TLS on a loopback port, its sandboxes local containers
/// under `runtime`; stopped (its sandboxes removed) by [`OpenShellStandIn::stop`].
#[cfg(all(feature = "openshell", feature = "docker"))]
pub struct OpenShellStandIn {
    /// `https://localhost:<port>`.
    pub url: String,
    /// `ca.crt`, `tls.crt`, `tls.key` (the client's), `server.*`.
    pub certs: tempfile::TempDir,
    /// The stand-in's state.
    pub standin: Arc<plimsoll_standins::openshell::StandIn>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    served: Option<tokio::task::JoinHandle<Result<(), String>>>,
}

#[cfg(all(feature = "openshell", feature = "docker"))]
impl OpenShellStandIn {
    /// Starts one mapping [`OPENSHELL_IMAGE`] to `plimsoll/project:latest`,
    /// its sandboxes under `runtime` (`None`: docker's default), with `faults`.
    pub async fn start(
        runtime: Option<&str>,
        faults: plimsoll_standins::openshell::Faults,
    ) -> OpenShellStandIn {
        use plimsoll_standins::openshell::{self, Settings, StandIn};
        let standin = StandIn::new(Settings {
            images: std::collections::HashMap::from([(
                OPENSHELL_IMAGE.to_owned(),
                "plimsoll/project:latest".to_owned(),
            )]),
            runtime: runtime.map(str::to_owned),
            faults,
        })
        .unwrap();
        standin.docker.ping().await.expect("docker is required");
        let certs = tempfile::tempdir().unwrap();
        let tls = openshell::tls::generate(certs.path()).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!(
            "https://localhost:{}",
            listener.local_addr().unwrap().port()
        );
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let served = tokio::spawn(openshell::serve(standin.clone(), listener, tls, async {
            let _ = rx.await;
        }));
        OpenShellStandIn {
            url,
            certs,
            standin,
            stop: Some(tx),
            served: Some(served),
        }
    }

    /// The provider's settings for this gateway and its client bundle.
    pub fn settings(&self) -> plimsoll_core::provider::openshell::OpenShellSettings {
        let read = |f: &str| std::fs::read(self.certs.path().join(f)).unwrap();
        plimsoll_core::provider::openshell::OpenShellSettings {
            gateway_url: Some(url::Url::parse(&self.url).unwrap()),
            ca_pem: read("ca.crt"),
            cert_pem: read("tls.crt"),
            key_pem: Some(Arc::new(plimsoll_core::secret::Secret::new(
                String::from_utf8(read("tls.key")).unwrap(),
            ))),
            image: OPENSHELL_IMAGE.into(),
            ..Default::default()
        }
    }

    /// The names of the sandboxes it has now, in every workspace.
    pub fn sandboxes(&self) -> Vec<String> {
        plimsoll_standins::openshell::lock(&self.standin.sandboxes)
            .values()
            .map(|s| s.name.clone())
            .collect()
    }

    /// The containers it has now.
    pub async fn containers(&self) -> Vec<String> {
        labelled(
            plimsoll_standins::openshell::container::LABEL,
            &self.standin.run_id,
        )
        .await
        .into_iter()
        .flat_map(|c| c.names.unwrap_or_default())
        .collect()
    }

    /// Stops it and waits until its sandboxes are removed.
    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(s) = self.served.take() {
            s.await.unwrap().unwrap();
        }
    }
}

/// Serves the guard (once the engine has made it) on `listener`.
pub fn serve_guard(
    listener: tokio::net::TcpListener,
    guard: Arc<plimsoll_core::grant::guard::Guard>,
) {
    tokio::spawn(async move {
        loop {
            let (s, _) = listener.accept().await.unwrap();
            let guard = guard.clone();
            let svc = hyper::service::service_fn(move |req| {
                let guard = guard.clone();
                async move { Ok::<_, std::convert::Infallible>(guard.handle(req).await) }
            });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(s), svc)
                    .await;
            });
        }
    });
}

/// Asserts the host itself reaches 1.1.1.1:80, where the hosted proofs'
/// probe tries to get out: a test that opens a sandbox's network expects
/// that probe to succeed. (These build machines' egress gateway answers
/// any TCP connection; a host with no route at all fails the test here,
/// with this message, rather than in a confusing way later.)
pub async fn host_reaches_1_1_1_1() {
    let c = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        tokio::net::TcpStream::connect("1.1.1.1:80"),
    )
    .await;
    assert!(
        matches!(c, Ok(Ok(_))),
        "this test needs the host to reach 1.1.1.1:80 (an open sandbox network must let the proof's probe out): {c:?}"
    );
}
