//! Decision modules delivered as `DecisionModule` objects, end to end: the CRD
//! from deploy/ applied to an API server that serves custom resources, rekon
//! serving worlds from the objects (as `rekon run` wires it), and the status
//! telling what happened: Active within 10 s and deciding (a PVC is released),
//! every refusal with its reason and a message naming the module while the
//! previous version keeps serving and the host stays ready, a duplicate world,
//! shadow → automatic promotion, a promotion stopped by a difference, and
//! automatic rollback. Then the lifecycle (issue 23): blue/green hand-over
//! and a world left without object, an object that does not parse beside good
//! ones, the CRD installed after rekon started, a rollback honoured after a
//! restart, statuses behind the leadership fence, and an unreachable registry
//! that delays no other object.
//!
//! The server: the embedded one (it serves CustomResourceDefinitions), or with
//! `REKON_DECISION_MODULES_SERVER=real` the real kube-apiserver v1.20.2 of
//! `../shared/tools/real-apiserver` (`REKON_REAL_APISERVER` names another copy
//! of the script).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DeleteParams, DynamicObject, PostParams};
use kube::{Api, Client};
use rekon_controllers::fence::Fence;
use rekon_controllers::host::{Host, HostConfig};
use rekon_controllers::journal::Journal;
use rekon_controllers::selection::{self, Selection};
use rekon_modules::object::{
    self, DecisionModule, DecisionModuleStatus, Fetcher, ObjectOptions, Phase, ServingObjects,
};
use rekon_modules::testing::with_custom_section;
use rekon_modules::{
    ModuleDigest, Modules, ModulesObserver, ModulesOptions, WatchOptions, Watching,
};
use rekon_oci::{Puller, PullerOptions, RegistryOptions};
use rekon_ops::Health;
use rekon_runtime::testing::built_guest;
use rekon_simulate::{ClusterOptions, EmbeddedCluster, host_config};
use rekon_tests::objects::{self, create_namespace, wait_for};
use serde_json::json;

const NS: &str = "modules";
const WORLD: &str = "pvc-protection";
/// The largest module the tests' fetcher accepts from a ConfigMap.
const MAX_BYTES: u64 = 400 << 10;

/// A real kube-apiserver, stopped when dropped.
struct RealServer {
    script: PathBuf,
    pidfile: String,
    kubeconfig: tempfile::NamedTempFile,
}

impl Drop for RealServer {
    fn drop(&mut self) {
        let _ = Command::new(&self.script)
            .arg("stop")
            .arg(&self.pidfile)
            .status();
    }
}

fn real_apiserver_script() -> PathBuf {
    std::env::var_os("REKON_REAL_APISERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/tools/real-apiserver")
        })
}

async fn start_real_server() -> (Client, RealServer) {
    let script = real_apiserver_script();
    assert!(
        script.exists(),
        "no API server serving CustomResourceDefinitions: {} is missing (set REKON_REAL_APISERVER)",
        script.display()
    );
    let kubeconfig = tempfile::NamedTempFile::new().unwrap();
    let output = Command::new(&script)
        .arg("start")
        .arg("--kubeconfig")
        .arg(kubeconfig.path())
        .output()
        .expect("run real-apiserver");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "real-apiserver start: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let pidfile = stdout
        .lines()
        .find_map(|l| l.strip_prefix("pid-file: "))
        .expect("pid-file line")
        .to_string();
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(kubeconfig.path()).unwrap(),
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    let client = Client::try_from(config).unwrap();
    (
        client,
        RealServer {
            script,
            pidfile,
            kubeconfig,
        },
    )
}

