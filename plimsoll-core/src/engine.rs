//! The engine: a started provider whose tier is proven, and the entry points
//! of every call — a fresh run, and sessions opened, called and closed. Both
//! paths go through one [`crate::pipeline`]: protocol → validation → floor
//! against the proven tier → provider support → software rule → dispatch →
//! record.
//!
//! Every refusal before dispatch is marked not dispatched; the provider sees
//! nothing until the floor and the rule have passed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

use crate::admission::Admission;
use crate::config::{Config, ConfigError};
use crate::error::{Error, Result};
use crate::pipeline::{Path, Pipeline, Target, effective_timeout};
use crate::provider::{Environment, Provider};
use crate::request::{MAX_RUN_TIMEOUT_MS, Request};
use crate::tier::{Floor, Isolation};
use crate::wire::{DescribeResponse, PayloadEnvironment, RunResponse};

pub use crate::pipeline::Caller;

/// Why an engine would not start. Each keeps its cause ([`std::error::Error::source`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StartError {
    /// The configuration is impossible.
    #[error("configuration: {0}")]
    Config(#[source] ConfigError),
    /// The provider's preflight or startup proof failed.
    #[error("startup proof failed: {}", .0.message())]
    Proof(#[source] Error),
    /// The wall has a known escape that applies, not accepted by the
    /// operator ([`crate::advisory::refusal`]).
    #[error("SANDBOX_ACCEPT_ADVISORIES: {0}")]
    Advisory(String),
    /// The proven tier is below `SANDBOX_MIN_ISOLATION`.
    #[error(
        "SANDBOX_MIN_ISOLATION: the provider proved tier {proven}, below the minimum {}",
        minimum.as_str()
    )]
    BelowMinimum {
        /// What the provider proved.
        proven: Isolation,
        /// What the operator demanded.
        minimum: Floor,
    },
}

/// A started engine: one provider whose tier has been proven.
#[derive(Clone)]
pub struct Engine {
    pipeline: Arc<Pipeline>,
    /// How long each startup phase took (preflight, wall, proof).
    startup: Arc<Vec<(&'static str, Duration)>>,
    sessions: Arc<crate::session::Sessions>,
    /// The last readiness check: 0 none yet, 1 passed, 2 failed.
    ready: Arc<AtomicU8>,
}

/// What the audit line needs beyond the answer.
#[derive(Debug, Default)]
pub struct RunReport {
    /// The run's broker, if it carried a grant (its call summary and profile name).
    pub grant: Option<Arc<crate::grant::Broker>>,
}

/// A snapshot of the engine's counters (defined beside the other metrics, so
/// `metrics` needs nothing of the engine).
pub use crate::metrics::Stats;

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("provider", &self.pipeline.provider().name())
            .field("proven", &self.pipeline.proven())
            .finish()
    }
}

impl Engine {
    /// Builds the configured provider, runs its preflight and startup proof, and
    /// refuses to start below `SANDBOX_MIN_ISOLATION`.
    pub async fn start(config: &Config) -> std::result::Result<Engine, StartError> {
        let provider = config.build_provider().map_err(StartError::Config)?;
        Engine::with_provider(provider, config).await
    }

