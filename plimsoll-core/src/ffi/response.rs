//! Responses: a verified run's answer, read field by field through the core's
//! data model ([`crate::view`]). [`plimsoll_response_get`] answers any field
//! by its path — `exit_code`, `record.sequence`, `steps.0.stdout`,
//! `artifacts.1.path` — with the names Python and Node use; `docs/fields.md`
//! lists them all.

use std::collections::HashMap;
use std::ffi::{CString, c_char};
use std::sync::Mutex;

use super::{
    FfiResult, PlimsollError, PlimsollSlice, PlimsollStatus, arg, c_string, fail, fallible,
    free_box, text,
};
use crate::error::SessionEnd;
use crate::request::Request;
use crate::view::{Answer, Value};
use crate::wire::RunResponse;

/// A run's answer (from `plimsoll_client_run` or `plimsoll_session_run`):
/// evidence (provider, tier), the result, and the run record, verified against
/// the request before it was returned. Immutable; read it with
/// `plimsoll_response_get`.
///
/// A guest's non-zero exit is a normal answer here, never an error.
///
/// Thread-safety: may be read from several threads at once.
pub struct PlimsollResponse {
    answer: Answer,
    /// NUL-terminated copies of the text fields read so far, by path; never
    /// replaced, so a pointer handed out lives as long as the response.
    texts: Mutex<HashMap<String, CString>>,
}

impl PlimsollResponse {
    pub(crate) fn new(resp: RunResponse, ended: SessionEnd, sent: &Request) -> PlimsollResponse {
        PlimsollResponse {
            answer: Answer::new(sent, resp, Some(ended)),
            texts: Mutex::default(),
        }
    }

    fn text(&self, path: &str, s: &str) -> *const c_char {
        let mut texts = self.texts.lock().unwrap_or_else(|e| e.into_inner());
        texts
            .entry(path.to_owned())
            .or_insert_with(|| c_string(s))
            .as_ptr()
    }
}

/// What kind of value a field holds: the member of [`PlimsollValue`] that is set.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlimsollValueKind {
    /// An optional field that is absent (`session_end` of a fresh run, a missing `record`).
    None = 0,
    /// `text`: NUL-terminated UTF-8 owned by the response.
    Text = 1,
    /// `bytes`: points into the response.
    Bytes = 2,
    /// `integer`.
    Integer = 3,
    /// `flag`.
    Flag = 4,
    /// `floats`, `count` of them, pointing into the response.
    Floats = 5,
    /// A list (`steps`, `artifacts`, `runs`) of `count` objects: read their
    /// fields as `steps.<i>.<field>`.
    List = 6,
    /// An object (`record`): read its fields as `record.<field>`.
    Object = 7,
}

/// A field's value. Only the members its `kind` names are set; the others are
/// zero (NULL pointers, an empty slice).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct PlimsollValue {
    /// Which members are set.
    pub kind: PlimsollValueKind,
    /// A text field.
    pub text: *const c_char,
    /// A byte field.
    pub bytes: PlimsollSlice,
    /// An integer field.
    pub integer: i64,
    /// A flag.
    pub flag: bool,
    /// Numbers (a module row's outputs).
    pub floats: *const f64,
    /// How many numbers, or how many objects in a list.
    pub count: usize,
}

impl PlimsollValue {
    /// A value of `kind` with every member zero.
    pub(super) fn of(kind: PlimsollValueKind) -> PlimsollValue {
        PlimsollValue {
            kind,
            text: std::ptr::null(),
            bytes: PlimsollSlice::EMPTY,
            integer: 0,
            flag: false,
            floats: std::ptr::null(),
            count: 0,
        }
    }
}

fn read(r: &PlimsollResponse, path: &str) -> FfiResult<PlimsollValue> {
    use PlimsollValueKind as K;
    let Some(v) = r.answer.resolve(path) else {
        return Err(fail(
            PlimsollStatus::InvalidArgument,
            format!(
                "this {} has no field {path:?} (docs/fields.md lists them)",
                r.answer.class_name()
            ),
        ));
    };
    Ok(match v {
        Value::Nothing => PlimsollValue::of(K::None),
        Value::Text(s) => PlimsollValue {
            text: r.text(path, s),
            ..PlimsollValue::of(K::Text)
        },
        Value::Bytes(b) => PlimsollValue {
            bytes: PlimsollSlice::of(b),
            ..PlimsollValue::of(K::Bytes)
        },
        Value::Int(i) => PlimsollValue {
            integer: i,
            ..PlimsollValue::of(K::Integer)
        },
        Value::Bool(b) => PlimsollValue {
            flag: b,
            ..PlimsollValue::of(K::Flag)
        },
        Value::Floats(f) => PlimsollValue {
            floats: if f.is_empty() {
                std::ptr::null()
            } else {
                f.as_ptr()
            },
            count: f.len(),
            ..PlimsollValue::of(K::Floats)
        },
        Value::Record(_) => PlimsollValue::of(K::Object),
        Value::Steps(s) => PlimsollValue {
            count: s.len(),
            ..PlimsollValue::of(K::List)
        },
        Value::Artifacts(a) => PlimsollValue {
            count: a.len(),
            ..PlimsollValue::of(K::List)
        },
        Value::Rows(r) => PlimsollValue {
            count: r.len(),
            ..PlimsollValue::of(K::List)
        },
    })
}

/// Reads the field at `path` of the answer into `*out`: a common field
/// (`sandbox`, `isolation`, `software_identity`, `duration_ms`, `session_end`,
/// `request_json`, `response_json`, `record_json`, …), one of its kind
/// (`stdout`, `exit_code`, `interpreter_started`, `outcome`, `steps`, …), or a
/// nested one (`record.sequence`, `steps.0.stdout`, `artifacts.0.content`,
/// `runs.0.outputs`). `docs/fields.md` lists every path with its type.
///
/// `PLIMSOLL_STATUS_OK` with `out->kind` saying which member is set
/// (`PLIMSOLL_VALUE_KIND_NONE` for an absent optional field);
/// `PLIMSOLL_STATUS_INVALID_ARGUMENT` for a path this answer has no field at
/// (another kind's field, an index out of range); `PLIMSOLL_STATUS_NULL_ARGUMENT`
/// or `PLIMSOLL_STATUS_INVALID_UTF8` for a bad argument. Text and bytes are
/// owned by the response and valid until it is freed.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response; `path` is NULL or a NUL-terminated
/// string; `out` is NULL or writable; `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_get(
    response: *const PlimsollResponse,
    path: *const c_char,
    out: *mut PlimsollValue,
    error_out: *mut *mut PlimsollError,
) -> PlimsollStatus {
    fallible(error_out, || {
        // SAFETY: the caller's contract.
        let (r, path) = unsafe { (arg(response, "response")?, text(path, "path")?) };
        if out.is_null() {
            return Err(fail(PlimsollStatus::NullArgument, "out must not be NULL"));
        }
        let value = read(r, &path)?;
        // SAFETY: checked non-NULL; writable per the caller's contract.
        unsafe { *out = value };
        Ok(())
    })
}

/// Frees a response and everything read from it. NULL is a no-op.
///
/// Thread-safety: no other thread may use `response` during or after the call.
///
/// # Safety
/// `response` is NULL or came from a run and was not freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_free(response: *mut PlimsollResponse) {
    // SAFETY: forwarded contract.
    unsafe { free_box(response) }
}
