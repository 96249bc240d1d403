//! Which sandboxes a daemon answers for: a lease is tracked from before a
//! create is sent until its delete is confirmed, so a reconcile deletes this
//! instance's sandboxes no lease tracks at once, and another instance's only
//! once their declared lifetime plus [`OTHERS_GRACE`] has passed.

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

/// How long past its declared lifetime another instance's sandbox is left.
pub(crate) const OTHERS_GRACE: Duration = Duration::from_secs(300);

/// The leases of sandboxes this daemon is responsible for.
#[derive(Debug, Default)]
pub(crate) struct Leases(Mutex<HashSet<String>>);

impl Leases {
    fn lock(&self) -> MutexGuard<'_, HashSet<String>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
    /// Tracks `lease` (before its create is sent).
    pub(crate) fn track(&self, lease: &str) {
        self.lock().insert(lease.to_owned());
    }
    /// Stops tracking `lease` (its delete is done, or failed and left to the reconcile).
    pub(crate) fn release(&self, lease: &str) {
        self.lock().remove(lease);
    }
    /// Whether `lease` is tracked.
    pub(crate) fn tracked(&self, lease: &str) -> bool {
        self.lock().contains(lease)
    }
}

/// Whether another instance's sandbox, made at `created` and declaring
/// `lifetime` seconds (a label's text), is past that plus [`OTHERS_GRACE`]
/// at `now`. One that declares none, or whose age is unknown, is left alone.
pub(crate) fn expired(
    created: Option<SystemTime>,
    lifetime: Option<&str>,
    now: SystemTime,
) -> bool {
    let (Some(created), Some(lifetime)) = (created, lifetime.and_then(|l| l.parse::<u64>().ok()))
    else {
        return false;
    };
    created + Duration::from_secs(lifetime) + OTHERS_GRACE < now
}
