//! A misbehaving guest fails only its own decision, with an error naming it,
//! and the same engine keeps serving.

mod common;

use std::time::{Duration, Instant};

use rekon_contract::model::{PvcDecision, PvcInput};
use rekon_runtime::testing::built_guest;
use rekon_runtime::{Engine, EngineConfig, Failure, GuestPre, Limits, World};

fn misbehaving(limits: Limits) -> GuestPre {
    let engine = Engine::new(EngineConfig {
        max_concurrent_decisions: 4,
        max_memory_bytes: 64 << 20,
        default_limits: limits,
    })
    .unwrap();
    engine
        .loader()
        .world(World::of::<rekon_contract::PvcProtectionWorld>())
        .file(built_guest("rekon_guest_misbehaving"))
        .unwrap()
}

fn input(pvc_name: &str) -> PvcInput {
    let mut input = PvcInput::default();
    input.pvc.meta.name = pvc_name.into();
    input
}

fn assert_still_serves(guest: &GuestPre) {
    assert_eq!(
        guest.decide_pvc(input("data")).unwrap(),
        PvcDecision::Actions(vec![])
    );
}

#[test]
fn endless_loop_hits_the_deadline() {
    let deadline = Duration::from_millis(50);
    let guest = misbehaving(Limits {
        deadline,
        memory_bytes: 16 << 20,
        ..Limits::default()
    });
    let started = Instant::now();
    let err = guest
        .decide_pvc(input("loop"))
        .unwrap_err()
        .with_key("default/loop");
    let took = started.elapsed();
    assert!(
        matches!(err.failure, Failure::DeadlineExceeded(d) if d == deadline),
        "{err}"
    );
    assert!(
        took >= deadline,
        "stopped after {took:?}, before the deadline"
    );
    assert!(took < Duration::from_secs(2), "stopped only after {took:?}");
    let message = err.to_string();
    assert!(
        message.starts_with("guest rekon_guest_misbehaving@sha256:"),
        "{message}"
    );
    assert!(message.contains("(key default/loop)"), "{message}");
    assert!(message.contains("deadline of 50ms exceeded"), "{message}");
    assert_still_serves(&guest);
}

#[test]
fn memory_bomb_hits_the_cap() {
    let guest = misbehaving(Limits {
        deadline: Duration::from_secs(5),
        memory_bytes: 16 << 20,
        ..Limits::default()
    });
    let err = guest.decide_pvc(input("bomb")).unwrap_err();
    match err.failure {
        Failure::MemoryCapExceeded { cap, requested } => {
            assert_eq!(cap, 16 << 20);
            assert!(requested > cap, "requested {requested}");
        }
        ref other => panic!("expected a memory cap failure, got {other}"),
    }
    assert!(err.to_string().contains("rekon_guest_misbehaving@sha256:"));
    assert_still_serves(&guest);
}

#[test]
fn panic_is_a_trap_with_the_guest_message() {
    let guest = misbehaving(Limits::default());
    let err = guest.decide_pvc(input("panic")).unwrap_err();
    match &err.failure {
        Failure::Trap { stderr, .. } => {
            assert!(
                stderr.contains("panic requested by PVC \"panic\""),
                "stderr: {stderr}"
            );
        }
        other => panic!("expected a trap, got {other}"),
    }
    let message = err.to_string();
    assert!(
        message.contains("wasm trap: wasm `unreachable` instruction executed; guest stderr: ")
            && message.ends_with("misbehaving guest: panic requested by PVC \"panic\""),
        "{message}"
    );
    assert_eq!(err.guest.name(), "rekon_guest_misbehaving");
    assert_still_serves(&guest);
}

/// Decisions run from async code too: wasmtime-wasi's sync stderr would block
/// on the ambient tokio runtime and panic there.
#[tokio::test(flavor = "current_thread")]
async fn panic_is_a_trap_with_its_message_on_a_current_thread_runtime() {
    let guest = misbehaving(Limits::default());
    let err = guest.decide_pvc(input("panic")).unwrap_err();
    assert!(
        matches!(&err.failure, Failure::Trap { stderr, .. }
            if stderr.contains("panic requested by PVC \"panic\"")),
        "{err}"
    );
    assert_still_serves(&guest);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panic_is_a_trap_with_its_message_on_a_runtime_worker() {
    let guest = misbehaving(Limits::default());
    let err = tokio::spawn(async move { guest.decide_pvc(input("panic")) })
        .await
        .expect("the decision does not panic the task")
        .unwrap_err();
    assert!(
        matches!(&err.failure, Failure::Trap { stderr, .. }
            if stderr.contains("panic requested by PVC \"panic\"")),
        "{err}"
    );
}

#[test]
fn a_result_over_the_size_cap_fails_naming_guest_and_key() {
    let guest = misbehaving(Limits {
        result_bytes: 1 << 20,
        ..Limits::default()
    });
    let err = guest
        .decide_pvc(input("huge"))
        .unwrap_err()
        .with_key("default/huge");
    assert!(
        matches!(err.failure, Failure::ResultTooLarge { limit } if limit == 1 << 20),
        "{err}"
    );
    let message = err.to_string();
    assert!(
        message.starts_with("guest rekon_guest_misbehaving@sha256:")
            && message.contains("(key default/huge)")
            && message.contains("result too large"),
        "{message}"
    );
    assert_still_serves(&guest);

    // The same 8 MiB decision passes under a larger cap: the cap is what refused it.
    let roomy = misbehaving(Limits {
        result_bytes: 16 << 20,
        ..Limits::default()
    });
    let PvcDecision::Actions(actions) = roomy.decide_pvc(input("huge")).unwrap() else {
        panic!("expected actions");
    };
    assert_eq!(actions.len(), 8);
}

#[test]
fn faults_in_a_row_do_not_exhaust_the_instance_pool() {
    // The pool holds 4 instances: a leaked instance per failure would show here.
    // The deadline leaves room for the healthy decision on a loaded CI machine.
    let guest = misbehaving(Limits {
        deadline: Duration::from_millis(100),
        memory_bytes: 8 << 20,
        ..Limits::default()
    });
    for name in ["loop", "bomb", "panic", "huge"].repeat(3) {
        assert!(guest.decide_pvc(input(name)).is_err());
    }
    assert_still_serves(&guest);
}

#[test]
fn a_pvc_guest_does_not_answer_claim_decisions() {
    let guest = misbehaving(Limits::default());
    let err = guest
        .decide_claim(common::claim_with_reservations(1))
        .unwrap_err();
    assert!(
        matches!(
            &err.failure,
            Failure::WrongWorld { world, .. } if *world == World::of::<rekon_contract::PvcProtectionWorld>().name()
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("does not export `decide-claim`"),
        "{err}"
    );
}
