//! Why a run's container ended, when it was neither the guest's doing nor
//! this run's: docker stopped it, or the runtime under it died (see
//! [`super::witness`]).

use std::time::Duration;

use crate::error::{Error, Result};
use crate::provider::docker::{Inner, container};

impl Inner {
    /// Why the container stopped, or `None` while it runs.
    pub(crate) async fn why_stopped(&self, name: &str) -> Result<Option<String>> {
        let docker = self.client().await?;
        match docker.inspect_container(name, None).await {
            Ok(i) => {
                let s = i.state.unwrap_or_default();
                if s.running == Some(true) {
                    return Ok(None);
                }
                if let Some(e) = self.ended_by_docker(name).await {
                    return Err(e);
                }
                Ok(Some(format!(
                    "the sandbox stopped (exit code {}{})",
                    s.exit_code.unwrap_or(-1),
                    if s.oom_killed == Some(true) {
                        ", out of memory"
                    } else {
                        ""
                    }
                )))
            }
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(Some("the sandbox's container is gone".into())),
            Err(e) => Err(Error::infrastructure(format!("inspecting {name}: {e}"))),
        }
    }

    /// `Some(error)` when the docker daemon itself, not the guest, ended the
    /// container `name`: docker logged a kill it sent (a daemon stop, or a
    /// restart that found the container running with live-restore off), or
    /// docker stopped answering while asked. Such an end is an infrastructure
    /// error, never the run's exit. Only call it for a container this run did
    /// not kill itself (a deadline or a cancel also logs a kill). `None` when
    /// docker answered and logged no kill, or did not answer within a moment.
    pub(crate) async fn ended_by_docker(&self, name: &str) -> Option<Error> {
        let docker = match self.client().await {
            Ok(d) => d,
            Err(e) => return Some(e),
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        // Names are unique per run, so a wide window finds only this run's.
        let since = now.saturating_sub(24 * 3600).to_string();
        let until = (now + 1).to_string();
        let filters =
            std::collections::HashMap::from([("container", vec![name]), ("event", vec!["kill"])]);
        let opts = bollard::query_parameters::EventsOptionsBuilder::new()
            .since(&since)
            .until(&until)
            .filters(&filters)
            .build();
        let mut events = docker.events(Some(opts));
        use futures_util::StreamExt;
        match tokio::time::timeout(Duration::from_secs(3), events.next()).await {
            Ok(Some(Ok(ev))) => {
                let signal = ev
                    .actor
                    .and_then(|a| a.attributes)
                    .and_then(|a| a.get("signal").cloned())
                    .unwrap_or_else(|| "?".into());
                Some(Error::infrastructure(format!(
                    "the docker daemon killed the run's container (signal {signal}) while the \
                     run was in flight (docker stopped or restarted, or a kill from docker's \
                     side); the run did not finish"
                )))
            }
            Ok(Some(Err(e))) => Some(Error::infrastructure(format!(
                "the docker daemon went away while the run was in flight: {e}"
            ))),
            Ok(None) | Err(_) => None,
        }
    }

    /// `Some(error)` when the run's container ended by something outside
    /// both the guest and this run: docker's kill ([`Inner::ended_by_docker`]),
    /// or its init killed by a signal on the host while docker did not record
    /// an out-of-memory kill — the runtime under it died (runc's shim, gVisor's
    /// sandbox or gofer; see [`witness`]). Only for a container this run did
    /// not kill itself.
    pub(crate) async fn ended_outside(&self, live: &container::Live) -> Option<Error> {
        if let Some(e) = self.ended_by_docker(live.name()).await {
            return Some(e);
        }
        let witness = live.witness()?;
        let (pid, signal) = witness.killed_by().await?;
        if witness.oom_since_open() {
            return None;
        }
        let docker = self.client().await.ok()?;
        let oom = docker
            .inspect_container(live.name(), None)
            .await
            .ok()
            .and_then(|i| i.state)
            .and_then(|s| s.oom_killed);
        if oom == Some(true) {
            return None;
        }
        Some(Error::infrastructure(runtime_died(pid, signal)))
    }
}

/// The reason given when the runtime under a run died ([`super::witness`]).
pub(crate) fn runtime_died(pid: u32, signal: i32) -> String {
    format!(
        "the container runtime under the run died: a process of the sandbox (host pid {pid}) \
         was killed by signal {signal} from outside it (its shim, or gVisor's sandbox or gofer, \
         was killed or crashed); the run did not finish"
    )
}
