//! The e2b provider's settings and its registration: the API key, the
//! control plane's and envd's addresses, the template, and the per-run
//! maxima the live VM is checked against.

use std::sync::Arc;

use url::Url;

use crate::env::{ConfigError, Env, Var};
use crate::hardened::Violation;
use crate::provider::hosted::endpoint;
use crate::provider::{
    Checks, Chosen, Plugin, Provider, ProviderSettings, ResourceSettings, Setup,
};
use crate::readiness::{Check, Level};
use crate::secret::Secret;

use crate::provider::hosted::guard_url::GuardUrl;

/// E2B's control plane.
pub const DEFAULT_API_URL: &str = "https://api.e2b.app";
/// E2B's sandbox domain: envd answers at `https://49983-<id>.<domain>`.
pub const DEFAULT_DOMAIN: &str = "e2b.app";
/// The template when none is named.
pub const DEFAULT_TEMPLATE: &str = "base";

/// The variables only the e2b provider reads.
const EXCLUSIVE: &[&str] = &[
    "E2B_API_KEY",
    "E2B_API_URL",
    "E2B_DOMAIN",
    "E2B_SANDBOX_URL",
    "E2B_TEMPLATE",
    "E2B_GUARD_URL",
    "E2B_SESSION_GRANTS",
];

const VARIABLES: &[Var] = &[
    Var {
        name: "E2B_API_KEY",
        default: "required",
        help: "e2b: the team's API key (e2b_<hex>); sent only to the control plane",
    },
    Var {
        name: "E2B_API_URL",
        default: DEFAULT_API_URL,
        help: "e2b: the control plane (https; http only to a loopback address, for a stand-in)",
    },
    Var {
        name: "E2B_DOMAIN",
        default: DEFAULT_DOMAIN,
        help: "e2b: the sandbox domain; envd is reached at https://49983-<sandbox id>.<domain>",
    },
    Var {
        name: "E2B_SANDBOX_URL",
        default: "unset",
        help: "e2b: one address for every sandbox's envd, the sandbox named by the E2b-Sandbox-Id header (E2B's stable proxy host, or a stand-in)",
    },
    Var {
        name: "E2B_TEMPLATE",
        default: DEFAULT_TEMPLATE,
        help: "e2b: the template (E2B's prebuilt VM image, id or alias) every run boots",
    },
    Var {
        name: "E2B_GUARD_URL",
        default: "unset",
        help: "e2b: the egress guard URL granted VMs reach their broker at (https, port 443, a DNS name; path default /v1/e2b/guard); needs PLIMSOLL_GUARD_ADDR",
    },
    Var {
        name: "E2B_SESSION_GRANTS",
        default: "unset",
        help: "e2b: session or call; a session's VM carries no grants in this build, so it is refused",
    },
];

/// The e2b provider's registration.
pub static PLUGIN: Plugin = Plugin {
    name: "e2b",
    variables: VARIABLES,
    exclusive: EXCLUSIVE,
    areas: &["e2b"],
    remote: true,
    metered: true,
    from_env,
    defaults: || Chosen::new(E2bSettings::default()),
};

/// Where envd is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvdAddress {
    /// `https://49983-<id>.<domain>`.
    Domain(String),
    /// One base for every sandbox, which `E2b-Sandbox-Id` and
    /// `E2b-Sandbox-Port` name.
    Proxy(Url),
}

/// The e2b provider's settings.
#[derive(Debug, Clone)]
pub struct E2bSettings {
    /// `E2B_API_KEY` (shared: settings are cloned, the key never printed).
    pub api_key: Option<Arc<Secret>>,
    /// `E2B_API_URL`.
    pub api_url: Url,
    /// `E2B_DOMAIN` or `E2B_SANDBOX_URL`.
    pub envd: EnvdAddress,
    /// `E2B_TEMPLATE`.
    pub template: String,
    /// `SANDBOX_MEMORY_MB`: the most memory a VM may have, MB.
    pub max_memory_mb: Option<u32>,
    /// `SANDBOX_CPUS`: the most vCPUs a VM may have.
    pub max_cpus: Option<u32>,
    /// `SANDBOX_DISK_MB`: the most disk a VM may have, MB.
    pub max_disk_mb: Option<u32>,
    /// `E2B_GUARD_URL`: where granted VMs reach their broker (`None`: no grants).
    pub guard: Option<GuardUrl>,
}

impl Default for E2bSettings {
    fn default() -> E2bSettings {
        E2bSettings {
            api_key: None,
            #[expect(clippy::unwrap_used, reason = "a constant that parses")]
            api_url: Url::parse(DEFAULT_API_URL).unwrap(),
            envd: EnvdAddress::Domain(DEFAULT_DOMAIN.into()),
            template: DEFAULT_TEMPLATE.into(),
            max_memory_mb: None,
            max_cpus: None,
            max_disk_mb: None,
            guard: None,
        }
    }
}

