//! Record and chain verification over the core's `verify` module, for answers
//! held as plimsoll.v1 JSON (a result's `requestJson` and `responseJson`, or
//! bytes captured elsewhere).

use napi::bindgen_prelude::*;
use plimsoll_core::request::Request;
use plimsoll_core::verify;
use plimsoll_core::wire::RunResponse;

use crate::errors;
use crate::results::{Js, record as js_record};

fn parse(env: &Env, request: &str, response: &str) -> Result<(Request, RunResponse)> {
    verify::request_from_json(request.as_bytes())
        .and_then(|req| Ok((req, verify::response_from_json(response.as_bytes())?)))
        .map_err(|e| errors::to_js(env, &e))
}

fn record(resp: &RunResponse) -> Result<Js> {
    resp.record
        .as_ref()
        .map(js_record)
        .ok_or_else(|| Error::new(Status::GenericFailure, "verified answer without a record"))
}

/// Checks a single run's answer against the request sent (the core's
/// `verify.check_single`) and returns its record. Throws `record_mismatch`,
/// `isolation_evidence_mismatch`, or `transport` for unreadable JSON.
#[napi(ts_return_type = "RunRecord")]
pub fn verify_run(env: Env, request_json: String, response_json: String) -> Result<Js> {
    let (req, resp) = parse(&env, &request_json, &response_json)?;
    verify::check_single(&req, &resp).map_err(|e| errors::to_js(&env, &e))?;
    record(&resp)
}

/// A session's chain as a client has seen it (the core's `verify.Chain`).
#[napi]
pub struct Chain {
    chain: verify::Chain,
}

#[napi]
impl Chain {
    /// A fresh chain for a session fingerprint (`session.fingerprint`).
    #[napi(constructor)]
    pub fn new(fingerprint: String) -> Chain {
        Chain {
            chain: verify::Chain::from_fingerprint(fingerprint),
        }
    }

    /// The session fingerprint.
    #[napi(getter)]
    pub fn fingerprint(&self) -> String {
        self.chain.fingerprint().to_owned()
    }

    /// Calls seen so far.
    #[napi(getter)]
    pub fn calls(&self) -> i64 {
        i64::try_from(self.chain.calls()).unwrap_or(i64::MAX)
    }

    /// The last record digest seen, or empty.
    #[napi(getter)]
    pub fn last(&self) -> String {
        self.chain.last().to_owned()
    }

    /// Checks an answered session call and, only if it holds, advances the chain.
    #[napi(ts_return_type = "RunRecord")]
    pub fn check_call(
        &mut self,
        env: Env,
        request_json: String,
        response_json: String,
    ) -> Result<Js> {
        let (req, resp) = parse(&env, &request_json, &response_json)?;
        self.chain
            .check_call(&req, &resp)
            .map_err(|e| errors::to_js(&env, &e))?;
        record(&resp)
    }

    /// Checks a close summary against the chain seen.
    #[napi]
    pub fn check_close(
        &self,
        env: Env,
        session: String,
        calls: i64,
        last_record_sha256: String,
    ) -> Result<()> {
        let calls = u64::try_from(calls).unwrap_or(u64::MAX);
        self.chain
            .check_close(&session, calls, &last_record_sha256)
            .map_err(|e| errors::to_js(&env, &e))
    }
}
