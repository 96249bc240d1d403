//! A session's kept interpreters on docker: one held-open `docker exec` of a
//! kernel per language (the protocol is [`session_kit`]'s).

use std::pin::Pin;

use async_trait::async_trait;
use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use futures_util::{Stream, StreamExt};
use tokio::io::{AsyncWrite, AsyncWriteExt};

use super::{DockerSession, exec_error, exec_fail};
use crate::error::{Error, Result, SessionEnd};
use crate::provider::RunContext;
use crate::provider::docker::lockdown::WORK;
use crate::provider::docker::snippet::cancelled;
use crate::provider::session_kit::warden::{self, Warden};
use crate::provider::session_kit::{self, Asked, Channel, Kernel};
use crate::request::CellRun;
use crate::result::CellResult;

type Output =
    Pin<Box<dyn Stream<Item = std::result::Result<LogOutput, bollard::errors::Error>> + Send>>;
type Input = Pin<Box<dyn AsyncWrite + Send>>;

/// An attached exec's stdin and output.
struct Attached {
    input: Input,
    output: Output,
}

#[async_trait]
impl Channel for Attached {
    async fn send(&mut self, bytes: &[u8]) -> bool {
        self.input.write_all(bytes).await.is_ok() && self.input.flush().await.is_ok()
    }

    async fn recv(&mut self) -> Option<Vec<u8>> {
        loop {
            match self.output.next().await? {
                Ok(LogOutput::StdOut { message }) | Ok(LogOutput::Console { message }) => {
                    return Some(message.to_vec());
                }
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }
}

impl DockerSession {
    /// Starts `cmd` as the guest in `/work`, held open with its stdin and
    /// stdout attached.
    async fn attach(&self, cmd: Vec<String>) -> Result<Box<Attached>> {
        let docker = self.inner.client().await?;
        let created = docker
            .create_exec(
                &self.name,
                CreateExecOptions::<String> {
                    attach_stdin: Some(true),
                    attach_stdout: Some(true),
                    attach_stderr: Some(true),
                    tty: Some(false),
                    user: Some(self.inner.lockdown.guest_user()),
                    working_dir: Some(WORK.into()),
                    cmd: Some(cmd),
                    privileged: Some(false),
                    ..CreateExecOptions::default()
                },
            )
            .await
            .map_err(|e| exec_error(exec_fail(e)))?;
        let start = docker
            .start_exec(
                &created.id,
                Some(StartExecOptions {
                    detach: false,
                    tty: false,
                    output_capacity: Some(256 * 1024),
                }),
            )
            .await
            .map_err(|e| exec_error(exec_fail(e)))?;
        let StartExecResults::Attached { output, input } = start else {
            return Err(Error::infrastructure("docker detached an attached exec"));
        };
        Ok(Box::new(Attached { input, output }))
    }

    /// Starts a kernel for `lang`, waits for its `READY <pid>` line and has
    /// the warden pin it.
    pub(super) async fn start_interp(&self, lang: &str) -> Result<Kernel> {
        let cmd = self
            .inner
            .lockdown
            .guest_cmd(session_kit::kernel_argv(lang)?);
        let kernel = Kernel::ready(self.attach(cmd).await?, lang).await?;
        self.pin(kernel.pid).await;
        Ok(kernel)
    }

    /// Starts the session's warden (before any guest code runs), under the
    /// exec seccomp filter where there is one, so what it runs inherits it.
    pub(super) async fn start_warden(&self) -> Result<Warden> {
        let cmd = self.inner.lockdown.guest_cmd(warden::argv());
        Warden::start(self.attach(cmd).await?).await
    }

    /// Runs a cell in the session's kept interpreter for its language,
    /// starting it first if need be.
    pub(super) async fn cell(&self, job: &CellRun, ctx: &RunContext) -> Result<CellResult> {
        let lang = job.language.as_str();
        if lang != "python" && lang != "javascript" {
            return Err(Error::invalid(format!(
                "no interpreter for language {lang:?}"
            )));
        }
        let deadline = tokio::time::Instant::now() + ctx.timeout;
        let mut result = CellResult::default();
        if let Err(why) = self.write_files(&job.files).await? {
            result.exit_code = 1;
            result.stderr = why.into_bytes();
            return Ok(result);
        }
        let mut interps = self.interps.lock().await;
        if !interps.contains_key(lang) {
            let i = self.start_interp(lang).await?;
            interps.insert(lang.to_string(), i);
        }
        let Some(interp) = interps.get_mut(lang) else {
            return Err(Error::infrastructure("the interpreter vanished"));
        };
        // The container's own end (an OOM kill takes a whole runsc sandbox)
        // may leave the interpreter's stream open: watch for it, too.
        match interp
            .ask(&job.code, deadline, &ctx.cancel, self.stopped.cancelled())
            .await
        {
            Asked::Answered(r) => Ok(r),
            Asked::Ended(r) => {
                if let Some(i) = interps.remove(lang) {
                    self.kill(i.pid).await;
                }
                Ok(r)
            }
            Asked::Cancelled => {
                if let Some(i) = interps.remove(lang) {
                    self.kill(i.pid).await;
                }
                Err(cancelled())
            }
            Asked::Stopped => {
                interps.remove(lang);
                Err(Error::session_ended(
                    SessionEnd::MainProcessEnded,
                    "the session's container stopped during the call",
                ))
            }
        }
    }
}
