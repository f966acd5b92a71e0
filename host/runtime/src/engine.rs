//! The one wasmtime engine of a process, its epoch ticker and the shared linker.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use rekon_contract::current::log;
use wasmtime::component::{HasSelf, Linker};
use wasmtime::{Config, Enabled, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::limits::{EPOCH_TICK, Limits};
use crate::state::DecisionState;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("invalid engine configuration: {0}")]
    Config(#[source] wasmtime::Error),
    #[error("cannot link the host imports (WASI, log): {0}")]
    Link(#[source] wasmtime::Error),
    #[error("cannot start the epoch ticker thread: {0}")]
    Ticker(#[source] std::io::Error),
    #[error("cannot precompile the component: {0}")]
    Precompile(#[source] wasmtime::Error),
}

/// Sizing of the pooling allocator: how many decisions may run at once and the
/// largest memory any guest may be granted.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Component instances alive at once (one per decision in flight). A
    /// decision beyond this fails to instantiate (and its key is retried).
    pub max_concurrent_decisions: u32,
    /// The upper bound of every guest's memory cap; [`Limits`] can only be lower.
    pub max_memory_bytes: usize,
    /// The limits a guest gets unless its loader asks for others.
    pub default_limits: Limits,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            max_concurrent_decisions: 64,
            max_memory_bytes: 256 << 20,
            default_limits: Limits::default(),
        }
    }
}

/// Whether `REKON_EXPLICIT_BOUNDS_CHECKS=1` trades guard pages (and Spectre
/// hardening of bounds checks) for decisions that scale with cores.
pub fn explicit_bounds_checks() -> bool {
    std::env::var("REKON_EXPLICIT_BOUNDS_CHECKS").is_ok_and(|v| v == "1")
}

/// The process-wide engine: component model, epoch interruption driven by a
/// 1 ms ticker thread, pooling allocator with small explicit limits, copy-on-write
/// memory images, and the one [`Linker`] every guest is resolved against.
///
/// Cloning is cheap; the ticker stops when the last clone is dropped.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    wasmtime: wasmtime::Engine,
    linker: Linker<DecisionState>,
    config: EngineConfig,
    _ticker: EpochTicker,
}

impl Engine {
    pub fn new(config: EngineConfig) -> Result<Self, EngineError> {
        let wasmtime =
            wasmtime::Engine::new(&wasmtime_config(&config)).map_err(EngineError::Config)?;
        let linker = host_linker(&wasmtime).map_err(EngineError::Link)?;
        let ticker = EpochTicker::start(wasmtime.clone()).map_err(EngineError::Ticker)?;
        Ok(Self {
            inner: Arc::new(Inner {
                wasmtime,
                linker,
                config,
                _ticker: ticker,
            }),
        })
    }

    pub fn config(&self) -> &EngineConfig {
        &self.inner.config
    }

    pub(crate) fn wasmtime(&self) -> &wasmtime::Engine {
        &self.inner.wasmtime
    }

    pub(crate) fn linker(&self) -> &Linker<DecisionState> {
        &self.inner.linker
    }

    /// Compiles a component ahead of time into this engine's native format
    /// (a `.cwasm`), to be loaded later with [`crate::GuestLoader::precompiled`].
    /// `origin` names the module in the progress lines: a large guest (a
    /// JavaScript or Python runtime, 10-20 MB) compiles for seconds.
    pub fn precompile(&self, origin: &str, component: &[u8]) -> Result<Vec<u8>, EngineError> {
        crate::progress::compiling(origin, component.len(), || {
            self.inner.wasmtime.precompile_component(component)
        })
        .map_err(EngineError::Precompile)
    }
}

