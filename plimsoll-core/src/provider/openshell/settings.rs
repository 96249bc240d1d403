//! The openshell provider's settings and its registration: the gateway's
//! address, the mutual-TLS files (read once, at startup), the image every
//! sandbox boots, and the memory and CPU every sandbox requests (OpenShell's
//! own default is unlimited, so a limit is always asked for).

use std::sync::Arc;

use url::Url;

use crate::env::{ConfigError, Env, Var};
use crate::hardened::Violation;
use crate::provider::{
    Checks, Chosen, Plugin, Provider, ProviderSettings, ResourceSettings, Setup,
};
use crate::readiness::{Check, Level};
use crate::secret::Secret;

/// Memory every sandbox requests when `SANDBOX_MEMORY_MB` is unset, MiB.
pub const DEFAULT_MEMORY_MIB: u32 = 256;
/// CPUs every sandbox requests when `SANDBOX_CPUS` is unset.
pub const DEFAULT_CPUS: f64 = 1.0;
/// The largest PEM file read (a CA bundle, a certificate chain or a key).
const MAX_PEM: u64 = 1 << 20;

/// The variables only the openshell provider reads.
const EXCLUSIVE: &[&str] = &[
    "SANDBOX_OPENSHELL_GATEWAY_URL",
    "SANDBOX_OPENSHELL_CA_FILE",
    "SANDBOX_OPENSHELL_CERT_FILE",
    "SANDBOX_OPENSHELL_KEY_FILE",
    "SANDBOX_OPENSHELL_IMAGE",
];

const VARIABLES: &[Var] = &[
    Var {
        name: "SANDBOX_OPENSHELL_GATEWAY_URL",
        default: "required",
        help: "openshell: the gateway, https://host:port (no path); spoken to in gRPC over mutual TLS",
    },
    Var {
        name: "SANDBOX_OPENSHELL_CA_FILE",
        default: "required",
        help: "openshell: PEM of the CA the gateway's certificate must chain to (the CLI bundle's ca.crt)",
    },
    Var {
        name: "SANDBOX_OPENSHELL_CERT_FILE",
        default: "required",
        help: "openshell: PEM of this daemon's client certificate (the CLI bundle's tls.crt)",
    },
    Var {
        name: "SANDBOX_OPENSHELL_KEY_FILE",
        default: "required",
        help: "openshell: PEM of the client certificate's private key (the CLI bundle's tls.key); read once at startup, never logged",
    },
    Var {
        name: "SANDBOX_OPENSHELL_IMAGE",
        default: "required",
        help: "openshell: the image every sandbox boots (sh, node, tar; its user not root); the toolchain is baked in, runs have no network",
    },
];

/// The openshell provider's registration.
pub static PLUGIN: Plugin = Plugin {
    name: "openshell",
    variables: VARIABLES,
    exclusive: EXCLUSIVE,
    areas: &["openshell"],
    // The sandboxes run on the gateway's host: the memory budget is not
    // this daemon's (a gateway on this same host is the operator's sizing).
    remote: true,
    metered: false,
    from_env,
    defaults: || Chosen::new(OpenShellSettings::default()),
};

/// The openshell provider's settings.
#[derive(Debug, Clone)]
pub struct OpenShellSettings {
    /// `SANDBOX_OPENSHELL_GATEWAY_URL`.
    pub gateway_url: Option<Url>,
    /// The CA bundle's PEM (`SANDBOX_OPENSHELL_CA_FILE`).
    pub ca_pem: Vec<u8>,
    /// The client certificate's PEM (`SANDBOX_OPENSHELL_CERT_FILE`).
    pub cert_pem: Vec<u8>,
    /// The client key's PEM (`SANDBOX_OPENSHELL_KEY_FILE`; shared, never printed).
    pub key_pem: Option<Arc<Secret>>,
    /// `SANDBOX_OPENSHELL_IMAGE`.
    pub image: String,
    /// Memory every sandbox requests, MiB.
    pub memory_mib: u32,
    /// CPUs every sandbox requests.
    pub cpus: f64,
}

impl Default for OpenShellSettings {
    fn default() -> OpenShellSettings {
        OpenShellSettings {
            gateway_url: None,
            ca_pem: Vec::new(),
            cert_pem: Vec::new(),
            key_pem: None,
            image: String::new(),
            memory_mib: DEFAULT_MEMORY_MIB,
            cpus: DEFAULT_CPUS,
        }
    }
}

fn required(env: &Env<'_>, name: &'static str) -> Result<String, ConfigError> {
    env.get(name)
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .ok_or_else(|| ConfigError::new(name, "required for SANDBOX_PROVIDER=openshell"))
}

