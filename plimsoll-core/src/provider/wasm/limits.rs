//! What bounds one wasm run: its memory cap, its two capped output streams,
//! its wall-clock deadline and its cancellation, all held in the run's
//! wasmtime `Store` data.
//!
//! The deadline and cancellation use epoch interruption: a ticker thread
//! advances the engine's epoch every [`TICK`] while any run is live, and each
//! store's epoch callback decides whether its run continues. Cancelling bumps
//! the epoch at once, so a cancelled run stops within one check (a loop
//! back-edge or a function entry), not one tick. The epoch does not fire inside
//! a host call; the one that blocks (a granted run's API call) bounds itself by
//! the same deadline and cancellation flag.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use crate::result::CappedBuffer;

/// How often the epoch advances while runs are live: the deadline's resolution.
pub const TICK: Duration = Duration::from_millis(2);

/// Bytes kept of each output stream; the rest is dropped and flagged.
pub const OUTPUT_CAP: usize = 64 * 1024;

/// Why a run was stopped from outside the guest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Stop {
    /// The wall-clock deadline passed (exit 124).
    #[error("the run's deadline passed")]
    Deadline,
    /// The caller cancelled (an error, not a result).
    #[error("the run was cancelled")]
    Cancelled,
}

/// The guest called WASI `proc_exit` (Node's `process.exit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the guest exited with status {0}")]
pub struct GuestExit(pub i32);

/// Refuses linear-memory growth past the cap; `memory.grow` then returns -1 and
/// the guest's allocator reports out of memory. Tables are bounded too, and an
/// instance owns one memory, one table and nothing else.
#[derive(Debug)]
pub struct MemoryCap {
    max_bytes: usize,
}

/// Table elements a run may grow to (QuickJS's table is fixed; this only bounds
/// a misbehaving guest).
const MAX_TABLE_ELEMENTS: usize = 10_000;

impl wasmtime::ResourceLimiter for MemoryCap {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= self.max_bytes)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }

    fn instances(&self) -> usize {
        1
    }

    fn tables(&self) -> usize {
        1
    }

    fn memories(&self) -> usize {
        1
    }
}

/// Everything one run's store holds.
#[derive(Debug)]
pub struct RunState {
    /// The memory cap.
    pub cap: MemoryCap,
    /// Standard output as kept.
    pub stdout: CappedBuffer,
    /// Standard error as kept.
    pub stderr: CappedBuffer,
    /// When the run must end.
    pub deadline: Instant,
    /// When the run began (the CPU-time clocks count from here).
    pub started: Instant,
    /// Set by the caller's cancellation.
    pub cancel: Arc<AtomicBool>,
    /// Why the epoch callback stopped the run, if it did.
    pub stopped: Option<Stop>,
    /// The snapshot is being made: clocks read zero and randomness is zeros, so
    /// the snapshot's bytes do not depend on when it was made.
    pub initialising: bool,
    /// A granted run's way to its broker; `None` without a grant.
    pub grant: Option<super::host::HostGrant>,
}

impl RunState {
    /// The state of a run with this memory cap, budget and cancellation flag.
    pub fn new(max_memory_bytes: usize, timeout: Duration, cancel: Arc<AtomicBool>) -> RunState {
        let started = Instant::now();
        RunState {
            cap: MemoryCap {
                max_bytes: max_memory_bytes,
            },
            stdout: CappedBuffer::new(OUTPUT_CAP),
            stderr: CappedBuffer::new(OUTPUT_CAP),
            deadline: started + timeout,
            started,
            cancel,
            stopped: None,
            initialising: false,
            grant: None,
        }
    }

    /// The epoch callback's decision: stop (and say why) or check again next tick.
    pub fn check(&mut self) -> wasmtime::Result<wasmtime::UpdateDeadline> {
        let stop = if self.cancel.load(Ordering::Acquire) {
            Stop::Cancelled
        } else if Instant::now() >= self.deadline {
            Stop::Deadline
        } else {
            return Ok(wasmtime::UpdateDeadline::Continue(1));
        };
        self.stopped = Some(stop);
        Err(wasmtime::Error::new(stop))
    }
}

/// Advances an engine's epoch every [`TICK`] while at least one run is live,
/// and parks otherwise. One per shared engine; it ends when the engine does.
#[derive(Debug)]
pub struct Ticker {
    live: Arc<AtomicUsize>,
    thread: Thread,
}

/// Held for the length of a run; the ticker runs while any is held.
#[derive(Debug)]
pub struct Live<'a>(&'a Ticker);

impl Drop for Live<'_> {
    fn drop(&mut self) {
        self.0.live.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Ticker {
    /// Starts the ticker thread for `engine` (held weakly: the thread ends
    /// after the engine is dropped).
    pub fn start(engine: &wasmtime::Engine) -> std::io::Result<Ticker> {
        let live = Arc::new(AtomicUsize::new(0));
        let weak: Weak<AtomicUsize> = Arc::downgrade(&live);
        let engine = engine.weak();
        let handle = thread::Builder::new()
            .name("plimsoll-wasm-epoch".into())
            .spawn(move || {
                loop {
                    let Some(live) = weak.upgrade() else { return };
                    if live.load(Ordering::Acquire) == 0 {
                        drop(live);
                        thread::park_timeout(Duration::from_secs(1));
                        continue;
                    }
                    drop(live);
                    thread::sleep(TICK);
                    match engine.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => return,
                    }
                }
            })?;
        Ok(Ticker {
            live,
            thread: handle.thread().clone(),
        })
    }

    /// Marks a run live (waking the ticker) until the guard drops.
    pub fn live(&self) -> Live<'_> {
        if self.live.fetch_add(1, Ordering::AcqRel) == 0 {
            self.thread.unpark();
        }
        Live(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmtime::ResourceLimiter;

    #[test]
    fn memory_cap_refuses_growth_past_it() {
        let mut cap = MemoryCap {
            max_bytes: 32 << 20,
        };
        assert!(cap.memory_growing(0, 32 << 20, None).unwrap());
        assert!(!cap.memory_growing(0, (32 << 20) + 65536, None).unwrap());
        assert!(!cap.table_growing(0, MAX_TABLE_ELEMENTS + 1, None).unwrap());
        assert_eq!((cap.instances(), cap.tables(), cap.memories()), (1, 1, 1));
    }

    #[test]
    fn check_names_why_it_stopped() {
        let cancel = Arc::new(AtomicBool::new(false));
        let mut state = RunState::new(1 << 20, Duration::from_secs(60), cancel.clone());
        assert!(matches!(
            state.check(),
            Ok(wasmtime::UpdateDeadline::Continue(1))
        ));
        cancel.store(true, Ordering::Release);
        let Err(err) = state.check() else {
            panic!("a cancelled run continued")
        };
        assert_eq!(err.downcast_ref::<Stop>(), Some(&Stop::Cancelled));
        assert_eq!(state.stopped, Some(Stop::Cancelled));

        let mut late = RunState::new(1 << 20, Duration::ZERO, Arc::new(AtomicBool::new(false)));
        let Err(err) = late.check() else {
            panic!("a late run continued")
        };
        assert_eq!(err.downcast_ref::<Stop>(), Some(&Stop::Deadline));
    }
}