    /// Starts an engine over an already-built provider (for embedders and tests).
    pub async fn with_provider(
        provider: Arc<dyn Provider>,
        config: &Config,
    ) -> std::result::Result<Engine, StartError> {
        let caps = provider.capabilities();
        if !config.grants.is_empty() && !caps.javascript_grants && !caps.project_grants {
            return Err(StartError::Config(ConfigError::new(
                "PLIMSOLL_GRANTS_FILE",
                format!(
                    "the {} provider has no grant path; unset it",
                    provider.name()
                ),
            )));
        }
        if config.sessions.enabled()
            && (!caps.sessions || provider.environments().session.is_none())
        {
            return Err(StartError::Config(ConfigError::new(
                "SANDBOX_MAX_SESSIONS",
                format!(
                    "the {} provider keeps no sessions; unset it",
                    provider.name()
                ),
            )));
        }
        let mut clock = Instant::now();
        let mut startup = Vec::new();
        let mut lap = |name: &'static str| {
            let now = Instant::now();
            startup.push((name, now.saturating_duration_since(clock)));
            clock = now;
        };
        provider.preflight().await.map_err(StartError::Proof)?;
        lap("preflight");
        // Name the wall and judge its known escapes before any code runs.
        let wall = crate::advisory::assess(
            provider.wall().await.map_err(StartError::Proof)?,
            &config.accepted_advisories,
        );
        lap("wall");
        if let Some(why) = crate::advisory::refusal(&wall) {
            return Err(StartError::Advisory(why));
        }
        if !wall.parts.is_empty() {
            tracing::info!(wall = %wall.identity(), parts = %wall.summary(), "startup: the wall");
        }
        for f in &wall.advisories {
            tracing::warn!(advisory = %f.id, accepted = f.accepted, "startup: {}", f.line());
        }
        let proven = provider.prove().await.map_err(StartError::Proof)?;
        lap("proof");
        let learned = provider.proven_parts();
        let wall = if learned.is_empty() {
            wall
        } else {
            let mut wall = wall;
            wall.parts.extend(learned);
            let wall = crate::advisory::assess(wall, &config.accepted_advisories);
            if let Some(why) = crate::advisory::refusal(&wall) {
                return Err(StartError::Advisory(why));
            }
            tracing::info!(wall = %wall.identity(), parts = %wall.summary(), "startup: the wall, with what the proof learned");
            wall
        };
        let startup_line = startup
            .iter()
            .map(|(n, d)| format!("{n}={:.1}ms", d.as_secs_f64() * 1000.0))
            .collect::<Vec<_>>()
            .join(" ");
        tracing::info!(phases = %startup_line, "startup phases");
        // A provider never paints more than it claims, whatever its proof says.
        let proven = proven.min(provider.isolation());
        if !proven.meets(config.min_isolation) {
            return Err(StartError::BelowMinimum {
                proven,
                minimum: config.min_isolation,
            });
        }
        let paid = (config.provider.plugin().metered && !config.paid.is_empty())
            .then(|| crate::paid::Ledger::new(config.paid.clone()));
        let pipeline = Arc::new(Pipeline::new(
            provider,
            proven,
            config.instance.clone(),
            (Admission::new(config.admission), paid),
            config.grants.clone(),
            wall,
        ));
        let sessions = crate::session::Sessions::new(config.sessions, pipeline.clone());
        if config.sessions.enabled() {
            sessions.spawn_housekeeping();
        }
        Ok(Engine {
            pipeline,
            startup: Arc::new(startup),
            sessions,
            ready: Arc::new(AtomicU8::new(0)),
        })
    }

    /// How long each startup phase took: `preflight`, `wall`, `proof` (the
    /// provider's own breakdown of its proof is in its log line).
    pub fn startup_phases(&self) -> &[(&'static str, Duration)] {
        &self.startup
    }

    /// The proven tier.
    pub fn isolation(&self) -> Isolation {
        self.pipeline.proven()
    }

    /// The egress guard the provider admits granted runs to, when it uses
    /// one: plimsolld serves it (and only it) on `PLIMSOLL_GUARD_ADDR`.
    pub fn guard(&self) -> Option<Arc<crate::grant::guard::Guard>> {
        self.provider().guard()
    }

    /// The provider's id.
    pub fn provider_name(&self) -> &'static str {
        self.provider().name()
    }

    fn provider(&self) -> &Arc<dyn Provider> {
        self.pipeline.provider()
    }

    /// Removes sandboxes this instance (at once) or others (past their
    /// deadline plus grace) leaked, if the provider can; returns how many.
    pub async fn reconcile_orphans(&self) -> Result<usize> {
        if self.provider().capabilities().orphan_reconcile {
            self.provider().reconcile_orphans().await
        } else {
            Ok(0)
        }
    }

    /// The engine's counters now.
    pub fn stats(&self) -> Stats {
        let (runs, failed) = self.pipeline.counts();
        Stats {
            runs,
            failed,
            in_flight: self.admission().in_flight(),
            shed: self.admission().shed_counts(),
        }
    }

    /// The session manager, when sessions are on.
    pub fn sessions(&self) -> Option<&Arc<crate::session::Sessions>> {
        self.sessions.enabled().then_some(&self.sessions)
    }

    /// Opens a session.
    pub async fn open_session(
        &self,
        caller: &Caller,
        req: &crate::wire::OpenSessionRequest,
    ) -> Result<crate::wire::OpenSessionResponse> {
        self.sessions.open(caller, req).await
    }

    /// Runs one call in a session.
    pub async fn session_run(
        &self,
        caller: &Caller,
        session_id: &str,
        request: Request,
        cancel: CancellationToken,
    ) -> Result<crate::wire::SessionRunResponse> {
        self.sessions.run(caller, session_id, request, cancel).await
    }

    /// Closes a session and returns its chain's summary.
    pub async fn close_session(
        &self,
        caller: &Caller,
        protocol: u32,
        session_id: &str,
    ) -> Result<crate::wire::CloseSessionResponse> {
        self.sessions.close(caller, protocol, session_id).await
    }

    /// Ends every session (daemon shutdown), waits for their sandboxes to
    /// close, then lets the provider finish its removals and sweep what is left.
    pub async fn shutdown(&self) {
        self.sessions.shutdown().await;
        self.provider().shutdown().await;
    }

    /// The grant profiles and their call counters.
    pub fn grants(&self) -> &crate::grant::Grants {
        self.pipeline.grants()
    }

    /// The admission controller (sessions hold and charge through it).
    pub fn admission(&self) -> &Admission {
        self.pipeline.admission()
    }

    /// Whether the provider's preflight passes now (`/readyz`); the outcome
    /// is kept for [`Engine::metrics`].
    pub async fn ready(&self) -> Result<()> {
        let r = self.provider().preflight().await;
        self.ready
            .store(if r.is_ok() { 1 } else { 2 }, Ordering::Relaxed);
        r
    }

    /// Records a readiness check that gave no answer in time as failed.
    pub fn not_ready(&self) {
        self.ready.store(2, Ordering::Relaxed);
    }

    /// Everything an operator's metrics show, read now: the counters of
    /// [`Engine::stats`], run durations by kind and outcome, the session
    /// manager's refusals and waits, sessions open and suspended, the warm
    /// pool, the last readiness check and brokered calls.
    pub fn metrics(&self) -> crate::metrics::Snapshot {
        let counters = self.sessions.counters();
        crate::metrics::Snapshot {
            provider: self.provider_name(),
            tier: self.isolation().as_str(),
            stats: self.stats(),
            durations: self.pipeline.durations().snapshot(),
            phases: self.pipeline.phase_durations().snapshot(),
            session_shed: counters.shed_counts(),
            paid_shed: self.pipeline.paid().map_or_else(
                || crate::paid::Short::ALL.iter().map(|s| (*s, 0)).collect(),
                |l| l.shed_counts(),
            ),
            waits: counters.wait_counts(),
            sessions: self.sessions.stats(),
            pool: self.provider().pool().unwrap_or_default(),
            snippet_pool: self.provider().snippet_pool().unwrap_or_default(),
            ready: match self.ready.load(Ordering::Relaxed) {
                1 => Some(true),
                2 => Some(false),
                _ => None,
            },
            broker_calls: self.grants().metrics().snapshot(),
        }
    }

    /// What this engine serves: configuration plus startup proof, never attestation.
    pub fn describe(&self) -> DescribeResponse {
        let caps = self.provider().capabilities();
        let envs = self.provider().environments();
        let sessions = self.sessions().map(|s| s.settings());
        let wire_env = |e: Option<Environment>| {
            e.map(|e| PayloadEnvironment {
                identity: e.identity,
                max_timeout_ms: e.max_timeout_ms.min(MAX_RUN_TIMEOUT_MS),
                software_identity: e.software_identity,
                languages: e.languages,
                runtimes: e.runtimes,
            })
        };
        DescribeResponse {
            sandbox: self.provider_name().into(),
            isolation: self.isolation().as_str().into(),
            supports_project: caps.projects && envs.project.is_some(),
            supports_javascript_grants: caps.javascript_grants,
            supports_project_grants: caps.project_grants,
            supports_module: caps.modules && envs.module.is_some(),
            protocol: crate::request::PROTOCOL,
            javascript_environment: wire_env(envs.javascript),
            project_environment: wire_env(envs.project),
            module_environment: wire_env(envs.module),
            resources: Some(self.provider().resources()),
            policy: self.pipeline.policy(false),
            wall: Some(self.pipeline.wall().clone()).filter(|w| !w.parts.is_empty()),
            supports_sessions: sessions.is_some() && caps.sessions && envs.session.is_some(),
            session_lifetime_ms: sessions.map_or(0, |s| s.lifetime.as_millis() as u32),
            session_idle_timeout_ms: sessions.map_or(0, |s| s.idle.as_millis() as u32),
            max_sessions_per_caller: sessions.map_or(0, |s| s.max_per_caller),
            session_environment: sessions.and(wire_env(envs.session)),
            ..DescribeResponse::default()
        }
    }

    /// Takes a request through every check, runs it, and stamps its record.
    ///
    /// `Err` is a refusal (marked not dispatched) or an infrastructure error;
    /// a guest's non-zero exit is an `Ok` result.
    pub async fn run(
        &self,
        caller: &Caller,
        request: Request,
        cancel: CancellationToken,
    ) -> Result<RunResponse> {
        self.run_reported(caller, request, cancel).await.0
    }

    /// [`Engine::run`], also reporting what the audit line needs beyond the answer.
    pub async fn run_reported(
        &self,
        caller: &Caller,
        mut request: Request,
        cancel: CancellationToken,
    ) -> (Result<RunResponse>, RunReport) {
        let mut report = RunReport::default();
        let answer = self
            .run_inner(caller, &mut request, cancel, &mut report)
            .await;
        (answer, report)
    }

    async fn run_inner(
        &self,
        caller: &Caller,
        request: &mut Request,
        cancel: CancellationToken,
        report: &mut RunReport,
    ) -> Result<RunResponse> {
        let p = &self.pipeline;
        let phases = crate::phase::Phases::start();
        request.envelope.check_protocol()?;
        let floor = p.check(request, Path::Fresh)?;
        let admitted = p.admit(request, floor, &caller.principal)?;
        let timeout_ms = effective_timeout(request.envelope.timeout_ms, &admitted.env);
        let timeout = Duration::from_millis(u64::from(timeout_ms));
        // Shed, never queue; the permit is released on every path out, a drop included.
        let _permit = p.admission().admit(&caller.principal)?;
        // A metered sandbox's seconds, reserved before it is made.
        let paid = p.reserve_paid(&caller.principal, timeout)?;
        // The credential is obtained once per run, after admission.
        let ctx = p.context(
            timeout,
            admitted.profile,
            &caller.principal,
            cancel,
            phases.clone(),
        )?;
        phases.mark(crate::phase::Phase::Admitted);
        report.grant = ctx.grant.clone();
        let (output, started, elapsed) = p.dispatch(Target::Fresh, &request.payload, &ctx).await;
        if let Some(paid) = paid {
            paid.settle();
        }
        let output = output?;
        let evidence = p.evidence(&admitted.env);
        let record = p.stamp(
            request,
            &evidence,
            Some(&output),
            "",
            started,
            elapsed,
            None,
            ctx.warm.load(std::sync::atomic::Ordering::SeqCst),
        );
        Ok(RunResponse {
            evidence,
            duration_ms: elapsed.as_millis() as i64,
            record: Some(record),
            output: Some(output),
            phases: Some(phases.report()),
        })
    }
}

#[cfg(test)]
mod tests;
