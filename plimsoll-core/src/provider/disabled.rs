//! The disabled provider: the default. Nothing runs, and nothing falls back to
//! another way of running code.

use async_trait::async_trait;

use crate::env::{ConfigError, Env};
use crate::error::{Error, ErrorCode, Result};
use crate::provider::{
    Checks, Chosen, Environments, Plugin, Provider, ProviderSettings, ResourceSettings, RunContext,
    Setup,
};
use crate::request::JavaScriptRun;
use crate::result::JavaScriptResult;
use crate::tier::Isolation;

/// Refuses every payload with [`ErrorCode::Disabled`]. Also its own
/// settings: it has none.
#[derive(Debug, Clone, Copy, Default)]
pub struct Disabled;

/// The disabled provider's registration.
pub static PLUGIN: Plugin = Plugin {
    name: "disabled",
    variables: &[],
    exclusive: &[],
    areas: &[],
    remote: false,
    metered: false,
    from_env,
    defaults: || Chosen::new(Disabled),
};

fn from_env(_env: &Env<'_>, resources: &ResourceSettings) -> Result<Chosen, ConfigError> {
    resources.only("disabled", &[])?;
    Ok(Chosen::new(Disabled))
}

impl ProviderSettings for Disabled {
    fn plugin(&self) -> &'static Plugin {
        &PLUGIN
    }

    fn build(
        &self,
        _setup: &Setup,
    ) -> std::result::Result<std::sync::Arc<dyn Provider>, ConfigError> {
        Ok(std::sync::Arc::new(Disabled))
    }

    fn doctor<'a>(&'a self, _setup: &'a Setup, _chosen: bool) -> Checks<'a> {
        Box::pin(async { Vec::new() })
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The refusal every payload gets on a disabled daemon.
pub fn refusal() -> Error {
    Error::new(
        ErrorCode::Disabled,
        "no sandbox provider is configured (SANDBOX_PROVIDER is unset): nothing runs here",
    )
}

#[async_trait]
impl Provider for Disabled {
    fn name(&self) -> &'static str {
        "disabled"
    }

    fn isolation(&self) -> Isolation {
        Isolation::None
    }

    fn environments(&self) -> Environments {
        Environments::default()
    }

    async fn prove(&self) -> Result<Isolation> {
        Ok(Isolation::None)
    }

    async fn run_javascript(
        &self,
        _job: &JavaScriptRun,
        _ctx: &RunContext,
    ) -> Result<JavaScriptResult> {
        Err(refusal())
    }
}
