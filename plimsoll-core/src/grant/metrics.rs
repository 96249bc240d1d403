//! Counts of brokered calls by profile, method, route pattern and outcome —
//! metadata only, never bodies, targets or tokens.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// Call counters shared by every run's broker.
#[derive(Debug, Default)]
pub struct CallMetrics {
    counts: Mutex<BTreeMap<(String, String, String, String), u64>>,
}

impl CallMetrics {
    pub(crate) fn count(&self, profile: &str, method: &str, route: &str, outcome: &str) {
        let mut m = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        *m.entry((profile.into(), method.into(), route.into(), outcome.into()))
            .or_insert(0) += 1;
    }

    /// `(profile, method, route pattern, outcome) → calls`; outcome is `2xx`…`5xx` or `denied`.
    pub fn snapshot(&self) -> Vec<((String, String, String, String), u64)> {
        let m = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        m.iter().map(|(k, v)| (k.clone(), *v)).collect()
    }
}
