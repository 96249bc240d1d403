//! The one way a payload runs: check → admit → dispatch → stamp, shared by a
//! fresh run ([`crate::engine`]) and a session call ([`crate::session`]).
//!
//! - [`Pipeline::check`]: the request's own validity, once, with the payload
//!   kinds each path takes (the protocol is checked first, once, by the entry
//!   point);
//! - [`Pipeline::admit`]: the floor against the tier, the environment of the
//!   payload's kind, the grant and the software rule — every refusal before
//!   dispatch, marked not dispatched;
//! - [`Pipeline::dispatch`]: the payload to its [`Target`], a fresh provider
//!   run or a session's sandbox, counted;
//! - [`Pipeline::stamp`]: the sealed record of what ran (chained when a
//!   session's [`Link`] is given).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::admission::Admission;
use crate::digest::{request_digest, result_digest, rule_id};
use crate::error::{Error, ErrorCode, Result};
use crate::grant::{Broker, Grants, Profile};
use crate::metrics::{PhaseDurations, RunDurations, RunKind, RunOutcome};
use crate::phase::Phases;
use crate::provider::{self, Environment, Provider, RunContext, SessionSandbox};
use crate::record::{RECORD_VERSION, RunRecord, WARM_POOL_POLICY, seal};
use crate::request::{MAX_RUN_TIMEOUT_MS, Payload, Request, SoftwareRule};
use crate::result::Output;
use crate::tier::{Floor, Isolation};
use crate::wall::Wall;
use crate::wire::Evidence;

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

/// Which path a request takes: the checks differ only in the payload kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Path {
    /// A fresh sandbox per run: snippets, projects, modules.
    Fresh,
    /// A call in a session: snippets, projects, cells.
    Session,
}

/// Where a dispatch goes.
pub(crate) enum Target<'a> {
    /// A fresh run on the provider.
    Fresh,
    /// A session's sandbox.
    Session(&'a dyn SessionSandbox),
}

/// A session call's place in its chain.
#[derive(Debug, Clone)]
pub(crate) struct Link {
    /// The session's fingerprint.
    pub session: String,
    /// This call's sequence number (from 1).
    pub sequence: u64,
    /// The previous record's digest (empty for the first).
    pub previous: String,
}

/// What an admitted request runs on and with.
pub(crate) struct Admitted {
    /// The environment of its kind.
    pub env: Environment,
    /// The grant profile it names, checked.
    pub profile: Option<Arc<Profile>>,
}

#[derive(Debug, Default)]
struct Counters {
    runs: AtomicU64,
    failed: AtomicU64,
}

/// The proven provider and everything a run passes through.
pub(crate) struct Pipeline {
    provider: Arc<dyn Provider>,
    proven: Isolation,
    instance: String,
    admission: Admission,
    paid: Option<Arc<crate::paid::Ledger>>,
    grants: Arc<Grants>,
    wall: Wall,
    counters: Counters,
    durations: RunDurations,
    phase_durations: PhaseDurations,
}

fn unix_ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The refusal of a floor above `tier`.
pub(crate) fn below_floor(tier: Isolation, floor: Floor) -> Error {
    Error::new(
        ErrorCode::InsufficientIsolation,
        format!(
            "this daemon's proven tier is {tier}, below the floor {}",
            floor.as_str()
        ),
    )
}

