//! The dockercloud provider's settings and its registration: the Docker ID
//! and its personal access token, the auth and API addresses, the pinned
//! image, and the sandbox size.
//!
//! Two contracts: Docker's documented REST API (the default) and its Connect
//! contract (`SANDBOX_DOCKERCLOUD_API=connect`, whose management URL has no
//! documented default, so it must be given). Grants are Connect's: the
//! egress guard's URL and the (undocumented) policy API that sets the guard
//! rule are refused with REST. The store image is refused: not built.

use std::sync::Arc;

use url::Url;

use crate::env::{ConfigError, Env, Var};
use crate::hardened::Violation;
use crate::provider::hosted::endpoint;
use crate::provider::hosted::guard_url::GuardUrl;
use crate::provider::{
    Checks, Chosen, Plugin, Provider, ProviderSettings, ResourceSettings, Setup,
};
use crate::readiness::{Check, Level};
use crate::secret::Secret;

/// Docker Hub's token exchange.
pub const DEFAULT_AUTH_URL: &str = "https://hub.docker.com/v2/auth/token";
/// Docker's REST management API (routes are `/v1/...` below its path).
pub const DEFAULT_API_URL: &str = "https://connect.docker.com/sandboxes";
/// The undocumented API the `sbx` CLI sets a sandbox's network policy
/// through (routes are `/sandboxes/<id>/network-policy` below its path).
pub const DEFAULT_POLICY_URL: &str = "https://api.sandboxes-cloud.docker.com/v1";

/// The sizes Docker runs: (name, CPUs, MiB). The first is the default.
pub const SIZES: &[(&str, u32, u32)] = &[
    ("micro", 1, 2048),
    ("small", 2, 4096),
    ("medium", 4, 8192),
    ("large", 8, 16384),
    ("xl", 16, 32768),
];

/// The variables only the dockercloud provider reads.
const EXCLUSIVE: &[&str] = &[
    "DOCKER_SBX_TOKEN",
    "DOCKER_SBX_USERNAME",
    "SANDBOX_DOCKERCLOUD_AUTH_URL",
    "SANDBOX_DOCKERCLOUD_API",
    "SANDBOX_DOCKERCLOUD_API_URL",
    "SANDBOX_DOCKERCLOUD_IMAGE",
    "SANDBOX_DOCKERCLOUD_STORE_IMAGE",
    "SANDBOX_DOCKERCLOUD_GUARD_URL",
    "SANDBOX_DOCKERCLOUD_POLICY_URL",
];

const VARIABLES: &[Var] = &[
    Var {
        name: "DOCKER_SBX_TOKEN",
        default: "required",
        help: "dockercloud: the Docker personal access token (scope sandbox:use), from the environment only; sent only to the auth URL, exchanged for a short-lived bearer",
    },
    Var {
        name: "DOCKER_SBX_USERNAME",
        default: "required",
        help: "dockercloud: the Docker ID the token belongs to",
    },
    Var {
        name: "SANDBOX_DOCKERCLOUD_AUTH_URL",
        default: DEFAULT_AUTH_URL,
        help: "dockercloud: the token exchange (https; http only to a loopback address, for a stand-in)",
    },
    Var {
        name: "SANDBOX_DOCKERCLOUD_API",
        default: "rest",
        help: "dockercloud: the contract spoken: rest (Docker's documented REST API) or connect (Docker's Connect contract, docker.sbx.v1)",
    },
    Var {
        name: "SANDBOX_DOCKERCLOUD_API_URL",
        default: DEFAULT_API_URL,
        help: "dockercloud: the management API; its path is kept and /v1/... (rest) or /docker.sbx.v1.<Service>/<Method> (connect) appended; required for connect (observed: https://sandboxes.connect.docker.com/sbx) (https; http only to a loopback address)",
    },
    Var {
        name: "SANDBOX_DOCKERCLOUD_IMAGE",
        default: "required",
        help: "dockercloud: the raw OCI image every run boots, pinned by its linux/amd64 manifest digest (…@sha256:<64 hex>)",
    },
    Var {
        name: "SANDBOX_DOCKERCLOUD_STORE_IMAGE",
        default: "unset",
        help: "dockercloud: an account image-store image; connect only, so refused in this build",
    },
    Var {
        name: "SANDBOX_DOCKERCLOUD_GUARD_URL",
        default: "unset",
        help: "dockercloud: the egress guard URL granted sandboxes reach their broker at (https, port 443, a DNS name; path default /v1/e2b/guard); connect only; needs PLIMSOLL_GUARD_ADDR",
    },
    Var {
        name: "SANDBOX_DOCKERCLOUD_POLICY_URL",
        default: DEFAULT_POLICY_URL,
        help: "dockercloud: the undocumented policy API that sets a granted sandbox's one guard rule; connect only (https; http only to a loopback address)",
    },
];

