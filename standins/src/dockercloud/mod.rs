//! The Docker Cloud Sandboxes stand-in: the documented, experimental
//! "Docker Sandboxes API v1" in its REST form (base
//! `https://connect.docker.com/sandboxes`), with Docker Hub's token exchange
//! in front of it and a sandbox endpoint per sandbox behind it. Pinned notes
//! on the protocol: `docs/research/hosted-providers.md` §2.1–§2.3, §2.5,
//! §2.6 (REST mode); how to run it: `docs/providers/dockercloud.md`.
//!
//! Three listeners:
//!
//! * **auth** ([`auth`]): `POST /v2/auth/token` exchanges the configured
//!   Docker ID and personal access token for a JWT-shaped access token that
//!   lives [`Settings::access_token_ttl`] (900 s, as observed).
//! * **api** ([`api`], [`create`]): the management API under the path prefix
//!   `/sandboxes`, so the base URL is `http://ADDR/sandboxes` and a client
//!   that drops the prefix gets `notFound`. Only an unexpired access token
//!   the stand-in minted is accepted (the PAT itself is `unauthenticated`).
//!   Covered: create (202 `creating`, then `running` on later reads;
//!   `Idempotency-Key` replay answering 201 with the same sandbox, a
//!   different payload refused 409), get (`ETag` and `core.etag`,
//!   `If-None-Match` → 304), list (`pageSize`, `pageToken`, `filter` on
//!   `name`, `display_name`, `uid`, `status`, `agent`, `orderBy`), delete
//!   (`If-Match` required: 428 absent, 412 stale with an `EtagMismatch`
//!   detail, 202 `deleting`, then `notFound`; 204 for an unknown uid, as
//!   observed), renew-timeout, endpoint credentials (TTL clamped to
//!   1 s..300 s, `Cache-Control: no-store`), the sandbox's effective network
//!   policy and the account policy (`denyAll`, no allowed networks), and
//!   expiry (`features.timeouts`, one hour by default; `onTimeout` `delete`
//!   or `stop`).
//! * **endpoint** ([`endpoint`]): every sandbox's `core.endpoint.uri` is
//!   `http://ADDR/sbx/<uid>`, a per-sandbox path prefix, so a client must use
//!   the URI it read. Only an unexpired endpoint credential minted for that
//!   sandbox is accepted (a management token is 401 "invalid endpoint
//!   credential"); an exec still running when its credential expires is cut
//!   off with 401 and reason `ENDPOINT_CREDENTIAL_EXPIRED`, as observed.
//!   Covered: `POST /v1/processes/exec` (no timeout, no stdin; combined
//!   output capped at [`endpoint::EXEC_OUTPUT_CAP`] with `incomplete: true`,
//!   the rest drained), `POST /v1/files/upload` (multipart metadata/content
//!   pairs), `GET /v1/files/download` (`multipart/mixed`, `error` parts for
//!   paths that cannot be read) and `GET /v1/files/content`.
//!
//! Each sandbox is a real local container ([`vm`]): the image the create's
//! `imageRef` maps to in [`Settings::images`], locked down, under runsc with
//! `--runtime runsc`, with no network at all while the policy it reports is
//! deny-all.
//!
//! Docker's Connect contract (`docker.sbx.v1`) is served over the same
//! sandboxes by [`sbx`]: its management procedures under `/sbx` on the api
//! listener, its sandbox endpoint under each `core.endpoint.uri`.
//!
//! Not covered (answered `unimplemented` or `notFound` as an unserved route
//! is): agents, kits, MCP, managed
//! images (`image`), volumes, secrets, snapshots, ports, policy ids and
//! inline `networkPolicies` (refused 409 `failedPrecondition`, as observed
//! live while an account default policy governs), the undocumented policy
//! PUT, policy logs, stop/start/patch, durable processes and interactive
//! sessions, file stat/list/mkdir/move/remove, quotas (429 on reads only
//! as a fault).
//!
//! Faults a test can ask for ([`Faults`]) make the stand-in misbehave the
//! way a misconfigured account, a busy service or a hostile one would.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use bollard::Docker;
use serde_json::Value;

pub mod api;
pub mod auth;
pub mod create;
pub mod endpoint;
pub mod errors;
pub mod files;
pub mod policy;
pub mod sbx;
pub mod vm;

pub use crate::e2b::lock;
pub use errors::{error, invalid, sandbox_not_found, unserved};