fn wasmtime_config(config: &EngineConfig) -> Config {
    let instances = config.max_concurrent_decisions;
    let mut pool = PoolingAllocationConfig::new();
    // A guest is one component made of several core modules: a Rust guest and
    // its adapter shims are a few, a componentize-py guest (libpython, libc and
    // their shims, dynamically linked) a dozen or more. The totals let every
    // concurrent decision have its component's maximum, so a large guest is
    // never refused an instance while decisions are under the limit; the cost
    // is address space (slots are reserved, not committed).
    pool.total_component_instances(instances)
        .total_core_instances(instances * CORE_INSTANCES_PER_COMPONENT)
        .total_memories(instances * MEMORIES_PER_COMPONENT)
        .total_tables(instances * TABLES_PER_COMPONENT)
        .max_core_instances_per_component(CORE_INSTANCES_PER_COMPONENT)
        .max_memories_per_component(MEMORIES_PER_COMPONENT)
        .max_tables_per_component(TABLES_PER_COMPONENT)
        .max_memory_size(config.max_memory_bytes);
    // Resetting a memory slot with madvise makes the next decision page-fault
    // every page it touches again (~40% of a small decision). With PAGEMAP_SCAN
    // (Linux 6.7+) wasmtime finds the dirty pages and memsets just those
    // instead; without it "keep resident" would memset the whole region, which
    // costs more than the faults, so it stays off.
    if pagemap_scan_supported() {
        pool.pagemap_scan(Enabled::Auto)
            .linear_memory_keep_resident(KEEP_RESIDENT)
            .table_keep_resident(KEEP_RESIDENT);
    }

    let mut wasm = Config::new();
    wasm.wasm_component_model(true)
        .epoch_interruption(true)
        .memory_init_cow(true)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    // Opt-in (REKON_EXPLICIT_BOUNDS_CHECKS=1): explicit bounds checks instead
    // of guard pages and signal handlers. With virtual-memory bounds, every
    // instantiation makes the pages its previous decision grew into
    // inaccessible again and the guest's first `memory.grow` makes them
    // accessible: two `mprotect`s per decision, each holding the process's
    // mmap lock for writing and interrupting the other cores to flush their
    // TLBs, which serialises concurrent decisions (two threads decide little
    // faster than one). Without guard pages a slot keeps its accessible size
    // across decisions (its contents are still reset), so a decision makes no
    // `mprotect`. The price: a bounds check per memory access in guest code,
    // and Cranelift's Spectre hardening of those checks (which relies on a
    // fault at address 0) is off. A host that runs modules it does not fully
    // trust keeps the default; the trade-off is the operator's
    // (docs/src/performance-languages.md).
    if explicit_bounds_checks() {
        wasm.signals_based_traps(false)
            .memory_guard_size(0)
            .guard_before_linear_memory(false);
    }
    wasm
}

/// Core instances, memories and tables one guest component may have.
const CORE_INSTANCES_PER_COMPONENT: u32 = 32;
const MEMORIES_PER_COMPONENT: u32 = 4;
const TABLES_PER_COMPONENT: u32 = 8;

/// Bytes of each memory and table slot reset in place rather than decommitted.
const KEEP_RESIDENT: usize = 1 << 20;

/// The running kernel has the `PAGEMAP_SCAN` ioctl (Linux 6.7 or later).
fn pagemap_scan_supported() -> bool {
    if !cfg!(target_os = "linux") {
        return false;
    }
    let Ok(release) = std::fs::read_to_string("/proc/sys/kernel/osrelease") else {
        return false;
    };
    let mut parts = release
        .trim()
        .split(['.', '-'])
        .map(|p| p.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) >= (6, 7),
        _ => false,
    }
}

/// WASI p2 with nothing granted (the per-store context decides what is visible),
/// its streams and polls free of tokio, and the `log` import.
fn host_linker(engine: &wasmtime::Engine) -> wasmtime::Result<Linker<DecisionState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    crate::wasi_io::shadow_tokio_io(&mut linker)?;
    log::add_to_linker::<DecisionState, HasSelf<DecisionState>>(&mut linker, |state| state)?;
    crate::compat::add_old_imports(&mut linker)?;
    Ok(linker)
}

/// Advances the engine's epoch every [`EPOCH_TICK`] so running guests notice
/// their deadline.
struct EpochTicker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl EpochTicker {
    fn start(engine: wasmtime::Engine) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new()
            .name("rekon-epoch".into())
            .spawn({
                let stop = stop.clone();
                move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(EPOCH_TICK);
                        engine.increment_epoch();
                    }
                }
            })?;
        Ok(Self {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::GuestId;

    /// A component of `n` core instances of one module.
    fn component_of(n: usize) -> String {
        let instances: String = (0..n)
            .map(|i| format!("(core instance $i{i} (instantiate $m))\n"))
            .collect();
        format!("(component (core module $m (func)) {instances})")
    }

    /// What a componentize-py guest looks like to the pool: many core
    /// instances per component. Every allowed decision must get one.
    #[test]
    fn as_many_large_guests_as_decisions_allowed_instantiate_at_once() {
        let decisions = 4;
        let engine = Engine::new(EngineConfig {
            max_concurrent_decisions: decisions,
            ..EngineConfig::default()
        })
        .unwrap();
        let component =
            wasmtime::component::Component::new(engine.wasmtime(), component_of(14)).unwrap();
        let stores: Vec<_> = (0..decisions)
            .map(|_| {
                let state = DecisionState::new(GuestId::of("large", b"wat"), 64 << 20);
                let mut store = wasmtime::Store::new(engine.wasmtime(), state);
                let instance = engine.linker().instantiate(&mut store, &component);
                assert!(instance.is_ok(), "{:?}", instance.err());
                store
            })
            .collect();
        assert_eq!(stores.len(), decisions as usize);
    }
}
