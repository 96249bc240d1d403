//! A session's sandbox: one locked-down container of the project image, kept
//! for many calls, every call run in `/work` by the session's warden
//! ([`session_kit::warden`], one held-open exec started at open), or by a
//! fresh `docker exec` once the warden is no longer trusted.
//!
//! The container gets a run's walls ([`Role::Session`]: read-only root, no
//! network, no capabilities, no-new-privileges, tmpfs `/tmp` `/dev/shm`
//! `/work`, the guest uid, memory, CPU and process limits) and a keeper main
//! process (guest uid + 1) that lives as long as the session may. Its security
//! settings are read back at open and compared before every call. Snippets are
//! `node -` with the code on stdin; projects write their files and run their
//! steps as projects do, but `/work` persists; cells go to one long-lived
//! interpreter per language, a held-open exec of a small kernel
//! (`session_kit/kernel.py`, `session_kit/kernel.js`) that answers each cell with one
//! line framed by a fresh host nonce. After each call the warden kills every
//! guest process but itself and the kernels and shows them gone, and `/work`
//! is measured against the disk budget. What this does not cover: grants in sessions, and a guest that
//! reads its own kernel's memory (it could learn the current nonce; it can only
//! forge its own cell's answer with it).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result, SessionEnd, SessionEnded};
use crate::provider::RunContext;
use crate::provider::docker::Inner;
use crate::provider::docker::archive::{self, COLLECT};
use crate::provider::docker::container::Live;
use crate::provider::docker::exec::{self, Ended, ExecDone, ExecFail, ExecSpec};
use crate::provider::docker::lockdown::{LABEL_SESSION, Role, WORK, container_name};
use crate::provider::docker::project::{ARTIFACT_BUDGET, STEP_CAP};
use crate::provider::docker::snippet::{GRACE, OUTPUT_CAP, cancelled, unix_after};
use crate::provider::docker::witness::InitWitness;
use crate::provider::session_kit::warden::{RanEnd, Warden};
use crate::provider::session_kit::{self, Kernel, NotStopped};
use crate::provider::{SandboxSpec, SessionSandbox};
use crate::request::{CellRun, JavaScriptRun, ProjectRun};
use crate::result::{CellResult, JavaScriptResult, ProjectOutcome, ProjectResult, StepResult};

mod cells;
mod pool;
mod readback;

use readback::{first_difference, settings_of};

pub(crate) use pool::{Pool, refill};

/// How long a call that came back with a signal exit waits for the
/// runtime's own death to show (see [`InitWitness::killed_by_settling`]).
const RUNTIME_SETTLE: Duration = Duration::from_millis(500);

/// The budget of the host's own small execs (cleanup, kill, unpack).
const TOOL_BUDGET: Duration = Duration::from_secs(20);

/// A session's container.
pub(crate) struct DockerSession {
    inner: Arc<Inner>,
    name: String,
    live: Mutex<Option<Live>>,
    baseline: serde_json::Value,
    stopped: CancellationToken,
    watcher: tokio::task::JoinHandle<()>,
    interps: tokio::sync::Mutex<HashMap<String, Kernel>>,
    /// The sweeper between calls while it is trusted; `None`: every sweep is
    /// a fresh exec of the stopper. Locked after `interps`, never before.
    warden: tokio::sync::Mutex<Option<Warden>>,
    /// The languages whose kernels were started at open.
    languages: Mutex<Vec<String>>,
    disk_mb: u32,
    /// The container's init and runtime processes, watched from the host.
    witness: Option<Arc<InitWitness>>,
    /// Handed out by the warm pool ([`DockerSession::pooled`]).
    from_pool: std::sync::atomic::AtomicBool,
}

