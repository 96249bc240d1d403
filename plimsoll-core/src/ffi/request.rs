//! Requests: built field by field or read from the wire's `RunRequest` JSON.
//!
//! Builders only copy; the core validates every limit when the request runs.

use std::ffi::{CString, c_char};
use std::sync::OnceLock;

use super::{
    FfiResult, PlimsollError, PlimsollStatus, arg, arg_mut, c_string, empty, fail, fallible,
    free_box, getter, out_ok, put, text, text_n,
};
use crate::request::{
    CellRun, JavaScriptRun, Payload, ProjectFile, ProjectRun, Request, SoftwareRule,
};
use crate::wire::RunRequest;
use crate::wire::json::{decode, encode};

/// One request: a snippet, a project or a cell, with its envelope (floor,
/// timeout, trace id, software rule). Protocol 4 unless read from JSON.
///
/// Thread-safety: a request may be read (run, verified, encoded) from several
/// threads at once; modifying it needs exclusive use.
#[derive(Debug)]
pub struct PlimsollRequest {
    pub(crate) inner: Request,
    json: OnceLock<CString>,
}

impl PlimsollRequest {
    fn new(payload: Payload) -> PlimsollRequest {
        PlimsollRequest {
            inner: Request::new(payload),
            json: OnceLock::new(),
        }
    }

    fn edit(&mut self) -> &mut Request {
        self.json = OnceLock::new();
        &mut self.inner
    }
}

/// Makes a JavaScript snippet request for `code` (copied).
///
/// Thread-safety: may be called from any thread.
///
/// # Safety
/// `code` is NULL or a NUL-terminated string; `request_out` and `error_out`
/// are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_request_new_javascript(
    code: *const c_char,
    request_out: *mut *mut PlimsollRequest,
    error_out: *mut *mut PlimsollError,
) -> PlimsollStatus {
    fallible(error_out, || {
        out_ok(request_out, "request_out")?;
        // SAFETY: the caller's contract.
        let code = unsafe { text(code, "code")? };
        let r = PlimsollRequest::new(Payload::JavaScript(JavaScriptRun {
            code,
            grant_profile: String::new(),
        }));
        // SAFETY: checked above.
        unsafe { put(request_out, r) };
        Ok(())
    })
}

/// Makes an empty project request; add steps (at least one), files and
/// artifacts before running it.
///
/// Thread-safety: may be called from any thread.
///
/// # Safety
/// `request_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_request_new_project(
    request_out: *mut *mut PlimsollRequest,
    error_out: *mut *mut PlimsollError,
) -> PlimsollStatus {
    fallible(error_out, || {
        out_ok(request_out, "request_out")?;
        let r = PlimsollRequest::new(Payload::Project(ProjectRun::default()));
        // SAFETY: checked above.
        unsafe { put(request_out, r) };
        Ok(())
    })
}

/// Makes a notebook cell request (`language` is `javascript` or `python`);
/// cells run only in a session.
///
/// Thread-safety: may be called from any thread.
///
/// # Safety
/// `language` and `code` are NULL or NUL-terminated strings; `request_out` and
/// `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_request_new_cell(
    language: *const c_char,
    code: *const c_char,
    request_out: *mut *mut PlimsollRequest,
    error_out: *mut *mut PlimsollError,
) -> PlimsollStatus {
    fallible(error_out, || {
        out_ok(request_out, "request_out")?;
        // SAFETY: the caller's contract.
        let (language, code) = unsafe { (text(language, "language")?, text(code, "code")?) };
        let r = PlimsollRequest::new(Payload::Cell(CellRun {
            language,
            code,
            files: Vec::new(),
        }));
        // SAFETY: checked above.
        unsafe { put(request_out, r) };
        Ok(())
    })
}

/// Reads a request from the wire's `RunRequest` JSON (ProtoJSON, exactly one
/// payload; `sessionId` is ignored). The protocol number is kept as sent, so a
/// missing or other protocol is refused when the request runs.
///
/// Thread-safety: may be called from any thread.
///
/// # Safety
/// `json` is NULL or a NUL-terminated string; `request_out` and `error_out`
/// are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_request_from_json(
    json: *const c_char,
    request_out: *mut *mut PlimsollRequest,
    error_out: *mut *mut PlimsollError,
) -> PlimsollStatus {
    fallible(error_out, || {
        out_ok(request_out, "request_out")?;
        // SAFETY: the caller's contract.
        let json = unsafe { text(json, "json")? };
        let inner = parse_request(&json)?;
        // SAFETY: checked above.
        unsafe {
            put(
                request_out,
                PlimsollRequest {
                    inner,
                    json: OnceLock::new(),
                },
            )
        };
        Ok(())
    })
}

pub(crate) fn parse_request(json: &str) -> FfiResult<Request> {
    let mut wire: RunRequest = decode(json.as_bytes()).map_err(|e| {
        fail(
            PlimsollStatus::InvalidArgument,
            format!("request JSON: {e}"),
        )
    })?;
    wire.session_id.clear();
    Ok(wire.into_request()?)
}

