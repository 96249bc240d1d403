//! Responses: a verified run's answer, with accessors for the common fields
//! and the whole wire `RunResponse` as JSON.

use std::ffi::{CString, c_char};

use super::{PlimsollSlice, c_string, empty, free_box, getter};
use crate::error::SessionEnd;
use crate::request::Request;
use crate::result::{Artifact, Output, ProjectOutcome, StepResult};
use crate::wire::json::encode;
use crate::wire::{RunRequest, RunResponse};

/// A run's answer (from `plimsoll_client_run` or `plimsoll_session_run`):
/// evidence (provider, tier), the result, and the run record, verified against
/// the request before it was returned. Immutable.
///
/// A guest's non-zero exit is a normal answer here, never an error.
///
/// Thread-safety: immutable; may be read from several threads at once.
pub struct PlimsollResponse {
    resp: RunResponse,
    ended: SessionEnd,
    request_json: CString,
    json: CString,
    record_json: Option<CString>,
    record_sha256: CString,
    sandbox: CString,
    isolation: CString,
    software_identity: CString,
    outcome_detail: CString,
    steps: Vec<CString>,
    artifacts: Vec<CString>,
}

impl PlimsollResponse {
    pub(crate) fn new(resp: RunResponse, ended: SessionEnd, sent: &Request) -> PlimsollResponse {
        let text = |b: Vec<u8>| c_string(&String::from_utf8_lossy(&b));
        let record = resp.record.as_ref();
        let (steps, artifacts, detail) = match &resp.output {
            Some(Output::Project(p)) => (
                p.steps.iter().map(|s| c_string(&s.command)).collect(),
                p.artifacts.iter().map(|a| c_string(&a.path)).collect(),
                p.outcome_detail.as_str(),
            ),
            Some(Output::Module(m)) => (Vec::new(), Vec::new(), m.outcome_detail.as_str()),
            _ => (Vec::new(), Vec::new(), ""),
        };
        PlimsollResponse {
            request_json: text(encode(&RunRequest::from_request(sent))),
            json: text(encode(&resp)),
            record_json: record.map(|r| text(encode(r))),
            record_sha256: c_string(record.map_or("", |r| r.record_sha256.as_str())),
            sandbox: c_string(&resp.evidence.sandbox),
            isolation: c_string(&resp.evidence.isolation),
            software_identity: c_string(&resp.evidence.software_identity),
            outcome_detail: c_string(detail),
            steps,
            artifacts,
            resp,
            ended,
        }
    }

    fn step(&self, i: usize) -> Option<&StepResult> {
        match &self.resp.output {
            Some(Output::Project(p)) => p.steps.get(i),
            _ => None,
        }
    }

    fn artifact(&self, i: usize) -> Option<&Artifact> {
        match &self.resp.output {
            Some(Output::Project(p)) => p.artifacts.get(i),
            _ => None,
        }
    }

    /// The fields a snippet, a cell or a project's last step share.
    fn stream(&self) -> Stream<'_> {
        match &self.resp.output {
            Some(Output::JavaScript(j)) => Stream {
                stdout: &j.stdout,
                stderr: &j.stderr,
                exit_code: j.exit_code,
                timed_out: j.timed_out,
                stdout_truncated: j.stdout_truncated,
                stderr_truncated: j.stderr_truncated,
            },
            Some(Output::Cell(c)) => Stream {
                stdout: &c.stdout,
                stderr: &c.stderr,
                exit_code: c.exit_code,
                timed_out: c.timed_out,
                stdout_truncated: c.stdout_truncated,
                stderr_truncated: c.stderr_truncated,
            },
            Some(Output::Project(p)) => match p.steps.last() {
                Some(s) => Stream {
                    stdout: &s.stdout,
                    stderr: &s.stderr,
                    exit_code: s.exit_code,
                    timed_out: s.timed_out || p.outcome == ProjectOutcome::TimedOut,
                    stdout_truncated: s.stdout_truncated,
                    stderr_truncated: s.stderr_truncated,
                },
                None => Stream {
                    timed_out: p.outcome == ProjectOutcome::TimedOut,
                    ..Stream::default()
                },
            },
            Some(Output::Module(m)) => Stream {
                stdout: &m.stdout,
                stderr: &m.stderr,
                timed_out: m.outcome == ProjectOutcome::TimedOut,
                ..Stream::default()
            },
            None => Stream::default(),
        }
    }

    fn outcome(&self) -> ProjectOutcome {
        match &self.resp.output {
            Some(Output::Project(p)) => p.outcome,
            Some(Output::Module(m)) => m.outcome,
            _ => ProjectOutcome::Unspecified,
        }
    }
}

