//! Strict configuration from environment variables, parsed once at startup.
//!
//! An unknown value, a malformed number, a half-set pair or an impossible
//! budget is a [`ConfigError`] naming the variable — never a silent default.
//! [`VARIABLES`] lists every variable the core reads; the daemon's `-h` prints it.

use std::fmt;

use crate::admission::Limits;
use crate::record::valid_instance;
use crate::tier::Floor;

/// A variable the core reads, for `-h` and docs.
#[derive(Debug, Clone, Copy)]
pub struct Var {
    /// The name.
    pub name: &'static str,
    /// The default, in words.
    pub default: &'static str,
    /// What it means.
    pub help: &'static str,
}

/// Every variable plimsoll-core reads.
pub const VARIABLES: &[Var] = &[
    Var {
        name: "SANDBOX_PROVIDER",
        default: "disabled",
        help: "disabled | wasm | docker | e2b | dockercloud | openshell: one provider per daemon",
    },
    Var {
        name: "SANDBOX_MIN_ISOLATION",
        default: "no floor",
        help: "process | container | kernel | vm: refuse to start below this proven tier",
    },
    Var {
        name: "SANDBOX_MEMORY_MB",
        default: "provider default (256)",
        help: "memory per run, MiB",
    },
    Var {
        name: "SANDBOX_CPUS",
        default: "provider default",
        help: "CPUs per run (docker)",
    },
    Var {
        name: "SANDBOX_PIDS",
        default: "provider default",
        help: "processes per run (docker)",
    },
    Var {
        name: "SANDBOX_DISK_MB",
        default: "provider default",
        help: "writable disk per run, MiB (docker)",
    },
    Var {
        name: "SANDBOX_MAX_CONCURRENT",
        default: "8",
        help: "runs in progress at once (1..1024); more are shed, never queued",
    },
    Var {
        name: "SANDBOX_TOTAL_MEMORY_MB",
        default: "no budget",
        help: "memory budget for runs in progress; set with SANDBOX_MEMORY_MB (ignored by e2b and dockercloud)",
    },
    Var {
        name: "SANDBOX_PER_KEY_CONCURRENT",
        default: "half of SANDBOX_MAX_CONCURRENT",
        help: "runs in progress per caller (0 = no per-caller cap)",
    },
    Var {
        name: "SANDBOX_RATE_PER_MIN",
        default: "30",
        help: "per-caller token bucket refill per minute (0 = no rate limit)",
    },
    Var {
        name: "SANDBOX_RATE_BURST",
        default: "SANDBOX_RATE_PER_MIN",
        help: "per-caller token bucket capacity",
    },
    Var {
        name: "PLIMSOLL_GRANTS_FILE",
        default: "none",
        help: "JSON grant profiles: the routes of an API a run may call through the broker",
    },
    Var {
        name: "SANDBOX_MAX_SESSIONS",
        default: "0 (sessions off)",
        help: "sessions open at once; a provider without sessions refuses to start with it",
    },
    Var {
        name: "SANDBOX_MAX_SESSIONS_PER_CALLER",
        default: "0 (no cap)",
        help: "open sessions per principal, suspended included",
    },
    Var {
        name: "SANDBOX_SESSION_LIFETIME",
        default: "30m",
        help: "a session's lifetime, 1s..12h (a request may only shorten it)",
    },
    Var {
        name: "SANDBOX_SESSION_IDLE",
        default: "5m",
        help: "suspend a session idle this long, 1s..12h; 0 = never",
    },
    Var {
        name: "SANDBOX_SESSION_DISK_MB",
        default: "1024",
        help: "a session's work-directory budget; 0 = no check",
    },
    Var {
        name: "SANDBOX_SESSION_POOL",
        default: "0",
        help: "warm session sandboxes kept ready (docker), at most SANDBOX_MAX_SESSIONS",
    },
    Var {
        name: "PLIMSOLL_INSTANCE",
        default: "plimsoll:<random>",
        help: "instance reference stamped on records, [a-z][a-z0-9-]{0,31}:[A-Za-z0-9._:-]{1,127}",
    },
];

/// A configuration error: the variable and what is wrong with it. Never holds a secret's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The variable at fault.
    pub variable: &'static str,
    /// What is wrong.
    pub message: String,
}

impl ConfigError {
    /// An error for `variable`.
    pub fn new(variable: &'static str, message: impl Into<String>) -> ConfigError {
        ConfigError {
            variable,
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.variable, self.message)
    }
}

impl std::error::Error for ConfigError {}

/// Reads variables through an injected lookup (the process environment, or a
/// map in tests). A set-but-empty variable reads as unset.
pub struct Env<'a> {
    get: &'a dyn Fn(&str) -> Option<String>,
}

