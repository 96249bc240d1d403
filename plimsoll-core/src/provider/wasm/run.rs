//! One run: a fresh store and instance of the snapshot, the snippet copied in,
//! `plimsoll_run` called under the run's limits, and the outcome classified.
//!
//! | what happened                         | answer                                  |
//! |---------------------------------------|-----------------------------------------|
//! | `plimsoll_run` returned `n`           | exit `n`                                |
//! | `process.exit(n)` (WASI `proc_exit`)  | exit `n & 0xff`                         |
//! | the deadline passed                   | exit 124, `timed_out`                   |
//! | a wasm trap (stack exhausted, OOB, …) | exit 134, the trap named on stderr      |
//! | the caller cancelled                  | `Err(Cancelled)`                        |
//! | the host could not set the run up     | `Err(Infrastructure)`                   |

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use wasmtime::Store;

use super::guest::Compiled;
use super::limits::{GuestExit, RunState, Stop};
use crate::error::{Error, ErrorCode, Result};
use crate::result::JavaScriptResult;

/// The exit code of a run the deadline ended.
pub const EXIT_TIMEOUT: i32 = 124;
/// The exit code of a run that trapped (as a process killed by SIGABRT).
pub const EXIT_TRAP: i32 = 134;

/// What one run is given besides the code.
#[derive(Debug, Clone)]
pub struct Limits {
    /// The linear-memory cap, bytes.
    pub memory_bytes: usize,
    /// The wall-clock budget.
    pub timeout: Duration,
    /// Set to stop the run (cancellation); the epoch must be bumped after setting it.
    pub cancel: Arc<AtomicBool>,
    /// A granted run's broker and the runtime its calls run on: the guest
    /// gets its `host` global and `plimsoll.host_call` reaches the broker.
    pub grant: Option<(Arc<crate::grant::Broker>, tokio::runtime::Handle)>,
    /// The run's phase marks, when a pipeline asked for them.
    pub phases: Option<crate::phase::Phases>,
}

fn infrastructure(what: &str, e: impl std::fmt::Display) -> Error {
    Error::infrastructure(format!("wasm provider: {what}: {e}"))
}

/// A fresh store under `limits`: the memory cap, and the epoch callback that
/// ends the run at its deadline or on cancellation.
fn store(compiled: &Compiled, limits: &Limits) -> Store<RunState> {
    let mut store = Store::new(
        &compiled.engine,
        RunState::new(limits.memory_bytes, limits.timeout, limits.cancel.clone()),
    );
    store.data_mut().grant = limits
        .grant
        .clone()
        .map(|(broker, runtime)| super::host::HostGrant {
            broker,
            runtime,
            pending: None,
        });
    store.limiter(|s| &mut s.cap);
    store.epoch_deadline_callback(|mut s| s.data_mut().check());
    store.set_epoch_deadline(1);
    store
}

/// Runs `code` on a fresh instance. Blocks the calling thread until the run
/// ends; call it on a run thread (see [`super::pool`]), whose stack fits the
/// wasm stack limit.
pub fn execute(compiled: &Compiled, code: &str, limits: &Limits) -> Result<JavaScriptResult> {
    execute_measured(compiled, code, limits).map(|(result, _)| result)
}

/// [`execute`], also returning the guest's linear-memory size when the run
/// ended, bytes (0 if the guest was never instantiated): read from the
/// instance's memory, not from the limiter's bookkeeping, so the startup proof
/// can check the cap held.
pub fn execute_measured(
    compiled: &Compiled,
    code: &str,
    limits: &Limits,
) -> Result<(JavaScriptResult, usize)> {
    let _live = compiled.ticker.live();
    let mut store = store(compiled, limits);
    let phases = limits.phases.as_ref();
    if let Some(p) = phases {
        p.acquired(crate::phase::Source::Fresh);
    }
    let mut memory = None;
    let outcome = start(compiled, &mut store, code, &mut memory, phases);
    if let Some(p) = phases {
        p.mark(crate::phase::Phase::Running);
    }
    let memory_bytes = memory.map_or(0, |m| m.data_size(&store));
    let state = store.into_data();
    let mut stderr = state.stderr;
    let exit_code = match outcome {
        Ok(code) => code,
        Err(Setup(e)) => return Err(e),
        Err(Trapped(e)) => match state.stopped {
            Some(Stop::Cancelled) => {
                return Err(Error::new(ErrorCode::Cancelled, "the run was cancelled"));
            }
            Some(Stop::Deadline) => EXIT_TIMEOUT,
            None => match (
                e.downcast_ref::<GuestExit>(),
                e.downcast_ref::<wasmtime::Trap>(),
            ) {
                (Some(GuestExit(code)), _) => *code,
                (None, Some(trap)) => {
                    stderr.push(format!("plimsoll: the guest trapped: {trap}\n").as_bytes());
                    EXIT_TRAP
                }
                (None, None) => return Err(infrastructure("the run failed outside the guest", e)),
            },
        },
    };
    let (stdout, stdout_truncated) = state.stdout.finish();
    let (stderr, stderr_truncated) = stderr.finish();
    let result = JavaScriptResult {
        stdout,
        stderr,
        exit_code,
        timed_out: state.stopped == Some(Stop::Deadline),
        stdout_truncated,
        stderr_truncated,
    };
    if let Some(p) = phases {
        p.mark(crate::phase::Phase::Collected);
    }
    Ok((result, memory_bytes))
}

