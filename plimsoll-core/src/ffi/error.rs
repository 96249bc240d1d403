//! Statuses and error objects.

use std::ffi::{CString, c_char};

use super::{Fail, c_string, empty, free_box, getter};
use crate::error::{ErrorCode, Refusal, SessionEnd};

/// What a fallible function returns. `PLIMSOLL_STATUS_OK` is 0; 1 to 17 are
/// the core's stable error codes with the same numbers; 100 and up are the
/// binding's own. Numbers never change meaning.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlimsollStatus {
    /// Success.
    Ok = 0,
    /// The request is malformed or out of bounds. Nothing ran.
    InvalidRequest = 1,
    /// The request carried no protocol number. Nothing ran.
    ProtocolMissing = 2,
    /// The request speaks another protocol. Nothing ran.
    ProtocolMismatch = 3,
    /// No valid credential. Nothing ran.
    Unauthenticated = 4,
    /// The credential lacks the scope, or may not use the grant. Nothing ran.
    PermissionDenied = 5,
    /// The provider is disabled: nothing runs there.
    Disabled = 6,
    /// The provider cannot run this kind of request. Nothing ran.
    Unsupported = 7,
    /// The proven tier is below the caller's floor. Nothing ran.
    InsufficientIsolation = 8,
    /// The provider's software is outside the caller's rule. Nothing ran.
    SoftwareMismatch = 9,
    /// Every run slot is busy, or a rate limit was hit. Nothing ran; retry later.
    AtCapacity = 10,
    /// The session has ended. Nothing ran.
    SessionEnded = 11,
    /// Something around the run broke. The call may have run.
    Infrastructure = 12,
    /// The caller cancelled. The call may have run.
    Cancelled = 13,
    /// The request's overall deadline passed. The call may have run.
    DeadlineExceeded = 14,
    /// A record or chain failed verification. The call may have run.
    RecordMismatch = 15,
    /// The answer's tier does not meet the floor sent. The call may have run.
    IsolationEvidenceMismatch = 16,
    /// The answer could not be read or was not bound to the request. The call may have run.
    Transport = 17,
    /// A pointer argument was NULL. Nothing ran.
    NullArgument = 100,
    /// A text argument was not valid UTF-8. Nothing ran.
    InvalidUtf8 = 101,
    /// An argument is not allowed here (an unknown configuration key, a step
    /// added to a snippet, malformed JSON). Nothing ran.
    InvalidArgument = 102,
    /// The configuration is impossible, or the engine would not start with it. Nothing ran.
    Config = 103,
    /// The session was already closed by this handle. Nothing ran.
    Closed = 104,
    /// plimsoll panicked inside the call; the handle may be unusable. The call may have run.
    Panic = 105,
}

impl PlimsollStatus {
    /// Every status, in number order.
    pub const ALL: [PlimsollStatus; 24] = [
        PlimsollStatus::Ok,
        PlimsollStatus::InvalidRequest,
        PlimsollStatus::ProtocolMissing,
        PlimsollStatus::ProtocolMismatch,
        PlimsollStatus::Unauthenticated,
        PlimsollStatus::PermissionDenied,
        PlimsollStatus::Disabled,
        PlimsollStatus::Unsupported,
        PlimsollStatus::InsufficientIsolation,
        PlimsollStatus::SoftwareMismatch,
        PlimsollStatus::AtCapacity,
        PlimsollStatus::SessionEnded,
        PlimsollStatus::Infrastructure,
        PlimsollStatus::Cancelled,
        PlimsollStatus::DeadlineExceeded,
        PlimsollStatus::RecordMismatch,
        PlimsollStatus::IsolationEvidenceMismatch,
        PlimsollStatus::Transport,
        PlimsollStatus::NullArgument,
        PlimsollStatus::InvalidUtf8,
        PlimsollStatus::InvalidArgument,
        PlimsollStatus::Config,
        PlimsollStatus::Closed,
        PlimsollStatus::Panic,
    ];