/// Reads the PEM file `path` names (at most [`MAX_PEM`] bytes, holding a
/// PEM block).
fn pem(name: &'static str, path: &str) -> Result<Vec<u8>, ConfigError> {
    let meta =
        std::fs::metadata(path).map_err(|e| ConfigError::new(name, format!("{path}: {e}")))?;
    if !meta.is_file() || meta.len() > MAX_PEM {
        return Err(ConfigError::new(
            name,
            format!("{path}: not a regular file of at most 1 MiB"),
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| ConfigError::new(name, format!("{path}: {e}")))?;
    if !bytes.windows(11).any(|w| w == b"-----BEGIN ") {
        return Err(ConfigError::new(
            name,
            format!("{path}: holds no PEM block"),
        ));
    }
    Ok(bytes)
}

/// The gateway's address: `https://host[:port]`, nothing else.
fn gateway_url(raw: &str) -> Result<Url, ConfigError> {
    const NAME: &str = "SANDBOX_OPENSHELL_GATEWAY_URL";
    let url = Url::parse(raw).map_err(|e| ConfigError::new(NAME, format!("not a URL: {e}")))?;
    let refuse = |m: &str| Err(ConfigError::new(NAME, m.to_owned()));
    if url.scheme() != "https" {
        return refuse("must be https://host:port (the gateway is reached over mutual TLS)");
    }
    if !url.username().is_empty() || url.password().is_some() {
        return refuse("must not carry credentials");
    }
    if url.host_str().is_none_or(str::is_empty) {
        return refuse("names no host");
    }
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return refuse("must be https://host:port, with no path, query or fragment");
    }
    Ok(url)
}

impl OpenShellSettings {
    /// Reads the variables and the three PEM files; refuses what it cannot
    /// honour.
    pub fn from_env(
        env: &Env<'_>,
        resources: &ResourceSettings,
    ) -> Result<OpenShellSettings, ConfigError> {
        resources.only("openshell", &["SANDBOX_MEMORY_MB", "SANDBOX_CPUS"])?;
        let gateway = gateway_url(&required(env, "SANDBOX_OPENSHELL_GATEWAY_URL")?)?;
        let ca_pem = pem(
            "SANDBOX_OPENSHELL_CA_FILE",
            &required(env, "SANDBOX_OPENSHELL_CA_FILE")?,
        )?;
        let cert_pem = pem(
            "SANDBOX_OPENSHELL_CERT_FILE",
            &required(env, "SANDBOX_OPENSHELL_CERT_FILE")?,
        )?;
        let key = pem(
            "SANDBOX_OPENSHELL_KEY_FILE",
            &required(env, "SANDBOX_OPENSHELL_KEY_FILE")?,
        )?;
        let key = String::from_utf8(key)
            .map_err(|_| ConfigError::new("SANDBOX_OPENSHELL_KEY_FILE", "not a PEM text file"))?;
        let image = required(env, "SANDBOX_OPENSHELL_IMAGE")?;
        if image.len() > 512 || !image.bytes().all(|c| c.is_ascii_graphic()) {
            return Err(ConfigError::new(
                "SANDBOX_OPENSHELL_IMAGE",
                "not an image reference",
            ));
        }
        let memory_mib = match resources.memory_mb {
            None => DEFAULT_MEMORY_MIB,
            Some(m) if m >= 64 => m,
            Some(_) => {
                return Err(ConfigError::new(
                    "SANDBOX_MEMORY_MB",
                    "an OpenShell sandbox needs at least 64 MiB",
                ));
            }
        };
        let cpus = match resources.cpus {
            None => DEFAULT_CPUS,
            // Kubernetes quantities in millicores: 0.01 CPU is the least.
            Some(c) if (0.01..=256.0).contains(&c) && (c * 1000.0).fract() == 0.0 => c,
            Some(_) => {
                return Err(ConfigError::new(
                    "SANDBOX_CPUS",
                    "an OpenShell sandbox's CPUs are 0.01 to 256, in thousandths",
                ));
            }
        };
        Ok(OpenShellSettings {
            gateway_url: Some(gateway),
            ca_pem,
            cert_pem,
            key_pem: Some(Arc::new(Secret::new(key))),
            image,
            memory_mib,
            cpus,
        })
    }
}

fn from_env(env: &Env<'_>, resources: &ResourceSettings) -> Result<Chosen, ConfigError> {
    Ok(Chosen::new(OpenShellSettings::from_env(env, resources)?))
}

impl ProviderSettings for OpenShellSettings {
    fn plugin(&self) -> &'static Plugin {
        &PLUGIN
    }

    fn build(&self, setup: &Setup) -> Result<Arc<dyn Provider>, ConfigError> {
        Ok(Arc::new(super::OpenShell::new(self, setup)?))
    }

    fn hardened(
        &self,
        _env: &Env<'_>,
        resources: &ResourceSettings,
        admission: &crate::admission::Limits,
    ) -> Vec<Violation> {
        let mut v = Vec::new();
        if !crate::hardened::pinned_image(&self.image) {
            v.push(Violation::new(
                "SANDBOX_OPENSHELL_IMAGE",
                "must be pinned by digest in hardened mode: name@sha256:<64 hex>",
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
            let provider = match super::OpenShell::new(self, setup) {
                Ok(p) => p,
                Err(e) => {
                    return vec![Check::new(
                        "openshell",
                        "settings",
                        Level::Fail,
                        e.to_string(),
                    )];
                }
            };
            let mut out = vec![Check::new(
                "openshell",
                "settings",
                Level::Ok,
                format!(
                    "gateway {}, image {}",
                    self.gateway_url.as_ref().map_or("", Url::as_str),
                    self.image
                ),
            )];
            out.push(match Provider::preflight(&provider).await {
                Ok(()) => Check::new(
                    "openshell",
                    "gateway",
                    Level::Ok,
                    "reachable over mutual TLS; its compute driver is docker",
                ),
                Err(e) => Check::new("openshell", "gateway", Level::Fail, e.message().to_owned()),
            });
            let started = std::time::Instant::now();
            out.push(match Provider::prove(&provider).await {
                Ok(tier) => Check::new(
                    "openshell",
                    "startup proof",
                    Level::Ok,
                    format!(
                        "a throwaway sandbox passed the proof in {} ms (tier {})",
                        started.elapsed().as_millis(),
                        tier.as_str()
                    ),
                ),
                Err(e) => Check::new(
                    "openshell",
                    "startup proof",
                    Level::Fail,
                    e.message().to_owned(),
                ),
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
    use std::collections::HashMap;

    fn read(vars: &[(&str, &str)]) -> Result<OpenShellSettings, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let get = |k: &str| map.get(k).cloned();
        OpenShellSettings::from_env(&Env::new(&get), &ResourceSettings::default())
    }

    #[test]
    fn the_gateway_must_be_https_host_port_only() {
        for (raw, why) in [
            ("http://127.0.0.1:8080", "https"),
            ("https://gw.example:443/v1", "no path"),
            ("https://u:p@gw.example:443", "credentials"),
            ("https://gw.example:443/?a=b", "no path"),
        ] {
            let e = gateway_url(raw).expect_err(raw);
            assert!(e.to_string().contains(why), "{raw}: {e}");
        }
        assert!(gateway_url("https://127.0.0.1:17670").is_ok());
        // 443 is https's own port: the URL need not spell it.
        assert!(gateway_url("https://gw.example").is_ok());
    }

    #[test]
    fn every_file_is_required_and_must_hold_pem() {
        let dir = tempfile::tempdir().expect("tempdir");
        let good = dir.path().join("a.pem");
        std::fs::write(
            &good,
            "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n",
        )
        .expect("write");
        let bad = dir.path().join("b.pem");
        std::fs::write(&bad, "not pem").expect("write");
        let (good, bad) = (good.to_str().expect("utf-8"), bad.to_str().expect("utf-8"));
        let all = [
            ("SANDBOX_OPENSHELL_GATEWAY_URL", "https://127.0.0.1:17670"),
            ("SANDBOX_OPENSHELL_CA_FILE", good),
            ("SANDBOX_OPENSHELL_CERT_FILE", good),
            ("SANDBOX_OPENSHELL_KEY_FILE", good),
            ("SANDBOX_OPENSHELL_IMAGE", "plimsoll/project:latest"),
        ];
        let s = read(&all).expect("complete settings");
        assert_eq!((s.memory_mib, s.cpus), (DEFAULT_MEMORY_MIB, DEFAULT_CPUS));
        for i in 0..all.len() {
            let mut less = all.to_vec();
            let (name, _) = less.remove(i);
            let e = read(&less).expect_err(name);
            assert_eq!(e.variable, name);
        }
        let mut wrong = all.to_vec();
        wrong[3].1 = bad;
        assert!(
            read(&wrong)
                .expect_err("not pem")
                .to_string()
                .contains("no PEM")
        );
        let mut missing = all.to_vec();
        missing[2].1 = "/nonexistent/cert.pem";
        assert_eq!(
            read(&missing).expect_err("missing").variable,
            "SANDBOX_OPENSHELL_CERT_FILE"
        );
        let get = |k: &str| {
            all.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        };
        let pids = ResourceSettings {
            pids: Some(10),
            ..ResourceSettings::default()
        };
        let e = OpenShellSettings::from_env(&Env::new(&get), &pids).expect_err("pids");
        assert_eq!(e.variable, "SANDBOX_PIDS");
    }
}
