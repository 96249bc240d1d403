//! The disabled provider: the default. Nothing runs, and nothing falls back to
//! another way of running code.

use async_trait::async_trait;

use crate::error::{Error, ErrorCode, Result};
use crate::provider::{Environments, Provider, RunContext};
use crate::request::JavaScriptRun;
use crate::result::JavaScriptResult;
use crate::tier::Isolation;

/// Refuses every payload with [`ErrorCode::Disabled`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Disabled;

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
