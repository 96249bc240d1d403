//! Test support shared by the core's unit tests: `Memo`, an in-memory
//! provider at the container tier whose sessions keep their cells' code (so
//! ordering and state are visible), and an engine over it.
//!
//! `Memo`'s JavaScript answers its code as stdout; `block` waits on the gate,
//! `crash` is an infrastructure error. Its session sandbox reports a changed
//! setting or a dirty cleanup when the flags say so.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use crate::config::Config;
use crate::engine::Engine;
use crate::error::{Error, Result, SessionEnd, SessionEnded};
use crate::provider::{
    Capabilities, Environment, Environments, Provider, RunContext, SandboxSpec, SessionSandbox,
};
use crate::request::{CellRun, JavaScriptRun, ProjectRun};
use crate::result::{CellResult, JavaScriptResult, ProjectResult};
use crate::session::SessionSettings;
use crate::tier::Isolation;

/// What a test can flip or count on `Memo`'s sandboxes.
#[derive(Default)]
pub(crate) struct Flags {
    pub(crate) changed: AtomicBool,
    pub(crate) dirty: AtomicBool,
    pub(crate) closed: AtomicUsize,
    pub(crate) cleanups: AtomicUsize,
    /// Milliseconds each open takes (a real sandbox takes seconds).
    pub(crate) open_ms: std::sync::atomic::AtomicU64,
}

pub(crate) struct Memo {
    flags: Arc<Flags>,
    gate: Arc<tokio::sync::Semaphore>,
}

struct MemoSandbox {
    flags: Arc<Flags>,
    gate: Arc<tokio::sync::Semaphore>,
    vars: Mutex<Vec<String>>,
}

#[async_trait]
impl SessionSandbox for MemoSandbox {
    async fn check(&self) -> std::result::Result<(), SessionEnded> {
        if self.flags.changed.load(Ordering::SeqCst) {
            return Err(SessionEnded {
                reason: SessionEnd::SandboxChanged,
                detail: "its settings changed".into(),
            });
        }
        Ok(())
    }
    async fn run_javascript(
        &self,
        job: &JavaScriptRun,
        _ctx: &RunContext,
    ) -> Result<JavaScriptResult> {
        match job.code.as_str() {
            "block" => {
                let _p = self.gate.acquire().await.unwrap();
                Ok(JavaScriptResult::default())
            }
            "crash" => Err(Error::infrastructure("the container daemon went away")),
            code => Ok(JavaScriptResult {
                stdout: code.as_bytes().to_vec(),
                ..Default::default()
            }),
        }
    }
    async fn run_project(&self, _job: &ProjectRun, _ctx: &RunContext) -> Result<ProjectResult> {
        Ok(ProjectResult::default())
    }
    async fn run_cell(&self, job: &CellRun, _ctx: &RunContext) -> Result<CellResult> {
        let mut vars = self.vars.lock().unwrap();
        let started = vars.is_empty();
        vars.push(job.code.clone());
        Ok(CellResult {
            stdout: vars.join(",").into_bytes(),
            interpreter_started: started,
            ..Default::default()
        })
    }
    async fn cleanup(&self) -> std::result::Result<(), SessionEnded> {
        self.flags.cleanups.fetch_add(1, Ordering::SeqCst);
        if self.flags.dirty.load(Ordering::SeqCst) {
            return Err(SessionEnded {
                reason: SessionEnd::BoundaryFailed,
                detail: "a process survived".into(),
            });
        }
        Ok(())
    }
    async fn suspend(&self) -> Result<bool> {
        Ok(true)
    }
    async fn resume(&self) -> Result<()> {
        Ok(())
    }
    async fn close(&self) {
        self.flags.closed.fetch_add(1, Ordering::SeqCst);
    }
}

#[async_trait]
impl Provider for Memo {
    fn name(&self) -> &'static str {
        "memo"
    }
    fn isolation(&self) -> Isolation {
        Isolation::Container
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            sessions: true,
            projects: true,
            ..Default::default()
        }
    }
    fn environments(&self) -> Environments {
        let env = Environment {
            software_identity: "memo:1".into(),
            default_timeout_ms: 5000,
            max_timeout_ms: 30000,
            ..Default::default()
        };
        Environments {
            javascript: Some(env.clone()),
            session: Some(env),
            ..Default::default()
        }
    }
    async fn prove(&self) -> Result<Isolation> {
        Ok(Isolation::Container)
    }
    async fn run_javascript(
        &self,
        _job: &JavaScriptRun,
        _ctx: &RunContext,
    ) -> Result<JavaScriptResult> {
        Ok(JavaScriptResult::default())
    }
    async fn open_session(&self, _spec: &SandboxSpec) -> Result<Box<dyn SessionSandbox>> {
        let ms = self.flags.open_ms.load(Ordering::SeqCst);
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        Ok(Box::new(MemoSandbox {
            flags: self.flags.clone(),
            gate: self.gate.clone(),
            vars: Mutex::default(),
        }))
    }
}

pub(crate) async fn engine(
    settings: SessionSettings,
) -> (Engine, Arc<Flags>, Arc<tokio::sync::Semaphore>) {
    let flags = Arc::new(Flags::default());
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let config = Config {
        sessions: settings,
        instance: "plimsoll:t".into(),
        ..Config::default()
    };
    let e = Engine::with_provider(
        Arc::new(Memo {
            flags: flags.clone(),
            gate: gate.clone(),
        }),
        &config,
    )
    .await
    .unwrap();
    (e, flags, gate)
}

pub(crate) fn on() -> SessionSettings {
    SessionSettings {
        max_sessions: 4,
        max_per_caller: 2,
        ..SessionSettings::default()
    }
}
