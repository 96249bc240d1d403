//! The engine: every request goes protocol → validation → floor against the
//! proven tier → provider support → software rule → dispatch → record.
//!
//! Every refusal before dispatch is marked not dispatched; the provider sees
//! nothing until the floor and the rule have passed.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio_util::sync::CancellationToken;

use crate::admission::{Admission, Shed};
use crate::config::{Config, ConfigError};
use crate::digest::{request_digest, result_digest, rule_id};
use crate::error::{Error, ErrorCode, Result};
use crate::provider::{self, Environment, Provider, RunContext};
use crate::record::{RECORD_VERSION, RunRecord, seal};
use crate::request::{MAX_RUN_TIMEOUT_MS, Payload, Request, check_protocol};
use crate::result::Output;
use crate::tier::{Floor, Isolation};
use crate::wire::{DescribeResponse, Evidence, PayloadEnvironment, RunResponse};
use std::sync::atomic::{AtomicU64, Ordering};

/// Who is asking: the authenticated principal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The principal id (`anon` when the daemon runs without auth).
    pub principal: String,
}

impl Caller {
    /// The anonymous caller of an embedded engine or an open daemon.
    pub fn anonymous() -> Caller {
        Caller {
            principal: "anon".into(),
        }
    }
}

/// Why an engine would not start. Each keeps its cause ([`std::error::Error::source`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StartError {
    /// The configuration is impossible.
    #[error("configuration: {0}")]
    Config(#[source] ConfigError),
    /// The provider's preflight or startup proof failed.
    #[error("startup proof failed: {}", .0.message())]
    Proof(#[source] Error),
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
    provider: Arc<dyn Provider>,
    proven: Isolation,
    instance: String,
    admission: Admission,
    counters: Arc<Counters>,
    grants: Arc<crate::grant::Grants>,
    sessions: Option<Arc<crate::session::Sessions>>,
}

/// What the audit line needs beyond the answer.
#[derive(Debug, Default)]
pub struct RunReport {
    /// The run's broker, if it carried a grant (its call summary and profile name).
    pub grant: Option<Arc<crate::grant::Broker>>,
}

#[derive(Debug, Default)]
struct Counters {
    runs: AtomicU64,
    failed: AtomicU64,
}

/// A snapshot of the engine's counters, for metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stats {
    /// Runs answered with a result.
    pub runs: u64,
    /// Runs that ended in an infrastructure error after dispatch.
    pub failed: u64,
    /// Runs in progress now.
    pub in_flight: u32,
    /// Runs shed, by reason.
    pub shed: [(Shed, u64); 3],
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("provider", &self.provider.name())
            .field("proven", &self.proven)
            .finish()
    }
}

