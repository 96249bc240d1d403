//! A guard URL (`E2B_GUARD_URL`, `SANDBOX_DOCKERCLOUD_GUARD_URL`): where a
//! granted VM that runs elsewhere reaches its run's broker. The VM's only
//! allowed egress is this host (E2B: through its egress proxy, which adds
//! the run's guard credential as a header rule; Docker Cloud: the one rule
//! of its network policy, the guest holding its own credential);
//! plimsolld's guard listener (`PLIMSOLL_GUARD_ADDR`) serves the path
//! behind whatever public TLS endpoint the operator puts at this URL.
//!
//! The rules: absolute `https`, port 443 (explicit or implied, since the VM
//! connects to the name with no port), a DNS name that is neither an IP
//! literal nor loopback (the vendors' egress rules match names), no
//! credentials, query or fragment, and a canonical path: no `.` or `..`
//! segment, no empty segment (`//`), no trailing slash except the root, and
//! segments of `[A-Za-z0-9._~-]` only. A URL with no path serves the guard
//! at [`DEFAULT_PATH`].
//!
//! Also here: [`without_guard_credentials`], which scrubs guard credentials
//! from a control-plane answer before any of it reaches an error.

use std::sync::Arc;

use url::{Host, Url};

use crate::env::ConfigError;
use crate::grant::guard::{CREDENTIAL_PREFIX, DEFAULT_PATH, Guard};
use crate::provider::Setup;

/// The egress guard a provider's granted runs reach, and where.
pub(crate) struct Egress {
    /// The guard that admits each run's credential.
    pub guard: Arc<Guard>,
    /// Where the guest reaches it.
    pub url: GuardUrl,
}

impl Egress {
    /// The guard at `url` (read from `variable`): the one `setup` holds
    /// (plimsolld serves it), else a fresh one; refused when the setup's
    /// guard serves another path.
    pub(crate) fn new(
        variable: &'static str,
        url: &GuardUrl,
        setup: &Setup,
    ) -> Result<Egress, ConfigError> {
        let path = url.path.trim_end_matches('/');
        let guard = match &setup.guard {
            Some(g) if g.path() == path => g.clone(),
            Some(_) => {
                return Err(ConfigError::new(
                    variable,
                    "the guard this provider was given serves another path",
                ));
            }
            None => Guard::new(path),
        };
        Ok(Egress {
            guard,
            url: url.clone(),
        })
    }
}

/// A checked guard URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardUrl {
    /// The DNS name, lowercase: the VM's one allowed destination.
    pub host: String,
    /// The guard path (`/` for the root, else no trailing slash).
    pub path: String,
}

impl GuardUrl {
    /// The base the guest's host API client calls below:
    /// `https://<host><path>` (no trailing slash).
    pub fn base(&self) -> String {
        format!("https://{}{}", self.host, self.path.trim_end_matches('/'))
    }

    /// Reads and checks the guard URL in `variable`.
    pub fn parse(variable: &'static str, raw: &str) -> Result<GuardUrl, ConfigError> {
        let refuse = |m: &str| Err(ConfigError::new(variable, m.to_owned()));
        let raw = raw.trim();
        let url = match Url::parse(raw) {
            Ok(u) => u,
            Err(e) => return Err(ConfigError::new(variable, format!("not a URL: {e}"))),
        };
        if url.scheme() != "https" {
            return refuse("must be an https URL");
        }
        if !url.username().is_empty() || url.password().is_some() {
            return refuse("must not carry credentials");
        }
        if url.query().is_some() || url.fragment().is_some() || raw.contains(['?', '#']) {
            return refuse("must not carry a query or a fragment");
        }
        let host = match url.host() {
            Some(Host::Domain(d)) => d.to_ascii_lowercase(),
            Some(Host::Ipv4(_) | Host::Ipv6(_)) => {
                return refuse("must name a host by DNS name, not an IP address");
            }
            None => return refuse("names no host"),
        };
        if host == "localhost" || host.ends_with(".localhost") {
            return refuse(
                "must not name a loopback host: the VM reaches it from the vendor's network",
            );
        }
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        if !host.split('.').all(label_ok) || host.parse::<std::net::Ipv4Addr>().is_ok() {
            return refuse("must name a host by a DNS name of letters, digits and hyphens");
        }
        if url.port().is_some_and(|p| p != 443) {
            return refuse("must use port 443: the VM reaches the host on HTTPS's port");
        }
        // The path as written: `Url` would resolve `..` and hide it.
        let after_scheme = &raw["https://".len().min(raw.len())..];
        let path = match after_scheme.find('/') {
            None => DEFAULT_PATH.to_owned(),
            Some(at) => after_scheme[at..].to_owned(),
        };
        if path != "/" {
            let segment_ok = |s: &str| {
                !s.is_empty()
                    && s != "."
                    && s != ".."
                    && s.bytes()
                        .all(|c| c.is_ascii_alphanumeric() || b"._~-".contains(&c))
            };
            if !path[1..].split('/').all(segment_ok) {
                return refuse(
                    "its path must be canonical: no `.` or `..` segment, no `//`, no trailing \
                     slash, and segments of letters, digits and . _ ~ - only",
                );
            }
        }
        Ok(GuardUrl { host, path })
    }
}