/// The dockercloud provider's registration.
pub static PLUGIN: Plugin = Plugin {
    name: "dockercloud",
    variables: VARIABLES,
    exclusive: EXCLUSIVE,
    areas: &["dockercloud"],
    remote: true,
    metered: true,
    from_env,
    defaults: || Chosen::new(DockerCloudSettings::default()),
};

/// The contract the provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Api {
    /// Docker's documented REST API.
    #[default]
    Rest,
    /// Docker's Connect contract (`docker.sbx.v1`, docker-sbx-api 0.36.0).
    Connect,
}

impl Api {
    /// Its name, as `SANDBOX_DOCKERCLOUD_API` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Api::Rest => "rest",
            Api::Connect => "connect",
        }
    }
}

/// The dockercloud provider's settings.
#[derive(Debug, Clone)]
pub struct DockerCloudSettings {
    /// `SANDBOX_DOCKERCLOUD_API`.
    pub api: Api,
    /// `DOCKER_SBX_TOKEN` (shared: settings are cloned, the token never printed).
    pub token: Option<Arc<Secret>>,
    /// `DOCKER_SBX_USERNAME`.
    pub username: String,
    /// `SANDBOX_DOCKERCLOUD_AUTH_URL`.
    pub auth_url: Url,
    /// `SANDBOX_DOCKERCLOUD_API_URL`.
    pub api_url: Url,
    /// `SANDBOX_DOCKERCLOUD_IMAGE`, pinned by digest.
    pub image: String,
    /// `SANDBOX_DOCKERCLOUD_GUARD_URL`: where granted sandboxes reach their
    /// broker (`None`: no grants).
    pub guard: Option<GuardUrl>,
    /// `SANDBOX_DOCKERCLOUD_POLICY_URL`.
    pub policy_url: Url,
    /// CPUs of every sandbox (one of [`SIZES`]).
    pub cpus: u32,
    /// Memory of every sandbox, MiB (one of [`SIZES`]).
    pub memory_mib: u32,
}

impl Default for DockerCloudSettings {
    fn default() -> DockerCloudSettings {
        DockerCloudSettings {
            api: Api::Rest,
            token: None,
            username: String::new(),
            #[expect(clippy::unwrap_used, reason = "a constant that parses")]
            auth_url: Url::parse(DEFAULT_AUTH_URL).unwrap(),
            #[expect(clippy::unwrap_used, reason = "a constant that parses")]
            api_url: Url::parse(DEFAULT_API_URL).unwrap(),
            image: String::new(),
            guard: None,
            #[expect(clippy::unwrap_used, reason = "a constant that parses")]
            policy_url: Url::parse(DEFAULT_POLICY_URL).unwrap(),
            cpus: SIZES[0].1,
            memory_mib: SIZES[0].2,
        }
    }
}

/// Whether `r` is a raw OCI reference pinned by digest: `name@sha256:<64 lowercase hex>`.
pub fn pinned(r: &str) -> bool {
    let Some((name, digest)) = r.rsplit_once('@') else {
        return false;
    };
    let Some(hex) = digest.strip_prefix("sha256:") else {
        return false;
    };
    !name.is_empty()
        && name.len() <= 255
        && name
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || b"._-/:".contains(&c))
        && hex.len() == 64
        && hex
            .bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
}

