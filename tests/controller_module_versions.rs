//! A controller module's versions as a `DecisionModule` plans them: a shadow
//! deciding beside the serving version (agreeing, differing, never applied),
//! promotion on evidence, automatic rollback to `previous`, and the shadows
//! refused (wider than the pin, or describing the controller otherwise), with
//! pv-protection built by `make guests`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rekon_contract::controller::{Action, Decision, Input, Scope};
use rekon_contract::{ControllerDecision, ControllerInput, ControllerWorld};
use rekon_controllers::decider::Decider;
use rekon_modules::testing::with_custom_section;
use rekon_modules::{
    AutoPromote, AutoRollback, ControllerModulePlan, ControllerPlan, Mode, ModuleDigest,
    ModuleFile, Modules, ModulesOptions, Offered, RefusalReason,
};
use rekon_runtime::testing::built_guest;
use rekon_runtime::{Limits, World};
use serde_json::json;

const NAME: &str = "pv-protection";
const FINALIZER: &str = "kubernetes.io/pv-protection";
const OTHER: &str = "kubernetes.io/pv-protectioX";

fn pv_protection() -> Vec<u8> {
    std::fs::read(built_guest("rekon_guest_pv_protection")).expect("run `make guests`")
}

/// pv-protection with every `from` in its data replaced by `to` (same length).
fn replaced(from: &str, to: &str) -> Vec<u8> {
    let mut bytes = pv_protection();
    let (from, to) = (from.as_bytes(), to.as_bytes());
    let mut found = false;
    for i in 0..=bytes.len() - from.len() {
        if &bytes[i..i + from.len()] == from {
            bytes[i..i + from.len()].copy_from_slice(to);
            found = true;
        }
    }
    assert!(found);
    bytes
}

fn file(name: &str, bytes: &[u8]) -> ModuleFile {
    ModuleFile {
        name: name.into(),
        path: format!("configmap/ns/{name}#module.wasm").into(),
        bytes: bytes.into(),
        digest: ModuleDigest::of(bytes),
    }
}

fn plan(serving: &ModuleFile, mode: Mode) -> ControllerPlan {
    ControllerPlan {
        world: World::of::<ControllerWorld>(),
        serving: serving.clone(),
        shadow: None,
        fallback: None,
        mode,
        limits: Limits::default(),
        auto_rollback: None,
        auto_promote: None,
        pinned: true,
    }
}

fn pinned(plan: ControllerPlan, finalizers: &[&str]) -> ControllerModulePlan {
    ControllerModulePlan {
        name: NAME.into(),
        plan,
        scope: Scope {
            finalizers: finalizers.iter().map(|f| f.to_string()).collect(),
            ..Scope::default()
        },
    }
}

async fn modules() -> Modules {
    Modules::open(ModulesOptions::without_dir()).await.unwrap()
}

/// A PV as the decision sees it.
fn pv(finalizers: &[&str], deleting: bool, phase: &str) -> ControllerInput {
    let mut metadata = json!({"name": "a", "finalizers": finalizers});
    if deleting {
        metadata["deletionTimestamp"] = json!("2020-01-01T00:00:00Z");
    }
    ControllerInput::Decide(Input {
        primary: json!({"metadata": metadata, "status": {"phase": phase}}).to_string(),
        related: Vec::new(),
        reads: Vec::new(),
        now: "2020-01-01T00:00:01Z".into(),
    })
}

/// Decides `input` with what the host's controller decides with now.
fn decide(modules: &Modules, input: ControllerInput) -> ControllerDecision {
    let served = modules.controller_set().get(NAME).expect("served");
    let decider: Arc<dyn Decider<ControllerWorld>> = served.module.slot.current();
    decider.decide("a", input).expect("decides")
}

fn actions(decision: &ControllerDecision) -> &[Action] {
    match decision {
        ControllerDecision::Decide(Decision::Actions(actions)) => actions,
        other => panic!("not actions: {other:?}"),
    }
}

async fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shadow_decides_beside_the_serving_version_and_is_never_applied() {
    let modules = modules().await;
    let v1 = file("v1", &pv_protection());
    // Never sees a PV as deleting: it would protect a PV being deleted.
    let blind = file(
        "shadow",
        &replaced("deletionTimestamp", "deletionTimestamX"),
    );
    let mut with_shadow = plan(&v1, Mode::Active);
    with_shadow.shadow = Some(blind.clone());
    let applied = modules
        .apply_controller("o", pinned(with_shadow, &[FINALIZER]))
        .await
        .unwrap();
    assert!(matches!(
        applied.offered,
        Offered::Started { replaced: None }
    ));

    // A new PV: both add the finalizer.
    let decided = decide(&modules, pv(&[], false, "Available"));
    assert_eq!(actions(&decided), [Action::AddFinalizer(FINALIZER.into())]);
    let tally = modules.controller_shadow_tally(NAME).unwrap();
    eventually("an agreement", || tally.agreed() == 1).await;

    // A PV being deleted without the finalizer: the serving version leaves
    // it, the shadow would add the finalizer.
    let decided = decide(&modules, pv(&[], true, "Available"));
    assert!(
        actions(&decided).is_empty(),
        "the serving version's decision is applied"
    );
    eventually("a difference", || tally.differed() == 1).await;
    let difference = &tally.differences()[0];
    assert_eq!(difference.key, "a");
    assert!(
        difference.shadow.to_string().contains(FINALIZER),
        "{difference:?}"
    );

    let status = &modules.status().controllers[NAME];
    assert_eq!(
        status.active.as_ref().unwrap().sha256,
        v1.digest.to_string()
    );
    assert_eq!(
        status.shadow.as_ref().unwrap().sha256,
        blind.digest.to_string()
    );
    assert_eq!((status.shadow_agreed, status.shadow_differed), (1, 1));

    // Without the shadow, the same version serves alone: published, keys decided again.
    let version = modules.controller_set().get(NAME).unwrap().version;
    let applied = modules
        .apply_controller("o", pinned(plan(&v1, Mode::Active), &[FINALIZER]))
        .await
        .unwrap();
    assert!(matches!(applied.offered, Offered::Published));
    assert_eq!(
        modules.controller_set().get(NAME).unwrap().version,
        version + 1
    );
    assert!(modules.controller_shadow_tally(NAME).is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shadow_agreeing_often_enough_is_promoted_and_decides_every_key_again() {
    let modules = modules().await;
    let v1 = file("v1", &pv_protection());
    let v2 = file(
        "v2",
        &with_custom_section(&pv_protection(), "rekon-build", b"v2"),
    );
    // Mode shadow, as composed from an object: `previous` serves, `module` shadows.
    let mut shadowing = plan(&v1, Mode::Shadow);
    shadowing.shadow = Some(v2.clone());
    shadowing.auto_promote = Some(AutoPromote {
        min_decisions: 2,
        max_differences: 0,
    });
    modules
        .apply_controller("o", pinned(shadowing, &[FINALIZER]))
        .await
        .unwrap();
    let version = modules.controller_set().get(NAME).unwrap().version;
    modules.promote_due();
    assert_eq!(
        modules.status().controllers[NAME]
            .active
            .as_ref()
            .unwrap()
            .sha256,
        v1.digest.to_string(),
        "no evidence yet"
    );
    for _ in 0..2 {
        decide(&modules, pv(&[], false, "Available"));
    }
    let tally = modules.controller_shadow_tally(NAME).unwrap();
    eventually("two agreements", || tally.agreed() == 2).await;
    modules.promote_due();
    let status = &modules.status().controllers[NAME];
    assert_eq!(
        status.active.as_ref().unwrap().sha256,
        v2.digest.to_string()
    );
    assert_eq!(
        status.previous.as_ref().unwrap().sha256,
        v1.digest.to_string()
    );
    assert_eq!(status.promotion.as_ref().unwrap().agreed, 2);
    assert_eq!(status.mode, Mode::Active);
    assert!(status.shadow.is_none());
    assert_eq!(
        modules.controller_set().get(NAME).unwrap().version,
        version + 1,
        "the promoted version decides every key again"
    );
    // Promoted once: nothing more to do.
    modules.promote_due();
    assert_eq!(
        modules.controller_set().get(NAME).unwrap().version,
        version + 1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_version_failing_too_often_is_rolled_back_to_previous() {
    let modules = modules().await;
    let v1 = file("v1", &pv_protection());
    let v2 = file(
        "v2",
        &with_custom_section(&pv_protection(), "rekon-build", b"v2"),
    );
    let mut failing = plan(&v2, Mode::Active);
    failing.fallback = Some(v1.clone());
    // A 4 MiB memory cap: an input larger than that fails the decision (memory cap).
    failing.limits.memory_bytes = 4 << 20;
    failing.auto_rollback = Some(AutoRollback {
        max_failure_fraction: 0.5,
        min_decisions: 2,
    });
    modules
        .apply_controller("o", pinned(failing, &[FINALIZER]))
        .await
        .unwrap();
    let version = modules.controller_set().get(NAME).unwrap().version;
    let huge = ControllerInput::Decide(Input {
        primary: json!({"metadata": {"name": "a"}, "x": "x".repeat(8 << 20)}).to_string(),
        related: Vec::new(),
        reads: Vec::new(),
        now: "2020-01-01T00:00:01Z".into(),
    });
    let served = modules.controller_set().get(NAME).unwrap();
    for _ in 0..2 {
        let failed = served.module.slot.current().decide("a", huge.clone());
        assert!(failed.is_err(), "over the memory cap");
    }
    let status = &modules.status().controllers[NAME];
    assert_eq!(
        status.active.as_ref().unwrap().sha256,
        v1.digest.to_string()
    );
    assert_eq!(status.rollbacks, 1);
    assert_eq!(
        status.rolled_back_from.as_deref(),
        Some(v2.digest.to_string().as_str())
    );
    assert_eq!(
        modules.controller_set().get(NAME).unwrap().version,
        version + 1,
        "the previous version decides every key again"
    );
    let decided = decide(&modules, pv(&[], false, "Available"));
    assert_eq!(actions(&decided), [Action::AddFinalizer(FINALIZER.into())]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shadow_wider_than_the_pin_or_describing_otherwise_is_refused() {
    let modules = modules().await;
    let v1 = file("v1", &pv_protection());
    modules
        .apply_controller("o", pinned(plan(&v1, Mode::Active), &[FINALIZER]))
        .await
        .unwrap();
    let other = file("other", &replaced(FINALIZER, OTHER));
    let mut with_shadow = plan(&v1, Mode::Active);
    with_shadow.shadow = Some(other.clone());

    let refusal = modules
        .apply_controller("o", pinned(with_shadow.clone(), &[FINALIZER]))
        .await
        .unwrap_err();
    assert_eq!(refusal.reason, RefusalReason::ScopeNotAllowed);
    assert!(refusal.message.starts_with("spec.shadow: "), "{refusal}");
    assert!(refusal.message.contains(OTHER), "{refusal}");

    let refusal = modules
        .apply_controller("o", pinned(with_shadow, &[FINALIZER, OTHER]))
        .await
        .unwrap_err();
    assert_eq!(refusal.reason, RefusalReason::WrongController);
    assert!(refusal.message.contains("scope differ"), "{refusal}");

    // `previous` describing otherwise: no rollback target, and refused with autoRollback.
    let mut with_previous = plan(&v1, Mode::Active);
    with_previous.fallback = Some(other);
    modules
        .apply_controller("o", pinned(with_previous.clone(), &[FINALIZER, OTHER]))
        .await
        .unwrap();
    assert!(modules.status().controllers[NAME].previous.is_none());
    with_previous.auto_rollback = Some(AutoRollback {
        max_failure_fraction: 0.5,
        min_decisions: 2,
    });
    let refusal = modules
        .apply_controller("o", pinned(with_previous, &[FINALIZER, OTHER]))
        .await
        .unwrap_err();
    assert_eq!(refusal.reason, RefusalReason::WrongController);
    assert!(refusal.message.starts_with("spec.previous: "), "{refusal}");

    let status = &modules.status().controllers[NAME];
    assert_eq!(
        status.active.as_ref().unwrap().sha256,
        v1.digest.to_string()
    );
    assert!(status.shadow.is_none());
    let decided = decide(&modules, pv(&[], false, "Available"));
    assert_eq!(actions(&decided), [Action::AddFinalizer(FINALIZER.into())]);
}
