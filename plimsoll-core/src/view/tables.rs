//! The tables: one line per field.

use super::{Answer, Class, Field, Ty, Value};
use crate::record::RunRecord;
use crate::result::{
    Artifact, CellResult, JavaScriptResult, ModuleResult, ModuleRowResult, ProjectOutcome,
    ProjectResult, StepResult,
};
use crate::wire::CloseSessionResponse;

/// `name: Ty, "doc", |v| value` as a [`Field`].
macro_rules! f {
    ($name:ident: $ty:ident, $doc:literal, |$v:ident| $read:expr) => {
        Field {
            name: stringify!($name),
            ty: Ty::$ty,
            doc: $doc,
            read: |$v| $read,
        }
    };
}

fn int(v: impl TryInto<i64>) -> Value<'static> {
    Value::Int(v.try_into().unwrap_or(i64::MAX))
}

/// The short name of an outcome (`completed`, `setup_failed`, …).
fn outcome_text(o: ProjectOutcome) -> Value<'static> {
    Value::Text(o.as_str())
}

/// A run record (version 4).
pub static RECORD: Class<RunRecord> = Class {
    name: "Record",
    doc: "A run record (version 4): digests of what was asked and what came back, the evidence, the times, and in a session the chain. It is not a signature.",
    kind: None,
    fields: &[
        f!(version: Int, "Record version (4).", |r| int(r.version)),
        f!(request_sha256: Text, "Digest of the request as sent.", |r| Value::Text(&r.request_sha256)),
        f!(result_sha256: Text, "Digest of the result; empty on an unanswered record.", |r| Value::Text(&r.result_sha256)),
        f!(provider: Text, "The provider.", |r| Value::Text(&r.provider)),
        f!(isolation: Text, "The tier that ran.", |r| Value::Text(&r.isolation)),
        f!(environment: Text, "The content-addressed environment, or empty.", |r| Value::Text(&r.environment)),
        f!(policy: Text, "The provider's policy digest, then `;wall=sha256:…` (the wall identity: the digest of every part that holds the wall up), then `;accepted=CVE-…` when the operator accepted advisories that apply, then `;sandbox=warm-pool` for a pooled sandbox; empty for the disabled provider.", |r| Value::Text(&r.policy)),
        f!(started_unix_ms: Int, "Start, Unix ms.", |r| int(r.started_unix_ms)),
        f!(ended_unix_ms: Int, "End, Unix ms.", |r| int(r.ended_unix_ms)),
        f!(session: Text, "The session fingerprint, or empty.", |r| Value::Text(&r.session)),
        f!(sequence: Int, "The call's place in its session (1-based), 0 for a single run.", |r| int(r.sequence)),
        f!(previous_sha256: Text, "The previous call's record digest, or empty.", |r| Value::Text(&r.previous_sha256)),
        f!(record_sha256: Text, "This record's digest.", |r| Value::Text(&r.record_sha256)),
        f!(software_identity: Text, "The software that ran.", |r| Value::Text(&r.software_identity)),
        f!(software_rule_id: Text, "The id of the caller's software rule, or empty.", |r| Value::Text(&r.software_rule_id)),
        f!(unanswered: Text, "On an unanswered session call: the error's Connect code.", |r| Value::Text(&r.unanswered)),
        f!(instance: Text, "The daemon instance reference.", |r| Value::Text(&r.instance)),
    ],
};

