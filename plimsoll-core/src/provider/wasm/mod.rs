//! The wasm provider (`SANDBOX_PROVIDER=wasm`, tier `process`): JavaScript
//! snippets on QuickJS-NG compiled to WebAssembly (wasm32-wasip1), hosted by
//! wasmtime inside this process.
//!
//! The guest is built from source (`plimsoll-core/guest`) by this crate's build
//! script and embedded; its SHA-256 and the QuickJS-NG version it reports are
//! the environment's identity. Each run gets a fresh instance of a snapshot
//! taken after the runtime was initialised, with:
//!
//! - linear memory capped at `SANDBOX_MEMORY_MB` (default 256) by a store
//!   limiter: growth past it fails and the guest reports out of memory;
//! - a wall-clock deadline (default 5 s, at most 30 s) by epoch interruption:
//!   exit 124 and `timed_out`; cancellation stops the run within a check;
//! - stdout and stderr kept to 64 KiB each, flagged when cut; past the cap the
//!   guest is told the stream is closed and stops writing to it;
//! - a trap (wasm stack exhausted by deep recursion, out-of-bounds access,
//!   `unreachable` after a failed allocation in the guest's Rust) as exit 134
//!   with the trap named on stderr: the guest's fault, not an infrastructure error;
//! - no files, network, environment, arguments or preopens: the guest's only
//!   imports are in [`host`] (output, randomness, coarse clocks, exit, and a
//!   host call that answers "no grant").
//!
//! What it does not cover: the tier is `process` because the wall is wasmtime
//! and QuickJS inside the daemon's own process. An escape from either lands in
//! the daemon, with its memory and credentials; do not run hostile code on this
//! tier where that matters. A tier is configuration plus this provider's
//! startup proof, never attestation. Projects, modules and sessions are not
//! supported, and `SANDBOX_CPUS`, `SANDBOX_PIDS` and `SANDBOX_DISK_MB` are
//! configuration errors here.

/// The wasmtime release this provider is built on: the workspace pins it
/// exactly (`=`), and a unit test checks this against Cargo.lock.
pub const WASMTIME_VERSION: &str = "48.0.8";

use async_trait::async_trait;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::env::ConfigError;
use crate::error::{Error, ErrorCode, Result};
use crate::provider::{Environment, Environments, Provider, RunContext, Setup};
use crate::request::JavaScriptRun;
use crate::result::JavaScriptResult;
use crate::tier::Isolation;
use crate::wire::RunResources;

mod guest;
mod host;
mod limits;
mod plugin;
mod pool;
mod proof;
mod run;

pub use guest::MAX_MEMORY_MB;
pub use host::{HOST_FAULT, HOST_NO_GRANT, HOST_NOTHING_PENDING, HOST_TIMEOUT};
pub use limits::OUTPUT_CAP;
pub use plugin::{PLUGIN, WasmSettings};
pub use run::{EXIT_TIMEOUT, EXIT_TRAP};

/// The memory cap when `SANDBOX_MEMORY_MB` is unset, MiB.
pub const DEFAULT_MEMORY_MB: u32 = 256;
/// A snippet's budget when the request names none, ms.
pub const DEFAULT_TIMEOUT_MS: u32 = 5_000;
/// The longest budget a snippet may ask for, ms.
pub const MAX_TIMEOUT_MS: u32 = 30_000;

/// The wasm provider. Construction compiles and snapshots the guest (once per
/// process; later providers share it).
pub struct Wasm {
    compiled: Arc<guest::Compiled>,
    memory_mb: u32,
}

impl std::fmt::Debug for Wasm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wasm")
            .field("compiled", &self.compiled)
            .field("memory_mb", &self.memory_mb)
            .finish()
    }
}

impl Wasm {
    /// The provider a setup asks for: only `SANDBOX_MEMORY_MB` applies.
    pub fn from_setup(setup: &Setup) -> std::result::Result<Wasm, ConfigError> {
        setup.resources.only("wasm", &["SANDBOX_MEMORY_MB"])?;
        Wasm::new(setup.resources.memory_mb.unwrap_or(DEFAULT_MEMORY_MB))
    }

