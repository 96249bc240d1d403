//! Sessions: one sandbox for many calls, with chained records.
//!
//! A session belongs to the principal that opened it; an unknown id and
//! another caller's id get the same refusal, and ids are never stored or
//! logged (the manager keys sessions by fingerprint). Calls run one at a time,
//! in order; one more may wait its turn, and a further one is refused as at
//! capacity. After each answer the sandbox's cleanup runs (the next call waits
//! for it, the caller does not); when it cannot prove the sandbox clean, the
//! session ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::OwnedMutexGuard;
use tokio_util::sync::CancellationToken;

use crate::admission::Permit;
use crate::digest::rule_id;
use crate::error::{Error, ErrorCode, Refusal, Result, SessionEnd, SessionEnded};
use crate::metrics::{SessionCounters, SessionShed, SessionStats, Wait};
use crate::pipeline::{Caller, Link, Path, Pipeline, Target, check_rule, effective_timeout};
use crate::provider::{self, Environment};
use crate::record::session_fingerprint;
use crate::request::{PROTOCOL, Request, SoftwareRule, check_protocol, valid_trace_id};
use crate::tier::Floor;
use crate::wire::connect::ConnectCode;
use crate::wire::{
    CloseSessionResponse, Evidence, OpenSessionRequest, OpenSessionResponse, RunResponse,
    SessionRunResponse,
};

pub use crate::provider::{SandboxSpec, SessionSandbox, SessionSettings, parse_duration};

/// How long an ended session's summary stays collectable by CloseSession.
pub const KEEP_ENDED: Duration = Duration::from_secs(600);

/// The session manager.
pub struct Sessions {
    settings: SessionSettings,
    pipeline: Arc<Pipeline>,
    map: Mutex<HashMap<String, Arc<Entry>>>,
    opening: Arc<opening::Opening>,
    counters: SessionCounters,
}

struct Entry {
    /// Where its sandbox came from, for the calls' phases.
    source: crate::phase::Source,
    fingerprint: String,
    owner: String,
    rule: Option<SoftwareRule>,
    isolation: crate::tier::Isolation,
    evidence: Evidence,
    env: Environment,
    expires_at: Instant,
    idle: Duration,
    state: Mutex<State>,
    turn: Arc<tokio::sync::Mutex<Slot>>,
}

struct State {
    calls: u64,
    last: String,
    ended: Option<(SessionEnded, Instant)>,
    last_used: Instant,
    waiting: bool,
    suspended: bool,
}

struct Slot {
    sandbox: Option<Arc<dyn SessionSandbox>>,
    permit: Option<Permit>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn unix_ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The refusal of an unknown session, or another caller's.
pub(crate) fn not_found() -> Error {
    Error::session_ended(SessionEnd::NotFound, "no such session for this caller")
}

impl Entry {
    fn ended(&self) -> Option<SessionEnded> {
        lock(&self.state).ended.as_ref().map(|(e, _)| e.clone())
    }

    /// Marks the session ended (the first reason wins).
    fn mark_ended(&self, reason: SessionEnd, detail: &str) -> bool {
        let mut s = lock(&self.state);
        if s.ended.is_some() {
            return false;
        }
        s.ended = Some((
            SessionEnded {
                reason,
                detail: detail.to_owned(),
            },
            Instant::now(),
        ));
        true
    }
}

/// Closes the sandbox and gives the slot back, under the turn.
async fn release(slot: &mut Slot) {
    if let Some(sb) = slot.sandbox.take() {
        sb.close().await;
    }
    slot.permit = None;
}

impl Sessions {
    /// A manager for `settings` over the engine's pipeline.
    pub(crate) fn new(settings: SessionSettings, pipeline: Arc<Pipeline>) -> Arc<Sessions> {
        Arc::new(Sessions {
            settings,
            pipeline,
            map: Mutex::default(),
            opening: Arc::default(),
            counters: SessionCounters::default(),
        })
    }

    /// The settings in force.
    pub fn settings(&self) -> &SessionSettings {
        &self.settings
    }

