//! Sessions: one sandbox for many calls, every record continuing the chain.
//!
//! An engine's session is checked here as a remote one is checked by the
//! remote client: the session's floor and rule go on every call, each answer
//! must continue the chain, and after an unverifiable answer only a close is
//! sent.

use std::ffi::{CString, c_char};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;

use super::client::{Backend, Shared, cancelled};
use super::{
    FfiResult, PlimsollCancel, PlimsollClient, PlimsollError, PlimsollRequest, PlimsollResponse,
    PlimsollStatus, arg, c_string, empty, fail, fallible, free_box, getter, opt_text, out_ok, put,
};
use crate::client::{RemoteSession, SessionOptions};
use crate::engine::Caller;
use crate::error::{Error, ErrorCode, Refusal, SessionEnd};
use crate::request::{PROTOCOL, Payload, Request, SoftwareRule};
use crate::secret::Secret;
use crate::tier::Floor;
use crate::verify::Chain;
use crate::wire::json::decode;
use crate::wire::{Evidence, OpenSessionRequest, RunResponse};

/// An embedded engine's session as this handle has seen it.
struct Local {
    id: Secret,
    chain: Chain,
    opened: Evidence,
    broken: bool,
}

enum State {
    Local(Local),
    /// Borrows the `RemoteClient` inside `PlimsollSession::shared`, which the
    /// handle keeps alive for at least as long (see the field order there).
    Remote(RemoteSession),
    Closed,
}

struct Inner {
    state: State,
    ended: SessionEnd,
}

/// An open session on an engine or a daemon. Calls run one at a time.
///
/// Thread-safety: a session may be used from several threads; calls on it are
/// serialised (each waits for the one before it).
pub struct PlimsollSession {
    // Field order matters: `inner` (which may borrow from `shared`) drops first.
    inner: Mutex<Inner>,
    shared: Arc<Shared>,
    fingerprint: CString,
    isolation: CString,
    floor: Floor,
    rule: Option<SoftwareRule>,
}

impl PlimsollSession {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A call as the session sends it: the session's floor and software rule
    /// applied (as the remote client applies them), then checked.
    fn as_sent(&self, mut request: Request) -> FfiResult<Request> {
        if matches!(request.payload, Payload::Module(_)) {
            return Err(Error::invalid("a session runs no module").into());
        }
        let floor = Floor::parse(&request.envelope.minimum_isolation)
            .map_err(|e| Error::invalid(e.to_string()))?
            .max(self.floor);
        request.envelope.minimum_isolation = floor.as_str().to_owned();
        request.envelope.software_rule =
            crate::session::merge(self.rule.as_ref(), request.envelope.software_rule.as_ref());
        request.envelope.check_protocol()?;
        request.envelope.validate()?;
        request.payload.validate()?;
        Ok(request)
    }
}

fn parse_options(json: Option<String>) -> FfiResult<OpenSessionRequest> {
    let mut req: OpenSessionRequest = match json {
        None => OpenSessionRequest::default(),
        Some(j) => decode(j.as_bytes()).map_err(|e| {
            fail(
                PlimsollStatus::InvalidArgument,
                format!("session options JSON: {e}"),
            )
        })?,
    };
    if req.protocol == 0 {
        req.protocol = PROTOCOL;
    }
    Ok(req)
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
        let req = parse_options(json)?;
        let floor =
            Floor::parse(&req.minimum_isolation).map_err(|e| Error::invalid(e.to_string()))?;
        let rule = req.software_rule.clone();
        let shared = client.shared.clone();
        let session = match shared.backend() {
            Backend::Engine(e) => {
                let open = shared.block_on(e.open_session(&Caller::anonymous(), &req))?;
                let local = Local {
                    chain: Chain::new(&open.session_id),
                    id: Secret::new(open.session_id),
                    opened: Evidence {
                        sandbox: open.sandbox,
                        isolation: open.isolation,
                        software_identity: open.software_identity,
                        ..Evidence::default()
                    },
                    broken: false,
                };
                PlimsollSession {
                    fingerprint: c_string(local.chain.fingerprint()),
                    isolation: c_string(&local.opened.isolation),
                    inner: Mutex::new(Inner {
                        state: State::Local(local),
                        ended: SessionEnd::Open,
                    }),
                    shared: shared.clone(),
                    floor,
                    rule,
                }
            }
            Backend::Remote(r) => {
                if !req.owner.is_empty() {
                    return Err(fail(
                        PlimsollStatus::InvalidArgument,
                        "the remote client sends no owner",
                    ));
                }
                let opts = SessionOptions {
                    minimum_isolation: req.minimum_isolation,
                    software_rule: req.software_rule,
                    lifetime_ms: req.lifetime_ms,
                    idle_timeout_ms: req.idle_timeout_ms,
                    languages: req.languages,
                };
                // The session owns its own handle on the client.
                let s = shared.block_on(r.open_session(opts))?;
                PlimsollSession {
                    fingerprint: c_string(s.fingerprint()),
                    isolation: c_string(s.isolation()),
                    inner: Mutex::new(Inner {
                        state: State::Remote(s),
                        ended: SessionEnd::Open,
                    }),
                    shared: shared.clone(),
                    floor,
                    rule,
                }
            }
        };
        // SAFETY: checked above.
        unsafe { put(session_out, session) };
        Ok(())
    })
}

