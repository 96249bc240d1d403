//! The C ABI (feature `capi`): opaque handles over the core for C, cgo and
//! anything else that speaks C. `include/plimsoll.h` is generated from this
//! module by cbindgen; `plimsoll-capi` builds it as `libplimsoll.so`/`.a`.
//!
//! It follows rustls-ffi's conventions:
//!
//! - Every object is opaque, made by a `plimsoll_<object>_new…` function (or
//!   returned through an out-parameter) and released exactly once by
//!   `plimsoll_<object>_free`; `_free(NULL)` does nothing.
//! - Every fallible function returns a [`PlimsollStatus`]: `PLIMSOLL_STATUS_OK`
//!   (0), one status per core [`ErrorCode`](crate::ErrorCode) with the code's
//!   stable number, and a few statuses of the binding itself (100 and up).
//!   Its last parameter, `plimsoll_error **error_out`, may be NULL; when it is
//!   not and the call fails, a new [`PlimsollError`] is written there (message,
//!   not-dispatched reason, session end), to be freed with `plimsoll_error_free`.
//! - Outputs (`out`) are written only on success; there are no partial successes.
//! - Every pointer is checked for NULL (`PLIMSOLL_STATUS_NULL_ARGUMENT`); text
//!   must be UTF-8 (`PLIMSOLL_STATUS_INVALID_UTF8`). Inputs are copied before
//!   the call returns: nothing keeps a caller's pointer (cgo forbids it).
//! - Every export runs behind a panic boundary (`PLIMSOLL_STATUS_PANIC`, or a
//!   getter's fallback value); no unwind crosses into C.
//! - Infallible getters return a fallback (`NULL`, `""`, 0, `false`) on a NULL
//!   handle. Text they return is NUL-terminated UTF-8 owned by the handle and
//!   valid until the handle is freed (or, for a request, next modified).
//!
//! Blocking calls (`plimsoll_client_run`, the session calls) run on the
//! client's own small tokio runtime and take an optional [`PlimsollCancel`]
//! that another thread may trigger. Thread-safety is stated on every function.
//!
//! An answer is read field by field with `plimsoll_response_get`, by the core's
//! field paths ([`crate::view`], `docs/fields.md`).
//!
//! What this does not cover: streaming output, grants' broker callbacks, and
//! any ABI stability before 1.0.

use std::ffi::{CStr, CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};

mod client;
mod config;
mod error;
mod request;
mod response;
mod session;
mod verify;

#[cfg(test)]
mod tests;

pub use client::*;
pub use config::*;
pub use error::*;
pub use request::*;
pub use response::*;
pub use session::*;
pub use verify::*;

/// A borrowed run of bytes: `data` is NULL exactly when `len` is 0.
///
/// It points into the handle it came from and is valid until that handle is
/// freed; copy it to keep it longer.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct PlimsollSlice {
    /// The first byte, or NULL when empty.
    pub data: *const u8,
    /// How many bytes.
    pub len: usize,
}

impl PlimsollSlice {
    const EMPTY: PlimsollSlice = PlimsollSlice {
        data: std::ptr::null(),
        len: 0,
    };

    fn of(b: &[u8]) -> PlimsollSlice {
        if b.is_empty() {
            PlimsollSlice::EMPTY
        } else {
            PlimsollSlice {
                data: b.as_ptr(),
                len: b.len(),
            }
        }
    }
}

/// Why a call failed before it reached the core, or in it.
pub(crate) enum Fail {
    /// The core refused or failed.
    Core(crate::Error),
    /// The binding refused: a status of its own and a message.
    Binding(PlimsollStatus, String),
}

impl From<crate::Error> for Fail {
    fn from(e: crate::Error) -> Fail {
        Fail::Core(e)
    }
}

pub(crate) type FfiResult<T> = Result<T, Fail>;

/// A binding-level failure with `status`.
pub(crate) fn fail(status: PlimsollStatus, message: impl Into<String>) -> Fail {
    Fail::Binding(status, message.into())
}

fn null(name: &str) -> Fail {
    fail(
        PlimsollStatus::NullArgument,
        format!("{name} must not be NULL"),
    )
}

/// Runs a fallible export behind the panic boundary, writing an error object
/// to `error_out` (when it is not NULL) on failure.
pub(crate) fn fallible(
    error_out: *mut *mut PlimsollError,
    f: impl FnOnce() -> FfiResult<()>,
) -> PlimsollStatus {
    let fail = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => return PlimsollStatus::Ok,
        Ok(Err(fail)) => fail,
        Err(_) => fail(
            PlimsollStatus::Panic,
            "plimsoll panicked inside the call; the handle may be unusable",
        ),
    };
    let error = PlimsollError::from_fail(fail);
    let status = error.status();
    if !error_out.is_null() {
        // SAFETY: the caller passes either NULL (checked above) or a valid,
        // writable `plimsoll_error *` slot, as every fallible function documents.
        unsafe { *error_out = Box::into_raw(Box::new(error)) };
    }
    status
}

