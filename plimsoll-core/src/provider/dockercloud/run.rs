//! A snippet or a project on Docker Cloud: one fresh sandbox per run, read
//! back before any code goes in, deleted when the run returns (on every
//! path, through [`Live`]'s drop). Files are uploaded (the service writes
//! them as root), then one exec as root hands [`PROJECT_DIR`] to the guest,
//! then code runs as [`GUEST_USER`] in it, each command wrapped
//! ([`super::wrapper`]): a snippet is `node <file>`, a project step
//! `sh -c <step>`.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::Inner;
use super::multipart::Downloaded;
use super::sandbox::Live;
use super::wrapper::{self, Wrapped};
use crate::error::{Error, ErrorCode, Result};
use crate::grant::guard::GuardPass;
use crate::provider::RunContext;
use crate::provider::hosted::probe::CHECK_ARTIFACTS;
use crate::provider::hosted::steps::{self, StepEnd, Steps};
use crate::request::{JavaScriptRun, ProjectRun};
use crate::result::{Artifact, JavaScriptResult, ProjectOutcome, ProjectResult, StepResult};

/// The guest's uid and gid.
pub const GUEST_USER: &str = "61000:61000";
/// Where files go and code runs.
pub const PROJECT_DIR: &str = "/work";
/// Where a snippet's code is written.
const SNIPPET_FILE: &str = "/work/main.js";
/// Where the image keeps the Node host API client (images/clients/host.js),
/// preloaded into a granted snippet.
pub const NODE_CLIENT: &str = "/usr/local/lib/plimsoll/host.js";
/// The OS trust bundle, which Node is told to trust beside its own.
pub const OS_CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";
/// The longest run: it must fit in one endpoint credential's 300 s.
pub const MAX_RUN: Duration = Duration::from_secs(270);
/// The artifacts' total budget.
pub const ARTIFACT_BUDGET: usize = 8 * 1024 * 1024;
/// Time for the control plane around the guest's budget: the sandbox's
/// declared lifetime (the cloud's delete-on-timeout) is the budget plus this.
pub const GRACE: Duration = Duration::from_secs(120);
/// How long past a command's budget its exec answer is waited for.
const EXEC_MARGIN: Duration = Duration::from_secs(15);
/// Time for checking the artifacts, after the steps' deadline.
const COLLECT_BUDGET: Duration = Duration::from_secs(15);

fn cancelled() -> Error {
    Error::new(
        ErrorCode::Cancelled,
        "the run was cancelled; its Docker Cloud sandbox was deleted",
    )
}

/// One guest command's end.
pub(crate) struct Ran {
    pub out: Wrapped,
    pub exit_code: i32,
    pub timed_out: bool,
    pub elapsed: Duration,
}

/// A granted run's way to its broker: its guard pass (the credential ends
/// when it is dropped), its sandbox's one allowed destination, and what its
/// guest's commands get in their environment.
pub(crate) struct Granted {
    _pass: GuardPass,
    /// `<guard host>:443`.
    rule: String,
    /// `HOST_API_URL`, `HOST_API_TOKEN` (the run's own guard credential,
    /// which only reaches this run's broker) and `NODE_EXTRA_CA_CERTS`.
    env: Vec<String>,
}

/// Admits a granted run to the egress guard (`None`: no grant).
pub(crate) fn granted(p: &Inner, ctx: &RunContext) -> Result<Option<Granted>> {
    let (Some(broker), Some(e)) = (&ctx.grant, &p.egress) else {
        return match ctx.grant {
            Some(_) => Err(Error::unsupported(
                "the dockercloud provider carries grants only with SANDBOX_DOCKERCLOUD_GUARD_URL set",
            )),
            None => Ok(None),
        };
    };
    let pass = e.guard.admit(broker.clone());
    let env = vec![
        format!("HOST_API_URL={}", e.url.base()),
        format!("HOST_API_TOKEN={}", pass.credential().expose()),
        format!("NODE_EXTRA_CA_CERTS={OS_CA_BUNDLE}"),
    ];
    Ok(Some(Granted {
        _pass: pass,
        rule: format!("{}:443", e.url.host),
        env,
    }))
}