/// What every answer carries, whatever ran.
pub static RUN: Class<Answer> = Class {
    name: "RunResult",
    doc: "Whatever ran: evidence, record, and the exact wire JSON of the request sent and the answer received.",
    kind: None,
    fields: &[
        f!(kind: Text, "`javascript`, `project`, `module` or `cell`.", |a| Value::Text(a.response.output.as_ref().map_or("", |o| o.kind()))),
        f!(sandbox: Text, "The provider that ran it.", |a| Value::Text(&a.response.evidence.sandbox)),
        f!(isolation: Text, "The tier that ran it: configuration plus startup proof, never attestation.", |a| Value::Text(&a.response.evidence.isolation)),
        f!(environment: Text, "The content-addressed environment, or empty.", |a| Value::Text(&a.response.evidence.environment)),
        f!(software_identity: Text, "The software identity, or empty.", |a| Value::Text(&a.response.evidence.software_identity)),
        f!(instance: Text, "The instance reference.", |a| Value::Text(&a.response.evidence.instance)),
        f!(duration_ms: Int, "Wall time, ms (not digested).", |a| int(a.response.duration_ms)),
        f!(record: OptRecord, "The run record.", |a| a.response.record.as_ref().map_or(Value::Nothing, Value::Record)),
        f!(record_json: OptText, "The run record as plimsoll.v1 JSON.", |a| a.record_json.as_deref().map_or(Value::Nothing, Value::Text)),
        f!(phases_json: OptText, "Where its time went, as JSON: `{\"source\":\"fresh\",\"phases\":[{\"phase\":\"admitted\",\"ms\":0.04},…]}`, monotonic milliseconds per phase (admitted, acquired, started, running, collected, cleaned_up) and where the sandbox came from (`fresh`, `snippet_pool`, `session_pool`, `session`); absent when the answer does not say.", |a| a.phases_json.as_deref().map_or(Value::Nothing, Value::Text)),
        f!(session_end: OptText, "For a session call: why the session ended during or after it.", |a| a.session_end.map_or(Value::Nothing, |e| Value::Text(e.as_str()))),
        f!(request_json: Text, "The request as sent, in plimsoll.v1 JSON (for verify_run and Chain).", |a| Value::Text(&a.request_json)),
        f!(response_json: Text, "The answer, in plimsoll.v1 JSON.", |a| Value::Text(&a.response_json)),
    ],
};

/// What a snippet did.
pub static JAVASCRIPT: Class<JavaScriptResult> = Class {
    name: "JavaScriptResult",
    doc: "What a JavaScript snippet did. A non-zero exit is a result, not an error.",
    kind: Some("javascript"),
    fields: &[
        f!(stdout: Bytes, "Standard output as kept.", |r| Value::Bytes(&r.stdout)),
        f!(stderr: Bytes, "Standard error as kept.", |r| Value::Bytes(&r.stderr)),
        f!(exit_code: Int, "The exit code; 124 when the deadline ended it.", |r| int(r.exit_code)),
        f!(timed_out: Bool, "The deadline ended it.", |r| Value::Bool(r.timed_out)),
        f!(stdout_truncated: Bool, "Standard output was cut at the cap.", |r| Value::Bool(r.stdout_truncated)),
        f!(stderr_truncated: Bool, "Standard error was cut at the cap.", |r| Value::Bool(r.stderr_truncated)),
    ],
};

/// What a cell did.
pub static CELL: Class<CellResult> = Class {
    name: "CellResult",
    doc: "What a notebook cell did.",
    kind: Some("cell"),
    fields: &[
        f!(stdout: Bytes, "Standard output (the last expression's value is printed here).", |r| Value::Bytes(&r.stdout)),
        f!(stderr: Bytes, "Standard error.", |r| Value::Bytes(&r.stderr)),
        f!(exit_code: Int, "0 ran, 1 raised, 124 deadline.", |r| int(r.exit_code)),
        f!(timed_out: Bool, "The deadline ended it (and its interpreter).", |r| Value::Bool(r.timed_out)),
        f!(stdout_truncated: Bool, "Standard output was cut at the cap.", |r| Value::Bool(r.stdout_truncated)),
        f!(stderr_truncated: Bool, "Standard error was cut at the cap.", |r| Value::Bool(r.stderr_truncated)),
        f!(interpreter_started: Bool, "The call began with a fresh interpreter: nothing defined earlier exists.", |r| Value::Bool(r.interpreter_started)),
        f!(interpreter_ended: Bool, "The interpreter ended during or after this call.", |r| Value::Bool(r.interpreter_ended)),
    ],
};