    /// Whether sessions are on (`SANDBOX_MAX_SESSIONS` above 0).
    pub fn enabled(&self) -> bool {
        self.settings.enabled()
    }

    /// The session environment, or why there is none: a daemon that runs
    /// nothing, sessions off, or a provider that keeps none.
    fn environment(&self) -> Result<Environment> {
        if self.pipeline.proven() == crate::tier::Isolation::None {
            return Err(provider::disabled::refusal());
        }
        let p = self.pipeline.provider();
        match p.environments().session {
            Some(env) if self.enabled() && p.capabilities().sessions => Ok(env),
            _ => Err(Error::unsupported(format!(
                "the {} provider keeps no sessions here",
                p.name()
            ))),
        }
    }

    /// Sessions not yet ended.
    pub fn open_count(&self) -> usize {
        lock(&self.map)
            .values()
            .filter(|e| e.ended().is_none())
            .count()
    }

    /// Open sessions suspended while idle.
    pub fn suspended_count(&self) -> usize {
        lock(&self.map)
            .values()
            .filter(|e| e.ended().is_none() && lock(&e.state).suspended)
            .count()
    }

    /// Sessions open and suspended now, and opened since start.
    pub fn stats(&self) -> SessionStats {
        SessionStats {
            open: self.open_count() as u64,
            suspended: self.suspended_count() as u64,
            opened_total: self.counters.opened_total(),
        }
    }

    /// The manager's counters: refusals as at capacity and waits, by reason.
    pub fn counters(&self) -> &SessionCounters {
        &self.counters
    }

    fn lookup(&self, session_id: &str, principal: &str) -> Result<Arc<Entry>> {
        let fp = session_fingerprint(session_id);
        lock(&self.map)
            .get(&fp)
            .filter(|e| e.owner == principal)
            .cloned()
            .ok_or_else(not_found)
    }

    /// Ends a session in the background: waits for the call in progress, then
    /// closes the sandbox.
    fn end(entry: &Arc<Entry>, reason: SessionEnd, detail: &str) {
        if entry.mark_ended(reason, detail) {
            let turn = entry.turn.clone();
            tokio::spawn(async move {
                let mut slot = turn.lock_owned().await;
                release(&mut slot).await;
            });
        }
    }