/// The CRD as deploy/ ships it.
fn deployed_crd() -> CustomResourceDefinition {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/decisionmodules.yaml");
    serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The CRD as an older rekon shipped it: no `maximum` on `deadlineMs`.
fn crd_without_maximum() -> CustomResourceDefinition {
    let mut crd = deployed_crd();
    let schema = crd.spec.versions[0]
        .schema
        .as_mut()
        .and_then(|s| s.open_api_v3_schema.as_mut())
        .unwrap();
    let spec = schema.properties.as_mut().unwrap().get_mut("spec").unwrap();
    let deadline = spec
        .properties
        .as_mut()
        .unwrap()
        .get_mut("deadlineMs")
        .unwrap();
    assert!(deadline.maximum.is_some(), "the CRD caps deadlineMs");
    deadline.maximum = None;
    crd
}

/// rekon as `rekon run` wires it: modules from objects only, statuses written
/// by this (leading) replica through its fence, the pvc-protection controller.
struct Rekon {
    modules: Modules,
    health: Arc<Health>,
    /// The fence statuses are written through (revoked: leadership lost).
    fence: Fence,
    /// Worlds whose module was withdrawn, as the metrics hear it.
    withdrawn: Arc<std::sync::Mutex<Vec<String>>>,
    _host: Host,
    /// Where image sources are pulled to.
    _oci_cache: tempfile::TempDir,
    _watching: Watching,
    _objects: ServingObjects,
}

/// Hears what the metrics hear: which world lost its module.
struct Withdrawals(Arc<std::sync::Mutex<Vec<String>>>);

impl ModulesObserver for Withdrawals {
    fn withdrawn(&self, controller: &str) {
        self.0.lock().unwrap().push(controller.to_string());
    }
}

async fn start_rekon(client: &Client) -> Rekon {
    start_rekon_with(client, Duration::from_secs(30)).await
}

/// rekon asking discovery for the DecisionModule API every `discovery`.
async fn start_rekon_with(client: &Client, discovery: Duration) -> Rekon {
    let withdrawn = Arc::default();
    let modules = Modules::open(ModulesOptions {
        observer: Arc::new(Withdrawals(Arc::clone(&withdrawn))),
        ..ModulesOptions::without_dir()
    })
    .await
    .unwrap();
    let oci_cache = tempfile::tempdir().unwrap();
    let puller = Puller::new(PullerOptions {
        cache_dir: oci_cache.path().to_path_buf(),
        ..PullerOptions::default()
    })
    .unwrap();
    let watching = modules
        .watch(WatchOptions {
            status_refresh: Duration::from_millis(200),
            ..WatchOptions::default()
        })
        .unwrap();
    let fence = Fence::default();
    let status_client = fence.client(client.clone());
    let objects = object::serve(
        modules.clone(),
        client.clone(),
        Fetcher::new(client.clone(), MAX_BYTES).with_puller(puller),
        ObjectOptions {
            status_interval: Duration::from_millis(300),
            discovery_interval: discovery,
            ..ObjectOptions::new(Arc::new(move || Some(status_client.clone())))
        },
    );
    let host = Host::start(
        client.clone(),
        HostConfig {
            controllers: Selection::for_world(WORLD),
            ..host_config(&modules.deciders(), Arc::new(Journal::disabled()))
        },
    );
    let health = Arc::new(Health::new());
    health.set_guests_loaded(true);
    health.set_leading(host.probe());
    Rekon {
        modules,
        health,
        fence,
        withdrawn,
        _host: host,
        _oci_cache: oci_cache,
        _watching: watching,
        _objects: objects,
    }
}

/// The API server the test runs on, stopped when dropped.
enum Server {
    /// The cluster is kept only to keep the server running.
    Embedded {
        _cluster: EmbeddedCluster,
        kubeconfig: tempfile::NamedTempFile,
    },
    Real(RealServer),
}

impl Server {
    fn kubeconfig(&self) -> PathBuf {
        match self {
            Server::Embedded { kubeconfig, .. } => kubeconfig.path().to_path_buf(),
            Server::Real(real) => real.kubeconfig.path().to_path_buf(),
        }
    }
}

async fn start_server() -> (Client, Server) {
    if std::env::var("REKON_DECISION_MODULES_SERVER").as_deref() == Ok("real") {
        let (client, real) = start_real_server().await;
        return (client, Server::Real(real));
    }
    let cluster = EmbeddedCluster::start(&ClusterOptions::default())
        .await
        .expect("the embedded API server starts");
    let kubeconfig = tempfile::NamedTempFile::new().unwrap();
    cluster.server.write_kubeconfig(kubeconfig.path()).unwrap();
    let client = cluster.client.clone();
    let server = Server::Embedded {
        _cluster: cluster,
        kubeconfig,
    };
    (client, server)
}

/// The cluster, with the CRD applied and served, the namespace and rekon.
struct Setup {
    client: Client,
    _server: Server,
    kubeconfig: PathBuf,
    /// `None` only while restarting.
    rekon: Option<Rekon>,
}

async fn setup() -> Setup {
    setup_with(Some(deployed_crd()), Duration::from_secs(30)).await
}

/// The cluster with `crd` (none: rekon starts before any), and rekon asking
/// discovery every `discovery`.
async fn setup_with(crd: Option<CustomResourceDefinition>, discovery: Duration) -> Setup {
    let (client, server) = start_server().await;
    if let Some(crd) = &crd {
        install_crd(&client, crd).await;
    }
    create_namespace(&client, NS).await;
    let rekon = start_rekon_with(&client, discovery).await;
    let kubeconfig = server.kubeconfig();
    Setup {
        client,
        _server: server,
        kubeconfig,
        rekon: Some(rekon),
    }
}

/// Creates `crd` and waits until discovery serves it.
async fn install_crd(client: &Client, crd: &CustomResourceDefinition) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), crd)
        .await
        .expect("the CRD is accepted");
    wait_for(
        "rekon.dev/v1alpha1 in discovery",
        Duration::from_secs(20),
        async || {
            selection::serves(client, object::API)
                .await
                .ok()
                .filter(|s| *s)
        },
    )
    .await;
}

