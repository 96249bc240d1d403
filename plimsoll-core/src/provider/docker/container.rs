//! One run's container, removed on every path out.
//!
//! A [`Live`] container is registered in the provider's live set before it is
//! created (so the orphan reconcile never takes it mid-run) and force-removed
//! when the run ends — on success, deadline, cancellation, an error, or when the
//! run's future is dropped because its client went away. A drop removes it from
//! a thread of its own, so it completes even while the caller's runtime is
//! shutting down. What this does not cover: a daemon killed with SIGKILL; the
//! reconcile removes such leftovers later by their labels.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bollard::Docker;
use bollard::models::ContainerCreateBody;
use bollard::query_parameters::{CreateContainerOptionsBuilder, RemoveContainerOptionsBuilder};

use crate::error::{Error, Result};
use crate::provider::docker::witness::InitWitness;

/// How long a removal may take before it is abandoned to the reconcile.
const REMOVE_BUDGET: Duration = Duration::from_secs(30);

/// The names of containers this provider has in flight.
#[derive(Debug, Clone, Default)]
pub(crate) struct LiveSet(Arc<Mutex<HashSet<String>>>, Arc<AtomicUsize>);

impl LiveSet {
    /// Waits (at most `budget`) until no dropped run's removal is still
    /// running; returns whether none is.
    pub async fn settled(&self, budget: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + budget;
        while self.1.load(Ordering::SeqCst) > 0 {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        true
    }

    fn insert(&self, name: &str) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_owned());
    }

    fn remove(&self, name: &str) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(name);
    }

    /// Whether `name` is in flight.
    pub fn contains(&self, name: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(name)
    }

    /// How many are in flight.
    pub fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// Force-removes `name` (and its anonymous volumes). A container already gone
/// counts as removed.
pub(crate) async fn force_remove(docker: &Docker, name: &str) -> Result<()> {
    let opts = RemoveContainerOptionsBuilder::new()
        .force(true)
        .v(true)
        .build();
    match tokio::time::timeout(REMOVE_BUDGET, docker.remove_container(name, Some(opts))).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 404, ..
        })) => Ok(()),
        // 409: a removal is already in progress.
        Ok(Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 409, ..
        })) => Ok(()),
        Ok(Err(e)) => Err(Error::infrastructure(format!(
            "removing container {name}: {e}"
        ))),
        Err(_) => Err(Error::infrastructure(format!(
            "removing container {name}: docker did not answer within {} s",
            REMOVE_BUDGET.as_secs()
        ))),
    }
}

/// After a dropped run's first removal: the drop may have interrupted a create
/// that docker still completes after that removal answered "no such
/// container", so the removal is repeated until the name has stayed absent.
async fn settle(docker: &Docker, name: &str) -> Result<()> {
    for _ in 0..6 {
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        match docker.inspect_container(name, None).await {
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => continue,
            _ => force_remove(docker, name).await?,
        }
    }
    Ok(())
}

/// A created container that is removed however its run ends.
#[derive(Debug)]
pub(crate) struct Live {
    docker: Docker,
    name: String,
    live: LiveSet,
    removed: bool,
    /// The init's pidfd, opened at the start (see [`InitWitness`]).
    witness: Option<Arc<InitWitness>>,
}

impl Live {
    /// Creates the container `name` from `body`.
    pub async fn create(
        docker: &Docker,
        live: &LiveSet,
        name: String,
        body: ContainerCreateBody,
    ) -> Result<Live> {
        live.insert(&name);
        // From here on the guard owns the name: a failed or dropped create is
        // still removed (docker may have created it before the error).
        let guard = Live {
            docker: docker.clone(),
            name,
            live: live.clone(),
            removed: false,
            witness: None,
        };
        let opts = CreateContainerOptionsBuilder::new()
            .name(&guard.name)
            .build();
        docker
            .create_container(Some(opts), body)
            .await
            .map_err(|e| {
                Error::infrastructure(format!("creating container {}: {e}", guard.name))
            })?;
        Ok(guard)
    }

    /// The container's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Starts it, and opens the witness on its init process.
    pub async fn start(&mut self) -> Result<()> {
        self.docker
            .start_container(&self.name, None)
            .await
            .map_err(|e| Error::infrastructure(format!("starting container {}: {e}", self.name)))?;
        self.witness = InitWitness::open(&self.docker, &self.name)
            .await
            .map(Arc::new);
        Ok(())
    }

    /// The witness on its init process, when one could be opened.
    pub fn witness(&self) -> Option<Arc<InitWitness>> {
        self.witness.clone()
    }

    /// Force-removes it now and reports whether that worked.
    pub async fn remove(mut self) -> Result<()> {
        self.removed = true;
        let r = force_remove(&self.docker, &self.name).await;
        // Failed or not, it is no longer in flight: the reconcile may take it.
        self.live.remove(&self.name);
        r
    }

    /// Removes it in the background: the run's answer does not wait. The
    /// provider's shutdown waits for it as for a dropped run's removal.
    pub fn remove_later(self) {
        let removing = self.live.1.clone();
        removing.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(async move {
            if let Err(e) = self.remove().await {
                tracing::warn!(error = %e, "container not removed; the orphan reconcile will");
            }
            removing.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if self.removed {
            return;
        }
        let docker = self.docker.clone();
        let name = std::mem::take(&mut self.name);
        let live = self.live.clone();
        let removing = live.1.clone();
        removing.fetch_add(1, Ordering::SeqCst);
        let spawned = std::thread::Builder::new()
            .name("plimsoll-docker-rm".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                let ok = match rt {
                    Ok(rt) => rt.block_on(async {
                        let first = force_remove(&docker, &name).await;
                        // No longer in flight: from here the reconcile may take it too.
                        live.remove(&name);
                        first.is_ok() && settle(&docker, &name).await.is_ok()
                    }),
                    Err(_) => {
                        live.remove(&name);
                        false
                    }
                };
                if !ok {
                    tracing::warn!(container = %name, "could not remove a dropped run's container; the orphan reconcile will");
                }
                removing.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            self.live.1.fetch_sub(1, Ordering::SeqCst);
            tracing::warn!(
                "could not start the removal thread; the orphan reconcile will remove the container"
            );
        }
    }
}
