//! The guest's imports, declared by hand: the few WASI preview 1 calls it makes
//! itself, and plimsoll's host call. wasi-libc and Rust's standard library
//! import a few more (clocks, `fd_*` queries) that the host answers narrowly.

#[repr(C)]
struct Ciovec {
    buf: *const u8,
    len: usize,
}

#[link(wasm_import_module = "wasi_snapshot_preview1")]
unsafe extern "C" {
    #[link_name = "fd_write"]
    fn wasi_fd_write(fd: u32, iovs: *const Ciovec, iovs_len: usize, nwritten: *mut usize) -> i32;
    #[link_name = "random_get"]
    fn wasi_random_get(buf: *mut u8, len: usize) -> i32;
    #[link_name = "proc_exit"]
    fn wasi_proc_exit(code: u32) -> !;
}

#[link(wasm_import_module = "plimsoll")]
unsafe extern "C" {
    #[link_name = "host_call"]
    fn plimsoll_host_call(
        req_ptr: *const u8,
        req_len: usize,
        resp_ptr: *mut u8,
        resp_cap: usize,
    ) -> i64;
    #[link_name = "sleep"]
    fn plimsoll_sleep(ns: i64) -> i32;
}

thread_local! {
    /// A stream the host refused (it is full): later writes are dropped here,
    /// without another call, so a flooding loop costs little until its deadline.
    static CLOSED: std::cell::Cell<[bool; 3]> = const { std::cell::Cell::new([false; 3]) };
}

/// Writes all of `bytes` to fd 1 or 2. Returns false once the host has refused
/// the stream (its cap is reached); nothing is retried.
pub fn write(fd: u32, mut bytes: &[u8]) -> bool {
    if !(fd == 1 || fd == 2) || CLOSED.with(|c| c.get()[fd as usize]) {
        return false;
    }
    while !bytes.is_empty() {
        let iov = Ciovec {
            buf: bytes.as_ptr(),
            len: bytes.len(),
        };
        let mut n = 0usize;
        // SAFETY: one iovec over a live slice, and a live out-parameter.
        let errno = unsafe { wasi_fd_write(fd, &iov, 1, &mut n) };
        if errno != 0 || n == 0 || n > bytes.len() {
            CLOSED.with(|c| {
                let mut v = c.get();
                v[fd as usize] = true;
                c.set(v);
            });
            return false;
        }
        bytes = &bytes[n..];
    }
    true
}

/// Fills `buf` from the host's randomness (left as is if the host refuses).
pub fn random(buf: &mut [u8]) {
    // SAFETY: a live, writable buffer of the stated length.
    let _ = unsafe { wasi_random_get(buf.as_mut_ptr(), buf.len()) };
}

/// Ends the instance with `code` (Node's `process.exit`: the low 8 bits).
pub fn exit(code: i32) -> ! {
    // SAFETY: proc_exit does not return.
    unsafe { wasi_proc_exit((code & 0xff) as u32) }
}

/// One brokered call: the request's bytes in, the response into `response`.
/// Returns the host's status word (see the host's documentation).
pub fn host_call(request: &[u8], response: &mut [u8]) -> i64 {
    // SAFETY: both slices are live for the call; the host checks the bounds.
    unsafe {
        plimsoll_host_call(
            request.as_ptr(),
            request.len(),
            response.as_mut_ptr(),
            response.len(),
        )
    }
}

/// Waits `ns` nanoseconds of the run's time, for a timer. The host bounds the
/// wait by the run's deadline and cancellation: past either, the run ends
/// there (exit 124, or cancelled) and this does not return.
pub fn sleep(ns: i64) {
    // SAFETY: no pointers cross; the host only blocks this thread.
    let _ = unsafe { plimsoll_sleep(ns) };
}
