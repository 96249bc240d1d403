//! The openshell provider (tier `container`): each snippet and project runs
//! in a fresh sandbox of an NVIDIA OpenShell gateway, spoken to in gRPC over
//! mutual TLS ([`gateway`], the 0.1.5 protocol from
//! `plimsoll-openshell-proto`). The operator's page is
//! `docs/providers/openshell.md`.
//!
//! The mark comes from the gateway: it must report its docker compute
//! driver, the only one plimsoll has tested (no OpenShell API says which
//! runtime that docker uses, so nothing higher than `container` is
//! claimed). [`proof`] then shows the walls from inside one throwaway
//! sandbox at startup; `/readyz` only asks the gateway, at most once every
//! [`READINESS_TTL`]. Every sandbox is named with this instance's prefix,
//! leased and labelled with its lifetime before the create, read back in
//! full before code goes in, and deleted when the run returns
//! ([`sandbox`]).
//!
//! Sessions keep one sandbox for many calls ([`session`]), proven at
//! startup when they are on. A granted run reaches its broker through a
//! relay in its sandbox that plimsoll dials into with `ForwardTcp`
//! ([`relay`]), so the sandbox keeps no network rule.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::env::ConfigError;
use crate::error::{Error, Result};
use crate::provider::hosted::lease::Leases;
use crate::provider::{Capabilities, Environment, Environments, Provider, RunContext, Setup};
use crate::request::{JavaScriptRun, ProjectRun};
use crate::result::{JavaScriptResult, ProjectResult};
use crate::tier::Isolation;
use crate::wire::RunResources;

mod gateway;
mod proof;
mod relay;
mod run;
mod sandbox;
mod session;
mod settings;

pub use proof::{WALLS, walls};
pub use relay::{HOST_API_SOCKET, MAX_OPEN as RELAY_MAX_OPEN};
pub use run::PROJECT_DIR;
pub use sandbox::{INSTANCE_LABEL, LEASE_LABEL, LIFETIME_LABEL, NAME_PREFIX, RUN_LABEL, policy};
pub use settings::{DEFAULT_CPUS, DEFAULT_MEMORY_MIB, OpenShellSettings, PLUGIN};

/// How long a readiness answer is reused: `/readyz` needs no login, so it
/// must not make the daemon call the gateway on every poll.
pub const READINESS_TTL: Duration = Duration::from_secs(5);
/// The only compute driver accepted.
pub const DRIVER: &str = "docker";

/// What every run of one provider shares.
pub(crate) struct Inner {
    settings: OpenShellSettings,
    gateway: gateway::Gateway,
    /// 12 hex of the instance's SHA-256 (a label value the gateway accepts).
    instance_digest: String,
    /// `plimsoll-<instance digest>-`.
    prefix: String,
    leases: Leases,
    /// The last readiness answer and when it was had.
    readiness: Mutex<Option<(Instant, std::result::Result<(), String>)>>,
}

impl Inner {
    /// The gateway's health and compute driver: serving, and docker only.
    async fn driver(&self) -> Result<()> {
        let info = self.gateway.info().await?;
        let drivers: Vec<&str> = info
            .compute_drivers
            .iter()
            .map(|d| d.name.as_str())
            .collect();
        if drivers.is_empty() || drivers.iter().any(|d| !d.eq_ignore_ascii_case(DRIVER)) {
            return Err(Error::infrastructure(format!(
                "the OpenShell gateway reports the compute driver(s) {drivers:?}; only {DRIVER} \
                 is accepted (the tier container is claimed from that report)"
            )));
        }
        Ok(())
    }
}

/// The openshell provider.
pub struct OpenShell {
    inner: Arc<Inner>,
    proven: OnceLock<()>,
    /// `SANDBOX_MAX_SESSIONS` above 0.
    sessions_on: bool,
    /// `SANDBOX_SESSION_DISK_MB`.
    session_disk_mb: u32,
    /// The cell languages the startup session proof showed.
    session_languages: OnceLock<Vec<String>>,
}

impl OpenShell {
    /// A provider with these settings; talks to nothing yet.
    pub fn new(settings: &OpenShellSettings, setup: &Setup) -> Result<OpenShell, ConfigError> {
        let url = settings.gateway_url.as_ref().ok_or_else(|| {
            ConfigError::new(
                "SANDBOX_OPENSHELL_GATEWAY_URL",
                "required for SANDBOX_PROVIDER=openshell",
            )
        })?;
        let key = settings.key_pem.as_ref().ok_or_else(|| {
            ConfigError::new(
                "SANDBOX_OPENSHELL_KEY_FILE",
                "required for SANDBOX_PROVIDER=openshell",
            )
        })?;
        let gateway = gateway::Gateway::new(url, &settings.ca_pem, &settings.cert_pem, key)?;
        let digest = {
            use sha2::Digest;
            hex::encode(sha2::Sha256::digest(setup.instance.as_bytes()))[..12].to_owned()
        };
        Ok(OpenShell {
            inner: Arc::new(Inner {
                settings: settings.clone(),
                gateway,
                prefix: format!("{NAME_PREFIX}{digest}-"),
                instance_digest: digest,
                leases: Leases::default(),
                readiness: Mutex::new(None),
            }),
            proven: OnceLock::new(),
            sessions_on: setup.sessions.enabled(),
            session_disk_mb: setup.sessions.disk_mb,
            session_languages: OnceLock::new(),
        })
    }

