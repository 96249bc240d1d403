//! Record and chain verification over the core's `verify` module, for answers
//! held as plimsoll.v1 JSON (a result's `request_json` and `response_json`, or
//! bytes captured elsewhere).

use std::sync::Mutex;

use plimsoll_core::request::Request;
use plimsoll_core::verify;
use plimsoll_core::wire::RunResponse;
use pyo3::prelude::*;

use crate::convert::json_bytes;
use crate::errors;
use crate::results::Record;

fn parse(
    py: Python<'_>,
    request: &Bound<'_, PyAny>,
    response: &Bound<'_, PyAny>,
) -> PyResult<(Request, RunResponse)> {
    let (request, response) = (json_bytes(request)?, json_bytes(response)?);
    verify::request_from_json(&request)
        .and_then(|req| Ok((req, verify::response_from_json(&response)?)))
        .map_err(|e| errors::to_py(py, &e))
}

/// Checks a single run's answer against the request sent (the core's
/// `verify::check_single`); returns its record. Raises `RecordMismatchError`,
/// `IsolationEvidenceMismatchError`, or `TransportError` for unreadable JSON.
#[pyfunction]
pub fn verify_run(
    py: Python<'_>,
    request_json: Bound<'_, PyAny>,
    response_json: Bound<'_, PyAny>,
) -> PyResult<Record> {
    let (req, resp) = parse(py, &request_json, &response_json)?;
    verify::check_single(&req, &resp).map_err(|e| errors::to_py(py, &e))?;
    Ok(resp
        .record
        .as_ref()
        .map(Record::from)
        .unwrap_or_else(|| unreachable!("check_single accepts only answers with a record")))
}

/// A session's chain as a client has seen it (the core's `verify::Chain`):
/// every call must name the session, continue the sequence and name the
/// previous record.
#[pyclass(module = "plimsoll", frozen)]
pub struct Chain {
    chain: Mutex<verify::Chain>,
}

impl Chain {
    fn with<T>(&self, f: impl FnOnce(&mut verify::Chain) -> T) -> T {
        let mut g = self
            .chain
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut g)
    }
}

#[pymethods]
impl Chain {
    /// A fresh chain for a session fingerprint (`Session.fingerprint`).
    #[new]
    fn new(fingerprint: String) -> Chain {
        Chain {
            chain: Mutex::new(verify::Chain::from_fingerprint(fingerprint)),
        }
    }

    /// The session fingerprint.
    #[getter]
    fn fingerprint(&self) -> String {
        self.with(|c| c.fingerprint().to_owned())
    }

    /// Calls seen so far.
    #[getter]
    fn calls(&self) -> u64 {
        self.with(|c| c.calls())
    }

    /// The last record digest seen, or empty.
    #[getter]
    fn last(&self) -> String {
        self.with(|c| c.last().to_owned())
    }

    /// Checks an answered session call and, only if it holds, advances the chain.
    fn check_call(
        &self,
        py: Python<'_>,
        request_json: Bound<'_, PyAny>,
        response_json: Bound<'_, PyAny>,
    ) -> PyResult<Record> {
        let (req, resp) = parse(py, &request_json, &response_json)?;
        self.with(|c| c.check_call(&req, &resp))
            .map_err(|e| errors::to_py(py, &e))?;
        Ok(resp
            .record
            .as_ref()
            .map(Record::from)
            .unwrap_or_else(|| unreachable!("check_call accepts only answers with a record")))
    }

    /// Checks a close summary against the chain seen.
    fn check_close(
        &self,
        py: Python<'_>,
        session: &str,
        calls: u64,
        last_record_sha256: &str,
    ) -> PyResult<()> {
        self.with(|c| c.check_close(session, calls, last_record_sha256))
            .map_err(|e| errors::to_py(py, &e))
    }
}