fn guest(stem: &str) -> Vec<u8> {
    std::fs::read(built_guest(stem)).unwrap()
}

impl Setup {
    fn rekon(&self) -> &Rekon {
        self.rekon.as_ref().expect("rekon runs")
    }

    /// Stops rekon, then starts a new one on the same cluster.
    async fn restart(&mut self) {
        drop(self.rekon.take());
        self.rekon = Some(start_rekon(&self.client).await);
    }

    fn objects(&self) -> Api<DecisionModule> {
        Api::all(self.client.clone())
    }

    /// Creates a DecisionModule from raw JSON (what no typed spec can hold).
    async fn create_raw(&self, name: &str, spec: serde_json::Value) -> Result<(), kube::Error> {
        let api: Api<DynamicObject> = Api::all_with(
            self.client.clone(),
            &ApiResource::erase::<DecisionModule>(&()),
        );
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "rekon.dev/v1alpha1", "kind": "DecisionModule",
            "metadata": {"name": name}, "spec": spec,
        }))
        .unwrap();
        api.create(&PostParams::default(), &object)
            .await
            .map(|_| ())
    }

    /// Waits until a PVC deleted now is still there after `wait`: nothing decides.
    async fn not_released(&self, name: &str, wait: Duration) {
        let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(self.client.clone(), NS);
        pvcs.create(&PostParams::default(), &pvc(name))
            .await
            .unwrap();
        pvcs.delete(name, &DeleteParams::default()).await.unwrap();
        tokio::time::sleep(wait).await;
        assert!(
            pvcs.get_opt(name).await.unwrap().is_some(),
            "PVC {name} was released although no module serves its world"
        );
    }

    /// Ships `bytes` in ConfigMap `name` (key `module.wasm`); returns its digest.
    async fn ship(&self, name: &str, bytes: &[u8]) -> ModuleDigest {
        objects::ship(&self.client, NS, name, bytes).await
    }

    /// Creates or replaces DecisionModule `name` with `spec`.
    async fn apply(&self, name: &str, spec: serde_json::Value) {
        objects::apply(&self.client, name, spec).await
    }

    /// Waits for `name`'s status of its current generation to satisfy `done`.
    async fn status(
        &self,
        name: &str,
        timeout: Duration,
        done: impl Fn(&DecisionModuleStatus) -> bool,
    ) -> DecisionModuleStatus {
        objects::status(&self.client, name, timeout, done).await
    }

    /// A PVC created and deleted is released (its finalizer removed) by the
    /// module serving, within 10 s.
    async fn released(&self, name: &str) {
        let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(self.client.clone(), NS);
        pvcs.create(&PostParams::default(), &pvc(name))
            .await
            .unwrap();
        pvcs.delete(name, &DeleteParams::default()).await.unwrap();
        wait_for(
            &format!("PVC {name} released"),
            Duration::from_secs(10),
            async || pvcs.get_opt(name).await.unwrap().is_none().then_some(()),
        )
        .await;
    }

    /// Applies `module` and checks the refusal: phase Rejected, `Ready` and
    /// `failed_condition` False with `reason`, a message naming each of
    /// `mentions` and saying what keeps serving, `serving` still active and
    /// deciding, and the host ready.
    async fn refused(
        &self,
        reason: &str,
        module: serde_json::Value,
        failed_condition: &str,
        mentions: &[&str],
        serving: &ModuleDigest,
        timeout: Duration,
    ) {
        self.apply("pvc-protection", json!({"world": WORLD, "module": module}))
            .await;
        let status = self
            .status("pvc-protection", timeout, |s| {
                s.phase == Some(Phase::Rejected)
            })
            .await;
        let (ok, got_reason, message) = ready(&status);
        assert_eq!(
            (ok.as_str(), got_reason.as_str()),
            ("False", reason),
            "{message}"
        );
        for mention in mentions {
            assert!(
                message.contains(mention),
                "{reason}: {message:?} lacks {mention:?}"
            );
        }
        assert!(message.contains("keeps serving"), "{message}");
        let failed = status.condition(failed_condition).expect(failed_condition);
        assert_eq!(
            (failed.status.as_str(), failed.reason.as_str()),
            ("False", reason)
        );
        assert_eq!(
            status.active.as_ref().unwrap().digest,
            serving.to_string(),
            "{reason}: the previous version still serves"
        );
        self.released(&format!("after-{}", reason.to_lowercase()))
            .await;
        self.assert_ready();
    }

    fn assert_ready(&self) {
        let readiness = self.rekon().health.readiness();
        assert!(readiness.is_ready(), "/readyz: {readiness}");
    }
}

/// A PVC with the pvc-protection finalizer (the real server's admission adds
/// it too), so that its deletion waits for the controller.
fn pvc(name: &str) -> PersistentVolumeClaim {
    serde_json::from_value(json!({
        "metadata": {"name": name, "finalizers": ["kubernetes.io/pvc-protection"]},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    }))
    .unwrap()
}

