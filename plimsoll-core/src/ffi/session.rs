//! Sessions: one sandbox for many calls, every record continuing the chain.
//!
//! A thin handle over the core's [`Session`](crate::client::Session): the
//! session's floor and rule on every call, the chain check, and "only a close
//! after an unverifiable answer" are the core's, as for every language.

use std::ffi::{CString, c_char};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::client::Shared;
use super::{
    FfiResult, PlimsollCancel, PlimsollClient, PlimsollError, PlimsollRequest, PlimsollResponse,
    PlimsollStatus, arg, c_string, empty, fail, fallible, free_box, getter, opt_text, out_ok, put,
};
use crate::client::{Session, SessionOptions};
use crate::error::SessionEnd;
use crate::wire::OpenSessionRequest;
use crate::wire::json::decode;

/// An open session on an engine or a daemon. Calls run one at a time.
///
/// Thread-safety: a session may be used from several threads; calls on it are
/// serialised (each waits for the one before it).
pub struct PlimsollSession {
    // Field order matters: the session (which holds the runner's link) drops
    // before the runtime it runs on.
    session: Session,
    shared: Arc<Shared>,
    fingerprint: CString,
    isolation: CString,
}

fn parse_options(json: Option<String>) -> FfiResult<SessionOptions> {
    let Some(json) = json else {
        return Ok(SessionOptions::default());
    };
    let req: OpenSessionRequest = decode(json.as_bytes()).map_err(|e| {
        fail(
            PlimsollStatus::InvalidArgument,
            format!("session options JSON: {e}"),
        )
    })?;
    if req.protocol != 0 {
        crate::request::check_protocol(req.protocol)?;
    }
    if !req.owner.is_empty() {
        return Err(fail(
            PlimsollStatus::InvalidArgument,
            "a caller sends no owner (the engine or daemon names it)",
        ));
    }
    Ok(SessionOptions {
        minimum_isolation: req.minimum_isolation,
        software_rule: req.software_rule,
        lifetime_ms: req.lifetime_ms,
        idle_timeout_ms: req.idle_timeout_ms,
        languages: req.languages,
        trace_id: req.trace_id,
    })
}

/// Opens a session. `options_json` is the wire's `OpenSessionRequest` JSON
/// (`minimumIsolation`, `softwareRule`, `lifetimeMs`, `idleTimeoutMs`,
/// `languages`, …; the protocol defaults to 4) or NULL for the defaults.
/// Refused with `PLIMSOLL_STATUS_UNSUPPORTED` (or `…_DISABLED`) where the
/// provider keeps no sessions, and `PLIMSOLL_STATUS_AT_CAPACITY` when every
/// session slot is taken.
///
/// The session id is a capability: it stays inside the handle and is never
/// shown; `plimsoll_session_fingerprint` names the session instead.
///
/// Thread-safety: may be called from several threads at once on one client.
///
/// # Safety
/// `client` is NULL or a live client; `options_json` is NULL or a
/// NUL-terminated string; `session_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_client_open_session(
    client: *const PlimsollClient,
    options_json: *const c_char,
    session_out: *mut *mut PlimsollSession,
    error_out: *mut *mut PlimsollError,
) -> PlimsollStatus {
    fallible(error_out, || {
        out_ok(session_out, "session_out")?;
        // SAFETY: the caller's contract.
        let (client, json) = unsafe {
            (
                arg(client, "client")?,
                opt_text(options_json, "options_json")?,
            )
        };
        let opts = parse_options(json)?;
        let shared = client.shared.clone();
        let session = shared.block_on(shared.runner().open_session(opts))?;
        let session = PlimsollSession {
            fingerprint: c_string(session.fingerprint()),
            isolation: c_string(session.isolation()),
            session,
            shared,
        };
        // SAFETY: checked above.
        unsafe { put(session_out, session) };
        Ok(())
    })
}

fn closed() -> crate::ffi::Fail {
    fail(PlimsollStatus::Closed, "the session was closed")
}