    /// A provider whose runs get `memory_mb` MiB of linear memory. Fails if the
    /// cap is below what the guest needs to start or above 4096, or if the
    /// guest cannot be compiled here.
    pub fn new(memory_mb: u32) -> std::result::Result<Wasm, ConfigError> {
        let compiled = guest::compiled().map_err(|e| {
            ConfigError::new(
                "SANDBOX_PROVIDER",
                format!("the wasm provider cannot start: {e}"),
            )
        })?;
        // The snapshot's own memory plus at least 1 MiB of room to run in.
        let floor = (compiled.initial_memory >> 20) as u32 + 2;
        if !(floor..=MAX_MEMORY_MB).contains(&memory_mb) {
            return Err(ConfigError::new(
                "SANDBOX_MEMORY_MB",
                format!(
                    "the wasm provider needs between {floor} and {MAX_MEMORY_MB} MiB, not {memory_mb}"
                ),
            ));
        }
        Ok(Wasm {
            compiled,
            memory_mb,
        })
    }

    /// The snippet environment: the guest module's digest and QuickJS-NG version.
    pub fn environment(&self) -> Environment {
        let module = format!("wasm-module:{}", self.compiled.module_digest);
        Environment {
            software_identity: format!("quickjs-ng:{}+{module}", self.compiled.engine_version),
            identity: module,
            default_timeout_ms: DEFAULT_TIMEOUT_MS,
            max_timeout_ms: MAX_TIMEOUT_MS,
            languages: vec!["javascript".into()],
            runtimes: vec![format!("quickjs-ng {}", self.compiled.engine_version)],
        }
    }

    /// Runs `code` with this provider's limits, `timeout` and `cancel`, on a
    /// run thread.
    async fn execute(
        &self,
        code: String,
        timeout: Duration,
        cancel: &tokio_util::sync::CancellationToken,
        grant: Option<Arc<crate::grant::Broker>>,
        phases: crate::phase::Phases,
    ) -> Result<JavaScriptResult> {
        let permit = self
            .compiled
            .runs
            .clone()
            .try_acquire_owned()
            .map_err(|_| {
                Error::new(
                    ErrorCode::AtCapacity,
                    format!(
                        "the wasm provider is running {} snippets already",
                        guest::MAX_CONCURRENT_RUNS
                    ),
                )
            })?;
        let mut stop = StopOnDrop {
            flag: Arc::new(AtomicBool::new(false)),
            engine: self.compiled.engine.clone(),
            armed: true,
        };
        let limits = run::Limits {
            memory_bytes: self.memory_mb as usize * 1024 * 1024,
            timeout,
            cancel: stop.flag.clone(),
            grant: grant.map(|b| (b, tokio::runtime::Handle::current())),
            phases: Some(phases),
        };
        let compiled = self.compiled.clone();
        let task = self.compiled.pool.run(move || {
            let _permit = permit;
            run::execute(&compiled, &code, &limits)
        });
        tokio::pin!(task);
        let joined = tokio::select! {
            joined = &mut task => joined,
            _ = cancel.cancelled() => {
                stop.fire();
                task.await
            }
        };
        stop.armed = false;
        joined.map_err(|e| {
            Error::infrastructure(format!("wasm provider: the run's thread failed: {e}"))
        })?
    }
}

/// Stops the run if the future driving it is dropped (the caller went away).
struct StopOnDrop {
    flag: Arc<AtomicBool>,
    engine: wasmtime::Engine,
    armed: bool,
}

impl StopOnDrop {
    fn fire(&self) {
        self.flag.store(true, Ordering::Release);
        // Every live store re-checks now; only this run sees its flag set.
        self.engine.increment_epoch();
    }
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if self.armed {
            self.fire();
        }
    }
}

