//! Python views of the core's answers: run records, results of each kind, and
//! session summaries. Read-only copies; nothing here computes or checks.

use plimsoll_core::record::RunRecord;
use plimsoll_core::request::Request;
use plimsoll_core::result::{self as res, Output};
use plimsoll_core::wire::json::encode;
use plimsoll_core::wire::{CloseSessionResponse, RunRequest, RunResponse};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// A run record (version 4): digests of what was asked and what came back,
/// the evidence, the times, and in a session the chain. It is not a signature.
#[pyclass(module = "plimsoll", frozen, get_all)]
#[derive(Clone)]
pub struct Record {
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
    pub sequence: u64,
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

impl From<&RunRecord> for Record {
    fn from(r: &RunRecord) -> Record {
        Record {
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
            sequence: r.sequence,
            previous_sha256: r.previous_sha256.clone(),
            record_sha256: r.record_sha256.clone(),
            software_identity: r.software_identity.clone(),
            software_rule_id: r.software_rule_id.clone(),
            unanswered: r.unanswered.clone(),
            instance: r.instance.clone(),
        }
    }
}

#[pymethods]
impl Record {
    fn __repr__(&self) -> String {
        format!(
            "Record(isolation={:?}, sequence={}, record_sha256={:?})",
            self.isolation, self.sequence, self.record_sha256
        )
    }
}

/// Whatever ran: evidence, record, and the exact wire JSON of the request
/// sent and the answer received (for `verify_run` and `Chain`).
#[pyclass(module = "plimsoll", frozen, subclass)]
pub struct RunResult {
    response: RunResponse,
    request_json: String,
    session_end: Option<&'static str>,
}

#[pymethods]
impl RunResult {
    /// `javascript`, `project`, `module` or `cell`.
    #[getter]
    fn kind(&self) -> &'static str {
        self.response.output.as_ref().map_or("", |o| o.kind())
    }
    /// The provider that ran it.
    #[getter]
    fn sandbox(&self) -> &str {
        &self.response.evidence.sandbox
    }
    /// The tier that ran it: configuration plus startup proof, never attestation.
    #[getter]
    fn isolation(&self) -> &str {
        &self.response.evidence.isolation
    }
    /// The content-addressed environment, or empty.
    #[getter]
    fn environment(&self) -> &str {
        &self.response.evidence.environment
    }
    /// The software identity, or empty.
    #[getter]
    fn software_identity(&self) -> &str {
        &self.response.evidence.software_identity
    }
    /// The instance reference.
    #[getter]
    fn instance(&self) -> &str {
        &self.response.evidence.instance
    }
    /// Wall time, ms.
    #[getter]
    fn duration_ms(&self) -> i64 {
        self.response.duration_ms
    }
    /// The run record.
    #[getter]
    fn record(&self) -> Option<Record> {
        self.response.record.as_ref().map(Record::from)
    }
    /// For a session call: why the session ended during or after it, else `None`.
    #[getter]
    fn session_end(&self) -> Option<&'static str> {
        self.session_end
    }
    /// The request as sent, in plimsoll.v1 JSON.
    #[getter]
    fn request_json(&self) -> &str {
        &self.request_json
    }
    /// The answer, in plimsoll.v1 JSON.
    #[getter]
    fn response_json(&self) -> String {
        String::from_utf8_lossy(&encode(&self.response)).into_owned()
    }
}

/// What a JavaScript snippet did. A non-zero exit is a result, not an error.
#[pyclass(module = "plimsoll", frozen, extends = RunResult)]
pub struct JavaScriptResult {
    r: res::JavaScriptResult,
}

#[pymethods]
impl JavaScriptResult {
    /// Standard output as kept.
    #[getter]
    fn stdout<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.r.stdout)
    }
    /// Standard error as kept.
    #[getter]
    fn stderr<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.r.stderr)
    }
    /// The exit code; 124 when the deadline ended it.
    #[getter]
    fn exit_code(&self) -> i32 {
        self.r.exit_code
    }
    /// The deadline ended it.
    #[getter]
    fn timed_out(&self) -> bool {
        self.r.timed_out
    }
    /// Standard output was cut at the cap.
    #[getter]
    fn stdout_truncated(&self) -> bool {
        self.r.stdout_truncated
    }
    /// Standard error was cut at the cap.
    #[getter]
    fn stderr_truncated(&self) -> bool {
        self.r.stderr_truncated
    }
    fn __repr__(&self) -> String {
        format!(
            "JavaScriptResult(exit_code={}, timed_out={})",
            self.r.exit_code, self.r.timed_out
        )
    }
}

/// What a notebook cell did.
#[pyclass(module = "plimsoll", frozen, extends = RunResult)]
pub struct CellResult {
    r: res::CellResult,
}

#[pymethods]
impl CellResult {
    /// Standard output (the last expression's value is printed here).
    #[getter]
    fn stdout<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.r.stdout)
    }
    /// Standard error.
    #[getter]
    fn stderr<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.r.stderr)
    }
    /// 0 ran, 1 raised, 124 deadline.
    #[getter]
    fn exit_code(&self) -> i32 {
        self.r.exit_code
    }
    /// The deadline ended it (and its interpreter).
    #[getter]
    fn timed_out(&self) -> bool {
        self.r.timed_out
    }
    /// Standard output was cut at the cap.
    #[getter]
    fn stdout_truncated(&self) -> bool {
        self.r.stdout_truncated
    }
    /// Standard error was cut at the cap.
    #[getter]
    fn stderr_truncated(&self) -> bool {
        self.r.stderr_truncated
    }
    /// The call began with a fresh interpreter.
    #[getter]
    fn interpreter_started(&self) -> bool {
        self.r.interpreter_started
    }
    /// The interpreter ended during or after this call.
    #[getter]
    fn interpreter_ended(&self) -> bool {
        self.r.interpreter_ended
    }
}