/// The supported `resources` pairs (cpus, memoryMib): micro and small.
pub const RESOURCE_PAIRS: &[(u32, u64)] = &[(1, 2048), (2, 4096)];
/// A sandbox's lifetime when the create names none (Docker's default: one hour).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3600);
/// An endpoint credential's longest (and default) lifetime.
pub const MAX_CREDENTIAL_TTL: Duration = Duration::from_secs(300);
/// How long calls in flight may finish once the stand-in is told to stop.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// How often expiry is checked.
const EXPIRY_TICK: Duration = Duration::from_millis(500);

/// Misbehaviour a test asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Faults {
    /// The account's default policy is `allowAll` (and so every sandbox's
    /// effective policy; their containers get a network).
    pub account_allow_all: bool,
    /// Every sandbox's effective policy reads back `denyAll` with an
    /// `allowNetworks` entry for `0.0.0.0/0` (and its container gets a network).
    pub policy_allows: bool,
    /// Network-policy reads answer 403 `permissionDenied`.
    pub deny_policy_read: bool,
    /// Every container gets a network whatever the policy says.
    pub allow_egress: bool,
    /// Every second management GET answers 429 `resourceExhausted` with
    /// `Retry-After: 1` and a `RetryInfo` detail, as Docker throttles reads.
    pub throttle_reads: bool,
    /// The policy API answers a rule's write with 200 but applies nothing
    /// (the read-back lacks the rule).
    pub policy_ignores_rule: bool,
}

/// How the stand-in is set up.
#[derive(Clone)]
pub struct Settings {
    /// The Docker ID the token exchange accepts.
    pub username: String,
    /// The personal access token the token exchange accepts (never logged).
    pub token: String,
    /// `imageRef` → local docker image.
    pub images: HashMap<String, String>,
    /// Further (cpus, memoryMib) pairs accepted beside [`RESOURCE_PAIRS`]
    /// (small ones for tests; the real service accepts only its sizes).
    pub extra_resources: Vec<(u32, u64)>,
    /// The docker runtime for sandboxes (`runsc`), or docker's default.
    pub runtime: Option<String>,
    /// How long a minted access token lives (900 s, as observed).
    pub access_token_ttl: Duration,
    /// Hostname → the loopback address the egress proxy forwards a
    /// sandbox's HTTPS to that host (plain HTTP): the hosts a policy rule
    /// may let a sandbox reach. Empty: no egress proxy, no rule accepted.
    pub upstreams: HashMap<String, std::net::SocketAddr>,
    /// Faults to inject.
    pub faults: Faults,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("username", &self.username)
            .field("token", &"<redacted>")
            .field("images", &self.images)
            .field("extra_resources", &self.extra_resources)
            .field("runtime", &self.runtime)
            .field("access_token_ttl", &self.access_token_ttl)
            .field("upstreams", &self.upstreams)
            .field("faults", &self.faults)
            .finish()
    }
}

/// `core.status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The container is being made.
    Creating,
    /// Processes may run.
    Running,
    /// Stopped at expiry (`onTimeout: stop`).
    Stopped,
    /// Its container could not be made.
    Failed,
    /// Being deleted.
    Deleting,
}

impl Status {
    /// The API's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Creating => "creating",
            Status::Running => "running",
            Status::Stopped => "stopped",
            Status::Failed => "failed",
            Status::Deleting => "deleting",
        }
    }
}

/// What changes over a sandbox's life.
#[derive(Debug)]
pub struct Life {
    /// `core.status`.
    pub status: Status,
    /// The current strong etag, quoted.
    pub etag: String,
    /// When it expires.
    pub expires_at: SystemTime,
    /// The container, once made.
    pub machine: Option<vm::Machine>,
    /// Why it failed (`status` failed).
    pub failure: Option<String>,
}

impl Life {
    /// Moves to `status` and takes a new etag.
    pub fn set(&mut self, status: Status) {
        self.status = status;
        self.etag = new_etag();
    }
}