#[async_trait]
impl Provider for Wasm {
    fn name(&self) -> &'static str {
        "wasm"
    }

    fn isolation(&self) -> Isolation {
        Isolation::Process
    }

    fn capabilities(&self) -> crate::provider::Capabilities {
        crate::provider::Capabilities {
            javascript_grants: true,
            ..crate::provider::Capabilities::default()
        }
    }

    fn environments(&self) -> Environments {
        Environments {
            javascript: Some(self.environment()),
            ..Environments::default()
        }
    }

    fn resources(&self) -> RunResources {
        RunResources {
            memory_mb: self.memory_mb,
            ..RunResources::default()
        }
    }

    /// Runs real snippets and checks their output and exit, runs a memory
    /// bomb and a loop under a tiny cap and deadline and judges that both
    /// limits held (the `proof` module), checks that two runs draw different
    /// randomness (none is left over from the snapshot), and that the host
    /// call answers "no grant". It proves the guest runs, sees no ambient globals and is bounded;
    /// the configured cap and deadline at full size are exercised by the test
    /// suite.
    async fn wall(&self) -> Result<crate::wall::Wall> {
        Ok(crate::wall::Wall::default()
            .part("wasmtime", WASMTIME_VERSION)
            .part("quickjs-ng", self.compiled.engine_version.clone())
            .part("guest module", self.compiled.module_digest.clone()))
    }

    async fn prove(&self) -> Result<Isolation> {
        let started = std::time::Instant::now();
        let never = tokio_util::sync::CancellationToken::new();
        for (code, want) in proof::OUTPUT_PROOF {
            let got = self
                .execute(
                    (*code).to_string(),
                    Duration::from_millis(DEFAULT_TIMEOUT_MS as u64),
                    &never,
                    None,
                    crate::phase::Phases::start(),
                )
                .await?;
            if got.exit_code != 0 || got.stdout != want.as_bytes() || !got.stderr.is_empty() {
                return Err(Error::infrastructure(format!(
                    "wasm provider: the startup proof {code:?} printed {:?} (stderr {:?}, exit {}), not {want:?}",
                    String::from_utf8_lossy(&got.stdout),
                    String::from_utf8_lossy(&got.stderr),
                    got.exit_code
                )));
            }
        }
        let mut drawn = Vec::new();
        for _ in 0..2 {
            let got = self
                .execute(
                    proof::RANDOMNESS.to_string(),
                    Duration::from_millis(DEFAULT_TIMEOUT_MS as u64),
                    &never,
                    None,
                    crate::phase::Phases::start(),
                )
                .await?;
            drawn.push(String::from_utf8_lossy(&got.stdout).into_owned());
        }
        proof::judge_randomness(&drawn[0], &drawn[1]).map_err(|why| {
            Error::infrastructure(format!("wasm provider: the startup proof failed: {why}"))
        })?;
        let limits = proof::prove_limits(&self.compiled).await?;
        let compiled = self.compiled.clone();
        let status = self
            .compiled
            .pool
            .run(move || run::probe_host(&compiled))
            .await
            .map_err(|e| {
                Error::infrastructure(format!("wasm provider: the proof's thread failed: {e}"))
            })??;
        if status != HOST_NO_GRANT {
            return Err(Error::infrastructure(format!(
                "wasm provider: the host call answered {status}, not \"no grant\""
            )));
        }
        tracing::info!(
            elapsed_ms = started.elapsed().as_millis() as u64,
            bomb_ms = limits.bomb.took.as_millis() as u64,
            bomb_memory_bytes = limits.bomb.memory_bytes,
            cap_bytes = limits.cap_bytes,
            loop_ms = limits.spin.took.as_millis() as u64,
            "wasm provider: startup proof passed (the memory cap and the deadline held)"
        );
        Ok(Isolation::Process)
    }

    async fn run_javascript(
        &self,
        job: &JavaScriptRun,
        ctx: &RunContext,
    ) -> Result<JavaScriptResult> {
        self.execute(
            job.code.clone(),
            ctx.timeout,
            &ctx.cancel,
            ctx.grant.clone(),
            ctx.phases.clone(),
        )
        .await
    }
}

#[cfg(test)]
mod tests;

/// The guest snapshot's size and its linear memory at instantiation, bytes
/// (compiling the guest on first use), for the benchmark and docs/wasm.md.
pub fn snapshot_figures() -> std::result::Result<(usize, u64), String> {
    let compiled = guest::compiled()?;
    Ok((compiled.snapshot_bytes, compiled.initial_memory))
}
