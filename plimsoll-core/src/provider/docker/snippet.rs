//! A JavaScript snippet: one fresh container whose only process (under
//! docker's init) is `node -` reading the code on stdin as the guest. The
//! container is made and started first ([`Launched`]), then fed one run's
//! code ([`feed`]); a snippet pool ([`super::snippet_pool`]) does the first
//! half ahead of time.
//!
//! The exit code is docker's record of the container's main process, and
//! stdout and stderr arrive as docker's separate framed streams, each kept to
//! 64 KiB (flagged, drained past the cap). The deadline or a cancellation
//! force-removes the container; so does every other way out, through the
//! [`Live`] guard. A granted run's container also gets the run's broker socket
//! (its directory bind-mounted read-only, `HOST_API_SOCKET`, and node started
//! with the host client preloaded so `host` is a global); the socket and its
//! directory go when the run returns. What this does not cover: what the
//! broker allows (that is [`crate::grant`]'s policy).

use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bollard::container::{AttachContainerResults, LogOutput};
use bollard::query_parameters::{AttachContainerOptionsBuilder, WaitContainerOptionsBuilder};
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;

use crate::error::{Error, ErrorCode, Result};
use crate::provider::RunContext;
use crate::provider::docker::Inner;
use crate::provider::docker::container::Live;
use crate::provider::docker::lockdown::{LABEL_POOL, Role, container_name};
use crate::request::JavaScriptRun;
use crate::result::{CappedBuffer, JavaScriptResult};

/// Bytes kept per stream.
pub(crate) const OUTPUT_CAP: usize = 64 * 1024;
/// How long docker calls around the guest's budget may take.
pub(crate) const GRACE: Duration = Duration::from_secs(30);

/// The unix second `d` from now.
pub(crate) fn unix_after(d: Duration) -> u64 {
    (SystemTime::now() + d)
        .duration_since(UNIX_EPOCH)
        .map(|t| t.as_secs())
        .unwrap_or(0)
}

/// The error a cancelled run returns.
pub(crate) fn cancelled() -> Error {
    Error::new(
        ErrorCode::Cancelled,
        "the run was cancelled; its container was removed",
    )
}

/// A snippet container, created and started behind every wall of a fresh
/// run, its `node -` waiting for the code on stdin. It serves exactly one run
/// ([`feed`] consumes it) and is removed on every way out.
pub(crate) struct Launched {
    live: Live,
    attach: AttachContainerResults,
    /// When it was started.
    pub started: Instant,
}

impl Launched {
    /// Creates, attaches to and starts a snippet container; a granted run's
    /// broker socket directory is `broker`; a warm pool's member (`pooled`)
    /// is labelled [`LABEL_POOL`]`=snippet`. Docker's reconcile may remove it
    /// once `expires` (a unix second) is past and it is no longer in flight.
    /// A run's `phases` get `acquired` (created) and `started`.
    pub(crate) async fn new(
        p: &Inner,
        expires: u64,
        broker: Option<&Path>,
        pooled: bool,
        phases: Option<&crate::phase::Phases>,
    ) -> Result<Launched> {
        let image = p.pinned(Role::Snippet)?;
        let docker = p.client().await?;
        let mut body =
            p.lockdown
                .create_body(Role::Snippet, &image.id, &image.env, 0, expires, broker);
        if pooled && let Some(labels) = body.labels.as_mut() {
            labels.insert(LABEL_POOL.into(), "snippet".into());
        }
        let mut live = Live::create(docker, &p.live, container_name(), body).await?;
        if let Some(ph) = phases {
            ph.acquired(crate::phase::Source::Fresh);
        }
        let attach = docker
            .attach_container(
                live.name(),
                Some(
                    AttachContainerOptionsBuilder::new()
                        .stdin(true)
                        .stdout(true)
                        .stderr(true)
                        .stream(true)
                        .logs(false)
                        .build(),
                ),
            )
            .await
            .map_err(|e| Error::infrastructure(format!("attaching to {}: {e}", live.name())))?;
        live.start().await?;
        if let Some(ph) = phases {
            ph.mark(crate::phase::Phase::Started);
        }
        Ok(Launched {
            live,
            attach,
            started: Instant::now(),
        })
    }

    /// Whether it may still be waiting for code: neither its init nor a
    /// runtime process beside it has ended since the start.
    pub(crate) fn waiting(&self) -> bool {
        self.live.witness().is_none_or(|w| !w.any_ended())
    }
}

/// Runs one snippet in a fresh container.
pub(crate) async fn run(
    p: &Inner,
    job: &JavaScriptRun,
    ctx: &RunContext,
) -> Result<JavaScriptResult> {
    // A granted run's broker socket: removed (with its directory) when this
    // returns, on every path.
    let socket = super::granted_socket(ctx, &p.lockdown)?;
    let launched = Launched::new(
        p,
        unix_after(ctx.timeout + GRACE),
        socket.as_ref().map(|s| s.dir()),
        false,
        Some(&ctx.phases),
    )
    .await?;
    feed(p, launched, job, ctx).await
}

