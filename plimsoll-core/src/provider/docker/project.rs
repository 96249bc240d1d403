//! A project: files into `/work`, steps in order, artifacts out — every part
//! driven from the host.
//!
//! The container's main process is a keeper (`sleep`, as guest uid + 1, under
//! docker's init, which reaps). Each step is its own `docker exec` of
//! `sh -c <step>` as the guest in `/work`: its exit code is docker's record and
//! its stdout and stderr are docker's separate streams (1 MiB each kept). So
//! there is no in-guest runner and no report for a step to forge. Before
//! artifacts are read every guest-uid process is killed and shown gone, so no
//! step can race the collector. A granted run's steps get the run's broker
//! socket (bind-mounted read-only, `HOST_API_SOCKET` set), removed when the run
//! returns. What this does not cover: what the broker allows (that is
//! [`crate::grant`]'s policy).

use std::time::Duration;

use crate::error::Result;
use crate::provider::RunContext;
use crate::provider::docker::Inner;
use crate::provider::docker::archive::{self, COLLECT, STOP_GUEST};
use crate::provider::docker::container::Live;
use crate::provider::docker::exec::{self, Ended, ExecDone, ExecFail, ExecSpec};
use crate::provider::docker::lockdown::{Role, WORK, container_name};
use crate::provider::docker::snippet::{GRACE, cancelled, unix_after};
use crate::request::ProjectRun;
use crate::result::{ProjectOutcome, ProjectResult, StepResult};

/// Bytes kept per step stream.
pub(crate) const STEP_CAP: usize = 1024 * 1024;
/// The artifacts' total budget.
pub(crate) const ARTIFACT_BUDGET: usize = 8 * 1024 * 1024;
/// Time for stopping the guest and collecting, after the steps' deadline.
const COLLECT_BUDGET: Duration = Duration::from_secs(15);

/// Aborts a background task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn excerpt(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    let s = s.trim();
    let mut end = s.len().min(300);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].replace(['\n', '\r'], " ")
}

/// Removes a container the run gives up on; the orphan reconcile takes it
/// when docker does not answer.
async fn discard(live: Live) {
    if let Err(r) = live.remove().await {
        tracing::warn!(error = %r, "project container not removed; the orphan reconcile will");
    }
}

