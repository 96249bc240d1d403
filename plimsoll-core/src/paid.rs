//! Paid-second allowances for the metered providers (e2b, dockercloud), whose
//! sandboxes are billed by the second.
//!
//! `SANDBOX_PAID_SECONDS_PER_DAY` sets a daemon-wide budget per UTC day, and
//! a caller may have its own ([`Allowances::callers`]; plimsolld reads
//! `paid_seconds_per_day` from the clients file). Before a sandbox is paid
//! for, the run reserves its timeout plus [`TEARDOWN_BOUND`] from both; when
//! it ends it is charged its wall time instead, and a reservation never
//! settled (the run's future dropped mid-way) stays charged whole. A run that
//! would pass either budget is shed at once, as capacity (`paid_caller`,
//! `paid_daemon`), before anything is created. The ledger is in memory: a
//! restart starts the day again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::error::{Error, ErrorCode, Result};

/// What a run reserves beyond its timeout: the bound on a sandbox's teardown.
pub const TEARDOWN_BOUND: Duration = Duration::from_secs(33);

/// The budgets, in seconds per UTC day.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowances {
    /// `SANDBOX_PAID_SECONDS_PER_DAY`: the daemon's, `None` for no budget.
    pub daemon: Option<u64>,
    /// Each caller's, by principal id; a caller not named has none of its own.
    pub callers: HashMap<String, u64>,
}

impl Allowances {
    /// Whether any budget is set.
    pub fn is_empty(&self) -> bool {
        self.daemon.is_none() && self.callers.is_empty()
    }
}

/// Why a run found no paid seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Short {
    /// The caller's allowance for today would be passed.
    Caller,
    /// The daemon's allowance for today would be passed.
    Daemon,
}

impl Short {
    /// Every reason, in label order.
    pub const ALL: [Short; 2] = [Short::Caller, Short::Daemon];

    /// The metric label (`plimsoll_shed_total{reason}`).
    pub fn as_str(self) -> &'static str {
        match self {
            Short::Caller => "paid_caller",
            Short::Daemon => "paid_daemon",
        }
    }
}

#[derive(Debug, Default)]
struct Day {
    day: u64,
    daemon_ms: u64,
    callers: HashMap<String, u64>,
}

/// The seconds reserved and charged today, against the allowances.
#[derive(Debug)]
pub struct Ledger {
    allowances: Allowances,
    today: Mutex<Day>,
    shed: [AtomicU64; 2],
    now: fn() -> u64,
}

fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Ledger {
    /// A ledger for `allowances`, on the system clock.
    pub fn new(allowances: Allowances) -> Arc<Ledger> {
        Ledger::with_clock(allowances, unix_seconds)
    }

    fn with_clock(allowances: Allowances, now: fn() -> u64) -> Arc<Ledger> {
        Arc::new(Ledger {
            allowances,
            today: Mutex::default(),
            shed: Default::default(),
            now,
        })
    }

    fn today(&self) -> std::sync::MutexGuard<'_, Day> {
        let mut d = self.today.lock().unwrap_or_else(|e| e.into_inner());
        let day = (self.now)() / 86_400;
        if d.day != day {
            *d = Day {
                day,
                ..Day::default()
            };
        }
        d
    }

    /// Reserves `timeout` plus [`TEARDOWN_BOUND`] for `caller`, or sheds the
    /// run (counted) as capacity.
    pub fn reserve(self: &Arc<Self>, caller: &str, timeout: Duration) -> Result<Reservation> {
        let ms = (timeout + TEARDOWN_BOUND).as_millis() as u64;
        let mut d = self.today();
        let mine = d.callers.get(caller).copied().unwrap_or(0);
        let short = if self
            .allowances
            .callers
            .get(caller)
            .is_some_and(|a| mine + ms > a * 1000)
        {
            Some(Short::Caller)
        } else if self
            .allowances
            .daemon
            .is_some_and(|a| d.daemon_ms + ms > a * 1000)
        {
            Some(Short::Daemon)
        } else {
            None
        };
        if let Some(short) = short {
            self.shed[short as usize].fetch_add(1, Ordering::Relaxed);
            let whose = match short {
                Short::Caller => "this caller's",
                Short::Daemon => "the daemon's",
            };
            return Err(Error::new(
                ErrorCode::AtCapacity,
                format!(
                    "{whose} paid sandbox seconds for today (UTC) would be passed by this run's {} s reservation (its timeout and {} s of teardown)",
                    ms.div_ceil(1000),
                    TEARDOWN_BOUND.as_secs()
                ),
            ));
        }
        d.daemon_ms += ms;
        *d.callers.entry(caller.to_owned()).or_insert(0) += ms;
        Ok(Reservation {
            ledger: self.clone(),
            caller: caller.to_owned(),
            day: d.day,
            ms,
            started: Instant::now(),
        })
    }

    /// Milliseconds reserved or charged today: the daemon's, and `caller`'s.
    pub fn used_ms(&self, caller: &str) -> (u64, u64) {
        let d = self.today();
        (d.daemon_ms, d.callers.get(caller).copied().unwrap_or(0))
    }

    /// Runs shed so far, by reason.
    pub fn shed_counts(&self) -> Vec<(Short, u64)> {
        Short::ALL
            .iter()
            .zip(&self.shed)
            .map(|(s, n)| (*s, n.load(Ordering::Relaxed)))
            .collect()
    }
}