/// A DNS name E2B's sandboxes live under (also checks a create's `domain`).
pub(crate) fn domain(raw: &str) -> Result<String, ConfigError> {
    let d = raw.trim().to_ascii_lowercase();
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if d.contains('.') && d.split('.').all(label_ok) {
        Ok(d)
    } else {
        Err(ConfigError::new(
            "E2B_DOMAIN",
            format!("{raw:?} is not a domain name"),
        ))
    }
}

impl E2bSettings {
    /// Reads the variables; refuses what it cannot honour.
    pub fn from_env(
        env: &Env<'_>,
        resources: &ResourceSettings,
    ) -> Result<E2bSettings, ConfigError> {
        resources.only(
            "e2b",
            &["SANDBOX_MEMORY_MB", "SANDBOX_CPUS", "SANDBOX_DISK_MB"],
        )?;
        if env.get("E2B_SESSION_GRANTS").is_some() {
            return Err(ConfigError::new(
                "E2B_SESSION_GRANTS",
                "an e2b session's VM carries no grants in this build (it has no way out, not even to the guard); unset it",
            ));
        }
        let guard = env
            .get("E2B_GUARD_URL")
            .map(|u| GuardUrl::parse("E2B_GUARD_URL", &u))
            .transpose()?;
        let api_key = env
            .get("E2B_API_KEY")
            .filter(|k| !k.trim().is_empty())
            .ok_or_else(|| ConfigError::new("E2B_API_KEY", "required for SANDBOX_PROVIDER=e2b"))?;
        let key = api_key.trim();
        if !key.bytes().all(|c| c.is_ascii_graphic()) {
            return Err(ConfigError::new(
                "E2B_API_KEY",
                "holds a character a header cannot carry",
            ));
        }
        let cpus = match resources.cpus {
            None => None,
            Some(c) if c >= 1.0 && c.fract() == 0.0 && c <= 64.0 => Some(c as u32),
            Some(_) => {
                return Err(ConfigError::new(
                    "SANDBOX_CPUS",
                    "e2b VMs have whole vCPUs: give an integer from 1 to 64",
                ));
            }
        };
        let envd = match (env.get("E2B_SANDBOX_URL"), env.get("E2B_DOMAIN")) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::new(
                    "E2B_SANDBOX_URL",
                    "set it or E2B_DOMAIN, not both",
                ));
            }
            (Some(u), None) => EnvdAddress::Proxy(endpoint("E2B_SANDBOX_URL", &u)?),
            (None, Some(d)) => EnvdAddress::Domain(domain(&d)?),
            (None, None) => EnvdAddress::Domain(DEFAULT_DOMAIN.into()),
        };
        let template = env
            .get("E2B_TEMPLATE")
            .map(|t| t.trim().to_owned())
            .unwrap_or_else(|| DEFAULT_TEMPLATE.into());
        let template_ok = !template.is_empty()
            && template.len() <= 128
            && template
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || b"-_.:/".contains(&c));
        if !template_ok {
            return Err(ConfigError::new(
                "E2B_TEMPLATE",
                "a template id or alias: letters, digits and - _ . : / only",
            ));
        }
        Ok(E2bSettings {
            api_key: Some(Arc::new(Secret::new(key.to_owned()))),
            api_url: match env.get("E2B_API_URL") {
                Some(u) => endpoint("E2B_API_URL", &u)?,
                None => E2bSettings::default().api_url,
            },
            envd,
            template,
            max_memory_mb: resources.memory_mb,
            max_cpus: cpus,
            max_disk_mb: resources.disk_mb,
            guard,
        })
    }
}

fn from_env(env: &Env<'_>, resources: &ResourceSettings) -> Result<Chosen, ConfigError> {
    Ok(Chosen::new(E2bSettings::from_env(env, resources)?))
}

