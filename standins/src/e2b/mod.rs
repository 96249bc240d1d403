//! The E2B stand-in: the REST control plane (`spec/openapi.yml` of
//! e2b-dev/E2B, "E2B API" v0.1.0) and the envd data plane inside each VM
//! (Connect `process.Process` and the `/files` HTTP API, envd v0.1.3), with
//! E2B's status codes, error bodies and both access tokens. Pinned notes on
//! the protocol: `docs/research/hosted-providers.md` §1; how to run it:
//! `docs/providers/e2b.md`.
//!
//! Covered: create (`POST /sandboxes`, `POST /v2/sandboxes`) with template,
//! metadata, env vars, timeout, `secure`, network and internet access; get;
//! list (v1 and v2 with metadata and state filters and paging); kill; set
//! timeout; refresh; pause; connect/resume; expiry at `endAt` (kill, or pause
//! with `autoPause`). envd: `GET /health`, `GET`/`POST /files` (multipart and
//! octet-stream), `Process/Start` (server stream with start, data, keepalive
//! and end events, `Connect-Timeout-Ms` as the process's lifetime, the
//! process outliving a client that goes away, its stdin held open when the
//! start asks `stdin: true`), `Process/SendInput`, `Process/CloseStdin`,
//! `Process/SendSignal`, `Process/List`. Not covered: templates and builds, snapshots, volumes,
//! metrics and logs, PTYs, `StreamInput`, watchers, and signed file URLs.
//!
//! Egress is "all", "none", or, with `--upstream HOST=ADDR` given, "only
//! these hosts": a create that denies everything (`allow_internet_access:
//! false` or `denyOut 0.0.0.0/0`) and allows out hostnames that have an
//! upstream puts its VM behind the stand-in's egress proxy ([`egress`]),
//! which terminates TLS with the stand-in's CA and adds the create's header
//! `rules`, as E2B's proxy does. Any other mix (a CIDR or a host with no
//! upstream in `allowOut`, a partial `denyOut`) is refused with 400, so
//! nothing passes for filtered that is not.
//!
//! Faults a test can ask for ([`Faults`]) make the stand-in misbehave the
//! way a broken or hostile service would, so the provider's refusals can be
//! tested: a create answer without the envd access token; egress left open
//! whatever the create asked.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use bollard::Docker;
use serde_json::Value;

pub mod api;
pub mod egress;
pub mod envd;
pub mod vm;

use vm::Machine;

/// The envd version every stand-in VM reports.
pub const ENVD_VERSION: &str = "0.6.13";
/// envd's port (the `E2b-Sandbox-Port` a client names).
pub const ENVD_PORT: u16 = 49983;
/// A create's TTL when it names none, s (E2B's default).
pub const DEFAULT_TIMEOUT_S: u64 = 15;
/// The longest TTL a create or a timeout change may ask for, s (24 hours,
/// the Pro tier's limit).
pub const MAX_TIMEOUT_S: u64 = 24 * 3600;
/// How often expiry is checked.
const EXPIRY_TICK: Duration = Duration::from_millis(500);

/// A template: the local image a VM boots and the resources it reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// The local docker image.
    pub image: String,
    /// `cpuCount`.
    pub cpu_count: u32,
    /// `memoryMB`.
    pub memory_mb: u32,
    /// `diskSizeMB`.
    pub disk_size_mb: u32,
}

/// Misbehaviour a test asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Faults {
    /// Answer a secure create without `envdAccessToken` (envd still requires it).
    pub omit_envd_token: bool,
    /// Give every VM outbound network whatever the create asked.
    pub allow_egress: bool,
}

/// How the stand-in is set up.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The one valid `X-API-Key`.
    pub api_key: String,
    /// Templates by id.
    pub templates: HashMap<String, Template>,
    /// The docker runtime for VMs (`runsc`), or docker's default.
    pub runtime: Option<String>,
    /// The `domain` reported for sandbox traffic.
    pub domain: String,
    /// Faults to inject.
    pub faults: Faults,
    /// Hostnames a VM may be allowed out to, and the local address each is
    /// forwarded to (plain HTTP); empty: no egress proxy.
    pub upstreams: HashMap<String, std::net::SocketAddr>,
}

/// Running or paused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Processes may run.
    Running,
    /// Stopped: files kept, processes gone.
    Paused,
}

impl State {
    /// The API's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Running => "running",
            State::Paused => "paused",
        }
    }
}

/// What changes over a sandbox's life.
#[derive(Debug)]
pub struct Life {
    /// Running or paused.
    pub state: State,
    /// When it expires.
    pub end_at: SystemTime,
}

/// A process envd started and has not yet seen end.
#[derive(Debug, Clone)]
pub struct Process {
    /// Its `ProcessConfig` as the request gave it.
    pub config: Value,
    /// Its tag, if any.
    pub tag: Option<String>,
    /// Set when a signal (or its deadline) killed it.
    pub killed: Arc<AtomicBool>,
    /// Its stdin, when started with `stdin: true` and not closed since.
    pub stdin: Option<tokio::sync::mpsc::Sender<Vec<u8>>>,
}