/// Seconds reserved for one run until it is settled.
#[derive(Debug)]
pub struct Reservation {
    ledger: Arc<Ledger>,
    caller: String,
    day: u64,
    ms: u64,
    started: Instant,
}

impl Reservation {
    /// Charges the wall time since the reservation (never more than it) and
    /// gives back the rest, if the day has not turned since.
    pub fn settle(self) {
        let used = (self.started.elapsed().as_millis() as u64).min(self.ms);
        let back = self.ms - used;
        let mut d = self.ledger.today();
        if d.day == self.day {
            d.daemon_ms = d.daemon_ms.saturating_sub(back);
            if let Some(n) = d.callers.get_mut(&self.caller) {
                *n = n.saturating_sub(back);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    /// The second test's clock, which it moves to the next day.
    static CLOCK: AtomicU64 = AtomicU64::new(86_400 * 20_000 + 10);

    fn moving() -> u64 {
        CLOCK.load(Ordering::SeqCst)
    }

    fn fixed() -> u64 {
        86_400 * 20_000 + 10
    }

    fn ledger(daemon: Option<u64>, alice: Option<u64>, now: fn() -> u64) -> Arc<Ledger> {
        let mut callers = HashMap::new();
        if let Some(a) = alice {
            callers.insert("alice".to_owned(), a);
        }
        Ledger::with_clock(Allowances { daemon, callers }, now)
    }

    #[test]
    fn a_run_reserves_its_timeout_and_the_teardown_and_is_charged_its_wall_time() {
        let l = ledger(Some(1000), Some(100), fixed);
        let r = l.reserve("alice", Duration::from_secs(30)).unwrap();
        assert_eq!(l.used_ms("alice"), (63_000, 63_000));
        // 63 s reserved of 100: another 63 s would pass alice's allowance.
        let e = l.reserve("alice", Duration::from_secs(30)).unwrap_err();
        assert_eq!(e.code(), ErrorCode::AtCapacity);
        assert!(
            e.message().contains("this caller's paid sandbox seconds"),
            "{}",
            e.message()
        );
        // Bob has no allowance of his own: only the daemon's counts.
        let b = l.reserve("bob", Duration::from_secs(30)).unwrap();
        r.settle();
        let (daemon, alice) = l.used_ms("alice");
        assert!(alice < 1000, "charged its wall time: {alice} ms");
        assert!((63_000..64_000).contains(&daemon), "{daemon}");
        // Dropped without settling: charged whole.
        drop(b);
        assert_eq!(l.used_ms("bob").1, 63_000);
        assert_eq!(
            l.shed_counts(),
            vec![(Short::Caller, 1), (Short::Daemon, 0)]
        );
    }

    #[test]
    fn the_daemon_budget_holds_across_callers_and_a_new_day_starts_again() {
        let l = ledger(Some(100), None, moving);
        let _a = l.reserve("a", Duration::from_secs(30)).unwrap();
        let e = l.reserve("b", Duration::from_secs(30)).unwrap_err();
        assert!(
            e.message().contains("the daemon's paid sandbox seconds"),
            "{}",
            e.message()
        );
        assert_eq!(l.shed_counts()[1], (Short::Daemon, 1));
        CLOCK.fetch_add(86_400, Ordering::SeqCst);
        assert!(
            l.reserve("b", Duration::from_secs(30)).is_ok(),
            "a new UTC day"
        );
    }
}
