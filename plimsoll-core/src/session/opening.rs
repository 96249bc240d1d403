//! Sessions being opened, counted with the open ones.
//!
//! Making a session's sandbox takes seconds. The caps are checked before that
//! and the session is stored after it, so without this count every open in
//! that window would pass the same check, and concurrent opens could exceed
//! `SANDBOX_MAX_SESSIONS` and the per-caller cap. A [`Reserved`] is taken
//! under the sessions map's lock, in the same step as the check, and given
//! back when the open ends, stored or not.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The opens in progress, by caller.
#[derive(Debug, Default)]
pub(crate) struct Opening {
    by_caller: Mutex<HashMap<String, usize>>,
}

impl Opening {
    fn counts(&self) -> std::sync::MutexGuard<'_, HashMap<String, usize>> {
        self.by_caller.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens in progress, in all and for `caller`.
    pub(crate) fn count(&self, caller: &str) -> (usize, usize) {
        let c = self.counts();
        (c.values().sum(), c.get(caller).copied().unwrap_or(0))
    }

    /// Counts one more open for `caller` until the result is dropped.
    pub(crate) fn reserve(self: &Arc<Self>, caller: &str) -> Reserved {
        *self.counts().entry(caller.to_owned()).or_insert(0) += 1;
        Reserved {
            opening: self.clone(),
            caller: caller.to_owned(),
        }
    }
}

/// One open in progress.
#[derive(Debug)]
pub(crate) struct Reserved {
    opening: Arc<Opening>,
    caller: String,
}

impl Drop for Reserved {
    fn drop(&mut self) {
        let mut c = self.opening.counts();
        if let Some(n) = c.get_mut(&self.caller) {
            *n -= 1;
            if *n == 0 {
                c.remove(&self.caller);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_are_counted_until_dropped() {
        let o = Arc::new(Opening::default());
        let a1 = o.reserve("a");
        let _a2 = o.reserve("a");
        let _b = o.reserve("b");
        assert_eq!(o.count("a"), (3, 2));
        drop(a1);
        assert_eq!(o.count("a"), (2, 1));
        assert_eq!(o.count("c"), (2, 0));
    }
}
