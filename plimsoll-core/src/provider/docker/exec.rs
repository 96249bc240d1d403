//! Running one command beside a container's keeper (`docker exec`) and
//! reading its output from docker's demultiplexed streams.
//!
//! The host drives every step this way, so a step's exit code comes from
//! docker's own record of the process (`inspect_exec`), and its stdout and
//! stderr arrive as separate framed streams: nothing a step prints can pose as
//! either. Each stream keeps at most its cap (flagged, never marked in-band)
//! and is drained past it so a loud step still finishes. An exec ends when
//! docker records its process as exited, even if a background child still
//! holds its output open. What this does not cover: stopping the process at
//! the deadline — the caller kills the guest's processes afterwards.

use std::time::{Duration, Instant};

use bollard::Docker;
use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

use crate::error::Error;
use crate::result::CappedBuffer;

/// How long output may trail a process that docker records as exited while
/// its streams are still open.
const TRAILING_OUTPUT: Duration = Duration::from_secs(1);

/// What to run.
#[derive(Debug, Clone)]
pub(crate) struct ExecSpec {
    /// `uid:gid`.
    pub user: String,
    /// argv.
    pub cmd: Vec<String>,
    /// Working directory.
    pub workdir: String,
    /// Bytes for stdin (closed after), or no stdin.
    pub stdin: Option<Vec<u8>>,
    /// Bytes kept per stream.
    pub cap: usize,
    /// End when docker records the process as exited, even if its streams are
    /// still open (steps). Tools whose whole output matters (the file
    /// unpacker, the stopper, the collector) leave this off and are read to
    /// the end.
    pub end_with_process: bool,
}

/// How an exec ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// It exited with this code.
    Exited(i64),
    /// The deadline passed first; it may still be running.
    Deadline,
    /// The caller cancelled; it may still be running.
    Cancelled,
    /// The container stopped while the exec ran (a runtime may not close the
    /// exec's streams when its sandbox dies).
    ContainerStopped,
    /// Its streams closed but docker holds no exit code for it.
    Unknown,
    /// The process running it for a session (the warden) ended before it
    /// answered, while the container kept running: guest code killed or
    /// stopped its own supervisor, and its end is not known.
    SupervisorLost,
}

/// What an exec produced.
#[derive(Debug)]
pub(crate) struct ExecDone {
    /// Standard output, capped.
    pub stdout: CappedBuffer,
    /// Standard error, capped.
    pub stderr: CappedBuffer,
    /// How it ended.
    pub ended: Ended,
    /// Wall time.
    pub elapsed: Duration,
}

impl ExecDone {
    /// An end with no output seen (nothing came back from the process).
    pub(crate) fn empty(ended: Ended, elapsed: Duration) -> ExecDone {
        ExecDone {
            stdout: CappedBuffer::new(0),
            stderr: CappedBuffer::new(0),
            ended,
            elapsed,
        }
    }
}

/// Why an exec could not run at all.
#[derive(Debug)]
pub(crate) enum ExecFail {
    /// The container is not running (it died, or was removed).
    NotRunning(String),
    /// Docker would not start the process (for example the container's
    /// process limit is exhausted).
    Refused(String),
    /// Docker itself failed.
    Infrastructure(Error),
}

fn classify(what: &str, e: bollard::errors::Error) -> ExecFail {
    match e {
        bollard::errors::Error::DockerResponseServerError {
            status_code: 409 | 404,
            message,
        } => ExecFail::NotRunning(message),
        bollard::errors::Error::DockerResponseServerError {
            status_code: 500,
            message,
        } => ExecFail::Refused(message),
        e => ExecFail::Infrastructure(Error::infrastructure(format!("{what}: {e}"))),
    }
}