fn project<'a>(r: &'a mut PlimsollRequest, what: &str) -> FfiResult<&'a mut ProjectRun> {
    match &mut r.edit().payload {
        Payload::Project(p) => Ok(p),
        other => Err(fail(
            PlimsollStatus::InvalidArgument,
            format!("{what} belong to a project, not a {} request", other.kind()),
        )),
    }
}

/// Appends a shell step to a project.
///
/// Thread-safety: no other thread may use `request` during the call.
///
/// # Safety
/// `request` is NULL or a live request; `command` is NULL or a NUL-terminated
/// string; `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_request_add_step(
    request: *mut PlimsollRequest,
    command: *const c_char,
    error_out: *mut *mut PlimsollError,
) -> PlimsollStatus {
    fallible(error_out, || {
        // SAFETY: the caller's contract.
        let (r, command) = unsafe { (arg_mut(request, "request")?, text(command, "command")?) };
        project(r, "steps")?.steps.push(command);
        Ok(())
    })
}

/// Adds a text file (`content_len` bytes of UTF-8 at `content`, which may be
/// NULL when the length is 0) written into a project's or cell's work
/// directory before anything runs.
///
/// Thread-safety: no other thread may use `request` during the call.
///
/// # Safety
/// `request` is NULL or a live request; `path` is NULL or a NUL-terminated
/// string; `content` is NULL or `content_len` readable bytes; `error_out` is
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_request_add_file(
    request: *mut PlimsollRequest,
    path: *const c_char,
    content: *const u8,
    content_len: usize,
    error_out: *mut *mut PlimsollError,
) -> PlimsollStatus {
    fallible(error_out, || {
        // SAFETY: the caller's contract.
        let (r, path, content) = unsafe {
            (
                arg_mut(request, "request")?,
                text(path, "path")?,
                text_n(content, content_len, "content")?,
            )
        };
        let file = ProjectFile { path, content };
        match &mut r.edit().payload {
            Payload::Project(p) => p.files.push(file),
            Payload::Cell(c) => c.files.push(file),
            other => {
                return Err(fail(
                    PlimsollStatus::InvalidArgument,
                    format!(
                        "files belong to a project or a cell, not a {} request",
                        other.kind()
                    ),
                ));
            }
        }
        Ok(())
    })
}

/// Asks a project to collect the file at `path` afterwards.
///
/// Thread-safety: no other thread may use `request` during the call.
///
/// # Safety
/// `request` is NULL or a live request; `path` is NULL or a NUL-terminated
/// string; `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_request_add_artifact(
    request: *mut PlimsollRequest,
    path: *const c_char,
    error_out: *mut *mut PlimsollError,
) -> PlimsollStatus {
    fallible(error_out, || {
        // SAFETY: the caller's contract.
        let (r, path) = unsafe { (arg_mut(request, "request")?, text(path, "path")?) };
        project(r, "artifacts")?.artifacts.push(path);
        Ok(())
    })
}

/// Sets the caller's floor: `""` (none), `process`, `container`, `kernel` or
/// `vm`. A floor above the proven tier is refused before anything runs.
///
/// Thread-safety: no other thread may use `request` during the call.
///
/// # Safety
/// `request` is NULL or a live request; `floor` is NULL or a NUL-terminated
/// string; `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_request_set_minimum_isolation(
    request: *mut PlimsollRequest,
    floor: *const c_char,
    error_out: *mut *mut PlimsollError,
) -> PlimsollStatus {
    fallible(error_out, || {
        // SAFETY: the caller's contract.
        let (r, floor) = unsafe { (arg_mut(request, "request")?, text(floor, "floor")?) };
        r.edit().envelope.minimum_isolation = floor;
        Ok(())
    })
}

/// Sets the run's whole budget in milliseconds; 0 means the provider's
/// default. It is clamped to the kind's maximum.
///
/// Thread-safety: no other thread may use `request` during the call.
///
/// # Safety
/// `request` is NULL or a live request; `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_request_set_timeout_ms(
    request: *mut PlimsollRequest,
    timeout_ms: i32,
    error_out: *mut *mut PlimsollError,
) -> PlimsollStatus {
    fallible(error_out, || {
        // SAFETY: the caller's contract.
        let r = unsafe { arg_mut(request, "request")? };
        r.edit().envelope.timeout_ms = timeout_ms;
        Ok(())
    })
}