/// Runs one project.
pub(crate) async fn run(p: &Inner, job: &ProjectRun, ctx: &RunContext) -> Result<ProjectResult> {
    let image = p.pinned(Role::Project)?;
    let docker = p.client().await?;
    let keeper_secs = (ctx.timeout + GRACE + COLLECT_BUDGET).as_secs();
    // A granted run's broker socket: removed (with its directory) when this
    // returns, on every path.
    let socket = super::granted_socket(ctx, &p.lockdown)?;
    let body = p.lockdown.create_body(
        Role::Project,
        &image.id,
        &image.env,
        keeper_secs,
        unix_after(ctx.timeout + GRACE + COLLECT_BUDGET),
        socket.as_ref().map(|s| s.dir()),
    );
    let mut live = Live::create(docker, &p.live, container_name(), body).await?;
    ctx.phases.acquired(crate::phase::Source::Fresh);
    live.start().await?;
    let (stopped, watcher) = exec::watch_stop(docker, live.name());
    let _watcher = AbortOnDrop(watcher);
    let deadline = tokio::time::Instant::now() + ctx.timeout;
    let guest = p.lockdown.guest_user();
    let spec = |cmd: Vec<String>, stdin: Option<Vec<u8>>, cap: usize| ExecSpec {
        user: guest.clone(),
        cmd: p.lockdown.guest_cmd(cmd),
        workdir: WORK.into(),
        // Only steps (the ones without stdin) end with their own process.
        end_with_process: stdin.is_none(),
        stdin,
        cap,
    };
    let mut result = ProjectResult::default();

    // Files.
    if !job.files.is_empty() {
        let tar = archive::pack(&job.files)
            .map_err(|e| crate::error::Error::infrastructure(format!("packing files: {e}")))?;
        let cmd = [
            "tar",
            "-x",
            "-f",
            "-",
            "-C",
            WORK,
            "--no-same-owner",
            "--no-same-permissions",
        ];
        let done = exec::run(
            docker,
            live.name(),
            spec(cmd.map(String::from).to_vec(), Some(tar), 4096),
            deadline,
            &ctx.cancel,
            &stopped,
        )
        .await;
        // The staging exec went with its sandbox, or died of a signal: that
        // may be docker's doing or the runtime's death under the run — an
        // infrastructure error, not the project's setup failing.
        let gone = match &done {
            Ok(d) => matches!(
                d.ended,
                Ended::Exited(128..) | Ended::ContainerStopped | Ended::Unknown
            ),
            Err(e) => !matches!(e, ExecFail::Infrastructure(_)),
        };
        if gone && let Some(e) = p.ended_outside(&live).await {
            discard(live).await;
            return Err(e);
        }
        let setup_error = match done {
            Ok(ExecDone {
                ended: Ended::Exited(0),
                ..
            }) => None,
            Ok(ExecDone {
                ended: Ended::Cancelled,
                ..
            }) => {
                let _ = live.remove().await;
                return Err(cancelled());
            }
            Ok(ExecDone {
                ended: Ended::ContainerStopped,
                ..
            }) => Some(format!(
                "writing the files into {WORK} failed: {}",
                p.why_stopped(live.name())
                    .await?
                    .unwrap_or_else(|| "the sandbox stopped".into())
            )),
            Ok(ExecDone {
                ended: Ended::Deadline,
                ..
            }) => {
                result.outcome = ProjectOutcome::TimedOut;
                result.outcome_detail = "the deadline passed while writing the files".into();
                let _ = live.remove().await;
                return Ok(result);
            }
            Ok(d) => Some(format!(
                "writing the files into {WORK} failed: {}",
                excerpt(&d.stderr.finish().0)
            )),
            Err(ExecFail::Infrastructure(e)) => return Err(e),
            Err(ExecFail::NotRunning(m) | ExecFail::Refused(m)) => {
                Some(format!("writing the files into {WORK} failed: {m}"))
            }
        };
        if let Some(detail) = setup_error {
            result.outcome = ProjectOutcome::SetupFailed;
            result.outcome_detail = detail;
            let _ = live.remove().await;
            return Ok(result);
        }
    }

    // Started: the container runs and holds the files.
    ctx.phases.mark(crate::phase::Phase::Started);
    // Steps, in order, until the first failure.
    result.outcome = ProjectOutcome::Completed;
    for (i, step) in job.steps.iter().enumerate() {
        let n = i + 1;
        let done = exec::run(
            docker,
            live.name(),
            spec(vec!["sh".into(), "-c".into(), step.clone()], None, STEP_CAP),
            deadline,
            &ctx.cancel,
            &stopped,
        )
        .await;
        let done = match done {
            Ok(d) => d,
            Err(ExecFail::Infrastructure(e)) => return Err(e),
            Err(ExecFail::NotRunning(m) | ExecFail::Refused(m)) => {
                if let Some(e) = p.ended_outside(&live).await {
                    discard(live).await;
                    return Err(e);
                }
                let why = p.why_stopped(live.name()).await?;
                (result.outcome, result.outcome_detail) = if i == 0 && why.is_none() {
                    (
                        ProjectOutcome::SetupFailed,
                        format!("docker could not start step 1: {m}"),
                    )
                } else {
                    (
                        ProjectOutcome::RunnerFailed,
                        format!("docker could not start step {n}: {}", why.unwrap_or(m)),
                    )
                };
                break;
            }
        };
        // A step that died of a signal, or went with its sandbox, may have
        // been killed by docker itself (a daemon stop or restart, a `docker
        // kill`), or the runtime under it died: that is an infrastructure
        // error, not the step's exit.
        if matches!(
            done.ended,
            Ended::Exited(128..) | Ended::ContainerStopped | Ended::Unknown
        ) && let Some(e) = p.ended_outside(&live).await
        {
            discard(live).await;
            return Err(e);
        }
        let (stdout, stdout_truncated) = done.stdout.finish();
        let (stderr, stderr_truncated) = done.stderr.finish();
        let mut r = StepResult {
            command: step.clone(),
            stdout,
            stderr,
            duration_ms: done.elapsed.as_millis() as i64,
            stdout_truncated,
            stderr_truncated,
            ..StepResult::default()
        };
        match done.ended {
            Ended::Cancelled => {
                let _ = live.remove().await;
                return Err(cancelled());
            }
            Ended::Exited(0) => result.steps.push(r),
            Ended::Exited(code) => {
                r.exit_code = code as i32;
                result.steps.push(r);
                result.outcome_detail = format!("step {n} exited with code {code}");
                if let Some(why) = p.why_stopped(live.name()).await? {
                    result.outcome = ProjectOutcome::RunnerFailed;
                    result.outcome_detail = format!("step {n} ended with the sandbox: {why}");
                }
                break;
            }
            Ended::Deadline => {
                r.exit_code = 124;
                r.timed_out = true;
                result.steps.push(r);
                result.outcome = ProjectOutcome::TimedOut;
                result.outcome_detail = format!(
                    "step {n} was still running at the run's deadline of {} ms",
                    ctx.timeout.as_millis()
                );
                break;
            }
            Ended::ContainerStopped => {
                // The step's process went with its sandbox: killed.
                r.exit_code = 137;
                result.steps.push(r);
                let why = p
                    .why_stopped(live.name())
                    .await?
                    .unwrap_or_else(|| "the sandbox stopped".into());
                result.outcome = ProjectOutcome::RunnerFailed;
                result.outcome_detail = format!("step {n} ended with the sandbox: {why}");
                break;
            }
            Ended::Unknown | Ended::SupervisorLost => {
                result.steps.push(r);
                let why = p.why_stopped(live.name()).await?;
                result.outcome = if why.is_some() {
                    ProjectOutcome::RunnerFailed
                } else {
                    ProjectOutcome::ProtocolError
                };
                result.outcome_detail = format!(
                    "docker kept no exit status for step {n}{}",
                    why.map(|w| format!(": {w}")).unwrap_or_default()
                );
                break;
            }
        }
    }

    ctx.phases.mark(crate::phase::Phase::Running);
    // Artifacts, once no guest process is left.
    if !job.artifacts.is_empty() {
        let until = tokio::time::Instant::now() + COLLECT_BUDGET;
        match collect(p, &live, job, until, &ctx.cancel, &stopped).await? {
            Ok(c) => {
                result.artifacts = c.artifacts;
                result.artifacts_truncated = c.truncated;
                if !c.refused.is_empty() {
                    let list: Vec<String> = c
                        .refused
                        .iter()
                        .map(|(path, why)| format!("{path} ({why})"))
                        .collect();
                    let note = format!("artifacts not collected: {}", list.join(", "));
                    result.outcome_detail = if result.outcome_detail.is_empty() {
                        note
                    } else {
                        format!("{}; {note}", result.outcome_detail)
                    };
                }
            }
            Err(why) => {
                let note = format!("artifacts not collected: {why}");
                result.outcome_detail = if result.outcome_detail.is_empty() {
                    note
                } else {
                    format!("{}; {note}", result.outcome_detail)
                };
            }
        }
    }
    ctx.phases.mark(crate::phase::Phase::Collected);
    if let Err(e) = live.remove().await {
        tracing::warn!(error = %e, "project container not removed; the orphan reconcile will");
    }
    ctx.phases.mark(crate::phase::Phase::CleanedUp);
    Ok(result)
}

