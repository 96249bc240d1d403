//! A session's kept interpreters: one held-open `docker exec` of a small
//! kernel per language, each cell sent as one JSON line and answered with one
//! line framed by a fresh host nonce.

use std::pin::Pin;
use std::time::Duration;

use base64::Engine as _;
use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use futures_util::{Stream, StreamExt};
use tokio::io::{AsyncWrite, AsyncWriteExt};

use super::{DockerSession, exec_error, exec_fail};
use crate::error::{Error, Result, SessionEnd};
use crate::provider::RunContext;
use crate::provider::docker::lockdown::WORK;
use crate::provider::docker::snippet::cancelled;
use crate::request::CellRun;
use crate::result::CellResult;

/// The Python kernel, run as `python3 -I -c`.
const KERNEL_PY: &str = include_str!("../kernels/kernel.py");
/// The JavaScript kernel, run as `node -e`.
const KERNEL_JS: &str = include_str!("../kernels/kernel.js");
/// How long a kernel may take to say it is ready.
const KERNEL_START: Duration = Duration::from_secs(30);
/// The most a kernel's channel may buffer without a newline.
const LINE_LIMIT: usize = 4 * 1024 * 1024;

type Output =
    Pin<Box<dyn Stream<Item = std::result::Result<LogOutput, bollard::errors::Error>> + Send>>;
type Input = Pin<Box<dyn AsyncWrite + Send>>;

/// One kept interpreter: a held-open exec of a kernel.
pub(super) struct Interp {
    pub(super) pid: u32,
    input: Input,
    output: Output,
    buf: Vec<u8>,
    /// Whether a cell has been sent to this interpreter: the first cell it
    /// runs reports `interpreter_started`, whether it was started for that
    /// cell or at open for a language hint (or by the warm pool).
    used: bool,
}

impl Interp {
    /// The next line on the kernel's stdout, or `None` once it is gone.
    async fn line(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                let mut line: Vec<u8> = self.buf.drain(..=i).collect();
                line.pop();
                return Some(line);
            }
            match self.output.next().await {
                Some(Ok(LogOutput::StdOut { message }))
                | Some(Ok(LogOutput::Console { message })) => {
                    if self.buf.len() + message.len() > LINE_LIMIT {
                        // A guest flooding the channel without newlines: drop it.
                        self.buf.clear();
                    }
                    self.buf.extend_from_slice(&message);
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return None,
            }
        }
    }
}

/// What the kernel answers for one cell.
#[derive(serde::Deserialize)]
struct Answer {
    exit_code: i32,
    stdout: String,
    stderr: String,
    stdout_truncated: bool,
    stderr_truncated: bool,
}

impl DockerSession {
    /// Starts a kernel for `lang` and waits for its `READY <pid>` line.
    pub(super) async fn start_interp(&self, lang: &str) -> Result<Interp> {
        let docker = self.inner.client().await?;
        let cmd: Vec<String> = match lang {
            "python" => vec!["python3".into(), "-I".into(), "-c".into(), KERNEL_PY.into()],
            "javascript" => vec!["node".into(), "-e".into(), KERNEL_JS.into()],
            other => {
                return Err(Error::invalid(format!(
                    "no interpreter for language {other:?}"
                )));
            }
        };
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
                    cmd: Some(self.inner.lockdown.guest_cmd(cmd)),
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
        let mut i = Interp {
            pid: 0,
            input,
            output,
            buf: Vec::new(),
            used: false,
        };
        let ready = tokio::time::timeout(KERNEL_START, i.line()).await;
        let line = match ready {
            Ok(Some(l)) => l,
            _ => {
                return Err(Error::infrastructure(format!(
                    "the {lang} interpreter did not start in the session"
                )));
            }
        };
        let line = String::from_utf8_lossy(&line).to_string();
        i.pid = line
            .strip_prefix("READY ")
            .and_then(|p| p.trim().parse().ok())
            .ok_or_else(|| Error::infrastructure(format!("the {lang} kernel said {line:?}")))?;
        Ok(i)
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
        result.interpreter_started = !std::mem::replace(&mut interp.used, true);
        let nonce = hex::encode(rand::random::<[u8; 16]>());
        let mut req = serde_json::to_vec(&serde_json::json!({"nonce": nonce, "code": job.code}))
            .map_err(|e| Error::infrastructure(format!("encoding a cell: {e}")))?;
        req.push(b'\n');
        let prefix = format!("{nonce} ");
        let talk = async {
            interp.input.write_all(&req).await.ok()?;
            interp.input.flush().await.ok()?;
            loop {
                let line = interp.line().await?;
                if let Some(rest) = line.strip_prefix(prefix.as_bytes()) {
                    return serde_json::from_slice::<Answer>(rest).ok();
                }
            }
        };
        enum End {
            Answer(Option<Answer>),
            Deadline,
            Cancelled,
            Stopped,
        }
        // The container's own end (an OOM kill takes a whole runsc sandbox)
        // may leave the interpreter's stream open: watch for it, too.
        let end = tokio::select! {
            a = talk => End::Answer(a),
            _ = tokio::time::sleep_until(deadline) => End::Deadline,
            _ = ctx.cancel.cancelled() => End::Cancelled,
            _ = self.stopped.cancelled() => End::Stopped,
        };
        let b64 = base64::engine::general_purpose::STANDARD;
        match end {
            End::Answer(Some(a)) => {
                result.exit_code = a.exit_code;
                result.stdout = b64.decode(a.stdout).unwrap_or_default();
                result.stderr = b64.decode(a.stderr).unwrap_or_default();
                result.stdout_truncated = a.stdout_truncated;
                result.stderr_truncated = a.stderr_truncated;
            }
            End::Answer(None) => {
                // The kernel went away (the cell ended it, or its channel broke).
                if let Some(i) = interps.remove(lang) {
                    self.kill(i.pid).await;
                }
                result.exit_code = 1;
                result.interpreter_ended = true;
                result.stderr = b"the interpreter ended during the cell\n".to_vec();
            }
            End::Deadline => {
                if let Some(i) = interps.remove(lang) {
                    self.kill(i.pid).await;
                }
                result.exit_code = 124;
                result.timed_out = true;
                result.interpreter_ended = true;
            }
            End::Cancelled => {
                if let Some(i) = interps.remove(lang) {
                    self.kill(i.pid).await;
                }
                return Err(cancelled());
            }
            End::Stopped => {
                interps.remove(lang);
                return Err(Error::session_ended(
                    SessionEnd::MainProcessEnded,
                    "the session's container stopped during the call",
                ));
            }
        }
        Ok(result)
    }
}
