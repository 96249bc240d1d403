//! The docker provider: one local docker daemon, reached through its Unix
//! socket with bollard; runc paints `container`, runsc paints `kernel` — each
//! only after its registration is confirmed and the startup proof passes.
//!
//! Every run gets a fresh container of the exact image ID inspected at
//! startup, under one lockdown ([`lockdown`]): read-only root, promised tmpfs
//! mounts (noexec, nosuid), no network, no capabilities, no-new-privileges, a
//! non-root guest, memory with swap off, CPU and process limits, and the
//! configured seccomp profile. Snippets pipe their code to `node -`; projects
//! run each step as its own `docker exec` driven from the host. The container
//! is force-removed on every way out, and a reconcile removes leftovers by
//! label. A granted snippet or project also gets its run's broker socket
//! ([`granted_socket`]) bind-mounted read-only at `/run/plimsoll`, with
//! `HOST_API_SOCKET` set (and, for a snippet, the Node host client preloaded).
//! Sessions keep one such container for many calls ([`session`]), optionally
//! from a warm pool of ready ones (`SANDBOX_SESSION_POOL`); a snippet may run
//! in a container started ahead of it for it alone (`SANDBOX_SNIPPET_POOL`,
//! [`snippet_pool`]). What this provider
//! does not cover: modules, a broker inside a session's container (a granted
//! call in a session runs without a socket to reach its API), and any remote
//! docker daemon, which it refuses.

mod archive;
mod container;
pub(crate) mod doctor;
mod ended;
mod endpoint;
mod exec;
mod images;
mod inventory;
mod lockdown;
mod mounts;
mod project;
mod proof;
mod reconcile;
mod seccomp;
mod session;
mod settings;
mod snippet;
mod snippet_pool;
mod space;
mod walls;
mod warm;
mod witness;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bollard::{API_DEFAULT_VERSION, Docker};
use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;

use crate::env::ConfigError;
use crate::error::{Error, Refusal, Result};
use crate::provider::{Capabilities, Environment, Environments, Provider, RunContext, Setup};
use crate::request::{JavaScriptRun, ProjectRun};
use crate::result::{JavaScriptResult, ProjectResult};
use crate::tier::Isolation;
use crate::wire::RunResources;

use container::LiveSet;
pub(crate) use ended::runtime_died;
use images::PinnedImage;
use lockdown::{Lockdown, Role};
pub use settings::{
    DockerEnvelope, DockerRuntime, DockerSettings, PLUGIN, SeccompSetting, valid_guest_uid,
};

/// The seccomp profile `text` as this provider hands it to gVisor
/// (`--oci-seccomp`) for a container's first process: `clone3` is left to
/// the Sentry, which answers ENOSYS itself. For tools that start containers
/// beside plimsoll's behind the same walls (the benchmarks' `docker run`
/// baseline); `Err` names why `text` is not a profile.
pub fn seccomp_for_gvisor(text: &str) -> std::result::Result<String, String> {
    Ok(seccomp::Profile::parse(text)?.for_gvisor())
}

/// The longest budget a snippet may ask for.
const SNIPPET_MAX_TIMEOUT: Duration = Duration::from_secs(30);
/// Seconds a passing (or failing) preflight is reused.
const PREFLIGHT_CACHE: Duration = Duration::from_secs(5);
/// Seconds each docker request may take to answer.
const REQUEST_TIMEOUT_SECS: u64 = 30;

/// The docker provider. Build it with [`DockerProvider::new`]; the engine then
/// runs [`Provider::preflight`] and [`Provider::prove`] before it serves.
#[derive(Clone)]
pub struct DockerProvider {
    inner: Arc<Inner>,
    /// The sessions' warm pool (outside [`Inner`]: members hold the `Inner`).
    pool: Arc<session::Pool>,
    /// The snippets' warm pool (`SANDBOX_SNIPPET_POOL`).
    snippets: Arc<snippet_pool::SnippetPool>,
}

impl std::fmt::Debug for DockerProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DockerProvider")
            .field("socket", &self.inner.socket)
            .field("runtime", &self.inner.lockdown.settings.runtime_name)
            .finish()
    }
}

#[derive(Debug, Default)]
struct State {
    snippet: Option<PinnedImage>,
    project: Option<PinnedImage>,
    snippet_languages: Vec<proof::Language>,
    project_languages: Vec<proof::Language>,
    session_languages: Vec<proof::Language>,
    drift: Option<String>,
    /// What the startup proof showed of the system-call walls.
    walls: Option<String>,
}

