//! The dockercloud provider (tier `vm`): each snippet and project runs in a
//! fresh Docker Cloud sandbox, with no vendor SDK, over either of Docker's
//! contracts ([`contract`], `SANDBOX_DOCKERCLOUD_API`): the documented REST
//! API (the management API [`api`], read by [`model`], and each sandbox's
//! endpoint [`endpoint`], its files through [`multipart`]) or the Connect
//! contract ([`connect`], `docker.sbx.v1`). Both start with the token
//! exchange ([`auth`]). The protocol notes are in
//! `docs/research/hosted-providers.md` §2; the operator's page is
//! `docs/providers/dockercloud.md`.
//!
//! The mark is earned by [`proof`] at startup (one real sandbox), never on
//! `/readyz`, which only says the settings are read. Every sandbox is named
//! with this instance's prefix and leased before the create ([`sandbox`]),
//! read back — itself and the network policy in force, which must be
//! deny-all with nothing allowed — before code goes in, and deleted when the
//! run returns. The exec API has no timeout and no output bound, so the
//! guest bounds itself ([`wrapper`]).
//!
//! Grants (Connect only, `SANDBOX_DOCKERCLOUD_GUARD_URL`): a granted run's
//! sandbox gets one allowed destination, the egress guard's host on 443,
//! set through Docker's policy API and read back; its guest holds the run's
//! own guard credential and reaches the broker through plimsolld's guard
//! ([`run`]). Not in this build: store images and sessions; refused at
//! startup or before dispatch.

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;

use crate::env::ConfigError;
use crate::error::{Error, Result};
use crate::provider::hosted::guard_url::Egress;
use crate::provider::hosted::http::Http;
use crate::provider::{Capabilities, Environment, Environments, Provider, RunContext, Setup};
use crate::request::{JavaScriptRun, ProjectRun};
use crate::result::{JavaScriptResult, ProjectResult};
use crate::tier::Isolation;
use crate::wire::RunResources;

mod api;
mod auth;
mod connect;
mod contract;
mod endpoint;
mod model;
pub mod multipart;
mod proof;
mod run;
mod sandbox;
mod settings;
pub mod wrapper;

pub use crate::provider::hosted::guard_url::GuardUrl;
pub use sandbox::{INSTANCE_LABEL, LEASE_LABEL, LIFETIME_LABEL, NAME_PREFIX};
pub use settings::{
    Api, DEFAULT_API_URL, DEFAULT_AUTH_URL, DockerCloudSettings, PLUGIN, SIZES, pinned,
};

/// What every run of one provider shares.
pub(crate) struct Inner {
    settings: DockerCloudSettings,
    /// The contract spoken.
    api: Box<dyn contract::Contract>,
    auth: Arc<auth::Auth>,
    instance: String,
    /// `plimsoll-<12 hex of the instance's SHA-256>-`.
    prefix: String,
    leases: crate::provider::hosted::lease::Leases,
    /// The egress guard and its URL, when `SANDBOX_DOCKERCLOUD_GUARD_URL` is set.
    egress: Option<Egress>,
}

/// The display-name prefix of `instance`'s sandboxes (Docker allows only
/// `[A-Za-z0-9_-]`, so the instance is named by a digest; the label names it
/// in full).
pub fn name_prefix(instance: &str) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(instance.as_bytes());
    format!("{NAME_PREFIX}{}-", &hex::encode(d)[..12])
}

/// The dockercloud provider.
pub struct DockerCloud {
    inner: Arc<Inner>,
    proven: OnceLock<()>,
}

