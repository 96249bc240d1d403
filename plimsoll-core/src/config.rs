//! Strict configuration from environment variables, parsed once at startup.
//!
//! An unknown value, a malformed number, a half-set pair or an impossible
//! budget is a [`ConfigError`] naming the variable — never a silent default.
//! [`variables`] lists every variable the core reads (its own in
//! [`VARIABLES`], then each registered provider's); the daemon's `-h` prints it.
//! The provider's own settings are read by its plugin ([`crate::provider::Plugin`]).

use crate::admission::Limits;
use crate::provider::{Chosen, Provider, Setup};
use crate::record::valid_instance;
use crate::tier::Floor;

pub use crate::env::{ConfigError, Env, Var};
#[cfg(feature = "docker")]
pub use crate::provider::docker::{
    DockerEnvelope, DockerRuntime, DockerSettings, SeccompSetting, valid_guest_uid,
};
#[cfg(feature = "wasm")]
pub use crate::provider::wasm::WasmSettings;
pub use crate::provider::{ResourceSettings, SessionSettings};
pub use variables::VARIABLES;

pub mod hardened;
mod variables;

/// Every variable the core reads: its own, then each provider's.
pub fn variables() -> Vec<Var> {
    VARIABLES
        .iter()
        .chain(crate::provider::PLUGINS.iter().flat_map(|p| p.variables))
        .copied()
        .collect()
}

/// The core's configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// The provider (`SANDBOX_PROVIDER`) and its own settings.
    pub provider: Chosen,
    /// Refuse to start below this proven tier.
    pub min_isolation: Floor,
    /// Per-run resources.
    pub resources: ResourceSettings,
    /// The instance reference stamped on records.
    pub instance: String,
    /// Admission limits.
    pub admission: Limits,
    /// Session settings.
    pub sessions: SessionSettings,
    /// Grant profiles (`PLIMSOLL_GRANTS_FILE`); empty when unset.
    pub grants: std::sync::Arc<crate::grant::Grants>,
    /// Advisories the operator accepts (`SANDBOX_ACCEPT_ADVISORIES`): the
    /// wall is painted despite them, and every record says so.
    pub accepted_advisories: Vec<String>,
    /// Paid-second allowances (`SANDBOX_PAID_SECONDS_PER_DAY`, and each
    /// caller's, which the embedder or the daemon's clients file sets):
    /// metered providers only.
    pub paid: crate::paid::Allowances,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            provider: Chosen::default(),
            min_isolation: Floor::NONE,
            resources: ResourceSettings::default(),
            instance: random_instance(),
            admission: Limits::default(),
            grants: std::sync::Arc::default(),
            sessions: SessionSettings::default(),
            accepted_advisories: Vec::new(),
            paid: crate::paid::Allowances::default(),
        }
    }
}

fn random_instance() -> String {
    format!("plimsoll:{}", hex::encode(rand::random::<[u8; 8]>()))
}

impl Config {
    /// The configuration with `provider` and its settings, the rest default.
    pub fn of(provider: Chosen) -> Config {
        Config {
            provider,
            ..Config::default()
        }
    }

    /// Reads and checks every core variable, and the chosen provider's.
    pub fn from_env(env: &Env<'_>) -> Result<Config, ConfigError> {
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
        let provider = crate::provider::choose(env, &resources)?;
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
        let sessions = SessionSettings::from_env(env)?;
        let mut admission = Limits::from_env(env, resources.memory_mb)?;
        if provider.plugin().remote {
            // Its sandboxes run on other machines: the count applies, the memory budget does not.
            admission = admission.without_memory_budget();
        }
        // Warm pool members hold their memory while they wait.
        let admission = admission.reserve(sessions.pool + provider.settings().warm_members())?;
        let grants = match env.get("PLIMSOLL_GRANTS_FILE") {
            None => crate::grant::Grants::default(),
            Some(path) => crate::grant::Grants::load(&path, &|k| env.get_any(k))?,
        };
        let accepted_advisories =
            crate::advisory::parse_accepted(env.get(crate::advisory::ACCEPT_VAR))?;
        let paid = crate::paid::Allowances {
            daemon: match env.u32("SANDBOX_PAID_SECONDS_PER_DAY")? {
                None => None,
                Some(0) => {
                    return Err(ConfigError::new(
                        "SANDBOX_PAID_SECONDS_PER_DAY",
                        "must be positive (unset it for no budget)",
                    ));
                }
                Some(_) if !provider.plugin().metered => {
                    return Err(ConfigError::new(
                        "SANDBOX_PAID_SECONDS_PER_DAY",
                        format!(
                            "the {} provider is not billed by the second (e2b and dockercloud are); unset it",
                            provider.plugin().name
                        ),
                    ));
                }
                Some(s) => Some(u64::from(s)),
            },
            callers: Default::default(),
        };
        Ok(Config {
            paid,
            provider,
            accepted_advisories,
            min_isolation,
            resources,
            instance,
            admission,
            grants: std::sync::Arc::new(grants),
            sessions,
        })
    }

    /// What the provider's factory and doctor get besides its own settings.
    pub fn setup(&self) -> Setup {
        Setup {
            resources: self.resources,
            instance: self.instance.clone(),
            sessions: self.sessions,
            accepted_advisories: self.accepted_advisories.clone(),
            guard: self
                .provider
                .settings()
                .guard_path()
                .map(|p| crate::grant::guard::Guard::new(&p)),
        }
    }

    /// Builds the configured provider (talking to nothing yet).
    pub fn build_provider(&self) -> Result<std::sync::Arc<dyn Provider>, ConfigError> {
        self.provider.settings().build(&self.setup())
    }
}

#[cfg(test)]
mod tests;