impl ProviderSettings for E2bSettings {
    fn plugin(&self) -> &'static Plugin {
        &PLUGIN
    }

    fn guard_path(&self) -> Option<String> {
        self.guard.as_ref().map(|g| g.path.clone())
    }

    fn build(&self, setup: &Setup) -> Result<Arc<dyn Provider>, ConfigError> {
        Ok(Arc::new(super::E2b::new(self, setup)?))
    }

    fn hardened(
        &self,
        env: &Env<'_>,
        resources: &ResourceSettings,
        admission: &crate::admission::Limits,
    ) -> Vec<Violation> {
        let mut v = Vec::new();
        if env.get("E2B_TEMPLATE").is_none() {
            v.push(Violation::new(
                "E2B_TEMPLATE",
                "must name the template explicitly in hardened mode",
            ));
        }
        v.extend(resources.hardened_envelope(
            admission,
            &["SANDBOX_MEMORY_MB", "SANDBOX_CPUS", "SANDBOX_DISK_MB"],
        ));
        v
    }

    fn doctor<'a>(&'a self, setup: &'a Setup, chosen: bool) -> Checks<'a> {
        Box::pin(async move {
            if !chosen {
                return Vec::new();
            }
            let started = std::time::Instant::now();
            let provider = match super::E2b::new(self, setup) {
                Ok(p) => p,
                Err(e) => return vec![Check::new("e2b", "settings", Level::Fail, e.to_string())],
            };
            let mut out = vec![Check::new(
                "e2b",
                "settings",
                Level::Ok,
                match &self.guard {
                    None => format!(
                        "control plane {}, template {}, no grants (E2B_GUARD_URL unset)",
                        self.api_url, self.template
                    ),
                    Some(g) => format!(
                        "control plane {}, template {}, grants through the egress guard at {} \
                         (served on PLIMSOLL_GUARD_ADDR)",
                        self.api_url,
                        self.template,
                        g.base()
                    ),
                },
            )];
            out.push(match provider.prove().await {
                Ok(tier) => Check::new(
                    "e2b",
                    "startup proof",
                    Level::Ok,
                    format!(
                        "a throwaway VM passed the proof in {} ms (tier {})",
                        started.elapsed().as_millis(),
                        tier.as_str()
                    ),
                ),
                Err(e) => Check::new("e2b", "startup proof", Level::Fail, e.message().to_owned()),
            });
            out
        })
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(
        vars: &[(&str, &str)],
        resources: ResourceSettings,
    ) -> Result<E2bSettings, ConfigError> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let get = move |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        E2bSettings::from_env(&Env::new(&get), &resources)
    }

    #[test]
    fn the_key_is_required_and_never_printed() {
        let e = read(&[], ResourceSettings::default()).unwrap_err();
        assert_eq!(e.variable, "E2B_API_KEY");
        let s = read(
            &[("E2B_API_KEY", "e2b_0123abcd")],
            ResourceSettings::default(),
        )
        .unwrap();
        assert!(!format!("{s:?}").contains("0123abcd"), "{s:?}");
        assert_eq!(s.api_url.as_str(), "https://api.e2b.app/");
        assert_eq!(s.envd, EnvdAddress::Domain("e2b.app".into()));
        assert_eq!(s.template, "base");
    }

    #[test]
    fn addresses_are_https_or_loopback_http() {
        let key = ("E2B_API_KEY", "e2b_00");
        let r = ResourceSettings::default();
        for bad in [
            "http://api.e2b.app",
            "http://127.0.0.1.nip.io:3000",
            "ftp://api.e2b.app",
            "https://u:p@api.e2b.app",
            "https://api.e2b.app/?x=1",
        ] {
            let e = read(&[key, ("E2B_API_URL", bad)], r).unwrap_err();
            assert_eq!(e.variable, "E2B_API_URL", "{bad}");
        }
        let s = read(
            &[
                key,
                ("E2B_API_URL", "http://127.0.0.1:3000"),
                ("E2B_SANDBOX_URL", "http://[::1]:49983"),
            ],
            r,
        )
        .unwrap();
        assert_eq!(s.api_url.as_str(), "http://127.0.0.1:3000/");
        assert!(matches!(s.envd, EnvdAddress::Proxy(_)));
        let e = read(
            &[
                key,
                ("E2B_SANDBOX_URL", "http://[::1]:1"),
                ("E2B_DOMAIN", "e2b.dev"),
            ],
            r,
        )
        .unwrap_err();
        assert_eq!(e.variable, "E2B_SANDBOX_URL");
        assert_eq!(
            read(&[key, ("E2B_DOMAIN", "sbx..x")], r)
                .unwrap_err()
                .variable,
            "E2B_DOMAIN"
        );
    }

    #[test]
    fn resources_are_whole_vcpus_and_no_pid_cap_and_grants_are_refused() {
        let key = ("E2B_API_KEY", "e2b_00");
        let r = |f: fn(&mut ResourceSettings)| {
            let mut r = ResourceSettings::default();
            f(&mut r);
            read(&[key], r)
        };
        assert_eq!(
            r(|r| r.cpus = Some(1.5)).unwrap_err().variable,
            "SANDBOX_CPUS"
        );
        assert_eq!(
            r(|r| r.pids = Some(64)).unwrap_err().variable,
            "SANDBOX_PIDS"
        );
        let s = r(|r| {
            r.cpus = Some(2.0);
            r.memory_mb = Some(512);
        })
        .unwrap();
        assert_eq!((s.max_cpus, s.max_memory_mb), (Some(2), Some(512)));
        let e = read(
            &[key, ("E2B_SESSION_GRANTS", "call")],
            ResourceSettings::default(),
        )
        .unwrap_err();
        assert_eq!(e.variable, "E2B_SESSION_GRANTS");
        let e = read(
            &[key, ("E2B_GUARD_URL", "https://127.0.0.1/g")],
            ResourceSettings::default(),
        )
        .unwrap_err();
        assert_eq!(e.variable, "E2B_GUARD_URL");
        let s = read(
            &[key, ("E2B_GUARD_URL", "https://guard.example.com")],
            ResourceSettings::default(),
        )
        .unwrap();
        assert_eq!(s.guard_path().as_deref(), Some("/v1/e2b/guard"));
        assert_eq!(
            read(&[key, ("E2B_TEMPLATE", "a b")], ResourceSettings::default())
                .unwrap_err()
                .variable,
            "E2B_TEMPLATE"
        );
    }
}
