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
//! And `plimsoll.host_call`, through which a later grants issue will broker API
//! calls. For now it answers every call with [`HOST_NO_GRANT`].
//!
//! Every pointer and length from the guest is checked against its memory; a bad
//! one gets `EFAULT`, never a host panic.

use rand::RngCore;
use std::time::{SystemTime, UNIX_EPOCH};
use wasmtime::{Caller, Extern, Linker, Memory, Module};

use super::limits::{GuestExit, RunState};

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

/// `host_call(req_ptr, req_len, resp_ptr, resp_cap) -> i64`: on success the
/// response's length (written at `resp_ptr`, at most `resp_cap`); a negative
/// value is a status ([`HOST_NO_GRANT`], [`HOST_FAULT`]). Today every
/// well-formed call gets [`HOST_NO_GRANT`]: no run carries a grant yet.
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
    let data = mem.data(&caller);
    if range(data, req as u32, req_len as u32).is_none()
        || range(data, resp as u32, resp_cap as u32).is_none()
    {
        return HOST_FAULT;
    }
    HOST_NO_GRANT
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
