//! A snippet or a project on OpenShell: one fresh sandbox per run, read back
//! before any code goes in, deleted when the run returns (on every path,
//! through the sandbox guard's drop). Files go in on a command's stdin (a
//! snippet as `main.js`, a project as a tar unpacked into
//! [`PROJECT_DIR`]); code runs as the image's user from [`PROJECT_DIR`]: a
//! snippet is `node main.js`, a project step `sh -c <step>`. The gateway
//! bounds each command's time (its `execution_timeout`, then exit 124);
//! each output stream is kept to [`OUTPUT_CAP`] bytes while the rest is
//! drained.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::Inner;
use super::gateway::Exec;
use super::relay::{NODE_CLIENT, Relay};
use super::sandbox::Live;
use crate::error::{Error, ErrorCode, Result};
use crate::provider::RunContext;
use crate::provider::hosted::http::excerpt;
use crate::provider::hosted::probe::CHECK_ARTIFACTS;
use crate::provider::hosted::steps::{self, StepEnd, Steps};
use crate::request::{JavaScriptRun, ProjectRun};
use crate::result::{Artifact, JavaScriptResult, ProjectOutcome, ProjectResult, StepResult};

/// Where files go and code runs (the sandbox writes only under `/tmp`).
pub const PROJECT_DIR: &str = "/tmp/work";
/// Bytes kept per output stream.
pub const OUTPUT_CAP: usize = 64 * 1024;
/// The longest run.
pub const MAX_RUN: Duration = Duration::from_secs(300);
/// The artifacts' total budget.
pub const ARTIFACT_BUDGET: usize = 8 * 1024 * 1024;
/// Time for the control plane around the guest's budget: a sandbox declares
/// its run's budget plus this as its lifetime.
pub const GRACE: Duration = Duration::from_secs(120);
/// How long files may take to go in.
const SETUP_BUDGET: Duration = Duration::from_secs(30);
/// Time for checking and reading the artifacts, after the steps' deadline.
const COLLECT_BUDGET: Duration = Duration::from_secs(15);

fn cancelled() -> Error {
    Error::new(
        ErrorCode::Cancelled,
        "the run was cancelled; its OpenShell sandbox was deleted",
    )
}

/// One guest command's end.
pub(crate) struct Ran {
    pub out: Exec,
    pub exit_code: i32,
    pub timed_out: bool,
}

/// Runs `cmd` in `live` from [`PROJECT_DIR`] with `stdin` until `until`.
pub(crate) async fn guest(
    live: &Live,
    cmd: &[String],
    stdin: Vec<u8>,
    until: Instant,
) -> Result<Ran> {
    guest_in(live, PROJECT_DIR, cmd, stdin, until).await
}

/// Runs `cmd` in `live` from `workdir` with `stdin` until `until`.
pub(crate) async fn guest_in(
    live: &Live,
    workdir: &str,
    cmd: &[String],
    stdin: Vec<u8>,
    until: Instant,
) -> Result<Ran> {
    let budget = until.saturating_duration_since(Instant::now());
    if budget.is_zero() {
        return Ok(Ran {
            out: Exec::default(),
            exit_code: 124,
            timed_out: true,
        });
    }
    let out = live
        .gateway()
        .exec(&live.name, cmd, workdir, stdin, budget, OUTPUT_CAP)
        .await?;
    // The gateway ends a command at its execution timeout with 124; a
    // command that said 124 itself before then did not time out.
    let timed_out = match out.exit_code {
        None => true,
        Some(124) => out.elapsed + Duration::from_millis(50) >= budget,
        Some(_) => false,
    };
    let exit_code = if timed_out {
        124
    } else {
        out.exit_code.unwrap_or(124)
    };
    Ok(Ran {
        out,
        exit_code,
        timed_out,
    })
}

/// Runs a setup command (as the guest, from `/`): its failure is a refusal
/// to go on, with its stderr.
async fn setup(
    live: &Live,
    script: &str,
    stdin: Vec<u8>,
) -> Result<std::result::Result<(), String>> {
    let cmd = ["/bin/sh".to_owned(), "-c".to_owned(), script.to_owned()];
    let out = live
        .gateway()
        .exec(&live.name, &cmd, "/", stdin, SETUP_BUDGET, OUTPUT_CAP)
        .await?;
    match out.exit_code {
        Some(0) => Ok(Ok(())),
        Some(code) => Ok(Err(format!("exit {code}: {}", excerpt(&out.stderr, &[])))),
        None => Ok(Err(format!("not done within {} s", SETUP_BUDGET.as_secs()))),
    }
}

