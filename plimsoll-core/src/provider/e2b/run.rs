//! A snippet or a project on E2B: one fresh VM per run, read back before
//! any code goes in, killed when the run returns (on every path, through
//! [`Vm`]'s drop). Code runs as the template's unprivileged `user` in
//! [`PROJECT_DIR`]; a snippet is `node <file>`, each project step `sh -c
//! <step>`, each its own envd process with the run's deadline.
//!
//! A granted run's VM is admitted to the egress guard before it is created
//! ([`Vm::create`]), and its code gets the host API's address,
//! `HOST_API_URL=https://<guard host><guard path>`, and
//! `NODE_EXTRA_CA_CERTS` at the OS bundle, so Node trusts E2B's intercepting
//! egress proxy as the OS tools do; a snippet has the Node host client
//! preloaded (`host` is a global). The guard credential is not among them:
//! it reaches E2B in the create's header rule, never the VM.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::Inner;
use super::envd::{FLOODED_EXIT, Finish, Ran, ReadFile};
use super::process::StartRequest;
use super::vm::Vm;
use crate::error::{Error, ErrorCode, Result};
use crate::provider::RunContext;
use crate::provider::hosted::probe::CHECK_ARTIFACTS;
use crate::provider::hosted::steps::{self, StepEnd, Steps};
use crate::request::{JavaScriptRun, ProjectRun};
use crate::result::{Artifact, JavaScriptResult, ProjectOutcome, ProjectResult, StepResult};

/// The guest's user (the template's default; it cannot become root).
pub const GUEST_USER: &str = "user";
/// Where files go and code runs.
pub const PROJECT_DIR: &str = "/home/user/project";
/// Where the images keep the Node host API client (images/clients/host.js).
pub const NODE_CLIENT: &str = "/usr/local/lib/plimsoll/host.js";
/// The OS trust bundle, which holds E2B's egress proxy CA in its VMs.
pub const OS_CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";
/// Where a snippet's code is written.
const SNIPPET_FILE: &str = "/home/user/.plimsoll/snippet.js";
/// Bytes kept per stream (snippets and steps alike).
pub const OUTPUT_CAP: usize = 64 * 1024;
/// The artifacts' total budget.
pub const ARTIFACT_BUDGET: usize = 8 * 1024 * 1024;
/// Time for the control plane around the guest's budget (create, read back,
/// files, kill): the VM's TTL is the run's budget plus this.
pub const GRACE: Duration = Duration::from_secs(60);

pub(crate) fn cancelled() -> Error {
    Error::new(
        ErrorCode::Cancelled,
        "the run was cancelled; its E2B sandbox was killed",
    )
}

/// A fresh VM for one run, read back; `Err(cancelled)` when the run was
/// cancelled meanwhile.
async fn fresh(p: &Arc<Inner>, ctx: &RunContext) -> Result<Vm> {
    let pass = match (&ctx.grant, &p.egress) {
        (Some(broker), Some(e)) => Some(e.guard.admit(broker.clone())),
        (Some(_), None) => {
            return Err(Error::unsupported(
                "the e2b provider carries grants only with E2B_GUARD_URL set",
            ));
        }
        (None, _) => None,
    };
    let vm = Vm::create(p, ctx.timeout + GRACE, pass).await?;
    if ctx.cancel.is_cancelled() {
        vm.kill().await;
        return Err(cancelled());
    }
    if let Err(e) = vm.check().await {
        vm.kill().await;
        return Err(e);
    }
    Ok(vm)
}

/// The environment of a run's code: the host API's address when it carries
/// a grant, nothing otherwise.
fn guest_env(p: &Inner, ctx: &RunContext) -> BTreeMap<String, String> {
    match (&ctx.grant, &p.egress) {
        (Some(_), Some(e)) => BTreeMap::from([
            ("HOST_API_URL".to_owned(), e.url.base()),
            ("NODE_EXTRA_CA_CERTS".to_owned(), OS_CA_BUNDLE.to_owned()),
        ]),
        _ => BTreeMap::new(),
    }
}