/// Runs an infallible getter behind the panic boundary; a panic gives `fallback`.
pub(crate) fn getter<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

/// Frees a handle made by `Box::into_raw`, behind the panic boundary; NULL is a no-op.
///
/// # Safety
/// `p` is NULL or came from `Box::into_raw` for a `T` and has not been freed.
pub(crate) unsafe fn free_box<T>(p: *mut T) {
    if p.is_null() {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: non-NULL and from `Box::into_raw`, per the caller's contract.
        drop(unsafe { Box::from_raw(p) });
    }));
}

/// Borrows a handle, refusing NULL.
///
/// # Safety
/// `p` is NULL or points to a live `T` for the duration of `'a`.
pub(crate) unsafe fn arg<'a, T>(p: *const T, name: &str) -> FfiResult<&'a T> {
    // SAFETY: per the caller's contract a non-NULL `p` is a live `T`.
    unsafe { p.as_ref() }.ok_or_else(|| null(name))
}

/// Borrows a handle mutably, refusing NULL.
///
/// # Safety
/// `p` is NULL or points to a live `T` no one else uses for the duration of `'a`.
pub(crate) unsafe fn arg_mut<'a, T>(p: *mut T, name: &str) -> FfiResult<&'a mut T> {
    // SAFETY: per the caller's contract a non-NULL `p` is a live, unshared `T`.
    unsafe { p.as_mut() }.ok_or_else(|| null(name))
}

/// Refuses a NULL out-parameter before any work is done.
pub(crate) fn out_ok<T>(out: *mut *mut T, name: &str) -> FfiResult<()> {
    if out.is_null() {
        Err(null(name))
    } else {
        Ok(())
    }
}

/// Writes a new handle to a checked out-parameter.
///
/// # Safety
/// `out` is non-NULL (checked with [`out_ok`]) and writable.
pub(crate) unsafe fn put<T>(out: *mut *mut T, value: T) {
    // SAFETY: the caller checked `out` and it is writable.
    unsafe { *out = Box::into_raw(Box::new(value)) };
}

/// Copies NUL-terminated UTF-8 text, refusing NULL and invalid UTF-8.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that stays valid and
/// unmodified during the call.
pub(crate) unsafe fn text(p: *const c_char, name: &str) -> FfiResult<String> {
    if p.is_null() {
        return Err(null(name));
    }
    // SAFETY: non-NULL and NUL-terminated per the caller's contract.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str().map(str::to_owned).map_err(|_| {
        fail(
            PlimsollStatus::InvalidUtf8,
            format!("{name} is not valid UTF-8"),
        )
    })
}

/// Like [`text`], but NULL reads as `None`.
///
/// # Safety
/// As [`text`].
pub(crate) unsafe fn opt_text(p: *const c_char, name: &str) -> FfiResult<Option<String>> {
    if p.is_null() {
        Ok(None)
    } else {
        // SAFETY: forwarded contract.
        unsafe { text(p, name) }.map(Some)
    }
}

/// Copies `len` bytes of UTF-8 text (NUL bytes allowed); `p` may be NULL when `len` is 0.
///
/// # Safety
/// `p` is NULL or points to `len` readable bytes that stay unmodified during the call.
pub(crate) unsafe fn text_n(p: *const u8, len: usize, name: &str) -> FfiResult<String> {
    if len == 0 {
        return Ok(String::new());
    }
    if p.is_null() {
        return Err(null(name));
    }
    // SAFETY: non-NULL with `len` readable bytes per the caller's contract.
    let b = unsafe { std::slice::from_raw_parts(p, len) };
    String::from_utf8(b.to_vec()).map_err(|_| {
        fail(
            PlimsollStatus::InvalidUtf8,
            format!("{name} is not valid UTF-8"),
        )
    })
}

/// A C string for text the core produced. A NUL inside (never in a
/// well-formed answer) reads as U+FFFD rather than cutting the text short.
pub(crate) fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', "\u{fffd}")).unwrap_or_default()
}

/// A pointer to a static, NUL-terminated string.
pub(crate) fn static_str(s: &'static CStr) -> *const c_char {
    s.as_ptr()
}

/// The empty C string, for getters' fallback.
pub(crate) fn empty() -> *const c_char {
    static_str(c"")
}

/// The library's version and the versions of the pieces it carries, as a
/// static string that needs no freeing (for example `plimsoll/0.1.0 (protocol 4, record v4)`).
///
/// Thread-safety: may be called from any thread at any time.
#[unsafe(no_mangle)]
pub extern "C" fn plimsoll_version() -> *const c_char {
    static VERSION: std::sync::OnceLock<CString> = std::sync::OnceLock::new();
    getter(empty(), || {
        VERSION
            .get_or_init(|| {
                c_string(&format!(
                    "plimsoll/{} (protocol {}, record v{})",
                    env!("CARGO_PKG_VERSION"),
                    crate::request::PROTOCOL,
                    crate::record::RECORD_VERSION
                ))
            })
            .as_ptr()
    })
}
