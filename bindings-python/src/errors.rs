//! One exception hierarchy for every [`ErrorCode`]: a base `PlimsollError` and
//! one subclass per code, named by a single `match` ([`class_spec`]).
//!
//! The classes are made at import time with `type(name, bases, ns)` so a code
//! can also subclass a builtin (`ValueError`, `TimeoutError`) and idiomatic
//! `except` clauses work. Every instance carries `.code` (the stable name),
//! `.code_number`, `.not_dispatched` (the reason name, or `None` when the call
//! may have run), `.message`, `.session_end` and `.unanswered`. This module
//! converts; which reason an error carries is decided by the core alone.

use plimsoll_core::config::ConfigError as CoreConfigError;
use plimsoll_core::engine::StartError;
use plimsoll_core::{Error, ErrorCode};
use pyo3::exceptions::{PyException, PyTimeoutError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

use crate::results::Record;

pyo3::create_exception!(
    plimsoll,
    PlimsollError,
    PyException,
    "Base of every error plimsoll raises. Branch on `.code`, not the message."
);

pyo3::create_exception!(
    plimsoll,
    ConfigError,
    PyValueError,
    "The engine's configuration is impossible (`.variable` names the variable), \
     or its proven tier is below SANDBOX_MIN_ISOLATION."
);

/// A builtin a code's class also derives from.
#[derive(Clone, Copy)]
enum Builtin {
    Value,
    Timeout,
}

/// The class for a code: its name, an extra builtin base, and its doc line.
///
/// The one place codes become classes. `ErrorCode` is `#[non_exhaustive]`, so
/// the last arm catches a code this build does not know; the test suite checks
/// that every code of `ErrorCode::ALL` has its own class.
fn class_spec(code: ErrorCode) -> Option<(&'static str, Option<Builtin>, &'static str)> {
    Some(match code {
        ErrorCode::InvalidRequest => (
            "InvalidRequestError",
            Some(Builtin::Value),
            "The request is malformed or out of bounds. Nothing ran.",
        ),
        ErrorCode::ProtocolMissing => (
            "ProtocolMissingError",
            None,
            "The request carried no protocol number. Nothing ran.",
        ),
        ErrorCode::ProtocolMismatch => (
            "ProtocolMismatchError",
            None,
            "The request or daemon speaks another protocol. Nothing ran.",
        ),
        ErrorCode::Unauthenticated => (
            "UnauthenticatedError",
            None,
            "No valid credential. Nothing ran.",
        ),
        ErrorCode::PermissionDenied => (
            "PermissionDeniedError",
            None,
            "The credential lacks the scope, or may not use the grant. Nothing ran.",
        ),
        ErrorCode::Disabled => (
            "DisabledError",
            None,
            "The provider is disabled: nothing runs here.",
        ),
        ErrorCode::Unsupported => (
            "UnsupportedError",
            None,
            "The provider cannot run this kind of request. Nothing ran.",
        ),
        ErrorCode::InsufficientIsolation => (
            "InsufficientIsolationError",
            None,
            "The proven tier is below the caller's floor. Nothing ran.",
        ),
        ErrorCode::SoftwareMismatch => (
            "SoftwareMismatchError",
            None,
            "The provider's software is outside the caller's rule. Nothing ran.",
        ),
        ErrorCode::AtCapacity => (
            "AtCapacityError",
            None,
            "Every run slot is busy, or a rate limit was hit. Nothing ran; retry later.",
        ),
        ErrorCode::SessionEnded => (
            "SessionEndedError",
            None,
            "The session has ended (`.session_end` says why). Nothing ran.",
        ),
        ErrorCode::Infrastructure => (
            "InfrastructureError",
            None,
            "Something around the run broke. The call may have run.",
        ),
        ErrorCode::Cancelled => (
            "RunCancelledError",
            None,
            "The run was cancelled. The call may have run.",
        ),
        ErrorCode::DeadlineExceeded => (
            "DeadlineExceededError",
            Some(Builtin::Timeout),
            "The request's overall deadline passed. The call may have run.",
        ),
        ErrorCode::RecordMismatch => (
            "RecordMismatchError",
            None,
            "A record or chain failed verification. The call may have run.",
        ),
        ErrorCode::IsolationEvidenceMismatch => (
            "IsolationEvidenceMismatchError",
            None,
            "The answer's tier does not meet the floor sent. The call may have run.",
        ),
        ErrorCode::Transport => (
            "TransportError",
            None,
            "The answer could not be read or was not bound to the request. The call may have run.",
        ),
        _ => return None,
    })
}

/// The made classes, indexed by code number (index 0 unused).
static CLASSES: PyOnceLock<Vec<Option<Py<PyType>>>> = PyOnceLock::new();

fn classes(py: Python<'_>) -> PyResult<&Vec<Option<Py<PyType>>>> {
    CLASSES.get_or_try_init(py, || {
        let base = py.get_type::<PlimsollError>();
        let max = ErrorCode::ALL.iter().map(|c| c.number()).max().unwrap_or(0);
        let mut out: Vec<Option<Py<PyType>>> = (0..=max).map(|_| None).collect();
        let make = py.get_type::<PyType>();
        for code in ErrorCode::ALL {
            let Some((name, builtin, doc)) = class_spec(code) else {
                continue;
            };
            let bases = match builtin {
                None => PyTuple::new(py, [base.clone()])?,
                Some(Builtin::Value) => {
                    PyTuple::new(py, [base.clone(), py.get_type::<PyValueError>()])?
                }
                Some(Builtin::Timeout) => {
                    PyTuple::new(py, [base.clone(), py.get_type::<PyTimeoutError>()])?
                }
            };
            let ns = PyDict::new(py);
            ns.set_item("__module__", "plimsoll")?;
            ns.set_item("__doc__", doc)?;
            ns.set_item("default_code", code.as_str())?;
            let cls = make.call1((name, bases, ns))?.cast_into::<PyType>()?;
            out[code.number() as usize] = Some(cls.unbind());
        }
        Ok(out)
    })
}

/// The class for `code`: its own subclass, or `PlimsollError` for a code this build does not know.
pub fn class_for(py: Python<'_>, code: ErrorCode) -> PyResult<Bound<'_, PyType>> {
    Ok(classes(py)?
        .get(code.number() as usize)
        .and_then(|c| c.as_ref())
        .map(|c| c.bind(py).clone())
        .unwrap_or_else(|| py.get_type::<PlimsollError>()))
}

/// Adds the base class, `ConfigError` and every code's class to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("PlimsollError", py.get_type::<PlimsollError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    for code in ErrorCode::ALL {
        let cls = class_for(py, code)?;
        m.add(cls.name()?, cls)?;
    }
    Ok(())
}

