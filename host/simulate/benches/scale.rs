//! Scale benchmark on the embedded API server: N = 1k, 10k, 50k objects per
//! workload, wasm guests and the same logic linked natively, one table per run.
//!
//! Each row runs in two processes: this process starts the embedded API server
//! with the row's state and checks the end state; a fresh child process (this
//! binary again, `REKON_SCALE_ROW` set) runs only the host against it. So the
//! child's peak RSS (VmHWM) is the host's own memory, and its kube client counts
//! every request it sends, by verb.
//!
//! `make bench-scale` (after `make guests`). Environment:
//! - `SCALE_MAX_N` (default 50000): skip rows with more objects;
//! - `SCALE_WORKLOADS` (comma list of workload names, default all);
//! - `SCALE_DECIDERS` (`wasm,native,module` by default; `module`: the controller
//!   module on the generic world whose description has the workload's primary kind,
//!   with no built-in controller);
//! - `SCALE_MODULE_DIR`: where `module` rows find controller modules, as `rekon run
//!   --guests` does (default: the guests `make guests` built);
//! - `SCALE_CRDS`: comma list of files holding the CustomResourceDefinitions a
//!   workload of a custom kind needs (default: the `*.yaml` files of `guests/*/`);
//! - `SCALE_TIMEOUT` seconds per row (default 600);
//! - `SCALE_SERVER_GC=1`: run the embedded cluster's garbage collector and kubelet too;
//! - `SCALE_WRAP`: a command prefix for the host child (`{row}`: the row's name), e.g.
//!   `heaptrack -o /tmp/heap-{row}` or `perf record -g -o /tmp/perf-{row}.data --`.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::{Method, Request};
use kube::client::ClientBuilder;
use kube::config::{KubeConfigOptions, Kubeconfig};
use rekon_apiserver::KubeletMode;
use rekon_contract::{
    ControllerWorld, EphemeralVolumeWorld, PvcProtectionWorld, ResourceClaimWorld,
};
use rekon_controllers::decider::{Decider, GuestInfo, Native, Slot};
use rekon_controllers::generic::ControllerModule;
use rekon_controllers::host::Host;
use rekon_controllers::journal::Journal;
use rekon_controllers::observe::{DecisionFailure, Observer};
use rekon_runtime::{Engine, EngineConfig, GuestWorld, Limits, World};
use rekon_simulate::{ClusterOptions, Deciders, EmbeddedCluster, host_config};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tower::{Layer, Service};

const ROW_ENV: &str = "REKON_SCALE_ROW";
const KUBECONFIG_ENV: &str = "REKON_SCALE_KUBECONFIG";
const FINALIZER: &str = "kubernetes.io/pvc-protection";
/// The host counts as idle after this long without activity (subtracted from the time).
const QUIET: Duration = Duration::from_millis(500);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum Workload {
    /// N deleting, unused PVCs in one namespace, with N running pods using other PVCs.
    Release1Ns,
    /// The same spread over 100 namespaces.
    Release100Ns,
    /// N PVCs created without the finalizer (admission off).
    Protect,
    /// N pods with a template claim: claims created, pod statuses written.
    Claims,
    /// N pods with an ephemeral volume: one PVC created for each.
    Ephemeral,
    /// N deleting, unbound PersistentVolumes (a controller module only).
    PvRelease,
    /// N PersistentVolumes without the finalizer (a controller module only).
    PvProtect,
    /// N finished Jobs whose TTL has passed (a controller module only).
    Ttl,
    /// N Foos (a custom resource) without their Deployment (a controller module only).
    Foo,
}