    /// Opens a session for `caller`.
    pub async fn open(
        &self,
        caller: &Caller,
        req: &OpenSessionRequest,
    ) -> Result<OpenSessionResponse> {
        let phases = crate::phase::Phases::start();
        check_protocol(req.protocol)?;
        let floor =
            Floor::parse(&req.minimum_isolation).map_err(|e| Error::invalid(e.to_string()))?;
        if let Some(r) = &req.software_rule {
            r.validate()?;
        }
        let mut languages = Vec::new();
        for l in &req.languages {
            if l != "javascript" && l != "python" {
                return Err(Error::invalid(
                    "session languages are javascript and python",
                ));
            }
            if !languages.contains(l) {
                languages.push(l.clone());
            }
        }
        if !req.owner.is_empty() && !valid_trace_id(&req.owner) {
            return Err(Error::invalid(
                "owner must be 1 to 64 characters of [A-Za-z0-9._:-]",
            ));
        }
        let p = &self.pipeline;
        p.meets(p.proven(), floor)?;
        let env = self.environment()?;
        check_rule(req.software_rule.as_ref(), &env)?;
        let shorten = |asked: u32, default: Duration| {
            if asked == 0 {
                default
            } else {
                default.min(Duration::from_millis(u64::from(asked)))
            }
        };
        let lifetime = shorten(req.lifetime_ms, self.settings.lifetime);
        let idle = if self.settings.idle.is_zero() {
            Duration::ZERO
        } else {
            shorten(req.idle_timeout_ms, self.settings.idle)
        };
        let _opening = {
            let map = lock(&self.map);
            let open: Vec<&Arc<Entry>> = map.values().filter(|e| e.ended().is_none()).collect();
            let (opening, opening_mine) = self.opening.count(&caller.principal);
            if open.len() + opening >= self.settings.max_sessions as usize {
                self.counters.shed(SessionShed::SessionsFull);
                return Err(Error::new(
                    ErrorCode::AtCapacity,
                    "every session slot is taken",
                ));
            }
            let mine = open.iter().filter(|e| e.owner == caller.principal).count() + opening_mine;
            if self.settings.max_per_caller > 0 && mine >= self.settings.max_per_caller as usize {
                self.counters.shed(SessionShed::SessionsPerCaller);
                return Err(Error::new(
                    ErrorCode::AtCapacity,
                    "this caller has its limit of open sessions",
                ));
            }
            // Taken under the map's lock, with the check: see `opening`.
            self.opening.reserve(&caller.principal)
        };
        // Opening is charged like a run, and a session holds its slot while it runs.
        let permit = p.admission().admit(&caller.principal)?;
        phases.mark(crate::phase::Phase::Admitted);
        let id = hex::encode(rand::random::<[u8; 16]>());
        let fingerprint = session_fingerprint(&id);
        let spec = SandboxSpec {
            fingerprint: fingerprint.clone(),
            lifetime_ms: lifetime.as_millis() as u64,
            languages,
        };
        let sandbox: Arc<dyn SessionSandbox> = Arc::from(p.provider().open_session(&spec).await?);
        // Acquired: made (or taken from the warm pool) and its interpreters started.
        phases.acquired(sandbox.source());
        let now = Instant::now();
        let evidence = p.evidence(&env);
        let entry = Arc::new(Entry {
            source: sandbox.source(),
            fingerprint: fingerprint.clone(),
            owner: caller.principal.clone(),
            rule: req.software_rule.clone(),
            isolation: p.proven(),
            evidence: evidence.clone(),
            env,
            expires_at: now + lifetime,
            idle,
            state: Mutex::new(State {
                calls: 0,
                last: String::new(),
                ended: None,
                last_used: now,
                waiting: false,
                suspended: false,
            }),
            turn: Arc::new(tokio::sync::Mutex::new(Slot {
                sandbox: Some(sandbox),
                permit: Some(permit),
            })),
        });
        lock(&self.map).insert(fingerprint.clone(), entry);
        self.counters.opened();
        Ok(OpenSessionResponse {
            session_id: id,
            session: fingerprint,
            sandbox: evidence.sandbox,
            isolation: evidence.isolation,
            expires_unix_ms: unix_ms(SystemTime::now() + lifetime),
            idle_timeout_ms: idle.as_millis() as u32,
            software_identity: evidence.software_identity,
            phases: Some(phases.report()),
        })
    }

    /// Runs one call in a session.
    pub async fn run(
        &self,
        caller: &Caller,
        session_id: &str,
        mut request: Request,
        cancel: CancellationToken,
    ) -> Result<SessionRunResponse> {
        let phases = crate::phase::Phases::start();
        request.envelope.check_protocol()?;
        let entry = self.lookup(session_id, &caller.principal)?;
        let p = &self.pipeline;
        let floor = p.check(&mut request, Path::Session)?;
        if let Some(end) = entry.ended() {
            return Err(Error::session_ended(end.reason, end.detail));
        }
        p.meets(entry.isolation, floor)?;
        let carried = request.envelope.software_rule.as_ref();
        if SoftwareRule::intersect(entry.rule.as_ref(), carried)
            .map_or(true, |merged| rule_id(merged.as_ref()) != rule_id(carried))
        {
            return Err(Error::invalid(
                "a session call carries the session's software rule (intersected with its own)",
            ));
        }
        let profile = p.grant(&request.payload, &caller.principal, true)?;
        p.admission().charge(&caller.principal)?;
        let guard = self.take_turn(&entry, &cancel).await?;
        phases.mark(crate::phase::Phase::Admitted);
        self.call(caller, &entry, guard, request, profile, cancel, phases)
            .await
    }