/// Runs `job` on `launched`: writes the code to its waiting node, reads the
/// output until the deadline, and ends the container.
pub(crate) async fn feed(
    p: &Inner,
    launched: Launched,
    job: &JavaScriptRun,
    ctx: &RunContext,
) -> Result<JavaScriptResult> {
    let Launched {
        live,
        attach,
        started: _,
    } = launched;
    let deadline = tokio::time::Instant::now() + ctx.timeout;
    let started = Instant::now();

    let mut input = attach.input;
    let mut output = attach.output;
    let code = job.code.clone().into_bytes();
    let write = async move {
        // A guest that exits without reading its stdin is not an error.
        let _ = input.write_all(&code).await;
        let _ = input.shutdown().await;
        std::future::pending::<()>().await;
    };
    let mut stdout = CappedBuffer::new(OUTPUT_CAP);
    let mut stderr = CappedBuffer::new(OUTPUT_CAP);
    let read = async {
        while let Some(item) = output.next().await {
            match item {
                Ok(LogOutput::StdOut { message }) | Ok(LogOutput::Console { message }) => {
                    stdout.push(&message)
                }
                Ok(LogOutput::StdErr { message }) => stderr.push(&message),
                Ok(LogOutput::StdIn { .. }) => {}
                Err(e) => {
                    return Err(Error::infrastructure(format!(
                        "reading the snippet's output from docker: {e}"
                    )));
                }
            }
        }
        Ok(())
    };
    enum End {
        Closed,
        Deadline,
        Cancelled,
    }
    let end = tokio::select! {
        r = read => { r?; End::Closed }
        _ = write => End::Closed,
        _ = tokio::time::sleep_until(deadline) => End::Deadline,
        _ = ctx.cancel.cancelled() => End::Cancelled,
    };
    drop(output);
    // The streams can close before the process ends (a guest may close its
    // own stdout and stderr): docker's wait is the authority, within the deadline.
    let end = match end {
        End::Closed => {
            tokio::select! {
                code = exit_code(p, live.name()) => Some(code?),
                _ = tokio::time::sleep_until(deadline) => None,
                _ = ctx.cancel.cancelled() => {
                    let _ = live.remove().await;
                    return Err(cancelled());
                }
            }
        }
        End::Deadline => None,
        End::Cancelled => {
            let _ = live.remove().await;
            return Err(cancelled());
        }
    };
    let (exit_code, timed_out) = match end {
        Some(code) => (code, false),
        None => (124, true),
    };
    ctx.phases.mark(crate::phase::Phase::Running);
    // A signal death may be docker's doing (a daemon stop or restart kills
    // running containers), or the runtime's death under the run: that is an
    // infrastructure error, not the guest's exit.
    if !timed_out
        && exit_code >= 128
        && let Some(e) = p.ended_outside(&live).await
    {
        if let Err(r) = live.remove().await {
            tracing::warn!(error = %r, "snippet container not removed; the orphan reconcile will");
        }
        return Err(e);
    }
    if timed_out {
        // The guest may still run: it is gone before the answer.
        if let Err(e) = live.remove().await {
            tracing::warn!(error = %e, "snippet container not removed; the orphan reconcile will");
        }
        ctx.phases.mark(crate::phase::Phase::CleanedUp);
    } else {
        // Its main process ended, and with it every process of the
        // container: the removal is docker's bookkeeping, off the answer's path.
        live.remove_later();
    }
    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        exit_code,
        timed_out,
        "snippet ran"
    );
    let (stdout, stdout_truncated) = stdout.finish();
    let (stderr, stderr_truncated) = stderr.finish();
    ctx.phases.mark(crate::phase::Phase::Collected);
    Ok(JavaScriptResult {
        stdout,
        stderr,
        exit_code,
        timed_out,
        stdout_truncated,
        stderr_truncated,
    })
}

/// The main process's exit code, from docker's wait.
async fn exit_code(p: &Inner, name: &str) -> Result<i32> {
    let docker = p.client().await?;
    let opts = WaitContainerOptionsBuilder::new()
        .condition("not-running")
        .build();
    let mut wait = docker.wait_container(name, Some(opts));
    match wait.next().await {
        Some(Ok(r)) => Ok(r.status_code as i32),
        Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => Ok(code as i32),
        Some(Err(e)) => Err(Error::infrastructure(format!(
            "waiting for the snippet's container: {e}"
        ))),
        None => Err(Error::infrastructure(
            "docker closed the wait for the snippet's container without an exit code",
        )),
    }
}
