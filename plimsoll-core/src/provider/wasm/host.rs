//! The guest's whole world: the host functions it may import.
//!
//! A narrow WASI preview 1 (`wasi_snapshot_preview1`), written here rather than
//! taken from wasmtime-wasi so the surface is exactly what is listed: output to
//! fds 1 and 2 only (into the run's capped buffers), randomness, clocks
//! (coarsened to [`CLOCK_RESOLUTION_NS`]), an empty environment, and exit. No
//! file descriptor beyond 1 and 2 exists, so there are no files, no preopens,
//! no sockets and no arguments. Any other WASI function the guest might import
//! answers `ENOSYS`; an import from any other module fails instantiation.
//!
//! And `plimsoll.sleep`, a timer's wait, bounded by the run's deadline and
//! cancellation ([`sleep`]); and `plimsoll.host_call`, which carries a granted run's API calls to its
//! broker (see [`host_call`]'s ABI); a run without a grant gets
//! [`HOST_NO_GRANT`]. The credential stays in the broker: only the request's
//! method, path and body go out, and only the status, body and media type of
//! the answer come back into linear memory.
//!
//! Every pointer and length from the guest is checked against its memory; a bad
//! one gets `EFAULT`, never a host panic.

use rand::RngCore;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use wasmtime::{Caller, Extern, Linker, Memory, Module};

use super::limits::{GuestExit, RunState};
use crate::grant::{Broker, GuestAnswer, GuestCall};

const ERRNO_SUCCESS: i32 = 0;
const ERRNO_BADF: i32 = 8;
const ERRNO_FAULT: i32 = 21;
const ERRNO_INVAL: i32 = 28;
const ERRNO_NOSYS: i32 = 52;
/// The stream's cap is reached: the guest stops writing to it.
const ERRNO_PIPE: i32 = 64;

/// `host_call` status: no grant is attached to this run, so nothing was called.
pub const HOST_NO_GRANT: i64 = -1;
/// `host_call` status: a pointer or length was outside the guest's memory.
pub const HOST_FAULT: i64 = -2;
/// `host_call` status: the run's deadline passed (or it was cancelled) while
/// the call was in flight; the run ends at its next epoch check.
pub const HOST_TIMEOUT: i64 = -3;
/// `host_call` status: a collect call (`req_len == 0`) with nothing pending.
pub const HOST_NOTHING_PENDING: i64 = -4;

/// Clock readings are rounded down to this, blunting timing side channels
/// (the guest shares a process, and so caches, with the daemon).
pub const CLOCK_RESOLUTION_NS: u64 = 100_000;

/// The most iovecs one `fd_write` may pass (Linux's `IOV_MAX`).
const MAX_IOVS: u32 = 1024;

/// The WASI functions implemented here; any other `wasi_snapshot_preview1`
/// import answers `ENOSYS`.
pub const WASI_FUNCTIONS: &[&str] = &[
    "fd_write",
    "proc_exit",
    "random_get",
    "clock_time_get",
    "environ_get",
    "environ_sizes_get",
    "fd_close",
    "fd_fdstat_get",
    "fd_seek",
];

/// A linker holding every host function the guest may import.
pub fn linker(engine: &wasmtime::Engine, module: &Module) -> wasmtime::Result<Linker<RunState>> {
    let mut l = Linker::new(engine);
    const WASI: &str = "wasi_snapshot_preview1";
    l.func_wrap(WASI, "fd_write", fd_write)?;
    l.func_wrap(WASI, "proc_exit", |code: i32| -> wasmtime::Result<()> {
        Err(wasmtime::Error::new(GuestExit(code & 0xff)))
    })?;
    l.func_wrap(WASI, "random_get", random_get)?;
    l.func_wrap(WASI, "clock_time_get", clock_time_get)?;
    l.func_wrap(
        WASI,
        "environ_sizes_get",
        |mut c: Caller<'_, RunState>, count: i32, size: i32| -> i32 {
            match put(&mut c, count, &0u32.to_le_bytes()) {
                ERRNO_SUCCESS => put(&mut c, size, &0u32.to_le_bytes()),
                errno => errno,
            }
        },
    )?;
    l.func_wrap(WASI, "environ_get", |_: i32, _: i32| ERRNO_SUCCESS)?;
    l.func_wrap(WASI, "fd_close", |_: i32| ERRNO_BADF)?;
    l.func_wrap(WASI, "fd_fdstat_get", |_: i32, _: i32| ERRNO_BADF)?;
    l.func_wrap(WASI, "fd_seek", |_: i32, _: i64, _: i32, _: i32| ERRNO_BADF)?;
    l.func_wrap("plimsoll", "host_call", host_call)?;
    l.func_wrap("plimsoll", "sleep", sleep)?;
    // Whatever else of WASI the guest names exists and does nothing.
    for import in module.imports() {
        if let wasmtime::ExternType::Func(ty) = import.ty()
            && import.module() == WASI
            && !WASI_FUNCTIONS.contains(&import.name())
        {
            l.func_new(WASI, import.name(), ty.clone(), |_, _, results| {
                if let Some(r) = results.first_mut() {
                    *r = wasmtime::Val::I32(ERRNO_NOSYS);
                }
                Ok(())
            })?;
        }
    }
    Ok(l)
}

