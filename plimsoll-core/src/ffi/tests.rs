//! The C ABI driven from Rust: status numbering, the panic boundary, and a
//! whole session over an in-memory provider (the C and Go suites run against
//! the disabled and wasm providers, which keep no sessions, and check the
//! refusal).

use std::ffi::{CStr, CString, c_char};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::client::client_over;
use super::*;
use crate::config::Config;
use crate::error::{ErrorCode, Result, SessionEnded};
use crate::provider::{Capabilities, Environment, Environments, Provider, RunContext};
use crate::request::{CellRun, JavaScriptRun, ProjectRun};
use crate::result::{CellResult, JavaScriptResult, ProjectResult};
use crate::session::{SandboxSpec, SessionSandbox, SessionSettings};
use crate::tier::Isolation;

/// Echoes a snippet's code as its stdout; a session's cells see earlier cells.
struct Echo;

struct EchoSandbox {
    cells: Mutex<Vec<String>>,
}

fn env() -> Environment {
    Environment {
        software_identity: "echo:1".into(),
        default_timeout_ms: 5000,
        max_timeout_ms: 30000,
        ..Default::default()
    }
}

#[async_trait]
impl SessionSandbox for EchoSandbox {
    async fn check(&self) -> std::result::Result<(), SessionEnded> {
        Ok(())
    }
    async fn run_javascript(
        &self,
        job: &JavaScriptRun,
        _: &RunContext,
    ) -> Result<JavaScriptResult> {
        Ok(JavaScriptResult {
            stdout: job.code.clone().into_bytes(),
            ..Default::default()
        })
    }
    async fn run_project(&self, _: &ProjectRun, _: &RunContext) -> Result<ProjectResult> {
        Ok(ProjectResult::default())
    }
    async fn run_cell(&self, job: &CellRun, _: &RunContext) -> Result<CellResult> {
        let mut cells = self.cells.lock().unwrap();
        let started = cells.is_empty();
        cells.push(job.code.clone());
        Ok(CellResult {
            stdout: cells.join(",").into_bytes(),
            interpreter_started: started,
            ..Default::default()
        })
    }
    async fn cleanup(&self) -> std::result::Result<(), SessionEnded> {
        Ok(())
    }
    async fn suspend(&self) -> Result<bool> {
        Ok(true)
    }
    async fn resume(&self) -> Result<()> {
        Ok(())
    }
    async fn close(&self) {}
}

#[async_trait]
impl Provider for Echo {
    fn name(&self) -> &'static str {
        "echo"
    }
    fn isolation(&self) -> Isolation {
        Isolation::Container
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            sessions: true,
            ..Default::default()
        }
    }
    fn environments(&self) -> Environments {
        Environments {
            javascript: Some(env()),
            session: Some(env()),
            ..Default::default()
        }
    }
    async fn prove(&self) -> Result<Isolation> {
        Ok(Isolation::Container)
    }
    async fn run_javascript(
        &self,
        job: &JavaScriptRun,
        _: &RunContext,
    ) -> Result<JavaScriptResult> {
        Ok(JavaScriptResult {
            stdout: job.code.clone().into_bytes(),
            exit_code: 2,
            ..Default::default()
        })
    }
    async fn open_session(&self, _: &SandboxSpec) -> Result<Box<dyn SessionSandbox>> {
        Ok(Box::new(EchoSandbox {
            cells: Mutex::default(),
        }))
    }
}

fn echo_client() -> *mut PlimsollClient {
    let config = Config {
        sessions: SessionSettings {
            max_sessions: 2,
            ..SessionSettings::default()
        },
        instance: "plimsoll:ffi-test".into(),
        ..Config::default()
    };
    Box::into_raw(Box::new(client_over(Arc::new(Echo), &config)))
}

fn s(p: *const c_char) -> String {
    assert!(!p.is_null());
    // SAFETY: every pointer read here came from a live handle's getter.
    unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_owned()
}

fn bytes(sl: PlimsollSlice) -> Vec<u8> {
    if sl.len == 0 {
        return Vec::new();
    }
    // SAFETY: a slice from a live response's getter.
    unsafe { std::slice::from_raw_parts(sl.data, sl.len) }.to_vec()
}