const WORKLOADS: [Workload; 9] = [
    Workload::Release1Ns,
    Workload::Release100Ns,
    Workload::Protect,
    Workload::Claims,
    Workload::Ephemeral,
    Workload::PvRelease,
    Workload::PvProtect,
    Workload::Ttl,
    Workload::Foo,
];

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Self::Release1Ns => "release-1ns",
            Self::Release100Ns => "release-100ns",
            Self::Protect => "protect",
            Self::Claims => "claims",
            Self::Ephemeral => "ephemeral",
            Self::PvRelease => "pv-release",
            Self::PvProtect => "pv-protect",
            Self::Ttl => "ttl",
            Self::Foo => "foo",
        }
    }

    /// The built-in world whose controller runs this workload in `wasm` and
    /// `native` rows; `None`: only a controller module does.
    fn world(self) -> Option<World> {
        match self {
            Self::Release1Ns | Self::Release100Ns | Self::Protect => {
                Some(World::of::<PvcProtectionWorld>())
            }
            Self::Claims => Some(World::of::<ResourceClaimWorld>()),
            Self::Ephemeral => Some(World::of::<EphemeralVolumeWorld>()),
            Self::PvRelease | Self::PvProtect | Self::Ttl | Self::Foo => None,
        }
    }

    /// The primary kind (group, kind) of the controller module a `module` row
    /// runs: the module whose description has it. `None`: no module row.
    fn primary(self) -> Option<(String, String)> {
        let builtin = |group: &str, kind: &str| Some((group.to_string(), kind.to_string()));
        match self {
            Self::Release1Ns | Self::Release100Ns | Self::Protect => {
                builtin("", "PersistentVolumeClaim")
            }
            Self::Claims | Self::Ephemeral => None,
            Self::PvRelease | Self::PvProtect => builtin("", "PersistentVolume"),
            Self::Ttl => builtin("batch", "Job"),
            Self::Foo => Some((crd(FOO)["spec"]["group"].as_str()?.to_string(), FOO.into())),
        }
    }

    /// The fewest API requests per unit of work the API allows the workload's
    /// controller (writes; its initial lists and watches amortise to zero).
    fn minimum(self) -> &'static [(&'static str, f64)] {
        match self {
            Self::Release1Ns | Self::Release100Ns | Self::Protect => {
                &[("patch persistentvolumeclaims", 1.0)]
            }
            Self::Claims => &[("create resourceclaims", 1.0), ("patch pods/status", 1.0)],
            Self::Ephemeral => &[("create persistentvolumeclaims", 1.0)],
            Self::PvRelease | Self::PvProtect => &[("patch persistentvolumes", 1.0)],
            // Upstream reads the Job again before it deletes it, and so does the module.
            Self::Ttl => &[("get jobs", 1.0), ("delete jobs", 1.0)],
            // The Deployment, the Foo's status (availableReplicas 0 where there was
            // none), and the one `Synced` Event of a sync that wrote something.
            Self::Foo => &[
                ("create deployments", 1.0),
                ("patch foos/status", 1.0),
                ("create events", 1.0),
            ],
        }
    }

    fn namespaces(self) -> usize {
        if self == Self::Release100Ns { 100 } else { 1 }
    }

    /// No workload needs the embedded cluster's garbage collector or kubelet; both
    /// scan every object on every change, so they are off unless `SCALE_SERVER_GC=1`.
    fn options(self, cluster_controllers: bool) -> ClusterOptions {
        ClusterOptions {
            garbage_collector: cluster_controllers,
            kubelet: if cluster_controllers {
                KubeletMode::Instant
            } else {
                KubeletMode::Off
            },
            pvc_protection_admission: self != Self::Protect,
            ..ClusterOptions::default()
        }
    }

    /// The objects the row starts from; `module`: the controller module of a
    /// `module` row (the PV workloads carry or expect the finalizer it declares).
    fn state(self, n: usize, module: Option<&Module>) -> Vec<Value> {
        let ns = |i: usize| format!("scale-{}", i % self.namespaces());
        let foo_crd = (self == Self::Foo).then(|| crd(FOO));
        let mut objects: Vec<Value> = (0..self.namespaces())
            .map(|i| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns(i)}}))
            .collect();
        for i in 0..n {
            match self {
                Self::Release1Ns | Self::Release100Ns => {
                    objects.push(pvc(&ns(i), &format!("data-{i}"), true));
                    objects.push(running_pod(&ns(i), i));
                }
                Self::Protect => {
                    let mut claim = pvc(&ns(i), &format!("data-{i}"), false);
                    claim["metadata"]
                        .as_object_mut()
                        .expect("metadata")
                        .remove("finalizers");
                    objects.push(claim);
                }
                Self::Claims => objects.push(claim_pod(&ns(i), i)),
                Self::Ephemeral => objects.push(ephemeral_pod(&ns(i), i)),
                Self::PvRelease => objects.push(pv(i, &[module_finalizer(module)], true)),
                Self::PvProtect => objects.push(pv(i, &[], false)),
                Self::Ttl => objects.push(expired_job(&ns(i), i)),
                Self::Foo => objects.push(foo(foo_crd.as_ref().expect("the Foo CRD"), &ns(i), i)),
            }
        }
        if let Some(crd) = foo_crd {
            objects.insert(0, crd);
        }
        if self == Self::Claims {
            objects.push(json!({
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"namespace": ns(0), "name": "gpu"},
                "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}
            }));
        }
        objects
    }

    /// Objects the host caches at its peak.
    fn cached_objects(self, n: usize) -> usize {
        match self {
            Self::Release1Ns | Self::Release100Ns | Self::Claims | Self::Ephemeral => 2 * n,
            Self::Protect | Self::PvRelease | Self::PvProtect | Self::Ttl => n,
            Self::Foo => 2 * n,
        }
    }

    /// Checks the end state; `Err` says what is missing.
    fn check(self, n: usize, module: Option<&Module>, objects: &[Value]) -> Result<(), String> {
        let of_kind = |kind: &'static str| objects.iter().filter(move |o| o["kind"] == kind);
        match self {
            Self::Release1Ns | Self::Release100Ns => {
                let left = of_kind("PersistentVolumeClaim").count();
                (left == 0)
                    .then_some(())
                    .ok_or(format!("{left} of {n} PVCs not released"))
            }
            Self::Protect => {
                let protected = of_kind("PersistentVolumeClaim")
                    .filter(|o| {
                        o["metadata"]["finalizers"]
                            .as_array()
                            .is_some_and(|f| f.iter().any(|f| f == FINALIZER))
                    })
                    .count();
                (protected == n)
                    .then_some(())
                    .ok_or(format!("{protected} of {n} PVCs protected"))
            }
            Self::Claims => {
                let claims = of_kind("ResourceClaim").count();
                let statuses = of_kind("Pod")
                    .filter(|o| o["status"]["resourceClaimStatuses"].as_array().is_some())
                    .count();
                (claims == n && statuses == n).then_some(()).ok_or(format!(
                    "{claims} claims and {statuses} pod statuses of {n}"
                ))
            }
            Self::Ephemeral => {
                let pvcs = of_kind("PersistentVolumeClaim").count();
                (pvcs == n)
                    .then_some(())
                    .ok_or(format!("{pvcs} of {n} ephemeral PVCs created"))
            }
            Self::PvRelease => {
                let left = of_kind("PersistentVolume").count();
                (left == 0)
                    .then_some(())
                    .ok_or(format!("{left} of {n} PVs not released"))
            }
            Self::PvProtect => {
                let protected = of_kind("PersistentVolume")
                    .filter(|o| {
                        o["metadata"]["finalizers"]
                            .as_array()
                            .is_some_and(|f| f.iter().any(|f| f == module_finalizer(module)))
                    })
                    .count();
                (protected == n)
                    .then_some(())
                    .ok_or(format!("{protected} of {n} PVs protected"))
            }
            // Deleted in the foreground: without the cluster's garbage collector a
            // Job keeps its `foregroundDeletion` finalizer, deleting.
            Self::Ttl => {
                let left = of_kind("Job")
                    .filter(|o| o["metadata"]["deletionTimestamp"].is_null())
                    .count();
                (left == 0)
                    .then_some(())
                    .ok_or(format!("{left} of {n} expired Jobs not deleted"))
            }
            Self::Foo => {
                let deployments = of_kind("Deployment").count();
                let statuses = of_kind("Foo")
                    .filter(|o| !o["status"]["availableReplicas"].is_null())
                    .count();
                (deployments == n && statuses == n)
                    .then_some(())
                    .ok_or(format!(
                        "{deployments} Deployments and {statuses} Foo statuses of {n}"
                    ))
            }
        }
    }
}

