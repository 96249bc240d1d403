//! Verifying kept records: a single run's, or a session's chain, from the
//! request and response JSON. One implementation ([`crate::verify`]) serves
//! every language.

use std::ffi::{CString, c_char};

use super::{
    FfiResult, PlimsollError, PlimsollStatus, arg, arg_mut, c_string, empty, fallible, free_box,
    getter, out_ok, put, text,
};
use crate::request::Request;
use crate::verify::{Chain, check_single, request_from_json, response_from_json};
use crate::wire::RunResponse;

fn parse_pair(request_json: String, response_json: String) -> FfiResult<(Request, RunResponse)> {
    Ok((
        request_from_json(request_json.as_bytes())?,
        response_from_json(response_json.as_bytes())?,
    ))
}

/// Verifies a single run's answer against the request that was sent, both as
/// the wire's JSON (a response's `request_json` and `response_json` fields
/// give them): the record is present, bound to this request and this result,
/// its evidence equals the answer's, its digest holds, and the tier meets the
/// floor. `PLIMSOLL_STATUS_OK` when it holds; `PLIMSOLL_STATUS_RECORD_MISMATCH`
/// (or `…_ISOLATION_EVIDENCE_MISMATCH`) when it does not;
/// `PLIMSOLL_STATUS_INVALID_REQUEST` for request JSON that does not parse and
/// `PLIMSOLL_STATUS_TRANSPORT` for an answer that does not (a malformed answer,
/// as in every language).
///
/// It checks what the record says about itself and the answer; it does not
/// prove which machine ran the code (a tier is never attestation).
///
/// Thread-safety: may be called from any thread.
///
/// # Safety
/// `request_json` and `response_json` are NULL or NUL-terminated strings;
/// `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_verify_record(
    request_json: *const c_char,
    response_json: *const c_char,
    error_out: *mut *mut PlimsollError,
) -> PlimsollStatus {
    fallible(error_out, || {
        // SAFETY: the caller's contract.
        let (a, b) = unsafe {
            (
                text(request_json, "request_json")?,
                text(response_json, "response_json")?,
            )
        };
        let (request, response) = parse_pair(a, b)?;
        Ok(check_single(&request, &response)?)
    })
}

/// A session's chain as a verifier has seen it: every call's record must name
/// the session, continue the sequence and name the previous record.
///
/// Thread-safety: not synchronised; use one chain from one thread at a time.
pub struct PlimsollChain {
    chain: Chain,
    last: CString,
}

/// Starts a chain for the session with `fingerprint` (`plimsoll_session_fingerprint`,
/// or any record's `session` field).
///
/// Thread-safety: may be called from any thread.
///
/// # Safety
/// `fingerprint` is NULL or a NUL-terminated string; `chain_out` and
/// `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_chain_new(
    fingerprint: *const c_char,
    chain_out: *mut *mut PlimsollChain,
    error_out: *mut *mut PlimsollError,
) -> PlimsollStatus {
    fallible(error_out, || {
        out_ok(chain_out, "chain_out")?;
        // SAFETY: the caller's contract.
        let fp = unsafe { text(fingerprint, "fingerprint")? };
        let chain = PlimsollChain {
            chain: Chain::from_fingerprint(fp),
            last: CString::default(),
        };
        // SAFETY: checked above.
        unsafe { put(chain_out, chain) };
        Ok(())
    })
}

/// Checks the next answered call of the session (request and response JSON,
/// as for `plimsoll_verify_record`) and, only if it holds, advances the chain.
///
/// Thread-safety: no other thread may use `chain` during the call.
///
/// # Safety
/// `chain` is NULL or live; `request_json` and `response_json` are NULL or
/// NUL-terminated strings; `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_chain_check_call(
    chain: *mut PlimsollChain,
    request_json: *const c_char,
    response_json: *const c_char,
    error_out: *mut *mut PlimsollError,
) -> PlimsollStatus {
    fallible(error_out, || {
        // SAFETY: the caller's contract.
        let (chain, a, b) = unsafe {
            (
                arg_mut(chain, "chain")?,
                text(request_json, "request_json")?,
                text(response_json, "response_json")?,
            )
        };
        let (request, response) = parse_pair(a, b)?;
        chain.chain.check_call(&request, &response)?;
        chain.last = c_string(chain.chain.last());
        Ok(())
    })
}

/// Checks a close summary (the session fingerprint, the call count and the
/// last record digest) against the calls the chain has seen.
///
/// Thread-safety: may be called from several threads at once on one chain.
///
/// # Safety
/// `chain` is NULL or live; `session` and `last_record_sha256` are NULL or
/// NUL-terminated strings; `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_chain_check_close(
    chain: *const PlimsollChain,
    session: *const c_char,
    calls: u64,
    last_record_sha256: *const c_char,
    error_out: *mut *mut PlimsollError,
) -> PlimsollStatus {
    fallible(error_out, || {
        // SAFETY: the caller's contract.
        let (chain, session, last) = unsafe {
            (
                arg(chain, "chain")?,
                text(session, "session")?,
                text(last_record_sha256, "last_record_sha256")?,
            )
        };
        Ok(chain.chain.check_close(&session, calls, &last)?)
    })
}

/// Calls the chain has accepted so far.
///
/// Thread-safety: may be called from several threads at once on one chain.
///
/// # Safety
/// `chain` is NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_chain_calls(chain: *const PlimsollChain) -> u64 {
    getter(0, || {
        // SAFETY: NULL or live, per the contract.
        unsafe { chain.as_ref() }.map_or(0, |c| c.chain.calls())
    })
}

/// The last accepted record's digest, or `""`. Owned by the chain and valid
/// until its next check or free.
///
/// Thread-safety: may be called from several threads at once on one chain.
///
/// # Safety
/// `chain` is NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_chain_last(chain: *const PlimsollChain) -> *const c_char {
    getter(empty(), || {
        // SAFETY: NULL or live, per the contract.
        unsafe { chain.as_ref() }.map_or(empty(), |c| c.last.as_ptr())
    })
}

/// Frees a chain. NULL is a no-op.
///
/// Thread-safety: no other thread may use `chain` during or after the call.
///
/// # Safety
/// `chain` is NULL or came from `plimsoll_chain_new` and was not freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_chain_free(chain: *mut PlimsollChain) {
    // SAFETY: forwarded contract.
    unsafe { free_box(chain) }
}