/// Runs one snippet.
pub(crate) async fn snippet(
    p: &Arc<Inner>,
    job: &JavaScriptRun,
    ctx: &RunContext,
) -> Result<JavaScriptResult> {
    let vm = fresh(p, ctx).await?;
    let ran = snippet_on(&vm, job, ctx, guest_env(p, ctx)).await;
    vm.kill().await;
    ran
}

/// Runs one snippet in `vm` with `envs` (the VM is the caller's to kill).
pub(crate) async fn snippet_on(
    vm: &Vm,
    job: &JavaScriptRun,
    ctx: &RunContext,
    envs: BTreeMap<String, String>,
) -> Result<JavaScriptResult> {
    let deadline = Instant::now() + ctx.timeout;
    vm.envd
        .write(
            GUEST_USER,
            &[(SNIPPET_FILE.to_owned(), job.code.as_bytes())],
        )
        .await?
        .map_err(|why| {
            Error::infrastructure(format!("writing the snippet into the E2B sandbox: {why}"))
        })?;
    let args = match ctx.grant {
        Some(_) => vec!["--require".into(), NODE_CLIENT.into(), SNIPPET_FILE.into()],
        None => vec![SNIPPET_FILE.into()],
    };
    let start = StartRequest {
        cmd: "node".into(),
        args,
        envs,
        cwd: Some(PROJECT_DIR.into()),
        stdin: false,
    };
    let ran = vm
        .envd
        .run(&start, GUEST_USER, deadline, OUTPUT_CAP, &ctx.cancel)
        .await?;
    let (exit_code, timed_out) = match ran.finish {
        Finish::Exit(c) => (c, false),
        Finish::Deadline => (124, true),
        Finish::Flooded => (FLOODED_EXIT, false),
        Finish::Cancelled => return Err(cancelled()),
    };
    let (stdout, stdout_truncated) = ran.stdout.finish();
    let (stderr, stderr_truncated) = ran.stderr.finish();
    Ok(JavaScriptResult {
        stdout,
        stderr,
        exit_code,
        timed_out,
        stdout_truncated,
        stderr_truncated,
    })
}

/// Runs one project.
pub(crate) async fn project(
    p: &Arc<Inner>,
    job: &ProjectRun,
    ctx: &RunContext,
) -> Result<ProjectResult> {
    let vm = fresh(p, ctx).await?;
    let deadline = Instant::now() + ctx.timeout;
    let result = async {
        let mut result = steps(&vm, job, ctx, deadline, guest_env(p, ctx)).await?;
        if !job.artifacts.is_empty() && result.outcome != ProjectOutcome::SetupFailed {
            collect(&vm, job, ctx, &mut result).await?;
        }
        Ok(result)
    }
    .await;
    vm.kill().await;
    result
}

/// Writes a project's files into [`PROJECT_DIR`] and runs its steps until
/// one fails or the deadline (no artifacts: [`collect`] takes them).
pub(crate) async fn steps(
    vm: &Vm,
    job: &ProjectRun,
    ctx: &RunContext,
    deadline: Instant,
    envs: BTreeMap<String, String>,
) -> Result<ProjectResult> {
    let mut result = ProjectResult::default();
    // The template makes the directory; steps run in it, files or none.
    let files: Vec<(String, &[u8])> = job
        .files
        .iter()
        .map(|f| (format!("{PROJECT_DIR}/{}", f.path), f.content.as_bytes()))
        .collect();
    if !files.is_empty()
        && let Err(why) = vm.envd.write(GUEST_USER, &files).await?
    {
        result.outcome = ProjectOutcome::SetupFailed;
        result.outcome_detail = format!("writing the files into {PROJECT_DIR} failed: {why}");
        return Ok(result);
    }
    let runner = VmSteps { vm, envs, ctx };
    steps::run(&runner, &job.steps, deadline, ctx.timeout.as_millis()).await
}

