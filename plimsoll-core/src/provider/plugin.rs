//! Providers as plugins: each provider registers one [`Plugin`] — its name,
//! its variables, how it reads its settings, its doctor checks and its
//! factory — in [`PLUGINS`]. Configuration picks one by `SANDBOX_PROVIDER`
//! and keeps its settings type-erased ([`Chosen`]); nothing outside a
//! provider's folder names its settings' fields. Adding a provider is its
//! folder plus one line in [`PLUGINS`].

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::env::{ConfigError, Env, Var};
use crate::provider::{Provider, ResourceSettings, SessionSettings};
use crate::readiness::Check;

/// What every provider's factory and doctor get besides its own settings.
#[derive(Debug, Clone, Default)]
pub struct Setup {
    /// Per-run resources as configured.
    pub resources: ResourceSettings,
    /// The instance reference stamped on records and sandbox labels.
    pub instance: String,
    /// The sessions the engine will keep (off when `max_sessions` is 0).
    pub sessions: SessionSettings,
    /// The egress guard, when the provider's settings name a guard path
    /// ([`ProviderSettings::guard_path`]): the provider admits its granted
    /// runs to it, and plimsolld serves it on `PLIMSOLL_GUARD_ADDR`.
    pub guard: Option<Arc<crate::grant::guard::Guard>>,
    /// Advisories the operator accepts (`SANDBOX_ACCEPT_ADVISORIES`), for
    /// the doctor's judgement of the wall.
    pub accepted_advisories: Vec<String>,
}

/// A boxed future of doctor checks.
pub type Checks<'a> = Pin<Box<dyn Future<Output = Vec<Check>> + Send + 'a>>;

/// A provider's own settings, read from its variables. The value knows its
/// plugin, so a configuration holds one of these whatever the provider.
pub trait ProviderSettings: std::fmt::Debug + Send + Sync + 'static {
    /// The plugin these settings belong to.
    fn plugin(&self) -> &'static Plugin;
    /// Builds the provider. Talks to nothing yet; refuses settings it cannot
    /// honour (naming the variable).
    fn build(&self, setup: &Setup) -> Result<Arc<dyn Provider>, ConfigError>;
    /// The egress guard path this provider's granted runs reach their broker
    /// at, when its settings configure one (a VM that runs elsewhere);
    /// `None` by default.
    fn guard_path(&self) -> Option<String> {
        None
    }
    /// How many sandboxes its warm pools keep waiting besides the sessions'
    /// (`SANDBOX_SNIPPET_POOL` for docker); each holds one run's memory of the
    /// admission budget. 0 by default.
    fn warm_members(&self) -> u32 {
        0
    }
    /// What these settings break of hardened mode's rules for this provider
    /// (pinned images, no unconfined seccomp, an explicit template, the
    /// per-run envelope dimensions it needs: [`crate::hardened`]). None by
    /// default: a provider below the kernel tier fails the isolation rule.
    fn hardened(
        &self,
        _env: &Env<'_>,
        _resources: &ResourceSettings,
        _admission: &crate::admission::Limits,
    ) -> Vec<crate::hardened::Violation> {
        Vec::new()
    }
    /// The doctor's checks for this provider on this host. `chosen`: it is the
    /// configured provider, so checks that start sandboxes (its startup proof)
    /// may run.
    fn doctor<'a>(&'a self, setup: &'a Setup, chosen: bool) -> Checks<'a>;
    /// The settings as `Any`, for the provider's own code to read back.
    fn as_any(&self) -> &dyn Any;
}

/// One provider's registration.
pub struct Plugin {
    /// The `SANDBOX_PROVIDER` value.
    pub name: &'static str,
    /// The variables it reads (listed by `plimsolld -h`).
    pub variables: &'static [Var],
    /// Of those, the ones that mean nothing under another provider: set while
    /// another provider runs, they are a configuration error.
    pub exclusive: &'static [&'static str],
    /// The doctor areas whose checks decide whether it would serve (empty: it
    /// runs nothing).
    pub areas: &'static [&'static str],
    /// Its sandboxes run on other machines: the admission memory budget does
    /// not apply (the count does).
    pub remote: bool,
    /// Its sandboxes are billed by the second: paid-second allowances
    /// ([`crate::paid`]) apply, and hardened mode asks one of every caller.
    pub metered: bool,
    /// Reads its settings when it is the chosen provider.
    pub from_env: fn(&Env<'_>, &ResourceSettings) -> Result<Chosen, ConfigError>,
    /// Its settings when it is not chosen (for the doctor).
    pub defaults: fn() -> Chosen,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin").field("name", &self.name).finish()
    }
}