/// The finalizer the PV workloads' module declares (the first of its scope).
fn module_finalizer(module: Option<&Module>) -> &str {
    module
        .and_then(|m| m.finalizers.first())
        .map(String::as_str)
        .expect("a PV workload runs a controller module that declares its finalizer")
}

fn pv(i: usize, finalizers: &[&str], deleting: bool) -> Value {
    let mut pv = json!({
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": format!("pv-{i}"), "finalizers": finalizers},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                 "hostPath": {"path": format!("/data/pv-{i}")}},
        "status": {"phase": "Released"}
    });
    if deleting {
        pv["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    }
    pv
}

/// A Job that completed in 2026-01 with a TTL of one minute: expired.
fn expired_job(ns: &str, i: usize) -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"namespace": ns, "name": format!("job-{i}")},
        "spec": {"ttlSecondsAfterFinished": 60,
                 "template": {"spec": {"restartPolicy": "Never",
                     "containers": [{"name": "c", "image": "i"}]}}},
        "status": {"conditions": [{"type": "Complete", "status": "True",
                                    "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    })
}

/// The custom resource of upstream's canonical sample controller, a Foo owning
/// a Deployment; its CustomResourceDefinition comes from [`crd`].
const FOO: &str = "Foo";

fn foo(crd: &Value, ns: &str, i: usize) -> Value {
    json!({
        "apiVersion": api_version(crd), "kind": FOO,
        "metadata": {"namespace": ns, "name": format!("foo-{i}")},
        "spec": {"deploymentName": format!("foo-{i}"), "replicas": 1}
    })
}

fn pvc(ns: &str, name: &str, deleting: bool) -> Value {
    let mut pvc = json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"namespace": ns, "name": name, "finalizers": [FINALIZER]},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    });
    if deleting {
        let meta = pvc["metadata"].as_object_mut().expect("metadata");
        meta.insert("deletionTimestamp".into(), "2026-01-01T00:00:00Z".into());
        meta.insert("deletionGracePeriodSeconds".into(), 0.into());
    }
    pvc
}

