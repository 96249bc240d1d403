//! A configuration as key/value pairs: the daemon's environment variables,
//! given explicitly. The process environment is never read.

use std::collections::HashMap;
use std::ffi::c_char;

use super::{
    FfiResult, PlimsollError, PlimsollStatus, arg_mut, fail, fallible, free_box, out_ok, put, text,
};
use crate::config::{Config, ConfigError, Env};

/// Key/value pairs read as the daemon reads its environment variables
/// (`SANDBOX_PROVIDER=wasm`, `SANDBOX_RATE_PER_MIN=0`, …). Empty means every
/// default: the disabled provider, on which nothing runs.
///
/// A key starting `SANDBOX_` or `PLIMSOLL_` must be one the core reads; any
/// other key is kept for a grants file to name as a secret's variable.
///
/// Thread-safety: not synchronised. Set it from one thread; once built, it may
/// be passed to `plimsoll_client_new_engine` from several threads at once.
#[derive(Debug, Default)]
pub struct PlimsollConfig {
    vars: HashMap<String, String>,
}

impl PlimsollConfig {
    /// Parses the pairs as `Config::from_env` does.
    pub(crate) fn parse(&self) -> Result<Config, ConfigError> {
        let get = |k: &str| self.vars.get(k).cloned();
        Config::from_env(&Env::new(&get))
    }

    fn set(&mut self, key: String, value: String) -> FfiResult<()> {
        if key.is_empty() || key.contains('=') {
            return Err(fail(
                PlimsollStatus::InvalidArgument,
                "a configuration key must be non-empty and hold no '='",
            ));
        }
        if let Err(e) = crate::client::check_variable_names([key.as_str()]) {
            return Err(fail(PlimsollStatus::InvalidArgument, e.message));
        }
        self.vars.insert(key, value);
        Ok(())
    }
}

/// Makes an empty configuration in `*config_out`.
///
/// Thread-safety: may be called from any thread.
///
/// # Safety
/// `config_out` is NULL or writable; `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_config_new(
    config_out: *mut *mut PlimsollConfig,
    error_out: *mut *mut PlimsollError,
) -> PlimsollStatus {
    fallible(error_out, || {
        out_ok(config_out, "config_out")?;
        // SAFETY: checked above.
        unsafe { put(config_out, PlimsollConfig::default()) };
        Ok(())
    })
}

/// Sets `key` to `value` (both copied), replacing an earlier value. Values are
/// checked when the engine is made; keys now (`PLIMSOLL_STATUS_INVALID_ARGUMENT`
/// for an unknown `SANDBOX_*`/`PLIMSOLL_*` key).
///
/// Thread-safety: no other thread may use `config` during the call.
///
/// # Safety
/// `config` is NULL or a live configuration; `key` and `value` are NULL or
/// NUL-terminated strings; `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_config_set(
    config: *mut PlimsollConfig,
    key: *const c_char,
    value: *const c_char,
    error_out: *mut *mut PlimsollError,
) -> PlimsollStatus {
    fallible(error_out, || {
        // SAFETY: the caller's contract for each pointer.
        let (config, key, value) = unsafe {
            (
                arg_mut(config, "config")?,
                text(key, "key")?,
                text(value, "value")?,
            )
        };
        config.set(key, value)
    })
}

/// Frees a configuration. NULL is a no-op. An engine made from it keeps its own copy.
///
/// Thread-safety: no other thread may use `config` during or after the call.
///
/// # Safety
/// `config` is NULL or came from `plimsoll_config_new` and was not freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plimsoll_config_free(config: *mut PlimsollConfig) {
    // SAFETY: forwarded contract.
    unsafe { free_box(config) }
}