/// One sandbox.
#[derive(Debug)]
pub struct Sandbox {
    /// `uid`.
    pub uid: String,
    /// Creation order (list order and page tokens).
    pub seq: u64,
    /// `displayName`.
    pub display_name: String,
    /// `core.imageRef` as created.
    pub image_ref: String,
    /// `core.resources`: cpus.
    pub cpus: u32,
    /// `core.resources`: memoryMib.
    pub memory_mib: u64,
    /// `core.labels`.
    pub labels: BTreeMap<String, String>,
    /// `core.environment`.
    pub environment: BTreeMap<String, String>,
    /// `core.createdAt`.
    pub created_at: SystemTime,
    /// `features.timeouts.onTimeout` (`delete` or `stop`).
    pub on_timeout: String,
    /// The lifetime the create asked for.
    pub initial_timeout: Duration,
    /// Status, etag, expiry and container.
    pub life: Mutex<Life>,
    /// The networks its policy allows (`host:443`), set through the policy API.
    pub allow: Mutex<Vec<String>>,
    /// Its address on the egress network while a rule admits it there.
    pub egress_addr: Mutex<Option<std::net::IpAddr>>,
}

/// An endpoint credential the stand-in minted.
#[derive(Debug, Clone)]
pub struct Credential {
    /// The sandbox uid it is for.
    pub sandbox: String,
    /// When it stops being accepted.
    pub expires: SystemTime,
    /// Its permissions (`sandboxesExec`, `sandboxesFilesRead`, `sandboxesFilesWrite`).
    pub permissions: Vec<String>,
}

/// The stand-in's state, shared by the three listeners. Its `Debug` shows
/// no token.
pub struct StandIn {
    /// Its settings.
    pub settings: Settings,
    /// The local docker daemon.
    pub docker: Docker,
    /// This run's id (labels its containers).
    pub run_id: String,
    /// The endpoint listener's base URL (`http://ADDR`), set by [`serve`].
    pub endpoint_base: Mutex<String>,
    /// Sandboxes by uid.
    pub sandboxes: Mutex<BTreeMap<String, Arc<Sandbox>>>,
    /// The next sandbox's `seq`.
    pub next_seq: Mutex<u64>,
    /// Minted access tokens and their expiry.
    pub access_tokens: Mutex<HashMap<String, SystemTime>>,
    /// Minted endpoint credentials by token.
    pub credentials: Mutex<HashMap<String, Credential>>,
    /// `Idempotency-Key` → (the create's payload, the uid it made).
    pub idempotency: Mutex<HashMap<String, (Value, String)>>,
    /// Management GETs so far (for [`Faults::throttle_reads`]).
    pub reads: std::sync::atomic::AtomicU64,
    /// The Connect contract's operations by id.
    pub operations: Mutex<HashMap<String, sbx::Operation>>,
    /// The egress proxy, once [`serve`] has started it (only with upstreams).
    pub egress: std::sync::OnceLock<Arc<crate::e2b::egress::Egress>>,
}

impl std::fmt::Debug for StandIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StandIn")
            .field("settings", &self.settings)
            .field("run_id", &self.run_id)
            .field("sandboxes", &lock(&self.sandboxes).len())
            .field("access_tokens", &lock(&self.access_tokens).len())
            .field("credentials", &lock(&self.credentials).len())
            .finish_non_exhaustive()
    }
}

/// A new strong etag, quoted.
pub fn new_etag() -> String {
    format!("\"{}\"", hex::encode(rand::random::<[u8; 8]>()))
}

/// A random string of `len` characters from `[a-z0-9]`.
pub fn random_id(len: usize) -> String {
    crate::e2b::random_id(len)
}

impl StandIn {
    /// A stand-in on the local docker daemon.
    pub fn new(settings: Settings) -> Result<Arc<StandIn>, String> {
        let docker = Docker::connect_with_local_defaults().map_err(|e| format!("docker: {e}"))?;
        Ok(Arc::new(StandIn {
            settings,
            docker,
            run_id: hex::encode(rand::random::<[u8; 6]>()),
            endpoint_base: Mutex::default(),
            sandboxes: Mutex::default(),
            next_seq: Mutex::new(1),
            access_tokens: Mutex::default(),
            credentials: Mutex::default(),
            idempotency: Mutex::default(),
            reads: std::sync::atomic::AtomicU64::new(0),
            operations: Mutex::default(),
            egress: std::sync::OnceLock::new(),
        }))
    }

    /// The sandbox with this uid.
    pub fn get(&self, uid: &str) -> Option<Arc<Sandbox>> {
        lock(&self.sandboxes).get(uid).cloned()
    }

    /// Whether sandbox containers get a network: only when the policy the
    /// stand-in reports lets traffic out, or a fault says so.
    pub fn egress_open(&self) -> bool {
        let f = self.settings.faults;
        f.account_allow_all || f.policy_allows || f.allow_egress
    }