/// The size for `SANDBOX_CPUS` and `SANDBOX_MEMORY_MB` (either or both unset:
/// the size the other names, or micro).
fn size(resources: &ResourceSettings) -> Result<(u32, u32), ConfigError> {
    let cpus = match resources.cpus {
        None => None,
        Some(c) if c >= 1.0 && c.fract() == 0.0 && c <= 64.0 => Some(c as u32),
        Some(_) => {
            return Err(ConfigError::new(
                "SANDBOX_CPUS",
                "Docker Cloud sandboxes have whole CPUs: 1, 2, 4, 8 or 16",
            ));
        }
    };
    let found = SIZES.iter().find(|(_, c, m)| {
        cpus.is_none_or(|x| x == *c) && resources.memory_mb.is_none_or(|x| x == *m)
    });
    match (found, cpus, resources.memory_mb) {
        (Some(_), None, None) => Ok((SIZES[0].1, SIZES[0].2)),
        (Some((_, c, m)), _, _) => Ok((*c, *m)),
        (None, _, memory) => {
            let sizes: Vec<String> = SIZES
                .iter()
                .map(|(n, c, m)| format!("{n} {c} CPU/{m} MiB"))
                .collect();
            let variable = if memory.is_some() {
                "SANDBOX_MEMORY_MB"
            } else {
                "SANDBOX_CPUS"
            };
            Err(ConfigError::new(
                variable,
                format!(
                    "not a size Docker Cloud runs; SANDBOX_CPUS and SANDBOX_MEMORY_MB must name one of: {}",
                    sizes.join(", ")
                ),
            ))
        }
    }
}

impl DockerCloudSettings {
    /// Reads the variables; refuses what it cannot honour.
    pub fn from_env(
        env: &Env<'_>,
        resources: &ResourceSettings,
    ) -> Result<DockerCloudSettings, ConfigError> {
        resources.only("dockercloud", &["SANDBOX_MEMORY_MB", "SANDBOX_CPUS"])?;
        let api = match env
            .get("SANDBOX_DOCKERCLOUD_API")
            .map(|a| a.trim().to_ascii_lowercase())
        {
            None => Api::Rest,
            Some(a) if a == "rest" => Api::Rest,
            Some(a) if a == "connect" => Api::Connect,
            Some(a) => {
                return Err(ConfigError::new(
                    "SANDBOX_DOCKERCLOUD_API",
                    format!("{a:?} is not a contract: rest or connect"),
                ));
            }
        };
        if api == Api::Connect && env.get("SANDBOX_DOCKERCLOUD_API_URL").is_none() {
            return Err(ConfigError::new(
                "SANDBOX_DOCKERCLOUD_API_URL",
                "required with SANDBOX_DOCKERCLOUD_API=connect (Docker documents no default; \
                 observed: https://sandboxes.connect.docker.com/sbx)",
            ));
        }
        if env.get("SANDBOX_DOCKERCLOUD_STORE_IMAGE").is_some() {
            return Err(ConfigError::new(
                "SANDBOX_DOCKERCLOUD_STORE_IMAGE",
                "store images are not built yet; unset it and pin SANDBOX_DOCKERCLOUD_IMAGE",
            ));
        }
        if api == Api::Rest {
            for name in [
                "SANDBOX_DOCKERCLOUD_GUARD_URL",
                "SANDBOX_DOCKERCLOUD_POLICY_URL",
            ] {
                if env.get(name).is_some() {
                    return Err(ConfigError::new(
                        name,
                        "grants go through the egress guard, whose rule only the Connect \
                         contract's policy API sets: with SANDBOX_DOCKERCLOUD_API=rest, unset it",
                    ));
                }
            }
        }
        let guard = env
            .get("SANDBOX_DOCKERCLOUD_GUARD_URL")
            .map(|u| GuardUrl::parse("SANDBOX_DOCKERCLOUD_GUARD_URL", &u))
            .transpose()?;
        let token = env
            .get("DOCKER_SBX_TOKEN")
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                ConfigError::new(
                    "DOCKER_SBX_TOKEN",
                    "required for SANDBOX_PROVIDER=dockercloud",
                )
            })?;
        if !token.bytes().all(|c| c.is_ascii_graphic()) {
            return Err(ConfigError::new(
                "DOCKER_SBX_TOKEN",
                "holds a character a token cannot have",
            ));
        }
        let username = env
            .get("DOCKER_SBX_USERNAME")
            .map(|u| u.trim().to_owned())
            .filter(|u| !u.is_empty())
            .ok_or_else(|| {
                ConfigError::new(
                    "DOCKER_SBX_USERNAME",
                    "required for SANDBOX_PROVIDER=dockercloud",
                )
            })?;
        if username.len() > 255 || !username.bytes().all(|c| c.is_ascii_graphic()) {
            return Err(ConfigError::new("DOCKER_SBX_USERNAME", "not a Docker ID"));
        }
        let image = env
            .get("SANDBOX_DOCKERCLOUD_IMAGE")
            .map(|i| i.trim().to_owned())
            .ok_or_else(|| {
                ConfigError::new(
                    "SANDBOX_DOCKERCLOUD_IMAGE",
                    "required for SANDBOX_PROVIDER=dockercloud",
                )
            })?;
        if !pinned(&image) {
            return Err(ConfigError::new(
                "SANDBOX_DOCKERCLOUD_IMAGE",
                "must be pinned by its linux/amd64 manifest digest: <name>@sha256:<64 hex>",
            ));
        }
        let (cpus, memory_mib) = size(resources)?;
        let defaults = DockerCloudSettings::default();
        Ok(DockerCloudSettings {
            api,
            token: Some(Arc::new(Secret::new(token))),
            username,
            auth_url: match env.get("SANDBOX_DOCKERCLOUD_AUTH_URL") {
                Some(u) => endpoint("SANDBOX_DOCKERCLOUD_AUTH_URL", &u)?,
                None => defaults.auth_url,
            },
            api_url: match env.get("SANDBOX_DOCKERCLOUD_API_URL") {
                Some(u) => endpoint("SANDBOX_DOCKERCLOUD_API_URL", &u)?,
                None => defaults.api_url,
            },
            image,
            guard,
            policy_url: match env.get("SANDBOX_DOCKERCLOUD_POLICY_URL") {
                Some(u) => endpoint("SANDBOX_DOCKERCLOUD_POLICY_URL", &u)?,
                None => defaults.policy_url,
            },
            cpus,
            memory_mib,
        })
    }
}

