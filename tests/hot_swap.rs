//! Hot swap under load: the host runs against the embedded API server while a
//! stream of PVCs is created and deleted, and the pvc-protection module is
//! swapped several times, bad modules included. Every PVC converges, no
//! decision fails, the journal's digests change at each swap and only at the
//! good ones, and no bad module ever decides. A controller whose module is
//! missing waits for it and starts when it appears.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::api::events::v1::Event;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use rekon_controllers::host::{Host, HostConfig};
use rekon_controllers::journal::{Entry, Journal};
use rekon_controllers::observe::Observer;
use rekon_modules::testing::with_custom_section;
use rekon_modules::{Change, EventTarget, ModuleDigest, Modules, ModulesOptions};
use rekon_runtime::World;
use rekon_runtime::testing::built_guest;
use rekon_simulate::{ClusterOptions, EmbeddedCluster, host_config};
use rekon_tests::sim::{PVC_FINALIZER, ephemeral_volume, finalizers, namespace, pod};
use serde_json::json;

const NS: &str = "load";
/// Decisions that may be recorded after a swap on the version taken before
/// it: 2 workers, each reconcile deciding at most twice (the live-pods round).
const IN_FLIGHT: usize = 4;

/// pvc-protection decisions in the journal: (digest, failed).
fn pvc_decisions(journal: &Journal) -> Vec<(String, bool)> {
    journal
        .entries()
        .into_iter()
        .filter_map(|e| match e {
            Entry::Decision {
                controller,
                digest,
                outcome,
                ..
            } if controller == "pvc-protection" => Some((digest, outcome.get("error").is_some())),
            _ => None,
        })
        .collect()
}

fn guest(stem: &str) -> Vec<u8> {
    std::fs::read(built_guest(stem)).unwrap()
}

/// A PVC without the finalizer (admission is off): the controller adds it.
fn pvc(name: &str) -> PersistentVolumeClaim {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"namespace": NS, "name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    }))
    .unwrap()
}

