//! Observation points for an operator's metrics: what the core counts, with
//! no exposition format and no dependency. The daemon reads one
//! [`Snapshot`] per scrape ([`crate::engine::Engine::metrics`]) and encodes
//! it (plimsolld uses `prometheus-client`), so nothing is counted twice.
//!
//! Every label value here is one of a small fixed set ([`RunKind`],
//! [`RunOutcome`], [`Shed`](crate::admission::Shed), [`SessionShed`],
//! [`Wait`]): never a token, a body, a caller id or a session id.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::admission::Shed;
use crate::error::{ErrorCode, Result};
use crate::request::Payload;
use crate::result::{Output, ProjectOutcome};

/// The upper bounds, in seconds, of a run duration's buckets (a `+Inf`
/// bucket follows). They span a warm snippet (milliseconds) to the daemon's
/// 5-minute ceiling.
pub const DURATION_BUCKETS: [f64; 15] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// A fixed-bucket histogram of durations ([`DURATION_BUCKETS`]), lock-free.
#[derive(Debug, Default)]
pub struct DurationHistogram {
    /// Per bucket (not cumulative); the last is `+Inf`.
    counts: [AtomicU64; DURATION_BUCKETS.len() + 1],
    sum_nanos: AtomicU64,
}

/// A histogram read at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSnapshot {
    /// `(upper bound in seconds, observations at or below it)`, cumulative,
    /// one per [`DURATION_BUCKETS`] entry (the `+Inf` bucket is [`Self::count`]).
    pub buckets: Vec<(f64, u64)>,
    /// Every observation.
    pub count: u64,
    /// Their sum, in seconds.
    pub sum_seconds: f64,
}

impl DurationHistogram {
    /// Records one duration.
    pub fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        let i = DURATION_BUCKETS
            .iter()
            .position(|le| secs <= *le)
            .unwrap_or(DURATION_BUCKETS.len());
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// The buckets now, cumulative; the count is the `+Inf` bucket's by construction.
    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut running = 0;
        let mut buckets = Vec::with_capacity(DURATION_BUCKETS.len());
        for (le, n) in DURATION_BUCKETS.iter().zip(&self.counts) {
            running += n.load(Ordering::Relaxed);
            buckets.push((*le, running));
        }
        let count = running + self.counts[DURATION_BUCKETS.len()].load(Ordering::Relaxed);
        HistogramSnapshot {
            buckets,
            count,
            sum_seconds: self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9,
        }
    }
}

/// What ran, and on which path: the `kind` label of a run's duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunKind {
    /// A JavaScript snippet in a fresh sandbox.
    Snippet,
    /// A project in a fresh sandbox.
    Project,
    /// A module run.
    Module,
    /// A snippet in a session.
    SessionSnippet,
    /// A project in a session.
    SessionProject,
    /// A notebook cell (always in a session).
    Cell,
}

impl RunKind {
    /// Every kind, in label order.
    pub const ALL: [RunKind; 6] = [
        RunKind::Snippet,
        RunKind::Project,
        RunKind::Module,
        RunKind::SessionSnippet,
        RunKind::SessionProject,
        RunKind::Cell,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            RunKind::Snippet => "snippet",
            RunKind::Project => "project",
            RunKind::Module => "module",
            RunKind::SessionSnippet => "session_snippet",
            RunKind::SessionProject => "session_project",
            RunKind::Cell => "cell",
        }
    }

    /// The kind of `payload` on a fresh path or in a session.
    pub fn of(payload: &Payload, in_session: bool) -> RunKind {
        match (payload, in_session) {
            (Payload::JavaScript(_), false) => RunKind::Snippet,
            (Payload::JavaScript(_), true) => RunKind::SessionSnippet,
            (Payload::Project(_), false) => RunKind::Project,
            (Payload::Project(_), true) => RunKind::SessionProject,
            (Payload::Module(_), _) => RunKind::Module,
            (Payload::Cell(_), _) => RunKind::Cell,
        }
    }
}

/// How a dispatched run ended: the `outcome` label of its duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunOutcome {
    /// Answered, and the guest succeeded (exit 0, every step 0, module completed).
    Ok,
    /// Answered, and the guest failed: a non-zero exit, a raised cell, a
    /// failing step, a setup or runner failure.
    GuestFailed,
    /// Answered: the run's deadline ended it.
    TimedOut,
    /// Not answered: the caller gave up (cancelled or went away).
    Cancelled,
    /// Not answered: the provider refused it after dispatch, marked not dispatched.
    Refused,
    /// Not answered: an infrastructure error after dispatch
    /// (`plimsoll_runs_failed_total` counts the same runs).
    Error,
}

