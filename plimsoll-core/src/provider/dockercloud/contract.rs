//! What the provider asks of Docker Cloud, whichever of its two contracts
//! it speaks (`SANDBOX_DOCKERCLOUD_API`): the documented REST API
//! ([`super::api`] and [`super::endpoint`]) or the Connect contract
//! ([`super::connect`]). Everything above this line (leases, read-backs,
//! the wrapper, runs, the proof, the reconcile) is the same for both.

use std::time::Duration;

use async_trait::async_trait;

use super::model::{Policy, Sandbox, Spec};
use super::multipart::Downloaded;
use crate::error::Result;

/// What an exec answered.
#[derive(Debug)]
pub(crate) struct Exec {
    /// The exit code.
    pub exit_code: i32,
    /// stdout.
    pub stdout: Vec<u8>,
    /// stderr.
    pub stderr: Vec<u8>,
}

/// An upload's answer said it wrote `written` of `wanted` files: every one,
/// or an infrastructure error (a partial write is Docker's failure, not the
/// guest's).
pub(crate) fn all_written(what: &str, written: Option<usize>, wanted: usize) -> Result<()> {
    if written == Some(wanted) {
        return Ok(());
    }
    Err(crate::error::Error::infrastructure(format!(
        "{what}: Docker says it wrote {written:?} of {wanted} files"
    )))
}

/// The management side.
#[async_trait]
pub(crate) trait Contract: Send + Sync {
    /// Creates the sandbox `spec` asks for under `lease` (its idempotency
    /// key); the answer may still be starting.
    async fn create(&self, spec: &Spec<'_>, lease: &str) -> Result<Sandbox>;

    /// Reads a sandbox back; `None` when Docker says it is not found.
    async fn get(&self, id: &str) -> Result<Option<Sandbox>>;

    /// Every sandbox of the account.
    async fn list(&self) -> Result<Vec<Sandbox>>;

    /// Asks for a sandbox's delete: `Ok(true)` once Docker took it (or says
    /// it is not found), `Ok(false)` when it must be read again first.
    async fn delete(&self, id: &str, etag: &str) -> Result<bool>;

    /// The network policy in force on a sandbox.
    async fn sandbox_policy(&self, id: &str) -> Result<Policy>;

    /// The account's network policy.
    async fn account_policy(&self) -> Result<Policy>;

    /// Sets a sandbox's network policy to deny-all with `network` (a
    /// `host:443`) its one allowed destination: a granted run's guard rule.
    async fn allow(&self, id: &str, network: &str) -> Result<()>;

    /// Whether the token carries the permissions the provider needs, where
    /// the contract says (REST has no capabilities service: each call's
    /// refusal names what it lacked).
    async fn permissions(&self) -> Result<()> {
        Ok(())
    }

    /// What is wrong with `s` as `spec`'s sandbox under `lease`, ready for
    /// code; empty when nothing is.
    fn wrong(&self, spec: &Spec<'_>, lease: &str, s: &Sandbox) -> Vec<String>;

    /// The endpoint of a running, read-back sandbox, with its credential.
    async fn endpoint(&self, s: &Sandbox) -> Result<Box<dyn SandboxEndpoint>>;
}

/// One sandbox's endpoint.
#[async_trait]
pub(crate) trait SandboxEndpoint: Send + Sync {
    /// Runs `cmd` to completion as `user` in `dir`; the answer is waited for
    /// `timeout` at most (the command bounds itself: see `wrapper`).
    async fn exec(&self, cmd: &[String], user: &str, dir: &str, timeout: Duration) -> Result<Exec>;

    /// Writes files (absolute paths); the service makes the parents and
    /// writes them as root. `Ok(Err(why))`: Docker refused them there.
    async fn upload(&self, files: &[(String, &[u8])]) -> Result<std::result::Result<(), String>>;

    /// Reads files (absolute paths); `None` when the answer is over `limit`
    /// bytes.
    async fn download(
        &self,
        paths: &[String],
        limit: usize,
    ) -> Result<Option<Vec<(String, Downloaded)>>>;
}
