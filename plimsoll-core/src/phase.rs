//! Where a run's time went: the phases it passed, each with its monotonic
//! duration.
//!
//! The entry point starts a run's [`Phases`] when the request arrives and
//! marks [`Phase::Admitted`] once admission lets it in; the provider marks the
//! phases it passes through the handle in its [`crate::provider::RunContext`]:
//! [`Phase::Acquired`] with the sandbox's [`Source`], then
//! [`Phase::Started`], [`Phase::Running`], [`Phase::Collected`] and
//! [`Phase::CleanedUp`]. A phase's duration runs from the previous mark to
//! its own. What a provider does not break down is marked
//! [`Phase::Running`] when the dispatch returns ([`Phases::finish`]).
//!
//! The answer carries the marks ([`PhaseReport`], a field older clients
//! ignore), the audit line names them, and `plimsoll_run_phase_seconds`
//! observes each by tier and phase.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A phase of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// From the request's arrival to admission letting it in (checks, the
    /// grant, the admission permit).
    Admitted,
    /// A sandbox is the run's: created, taken from a pool, or the session's.
    Acquired,
    /// The guest's process or instance exists and has its code.
    Started,
    /// The guest ran, to its exit, deadline or cancellation.
    Running,
    /// Its output and artifacts are read.
    Collected,
    /// Its sandbox is gone (only what happens before the answer).
    CleanedUp,
}

impl Phase {
    /// Every phase, in order.
    pub const ALL: [Phase; 6] = [
        Phase::Admitted,
        Phase::Acquired,
        Phase::Started,
        Phase::Running,
        Phase::Collected,
        Phase::CleanedUp,
    ];

    /// The label value (`admitted`, `acquired`, …, `cleaned_up`).
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Admitted => "admitted",
            Phase::Acquired => "acquired",
            Phase::Started => "started",
            Phase::Running => "running",
            Phase::Collected => "collected",
            Phase::CleanedUp => "cleaned_up",
        }
    }
}

/// Where a run's sandbox came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Made for this run (a container created, a wasm instance from the snapshot).
    Fresh,
    /// A member of the warm snippet pool.
    SnippetPool,
    /// A session's sandbox, taken from the warm session pool when it opened.
    SessionPool,
    /// A session's sandbox made when it opened.
    Session,
}

impl Source {
    /// `fresh`, `snippet_pool`, `session_pool` or `session`.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Fresh => "fresh",
            Source::SnippetPool => "snippet_pool",
            Source::SessionPool => "session_pool",
            Source::Session => "session",
        }
    }
}

#[derive(Debug)]
struct State {
    last: Instant,
    marks: Vec<(Phase, Duration)>,
    source: Option<Source>,
}

/// A run's phase marks; cloning shares them (the provider marks through a
/// clone in its run context).
#[derive(Debug, Clone)]
pub struct Phases(Arc<Mutex<State>>);

impl Default for Phases {
    fn default() -> Phases {
        Phases::start()
    }
}

impl Phases {
    /// Marks start now.
    pub fn start() -> Phases {
        Phases(Arc::new(Mutex::new(State {
            last: Instant::now(),
            marks: Vec::with_capacity(Phase::ALL.len()),
            source: None,
        })))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `phase` ended now: its duration is the time since the previous mark.
    pub fn mark(&self, phase: Phase) {
        let now = Instant::now();
        let mut s = self.state();
        let took = now.saturating_duration_since(s.last);
        s.last = now;
        s.marks.push((phase, took));
    }

    /// The sandbox is the run's, from `source`.
    pub fn acquired(&self, source: Source) {
        self.state().source = Some(source);
        self.mark(Phase::Acquired);
    }

    /// The dispatch returned: the time since the last mark is `running` when
    /// the provider marked nothing past acquiring its sandbox.
    pub fn finish(&self) {
        let unmarked = matches!(
            self.state().marks.last(),
            None | Some((Phase::Admitted | Phase::Acquired, _))
        );
        if unmarked {
            self.mark(Phase::Running);
        }
    }

    /// The marks so far, in order.
    pub fn marks(&self) -> Vec<(Phase, Duration)> {
        self.state().marks.clone()
    }

    /// The marks as the answer carries them.
    pub fn report(&self) -> PhaseReport {
        let s = self.state();
        PhaseReport {
            source: s.source.map(|x| x.as_str().to_owned()).unwrap_or_default(),
            phases: s
                .marks
                .iter()
                .map(|(p, d)| PhaseTime {
                    phase: p.as_str().to_owned(),
                    ms: d.as_secs_f64() * 1000.0,
                })
                .collect(),
        }
    }
}

/// A run's phases on the wire: `{"source":"fresh","phases":[{"phase":
/// "admitted","ms":0.04},…]}` (plimsoll's addition to RunResponse; clients
/// that predate it ignore the field).
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct PhaseReport {
    /// Where the sandbox came from ([`Source::as_str`]), or empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub source: String,
    /// Each phase with its duration, in order.
    pub phases: Vec<PhaseTime>,
}

/// One phase and its duration.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct PhaseTime {
    /// [`Phase::as_str`].
    pub phase: String,
    /// Milliseconds, monotonic.
    pub ms: f64,
}