    fn environment(&self) -> Environment {
        let identity = match self.proven.get() {
            Some(()) => format!("openshell-image:{}", self.inner.settings.image),
            None => String::new(),
        };
        Environment {
            software_identity: identity.clone(),
            identity,
            default_timeout_ms: 30_000,
            max_timeout_ms: run::MAX_RUN.as_millis() as u32,
            languages: vec!["javascript".into()],
            runtimes: Vec::new(),
        }
    }
}

#[async_trait]
impl Provider for OpenShell {
    fn name(&self) -> &'static str {
        "openshell"
    }

    fn isolation(&self) -> Isolation {
        Isolation::Container
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            projects: true,
            sessions: true,
            javascript_grants: true,
            project_grants: true,
            orphan_reconcile: true,
            ..Capabilities::default()
        }
    }

    fn environments(&self) -> Environments {
        Environments {
            javascript: Some(self.environment()),
            project: Some(self.environment()),
            module: None,
            session: Some(Environment {
                languages: self.session_languages.get().cloned().unwrap_or_default(),
                ..self.environment()
            }),
        }
    }

    fn resources(&self) -> RunResources {
        let s = &self.inner.settings;
        RunResources {
            memory_mb: s.memory_mib,
            cpus: s.cpus,
            ..RunResources::default()
        }
    }

    /// Asks the gateway (health and compute driver) at most once every
    /// [`READINESS_TTL`]; never creates a sandbox.
    async fn preflight(&self) -> Result<()> {
        let mut cached = self.inner.readiness.lock().await;
        if let Some((at, answer)) = cached.as_ref()
            && at.elapsed() < READINESS_TTL
        {
            return answer.clone().map_err(Error::infrastructure);
        }
        let answer = async {
            let health = self.inner.gateway.health().await?;
            if health.status != plimsoll_openshell_proto::v1::ServiceStatus::Healthy as i32 {
                return Err(Error::infrastructure(
                    "the OpenShell gateway does not report itself healthy",
                ));
            }
            self.inner.driver().await
        }
        .await
        .map_err(|e| e.message().to_owned());
        *cached = Some((Instant::now(), answer.clone()));
        answer.map_err(Error::infrastructure)
    }

    /// What the gateway reports of itself (`GetGatewayInfo`: its version and
    /// each compute driver's name and version) and the image it boots.
    async fn wall(&self) -> Result<crate::wall::Wall> {
        let info = self.inner.gateway.info().await?;
        let mut wall =
            crate::wall::Wall::default().part("openshell gateway", &info.gateway_version);
        for d in &info.compute_drivers {
            let reported = d
                .capabilities
                .as_ref()
                .map(|c| format!("{} {}", c.driver_name, c.driver_version))
                .unwrap_or_default();
            wall = wall.part(format!("openshell compute driver {}", d.name), reported);
        }
        Ok(wall.part("openshell image", &self.inner.settings.image))
    }

    async fn prove(&self) -> Result<Isolation> {
        proof::prove(&self.inner).await?;
        if self.sessions_on {
            use crate::provider::session_kit::proof as session_proof;
            let s =
                session::open(&self.inner, &session_proof::spec(), self.session_disk_mb).await?;
            let languages = session_proof::prove(&s).await?;
            let _ = self.session_languages.set(languages);
        }
        let _ = self.proven.set(());
        Ok(Isolation::Container)
    }

    async fn run_javascript(
        &self,
        job: &JavaScriptRun,
        ctx: &RunContext,
    ) -> Result<JavaScriptResult> {
        run::snippet(&self.inner, job, ctx).await
    }

    async fn run_project(&self, job: &ProjectRun, ctx: &RunContext) -> Result<ProjectResult> {
        run::project(&self.inner, job, ctx).await
    }

    async fn open_session(
        &self,
        spec: &crate::provider::SandboxSpec,
    ) -> Result<Box<dyn crate::provider::SessionSandbox>> {
        Ok(Box::new(
            session::open(&self.inner, spec, self.session_disk_mb).await?,
        ))
    }

    async fn reconcile_orphans(&self) -> Result<usize> {
        self.inner.reconcile(false).await
    }

    async fn shutdown(&self) {
        // Nothing is in flight: every sandbox of this instance goes.
        if let Err(e) = self.inner.reconcile(true).await {
            tracing::warn!(error = %e, "OpenShell sandboxes not listed at shutdown; the next start's reconcile deletes them");
        }
    }
}
