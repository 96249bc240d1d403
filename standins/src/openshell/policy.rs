//! Sandbox policies as `GetSandboxConfig` reports them: the create's
//! `spec.policy`, or the stand-in's default when it names none, and its
//! `policy_hash` as the gateway computes it ([`hash`], shared with the
//! provider from `plimsoll-openshell-proto`).

use std::collections::HashMap;

use super::proto::sandbox::v1 as sb;
pub use plimsoll_openshell_proto::policy::hash;

/// The policy a sandbox gets when its create names none: deny-all network
/// (no rules), writes only under `/tmp`, Landlock best effort, the image's
/// user. What the stand-in's containers enforce.
pub fn default_policy() -> sb::SandboxPolicy {
    sb::SandboxPolicy {
        version: 1,
        filesystem: Some(sb::FilesystemPolicy {
            include_workdir: false,
            read_only: vec!["/".into()],
            read_write: vec!["/tmp".into()],
        }),
        landlock: Some(sb::LandlockPolicy {
            compatibility: "best_effort".into(),
        }),
        process: Some(sb::ProcessPolicy::default()),
        network_policies: HashMap::new(),
        network_middlewares: HashMap::new(),
    }
}

/// The policy the `policy-drift` fault reports instead: the same, plus a
/// network rule letting everything out.
pub fn drifted(policy: &sb::SandboxPolicy) -> sb::SandboxPolicy {
    let mut p = policy.clone();
    p.network_policies.insert(
        "standin-drift".into(),
        sb::NetworkPolicyRule {
            name: "standin-drift".into(),
            endpoints: vec![sb::NetworkEndpoint {
                host: "*".into(),
                port: 443,
                ..sb::NetworkEndpoint::default()
            }],
            binaries: Vec::new(),
        },
    );
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_order_does_not_change_the_hash() {
        let a = drifted(&default_policy());
        let mut b = a.clone();
        b.network_policies
            .insert("another".into(), sb::NetworkPolicyRule::default());
        let mut c = default_policy();
        c.network_policies
            .insert("another".into(), sb::NetworkPolicyRule::default());
        c = drifted(&c);
        assert_eq!(hash(&b), hash(&c));
        assert_ne!(hash(&a), hash(&default_policy()));
        assert_eq!(hash(&default_policy()).len(), 64);
    }
}