/// A fresh sandbox for a run of `timeout`, its project directory the guest's
/// after `files` are in, with `granted`'s rule its one way out.
/// `Ok(Err(why))`: Docker refused the files there.
pub(crate) async fn fresh(
    p: &Arc<Inner>,
    timeout: Duration,
    files: &[(String, &[u8])],
    granted: Option<&Granted>,
) -> Result<(Live, std::result::Result<(), String>)> {
    let rule = granted.map(|g| g.rule.as_str());
    let live = Live::create(p, timeout + GRACE, rule).await?;
    match prepare(&live, files).await {
        Ok(written) => Ok((live, written)),
        Err(e) => {
            live.delete().await;
            Err(e)
        }
    }
}

/// Uploads `files` and hands [`PROJECT_DIR`] to the guest.
async fn prepare(
    live: &Live,
    files: &[(String, &[u8])],
) -> Result<std::result::Result<(), String>> {
    if !files.is_empty()
        && let Err(why) = live.endpoint.upload(files).await?
    {
        return Ok(Err(why));
    }
    let own = vec![
        "/bin/sh".to_owned(),
        "-c".to_owned(),
        format!("mkdir -p {PROJECT_DIR} && chown -R {GUEST_USER} {PROJECT_DIR}"),
    ];
    let e = live
        .endpoint
        .exec(&own, "root", "/", Duration::from_secs(30))
        .await?;
    if e.exit_code != 0 {
        return Err(Error::infrastructure(format!(
            "handing {PROJECT_DIR} to the guest failed (exit {}): {}",
            e.exit_code,
            crate::provider::hosted::http::excerpt(&e.stderr, &[])
        )));
    }
    Ok(Ok(()))
}

