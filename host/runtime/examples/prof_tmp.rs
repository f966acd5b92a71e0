#[path = "../tests/common/mod.rs"]
mod common;
use rekon_runtime::{Engine, EngineConfig, World};
fn main() {
    let n: usize = std::env::args().nth(1).unwrap().parse().unwrap();
    let iters: usize = std::env::args().nth(2).unwrap().parse().unwrap();
    let engine = Engine::new(EngineConfig::default()).unwrap();
    let g = engine.loader().world(World::PvcProtection).limits(rekon_runtime::Limits { deadline: std::time::Duration::from_secs(10), memory_bytes: 64 << 20 }).file(rekon_runtime::testing::built_guest("rekon_guest_pvc_protection")).unwrap();
    let input = common::unused_deleting_pvc(n);
    let only_inst = std::env::var("INST").is_ok();
    let mut v = Vec::new();
    for _ in 0..iters {
        let i = input.clone();
        let t = std::time::Instant::now();
        if only_inst { g.instantiate().unwrap(); } else { std::hint::black_box(g.decide_pvc(i).unwrap()); }
        v.push(t.elapsed());
    }
    v.sort();
    print!("n={n} p50={:?} ", v[v.len() / 2]);
}