/// A project's steps in `vm`, each its own envd process, `sh -c <step>`
/// as the guest in [`PROJECT_DIR`] with `envs`.
struct VmSteps<'a> {
    vm: &'a Vm,
    envs: BTreeMap<String, String>,
    ctx: &'a RunContext,
}

#[async_trait::async_trait]
impl Steps for VmSteps<'_> {
    async fn step(&self, step: &str, deadline: Instant) -> Result<StepEnd> {
        let start = StartRequest {
            cmd: "/bin/sh".into(),
            args: vec!["-c".into(), step.to_owned()],
            envs: self.envs.clone(),
            cwd: Some(PROJECT_DIR.into()),
            stdin: false,
        };
        let ran: Ran = self
            .vm
            .envd
            .run(&start, GUEST_USER, deadline, OUTPUT_CAP, &self.ctx.cancel)
            .await?;
        let (stdout, stdout_truncated) = ran.stdout.finish();
        let (stderr, stderr_truncated) = ran.stderr.finish();
        let mut r = StepResult {
            stdout,
            stderr,
            duration_ms: ran.elapsed.as_millis() as i64,
            stdout_truncated,
            stderr_truncated,
            ..StepResult::default()
        };
        let mut stopped = None;
        match ran.finish {
            Finish::Cancelled => return Err(cancelled()),
            Finish::Exit(code) => r.exit_code = code,
            Finish::Flooded => {
                r.exit_code = FLOODED_EXIT;
                stopped = Some(format!(
                    "was killed for sending more than {} bytes of output",
                    super::envd::TRANSFER_BUDGET
                ));
            }
            Finish::Deadline => {
                r.exit_code = 124;
                r.timed_out = true;
            }
        }
        Ok(StepEnd { result: r, stopped })
    }
}

/// Time for checking and reading the artifacts, after the steps' deadline.
const COLLECT_BUDGET: Duration = Duration::from_secs(15);

/// Checks and reads the project's artifacts into `result`.
pub(crate) async fn collect(
    vm: &Vm,
    job: &ProjectRun,
    ctx: &RunContext,
    result: &mut ProjectResult,
) -> Result<()> {
    let mut args = vec![
        "-c".to_owned(),
        CHECK_ARTIFACTS.to_owned(),
        "sh".into(),
        PROJECT_DIR.into(),
    ];
    args.extend(job.artifacts.iter().cloned());
    let start = StartRequest {
        cmd: "/bin/sh".into(),
        args,
        envs: Default::default(),
        cwd: Some(PROJECT_DIR.into()),
        stdin: false,
    };
    let until = Instant::now() + COLLECT_BUDGET;
    let ran = vm
        .envd
        .run(&start, GUEST_USER, until, OUTPUT_CAP, &ctx.cancel)
        .await?;
    let (out, _) = ran.stdout.finish();
    let words: Vec<&str> = std::str::from_utf8(&out)
        .unwrap_or_default()
        .lines()
        .collect();
    let mut refused = Vec::new();
    if ran.finish != Finish::Exit(0) || words.len() != job.artifacts.len() {
        refused.push("the artifact check did not finish".to_owned());
    } else {
        let mut left = ARTIFACT_BUDGET;
        for (path, word) in job.artifacts.iter().zip(words) {
            if word != "ok" {
                refused.push(format!("{path} ({word})"));
                continue;
            }
            match vm
                .envd
                .read(GUEST_USER, &format!("{PROJECT_DIR}/{path}"), left)
                .await?
            {
                ReadFile::Bytes(content) => {
                    left -= content.len();
                    result.artifacts.push(Artifact {
                        path: path.clone(),
                        content,
                    });
                }
                ReadFile::Missing => refused.push(format!("{path} (missing)")),
                ReadFile::TooLarge => result.artifacts_truncated = true,
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