/// Opens a session's container.
pub(crate) async fn open(inner: &Arc<Inner>, spec: &SandboxSpec) -> Result<DockerSession> {
    let image = inner.pinned(Role::Session)?;
    let docker = inner.client().await?;
    let life = Duration::from_millis(spec.lifetime_ms);
    let mut body = inner.lockdown.create_body(
        Role::Session,
        &image.id,
        &image.env,
        (life + GRACE).as_secs(),
        unix_after(life + GRACE),
        None,
    );
    if let Some(l) = body.labels.as_mut() {
        l.insert(LABEL_SESSION.into(), spec.fingerprint.clone());
    }
    let mut live = Live::create(docker, &inner.live, container_name(), body).await?;
    live.start().await?;
    let name = live.name().to_string();
    let baseline = settings_of(inner, &name).await.map_err(|e| {
        Error::infrastructure(format!(
            "reading the session's container back: {}",
            e.detail
        ))
    })?;
    let (stopped, watcher) = exec::watch_stop(docker, &name);
    let witness = live.witness();
    let s = DockerSession {
        inner: inner.clone(),
        name,
        live: Mutex::new(Some(live)),
        baseline,
        stopped,
        watcher,
        interps: tokio::sync::Mutex::new(HashMap::new()),
        warden: tokio::sync::Mutex::new(None),
        languages: Mutex::new(Vec::new()),
        disk_mb: inner.session_disk_mb,
        witness,
        from_pool: std::sync::atomic::AtomicBool::new(false),
    };
    *s.warden.lock().await = Some(s.start_warden().await?);
    s.warm(&spec.languages).await?;
    Ok(s)
}

