//! Providers: the backends that run code, behind one small trait.
//!
//! A provider claims a tier only after its startup proof ([`Provider::prove`])
//! passes. Optional abilities are explicit in [`Capabilities`]; anything a
//! provider does not support is refused by the engine before dispatch.

use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

use crate::env::ConfigError;
use crate::error::{Error, Result};
use crate::request::{JavaScriptRun, ModuleRun, ProjectRun};
use crate::result::{JavaScriptResult, ModuleResult, ProjectResult};
use crate::tier::Isolation;
use crate::wire::RunResources;

pub mod disabled;
mod plugin;
mod sandbox;
mod session_settings;
pub use plugin::{
    Checks, Chosen, PLUGINS, Plugin, ProviderSettings, Setup, choose, plugin as find,
};
pub use sandbox::{SandboxSpec, SessionSandbox};
pub use session_settings::{SessionSettings, parse_duration};
#[cfg(feature = "docker")]
pub mod docker;
#[cfg(feature = "dockercloud")]
pub mod dockercloud;
#[cfg(feature = "e2b")]
pub mod e2b;
#[cfg(any(feature = "e2b", feature = "dockercloud", feature = "openshell"))]
mod hosted;
#[cfg(feature = "openshell")]
pub mod openshell;
#[cfg(any(feature = "docker", feature = "e2b", feature = "openshell"))]
mod session_kit;
#[cfg(feature = "wasm")]
pub mod wasm;

/// Per-run resource settings as configured (`None`: the provider's default).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ResourceSettings {
    /// `SANDBOX_MEMORY_MB`.
    pub memory_mb: Option<u32>,
    /// `SANDBOX_CPUS`.
    pub cpus: Option<f64>,
    /// `SANDBOX_PIDS`.
    pub pids: Option<u32>,
    /// `SANDBOX_DISK_MB`.
    pub disk_mb: Option<u32>,
}

impl ResourceSettings {
    /// Hardened mode's envelope rule for the dimensions in `wanted`
    /// (`SANDBOX_MEMORY_MB`, `SANDBOX_CPUS`, `SANDBOX_PIDS`, `SANDBOX_DISK_MB`,
    /// `SANDBOX_TOTAL_MEMORY_MB`): each must be set to a positive value.
    pub fn hardened_envelope(
        &self,
        admission: &crate::admission::Limits,
        wanted: &[&'static str],
    ) -> Vec<crate::hardened::Violation> {
        let dimensions: Vec<(&'static str, bool)> = wanted
            .iter()
            .map(|v| {
                let set = match *v {
                    "SANDBOX_MEMORY_MB" => self.memory_mb.is_some_and(|m| m > 0),
                    "SANDBOX_CPUS" => self.cpus.is_some_and(|c| c > 0.0),
                    "SANDBOX_PIDS" => self.pids.is_some_and(|p| p > 0),
                    "SANDBOX_DISK_MB" => self.disk_mb.is_some_and(|d| d > 0),
                    "SANDBOX_TOTAL_MEMORY_MB" => admission.memory.is_some(),
                    _ => false,
                };
                (*v, set)
            })
            .collect();
        crate::hardened::envelope(&dimensions)
    }

    /// Refuses every setting not in `allowed` (names of variables), naming the first.
    pub fn only(&self, provider: &str, allowed: &[&str]) -> Result<(), ConfigError> {
        let set = [
            ("SANDBOX_MEMORY_MB", self.memory_mb.is_some()),
            ("SANDBOX_CPUS", self.cpus.is_some()),
            ("SANDBOX_PIDS", self.pids.is_some()),
            ("SANDBOX_DISK_MB", self.disk_mb.is_some()),
        ];
        for (name, is_set) in set {
            if is_set && !allowed.contains(&name) {
                return Err(ConfigError::new(
                    name,
                    format!("does not apply to the {provider} provider; unset it"),
                ));
            }
        }
        Ok(())
    }
}

/// What a provider can do besides snippets. Describe reports these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Capabilities {
    /// Runs projects.
    pub projects: bool,
    /// Runs modules.
    pub modules: bool,
    /// Keeps sessions.
    pub sessions: bool,
    /// Brokers grants for snippets.
    pub javascript_grants: bool,
    /// Brokers grants for projects.
    pub project_grants: bool,
    /// Reaps leaked sandboxes ([`Provider::reconcile_orphans`]).
    pub orphan_reconcile: bool,
}

/// What one payload kind runs on, and its time budget.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Environment {
    /// A content-addressed identity of the image or interpreter, or empty.
    pub identity: String,
    /// The software identity a caller's rule is checked against, or empty.
    pub software_identity: String,
    /// The budget when the request names none, ms.
    pub default_timeout_ms: u32,
    /// The longest budget a request may ask for, ms (at most 300 000).
    pub max_timeout_ms: u32,
    /// Interpreter languages proven at startup.
    pub languages: Vec<String>,
    /// The interpreters behind `languages`, each with the exact version it
    /// reported at startup (`node 24.22.3`, `python 3.13.5`), or empty where
    /// the provider cannot ask.
    pub runtimes: Vec<String>,
}