/// The field at `path` of a live response (read through `plimsoll_response_get`).
fn get(r: *const PlimsollResponse, path: &str) -> PlimsollValue {
    let p = CString::new(path).unwrap();
    let mut v = PlimsollValue::of(PlimsollValueKind::None);
    // SAFETY: a live response, a NUL-terminated path and a writable value.
    let st = unsafe { plimsoll_response_get(r, p.as_ptr(), &mut v, std::ptr::null_mut()) };
    assert_eq!(st, PlimsollStatus::Ok, "{path}");
    v
}

fn request(code: &str) -> *mut PlimsollRequest {
    let code = CString::new(code).unwrap();
    let mut r = std::ptr::null_mut();
    // SAFETY: valid string and out-pointer.
    let st =
        unsafe { plimsoll_request_new_javascript(code.as_ptr(), &mut r, std::ptr::null_mut()) };
    assert_eq!(st, PlimsollStatus::Ok);
    r
}

#[test]
fn statuses_carry_the_error_codes_numbers_and_names() {
    for code in ErrorCode::ALL {
        let st = PlimsollStatus::from_code(code);
        assert_eq!(st.number(), code.number());
        assert_eq!(st.name().to_str().unwrap(), code.as_str());
        assert_eq!(s(plimsoll_status_name(code.number())), code.as_str());
    }
    for (i, st) in PlimsollStatus::ALL.iter().enumerate() {
        assert_eq!(PlimsollStatus::from_number(st.number()), Some(*st));
        assert!(
            PlimsollStatus::ALL[..i]
                .iter()
                .all(|o| o.name() != st.name())
        );
    }
    assert_eq!(s(plimsoll_status_name(99)), "unknown");
}

#[test]
fn a_panic_becomes_a_status_and_the_call_may_have_run() {
    let mut err: *mut PlimsollError = std::ptr::null_mut();
    let st = fallible(&mut err, || panic!("boom"));
    assert_eq!(st, PlimsollStatus::Panic);
    // SAFETY: `err` was just written by `fallible`.
    unsafe {
        assert_eq!(plimsoll_error_status(err), PlimsollStatus::Panic);
        assert_eq!(plimsoll_error_not_dispatched(err), 0);
        assert!(s(plimsoll_error_message(err)).contains("panicked"));
        plimsoll_error_free(err);
    }
    assert_eq!(getter(7, || panic!("boom")), 7);
}

#[test]
fn a_single_run_is_verified_and_its_record_checks_out() {
    let client = echo_client();
    let req = request("hello");
    let mut resp = std::ptr::null_mut();
    // SAFETY: live handles and valid out-pointers throughout.
    unsafe {
        let st = plimsoll_client_run(
            client,
            req,
            std::ptr::null(),
            &mut resp,
            std::ptr::null_mut(),
        );
        assert_eq!(st, PlimsollStatus::Ok);
        assert_eq!(bytes(get(resp, "stdout").bytes), b"hello");
        assert_eq!(get(resp, "exit_code").integer, 2);
        assert_eq!(s(get(resp, "isolation").text), "container");
        let req_json = get(resp, "request_json").text;
        let json = get(resp, "response_json").text;
        assert_eq!(s(req_json), s(plimsoll_request_json(req)));
        assert_eq!(
            plimsoll_verify_record(req_json, json, std::ptr::null_mut()),
            PlimsollStatus::Ok
        );
        let tampered = CString::new(s(json).replace("\"exitCode\":2", "\"exitCode\":0")).unwrap();
        assert_eq!(
            plimsoll_verify_record(req_json, tampered.as_ptr(), std::ptr::null_mut()),
            PlimsollStatus::RecordMismatch
        );
        plimsoll_response_free(resp);
        plimsoll_request_free(req);
        plimsoll_client_free(client);
    }
}

