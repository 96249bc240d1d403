//! plimsoll runs code nobody trusts behind a wall whose strength — the
//! isolation tier — is painted on every answer, like a ship's load line.
//!
//! The core holds every rule: tiers and floors ([`tier`]), requests and their
//! limits ([`request`]), results ([`result`]), the three channels ([`error`]),
//! run records and chains ([`record`], [`verify`]), the plimsoll.v1 wire
//! ([`wire`]), strict configuration ([`config`]), providers ([`provider`]) and
//! the engine that takes every request through protocol → validation → floor →
//! software rule → dispatch → record ([`engine`]).
//!
//! A tier is configuration plus the provider's startup proof. It is never
//! attestation.

pub mod admission;
pub mod advisory;
pub mod client;
pub mod config;
pub mod digest;
pub mod doctor;
pub mod engine;
pub mod env;
pub mod error;
#[cfg(feature = "capi")]
pub mod ffi;
pub mod grant;
pub mod hardened;
pub mod json;
pub mod loopback;
pub mod metrics;
pub mod paid;
pub mod phase;
mod pipeline;
pub mod provider;
pub mod readiness;
pub mod record;
pub mod request;
pub mod result;
pub mod secret;
pub mod session;
#[cfg(test)]
mod testkit;
pub mod tier;
pub mod verify;
pub mod view;
pub mod wall;
pub mod wire;

pub use engine::{Caller, Engine};
pub use error::{Error, ErrorCode, Refusal, Result, SessionEnd};
pub use request::{Envelope, Payload, Request};
pub use result::Output;
pub use tier::{Floor, Isolation};
