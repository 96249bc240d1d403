//! What a provider gives a session: one sandbox kept for many calls.

use async_trait::async_trait;

use super::RunContext;
use crate::error::{Result, SessionEnded};
use crate::request::{CellRun, JavaScriptRun, ProjectRun};
use crate::result::{CellResult, JavaScriptResult, ProjectResult};

/// How a provider should open a session's sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSpec {
    /// The session's fingerprint (for labels; never the id).
    pub fingerprint: String,
    /// How long it may live, ms (labels and provider-side expiry).
    pub lifetime_ms: u64,
    /// Languages the caller expects to use (a hint: it changes speed, never what runs).
    pub languages: Vec<String>,
}

/// One sandbox for many calls. The session manager serialises calls: at most
/// one method runs at a time, and `cleanup` runs after each call's answer.
#[async_trait]
pub trait SessionSandbox: Send + Sync {
    /// Reads the sandbox back before a call and compares it with what it was at
    /// open. `Err` ends the session (`sandbox_changed`, `main_process_ended`).
    async fn check(&self) -> std::result::Result<(), SessionEnded>;

    /// Where this sandbox came from (a warm pool or made at open), for the
    /// calls' phases.
    fn source(&self) -> crate::phase::Source {
        crate::phase::Source::Session
    }

    /// Runs a snippet in the session's work directory.
    async fn run_javascript(
        &self,
        job: &JavaScriptRun,
        ctx: &RunContext,
    ) -> Result<JavaScriptResult>;

    /// Runs a project in the session's work directory.
    async fn run_project(&self, job: &ProjectRun, ctx: &RunContext) -> Result<ProjectResult>;

    /// Runs a cell in the session's kept interpreter for its language.
    async fn run_cell(&self, job: &CellRun, ctx: &RunContext) -> Result<CellResult>;

    /// After a call's answer has gone back: ends every process the call left
    /// running except the kept interpreters, and checks the disk budget. `Err`
    /// ends the session (`boundary_failed`, `disk_exceeded`).
    async fn cleanup(&self) -> std::result::Result<(), SessionEnded>;

    /// Suspends an idle session. Returns whether it still holds its memory
    /// (and so its admission slot).
    async fn suspend(&self) -> Result<bool>;

    /// Resumes a suspended session before a call.
    async fn resume(&self) -> Result<()>;

    /// Ends the sandbox for good and deletes it.
    async fn close(&self);
}