impl PhaseReport {
    /// `admitted=0.04ms acquired=1.20ms(fresh) …`, for the audit line.
    pub fn line(&self) -> String {
        self.phases
            .iter()
            .map(|p| {
                if p.phase == "acquired" && !self.source.is_empty() {
                    format!("{}={:.2}ms({})", p.phase, p.ms, self.source)
                } else {
                    format!("{}={:.2}ms", p.phase, p.ms)
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Each phase's median over `reports`, in the order phases first appear
/// (`admitted 0.012 ms, acquired 0.031 ms (fresh), …`): the breakdown the
/// benchmarks print and docs/performance.md quotes.
pub fn medians(reports: &[PhaseReport]) -> String {
    let mut order: Vec<&str> = Vec::new();
    for r in reports {
        for p in &r.phases {
            if !order.contains(&p.phase.as_str()) {
                order.push(&p.phase);
            }
        }
    }
    let mut sources: Vec<&str> = reports.iter().map(|r| r.source.as_str()).collect();
    sources.sort_unstable();
    sources.dedup();
    order
        .iter()
        .map(|name| {
            let mut v: Vec<f64> = reports
                .iter()
                .flat_map(|r| r.phases.iter().filter(|p| p.phase == *name).map(|p| p.ms))
                .collect();
            v.sort_by(f64::total_cmp);
            let median = v.get(v.len() / 2).copied().unwrap_or(0.0);
            if *name == "acquired" {
                format!("{name} {median:.3} ms ({})", sources.join("/"))
            } else {
                format!("{name} {median:.3} ms")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_phase_runs_from_the_previous_mark() {
        let p = Phases::start();
        std::thread::sleep(Duration::from_millis(5));
        p.mark(Phase::Admitted);
        p.acquired(Source::SnippetPool);
        std::thread::sleep(Duration::from_millis(5));
        p.mark(Phase::Running);
        p.finish();
        let marks = p.marks();
        let names: Vec<Phase> = marks.iter().map(|(x, _)| *x).collect();
        assert_eq!(names, [Phase::Admitted, Phase::Acquired, Phase::Running]);
        assert!(marks[0].1 >= Duration::from_millis(5));
        assert!(marks[1].1 < Duration::from_millis(5));
        assert!(marks[2].1 >= Duration::from_millis(5));
        let r = p.report();
        assert_eq!(r.source, "snippet_pool");
        assert!(r.line().contains("acquired="), "{}", r.line());
        assert!(r.line().contains("ms(snippet_pool)"), "{}", r.line());
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["phases"][0]["phase"], "admitted");
        assert!(json["phases"][0]["ms"].as_f64().unwrap() >= 5.0);
    }

    #[test]
    fn medians_are_per_phase() {
        let r = |ms: [f64; 2]| PhaseReport {
            source: "fresh".into(),
            phases: vec![
                PhaseTime {
                    phase: "admitted".into(),
                    ms: ms[0],
                },
                PhaseTime {
                    phase: "acquired".into(),
                    ms: ms[1],
                },
            ],
        };
        let m = medians(&[r([1.0, 10.0]), r([3.0, 30.0]), r([2.0, 20.0])]);
        assert_eq!(m, "admitted 2.000 ms, acquired 20.000 ms (fresh)");
        assert_eq!(medians(&[]), "");
    }

    #[test]
    fn an_unmarked_dispatch_is_running() {
        let p = Phases::start();
        p.mark(Phase::Admitted);
        p.finish();
        let names: Vec<Phase> = p.marks().iter().map(|(x, _)| *x).collect();
        assert_eq!(names, [Phase::Admitted, Phase::Running]);
        let labels: Vec<&str> = Phase::ALL.iter().map(|p| p.as_str()).collect();
        assert!(
            labels
                .iter()
                .all(|l| l.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
        );
    }
}