/// Stops every guest process, then collects. The outer `Result` is
/// infrastructure; the inner `Err` says why nothing could be collected.
async fn collect(
    p: &Inner,
    live: &Live,
    job: &ProjectRun,
    until: tokio::time::Instant,
    cancel: &tokio_util::sync::CancellationToken,
    stopped: &tokio_util::sync::CancellationToken,
) -> Result<Result<archive::Collected, String>> {
    let docker = p.client().await?;
    let guest = p.lockdown.guest_user();
    let uid = p.lockdown.settings.guest_uid.to_string();
    let mut quiet = Err(String::from("the steps' processes could not be stopped"));
    // A process table at its limit can refuse the stopper once or twice.
    for _ in 0..5 {
        let spec = ExecSpec {
            user: guest.clone(),
            cmd: vec![
                "sh".into(),
                "-c".into(),
                STOP_GUEST.into(),
                "sh".into(),
                uid.clone(),
            ],
            workdir: "/".into(),
            stdin: None,
            cap: 4096,
            end_with_process: false,
        };
        match exec::run(docker, live.name(), spec, until, cancel, stopped).await {
            Ok(ExecDone {
                ended: Ended::Exited(0),
                ..
            }) => {
                quiet = Ok(());
                break;
            }
            Ok(ExecDone {
                ended: Ended::Cancelled,
                ..
            }) => return Err(cancelled()),
            Ok(ExecDone {
                ended: Ended::ContainerStopped,
                ..
            }) => return Ok(Err("the sandbox stopped".into())),
            Ok(d) => {
                quiet = Err(format!(
                    "the steps' processes could not be stopped: {}",
                    excerpt(&d.stderr.finish().0)
                ))
            }
            Err(ExecFail::Infrastructure(e)) => return Err(e),
            Err(ExecFail::NotRunning(m)) => return Ok(Err(format!("the sandbox stopped: {m}"))),
            Err(ExecFail::Refused(m)) => quiet = Err(format!("docker refused the stopper: {m}")),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    if let Err(why) = quiet {
        return Ok(Err(why));
    }
    let mut cmd = vec![
        "sh".to_string(),
        "-c".into(),
        COLLECT.into(),
        "sh".into(),
        ARTIFACT_BUDGET.to_string(),
    ];
    cmd.extend(job.artifacts.iter().cloned());
    let spec = ExecSpec {
        user: guest,
        cmd,
        workdir: WORK.into(),
        stdin: None,
        end_with_process: false,
        // Room for the budget plus tar's headers (long names take three
        // blocks), per-file padding and the final 10 KiB record.
        cap: ARTIFACT_BUDGET + 2048 * job.artifacts.len() + 20 * 1024,
    };
    match exec::run(docker, live.name(), spec, until, cancel, stopped).await {
        Ok(ExecDone {
            ended: Ended::Exited(0),
            stdout,
            stderr,
            ..
        }) => {
            let (tar, _) = stdout.finish();
            let (status, _) = stderr.finish();
            Ok(Ok(archive::unpack(&job.artifacts, &tar, &status)))
        }
        Ok(ExecDone {
            ended: Ended::Cancelled,
            ..
        }) => Err(cancelled()),
        Ok(d) => Ok(Err(format!(
            "the collector failed: {}",
            excerpt(&d.stderr.finish().0)
        ))),
        Err(ExecFail::Infrastructure(e)) => Err(e),
        Err(ExecFail::NotRunning(m) | ExecFail::Refused(m)) => {
            Ok(Err(format!("the collector could not start: {m}")))
        }
    }
}
