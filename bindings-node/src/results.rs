//! JavaScript views of the core's answers: plain objects with camelCase
//! fields, byte streams as `Buffer`s. Copies only; nothing here checks.

use napi::bindgen_prelude::*;
use plimsoll_core::record::RunRecord as CoreRecord;
use plimsoll_core::request::Request;
use plimsoll_core::result::{self as res, Output};
use plimsoll_core::wire::json::encode;
use plimsoll_core::wire::{CloseSessionResponse, RunRequest, RunResponse};

/// A run record (version 4): digests of what was asked and what came back, the
/// evidence, the times, and in a session the chain. It is not a signature.
#[napi(object)]
pub struct RunRecord {
    /// Record version (4).
    pub version: u32,
    /// Digest of the request as sent.
    pub request_sha256: String,
    /// Digest of the result; empty on an unanswered record.
    pub result_sha256: String,
    /// The provider.
    pub provider: String,
    /// The tier that ran.
    pub isolation: String,
    /// The content-addressed environment, or empty.
    pub environment: String,
    /// The provider's policy digest, or empty.
    pub policy: String,
    /// Start, Unix ms.
    pub started_unix_ms: i64,
    /// End, Unix ms.
    pub ended_unix_ms: i64,
    /// The session fingerprint, or empty.
    pub session: String,
    /// The call's place in its session (1-based), 0 for a single run.
    pub sequence: i64,
    /// The previous call's record digest, or empty.
    pub previous_sha256: String,
    /// This record's digest.
    pub record_sha256: String,
    /// The software that ran.
    pub software_identity: String,
    /// The id of the caller's software rule, or empty.
    pub software_rule_id: String,
    /// On an unanswered session call: the error's Connect code.
    pub unanswered: String,
    /// The daemon instance reference.
    pub instance: String,
}

impl From<&CoreRecord> for RunRecord {
    fn from(r: &CoreRecord) -> RunRecord {
        RunRecord {
            version: r.version,
            request_sha256: r.request_sha256.clone(),
            result_sha256: r.result_sha256.clone(),
            provider: r.provider.clone(),
            isolation: r.isolation.clone(),
            environment: r.environment.clone(),
            policy: r.policy.clone(),
            started_unix_ms: r.started_unix_ms,
            ended_unix_ms: r.ended_unix_ms,
            session: r.session.clone(),
            sequence: i64::try_from(r.sequence).unwrap_or(i64::MAX),
            previous_sha256: r.previous_sha256.clone(),
            record_sha256: r.record_sha256.clone(),
            software_identity: r.software_identity.clone(),
            software_rule_id: r.software_rule_id.clone(),
            unanswered: r.unanswered.clone(),
            instance: r.instance.clone(),
        }
    }
}

/// What a JavaScript snippet did. A non-zero exit is a result, not an error.
#[napi(object)]
pub struct JavaScriptResult {
    /// The payload kind.
    #[napi(ts_type = "'javascript'")]
    pub kind: String,
    /// The provider that ran it.
    pub sandbox: String,
    /// The tier that ran it: configuration plus startup proof, never attestation.
    pub isolation: String,
    /// The content-addressed environment, or empty.
    pub environment: String,
    /// The software identity, or empty.
    pub software_identity: String,
    /// The instance reference.
    pub instance: String,
    /// Wall time, ms.
    pub duration_ms: i64,
    /// The run record.
    pub record: Option<RunRecord>,
    /// For a session call: why the session ended during or after it.
    pub session_end: Option<String>,
    /// The request as sent, in plimsoll.v1 JSON (for `verifyRun` and `Chain`).
    pub request_json: String,
    /// The answer, in plimsoll.v1 JSON.
    pub response_json: String,
    /// Standard output as kept.
    pub stdout: Buffer,
    /// Standard error as kept.
    pub stderr: Buffer,
    /// The exit code; 124 when the deadline ended it.
    pub exit_code: i32,
    /// The deadline ended it.
    pub timed_out: bool,
    /// Standard output was cut at the cap.
    pub stdout_truncated: bool,
    /// Standard error was cut at the cap.
    pub stderr_truncated: bool,
}

