//! The embedded QuickJS guest and the compiled, snapshotted form every run
//! instantiates.
//!
//! At first use (the first provider's construction) the guest is compiled,
//! instantiated once, initialised (`plimsoll_init`: runtime, context, prelude)
//! and snapshotted with wasmtime-wizer; the snapshot is compiled once and kept
//! as an `InstancePre`. Each run then gets a fresh instance of that snapshot in
//! a fresh store: nothing one run does is visible to the next. The compiled
//! form is shared by every provider in the process (the memory cap is a
//! per-store limiter, so it does not shape the compiled code).

use sha2::{Digest, Sha256};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use wasmtime::{Config, Engine, Instance, InstancePre, Module, Store};

use super::host;
use super::limits::{RunState, Ticker};
use super::pool::Pool;

/// The guest module as built from `plimsoll-core/guest` by build.rs.
pub const GUEST_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/plimsoll_guest.wasm"));

/// The largest memory cap the provider accepts, MiB (the wasm32 limit).
pub const MAX_MEMORY_MB: u32 = 4096;

/// Runs in flight at once; past this a run is refused as at capacity.
pub const MAX_CONCURRENT_RUNS: u32 = 64;

/// The native stack a run's wasm may use: QuickJS spends it on every
/// JavaScript call, and when it runs out the run traps (exit 134).
pub const MAX_WASM_STACK: usize = 8 * 1024 * 1024;

/// The compiled guest, ready to instantiate.
pub struct Compiled {
    /// The wasmtime engine every run's store belongs to.
    pub engine: Engine,
    /// The snapshot with its imports resolved.
    pub pre: InstancePre<RunState>,
    /// Advances the epoch while runs are live.
    pub ticker: Ticker,
    /// The threads runs execute on.
    pub pool: Pool,
    /// One permit per run in flight, [`MAX_CONCURRENT_RUNS`] in all (the
    /// pooling allocator has a slot for each).
    pub runs: Arc<tokio::sync::Semaphore>,
    /// `sha256:<hex>` of [`GUEST_WASM`].
    pub module_digest: String,
    /// The QuickJS-NG version the guest reports.
    pub engine_version: String,
    /// `sha256:<hex>` of the snapshot (informational; it is not byte-stable
    /// across wasmtime-wizer versions).
    pub snapshot_digest: String,
    /// The snapshot module's size, bytes.
    pub snapshot_bytes: usize,
    /// The snapshot's linear memory at instantiation, bytes: a run's floor.
    pub initial_memory: u64,
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiled")
            .field("module_digest", &self.module_digest)
            .field("engine_version", &self.engine_version)
            .finish_non_exhaustive()
    }
}

/// The process's compiled guest, built at first call (a few seconds) and then shared.
pub fn compiled() -> Result<Arc<Compiled>, String> {
    static COMPILED: OnceLock<Result<Arc<Compiled>, String>> = OnceLock::new();
    COMPILED
        .get_or_init(|| {
            let started = std::time::Instant::now();
            let compiled = compile()?;
            tracing::info!(
                module = %compiled.module_digest,
                snapshot = %compiled.snapshot_digest,
                snapshot_bytes = compiled.snapshot_bytes,
                initial_memory_bytes = compiled.initial_memory,
                quickjs_ng = %compiled.engine_version,
                elapsed_ms = started.elapsed().as_millis() as u64,
                "wasm provider: guest compiled and snapshotted"
            );
            Ok(Arc::new(compiled))
        })
        .clone()
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

fn engine() -> wasmtime::Result<Engine> {
    let mut pool = wasmtime::PoolingAllocationConfig::new();
    pool.total_core_instances(MAX_CONCURRENT_RUNS + 1)
        .total_memories(MAX_CONCURRENT_RUNS + 1)
        .total_tables(MAX_CONCURRENT_RUNS + 1)
        .max_memory_size(MAX_MEMORY_MB as usize * 1024 * 1024)
        .table_elements(4096)
        // A returned slot's dirty pages are reset in place (memset, or a
        // copy of the image) up to this much, the rest by madvise. Without
        // userfaultfd write-protection, Linux's PAGEMAP_SCAN reports every
        // private page present as written, and a page reset in place stays
        // private: it is reset again after every later run, so a slot keeps
        // paying for the most any run (the startup proof's memory bomb
        // among them) ever touched in it, up to this size. Measured here
        // (docs/performance.md): 8 MiB, 0.26 ms a hello run and 7,200 runs/s
        // at 2 concurrent; 512 KiB, 0.16 ms and 6,000 runs/s (pages beyond
        // it are madvised and fault back in).
        .linear_memory_keep_resident(512 << 10)
        .table_keep_resident(64 << 10);
    let mut config = Config::new();
    config
        .epoch_interruption(true)
        .max_wasm_stack(MAX_WASM_STACK)
        // Unused (no async), but wasmtime requires it to be at least the wasm stack.
        .async_stack_size(MAX_WASM_STACK + (1 << 20))
        .allocation_strategy(wasmtime::InstanceAllocationStrategy::Pooling(pool));
    Engine::new(&config)
}

/// Reads the NUL-terminated string the guest's `plimsoll_engine_version` points at.
fn engine_version(store: &mut Store<RunState>, instance: &Instance) -> wasmtime::Result<String> {
    let f = instance.get_typed_func::<(), u32>(&mut *store, "plimsoll_engine_version")?;
    let ptr = f.call(&mut *store, ())? as usize;
    let memory = instance
        .get_memory(&mut *store, "memory")
        .ok_or_else(|| wasmtime::format_err!("no memory export"))?;
    let data = memory.data(&*store);
    let tail = data.get(ptr..).unwrap_or_default();
    let text = &tail[..tail.iter().position(|&b| b == 0).unwrap_or(0).min(64)];
    let version = std::str::from_utf8(text).unwrap_or_default();
    if version.is_empty()
        || !version
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b))
    {
        wasmtime::bail!("the guest reports an unusable engine version {version:?}");
    }
    Ok(version.to_string())
}