fn unix_ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
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
        provider.preflight().await.map_err(StartError::Proof)?;
        let proven = provider.prove().await.map_err(StartError::Proof)?;
        // A provider never paints more than it claims, whatever its proof says.
        let proven = proven.min(provider.isolation());
        if !proven.meets(config.min_isolation) {
            return Err(StartError::BelowMinimum {
                proven,
                minimum: config.min_isolation,
            });
        }
        Ok(Engine {
            provider,
            proven,
            instance: config.instance.clone(),
            admission: Admission::new(config.admission),
            counters: Arc::default(),
            grants: config.grants.clone(),
            sessions: if config.sessions.enabled() {
                let s = crate::session::Sessions::new(config.sessions);
                s.spawn_housekeeping();
                Some(s)
            } else {
                None
            },
        })
    }

    /// The proven tier.
    pub fn isolation(&self) -> Isolation {
        self.proven
    }

    /// The provider's id.
    pub fn provider_name(&self) -> &'static str {
        self.provider.name()
    }

    /// Removes sandboxes this instance (at once) or others (past their
    /// deadline plus grace) leaked, if the provider can; returns how many.
    pub async fn reconcile_orphans(&self) -> Result<usize> {
        if self.provider.capabilities().orphan_reconcile {
            self.provider.reconcile_orphans().await
        } else {
            Ok(0)
        }
    }

    /// The engine's counters now.
    pub fn stats(&self) -> Stats {
        Stats {
            runs: self.counters.runs.load(Ordering::Relaxed),
            failed: self.counters.failed.load(Ordering::Relaxed),
            in_flight: self.admission.in_flight(),
            shed: self.admission.shed_counts(),
        }
    }

    /// The session manager, when sessions are on.
    pub fn sessions(&self) -> Option<&Arc<crate::session::Sessions>> {
        self.sessions.as_ref()
    }

    pub(crate) fn provider(&self) -> &Arc<dyn Provider> {
        &self.provider
    }

    pub(crate) fn policy(&self) -> String {
        self.provider.policy()
    }

    /// The session environment, or a refusal.
    pub(crate) fn session_environment(&self) -> Result<Environment> {
        if self.proven == Isolation::None {
            return Err(provider::disabled::refusal());
        }
        match (&self.sessions, self.provider.environments().session) {
            (Some(_), Some(env)) => Ok(env),
            _ => Err(Error::unsupported(format!(
                "the {} provider keeps no sessions here",
                self.provider.name()
            ))),
        }
    }

    /// The evidence every answer from `env` carries.
    pub(crate) fn evidence(&self, env: &Environment) -> Evidence {
        Evidence {
            sandbox: self.provider.name().into(),
            isolation: self.proven.as_str().into(),
            environment: env.identity.clone(),
            software_identity: env.software_identity.clone(),
            instance: self.instance.clone(),
        }
    }

    /// Checks a named grant before anything runs: the caller may use it, it may
    /// run here (in a session only with `allow_in_sessions`), and the provider
    /// has a grant path for the payload.
    pub(crate) fn check_grant(
        &self,
        payload: &Payload,
        name: &str,
        principal: &str,
        in_session: bool,
    ) -> Result<Arc<crate::grant::Profile>> {
        let p = self.grants.check(name, principal, in_session)?;
        let caps = self.provider.capabilities();
        let brokered = match payload {
            Payload::JavaScript(_) => caps.javascript_grants,
            Payload::Project(_) => caps.project_grants,
            Payload::Module(_) | Payload::Cell(_) => false,
        };
        if !brokered {
            return Err(Error::unsupported(format!(
                "the {} provider has no grant path for {} payloads",
                self.provider.name(),
                payload.kind()
            )));
        }
        Ok(p)
    }

    /// Opens a session.
    pub async fn open_session(
        &self,
        caller: &Caller,
        req: &crate::wire::OpenSessionRequest,
    ) -> Result<crate::wire::OpenSessionResponse> {
        check_protocol(req.protocol)?;
        let floor =
            Floor::parse(&req.minimum_isolation).map_err(|e| Error::invalid(e.to_string()))?;
        if !self.proven.meets(floor) {
            return Err(Error::new(
                ErrorCode::InsufficientIsolation,
                format!(
                    "this daemon's proven tier is {}, below the floor {}",
                    self.proven,
                    floor.as_str()
                ),
            ));
        }
        self.session_environment()?;
        match &self.sessions {
            Some(s) => s.open(self, caller, req).await,
            None => Err(Error::unsupported("sessions are off")),
        }
    }

    /// Runs one call in a session.
    pub async fn session_run(
        &self,
        caller: &Caller,
        session_id: &str,
        request: Request,
        cancel: CancellationToken,
    ) -> Result<crate::wire::SessionRunResponse> {
        request.envelope.check_protocol()?;
        match &self.sessions {
            Some(s) => s.run(self, caller, session_id, request, cancel).await,
            None => Err(Error::session_ended(
                crate::error::SessionEnd::NotFound,
                "no such session for this caller",
            )),
        }
    }

    /// Closes a session and returns its chain's summary.
    pub async fn close_session(
        &self,
        caller: &Caller,
        protocol: u32,
        session_id: &str,
    ) -> Result<crate::wire::CloseSessionResponse> {
        check_protocol(protocol)?;
        match &self.sessions {
            Some(s) => s.close(caller, protocol, session_id).await,
            None => Err(Error::session_ended(
                crate::error::SessionEnd::NotFound,
                "no such session for this caller",
            )),
        }
    }

    /// Ends every session (daemon shutdown), waits for their sandboxes to
    /// close, then lets the provider finish its removals and sweep what is left.
    pub async fn shutdown(&self) {
        if let Some(s) = &self.sessions {
            s.shutdown().await;
        }
        self.provider.shutdown().await;
    }

    /// The grant profiles and their call counters.
    pub fn grants(&self) -> &crate::grant::Grants {
        &self.grants
    }

    /// The admission controller (sessions hold and charge through it).
    pub fn admission(&self) -> &Admission {
        &self.admission
    }

    /// Whether the provider's preflight passes now (`/readyz`).
    pub async fn ready(&self) -> Result<()> {
        self.provider.preflight().await
    }

    /// What this engine serves: configuration plus startup proof, never attestation.
    pub fn describe(&self) -> DescribeResponse {
        let caps = self.provider.capabilities();
        let envs = self.provider.environments();
        let wire_env = |e: Option<Environment>| {
            e.map(|e| PayloadEnvironment {
                identity: e.identity,
                max_timeout_ms: e.max_timeout_ms.min(MAX_RUN_TIMEOUT_MS),
                software_identity: e.software_identity,
                languages: e.languages,
            })
        };
        DescribeResponse {
            sandbox: self.provider.name().into(),
            isolation: self.proven.as_str().into(),
            supports_project: caps.projects && envs.project.is_some(),
            supports_javascript_grants: caps.javascript_grants,
            supports_project_grants: caps.project_grants,
            supports_module: caps.modules && envs.module.is_some(),
            protocol: crate::request::PROTOCOL,
            javascript_environment: wire_env(envs.javascript),
            project_environment: wire_env(envs.project),
            module_environment: wire_env(envs.module),
            resources: Some(self.provider.resources()),
            policy: self.provider.policy(),
            supports_sessions: self.sessions.is_some() && caps.sessions && envs.session.is_some(),
            session_lifetime_ms: self
                .sessions
                .as_ref()
                .map_or(0, |s| s.settings().lifetime.as_millis() as u32),
            session_idle_timeout_ms: self
                .sessions
                .as_ref()
                .map_or(0, |s| s.settings().idle.as_millis() as u32),
            max_sessions_per_caller: self
                .sessions
                .as_ref()
                .map_or(0, |s| s.settings().max_per_caller),
            session_environment: if self.sessions.is_some() {
                wire_env(envs.session)
            } else {
                None
            },
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
        request.envelope.check_protocol()?;
        let floor = request.envelope.validate()?;
        request.payload.validate()?;
        if matches!(request.payload, Payload::Cell(_)) {
            return Err(Error::invalid(
                "a cell runs only in a session: use SessionRun",
            ));
        }
        let (env, profile) = self.admit(request, floor, &caller.principal)?;
        let timeout_ms = effective_timeout(request.envelope.timeout_ms, &env);
        let timeout = Duration::from_millis(timeout_ms as u64);

        // Shed, never queue; the permit is released on every path out, a drop included.
        let _permit = self.admission.admit(&caller.principal)?;
        // The credential is obtained once per run, after admission.
        let grant = match profile {
            Some(p) => Some(self.grants.open(p, &caller.principal, timeout)?),
            None => None,
        };
        report.grant = grant.clone();
        let ctx = RunContext {
            timeout,
            cancel,
            principal: caller.principal.clone(),
            grant,
        };
        let started = SystemTime::now();
        let clock = Instant::now();
        let output = match &request.payload {
            Payload::JavaScript(j) => self
                .provider
                .run_javascript(j, &ctx)
                .await
                .map(Output::JavaScript),
            Payload::Project(p) => self
                .provider
                .run_project(p, &ctx)
                .await
                .map(Output::Project),
            Payload::Module(m) => self.provider.run_module(m, &ctx).await.map(Output::Module),
            Payload::Cell(_) => unreachable!("refused above"),
        };
        let elapsed = clock.elapsed();
        match output {
            Ok(output) => {
                self.counters.runs.fetch_add(1, Ordering::Relaxed);
                Ok(self.stamp(request, &env, output, started, elapsed))
            }
            Err(e) => {
                if e.not_dispatched().is_none() {
                    self.counters.failed.fetch_add(1, Ordering::Relaxed);
                }
                Err(e)
            }
        }
    }

    /// The pre-dispatch checks after validation: floor, support, grant, software rule.
    fn admit(
        &self,
        request: &Request,
        floor: Floor,
        principal: &str,
    ) -> Result<(Environment, Option<Arc<crate::grant::Profile>>)> {
        if !self.proven.meets(floor) {
            return Err(Error::new(
                ErrorCode::InsufficientIsolation,
                format!(
                    "this daemon's proven tier is {}, below the floor {}",
                    self.proven,
                    floor.as_str()
                ),
            ));
        }
        if self.proven == Isolation::None {
            return Err(provider::disabled::refusal());
        }
        let caps = self.provider.capabilities();
        let envs = self.provider.environments();
        let env = match &request.payload {
            Payload::JavaScript(_) => envs.javascript,
            Payload::Project(_) => envs.project.filter(|_| caps.projects),
            Payload::Module(_) => envs.module.filter(|_| caps.modules),
            Payload::Cell(_) => None,
        }
        .ok_or_else(|| {
            Error::unsupported(format!(
                "the {} provider does not run {} payloads",
                self.provider.name(),
                request.payload.kind()
            ))
        })?;
        let name = request.payload.grant_profile();
        let profile = if name.is_empty() {
            None
        } else {
            Some(self.check_grant(&request.payload, name, principal, false)?)
        };
        if let Some(rule) = &request.envelope.software_rule
            && !rule.allows(&env.software_identity)
        {
            return Err(Error::new(
                ErrorCode::SoftwareMismatch,
                "this daemon's software is not in the request's software rule",
            ));
        }
        Ok((env, profile))
    }

    fn stamp(
        &self,
        request: &Request,
        env: &Environment,
        output: Output,
        started: SystemTime,
        elapsed: Duration,
    ) -> RunResponse {
        let evidence = Evidence {
            sandbox: self.provider.name().into(),
            isolation: self.proven.as_str().into(),
            environment: env.identity.clone(),
            software_identity: env.software_identity.clone(),
            instance: self.instance.clone(),
        };
        let started_ms = unix_ms(started);
        let elapsed_ms = elapsed.as_millis() as i64;
        let mut record = RunRecord {
            version: RECORD_VERSION,
            request_sha256: request_digest(&request.envelope, Some(&request.payload)),
            result_sha256: result_digest(Some(&output)),
            provider: evidence.sandbox.clone(),
            isolation: evidence.isolation.clone(),
            environment: evidence.environment.clone(),
            policy: self.provider.policy(),
            started_unix_ms: started_ms,
            ended_unix_ms: started_ms + elapsed_ms,
            software_identity: evidence.software_identity.clone(),
            software_rule_id: rule_id(request.envelope.software_rule.as_ref()),
            instance: evidence.instance.clone(),
            ..RunRecord::default()
        };
        seal(&mut record);
        RunResponse {
            evidence,
            duration_ms: elapsed_ms,
            record: Some(record),
            output: Some(output),
        }
    }
}

/// The budget a run gets: the request's, or the kind's default, clamped to the
/// kind's maximum and the daemon's 5-minute ceiling.
pub(crate) fn effective_timeout(requested_ms: i32, env: &Environment) -> u32 {
    let max = env.max_timeout_ms.clamp(1, MAX_RUN_TIMEOUT_MS);
    let want = if requested_ms > 0 {
        requested_ms as u32
    } else {
        env.default_timeout_ms.max(1)
    };
    want.min(max)
}

#[cfg(test)]
mod tests;
