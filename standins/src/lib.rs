//! Stand-ins for the hosted services plimsoll's hosted providers call (E2B,
//! Docker Cloud Sandboxes, NVIDIA OpenShell).
//!
//! None of those services can be reached from a build machine, so each gets
//! a local server here that implements the part of the vendor's API the
//! provider uses, with the vendor's paths, field names, status codes, error
//! bodies and framing, so the provider code that works against the stand-in
//! is the code that works against the service. Where the vendor publishes a
//! client, it checks the stand-in (`tests/standins/`); Docker publishes none
//! for its REST API, so loopback tests written from its API reference check
//! that one (`standins/tests/dockercloud.rs`). OpenShell's gateway is gRPC
//! over mutual TLS, generated from the protocol definitions of the pinned
//! `openshell` release (`openshell-proto/proto/`). Every sandbox a stand-in
//! creates is a real local container, locked down (and under runsc when the
//! stand-in is told to use it), so the code sent to it really runs.
//!
//! What a stand-in is not: a security boundary of its own (it trusts the
//! local docker daemon), nor a model of the vendor's scheduling, billing or
//! fleet. Each module says which parts of its API it covers.

pub mod connect;
pub mod container;
pub mod dockercloud;
pub mod e2b;
pub mod openshell;
pub mod time;