fn config_map(name: &str, digest: &ModuleDigest) -> serde_json::Value {
    json!({"configMap": {"namespace": NS, "name": name, "key": "module.wasm"}, "sha256": digest.to_string()})
}

fn ready(status: &DecisionModuleStatus) -> (String, String, String) {
    let ready = status.condition(object::READY).expect("a Ready condition");
    (
        ready.status.clone(),
        ready.reason.clone(),
        ready.message.clone(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_decision_module_serves_and_every_refusal_explains_itself_while_the_previous_version_serves()
 {
    let setup = setup().await;
    let reference = guest("rekon_guest_pvc_protection");
    let v1 = setup.ship("v1", &reference).await;

    let started = Instant::now();
    setup
        .apply(
            "pvc-protection",
            json!({"world": WORLD, "module": config_map("v1", &v1)}),
        )
        .await;
    let status = setup
        .status("pvc-protection", Duration::from_secs(10), |s| {
            s.phase == Some(Phase::Active)
        })
        .await;
    let active_after = started.elapsed();
    let active = status.active.as_ref().unwrap();
    assert_eq!(active.digest, v1.to_string());
    assert_eq!(active.image, "configmap/modules/v1#module.wasm");
    assert_eq!(active.contract_version, "0.2.0");
    assert_eq!(ready(&status).0, "True");
    setup.released("first").await;
    eprintln!("DecisionModule Active after {active_after:?}");

    // kubectl shows phase and digest through the CRD's printer columns.
    let kubectl = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&setup.kubeconfig)
        .args(["get", "decisionmodules"])
        .output()
        .expect("kubectl is installed");
    let table = String::from_utf8_lossy(&kubectl.stdout);
    assert!(
        kubectl.status.success(),
        "{}",
        String::from_utf8_lossy(&kubectl.stderr)
    );
    let header = table.lines().next().unwrap();
    for column in [
        "NAME", "WORLD", "PHASE", "DIGEST", "AGREED", "DIFFERED", "AGE",
    ] {
        assert!(header.contains(column), "{table}");
    }
    let row = table.lines().nth(1).unwrap();
    assert!(
        row.contains("pvc-protection") && row.contains("Active") && row.contains(&v1.to_string()),
        "{table}"
    );

    // A PVC named "panic" is among the recent inputs: the misbehaving guest
    // traps on it in the canary replay.
    setup.released("panic").await;

    let wrong_digest = ModuleDigest::of(b"something else");
    let padded = with_custom_section(&reference, "padding", &vec![0u8; MAX_BYTES as usize]);
    let cases: Vec<(&str, serde_json::Value, &str, Vec<String>)> = vec![
        (
            "DigestMismatch",
            config_map("v1", &wrong_digest),
            "Verified",
            vec!["configmap/modules/v1#module.wasm".into(), wrong_digest.to_string()],
        ),
        (
            "NotFound",
            config_map("absent", &v1),
            "Pulled",
            vec!["ConfigMap modules/absent not found".into()],
        ),
        (
            "TooLarge",
            config_map("padded", &setup.ship("padded", &padded).await),
            "Pulled",
            vec!["configmap/modules/padded#module.wasm".into(), format!("over the limit of {MAX_BYTES} bytes")],
        ),
        (
            "NotAComponent",
            config_map("core", &setup.ship("core", &wat::parse_str("(module)").unwrap()).await),
            "Verified",
            vec!["configmap/modules/core#module.wasm".into(), "not a component".into()],
        ),
        (
            "WrongWorld",
            config_map("claim", &setup.ship("claim", &guest("rekon_guest_resource_claim")).await),
            "Verified",
            vec!["configmap/modules/claim#module.wasm".into(), "does not export".into()],
        ),
        (
            "UnknownContractVersion",
            config_map(
                "future",
                &setup
                    .ship(
                        "future",
                        &wat::parse_str(
                            r#"(component (instance $d) (export "rekon:reconcile/pvc-decider@0.3.0" (instance $d)))"#,
                        )
                        .unwrap(),
                    )
                    .await,
            ),
            "Verified",
            vec!["configmap/modules/future#module.wasm".into(), "0.3.0 is not a contract version".into()],
        ),
        (
            "CanaryFailed",
            config_map("trapping", &setup.ship("trapping", &guest("rekon_guest_misbehaving")).await),
            "Verified",
            vec!["canary replay".into(), "panic".into()],
        ),
    ];
    for (reason, module, failed_condition, mentions) in cases {
        let mentions: Vec<&str> = mentions.iter().map(String::as_str).collect();
        setup
            .refused(
                reason,
                module,
                failed_condition,
                &mentions,
                &v1,
                Duration::from_secs(10),
            )
            .await;
    }

    // A second object for the same world is refused and names the first.
    setup
        .apply(
            "pvc-protection-copy",
            json!({"world": WORLD, "module": config_map("v1", &v1)}),
        )
        .await;
    let copy = setup
        .status("pvc-protection-copy", Duration::from_secs(10), |s| {
            s.phase == Some(Phase::Rejected)
        })
        .await;
    let (_, reason, message) = ready(&copy);
    assert_eq!(reason, "DuplicateWorld");
    assert!(
        message.contains("already served by DecisionModule pvc-protection"),
        "{message}"
    );
    assert!(copy.active.is_none(), "a duplicate serves nothing");
    setup.released("after-duplicate").await;
    setup.assert_ready();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_shadow_is_promoted_on_evidence_stopped_by_a_difference_and_a_failing_version_rolls_back()
{
    let mut setup = setup().await;
    let reference = guest("rekon_guest_pvc_protection");
    let v1 = setup.ship("v1", &reference).await;
    let v2 = setup
        .ship("v2", &with_custom_section(&reference, "rekon-build", b"2"))
        .await;
    let other = setup.ship("other", &guest("rekon_guest_misbehaving")).await;
    setup
        .apply(
            "pvc-protection",
            json!({"world": WORLD, "module": config_map("v1", &v1)}),
        )
        .await;
    setup
        .status("pvc-protection", Duration::from_secs(60), |s| {
            s.phase == Some(Phase::Active)
        })
        .await;

    // A candidate that decides differently: never promoted; the message names a key.
    setup
        .apply(
            "pvc-protection",
            json!({"world": WORLD, "mode": "shadow", "module": config_map("other", &other),
                   "previous": config_map("v1", &v1),
                   "autoPromote": {"minDecisions": 50, "maxDifferences": 0}}),
        )
        .await;
    setup
        .status("pvc-protection", Duration::from_secs(60), |s| {
            s.phase == Some(Phase::Shadowing)
        })
        .await;
    setup.released("differs").await;
    let stopped = setup
        .status("pvc-protection", Duration::from_secs(60), |s| {
            s.condition(object::PROMOTED)
                .is_some_and(|c| c.reason == "PromotionStopped")
        })
        .await;
    let promoted = stopped.condition(object::PROMOTED).unwrap();
    assert_eq!(promoted.status, "False");
    assert!(
        promoted.message.contains("key modules/differs"),
        "{}",
        promoted.message
    );
    assert_eq!(stopped.phase, Some(Phase::Shadowing));
    assert_eq!(stopped.active.as_ref().unwrap().digest, v1.to_string());
    assert!(stopped.shadow.as_ref().unwrap().differed >= 1);

    // A candidate that agrees: promoted once it agreed on 3 decisions.
    setup
        .apply(
            "pvc-protection",
            json!({"world": WORLD, "mode": "shadow", "module": config_map("v2", &v2),
                   "previous": config_map("v1", &v1),
                   "autoPromote": {"minDecisions": 3, "maxDifferences": 0}}),
        )
        .await;
    let shadowing = setup
        .status("pvc-protection", Duration::from_secs(10), |s| {
            s.phase == Some(Phase::Shadowing)
        })
        .await;
    assert_eq!(shadowing.shadow.as_ref().unwrap().digest, v2.to_string());
    for n in 0..3 {
        setup.released(&format!("agrees-{n}")).await;
    }
    let active = setup
        .status("pvc-protection", Duration::from_secs(10), |s| {
            s.condition(object::PROMOTED)
                .is_some_and(|c| c.status == "True")
        })
        .await;
    assert_eq!(active.phase, Some(Phase::Active));
    assert_eq!(active.active.as_ref().unwrap().digest, v2.to_string());
    assert!(active.shadow.is_none());
    // The promotion is recorded with its evidence.
    let promotion = active
        .promotion
        .as_ref()
        .expect("the promotion is recorded");
    assert_eq!(promotion.digest, v2.to_string());
    assert!(
        promotion.agreed >= 3 && promotion.differed == 0 && promotion.failed == 0,
        "{promotion:?}"
    );
    setup.released("after-promotion").await;

    // A version that fails too often is rolled back to the previous one.
    setup
        .apply(
            "pvc-protection",
            json!({"world": WORLD, "module": config_map("other", &other),
                   "previous": config_map("v2", &v2),
                   "autoRollback": {"maxFailureFraction": 0.2, "minDecisions": 2}}),
        )
        .await;
    setup
        .status("pvc-protection", Duration::from_secs(10), |s| {
            s.phase == Some(Phase::Active)
        })
        .await;
    // The misbehaving guest traps on every PVC named "panic": one deleted per namespace.
    let namespaces: Api<Namespace> = Api::all(setup.client.clone());
    for n in 0..3 {
        let ns = format!("panic-{n}");
        namespaces
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap(),
            )
            .await
            .unwrap();
        let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(setup.client.clone(), &ns);
        pvcs.create(&PostParams::default(), &pvc("panic"))
            .await
            .unwrap();
        pvcs.delete("panic", &DeleteParams::default())
            .await
            .unwrap();
    }
    let rolled_back = setup
        .status("pvc-protection", Duration::from_secs(20), |s| {
            s.phase == Some(Phase::RolledBack)
        })
        .await;
    assert_eq!(rolled_back.active.as_ref().unwrap().digest, v2.to_string());
    let (ok, reason, message) = ready(&rolled_back);
    assert_eq!((ok.as_str(), reason.as_str()), ("False", "RolledBack"));
    assert!(message.contains("rolled back to"), "{message}");
    assert_eq!(
        setup.rekon().modules.status().controllers[WORLD].rollbacks,
        1
    );
    let record = rolled_back
        .rolled_back
        .as_ref()
        .expect("the rollback is recorded");
    assert_eq!(record.digest, other.to_string());
    setup.released("after-rollback").await;
    setup.assert_ready();

    // Issue 23, 7: a restarted rekon honours the recorded rollback: the
    // previous version serves, and the build rolled back is never loaded.
    setup.restart().await;
    let status = wait_for(
        "the restarted rekon serving",
        Duration::from_secs(10),
        async || {
            let status = setup.rekon().modules.status().controllers[WORLD].clone();
            status.active.is_some().then_some(status)
        },
    )
    .await;
    assert_eq!(status.active.as_ref().unwrap().sha256, v2.to_string());
    assert_eq!(
        status.swaps, 1,
        "the build rolled back never served: {status:?}"
    );
    let honoured = setup
        .status("pvc-protection", Duration::from_secs(10), |s| {
            s.phase == Some(Phase::RolledBack)
        })
        .await;
    assert_eq!(
        honoured.rolled_back.as_ref().unwrap().digest,
        other.to_string()
    );
    assert_eq!(honoured.active.as_ref().unwrap().digest, v2.to_string());
    // The misbehaving build would trap on "panic"; the previous one releases it.
    setup.released("panic").await;
    setup.assert_ready();
}

/// Issue 16's "done when": a module pushed to a real OCI registry (what `rekon
/// push` does) and referenced by a DecisionModule is Active within 10 s and
/// decides; the 12 MB TypeScript build of the same world travels the same way
/// (it is compiled once on arrival, so it gets longer than 10 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_module_pushed_to_a_registry_is_active_within_10s_and_decides() {
    let registry = rekon_oci::testing::TestRegistry::start();
    let setup = setup().await;
    let push = async |stem: &str, tag: &str| {
        let bytes = guest(stem);
        let reference = registry.reference(&format!("platform/pvc-protection:{tag}"));
        let pushed = rekon_oci::push(&bytes, &reference, &RegistryOptions::default())
            .await
            .unwrap();
        (ModuleDigest::of(&bytes), pushed)
    };

    let (digest, pushed) = push("rekon_guest_pvc_protection", "rust").await;
    let started = Instant::now();
    setup
        .apply(
            "pvc-protection",
            json!({"world": WORLD, "module": {"image": pushed}}),
        )
        .await;
    let status = setup
        .status("pvc-protection", Duration::from_secs(10), |s| {
            s.phase == Some(Phase::Active)
        })
        .await;
    eprintln!("image {pushed} Active after {:?}", started.elapsed());
    let active = status.active.as_ref().unwrap();
    assert_eq!(active.digest, digest.to_string());
    assert!(active.image.starts_with(&pushed), "{active:?}");
    setup.released("from-registry").await;
    let serving = digest;
    let (digest, pushed_ts) = push("rekon_guest_pvc_protection_ts", "ts").await;

    // Each registry refusal: Rejected with its reason, a message naming the
    // image, and the image that served before keeps serving.
    let options = RegistryOptions::default();
    let key = rekon_oci::generate_key();
    rekon_oci::sign(&pushed, key.private_pem.as_bytes(), &options)
        .await
        .unwrap();
    let wrong_key = rekon_oci::generate_key();
    // A digest this rekon has not pulled yet: a pulled one is served from the
    // digest cache without asking any registry (content addressing).
    let manifest = pushed_ts.split_once('@').unwrap().1;
    let missing = registry.reference(&format!(
        "platform/pvc-protection@sha256:{}",
        "0".repeat(64)
    ));
    let closed = rekon_oci::testing::free_loopback_port();
    let unreachable = format!("{closed}/platform/pvc-protection@{manifest}");
    let cases = [
        (
            "ManifestNotFound",
            json!({"image": missing}),
            "Pulled",
            &missing,
        ),
        (
            "RegistryUnreachable",
            json!({"image": unreachable}),
            "Pulled",
            &unreachable,
        ),
        (
            "BadSignature",
            json!({"image": pushed, "verify": {"publicKey": wrong_key.public_pem}}),
            "Verified",
            &pushed,
        ),
        (
            "BadSignature",
            json!({"image": pushed_ts, "verify": {"publicKey": key.public_pem}}),
            "Verified",
            &pushed_ts,
        ),
    ];
    for (reason, module, failed_condition, image) in cases {
        setup
            .refused(
                reason,
                module,
                failed_condition,
                &[image.as_str()],
                &serving,
                Duration::from_secs(20),
            )
            .await;
    }
    // Signed with the key the object names: it verifies and serves.
    setup
        .apply(
            "pvc-protection",
            json!({"world": WORLD, "module": {"image": pushed, "verify": {"publicKey": key.public_pem}}}),
        )
        .await;
    let status = setup
        .status("pvc-protection", Duration::from_secs(10), |s| {
            s.phase == Some(Phase::Active)
        })
        .await;
    let verified = status.condition("Verified").expect("Verified");
    assert_eq!(verified.status, "True", "{verified:?}");
    setup.released("after-verified").await;

    let pushed = pushed_ts;
    let started = Instant::now();
    setup
        .apply(
            "pvc-protection",
            json!({"world": WORLD, "module": {"image": pushed}}),
        )
        .await;
    let status = setup
        .status("pvc-protection", Duration::from_secs(300), |s| {
            s.active
                .as_ref()
                .is_some_and(|a| a.digest == digest.to_string())
        })
        .await;
    eprintln!(
        "image {pushed} (TypeScript) Active after {:?}",
        started.elapsed()
    );
    assert_eq!(status.phase, Some(Phase::Active));
    setup.released("from-typescript").await;
}

/// Issue 23, 1: blue/green. `b` waits as a duplicate while `a` serves;
/// deleting `a` hands the world to `b` at once. Moving `b` to another world
/// leaves none: the module stops deciding, and the metrics hear it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deleting_the_serving_object_hands_its_world_to_the_next_and_the_last_stops_deciding() {
    let setup = setup().await;
    let reference = guest("rekon_guest_pvc_protection");
    let blue = setup.ship("blue", &reference).await;
    let green = setup
        .ship(
            "green",
            &with_custom_section(&reference, "rekon-build", b"green"),
        )
        .await;
    setup
        .apply(
            "a",
            json!({"world": WORLD, "module": config_map("blue", &blue)}),
        )
        .await;
    setup
        .status("a", Duration::from_secs(10), |s| {
            s.phase == Some(Phase::Active)
        })
        .await;
    setup
        .apply(
            "b",
            json!({"world": WORLD, "module": config_map("green", &green)}),
        )
        .await;
    let waiting = setup
        .status("b", Duration::from_secs(10), |s| {
            s.phase == Some(Phase::Rejected)
        })
        .await;
    assert_eq!(ready(&waiting).1, "DuplicateWorld");
    assert!(
        waiting.active.is_none(),
        "b names no module of a: {waiting:?}"
    );

    let started = Instant::now();
    setup
        .objects()
        .delete("a", &DeleteParams::default())
        .await
        .unwrap();
    let handed = setup
        .status("b", Duration::from_secs(10), |s| {
            s.phase == Some(Phase::Active)
        })
        .await;
    eprintln!("b Active {:?} after a was deleted", started.elapsed());
    assert_eq!(handed.active.as_ref().unwrap().digest, green.to_string());
    setup.released("served-by-b").await;

    // b moves to another world: nothing names pvc-protection any more.
    let claim = setup
        .ship("claim", &guest("rekon_guest_resource_claim"))
        .await;
    setup
        .apply(
            "b",
            json!({"world": "resource-claim", "module": config_map("claim", &claim)}),
        )
        .await;
    let moved = setup
        .status("b", Duration::from_secs(10), |s| {
            s.phase == Some(Phase::Active)
        })
        .await;
    assert_eq!(moved.active.as_ref().unwrap().digest, claim.to_string());
    wait_for(
        "pvc-protection withdrawn",
        Duration::from_secs(10),
        async || {
            setup
                .rekon()
                .withdrawn
                .lock()
                .unwrap()
                .iter()
                .any(|w| w == WORLD)
                .then_some(())
        },
    )
    .await;
    let status = setup.rekon().modules.status().controllers[WORLD].clone();
    assert!(status.active.is_none(), "{status:?}");
    setup
        .not_released("nobody-decides", Duration::from_secs(2))
        .await;
}

