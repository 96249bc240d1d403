//! Clients: an embedded engine or a remote daemon, each with its own small
//! tokio runtime; describe, run, and cancellation.

use std::ffi::{CString, c_char};
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

use super::{
    FfiResult, PlimsollConfig, PlimsollError, PlimsollRequest, PlimsollResponse, PlimsollStatus,
    arg, c_string, empty, fail, fallible, free_box, getter, opt_text, out_ok, put, text,
};
use crate::client::Runner;
use crate::engine::{Engine, StartError};
use crate::error::{Error, ErrorCode, SessionEnd};
use crate::wire::DescribeResponse;
use crate::wire::json::encode;

/// How long freeing a client waits for the runtime's tasks and threads.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);

/// What a client and its sessions share: the core's [`Runner`] (every rule a
/// caller applies is there, none here) and the runtime that drives it.
/// Dropped with the last handle; dropping ends an engine's sessions and shuts
/// the runtime down, joining its threads.
pub(crate) struct Shared {
    runner: Option<Runner>,
    runtime: Option<Runtime>,
}

impl Shared {
    fn new(runtime: Runtime, runner: Runner) -> Shared {
        Shared {
            runner: Some(runner),
            runtime: Some(runtime),
        }
    }

    pub(crate) fn runner(&self) -> &Runner {
        // Both are `Some` until `drop`.
        self.runner.as_ref().unwrap_or_else(|| unreachable!())
    }

    /// Runs `f` to completion on the runtime, blocking the calling thread.
    pub(crate) fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.runtime
            .as_ref()
            .unwrap_or_else(|| unreachable!())
            .block_on(f)
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let Some(rt) = self.runtime.take() else {
            return;
        };
        if let Some(r) = &self.runner {
            rt.block_on(r.shutdown());
        }
        {
            let _inside = rt.enter();
            drop(self.runner.take());
        }
        rt.shutdown_timeout(SHUTDOWN_WAIT);
    }
}

fn runtime() -> FfiResult<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(16)
        .thread_name("plimsoll")
        .enable_all()
        .build()
        .map_err(|e| Fail::Core(Error::infrastructure(format!("tokio runtime: {e}"))))
}

use super::Fail;

/// An embedded engine (`plimsoll_client_new_engine`) or a remote daemon
/// (`plimsoll_client_new_remote`); every other function treats them alike.
///
/// Thread-safety: a client may be used from several threads at once; each
/// blocking call occupies its calling thread.
pub struct PlimsollClient {
    pub(crate) shared: Arc<Shared>,
}

/// A cancellation switch for blocking calls; another thread may trigger it.
/// Once triggered it stays triggered: make a new one per call.
///
/// Thread-safety: may be triggered and read from several threads at once.
#[derive(Debug, Default)]
pub struct PlimsollCancel {
    pub(crate) token: CancellationToken,
}

/// What the engine or daemon serves: provider, proven tier, abilities.
/// Configuration plus startup proof, never attestation.
///
/// Thread-safety: immutable; may be read from several threads at once.
pub struct PlimsollDescription {
    d: DescribeResponse,
    json: CString,
    sandbox: CString,
    isolation: CString,
}

/// Starts an engine from `config`: builds its provider, runs the preflight and
/// the startup proof, and refuses to start below `SANDBOX_MIN_ISOLATION`.
/// The engine runs requests as the anonymous caller (`anon`). With no
/// `SANDBOX_PROVIDER` it is the disabled provider: every run is refused with
/// `PLIMSOLL_STATUS_DISABLED`.
///
/// Fails with `PLIMSOLL_STATUS_CONFIG` for an impossible configuration,
/// `PLIMSOLL_STATUS_INSUFFICIENT_ISOLATION` below the minimum, or the proof's
/// own status when the startup proof fails.
///
/// Thread-safety: may be called from any thread; blocks while the proof runs.
///
/// # Safety
/// `config` is NULL or a live configuration; `client_out` and `error_out` are
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_client_new_engine(
    config: *const PlimsollConfig,
    client_out: *mut *mut PlimsollClient,
    error_out: *mut *mut PlimsollError,
) -> PlimsollStatus {
    fallible(error_out, || {
        out_ok(client_out, "client_out")?;
        // SAFETY: the caller's contract.
        let config = unsafe { arg(config, "config")? };
        let config = config
            .parse()
            .map_err(|e| fail(PlimsollStatus::Config, e.to_string()))?;
        let rt = runtime()?;
        let engine = rt.block_on(Engine::start(&config)).map_err(|e| match e {
            StartError::Config(c) => fail(PlimsollStatus::Config, c.to_string()),
            StartError::Proof(e) => Fail::Core(e),
            a @ StartError::Advisory(_) => fail(PlimsollStatus::Config, a.to_string()),
            b @ StartError::BelowMinimum { .. } => {
                Fail::Core(Error::new(ErrorCode::InsufficientIsolation, b.to_string()))
            }
        })?;
        let shared = Arc::new(Shared::new(rt, Runner::from_engine(engine)));
        // SAFETY: checked above.
        unsafe { put(client_out, PlimsollClient { shared }) };
        Ok(())
    })
}

