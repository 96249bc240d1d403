//! Core errors as JavaScript `Error` objects: `err.code` is the stable code
//! name, `err.codeNumber` its number, `err.notDispatched` the reason nothing
//! ran (or `null` when the call may have run), `err.name` the class name from
//! one `match` ([`error_name`]). An aborted run is an `AbortError`, as the web
//! platform names it. This module converts; the core decides every field.

use napi::bindgen_prelude::*;
use plimsoll_core::config::ConfigError;
use plimsoll_core::engine::StartError;
use plimsoll_core::{Error as CoreError, ErrorCode};

/// The `name` an error with `code` carries: one name per code.
///
/// `ErrorCode` is `#[non_exhaustive]`, so the last arm covers a code this build
/// does not know; `test/errors.test.mjs` checks that every code of
/// `errorCodes()` has its own name.
pub fn error_name(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::InvalidRequest => "InvalidRequestError",
        ErrorCode::ProtocolMissing => "ProtocolMissingError",
        ErrorCode::ProtocolMismatch => "ProtocolMismatchError",
        ErrorCode::Unauthenticated => "UnauthenticatedError",
        ErrorCode::PermissionDenied => "PermissionDeniedError",
        ErrorCode::Disabled => "DisabledError",
        ErrorCode::Unsupported => "UnsupportedError",
        ErrorCode::InsufficientIsolation => "InsufficientIsolationError",
        ErrorCode::SoftwareMismatch => "SoftwareMismatchError",
        ErrorCode::AtCapacity => "AtCapacityError",
        ErrorCode::SessionEnded => "SessionEndedError",
        ErrorCode::Infrastructure => "InfrastructureError",
        ErrorCode::Cancelled => "AbortError",
        ErrorCode::DeadlineExceeded => "DeadlineExceededError",
        ErrorCode::RecordMismatch => "RecordMismatchError",
        ErrorCode::IsolationEvidenceMismatch => "IsolationEvidenceMismatchError",
        ErrorCode::Transport => "TransportError",
        _ => "PlimsollError",
    }
}

/// A JavaScript error object for a core error, wrapped so napi throws or
/// rejects with exactly that object.
pub fn to_js(env: &Env, e: &CoreError) -> Error {
    build(env, e).unwrap_or_else(|err| err)
}

/// The error classes the package's entry (index.js) registers, `{ [code]:
/// class }` with `config` for [`config_to_js`], held for the Node environment
/// (each worker thread has its own).
struct Classes(ObjectRef<false>);

/// Registers the classes every error is made an instance of (`err instanceof
/// PlimsollError`, one subclass per code). index.js calls it once; loaded
/// without it, errors are plain `Error` objects with the same fields.
#[napi]
pub fn register_error_classes(env: Env, classes: Object) -> Result<()> {
    env.set_instance_data(Classes(classes.create_ref()?), (), |_| {})
}

/// A new error object with `message`: `new Class(message)` of the class
/// registered for `code`, or a plain `Error`.
fn new_error<'env>(
    env: &'env Env,
    code: &str,
    status: Status,
    message: &str,
) -> Result<Object<'env>> {
    if let Some(Classes(classes)) = env.get_instance_data::<Classes>()? {
        let classes = classes.get_value(env)?;
        if let Some(class) = classes.get::<Function<'_, String, Unknown<'_>>>(code)? {
            let made = class.new_instance(message.to_owned())?;
            if made.get_type()? == ValueType::Object {
                // SAFETY: `made` is an object (checked just above).
                return unsafe { made.cast::<Object<'env>>() };
            }
        }
    }
    env.create_error(Error::new(status, message))
}

fn build(env: &Env, e: &CoreError) -> Result<Error> {
    let code = e.code();
    let mut obj = new_error(env, code.as_str(), Status::GenericFailure, e.message())?;
    obj.set_named_property("name", error_name(code))?;
    obj.set_named_property("code", code.as_str())?;
    obj.set_named_property("codeNumber", code.number())?;
    obj.set_named_property("notDispatched", e.not_dispatched().map(|r| r.as_str()))?;
    obj.set_named_property("sessionEnd", e.session_end().map(|s| s.reason.as_str()))?;
    obj.set_named_property("unanswered", e.unanswered().map(crate::results::record))?;
    Ok(Error::from(obj.to_unknown()))
}

/// A configuration error: `err.code === "config"`, `err.variable` names the variable.
pub fn config_to_js(env: &Env, variable: &str, message: &str) -> Error {
    let build = || -> Result<Error> {
        let mut obj = new_error(env, "config", Status::InvalidArg, message)?;
        obj.set_named_property("name", "ConfigError")?;
        obj.set_named_property("code", "config")?;
        obj.set_named_property("variable", variable)?;
        Ok(Error::from(obj.to_unknown()))
    };
    build().unwrap_or_else(|err| err)
}

fn config(env: &Env, e: &ConfigError) -> Error {
    config_to_js(env, e.variable, &e.to_string())
}

/// The error for an engine that would not start.
pub fn start_to_js(env: &Env, e: &StartError) -> Error {
    match e {
        StartError::Config(c) => config(env, c),
        StartError::Proof(e) => to_js(env, e),
        StartError::BelowMinimum { .. } => {
            config_to_js(env, "SANDBOX_MIN_ISOLATION", &e.to_string())
        }
        StartError::Advisory(_) => config_to_js(env, "SANDBOX_ACCEPT_ADVISORIES", &e.to_string()),
    }
}

/// One stable error code.
#[napi(object)]
pub struct ErrorCodeInfo {
    /// The stable snake_case name (`err.code`).
    pub name: String,
    /// The stable number (`err.codeNumber`).
    pub number: u32,
    /// The error's `name` property.
    pub error_name: String,
    /// The not-dispatched reason a refusal with this code carries, or null.
    pub not_dispatched: Option<String>,
}

/// Every error code, in number order.
#[napi]
pub fn error_codes() -> Vec<ErrorCodeInfo> {
    ErrorCode::ALL
        .iter()
        .map(|c| ErrorCodeInfo {
            name: c.as_str().to_owned(),
            number: c.number(),
            error_name: error_name(*c).to_owned(),
            not_dispatched: c.refusal().map(|r| r.as_str().to_owned()),
        })
        .collect()
}

/// The error a core error with `code` and `message` becomes (for tests and tools).
#[napi(ts_return_type = "Error")]
pub fn error_for_code<'env>(env: &'env Env, code: String, message: String) -> Result<Object<'env>> {
    let code = ErrorCode::ALL
        .into_iter()
        .find(|c| c.as_str() == code)
        .ok_or_else(|| Error::new(Status::InvalidArg, "unknown error code"))?;
    let e = build(env, &CoreError::new(code, message))?;
    env.create_error(e)
}
