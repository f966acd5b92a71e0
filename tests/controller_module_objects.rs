//! Controller modules served while rekon runs, end to end on the embedded API
//! server: from `DecisionModule` objects (a ConfigMap source; the scope the
//! object pins; `kubectl get decisionmodules -o yaml` showing the declared
//! scope; a version asking for more refused while the previous keeps
//! deciding; a new version deciding every key again; deleting the object
//! with `onRemoval: Keep` and `Release`; a new version dropping a finalizer;
//! a shadow that agrees, one that differs, one asking for more than the pin
//! or describing the controller otherwise; a shadow promoted on evidence),
//! and from the guests directory (hot reload of a changed file, a removed file).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::PersistentVolume;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use rekon_controllers::decider::ShadowDifference;
use rekon_controllers::host::{Host, HostConfig};
use rekon_controllers::journal::{Entry, Journal};
use rekon_controllers::selection;
use rekon_modules::object::{
    self, DecisionModule, DecisionModuleStatus, FINALIZER, Fetcher, ObjectOptions, Phase,
    ServingObjects, ShadowStatus,
};
use rekon_modules::testing::with_custom_section;
use rekon_modules::{ModuleDigest, Modules, ModulesOptions, WatchOptions, Watching};
use rekon_runtime::testing::built_guest;
use rekon_simulate::{ClusterOptions, EmbeddedCluster, host_config};
use rekon_tests::objects::{self, create_namespace, wait_for};
use serde_json::{Value, json};

const NS: &str = "modules";
const PV_FINALIZER: &str = "kubernetes.io/pv-protection";
/// The finalizer of a build of pv-protection patched to declare (and manage) another one.
const OTHER_FINALIZER: &str = "kubernetes.io/pv-protectioX";
const MAX_BYTES: u64 = 400 << 10;
/// Another controller's finalizer.
const HOLD: &str = "example.com/hold";

fn pv_protection() -> Vec<u8> {
    std::fs::read(built_guest("rekon_guest_pv_protection")).expect("run `make guests`")
}

/// pv-protection with every `from` in its data replaced by `to` (same
/// length, so the module stays valid).
fn pv_protection_with(from: &str, to: &str) -> Vec<u8> {
    let mut bytes = pv_protection();
    let (from, to) = (from.as_bytes(), to.as_bytes());
    assert_eq!(from.len(), to.len());
    let mut replaced = 0;
    for i in 0..=bytes.len() - from.len() {
        if &bytes[i..i + from.len()] == from {
            bytes[i..i + from.len()].copy_from_slice(to);
            replaced += 1;
        }
    }
    assert!(
        replaced > 0,
        "{:?} is in the module's data",
        String::from_utf8_lossy(from)
    );
    bytes
}

/// A build whose description declares (and manages) `OTHER_FINALIZER`.
fn pv_protection_declaring_another_finalizer() -> Vec<u8> {
    pv_protection_with(PV_FINALIZER, OTHER_FINALIZER)
}

/// A build that never sees a PV as deleting (it reads
/// `metadata.deletionTimestamX`): same description, but it keeps protecting a
/// PV being deleted.
fn pv_protection_blind_to_deletion() -> Vec<u8> {
    pv_protection_with("deletionTimestamp", "deletionTimestamX")
}

/// The embedded API server with the DecisionModule CRD, a namespace, and
/// rekon serving controller modules from objects and (optionally) `dir`.
struct Setup {
    client: Client,
    kubeconfig: tempfile::NamedTempFile,
    modules: Modules,
    host: Host,
    _watching: Watching,
    _objects: ServingObjects,
    _cluster: EmbeddedCluster,
}