/// `body` with every `crg_<64 hex>` replaced by `crg_[redacted]`.
pub(crate) fn without_guard_credentials(body: &[u8]) -> Vec<u8> {
    let prefix = CREDENTIAL_PREFIX.as_bytes();
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        let rest = &body[i..];
        let hex = rest.get(prefix.len()..prefix.len() + 64);
        if rest.starts_with(prefix)
            && hex.is_some_and(|h| h.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')))
        {
            out.extend_from_slice(prefix);
            out.extend_from_slice(b"[redacted]");
            i += prefix.len() + 64;
        } else {
            out.push(body[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const VAR: &str = "E2B_GUARD_URL";

    #[test]
    fn a_good_url_gives_its_host_and_path() {
        let g = GuardUrl::parse(VAR, "https://Guard.Example.com/v1/e2b/guard").unwrap();
        assert_eq!(
            (g.host.as_str(), g.path.as_str()),
            ("guard.example.com", "/v1/e2b/guard")
        );
        assert_eq!(g.base(), "https://guard.example.com/v1/e2b/guard");
        let g = GuardUrl::parse(VAR, "https://guard.example.com:443").unwrap();
        assert_eq!(g.path, DEFAULT_PATH);
        assert_eq!(g.base(), "https://guard.example.com/v1/e2b/guard");
        let g = GuardUrl::parse(VAR, "https://guard.example.com/").unwrap();
        assert_eq!(
            (g.path.as_str(), g.base()),
            ("/", "https://guard.example.com".into())
        );
        assert_eq!(
            GuardUrl::parse(VAR, "https://g.plimsoll.test/a_b/c-d.e~f")
                .unwrap()
                .path,
            "/a_b/c-d.e~f"
        );
    }

    #[test]
    fn each_refusal_names_the_variable() {
        for (bad, why) in [
            ("http://guard.example.com/g", "https"),
            ("guard.example.com/g", "not a URL"),
            ("https://u:p@guard.example.com/g", "credentials"),
            ("https://u@guard.example.com/g", "credentials"),
            ("https://guard.example.com/g?x=1", "query"),
            ("https://guard.example.com/g?", "query"),
            ("https://guard.example.com/g#f", "fragment"),
            ("https://203.0.113.7/g", "IP address"),
            ("https://[2001:db8::1]/g", "IP address"),
            ("https://localhost/g", "loopback"),
            ("https://a.localhost/g", "loopback"),
            ("https://guard.example.com:8443/g", "port 443"),
            ("https://guard.example.com/a/../g", "canonical"),
            ("https://guard.example.com/a/./g", "canonical"),
            ("https://guard.example.com//g", "canonical"),
            ("https://guard.example.com/g/", "canonical"),
            ("https://guard.example.com/g%2f", "canonical"),
            ("https://guard.example.com/..", "canonical"),
        ] {
            let e = GuardUrl::parse(VAR, bad).unwrap_err();
            assert_eq!(e.variable, VAR, "{bad}");
            assert!(e.to_string().contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn a_refusal_never_carries_a_guard_credential() {
        let c = format!("crg_{}", "0f".repeat(32));
        let body = format!(r#"{{"message":"bad rule Bearer {c}","x":"crg_short"}}"#);
        let out = String::from_utf8(without_guard_credentials(body.as_bytes())).unwrap();
        assert_eq!(
            out,
            r#"{"message":"bad rule Bearer crg_[redacted]","x":"crg_short"}"#
        );
    }
}
