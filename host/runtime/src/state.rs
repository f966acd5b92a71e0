//! The data of one decision's `Store`: a WASI context that grants nothing and
//! is deterministic, the memory limiter, and the guest's identity and byte
//! budget for its logs.

use std::time::Duration;

use rekon_contract::current::log;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{
    Deterministic, HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxBuilder, WasiCtxView,
    WasiView,
};

use crate::id::GuestId;
use crate::limits::MemoryLimiter;
use crate::wasi_io::{MONOTONIC_NOW, MONOTONIC_RESOLUTION};

/// Bytes of guest log text one decision may have printed (see
/// docs/src/security.md, "Byte budget"); the rest is dropped with one notice.
pub const GUEST_LOG_BYTES: usize = 16 * 1024;

/// Entries of the WASI resource table (streams, pollables) a decision may hold
/// at once; wasmtime's default is a million.
pub const RESOURCE_TABLE_ENTRIES: usize = 256;

/// How much of a guest's stderr (a panic message, typically) is kept for errors.
const STDERR_CAPACITY: usize = 4096;

/// The seed every decision's "random" source cycles through: same input, same output.
const RANDOM_SEED: [u8; 32] = *b"rekon:reconcile deterministic!!!";

pub(crate) struct DecisionState {
    wasi: WasiCtx,
    table: ResourceTable,
    stderr: MemoryOutputPipe,
    pub(crate) limiter: MemoryLimiter,
    guest: GuestId,
    /// Guest log bytes this decision may still print.
    log_budget: usize,
}

impl DecisionState {
    pub(crate) fn new(guest: GuestId, memory_cap: usize) -> Self {
        let stderr = MemoryOutputPipe::new(STDERR_CAPACITY);
        // Defaults already grant no files, env, args or network and give a closed
        // stdin and discarding stdout; clocks and randomness are made fixed here.
        let wasi = WasiCtxBuilder::new()
            .stderr(stderr.clone())
            .wall_clock(FixedClock)
            .monotonic_clock(FixedClock)
            .secure_random(Deterministic::new(RANDOM_SEED.to_vec()))
            .insecure_random(Deterministic::new(RANDOM_SEED.to_vec()))
            .insecure_random_seed(u128::from_le_bytes(
                RANDOM_SEED[..16].try_into().expect("16 bytes"),
            ))
            .build();
        let mut table = ResourceTable::new();
        table.set_max_capacity(RESOURCE_TABLE_ENTRIES);
        Self {
            wasi,
            table,
            stderr,
            limiter: MemoryLimiter::new(memory_cap),
            guest,
            log_budget: GUEST_LOG_BYTES,
        }
    }

    /// What the guest wrote to stderr (a panic message, typically) on one line,
    /// without Rust's hint about RUST_BACKTRACE, which a guest cannot act on.
    pub(crate) fn stderr(&self) -> String {
        let contents = self.stderr.contents();
        let text = String::from_utf8_lossy(&contents);
        text.lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with("note: run with `RUST_BACKTRACE"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl WasiView for DecisionState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl log::Host for DecisionState {
    /// Prints within the decision's [`GUEST_LOG_BYTES`]: a line past it is cut,
    /// and once it is spent one notice says so and the rest is dropped unread.
    fn log(&mut self, level: log::Level, message: String) {
        let guest = &self.guest;
        if self.log_budget == 0 {
            return;
        }
        let message = if message.len() < self.log_budget {
            self.log_budget -= message.len();
            message
        } else {
            let end = message.floor_char_boundary(self.log_budget);
            self.log_budget = 0;
            tracing::warn!(target: "rekon::guest", %guest, budget = GUEST_LOG_BYTES,
                "guest log budget of this decision spent: later lines are dropped");
            message[..end].to_string()
        };
        match level {
            log::Level::Debug => tracing::debug!(target: "rekon::guest", %guest, "{message}"),
            log::Level::Info => tracing::info!(target: "rekon::guest", %guest, "{message}"),
            log::Level::Warn => tracing::warn!(target: "rekon::guest", %guest, "{message}"),
        }
    }
}

/// A clock that never moves: guests must not depend on time.
struct FixedClock;

impl HostWallClock for FixedClock {
    fn resolution(&self) -> Duration {
        Duration::from_secs(1)
    }

    fn now(&self) -> Duration {
        Duration::ZERO
    }
}

impl HostMonotonicClock for FixedClock {
    fn resolution(&self) -> u64 {
        MONOTONIC_RESOLUTION
    }

    fn now(&self) -> u64 {
        MONOTONIC_NOW
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use super::*;
    use rekon_contract::current::log::Host as _;

    /// Collects formatted log lines.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What `guest_logs` makes one decision's state log, as tracing prints it.
    fn logged(guest_logs: impl FnOnce(&mut DecisionState)) -> String {
        let captured = Captured::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer({
                let captured = captured.clone();
                move || captured.clone()
            })
            .with_ansi(false)
            .with_max_level(tracing::Level::DEBUG)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            guest_logs(&mut DecisionState::new(GuestId::of("pvc", b"abc"), 1 << 20));
        });
        String::from_utf8(captured.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn guest_log_goes_to_tracing_with_the_guest_id() {
        let out = logged(|state| state.log(log::Level::Warn, "cache looks stale".into()));
        assert!(out.contains("WARN"), "{out}");
        assert!(out.contains("rekon::guest"), "{out}");
        assert!(out.contains("guest=pvc@sha256:ba7816bf8f01"), "{out}");
        assert!(out.contains("cache looks stale"), "{out}");
    }

    #[test]
    fn guest_logs_stop_at_the_decision_byte_budget() {
        let out = logged(|state| {
            for _ in 0..100 {
                state.log(log::Level::Info, "x".repeat(4096));
            }
            state.log(log::Level::Warn, "one more".into());
        });
        let guest_bytes = out.matches('x').count();
        assert!(
            guest_bytes <= GUEST_LOG_BYTES,
            "{guest_bytes} bytes of guest text logged"
        );
        assert!(guest_bytes >= GUEST_LOG_BYTES / 2, "{guest_bytes}");
        assert!(!out.contains("one more"), "logged past the budget");
        assert_eq!(out.matches("log budget").count(), 1, "{out}");
    }

    #[test]
    fn the_wasi_resource_table_is_small() {
        let mut state = DecisionState::new(GuestId::of("pvc", b"abc"), 1 << 20);
        let table = state.ctx().table;
        for _ in 0..RESOURCE_TABLE_ENTRIES {
            table.push(()).expect("within the limit");
        }
        assert!(
            table.push(()).is_err(),
            "pushed past {RESOURCE_TABLE_ENTRIES}"
        );
    }
}