    async fn take_turn(
        &self,
        entry: &Arc<Entry>,
        cancel: &CancellationToken,
    ) -> Result<OwnedMutexGuard<Slot>> {
        if let Ok(g) = entry.turn.clone().try_lock_owned() {
            return Ok(g);
        }
        {
            let mut s = lock(&entry.state);
            if s.waiting {
                self.counters.shed(SessionShed::SessionBusy);
                return Err(Error::new(
                    ErrorCode::AtCapacity,
                    "the session is busy: a call runs and another waits",
                ));
            }
            s.waiting = true;
        }
        self.counters.waited(Wait::SessionTurn);
        let got = tokio::select! {
            g = entry.turn.clone().lock_owned() => Some(g),
            _ = cancel.cancelled() => None,
        };
        lock(&entry.state).waiting = false;
        got.ok_or_else(|| {
            Error::new(
                ErrorCode::Cancelled,
                "gave up waiting for the session's turn",
            )
            .marked(Some(Refusal::Capacity))
        })
    }

    #[expect(
        clippy::too_many_arguments,
        reason = "one call's whole context: who, where, its turn, what, its grant, its cancel and its clock"
    )]
    async fn call(
        &self,
        caller: &Caller,
        entry: &Arc<Entry>,
        mut slot: OwnedMutexGuard<Slot>,
        request: Request,
        profile: Option<Arc<crate::grant::Profile>>,
        cancel: CancellationToken,
        phases: crate::phase::Phases,
    ) -> Result<SessionRunResponse> {
        if let Some(end) = entry.ended() {
            return Err(Error::session_ended(end.reason, end.detail));
        }
        let Some(sandbox) = slot.sandbox.clone() else {
            return Err(Error::session_ended(
                SessionEnd::Shutdown,
                "the session's sandbox is gone",
            ));
        };
        if lock(&entry.state).suspended {
            if slot.permit.is_none() {
                slot.permit = Some(self.pipeline.admission().hold(&caller.principal)?);
            }
            sandbox.resume().await?;
            lock(&entry.state).suspended = false;
        }
        if let Err(end) = sandbox.check().await {
            entry.mark_ended(end.reason, &end.detail);
            release(&mut slot).await;
            return Err(Error::session_ended(end.reason, end.detail));
        }
        let p = &self.pipeline;
        let timeout_ms = effective_timeout(request.envelope.timeout_ms, &entry.env);
        let timeout = Duration::from_millis(u64::from(timeout_ms)).min(
            entry
                .expires_at
                .saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1)),
        );
        // The session's sandbox, resumed and checked, is the call's.
        phases.acquired(entry.source);
        let paid = p.reserve_paid(&caller.principal, timeout)?;
        let ctx = p.context(timeout, profile, &caller.principal, cancel, phases.clone())?;
        let (output, started, elapsed) = p
            .dispatch(Target::Session(&*sandbox), &request.payload, &ctx)
            .await;
        if let Some(paid) = paid {
            paid.settle();
        }
        lock(&entry.state).last_used = Instant::now();
        // The chain counts every call that ran or may have run.
        let record = |output: Option<&_>, unanswered: &str| {
            let mut s = lock(&entry.state);
            let link = Link {
                session: entry.fingerprint.clone(),
                sequence: s.calls + 1,
                previous: s.last.clone(),
            };
            let r = p.stamp(
                &request,
                &entry.evidence,
                output,
                unanswered,
                started,
                elapsed,
                Some(link),
                false,
            );
            s.calls = r.sequence;
            s.last = r.record_sha256.clone();
            r
        };
        let answer = match output {
            Ok(output) => {
                let rec = record(Some(&output), "");
                Ok(RunResponse {
                    evidence: entry.evidence.clone(),
                    duration_ms: elapsed.as_millis() as i64,
                    record: Some(rec),
                    output: Some(output),
                    phases: Some(phases.report()),
                })
            }
            Err(e) if e.not_dispatched().is_some() => Err(e),
            Err(e) => {
                // It may have run: the chain counts it, and the caller gets its record.
                let rec = record(None, ConnectCode::for_error(e.code()).as_str());
                Err(e.with_unanswered(rec))
            }
        };
        if Instant::now() >= entry.expires_at {
            entry.mark_ended(SessionEnd::Expired, "the session's lifetime ran out");
        }
        // The cleanup runs after the answer goes back; the next call waits for it.
        let cleanup_entry = entry.clone();
        tokio::spawn(async move {
            let mut slot = slot;
            if cleanup_entry.ended().is_none()
                && let Err(end) = sandbox.cleanup().await
            {
                cleanup_entry.mark_ended(end.reason, &end.detail);
            }
            if cleanup_entry.ended().is_some() {
                release(&mut slot).await;
            }
        });
        let run = answer?;
        let (ended, end_detail) = entry
            .ended()
            .map(|e| (e.reason, e.detail))
            .unwrap_or((SessionEnd::Open, String::new()));
        Ok(SessionRunResponse {
            run: Some(run),
            ended,
            end_detail,
        })
    }

    /// Closes a session (waiting for a call in progress) and returns its chain's summary.
    pub async fn close(
        &self,
        caller: &Caller,
        protocol: u32,
        session_id: &str,
    ) -> Result<CloseSessionResponse> {
        check_protocol(protocol)?;
        let entry = self.lookup(session_id, &caller.principal)?;
        let mut slot = entry.turn.clone().lock_owned().await;
        entry.mark_ended(SessionEnd::Closed, "closed by its owner");
        release(&mut slot).await;
        let s = lock(&entry.state);
        let ended = s
            .ended
            .as_ref()
            .map_or(SessionEnd::Closed, |(e, _)| e.reason);
        Ok(CloseSessionResponse {
            session: entry.fingerprint.clone(),
            calls: s.calls,
            last_record_sha256: s.last.clone(),
            ended,
        })
    }

    /// Ends every session (daemon shutdown) and waits for their sandboxes to close.
    pub async fn shutdown(&self) {
        let entries: Vec<Arc<Entry>> = lock(&self.map).values().cloned().collect();
        for e in entries {
            e.mark_ended(SessionEnd::Shutdown, "the daemon shut down");
            let mut slot = e.turn.clone().lock_owned().await;
            release(&mut slot).await;
        }
    }

    /// One pass of housekeeping: expire, suspend the idle, forget long-ended sessions.
    pub async fn tick(&self) {
        let now = Instant::now();
        let entries: Vec<Arc<Entry>> = lock(&self.map).values().cloned().collect();
        for e in &entries {
            if e.ended().is_none() && now >= e.expires_at {
                Sessions::end(e, SessionEnd::Expired, "the session's lifetime ran out");
                continue;
            }
            let idle_due = {
                let s = lock(&e.state);
                !e.idle.is_zero()
                    && !s.suspended
                    && s.ended.is_none()
                    && now.duration_since(s.last_used) >= e.idle
            };
            if idle_due
                && let Ok(mut slot) = e.turn.clone().try_lock_owned()
                && let Some(sb) = slot.sandbox.clone()
            {
                match sb.suspend().await {
                    Ok(holds_memory) => {
                        lock(&e.state).suspended = true;
                        if !holds_memory {
                            slot.permit = None;
                        }
                    }
                    Err(err) => {
                        e.mark_ended(
                            SessionEnd::BoundaryFailed,
                            "the idle session could not be suspended",
                        );
                        tracing::warn!(error = err.message(), "session suspend failed");
                        release(&mut slot).await;
                    }
                }
            }
        }
        lock(&self.map).retain(|_, e| {
            lock(&e.state)
                .ended
                .as_ref()
                .is_none_or(|(_, at)| now.duration_since(*at) < KEEP_ENDED)
        });
    }

    /// Runs [`Sessions::tick`] every half second until the manager is dropped.
    pub fn spawn_housekeeping(self: &Arc<Sessions>) {
        let weak: Weak<Sessions> = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(500)).await;
                match weak.upgrade() {
                    Some(s) => s.tick().await,
                    None => return,
                }
            }
        });
    }
}

/// The protocol number sessions speak (re-exported for surfaces).
pub const SESSION_PROTOCOL: u32 = PROTOCOL;

mod opening;
#[cfg(test)]
mod tests;