/// Creates `load-N` every 25 ms and deletes every even one right after; returns
/// how many it created.
async fn steady_load(api: Api<PersistentVolumeClaim>, stop: Arc<AtomicBool>) -> usize {
    let mut created = 0;
    while !stop.load(Ordering::Relaxed) {
        let name = format!("load-{created}");
        api.create(&PostParams::default(), &pvc(&name))
            .await
            .expect("create PVC");
        if created % 2 == 0 {
            api.delete(&name, &DeleteParams::default())
                .await
                .expect("delete PVC");
        }
        created += 1;
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    created
}

/// A swap as the test saw it: the pvc decision count before and after the
/// reload (the swap happened in between) and the digest serving afterwards.
struct Swap {
    before: usize,
    after: usize,
    digest: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn modules_swap_under_load_without_losing_a_reconcile() {
    let dir = tempfile::tempdir().unwrap();
    let put = |name: &str, bytes: &[u8]| {
        std::fs::write(dir.path().join(name), bytes).unwrap();
        ModuleDigest::of(bytes)
    };
    let reference = guest("rekon_guest_pvc_protection");
    // Three builds of the same logic, told apart by a custom section.
    let v1 = put("v1.wasm", &reference);
    let v2 = put(
        "v2.wasm",
        &with_custom_section(&reference, "rekon-build", b"2"),
    );
    let v3 = put(
        "v3.wasm",
        &with_custom_section(&reference, "rekon-build", b"3"),
    );
    let tampered = put(
        "v4.wasm",
        &with_custom_section(&reference, "rekon-build", b"4"),
    );
    let claim = put("claim.wasm", &guest("rekon_guest_resource_claim"));
    let core = put("core.wasm", &wat::parse_str("(module)").unwrap());
    let trapping = put("trapping.wasm", &guest("rekon_guest_misbehaving"));
    let config = |module: &str, digest: &ModuleDigest| {
        let yaml = format!(
            "pvc-protection: {{module: {module}, sha256: {digest}}}\n\
             resource-claim: {{module: claim.wasm, sha256: {claim}}}\n"
        );
        std::fs::write(dir.path().join("guests.yaml"), yaml).unwrap();
    };
    config("v1.wasm", &v1);
    let cluster = EmbeddedCluster::start(&ClusterOptions {
        pvc_protection_admission: false,
        ..ClusterOptions::default()
    })
    .await
    .unwrap();
    cluster
        .server
        .store()
        .load_objects(vec![namespace(NS)])
        .unwrap();
    let mut options = ModulesOptions::new(dir.path());
    options.canary_inputs = 1024;
    options.events = Some(EventTarget {
        client: cluster.client.clone(),
        pod: "rekon-0".into(),
        namespace: NS.into(),
    });
    let modules = Modules::open(options).await.expect("modules open");
    let journal = Arc::new(Journal::new());
    let deciders = modules.deciders();
    let host = Host::start(
        cluster.client.clone(),
        host_config(&deciders, journal.clone()),
    );
    let api: Api<PersistentVolumeClaim> = Api::namespaced(cluster.client.clone(), NS);
    // The misbehaving guest traps on a PVC named "panic": decided now, it is
    // among the inputs a new version is replayed on before it serves.
    api.create(&PostParams::default(), &pvc("panic"))
        .await
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let load = tokio::spawn(steady_load(api.clone(), stop.clone()));

    let mut swaps = vec![Swap {
        before: 0,
        after: 0,
        digest: v1.hex().to_string(),
    }];
    let steps: [(&str, &ModuleDigest, Option<&str>); 7] = [
        ("v2.wasm", &v2, None),
        ("v4.wasm", &v3, Some("but guests.yaml pins")),
        ("v3.wasm", &v3, None),
        (
            "claim.wasm",
            &claim,
            Some("does not export any of rekon:reconcile/pvc-decider@0.2.0"),
        ),
        ("core.wasm", &core, Some("not a component")),
        (
            "trapping.wasm",
            &trapping,
            Some("recorded input of key load/panic"),
        ),
        ("v1.wasm", &v1, None),
    ];
    for (module, digest, refusal) in steps {
        // Let the current version decide under load for a while first.
        tokio::time::sleep(Duration::from_millis(300)).await;
        config(module, digest);
        let before = pvc_decisions(&journal).len();
        let report = modules.reload().await;
        let after = pvc_decisions(&journal).len();
        match (
            refusal,
            report.change(World::of::<rekon_contract::PvcProtectionWorld>()),
        ) {
            (Some(expected), Change::Refused(reason)) => {
                assert!(reason.contains(expected), "{module}: {reason}")
            }
            (None, Change::Published { .. }) => {
                swaps.push(Swap {
                    before,
                    after,
                    digest: digest.hex().to_string(),
                });
                // Wait for the new version's first decision under the load.
                let deadline = Instant::now() + Duration::from_secs(20);
                while !pvc_decisions(&journal)[after..]
                    .iter()
                    .any(|(d, _)| d == digest.hex())
                {
                    assert!(Instant::now() < deadline, "{module} never decided");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
            (_, change) => panic!("{module}: unexpected {change:?}"),
        }
    }
    stop.store(true, Ordering::Relaxed);
    let created = load.await.unwrap();
    host.touch();
    host.wait_idle(
        Duration::from_millis(500),
        Duration::from_secs(2),
        Duration::from_secs(60),
    )
    .await
    .expect("every key converges");
    host.shutdown(Duration::from_secs(5)).await;

    // No reconcile lost: every deleted PVC was released, every other one protected.
    let pvcs: Vec<_> = cluster
        .objects()
        .into_iter()
        .filter(|o| o["kind"] == "PersistentVolumeClaim")
        .collect();
    assert_eq!(
        pvcs.len(),
        created / 2 + 1,
        "odd load-N and `panic` remain (created {created})"
    );
    for object in &pvcs {
        let name = object["metadata"]["name"].as_str().unwrap();
        assert!(
            object["metadata"]["deletionTimestamp"].is_null(),
            "{name} was deleted but kept"
        );
        assert_eq!(finalizers(object), [PVC_FINALIZER], "{name} is protected");
    }

    // No decision failed, and no bad module ever decided.
    let decisions = pvc_decisions(&journal);
    // Every deleted PVC (every even one) was released by a decision.
    assert!(
        decisions.len() >= created.div_ceil(2),
        "{} decisions for {created} PVCs",
        decisions.len()
    );
    assert!(
        decisions.iter().all(|(_, failed)| !failed),
        "a decision failed during the swaps"
    );
    for bad in [&tampered, &claim, &core, &trapping] {
        assert!(
            decisions.iter().all(|(d, _)| d != bad.hex()),
            "bad module {bad} decided"
        );
    }
    // The digest changes at each swap: before it only the old version decides,
    // after it (past the decisions in flight) only the new one.
    for (i, swap) in swaps.iter().enumerate() {
        let end = swaps.get(i + 1).map_or(decisions.len(), |next| next.before);
        let settled = (swap.after + IN_FLIGHT).min(end);
        for (n, (digest, _)) in decisions[settled..end].iter().enumerate() {
            assert_eq!(
                digest,
                &swap.digest,
                "decision {} after swap {i}",
                settled + n
            );
        }
        let previous = i.checked_sub(1).map(|p| &swaps[p].digest);
        for (n, (digest, _)) in decisions[swap.before..settled].iter().enumerate() {
            let allowed = digest == &swap.digest || Some(digest) == previous;
            assert!(
                allowed,
                "decision {} around swap {i} by {digest}",
                swap.before + n
            );
        }
    }
    let status = modules.status();
    let pvc = status.controller("pvc-protection").unwrap();
    assert_eq!((pvc.swaps, pvc.rejections, pvc.rollbacks), (4, 4, 0));
    assert_eq!(pvc.active.as_ref().unwrap().sha256, v1.hex());

    // Each activation and refusal is an Event on rekon's own Pod.
    let events: Api<Event> = Api::namespaced(cluster.client.clone(), NS);
    let deadline = Instant::now() + Duration::from_secs(10);
    let reasons = loop {
        let listed = events.list(&Default::default()).await.unwrap();
        let reasons: Vec<(String, String)> = listed
            .items
            .into_iter()
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("rekon-0"))
            .map(|e| (e.reason.unwrap_or_default(), e.note.unwrap_or_default()))
            .collect();
        // Two first activations (pvc-protection, resource-claim: the directory has
        // no ephemeral-volume module), three swaps, four refusals.
        if reasons.len() >= 9 || Instant::now() > deadline {
            break reasons;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let count = |reason: &str| reasons.iter().filter(|(r, _)| r == reason).count();
    assert_eq!(
        (count("ModuleActivated"), count("ModuleRejected")),
        (5, 4),
        "{reasons:#?}"
    );
    let rejected: Vec<_> = reasons
        .iter()
        .filter(|(r, _)| r == "ModuleRejected")
        .map(|(_, n)| n)
        .collect();
    assert!(
        rejected
            .iter()
            .any(|n| n.contains("core.wasm") && n.contains("not a component")),
        "{rejected:#?}"
    );
    cluster.server.shutdown().await;
}

/// A version that traps on most decisions is rolled back automatically while
/// the host runs, and the keys it failed converge on the previous version.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_trapping_version_is_rolled_back_and_its_keys_converge() {
    let dir = tempfile::tempdir().unwrap();
    let put = |name: &str, bytes: &[u8]| {
        std::fs::write(dir.path().join(name), bytes).unwrap();
        ModuleDigest::of(bytes)
    };
    let good = put("good.wasm", &guest("rekon_guest_pvc_protection"));
    let trapping = put("trapping.wasm", &guest("rekon_guest_misbehaving"));
    let claim = put("claim.wasm", &guest("rekon_guest_resource_claim"));
    let yaml = format!(
        "pvc-protection:\n  module: trapping.wasm\n  sha256: {trapping}\n  \
         previous: {{module: good.wasm, sha256: {good}}}\n  \
         autoRollback: {{maxFailureFraction: 0.5, minDecisions: 3}}\n\
         resource-claim: {{module: claim.wasm, sha256: {claim}}}\n"
    );
    std::fs::write(dir.path().join("guests.yaml"), yaml).unwrap();
    let modules = Modules::open(ModulesOptions::new(dir.path()))
        .await
        .unwrap();

    let cluster = EmbeddedCluster::start(&ClusterOptions {
        pvc_protection_admission: false,
        ..ClusterOptions::default()
    })
    .await
    .unwrap();
    let namespaces = ["a", "b", "c"];
    cluster
        .server
        .store()
        .load_objects(namespaces.iter().map(|ns| namespace(ns)).collect())
        .unwrap();
    let journal = Arc::new(Journal::new());
    let deciders = modules.deciders();
    let host = Host::start(
        cluster.client.clone(),
        host_config(&deciders, journal.clone()),
    );
    for ns in namespaces {
        let mut claim = pvc("panic");
        claim.metadata.namespace = Some(ns.into());
        Api::<PersistentVolumeClaim>::namespaced(cluster.client.clone(), ns)
            .create(&PostParams::default(), &claim)
            .await
            .unwrap();
    }
    host.wait_idle(
        Duration::from_millis(500),
        Duration::from_secs(2),
        Duration::from_secs(60),
    )
    .await
    .expect("every key converges after the rollback");
    host.shutdown(Duration::from_secs(5)).await;

    let pvcs: Vec<_> = cluster
        .objects()
        .into_iter()
        .filter(|o| o["kind"] == "PersistentVolumeClaim")
        .collect();
    assert_eq!(pvcs.len(), 3);
    assert!(
        pvcs.iter().all(|p| finalizers(p) == [PVC_FINALIZER]),
        "{pvcs:?}"
    );
    let decisions = pvc_decisions(&journal);
    let failed: Vec<_> = decisions.iter().filter(|(_, failed)| *failed).collect();
    assert!(
        failed.len() >= 3 && failed.iter().all(|(d, _)| d == trapping.hex()),
        "{decisions:?}"
    );
    let first_good = decisions
        .iter()
        .position(|(d, _)| d == good.hex())
        .expect("the previous version decided");
    let settled = (first_good + IN_FLIGHT).min(decisions.len());
    assert!(
        decisions[settled..]
            .iter()
            .all(|(d, failed)| d == good.hex() && !failed),
        "{decisions:?}"
    );
    let status = modules.status();
    let pvc = status.controller("pvc-protection").unwrap();
    assert_eq!(pvc.rollbacks, 1);
    assert_eq!(pvc.active.as_ref().unwrap().sha256, good.hex());
    assert!(
        pvc.last_error
            .as_deref()
            .unwrap()
            .contains("rolled back to good"),
        "{:?}",
        pvc.last_error
    );
    cluster.server.shutdown().await;
}

/// `rekon_controller_enabled{controller}` as the host last set it.
#[derive(Default)]
struct Enabled(Mutex<BTreeMap<String, bool>>);

impl Enabled {
    fn get(&self, controller: &str) -> Option<bool> {
        self.0.lock().unwrap().get(controller).copied()
    }
}

impl Observer for Enabled {
    fn controller_enabled(&self, controller: &str, enabled: bool) {
        self.0.lock().unwrap().insert(controller.into(), enabled);
    }
}

/// Polls `done` until it holds or 20 s pass.
async fn eventually<F: std::future::Future<Output = bool>>(
    what: &str,
    mut done: impl FnMut() -> F,
) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done().await {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A guests directory with only the pvc-protection module: `rekon run` starts,
/// is ready, and protects PVCs; resource-claim and ephemeral-volume are not
/// started (disabled in the metric). Once the ephemeral-volume module is added
/// and the directory reloaded, its controller starts and creates the pod's PVC.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_controller_without_module_waits_and_starts_when_the_module_appears() {
    let dir = tempfile::tempdir().unwrap();
    let module = |world: &str, stem: &str| {
        std::fs::write(dir.path().join(format!("{world}.wasm")), guest(stem)).unwrap();
    };
    module("pvc-protection", "rekon_guest_pvc_protection");
    let modules = Modules::open(ModulesOptions::new(dir.path()))
        .await
        .expect("one module is enough to open");
    let status = modules.status();
    assert!(
        status
            .controller("pvc-protection")
            .unwrap()
            .active
            .is_some()
    );
    assert!(
        status
            .controller("ephemeral-volume")
            .unwrap()
            .active
            .is_none()
    );

    let cluster = EmbeddedCluster::start(&ClusterOptions {
        pvc_protection_admission: false,
        ..ClusterOptions::default()
    })
    .await
    .unwrap();
    cluster
        .server
        .store()
        .load_objects(vec![namespace(NS)])
        .unwrap();
    let enabled = Arc::new(Enabled::default());
    let host = Host::start(
        cluster.client.clone(),
        HostConfig {
            discovery_interval: Duration::from_secs(1),
            ..HostConfig::new(
                modules.deciders(),
                Arc::new(Journal::new()),
                enabled.clone(),
            )
        },
    );
    let probe = host.probe();
    eventually("the host is ready", || async { probe.unready().is_none() }).await;
    assert_eq!(probe.running(), ["pvc-protection"]);
    assert_eq!(enabled.get("resource-claim"), Some(false));
    assert_eq!(enabled.get("ephemeral-volume"), Some(false));

    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(cluster.client.clone(), NS);
    pvcs.create(&PostParams::default(), &pvc("data"))
        .await
        .unwrap();
    eventually("pvc-protection protects the PVC", || async {
        pvcs.get("data").await.unwrap().metadata.finalizers == Some(vec![PVC_FINALIZER.into()])
    })
    .await;
    let web: Pod =
        serde_json::from_value(pod(NS, "web", "", json!([ephemeral_volume("scratch")]))).unwrap();
    Api::<Pod>::namespaced(cluster.client.clone(), NS)
        .create(&PostParams::default(), &web)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        pvcs.get_opt("web-scratch").await.unwrap().is_none(),
        "no ephemeral-volume controller without its module"
    );

    module("ephemeral-volume", "rekon_guest_ephemeral_volume");
    let report = modules.reload().await;
    let volume = World::of::<rekon_contract::EphemeralVolumeWorld>();
    assert!(
        matches!(report.change(volume), Change::Published { .. }),
        "{report:?}"
    );
    let claim = World::of::<rekon_contract::ResourceClaimWorld>();
    assert!(
        matches!(report.change(claim), Change::Missing(reason)
            if reason.contains("resource-claim.wasm or rekon_guest_resource_claim.wasm")),
        "{report:?}"
    );
    eventually("the ephemeral-volume controller starts", || async {
        probe.running().contains(&"ephemeral-volume")
    })
    .await;
    assert_eq!(enabled.get("ephemeral-volume"), Some(true));
    eventually("the pod's ephemeral PVC is created", || async {
        pvcs.get_opt("web-scratch").await.unwrap().is_some()
    })
    .await;
    assert!(probe.unready().is_none());
    assert!(!probe.running().contains(&"resource-claim"));
    host.shutdown(Duration::from_secs(5)).await;
}
