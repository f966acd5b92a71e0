//! What a guest's language costs: the pvc-protection decision built in Rust,
//! TypeScript (componentize-js) and Python (componentize-py), on one engine
//! configured as `rekon run` configures it.
//!
//! Per language:
//! - compile: `Engine::precompile` of the component, once (what the cache saves);
//! - instantiate: a fresh store + instance alone, p50/p99;
//! - fresh instance + decision at concurrency N = 1, 2, 10, 100: N threads each
//!   deciding in a loop for a fixed time, every decision timed on its own, and
//!   the decisions per second of all threads together;
//! - resident memory per concurrent decision: (peak RSS while N decide − RSS
//!   before) / N, on a fresh engine per N so earlier runs leave nothing resident.
//!
//! The input: a deleting PVC with its finalizer and [`PODS`] cached pods none of
//! which uses it, so the guest asks for the live list (one decision); this is
//! the `pvc decide` input of the `decisions` bench.
//!
//! A language whose module is not built is skipped with a line saying so.
//! Run with `cargo bench -p rekon-runtime --bench languages` (`make bench`).

#[path = "../tests/common/mod.rs"]
mod common;
mod support;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use rekon_contract::model::PvcInput;
use rekon_runtime::testing::guest_dir;
use rekon_runtime::{Engine, EngineConfig, GuestPre, Limits, World};
use support::{Stats, sample, us};

const PODS: usize = 10;
const CONCURRENCY: [usize; 4] = [1, 2, 10, 100];
/// How long each concurrency level runs.
const RUN_FOR: Duration = Duration::from_millis(2000);

struct Language {
    name: &'static str,
    stem: &'static str,
}

const LANGUAGES: [Language; 3] = [
    Language {
        name: "Rust",
        stem: "rekon_guest_pvc_protection",
    },
    Language {
        name: "TypeScript",
        stem: "rekon_guest_pvc_protection_ts",
    },
    Language {
        name: "Python",
        stem: "rekon_guest_pvc_protection_py",
    },
];

/// The engine of `rekon run`, with room for the most concurrent decisions measured.
fn engine() -> Engine {
    Engine::new(EngineConfig {
        max_concurrent_decisions: 128,
        ..EngineConfig::default()
    })
    .expect("engine")
}

fn load(engine: &Engine, name: &str, precompiled: &[u8]) -> GuestPre {
    // A generous deadline: the bench measures time, and 100 threads on a
    // small machine wait for a core longer than the default 100 ms.
    let limits = Limits {
        deadline: Duration::from_secs(10),
        ..Limits::default()
    };
    let loader = engine
        .loader()
        .world(World::of::<rekon_contract::PvcProtectionWorld>())
        .limits(limits);
    // SAFETY: precompiled just now by an engine of the same configuration.
    unsafe { loader.precompiled(name, precompiled) }.unwrap_or_else(|e| panic!("{e}"))
}

/// Resident set size of this process, from /proc/self/statm.
fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("statm resident pages");
    pages * 4096
}

struct Concurrent {
    stats: Stats,
    per_second: f64,
    rss_per_decision: usize,
}

/// `threads` threads deciding `input` for [`RUN_FOR`], on a fresh engine.
fn concurrent(name: &str, precompiled: &[u8], input: &PvcInput, threads: usize) -> Concurrent {
    let engine = engine();
    let guest = load(&engine, name, precompiled);
    guest.decide_pvc(input.clone()).expect("decides");
    let before = rss_bytes();
    let peak = Arc::new(AtomicUsize::new(before));
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = std::thread::spawn({
        let (peak, stop) = (peak.clone(), stop.clone());
        move || {
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(rss_bytes(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_micros(500));
            }
        }
    });
    let start = Arc::new(Barrier::new(threads));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (guest, input, start) = (guest.clone(), input.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let began = Instant::now();
                let mut samples = Vec::new();
                while began.elapsed() < RUN_FOR {
                    let input = input.clone();
                    let t0 = Instant::now();
                    let decision = guest.decide_pvc(input).expect("decides");
                    samples.push(t0.elapsed());
                    drop(decision);
                }
                samples
            })
        })
        .collect();
    let samples: Vec<Duration> = workers
        .into_iter()
        .flat_map(|w| w.join().expect("worker"))
        .collect();
    stop.store(true, Ordering::Relaxed);
    sampler.join().expect("sampler");
    let decisions = samples.len();
    Concurrent {
        stats: Stats::of(samples),
        per_second: decisions as f64 / RUN_FOR.as_secs_f64(),
        rss_per_decision: peak.load(Ordering::Relaxed).saturating_sub(before) / threads,
    }
}

fn mib(bytes: usize) -> String {
    format!("{:.2}", bytes as f64 / (1 << 20) as f64)
}

fn main() {
    let filter = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .unwrap_or_default();
    let input = common::unused_deleting_pvc(PODS);
    let dir = guest_dir();
    println!(
        "pvc-protection by language: fresh instance + decision ({PODS} cached pods, asks for the live list), \
         N threads deciding at once for {} s each",
        RUN_FOR.as_secs_f64()
    );
    println!(
        "| language | module MB | compile s | instantiate p50 µs | instantiate p99 µs | N | decision p50 µs | decision p99 µs | decisions/s | RSS per concurrent decision MiB |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut skipped = Vec::new();
    for language in LANGUAGES
        .iter()
        .filter(|l| l.name.to_lowercase().contains(&filter.to_lowercase()))
    {
        let path = dir.join(format!("{}.wasm", language.stem));
        if !path.is_file() {
            skipped.push(format!(
                "skipped {} rows: {} is not built (run `make guests`)",
                language.name,
                path.display()
            ));
            continue;
        }
        row(language, &path, &input);
    }
    for line in skipped {
        println!("{line}");
    }
}

fn row(language: &Language, path: &Path, input: &PvcInput) {
    let bytes = std::fs::read(path).expect("module");
    let engine = engine();
    let started = Instant::now();
    let precompiled = engine
        .precompile(language.stem, &bytes)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let compile = started.elapsed();
    let guest = load(&engine, language.stem, &precompiled);
    let instantiate = sample(&(), |()| guest.instantiate().expect("instantiate"));
    drop((guest, engine));
    for n in CONCURRENCY {
        let run = concurrent(language.stem, &precompiled, input, n);
        println!(
            "| {} | {:.1} | {:.2} | {} | {} | {n} | {} | {} | {:.0} | {} |",
            language.name,
            bytes.len() as f64 / 1e6,
            compile.as_secs_f64(),
            us(instantiate.p50),
            us(instantiate.p99),
            us(run.stats.p50),
            us(run.stats.p99),
            run.per_second,
            mib(run.rss_per_decision),
        );
    }
}