fn closed() -> crate::ffi::Fail {
    fail(PlimsollStatus::Closed, "the session was closed")
}

impl Local {
    fn run(
        &mut self,
        shared: &Shared,
        engine: &crate::Engine,
        request: Request,
        token: CancellationToken,
    ) -> FfiResult<(RunResponse, SessionEnd, Request)> {
        if self.broken {
            return Err(Error::new(
                ErrorCode::RecordMismatch,
                "this session stopped after an unverifiable answer; close it",
            )
            .marked(Some(Refusal::Request))
            .into());
        }
        let answer = shared.block_on(engine.session_run(
            &Caller::anonymous(),
            self.id.expose(),
            request.clone(),
            token,
        ));
        match answer {
            Ok(a) => {
                let run = a.run.ok_or_else(|| {
                    Error::new(
                        ErrorCode::RecordMismatch,
                        "the session answer carries no run",
                    )
                })?;
                if let Err(e) = self.chain.check_call(&request, &run) {
                    self.broken = true;
                    return Err(e.into());
                }
                Ok((run, a.ended, request))
            }
            Err(e) => {
                if let Some(rec) = e.unanswered() {
                    if self
                        .chain
                        .check_unanswered(&request, rec, &self.opened)
                        .is_err()
                    {
                        self.broken = true;
                    }
                } else if e.not_dispatched().is_none() {
                    self.broken = true;
                }
                Err(e.into())
            }
        }
    }
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
        if token.is_cancelled() {
            return Err(cancelled(false).into());
        }
        let mut inner = session.lock();
        let result = match (&mut inner.state, session.shared.backend()) {
            (State::Closed, _) => Err(closed()),
            (State::Local(l), Backend::Engine(e)) => session
                .as_sent(request.inner.clone())
                .and_then(|sent| l.run(&session.shared, e, sent, token)),
            (State::Remote(r), _) => session.as_sent(request.inner.clone()).and_then(|sent| {
                session
                    .shared
                    .block_on(async {
                        tokio::select! {
                            a = r.run(sent.clone()) => a.map(|run| (run, sent)),
                            () = token.cancelled() => Err(cancelled(true)),
                        }
                    })
                    .map(|(run, sent)| (run, r.ended().unwrap_or(SessionEnd::Open), sent))
                    .map_err(Into::into)
            }),
            (State::Local(_), Backend::Remote(_)) => {
                Err(Error::infrastructure("session and client disagree").into())
            }
        };
        let (run, ended, sent) = match result {
            Ok(x) => x,
            Err(f) => {
                if let crate::ffi::Fail::Core(e) = &f
                    && let Some(end) = e.session_end()
                {
                    inner.ended = end.reason;
                }
                return Err(f);
            }
        };
        if ended != SessionEnd::Open {
            inner.ended = ended;
        }
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
        let mut inner = session.lock();
        let state = std::mem::replace(&mut inner.state, State::Closed);
        let summary = match (state, session.shared.backend()) {
            (State::Closed, _) => return Err(closed()),
            (State::Local(l), Backend::Engine(e)) => {
                let s = session.shared.block_on(e.close_session(
                    &Caller::anonymous(),
                    PROTOCOL,
                    l.id.expose(),
                ))?;
                l.chain
                    .check_close(&s.session, s.calls, &s.last_record_sha256)?;
                s
            }
            (State::Remote(r), _) => session.shared.block_on(r.close())?,
            (State::Local(_), Backend::Remote(_)) => {
                return Err(Error::infrastructure("session and client disagree").into());
            }
        };
        if inner.ended == SessionEnd::Open {
            inner.ended = if summary.ended == SessionEnd::Open {
                SessionEnd::Closed
            } else {
                summary.ended
            };
        }
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
        unsafe { session.as_ref() }.map_or(0, |s| s.lock().ended.number())
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
