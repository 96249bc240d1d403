//! The e2b provider (tier `vm`): each snippet and project runs in a fresh
//! E2B Firecracker microVM, spoken to with no vendor SDK — E2B's REST
//! control plane ([`api`]) and envd, the agent in the VM ([`envd`]: its
//! Connect process stream, read by [`stream`] and [`process`], and its
//! `/files` API). The protocol notes are in
//! `docs/research/hosted-providers.md` §1; the stand-in it is tested against
//! is `standins/src/e2b` (`docs/providers/e2b.md`).
//!
//! The mark is earned by [`proof`] at startup (one real VM), never on
//! `/readyz`, which only says the settings are read: a VM costs money. Every
//! VM is created secure (envd demands its access token, and an answer
//! without one is refused and the VM killed), with outbound traffic denied,
//! stamped and tracked before the create ([`vm`]), read back before code
//! goes in, and killed when the run returns; the reconcile kills stamped VMs
//! nobody tracks.
//!
//! Grants go through the egress guard ([`crate::grant::guard`]) when
//! `E2B_GUARD_URL` is set: a granted run's VM may reach only the guard's
//! host, E2B's egress proxy adds the run's guard credential as a header
//! rule outside the VM, and the credential is ended before the VM is killed
//! ([`vm`]). Without the URL, no grants (a grants file is a startup error).
//!
//! Sessions keep one VM for many calls ([`session`]), paused when idle and
//! resumed for the next call, proven at startup when they are on.

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;

use crate::env::ConfigError;
use crate::error::{Error, Result};
use crate::grant::guard::Guard;
use crate::provider::{Capabilities, Environment, Environments, Provider, RunContext, Setup};
use crate::request::{JavaScriptRun, ProjectRun};
use crate::result::{JavaScriptResult, ProjectResult};
use crate::tier::Isolation;
use crate::wire::RunResources;

mod api;
mod envd;
pub mod process;
mod proof;
mod run;
mod session;
mod settings;
pub mod stream;
mod vm;

use crate::provider::hosted::guard_url::Egress;
pub use crate::provider::hosted::guard_url::GuardUrl;
pub use settings::{
    DEFAULT_API_URL, DEFAULT_DOMAIN, DEFAULT_TEMPLATE, E2bSettings, EnvdAddress, PLUGIN,
};
pub use vm::{INSTANCE_KEY, LEASE_KEY};

/// What every run of one provider shares.
pub(crate) struct Inner {
    settings: E2bSettings,
    api: api::Api,
    http: crate::provider::hosted::http::Http,
    instance: String,
    leases: vm::Leases,
    /// The egress guard and its URL, when `E2B_GUARD_URL` is set.
    egress: Option<Egress>,
}

/// The e2b provider.
pub struct E2b {
    inner: Arc<Inner>,
    /// The template's envd version, once the proof has passed.
    envd_version: OnceLock<String>,
    /// `SANDBOX_MAX_SESSIONS` above 0.
    sessions_on: bool,
    /// `SANDBOX_SESSION_DISK_MB`.
    session_disk_mb: u32,
    /// The cell languages the startup session proof showed.
    session_languages: OnceLock<Vec<String>>,
}

impl E2b {
    /// A provider with these settings; talks to nothing yet.
    pub fn new(settings: &E2bSettings, setup: &Setup) -> Result<E2b, ConfigError> {
        let key = settings
            .api_key
            .clone()
            .ok_or_else(|| ConfigError::new("E2B_API_KEY", "required for SANDBOX_PROVIDER=e2b"))?;
        let http = crate::provider::hosted::http::Http::new();
        let egress = settings
            .guard
            .as_ref()
            .map(|url| Egress::new("E2B_GUARD_URL", url, setup))
            .transpose()?;
        Ok(E2b {
            inner: Arc::new(Inner {
                api: api::Api::new(http.clone(), settings.api_url.clone(), key),
                http,
                settings: settings.clone(),
                instance: setup.instance.clone(),
                leases: vm::Leases::default(),
                egress,
            }),
            envd_version: OnceLock::new(),
            sessions_on: setup.sessions.enabled(),
            session_disk_mb: setup.sessions.disk_mb,
            session_languages: OnceLock::new(),
        })
    }

