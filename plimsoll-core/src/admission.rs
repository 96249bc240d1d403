//! Admission: run slots, a memory budget, per-caller caps and a rate limit.
//! Past any limit a run is shed at once — refused as at capacity, not
//! dispatched — never queued.
//!
//! Runs in progress at once are at most `min(max_concurrent, total_memory /
//! per_run_memory)`. Each caller also has its own cap on runs in progress and a
//! token bucket that allows short bursts and refills steadily. A [`Permit`]
//! holds a slot and gives it back when dropped, so every path out — a result,
//! a later refusal, an error, a cancelled or dropped future, a panic — releases it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::env::{ConfigError, Env};
use crate::error::{Error, ErrorCode, Result};

/// Admission limits, as configured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// `SANDBOX_MAX_CONCURRENT`: runs in progress at once (1..=1024).
    pub max_concurrent: u32,
    /// `SANDBOX_TOTAL_MEMORY_MB` with `SANDBOX_MEMORY_MB`: the memory budget
    /// left to runs (the warm pools' share taken out, see [`Limits::reserve`])
    /// and one run's allowance, or `None` (no budget, or the provider's
    /// sandboxes run elsewhere).
    pub memory: Option<(u32, u32)>,
    /// `SANDBOX_PER_KEY_CONCURRENT`: runs in progress per caller (0 = no per-caller cap).
    pub per_key_concurrent: u32,
    /// `SANDBOX_RATE_PER_MIN`: the bucket's refill per minute (0 = no rate limit).
    pub rate_per_min: u32,
    /// `SANDBOX_RATE_BURST`: the bucket's capacity.
    pub rate_burst: u32,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_concurrent: 8,
            memory: None,
            per_key_concurrent: 4,
            rate_per_min: 30,
            rate_burst: 30,
        }
    }
}

impl Limits {
    /// Reads the admission variables strictly. `per_run_memory_mb` is the
    /// provider's per-run memory (explicit `SANDBOX_MEMORY_MB`), required with a budget.
    pub fn from_env(
        env: &Env<'_>,
        per_run_memory_mb: Option<u32>,
    ) -> std::result::Result<Limits, ConfigError> {
        let max_concurrent = env.u32("SANDBOX_MAX_CONCURRENT")?.unwrap_or(8);
        if !(1..=1024).contains(&max_concurrent) {
            return Err(ConfigError::new(
                "SANDBOX_MAX_CONCURRENT",
                "must be from 1 to 1024",
            ));
        }
        let memory = match (env.u32("SANDBOX_TOTAL_MEMORY_MB")?, per_run_memory_mb) {
            (None, _) => None,
            (Some(_), None) => {
                return Err(ConfigError::new(
                    "SANDBOX_MEMORY_MB",
                    "SANDBOX_TOTAL_MEMORY_MB and SANDBOX_MEMORY_MB are set together or not at all",
                ));
            }
            (Some(0), Some(_)) => {
                return Err(ConfigError::new(
                    "SANDBOX_TOTAL_MEMORY_MB",
                    "must be positive",
                ));
            }
            (Some(_), Some(0)) => {
                return Err(ConfigError::new(
                    "SANDBOX_MEMORY_MB",
                    "must be positive with a memory budget",
                ));
            }
            (Some(total), Some(per_run)) if per_run > total => {
                return Err(ConfigError::new(
                    "SANDBOX_TOTAL_MEMORY_MB",
                    format!(
                        "one run needs {per_run} MiB (SANDBOX_MEMORY_MB), more than the whole budget of {total} MiB: no run could ever start"
                    ),
                ));
            }
            (Some(total), Some(per_run)) => Some((total, per_run)),
        };
        let per_key_concurrent = env
            .u32("SANDBOX_PER_KEY_CONCURRENT")?
            .unwrap_or((max_concurrent / 2).max(1));
        if per_key_concurrent > max_concurrent {
            return Err(ConfigError::new(
                "SANDBOX_PER_KEY_CONCURRENT",
                format!("must not exceed SANDBOX_MAX_CONCURRENT ({max_concurrent})"),
            ));
        }
        let rate_per_min = env.u32("SANDBOX_RATE_PER_MIN")?.unwrap_or(30);
        let rate_burst = match (env.u32("SANDBOX_RATE_BURST")?, rate_per_min) {
            (Some(_), 0) => {
                return Err(ConfigError::new(
                    "SANDBOX_RATE_BURST",
                    "is set but SANDBOX_RATE_PER_MIN is 0 (no rate limit)",
                ));
            }
            (Some(0), _) => return Err(ConfigError::new("SANDBOX_RATE_BURST", "must be positive")),
            (Some(b), _) => b,
            (None, rate) => rate,
        };
        Ok(Limits {
            max_concurrent,
            memory,
            per_key_concurrent,
            rate_per_min,
            rate_burst,
        })
    }