    /// `core.endpoint.uri` of a sandbox.
    pub fn endpoint_uri(&self, uid: &str) -> String {
        format!("{}/sbx/{uid}", lock(&self.endpoint_base))
    }

    /// Deletes a sandbox: forgets it, its credentials and its container.
    pub async fn delete(&self, uid: &str) {
        let Some(s) = lock(&self.sandboxes).remove(uid) else {
            return;
        };
        lock(&self.credentials).retain(|_, c| c.sandbox != uid);
        if let (Some(addr), Some(e)) = (lock(&s.egress_addr).take(), self.egress.get()) {
            e.forget(addr);
        }
        let machine = lock(&s.life).machine.take();
        if let Some(m) = machine {
            m.remove().await;
        }
    }

    /// Removes every sandbox and every container labelled with this run
    /// (one still being made included): the stand-in is stopping.
    pub async fn shutdown(&self) {
        let uids: Vec<String> = lock(&self.sandboxes).keys().cloned().collect();
        for uid in uids {
            self.delete(&uid).await;
        }
        vm::remove_labelled(&self.docker, &self.run_id).await;
    }

    /// Deletes (or stops) sandboxes past their expiry and forgets expired
    /// tokens; runs forever.
    pub async fn expire(self: Arc<StandIn>) {
        loop {
            tokio::time::sleep(EXPIRY_TICK).await;
            let now = SystemTime::now();
            lock(&self.access_tokens).retain(|_, exp| *exp > now);
            lock(&self.credentials).retain(|_, c| c.expires > now);
            let due: Vec<Arc<Sandbox>> = lock(&self.sandboxes)
                .values()
                .filter(|s| {
                    let life = lock(&s.life);
                    life.status == Status::Running && life.expires_at <= now
                })
                .cloned()
                .collect();
            for s in due {
                if s.on_timeout == "stop" {
                    let machine = {
                        let mut life = lock(&s.life);
                        life.set(Status::Stopped);
                        life.machine.clone()
                    };
                    if let Some(m) = machine
                        && let Err(e) = m.stop().await
                    {
                        tracing::warn!(sandbox = %s.uid, error = %e, "stopping an expired sandbox failed");
                    }
                } else {
                    lock(&s.life).set(Status::Deleting);
                    self.delete(&s.uid).await;
                }
            }
        }
    }
}

/// Serves the token exchange on `auth`, the management API on `api` and the
/// sandbox endpoints on `endpoint` until `stop` resolves; then removes every
/// sandbox.
pub async fn serve(
    standin: Arc<StandIn>,
    auth: tokio::net::TcpListener,
    api: tokio::net::TcpListener,
    endpoint: tokio::net::TcpListener,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    *lock(&standin.endpoint_base) = format!("http://{}", endpoint.local_addr()?);
    if standin.egress_open() {
        crate::e2b::vm::ensure_network(&standin.docker)
            .await
            .map_err(std::io::Error::other)?;
    }
    if !standin.settings.upstreams.is_empty() {
        let e = crate::e2b::egress::Egress::start(
            &standin.docker,
            &standin.run_id,
            standin.settings.upstreams.clone(),
        )
        .await
        .map_err(std::io::Error::other)?;
        let _ = standin.egress.set(e);
    }
    let expiry = tokio::spawn(standin.clone().expire());
    let (tx, rx) = tokio::sync::watch::channel(false);
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let a = axum::serve(auth, auth::router(standin.clone()))
        .with_graceful_shutdown(stopped(rx.clone()));
    let m =
        axum::serve(api, api::router(standin.clone())).with_graceful_shutdown(stopped(rx.clone()));
    let e = axum::serve(endpoint, endpoint::router(standin.clone()))
        .with_graceful_shutdown(stopped(rx.clone()));
    tokio::spawn(async move {
        stop.await;
        let _ = tx.send(true);
    });
    // Calls in flight get a grace period, not a veto: an exec a client
    // keeps waiting on must not keep the sandboxes alive.
    let grace = async move {
        stopped(rx).await;
        tokio::time::sleep(SHUTDOWN_GRACE).await;
    };
    let served = tokio::select! {
        (a, m, e) = async { tokio::join!(a.into_future(), m.into_future(), e.into_future()) } => a.and(m).and(e),
        () = grace => Ok(()),
    };
    expiry.abort();
    standin.shutdown().await;
    if let Some(e) = standin.egress.get() {
        e.stop().await;
    }
    served
}