/// The environments of each kind a provider runs (`None`: that kind is unsupported).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Environments {
    /// Snippets.
    pub javascript: Option<Environment>,
    /// Projects.
    pub project: Option<Environment>,
    /// Modules.
    pub module: Option<Environment>,
    /// Sessions.
    pub session: Option<Environment>,
}

/// Everything a provider gets with one run besides the payload.
#[derive(Debug, Clone)]
pub struct RunContext {
    /// The run's whole budget, already clamped to the provider's maximum.
    pub timeout: Duration,
    /// Fires when the caller goes away or the daemon gives up; stop at once.
    pub cancel: CancellationToken,
    /// The authenticated principal (`anon` without auth).
    pub principal: String,
    /// The run's broker when it carries a grant: the provider gives the guest
    /// a path to it (and only to it); the credential stays in the broker.
    pub grant: Option<Arc<crate::grant::Broker>>,
    /// Set by the provider when the run's sandbox was made ahead of it (a
    /// warm pool member, used for this run only); the run's record says so.
    pub warm: Arc<std::sync::atomic::AtomicBool>,
    /// The run's phase marks: the provider marks those it passes
    /// ([`crate::phase`]).
    pub phases: crate::phase::Phases,
}

/// A backend that runs code.
///
/// Only `run_javascript` is required; the other kinds default to a refusal and
/// must be matched by [`Capabilities`]. A guest's non-zero exit is an `Ok`
/// result; an `Err` is a refusal or an infrastructure error, never the guest's
/// own failure.
#[async_trait]
pub trait Provider: Send + Sync + 'static {
    /// The provider id on the wire (`disabled`, `wasm`, `docker`, …).
    fn name(&self) -> &'static str;

    /// The tier this provider paints once [`Provider::prove`] has passed.
    fn isolation(&self) -> Isolation;

    /// Optional abilities.
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    /// The egress guard this provider admits its granted runs to, for
    /// plimsolld to serve (`None`: its sandboxes reach their broker another way).
    fn guard(&self) -> Option<Arc<crate::grant::guard::Guard>> {
        None
    }

    /// Per-kind environments.
    fn environments(&self) -> Environments;

    /// The per-run resource envelope.
    fn resources(&self) -> RunResources {
        RunResources::default()
    }

    /// Its warm pool of session sandboxes now, when it keeps one (for metrics).
    fn pool(&self) -> Option<crate::metrics::PoolStats> {
        None
    }

    /// Its warm pool of snippet sandboxes now, when it keeps one (for metrics).
    fn snippet_pool(&self) -> Option<crate::metrics::PoolStats> {
        None
    }

    /// The provider's policy digest, or empty.
    fn policy(&self) -> String {
        String::new()
    }

    /// The parts that hold this provider's wall up, each with the version it
    /// reports of itself ([`crate::wall`]). Read once at startup, after the
    /// preflight and before the proof: the engine refuses a wall with a known
    /// escape that applies ([`crate::advisory`]) before any code runs.
    /// Default: no parts.
    async fn wall(&self) -> Result<crate::wall::Wall> {
        Ok(crate::wall::Wall::default())
    }

    /// Parts only the proof can learn (e2b's envd version, read from the
    /// proof's own sandbox), added to the wall and judged again after it.
    /// Default: none.
    fn proven_parts(&self) -> Vec<crate::wall::Part> {
        Vec::new()
    }

    /// A cheap check of configuration and dependencies; also `/readyz`.
    async fn preflight(&self) -> Result<()> {
        Ok(())
    }

    /// The behavioural startup proof. Returns the tier proven; the daemon
    /// serves nothing if this fails.
    async fn prove(&self) -> Result<Isolation>;

    /// Runs a snippet.
    async fn run_javascript(
        &self,
        job: &JavaScriptRun,
        ctx: &RunContext,
    ) -> Result<JavaScriptResult>;

    /// Runs a project.
    async fn run_project(&self, _job: &ProjectRun, _ctx: &RunContext) -> Result<ProjectResult> {
        Err(Error::unsupported(format!(
            "the {} provider does not run projects",
            self.name()
        )))
    }

    /// Runs a module.
    async fn run_module(&self, _job: &ModuleRun, _ctx: &RunContext) -> Result<ModuleResult> {
        Err(Error::unsupported(format!(
            "the {} provider does not run modules",
            self.name()
        )))
    }

    /// Opens one sandbox for a session (only when [`Capabilities::sessions`]).
    async fn open_session(&self, _spec: &SandboxSpec) -> Result<Box<dyn SessionSandbox>> {
        Err(Error::unsupported(format!(
            "the {} provider keeps no sessions",
            self.name()
        )))
    }

    /// Removes sandboxes this or another instance leaked; returns how many.
    async fn reconcile_orphans(&self) -> Result<usize> {
        Ok(0)
    }

    /// The engine is stopping and nothing is in flight: finish removing what
    /// dropped runs left and take the last leftovers, so a drained daemon
    /// leaves nothing behind.
    async fn shutdown(&self) {}
}