    /// The status of a core error code: the same number.
    pub const fn from_code(code: ErrorCode) -> PlimsollStatus {
        match code {
            ErrorCode::InvalidRequest => PlimsollStatus::InvalidRequest,
            ErrorCode::ProtocolMissing => PlimsollStatus::ProtocolMissing,
            ErrorCode::ProtocolMismatch => PlimsollStatus::ProtocolMismatch,
            ErrorCode::Unauthenticated => PlimsollStatus::Unauthenticated,
            ErrorCode::PermissionDenied => PlimsollStatus::PermissionDenied,
            ErrorCode::Disabled => PlimsollStatus::Disabled,
            ErrorCode::Unsupported => PlimsollStatus::Unsupported,
            ErrorCode::InsufficientIsolation => PlimsollStatus::InsufficientIsolation,
            ErrorCode::SoftwareMismatch => PlimsollStatus::SoftwareMismatch,
            ErrorCode::AtCapacity => PlimsollStatus::AtCapacity,
            ErrorCode::SessionEnded => PlimsollStatus::SessionEnded,
            ErrorCode::Infrastructure => PlimsollStatus::Infrastructure,
            ErrorCode::Cancelled => PlimsollStatus::Cancelled,
            ErrorCode::DeadlineExceeded => PlimsollStatus::DeadlineExceeded,
            ErrorCode::RecordMismatch => PlimsollStatus::RecordMismatch,
            ErrorCode::IsolationEvidenceMismatch => PlimsollStatus::IsolationEvidenceMismatch,
            ErrorCode::Transport => PlimsollStatus::Transport,
        }
    }

    /// The stable number.
    pub const fn number(self) -> u32 {
        self as u32
    }

    /// The status for a number, if it is one.
    pub fn from_number(n: u32) -> Option<PlimsollStatus> {
        PlimsollStatus::ALL.into_iter().find(|s| s.number() == n)
    }

    /// The snake_case name: the core code's name for 1 to 17.
    pub const fn name(self) -> &'static std::ffi::CStr {
        match self {
            PlimsollStatus::Ok => c"ok",
            PlimsollStatus::InvalidRequest => c"invalid_request",
            PlimsollStatus::ProtocolMissing => c"protocol_missing",
            PlimsollStatus::ProtocolMismatch => c"protocol_mismatch",
            PlimsollStatus::Unauthenticated => c"unauthenticated",
            PlimsollStatus::PermissionDenied => c"permission_denied",
            PlimsollStatus::Disabled => c"disabled",
            PlimsollStatus::Unsupported => c"unsupported",
            PlimsollStatus::InsufficientIsolation => c"insufficient_isolation",
            PlimsollStatus::SoftwareMismatch => c"software_mismatch",
            PlimsollStatus::AtCapacity => c"at_capacity",
            PlimsollStatus::SessionEnded => c"session_ended",
            PlimsollStatus::Infrastructure => c"infrastructure",
            PlimsollStatus::Cancelled => c"cancelled",
            PlimsollStatus::DeadlineExceeded => c"deadline_exceeded",
            PlimsollStatus::RecordMismatch => c"record_mismatch",
            PlimsollStatus::IsolationEvidenceMismatch => c"isolation_evidence_mismatch",
            PlimsollStatus::Transport => c"transport",
            PlimsollStatus::NullArgument => c"null_argument",
            PlimsollStatus::InvalidUtf8 => c"invalid_utf8",
            PlimsollStatus::InvalidArgument => c"invalid_argument",
            PlimsollStatus::Config => c"config",
            PlimsollStatus::Closed => c"closed",
            PlimsollStatus::Panic => c"panic",
        }
    }

    /// A fixed English description of the status.
    pub const fn description(self) -> &'static std::ffi::CStr {
        match self {
            PlimsollStatus::Ok => c"success",
            PlimsollStatus::InvalidRequest => {
                c"the request is malformed or out of bounds; nothing ran"
            }
            PlimsollStatus::ProtocolMissing => {
                c"the request carried no protocol number; nothing ran"
            }
            PlimsollStatus::ProtocolMismatch => c"the request speaks another protocol; nothing ran",
            PlimsollStatus::Unauthenticated => c"no valid credential; nothing ran",
            PlimsollStatus::PermissionDenied => {
                c"the credential lacks the scope or may not use the grant; nothing ran"
            }
            PlimsollStatus::Disabled => c"the provider is disabled: nothing runs there",
            PlimsollStatus::Unsupported => {
                c"the provider cannot run this kind of request; nothing ran"
            }
            PlimsollStatus::InsufficientIsolation => {
                c"the proven tier is below the caller's floor; nothing ran"
            }
            PlimsollStatus::SoftwareMismatch => {
                c"the provider's software is outside the caller's rule; nothing ran"
            }
            PlimsollStatus::AtCapacity => {
                c"every run slot is busy or a rate limit was hit; nothing ran, retry later"
            }
            PlimsollStatus::SessionEnded => c"the session has ended; nothing ran",
            PlimsollStatus::Infrastructure => {
                c"something around the run broke; the call may have run"
            }
            PlimsollStatus::Cancelled => c"the caller cancelled; the call may have run",
            PlimsollStatus::DeadlineExceeded => {
                c"the request's overall deadline passed; the call may have run"
            }
            PlimsollStatus::RecordMismatch => {
                c"a record or chain failed verification; the call may have run"
            }
            PlimsollStatus::IsolationEvidenceMismatch => {
                c"the answer's tier does not meet the floor sent; the call may have run"
            }
            PlimsollStatus::Transport => {
                c"the answer could not be read or was not bound to the request; the call may have run"
            }
            PlimsollStatus::NullArgument => c"a pointer argument was NULL; nothing ran",
            PlimsollStatus::InvalidUtf8 => c"a text argument was not valid UTF-8; nothing ran",
            PlimsollStatus::InvalidArgument => c"an argument is not allowed here; nothing ran",
            PlimsollStatus::Config => {
                c"the configuration is impossible or the engine would not start; nothing ran"
            }
            PlimsollStatus::Closed => c"the session was already closed; nothing ran",
            PlimsollStatus::Panic => {
                c"plimsoll panicked inside the call; the call may have run"
            }
        }
    }
}

