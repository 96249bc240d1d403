//! Request bodies in flight: how many are read and parsed at once, and how
//! much memory they may take, decided before a byte of a body is read.
//!
//! A body is read whole and parsed into a JSON tree before admission can
//! judge it, so the edge bounds that work itself. A call takes a slot of
//! [`Bodies`] after authentication and before its body is read, and gives
//! it back once the body is parsed (the run that follows is admission's to
//! bound). There are `2 × SANDBOX_MAX_CONCURRENT` slots, one caller may hold
//! at most half of them, and together they reserve at most [`MEMORY_BUDGET`]
//! of memory: each reserves [`cost`] of its declared length (of the body cap
//! when it declares none). A call that finds no slot is refused as capacity,
//! unread, and may retry.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::server::MAX_BODY_BYTES;

/// The memory every body in flight may reserve together: 192 MiB.
pub const MEMORY_BUDGET: u64 = 192 * 1024 * 1024;

/// The most a body of `len` bytes can cost while it is read and parsed: the
/// chunks as they arrive, the body made contiguous and the strings copied out
/// of it (three times its length); the JSON tree, 32 bytes a value for at
/// most one value every two bytes, doubled while its arrays grow (32 times
/// its length, and never past twice [`plimsoll_core::wire::json::MAX_VALUES`]
/// values: 64 MiB); and 64 KiB.
pub fn cost(len: u64) -> u64 {
    let tree = len
        .saturating_mul(32)
        .min(2 * 32 * plimsoll_core::wire::json::MAX_VALUES as u64);
    len.saturating_mul(3)
        .saturating_add(tree)
        .saturating_add(64 * 1024)
}

/// Why a body found no slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// Every slot is taken.
    Slots,
    /// This caller holds half the slots.
    Caller,
    /// The bodies in flight have reserved the memory budget.
    Memory,
}

impl Full {
    /// The refusal's message.
    pub fn message(self) -> &'static str {
        match self {
            Full::Slots => {
                "plimsolld is reading as many request bodies as it allows at once; retry"
            }
            Full::Caller => "this caller has half of the daemon's request-body slots in use; retry",
            Full::Memory => {
                "plimsolld is reading as many request-body bytes as it allows at once; retry"
            }
        }
    }
}

#[derive(Debug, Default)]
struct Held {
    slots: usize,
    memory: u64,
    by_caller: HashMap<String, usize>,
}

/// The slots for bodies in flight.
#[derive(Debug)]
pub struct Bodies {
    slots: usize,
    held: Mutex<Held>,
}

impl Bodies {
    /// Slots for a daemon that runs `max_concurrent` runs at once.
    pub fn new(max_concurrent: usize) -> Arc<Bodies> {
        Arc::new(Bodies {
            slots: (2 * max_concurrent).max(2),
            held: Mutex::default(),
        })
    }

    /// The number of slots.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Takes a slot for `caller`'s body of `declared` bytes (`None`: not
    /// declared, so the body cap), or says why there is none.
    pub fn take(self: &Arc<Self>, caller: &str, declared: Option<u64>) -> Result<Slot, Full> {
        let cost = cost(
            declared
                .unwrap_or(MAX_BODY_BYTES as u64)
                .min(MAX_BODY_BYTES as u64),
        );
        let mut h = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if h.slots >= self.slots {
            return Err(Full::Slots);
        }
        let mine = h.by_caller.get(caller).copied().unwrap_or(0);
        if mine >= (self.slots / 2).max(1) {
            return Err(Full::Caller);
        }
        if h.memory + cost > MEMORY_BUDGET {
            return Err(Full::Memory);
        }
        h.slots += 1;
        h.memory += cost;
        *h.by_caller.entry(caller.to_owned()).or_insert(0) += 1;
        Ok(Slot {
            bodies: self.clone(),
            caller: caller.to_owned(),
            cost,
        })
    }
}

/// A body's slot, given back when dropped.
#[derive(Debug)]
pub struct Slot {
    bodies: Arc<Bodies>,
    caller: String,
    cost: u64,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut h = self.bodies.held.lock().unwrap_or_else(|e| e.into_inner());
        h.slots -= 1;
        h.memory -= self.cost;
        if let Some(n) = h.by_caller.get_mut(&self.caller) {
            *n -= 1;
            if *n == 0 {
                h.by_caller.remove(&self.caller);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn slots_are_twice_the_runs_and_half_for_one_caller() {
        let b = Bodies::new(2);
        let small = Some(1024);
        let a1 = b.take("a", small).unwrap();
        let a2 = b.take("a", small).unwrap();
        assert_eq!(b.take("a", small).unwrap_err(), Full::Caller);
        let c1 = b.take("c", small).unwrap();
        let _c2 = b.take("c", small).unwrap();
        assert_eq!(b.take("d", small).unwrap_err(), Full::Slots);
        drop((a1, c1));
        let _a3 = b.take("a", small).unwrap();
        let _d = b.take("d", small).unwrap();
        drop(a2);
        assert_eq!(b.held.lock().unwrap().by_caller.get("a"), Some(&1));
    }

    #[test]
    fn large_bodies_share_the_memory_budget() {
        let b = Bodies::new(8);
        let eight = Some(8 * MIB);
        let first = b.take("a", eight).unwrap();
        let second = b.take("b", eight).unwrap();
        assert_eq!(b.take("c", eight).unwrap_err(), Full::Memory);
        // An undeclared length costs the body cap.
        assert_eq!(b.take("c", None).unwrap_err(), Full::Memory);
        // Small calls still pass beside them.
        let _small = b.take("c", Some(4096)).unwrap();
        drop((first, second));
        assert_eq!(b.held.lock().unwrap().memory, cost(4096));
        // A declared length above the cap costs the cap (it is refused unread).
        assert_eq!(cost(MAX_BODY_BYTES as u64), cost(8 * MIB));
        assert!(2 * cost(8 * MIB) <= MEMORY_BUDGET);
    }
}
