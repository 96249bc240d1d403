//! Counts of brokered calls by profile, method, route pattern and outcome —
//! metadata only, never bodies, targets or tokens.
//!
//! Every label comes from a fixed set: the profile and route pattern from the
//! operator's grants file, the outcome from `2xx`…`5xx` and `denied`, and the
//! method from [`METHODS`] or `other`. Nothing a guest sends can add a series.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::grant::route::METHODS;

/// The label of every method outside [`METHODS`].
pub const OTHER_METHOD: &str = "other";

/// The metric label for a guest's `method`: one of [`METHODS`], or [`OTHER_METHOD`].
pub fn method_label(method: &str) -> &'static str {
    METHODS
        .iter()
        .find(|m| **m == method)
        .copied()
        .unwrap_or(OTHER_METHOD)
}

/// A series: profile, method label, route pattern, outcome.
type Series = (String, &'static str, String, &'static str);

/// Call counters shared by every run's broker.
#[derive(Debug, Default)]
pub struct CallMetrics {
    counts: Mutex<BTreeMap<Series, u64>>,
}

impl CallMetrics {
    pub(crate) fn count(&self, profile: &str, method: &str, route: &str, outcome: &'static str) {
        let mut m = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        *m.entry((profile.into(), method_label(method), route.into(), outcome))
            .or_insert(0) += 1;
    }

    /// `(profile, method, route pattern, outcome) → calls`; outcome is `2xx`…`5xx` or `denied`.
    pub fn snapshot(&self) -> Vec<((String, String, String, String), u64)> {
        let m = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        m.iter()
            .map(|((p, me, r, o), v)| ((p.clone(), (*me).into(), r.clone(), (*o).into()), *v))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guest_method_cannot_add_a_series() {
        let m = CallMetrics::default();
        for i in 0..300 {
            m.count(
                "p",
                &format!("M{i:04}{}", "x".repeat(4096)),
                "(denied)",
                "denied",
            );
        }
        m.count("p", "GET", "(denied)", "denied");
        m.count("p", "get", "(denied)", "denied");
        let snap = m.snapshot();
        assert_eq!(snap.len(), 2, "{snap:?}");
        assert!(snap.contains(&(
            (
                "p".into(),
                "other".into(),
                "(denied)".into(),
                "denied".into()
            ),
            301
        )));
        assert!(snap.contains(&(
            ("p".into(), "GET".into(), "(denied)".into(), "denied".into()),
            1
        )));
    }
}
