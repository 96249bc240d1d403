//! A session's sandbox: one locked-down container of the project image, kept
//! for many calls, every call a host-driven `docker exec` in `/work`.
//!
//! The container gets a run's walls ([`Role::Session`]: read-only root, no
//! network, no capabilities, no-new-privileges, tmpfs `/tmp` `/dev/shm`
//! `/work`, the guest uid, memory, CPU and process limits) and a keeper main
//! process (guest uid + 1) that lives as long as the session may. Its security
//! settings are read back at open and compared before every call. Snippets are
//! `node -` with the code on stdin; projects write their files and run their
//! steps as projects do, but `/work` persists; cells go to one long-lived
//! interpreter per language, a held-open exec of a small kernel
//! (`kernels/kernel.py`, `kernels/kernel.js`) that answers each cell with one
//! line framed by a fresh host nonce. After each call every guest process but
//! the kernels is killed and shown gone, and `/work` is measured against the
//! disk budget. What this does not cover: grants in sessions, and a guest that
//! reads its own kernel's memory (it could learn the current nonce; it can only
//! forge its own cell's answer with it).

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;
use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use futures_util::{Stream, StreamExt};
use tokio::io::{AsyncWrite, AsyncWriteExt};
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
use crate::provider::{SandboxSpec, SessionSandbox};
use crate::request::{CellRun, JavaScriptRun, ProjectRun};
use crate::result::{CellResult, JavaScriptResult, ProjectOutcome, ProjectResult, StepResult};

/// The Python kernel, run as `python3 -I -c`.
const KERNEL_PY: &str = include_str!("kernels/kernel.py");
/// The JavaScript kernel, run as `node -e`.
const KERNEL_JS: &str = include_str!("kernels/kernel.js");
/// How long a kernel may take to say it is ready.
const KERNEL_START: Duration = Duration::from_secs(30);
/// The most a kernel's channel may buffer without a newline.
const LINE_LIMIT: usize = 4 * 1024 * 1024;
/// The budget of the host's own small execs (cleanup, kill, unpack).
const TOOL_BUDGET: Duration = Duration::from_secs(20);

/// Kills every process of the guest uid except itself and the kept pids,
/// until none is left, then prints `statfs` of `/work` (`blocks free bsize`).
/// Exits 3 if some survive five seconds. Arguments: `<uid> <kept pid>...`.
const STOP_EXCEPT: &str = r#"
me=$$
uid=$1
shift
keep=" $* "
i=0
while :; do
  left=0
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    [ "$p" = "$me" ] && continue
    case "$keep" in *" $p "*) continue ;; esac
    u=; st=
    while read -r k v rest; do
      case "$k" in
        State:) st=$v ;;
        Uid:) u=$v; break ;;
      esac
    done 2>/dev/null < "$d/status"
    if [ "$u" = "$uid" ] && [ "$st" != Z ]; then
      kill -9 "$p" 2>/dev/null
      left=$((left + 1))
    fi
  done
  [ "$left" -eq 0 ] && break
  i=$((i + 1))
  [ "$i" -ge 100 ] && { echo "$left guest processes survive" >&2; exit 3; }
  sleep 0.05
done
stat -f -c '%b %f %S' /work
"#;

type Output =
    Pin<Box<dyn Stream<Item = std::result::Result<LogOutput, bollard::errors::Error>> + Send>>;
type Input = Pin<Box<dyn AsyncWrite + Send>>;