/// One project step that ran.
#[pyclass(module = "plimsoll", frozen)]
pub struct Step {
    s: res::StepResult,
}

#[pymethods]
impl Step {
    /// The command as sent.
    #[getter]
    fn command(&self) -> &str {
        &self.s.command
    }
    /// Standard output as kept.
    #[getter]
    fn stdout<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.s.stdout)
    }
    /// Standard error as kept.
    #[getter]
    fn stderr<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.s.stderr)
    }
    /// The exit code; 124 on a deadline.
    #[getter]
    fn exit_code(&self) -> i32 {
        self.s.exit_code
    }
    /// A deadline ended it.
    #[getter]
    fn timed_out(&self) -> bool {
        self.s.timed_out
    }
    /// Wall time, ms.
    #[getter]
    fn duration_ms(&self) -> i64 {
        self.s.duration_ms
    }
    /// Standard output was cut at the cap.
    #[getter]
    fn stdout_truncated(&self) -> bool {
        self.s.stdout_truncated
    }
    /// Standard error was cut at the cap.
    #[getter]
    fn stderr_truncated(&self) -> bool {
        self.s.stderr_truncated
    }
}

/// What a project did.
#[pyclass(module = "plimsoll", frozen, extends = RunResult)]
pub struct ProjectResult {
    r: res::ProjectResult,
}

#[pymethods]
impl ProjectResult {
    /// How the run concluded: `completed`, `setup_failed`, `timed_out`, `protocol_error`, `runner_failed`.
    #[getter]
    fn outcome(&self) -> &'static str {
        self.r.outcome.as_str()
    }
    /// Human context for the outcome.
    #[getter]
    fn outcome_detail(&self) -> &str {
        &self.r.outcome_detail
    }
    /// One per step that ran.
    #[getter]
    fn steps(&self) -> Vec<Step> {
        self.r.steps.iter().map(|s| Step { s: s.clone() }).collect()
    }
    /// Collected artifacts as `(path, content)`, in the order returned.
    #[getter]
    fn artifacts<'py>(&self, py: Python<'py>) -> Vec<(String, Bound<'py, PyBytes>)> {
        self.r
            .artifacts
            .iter()
            .map(|a| (a.path.clone(), PyBytes::new(py, &a.content)))
            .collect()
    }
    /// Some artifacts were dropped at the cap.
    #[getter]
    fn artifacts_truncated(&self) -> bool {
        self.r.artifacts_truncated
    }
}

/// What a module run did.
#[pyclass(module = "plimsoll", frozen, extends = RunResult)]
pub struct ModuleResult {
    r: res::ModuleResult,
}

#[pymethods]
impl ModuleResult {
    /// How the run concluded.
    #[getter]
    fn outcome(&self) -> &'static str {
        self.r.outcome.as_str()
    }
    /// Human context.
    #[getter]
    fn outcome_detail(&self) -> &str {
        &self.r.outcome_detail
    }
    /// Output width.
    #[getter]
    fn width(&self) -> i32 {
        self.r.width
    }
    /// One `(status, outputs)` per row.
    #[getter]
    fn runs(&self) -> Vec<(i32, Vec<f64>)> {
        self.r
            .runs
            .iter()
            .map(|r| (r.status, r.outputs.clone()))
            .collect()
    }
    /// Standard output.
    #[getter]
    fn stdout<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.r.stdout)
    }
    /// Standard error.
    #[getter]
    fn stderr<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.r.stderr)
    }
}

/// The Python object for an answer to `request`: the subclass of its kind.
pub fn run_result(
    py: Python<'_>,
    request: &Request,
    response: RunResponse,
    session_end: Option<&'static str>,
) -> PyResult<Py<PyAny>> {
    let output = response.output.clone();
    let base = RunResult {
        response,
        request_json: String::from_utf8_lossy(&encode(&RunRequest::from_request(request)))
            .into_owned(),
        session_end,
    };
    let init = PyClassInitializer::from(base);
    Ok(match output {
        Some(Output::JavaScript(r)) => {
            Py::new(py, init.add_subclass(JavaScriptResult { r }))?.into_any()
        }
        Some(Output::Cell(r)) => Py::new(py, init.add_subclass(CellResult { r }))?.into_any(),
        Some(Output::Project(r)) => Py::new(py, init.add_subclass(ProjectResult { r }))?.into_any(),
        Some(Output::Module(r)) => Py::new(py, init.add_subclass(ModuleResult { r }))?.into_any(),
        None => Py::new(py, init)?.into_any(),
    })
}

/// A closed session's summary, as the core checked it.
#[pyclass(module = "plimsoll", frozen, get_all)]
pub struct SessionSummary {
    /// The session fingerprint.
    pub session: String,
    /// Calls executed.
    pub calls: u64,
    /// The last record's digest, or empty.
    pub last_record_sha256: String,
    /// `closed`, or the earlier end.
    pub ended: &'static str,
}

impl From<CloseSessionResponse> for SessionSummary {
    fn from(c: CloseSessionResponse) -> SessionSummary {
        SessionSummary {
            session: c.session,
            calls: c.calls,
            last_record_sha256: c.last_record_sha256,
            ended: c.ended.as_str(),
        }
    }
}
