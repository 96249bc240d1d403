//! The wasm provider's registration: it reads only the shared
//! `SANDBOX_MEMORY_MB`, and its doctor checks build the engine and run the
//! startup proof (the guest instantiates and answers its probes).

use std::sync::Arc;

use crate::env::{ConfigError, Env};
use crate::provider::{
    Checks, Chosen, Plugin, Provider, ProviderSettings, ResourceSettings, Setup,
};
use crate::readiness::{Check, Level};

use super::Wasm;

/// The wasm provider's settings: none of its own (`SANDBOX_MEMORY_MB` is shared).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WasmSettings;

/// The wasm provider's registration.
pub static PLUGIN: Plugin = Plugin {
    name: "wasm",
    variables: &[],
    exclusive: &[],
    areas: &["wasm"],
    remote: false,
    metered: false,
    from_env,
    defaults: || Chosen::new(WasmSettings),
};

fn from_env(_env: &Env<'_>, _resources: &ResourceSettings) -> Result<Chosen, ConfigError> {
    Ok(Chosen::new(WasmSettings))
}

impl ProviderSettings for WasmSettings {
    fn plugin(&self) -> &'static Plugin {
        &PLUGIN
    }

    fn build(&self, setup: &Setup) -> Result<Arc<dyn Provider>, ConfigError> {
        Ok(Arc::new(Wasm::from_setup(setup)?))
    }

    fn doctor<'a>(&'a self, setup: &'a Setup, _chosen: bool) -> Checks<'a> {
        Box::pin(checks(setup))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The engine builds and the startup proof passes (it starts nothing outside
/// this process, so it runs whichever provider is configured).
async fn checks(setup: &Setup) -> Vec<Check> {
    let started = std::time::Instant::now();
    let provider = match Wasm::from_setup(setup) {
        Ok(p) => p,
        Err(e) => return vec![Check::new("wasm", "engine", Level::Fail, e.to_string())],
    };
    let mut out = vec![Check::new(
        "wasm",
        "engine",
        Level::Ok,
        "wasmtime engine and the embedded QuickJS guest built",
    )];
    if let Ok(wall) = provider.wall().await {
        out.push(
            Check::new(
                "wasm",
                "wall",
                Level::Ok,
                format!("{}: {}", wall.identity(), wall.summary()),
            )
            .with_wall(wall),
        );
    }
    let proof = match provider.preflight().await {
        Ok(()) => provider.prove().await,
        Err(e) => Err(e),
    };
    out.push(match proof {
        Ok(tier) => Check::new(
            "wasm",
            "startup proof",
            Level::Ok,
            format!(
                "the guest instantiated and answered its probes in {} ms (tier {})",
                started.elapsed().as_millis(),
                tier.as_str()
            ),
        ),
        Err(e) => Check::new("wasm", "startup proof", Level::Fail, e.message().to_owned()),
    });
    out
}