/// Makes a client for the plimsolld at `base_url` (`https://…`; cleartext
/// `http://` only on loopback unless `insecure_http`). `token` is the bearer
/// token or NULL; it is copied into a zeroized secret and never logged.
/// Nothing is sent until the first call.
///
/// Every answer is verified as the published client verifies it: bound to the
/// request, record and chain checked, the floor re-checked on the answer.
///
/// Thread-safety: may be called from any thread.
///
/// # Safety
/// `base_url` and `token` are NULL or NUL-terminated strings; `client_out` and
/// `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_client_new_remote(
    base_url: *const c_char,
    token: *const c_char,
    insecure_http: bool,
    client_out: *mut *mut PlimsollClient,
    error_out: *mut *mut PlimsollError,
) -> PlimsollStatus {
    fallible(error_out, || {
        out_ok(client_out, "client_out")?;
        // SAFETY: the caller's contract.
        let (url, token) = unsafe { (text(base_url, "base_url")?, opt_text(token, "token")?) };
        let rt = runtime()?;
        let remote = {
            let _inside = rt.enter();
            Runner::remote(&url, token, insecure_http, None)
        };
        let remote = match remote {
            Ok(r) => r,
            Err(e) => {
                rt.shutdown_timeout(SHUTDOWN_WAIT);
                return Err(Fail::Core(e));
            }
        };
        let shared = Arc::new(Shared::new(rt, remote));
        // SAFETY: checked above.
        unsafe { put(client_out, PlimsollClient { shared }) };
        Ok(())
    })
}

/// Asks what the engine or daemon serves (a network call for a remote client).
///
/// Thread-safety: may be called from several threads at once on one client.
///
/// # Safety
/// `client` is NULL or a live client; `description_out` and `error_out` are
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_client_describe(
    client: *const PlimsollClient,
    description_out: *mut *mut PlimsollDescription,
    error_out: *mut *mut PlimsollError,
) -> PlimsollStatus {
    fallible(error_out, || {
        out_ok(description_out, "description_out")?;
        // SAFETY: the caller's contract.
        let client = unsafe { arg(client, "client")? };
        let d = client.shared.block_on(client.shared.runner().describe())?;
        let desc = PlimsollDescription {
            json: c_string(&String::from_utf8_lossy(&encode(&d))),
            sandbox: c_string(&d.sandbox),
            isolation: c_string(&d.isolation),
            d,
        };
        // SAFETY: checked above.
        unsafe { put(description_out, desc) };
        Ok(())
    })
}

/// Runs `request` on the client: a snippet or project (a module too; cells run
/// only in sessions). Blocks until the answer, which is verified against the
/// request before it is returned in `*response_out`.
///
/// A guest's non-zero exit is a normal answer (`PLIMSOLL_STATUS_OK`). A failure
/// is a refusal (nothing ran; `plimsoll_error_not_dispatched` says why) or an
/// infrastructure error (the call may have run). `cancel` may be NULL; when
/// triggered the call ends with `PLIMSOLL_STATUS_CANCELLED`.
///
/// Thread-safety: may be called from several threads at once on one client.
///
/// # Safety
/// `client` and `request` are NULL or live; `cancel` is NULL or a live cancel
/// that outlives the call; `response_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_client_run(
    client: *const PlimsollClient,
    request: *const PlimsollRequest,
    cancel: *const PlimsollCancel,
    response_out: *mut *mut PlimsollResponse,
    error_out: *mut *mut PlimsollError,
) -> PlimsollStatus {
    fallible(error_out, || {
        out_ok(response_out, "response_out")?;
        // SAFETY: the caller's contract.
        let (client, request) = unsafe { (arg(client, "client")?, arg(request, "request")?) };
        // SAFETY: NULL or a live cancel, per the contract.
        let token =
            unsafe { cancel.as_ref() }.map_or_else(CancellationToken::new, |c| c.token.clone());
        let shared = &client.shared;
        let resp = shared.block_on(shared.runner().run(request.inner.clone(), token))?;
        let answer = PlimsollResponse::new(resp, SessionEnd::Open, &request.inner);
        // SAFETY: checked above.
        unsafe { put(response_out, answer) };
        Ok(())
    })
}

/// Frees a client. NULL is a no-op. When the client and every session made
/// from it are freed, the engine's sessions end and its runtime shuts down,
/// waiting up to 10 s for running work and joining its threads.
///
/// Thread-safety: no other thread may use `client` during or after the call,
/// and no call on it may be in progress.
///
/// # Safety
/// `client` is NULL or came from `plimsoll_client_new_…` and was not freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_client_free(client: *mut PlimsollClient) {
    // SAFETY: forwarded contract.
    unsafe { free_box(client) }
}

