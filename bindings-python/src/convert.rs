//! Python arguments to core requests. Shapes only: every limit, floor and rule
//! is checked by the core when the request runs.

use plimsoll_core::client::SessionOptions;
use plimsoll_core::request::{
    CellRun, Envelope, JavaScriptRun, Payload, ProjectFile, ProjectRun, Request, SoftwareRule,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::errors;

/// The envelope fields every run method takes.
pub struct EnvelopeArgs<'py> {
    pub minimum_isolation: String,
    pub timeout_ms: i32,
    pub software_rule: Option<Bound<'py, PyAny>>,
    pub trace_id: String,
}

impl<'py> EnvelopeArgs<'py> {
    /// The envelope arguments as Python passed them.
    pub fn new(
        minimum_isolation: &str,
        timeout_ms: i32,
        software_rule: Option<Bound<'py, PyAny>>,
        trace_id: &str,
    ) -> EnvelopeArgs<'py> {
        EnvelopeArgs {
            minimum_isolation: minimum_isolation.to_owned(),
            timeout_ms,
            software_rule,
            trace_id: trace_id.to_owned(),
        }
    }
}

/// A software rule from a mapping `{"mode": ..., "identities": [...]}`.
pub fn software_rule(rule: Option<&Bound<'_, PyAny>>) -> PyResult<Option<SoftwareRule>> {
    let Some(rule) = rule else { return Ok(None) };
    Ok(Some(SoftwareRule {
        mode: rule.get_item("mode")?.extract()?,
        identities: rule.get_item("identities")?.extract()?,
    }))
}

/// Files from a mapping of path to text, in the mapping's order.
pub fn files(files: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<ProjectFile>> {
    let Some(files) = files else {
        return Ok(Vec::new());
    };
    files
        .call_method0("items")?
        .try_iter()?
        .map(|item| {
            let (path, content): (String, String) = item?.extract()?;
            Ok(ProjectFile { path, content })
        })
        .collect()
}

/// A request for `payload` with the envelope arguments.
pub fn request(payload: Payload, env: EnvelopeArgs<'_>) -> PyResult<Request> {
    Ok(Request {
        envelope: Envelope {
            minimum_isolation: env.minimum_isolation,
            timeout_ms: env.timeout_ms,
            software_rule: software_rule(env.software_rule.as_ref())?,
            trace_id: env.trace_id,
            ..Envelope::new()
        },
        payload,
    })
}

/// A JavaScript snippet payload.
pub fn javascript(code: String, grant_profile: String) -> Payload {
    Payload::JavaScript(JavaScriptRun {
        code,
        grant_profile,
    })
}

/// A project payload.
pub fn project(
    files_arg: Option<&Bound<'_, PyAny>>,
    steps: Vec<String>,
    artifacts: Vec<String>,
    grant_profile: String,
) -> PyResult<Payload> {
    Ok(Payload::Project(ProjectRun {
        files: files(files_arg)?,
        steps,
        artifacts,
        grant_profile,
    }))
}

/// A notebook cell payload.
pub fn cell(
    language: String,
    code: String,
    files_arg: Option<&Bound<'_, PyAny>>,
) -> PyResult<Payload> {
    Ok(Payload::Cell(CellRun {
        language,
        code,
        files: files(files_arg)?,
    }))
}

/// The bytes of a `str` or `bytes` argument.
pub fn json_bytes(v: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(s.to_str()?.as_bytes().to_vec());
    }
    if let Ok(b) = v.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    Err(pyo3::exceptions::PyTypeError::new_err(
        "expected JSON as str or bytes",
    ))
}

/// A request from its plimsoll.v1 JSON form (`RunRequest`).
pub fn request_from_json(py: Python<'_>, v: &Bound<'_, PyAny>) -> PyResult<Request> {
    plimsoll_core::verify::request_from_json(&json_bytes(v)?).map_err(|e| errors::to_py(py, &e))
}

/// Session options from keyword arguments.
pub fn session_options(
    minimum_isolation: String,
    software_rule_arg: Option<&Bound<'_, PyAny>>,
    lifetime_ms: u32,
    idle_timeout_ms: u32,
    languages: Vec<String>,
) -> PyResult<SessionOptions> {
    Ok(SessionOptions {
        minimum_isolation,
        software_rule: software_rule(software_rule_arg)?,
        lifetime_ms,
        idle_timeout_ms,
        languages,
        ..SessionOptions::default()
    })
}