/// The refusal of software outside a caller's rule.
pub(crate) fn check_rule(rule: Option<&SoftwareRule>, env: &Environment) -> Result<()> {
    match rule {
        Some(rule) if !rule.allows(&env.software_identity) => Err(Error::new(
            ErrorCode::SoftwareMismatch,
            "this daemon's software is not in the request's software rule",
        )),
        _ => Ok(()),
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

impl Pipeline {
    /// A pipeline over a provider proven at `proven`, behind `wall` (read
    /// and assessed at startup).
    pub fn new(
        provider: Arc<dyn Provider>,
        proven: Isolation,
        instance: String,
        (admission, paid): (Admission, Option<Arc<crate::paid::Ledger>>),
        grants: Arc<Grants>,
        wall: Wall,
    ) -> Pipeline {
        Pipeline {
            provider,
            proven,
            instance,
            admission,
            paid,
            grants,
            wall,
            counters: Counters::default(),
            durations: RunDurations::default(),
            phase_durations: PhaseDurations::default(),
        }
    }

    /// The provider.
    pub fn provider(&self) -> &Arc<dyn Provider> {
        &self.provider
    }

    /// The proven tier.
    pub fn proven(&self) -> Isolation {
        self.proven
    }

    /// The admission controller.
    pub fn admission(&self) -> &Admission {
        &self.admission
    }

    /// The paid-second ledger, when the provider is metered and an
    /// allowance is set.
    pub fn paid(&self) -> Option<&Arc<crate::paid::Ledger>> {
        self.paid.as_ref()
    }

    /// Reserves the paid seconds of a run of `timeout` for `principal`
    /// (nothing when no allowance applies), or sheds it.
    pub fn reserve_paid(
        &self,
        principal: &str,
        timeout: Duration,
    ) -> Result<Option<crate::paid::Reservation>> {
        self.paid
            .as_ref()
            .map(|l| l.reserve(principal, timeout))
            .transpose()
    }

    /// The grant profiles.
    pub fn grants(&self) -> &Arc<Grants> {
        &self.grants
    }

    /// Answered runs and runs failed after dispatch.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.counters.runs.load(Ordering::Relaxed),
            self.counters.failed.load(Ordering::Relaxed),
        )
    }

    /// Dispatched runs' durations by kind and outcome.
    pub fn durations(&self) -> &RunDurations {
        &self.durations
    }

    /// Dispatched runs' phase durations.
    pub fn phase_durations(&self) -> &PhaseDurations {
        &self.phase_durations
    }

    /// The request's own validity (its protocol already checked); returns its floor.
    pub fn check(&self, request: &mut Request, path: Path) -> Result<Floor> {
        let floor = request.envelope.validate()?;
        request.payload.validate()?;
        match (path, &request.payload) {
            (Path::Fresh, Payload::Cell(_)) => Err(Error::invalid(
                "a cell runs only in a session: use SessionRun",
            )),
            (Path::Session, Payload::Module(_)) => Err(Error::invalid("a session runs no module")),
            _ => Ok(floor),
        }
    }

    /// The floor against `tier` (the daemon's, or a session's), and a daemon
    /// that runs nothing.
    pub fn meets(&self, tier: Isolation, floor: Floor) -> Result<()> {
        if !tier.meets(floor) {
            return Err(below_floor(tier, floor));
        }
        if self.proven == Isolation::None {
            return Err(provider::disabled::refusal());
        }
        Ok(())
    }

    /// The environment of a fresh run's kind, its grant and its software rule.
    pub fn admit(&self, request: &Request, floor: Floor, principal: &str) -> Result<Admitted> {
        self.meets(self.proven, floor)?;
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
        let profile = self.grant(&request.payload, principal, false)?;
        check_rule(request.envelope.software_rule.as_ref(), &env)?;
        Ok(Admitted { env, profile })
    }

    /// The grant a payload names, checked before anything runs: the caller may
    /// use it, it may run here (in a session only with `allow_in_sessions`),
    /// and the provider has a grant path for the payload.
    pub fn grant(
        &self,
        payload: &Payload,
        principal: &str,
        in_session: bool,
    ) -> Result<Option<Arc<Profile>>> {
        let name = payload.grant_profile();
        if name.is_empty() {
            return Ok(None);
        }
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
        Ok(Some(p))
    }

    /// The run's context: its budget and, after admission, its credential.
    pub fn context(
        &self,
        timeout: Duration,
        profile: Option<Arc<Profile>>,
        principal: &str,
        cancel: tokio_util::sync::CancellationToken,
        phases: Phases,
    ) -> Result<RunContext> {
        let grant: Option<Arc<Broker>> = match profile {
            Some(p) => Some(self.grants.open(p, principal, timeout)?),
            None => None,
        };
        Ok(RunContext {
            timeout,
            cancel,
            principal: principal.to_owned(),
            grant,
            warm: Default::default(),
            phases,
        })
    }

    /// Runs the payload on its target; counts an answer, and an error after
    /// dispatch, and records the run's duration by kind and outcome.
    pub async fn dispatch(
        &self,
        target: Target<'_>,
        payload: &Payload,
        ctx: &RunContext,
    ) -> (Result<Output>, SystemTime, Duration) {
        let started = SystemTime::now();
        let clock = Instant::now();
        let kind = RunKind::of(payload, matches!(target, Target::Session(_)));
        let output = match (target, payload) {
            (Target::Fresh, Payload::JavaScript(j)) => self
                .provider
                .run_javascript(j, ctx)
                .await
                .map(Output::JavaScript),
            (Target::Fresh, Payload::Project(p)) => {
                self.provider.run_project(p, ctx).await.map(Output::Project)
            }
            (Target::Fresh, Payload::Module(m)) => {
                self.provider.run_module(m, ctx).await.map(Output::Module)
            }
            (Target::Session(s), Payload::JavaScript(j)) => {
                s.run_javascript(j, ctx).await.map(Output::JavaScript)
            }
            (Target::Session(s), Payload::Project(p)) => {
                s.run_project(p, ctx).await.map(Output::Project)
            }
            (Target::Session(s), Payload::Cell(c)) => s.run_cell(c, ctx).await.map(Output::Cell),
            (_, p) => Err(Error::invalid(format!(
                "a {} payload does not run on this path",
                p.kind()
            ))),
        };
        match &output {
            Ok(_) => {
                self.counters.runs.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) if e.not_dispatched().is_none() => {
                self.counters.failed.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {}
        }
        let elapsed = clock.elapsed();
        self.durations
            .observe(kind, RunOutcome::of(&output), elapsed);
        ctx.phases.finish();
        self.phase_durations.observe(&ctx.phases);
        (output, started, elapsed)
    }

    /// The evidence every answer from `env` carries.
    pub fn evidence(&self, env: &Environment) -> Evidence {
        Evidence {
            sandbox: self.provider.name().into(),
            isolation: self.proven.as_str().into(),
            environment: env.identity.clone(),
            software_identity: env.software_identity.clone(),
            instance: self.instance.clone(),
        }
    }

    /// The wall this pipeline's runs are behind.
    pub fn wall(&self) -> &Wall {
        &self.wall
    }

    /// The policy a run's record names: the provider's, then the wall's
    /// identity and any accepted advisories ([`Wall::policy_suffix`]), with
    /// [`WARM_POOL_POLICY`] appended when the run's sandbox came from a warm
    /// pool (`warm`).
    pub fn policy(&self, warm: bool) -> String {
        let policy = self.provider.policy();
        let wall = self.wall.policy_suffix();
        if warm {
            format!("{policy}{wall}{WARM_POOL_POLICY}")
        } else {
            format!("{policy}{wall}")
        }
    }

    /// The sealed record of a run that ran (`output`) or may have run
    /// (`unanswered`: the error's code), chained when `link` is given;
    /// `warm`: its sandbox came from a warm pool.
    #[expect(
        clippy::too_many_arguments,
        reason = "one record's whole content, used by both paths"
    )]
    pub fn stamp(
        &self,
        request: &Request,
        evidence: &Evidence,
        output: Option<&Output>,
        unanswered: &str,
        started: SystemTime,
        elapsed: Duration,
        link: Option<Link>,
        warm: bool,
    ) -> RunRecord {
        let started_ms = unix_ms(started);
        let link = link.unwrap_or(Link {
            session: String::new(),
            sequence: 0,
            previous: String::new(),
        });
        let mut record = RunRecord {
            version: RECORD_VERSION,
            request_sha256: request_digest(&request.envelope, Some(&request.payload)),
            result_sha256: output.map(|o| result_digest(Some(o))).unwrap_or_default(),
            unanswered: unanswered.to_owned(),
            provider: evidence.sandbox.clone(),
            isolation: evidence.isolation.clone(),
            environment: evidence.environment.clone(),
            policy: self.policy(warm),
            started_unix_ms: started_ms,
            ended_unix_ms: started_ms + elapsed.as_millis() as i64,
            session: link.session,
            sequence: link.sequence,
            previous_sha256: link.previous,
            software_identity: evidence.software_identity.clone(),
            software_rule_id: rule_id(request.envelope.software_rule.as_ref()),
            instance: evidence.instance.clone(),
            ..RunRecord::default()
        };
        seal(&mut record);
        record
    }
}