impl DockerCloud {
    /// A provider with these settings; talks to nothing yet.
    pub fn new(settings: &DockerCloudSettings, setup: &Setup) -> Result<DockerCloud, ConfigError> {
        let pat = settings.token.clone().ok_or_else(|| {
            ConfigError::new(
                "DOCKER_SBX_TOKEN",
                "required for SANDBOX_PROVIDER=dockercloud",
            )
        })?;
        if !pinned(&settings.image) {
            return Err(ConfigError::new(
                "SANDBOX_DOCKERCLOUD_IMAGE",
                "must be pinned by its linux/amd64 manifest digest: <name>@sha256:<64 hex>",
            ));
        }
        let egress = settings
            .guard
            .as_ref()
            .map(|url| Egress::new("SANDBOX_DOCKERCLOUD_GUARD_URL", url, setup))
            .transpose()?;
        let http = Http::new();
        let auth = Arc::new(auth::Auth::new(
            http.clone(),
            settings.auth_url.clone(),
            settings.username.clone(),
            pat.clone(),
        ));
        Ok(DockerCloud {
            inner: Arc::new(Inner {
                api: match settings.api {
                    Api::Rest => Box::new(api::Api::new(
                        http.clone(),
                        settings.api_url.clone(),
                        auth.clone(),
                    )),
                    Api::Connect => Box::new(connect::Connect::new(
                        http.clone(),
                        settings.api_url.clone(),
                        settings.policy_url.clone(),
                        auth.clone(),
                    )),
                },
                auth,
                settings: settings.clone(),
                prefix: name_prefix(&setup.instance),
                instance: setup.instance.clone(),
                leases: Default::default(),
                egress,
            }),
            proven: OnceLock::new(),
        })
    }

    fn environment(&self) -> Environment {
        let identity = match self.proven.get() {
            Some(()) => format!("docker-cloud-image:{}", self.inner.settings.image),
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

fn no_grants() -> Error {
    Error::unsupported(
        "the dockercloud provider carries grants only with SANDBOX_DOCKERCLOUD_GUARD_URL set \
         (over the Connect contract)",
    )
}

#[async_trait]
impl Provider for DockerCloud {
    fn name(&self) -> &'static str {
        "dockercloud"
    }

    fn isolation(&self) -> Isolation {
        Isolation::Vm
    }

    fn capabilities(&self) -> Capabilities {
        let grants = self.inner.egress.is_some();
        Capabilities {
            projects: true,
            javascript_grants: grants,
            project_grants: grants,
            orphan_reconcile: true,
            ..Capabilities::default()
        }
    }

    fn guard(&self) -> Option<Arc<crate::grant::guard::Guard>> {
        self.inner.egress.as_ref().map(|e| e.guard.clone())
    }

    fn environments(&self) -> Environments {
        Environments {
            javascript: Some(self.environment()),
            project: Some(self.environment()),
            module: None,
            session: None,
        }
    }

    fn resources(&self) -> RunResources {
        let s = &self.inner.settings;
        RunResources {
            memory_mb: s.memory_mib,
            cpus: f64::from(s.cpus),
            ..RunResources::default()
        }
    }

    /// The settings only: a sandbox costs money, and `/readyz` is unauthenticated.
    async fn preflight(&self) -> Result<()> {
        Ok(())
    }

    /// The API and contract plimsoll speaks (Docker Cloud reports no version
    /// of its own) and the image it boots, pinned by digest.
    async fn wall(&self) -> Result<crate::wall::Wall> {
        let s = &self.inner.settings;
        let url = crate::wall::address(&s.api_url);
        let api = match s.api {
            Api::Rest => format!("rest {url}"),
            Api::Connect => format!("connect docker.sbx.v1 {url}"),
        };
        Ok(crate::wall::Wall::default()
            .part("docker cloud api", api)
            .part("docker cloud image", &s.image))
    }

    async fn prove(&self) -> Result<Isolation> {
        proof::prove(&self.inner).await?;
        let _ = self.proven.set(());
        Ok(Isolation::Vm)
    }

    async fn run_javascript(
        &self,
        job: &JavaScriptRun,
        ctx: &RunContext,
    ) -> Result<JavaScriptResult> {
        if ctx.grant.is_some() && self.inner.egress.is_none() {
            return Err(no_grants());
        }
        run::snippet(&self.inner, job, ctx).await
    }

    async fn run_project(&self, job: &ProjectRun, ctx: &RunContext) -> Result<ProjectResult> {
        if ctx.grant.is_some() && self.inner.egress.is_none() {
            return Err(no_grants());
        }
        run::project(&self.inner, job, ctx).await
    }

    async fn reconcile_orphans(&self) -> Result<usize> {
        self.inner.reconcile(false).await
    }

    async fn shutdown(&self) {
        // Nothing is in flight: every sandbox of this instance goes.
        if let Err(e) = self.inner.reconcile(true).await {
            tracing::warn!(error = %e, "Docker Cloud sandboxes not listed at shutdown; the next start's reconcile deletes them");
        }
    }
}