    fn environment(&self) -> Environment {
        let identity = match self.envd_version.get() {
            Some(v) => format!("e2b-template:{};envd:{v}", self.inner.settings.template),
            None => String::new(),
        };
        Environment {
            software_identity: identity.clone(),
            identity,
            default_timeout_ms: 30_000,
            max_timeout_ms: 120_000,
            languages: vec!["javascript".into()],
            runtimes: Vec::new(),
        }
    }
}

/// A grant needs the egress guard (the pipeline refuses it before dispatch
/// already; this holds the provider to it too).
fn no_grant_without_guard(inner: &Inner, ctx: &RunContext) -> Result<()> {
    if ctx.grant.is_some() && inner.egress.is_none() {
        return Err(Error::unsupported(
            "the e2b provider carries grants only with E2B_GUARD_URL set",
        ));
    }
    Ok(())
}

#[async_trait]
impl Provider for E2b {
    fn name(&self) -> &'static str {
        "e2b"
    }

    fn isolation(&self) -> Isolation {
        Isolation::Vm
    }

    fn capabilities(&self) -> Capabilities {
        let grants = self.inner.egress.is_some();
        Capabilities {
            projects: true,
            sessions: true,
            orphan_reconcile: true,
            javascript_grants: grants,
            project_grants: grants,
            ..Capabilities::default()
        }
    }

    fn guard(&self) -> Option<Arc<Guard>> {
        self.inner.egress.as_ref().map(|e| e.guard.clone())
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
            memory_mb: s.max_memory_mb.unwrap_or(0),
            cpus: s.max_cpus.map(f64::from).unwrap_or(0.0),
            disk_mb: s.max_disk_mb.unwrap_or(0),
            ..RunResources::default()
        }
    }

    /// The settings only: a VM costs money, and `/readyz` is unauthenticated.
    async fn preflight(&self) -> Result<()> {
        Ok(())
    }

    /// The API the provider talks to and the template it boots; the envd
    /// version the template runs is learned by the proof
    /// ([`Provider::proven_parts`]). E2B's API reports no version of its own.
    async fn wall(&self) -> Result<crate::wall::Wall> {
        let s = &self.inner.settings;
        Ok(crate::wall::Wall::default()
            .part("e2b api", crate::wall::address(&s.api_url))
            .part("e2b template", &s.template))
    }

    fn proven_parts(&self) -> Vec<crate::wall::Part> {
        self.envd_version
            .get()
            .map(|v| crate::wall::Part {
                name: "e2b envd".into(),
                version: v.clone(),
            })
            .into_iter()
            .collect()
    }

    async fn prove(&self) -> Result<Isolation> {
        let version = proof::prove(&self.inner).await?;
        if self.sessions_on {
            use crate::provider::session_kit::proof as session_proof;
            let s =
                session::open(&self.inner, &session_proof::spec(), self.session_disk_mb).await?;
            let languages = session_proof::prove(&s).await?;
            let _ = self.session_languages.set(languages);
        }
        let _ = self.envd_version.set(version);
        Ok(Isolation::Vm)
    }

    async fn run_javascript(
        &self,
        job: &JavaScriptRun,
        ctx: &RunContext,
    ) -> Result<JavaScriptResult> {
        no_grant_without_guard(&self.inner, ctx)?;
        run::snippet(&self.inner, job, ctx).await
    }

    async fn run_project(&self, job: &ProjectRun, ctx: &RunContext) -> Result<ProjectResult> {
        no_grant_without_guard(&self.inner, ctx)?;
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
        // Nothing is in flight: every VM stamped with this instance goes.
        if let Err(e) = self.inner.reconcile(true).await {
            tracing::warn!(error = %e, "E2B sandboxes not listed at shutdown; the next start's reconcile kills them");
        }
    }
}
