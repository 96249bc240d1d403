//! The OpenShell 0.1.5 protocol (`plimsoll-openshell-proto`): messages, the
//! `OpenShell` service's server trait and its client.

pub use plimsoll_openshell_proto::*;
