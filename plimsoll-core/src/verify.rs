//! Checking records and chains, as every client does on every answer.
//!
//! One implementation serves the remote client, the bindings and the tests, so
//! every language agrees by construction. A failure is
//! [`ErrorCode::RecordMismatch`] (or [`ErrorCode::IsolationEvidenceMismatch`]
//! for a tier below the floor sent): the call may have run.

use crate::digest::{request_digest, result_digest, rule_id};
use crate::error::{Error, ErrorCode, Result};
use crate::record::{
    RECORD_VERSION, RunRecord, record_digest, session_fingerprint, valid_instance,
};
use crate::request::Request;
use crate::tier::{Floor, Isolation};
use crate::wire::{Evidence, RunResponse};

fn mismatch(what: &str) -> Error {
    Error::new(
        ErrorCode::RecordMismatch,
        format!("the run record does not match the answer: {what}"),
    )
}

/// Checks what a record claims about itself and the evidence it must equal.
fn check_record_fields(request: &Request, record: &RunRecord, evidence: &Evidence) -> Result<()> {
    if record.version != RECORD_VERSION {
        return Err(mismatch(&format!(
            "record version {} (want {RECORD_VERSION})",
            record.version
        )));
    }
    if record.request_sha256 != request_digest(&request.envelope, Some(&request.payload)) {
        return Err(mismatch("request digest"));
    }
    if record.provider != evidence.sandbox || record.isolation != evidence.isolation {
        return Err(mismatch("provider or isolation"));
    }
    if record.environment != evidence.environment {
        return Err(mismatch("environment"));
    }
    if record.instance != evidence.instance || !valid_instance(&record.instance) {
        return Err(mismatch("instance"));
    }
    if record.software_identity != evidence.software_identity {
        return Err(mismatch("software identity"));
    }
    let rule = request.envelope.software_rule.as_ref();
    if record.software_rule_id != rule_id(rule) {
        return Err(mismatch("software rule id"));
    }
    if let Some(rule) = rule
        && !rule.allows(&record.software_identity)
    {
        return Err(mismatch("software identity outside the rule sent"));
    }
    if record_digest(record).as_deref() != Some(record.record_sha256.as_str()) {
        return Err(mismatch("record digest"));
    }
    Ok(())
}

/// Checks an answered call: record present, answered, bound to this request and
/// this result, evidence equal; then the result's kind and the floor.
fn check_answered<'a>(request: &Request, response: &'a RunResponse) -> Result<&'a RunRecord> {
    let record = response
        .record
        .as_ref()
        .ok_or_else(|| mismatch("no record"))?;
    if !record.unanswered.is_empty() {
        return Err(mismatch("an answered call carries an unanswered record"));
    }
    check_record_fields(request, record, &response.evidence)?;
    if record.result_sha256 != result_digest(response.output.as_ref()) {
        return Err(mismatch("result digest"));
    }
    match &response.output {
        Some(o) if o.kind() == request.payload.kind() => {}
        _ => return Err(mismatch("the result is not of the request's kind")),
    }
    check_floor(request, &response.evidence.isolation)?;
    Ok(record)
}

fn check_floor(request: &Request, isolation: &str) -> Result<()> {
    let floor = Floor::parse(&request.envelope.minimum_isolation).unwrap_or(Floor::NONE);
    let meets = match isolation.parse::<Isolation>() {
        Ok(t) => t.meets(floor),
        Err(_) => floor.tier().is_none(),
    };
    if meets {
        Ok(())
    } else {
        Err(Error::new(
            ErrorCode::IsolationEvidenceMismatch,
            format!(
                "the answer's tier {isolation:?} does not meet the floor {:?}",
                floor.as_str()
            ),
        ))
    }
}

/// A kept request read from its wire JSON (the `RunRequest` an answer's
/// `request_json` holds; a session id in it is dropped). JSON that does not
/// parse is an invalid request. Every language's verifier reads it here.
pub fn request_from_json(json: &[u8]) -> Result<Request> {
    let mut wire: crate::wire::RunRequest = crate::wire::json::decode(json)
        .map_err(|e| Error::invalid(format!("malformed request: {e}")))?;
    wire.session_id.clear();
    wire.into_request()
}

/// A kept answer read from its wire JSON. JSON that does not parse is a
/// malformed answer: a transport error, as the published client's
/// `MalformedResponseError` is, in every language.
pub fn response_from_json(json: &[u8]) -> Result<RunResponse> {
    crate::wire::json::decode(json)
        .map_err(|e| Error::new(ErrorCode::Transport, format!("malformed answer: {e}")))
}

/// Checks a single run's answer against the request that was sent.
pub fn check_single(request: &Request, response: &RunResponse) -> Result<()> {
    let record = check_answered(request, response)?;
    if !record.session.is_empty() || record.sequence != 0 || !record.previous_sha256.is_empty() {
        return Err(mismatch("a single run's record carries session fields"));
    }
    Ok(())
}

/// A session's chain as a client has seen it: every call's record must name the
/// session, continue the sequence and name the previous record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chain {
    fingerprint: String,
    calls: u64,
    last: String,
}

impl Chain {
    /// A fresh chain for a session id.
    pub fn new(session_id: &str) -> Chain {
        Chain::from_fingerprint(session_fingerprint(session_id))
    }

    /// A fresh chain for a session fingerprint.
    pub fn from_fingerprint(fingerprint: String) -> Chain {
        Chain {
            fingerprint,
            calls: 0,
            last: String::new(),
        }
    }

    /// The session fingerprint.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Calls seen so far.
    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// The last record digest seen, or empty.
    pub fn last(&self) -> &str {
        &self.last
    }

    fn check_links(&self, record: &RunRecord) -> Result<()> {
        if record.session != self.fingerprint {
            return Err(mismatch("the record names another session"));
        }
        if record.sequence != self.calls + 1 || record.previous_sha256 != self.last {
            return Err(mismatch(
                "the chain is broken (a call is missing, reordered or foreign)",
            ));
        }
        Ok(())
    }

    fn advance(&mut self, record: &RunRecord) {
        self.calls = record.sequence;
        self.last = record.record_sha256.clone();
    }

    /// Checks an answered session call and, only if it holds, advances the chain.
    pub fn check_call(&mut self, request: &Request, response: &RunResponse) -> Result<()> {
        let record = check_answered(request, response)?;
        self.check_links(record)?;
        self.advance(record);
        Ok(())
    }

    /// Checks the record of a session call that may have run but failed, against
    /// the evidence the session stated at open; advances the chain if it holds.
    pub fn check_unanswered(
        &mut self,
        request: &Request,
        record: &RunRecord,
        opened: &Evidence,
    ) -> Result<()> {
        if record.unanswered.is_empty() || !record.result_sha256.is_empty() {
            return Err(mismatch("not an unanswered record"));
        }
        let evidence = Evidence {
            environment: record.environment.clone(),
            instance: record.instance.clone(),
            ..opened.clone()
        };
        check_record_fields(request, record, &evidence)?;
        self.check_links(record)?;
        check_floor(request, &record.isolation)?;
        self.advance(record);
        Ok(())
    }

    /// Checks CloseSession's summary against the chain seen.
    pub fn check_close(&self, session: &str, calls: u64, last_record_sha256: &str) -> Result<()> {
        if session != self.fingerprint || calls != self.calls || last_record_sha256 != self.last {
            return Err(mismatch("the close summary does not match the calls seen"));
        }
        Ok(())
    }
}