/// One kept interpreter: a held-open exec of a kernel.
struct Interp {
    pid: u32,
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

/// A session's container.
pub(crate) struct DockerSession {
    inner: Arc<Inner>,
    name: String,
    live: Mutex<Option<Live>>,
    baseline: serde_json::Value,
    stopped: CancellationToken,
    watcher: tokio::task::JoinHandle<()>,
    interps: tokio::sync::Mutex<HashMap<String, Interp>>,
    /// The languages whose kernels were started at open.
    languages: Mutex<Vec<String>>,
    disk_mb: u32,
    /// The container's init and runtime processes, watched from the host.
    witness: Option<Arc<InitWitness>>,
}

/// The security-relevant settings of a container, as docker reports them.
async fn settings_of(
    inner: &Inner,
    name: &str,
) -> std::result::Result<serde_json::Value, SessionEnded> {
    let docker = inner.client().await.map_err(|e| SessionEnded {
        reason: SessionEnd::MainProcessEnded,
        detail: e.message().to_string(),
    })?;
    let i = match docker.inspect_container(name, None).await {
        Ok(i) => i,
        Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 404, ..
        }) => {
            return Err(SessionEnded {
                reason: SessionEnd::MainProcessEnded,
                detail: "the session's container is gone".into(),
            });
        }
        Err(e) => {
            return Err(SessionEnded {
                reason: SessionEnd::BoundaryFailed,
                detail: format!("the session's container could not be read back: {e}"),
            });
        }
    };
    let st = i.state.clone().unwrap_or_default();
    if st.running != Some(true) {
        return Err(SessionEnded {
            reason: SessionEnd::MainProcessEnded,
            detail: format!(
                "the session's main process ended (exit code {})",
                st.exit_code.unwrap_or(-1)
            ),
        });
    }
    let h = i.host_config.unwrap_or_default();
    let c = i.config.unwrap_or_default();
    let mut mounts: Vec<serde_json::Value> = i
        .mounts
        .unwrap_or_default()
        .into_iter()
        .map(|m| serde_json::json!([m.destination, m.source, m.rw, m.mode, m.propagation]))
        .collect();
    mounts.sort_by_key(|v| v.to_string());
    Ok(serde_json::json!({
        "image": i.image,
        "read_only": h.readonly_rootfs,
        "tmpfs": h.tmpfs,
        "binds": h.binds,
        "mounts": mounts,
        "devices": h.devices.map(|d| d.len()),
        "cap_add": h.cap_add,
        "cap_drop": h.cap_drop,
        "network_mode": h.network_mode,
        "user": c.user,
        "memory": h.memory,
        "memory_swap": h.memory_swap,
        "pids_limit": h.pids_limit,
        "nano_cpus": h.nano_cpus,
        "cpu_quota": h.cpu_quota,
        "cpu_shares": h.cpu_shares,
        "cpuset_cpus": h.cpuset_cpus,
        "privileged": h.privileged,
        "security_opt": h.security_opt,
        "runtime": h.runtime,
        "ipc_mode": h.ipc_mode,
        "pid_mode": h.pid_mode,
        "userns_mode": h.userns_mode,
    }))
}