impl DockerSession {
    /// Marks this session as handed out by the warm pool.
    pub(crate) fn pooled(&self) {
        self.from_pool
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Starts the kernel of each of `languages` (python, javascript) not
    /// running yet, before any call: each is still fresh to its first cell.
    pub(crate) async fn warm(&self, languages: &[String]) -> Result<()> {
        for lang in languages {
            if lang == "python" || lang == "javascript" {
                let mut interps = self.interps.lock().await;
                if !interps.contains_key(lang) {
                    let i = self.start_interp(lang).await?;
                    interps.insert(lang.clone(), i);
                    self.languages
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(lang.clone());
                }
            }
        }
        Ok(())
    }

    /// The languages whose kernels run now, started before any call.
    pub(crate) fn warmed(&self) -> Vec<String> {
        self.languages
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

fn exec_error(e: ExecFail) -> Error {
    match e {
        ExecFail::Infrastructure(e) => e,
        ExecFail::NotRunning(m) => Error::session_ended(
            SessionEnd::MainProcessEnded,
            format!("the session's container is not running: {m}"),
        ),
        ExecFail::Refused(m) => Error::infrastructure(format!("docker refused an exec: {m}")),
    }
}

impl DockerSession {
    /// The session's end when the runtime under its container died (a call
    /// that came back with a signal exit or none, see [`InitWitness`]).
    async fn runtime_died(&self, ended: &Ended) -> Option<Error> {
        if !matches!(
            ended,
            Ended::Exited(128..) | Ended::Unknown | Ended::SupervisorLost
        ) {
            return None;
        }
        let (pid, signal) = self
            .witness
            .as_ref()?
            .killed_by_settling(RUNTIME_SETTLE)
            .await?;
        Some(Error::session_ended(
            SessionEnd::MainProcessEnded,
            super::runtime_died(pid, signal),
        ))
    }

    fn spec(&self, cmd: Vec<String>, stdin: Option<Vec<u8>>, cap: usize, end: bool) -> ExecSpec {
        ExecSpec {
            user: self.inner.lockdown.guest_user(),
            cmd,
            workdir: WORK.into(),
            stdin,
            cap,
            end_with_process: end,
        }
    }

    /// Runs `spec` as the guest: through the warden while it is trusted
    /// (it runs under the exec seccomp filter already), else as a fresh
    /// `docker exec` (guest code, `end_with_process`, under the filter;
    /// the host's own tools not).
    async fn exec(
        &self,
        mut spec: ExecSpec,
        deadline: tokio::time::Instant,
        cancel: &CancellationToken,
    ) -> std::result::Result<ExecDone, ExecFail> {
        {
            let mut warden = self.warden.lock().await;
            if let Some(w) = warden.as_mut() {
                let started = std::time::Instant::now();
                let stdin = spec.stdin.as_deref();
                tokio::select! {
                    ran = w.run(&spec.cmd, &spec.workdir, stdin, spec.cap, deadline, cancel) => match ran {
                        Some(ran) => return Ok(ExecDone {
                            ended: match ran.ended {
                                RanEnd::Exited => Ended::Exited(ran.exit),
                                RanEnd::Deadline => Ended::Deadline,
                                RanEnd::Cancelled => Ended::Cancelled,
                            },
                            stdout: ran.stdout,
                            stderr: ran.stderr,
                            elapsed: started.elapsed(),
                        }),
                        None => {
                            tracing::warn!("the session's warden did not answer a run; running with execs from now on");
                            *warden = None;
                            // Either the container went (its runtime died,
                            // and the event follows the warden's streams
                            // closing) or guest code ended its supervisor;
                            // the sweep that follows ends what it ran.
                            let ended = tokio::select! {
                                _ = self.stopped.cancelled() => Ended::ContainerStopped,
                                _ = tokio::time::sleep(RUNTIME_SETTLE) => Ended::SupervisorLost,
                            };
                            return Ok(ExecDone::empty(ended, started.elapsed()));
                        }
                    },
                    _ = self.stopped.cancelled() => {
                        *warden = None;
                        return Ok(ExecDone::empty(Ended::ContainerStopped, started.elapsed()));
                    }
                }
            }
        }
        if spec.end_with_process {
            spec.cmd = self.inner.lockdown.guest_cmd(spec.cmd);
        }
        let docker = self
            .inner
            .client()
            .await
            .map_err(ExecFail::Infrastructure)?;
        exec::run(docker, &self.name, spec, deadline, cancel, &self.stopped).await
    }

    /// A short host tool as the guest.
    async fn tool(
        &self,
        cmd: Vec<String>,
        stdin: Option<Vec<u8>>,
    ) -> std::result::Result<ExecDone, ExecFail> {
        self.tool_until(cmd, stdin, tokio::time::Instant::now() + TOOL_BUDGET)
            .await
    }

    /// [`DockerSession::tool`] with a deadline of the caller's.
    async fn tool_until(
        &self,
        cmd: Vec<String>,
        stdin: Option<Vec<u8>>,
        until: tokio::time::Instant,
    ) -> std::result::Result<ExecDone, ExecFail> {
        let spec = self.spec(cmd, stdin, 64 * 1024, false);
        self.exec(spec, until, &CancellationToken::new()).await
    }

    /// Writes `files` into `/work`; `Err(why)` when the guest's tar failed.
    async fn write_files(
        &self,
        files: &[crate::request::ProjectFile],
    ) -> Result<std::result::Result<(), String>> {
        if files.is_empty() {
            return Ok(Ok(()));
        }
        let tar = archive::pack(files)
            .map_err(|e| Error::infrastructure(format!("packing files: {e}")))?;
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
        match self.tool(cmd.map(String::from).to_vec(), Some(tar)).await {
            Ok(ExecDone {
                ended: Ended::Exited(0),
                ..
            }) => Ok(Ok(())),
            Ok(d) => Ok(Err(format!(
                "writing the files into {WORK} failed: {}",
                String::from_utf8_lossy(&d.stderr.finish().0).trim()
            ))),
            Err(e) => Err(exec_error(e)),
        }
    }

    /// Kills a kernel by its pid (as the guest).
    async fn kill(&self, pid: u32) {
        let _ = self
            .tool(vec!["kill".into(), "-9".into(), pid.to_string()], None)
            .await;
    }

    fn take_live(&self) -> Option<Live> {
        self.live.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

fn exec_fail(e: bollard::errors::Error) -> ExecFail {
    match e {
        bollard::errors::Error::DockerResponseServerError {
            status_code: 409 | 404,
            message,
        } => ExecFail::NotRunning(message),
        e => ExecFail::Infrastructure(Error::infrastructure(format!("docker exec: {e}"))),
    }
}

#[async_trait]
impl SessionSandbox for DockerSession {
    fn source(&self) -> crate::phase::Source {
        if self.from_pool.load(std::sync::atomic::Ordering::Relaxed) {
            crate::phase::Source::SessionPool
        } else {
            crate::phase::Source::Session
        }
    }

    async fn check(&self) -> std::result::Result<(), SessionEnded> {
        let now = settings_of(&self.inner, &self.name).await?;
        match first_difference(&self.baseline, &now) {
            None => Ok(()),
            Some(what) => Err(SessionEnded {
                reason: SessionEnd::SandboxChanged,
                detail: format!("the session container's {what} changed since it opened"),
            }),
        }
    }

    async fn run_javascript(
        &self,
        job: &JavaScriptRun,
        ctx: &RunContext,
    ) -> Result<JavaScriptResult> {
        let spec = self.spec(
            vec!["node".into(), "-".into()],
            Some(job.code.clone().into_bytes()),
            OUTPUT_CAP,
            true,
        );
        let deadline = tokio::time::Instant::now() + ctx.timeout;
        let d = self
            .exec(spec, deadline, &ctx.cancel)
            .await
            .map_err(exec_error)?;
        if let Some(e) = self.runtime_died(&d.ended).await {
            return Err(e);
        }
        let (exit_code, timed_out) = match d.ended {
            Ended::Exited(c) => (c as i32, false),
            Ended::Deadline => (124, true),
            Ended::Cancelled => return Err(cancelled()),
            Ended::ContainerStopped => {
                return Err(Error::session_ended(
                    SessionEnd::MainProcessEnded,
                    "the session's container stopped during the call",
                ));
            }
            Ended::Unknown | Ended::SupervisorLost => (137, false),
        };
        let (stdout, stdout_truncated) = d.stdout.finish();
        let (stderr, stderr_truncated) = d.stderr.finish();
        Ok(JavaScriptResult {
            stdout,
            stderr,
            exit_code,
            timed_out,
            stdout_truncated,
            stderr_truncated,
        })
    }

    async fn run_project(&self, job: &ProjectRun, ctx: &RunContext) -> Result<ProjectResult> {
        let mut result = ProjectResult::default();
        if let Err(why) = self.write_files(&job.files).await? {
            result.outcome = ProjectOutcome::SetupFailed;
            result.outcome_detail = why;
            return Ok(result);
        }
        let deadline = tokio::time::Instant::now() + ctx.timeout;
        result.outcome = ProjectOutcome::Completed;
        for (i, step) in job.steps.iter().enumerate() {
            let n = i + 1;
            let spec = self.spec(
                vec!["sh".into(), "-c".into(), step.clone()],
                None,
                STEP_CAP,
                true,
            );
            let d = match self.exec(spec, deadline, &ctx.cancel).await {
                Ok(d) => d,
                Err(ExecFail::Refused(m)) => {
                    result.outcome = ProjectOutcome::RunnerFailed;
                    result.outcome_detail = format!("docker could not start step {n}: {m}");
                    break;
                }
                Err(e) => return Err(exec_error(e)),
            };
            if let Some(e) = self.runtime_died(&d.ended).await {
                return Err(e);
            }
            let (stdout, stdout_truncated) = d.stdout.finish();
            let (stderr, stderr_truncated) = d.stderr.finish();
            let mut r = StepResult {
                command: step.clone(),
                stdout,
                stderr,
                duration_ms: d.elapsed.as_millis() as i64,
                stdout_truncated,
                stderr_truncated,
                ..StepResult::default()
            };
            match d.ended {
                Ended::Cancelled => return Err(cancelled()),
                Ended::Exited(0) => result.steps.push(r),
                Ended::Exited(code) => {
                    r.exit_code = code as i32;
                    result.steps.push(r);
                    result.outcome_detail = format!("step {n} exited with code {code}");
                    break;
                }
                Ended::Deadline => {
                    r.exit_code = 124;
                    r.timed_out = true;
                    result.steps.push(r);
                    result.outcome = ProjectOutcome::TimedOut;
                    result.outcome_detail = format!(
                        "step {n} was still running at the call's deadline of {} ms",
                        ctx.timeout.as_millis()
                    );
                    break;
                }
                Ended::ContainerStopped => {
                    return Err(Error::session_ended(
                        SessionEnd::MainProcessEnded,
                        "the session's container stopped during the call",
                    ));
                }
                Ended::Unknown => {
                    result.steps.push(r);
                    result.outcome = ProjectOutcome::ProtocolError;
                    result.outcome_detail = format!("docker kept no exit status for step {n}");
                    break;
                }
                Ended::SupervisorLost => {
                    result.steps.push(r);
                    result.outcome = ProjectOutcome::RunnerFailed;
                    result.outcome_detail = format!(
                        "step {n} killed or stopped the session's warden running it, so its exit status is not known"
                    );
                    break;
                }
            }
        }
        if !job.artifacts.is_empty() {
            // Collect only once no guest process but the kernels is left.
            let quiet = self
                .stop_guests(tokio::time::Instant::now() + TOOL_BUDGET)
                .await
                .is_ok();
            if !quiet {
                result.outcome_detail =
                    "artifacts not collected: the steps' processes could not be stopped".into();
                return Ok(result);
            }
            let mut cmd = vec![
                "sh".to_string(),
                "-c".into(),
                COLLECT.into(),
                "sh".into(),
                ARTIFACT_BUDGET.to_string(),
            ];
            cmd.extend(job.artifacts.iter().cloned());
            let spec = self.spec(
                cmd,
                None,
                ARTIFACT_BUDGET + 2048 * job.artifacts.len() + 20 * 1024,
                false,
            );
            match self
                .exec(spec, tokio::time::Instant::now() + TOOL_BUDGET, &ctx.cancel)
                .await
            {
                Ok(ExecDone {
                    ended: Ended::Exited(0),
                    stdout,
                    stderr,
                    ..
                }) => {
                    let c = archive::unpack(&job.artifacts, &stdout.finish().0, &stderr.finish().0);
                    result.artifacts = c.artifacts;
                    result.artifacts_truncated = c.truncated;
                }
                Ok(_) | Err(ExecFail::Refused(_) | ExecFail::NotRunning(_)) => {
                    let note = "artifacts not collected: the collector failed";
                    result.outcome_detail = if result.outcome_detail.is_empty() {
                        note.into()
                    } else {
                        format!("{}; {note}", result.outcome_detail)
                    };
                }
                Err(ExecFail::Infrastructure(e)) => return Err(e),
            }
        }
        Ok(result)
    }

    async fn run_cell(&self, job: &CellRun, ctx: &RunContext) -> Result<CellResult> {
        self.cell(job, ctx).await
    }

    async fn cleanup(&self) -> std::result::Result<(), SessionEnded> {
        let boundary = |detail: String| SessionEnded {
            reason: SessionEnd::BoundaryFailed,
            detail,
        };
        let mut last = String::new();
        // A process table at its limit can refuse the stopper once or twice;
        // every attempt shares one budget, so the next call never waits on
        // the cleanup longer than TOOL_BUDGET before the session ends.
        let until = tokio::time::Instant::now() + TOOL_BUDGET;
        for _ in 0..5 {
            if tokio::time::Instant::now() >= until {
                break;
            }
            match self.stop_guests(until).await {
                Ok(used_kib) => {
                    if self.disk_mb > 0 && used_kib > u64::from(self.disk_mb) * 1024 {
                        return Err(SessionEnded {
                            reason: SessionEnd::DiskExceeded,
                            detail: format!(
                                "{WORK} holds {} MiB, over the session budget of {} MiB",
                                used_kib / 1024,
                                self.disk_mb
                            ),
                        });
                    }
                    return Ok(());
                }
                Err(Stop::Ended(e)) => return Err(e),
                Err(Stop::Shown(why)) => {
                    return Err(boundary(format!("the cleanup between calls failed: {why}")));
                }
                Err(Stop::Again(why)) => last = why,
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Err(boundary(format!(
            "the cleanup between calls could not run: {last}"
        )))
    }

    async fn suspend(&self) -> Result<bool> {
        let docker = self.inner.client().await?;
        docker
            .pause_container(&self.name)
            .await
            .map_err(|e| Error::infrastructure(format!("pausing the session's container: {e}")))?;
        Ok(true)
    }

    async fn resume(&self) -> Result<()> {
        let docker = self.inner.client().await?;
        docker
            .unpause_container(&self.name)
            .await
            .map_err(|e| Error::infrastructure(format!("resuming the session's container: {e}")))
    }

    async fn close(&self) {
        self.watcher.abort();
        self.interps.lock().await.clear();
        *self.warden.lock().await = None;
        if let Some(live) = self.take_live()
            && let Err(e) = live.remove().await
        {
            tracing::warn!(error = %e, "session container not removed; the orphan reconcile will");
        }
    }
}

/// Why the guest's processes were not shown stopped.
enum Stop {
    /// The sweep ran and processes survived: the session must end.
    Shown(String),
    /// It could not run; it may be tried again.
    Again(String),
    /// The container is gone.
    Ended(SessionEnded),
}

/// A warden gets this much of a sweep's budget; the rest is left for the
/// fresh execs that take over from one that does not answer.
const WARDEN_BUDGET: Duration = Duration::from_secs(8);

impl DockerSession {
    /// Has the warden pin a kernel's pid; a warden that does not answer is
    /// not trusted again.
    pub(super) async fn pin(&self, pid: u32) {
        let mut warden = self.warden.lock().await;
        if let Some(w) = warden.as_mut()
            && !w.pin(&[pid]).await
        {
            tracing::warn!("the session's warden did not answer; sweeping with execs from now on");
            *warden = None;
        }
    }

    /// Kills every guest process but the kernels, until none is left, and
    /// measures `/work` (KiB used): through the warden while it is trusted,
    /// else by one fresh exec of the stopper.
    async fn stop_guests(&self, until: tokio::time::Instant) -> std::result::Result<u64, Stop> {
        let mut interps = self.interps.lock().await;
        let kept: Vec<u32> = interps.values().map(|i| i.pid).collect();
        let mut warden = self.warden.lock().await;
        if let Some(w) = warden.as_mut() {
            let budget = until.min(tokio::time::Instant::now() + WARDEN_BUDGET);
            match w.sweep(&kept, WORK, budget).await {
                Ok(swept) => {
                    // Kernels that ended (or whose pid a leftover took) were
                    // not kept: the next cell of their language starts afresh.
                    interps.retain(|_, k| !swept.gone.contains(&k.pid));
                    return Ok(swept.kib);
                }
                Err(NotStopped { shown: true, why }) => return Err(Stop::Shown(why)),
                Err(NotStopped { why, .. }) => {
                    tracing::warn!(%why, "the session's warden failed; sweeping with execs from now on");
                    *warden = None;
                }
            }
        }
        drop(warden);
        drop(interps);
        let cmd = session_kit::stop_argv(
            self.inner.lockdown.settings.guest_uid,
            &format!("statfs:{WORK}"),
            &kept,
        );
        match self.tool_until(cmd, None, until).await {
            Ok(ExecDone {
                ended: Ended::Exited(0),
                stdout,
                ..
            }) => {
                let out = String::from_utf8_lossy(&stdout.finish().0).to_string();
                let n: Vec<u64> = out
                    .split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect();
                match n[..] {
                    [blocks, free, bsize] => Ok(blocks.saturating_sub(free) * bsize / 1024),
                    _ => Err(Stop::Shown(format!("could not measure {WORK}"))),
                }
            }
            Ok(d) if matches!(d.ended, Ended::ContainerStopped) => Err(Stop::Ended(SessionEnded {
                reason: SessionEnd::MainProcessEnded,
                detail: "the session's container stopped".into(),
            })),
            Ok(d) => {
                let why = String::from_utf8_lossy(&d.stderr.finish().0)
                    .trim()
                    .to_string();
                if matches!(d.ended, Ended::Exited(3)) {
                    Err(Stop::Shown(why))
                } else {
                    Err(Stop::Again(why))
                }
            }
            Err(ExecFail::NotRunning(_)) => Err(Stop::Ended(SessionEnded {
                reason: SessionEnd::MainProcessEnded,
                detail: "the session's container is not running".into(),
            })),
            Err(ExecFail::Refused(m)) => Err(Stop::Again(m)),
            Err(ExecFail::Infrastructure(e)) => Err(Stop::Again(e.message().to_string())),
        }
    }
}

/// The startup session proof on a fresh session container.
pub(crate) async fn prove(inner: &Arc<Inner>) -> Result<Vec<String>> {
    let s = open(inner, &session_kit::proof::spec()).await?;
    session_kit::proof::prove(&s).await
}

impl Drop for DockerSession {
    fn drop(&mut self) {
        self.watcher.abort();
    }
}