/// What a notebook cell did.
#[napi(object)]
pub struct CellResult {
    /// The payload kind.
    #[napi(ts_type = "'cell'")]
    pub kind: String,
    /// The provider that ran it.
    pub sandbox: String,
    /// The tier that ran it: configuration plus startup proof, never attestation.
    pub isolation: String,
    /// The content-addressed environment, or empty.
    pub environment: String,
    /// The software identity, or empty.
    pub software_identity: String,
    /// The instance reference.
    pub instance: String,
    /// Wall time, ms.
    pub duration_ms: i64,
    /// The run record.
    pub record: Option<RunRecord>,
    /// For a session call: why the session ended during or after it.
    pub session_end: Option<String>,
    /// The request as sent, in plimsoll.v1 JSON (for `verifyRun` and `Chain`).
    pub request_json: String,
    /// The answer, in plimsoll.v1 JSON.
    pub response_json: String,
    /// Standard output (the last expression's value is printed here).
    pub stdout: Buffer,
    /// Standard error.
    pub stderr: Buffer,
    /// 0 ran, 1 raised, 124 deadline.
    pub exit_code: i32,
    /// The deadline ended it (and its interpreter).
    pub timed_out: bool,
    /// Standard output was cut at the cap.
    pub stdout_truncated: bool,
    /// Standard error was cut at the cap.
    pub stderr_truncated: bool,
    /// The call began with a fresh interpreter.
    pub interpreter_started: bool,
    /// The interpreter ended during or after this call.
    pub interpreter_ended: bool,
}

/// One project step that ran.
#[napi(object)]
pub struct Step {
    /// The command as sent.
    pub command: String,
    /// Standard output as kept.
    pub stdout: Buffer,
    /// Standard error as kept.
    pub stderr: Buffer,
    /// The exit code; 124 on a deadline.
    pub exit_code: i32,
    /// A deadline ended it.
    pub timed_out: bool,
    /// Wall time, ms.
    pub duration_ms: i64,
    /// Standard output was cut at the cap.
    pub stdout_truncated: bool,
    /// Standard error was cut at the cap.
    pub stderr_truncated: bool,
}

/// A file collected after a project.
#[napi(object)]
pub struct Artifact {
    /// The requested path.
    pub path: String,
    /// Its bytes.
    pub content: Buffer,
}

/// What a project did.
#[napi(object)]
pub struct ProjectResult {
    /// The payload kind.
    #[napi(ts_type = "'project'")]
    pub kind: String,
    /// The provider that ran it.
    pub sandbox: String,
    /// The tier that ran it: configuration plus startup proof, never attestation.
    pub isolation: String,
    /// The content-addressed environment, or empty.
    pub environment: String,
    /// The software identity, or empty.
    pub software_identity: String,
    /// The instance reference.
    pub instance: String,
    /// Wall time, ms.
    pub duration_ms: i64,
    /// The run record.
    pub record: Option<RunRecord>,
    /// For a session call: why the session ended during or after it.
    pub session_end: Option<String>,
    /// The request as sent, in plimsoll.v1 JSON (for `verifyRun` and `Chain`).
    pub request_json: String,
    /// The answer, in plimsoll.v1 JSON.
    pub response_json: String,
    /// `completed`, `setup_failed`, `timed_out`, `protocol_error` or `runner_failed`.
    pub outcome: String,
    /// Human context for the outcome.
    pub outcome_detail: String,
    /// One per step that ran.
    pub steps: Vec<Step>,
    /// Collected artifacts.
    pub artifacts: Vec<Artifact>,
    /// Some artifacts were dropped at the cap.
    pub artifacts_truncated: bool,
}

/// One module row's result.
#[napi(object)]
pub struct ModuleRow {
    /// Status: non-negative on success.
    pub status: i32,
    /// Outputs.
    pub outputs: Vec<f64>,
}

/// What a module run did.
#[napi(object)]
pub struct ModuleResult {
    /// The payload kind.
    #[napi(ts_type = "'module'")]
    pub kind: String,
    /// The provider that ran it.
    pub sandbox: String,
    /// The tier that ran it: configuration plus startup proof, never attestation.
    pub isolation: String,
    /// The content-addressed environment, or empty.
    pub environment: String,
    /// The software identity, or empty.
    pub software_identity: String,
    /// The instance reference.
    pub instance: String,
    /// Wall time, ms.
    pub duration_ms: i64,
    /// The run record.
    pub record: Option<RunRecord>,
    /// For a session call: why the session ended during or after it.
    pub session_end: Option<String>,
    /// The request as sent, in plimsoll.v1 JSON (for `verifyRun` and `Chain`).
    pub request_json: String,
    /// The answer, in plimsoll.v1 JSON.
    pub response_json: String,
    /// How the run concluded.
    pub outcome: String,
    /// Human context.
    pub outcome_detail: String,
    /// Output width.
    pub width: i32,
    /// One per row.
    pub runs: Vec<ModuleRow>,
    /// Standard output.
    pub stdout: Buffer,
    /// Standard error.
    pub stderr: Buffer,
}

/// Any result, by kind.
pub type AnyResult = Either4<JavaScriptResult, ProjectResult, CellResult, ModuleResult>;

