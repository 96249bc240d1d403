//! A session on OpenShell: one sandbox kept for many calls, whose main
//! process does nothing (the gateway's own), read back in full before every
//! call (labels, image, limits, policy and its hash: any difference ends the
//! session), deleted at close.
//!
//! Every call is a gateway command as the sandbox's user from
//! [`PROJECT_DIR`], which persists between calls: a snippet is `node -` with
//! the code on stdin, a project's files are unpacked there and its steps run
//! as a fresh run's do; cells go to one kept interpreter per language, a
//! kernel held open by an `ExecSandboxInteractive` call (the protocol is
//! [`session_kit`]'s). After each answer the stopper kills every process of
//! the sandbox's user but the kernels and the gateway's own command chain,
//! shows none left, and measures `/tmp` against the disk budget; a sandbox
//! whose commands run as root keeps no session (the stopper could not tell
//! the guest from the sandbox's own processes). Suspending does nothing: an
//! idle session's sandbox keeps running, and holding its slot, until its
//! lifetime ends or it is closed. A granted snippet or project call gets
//! its own grant relay ([`super::relay`]) for the call's length; cells
//! never carry grants.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use plimsoll_openshell_proto::v1 as pb;
use tokio::sync::Mutex;
use tokio::time::Instant;

use super::Inner;
use super::gateway::Interactive;
use super::relay::NODE_CLIENT;
use super::run::{self, GRACE, PROJECT_DIR};
use super::sandbox::{Live, WRITABLE};
use crate::error::{Error, ErrorCode, Result, SessionEnd, SessionEnded};
use crate::provider::session_kit::{self, Channel, Kernel, Kernels, NotStopped};
use crate::provider::{RunContext, SandboxSpec, SessionSandbox};
use crate::request::{CellRun, JavaScriptRun, ProjectRun};
use crate::result::{CellResult, JavaScriptResult, ProjectOutcome, ProjectResult};

/// The budget of the session's own short commands (setup, the stopper).
const TOOL_BUDGET: Duration = Duration::from_secs(20);

/// A session's sandbox.
pub(crate) struct OpenShellSession {
    inner: Arc<Inner>,
    /// The sandbox's name.
    name: String,
    /// `None` once closed.
    live: Mutex<Option<Live>>,
    /// The uid the sandbox runs commands as (never 0).
    uid: u32,
    kernels: Kernels,
    /// `SANDBOX_SESSION_DISK_MB` (0: unchecked).
    disk_mb: u32,
}

/// A kernel's interactive command.
struct Attached(Interactive);

#[async_trait]
impl Channel for Attached {
    async fn send(&mut self, bytes: &[u8]) -> bool {
        let chunk = pb::ExecSandboxInput {
            payload: Some(pb::exec_sandbox_input::Payload::Stdin(bytes.to_vec())),
        };
        self.0.stdin.send(chunk).await.is_ok()
    }

    async fn recv(&mut self) -> Option<Vec<u8>> {
        use pb::exec_sandbox_event::Payload;
        loop {
            match self.0.events.message().await.ok()??.payload {
                Some(Payload::Stdout(d)) => return Some(d.data),
                Some(Payload::Exit(_)) => return None,
                Some(Payload::Stderr(_)) | None => {}
            }
        }
    }
}

fn sh(script: String) -> Vec<String> {
    vec!["/bin/sh".into(), "-c".into(), script]
}

fn call_cancelled() -> Error {
    Error::new(
        ErrorCode::Cancelled,
        "the call was cancelled; its command was stopped",
    )
}

fn closed() -> Error {
    Error::session_ended(SessionEnd::Closed, "the session's sandbox is closed")
}

/// Opens a session's sandbox with kernels for `spec.languages` started.
pub(crate) async fn open(
    inner: &Arc<Inner>,
    spec: &SandboxSpec,
    disk_mb: u32,
) -> Result<OpenShellSession> {
    let live = Live::create(inner, Duration::from_millis(spec.lifetime_ms) + GRACE).await?;
    let who = live
        .gateway()
        .exec(
            &live.name,
            &sh(format!("mkdir -p {PROJECT_DIR} && id -u")),
            "/",
            Vec::new(),
            TOOL_BUDGET,
            64,
        )
        .await;
    let uid = match who {
        Ok(out) if out.exit_code == Some(0) => String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse::<u32>()
            .ok(),
        Ok(_) => None,
        Err(e) => {
            live.delete().await;
            return Err(e);
        }
    };
    let uid = match uid {
        Some(0) => {
            live.delete().await;
            return Err(Error::infrastructure(
                "the OpenShell sandbox runs commands as root; a session needs its own user \
                 (the cleanup between calls kills that user's processes)",
            ));
        }
        Some(u) => u,
        None => {
            live.delete().await;
            return Err(Error::infrastructure(
                "the OpenShell sandbox did not say which user its commands run as",
            ));
        }
    };
    let s = OpenShellSession {
        inner: inner.clone(),
        name: live.name.clone(),
        live: Mutex::new(Some(live)),
        uid,
        kernels: Kernels::default(),
        disk_mb,
    };
    if let Err(e) = s.kernels.warm(&spec.languages, &s).await {
        s.close().await;
        return Err(e);
    }
    Ok(s)
}

impl OpenShellSession {
    /// Runs `f` on the live sandbox; a closed session is refused.
    async fn with_live<T>(&self, f: impl AsyncFnOnce(&Live) -> Result<T>) -> Result<T> {
        let live = self.live.lock().await;
        match live.as_ref() {
            Some(l) => f(l).await,
            None => Err(closed()),
        }
    }

