//! What holds a tier's wall up: every part, with the version the part itself
//! reports, and the digest of that list (the wall's identity).
//!
//! A provider reads its wall at startup ([`crate::provider::Provider::wall`]):
//! docker names the host kernel, the engine and its negotiated API, the OCI
//! runtime's own `--version` output, the seccomp profile and each image's
//! content-addressed ID; wasm names wasmtime, QuickJS-NG and the guest
//! module's SHA-256. The identity goes into every record's `policy`
//! ([`Wall::policy_suffix`]), so two runs on different runtimes differ in
//! their evidence; Describe, `plimsolld --check` and the startup log list the
//! parts. Known escapes in those parts are judged by [`crate::advisory`].

use sha2::{Digest, Sha256};

/// One part of a wall.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Part {
    /// What it is: `host kernel`, `docker engine`, `oci runtime runc`,
    /// `seccomp profile`, `image snippet`, `wasmtime`, …
    pub name: String,
    /// What the part reports of itself (a version line, an ID, a digest).
    pub version: String,
}

/// A wall: its parts, and the advisories that match them.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Wall {
    /// The parts, in the provider's order.
    pub parts: Vec<Part>,
    /// Known escapes whose affected versions include a part, as
    /// [`crate::advisory::assess`] judged them; empty until assessed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub advisories: Vec<Finding>,
}

impl Wall {
    /// Adds a part.
    pub fn part(mut self, name: impl Into<String>, version: impl Into<String>) -> Wall {
        self.parts.push(Part {
            name: name.into(),
            version: version.into(),
        });
        self
    }

    /// The version of the part named `name`, if the wall has it.
    pub fn version_of(&self, name: &str) -> Option<&str> {
        self.parts
            .iter()
            .find(|p| p.name == name)
            .map(|p| p.version.as_str())
    }

    /// `sha256:<hex>` over the parts (domain `plimsoll.wall.v1`, then each
    /// name and version length-prefixed), or empty for a wall with no parts.
    pub fn identity(&self) -> String {
        if self.parts.is_empty() {
            return String::new();
        }
        let mut h = Sha256::new();
        let mut put = |s: &str| {
            h.update((s.len() as u64).to_be_bytes());
            h.update(s.as_bytes());
        };
        put("plimsoll.wall.v1");
        for p in &self.parts {
            put(&p.name);
            put(&p.version);
        }
        format!("sha256:{}", hex::encode(h.finalize()))
    }

    /// What every record's `policy` carries after the provider's own policy:
    /// `;wall=sha256:…`, then `;accepted=<id>+<id>` when the operator
    /// accepted advisories that apply. Empty for a wall with no parts.
    pub fn policy_suffix(&self) -> String {
        let id = self.identity();
        if id.is_empty() {
            return String::new();
        }
        let accepted: Vec<&str> = self
            .advisories
            .iter()
            .filter(|f| f.accepted)
            .map(|f| f.id.as_str())
            .collect();
        if accepted.is_empty() {
            format!(";wall={id}")
        } else {
            format!(";wall={id};accepted={}", accepted.join("+"))
        }
    }

    /// One line per part (`name: version`), for the startup log and the doctor.
    pub fn summary(&self) -> String {
        self.parts
            .iter()
            .map(|p| format!("{}: {}", p.name, p.version))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// A match between a wall's part and an advisory.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Finding {
    /// The advisory's ID (`CVE-…`).
    pub id: String,
    /// The vendor's advisory (`GHSA-…`).
    pub advisory: String,
    /// The wall part it matched.
    pub part: String,
    /// What the part reported.
    pub version: String,
    /// The first fixed release of each line.
    pub fixed: Vec<String>,
    /// Whether it reaches a guest as plimsoll runs the part.
    pub exposed: bool,
    /// The ways it does (`session`, `exec`), empty when not exposed.
    pub ways: Vec<String>,
    /// Named in `SANDBOX_ACCEPT_ADVISORIES`.
    pub accepted: bool,
    /// What it allows.
    pub summary: String,
    /// Why it is or is not exposed.
    pub why: String,
}

impl Finding {
    /// One line: `CVE-… (GHSA-…) matches <part> <version>: exposed in session,
    /// exec: <why>`.
    pub fn line(&self) -> String {
        let state = match (self.exposed, self.accepted) {
            (true, true) => format!(
                "exposed ({}), accepted by the operator",
                self.ways.join(", ")
            ),
            (true, false) => format!("exposed ({})", self.ways.join(", ")),
            (false, _) => "not exposed as plimsoll uses it".to_owned(),
        };
        let fixed = if self.fixed.is_empty() {
            "no confirmed release".to_owned()
        } else {
            self.fixed.join(", ")
        };
        format!(
            "{} ({}) matches {} [{}], fixed in {fixed}: {state}: {}; {}",
            self.id, self.advisory, self.part, self.version, self.summary, self.why
        )
    }
}

/// A service address as a wall names it: scheme, host, port and path, never
/// a user, password, query or fragment (a wall is logged and digested).
pub fn address(url: &url::Url) -> String {
    let mut u = url.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.set_query(None);
    u.set_fragment(None);
    u.to_string()
}

/// The wall identity a record's `policy` names (`sha256:…` after `;wall=`),
/// or empty when it names none.
pub fn identity_in(policy: &str) -> &str {
    policy
        .split(';')
        .find_map(|p| p.strip_prefix("wall="))
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_carries_no_credential() {
        let u = url::Url::parse("https://user:s3cret@api.example:8443/v1/?key=s3cret#x").unwrap();
        assert_eq!(address(&u), "https://api.example:8443/v1/");
    }

    #[test]
    fn the_identity_covers_every_part_and_only_the_parts() {
        let a = Wall::default()
            .part("host kernel", "6.1.0")
            .part("oci runtime runc", "runc version 1.1.5+ds1");
        let b = Wall::default()
            .part("host kernel", "6.1.0")
            .part("oci runtime runsc", "runsc version 0.0~20221219.0");
        assert!(a.identity().starts_with("sha256:"));
        assert_eq!(a.identity().len(), "sha256:".len() + 64);
        assert_ne!(a.identity(), b.identity());
        // Length prefixes: moving a byte between name and version changes it.
        let c = Wall::default().part("ab", "c");
        let d = Wall::default().part("a", "bc");
        assert_ne!(c.identity(), d.identity());
        assert_eq!(Wall::default().identity(), "");
        assert_eq!(Wall::default().policy_suffix(), "");
        assert_eq!(a.policy_suffix(), format!(";wall={}", a.identity()));
        assert_eq!(a.version_of("host kernel"), Some("6.1.0"));
        let policy = format!(
            "docker-policy:seccomp=plimsoll:sha256:ab{};sandbox=warm-pool",
            a.policy_suffix()
        );
        assert_eq!(identity_in(&policy), a.identity());
        assert_eq!(identity_in("docker-policy:seccomp=plimsoll:sha256:ab"), "");
        assert_eq!(
            a.summary(),
            "host kernel: 6.1.0; oci runtime runc: runc version 1.1.5+ds1"
        );
    }
}
