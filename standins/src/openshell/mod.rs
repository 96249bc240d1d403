//! OpenShell stand-in (placeholder while the build is checked).
/// The generated protocol.
pub mod proto;