#[derive(Default)]
struct Stream<'a> {
    stdout: &'a [u8],
    stderr: &'a [u8],
    exit_code: i32,
    timed_out: bool,
    stdout_truncated: bool,
    stderr_truncated: bool,
}

/// Reads a field of a live response, or gives `fallback` for NULL or a panic.
///
/// # Safety
/// `r` is NULL or a live response.
unsafe fn read<T>(
    r: *const PlimsollResponse,
    fallback: T,
    f: impl FnOnce(&PlimsollResponse) -> T,
) -> T
where
    T: Copy,
{
    getter(fallback, || {
        // SAFETY: NULL or a live response, per the caller's contract.
        unsafe { r.as_ref() }.map_or(fallback, f)
    })
}

/// The whole answer as the wire's `RunResponse` JSON (ProtoJSON: bytes in
/// base64, 64-bit integers as strings). Owned by the response; `""` for NULL.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_json(
    response: *const PlimsollResponse,
) -> *const c_char {
    // SAFETY: forwarded contract.
    unsafe { read(response, empty(), |r| r.json.as_ptr()) }
}

/// The request as it was sent and as its record digests it, as the wire's
/// `RunRequest` JSON (in a session, with the session's floor and rule
/// applied). Owned by the response. Keep it with `plimsoll_response_json` to
/// verify the record later with `plimsoll_verify_record`.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_request_json(
    response: *const PlimsollResponse,
) -> *const c_char {
    // SAFETY: forwarded contract.
    unsafe { read(response, empty(), |r| r.request_json.as_ptr()) }
}

/// The result's kind: `"javascript"`, `"project"`, `"module"`, `"cell"`; `""` for NULL. Static.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_kind(
    response: *const PlimsollResponse,
) -> *const c_char {
    // SAFETY: forwarded contract.
    unsafe {
        read(response, empty(), |r| match &r.resp.output {
            Some(Output::JavaScript(_)) => c"javascript".as_ptr(),
            Some(Output::Project(_)) => c"project".as_ptr(),
            Some(Output::Module(_)) => c"module".as_ptr(),
            Some(Output::Cell(_)) => c"cell".as_ptr(),
            None => empty(),
        })
    }
}

/// The provider that ran it (`"wasm"`, `"docker"`, …). Owned by the response.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_sandbox(
    response: *const PlimsollResponse,
) -> *const c_char {
    // SAFETY: forwarded contract.
    unsafe { read(response, empty(), |r| r.sandbox.as_ptr()) }
}

/// The tier that ran it (`"process"`, `"container"`, `"kernel"`, `"vm"`):
/// configuration plus startup proof, never attestation. Owned by the response.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_isolation(
    response: *const PlimsollResponse,
) -> *const c_char {
    // SAFETY: forwarded contract.
    unsafe { read(response, empty(), |r| r.isolation.as_ptr()) }
}

/// The software identity that ran it, or `""`. Owned by the response.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_software_identity(
    response: *const PlimsollResponse,
) -> *const c_char {
    // SAFETY: forwarded contract.
    unsafe { read(response, empty(), |r| r.software_identity.as_ptr()) }
}

/// Wall time in milliseconds (not digested).
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_duration_ms(response: *const PlimsollResponse) -> i64 {
    // SAFETY: forwarded contract.
    unsafe { read(response, 0, |r| r.resp.duration_ms) }
}

/// The run record as JSON (camelCase fields, as on the wire). Owned by the
/// response; NULL when the answer carried none (never for a verified answer).
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_record_json(
    response: *const PlimsollResponse,
) -> *const c_char {
    // SAFETY: forwarded contract.
    unsafe {
        read(response, std::ptr::null(), |r| {
            r.record_json
                .as_ref()
                .map_or(std::ptr::null(), |s| s.as_ptr())
        })
    }
}

/// The record's own digest (`recordSha256`, lowercase hex). Owned by the response.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_record_sha256(
    response: *const PlimsollResponse,
) -> *const c_char {
    // SAFETY: forwarded contract.
    unsafe { read(response, empty(), |r| r.record_sha256.as_ptr()) }
}

/// The call's place in its session's chain (1-based); 0 for a single run.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_record_sequence(
    response: *const PlimsollResponse,
) -> u64 {
    // SAFETY: forwarded contract.
    unsafe {
        read(response, 0, |r| {
            r.resp.record.as_ref().map_or(0, |x| x.sequence)
        })
    }
}

