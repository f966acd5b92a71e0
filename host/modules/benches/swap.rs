//! Hot-swap latency: from a precompiled module to the version serving.
//!
//! `cargo bench -p rekon-modules --bench swap` (after `make guests`). Prints,
//! over 200 swaps each (50 for the reload row), p50/p90/p99/max of:
//! - deserialize: precompiled bytes → checked `GuestPre` (world, version, link)
//! - instantiate check: one fresh instance before publishing
//! - publish: the atomic store into the controller's slot
//! - precompiled → published: the three together, through the module loader
//!   (cache lookup, deserialize, instantiate, digest) and the slot
//! - reload: a changed guests.yaml to the new version serving, end to end
//!   (read and hash the directory, cache hit, checks, canary replay of 64
//!   recorded inputs, publish)

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rekon_contract::PvcProtectionWorld;
use rekon_controllers::decider::{Decider, Slot};
use rekon_guest::model::PvcInput;
use rekon_modules::testing::with_custom_section;
use rekon_modules::{Loader, ModuleDigest, ModuleFile, Modules, ModulesOptions, PrecompiledCache};
use rekon_runtime::testing::built_guest;
use rekon_runtime::{Engine, EngineConfig, Limits, World};

/// Swaps per row; the reload row uses RELOADS distinct builds.
const SWAPS: usize = 200;
const RELOADS: usize = 50;
const TARGET: Duration = Duration::from_millis(5);

fn main() {
    let reference =
        std::fs::read(built_guest("rekon_guest_pvc_protection")).expect("make guests first");
    let claim = std::fs::read(built_guest("rekon_guest_resource_claim")).unwrap();
    let engine = Engine::new(EngineConfig::default()).unwrap();
    let precompiled = engine.precompile("reference", &reference).unwrap();

    let mut rows = Vec::new();
    rows.push((
        "deserialize",
        time(|| {
            let loader = engine
                .loader()
                .world(World::of::<rekon_contract::PvcProtectionWorld>());
            let started = Instant::now();
            // SAFETY: precompiled by this engine just above.
            let guest = unsafe { loader.precompiled("pvc", &precompiled) }.unwrap();
            (started.elapsed(), guest)
        }),
    ));
    let guest = unsafe {
        engine
            .loader()
            .world(World::of::<rekon_contract::PvcProtectionWorld>())
            .precompiled("pvc", &precompiled)
    }
    .unwrap();
    rows.push((
        "instantiate check",
        time(|| {
            let started = Instant::now();
            guest.instantiate().unwrap();
            (started.elapsed(), ())
        }),
    ));
    let slot: Slot<PvcProtectionWorld> = Slot::new(Arc::new(guest.clone()));
    rows.push((
        "publish (slot swap)",
        time(|| {
            let next: Arc<dyn Decider<PvcProtectionWorld>> = Arc::new(guest.clone());
            let started = Instant::now();
            let previous = slot.swap(next);
            (started.elapsed(), previous)
        }),
    ));

    let cache = PrecompiledCache::new(engine.compatibility_hash(), None).unwrap();
    let file = ModuleFile {
        name: "pvc".into(),
        path: "pvc.wasm".into(),
        digest: ModuleDigest::of(&reference),
        bytes: reference.clone().into(),
    };
    cache.put(&file.digest, precompiled.clone().into());
    let loader = Loader::new(engine.clone(), cache);
    rows.push((
        "precompiled -> published",
        time(|| {
            let started = Instant::now();
            let version = loader
                .load(
                    World::of::<rekon_contract::PvcProtectionWorld>(),
                    Limits::default(),
                    &file,
                )
                .unwrap();
            let previous = slot.swap(Arc::new(version));
            (started.elapsed(), previous)
        }),
    ));

    rows.push((
        "reload (guests.yaml -> serving)",
        reload(&reference, &claim),
    ));

    println!(
        "hot swap of the pvc-protection module, {SWAPS} swaps per row, {RELOADS} reloads \
         (target: precompiled -> published <= {TARGET:?})"
    );
    println!(
        "{:<34} {:>10} {:>10} {:>10} {:>10}",
        "step", "p50", "p90", "p99", "max"
    );
    for (name, times) in &rows {
        println!(
            "{name:<34} {:>10} {:>10} {:>10} {:>10}",
            fmt(percentile(times, 50)),
            fmt(percentile(times, 90)),
            fmt(percentile(times, 99)),
            fmt(*times.last().unwrap())
        );
    }
    let total = &rows
        .iter()
        .find(|(n, _)| *n == "precompiled -> published")
        .unwrap()
        .1;
    let verdict = if percentile(total, 99) <= TARGET {
        "meets"
    } else {
        "MISSES"
    };
    println!(
        "precompiled -> published p99 {} {verdict} the {TARGET:?} target",
        fmt(percentile(total, 99))
    );
}

