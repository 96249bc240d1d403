//! The e2b provider (tier `vm`), being built for issue 15: E2B's REST
//! control plane and envd's Connect data plane, with no vendor SDK. What is
//! here so far is the data plane's wire: [`stream`] reads a Connect server
//! stream (bounded, the end frame required) and [`process`] reads envd's
//! process events and writes its start request. The protocol notes are in
//! `docs/research/hosted-providers.md` §1; the stand-in the provider is
//! tested against is `standins/src/e2b` (`docs/providers/e2b.md`).
//!
//! Not yet registered in [`crate::provider::PLUGINS`]: `SANDBOX_PROVIDER=e2b`
//! still exits at startup naming the providers this build has.

pub mod process;
pub mod stream;
