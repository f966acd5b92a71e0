//! What the runtime benches share: timing samples and their percentiles.

#![allow(dead_code)] // each bench uses a part

use std::hint::black_box;
use std::time::{Duration, Instant};

const WARMUP: usize = 50;
const MIN_SAMPLES: usize = 200;
const MAX_SAMPLES: usize = 20_000;
const BUDGET: Duration = Duration::from_millis(1500);

/// Times `run` on fresh copies of `input`; only `run` is inside the timer.
pub fn sample<I: Clone, O>(input: &I, mut run: impl FnMut(I) -> O) -> Stats {
    for _ in 0..WARMUP {
        black_box(run(input.clone()));
    }
    let mut samples = Vec::with_capacity(MAX_SAMPLES);
    let started = Instant::now();
    while samples.len() < MAX_SAMPLES && (samples.len() < MIN_SAMPLES || started.elapsed() < BUDGET)
    {
        let input = input.clone();
        let t0 = Instant::now();
        let output = black_box(run(black_box(input)));
        samples.push(t0.elapsed());
        drop(output);
    }
    Stats::of(samples)
}

pub struct Stats {
    pub p50: Duration,
    pub p99: Duration,
}

impl Stats {
    pub fn of(mut samples: Vec<Duration>) -> Self {
        samples.sort_unstable();
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
        Self {
            p50: at(0.50),
            p99: at(0.99),
        }
    }
}

pub fn us(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e6)
}