/// The first setting that differs between `a` and `b`.
fn first_difference(a: &serde_json::Value, b: &serde_json::Value) -> Option<String> {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return (a != b).then(|| "settings".into());
    };
    a.iter()
        .find(|(k, v)| b.get(*k) != Some(*v))
        .map(|(k, _)| k.clone())
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
        languages: Mutex::new(Vec::new()),
        disk_mb: inner.session_disk_mb,
        witness,
    };
    for lang in &spec.languages {
        if lang == "python" || lang == "javascript" {
            let mut interps = s.interps.lock().await;
            if !interps.contains_key(lang) {
                let i = s.start_interp(lang).await?;
                interps.insert(lang.clone(), i);
                s.languages
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(lang.clone());
            }
        }
    }
    Ok(s)
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
        if !matches!(ended, Ended::Exited(128..) | Ended::Unknown) {
            return None;
        }
        let (pid, signal) = self.witness.as_ref()?.killed_by().await?;
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

    async fn exec(
        &self,
        spec: ExecSpec,
        deadline: tokio::time::Instant,
        cancel: &CancellationToken,
    ) -> std::result::Result<ExecDone, ExecFail> {
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

    async fn start_interp(&self, lang: &str) -> Result<Interp> {
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
            self.inner
                .lockdown
                .guest_cmd(vec!["node".into(), "-".into()]),
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
            Ended::Unknown => (137, false),
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
                self.inner
                    .lockdown
                    .guest_cmd(vec!["sh".into(), "-c".into(), step.clone()]),
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
            }
        }
        if !job.artifacts.is_empty() {
            // Collect only once no guest process but the kernels is left.
            let kept = self.kept_pids().await;
            let mut cmd = vec![
                "sh".to_string(),
                "-c".into(),
                STOP_EXCEPT.into(),
                "sh".into(),
                self.inner.lockdown.settings.guest_uid.to_string(),
            ];
            cmd.extend(kept.iter().map(u32::to_string));
            let quiet = matches!(
                self.tool(cmd, None).await,
                Ok(ExecDone {
                    ended: Ended::Exited(0),
                    ..
                })
            );
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

    async fn cleanup(&self) -> std::result::Result<(), SessionEnded> {
        let kept = self.kept_pids().await;
        let mut cmd = vec![
            "sh".to_string(),
            "-c".into(),
            STOP_EXCEPT.into(),
            "sh".into(),
            self.inner.lockdown.settings.guest_uid.to_string(),
        ];
        cmd.extend(kept.iter().map(u32::to_string));
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
            match self.tool_until(cmd.clone(), None, until).await {
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
                    let [blocks, free, bsize] = n[..] else {
                        return Err(boundary(format!("could not measure {WORK}")));
                    };
                    let used_kib = blocks.saturating_sub(free) * bsize / 1024;
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
                Ok(d) => {
                    if matches!(d.ended, Ended::ContainerStopped) {
                        return Err(SessionEnded {
                            reason: SessionEnd::MainProcessEnded,
                            detail: "the session's container stopped".into(),
                        });
                    }
                    last = String::from_utf8_lossy(&d.stderr.finish().0)
                        .trim()
                        .to_string();
                    if matches!(d.ended, Ended::Exited(3)) {
                        return Err(boundary(format!(
                            "the cleanup between calls failed: {last}"
                        )));
                    }
                }
                Err(ExecFail::NotRunning(_)) => {
                    return Err(SessionEnded {
                        reason: SessionEnd::MainProcessEnded,
                        detail: "the session's container is not running".into(),
                    });
                }
                Err(ExecFail::Refused(m)) => last = m,
                Err(ExecFail::Infrastructure(e)) => last = e.message().to_string(),
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
        if let Some(live) = self.take_live()
            && let Err(e) = live.remove().await
        {
            tracing::warn!(error = %e, "session container not removed; the orphan reconcile will");
        }
    }
}

impl DockerSession {
    async fn kept_pids(&self) -> Vec<u32> {
        self.interps.lock().await.values().map(|i| i.pid).collect()
    }
}

impl Drop for DockerSession {
    fn drop(&mut self) {
        self.watcher.abort();
    }
}

/// The label value pool members carry (their session is not known yet).
const POOL_LABEL: &str = "pool";

/// The sessions' warm pool: members made like session containers, with both
/// kernels running, never used by anyone; each goes to exactly one session.
pub(crate) struct Pool {
    members: Mutex<Vec<DockerSession>>,
    filling: std::sync::atomic::AtomicUsize,
    closed: std::sync::atomic::AtomicBool,
    size: usize,
    lifetime: Duration,
}

impl Pool {
    /// An empty pool of `size` members living at most `lifetime`.
    pub(crate) fn new(size: usize, lifetime: Duration) -> Pool {
        Pool {
            members: Mutex::new(Vec::new()),
            filling: std::sync::atomic::AtomicUsize::new(0),
            closed: std::sync::atomic::AtomicBool::new(false),
            size,
            lifetime,
        }
    }

    /// Stops refilling, drops every member (each removes its container) and
    /// waits, at most `budget`, for members still being made to be dropped too.
    pub(crate) async fn close(&self, budget: Duration) {
        use std::sync::atomic::Ordering;
        self.closed.store(true, Ordering::SeqCst);
        let deadline = tokio::time::Instant::now() + budget;
        loop {
            drop(std::mem::take(&mut *self.members()));
            if self.filling.load(Ordering::SeqCst) == 0 || tokio::time::Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn members(&self) -> std::sync::MutexGuard<'_, Vec<DockerSession>> {
        self.members.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Members waiting now.
    pub(crate) fn ready(&self) -> usize {
        self.members().len()
    }

    /// Takes a member for `spec` (one with every hinted interpreter running),
    /// or `None`.
    pub(crate) fn take(&self, spec: &SandboxSpec) -> Option<DockerSession> {
        let mut pool = self.members();
        let i = pool.iter().position(|m| {
            let have = m.languages.lock().unwrap_or_else(|p| p.into_inner());
            spec.languages.iter().all(|l| have.contains(l))
        })?;
        Some(pool.swap_remove(i))
    }
}

/// Starts background creation of members until the pool is full. The tasks
/// hold the pool only weakly: a provider that goes away takes its members along.
pub(crate) fn refill(inner: &Arc<Inner>, pool: &Arc<Pool>) {
    use std::sync::atomic::Ordering;
    loop {
        if pool.closed.load(Ordering::SeqCst)
            || pool.ready() + pool.filling.load(Ordering::SeqCst) >= pool.size
        {
            return;
        }
        pool.filling.fetch_add(1, Ordering::SeqCst);
        let inner = inner.clone();
        let weak = Arc::downgrade(pool);
        let lifetime = pool.lifetime;
        tokio::spawn(async move {
            let spec = SandboxSpec {
                fingerprint: POOL_LABEL.into(),
                lifetime_ms: lifetime.as_millis() as u64,
                languages: vec!["python".into(), "javascript".into()],
            };
            let made = open(&inner, &spec).await;
            let Some(pool) = weak.upgrade() else {
                return;
            };
            match made {
                // A member made after the pool closed is dropped: its container goes.
                Ok(m) if pool.closed.load(Ordering::SeqCst) => drop(m),
                Ok(m) => pool.members().push(m),
                Err(e) => tracing::warn!(error = %e, "a warm session container could not be made"),
            }
            pool.filling.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

/// The startup session proof: one real session must keep every promise — a
/// process the first call leaves running (detached, setsid, double-forked) is
/// gone by the next call; a file survives calls and a suspend; an interpreter
/// keeps what an earlier call defined; closing ends it. Returns the cell
/// languages proven.
pub(crate) async fn prove(inner: &Arc<Inner>) -> Result<Vec<String>> {
    let spec = SandboxSpec {
        fingerprint: "startup-proof".into(),
        lifetime_ms: 120_000,
        languages: vec![],
    };
    let s = open(inner, &spec).await?;
    let r = prove_on(&s).await;
    s.close().await;
    let languages = r?;
    if s.check().await.is_ok() {
        return Err(fail("the session's container outlived its close"));
    }
    Ok(languages)
}

fn fail(what: &str) -> Error {
    Error::infrastructure(format!("session startup proof failed: {what}"))
}

async fn prove_on(s: &DockerSession) -> Result<Vec<String>> {
    let ctx = RunContext {
        timeout: Duration::from_secs(30),
        cancel: CancellationToken::new(),
        principal: "startup-proof".into(),
        grant: None,
    };
    let ended = |e: SessionEnded| fail(&format!("{:?}: {}", e.reason, e.detail));
    s.check().await.map_err(ended)?;
    let job = ProjectRun {
        steps: vec![
            "echo kept > kept.txt".into(),
            "nohup sleep 300 >/dev/null 2>&1 &".into(),
            "setsid sleep 301 >/dev/null 2>&1 </dev/null &".into(),
            "sh -c '(sleep 302 &) &' >/dev/null 2>&1".into(),
        ],
        ..ProjectRun::default()
    };
    let r = s.run_project(&job, &ctx).await?;
    if r.outcome != ProjectOutcome::Completed {
        return Err(fail(&format!(
            "the first call did not complete: {}",
            r.outcome_detail
        )));
    }
    s.cleanup().await.map_err(ended)?;
    s.suspend().await?;
    s.resume().await?;
    s.check().await.map_err(ended)?;
    let count = "n=0; for d in /proc/[0-9]*; do c=$(tr '\\0' ' ' < $d/cmdline 2>/dev/null); case \"$c\" in 'sleep 30'[012]*) n=$((n+1));; esac; done; echo $n; cat kept.txt";
    let job = ProjectRun {
        steps: vec![count.into()],
        ..ProjectRun::default()
    };
    let r = s.run_project(&job, &ctx).await?;
    let out = r
        .steps
        .first()
        .map(|st| String::from_utf8_lossy(&st.stdout).to_string())
        .unwrap_or_default();
    if out != "0\nkept\n" {
        return Err(fail(&format!(
            "after a call and a suspend, expected no leftover process and the kept file, read {out:?}"
        )));
    }
    s.cleanup().await.map_err(ended)?;
    let mut languages = Vec::new();
    for (lang, define, use_, want) in [
        ("python", "x = 41", "x + 1", "42\n"),
        ("javascript", "var x = 41", "x + 1", "42\n"),
    ] {
        let cell = |code: &str| CellRun {
            language: lang.into(),
            code: code.into(),
            files: vec![],
        };
        let a = s.run_cell(&cell(define), &ctx).await?;
        s.cleanup().await.map_err(ended)?;
        let b = s.run_cell(&cell(use_), &ctx).await?;
        s.cleanup().await.map_err(ended)?;
        if !a.interpreter_started {
            return Err(fail(&format!(
                "the first {lang} cell did not say its interpreter started fresh"
            )));
        }
        if a.exit_code != 0
            || b.exit_code != 0
            || b.stdout != want.as_bytes()
            || b.interpreter_started
        {
            return Err(fail(&format!(
                "the {lang} interpreter did not keep what an earlier call defined (read {:?})",
                String::from_utf8_lossy(&b.stdout)
            )));
        }
        languages.push(lang.to_string());
    }
    Ok(languages)
}