/// Snapshots an initialised instance's memory and globals, as wasmtime-wizer asks.
struct Snapshotter<'a> {
    store: &'a mut Store<RunState>,
    instance: Instance,
}

impl wasmtime_wizer::InstanceState for Snapshotter<'_> {
    async fn global_get(
        &mut self,
        name: &str,
        _: wasmtime_wizer::ValType,
    ) -> wasmtime_wizer::SnapshotVal {
        let global = self.instance.get_global(&mut *self.store, name);
        match global.map(|g| g.get(&mut *self.store)) {
            Some(wasmtime::Val::I32(x)) => wasmtime_wizer::SnapshotVal::I32(x),
            Some(wasmtime::Val::I64(x)) => wasmtime_wizer::SnapshotVal::I64(x),
            Some(wasmtime::Val::F32(x)) => wasmtime_wizer::SnapshotVal::F32(x),
            Some(wasmtime::Val::F64(x)) => wasmtime_wizer::SnapshotVal::F64(x),
            Some(wasmtime::Val::V128(x)) => wasmtime_wizer::SnapshotVal::V128(x.as_u128()),
            // The guest has only numeric globals; wizer has validated the module.
            other => unreachable!("global {name} holds {other:?}"),
        }
    }

    async fn memory_contents(&mut self, name: &str, contents: impl FnOnce(&[u8]) + Send) {
        match self.instance.get_memory(&mut *self.store, name) {
            Some(m) => contents(m.data(&*self.store)),
            None => contents(&[]),
        }
    }
}

/// Drives a future that never waits on anything outside itself (wizer's
/// snapshot over an in-memory instance) to completion on this thread.
fn complete<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::yield_now();
    }
}

fn compile() -> Result<Compiled, String> {
    let engine = engine().map_err(|e| format!("configuring wasmtime: {e}"))?;
    let mut wizer = wasmtime_wizer::Wizer::new();
    wizer.init_func("plimsoll_init");
    let (cx, instrumented) = wizer
        .instrument(GUEST_WASM)
        .map_err(|e| format!("preparing the guest snapshot: {e}"))?;
    let module =
        Module::new(&engine, &instrumented).map_err(|e| format!("compiling the guest: {e}"))?;
    let linker = host::linker(&engine, &module).map_err(|e| format!("linking the guest: {e}"))?;
    let mut state = RunState::new(
        MAX_MEMORY_MB as usize * 1024 * 1024,
        Duration::from_secs(60),
        Arc::new(AtomicBool::new(false)),
    );
    state.initialising = true;
    let mut store = Store::new(&engine, state);
    store.epoch_deadline_callback(|mut s| s.data_mut().check());
    store.set_epoch_deadline(u64::MAX / 2);
    let instance = linker
        .instantiate(&mut store, &module)
        .map_err(|e| format!("instantiating the guest: {e}"))?;
    let init = instance
        .get_typed_func::<(), ()>(&mut store, "plimsoll_init")
        .map_err(|e| format!("the guest's init: {e}"))?;
    init.call(&mut store, ()).map_err(|e| {
        let stderr =
            String::from_utf8_lossy(&std::mem::take(&mut store.data_mut().stderr).finish().0)
                .into_owned();
        format!("initialising the guest: {e} {stderr}")
    })?;
    let engine_version = engine_version(&mut store, &instance)
        .map_err(|e| format!("reading the guest's engine version: {e}"))?;
    let snapshot = complete(wizer.snapshot(
        &cx,
        &mut Snapshotter {
            store: &mut store,
            instance,
        },
    ))
    .map_err(|e| format!("snapshotting the guest: {e}"))?;
    drop(store);
    let module = Module::new(&engine, &snapshot)
        .map_err(|e| format!("compiling the guest snapshot: {e}"))?;
    let linker =
        host::linker(&engine, &module).map_err(|e| format!("linking the guest snapshot: {e}"))?;
    let initial_memory = module
        .exports()
        .find_map(|e| e.ty().memory().map(|m| m.minimum() * m.page_size()))
        .ok_or("the guest snapshot exports no memory")?;
    let pre = linker
        .instantiate_pre(&module)
        .map_err(|e| format!("resolving the guest's imports: {e}"))?;
    let ticker = Ticker::start(&engine).map_err(|e| format!("starting the epoch ticker: {e}"))?;
    Ok(Compiled {
        engine,
        pre,
        ticker,
        pool: Pool::new(),
        runs: Arc::new(tokio::sync::Semaphore::new(MAX_CONCURRENT_RUNS as usize)),
        module_digest: sha256(GUEST_WASM),
        engine_version,
        snapshot_digest: sha256(&snapshot),
        snapshot_bytes: snapshot.len(),
        initial_memory,
    })
}
