//! Per-decision resource limits and the store limiter that enforces them.

use std::time::Duration;

use wasmtime::ResourceLimiter;

/// How long one epoch tick lasts: the resolution of every decision deadline.
pub const EPOCH_TICK: Duration = Duration::from_millis(1);

/// What one decision may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall time of the call, enforced by epoch interruption (1 ms resolution).
    pub deadline: Duration,
    /// Linear memories and tables of the whole component instance, together.
    pub memory_bytes: usize,
    /// Bytes one call may copy out of the guest: the decision it returns, or
    /// what it passes to one host import (a log line, a stderr write).
    pub result_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            deadline: Duration::from_millis(100),
            memory_bytes: 64 << 20,
            result_bytes: 4 << 20,
        }
    }
}

impl Limits {
    /// Epoch ticks to allow: rounded up, plus one because the first tick may
    /// come right after the call starts.
    pub(crate) fn deadline_ticks(&self) -> u64 {
        let tick = EPOCH_TICK.as_nanos();
        (self.deadline.as_nanos().div_ceil(tick) as u64).saturating_add(1)
    }
}

/// Whether `err` is wasmtime refusing to copy more than the store's hostcall
/// fuel ([`Limits::result_bytes`]) out of the guest. wasmtime's error type for
/// it is private; its message is the only mark.
pub(crate) fn copied_too_much(err: &wasmtime::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .to_string()
            .contains("fuel allocated for hostcalls has been exhausted")
    })
}

/// Host bytes a table element is accounted at (a function reference).
const TABLE_ELEMENT_BYTES: usize = 8;

/// Caps the memory of a whole store, not of each memory: a component may own
/// several linear memories and tables, and their sizes are added up. A growth
/// past the cap traps, and is remembered so the decision failure can be
/// reported as "memory cap".
pub(crate) struct MemoryLimiter {
    cap: usize,
    /// Bytes granted so far across every memory and table of the store.
    committed: usize,
    refused: Option<usize>,
}

impl MemoryLimiter {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            cap,
            committed: 0,
            refused: None,
        }
    }

    /// The store-wide size a refused growth asked for, if any.
    pub(crate) fn refused(&self) -> Option<usize> {
        self.refused
    }

    pub(crate) fn cap(&self) -> usize {
        self.cap
    }

    /// Grants growing one memory or table from `current` to `desired` bytes if
    /// the store's total stays under the cap; else traps.
    fn grow(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if maximum.is_some_and(|max| desired > max) {
            return Ok(false);
        }
        let total = self
            .committed
            .saturating_sub(current)
            .saturating_add(desired);
        if total > self.cap {
            self.refused = Some(total);
            wasmtime::bail!(
                "memory cap of {} bytes: growing to {total} bytes in all refused",
                self.cap
            );
        }
        self.committed = total;
        Ok(true)
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.grow(current, desired, maximum)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        Err(error.context("memory growth failed"))
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let bytes = |elements: usize| elements.saturating_mul(TABLE_ELEMENT_BYTES);
        self.grow(bytes(current), bytes(desired), maximum.map(bytes))
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        Err(error.context("table growth failed"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_ticks_round_up_and_add_one() {
        let limits = |micros| Limits {
            deadline: Duration::from_micros(micros),
            ..Limits::default()
        };
        assert_eq!(limits(100_000).deadline_ticks(), 101);
        assert_eq!(limits(1_500).deadline_ticks(), 3);
        assert_eq!(limits(0).deadline_ticks(), 1);
    }

    #[test]
    fn limiter_records_refused_growth() {
        let mut limiter = MemoryLimiter::new(1 << 20);
        assert!(limiter.memory_growing(0, 1 << 20, None).unwrap());
        assert_eq!(limiter.refused(), None);
        assert!(limiter.memory_growing(1 << 20, 2 << 20, None).is_err());
        assert_eq!(limiter.refused(), Some(2 << 20));
    }

    #[test]
    fn the_cap_is_for_all_memories_and_tables_together() {
        let mut limiter = MemoryLimiter::new(4 << 20);
        // Three memories of 1 MiB each fit; a fourth memory growing to 2 MiB does not.
        for _ in 0..3 {
            assert!(limiter.memory_growing(0, 1 << 20, None).unwrap());
        }
        assert!(limiter.memory_growing(0, 1 << 20, None).unwrap());
        assert!(limiter.memory_growing(1 << 20, 2 << 20, None).is_err());
        assert_eq!(limiter.refused(), Some(5 << 20));
        // Tables count too: all 4 MiB are taken.
        assert!(limiter.table_growing(0, 1, None).is_err());
    }

    /// A component of four core instances, each owning one memory, and a
    /// driver whose export grows each memory by 20 MiB.
    const FOUR_MEMORIES: &str = r#"
        (component
          (core module $m
            (memory 1)
            (func (export "grow") (result i32) (memory.grow (i32.const 320))))
          (core instance $a (instantiate $m))
          (core instance $b (instantiate $m))
          (core instance $c (instantiate $m))
          (core instance $d (instantiate $m))
          (core module $driver
            (import "a" "grow" (func $a (result i32)))
            (import "b" "grow" (func $b (result i32)))
            (import "c" "grow" (func $c (result i32)))
            (import "d" "grow" (func $d (result i32)))
            (func (export "grow") (result i32)
              (drop (call $a)) (drop (call $b)) (drop (call $c)) (call $d)))
          (core instance $i (instantiate $driver
            (with "a" (instance $a)) (with "b" (instance $b))
            (with "c" (instance $c)) (with "d" (instance $d))))
          (func (export "grow") (result s32) (canon lift (core func $i "grow"))))
    "#;

    #[test]
    fn a_component_with_four_memories_stays_under_one_cap() {
        use crate::engine::{Engine, EngineConfig};
        use crate::id::GuestId;
        use crate::state::DecisionState;

        let engine = Engine::new(EngineConfig::default()).unwrap();
        let component = wasmtime::component::Component::new(engine.wasmtime(), FOUR_MEMORIES)
            .expect("the multi-memory component compiles");
        let cap = 64 << 20;
        let state = DecisionState::new(GuestId::of("four-memories", b"wat"), cap);
        let mut store = wasmtime::Store::new(engine.wasmtime(), state);
        store.limiter(|state| &mut state.limiter);
        store.set_epoch_deadline(60_000);
        let instance = engine.linker().instantiate(&mut store, &component).unwrap();
        let grow = instance
            .get_typed_func::<(), (i32,)>(&mut store, "grow")
            .unwrap();
        // 4 × (20 MiB + 64 KiB) > 64 MiB: each memory alone is under the cap.
        assert!(grow.call(&mut store, ()).is_err(), "80 MiB granted");
        let limiter = &store.data().limiter;
        assert!(limiter.committed <= cap, "committed {}", limiter.committed);
        assert!(
            limiter.refused().is_some_and(|total| total > cap),
            "refused {:?}",
            limiter.refused()
        );
    }

    #[test]
    fn a_growth_past_the_declared_maximum_fails_without_trapping() {
        let mut limiter = MemoryLimiter::new(4 << 20);
        assert!(!limiter.memory_growing(0, 2 << 20, Some(1 << 20)).unwrap());
        assert_eq!(limiter.refused(), None);
    }
}