impl<'a> Env<'a> {
    /// Reads through `get`.
    pub fn new(get: &'a dyn Fn(&str) -> Option<String>) -> Env<'a> {
        Env { get }
    }

    /// The raw value, trimmed; `None` when unset or empty.
    pub fn get(&self, name: &'static str) -> Option<String> {
        (self.get)(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    /// Any variable by name (a grant profile's secret); trimmed, `None` when unset or empty.
    /// Unlike [`Env::get`] the name is not one of plimsoll's own.
    pub fn get_any(&self, name: &str) -> Option<String> {
        (self.get)(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    /// A non-negative integer.
    pub fn u32(&self, name: &'static str) -> Result<Option<u32>, ConfigError> {
        self.get(name)
            .map(|v| {
                v.parse::<u32>().map_err(|_| {
                    ConfigError::new(name, format!("{v:?} is not a non-negative integer"))
                })
            })
            .transpose()
    }

    /// A finite non-negative number.
    pub fn f64(&self, name: &'static str) -> Result<Option<f64>, ConfigError> {
        self.get(name)
            .map(|v| match v.parse::<f64>() {
                Ok(f) if f.is_finite() && f >= 0.0 => Ok(f),
                _ => Err(ConfigError::new(
                    name,
                    format!("{v:?} is not a finite non-negative number"),
                )),
            })
            .transpose()
    }

    /// A boolean: unset, `0` or `false` is false; `1` or `true` is true; anything else is an error.
    pub fn bool(&self, name: &'static str) -> Result<bool, ConfigError> {
        match self.get(name).as_deref() {
            None | Some("0") | Some("false") => Ok(false),
            Some("1") | Some("true") => Ok(true),
            Some(v) => Err(ConfigError::new(
                name,
                format!("{v:?} is not a boolean (0, 1, false, true)"),
            )),
        }
    }
}

/// Which provider a daemon runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// Nothing runs (the default).
    Disabled,
    /// QuickJS on wasmtime, in-process.
    Wasm,
    /// Local docker on runc or runsc.
    Docker,
    /// E2B microVMs.
    E2b,
    /// Docker Cloud Sandboxes.
    DockerCloud,
    /// An NVIDIA OpenShell gateway.
    OpenShell,
}

impl ProviderKind {
    /// The name as configured.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Disabled => "disabled",
            ProviderKind::Wasm => "wasm",
            ProviderKind::Docker => "docker",
            ProviderKind::E2b => "e2b",
            ProviderKind::DockerCloud => "dockercloud",
            ProviderKind::OpenShell => "openshell",
        }
    }

    fn parse(s: &str) -> Option<ProviderKind> {
        let s = s.trim().to_ascii_lowercase();
        [
            ProviderKind::Disabled,
            ProviderKind::Wasm,
            ProviderKind::Docker,
            ProviderKind::E2b,
            ProviderKind::DockerCloud,
            ProviderKind::OpenShell,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

/// Per-run resource settings as configured (`None`: the provider's default).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ResourceSettings {
    /// `SANDBOX_MEMORY_MB`.
    pub memory_mb: Option<u32>,
    /// `SANDBOX_CPUS`.
    pub cpus: Option<f64>,
    /// `SANDBOX_PIDS`.
    pub pids: Option<u32>,
    /// `SANDBOX_DISK_MB`.
    pub disk_mb: Option<u32>,
}

impl ResourceSettings {
    /// Refuses every setting not in `allowed` (names of variables), naming the first.
    pub fn only(&self, provider: &str, allowed: &[&str]) -> Result<(), ConfigError> {
        let set = [
            ("SANDBOX_MEMORY_MB", self.memory_mb.is_some()),
            ("SANDBOX_CPUS", self.cpus.is_some()),
            ("SANDBOX_PIDS", self.pids.is_some()),
            ("SANDBOX_DISK_MB", self.disk_mb.is_some()),
        ];
        for (name, is_set) in set {
            if is_set && !allowed.contains(&name) {
                return Err(ConfigError::new(
                    name,
                    format!("does not apply to the {provider} provider; unset it"),
                ));
            }
        }
        Ok(())
    }
}

/// The core's configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// The provider.
    pub provider: ProviderKind,
    /// Refuse to start below this proven tier.
    pub min_isolation: Floor,
    /// Per-run resources.
    pub resources: ResourceSettings,
    /// The instance reference stamped on records.
    pub instance: String,
    /// Admission limits.
    pub admission: Limits,
    /// Session settings.
    pub sessions: crate::session::SessionSettings,
    /// Grant profiles (`PLIMSOLL_GRANTS_FILE`); empty when unset.
    pub grants: std::sync::Arc<crate::grant::Grants>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            provider: ProviderKind::Disabled,
            min_isolation: Floor::NONE,
            resources: ResourceSettings::default(),
            instance: random_instance(),
            admission: Limits::default(),
            grants: std::sync::Arc::default(),
            sessions: crate::session::SessionSettings::default(),
        }
    }
}

fn random_instance() -> String {
    format!("plimsoll:{}", hex::encode(rand::random::<[u8; 8]>()))
}

impl Config {
    /// Reads and checks every core variable.
    pub fn from_env(env: &Env<'_>) -> Result<Config, ConfigError> {
        let provider = match env.get("SANDBOX_PROVIDER") {
            None => ProviderKind::Disabled,
            Some(v) => ProviderKind::parse(&v).ok_or_else(|| {
                ConfigError::new(
                    "SANDBOX_PROVIDER",
                    format!("unknown provider {v:?} (want disabled, wasm, docker, e2b, dockercloud or openshell)"),
                )
            })?,
        };
        let min_isolation = match env.get("SANDBOX_MIN_ISOLATION") {
            None => Floor::NONE,
            Some(v) => Floor::parse(&v).map_err(|_| {
                ConfigError::new(
                    "SANDBOX_MIN_ISOLATION",
                    format!("{v:?} is not one of process, container, kernel, vm"),
                )
            })?,
        };
        let resources = ResourceSettings {
            memory_mb: env.u32("SANDBOX_MEMORY_MB")?,
            cpus: env.f64("SANDBOX_CPUS")?,
            pids: env.u32("SANDBOX_PIDS")?,
            disk_mb: env.u32("SANDBOX_DISK_MB")?,
        };
        let instance = match env.get("PLIMSOLL_INSTANCE") {
            None => random_instance(),
            Some(v) if valid_instance(&v) => v,
            Some(_) => {
                return Err(ConfigError::new(
                    "PLIMSOLL_INSTANCE",
                    "must match [a-z][a-z0-9-]{0,31}:[A-Za-z0-9._:-]{1,127}",
                ));
            }
        };
        if provider == ProviderKind::Disabled {
            resources.only("disabled", &[])?;
        }
        let mut admission = Limits::from_env(env, resources.memory_mb)?;
        if matches!(provider, ProviderKind::E2b | ProviderKind::DockerCloud) {
            // Their sandboxes run on other machines: the count applies, the memory budget does not.
            admission = admission.without_memory_budget();
        }
        let grants = match env.get("PLIMSOLL_GRANTS_FILE") {
            None => crate::grant::Grants::default(),
            Some(path) => crate::grant::Grants::load(&path, &|k| env.get_any(k))?,
        };
        Ok(Config {
            provider,
            min_isolation,
            resources,
            instance,
            admission,
            grants: std::sync::Arc::new(grants),
            sessions: crate::session::SessionSettings::from_env(env)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let get = move |k: &str| {
            assert!(
                VARIABLES.iter().any(|v| v.name == k),
                "{k} is read but not listed in VARIABLES"
            );
            map.get(k).cloned()
        };
        Config::from_env(&Env::new(&get))
    }

    #[test]
    fn defaults_to_disabled() {
        let c = load(&[]).unwrap();
        assert_eq!(c.provider, ProviderKind::Disabled);
        assert!(valid_instance(&c.instance));
        assert_eq!(
            load(&[("SANDBOX_PROVIDER", " Disabled ")])
                .unwrap()
                .provider,
            ProviderKind::Disabled
        );
    }

    #[test]
    fn strict_errors_name_the_variable() {
        assert_eq!(
            load(&[("SANDBOX_PROVIDER", "magic")]).unwrap_err().variable,
            "SANDBOX_PROVIDER"
        );
        assert_eq!(
            load(&[("SANDBOX_MIN_ISOLATION", "none")])
                .unwrap_err()
                .variable,
            "SANDBOX_MIN_ISOLATION"
        );
        assert_eq!(
            load(&[("SANDBOX_PROVIDER", "wasm"), ("SANDBOX_MEMORY_MB", "-1")])
                .unwrap_err()
                .variable,
            "SANDBOX_MEMORY_MB"
        );
        assert_eq!(
            load(&[("SANDBOX_PROVIDER", "wasm"), ("SANDBOX_CPUS", "NaN")])
                .unwrap_err()
                .variable,
            "SANDBOX_CPUS"
        );
        assert_eq!(
            load(&[("SANDBOX_PIDS", "64")]).unwrap_err().variable,
            "SANDBOX_PIDS"
        );
        assert_eq!(
            load(&[("PLIMSOLL_INSTANCE", "Bad")]).unwrap_err().variable,
            "PLIMSOLL_INSTANCE"
        );
        let get = |k: &str| (k == "X").then(|| "yes".to_string());
        assert!(Env::new(&get).bool("X").is_err());
    }
}
