//! Per-decision resource limits and the store limiter that enforces them.

use std::time::Duration;

use wasmtime::{ResourceLimiter, StoreLimits, StoreLimitsBuilder};

use crate::engine::EPOCH_TICK;

/// What one decision may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall time of the call, enforced by epoch interruption (1 ms resolution).
    pub deadline: Duration,
    /// Linear memory of the whole component instance.
    pub memory_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            deadline: Duration::from_millis(100),
            memory_bytes: 64 << 20,
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

/// [`StoreLimits`] (memory cap, trap on grow failure) that also remembers the
/// growth it refused, so a decision failure can be reported as "memory cap".
pub(crate) struct MemoryLimiter {
    limits: StoreLimits,
    cap: usize,
    refused: Option<usize>,
}

impl MemoryLimiter {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            limits: StoreLimitsBuilder::new()
                .memory_size(cap)
                .trap_on_grow_failure(true)
                .build(),
            cap,
            refused: None,
        }
    }

    /// The size a refused `memory.grow` asked for, if any.
    pub(crate) fn refused(&self) -> Option<usize> {
        self.refused
    }

    pub(crate) fn cap(&self) -> usize {
        self.cap
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let result = self.limits.memory_growing(current, desired, maximum);
        if !matches!(result, Ok(true)) {
            self.refused = Some(desired);
        }
        result
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.memory_grow_failed(error)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.limits.table_growing(current, desired, maximum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_ticks_round_up_and_add_one() {
        let limits = |micros| Limits {
            deadline: Duration::from_micros(micros),
            memory_bytes: 0,
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
}
