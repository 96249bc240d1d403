//! Hardened mode (`PLIMSOLL_HARDENED=1`): the rules a daemon must meet before
//! it serves in production, checked all at once so the operator sees every
//! violation in one pass.
//!
//! [`crate::config::hardened::early`] checks every rule that needs no sandbox — how callers
//! authenticate, TLS on every listener off loopback, the provider's own
//! settings (pinned images, no unconfined seccomp, an explicit template, an
//! explicit positive per-run envelope), the rate limit, the per-caller caps —
//! before the provider proves its tier. [`proven`] checks the isolation rule
//! once the tier is proven: `vm`, or `kernel`, which is painted only on a
//! verified gVisor. The daemon refuses to start on any violation, and
//! `plimsolld --check` reports the same list.

use std::net::SocketAddr;

use crate::tier::Isolation;

/// One rule broken: the variable to change, and what the rule asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The variable that breaks it (or must be set).
    pub variable: &'static str,
    /// The rule, as the operator reads it.
    pub rule: String,
}

impl Violation {
    /// A violation of `rule` by `variable`.
    pub fn new(variable: &'static str, rule: impl Into<String>) -> Violation {
        Violation {
            variable,
            rule: rule.into(),
        }
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.variable, self.rule)
    }
}

/// How callers authenticate to the daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// A clients file: one token per caller, with scopes.
    ClientsFile,
    /// One token shared by every caller.
    SharedToken,
    /// None.
    Open,
}

/// What the daemon itself contributes to the rules.
#[derive(Debug, Clone)]
pub struct Daemon {
    /// How callers authenticate.
    pub auth: Auth,
    /// `PLIMSOLL_INSECURE=1`.
    pub insecure: bool,
    /// Every listener: its variable, its address, and whether it serves TLS.
    pub listeners: Vec<(&'static str, SocketAddr, bool)>,
    /// Whether every caller has a paid-second allowance of its own.
    pub paid_for_every_caller: bool,
}

/// The isolation rule, once the tier is proven.
pub fn proven(isolation: Isolation) -> Option<Violation> {
    (isolation < Isolation::Kernel).then(|| {
        Violation::new(
            "SANDBOX_PROVIDER",
            format!(
                "hardened mode serves at the vm tier or at a verified kernel tier (docker on runsc); this provider proved {}",
                isolation.as_str()
            ),
        )
    })
}

/// Whether an image reference names content, not a tag: an image ID
/// (`sha256:<64 hex>`) or a reference pinned by digest (`…@sha256:<64 hex>`).
pub fn pinned_image(reference: &str) -> bool {
    let digest = match reference.rsplit_once('@') {
        Some((name, d)) if !name.is_empty() => d,
        Some(_) => return false,
        None => reference,
    };
    digest
        .strip_prefix("sha256:")
        .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

/// The envelope rule: each of `dimensions` (a variable, and whether it is
/// set to a positive value) must be.
pub fn envelope(dimensions: &[(&'static str, bool)]) -> Vec<Violation> {
    dimensions
        .iter()
        .filter(|(_, set)| !set)
        .map(|(variable, _)| {
            Violation::new(
                variable,
                "must be set, positive, in hardened mode: an explicit per-run envelope",
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_images() {
        let hex = "0123456789abcdef".repeat(4);
        assert!(pinned_image(&format!("sha256:{hex}")));
        assert!(pinned_image(&format!("registry/x:1@sha256:{hex}")));
        for tag in [
            "plimsoll/snippet:latest".to_owned(),
            format!("sha256:{}", &hex[..63]),
            format!("@sha256:{hex}"),
            format!("x@sha256:{}", hex.to_uppercase()),
        ] {
            assert!(!pinned_image(&tag), "{tag}");
        }
    }

    #[test]
    fn the_envelope_names_each_dimension_unset() {
        let named: Vec<&str> = envelope(&[("A", true), ("B", false), ("C", false)])
            .iter()
            .map(|v| v.variable)
            .collect();
        assert_eq!(named, ["B", "C"]);
    }

    #[test]
    fn only_a_vm_or_a_verified_kernel_serves() {
        assert!(proven(Isolation::Vm).is_none());
        assert!(proven(Isolation::Kernel).is_none());
        for low in [Isolation::Container, Isolation::Process, Isolation::None] {
            assert_eq!(proven(low).unwrap().variable, "SANDBOX_PROVIDER");
        }
    }
}
