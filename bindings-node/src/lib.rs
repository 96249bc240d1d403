//! `plimsoll` for Node.js: the napi-rs surface of plimsoll-core.
//!
//! Thin by design: it converts JavaScript arguments to core requests, calls
//! the core (the embedded engine or the remote client, through
//! [`plimsoll_core::client`]), and maps core errors to `Error` objects whose
//! `code` is the stable code name. No validation, hashing or policy lives here.

#![cfg_attr(
    test,
    allow(
        dead_code,
        reason = "napi-derive registers exports only outside cfg(test), so the unit-test build sees them unused (a crate-level `expect` is not fulfilled by dead_code)"
    )
)]

#[macro_use]
extern crate napi_derive;

mod api;
mod convert;
mod errors;
mod results;
mod verify;

/// The protocol number this build speaks.
#[napi]
pub const PROTOCOL: u32 = plimsoll_core::request::PROTOCOL;

/// This package's version.
#[napi]
pub fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}