/// Runs `cmd` as the guest in [`PROJECT_DIR`] until `until`, with
/// `granted`'s environment.
pub(crate) async fn guest(
    live: &Live,
    cmd: &[String],
    until: Instant,
    granted: Option<&Granted>,
) -> Result<Ran> {
    let budget = until.saturating_duration_since(Instant::now());
    if budget.is_zero() {
        return Ok(Ran {
            out: Wrapped {
                stdout: Vec::new(),
                stdout_truncated: false,
                stderr: Vec::new(),
                stderr_truncated: false,
                status: 137,
            },
            exit_code: 124,
            timed_out: true,
            elapsed: Duration::ZERO,
        });
    }
    let nonce = hex::encode(rand::random::<[u8; 12]>());
    let argv = match granted {
        Some(g) => {
            let mut with_env = vec!["/usr/bin/env".to_owned()];
            with_env.extend(g.env.iter().cloned());
            with_env.extend(cmd.iter().cloned());
            wrapper::argv(&with_env, budget, &nonce)
        }
        None => wrapper::argv(cmd, budget, &nonce),
    };
    let started = Instant::now();
    let e = live
        .endpoint
        .exec(&argv, GUEST_USER, PROJECT_DIR, budget + EXEC_MARGIN)
        .await?;
    let elapsed = started.elapsed();
    let out = wrapper::parse(e.stdout, e.stderr, &nonce)
        .map_err(|m| Error::infrastructure(format!("the in-guest wrapper: {m}")))?;
    let (exit_code, timed_out) = wrapper::outcome(out.status, elapsed, budget);
    Ok(Ran {
        out,
        exit_code,
        timed_out,
        elapsed,
    })
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

/// Runs one snippet.
pub(crate) async fn snippet(
    p: &Arc<Inner>,
    job: &JavaScriptRun,
    ctx: &RunContext,
) -> Result<JavaScriptResult> {
    let files = [(SNIPPET_FILE.to_owned(), job.code.as_bytes())];
    let granted = granted(p, ctx)?;
    cancellable(ctx, async |held: &mut Option<Live>| {
        let (live, written) = fresh(p, ctx.timeout, &files, granted.as_ref()).await?;
        let live = held.insert(live);
        let deadline = Instant::now() + ctx.timeout;
        written.map_err(|why| {
            Error::infrastructure(format!("writing the snippet into the sandbox: {why}"))
        })?;
        let cmd: Vec<String> = match granted {
            Some(_) => vec![
                "node".into(),
                "--require".into(),
                NODE_CLIENT.into(),
                SNIPPET_FILE.into(),
            ],
            None => vec!["node".into(), SNIPPET_FILE.into()],
        };
        let ran = guest(live, &cmd, deadline, granted.as_ref()).await?;
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
    let files: Vec<(String, &[u8])> = job
        .files
        .iter()
        .map(|f| (format!("{PROJECT_DIR}/{}", f.path), f.content.as_bytes()))
        .collect();
    let granted = granted(p, ctx)?;
    cancellable(ctx, async |held: &mut Option<Live>| {
        let (live, written) = fresh(p, ctx.timeout, &files, granted.as_ref()).await?;
        let live = held.insert(live);
        let deadline = Instant::now() + ctx.timeout;
        if let Err(why) = written {
            return Ok(ProjectResult {
                outcome: ProjectOutcome::SetupFailed,
                outcome_detail: format!("writing the files into {PROJECT_DIR} failed: {why}"),
                ..ProjectResult::default()
            });
        }
        steps(live, job, ctx, deadline, granted.as_ref()).await
    })
    .await
}

/// A project's steps in `live`, each `sh -c <step>` wrapped, as the guest
/// in [`PROJECT_DIR`], with `granted`'s environment.
struct GuestSteps<'a> {
    live: &'a Live,
    granted: Option<&'a Granted>,
}

#[async_trait::async_trait]
impl Steps for GuestSteps<'_> {
    async fn step(&self, step: &str, deadline: Instant) -> Result<StepEnd> {
        let cmd = ["/bin/sh".to_owned(), "-c".to_owned(), step.to_owned()];
        let ran = guest(self.live, &cmd, deadline, self.granted).await?;
        Ok(StepEnd {
            result: StepResult {
                stdout: ran.out.stdout,
                stderr: ran.out.stderr,
                duration_ms: ran.elapsed.as_millis() as i64,
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

/// Runs the steps until one fails or the deadline, then the artifacts.
async fn steps(
    live: &Live,
    job: &ProjectRun,
    ctx: &RunContext,
    deadline: Instant,
    granted: Option<&Granted>,
) -> Result<ProjectResult> {
    let runner = GuestSteps { live, granted };
    let mut result = steps::run(&runner, &job.steps, deadline, ctx.timeout.as_millis()).await?;
    if !job.artifacts.is_empty() {
        collect(live, job, &mut result).await?;
    }
    Ok(result)
}

async fn collect(live: &Live, job: &ProjectRun, result: &mut ProjectResult) -> Result<()> {
    let mut cmd = vec![
        "/bin/sh".to_owned(),
        "-c".to_owned(),
        CHECK_ARTIFACTS.to_owned(),
        "sh".into(),
        PROJECT_DIR.into(),
    ];
    cmd.extend(job.artifacts.iter().cloned());
    let ran = guest(live, &cmd, Instant::now() + COLLECT_BUDGET, None).await?;
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
            let full = format!("{PROJECT_DIR}/{path}");
            let Some(got) = live
                .endpoint
                .download(std::slice::from_ref(&full), left + (64 << 10))
                .await?
            else {
                result.artifacts_truncated = true;
                continue;
            };
            match got.into_iter().next() {
                Some((_, Downloaded::File(content))) if content.len() <= left => {
                    left -= content.len();
                    result.artifacts.push(Artifact {
                        path: path.clone(),
                        content,
                    });
                }
                Some((_, Downloaded::File(_))) => result.artifacts_truncated = true,
                Some((_, Downloaded::Error(why))) => refused.push(format!("{path} ({why})")),
                None => refused.push(format!("{path} (missing)")),
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
