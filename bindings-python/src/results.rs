//! Python views of the core's answers, read through the core's data model
//! (`plimsoll_core::view`): every attribute is a field of its tables, looked
//! up by name. Read-only copies; nothing here computes or checks.

use plimsoll_core::record::RunRecord;
use plimsoll_core::request::Request;
use plimsoll_core::result::StepResult;
use std::sync::Arc;

use plimsoll_core::view::{self, Answer, Class, RECORD, STEP, SUMMARY, Value};
use plimsoll_core::wire::{CloseSessionResponse, RunResponse};
use pyo3::IntoPyObjectExt;
use pyo3::exceptions::PyAttributeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

/// A field's value as a Python object.
fn to_py(py: Python<'_>, v: Value<'_>) -> PyResult<Py<PyAny>> {
    fn rows<T>(py: Python<'_>, c: &Class<T>, items: &[T]) -> PyResult<Py<PyAny>> {
        let tuples: PyResult<Vec<Bound<'_, PyTuple>>> = items
            .iter()
            .map(|i| {
                let vs: PyResult<Vec<Py<PyAny>>> =
                    c.values(i).into_iter().map(|(_, v)| to_py(py, v)).collect();
                PyTuple::new(py, vs?)
            })
            .collect();
        tuples?.into_py_any(py)
    }
    match v {
        Value::Nothing => Ok(py.None()),
        Value::Text(s) => s.into_py_any(py),
        Value::Bytes(b) => PyBytes::new(py, b).into_py_any(py),
        Value::Int(i) => i.into_py_any(py),
        Value::Bool(b) => b.into_py_any(py),
        Value::Floats(f) => f.into_py_any(py),
        Value::Record(r) => Record::from(r).into_py_any(py),
        Value::Steps(s) => s
            .iter()
            .map(|s| Step { s: s.clone() })
            .collect::<Vec<_>>()
            .into_py_any(py),
        Value::Artifacts(a) => rows(py, &view::ARTIFACT, a),
        Value::Rows(r) => rows(py, &view::ROW, r),
    }
}

/// A field read from the core's tables; a name they lack is `AttributeError`
/// (the getters below list only their names, so this is a table mismatch).
fn attr(py: Python<'_>, class: &str, name: &str, v: Option<Value<'_>>) -> PyResult<Py<PyAny>> {
    match v {
        Some(v) => to_py(py, v),
        None => Err(PyAttributeError::new_err(format!(
            "'{class}' object has no attribute '{name}'"
        ))),
    }
}

/// Getters named as the core's table names its fields (the Python stub is
/// rendered from the same tables and stubtest checks it against these), each
/// reading through the class's `field`.
macro_rules! getters {
    ($class:ident { $($name:ident),* $(,)? } $($extra:tt)*) => {
        #[pymethods]
        impl $class {
            $(
                #[getter]
                fn $name(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
                    self.field(py, stringify!($name))
                }
            )*
            $($extra)*
        }
    };
}

/// A run record (version 4): digests of what was asked and what came back,
/// the evidence, the times, and in a session the chain. It is not a signature.
#[pyclass(module = "plimsoll", frozen)]
#[derive(Clone)]
pub struct Record {
    r: RunRecord,
}

impl From<&RunRecord> for Record {
    fn from(r: &RunRecord) -> Record {
        Record { r: r.clone() }
    }
}

impl Record {
    fn field(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
        attr(py, RECORD.name, name, RECORD.get(&self.r, name))
    }
}

getters!(Record {
    version, request_sha256, result_sha256, provider, isolation, environment, policy,
    started_unix_ms, ended_unix_ms, session, sequence, previous_sha256, record_sha256,
    software_identity, software_rule_id, unanswered, instance,
}
    fn __repr__(&self) -> String {
        format!(
            "Record(isolation={:?}, sequence={}, record_sha256={:?})",
            self.r.isolation, self.r.sequence, self.r.record_sha256
        )
    }
);