/// What every part of the provider shares.
pub(crate) struct Inner {
    socket: PathBuf,
    client: OnceCell<Docker>,
    lockdown: Lockdown,
    live: LiveSet,
    state: Mutex<State>,
    preflight: tokio::sync::Mutex<Option<(Instant, Result<()>)>>,
    policy: String,
    /// The seccomp profile's rules, when readable (not docker's default or
    /// unconfined): what the startup proof expects to see refused.
    seccomp: Option<seccomp::Profile>,
    /// `SANDBOX_SESSION_DISK_MB`: a session's `/work` budget (0 = unchecked).
    session_disk_mb: u32,
    /// Sessions are on (`SANDBOX_MAX_SESSIONS > 0`): the startup proof opens one.
    sessions_on: bool,
    /// Set when a preflight passes after a failed one (docker came back).
    recovered: std::sync::atomic::AtomicBool,
}

impl Inner {
    /// The one docker client: connected to the resolved socket and its API
    /// version negotiated on first use, then reused.
    pub(crate) async fn client(&self) -> Result<&Docker> {
        self.client
            .get_or_try_init(|| async {
                let path = self.socket.to_string_lossy();
                let docker =
                    Docker::connect_with_unix(&path, REQUEST_TIMEOUT_SECS, API_DEFAULT_VERSION)
                        .map_err(|e| unreachable(&path, e))?;
                docker
                    .negotiate_version()
                    .await
                    .map_err(|e| unreachable(&path, e))
            })
            .await
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The pinned image a role runs.
    pub(crate) fn pinned(&self, role: Role) -> Result<PinnedImage> {
        let st = self.state();
        let slot = match role {
            Role::Snippet | Role::Proof { work: false } => &st.snippet,
            Role::Project | Role::Session | Role::Proof { work: true } => &st.project,
        };
        slot.clone().ok_or_else(|| {
            Error::infrastructure("the docker provider has not inspected its images yet")
        })
    }

    async fn preflight_now(&self) -> Result<()> {
        let docker = self.client().await?;
        let s = &self.lockdown.settings;
        images::check_runtime(docker, s.runtime, &s.runtime_name).await?;
        space::check(docker).await?;
        images::check_host_accounts(s.guest_uid)?;
        let snippet = images::inspect(docker, &s.image).await?;
        let project = images::inspect(docker, &s.project_image).await?;
        let mut guard = self.state();
        let st = &mut *guard;
        let mut drift = None;
        for (slot, now) in [(&mut st.snippet, snippet), (&mut st.project, project)] {
            match slot {
                None => *slot = Some(now),
                Some(pinned) if pinned.id == now.id => {}
                Some(pinned) => {
                    drift = Some(format!(
                        "image {} now names {}, not the {} inspected and proven at startup; restart plimsolld to prove the new image",
                        pinned.reference, now.id, pinned.id
                    ));
                }
            }
        }
        st.drift.clone_from(&drift);
        match drift {
            Some(d) => Err(Error::infrastructure(d)),
            None => Ok(()),
        }
    }

    /// The preflight, reused for [`PREFLIGHT_CACHE`]. A pass right after a
    /// failure marks docker as just recovered (see [`Inner::take_recovered`]).
    async fn preflight_cached(&self) -> Result<()> {
        let mut cache = self.preflight.lock().await;
        if let Some((at, r)) = cache.as_ref()
            && at.elapsed() < PREFLIGHT_CACHE
        {
            return r.clone();
        }
        let r = self.preflight_now().await;
        if r.is_ok() && matches!(cache.as_ref(), Some((_, Err(_)))) {
            self.recovered
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        *cache = Some((Instant::now(), r.clone()));
        r
    }

    /// Whether the preflight passed again after failing since the last call:
    /// docker came back, and what its outage left behind is to be reconciled.
    fn take_recovered(&self) -> bool {
        self.recovered
            .swap(false, std::sync::atomic::Ordering::Relaxed)
    }

    /// Refuses a run when the last check found an image re-pointed (reason
    /// `environment`) or failed otherwise.
    async fn admit(&self) -> Result<()> {
        match self.preflight_cached().await {
            Ok(()) => Ok(()),
            Err(e) if self.state().drift.is_some() => Err(e.with_refusal(Refusal::Environment)),
            Err(e) => Err(e),
        }
    }
}

impl Drop for Inner {
    /// The last holder is going (the daemon is shutting down): give the
    /// removals of dropped runs' containers a moment to finish.
    fn drop(&mut self) {
        let t = Instant::now();
        while self.live.len() > 0 && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A granted run's broker socket: a [`grant::socket::HostSocket`] in a fresh
/// directory under the system temp dir, owned by the guest uid and reachable
/// only by the run's guest (under runsc: its gofer), serving the run's broker,
/// to be bind-mounted at [`lockdown::BROKER_DIR`]. `None` without a grant.
/// Dropping it stops the server and removes the directory.
///
/// [`grant::socket::HostSocket`]: crate::grant::socket::HostSocket
pub(crate) fn granted_socket(
    ctx: &RunContext,
    lockdown: &Lockdown,
) -> Result<Option<crate::grant::socket::HostSocket>> {
    let Some(broker) = &ctx.grant else {
        return Ok(None);
    };
    let access = crate::grant::socket::Access {
        guest_uid: lockdown.settings.guest_uid,
        via_runsc: lockdown.settings.runtime == DockerRuntime::Runsc,
    };
    let socket =
        crate::grant::socket::HostSocket::start(&std::env::temp_dir(), access).map_err(|e| {
            Error::infrastructure(format!(
                "docker provider: the run's broker socket (owned by the guest uid, \
                 which needs CAP_CHOWN): {e}"
            ))
        })?;
    socket.serve(Some(broker.clone()));
    Ok(Some(socket))
}

fn unreachable(path: &str, e: bollard::errors::Error) -> Error {
    Error::infrastructure(format!(
        "the local docker daemon is not reachable at {path}: {e}"
    ))
}

impl DockerProvider {
    /// Builds the provider from the configuration: resolves the local socket
    /// (refusing a remote daemon), reads the seccomp profile, applies the
    /// resource defaults. Talks to no daemon yet.
    pub fn new(
        setup: &Setup,
        settings: &DockerSettings,
    ) -> std::result::Result<DockerProvider, ConfigError> {
        let settings = settings.clone();
        let snippets = settings.snippet_pool as usize;
        let envelope = DockerEnvelope::from_settings(&setup.resources, settings.runtime)?;
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let socket = endpoint::resolve(&settings, home.as_deref())?;
        let seccomp = seccomp::security_opt(&settings.seccomp)?;
        let runtime = settings.runtime;
        // Under runsc every guest process loads the profile itself; gVisor
        // gets a variant it can apply to a container's first process.
        let (seccomp_opt, exec_filter) = match (&seccomp.profile, runtime) {
            (Some(p), DockerRuntime::Runsc) => (
                Some(format!("seccomp={}", p.for_gvisor())),
                Some(seccomp.digest_text.clone()),
            ),
            _ => (seccomp.opt.clone(), None),
        };
        // The policy names the seccomp profile a run had, and its digest
        // covers the runtime, the envelope and the profile's text.
        let policy = format!(
            "docker-policy:seccomp={}:sha256:{}",
            settings.seccomp.name(),
            hex::encode(Sha256::digest(
                serde_json::json!({
                    "runtime": settings.runtime.as_str(),
                    "memory_mb": envelope.memory_mb,
                    "cpus": envelope.cpus,
                    "pids": envelope.pids,
                    "tmpfs_mb": [envelope.tmp_mb, envelope.shm_mb, envelope.work_mb],
                    "guest_uid": settings.guest_uid,
                    "seccomp": seccomp.digest_text,
                })
                .to_string()
            ))
        );
        Ok(DockerProvider {
            inner: Arc::new(Inner {
                socket,
                client: OnceCell::new(),
                lockdown: Lockdown {
                    settings,
                    envelope,
                    seccomp_opt,
                    exec_filter,
                    instance: setup.instance.clone(),
                },
                live: LiveSet::default(),
                state: Mutex::new(State::default()),
                preflight: tokio::sync::Mutex::new(None),
                policy,
                seccomp: seccomp.profile,
                session_disk_mb: setup.sessions.disk_mb,
                sessions_on: setup.sessions.enabled(),
                recovered: std::sync::atomic::AtomicBool::new(false),
            }),
            pool: Arc::new(session::Pool::new(
                setup.sessions.pool as usize,
                setup.sessions.lifetime,
            )),
            snippets: Arc::new(snippet_pool::SnippetPool::new(
                snippets,
                SNIPPET_MAX_TIMEOUT,
            )),
        })
    }

    /// The docker socket this provider talks to.
    pub fn socket(&self) -> &std::path::Path {
        &self.inner.socket
    }

    /// What the startup proof showed of the system-call walls — the kernel
    /// that answers the guest and the seccomp profile in force, with the
    /// probed calls it refuses — or `None` before a proof passed.
    pub fn walls(&self) -> Option<String> {
        self.inner.state().walls.clone()
    }

    /// How many warm session containers wait in the pool now.
    pub fn pool_ready(&self) -> usize {
        self.pool.ready()
    }

    /// When docker has just come back from an outage, removes what the
    /// outage left (runs it broke could not remove their containers) in the
    /// background, without waiting for the periodic reconcile.
    fn reconcile_if_recovered(&self) {
        if !self.inner.take_recovered() {
            return;
        }
        let inner = self.inner.clone();
        tokio::spawn(async move {
            match reconcile::reconcile(&inner).await {
                Ok(n) => tracing::info!(removed = n, "docker is back; reconciled its leftovers"),
                Err(e) => tracing::warn!(error = e.message(), "docker is back; reconcile failed"),
            }
        });
    }

    /// An infrastructure error from a docker call, reworded when docker no
    /// longer answers: the reason then says the daemon went away, ahead of
    /// the transport's own words. Anything else passes unchanged.
    async fn explain<T>(&self, r: Result<T>) -> Result<T> {
        let Err(e) = r else { return r };
        if e.code() != crate::error::ErrorCode::Infrastructure
            || e.message().starts_with("the docker daemon")
        {
            return Err(e);
        }
        let answers = match self.inner.client().await {
            Ok(d) => matches!(
                tokio::time::timeout(Duration::from_secs(2), d.ping()).await,
                Ok(Ok(_))
            ),
            Err(_) => false,
        };
        if answers {
            return Err(e);
        }
        Err(Error::infrastructure(format!(
            "the docker daemon at {} stopped answering during the run ({})",
            self.inner.socket.display(),
            e.message()
        )))
    }

    /// How many of this provider's containers are in flight.
    pub fn live_containers(&self) -> usize {
        self.inner.live.len()
    }
}

#[async_trait]
impl Provider for DockerProvider {
    fn name(&self) -> &'static str {
        "docker"
    }

    fn isolation(&self) -> Isolation {
        match self.inner.lockdown.settings.runtime {
            DockerRuntime::Runc => Isolation::Container,
            DockerRuntime::Runsc => Isolation::Kernel,
        }
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            projects: true,
            sessions: true,
            orphan_reconcile: true,
            javascript_grants: true,
            project_grants: true,
            ..Capabilities::default()
        }
    }

    fn environments(&self) -> Environments {
        let st = self.inner.state();
        let env =
            |image: &Option<PinnedImage>, default_ms, max_ms, languages: &[proof::Language]| {
                let identity = image
                    .as_ref()
                    .map(PinnedImage::identity)
                    .unwrap_or_default();
                Environment {
                    software_identity: identity.clone(),
                    identity,
                    default_timeout_ms: default_ms,
                    max_timeout_ms: max_ms,
                    languages: languages.iter().map(|l| l.name.clone()).collect(),
                    runtimes: languages.iter().map(|l| l.runtime.clone()).collect(),
                }
            };
        // Sessions run the project image, with its budgets.
        let project = |languages| env(&st.project, 30_000, 120_000, languages);
        Environments {
            javascript: Some(env(
                &st.snippet,
                5_000,
                SNIPPET_MAX_TIMEOUT.as_millis() as u32,
                &st.snippet_languages,
            )),
            session: Some(project(&st.session_languages)),
            project: Some(project(&st.project_languages)),
            module: None,
        }
    }

    fn pool(&self) -> Option<crate::metrics::PoolStats> {
        Some(self.pool.stats())
    }

    fn snippet_pool(&self) -> Option<crate::metrics::PoolStats> {
        Some(self.snippets.stats())
    }

    fn resources(&self) -> RunResources {
        let e = &self.inner.lockdown.envelope;
        RunResources {
            memory_mb: e.memory_mb,
            cpus: e.cpus,
            pids: e.pids,
            disk_mb: e.disk_mb(),
        }
    }

    fn policy(&self) -> String {
        self.inner.policy.clone()
    }

    async fn wall(&self) -> Result<crate::wall::Wall> {
        let docker = self.inner.client().await?;
        let s = &self.inner.lockdown.settings;
        let snippet = self.inner.pinned(Role::Snippet)?;
        let project = self.inner.pinned(Role::Project)?;
        inventory::read(
            docker,
            &s.runtime_name,
            &s.seccomp,
            &[
                ("snippet", &snippet.reference, &snippet.id),
                ("project", &project.reference, &project.id),
            ],
        )
        .await
    }

    async fn preflight(&self) -> Result<()> {
        let r = self.inner.preflight_cached().await;
        self.reconcile_if_recovered();
        r
    }

    async fn prove(&self) -> Result<Isolation> {
        // The proof's own phases, logged at the end: why a start took long.
        let mut clock = std::time::Instant::now();
        let mut phases: Vec<String> = Vec::new();
        let mut lap = |name: &str| {
            let now = std::time::Instant::now();
            phases.push(format!(
                "{name}={:.1}ms",
                now.saturating_duration_since(clock).as_secs_f64() * 1000.0
            ));
            clock = now;
        };
        self.inner.preflight_now().await?;
        let snippet = self.inner.pinned(Role::Snippet)?;
        let project = self.inner.pinned(Role::Project)?;
        let (js, js_probe) =
            proof::prove_image(&self.inner, Role::Proof { work: false }, &snippet).await?;
        lap("snippet image");
        let Some(node) = js.into_iter().find(|l| l.name == "javascript") else {
            return Err(Error::infrastructure(format!(
                "startup proof failed for image {}: node does not start in the snippet image",
                snippet.reference
            )));
        };
        let (languages, project_probe) =
            proof::prove_image(&self.inner, Role::Proof { work: true }, &project).await?;
        lap("project image");
        let (image, inside) = match (project_probe, js_probe) {
            (Some(o), _) => (&project, o),
            (None, Some(o)) => (&snippet, o),
            (None, None) => {
                return Err(Error::infrastructure(
                    "startup proof failed: neither image starts python3, which the system-call probe needs",
                ));
            }
        };
        let shown = walls::prove(&self.inner, image, &inside).await?;
        tracing::info!(walls = %shown.summary, "startup proof: system-call walls");
        self.inner.state().walls = Some(shown.summary);
        lap("system-call walls");
        proof::run_paths(&self.inner).await?;
        lap("run paths");
        // A session runs the project image: its interpreters are the
        // project proof's, those of the kernels that started.
        let session_languages = if self.inner.sessions_on {
            let started = session::prove(&self.inner).await?;
            languages
                .iter()
                .filter(|l| started.contains(&l.name))
                .cloned()
                .collect()
        } else {
            Vec::new()
        };
        lap("sessions");
        tracing::info!(phases = %phases.join(" "), "startup proof phases");
        {
            let mut st = self.inner.state();
            st.session_languages = session_languages;
        }
        session::refill(&self.inner, &self.pool);
        snippet_pool::refill(&self.inner, &self.snippets);
        let mut st = self.inner.state();
        st.snippet_languages = vec![node];
        st.project_languages = languages;
        Ok(self.isolation())
    }

    async fn run_javascript(
        &self,
        job: &JavaScriptRun,
        ctx: &RunContext,
    ) -> Result<JavaScriptResult> {
        let admitted = self.inner.admit().await;
        self.reconcile_if_recovered();
        admitted?;
        // A granted run's broker socket is mounted at creation: never a member.
        if ctx.grant.is_none()
            && let Some(member) = self.snippets.take()
        {
            snippet_pool::refill(&self.inner, &self.snippets);
            ctx.warm.store(true, std::sync::atomic::Ordering::SeqCst);
            ctx.phases.acquired(crate::phase::Source::SnippetPool);
            return self
                .explain(snippet::feed(&self.inner, member, job, ctx).await)
                .await;
        }
        self.explain(snippet::run(&self.inner, job, ctx).await)
            .await
    }

    async fn run_project(&self, job: &ProjectRun, ctx: &RunContext) -> Result<ProjectResult> {
        let admitted = self.inner.admit().await;
        self.reconcile_if_recovered();
        admitted?;
        self.explain(project::run(&self.inner, job, ctx).await)
            .await
    }

    async fn open_session(
        &self,
        spec: &crate::provider::SandboxSpec,
    ) -> Result<Box<dyn crate::provider::SessionSandbox>> {
        self.inner.admit().await?;
        if let Some(s) = self.pool.take(spec) {
            s.pooled();
            session::refill(&self.inner, &self.pool);
            // A member warmed for other hints starts what this one lacks.
            s.warm(&spec.languages).await?;
            return Ok(Box::new(s));
        }
        Ok(Box::new(session::open(&self.inner, spec).await?))
    }

    async fn reconcile_orphans(&self) -> Result<usize> {
        reconcile::reconcile(&self.inner).await
    }

    async fn shutdown(&self) {
        // A process that exits takes the detached removal threads of dropped
        // runs and pool members with it: wait for them, then sweep.
        self.pool.close(Duration::from_secs(30)).await;
        self.snippets.close(Duration::from_secs(30)).await;
        if !self.inner.live.settled(Duration::from_secs(10)).await {
            tracing::warn!("container removals still running at shutdown");
        }
        match reconcile::reconcile(&self.inner).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(removed = n, "shutdown: removed leftover containers"),
            Err(e) => tracing::warn!(error = e.message(), "shutdown: reconcile failed"),
        }
    }
}