fn running_pod(ns: &str, i: usize) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": ns, "name": format!("pod-{i}")},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "i"}],
                 "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": format!("live-{i}")}}]},
        "status": {"phase": "Running"}
    })
}

fn claim_pod(ns: &str, i: usize) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": ns, "name": format!("pod-{i}")},
        "spec": {"containers": [{"name": "c", "image": "i"}],
                 "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]}
    })
}

fn ephemeral_pod(ns: &str, i: usize) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": ns, "name": format!("pod-{i}")},
        "spec": {"containers": [{"name": "c", "image": "i"}],
                 "volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
                     "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}}]}
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum DeciderKind {
    Wasm,
    Native,
    /// The workload's controller module (the generic world), no built-in controller.
    Module,
}

impl DeciderKind {
    fn name(self) -> &'static str {
        match self {
            Self::Wasm => "wasm",
            Self::Native => "native",
            Self::Module => "module",
        }
    }

    /// Whether a row of `workload` runs with this decider.
    fn runs(self, workload: Workload) -> bool {
        match self {
            Self::Module => workload.primary().is_some(),
            // The ephemeral-volume logic has no native build.
            Self::Native => workload
                .world()
                .is_some_and(|w| w != World::of::<EphemeralVolumeWorld>()),
            Self::Wasm => workload.world().is_some(),
        }
    }

    /// The built-in worlds' deciders: every reference module `make guests` built,
    /// or the logic linked natively; none for a `module` row.
    fn deciders(self) -> Deciders {
        match self {
            Self::Module => Deciders::new(),
            // The ephemeral-volume logic has no native build: its rows are wasm only.
            Self::Native => Deciders::new()
                .with(Arc::new(Slot::<PvcProtectionWorld>::new(Arc::new(Native))))
                .with(Arc::new(Slot::<ResourceClaimWorld>::new(Arc::new(Native)))),
            Self::Wasm => {
                let engine = Engine::new(EngineConfig::default()).expect("engine");
                Deciders::new()
                    .with(reference_module::<PvcProtectionWorld>(&engine))
                    .with(reference_module::<ResourceClaimWorld>(&engine))
                    .with(reference_module::<EphemeralVolumeWorld>(&engine))
            }
        }
    }
}

/// World `W`'s reference module, `rekon_guest_<world>.wasm` as `make guests` builds it.
fn reference_module<W: GuestWorld>(engine: &Engine) -> Arc<Slot<W>>
where
    rekon_runtime::GuestPre: Decider<W>,
{
    let world = World::of::<W>();
    let stem = format!("rekon_guest_{}", world.name().replace('-', "_"));
    let guest = engine
        .loader()
        .world(world)
        .file(rekon_runtime::testing::built_guest(&stem))
        .unwrap_or_else(|e| panic!("{stem} (run `make guests`): {e}"));
    Arc::new(Slot::new(Arc::new(guest)))
}

/// One row: what the child runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Row {
    workload: Workload,
    n: usize,
    decider: DeciderKind,
    /// The controller module of a `module` row.
    module: Option<Module>,
    timeout_secs: u64,
    cluster_controllers: bool,
}