/// Issue 23, 2: an object the CRD of an older rekon accepted (deadlineMs
/// beyond any integer) is refused alone, naming the field; after a restart
/// the object beside it serves. Today's CRD refuses such an object.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_object_that_does_not_parse_is_refused_alone_and_the_others_serve_after_a_restart() {
    let mut setup = setup_with(Some(crd_without_maximum()), Duration::from_secs(30)).await;
    let v1 = setup.ship("v1", &guest("rekon_guest_pvc_protection")).await;
    setup
        .create_raw(
            "huge",
            serde_json::from_str(&format!(
                r#"{{"world": "resource-claim", "module": {}, "deadlineMs": 100000000000000000000}}"#,
                config_map("v1", &v1)
            ))
            .unwrap(),
        )
        .await
        .expect("the older CRD has no maximum");
    setup
        .apply(
            "good",
            json!({"world": WORLD, "module": config_map("v1", &v1)}),
        )
        .await;
    setup.restart().await;
    setup
        .status("good", Duration::from_secs(10), |s| {
            s.phase == Some(Phase::Active)
        })
        .await;
    setup.released("beside-huge").await;
    let api: Api<DynamicObject> = Api::all_with(
        setup.client.clone(),
        &ApiResource::erase::<DecisionModule>(&()),
    );
    let refused = wait_for("huge refused", Duration::from_secs(10), async || {
        let status = api.get("huge").await.ok()?.data.get("status")?.clone();
        let status: DecisionModuleStatus = serde_json::from_value(status).ok()?;
        (status.phase == Some(Phase::Rejected)).then_some(status)
    })
    .await;
    let (ok, reason, message) = ready(&refused);
    assert_eq!((ok.as_str(), reason.as_str()), ("False", "InvalidSpec"));
    assert!(message.contains("spec.deadlineMs"), "{message}");

    // The CRD rekon ships now refuses the object at the API server.
    let crds: Api<CustomResourceDefinition> = Api::all(setup.client.clone());
    let mut crd = crds.get("decisionmodules.rekon.dev").await.unwrap();
    crd.spec = deployed_crd().spec;
    crds.replace("decisionmodules.rekon.dev", &PostParams::default(), &crd)
        .await
        .unwrap();
    let err = setup
        .create_raw(
            "huge-again",
            serde_json::from_str(&format!(
                r#"{{"world": "resource-claim", "module": {}, "deadlineMs": 100000000000000000000}}"#,
                config_map("v1", &v1)
            ))
            .unwrap(),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("deadlineMs"), "{err}");
}