    /// Runs in progress at once: the run cap, or the number of allowances that
    /// fit the memory budget, whichever is smaller.
    pub fn capacity(&self) -> u32 {
        match self.memory {
            Some((total, per_run)) => self.max_concurrent.min(total / per_run.max(1)),
            None => self.max_concurrent,
        }
    }

    /// The same limits with `waiting` warm sandboxes (members of the
    /// providers' pools, `SANDBOX_SESSION_POOL` and `SANDBOX_SNIPPET_POOL`)
    /// holding one run's memory each: the budget left to runs shrinks by
    /// that much, and a budget left without room for one run is refused.
    /// Without a memory budget nothing changes.
    pub fn reserve(self, waiting: u32) -> std::result::Result<Limits, ConfigError> {
        let Some((total, per_run)) = self.memory else {
            return Ok(self);
        };
        let held = u64::from(waiting) * u64::from(per_run);
        let left = u64::from(total).saturating_sub(held);
        if left < u64::from(per_run) {
            return Err(ConfigError::new(
                "SANDBOX_TOTAL_MEMORY_MB",
                format!(
                    "the warm pools' {waiting} waiting sandboxes (SANDBOX_SESSION_POOL + SANDBOX_SNIPPET_POOL) hold {held} MiB at {per_run} MiB each, leaving less than one run's {per_run} MiB of the {total} MiB budget"
                ),
            ));
        }
        Ok(Limits {
            memory: Some((left as u32, per_run)),
            ..self
        })
    }

    /// The same limits without a memory budget (for providers whose sandboxes run elsewhere).
    pub fn without_memory_budget(self) -> Limits {
        Limits {
            memory: None,
            ..self
        }
    }
}

/// Why a run was shed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shed {
    /// Every slot (or the memory budget) is taken.
    AtCapacity,
    /// The caller has its own cap's worth of runs in progress.
    PerKey,
    /// The caller's bucket is empty.
    Rate,
}

impl Shed {
    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Shed::AtCapacity => "at_capacity",
            Shed::PerKey => "per_key",
            Shed::Rate => "rate",
        }
    }
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

#[derive(Debug, Default)]
struct State {
    in_flight: u32,
    per_key: HashMap<String, u32>,
    buckets: HashMap<String, Bucket>,
    shed: [u64; 3],
    last_sweep: Option<Instant>,
}

/// The admission controller; cheap to clone (shared state).
#[derive(Debug, Clone)]
pub struct Admission {
    limits: Limits,
    state: Arc<Mutex<State>>,
}

/// A held run slot. Dropping it gives the slot back.
#[derive(Debug)]
pub struct Permit {
    state: Arc<Mutex<State>>,
    principal: String,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut s = lock(&self.state);
        s.in_flight = s.in_flight.saturating_sub(1);
        if let Some(n) = s.per_key.get_mut(&self.principal) {
            *n -= 1;
            if *n == 0 {
                s.per_key.remove(&self.principal);
            }
        }
    }
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    // A panic while holding the lock cannot leave the counters half-updated
    // (every update is a single statement), so a poisoned lock is still sound.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

const IDLE_BUCKET: Duration = Duration::from_secs(120);