/// Runs a snippet, project or cell in the session and blocks until the
/// answer, whose record must continue the session's chain. The session's
/// floor and software rule apply to every call. A guest's non-zero exit is a
/// normal answer. `cancel` may be NULL.
///
/// When the session ends, calls fail with `PLIMSOLL_STATUS_SESSION_ENDED` and
/// `plimsoll_error_session_end` says why; after this handle closed it,
/// `PLIMSOLL_STATUS_CLOSED`.
///
/// Thread-safety: may be called from several threads; calls are serialised.
///
/// # Safety
/// `session` and `request` are NULL or live; `cancel` is NULL or a live cancel
/// that outlives the call; `response_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_session_run(
    session: *const PlimsollSession,
    request: *const PlimsollRequest,
    cancel: *const PlimsollCancel,
    response_out: *mut *mut PlimsollResponse,
    error_out: *mut *mut PlimsollError,
) -> PlimsollStatus {
    fallible(error_out, || {
        out_ok(response_out, "response_out")?;
        // SAFETY: the caller's contract.
        let (session, request) = unsafe { (arg(session, "session")?, arg(request, "request")?) };
        // SAFETY: NULL or a live cancel, per the contract.
        let token =
            unsafe { cancel.as_ref() }.map_or_else(CancellationToken::new, |c| c.token.clone());
        let shared = &session.shared;
        if shared.block_on(session.session.is_closed()) {
            return Err(closed());
        }
        let a = shared.block_on(session.session.run(request.inner.clone(), token))?;
        let (run, ended, sent) = (a.response, a.ended.unwrap_or(SessionEnd::Open), a.request);
        // SAFETY: checked above.
        unsafe { put(response_out, PlimsollResponse::new(run, ended, &sent)) };
        Ok(())
    })
}

/// Closes the session and checks the daemon's or engine's summary (call count,
/// last record digest) against the chain this handle saw. On success
/// `*calls_out` (when not NULL) gets the number of calls executed. The handle
/// still needs `plimsoll_session_free`; later calls fail with
/// `PLIMSOLL_STATUS_CLOSED`.
///
/// Thread-safety: may be called from any thread; waits for a call in progress.
///
/// # Safety
/// `session` is NULL or live; `calls_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_session_close(
    session: *const PlimsollSession,
    calls_out: *mut u64,
    error_out: *mut *mut PlimsollError,
) -> PlimsollStatus {
    fallible(error_out, || {
        // SAFETY: the caller's contract.
        let session = unsafe { arg(session, "session")? };
        let shared = &session.shared;
        if shared.block_on(session.session.is_closed()) {
            return Err(closed());
        }
        let summary = shared.block_on(session.session.close())?;
        if !calls_out.is_null() {
            // SAFETY: non-NULL and writable, per the contract.
            unsafe { *calls_out = summary.calls };
        }
        Ok(())
    })
}

/// The session's fingerprint (lowercase hex SHA-256 of its id): what its
/// records name. Owned by the session; `""` for NULL.
///
/// Thread-safety: may be called from several threads at once on one session.
///
/// # Safety
/// `session` is NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_session_fingerprint(
    session: *const PlimsollSession,
) -> *const c_char {
    getter(empty(), || {
        // SAFETY: NULL or live, per the contract.
        unsafe { session.as_ref() }.map_or(empty(), |s| s.fingerprint.as_ptr())
    })
}

/// The tier measured when the session opened. Owned by the session; `""` for NULL.
///
/// Thread-safety: may be called from several threads at once on one session.
///
/// # Safety
/// `session` is NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_session_isolation(
    session: *const PlimsollSession,
) -> *const c_char {
    getter(empty(), || {
        // SAFETY: NULL or live, per the contract.
        unsafe { session.as_ref() }.map_or(empty(), |s| s.isolation.as_ptr())
    })
}

/// Why the session ended, as far as this handle has seen (the wire's
/// `SessionEnd` number; 1 closed after `plimsoll_session_close`); 0 while open.
///
/// Thread-safety: may be called from any thread; waits for a call in progress.
///
/// # Safety
/// `session` is NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_session_ended(session: *const PlimsollSession) -> u32 {
    getter(0, || {
        // SAFETY: NULL or live, per the contract.
        unsafe { session.as_ref() }.map_or(0, |s| {
            s.shared
                .block_on(s.session.ended())
                .unwrap_or(SessionEnd::Open)
                .number()
        })
    })
}

/// Frees a session handle. NULL is a no-op. It does not close the session: an
/// engine's open session ends when the engine is freed, a daemon's when it
/// expires or goes unclaimed. Close it first to end it now.
///
/// Thread-safety: no other thread may use `session` during or after the call.
///
/// # Safety
/// `session` is NULL or came from `plimsoll_client_open_session` and was not freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_session_free(session: *mut PlimsollSession) {
    // SAFETY: forwarded contract.
    unsafe { free_box(session) }
}