/// Every provider in this build, in the order the doctor checks them.
pub static PLUGINS: &[&Plugin] = &[
    &super::disabled::PLUGIN,
    #[cfg(feature = "wasm")]
    &super::wasm::PLUGIN,
    #[cfg(feature = "docker")]
    &super::docker::PLUGIN,
    #[cfg(feature = "e2b")]
    &super::e2b::PLUGIN,
    #[cfg(feature = "dockercloud")]
    &super::dockercloud::PLUGIN,
    #[cfg(feature = "openshell")]
    &super::openshell::PLUGIN,
];

/// The registered plugin called `name` (trimmed, case-insensitive).
pub fn plugin(name: &str) -> Option<&'static Plugin> {
    let name = name.trim();
    PLUGINS
        .iter()
        .copied()
        .find(|p| p.name.eq_ignore_ascii_case(name))
}

/// The configured provider and its settings.
#[derive(Debug, Clone)]
pub struct Chosen(Arc<dyn ProviderSettings>);

impl Chosen {
    /// A provider with these settings.
    pub fn new(settings: impl ProviderSettings) -> Chosen {
        Chosen(Arc::new(settings))
    }

    /// Its plugin.
    pub fn plugin(&self) -> &'static Plugin {
        self.0.plugin()
    }

    /// `SANDBOX_PROVIDER`.
    pub fn name(&self) -> &'static str {
        self.0.plugin().name
    }

    /// The settings, when they are a `T`.
    pub fn get<T: 'static>(&self) -> Option<&T> {
        self.0.as_any().downcast_ref()
    }

    /// Changes the settings, which are a `T` (an embedder's or a test's
    /// adjustment after reading the environment).
    ///
    /// # Panics
    ///
    /// When the settings are not a `T`: the caller named the wrong provider.
    pub fn edit<T: ProviderSettings + Clone>(&mut self, f: impl FnOnce(&mut T)) {
        let mut t = self
            .get::<T>()
            .unwrap_or_else(|| panic!("the {} provider's settings are not that type", self.name()))
            .clone();
        f(&mut t);
        *self = Chosen::new(t);
    }

    /// The settings behind the plugin interface.
    pub fn settings(&self) -> &dyn ProviderSettings {
        &*self.0
    }
}

impl Default for Chosen {
    /// The disabled provider: nothing runs.
    fn default() -> Chosen {
        Chosen::new(super::disabled::Disabled)
    }
}

/// Reads `SANDBOX_PROVIDER` and the chosen provider's settings, and refuses a
/// variable exclusive to another provider.
pub fn choose(env: &Env<'_>, resources: &ResourceSettings) -> Result<Chosen, ConfigError> {
    let chosen = match env.get("SANDBOX_PROVIDER") {
        None => &super::disabled::PLUGIN,
        Some(v) => plugin(&v).ok_or_else(|| {
            let names: Vec<&str> = PLUGINS.iter().map(|p| p.name).collect();
            ConfigError::new(
                "SANDBOX_PROVIDER",
                format!(
                    "unknown provider {v:?} (this build has {})",
                    names.join(", ")
                ),
            )
        })?,
    };
    for other in PLUGINS.iter().filter(|p| p.name != chosen.name) {
        if let Some(name) = other.exclusive.iter().find(|n| env.get(n).is_some()) {
            return Err(ConfigError::new(
                name,
                format!(
                    "applies only to SANDBOX_PROVIDER={} (this daemon runs {}); unset it",
                    other.name, chosen.name
                ),
            ));
        }
    }
    (chosen.from_env)(env, resources)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_plugin_is_found_by_its_name_and_its_defaults_name_it() {
        for p in PLUGINS {
            assert_eq!(plugin(&p.name.to_uppercase()).map(|q| q.name), Some(p.name));
            assert_eq!((p.defaults)().name(), p.name);
            for v in p.exclusive {
                assert!(
                    p.variables.iter().any(|w| w.name == *v),
                    "{} lists {v} as exclusive but not among its variables",
                    p.name
                );
            }
        }
        assert!(plugin("nonesuch").is_none());
        assert_eq!(Chosen::default().name(), "disabled");
    }
}