fn from_env(env: &Env<'_>, resources: &ResourceSettings) -> Result<Chosen, ConfigError> {
    Ok(Chosen::new(DockerCloudSettings::from_env(env, resources)?))
}

impl ProviderSettings for DockerCloudSettings {
    fn plugin(&self) -> &'static Plugin {
        &PLUGIN
    }

    fn guard_path(&self) -> Option<String> {
        self.guard.as_ref().map(|g| g.path.clone())
    }

    fn build(&self, setup: &Setup) -> Result<Arc<dyn Provider>, ConfigError> {
        Ok(Arc::new(super::DockerCloud::new(self, setup)?))
    }

    fn hardened(
        &self,
        _env: &Env<'_>,
        resources: &ResourceSettings,
        admission: &crate::admission::Limits,
    ) -> Vec<Violation> {
        // The image is pinned by digest whatever the mode (refused otherwise).
        resources.hardened_envelope(admission, &["SANDBOX_MEMORY_MB", "SANDBOX_CPUS"])
    }

    fn doctor<'a>(&'a self, setup: &'a Setup, chosen: bool) -> Checks<'a> {
        Box::pin(async move {
            if !chosen {
                return Vec::new();
            }
            let started = std::time::Instant::now();
            let provider = match super::DockerCloud::new(self, setup) {
                Ok(p) => p,
                Err(e) => {
                    return vec![Check::new(
                        "dockercloud",
                        "settings",
                        Level::Fail,
                        e.to_string(),
                    )];
                }
            };
            let mut out = vec![Check::new(
                "dockercloud",
                "settings",
                Level::Ok,
                format!(
                    "{} API {}, image {}, {}",
                    self.api.as_str(),
                    self.api_url,
                    self.image,
                    match &self.guard {
                        Some(g) => format!(
                            "grants through the egress guard {} (served on PLIMSOLL_GUARD_ADDR)",
                            g.base()
                        ),
                        None => "no grants (SANDBOX_DOCKERCLOUD_GUARD_URL unset)".into(),
                    }
                ),
            )];
            out.push(match crate::provider::Provider::prove(&provider).await {
                Ok(tier) => Check::new(
                    "dockercloud",
                    "startup proof",
                    Level::Ok,
                    format!(
                        "a throwaway sandbox passed the proof in {} ms (tier {})",
                        started.elapsed().as_millis(),
                        tier.as_str()
                    ),
                ),
                Err(e) => Check::new(
                    "dockercloud",
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
#[path = "settings_tests.rs"]
mod tests;