/// Whatever ran: evidence, record, and the exact wire JSON of the request
/// sent and the answer received (for `verify_run` and `Chain`). Its subclass
/// names the kind and adds the kind's fields.
#[pyclass(module = "plimsoll", frozen, subclass)]
pub struct RunResult {
    answer: Arc<Answer>,
}

impl RunResult {
    fn field(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
        attr(py, self.answer.class_name(), name, self.answer.get(name))
    }
}

getters!(RunResult {
    kind, sandbox, isolation, environment, software_identity, instance, duration_ms, record,
    record_json, phases_json, session_end, request_json, response_json,
}
    fn __repr__(&self) -> String {
        let show = |n| match self.answer.get(n) {
            Some(Value::Int(i)) => i.to_string(),
            Some(Value::Text(t)) => format!("{t:?}"),
            _ => "None".to_owned(),
        };
        format!(
            "{}(isolation={}, exit_code={}, outcome={})",
            self.answer.class_name(),
            show("isolation"),
            show("exit_code"),
            show("outcome")
        )
    }
);

/// A result kind: the base's answer, read for the kind's own fields.
macro_rules! kind {
    ($(#[$doc:meta])* $class:ident { $($name:ident),* $(,)? }) => {
        $(#[$doc])*
        #[pyclass(module = "plimsoll", frozen, extends = RunResult)]
        pub struct $class {
            answer: Arc<Answer>,
        }

        impl $class {
            fn field(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
                attr(py, self.answer.class_name(), name, self.answer.get(name))
            }
        }

        getters!($class { $($name),* });
    };
}

kind!(
    /// What a JavaScript snippet did. A non-zero exit is a result, not an error.
    JavaScriptResult { stdout, stderr, exit_code, timed_out, stdout_truncated, stderr_truncated }
);
kind!(
    /// What a notebook cell did.
    CellResult {
        stdout, stderr, exit_code, timed_out, stdout_truncated, stderr_truncated,
        interpreter_started, interpreter_ended,
    }
);
kind!(
    /// What a project did.
    ProjectResult { outcome, outcome_detail, steps, artifacts, artifacts_truncated }
);
kind!(
    /// What a module run did.
    ModuleResult { outcome, outcome_detail, width, runs, stdout, stderr }
);

/// One project step that ran.
#[pyclass(module = "plimsoll", frozen)]
pub struct Step {
    s: StepResult,
}

impl Step {
    fn field(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
        attr(py, STEP.name, name, STEP.get(&self.s, name))
    }
}

getters!(Step {
    command,
    stdout,
    stderr,
    exit_code,
    timed_out,
    duration_ms,
    stdout_truncated,
    stderr_truncated,
});

/// The Python object for an answer to `request`: the subclass of its kind.
pub fn run_result(
    py: Python<'_>,
    request: &Request,
    response: RunResponse,
    session_end: Option<plimsoll_core::SessionEnd>,
) -> PyResult<Py<PyAny>> {
    let answer = Arc::new(Answer::new(request, response, session_end));
    let kind = answer.response.output.as_ref().map_or("", |o| o.kind());
    let init = PyClassInitializer::from(RunResult {
        answer: answer.clone(),
    });
    Ok(match kind {
        "javascript" => Py::new(py, init.add_subclass(JavaScriptResult { answer }))?.into_any(),
        "cell" => Py::new(py, init.add_subclass(CellResult { answer }))?.into_any(),
        "project" => Py::new(py, init.add_subclass(ProjectResult { answer }))?.into_any(),
        "module" => Py::new(py, init.add_subclass(ModuleResult { answer }))?.into_any(),
        _ => Py::new(py, init)?.into_any(),
    })
}

/// A closed session's summary, as the core checked it.
#[pyclass(module = "plimsoll", frozen)]
pub struct SessionSummary {
    c: CloseSessionResponse,
}

impl From<CloseSessionResponse> for SessionSummary {
    fn from(c: CloseSessionResponse) -> SessionSummary {
        SessionSummary { c }
    }
}

impl SessionSummary {
    fn field(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
        attr(py, SUMMARY.name, name, SUMMARY.get(&self.c, name))
    }
}

getters!(SessionSummary {
    session,
    calls,
    last_record_sha256,
    ended
});