/// Issue 23, 3: rekon started before the CRD serves objects within one
/// discovery period of its installation.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_crd_installed_after_rekon_started_is_served_within_a_discovery_period() {
    let setup = setup_with(None, Duration::from_secs(1)).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    install_crd(&setup.client, &deployed_crd()).await;
    let v1 = setup.ship("v1", &guest("rekon_guest_pvc_protection")).await;
    setup
        .apply(
            "late",
            json!({"world": WORLD, "module": config_map("v1", &v1)}),
        )
        .await;
    setup
        .status("late", Duration::from_secs(10), |s| {
            s.phase == Some(Phase::Active)
        })
        .await;
    setup.released("after-late-crd").await;
}

/// Issue 23, 7: statuses go out through the leadership fence: once it is
/// revoked, the module still serves (every replica serves) but no status is
/// written.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replica_that_lost_its_leadership_writes_no_status() {
    let setup = setup().await;
    let v1 = setup.ship("v1", &guest("rekon_guest_pvc_protection")).await;
    setup.rekon().fence.revoke();
    setup
        .apply(
            "fenced",
            json!({"world": WORLD, "module": config_map("v1", &v1)}),
        )
        .await;
    wait_for("the module serving", Duration::from_secs(10), async || {
        setup.rekon().modules.status().controllers[WORLD]
            .active
            .as_ref()
            .map(|_| ())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let object = setup.objects().get("fenced").await.unwrap();
    assert!(
        object.status.is_none(),
        "written past the fence: {:?}",
        object.status
    );
}

/// Issue 23, 11: an object whose registry never answers delays no other
/// object: a second one, created after it, is Active within seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_unreachable_registry_delays_no_other_object() {
    let setup = setup().await;
    // Accepts connections and never answers: a pull waits for its timeout.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in silent.incoming() {
            held.push(stream);
        }
    });
    let image = format!(
        "127.0.0.1:{port}/platform/resource-claim@sha256:{}",
        "1".repeat(64)
    );
    setup
        .apply(
            "stuck",
            json!({"world": "resource-claim", "module": {"image": image}}),
        )
        .await;
    setup
        .status("stuck", Duration::from_secs(10), |s| {
            s.phase == Some(Phase::Pulling)
        })
        .await;
    let v1 = setup.ship("v1", &guest("rekon_guest_pvc_protection")).await;
    let started = Instant::now();
    setup
        .apply(
            "quick",
            json!({"world": WORLD, "module": config_map("v1", &v1)}),
        )
        .await;
    setup
        .status("quick", Duration::from_secs(10), |s| {
            s.phase == Some(Phase::Active)
        })
        .await;
    eprintln!(
        "quick Active after {:?} beside a silent registry",
        started.elapsed()
    );
}