fn memory(caller: &mut Caller<'_, RunState>) -> Option<Memory> {
    match caller.get_export("memory") {
        Some(Extern::Memory(m)) => Some(m),
        _ => None,
    }
}

/// Copies `bytes` into guest memory at `ptr`: `ERRNO_SUCCESS` or `ERRNO_FAULT`.
fn put(caller: &mut Caller<'_, RunState>, ptr: i32, bytes: &[u8]) -> i32 {
    match memory(caller) {
        Some(m) if m.write(caller, ptr as u32 as usize, bytes).is_ok() => ERRNO_SUCCESS,
        _ => ERRNO_FAULT,
    }
}

fn range(data: &[u8], ptr: u32, len: u32) -> Option<&[u8]> {
    data.get(ptr as usize..(ptr as usize).checked_add(len as usize)?)
}

fn fd_write(
    mut caller: Caller<'_, RunState>,
    fd: i32,
    iovs: i32,
    iovs_len: i32,
    nwritten: i32,
) -> i32 {
    let Some(mem) = memory(&mut caller) else {
        return ERRNO_FAULT;
    };
    let (data, state) = mem.data_and_store_mut(&mut caller);
    let sink = match fd {
        1 => &mut state.stdout,
        2 => &mut state.stderr,
        _ => return ERRNO_BADF,
    };
    let (iovs, count) = (iovs as u32, iovs_len as u32);
    if count > MAX_IOVS {
        return ERRNO_INVAL;
    }
    let Some(table) = range(data, iovs, count * 8) else {
        return ERRNO_FAULT;
    };
    let mut total: u32 = 0;
    for iov in table.chunks_exact(8) {
        let ptr = u32::from_le_bytes([iov[0], iov[1], iov[2], iov[3]]);
        let len = u32::from_le_bytes([iov[4], iov[5], iov[6], iov[7]]);
        let Some(bytes) = range(data, ptr, len) else {
            return ERRNO_FAULT;
        };
        sink.push(bytes);
        total = total.saturating_add(len);
    }
    if sink.truncated() {
        // Kept what fit; say the stream is closed so the guest stops writing.
        return ERRNO_PIPE;
    }
    put(&mut caller, nwritten, &total.to_le_bytes())
}

fn random_get(mut caller: Caller<'_, RunState>, buf: i32, len: i32) -> i32 {
    let Some(mem) = memory(&mut caller) else {
        return ERRNO_FAULT;
    };
    let (data, state) = mem.data_and_store_mut(&mut caller);
    let (start, len) = (buf as u32 as usize, len as u32 as usize);
    let Some(out) = start
        .checked_add(len)
        .and_then(|end| data.get_mut(start..end))
    else {
        return ERRNO_FAULT;
    };
    if state.initialising {
        out.fill(0);
    } else {
        rand::rng().fill_bytes(out);
    }
    ERRNO_SUCCESS
}

fn clock_time_get(mut caller: Caller<'_, RunState>, id: i32, _precision: i64, out: i32) -> i32 {
    let state = caller.data();
    let ns: u64 = if state.initialising {
        0
    } else {
        match id {
            // Realtime.
            0 => SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0),
            // Monotonic, and the process/thread CPU clocks: time since the run began.
            1..=3 => state.started.elapsed().as_nanos() as u64,
            _ => return ERRNO_INVAL,
        }
    };
    let ns = ns - ns % CLOCK_RESOLUTION_NS;
    put(&mut caller, out, &ns.to_le_bytes())
}

/// The longest a sleeping run goes without looking at its cancellation flag.
const SLEEP_SLICE: Duration = Duration::from_millis(10);

/// `sleep(ns) -> i32`: blocks the run thread for `ns` nanoseconds, a timer's
/// wait. The epoch does not fire inside a host call, so the deadline and
/// cancellation are checked here: once either passes, the run stops exactly
/// as the epoch callback would stop it (exit 124, or cancelled), so a timer
/// set past the deadline is a timeout, not a hang. While the snapshot is
/// made it returns at once. Returns 0.
fn sleep(mut caller: Caller<'_, RunState>, ns: i64) -> wasmtime::Result<i32> {
    if caller.data().initialising {
        return Ok(0);
    }
    let until = Instant::now() + Duration::from_nanos(ns.max(0) as u64);
    loop {
        let state = caller.data_mut();
        state.check()?;
        let now = Instant::now();
        if now >= until {
            return Ok(0);
        }
        let left = until
            .min(state.deadline)
            .saturating_duration_since(now)
            .min(SLEEP_SLICE);
        std::thread::sleep(left);
    }
}