/// One sandbox.
#[derive(Debug)]
pub struct Sandbox {
    /// `sandboxID`.
    pub id: String,
    /// `templateID`.
    pub template_id: String,
    /// `clientID`.
    pub client_id: String,
    /// The envd access token (secure sandboxes).
    pub envd_token: Option<String>,
    /// `metadata`.
    pub metadata: BTreeMap<String, String>,
    /// `envVars`.
    pub env_vars: BTreeMap<String, String>,
    /// `network` as created.
    pub network: Value,
    /// `allow_internet_access` as created.
    pub allow_internet_access: Option<bool>,
    /// Pause instead of kill at expiry.
    pub auto_pause: bool,
    /// The template's resources.
    pub template: Template,
    /// `startedAt`.
    pub started_at: SystemTime,
    /// The container.
    pub machine: Machine,
    /// State and expiry.
    pub life: Mutex<Life>,
    /// Processes by pid.
    pub processes: Mutex<HashMap<u32, Process>>,
    /// Users looked up so far: name → home.
    pub homes: Mutex<HashMap<String, String>>,
    /// The hosts it may reach through the egress proxy, with their headers
    /// (`None`: all or nothing, as its machine's network says).
    pub egress: Option<egress::Rules>,
    /// Its address on the egress network while it is admitted there.
    pub egress_addr: Mutex<Option<std::net::IpAddr>>,
}

/// Locks, surviving a poisoned lock (state stays consistent per field).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The stand-in's state, shared by both planes.
#[derive(Debug)]
pub struct StandIn {
    /// Its settings.
    pub settings: Settings,
    /// The local docker daemon.
    pub docker: Docker,
    /// This run's id (labels its containers).
    pub run_id: String,
    /// Sandboxes by id.
    pub sandboxes: Mutex<BTreeMap<String, Arc<Sandbox>>>,
    /// The egress proxy, once [`serve`] has started it (only with upstreams).
    pub egress: std::sync::OnceLock<Arc<egress::Egress>>,
}

impl StandIn {
    /// A stand-in on the local docker daemon.
    pub fn new(settings: Settings) -> Result<Arc<StandIn>, String> {
        let docker = Docker::connect_with_local_defaults().map_err(|e| format!("docker: {e}"))?;
        Ok(Arc::new(StandIn {
            settings,
            docker,
            run_id: hex::encode(rand::random::<[u8; 6]>()),
            sandboxes: Mutex::default(),
            egress: std::sync::OnceLock::new(),
        }))
    }

    /// The sandbox with this id.
    pub fn get(&self, id: &str) -> Option<Arc<Sandbox>> {
        lock(&self.sandboxes).get(id).cloned()
    }

    /// Kills a sandbox: forgets it and removes its machine.
    pub async fn kill(&self, id: &str) -> bool {
        let Some(s) = lock(&self.sandboxes).remove(id) else {
            return false;
        };
        self.leave_egress(&s);
        s.machine.remove().await;
        true
    }

    /// Admits a guarded sandbox's machine to the egress proxy, at the
    /// address it has now (after a create or a resume).
    pub async fn join_egress(&self, s: &Sandbox) -> Result<(), String> {
        let (Some(rules), Some(e)) = (&s.egress, self.egress.get()) else {
            return Ok(());
        };
        let addr = e.address_of(&s.machine.container).await?;
        self.leave_egress(s);
        e.admit(addr, rules.clone());
        *lock(&s.egress_addr) = Some(addr);
        Ok(())
    }

    fn leave_egress(&self, s: &Sandbox) {
        if let (Some(addr), Some(e)) = (lock(&s.egress_addr).take(), self.egress.get()) {
            e.forget(addr);
        }
    }

    /// Pauses a running sandbox; `false` when it is not running.
    pub async fn pause(&self, s: &Sandbox) -> Result<bool, String> {
        {
            let mut life = lock(&s.life);
            if life.state != State::Running {
                return Ok(false);
            }
            life.state = State::Paused;
        }
        lock(&s.processes).clear();
        self.leave_egress(s);
        s.machine.stop().await.map(|()| true)
    }

    /// Removes every sandbox (the stand-in is stopping).
    pub async fn shutdown(&self) {
        let ids: Vec<String> = lock(&self.sandboxes).keys().cloned().collect();
        for id in ids {
            self.kill(&id).await;
        }
    }

    /// Kills (or, with auto-pause, pauses) sandboxes past their `endAt`; runs forever.
    pub async fn expire(self: Arc<StandIn>) {
        loop {
            tokio::time::sleep(EXPIRY_TICK).await;
            let now = SystemTime::now();
            let due: Vec<Arc<Sandbox>> = lock(&self.sandboxes)
                .values()
                .filter(|s| {
                    let life = lock(&s.life);
                    life.state == State::Running && life.end_at <= now
                })
                .cloned()
                .collect();
            for s in due {
                if s.auto_pause {
                    if let Err(e) = self.pause(&s).await {
                        tracing::warn!(sandbox = %s.id, error = %e, "pausing an expired sandbox failed");
                    }
                } else {
                    self.kill(&s.id).await;
                }
            }
        }
    }
}

/// A random id of `len` characters from `[a-z0-9]`.
pub fn random_id(len: usize) -> String {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    (0..len)
        .map(|_| CHARS[rand::random_range(0..CHARS.len())] as char)
        .collect()
}

/// Serves the control plane on `api` and envd on `envd` until `stop` resolves;
/// then removes every sandbox.
pub async fn serve(
    standin: Arc<StandIn>,
    api: tokio::net::TcpListener,
    envd: tokio::net::TcpListener,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    vm::ensure_network(&standin.docker)
        .await
        .map_err(std::io::Error::other)?;
    if !standin.settings.upstreams.is_empty() {
        let e = egress::Egress::start(
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
    let a =
        axum::serve(api, api::router(standin.clone())).with_graceful_shutdown(stopped(rx.clone()));
    let e = axum::serve(envd, envd::router(standin.clone())).with_graceful_shutdown(stopped(rx));
    tokio::spawn(async move {
        stop.await;
        let _ = tx.send(true);
    });
    let (a, e) = tokio::join!(a.into_future(), e.into_future());
    expiry.abort();
    standin.shutdown().await;
    if let Some(egress) = standin.egress.get() {
        egress.stop().await;
    }
    a.and(e)
}