impl Row {
    /// The controller the row runs: the module's name, or the built-in world's.
    fn controller(&self) -> &str {
        match (&self.module, self.workload.world()) {
            (Some(module), _) => &module.name,
            (None, Some(world)) => world.name(),
            (None, None) => "none",
        }
    }
}

/// A controller module of the module directory, by the name its description gives.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Module {
    name: String,
    path: PathBuf,
    /// The finalizers its scope declares.
    finalizers: Vec<String>,
}

/// The controller modules of `SCALE_MODULE_DIR` (default: the guests `make guests`
/// built), found, loaded and described as `rekon run --guests` does, by primary kind.
fn modules_by_primary() -> BTreeMap<(String, String), Vec<Module>> {
    let dir = std::env::var_os("SCALE_MODULE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(rekon_runtime::testing::guest_dir);
    let engine = Engine::new(EngineConfig::default()).expect("engine");
    let cache = rekon_modules::PrecompiledCache::new(engine.compatibility_hash(), None)
        .expect("an in-memory cache");
    let loader = rekon_modules::Loader::new(engine, cache);
    let limits = Limits::default();
    let found = rekon_modules::generic::load_dir(&loader, limits, limits.memory_bytes >> 20, &dir);
    for refused in &found.refused {
        eprintln!("controller module refused: {refused}");
    }
    let mut by_primary: BTreeMap<(String, String), Vec<Module>> = BTreeMap::new();
    for loaded in found.served {
        let description = &loaded.module.checked.description;
        let primary = &description.primary;
        by_primary
            .entry((primary.group.clone(), primary.kind.clone()))
            .or_default()
            .push(Module {
                name: loaded.module.name().to_string(),
                path: loaded.path.clone(),
                finalizers: description.scope.finalizers.clone(),
            });
    }
    by_primary
}

/// The one module whose primary kind is `group`/`kind`, or why there is none.
fn module_for(
    modules: &BTreeMap<(String, String), Vec<Module>>,
    primary: (String, String),
) -> Result<Module, String> {
    let (group, kind) = &primary;
    match modules.get(&primary).map(Vec::as_slice) {
        Some([module]) => Ok(module.clone()),
        Some(several) => Err(format!(
            "controller modules {} all have primary kind {kind} (group {group:?}): set SCALE_MODULE_DIR to a directory with one",
            several
                .iter()
                .map(|m| m.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
        None => Err(format!(
            "no controller module with primary kind {kind} (group {group:?}) in SCALE_MODULE_DIR or the built guests (run `make guests`)"
        )),
    }
}

/// `group/version` of the storage version of `crd`.
fn api_version(crd: &Value) -> String {
    let versions = crd["spec"]["versions"].as_array().expect("spec.versions");
    let version = versions
        .iter()
        .find(|v| v["storage"] == true)
        .unwrap_or(&versions[0]);
    format!(
        "{}/{}",
        crd["spec"]["group"].as_str().expect("spec.group"),
        version["name"].as_str().expect("a version name")
    )
}

/// The CustomResourceDefinition of `kind`, from `SCALE_CRDS` (a comma list of
/// files) or, by default, the `*.yaml` files of `guests/*/`.
fn crd(kind: &str) -> Value {
    let files: Vec<PathBuf> = match std::env::var("SCALE_CRDS") {
        Ok(list) => list.split(',').map(|f| PathBuf::from(f.trim())).collect(),
        Err(_) => {
            let guests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../guests");
            let mut files: Vec<PathBuf> = std::fs::read_dir(&guests)
                .expect("guests/")
                .filter_map(Result::ok)
                .filter_map(|dir| std::fs::read_dir(dir.path()).ok())
                .flatten()
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
                .collect();
            files.sort();
            files
        }
    };
    files
        .iter()
        .filter_map(|file| {
            let text =
                std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            serde_yaml::from_str::<Value>(&text).ok()
        })
        .find(|o| o["kind"] == "CustomResourceDefinition" && o["spec"]["names"]["kind"] == kind)
        .unwrap_or_else(|| {
            panic!("no CustomResourceDefinition of {kind} in {files:?} (set SCALE_CRDS)")
        })
}

/// What the child measured.
#[derive(Debug, Serialize, Deserialize)]
struct Measured {
    /// Host start to idle, quiet period subtracted.
    secs: f64,
    /// `Err` names the pending keys.
    converged: Result<(), String>,
    decisions: u64,
    requests: BTreeMap<String, u64>,
    /// VmRSS before the host started (engine and modules loaded), KiB.
    baseline_kib: u64,
    /// VmHWM at the end, KiB.
    peak_kib: u64,
}

// ---- the child: the host alone, counting its requests and decisions ----

/// Counts decisions.
#[derive(Default)]
struct Decisions(AtomicU64);

impl Observer for Decisions {
    fn decided(&self, _: &str, _: &GuestInfo, _: Duration, _: Option<DecisionFailure>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Counts the requests of a kube client by API verb.
#[derive(Clone, Default)]
struct RequestCounts(Arc<Mutex<BTreeMap<String, u64>>>);

impl<S> Layer<S> for RequestCounts {
    type Service = Counted<S>;
    fn layer(&self, inner: S) -> Counted<S> {
        Counted {
            inner,
            counts: self.clone(),
        }
    }
}

struct Counted<S> {
    inner: S,
    counts: RequestCounts,
}

impl<S, B> Service<Request<B>> for Counted<S>
where
    S: Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> S::Future {
        let kind = request_kind(request.method(), request.uri());
        *self.counts.0.lock().unwrap().entry(kind).or_default() += 1;
        self.inner.call(request)
    }
}

/// The API verb and resource of a request, as the API server's audit log names them:
/// `patch persistentvolumeclaims`, `patch pods/status`, `list discovery`.
fn request_kind(method: &Method, uri: &http::Uri) -> String {
    // /api/v1/... or /apis/GROUP/VERSION/...; then [namespaces/NS/]RESOURCE[/NAME[/SUB]]
    let segments: Vec<&str> = uri.path().split('/').filter(|s| !s.is_empty()).collect();
    let rest = match segments.first() {
        Some(&"api") => segments.get(2..),
        Some(&"apis") => segments.get(3..),
        _ => None,
    }
    .unwrap_or(&[]);
    let rest = match rest {
        ["namespaces", _, tail @ ..] if !tail.is_empty() => tail,
        _ => rest,
    };
    let resource = match rest {
        [] => "discovery".to_string(),
        [resource, _, sub, ..] => format!("{resource}/{sub}"),
        [resource, ..] => resource.to_string(),
    };
    let collection = rest.len() <= 1;
    let watch = uri
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "watch=true"));
    let verb = match (method.as_str(), collection) {
        ("GET", true) if watch => "watch",
        ("GET", true) => "list",
        ("GET", false) => "get",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", true) => "deletecollection",
        ("DELETE", false) => "delete",
        _ => "other",
    };
    format!("{verb} {resource}")
}

fn proc_status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/self/status"))
}

async fn child(row: Row) -> Measured {
    let yaml = std::env::var(KUBECONFIG_ENV).expect("kubeconfig for the child");
    let kubeconfig = Kubeconfig::from_yaml(&yaml).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("client config");
    let counts = RequestCounts::default();
    let client = ClientBuilder::try_from(config)
        .expect("client")
        .with_layer(&counts)
        .build();
    let deciders = row.decider.deciders();
    let decisions = Arc::new(Decisions::default());
    // As `rekon run` without `--journal`: an in-memory journal is `simulate`'s,
    // and it was most of the peak heap here (heaptrack, release-1ns 10k: 56 of 88 MB).
    let mut config = host_config(&deciders, Arc::new(Journal::disabled()));
    config.observer = decisions.clone();
    if let Some(module) = &row.module {
        let module = controller_module(&module.path);
        config.controllers = module.name().parse().expect("a controller name");
        config.modules = vec![module].into();
    }
    let baseline_kib = proc_status_kib("VmRSS:");
    let started = Instant::now();
    let host = Host::start(client, config);
    let converged = host
        .wait_idle(
            QUIET,
            Duration::from_secs(1),
            Duration::from_secs(row.timeout_secs),
        )
        .await
        .map_err(|e| {
            let mut keys = e.keys;
            let total = keys.len();
            keys.truncate(5);
            format!("{total} keys pending, e.g. {}", keys.join(", "))
        });
    let secs = started.elapsed().saturating_sub(QUIET).as_secs_f64();
    let peak_kib = proc_status_kib("VmHWM:");
    host.shutdown(Duration::from_secs(5)).await;
    let requests = counts.0.lock().unwrap().clone();
    Measured {
        secs,
        converged,
        decisions: decisions.0.load(Ordering::Relaxed),
        requests,
        baseline_kib,
        peak_kib,
    }
}

/// The controller module at `path`, described by itself.
fn controller_module(path: &Path) -> ControllerModule {
    let engine = Engine::new(EngineConfig::default()).expect("engine");
    let guest = engine
        .loader()
        .world(World::of::<ControllerWorld>())
        .file(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let description = guest.describe_controller().expect("describe");
    ControllerModule::new(description, Arc::new(guest)).expect("a description the host accepts")
}

// ---- the parent: server, state, end-state check, table ----

/// What the host measured, and whether it reached the expected end state; `Err`
/// when the row could not run at all.
async fn run_row(row: Row) -> Result<(Measured, Result<(), String>), String> {
    let cluster = EmbeddedCluster::start(&row.workload.options(row.cluster_controllers))
        .await
        .map_err(|e| e.to_string())?;
    cluster
        .server
        .store()
        .load_objects(row.workload.state(row.n, row.module.as_ref()))
        .map_err(|e| e.to_string())?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    // `SCALE_WRAP`: a command prefix for the host child (a profiler); `{row}` in it
    // becomes the row's name, e.g. `heaptrack -o /tmp/heap-{row}`.
    let row_name = format!("{}-{}-{}", row.workload.name(), row.n, row.decider.name());
    let mut command = match std::env::var("SCALE_WRAP") {
        Ok(wrap) => {
            let mut words = wrap
                .split_whitespace()
                .map(|w| w.replace("{row}", &row_name));
            let mut c = tokio::process::Command::new(words.next().ok_or("SCALE_WRAP is empty")?);
            c.args(words).arg(exe);
            c
        }
        Err(_) => tokio::process::Command::new(exe),
    };
    let child = command
        .env(ROW_ENV, serde_json::to_string(&row).expect("row"))
        .env(KUBECONFIG_ENV, cluster.server.kubeconfig_yaml())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("starting the host process: {e}"))?;
    let output = child
        .wait_with_output()
        .await
        .map_err(|e| format!("host process: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let measured: Measured = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| format!("host process exited {} without a result", output.status))?;
    let end_state = row.workload.check(
        row.n,
        row.module.as_ref(),
        &cluster.server.store().snapshot(),
    );
    cluster.server.shutdown().await;
    let outcome = match (&measured.converged, end_state) {
        (Ok(()), Ok(())) => Ok(()),
        (Err(_), Err(missing)) => Err(format!("not converged: {missing}")),
        (Err(pending), Ok(())) => Err(format!("not idle: {pending}")),
        (Ok(()), Err(missing)) => Err(format!("idle but wrong end state: {missing}")),
    };
    Ok((measured, outcome))
}

fn env_list<T: Copy>(name: &str, all: &[T], label: impl Fn(T) -> &'static str) -> Vec<T> {
    match std::env::var(name) {
        Ok(list) => {
            let wanted: Vec<&str> = list.split(',').map(str::trim).collect();
            for w in &wanted {
                assert!(
                    all.iter().any(|&t| label(t) == *w),
                    "{name}: unknown entry {w}"
                );
            }
            all.iter()
                .copied()
                .filter(|&t| wanted.contains(&label(t)))
                .collect()
        }
        Err(_) => all.to_vec(),
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name}: not a number: {v}"))
        })
        .unwrap_or(default)
}

/// Requests summed by verb.
fn format_requests(requests: &BTreeMap<String, u64>) -> String {
    let mut by_verb: BTreeMap<&str, u64> = BTreeMap::new();
    for (kind, count) in requests {
        let verb = kind.split_once(' ').map_or(kind.as_str(), |(verb, _)| verb);
        *by_verb.entry(verb).or_default() += count;
    }
    by_verb
        .iter()
        .map(|(verb, count)| format!("{verb} {count}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    if let Ok(row) = std::env::var(ROW_ENV) {
        let row: Row = serde_json::from_str(&row).expect("row");
        // The host's warnings (failed watches, refused writes) go to stderr.
        tracing_subscriber::fmt()
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_default_env()
                    .unwrap_or_else(|_| "warn".into()),
            )
            .with_writer(std::io::stderr)
            .init();
        let measured = runtime.block_on(child(row));
        println!("{}", serde_json::to_string(&measured).expect("result"));
        return;
    }
    let max_n = env_number("SCALE_MAX_N", 50_000) as usize;
    let timeout_secs = env_number("SCALE_TIMEOUT", 600);
    let cluster_controllers = env_number("SCALE_SERVER_GC", 0) == 1;
    let workloads = env_list("SCALE_WORKLOADS", &WORKLOADS, Workload::name);
    let deciders = env_list(
        "SCALE_DECIDERS",
        &[DeciderKind::Wasm, DeciderKind::Native, DeciderKind::Module],
        DeciderKind::name,
    );
    let commit = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    println!(
        "rekon scale benchmark, embedded API server (garbage collector and kubelet {}), commit {commit}, {} CPUs, host in its own process",
        if cluster_controllers { "on" } else { "off" },
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "| workload | N | decider | converged in | API requests by verb | decisions/s | peak RSS | host RSS / object |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut per_unit = Vec::new();
    // Described once, and only when a `module` row runs.
    let mut modules = None;
    for workload in &workloads {
        for n in [1_000, 10_000, 50_000].into_iter().filter(|&n| n <= max_n) {
            for decider in deciders.iter().filter(|d| d.runs(*workload)) {
                let module = match (decider, workload.primary()) {
                    (DeciderKind::Module, Some(primary)) => Some(module_for(
                        modules.get_or_insert_with(modules_by_primary),
                        primary,
                    )),
                    _ => None,
                };
                let row = Row {
                    workload: *workload,
                    n,
                    decider: *decider,
                    module: module.clone().transpose().ok().flatten(),
                    timeout_secs,
                    cluster_controllers,
                };
                let result = match module {
                    Some(Err(e)) => Err(e),
                    _ => runtime.block_on(run_row(row.clone())),
                };
                let cells = match result {
                    Ok((m, outcome)) => {
                        let time = match outcome {
                            Ok(()) => format!("{:.2} s", m.secs),
                            Err(e) => format!("**{e}** after {:.0} s", m.secs),
                        };
                        let per_object = (m.peak_kib.saturating_sub(m.baseline_kib)) as f64
                            * 1024.0
                            / workload.cached_objects(n) as f64;
                        per_unit.push(requests_per_unit(&row, &m.requests));
                        format!(
                            "{time} | {} | {:.0} | {:.0} MiB | {:.0} B",
                            format_requests(&m.requests),
                            m.decisions as f64 / m.secs,
                            m.peak_kib as f64 / 1024.0,
                            per_object
                        )
                    }
                    Err(e) => format!("**could not run**: {e} | | | |"),
                };
                println!(
                    "| {} | {n} | {} | {cells} |",
                    workload.name(),
                    decider.name()
                );
                std::io::stdout().flush().expect("stdout");
            }
        }
    }
    println!(
        "converged in: host start to idle ({} ms quiet subtracted); host RSS / object: (peak RSS − RSS before the host started) / objects cached (pods + PVCs, PVCs, PVs, Jobs, or Foos + Deployments)",
        QUIET.as_millis()
    );
    println!();
    println!(
        "| workload | N | decider | controller | writes per unit (minimum) | other requests per unit | other requests |"
    );
    println!("|---|---|---|---|---|---|---|");
    for line in per_unit {
        println!("{line}");
    }
    println!(
        "unit: a PVC (release, protect), a pod (claims, ephemeral), a PV (pv-*), a Job (ttl) or a Foo (foo); minimum: what the API allows, lists and watches amortised to zero"
    );
}

/// One row of the requests-per-unit table: the controller's writes per unit against the
/// minimum, then everything else it sent (lists, watches, gets, discovery) per unit.
fn requests_per_unit(row: &Row, requests: &BTreeMap<String, u64>) -> String {
    let (controller, minimum) = (row.controller(), row.workload.minimum());
    let n = row.n as f64;
    let writes: Vec<String> = minimum
        .iter()
        .map(|(kind, least)| {
            let sent = requests.get(*kind).copied().unwrap_or(0) as f64 / n;
            format!("{kind} {sent:.3} ({least})")
        })
        .collect();
    let others: BTreeMap<&String, &u64> = requests
        .iter()
        .filter(|(kind, _)| !minimum.iter().any(|(k, _)| k == kind))
        .collect();
    let other_total: u64 = others.values().copied().sum();
    let other_list: Vec<String> = others
        .iter()
        .map(|(kind, count)| format!("{kind} {count}"))
        .collect();
    format!(
        "| {} | {} | {} | {controller} | {} | {:.3} | {} |",
        row.workload.name(),
        row.n,
        row.decider.name(),
        writes.join(", "),
        other_total as f64 / n,
        other_list.join(", ")
    )
}