/// A failed call's details: status, message, whether anything ran, and why a
/// session ended. Made by a failing call when its `error_out` is not NULL;
/// free it with `plimsoll_error_free`.
///
/// Thread-safety: immutable; may be read from several threads at once.
pub struct PlimsollError {
    status: PlimsollStatus,
    message: CString,
    refusal: Option<Refusal>,
    session_end: SessionEnd,
    unanswered: Option<CString>,
}

impl PlimsollError {
    pub(crate) fn from_fail(f: Fail) -> PlimsollError {
        match f {
            Fail::Core(e) => PlimsollError {
                status: PlimsollStatus::from_code(e.code()),
                message: c_string(e.message()),
                refusal: e.not_dispatched(),
                session_end: e.session_end().map_or(SessionEnd::Open, |s| s.reason),
                unanswered: e
                    .unanswered()
                    .map(|r| c_string(&String::from_utf8_lossy(&crate::wire::json::encode(r)))),
            },
            Fail::Binding(status, message) => PlimsollError {
                status,
                message: c_string(&message),
                // Only a panic may have happened after the run began.
                refusal: (status != PlimsollStatus::Panic).then_some(Refusal::Request),
                session_end: SessionEnd::Open,
                unanswered: None,
            },
        }
    }

    pub(crate) fn status(&self) -> PlimsollStatus {
        self.status
    }
}

/// The status's snake_case name (`"ok"`, `"disabled"`, `"null_argument"`, …),
/// or `"unknown"` for a number that is no status. Static; never free it.
///
/// Thread-safety: may be called from any thread at any time.
#[unsafe(no_mangle)]
pub extern "C" fn plimsoll_status_name(status: u32) -> *const c_char {
    getter(empty(), || {
        PlimsollStatus::from_number(status)
            .map_or(c"unknown", PlimsollStatus::name)
            .as_ptr()
    })
}

/// A fixed English description of the status, or `"unknown status"`. Static;
/// never free it. The per-call detail is in the error object.
///
/// Thread-safety: may be called from any thread at any time.
#[unsafe(no_mangle)]
pub extern "C" fn plimsoll_status_message(status: u32) -> *const c_char {
    getter(empty(), || {
        PlimsollStatus::from_number(status)
            .map_or(c"unknown status", PlimsollStatus::description)
            .as_ptr()
    })
}

