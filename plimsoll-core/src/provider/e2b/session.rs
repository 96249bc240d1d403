//! A session on E2B: one VM kept for many calls, created as a fresh run's
//! is (secure, outbound traffic denied, stamped and leased before the
//! create), read back before every call (running, the resources and the
//! closed network it was created with, its lease: a VM that is gone or
//! paused behind plimsoll's back ends the session, any other difference
//! ends it as changed), killed at close.
//!
//! Calls run as the template's `user` in [`PROJECT_DIR`], which persists: a
//! snippet and a project as a fresh run's do; cells go to one kept
//! interpreter per language, a kernel envd keeps running with its stdin
//! open (fed by `SendInput`; the protocol is [`session_kit`]'s). After each
//! answer the stopper, run as root, kills every process of the guest's uid
//! but the kernels (envd and the kernels' ancestors are root's), shows none
//! left, and measures `/home/user` and `/tmp` against the disk budget.
//!
//! Suspending pauses the VM (`POST /sandboxes/{id}/pause`): its disk is
//! kept, its processes end, and its memory is no longer held; resuming
//! connects to it again for the rest of its lifetime, and the next cell of
//! each language says `interpreter_started`. A call carrying a grant is
//! refused: the session's VM has no way out, not even to the guard.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::Mutex;
use tokio::time::Instant;

use super::Inner;
use super::envd::{Finish, Held};
use super::process::{Event, StartRequest};
use super::run::{self, GRACE, GUEST_USER, PROJECT_DIR};
use super::vm::Vm;
use crate::error::{Error, ErrorCode, Result, SessionEnd, SessionEnded};
use crate::provider::session_kit::{self, Channel, Kernel, Kernels, NotStopped};
use crate::provider::{RunContext, SandboxSpec, SessionSandbox};
use crate::request::{CellRun, JavaScriptRun, ProjectRun};
use crate::result::{CellResult, JavaScriptResult, ProjectOutcome, ProjectResult};

/// The budget of the session's own short commands (the stopper, `id -u`).
const TOOL_BUDGET: Duration = Duration::from_secs(20);
/// What the disk budget measures: everything the guest can write.
const MEASURED: &str = "du:/home/user /tmp";

/// A session's VM.
pub(crate) struct E2bSession {
    inner: Arc<Inner>,
    /// The VM's id.
    id: String,
    /// `None` once closed.
    vm: Mutex<Option<Vm>>,
    /// The guest's uid in the VM.
    uid: u32,
    kernels: Kernels,
    /// `SANDBOX_SESSION_DISK_MB` (0: unchecked).
    disk_mb: u32,
    /// When the VM's lifetime ends (a resume asks for no more).
    ends: Instant,
}

/// A kernel envd keeps.
struct Kept(Held);

#[async_trait]
impl Channel for Kept {
    async fn send(&mut self, bytes: &[u8]) -> bool {
        self.0.send(bytes).await.is_ok()
    }

    async fn recv(&mut self) -> Option<Vec<u8>> {
        loop {
            match self.0.next().await? {
                Event::Stdout(d) => return Some(d),
                Event::End(_) => return None,
                Event::Start(_) | Event::Stderr(_) | Event::Keepalive => {}
            }
        }
    }
}

fn call_cancelled() -> Error {
    Error::new(
        ErrorCode::Cancelled,
        "the call was cancelled; its process was killed",
    )
}

fn no_grants() -> Error {
    Error::unsupported(
        "an e2b session's VM has no way out, not even to the egress guard: make granted calls as fresh runs",
    )
}

fn closed() -> Error {
    Error::session_ended(SessionEnd::Closed, "the session's VM is closed")
}

/// Opens a session's VM with kernels for `spec.languages` started.
pub(crate) async fn open(
    inner: &Arc<Inner>,
    spec: &SandboxSpec,
    disk_mb: u32,
) -> Result<E2bSession> {
    let life = Duration::from_millis(spec.lifetime_ms) + GRACE;
    let vm = Vm::create(inner, life, None).await?;
    let uid = match who(&vm).await {
        Ok(uid) => uid,
        Err(e) => {
            vm.kill().await;
            return Err(e);
        }
    };
    let s = E2bSession {
        inner: inner.clone(),
        id: vm.id.clone(),
        vm: Mutex::new(Some(vm)),
        uid,
        kernels: Kernels::default(),
        disk_mb,
        ends: Instant::now() + life,
    };
    if let Err(e) = s.kernels.warm(&spec.languages, &s).await {
        s.close().await;
        return Err(e);
    }
    Ok(s)
}

/// The VM read back, then the guest's uid (never root's).
async fn who(vm: &Vm) -> Result<u32> {
    vm.check().await?;
    let start = StartRequest {
        cmd: "id".into(),
        args: vec!["-u".into()],
        envs: Default::default(),
        cwd: Some(PROJECT_DIR.into()),
        stdin: false,
    };
    let until = Instant::now() + TOOL_BUDGET;
    let ran = vm
        .envd
        .run(&start, GUEST_USER, until, 64, &Default::default())
        .await?;
    let (out, _) = ran.stdout.finish();
    match (
        ran.finish,
        String::from_utf8_lossy(&out).trim().parse::<u32>(),
    ) {
        (Finish::Exit(0), Ok(uid)) if uid != 0 => Ok(uid),
        _ => Err(Error::infrastructure(format!(
            "the E2B sandbox's {GUEST_USER} did not show an unprivileged uid"
        ))),
    }
}

