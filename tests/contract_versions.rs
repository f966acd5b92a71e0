//! End-to-end: modules of both contract versions in one host (issue 11). The
//! 0.1.0 modules are the checked-in fixtures (tests/fixtures/v0.1.0), built
//! from the 0.1.0 WIT before the contract moved on.

use std::sync::Arc;
use std::time::Duration;

use rekon_contract::{PvcProtectionWorld, ResourceClaimWorld};
use rekon_controllers::decider::{Decider, Slot};
use rekon_controllers::journal::{Entry, Journal};
use rekon_runtime::testing::{built_guest, contract_fixture};
use rekon_runtime::{Engine, EngineConfig, GuestPre, World};
use rekon_simulate::{ClusterOptions, Deciders, Settle, simulate};
use rekon_tests::sim::*;
use serde_json::{Value, json};

fn load(engine: &Engine, world: World, path: std::path::PathBuf) -> GuestPre {
    engine
        .loader()
        .world(world)
        .file(&path)
        .unwrap_or_else(|e| panic!("{} (run `make guests`): {e}", path.display()))
}

/// `(digest, outcome)` of every pvc-protection decision, in order.
fn pvc_decisions(journal: &Journal) -> Vec<(String, Value)> {
    journal
        .entries()
        .into_iter()
        .filter_map(|e| match e {
            Entry::Decision {
                controller,
                digest,
                outcome,
                ..
            } if controller == "pvc-protection" => Some((digest, outcome)),
            _ => None,
        })
        .collect()
}

fn settle() -> Settle {
    Settle {
        quiet: Duration::from_millis(300),
        requeue_bound: Duration::from_secs(2),
        timeout: Duration::from_secs(60),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_0_1_0_module_and_a_0_2_0_module_decide_in_the_same_host() {
    let engine = Engine::new(EngineConfig::default()).expect("engine");
    let old_pvc = load(
        &engine,
        World::of::<rekon_contract::PvcProtectionWorld>(),
        contract_fixture("0.1.0", "rekon_guest_pvc_protection"),
    );
    let new_claim = load(
        &engine,
        World::of::<rekon_contract::ResourceClaimWorld>(),
        built_guest("rekon_guest_resource_claim"),
    );
    assert_eq!(old_pvc.version().version, "0.1.0");
    assert_eq!(new_claim.version().version, "0.2.0");
    let old_digest = old_pvc.id().digest().to_string();
    let deciders = Deciders::new()
        .with(Arc::new(Slot::<PvcProtectionWorld>::new(Arc::new(old_pvc))))
        .with(Arc::new(Slot::<ResourceClaimWorld>::new(Arc::new(
            new_claim,
        ))));
    let state = vec![
        namespace("ns"),
        deleting_pvc("ns", "unused"),
        deleting_pvc("ns", "data"),
        pod("ns", "web", "node-a", json!([pvc_volume("v", "data")])),
        template("ns", "gpu"),
        pod_with_template_claims("ns", "trainer", "", &[("acme", "gpu")]),
    ];
    let journal = Arc::new(Journal::new());
    let report = simulate(
        state,
        vec![],
        ClusterOptions::default(),
        settle(),
        deciders,
        journal.clone(),
    )
    .await
    .expect("simulation runs");
    report.converged.as_ref().expect("converged");

    // The 0.1.0 module released the unused PVC and kept the used one.
    assert!(find(&report.objects, "PersistentVolumeClaim", "ns", "unused").is_none());
    let data = find(&report.objects, "PersistentVolumeClaim", "ns", "data").expect("kept");
    assert_eq!(finalizers(data), vec!["kubernetes.io/pvc-protection"]);
    let decided = pvc_decisions(&journal);
    assert!(!decided.is_empty());
    assert!(decided.iter().all(|(digest, _)| *digest == old_digest));
    // The 0.2.0 module generated the trainer's claim.
    assert_eq!(claims(&report.objects).len(), 1, "{:#?}", report.objects);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hot_swap_from_0_1_0_to_0_2_0_under_load_fails_no_decision() {
    let engine = Engine::new(EngineConfig::default()).expect("engine");
    let old = load(
        &engine,
        World::of::<rekon_contract::PvcProtectionWorld>(),
        contract_fixture("0.1.0", "rekon_guest_pvc_protection"),
    );
    let new = load(
        &engine,
        World::of::<rekon_contract::PvcProtectionWorld>(),
        built_guest("rekon_guest_pvc_protection"),
    );
    let (old_digest, new_digest) = (old.id().digest().to_string(), new.id().digest().to_string());
    let claim = load(
        &engine,
        World::of::<rekon_contract::ResourceClaimWorld>(),
        built_guest("rekon_guest_resource_claim"),
    );
    let slot = Arc::new(Slot::<PvcProtectionWorld>::new(Arc::new(old)));
    let deciders = Deciders::new()
        .with(slot.clone())
        .with(Arc::new(Slot::<ResourceClaimWorld>::new(Arc::new(claim))));

    // Enough work that the swap lands while decisions run.
    const N: usize = 300;
    let mut state = vec![namespace("ns")];
    state.extend((0..N).map(|i| deleting_pvc("ns", &format!("old-{i}"))));
    state.extend((0..N / 3).map(|i| {
        pod(
            "ns",
            &format!("web-{i}"),
            "node-a",
            json!([pvc_volume("v", &format!("old-{i}"))]),
        )
    }));
    let journal = Arc::new(Journal::new());
    let swapper = {
        let (journal, slot) = (journal.clone(), slot.clone());
        tokio::spawn(async move {
            // Swap once the old module has made some decisions.
            while pvc_decisions(&journal).len() < 20 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let new: Arc<dyn Decider<PvcProtectionWorld>> = Arc::new(new);
            slot.swap(new);
        })
    };
    let report = simulate(
        state,
        vec![],
        ClusterOptions::default(),
        settle(),
        deciders,
        journal.clone(),
    )
    .await
    .expect("simulation runs");
    swapper.await.expect("swapped");
    report.converged.as_ref().expect("converged");

    let decided = pvc_decisions(&journal);
    let failed: Vec<_> = decided
        .iter()
        .filter(|(_, outcome)| outcome.get("error").is_some())
        .collect();
    assert!(failed.is_empty(), "{failed:?}");
    assert!(decided.iter().any(|(d, _)| *d == old_digest));
    assert!(
        decided.iter().any(|(d, _)| *d == new_digest),
        "the new module decided after the swap"
    );
    // Every unused PVC was released; every used one kept its finalizer.
    for i in 0..N {
        let pvc = find(
            &report.objects,
            "PersistentVolumeClaim",
            "ns",
            &format!("old-{i}"),
        );
        if i < N / 3 {
            let pvc = pvc.unwrap_or_else(|| panic!("old-{i} is used and kept"));
            assert_eq!(finalizers(pvc), vec!["kubernetes.io/pvc-protection"]);
        } else {
            assert!(pvc.is_none(), "old-{i} is unused and released");
        }
    }
}