/// The error's status; `PLIMSOLL_STATUS_NULL_ARGUMENT` when `error` is NULL.
///
/// Thread-safety: may be called from several threads at once on one error.
///
/// # Safety
/// `error` is NULL or a live error object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_error_status(error: *const PlimsollError) -> PlimsollStatus {
    getter(PlimsollStatus::NullArgument, || {
        // SAFETY: NULL or a live error, per this function's contract.
        unsafe { error.as_ref() }.map_or(PlimsollStatus::NullArgument, |e| e.status)
    })
}

/// The error's human message: never holds a token, request body, guest output
/// or session id. Owned by the error; `""` when `error` is NULL. Branch on the
/// status, not on this text.
///
/// Thread-safety: may be called from several threads at once on one error.
///
/// # Safety
/// `error` is NULL or a live error object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_error_message(error: *const PlimsollError) -> *const c_char {
    getter(empty(), || {
        // SAFETY: NULL or a live error, per this function's contract.
        unsafe { error.as_ref() }.map_or(empty(), |e| e.message.as_ptr())
    })
}

/// Why nothing ran: 1 request, 2 permission, 3 protocol, 4 unsupported,
/// 5 isolation, 6 capacity, 7 environment (the wire's `NotDispatchedReason`).
/// 0 means the call may have run, so retrying is not automatically safe (also
/// when `error` is NULL). Binding-level refusals (NULL, UTF-8, argument,
/// configuration, closed) report 1.
///
/// Thread-safety: may be called from several threads at once on one error.
///
/// # Safety
/// `error` is NULL or a live error object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_error_not_dispatched(error: *const PlimsollError) -> u32 {
    getter(0, || {
        // SAFETY: NULL or a live error, per this function's contract.
        unsafe { error.as_ref() }
            .and_then(|e| e.refusal)
            .map_or(0, Refusal::number)
    })
}

/// The not-dispatched reason's name (`"request"`, `"capacity"`, …), or `""`
/// when the call may have run. Static; never free it.
///
/// Thread-safety: may be called from several threads at once on one error.
///
/// # Safety
/// `error` is NULL or a live error object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_error_not_dispatched_name(
    error: *const PlimsollError,
) -> *const c_char {
    getter(empty(), || {
        // SAFETY: NULL or a live error, per this function's contract.
        let reason = unsafe { error.as_ref() }.and_then(|e| e.refusal);
        match reason {
            None => c"",
            Some(Refusal::Request) => c"request",
            Some(Refusal::Permission) => c"permission",
            Some(Refusal::Protocol) => c"protocol",
            Some(Refusal::Unsupported) => c"unsupported",
            Some(Refusal::Isolation) => c"isolation",
            Some(Refusal::Capacity) => c"capacity",
            Some(Refusal::Environment) => c"environment",
        }
        .as_ptr()
    })
}

/// For `PLIMSOLL_STATUS_SESSION_ENDED`: why the session ended, as the wire's
/// `SessionEnd` number (1 closed, 2 expired, 3 disk exceeded, 4 main process
/// ended, 5 boundary failed, 6 sandbox changed, 7 shutdown, 8 replaced,
/// 9 not found, 10 unclaimed); 0 otherwise.
///
/// Thread-safety: may be called from several threads at once on one error.
///
/// # Safety
/// `error` is NULL or a live error object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_error_session_end(error: *const PlimsollError) -> u32 {
    getter(0, || {
        // SAFETY: NULL or a live error, per this function's contract.
        unsafe { error.as_ref() }.map_or(0, |e| e.session_end.number())
    })
}

/// For a session call that may have run but failed: its unanswered run record
/// as JSON, owned by the error. NULL otherwise.
///
/// Thread-safety: may be called from several threads at once on one error.
///
/// # Safety
/// `error` is NULL or a live error object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_error_unanswered_record_json(
    error: *const PlimsollError,
) -> *const c_char {
    getter(std::ptr::null(), || {
        // SAFETY: NULL or a live error, per this function's contract.
        unsafe { error.as_ref() }
            .and_then(|e| e.unanswered.as_ref())
            .map_or(std::ptr::null(), |s| s.as_ptr())
    })
}

/// Frees an error. NULL is a no-op.
///
/// Thread-safety: no other thread may use `error` during or after the call.
///
/// # Safety
/// `error` is NULL or came from a failing call's `error_out` and was not freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_error_free(error: *mut PlimsollError) {
    // SAFETY: forwarded contract.
    unsafe { free_box(error) }
}
