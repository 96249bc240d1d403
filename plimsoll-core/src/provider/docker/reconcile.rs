//! Removing leaked containers by their labels.
//!
//! This instance's containers that no run holds are removed at once; another
//! instance's once their `io.plimsoll.expires` second plus five minutes has
//! passed (that instance may still be running them until then). A container
//! whose expiry label is unreadable counts as expired. What this does not
//! cover: containers without plimsoll's instance label, which are never
//! touched.
//!
//! A session container that no session of this process holds belongs to a
//! daemon that died with it open (sessions are not re-attached across a
//! restart): it is removed like any leftover, and the count of such sessions
//! is logged (`sessions ended by a daemon restart`), so an operator sees
//! that sessions were lost; a later call naming one of them gets the refusal
//! of an unknown session.

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use bollard::query_parameters::ListContainersOptionsBuilder;

use crate::error::{Error, Result};
use crate::provider::docker::Inner;
use crate::provider::docker::container::force_remove;
use crate::provider::docker::lockdown::{LABEL_EXPIRES, LABEL_INSTANCE, LABEL_ROLE};

/// Another instance's container is left alone this long past its expiry.
pub(crate) const FOREIGN_GRACE_SECS: u64 = 300;

/// Whether a container with these labels and name should go now.
pub(crate) fn should_remove(
    labels: &HashMap<String, String>,
    name: &str,
    instance: &str,
    live: impl Fn(&str) -> bool,
    now: u64,
) -> bool {
    let Some(owner) = labels.get(LABEL_INSTANCE) else {
        return false;
    };
    if owner == instance {
        return !live(name);
    }
    match labels
        .get(LABEL_EXPIRES)
        .and_then(|e| e.parse::<u64>().ok())
    {
        Some(expires) => now > expires.saturating_add(FOREIGN_GRACE_SECS),
        None => true,
    }
}

/// Lists plimsoll's containers and removes the leaked ones; returns how many.
pub(crate) async fn reconcile(p: &Inner) -> Result<usize> {
    let docker = p.client().await?;
    let filters = HashMap::from([("label", vec![LABEL_INSTANCE])]);
    let opts = ListContainersOptionsBuilder::new()
        .all(true)
        .filters(&filters)
        .build();
    let list = docker
        .list_containers(Some(opts))
        .await
        .map_err(|e| Error::infrastructure(format!("listing containers: {e}")))?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut removed = 0;
    let mut sessions = 0;
    for c in list {
        let name = c
            .names
            .as_ref()
            .and_then(|n| n.first())
            .map(|n| n.trim_start_matches('/').to_owned())
            .unwrap_or_default();
        let labels = c.labels.clone().unwrap_or_default();
        if !should_remove(
            &labels,
            &name,
            &p.lockdown.instance,
            |n| p.live.contains(n),
            now,
        ) {
            continue;
        }
        let Some(id) = c.id.as_deref() else { continue };
        match force_remove(docker, id).await {
            Ok(()) => {
                removed += 1;
                if labels.get(LABEL_ROLE).map(String::as_str) == Some("session") {
                    sessions += 1;
                }
                tracing::info!(container = %name, owner = %labels.get(LABEL_INSTANCE).map(String::as_str).unwrap_or(""), "removed a leaked container");
            }
            Err(e) => {
                tracing::warn!(container = %name, error = %e, "could not remove a leaked container")
            }
        }
    }
    if sessions > 0 {
        tracing::info!(
            sessions,
            "sessions ended by a daemon restart: their containers were removed"
        );
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn who_goes() {
        let labels = |inst: &str, exp: &str| {
            HashMap::from([
                (LABEL_INSTANCE.to_string(), inst.to_string()),
                (LABEL_EXPIRES.to_string(), exp.to_string()),
            ])
        };
        let none = |_: &str| false;
        let all = |_: &str| true;
        // Ours: at once unless in flight, whatever the expiry.
        assert!(should_remove(
            &labels("me:1", "9999999999"),
            "a",
            "me:1",
            none,
            100
        ));
        assert!(!should_remove(&labels("me:1", "0"), "a", "me:1", all, 100));
        // Theirs: only past expiry + grace.
        assert!(!should_remove(
            &labels("them:1", "100"),
            "a",
            "me:1",
            none,
            100 + FOREIGN_GRACE_SECS
        ));
        assert!(should_remove(
            &labels("them:1", "100"),
            "a",
            "me:1",
            none,
            101 + FOREIGN_GRACE_SECS
        ));
        assert!(should_remove(
            &labels("them:1", "junk"),
            "a",
            "me:1",
            none,
            0
        ));
        // Not plimsoll's: never.
        assert!(!should_remove(&HashMap::new(), "a", "me:1", none, u64::MAX));
    }
}