/// A tar of `files` (paths relative to [`PROJECT_DIR`]).
pub(crate) fn tar(files: &[(&str, &[u8])]) -> Result<Vec<u8>> {
    let mut b = tar::Builder::new(Vec::new());
    for (path, content) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(content.len() as u64);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::Regular);
        b.append_data(&mut h, path, *content)
            .map_err(|e| Error::infrastructure(format!("packing {path}: {e}")))?;
    }
    b.into_inner()
        .map_err(|e| Error::infrastructure(format!("packing the files: {e}")))
}

/// A fresh sandbox for a run of `timeout` with `files` unpacked into
/// [`PROJECT_DIR`]. `Ok(Err(why))`: the files did not go in.
pub(crate) async fn fresh(
    p: &Arc<Inner>,
    timeout: Duration,
    files: &[(&str, &[u8])],
) -> Result<(Live, std::result::Result<(), String>)> {
    let live = Live::create(p, timeout + GRACE).await?;
    match unpack(&live, files).await {
        Ok(written) => Ok((live, written)),
        Err(e) => {
            live.delete().await;
            Err(e)
        }
    }
}

/// Unpacks `files` into [`PROJECT_DIR`] in `live`. `Ok(Err(why))`: the
/// guest's tar failed.
pub(crate) async fn unpack(
    live: &Live,
    files: &[(&str, &[u8])],
) -> Result<std::result::Result<(), String>> {
    let archive = tar(files)?;
    let script = format!("mkdir -p {PROJECT_DIR} && tar -x -f - -C {PROJECT_DIR}");
    setup(live, &script, archive).await
}

/// Runs `work` with the run's cancel watched from the first call on: the
/// sandbox `work` puts in `held` is deleted however it ends (one still being
/// created when the cancel comes is deleted by its own drop).
async fn cancellable<T>(
    ctx: &RunContext,
    work: impl AsyncFnOnce(&mut Option<Live>) -> Result<T>,
) -> Result<T> {
    let mut held = None;
    let r = tokio::select! {
        biased;
        _ = ctx.cancel.cancelled() => Err(cancelled()),
        r = work(&mut held) => r,
    };
    if let Some(live) = held {
        live.delete().await;
    }
    r
}

/// Runs one snippet: its code arrives on stdin as `main.js`, then node runs it.
pub(crate) async fn snippet(
    p: &Arc<Inner>,
    job: &JavaScriptRun,
    ctx: &RunContext,
) -> Result<JavaScriptResult> {
    cancellable(ctx, async |held: &mut Option<Live>| {
        let live = held.insert(Live::create(p, ctx.timeout + GRACE).await?);
        let relay = relay(p, live, ctx).await?;
        let deadline = Instant::now() + ctx.timeout;
        let node = match relay {
            Some(_) => format!("node --require {NODE_CLIENT} main.js"),
            None => "node main.js".to_owned(),
        };
        let cmd = granted(
            relay.is_some(),
            vec![
                "/bin/sh".to_owned(),
                "-c".to_owned(),
                format!(
                    "mkdir -p {PROJECT_DIR} && cd {PROJECT_DIR} && cat > main.js && exec {node}"
                ),
            ],
        );
        let ran = guest_in(live, "/", &cmd, job.code.as_bytes().to_vec(), deadline).await?;
        Ok(JavaScriptResult {
            stdout: ran.out.stdout,
            stderr: ran.out.stderr,
            exit_code: ran.exit_code,
            timed_out: ran.timed_out,
            stdout_truncated: ran.out.stdout_truncated,
            stderr_truncated: ran.out.stderr_truncated,
        })
    })
    .await
}

/// Runs one project.
pub(crate) async fn project(
    p: &Arc<Inner>,
    job: &ProjectRun,
    ctx: &RunContext,
) -> Result<ProjectResult> {
    let files: Vec<(&str, &[u8])> = job
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.content.as_bytes()))
        .collect();
    cancellable(ctx, async |held: &mut Option<Live>| {
        let (live, written) = fresh(p, ctx.timeout, &files).await?;
        let live = held.insert(live);
        if let Err(why) = written {
            return Ok(ProjectResult {
                outcome: ProjectOutcome::SetupFailed,
                outcome_detail: format!("writing the files into {PROJECT_DIR} failed: {why}"),
                ..ProjectResult::default()
            });
        }
        let relay = relay(p, live, ctx).await?;
        let deadline = Instant::now() + ctx.timeout;
        let mut result = steps(live, job, ctx, deadline, relay.is_some()).await?;
        if !job.artifacts.is_empty() {
            collect(live, job, &mut result).await?;
        }
        Ok(result)
    })
    .await
}