/// Sets an opaque correlation id for the audit line (1 to 64 of
/// `[A-Za-z0-9._:-]`; a malformed one is dropped, never digested).
///
/// Thread-safety: no other thread may use `request` during the call.
///
/// # Safety
/// `request` is NULL or a live request; `trace_id` is NULL or a NUL-terminated
/// string; `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_request_set_trace_id(
    request: *mut PlimsollRequest,
    trace_id: *const c_char,
    error_out: *mut *mut PlimsollError,
) -> PlimsollStatus {
    fallible(error_out, || {
        // SAFETY: the caller's contract.
        let (r, id) = unsafe { (arg_mut(request, "request")?, text(trace_id, "trace_id")?) };
        r.edit().envelope.trace_id = id;
        Ok(())
    })
}

/// Names a grant profile configured on the engine or daemon (a snippet or a
/// project), or clears it with `""`.
///
/// Thread-safety: no other thread may use `request` during the call.
///
/// # Safety
/// `request` is NULL or a live request; `profile` is NULL or a NUL-terminated
/// string; `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_request_set_grant_profile(
    request: *mut PlimsollRequest,
    profile: *const c_char,
    error_out: *mut *mut PlimsollError,
) -> PlimsollStatus {
    fallible(error_out, || {
        // SAFETY: the caller's contract.
        let (r, profile) = unsafe { (arg_mut(request, "request")?, text(profile, "profile")?) };
        match &mut r.edit().payload {
            Payload::JavaScript(j) => j.grant_profile = profile,
            Payload::Project(p) => p.grant_profile = profile,
            other => {
                return Err(fail(
                    PlimsollStatus::InvalidArgument,
                    format!("a {} request takes no grant", other.kind()),
                ));
            }
        }
        Ok(())
    })
}

/// Sets the software rule: `mode` is `exact` (one identity) or `approved`
/// (1 to 32), over `count` identities (copied). `mode` NULL clears the rule.
///
/// Thread-safety: no other thread may use `request` during the call.
///
/// # Safety
/// `request` is NULL or a live request; `mode` is NULL or a NUL-terminated
/// string; `identities` is NULL (only when `count` is 0) or `count` pointers to
/// NUL-terminated strings; `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_request_set_software_rule(
    request: *mut PlimsollRequest,
    mode: *const c_char,
    identities: *const *const c_char,
    count: usize,
    error_out: *mut *mut PlimsollError,
) -> PlimsollStatus {
    fallible(error_out, || {
        // SAFETY: the caller's contract.
        let r = unsafe { arg_mut(request, "request")? };
        if mode.is_null() {
            r.edit().envelope.software_rule = None;
            return Ok(());
        }
        // SAFETY: the caller's contract.
        let mode = unsafe { text(mode, "mode")? };
        let mut ids = Vec::with_capacity(count.min(64));
        if count > 0 {
            // SAFETY: non-NULL (checked) with `count` readable pointers, per the contract.
            let ptrs = unsafe { std::slice::from_raw_parts(arg(identities, "identities")?, count) };
            for p in ptrs {
                // SAFETY: each is NULL or NUL-terminated, per the contract.
                ids.push(unsafe { text(*p, "identities[i]")? });
            }
        }
        r.edit().envelope.software_rule = Some(SoftwareRule {
            mode,
            identities: ids,
        });
        Ok(())
    })
}

/// The request as the wire's `RunRequest` JSON, owned by the request and valid
/// until it is modified or freed; `""` when `request` is NULL. Keep it with the
/// response JSON to verify the record later.
///
/// Thread-safety: may be called from several threads at once on one request.
///
/// # Safety
/// `request` is NULL or a live request.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_request_json(request: *const PlimsollRequest) -> *const c_char {
    getter(empty(), || {
        // SAFETY: NULL or a live request, per the contract.
        let Some(r) = (unsafe { request.as_ref() }) else {
            return empty();
        };
        r.json
            .get_or_init(|| {
                c_string(&String::from_utf8_lossy(&encode(
                    &RunRequest::from_request(&r.inner),
                )))
            })
            .as_ptr()
    })
}

/// The payload kind: `"javascript"`, `"project"`, `"module"` or `"cell"`;
/// `""` when `request` is NULL. Static.
///
/// Thread-safety: may be called from several threads at once on one request.
///
/// # Safety
/// `request` is NULL or a live request.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_request_kind(request: *const PlimsollRequest) -> *const c_char {
    getter(empty(), || {
        // SAFETY: NULL or a live request, per the contract.
        match unsafe { request.as_ref() }.map(|r| &r.inner.payload) {
            None => c"",
            Some(Payload::JavaScript(_)) => c"javascript",
            Some(Payload::Project(_)) => c"project",
            Some(Payload::Module(_)) => c"module",
            Some(Payload::Cell(_)) => c"cell",
        }
        .as_ptr()
    })
}

/// Frees a request. NULL is a no-op. Responses never point into it.
///
/// Thread-safety: no other thread may use `request` during or after the call.
///
/// # Safety
/// `request` is NULL or came from a `plimsoll_request_new…`/`_from_json` call
/// and was not freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_request_free(request: *mut PlimsollRequest) {
    // SAFETY: forwarded contract.
    unsafe { free_box(request) }
}