impl RunOutcome {
    /// Every outcome, in label order.
    pub const ALL: [RunOutcome; 6] = [
        RunOutcome::Ok,
        RunOutcome::GuestFailed,
        RunOutcome::TimedOut,
        RunOutcome::Cancelled,
        RunOutcome::Refused,
        RunOutcome::Error,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            RunOutcome::Ok => "ok",
            RunOutcome::GuestFailed => "guest_failed",
            RunOutcome::TimedOut => "timed_out",
            RunOutcome::Cancelled => "cancelled",
            RunOutcome::Refused => "refused",
            RunOutcome::Error => "error",
        }
    }

    /// Classifies a dispatch's result.
    pub fn of(output: &Result<Output>) -> RunOutcome {
        let answered = |timed_out: bool, failed: bool| match (timed_out, failed) {
            (true, _) => RunOutcome::TimedOut,
            (false, true) => RunOutcome::GuestFailed,
            (false, false) => RunOutcome::Ok,
        };
        let concluded = |outcome: ProjectOutcome, failed: bool| match outcome {
            ProjectOutcome::TimedOut => RunOutcome::TimedOut,
            ProjectOutcome::Completed if !failed => RunOutcome::Ok,
            _ => RunOutcome::GuestFailed,
        };
        match output {
            Ok(Output::JavaScript(r)) => answered(r.timed_out, r.exit_code != 0),
            Ok(Output::Cell(r)) => answered(r.timed_out, r.exit_code != 0),
            Ok(Output::Project(r)) => concluded(
                r.outcome,
                r.steps.iter().any(|s| s.exit_code != 0 || s.timed_out),
            ),
            Ok(Output::Module(r)) => concluded(r.outcome, false),
            Err(e) if e.not_dispatched().is_some() => RunOutcome::Refused,
            Err(e) if e.code() == ErrorCode::Cancelled => RunOutcome::Cancelled,
            Err(_) => RunOutcome::Error,
        }
    }
}

/// A snapshot of the engine's counters (`Engine::stats`).
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

/// Run durations by kind and outcome (the tier is the engine's own).
#[derive(Debug, Default)]
pub struct RunDurations {
    by: [[DurationHistogram; RunOutcome::ALL.len()]; RunKind::ALL.len()],
}

impl RunDurations {
    /// Records one dispatched run.
    pub fn observe(&self, kind: RunKind, outcome: RunOutcome, elapsed: Duration) {
        let k = RunKind::ALL.iter().position(|x| *x == kind).unwrap_or(0);
        let o = RunOutcome::ALL
            .iter()
            .position(|x| *x == outcome)
            .unwrap_or(0);
        self.by[k][o].observe(elapsed);
    }

    /// Every `(kind, outcome)` pair, each with its histogram (zero ones included,
    /// so a rate over them is defined from the first scrape).
    pub fn snapshot(&self) -> Vec<(RunKind, RunOutcome, HistogramSnapshot)> {
        let mut out = Vec::with_capacity(RunKind::ALL.len() * RunOutcome::ALL.len());
        for (k, row) in RunKind::ALL.iter().zip(&self.by) {
            for (o, h) in RunOutcome::ALL.iter().zip(row) {
                out.push((*k, *o, h.snapshot()));
            }
        }
        out
    }
}

/// Dispatched runs' phase durations, by phase (the tier is the engine's own).
#[derive(Debug, Default)]
pub struct PhaseDurations {
    by: [DurationHistogram; crate::phase::Phase::ALL.len()],
}

impl PhaseDurations {
    /// Records every mark of one run.
    pub fn observe(&self, phases: &crate::phase::Phases) {
        for (phase, took) in phases.marks() {
            let i = crate::phase::Phase::ALL
                .iter()
                .position(|p| *p == phase)
                .unwrap_or(0);
            self.by[i].observe(took);
        }
    }

    /// Every phase with its histogram.
    pub fn snapshot(&self) -> Vec<(crate::phase::Phase, HistogramSnapshot)> {
        crate::phase::Phase::ALL
            .iter()
            .zip(&self.by)
            .map(|(p, h)| (*p, h.snapshot()))
            .collect()
    }
}