/// Why a run did not return normally.
enum Failure {
    /// The host could not set the run up (an infrastructure error).
    Setup(Error),
    /// The guest's code stopped: a trap, an exit, the deadline or a cancellation.
    Trapped(wasmtime::Error),
}
use Failure::{Setup, Trapped};

/// Instantiates the guest and runs `code`; sets `memory_out` to the
/// instance's memory once it exists.
fn start(
    compiled: &Compiled,
    store: &mut Store<RunState>,
    code: &str,
    memory_out: &mut Option<wasmtime::Memory>,
    phases: Option<&crate::phase::Phases>,
) -> std::result::Result<i32, Failure> {
    let instance = compiled
        .pre
        .instantiate(&mut *store)
        .map_err(|e| Setup(infrastructure("instantiating the guest", e)))?;
    if let Some(p) = phases {
        p.mark(crate::phase::Phase::Started);
    }
    let alloc = instance
        .get_typed_func::<u32, u32>(&mut *store, "plimsoll_alloc")
        .map_err(|e| Setup(infrastructure("the guest's plimsoll_alloc", e)))?;
    let run = instance
        .get_typed_func::<(u32, u32), i32>(&mut *store, "plimsoll_run")
        .map_err(|e| Setup(infrastructure("the guest's plimsoll_run", e)))?;
    let memory = instance
        .get_memory(&mut *store, "memory")
        .ok_or_else(|| Setup(infrastructure("the guest", "no memory export")))?;
    *memory_out = Some(memory);
    let len = u32::try_from(code.len()).map_err(|_| {
        Setup(Error::invalid(
            "the snippet is too large for the wasm provider",
        ))
    })?;
    if store.data().grant.is_some() {
        instance
            .get_typed_func::<(), ()>(&mut *store, "plimsoll_grant")
            .map_err(|e| Setup(infrastructure("the guest's plimsoll_grant", e)))?
            .call(&mut *store, ())
            .map_err(Trapped)?;
    }
    let ptr = alloc.call(&mut *store, len).map_err(Trapped)?;
    if ptr == 0 {
        store
            .data_mut()
            .stderr
            .push(b"plimsoll: the snippet does not fit in the guest's memory cap\n");
        return Ok(1);
    }
    memory
        .write(&mut *store, ptr as usize, code.as_bytes())
        .map_err(|e| Setup(infrastructure("copying the snippet in", e)))?;
    run.call(&mut *store, (ptr, len)).map_err(Trapped)
}

/// Calls the guest's `plimsoll_host_probe` on a fresh instance and returns the
/// status `plimsoll.host_call` gave it.
pub fn probe_host(compiled: &Compiled) -> Result<i64> {
    let limits = Limits {
        memory_bytes: compiled.initial_memory as usize + (1 << 20),
        timeout: Duration::from_secs(5),
        cancel: Arc::default(),
        grant: None,
        phases: None,
    };
    let _live = compiled.ticker.live();
    let mut store = store(compiled, &limits);
    let instance = compiled
        .pre
        .instantiate(&mut store)
        .map_err(|e| infrastructure("instantiating the guest", e))?;
    let probe = instance
        .get_typed_func::<(), i64>(&mut store, "plimsoll_host_probe")
        .map_err(|e| infrastructure("the guest's plimsoll_host_probe", e))?;
    probe
        .call(&mut store, ())
        .map_err(|e| infrastructure("probing the host call", e))
}