/// Runs `swap` SWAPS times (after 3 warm-ups); returns the sorted durations.
fn time<T>(mut swap: impl FnMut() -> (Duration, T)) -> Vec<Duration> {
    for _ in 0..3 {
        swap();
    }
    let mut times: Vec<Duration> = (0..SWAPS).map(|_| swap().0).collect();
    times.sort();
    times
}

/// Full reloads between distinct builds whose precompiled forms are cached.
fn reload(reference: &[u8], claim: &[u8]) -> Vec<Duration> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let put = |name: &str, bytes: &[u8]| {
        std::fs::write(dir.path().join(name), bytes).unwrap();
        ModuleDigest::of(bytes)
    };
    let claim = put("claim.wasm", claim);
    let builds: Vec<ModuleDigest> = (0..=RELOADS + 3)
        .map(|n| {
            put(
                &format!("v{n}.wasm"),
                &with_custom_section(reference, "rekon-build", n.to_string().as_bytes()),
            )
        })
        .collect();
    let configure = |n: usize| write_config(dir.path(), n, &builds[n], &claim);
    runtime.block_on(async {
        // Warm the on-disk cache with every build, as a previous run would have.
        for n in 0..builds.len() {
            configure(n);
            let mut options = ModulesOptions::new(dir.path());
            options.cache_dir = Some(cache.path().to_path_buf());
            Modules::open(options).await.unwrap();
        }
        configure(0);
        let mut options = ModulesOptions::new(dir.path());
        options.cache_dir = Some(cache.path().to_path_buf());
        let modules = Modules::open(options).await.unwrap();
        // Recorded inputs for the canary replay.
        let decider = modules.slot::<PvcProtectionWorld>().current();
        for n in 0..64 {
            let mut input = PvcInput::default();
            input.pvc.meta.name = format!("pvc-{n}");
            decider.decide(&format!("ns/pvc-{n}"), input).unwrap();
        }
        let mut times = Vec::new();
        for (n, build) in builds.iter().enumerate().skip(1) {
            configure(n);
            let started = Instant::now();
            modules.reload().await;
            let took = started.elapsed();
            assert_eq!(
                modules.slot::<PvcProtectionWorld>().current().info().digest,
                build.hex()
            );
            if n > 3 {
                times.push(took);
            }
        }
        times.sort();
        times
    })
}

fn write_config(dir: &Path, n: usize, digest: &ModuleDigest, claim: &ModuleDigest) {
    let yaml = format!(
        "pvc-protection: {{module: v{n}.wasm, sha256: {digest}}}\n\
         resource-claim: {{module: claim.wasm, sha256: {claim}}}\n"
    );
    std::fs::write(dir.join("guests.yaml"), yaml).unwrap();
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    sorted[((sorted.len() * p).div_ceil(100))
        .saturating_sub(1)
        .min(sorted.len() - 1)]
}

fn fmt(d: Duration) -> String {
    if d >= Duration::from_millis(1) {
        format!("{:.2} ms", d.as_secs_f64() * 1e3)
    } else {
        format!("{:.1} µs", d.as_secs_f64() * 1e6)
    }
}