/// Makes a cancellation switch in `*cancel_out`.
///
/// Thread-safety: may be called from any thread.
///
/// # Safety
/// `cancel_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_cancel_new(
    cancel_out: *mut *mut PlimsollCancel,
    error_out: *mut *mut PlimsollError,
) -> PlimsollStatus {
    fallible(error_out, || {
        out_ok(cancel_out, "cancel_out")?;
        // SAFETY: checked above.
        unsafe { put(cancel_out, PlimsollCancel::default()) };
        Ok(())
    })
}

/// Triggers the switch: calls using it end with `PLIMSOLL_STATUS_CANCELLED`
/// (calls not yet started are refused, not dispatched). NULL is a no-op.
///
/// Thread-safety: may be called from any thread, also while a call using it blocks.
///
/// # Safety
/// `cancel` is NULL or a live cancel.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_cancel_trigger(cancel: *const PlimsollCancel) {
    getter((), || {
        // SAFETY: NULL or live, per the contract.
        if let Some(c) = unsafe { cancel.as_ref() } {
            c.token.cancel();
        }
    })
}

/// Frees a cancellation switch. NULL is a no-op.
///
/// Thread-safety: no call may be using it, and no other thread may use it during or after.
///
/// # Safety
/// `cancel` is NULL or came from `plimsoll_cancel_new` and was not freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_cancel_free(cancel: *mut PlimsollCancel) {
    // SAFETY: forwarded contract.
    unsafe { free_box(cancel) }
}

/// Reads a field of a live description, or gives `fallback`.
///
/// # Safety
/// `d` is NULL or a live description.
unsafe fn read<T: Copy>(
    d: *const PlimsollDescription,
    fallback: T,
    f: impl FnOnce(&PlimsollDescription) -> T,
) -> T {
    getter(fallback, || {
        // SAFETY: NULL or live, per the caller's contract.
        unsafe { d.as_ref() }.map_or(fallback, f)
    })
}

/// The whole description as the wire's `DescribeResponse` JSON. Owned by the
/// description; `""` for NULL.
///
/// Thread-safety: may be called from several threads at once on one description.
///
/// # Safety
/// `description` is NULL or a live description.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_description_json(
    description: *const PlimsollDescription,
) -> *const c_char {
    // SAFETY: forwarded contract.
    unsafe { read(description, empty(), |d| d.json.as_ptr()) }
}

/// The provider (`"disabled"`, `"wasm"`, `"docker"`, …). Owned by the description.
///
/// Thread-safety: may be called from several threads at once on one description.
///
/// # Safety
/// `description` is NULL or a live description.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_description_sandbox(
    description: *const PlimsollDescription,
) -> *const c_char {
    // SAFETY: forwarded contract.
    unsafe { read(description, empty(), |d| d.sandbox.as_ptr()) }
}

/// The proven tier (`"none"`, `"process"`, `"container"`, `"kernel"`, `"vm"`).
/// Owned by the description.
///
/// Thread-safety: may be called from several threads at once on one description.
///
/// # Safety
/// `description` is NULL or a live description.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_description_isolation(
    description: *const PlimsollDescription,
) -> *const c_char {
    // SAFETY: forwarded contract.
    unsafe { read(description, empty(), |d| d.isolation.as_ptr()) }
}

/// Whether projects run here.
///
/// Thread-safety: may be called from several threads at once on one description.
///
/// # Safety
/// `description` is NULL or a live description.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_description_supports_project(
    description: *const PlimsollDescription,
) -> bool {
    // SAFETY: forwarded contract.
    unsafe { read(description, false, |d| d.d.supports_project) }
}

/// Whether sessions run here.
///
/// Thread-safety: may be called from several threads at once on one description.
///
/// # Safety
/// `description` is NULL or a live description.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_description_supports_sessions(
    description: *const PlimsollDescription,
) -> bool {
    // SAFETY: forwarded contract.
    unsafe { read(description, false, |d| d.d.supports_sessions) }
}

/// The protocol number served (4).
///
/// Thread-safety: may be called from several threads at once on one description.
///
/// # Safety
/// `description` is NULL or a live description.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_description_protocol(
    description: *const PlimsollDescription,
) -> u32 {
    // SAFETY: forwarded contract.
    unsafe { read(description, 0, |d| d.d.protocol) }
}

/// Frees a description. NULL is a no-op.
///
/// Thread-safety: no other thread may use `description` during or after the call.
///
/// # Safety
/// `description` is NULL or came from `plimsoll_client_describe` and was not freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_description_free(description: *mut PlimsollDescription) {
    // SAFETY: forwarded contract.
    unsafe { free_box(description) }
}

/// A client over an engine with an injected provider (tests only).
#[cfg(test)]
pub(crate) fn client_over(
    provider: Arc<dyn crate::provider::Provider>,
    config: &crate::config::Config,
) -> PlimsollClient {
    let rt = runtime().unwrap_or_else(|_| panic!("runtime"));
    let engine = rt
        .block_on(Engine::with_provider(provider, config))
        .unwrap_or_else(|e| panic!("engine: {e}"));
    PlimsollClient {
        shared: Arc::new(Shared::new(rt, Runner::from_engine(engine))),
    }
}