/// Why a session call or open was refused as at capacity by the session
/// manager (admission's own sheds are [`crate::admission::Shed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SessionShed {
    /// Every session slot (`SANDBOX_MAX_SESSIONS`) is taken.
    SessionsFull,
    /// The caller has its limit of open sessions.
    SessionsPerCaller,
    /// The session runs a call and another already waits.
    SessionBusy,
}

impl SessionShed {
    /// Every reason, in label order.
    pub const ALL: [SessionShed; 3] = [
        SessionShed::SessionsFull,
        SessionShed::SessionsPerCaller,
        SessionShed::SessionBusy,
    ];

    /// The label value (shares `plimsoll_shed_total`'s `reason` label).
    pub fn as_str(self) -> &'static str {
        match self {
            SessionShed::SessionsFull => "sessions_full",
            SessionShed::SessionsPerCaller => "sessions_per_caller",
            SessionShed::SessionBusy => "session_busy",
        }
    }
}

/// Why a call waited before it ran. Admission never queues a run; the one
/// wait there is is a session call waiting for the call ahead of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Wait {
    /// A session call waited for the session's turn.
    SessionTurn,
}

impl Wait {
    /// Every reason, in label order.
    pub const ALL: [Wait; 1] = [Wait::SessionTurn];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Wait::SessionTurn => "session_turn",
        }
    }
}

/// Counters the session manager keeps.
#[derive(Debug, Default)]
pub struct SessionCounters {
    opened: AtomicU64,
    shed: [AtomicU64; SessionShed::ALL.len()],
    waits: [AtomicU64; Wait::ALL.len()],
}

impl SessionCounters {
    pub(crate) fn opened(&self) {
        self.opened.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn shed(&self, why: SessionShed) {
        let i = SessionShed::ALL.iter().position(|x| *x == why).unwrap_or(0);
        self.shed[i].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn waited(&self, why: Wait) {
        let i = Wait::ALL.iter().position(|x| *x == why).unwrap_or(0);
        self.waits[i].fetch_add(1, Ordering::Relaxed);
    }

    /// Sessions opened since start.
    pub fn opened_total(&self) -> u64 {
        self.opened.load(Ordering::Relaxed)
    }

    /// Refusals by reason since start.
    pub fn shed_counts(&self) -> Vec<(SessionShed, u64)> {
        SessionShed::ALL
            .iter()
            .zip(&self.shed)
            .map(|(w, n)| (*w, n.load(Ordering::Relaxed)))
            .collect()
    }

    /// Waits by reason since start.
    pub fn wait_counts(&self) -> Vec<(Wait, u64)> {
        Wait::ALL
            .iter()
            .zip(&self.waits)
            .map(|(w, n)| (*w, n.load(Ordering::Relaxed)))
            .collect()
    }
}

/// A provider's warm pool (of session sandboxes, or of snippet sandboxes),
/// read at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PoolStats {
    /// The configured size (`SANDBOX_SESSION_POOL`, `SANDBOX_SNIPPET_POOL`).
    pub target: u64,
    /// Members ready now.
    pub ready: u64,
    /// Members being made now.
    pub filling: u64,
    /// Members that could not be made, since start.
    pub refill_failures: u64,
}

/// Sessions, read at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SessionStats {
    /// Sessions not ended.
    pub open: u64,
    /// Of those, suspended while idle.
    pub suspended: u64,
    /// Sessions opened since start.
    pub opened_total: u64,
}