    /// `f` until the call's cancel: a cancelled call's command stream is
    /// dropped, which makes the gateway kill its process group.
    async fn until_cancel<T>(
        &self,
        ctx: &RunContext,
        f: impl AsyncFnOnce(&Live) -> Result<T>,
    ) -> Result<T> {
        tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => Err(call_cancelled()),
            r = self.with_live(f) => r,
        }
    }
}

#[async_trait]
impl session_kit::Hosted for OpenShellSession {
    /// Starts the kernel for `lang` and waits until it is ready.
    async fn start_kernel(&self, lang: &str) -> Result<Kernel> {
        let argv = session_kit::kernel_argv(lang)?;
        let held = self
            .with_live(async |l| l.gateway().interactive(&l.name, &argv, PROJECT_DIR).await)
            .await?;
        Kernel::ready(Box::new(Attached(held)), lang).await
    }

    /// The stopper once: `Ok(KiB used)` or why not.
    /// A tar unpacked into the project directory, as the guest.
    async fn write_files(
        &self,
        files: &[(&str, &[u8])],
    ) -> Result<std::result::Result<(), String>> {
        self.with_live(async |l| run::unpack(l, files).await).await
    }

    async fn stop_once(
        &self,
        kept: &[u32],
        until: Instant,
    ) -> std::result::Result<u64, NotStopped> {
        let cmd = session_kit::stop_argv(self.uid, &format!("du:{WRITABLE}"), kept);
        let budget = until.saturating_duration_since(Instant::now());
        let out = self
            .with_live(async |l| {
                l.gateway()
                    .exec(&l.name, &cmd, "/", Vec::new(), budget, 4096)
                    .await
            })
            .await
            .map_err(|e| NotStopped {
                shown: false,
                why: e.message().to_owned(),
            })?;
        session_kit::stop_outcome(out.exit_code, &out.stdout, &out.stderr)
    }
}

#[async_trait]
impl SessionSandbox for OpenShellSession {
    async fn check(&self) -> std::result::Result<(), SessionEnded> {
        if let Some(l) = self.live.lock().await.as_ref() {
            return l.still().await;
        }
        // Closed: ended only once its sandbox is shown gone (the startup
        // proof's check that a close deletes it).
        match self.inner.gateway.get(&self.name).await {
            Ok(None) => Err(SessionEnded {
                reason: SessionEnd::Closed,
                detail: "the session's sandbox is closed and gone".into(),
            }),
            Ok(Some(_)) | Err(_) => Ok(()),
        }
    }

    async fn run_javascript(
        &self,
        job: &JavaScriptRun,
        ctx: &RunContext,
    ) -> Result<JavaScriptResult> {
        let code = job.code.as_bytes().to_vec();
        let ran = self
            .until_cancel(ctx, async |l| {
                // A granted call's relay lives for the call; the stopper
                // sees to anything it leaves.
                let relay = run::relay(&self.inner, l, ctx).await?;
                let deadline = Instant::now() + ctx.timeout;
                let cmd = match relay {
                    Some(_) => run::granted(
                        true,
                        vec![
                            "node".into(),
                            "--require".into(),
                            NODE_CLIENT.into(),
                            "-".into(),
                        ],
                    ),
                    None => vec!["node".to_owned(), "-".to_owned()],
                };
                run::guest(l, &cmd, code, deadline).await
            })
            .await?;
        Ok(JavaScriptResult {
            stdout: ran.out.stdout,
            stderr: ran.out.stderr,
            exit_code: ran.exit_code,
            timed_out: ran.timed_out,
            stdout_truncated: ran.out.stdout_truncated,
            stderr_truncated: ran.out.stderr_truncated,
        })
    }

    async fn run_project(&self, job: &ProjectRun, ctx: &RunContext) -> Result<ProjectResult> {
        let files: Vec<(&str, &[u8])> = job
            .files
            .iter()
            .map(|f| (f.path.as_str(), f.content.as_bytes()))
            .collect();
        let mut result = self
            .until_cancel(ctx, async |l| {
                if let Err(why) = run::unpack(l, &files).await? {
                    return Ok(ProjectResult {
                        outcome: ProjectOutcome::SetupFailed,
                        outcome_detail: format!(
                            "writing the files into {PROJECT_DIR} failed: {why}"
                        ),
                        ..ProjectResult::default()
                    });
                }
                let relay = run::relay(&self.inner, l, ctx).await?;
                let deadline = Instant::now() + ctx.timeout;
                run::steps(l, job, ctx, deadline, relay.is_some()).await
            })
            .await?;
        if job.artifacts.is_empty() || result.outcome == ProjectOutcome::SetupFailed {
            return Ok(result);
        }
        // Collect only once no guest process but the kernels is left.
        let kept = self.kernels.pids().await;
        if session_kit::Hosted::stop_once(self, &kept, Instant::now() + TOOL_BUDGET)
            .await
            .is_err()
        {
            result.outcome_detail =
                "artifacts not collected: the steps' processes could not be stopped".into();
            return Ok(result);
        }
        self.with_live(async |l| run::collect(l, job, &mut result).await)
            .await?;
        Ok(result)
    }

    async fn run_cell(&self, job: &CellRun, ctx: &RunContext) -> Result<CellResult> {
        self.kernels
            .run_cell(self, job, ctx, PROJECT_DIR, call_cancelled)
            .await
    }

    async fn cleanup(&self) -> std::result::Result<(), SessionEnded> {
        self.kernels.cleanup(self, self.disk_mb, WRITABLE).await
    }

    async fn suspend(&self) -> Result<bool> {
        Ok(true)
    }

    async fn resume(&self) -> Result<()> {
        Ok(())
    }

    async fn close(&self) {
        // Dropping the kernels' commands ends them; deleting the sandbox
        // ends everything else.
        self.kernels.clear().await;
        if let Some(live) = self.live.lock().await.take() {
            live.delete().await;
        }
    }
}