#[test]
fn a_session_chains_its_calls_and_closes_with_a_checked_summary() {
    let client = echo_client();
    let null_err = std::ptr::null_mut();
    // SAFETY: live handles and valid out-pointers throughout.
    unsafe {
        let opts = CString::new(
            r#"{"minimumIsolation":"container","softwareRule":{"mode":"exact","identities":["echo:1"]}}"#,
        )
        .unwrap();
        let mut session = std::ptr::null_mut();
        let st = plimsoll_client_open_session(client, opts.as_ptr(), &mut session, null_err);
        assert_eq!(st, PlimsollStatus::Ok);
        let fp = s(plimsoll_session_fingerprint(session));
        assert_eq!(fp.len(), 64);
        assert_eq!(s(plimsoll_session_isolation(session)), "container");

        let mut chain = std::ptr::null_mut();
        let fp_c = CString::new(fp.clone()).unwrap();
        assert_eq!(
            plimsoll_chain_new(fp_c.as_ptr(), &mut chain, null_err),
            PlimsollStatus::Ok
        );

        let snippet = request("one");
        let (lang, code_a, code_b) = (c"python", c"a=1", c"b=2");
        let mut cell_a = std::ptr::null_mut();
        let mut cell_b = std::ptr::null_mut();
        plimsoll_request_new_cell(lang.as_ptr(), code_a.as_ptr(), &mut cell_a, null_err);
        plimsoll_request_new_cell(lang.as_ptr(), code_b.as_ptr(), &mut cell_b, null_err);
        let mut last = String::new();
        for (i, req) in [snippet, cell_a, cell_b].into_iter().enumerate() {
            let mut resp = std::ptr::null_mut();
            let st = plimsoll_session_run(session, req, std::ptr::null(), &mut resp, null_err);
            assert_eq!(st, PlimsollStatus::Ok, "call {i}");
            assert_eq!(get(resp, "record.sequence").integer, i as i64 + 1);
            let sent = s(get(resp, "request_json").text);
            assert!(sent.contains(r#""minimumIsolation":"container""#), "{sent}");
            assert!(sent.contains("echo:1"), "{sent}");
            let st = plimsoll_chain_check_call(
                chain,
                get(resp, "request_json").text,
                get(resp, "response_json").text,
                null_err,
            );
            assert_eq!(st, PlimsollStatus::Ok, "chain {i}");
            // A record out of order is refused and the chain stays put.
            let again = plimsoll_chain_check_call(
                chain,
                get(resp, "request_json").text,
                get(resp, "response_json").text,
                null_err,
            );
            assert_eq!(again, PlimsollStatus::RecordMismatch);
            if i == 2 {
                assert_eq!(bytes(get(resp, "stdout").bytes), b"a=1,b=2");
                assert!(!get(resp, "interpreter_started").flag);
            }
            last = s(get(resp, "record.record_sha256").text);
            plimsoll_response_free(resp);
        }
        assert_eq!(plimsoll_chain_calls(chain), 3);
        assert_eq!(s(plimsoll_chain_last(chain)), last);

        let mut calls = 0u64;
        assert_eq!(
            plimsoll_session_close(session, &mut calls, null_err),
            PlimsollStatus::Ok
        );
        assert_eq!(calls, 3);
        assert_eq!(plimsoll_session_ended(session), 1);
        let last_c = CString::new(last).unwrap();
        assert_eq!(
            plimsoll_chain_check_close(chain, fp_c.as_ptr(), 3, last_c.as_ptr(), null_err),
            PlimsollStatus::Ok
        );

        let mut resp = std::ptr::null_mut();
        let mut err = std::ptr::null_mut();
        let st = plimsoll_session_run(session, snippet, std::ptr::null(), &mut resp, &mut err);
        assert_eq!(st, PlimsollStatus::Closed);
        assert!(resp.is_null());
        assert_eq!(plimsoll_error_not_dispatched(err), 1);
        plimsoll_error_free(err);
        assert_eq!(
            plimsoll_session_close(session, std::ptr::null_mut(), null_err),
            PlimsollStatus::Closed
        );

        // Freeing the client first is allowed: the session keeps the runtime.
        let mut other = std::ptr::null_mut();
        assert_eq!(
            plimsoll_client_open_session(client, std::ptr::null(), &mut other, null_err),
            PlimsollStatus::Ok
        );
        plimsoll_client_free(client);
        let mut resp = std::ptr::null_mut();
        assert_eq!(
            plimsoll_session_run(other, snippet, std::ptr::null(), &mut resp, null_err),
            PlimsollStatus::Ok
        );
        plimsoll_response_free(resp);
        plimsoll_session_free(other);

        for r in [snippet, cell_a, cell_b] {
            plimsoll_request_free(r);
        }
        plimsoll_chain_free(chain);
        plimsoll_session_free(session);
    }
}