/// The grant relay of a granted run in `live` (`None`: no grant).
pub(crate) async fn relay(p: &Arc<Inner>, live: &Live, ctx: &RunContext) -> Result<Option<Relay>> {
    match &ctx.grant {
        Some(broker) => Ok(Some(Relay::start(p, &live.name, broker.clone()).await?)),
        None => Ok(None),
    }
}

/// `cmd`, with the host API's address in its environment when `granted`.
pub(crate) fn granted(granted: bool, cmd: Vec<String>) -> Vec<String> {
    if granted { Relay::wrap(cmd) } else { cmd }
}

/// A project's steps in `live`, each `sh -c <step>` from [`PROJECT_DIR`],
/// with the host API's address in its environment when `with_grant`.
struct GuestSteps<'a> {
    live: &'a Live,
    with_grant: bool,
}

#[async_trait::async_trait]
impl Steps for GuestSteps<'_> {
    async fn step(&self, step: &str, deadline: Instant) -> Result<StepEnd> {
        let cmd = granted(
            self.with_grant,
            vec!["/bin/sh".to_owned(), "-c".to_owned(), step.to_owned()],
        );
        let ran = guest(self.live, &cmd, Vec::new(), deadline).await?;
        Ok(StepEnd {
            result: StepResult {
                stdout: ran.out.stdout,
                stderr: ran.out.stderr,
                duration_ms: ran.out.elapsed.as_millis() as i64,
                stdout_truncated: ran.out.stdout_truncated,
                stderr_truncated: ran.out.stderr_truncated,
                exit_code: ran.exit_code,
                timed_out: ran.timed_out,
                ..StepResult::default()
            },
            stopped: None,
        })
    }
}

/// Runs a project's steps from [`PROJECT_DIR`] until one fails or the
/// deadline (no artifacts: [`collect`] takes them); with the host API's
/// address in their environment when `with_grant`.
pub(crate) async fn steps(
    live: &Live,
    job: &ProjectRun,
    ctx: &RunContext,
    deadline: Instant,
    with_grant: bool,
) -> Result<ProjectResult> {
    let runner = GuestSteps { live, with_grant };
    steps::run(&runner, &job.steps, deadline, ctx.timeout.as_millis()).await
}

/// Checks and reads the project's artifacts into `result`.
pub(crate) async fn collect(
    live: &Live,
    job: &ProjectRun,
    result: &mut ProjectResult,
) -> Result<()> {
    let until = Instant::now() + COLLECT_BUDGET;
    let mut cmd = vec![
        "/bin/sh".to_owned(),
        "-c".to_owned(),
        CHECK_ARTIFACTS.to_owned(),
        "sh".into(),
        PROJECT_DIR.into(),
    ];
    cmd.extend(job.artifacts.iter().cloned());
    let ran = guest(live, &cmd, Vec::new(), until).await?;
    let words: Vec<&str> = std::str::from_utf8(&ran.out.stdout)
        .unwrap_or_default()
        .lines()
        .collect();
    let mut refused = Vec::new();
    if ran.exit_code != 0 || ran.out.stdout_truncated || words.len() != job.artifacts.len() {
        refused.push("the artifact check did not finish".to_owned());
    } else {
        let mut left = ARTIFACT_BUDGET;
        for (path, word) in job.artifacts.iter().zip(words) {
            if word != "ok" {
                refused.push(format!("{path} ({word})"));
                continue;
            }
            let cat = ["cat".to_owned(), "--".to_owned(), path.clone()];
            let budget = until.saturating_duration_since(Instant::now());
            let got = live
                .gateway()
                .exec(&live.name, &cat, PROJECT_DIR, Vec::new(), budget, left)
                .await?;
            match got.exit_code {
                Some(0) if !got.stdout_truncated => {
                    left -= got.stdout.len();
                    result.artifacts.push(Artifact {
                        path: path.clone(),
                        content: got.stdout,
                    });
                }
                Some(0) => result.artifacts_truncated = true,
                _ => refused.push(format!("{path} (unreadable)")),
            }
        }
    }
    if !refused.is_empty() {
        let note = format!("artifacts not collected: {}", refused.join(", "));
        result.outcome_detail = if result.outcome_detail.is_empty() {
            note
        } else {
            format!("{}; {note}", result.outcome_detail)
        };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tar_holds_each_file_at_its_path() {
        let t = tar(&[("a/b.txt", b"hello"), ("main.js", b"1")]).expect("tar");
        let mut a = ::tar::Archive::new(t.as_slice());
        let got: Vec<(String, u64)> = a
            .entries()
            .expect("entries")
            .map(|e| {
                let e = e.expect("entry");
                (e.path().expect("path").display().to_string(), e.size())
            })
            .collect();
        assert_eq!(got, vec![("a/b.txt".into(), 5), ("main.js".into(), 1)]);
    }
}