/// Standard output as kept: the snippet's, the cell's, the module's, or a
/// project's last step's. Points into the response.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_stdout(
    response: *const PlimsollResponse,
) -> PlimsollSlice {
    // SAFETY: forwarded contract.
    unsafe {
        read(response, PlimsollSlice::EMPTY, |r| {
            PlimsollSlice::of(r.stream().stdout)
        })
    }
}

/// Standard error as kept (same sources as stdout). Points into the response.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_stderr(
    response: *const PlimsollResponse,
) -> PlimsollSlice {
    // SAFETY: forwarded contract.
    unsafe {
        read(response, PlimsollSlice::EMPTY, |r| {
            PlimsollSlice::of(r.stream().stderr)
        })
    }
}

/// The exit code (a snippet's, a cell's, or a project's last step's; 124
/// when a deadline ended it). 0 for a module.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_exit_code(response: *const PlimsollResponse) -> i32 {
    // SAFETY: forwarded contract.
    unsafe { read(response, 0, |r| r.stream().exit_code) }
}

/// Whether a deadline ended it (for a project: the last step, or the outcome).
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_timed_out(response: *const PlimsollResponse) -> bool {
    // SAFETY: forwarded contract.
    unsafe { read(response, false, |r| r.stream().timed_out) }
}

/// Whether standard output was cut at the cap (nothing is written into it to say so).
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_stdout_truncated(
    response: *const PlimsollResponse,
) -> bool {
    // SAFETY: forwarded contract.
    unsafe { read(response, false, |r| r.stream().stdout_truncated) }
}

/// Whether standard error was cut at the cap.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_stderr_truncated(
    response: *const PlimsollResponse,
) -> bool {
    // SAFETY: forwarded contract.
    unsafe { read(response, false, |r| r.stream().stderr_truncated) }
}

/// A cell began with a fresh interpreter: nothing defined earlier exists.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_interpreter_started(
    response: *const PlimsollResponse,
) -> bool {
    // SAFETY: forwarded contract.
    unsafe {
        read(
            response,
            false,
            |r| matches!(&r.resp.output, Some(Output::Cell(c)) if c.interpreter_started),
        )
    }
}

/// A cell's interpreter ended during or after the call.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_interpreter_ended(
    response: *const PlimsollResponse,
) -> bool {
    // SAFETY: forwarded contract.
    unsafe {
        read(
            response,
            false,
            |r| matches!(&r.resp.output, Some(Output::Cell(c)) if c.interpreter_ended),
        )
    }
}

/// How a project or module concluded, as the wire number: 0 unspecified (any
/// other kind), 1 completed (a failing step still completes), 2 setup failed,
/// 3 timed out, 4 protocol error, 5 runner failed.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_outcome(response: *const PlimsollResponse) -> u32 {
    // SAFETY: forwarded contract.
    unsafe { read(response, 0, |r| r.outcome().number() as u32) }
}

/// The outcome's name (`"completed"`, `"setup_failed"`, …; `"unspecified"`). Static.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_outcome_name(
    response: *const PlimsollResponse,
) -> *const c_char {
    // SAFETY: forwarded contract.
    unsafe {
        read(response, empty(), |r| {
            match r.outcome() {
                ProjectOutcome::Unspecified => c"unspecified",
                ProjectOutcome::Completed => c"completed",
                ProjectOutcome::SetupFailed => c"setup_failed",
                ProjectOutcome::TimedOut => c"timed_out",
                ProjectOutcome::ProtocolError => c"protocol_error",
                ProjectOutcome::RunnerFailed => c"runner_failed",
            }
            .as_ptr()
        })
    }
}

/// Human context for a project's or module's outcome, or `""`. Owned by the response.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_outcome_detail(
    response: *const PlimsollResponse,
) -> *const c_char {
    // SAFETY: forwarded contract.
    unsafe { read(response, empty(), |r| r.outcome_detail.as_ptr()) }
}

/// How many project steps ran (0 for any other kind).
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_step_count(response: *const PlimsollResponse) -> usize {
    // SAFETY: forwarded contract.
    unsafe { read(response, 0, |r| r.steps.len()) }
}

/// How many artifacts a project collected.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_artifact_count(
    response: *const PlimsollResponse,
) -> usize {
    // SAFETY: forwarded contract.
    unsafe { read(response, 0, |r| r.artifacts.len()) }
}

/// Whether some artifacts were dropped at the cap.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_artifacts_truncated(
    response: *const PlimsollResponse,
) -> bool {
    // SAFETY: forwarded contract.
    unsafe {
        read(
            response,
            false,
            |r| matches!(&r.resp.output, Some(Output::Project(p)) if p.artifacts_truncated),
        )
    }
}