/// Runs `spec` in `container` until it exits, `deadline` passes, `cancel`
/// fires or `stopped` says the container is no longer running.
pub(crate) async fn run(
    docker: &Docker,
    container: &str,
    spec: ExecSpec,
    deadline: tokio::time::Instant,
    cancel: &CancellationToken,
    stopped: &CancellationToken,
) -> Result<ExecDone, ExecFail> {
    let started = Instant::now();
    let created = docker
        .create_exec(
            container,
            CreateExecOptions::<String> {
                attach_stdin: Some(spec.stdin.is_some()),
                attach_stdout: Some(true),
                attach_stderr: Some(true),
                tty: Some(false),
                user: Some(spec.user.clone()),
                working_dir: Some(spec.workdir.clone()),
                cmd: Some(spec.cmd.clone()),
                privileged: Some(false),
                ..CreateExecOptions::default()
            },
        )
        .await
        .map_err(|e| classify("docker exec create", e))?;
    let start = docker
        .start_exec(
            &created.id,
            Some(StartExecOptions {
                detach: false,
                tty: false,
                output_capacity: Some(64 * 1024),
            }),
        )
        .await
        .map_err(|e| classify("docker exec start", e))?;
    let StartExecResults::Attached {
        mut output,
        mut input,
    } = start
    else {
        return Err(ExecFail::Infrastructure(Error::infrastructure(
            "docker exec start: docker detached an attached exec",
        )));
    };
    let mut stdout = CappedBuffer::new(spec.cap);
    let mut stderr = CappedBuffer::new(spec.cap);
    let stdin = spec.stdin;
    let write = async move {
        if let Some(bytes) = stdin {
            // A process that exits without reading its stdin is not an error.
            let _ = input.write_all(&bytes).await;
        }
        let _ = input.shutdown().await;
        // Keep the write half alive until the read side is done.
        std::future::pending::<()>().await;
    };
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
                        "reading an exec's output from docker: {e}"
                    )));
                }
            }
        }
        Ok(())
    };
    // A step's own process can end while something it left in the background
    // still holds its stdout open: docker's record of the process decides,
    // and trailing output gets a moment to arrive.
    let exec_id = created.id.clone();
    let exited = async {
        if !spec.end_with_process {
            return std::future::pending().await;
        }
        loop {
            tokio::time::sleep(Duration::from_millis(250)).await;
            if let Ok(i) = docker.inspect_exec(&exec_id).await
                && i.running == Some(false)
            {
                tokio::time::sleep(TRAILING_OUTPUT).await;
                return i.exit_code;
            }
        }
    };
    let ended = tokio::select! {
        r = read => { r.map_err(ExecFail::Infrastructure)?; None }
        code = exited => Some(code.map_or(Ended::Unknown, Ended::Exited)),
        _ = write => None,
        _ = tokio::time::sleep_until(deadline) => Some(Ended::Deadline),
        _ = cancel.cancelled() => Some(Ended::Cancelled),
        _ = stopped.cancelled() => Some(Ended::ContainerStopped),
    };
    let ended = match ended {
        Some(e) => e,
        None => exit_code(docker, &created.id).await?,
    };
    Ok(ExecDone {
        stdout,
        stderr,
        ended,
        elapsed: started.elapsed(),
    })
}

/// A token that fires when `container` stops running (or docker stops
/// answering for it), and the task watching; abort the task when done.
pub(crate) fn watch_stop(
    docker: &Docker,
    container: &str,
) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let token = CancellationToken::new();
    let (docker, name, fire) = (docker.clone(), container.to_owned(), token.clone());
    let task = tokio::spawn(async move {
        loop {
            let opts = bollard::query_parameters::WaitContainerOptionsBuilder::new()
                .condition("not-running")
                .build();
            let mut wait = docker.wait_container(&name, Some(opts));
            match wait.next().await {
                Some(Ok(_))
                | Some(Err(bollard::errors::Error::DockerContainerWaitError { .. })) => break,
                // The wait itself failed: believe only docker's record.
                _ => match docker.inspect_container(&name, None).await {
                    Ok(i) if i.state.as_ref().and_then(|s| s.running) == Some(true) => {
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                    _ => break,
                },
            }
        }
        fire.cancel();
    });
    (token, task)
}

/// Docker's record of the exec's exit code, waiting briefly for it to settle
/// after the streams close.
async fn exit_code(docker: &Docker, id: &str) -> Result<Ended, ExecFail> {
    for _ in 0..100 {
        let i = docker
            .inspect_exec(id)
            .await
            .map_err(|e| classify("docker exec inspect", e))?;
        if i.running != Some(true) {
            return Ok(i.exit_code.map_or(Ended::Unknown, Ended::Exited));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(Ended::Unknown)
}