/// One project step.
pub static STEP: Class<StepResult> = Class {
    name: "Step",
    doc: "One project step that ran.",
    kind: None,
    fields: &[
        f!(command: Text, "The command as sent.", |s| Value::Text(&s.command)),
        f!(stdout: Bytes, "Standard output as kept.", |s| Value::Bytes(&s.stdout)),
        f!(stderr: Bytes, "Standard error as kept.", |s| Value::Bytes(&s.stderr)),
        f!(exit_code: Int, "The exit code; 124 on a deadline.", |s| int(s.exit_code)),
        f!(timed_out: Bool, "A deadline ended it.", |s| Value::Bool(s.timed_out)),
        f!(duration_ms: Int, "Wall time, ms.", |s| int(s.duration_ms)),
        f!(stdout_truncated: Bool, "Standard output was cut at the cap.", |s| Value::Bool(s.stdout_truncated)),
        f!(stderr_truncated: Bool, "Standard error was cut at the cap.", |s| Value::Bool(s.stderr_truncated)),
    ],
};

/// One collected artifact.
pub static ARTIFACT: Class<Artifact> = Class {
    name: "Artifact",
    doc: "One collected artifact.",
    kind: None,
    fields: &[
        f!(path: Text, "Its path under the project, as asked for.", |a| Value::Text(&a.path)),
        f!(content: Bytes, "Its content.", |a| Value::Bytes(&a.content)),
    ],
};

/// What a project did.
pub static PROJECT: Class<ProjectResult> = Class {
    name: "ProjectResult",
    doc: "What a project did.",
    kind: Some("project"),
    fields: &[
        f!(outcome: Text, "How the run concluded: `completed`, `setup_failed`, `timed_out`, `protocol_error`, `runner_failed`.", |r| outcome_text(r.outcome)),
        f!(outcome_detail: Text, "Human context for the outcome.", |r| Value::Text(&r.outcome_detail)),
        f!(steps: Steps, "One per step that ran.", |r| Value::Steps(&r.steps)),
        f!(artifacts: Artifacts, "Collected artifacts, in the order returned.", |r| Value::Artifacts(&r.artifacts)),
        f!(artifacts_truncated: Bool, "Some artifacts were dropped at the cap.", |r| Value::Bool(r.artifacts_truncated)),
    ],
};

/// One module row.
pub static ROW: Class<ModuleRowResult> = Class {
    name: "ModuleRow",
    doc: "One module row's result.",
    kind: None,
    fields: &[
        f!(status: Int, "The row's status (0 ran).", |r| int(r.status)),
        f!(outputs: Floats, "Its outputs.", |r| Value::Floats(&r.outputs)),
    ],
};

/// What a module run did.
pub static MODULE: Class<ModuleResult> = Class {
    name: "ModuleResult",
    doc: "What a module run did.",
    kind: Some("module"),
    fields: &[
        f!(outcome: Text, "How the run concluded.", |r| outcome_text(r.outcome)),
        f!(outcome_detail: Text, "Human context.", |r| Value::Text(&r.outcome_detail)),
        f!(width: Int, "Output width.", |r| int(r.width)),
        f!(runs: Rows, "One per row.", |r| Value::Rows(&r.runs)),
        f!(stdout: Bytes, "Standard output.", |r| Value::Bytes(&r.stdout)),
        f!(stderr: Bytes, "Standard error.", |r| Value::Bytes(&r.stderr)),
    ],
};

/// A closed session's summary.
pub static SUMMARY: Class<CloseSessionResponse> = Class {
    name: "SessionSummary",
    doc: "A closed session's summary, as the core checked it.",
    kind: None,
    fields: &[
        f!(session: Text, "The session fingerprint.", |c| Value::Text(&c.session)),
        f!(calls: Int, "Calls executed.", |c| int(c.calls)),
        f!(last_record_sha256: Text, "The last record's digest, or empty.", |c| Value::Text(&c.last_record_sha256)),
        f!(ended: Text, "`closed`, or the earlier end.", |c| Value::Text(c.ended.as_str())),
    ],
};