/// The Python exception for a core error.
pub fn to_py(py: Python<'_>, e: &Error) -> PyErr {
    match build(py, e) {
        Ok(err) => err,
        Err(err) => err,
    }
}

fn build(py: Python<'_>, e: &Error) -> PyResult<PyErr> {
    let code = e.code();
    let exc = class_for(py, code)?.call1((e.message().to_owned(),))?;
    exc.setattr("code", code.as_str())?;
    exc.setattr("code_number", code.number())?;
    exc.setattr("not_dispatched", e.not_dispatched().map(|r| r.as_str()))?;
    exc.setattr("message", e.message())?;
    exc.setattr("session_end", e.session_end().map(|s| s.reason.as_str()))?;
    let unanswered = match e.unanswered() {
        Some(r) => Some(Py::new(py, Record::from(r))?),
        None => None,
    };
    exc.setattr("unanswered", unanswered)?;
    Ok(PyErr::from_value(exc))
}

/// The Python exception for a configuration error.
pub fn config_to_py(e: &CoreConfigError) -> PyErr {
    config_error(e.variable, &e.to_string())
}

fn config_error(variable: &str, message: &str) -> PyErr {
    Python::attach(|py| {
        let exc = match py.get_type::<ConfigError>().call1((message.to_owned(),)) {
            Ok(exc) => exc,
            Err(e) => return e,
        };
        if let Err(e) = exc.setattr("variable", variable) {
            return e;
        }
        PyErr::from_value(exc)
    })
}

/// The Python exception for an engine that would not start.
pub fn start_to_py(py: Python<'_>, e: &StartError) -> PyErr {
    match e {
        StartError::Config(c) => config_to_py(c),
        StartError::Proof(e) => to_py(py, e),
        StartError::BelowMinimum { .. } => config_error("SANDBOX_MIN_ISOLATION", &e.to_string()),
        StartError::Advisory(_) => config_error("SANDBOX_ACCEPT_ADVISORIES", &e.to_string()),
    }
}

/// Every code as `(name, number)`, in number order.
#[pyfunction]
pub fn error_codes() -> Vec<(&'static str, u32)> {
    ErrorCode::ALL
        .iter()
        .map(|c| (c.as_str(), c.number()))
        .collect()
}

/// The exception a core error with `code` and `message` becomes (for tests and tools).
#[pyfunction]
pub fn error_for_code(py: Python<'_>, code: &str, message: &str) -> PyResult<Py<PyAny>> {
    let code = ErrorCode::ALL
        .into_iter()
        .find(|c| c.as_str() == code)
        .ok_or_else(|| PyValueError::new_err("unknown error code"))?;
    Ok(to_py(py, &Error::new(code, message))
        .into_value(py)
        .into_any())
}