impl Admission {
    /// A controller enforcing `limits`.
    pub fn new(limits: Limits) -> Admission {
        Admission {
            limits,
            state: Arc::new(Mutex::new(State::default())),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Admits one run for `principal`, charging its rate bucket, or sheds it.
    pub fn admit(&self, principal: &str) -> Result<Permit> {
        self.take(principal, true)
    }

    /// Holds a slot without charging the rate (a session that is running).
    pub fn hold(&self, principal: &str) -> Result<Permit> {
        self.take(principal, false)
    }

    /// Charges one call to the caller's rate bucket (each session call).
    pub fn charge(&self, principal: &str) -> Result<()> {
        let mut s = lock(&self.state);
        let now = Instant::now();
        self.refill_and_check(&mut s, principal, now)?;
        Self::spend(&mut s, principal);
        Ok(())
    }

    fn take(&self, principal: &str, charge: bool) -> Result<Permit> {
        let mut s = lock(&self.state);
        let now = Instant::now();
        self.sweep(&mut s, now);
        if s.in_flight >= self.limits.capacity() {
            return Err(Self::shed(
                &mut s,
                Shed::AtCapacity,
                "every run slot is busy",
            ));
        }
        let mine = s.per_key.get(principal).copied().unwrap_or(0);
        if self.limits.per_key_concurrent > 0 && mine >= self.limits.per_key_concurrent {
            return Err(Self::shed(
                &mut s,
                Shed::PerKey,
                "this caller has its limit of runs in progress",
            ));
        }
        if charge {
            self.refill_and_check(&mut s, principal, now)?;
            Self::spend(&mut s, principal);
        }
        s.in_flight += 1;
        *s.per_key.entry(principal.to_owned()).or_insert(0) += 1;
        Ok(Permit {
            state: self.state.clone(),
            principal: principal.to_owned(),
        })
    }

    fn refill_and_check(&self, s: &mut State, principal: &str, now: Instant) -> Result<()> {
        if self.limits.rate_per_min == 0 {
            return Ok(());
        }
        let burst = self.limits.rate_burst as f64;
        let per_sec = self.limits.rate_per_min as f64 / 60.0;
        let b = s.buckets.entry(principal.to_owned()).or_insert(Bucket {
            tokens: burst,
            at: now,
        });
        b.tokens = (b.tokens + now.duration_since(b.at).as_secs_f64() * per_sec).min(burst);
        b.at = now;
        if b.tokens < 1.0 {
            return Err(Self::shed(
                s,
                Shed::Rate,
                "this caller's rate limit is spent; retry after a short wait",
            ));
        }
        Ok(())
    }

    fn spend(s: &mut State, principal: &str) {
        if let Some(b) = s.buckets.get_mut(principal) {
            b.tokens -= 1.0;
        }
    }

    fn shed(s: &mut State, why: Shed, message: &str) -> Error {
        s.shed[why as usize] += 1;
        Error::new(ErrorCode::AtCapacity, message)
    }

    /// Forgets full buckets idle for two minutes (they would refill to full anyway).
    fn sweep(&self, s: &mut State, now: Instant) {
        if s.last_sweep
            .is_some_and(|t| now.duration_since(t) < IDLE_BUCKET)
        {
            return;
        }
        s.last_sweep = Some(now);
        let burst = self.limits.rate_burst as f64;
        let per_sec = self.limits.rate_per_min as f64 / 60.0;
        s.buckets.retain(|_, b| {
            let idle = now.duration_since(b.at);
            idle < IDLE_BUCKET || b.tokens + idle.as_secs_f64() * per_sec < burst
        });
    }

    /// Runs in progress now.
    pub fn in_flight(&self) -> u32 {
        lock(&self.state).in_flight
    }

    /// Runs shed so far, by reason.
    pub fn shed_counts(&self) -> [(Shed, u64); 3] {
        let s = lock(&self.state);
        [
            (Shed::AtCapacity, s.shed[0]),
            (Shed::PerKey, s.shed[1]),
            (Shed::Rate, s.shed[2]),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max: u32, memory: Option<(u32, u32)>, per_key: u32, rate: u32, burst: u32) -> Limits {
        Limits {
            max_concurrent: max,
            memory,
            per_key_concurrent: per_key,
            rate_per_min: rate,
            rate_burst: burst,
        }
    }

    #[test]
    fn the_smaller_of_two_numbers() {
        let a = Admission::new(limits(8, Some((1024, 256)), 0, 0, 0));
        let permits: Vec<_> = (0..12).filter_map(|_| a.admit("k").ok()).collect();
        assert_eq!(permits.len(), 4);
        assert_eq!(a.shed_counts()[0], (Shed::AtCapacity, 8));
        drop(permits);
        assert_eq!(a.in_flight(), 0);
        let a = Admission::new(limits(8, None, 0, 0, 0));
        let permits: Vec<_> = (0..12).filter_map(|_| a.admit("k").ok()).collect();
        assert_eq!(permits.len(), 8);
    }

    #[test]
    fn per_caller_cap_and_rate() {
        let a = Admission::new(limits(8, None, 2, 0, 0));
        let alice: Vec<_> = (0..5).filter_map(|_| a.admit("alice").ok()).collect();
        let bob: Vec<_> = (0..5).filter_map(|_| a.admit("bob").ok()).collect();
        assert_eq!((alice.len(), bob.len()), (2, 2));
        assert_eq!(a.shed_counts()[1], (Shed::PerKey, 6));
        drop(alice);
        assert!(a.admit("alice").is_ok());

        let a = Admission::new(limits(8, None, 0, 60, 3));
        let ok = (0..5).filter(|_| a.admit("alice").is_ok()).count();
        assert_eq!(ok, 3, "a burst of three, then the bucket is empty");
        assert!(a.admit("bob").is_ok(), "buckets are per caller");
        let e = a.admit("alice").unwrap_err();
        assert_eq!(
            (e.code(), e.not_dispatched()),
            (ErrorCode::AtCapacity, Some(crate::Refusal::Capacity))
        );
        // Refill: one token per second at 60/min.
        std::thread::sleep(Duration::from_millis(1100));
        assert!(a.admit("alice").is_ok());
        assert!(a.charge("bob").is_ok());
    }

    #[test]
    fn hold_does_not_charge_the_rate() {
        let a = Admission::new(limits(8, None, 0, 60, 1));
        let _h = a.hold("s").unwrap();
        let _h2 = a.hold("s").unwrap();
        assert!(a.charge("s").is_ok());
        assert!(a.charge("s").is_err());
        assert_eq!(a.in_flight(), 2);
    }

    #[test]
    fn a_panic_releases_the_slot() {
        let a = Admission::new(limits(1, None, 0, 0, 0));
        let a2 = a.clone();
        let r = std::thread::spawn(move || {
            let _p = a2.admit("k").unwrap();
            panic!("provider bug");
        })
        .join();
        assert!(r.is_err());
        assert_eq!(a.in_flight(), 0);
        assert!(a.admit("k").is_ok());
    }

    #[test]
    fn impossible_limits_are_startup_errors() {
        let load = |pairs: &[(&str, &str)], mem: Option<u32>| {
            let pairs: Vec<(String, String)> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let get = move |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
            Limits::from_env(&Env::new(&get), mem)
        };
        assert_eq!(load(&[], None).unwrap(), Limits::default());
        assert_eq!(
            load(&[("SANDBOX_TOTAL_MEMORY_MB", "1024")], None)
                .unwrap_err()
                .variable,
            "SANDBOX_MEMORY_MB"
        );
        assert_eq!(
            load(&[("SANDBOX_TOTAL_MEMORY_MB", "100")], Some(256))
                .unwrap_err()
                .variable,
            "SANDBOX_TOTAL_MEMORY_MB"
        );
        assert_eq!(
            load(&[("SANDBOX_MAX_CONCURRENT", "0")], None)
                .unwrap_err()
                .variable,
            "SANDBOX_MAX_CONCURRENT"
        );
        assert_eq!(
            load(&[("SANDBOX_MAX_CONCURRENT", "2000")], None)
                .unwrap_err()
                .variable,
            "SANDBOX_MAX_CONCURRENT"
        );
        assert_eq!(
            load(&[("SANDBOX_PER_KEY_CONCURRENT", "9")], None)
                .unwrap_err()
                .variable,
            "SANDBOX_PER_KEY_CONCURRENT"
        );
        assert_eq!(
            load(
                &[("SANDBOX_RATE_PER_MIN", "0"), ("SANDBOX_RATE_BURST", "5")],
                None
            )
            .unwrap_err()
            .variable,
            "SANDBOX_RATE_BURST"
        );
        let l = load(&[("SANDBOX_TOTAL_MEMORY_MB", "1024")], Some(256)).unwrap();
        assert_eq!(
            (l.capacity(), l.per_key_concurrent, l.rate_burst),
            (4, 4, 30)
        );
    }
}
