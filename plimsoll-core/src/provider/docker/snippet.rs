//! A JavaScript snippet: one fresh container whose only process (under
//! docker's init) is `node -` reading the code on stdin as the guest.
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

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bollard::container::LogOutput;
use bollard::query_parameters::{AttachContainerOptionsBuilder, WaitContainerOptionsBuilder};
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;

use crate::error::{Error, ErrorCode, Result};
use crate::provider::RunContext;
use crate::provider::docker::Inner;
use crate::provider::docker::container::Live;
use crate::provider::docker::lockdown::{Role, container_name};
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

/// Runs one snippet.
pub(crate) async fn run(
    p: &Inner,
    job: &JavaScriptRun,
    ctx: &RunContext,
) -> Result<JavaScriptResult> {
    let image = p.pinned(Role::Snippet)?;
    let docker = p.client().await?;
    // A granted run's broker socket: removed (with its directory) when this
    // returns, on every path.
    let socket = super::granted_socket(ctx, &p.lockdown)?;
    let body = p.lockdown.create_body(
        Role::Snippet,
        &image.id,
        &image.env,
        0,
        unix_after(ctx.timeout + GRACE),
        socket.as_ref().map(|s| s.dir()),
    );
    let mut live = Live::create(docker, &p.live, container_name(), body).await?;
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
    if let Err(e) = live.remove().await {
        tracing::warn!(error = %e, "snippet container not removed; the orphan reconcile will");
    }
    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        exit_code,
        timed_out,
        "snippet ran"
    );
    let (stdout, stdout_truncated) = stdout.finish();
    let (stderr, stderr_truncated) = stderr.finish();
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