async fn setup(dir: Option<&Path>) -> Setup {
    // No admission plugin adds pv-protection's finalizer: only the module does.
    let cluster = EmbeddedCluster::start(&ClusterOptions {
        pvc_protection_admission: false,
        ..ClusterOptions::default()
    })
    .await
    .expect("the embedded API server starts");
    let kubeconfig = tempfile::NamedTempFile::new().unwrap();
    cluster.server.write_kubeconfig(kubeconfig.path()).unwrap();
    let client = cluster.client.clone();
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client.clone());
    let crd = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/decisionmodules.yaml"),
    )
    .unwrap();
    crds.create(&PostParams::default(), &serde_yaml::from_str(&crd).unwrap())
        .await
        .unwrap();
    wait_for(
        "the DecisionModule API",
        Duration::from_secs(20),
        async || {
            selection::serves(&client, object::API)
                .await
                .ok()
                .filter(|s| *s)
        },
    )
    .await;
    create_namespace(&client, NS).await;
    let options = match dir {
        Some(dir) => ModulesOptions {
            wait_for_modules: true,
            ..ModulesOptions::new(dir)
        },
        None => ModulesOptions::without_dir(),
    };
    let modules = Modules::open(options).await.unwrap();
    let watching = modules
        .watch(WatchOptions {
            debounce: Duration::from_millis(100),
            rescan: Duration::from_secs(1),
            status_refresh: Duration::from_millis(200),
        })
        .unwrap();
    let status_client = client.clone();
    let objects = object::serve(
        modules.clone(),
        client.clone(),
        Fetcher::new(client.clone(), MAX_BYTES),
        ObjectOptions {
            status_interval: Duration::from_millis(300),
            retry: Duration::from_secs(1),
            ..ObjectOptions::new(Arc::new(move || Some(status_client.clone())))
        },
    );
    let host = Host::start(
        client.clone(),
        HostConfig {
            // Unpinned modules of a directory run only when named.
            controllers: "pv-protection".parse().unwrap(),
            modules: modules.controller_set(),
            discovery_interval: Duration::from_secs(1),
            ..host_config(&modules.deciders(), Arc::new(Journal::new()))
        },
    );
    Setup {
        client,
        kubeconfig,
        modules,
        host,
        _watching: watching,
        _objects: objects,
        _cluster: cluster,
    }
}

impl Setup {
    fn objects(&self) -> Api<DecisionModule> {
        Api::all(self.client.clone())
    }

    fn pvs(&self) -> Api<PersistentVolume> {
        Api::all(self.client.clone())
    }

    /// Ships `bytes` in ConfigMap `name`; the module source naming it.
    async fn ship(&self, name: &str, bytes: &[u8]) -> (Value, ModuleDigest) {
        let digest = objects::ship(&self.client, NS, name, bytes).await;
        let source = json!({
            "configMap": {"namespace": NS, "name": name, "key": "module.wasm"},
            "sha256": format!("sha256:{digest}"),
        });
        (source, digest)
    }

    async fn apply(&self, name: &str, spec: Value) {
        objects::apply(&self.client, name, spec).await
    }

    async fn status(
        &self,
        name: &str,
        done: impl Fn(&DecisionModuleStatus) -> bool,
    ) -> DecisionModuleStatus {
        objects::status(&self.client, name, Duration::from_secs(60), done).await
    }

    /// Serves pv-protection from object `name` (with `extra` spec fields);
    /// returns the digest once it is Active.
    async fn serve_pv_protection(&self, name: &str, map: &str, extra: Value) -> ModuleDigest {
        let (source, digest) = self.ship(map, &pv_protection()).await;
        let mut spec = json!({
            "world": "pv-protection",
            "module": source,
            "scope": {"finalizers": [PV_FINALIZER]},
        });
        spec.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        self.apply(name, spec).await;
        let status = self.status(name, |s| s.phase == Some(Phase::Active)).await;
        assert_eq!(status.active.unwrap().digest, digest.to_string());
        digest
    }