impl E2bSession {
    /// Runs `f` on the live VM; a closed session is refused.
    async fn with_vm<T>(&self, f: impl AsyncFnOnce(&Vm) -> Result<T>) -> Result<T> {
        let vm = self.vm.lock().await;
        match vm.as_ref() {
            Some(v) => f(v).await,
            None => Err(closed()),
        }
    }
}

#[async_trait]
impl session_kit::Hosted for E2bSession {
    /// Starts the kernel for `lang` and waits until it is ready.
    async fn start_kernel(&self, lang: &str) -> Result<Kernel> {
        let mut argv = session_kit::kernel_argv(lang)?;
        let start = StartRequest {
            cmd: argv.remove(0),
            args: argv,
            envs: Default::default(),
            cwd: Some(PROJECT_DIR.into()),
            stdin: true,
        };
        let held = self
            .with_vm(async |v| v.envd.hold(&start, GUEST_USER).await)
            .await?;
        Kernel::ready(Box::new(Kept(held)), lang).await
    }

    /// The stopper once: `Ok(KiB used)`, or why not (`true`: it ran and
    /// failed to show the VM clean).
    /// Through envd, as the guest, below the project directory.
    async fn write_files(
        &self,
        files: &[(&str, &[u8])],
    ) -> Result<std::result::Result<(), String>> {
        let files: Vec<(String, &[u8])> = files
            .iter()
            .map(|(p, c)| (format!("{PROJECT_DIR}/{p}"), *c))
            .collect();
        self.with_vm(async |v| v.envd.write(GUEST_USER, &files).await)
            .await
    }

    async fn stop_once(
        &self,
        kept: &[u32],
        until: Instant,
    ) -> std::result::Result<u64, NotStopped> {
        let mut args = session_kit::stop_argv(self.uid, MEASURED, kept);
        let start = StartRequest {
            cmd: args.remove(0),
            args,
            envs: Default::default(),
            cwd: Some("/".into()),
            stdin: false,
        };
        let ran = self
            .with_vm(async |v| {
                v.envd
                    .run(&start, "root", until, 4096, &Default::default())
                    .await
            })
            .await
            .map_err(|e| NotStopped {
                shown: false,
                why: e.message().to_owned(),
            })?;
        let (out, _) = ran.stdout.finish();
        let (err, _) = ran.stderr.finish();
        let exit = match ran.finish {
            Finish::Exit(code) => Some(code),
            Finish::Deadline | Finish::Flooded | Finish::Cancelled => None,
        };
        session_kit::stop_outcome(exit, &out, &err)
    }
}

#[async_trait]
impl SessionSandbox for E2bSession {
    async fn check(&self) -> std::result::Result<(), SessionEnded> {
        if let Some(v) = self.vm.lock().await.as_ref() {
            return v.still().await;
        }
        // Closed: ended only once its VM is shown gone (the startup proof's
        // check that a close kills it).
        match self.inner.api.exists(&self.id).await {
            Ok(false) => Err(SessionEnded {
                reason: SessionEnd::Closed,
                detail: "the session's VM is closed and gone".into(),
            }),
            Ok(true) | Err(_) => Ok(()),
        }
    }

    async fn run_javascript(
        &self,
        job: &JavaScriptRun,
        ctx: &RunContext,
    ) -> Result<JavaScriptResult> {
        if ctx.grant.is_some() {
            return Err(no_grants());
        }
        let r = self
            .with_vm(async |v| run::snippet_on(v, job, ctx, Default::default()).await)
            .await;
        match r {
            Err(e) if e.code() == ErrorCode::Cancelled => Err(call_cancelled()),
            r => r,
        }
    }

    async fn run_project(&self, job: &ProjectRun, ctx: &RunContext) -> Result<ProjectResult> {
        if ctx.grant.is_some() {
            return Err(no_grants());
        }
        let deadline = Instant::now() + ctx.timeout;
        let mut result = self
            .with_vm(async |v| run::steps(v, job, ctx, deadline, Default::default()).await)
            .await
            .map_err(|e| match e.code() {
                ErrorCode::Cancelled => call_cancelled(),
                _ => e,
            })?;
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
        self.with_vm(async |v| run::collect(v, job, ctx, &mut result).await)
            .await?;
        Ok(result)
    }

    async fn run_cell(&self, job: &CellRun, ctx: &RunContext) -> Result<CellResult> {
        self.kernels
            .run_cell(self, job, ctx, PROJECT_DIR, call_cancelled)
            .await
    }

    async fn cleanup(&self) -> std::result::Result<(), SessionEnded> {
        self.kernels
            .cleanup(self, self.disk_mb, "/home/user and /tmp")
            .await
    }

    async fn suspend(&self) -> Result<bool> {
        // A paused VM's processes are gone: so are the interpreters.
        self.kernels.clear().await;
        self.with_vm(async |v| self.inner.api.pause(&v.id).await)
            .await?;
        Ok(false)
    }

    async fn resume(&self) -> Result<()> {
        let left = self.ends.saturating_duration_since(Instant::now());
        self.with_vm(async |v| self.inner.api.connect(&v.id, left).await)
            .await
    }

    async fn close(&self) {
        self.kernels.clear().await;
        if let Some(vm) = self.vm.lock().await.take() {
            vm.kill().await;
        }
    }
}