/// `host_call(req_ptr, req_len, resp_ptr, resp_cap) -> i64`.
///
/// The request at `req_ptr..req_ptr+req_len` is a JSON envelope
/// `{"method", "path", "body": string|null, "contentType": string|null}`; the
/// answer is JSON `{"status", "body", "contentType"}` (the body as UTF-8, with
/// invalid sequences replaced). The return value is the answer's length:
///
/// * at most `resp_cap`: the answer is at `resp_ptr`;
/// * more than `resp_cap`: nothing is written and the answer is held; the
///   guest collects it with a second call with `req_len == 0` and a buffer of
///   at least that length (the call is not repeated);
/// * negative: [`HOST_NO_GRANT`], [`HOST_FAULT`], [`HOST_TIMEOUT`] or
///   [`HOST_NOTHING_PENDING`].
///
/// A malformed envelope is answered 400 by the host, without a call. The call
/// blocks the run thread (the epoch does not fire inside a host call), so it
/// is bounded here by the run's deadline and cancellation as well as by the
/// broker's own upstream timeout.
fn host_call(
    mut caller: Caller<'_, RunState>,
    req: i32,
    req_len: i32,
    resp: i32,
    resp_cap: i32,
) -> i64 {
    let Some(mem) = memory(&mut caller) else {
        return HOST_FAULT;
    };
    let (data, state) = mem.data_and_store_mut(&mut caller);
    let Some(request) = range(data, req as u32, req_len as u32) else {
        return HOST_FAULT;
    };
    if range(data, resp as u32, resp_cap as u32).is_none() {
        return HOST_FAULT;
    }
    let Some(grant) = state.grant.as_mut() else {
        return HOST_NO_GRANT;
    };
    let answer = if request.is_empty() {
        match grant.pending.take() {
            Some(a) => a,
            None => return HOST_NOTHING_PENDING,
        }
    } else {
        grant.pending = None;
        match envelope(request) {
            Ok(call) => match grant.call(call, state.deadline, &state.cancel) {
                Some(a) => answer_json(a.status, &a.body, &a.content_type),
                None => return HOST_TIMEOUT,
            },
            Err(why) => answer_json(
                400,
                serde_json::json!({ "error": why }).to_string().as_bytes(),
                "application/json",
            ),
        }
    };
    let Ok(len) = i64::try_from(answer.len()) else {
        return HOST_FAULT;
    };
    if answer.len() > resp_cap as u32 as usize {
        if let Some(g) = state.grant.as_mut() {
            g.pending = Some(answer);
        }
        return len;
    }
    match mem.write(&mut caller, resp as u32 as usize, &answer) {
        Ok(()) => len,
        Err(_) => HOST_FAULT,
    }
}

/// The guest's request envelope.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Envelope {
    method: String,
    path: String,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    content_type: Option<String>,
}

/// The call an envelope asks for, or why it is malformed.
fn envelope(bytes: &[u8]) -> Result<GuestCall, String> {
    let e: Envelope =
        serde_json::from_slice(bytes).map_err(|e| format!("malformed host call: {e}"))?;
    Ok(GuestCall {
        method: e.method,
        target: e.path,
        body: e.body.map(String::into_bytes).unwrap_or_default(),
        content_type: e.content_type,
    })
}

/// The answer envelope the guest parses.
fn answer_json(status: u16, body: &[u8], content_type: &str) -> Vec<u8> {
    serde_json::json!({
        "status": status,
        "body": String::from_utf8_lossy(body),
        "contentType": content_type,
    })
    .to_string()
    .into_bytes()
}

/// A granted run's way to its broker, held in its store.
pub struct HostGrant {
    /// The run's broker (it holds the credential; the guest never sees it).
    pub broker: Arc<Broker>,
    /// The runtime the broker's calls run on, captured when the run began.
    pub runtime: tokio::runtime::Handle,
    /// An answer too large for the guest's buffer, awaiting collection.
    pub pending: Option<Vec<u8>>,
}

impl std::fmt::Debug for HostGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostGrant")
            .field("broker", &self.broker)
            .finish_non_exhaustive()
    }
}

/// How often a blocked host call looks at the run's cancellation flag.
const CANCEL_POLL: Duration = Duration::from_millis(10);

impl HostGrant {
    /// Makes one call on the runtime and waits for it on this (the run's)
    /// thread, until `deadline` or cancellation: `None` if either came first
    /// (the call is then aborted).
    fn call(&self, call: GuestCall, deadline: Instant, cancel: &AtomicBool) -> Option<GuestAnswer> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let broker = self.broker.clone();
        let task = self.runtime.spawn(async move {
            let _ = tx.send(broker.call(call).await);
        });
        let answer = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || cancel.load(Ordering::Acquire) {
                break None;
            }
            match rx.recv_timeout(left.min(CANCEL_POLL)) {
                Ok(a) => break Some(a),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break None,
            }
        };
        task.abort();
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_checked_without_overflow() {
        let data = [0u8; 16];
        assert_eq!(range(&data, 0, 16).map(<[u8]>::len), Some(16));
        assert!(range(&data, 1, 16).is_none());
        assert!(range(&data, u32::MAX, 2).is_none());
        assert_eq!(range(&data, 16, 0).map(<[u8]>::len), Some(0));
    }
}