    /// Creates PV `name` (phase `phase` when given).
    async fn create_pv(&self, name: &str, phase: Option<&str>) {
        let pv: PersistentVolume = serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "hostPath": {"path": format!("/data/{name}")}},
        }))
        .unwrap();
        self.pvs()
            .create(&PostParams::default(), &pv)
            .await
            .unwrap();
        if let Some(phase) = phase {
            self.pvs()
                .patch_status(
                    name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"status": {"phase": phase}})),
                )
                .await
                .unwrap();
        }
    }

    async fn pv_finalizers(&self, name: &str) -> Option<Vec<String>> {
        self.pvs()
            .get_opt(name)
            .await
            .unwrap()
            .map(|pv| pv.finalizers().to_vec())
    }

    /// Waits until PV `name` carries exactly `finalizers`.
    async fn pv_has(&self, name: &str, finalizers: &[&str]) {
        wait_for(
            &format!("PV {name} with finalizers {finalizers:?}"),
            Duration::from_secs(20),
            async || (self.pv_finalizers(name).await? == finalizers).then_some(()),
        )
        .await;
    }

    /// The digests of pv-protection's decisions on key `pv`, in order.
    fn decided(&self, pv: &str) -> Vec<String> {
        self.host
            .journal()
            .entries()
            .iter()
            .filter_map(|e| match e {
                Entry::Decision {
                    controller,
                    key,
                    digest,
                    ..
                } if controller == "pv-protection" && key == pv => Some(digest.clone()),
                _ => None,
            })
            .collect()
    }

    /// Waits until each of `pvs` was decided by the version of `digest`.
    async fn decided_by(&self, pvs: &[&str], digest: &ModuleDigest) {
        for pv in pvs {
            wait_for(
                &format!("PV {pv} decided by {digest}"),
                Duration::from_secs(20),
                async || self.decided(pv).contains(&digest.to_string()).then_some(()),
            )
            .await;
        }
    }

    fn kubectl(&self, args: &[&str]) -> String {
        let output = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(self.kubeconfig.path())
            .args(args)
            .output()
            .expect("kubectl is installed");
        assert!(
            output.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// Deletes DecisionModule `name` with kubectl (not waiting for it to go).
    fn delete_object(&self, name: &str) {
        self.kubectl(&["delete", "decisionmodule", name, "--wait=false"]);
    }

    async fn object_gone(&self, name: &str) {
        wait_for(
            &format!("DecisionModule {name} gone"),
            Duration::from_secs(30),
            async || {
                self.objects()
                    .get_opt(name)
                    .await
                    .unwrap()
                    .is_none()
                    .then_some(())
            },
        )
        .await;
    }

    /// Asserts that nothing decides for PVs any more: a new PV stays unprotected.
    async fn nothing_decides(&self, name: &str) {
        self.create_pv(name, None).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(
            self.pv_finalizers(name).await.unwrap(),
            Vec::<String>::new(),
            "PV {name} was protected although no controller module serves"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_controller_module_from_an_object_decides_and_shows_its_declared_scope() {
    let setup = setup(None).await;
    setup
        .serve_pv_protection("pv-protection", "v1", json!({}))
        .await;
    setup.create_pv("a", None).await;
    setup.pv_has("a", &[PV_FINALIZER]).await;

    let yaml = setup.kubectl(&["get", "decisionmodules", "pv-protection", "-o", "yaml"]);
    let object: Value = serde_yaml::from_str(&yaml).unwrap();
    assert_eq!(
        object["status"]["scope"],
        json!({"finalizers": [PV_FINALIZER]}),
        "{yaml}"
    );
    assert_eq!(
        object["status"]["primary"],
        json!({"group": "", "version": "v1", "kind": "PersistentVolume"}),
        "{yaml}"
    );
    assert_eq!(
        object["metadata"]["finalizers"],
        json!([FINALIZER]),
        "rekon holds its finalizer: {yaml}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_version_asking_for_more_than_the_pin_is_refused_while_the_previous_keeps_deciding() {
    let setup = setup(None).await;
    let v1 = setup
        .serve_pv_protection("pv-protection", "v1", json!({}))
        .await;
    let (wider, _) = setup
        .ship("wider", &pv_protection_declaring_another_finalizer())
        .await;
    setup
        .apply(
            "pv-protection",
            json!({"world": "pv-protection", "module": wider, "scope": {"finalizers": [PV_FINALIZER]}}),
        )
        .await;
    let status = setup
        .status("pv-protection", |s| s.phase == Some(Phase::Rejected))
        .await;
    let ready = status.condition("Ready").unwrap();
    assert_eq!(ready.reason, "ScopeNotAllowed");
    assert!(
        ready
            .message
            .contains(&format!("finalizer \"{OTHER_FINALIZER}\"")),
        "{}",
        ready.message
    );
    assert!(ready.message.contains("keeps serving"), "{}", ready.message);
    assert_eq!(status.active.unwrap().digest, v1.to_string());
    assert_eq!(
        status.scope.unwrap().finalizers,
        [PV_FINALIZER],
        "the status shows the serving version's scope"
    );
    // The previous version still decides.
    setup.create_pv("after-refusal", None).await;
    setup.pv_has("after-refusal", &[PV_FINALIZER]).await;
    assert!(
        setup
            .decided("after-refusal")
            .iter()
            .all(|digest| *digest == v1.to_string())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_version_decides_every_key_again() {
    let setup = setup(None).await;
    setup
        .serve_pv_protection("pv-protection", "v1", json!({}))
        .await;
    for pv in ["a", "b", "c"] {
        setup.create_pv(pv, None).await;
        setup.pv_has(pv, &[PV_FINALIZER]).await;
    }
    let v2_bytes = with_custom_section(&pv_protection(), "rekon-build", b"v2");
    let (v2, digest) = setup.ship("v2", &v2_bytes).await;
    setup
        .apply(
            "pv-protection",
            json!({"world": "pv-protection", "module": v2, "scope": {"finalizers": [PV_FINALIZER]}}),
        )
        .await;
    setup
        .status("pv-protection", |s| {
            s.active
                .as_ref()
                .is_some_and(|a| a.digest == digest.to_string())
        })
        .await;
    // Nothing changed on the PVs, yet each is decided by the new version.
    setup.decided_by(&["a", "b", "c"], &digest).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn deleting_the_object_with_keep_leaves_the_finalizers() {
    let setup = setup(None).await;
    setup
        .serve_pv_protection("pv-protection", "v1", json!({"onRemoval": "Keep"}))
        .await;
    setup.create_pv("kept", None).await;
    setup.pv_has("kept", &[PV_FINALIZER]).await;
    setup.delete_object("pv-protection");
    setup.object_gone("pv-protection").await;
    assert_eq!(
        setup.pv_finalizers("kept").await.unwrap(),
        [PV_FINALIZER],
        "Keep leaves the finalizer for another controller"
    );
    setup.nothing_decides("later").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn deleting_the_object_with_release_removes_the_finalizers_and_frees_a_deleting_pv() {
    let setup = setup(None).await;
    setup
        .serve_pv_protection("pv-protection", "v1", json!({}))
        .await;
    setup.create_pv("available", None).await;
    setup.create_pv("bound", Some("Bound")).await;
    setup.pv_has("available", &[PV_FINALIZER]).await;
    setup.pv_has("bound", &[PV_FINALIZER]).await;
    // A bound PV being deleted stays while pv-protection serves.
    setup
        .pvs()
        .delete("bound", &DeleteParams::default())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        setup.pv_finalizers("bound").await.is_some(),
        "a bound PV is protected"
    );

    setup.delete_object("pv-protection");
    setup.object_gone("pv-protection").await;
    assert_eq!(
        setup.pv_finalizers("available").await.unwrap(),
        Vec::<String>::new(),
        "Release removed the finalizer"
    );
    assert!(
        setup.pv_finalizers("bound").await.is_none(),
        "the PV deleting when the module went is gone, not stuck"
    );
    setup.nothing_decides("later").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_version_dropping_a_finalizer_releases_it_from_every_object() {
    let setup = setup(None).await;
    let pin = json!({"finalizers": [PV_FINALIZER, OTHER_FINALIZER]});
    setup
        .serve_pv_protection("pv-protection", "v1", json!({"scope": pin}))
        .await;
    for pv in ["a", "b"] {
        setup.create_pv(pv, None).await;
        setup.pv_has(pv, &[PV_FINALIZER]).await;
    }
    let (v2, digest) = setup
        .ship("v2", &pv_protection_declaring_another_finalizer())
        .await;
    setup
        .apply(
            "pv-protection",
            json!({"world": "pv-protection", "module": v2, "scope": pin}),
        )
        .await;
    let status = setup
        .status("pv-protection", |s| {
            s.active
                .as_ref()
                .is_some_and(|a| a.digest == digest.to_string())
        })
        .await;
    assert_eq!(status.scope.unwrap().finalizers, [OTHER_FINALIZER]);
    // The dropped name is released; the new version protects with its own.
    for pv in ["a", "b"] {
        setup.pv_has(pv, &[OTHER_FINALIZER]).await;
    }
    setup
        .status("pv-protection", |s| s.releasing.is_empty())
        .await;
}

/// The guests directory: a module file that changes is a new version (every
/// key decided again); a file that goes stops its controller.
#[tokio::test(flavor = "multi_thread")]
async fn a_changed_module_file_is_a_new_version_and_a_removed_one_stops() {
    let dir = tempfile::tempdir().unwrap();
    let file: PathBuf = dir.path().join("pv-protection.wasm");
    std::fs::write(&file, pv_protection()).unwrap();
    let setup = setup(Some(dir.path())).await;
    for pv in ["a", "b"] {
        setup.create_pv(pv, None).await;
        setup.pv_has(pv, &[PV_FINALIZER]).await;
    }
    let v2 = with_custom_section(&pv_protection(), "rekon-build", b"v2");
    let digest = ModuleDigest::of(&v2);
    let staged = dir.path().join("pv-protection.wasm.tmp");
    std::fs::write(&staged, &v2).unwrap();
    std::fs::rename(&staged, &file).unwrap();
    setup.decided_by(&["a", "b"], &digest).await;
    assert_eq!(
        setup.modules.status().controllers["pv-protection"]
            .active
            .as_ref()
            .unwrap()
            .sha256,
        digest.to_string()
    );
    std::fs::remove_file(&file).unwrap();
    wait_for(
        "the controller stopped",
        Duration::from_secs(20),
        async || (!setup.host.probe().running().contains(&"pv-protection")).then_some(()),
    )
    .await;
    setup.nothing_decides("later").await;
}

/// Waits until object `name`'s status shows a shadow tally satisfying `done`.
async fn shadow_status(
    setup: &Setup,
    name: &str,
    done: impl Fn(&ShadowStatus) -> bool,
) -> ShadowStatus {
    let status = setup
        .status(name, |s| s.shadow.as_ref().is_some_and(&done))
        .await;
    status.shadow.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shadow_that_agrees_is_counted_and_writes_nothing() {
    let setup = setup(None).await;
    let shadow_bytes = with_custom_section(&pv_protection(), "rekon-build", b"shadow");
    let (shadow, shadow_digest) = setup.ship("shadow", &shadow_bytes).await;
    let v1 = setup
        .serve_pv_protection("pv-protection", "v1", json!({"shadow": shadow}))
        .await;
    for pv in ["a", "b"] {
        setup.create_pv(pv, None).await;
        setup.pv_has(pv, &[PV_FINALIZER]).await;
    }
    // Each PV is decided at least once (finalizer added), both sides alike; whether
    // the host decides again on its own write's event depends on timing.
    let tally = shadow_status(&setup, "pv-protection", |s| s.agreed >= 2).await;
    assert_eq!(tally.digest, shadow_digest.to_string());
    assert_eq!((tally.differed, tally.failed), (0, 0), "{tally:?}");
    let yaml = setup.kubectl(&["get", "decisionmodules", "pv-protection", "-o", "yaml"]);
    assert!(yaml.contains("agreed:"), "kubectl shows the tally: {yaml}");
    // Only the serving version's decisions are applied and journalled.
    for pv in ["a", "b"] {
        let decided = setup.decided(pv);
        assert!(!decided.is_empty());
        assert!(decided.iter().all(|d| *d == v1.to_string()), "{decided:?}");
    }
    assert!(
        setup
            .modules
            .controller_shadow_tally("pv-protection")
            .unwrap()
            .differences()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shadow_that_differs_is_recorded_and_its_decisions_are_never_written() {
    let setup = setup(None).await;
    let (shadow, _) = setup
        .ship("shadow", &pv_protection_blind_to_deletion())
        .await;
    let v1 = setup
        .serve_pv_protection("pv-protection", "v1", json!({"shadow": shadow}))
        .await;
    // Another controller's finalizer holds the PV once it is deleted.
    setup.create_pv("held", None).await;
    setup.pv_has("held", &[PV_FINALIZER]).await;
    setup
        .pvs()
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": [PV_FINALIZER, HOLD]}})),
        )
        .await
        .unwrap();
    setup
        .pvs()
        .delete("held", &DeleteParams::default())
        .await
        .unwrap();
    // The serving version releases the PV being deleted; the shadow would
    // keep it, then add its finalizer back.
    setup.pv_has("held", &[HOLD]).await;
    // A change of the PV's own is decided again (the host may or may not decide
    // again on its own write's event): the shadow would add its finalizer back.
    setup
        .pvs()
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}})),
        )
        .await
        .unwrap();
    let tally = shadow_status(&setup, "pv-protection", |s| s.differed >= 2).await;
    assert_eq!(tally.failed, 0, "{tally:?}");
    let differences = setup
        .modules
        .controller_shadow_tally("pv-protection")
        .unwrap()
        .differences();
    let adds = |d: &ShadowDifference| {
        d.key == "held"
            && d.shadow.to_string().contains(PV_FINALIZER)
            && !d.active.to_string().contains(PV_FINALIZER)
    };
    assert!(
        differences.iter().any(adds),
        "the shadow would add the finalizer to the PV being deleted: {differences:#?}"
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        setup.pv_finalizers("held").await,
        Some(vec![HOLD.to_string()]),
        "the shadow's decisions were not written"
    );
    assert!(setup.decided("held").iter().all(|d| *d == v1.to_string()));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shadow_is_promoted_on_evidence_and_decides_every_key_again() {
    let setup = setup(None).await;
    let (v1, v1_digest) = setup.ship("v1", &pv_protection()).await;
    let v2_bytes = with_custom_section(&pv_protection(), "rekon-build", b"v2");
    let (v2, v2_digest) = setup.ship("v2", &v2_bytes).await;
    setup
        .apply(
            "pv-protection",
            json!({"world": "pv-protection", "mode": "shadow", "module": v2, "previous": v1,
                   "autoPromote": {"minDecisions": 3, "maxDifferences": 0},
                   "scope": {"finalizers": [PV_FINALIZER]}}),
        )
        .await;
    let status = setup
        .status("pv-protection", |s| s.phase == Some(Phase::Shadowing))
        .await;
    assert_eq!(status.active.unwrap().digest, v1_digest.to_string());
    assert_eq!(status.shadow.unwrap().digest, v2_digest.to_string());
    // Each PV is decided at least once (whether the host decides again on its
    // own write's event depends on timing): three decisions are certain.
    for pv in ["a", "b", "c"] {
        setup.create_pv(pv, None).await;
        setup.pv_has(pv, &[PV_FINALIZER]).await;
    }
    let status = setup
        .status("pv-protection", |s| {
            s.condition("Promoted").is_some_and(|c| c.status == "True")
        })
        .await;
    assert_eq!(status.active.unwrap().digest, v2_digest.to_string());
    let promotion = status.promotion.unwrap();
    assert_eq!(promotion.digest, v2_digest.to_string());
    assert!(
        promotion.agreed >= 3 && promotion.differed == 0,
        "{promotion:?}"
    );
    // The promoted version decides every key again, and serves new ones.
    setup.decided_by(&["a", "b", "c"], &v2_digest).await;
    setup.create_pv("after", None).await;
    setup.pv_has("after", &[PV_FINALIZER]).await;
    assert_eq!(
        setup.modules.status().controllers["pv-protection"]
            .previous
            .as_ref()
            .unwrap()
            .sha256,
        v1_digest.to_string(),
        "the replaced version is the rollback target"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shadow_asking_for_more_than_the_pin_or_describing_otherwise_is_refused() {
    let setup = setup(None).await;
    let v1 = setup
        .serve_pv_protection("pv-protection", "v1", json!({}))
        .await;
    let (module, _) = setup.ship("again", &pv_protection()).await;
    let (wider, _) = setup
        .ship("wider", &pv_protection_declaring_another_finalizer())
        .await;
    let refused = async |pin: Value, reason: &str| {
        setup
            .apply(
                "pv-protection",
                json!({"world": "pv-protection", "module": module, "shadow": wider, "scope": pin}),
            )
            .await;
        let status = setup
            .status("pv-protection", |s| s.phase == Some(Phase::Rejected))
            .await;
        let ready = status.condition("Ready").unwrap().clone();
        assert_eq!(ready.reason, reason, "{}", ready.message);
        assert!(
            ready.message.starts_with("spec.shadow: "),
            "{}",
            ready.message
        );
        assert!(ready.message.contains("keeps serving"), "{}", ready.message);
        assert_eq!(status.active.unwrap().digest, v1.to_string());
        assert!(status.shadow.is_none(), "no shadow decides");
        ready.message
    };
    let message = refused(json!({"finalizers": [PV_FINALIZER]}), "ScopeNotAllowed").await;
    assert!(
        message.contains(&format!("finalizer \"{OTHER_FINALIZER}\"")),
        "{message}"
    );
    // Within a wider pin, a shadow declaring another scope still decides on
    // other terms than the serving version: refused.
    let message = refused(
        json!({"finalizers": [PV_FINALIZER, OTHER_FINALIZER]}),
        "WrongController",
    )
    .await;
    assert!(message.contains("scope differ"), "{message}");
    // The serving version still decides, alone.
    setup.create_pv("after-refusal", None).await;
    setup.pv_has("after-refusal", &[PV_FINALIZER]).await;
    assert!(
        setup
            .decided("after-refusal")
            .iter()
            .all(|digest| *digest == v1.to_string())
    );
    assert!(
        setup
            .modules
            .controller_shadow_tally("pv-protection")
            .is_none()
    );
}