/// Everything an operator's metrics show, read at one scrape.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The provider's id.
    pub provider: &'static str,
    /// The proven tier (the `tier` label).
    pub tier: &'static str,
    /// The counters of [`Stats`].
    pub stats: Stats,
    /// Run durations by kind and outcome.
    pub durations: Vec<(RunKind, RunOutcome, HistogramSnapshot)>,
    /// Run phase durations by phase.
    pub phases: Vec<(crate::phase::Phase, HistogramSnapshot)>,
    /// The session manager's refusals as at capacity, by reason.
    pub session_shed: Vec<(SessionShed, u64)>,
    /// Runs shed for want of paid seconds, by reason (zero when no
    /// allowance applies).
    pub paid_shed: Vec<(crate::paid::Short, u64)>,
    /// Waits by reason.
    pub waits: Vec<(Wait, u64)>,
    /// Sessions now.
    pub sessions: SessionStats,
    /// The warm session pool, zero when the provider keeps none.
    pub pool: PoolStats,
    /// The warm snippet pool, zero when the provider keeps none.
    pub snippet_pool: PoolStats,
    /// Whether the provider's last readiness check passed (`None` before one ran).
    pub ready: Option<bool>,
    /// Brokered calls: `(profile, method, route pattern, status class) → calls`.
    pub broker_calls: Vec<((String, String, String, String), u64)>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::result::{CellResult, JavaScriptResult, ProjectResult, StepResult};

    #[test]
    fn buckets_are_cumulative_and_inf_is_the_count() {
        let h = DurationHistogram::default();
        for ms in [1, 4, 7, 30, 600, 700_000] {
            h.observe(Duration::from_millis(ms));
        }
        let s = h.snapshot();
        assert_eq!(s.count, 6);
        assert_eq!(s.buckets.len(), DURATION_BUCKETS.len());
        assert_eq!(s.buckets[0], (0.005, 2)); // 1 ms, 4 ms
        assert_eq!(s.buckets[1], (0.01, 3)); // + 7 ms
        assert_eq!(s.buckets[3], (0.05, 4)); // + 30 ms
        assert_eq!(s.buckets[7], (1.0, 5)); // + 600 ms
        // 700 s is past every bound: only +Inf (the count) holds it.
        assert_eq!(s.buckets.last().unwrap().1, 5);
        assert!(s.buckets.windows(2).all(|w| w[0].1 <= w[1].1));
        assert!((s.sum_seconds - 700.642).abs() < 1e-6, "{}", s.sum_seconds);
    }

    #[test]
    fn outcomes_classify_answers_and_errors() {
        let js = |exit_code, timed_out| {
            Ok(Output::JavaScript(JavaScriptResult {
                exit_code,
                timed_out,
                ..JavaScriptResult::default()
            }))
        };
        assert_eq!(RunOutcome::of(&js(0, false)), RunOutcome::Ok);
        assert_eq!(RunOutcome::of(&js(1, false)), RunOutcome::GuestFailed);
        assert_eq!(RunOutcome::of(&js(124, true)), RunOutcome::TimedOut);
        let cell = Ok(Output::Cell(CellResult {
            exit_code: 1,
            ..CellResult::default()
        }));
        assert_eq!(RunOutcome::of(&cell), RunOutcome::GuestFailed);
        let project = |outcome, exit_code| {
            Ok(Output::Project(ProjectResult {
                outcome,
                steps: vec![StepResult {
                    exit_code,
                    ..StepResult::default()
                }],
                ..ProjectResult::default()
            }))
        };
        assert_eq!(
            RunOutcome::of(&project(ProjectOutcome::Completed, 0)),
            RunOutcome::Ok
        );
        assert_eq!(
            RunOutcome::of(&project(ProjectOutcome::Completed, 2)),
            RunOutcome::GuestFailed
        );
        assert_eq!(
            RunOutcome::of(&project(ProjectOutcome::TimedOut, 0)),
            RunOutcome::TimedOut
        );
        assert_eq!(
            RunOutcome::of(&Err(Error::new(ErrorCode::Infrastructure, "x"))),
            RunOutcome::Error
        );
        assert_eq!(
            RunOutcome::of(&Err(Error::new(ErrorCode::Cancelled, "x"))),
            RunOutcome::Cancelled
        );
        assert_eq!(
            RunOutcome::of(&Err(Error::invalid("x"))),
            RunOutcome::Refused
        );
    }

    #[test]
    fn durations_list_every_pair_and_count_where_observed() {
        let d = RunDurations::default();
        d.observe(RunKind::Cell, RunOutcome::TimedOut, Duration::from_secs(2));
        let s = d.snapshot();
        assert_eq!(s.len(), RunKind::ALL.len() * RunOutcome::ALL.len());
        let counted: Vec<_> = s.iter().filter(|(_, _, h)| h.count > 0).collect();
        assert_eq!(counted.len(), 1);
        assert_eq!(
            (counted[0].0, counted[0].1),
            (RunKind::Cell, RunOutcome::TimedOut)
        );
        assert_eq!(counted[0].2.buckets[8], (2.5, 1));
    }

    #[test]
    fn label_values_are_distinct_and_lowercase() {
        let mut all: Vec<&str> = RunKind::ALL.iter().map(|k| k.as_str()).collect();
        all.extend(RunOutcome::ALL.iter().map(|o| o.as_str()));
        for v in &all {
            assert!(
                v.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{v}"
            );
        }
        let mut kinds: Vec<&str> = RunKind::ALL.iter().map(|k| k.as_str()).collect();
        kinds.dedup();
        assert_eq!(kinds.len(), RunKind::ALL.len());
    }
}