/// For a session call: the session's end if it ended during or after this
/// call (the wire's `SessionEnd` number, see `plimsoll_error_session_end`); 0 while open.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_session_ended(response: *const PlimsollResponse) -> u32 {
    // SAFETY: forwarded contract.
    unsafe { read(response, 0, |r| r.ended.number()) }
}

/// Step `index`'s command as sent. Owned by the response. Out of range, or not a project: the fallback.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_step_command(
    response: *const PlimsollResponse,
    index: usize,
) -> *const c_char {
    // SAFETY: forwarded contract.
    unsafe {
        read(response, empty(), |r| {
            r.steps.get(index).map_or(empty(), |c| c.as_ptr())
        })
    }
}

/// Step `index`'s exit code (124 on a deadline). Out of range, or not a project: the fallback.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_step_exit_code(
    response: *const PlimsollResponse,
    index: usize,
) -> i32 {
    // SAFETY: forwarded contract.
    unsafe { read(response, 0, |r| r.step(index).map_or(0, |s| s.exit_code)) }
}

/// Whether a deadline ended step `index`. Out of range, or not a project: the fallback.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_step_timed_out(
    response: *const PlimsollResponse,
    index: usize,
) -> bool {
    // SAFETY: forwarded contract.
    unsafe {
        read(response, false, |r| {
            r.step(index).is_some_and(|s| s.timed_out)
        })
    }
}

/// Step `index`'s wall time, ms. Out of range, or not a project: the fallback.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_step_duration_ms(
    response: *const PlimsollResponse,
    index: usize,
) -> i64 {
    // SAFETY: forwarded contract.
    unsafe { read(response, 0, |r| r.step(index).map_or(0, |s| s.duration_ms)) }
}

/// Step `index`'s standard output as kept. Points into the response. Out of range, or not a project: the fallback.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_step_stdout(
    response: *const PlimsollResponse,
    index: usize,
) -> PlimsollSlice {
    // SAFETY: forwarded contract.
    unsafe {
        read(response, PlimsollSlice::EMPTY, |r| {
            r.step(index)
                .map_or(PlimsollSlice::EMPTY, |s| PlimsollSlice::of(&s.stdout))
        })
    }
}

/// Step `index`'s standard error as kept. Points into the response. Out of range, or not a project: the fallback.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_step_stderr(
    response: *const PlimsollResponse,
    index: usize,
) -> PlimsollSlice {
    // SAFETY: forwarded contract.
    unsafe {
        read(response, PlimsollSlice::EMPTY, |r| {
            r.step(index)
                .map_or(PlimsollSlice::EMPTY, |s| PlimsollSlice::of(&s.stderr))
        })
    }
}

/// Whether step `index`'s standard output was cut at the cap. Out of range, or not a project: the fallback.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_step_stdout_truncated(
    response: *const PlimsollResponse,
    index: usize,
) -> bool {
    // SAFETY: forwarded contract.
    unsafe {
        read(response, false, |r| {
            r.step(index).is_some_and(|s| s.stdout_truncated)
        })
    }
}

/// Whether step `index`'s standard error was cut at the cap. Out of range, or not a project: the fallback.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_step_stderr_truncated(
    response: *const PlimsollResponse,
    index: usize,
) -> bool {
    // SAFETY: forwarded contract.
    unsafe {
        read(response, false, |r| {
            r.step(index).is_some_and(|s| s.stderr_truncated)
        })
    }
}

/// Artifact `index`'s requested path. Owned by the response. Out of range, or not a project: the fallback.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_artifact_path(
    response: *const PlimsollResponse,
    index: usize,
) -> *const c_char {
    // SAFETY: forwarded contract.
    unsafe {
        read(response, empty(), |r| {
            r.artifacts.get(index).map_or(empty(), |c| c.as_ptr())
        })
    }
}

/// Artifact `index`'s bytes. Points into the response. Out of range, or not a project: the fallback.
///
/// Thread-safety: may be called from several threads at once on one response.
///
/// # Safety
/// `response` is NULL or a live response.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_response_artifact_content(
    response: *const PlimsollResponse,
    index: usize,
) -> PlimsollSlice {
    // SAFETY: forwarded contract.
    unsafe {
        read(response, PlimsollSlice::EMPTY, |r| {
            r.artifact(index)
                .map_or(PlimsollSlice::EMPTY, |a| PlimsollSlice::of(&a.content))
        })
    }
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