struct Common {
    sandbox: String,
    isolation: String,
    environment: String,
    software_identity: String,
    instance: String,
    duration_ms: i64,
    record: Option<RunRecord>,
    session_end: Option<String>,
    request_json: String,
    response_json: String,
}

macro_rules! with_common {
    ($name:ident, $c:expr, $kind:literal { $($f:ident : $v:expr),* $(,)? }) => {{
        let c = $c;
        $name {
            kind: $kind.to_owned(),
            sandbox: c.sandbox,
            isolation: c.isolation,
            environment: c.environment,
            software_identity: c.software_identity,
            instance: c.instance,
            duration_ms: c.duration_ms,
            record: c.record,
            session_end: c.session_end,
            request_json: c.request_json,
            response_json: c.response_json,
            $($f: $v,)*
        }
    }};
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The JavaScript object for an answer to `request`, by the answer's kind.
/// An answer without a result is refused (a daemon's answer always carries one).
pub fn run_result(
    request: &Request,
    response: RunResponse,
    session_end: Option<&str>,
) -> Result<AnyResult> {
    let e = &response.evidence;
    let common = Common {
        sandbox: e.sandbox.clone(),
        isolation: e.isolation.clone(),
        environment: e.environment.clone(),
        software_identity: e.software_identity.clone(),
        instance: e.instance.clone(),
        duration_ms: response.duration_ms,
        record: response.record.as_ref().map(RunRecord::from),
        session_end: session_end.map(str::to_owned),
        request_json: text(encode(&RunRequest::from_request(request))),
        response_json: text(encode(&response)),
    };
    Ok(match response.output {
        Some(Output::JavaScript(r)) => {
            Either4::A(with_common!(JavaScriptResult, common, "javascript" {
                stdout: r.stdout.into(),
                stderr: r.stderr.into(),
                exit_code: r.exit_code,
                timed_out: r.timed_out,
                stdout_truncated: r.stdout_truncated,
                stderr_truncated: r.stderr_truncated,
            }))
        }
        Some(Output::Project(r)) => Either4::B(with_common!(ProjectResult, common, "project" {
            outcome: r.outcome.as_str().to_owned(),
            outcome_detail: r.outcome_detail,
            steps: r.steps.into_iter().map(step).collect(),
            artifacts: r
                .artifacts
                .into_iter()
                .map(|a| Artifact { path: a.path, content: a.content.into() })
                .collect(),
            artifacts_truncated: r.artifacts_truncated,
        })),
        Some(Output::Cell(r)) => Either4::C(with_common!(CellResult, common, "cell" {
            stdout: r.stdout.into(),
            stderr: r.stderr.into(),
            exit_code: r.exit_code,
            timed_out: r.timed_out,
            stdout_truncated: r.stdout_truncated,
            stderr_truncated: r.stderr_truncated,
            interpreter_started: r.interpreter_started,
            interpreter_ended: r.interpreter_ended,
        })),
        Some(Output::Module(r)) => Either4::D(with_common!(ModuleResult, common, "module" {
            outcome: r.outcome.as_str().to_owned(),
            outcome_detail: r.outcome_detail,
            width: r.width,
            runs: r
                .runs
                .into_iter()
                .map(|m| ModuleRow { status: m.status, outputs: m.outputs })
                .collect(),
            stdout: r.stdout.into(),
            stderr: r.stderr.into(),
        })),
        None => {
            return Err(Error::new(
                Status::GenericFailure,
                "the answer carries no result",
            ));
        }
    })
}

fn step(s: res::StepResult) -> Step {
    Step {
        command: s.command,
        stdout: s.stdout.into(),
        stderr: s.stderr.into(),
        exit_code: s.exit_code,
        timed_out: s.timed_out,
        duration_ms: s.duration_ms,
        stdout_truncated: s.stdout_truncated,
        stderr_truncated: s.stderr_truncated,
    }
}

/// A closed session's summary, as the core checked it.
#[napi(object)]
pub struct SessionSummary {
    /// The session fingerprint.
    pub session: String,
    /// Calls executed.
    pub calls: i64,
    /// The last record's digest, or empty.
    pub last_record_sha256: String,
    /// `closed`, or the earlier end.
    pub ended: String,
}

impl From<CloseSessionResponse> for SessionSummary {
    fn from(c: CloseSessionResponse) -> SessionSummary {
        SessionSummary {
            session: c.session,
            calls: i64::try_from(c.calls).unwrap_or(i64::MAX),
            last_record_sha256: c.last_record_sha256,
            ended: c.ended.as_str().to_owned(),
        }
    }
}
