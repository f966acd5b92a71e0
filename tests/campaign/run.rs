//! One seed, start to end: cluster, rekon, workload with faults and
//! disruptions, a check after every step (and every 20 ms), then the faults
//! stop and the run must converge.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim, Pod};
use kube::api::{ListParams, PostParams, VersionMatch};
use kube::{Api, Client};
use rekon_apiserver::KubeletMode;
use rekon_controllers::journal::{Entry, Journal};
use rekon_simulate::{ClusterOptions, Deciders, EmbeddedCluster, client_for};
use rekon_tests::sim::{claim, namespace, template};
use serde_json::Value;

use crate::guests::{Guests, share};
use crate::invariants::{Checker, unconverged};
use crate::plan::{Disruption, Mode, NS, Plan, TEMPLATE, Topology};
use crate::replicas::Replica;
use crate::workload::{self, Target};

/// The kubeconfig of a real kube-apiserver v1.20.2 (as in .ci/run).
pub const REAL_KUBECONFIG_ENV: &str = "REKON_REAL_KUBECONFIG";

const CONVERGENCE: Duration = Duration::from_secs(30);

/// What one seed did and found.
pub struct Outcome {
    pub seed: u64,
    pub plan: String,
    pub faults: BTreeMap<String, u64>,
    pub disruptions: BTreeMap<String, u64>,
    pub violations: Vec<String>,
    pub not_converged: Vec<String>,
    pub elapsed: Duration,
    /// Where a failed run left its journal and final objects.
    pub evidence: Option<std::path::PathBuf>,
}

impl Outcome {
    pub fn failed(&self) -> bool {
        !self.violations.is_empty() || !self.not_converged.is_empty()
    }
}

/// The API server of a run.
enum Server {
    Embedded(EmbeddedCluster),
    /// A real kube-apiserver, shared by the seeds: each seed has its own namespace.
    Real {
        client: Client,
        kubeconfig: String,
    },
}

impl Server {
    async fn start(plan: &Plan, target: &Target) -> Self {
        if plan.mode.real() {
            let path = std::env::var(REAL_KUBECONFIG_ENV).unwrap_or_else(|_| {
                panic!("{REAL_KUBECONFIG_ENV} names the real server's kubeconfig")
            });
            let kubeconfig = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{REAL_KUBECONFIG_ENV}={path}: {e}"));
            let client = client_for(&kubeconfig)
                .await
                .expect("client for the real server");
            let ns: Namespace =
                serde_json::from_value(namespace(&target.namespace)).expect("namespace");
            Api::<Namespace>::all(client.clone())
                .create(&PostParams::default(), &ns)
                .await
                .unwrap_or_else(|e| panic!("creating namespace {}: {e}", target.namespace));
            return Server::Real { client, kubeconfig };
        }
        let cluster = EmbeddedCluster::start(&ClusterOptions {
            seed: plan.seed,
            kubelet: KubeletMode::Instant,
            faults: Some(plan.faults.clone()),
            ..ClusterOptions::default()
        })
        .await
        .expect("embedded API server");
        let mut state = vec![namespace(NS), template(NS, TEMPLATE)];
        state.extend(plan.shared_claims.iter().map(|c| claim(NS, c, true, &[])));
        cluster
            .server
            .store()
            .load_objects(state)
            .expect("initial state");
        Server::Embedded(cluster)
    }

    fn client(&self) -> &Client {
        match self {
            Server::Embedded(cluster) => &cluster.client,
            Server::Real { client, .. } => client,
        }
    }

    fn kubeconfig(&self) -> String {
        match self {
            Server::Embedded(cluster) => cluster.server.kubeconfig_yaml(),
            Server::Real { kubeconfig, .. } => kubeconfig.clone(),
        }
    }

    fn objects(&self, namespace: &str) -> Objects {
        match self {
            Server::Embedded(cluster) => Objects::Store(cluster.server.store()),
            Server::Real { client, .. } => Objects::Api {
                client: client.clone(),
                namespace: namespace.to_string(),
            },
        }
    }

    fn stop_faults(&self) {
        if let Server::Embedded(cluster) = self {
            cluster.server.stop_faults();
        }
    }

    fn faults_injected(&self) -> BTreeMap<String, u64> {
        match self {
            Server::Embedded(cluster) => cluster
                .server
                .faults_injected()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            Server::Real { .. } => BTreeMap::new(),
        }
    }

    async fn shutdown(self) {
        if let Server::Embedded(cluster) = self {
            cluster.server.shutdown().await;
        }
    }
}

/// Where the oracle reads the objects from.
#[derive(Clone)]
enum Objects {
    Store(rekon_apiserver::Store),
    /// PVCs and pods of one namespace, listed at one resourceVersion.
    Api {
        client: Client,
        namespace: String,
    },
}

impl Objects {
    /// One consistent snapshot; None when the real server could not be read.
    async fn snapshot(&self) -> Option<Vec<Value>> {
        match self {
            Objects::Store(store) => Some(store.snapshot()),
            Objects::Api { client, namespace } => {
                let pvcs = Api::<PersistentVolumeClaim>::namespaced(client.clone(), namespace)
                    .list(&ListParams::default())
                    .await
                    .ok()?;
                let rv = pvcs.metadata.resource_version.clone()?;
                let at = ListParams::default().at(&rv).matching(VersionMatch::Exact);
                let pods = Api::<Pod>::namespaced(client.clone(), namespace)
                    .list(&at)
                    .await
                    .ok()?;
                let mut objects: Vec<Value> = Vec::new();
                for pvc in pvcs.items {
                    objects.push(serde_json::to_value(pvc).ok()?);
                }
                for pod in pods.items {
                    objects.push(serde_json::to_value(pod).ok()?);
                }
                Some(objects)
            }
        }
    }
}

/// The checker fed from the server's objects and the journal.
#[derive(Clone)]
struct Oracle {
    checker: Arc<tokio::sync::Mutex<Checker>>,
    objects: Objects,
    journal: Arc<Journal>,
}

impl Oracle {
    /// Checks one snapshot and returns it; None when it could not be read.
    async fn check(&self) -> Option<Vec<Value>> {
        // Lock first: the sampler and the steps both check, and an older snapshot
        // checked after a newer one would show a claim created in between as deleted.
        let mut checker = self.checker.lock().await;
        let objects = self.objects.snapshot().await?;
        let entries = self.journal.entries();
        checker.objects(&objects);
        checker.journal(&entries);
        Some(objects)
    }
}

/// The replicas of rekon in a run and what happens to them.
struct Rekon {
    kubeconfig: String,
    /// The Lease the replicas elect their leader with.
    lease: String,
    deciders: Deciders,
    journal: Arc<Journal>,
    replicas: Vec<Replica>,
    started: usize,
}

impl Rekon {
    async fn start(
        topology: Topology,
        kubeconfig: String,
        lease: String,
        deciders: Deciders,
    ) -> Self {
        let mut rekon = Self {
            kubeconfig,
            lease,
            deciders,
            journal: Arc::new(Journal::new()),
            replicas: Vec::new(),
            started: 0,
        };
        let replicas = match topology {
            Topology::Single => 1,
            Topology::Elected => 2,
        };
        for _ in 0..replicas {
            rekon.add(topology).await;
        }
        rekon
    }

    async fn add(&mut self, topology: Topology) {
        self.started += 1;
        let replica = match topology {
            Topology::Single => {
                Replica::plain(&self.kubeconfig, &self.deciders, self.journal.clone()).await
            }
            Topology::Elected => {
                let identity = format!("replica-{}", self.started);
                Replica::elected(
                    &self.kubeconfig,
                    &self.lease,
                    &identity,
                    &share(&self.deciders),
                    self.journal.clone(),
                )
                .await
            }
        };
        self.replicas.push(replica);
    }

    /// Crashes the leader (waiting a little for one to exist) and starts a
    /// replacement process.
    async fn crash_leader(&mut self, topology: Topology) {
        let deadline = Instant::now() + Duration::from_secs(5);
        let leader = loop {
            if let Some(i) = self.replicas.iter().position(Replica::leads) {
                break i;
            }
            if Instant::now() > deadline {
                break 0;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        self.replicas.remove(leader).crash();
        self.add(topology).await;
    }

    async fn stop(self) {
        for replica in self.replicas {
            replica.stop().await;
        }
    }
}

pub async fn run_seed(seed: u64, mode: Mode, guests: &Guests) -> Outcome {
    let started = Instant::now();
    let plan = Plan::for_mode(seed, mode);
    let mut outcome = Outcome {
        seed,
        plan: plan.describe(),
        faults: BTreeMap::new(),
        disruptions: BTreeMap::new(),
        violations: Vec::new(),
        not_converged: Vec::new(),
        elapsed: Duration::ZERO,
        evidence: None,
    };
    // On a real server each seed gets a namespace (and a Lease) of its own: v1.20 without
    // a controller-manager never finishes deleting one.
    let target = Target {
        namespace: if mode.real() {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            format!("campaign-{seed}-{}", now.as_millis() % 1_000_000_000)
        } else {
            NS.to_string()
        },
        real: mode.real(),
    };
    let cluster = Server::start(&plan, &target).await;

    let deciders = guests.deciders();
    let pvc_slot = deciders
        .get::<rekon_contract::PvcProtectionWorld>()
        .expect("a pvc-protection slot");
    let lease = format!("rekon-{}", target.namespace);
    let mut rekon = Rekon::start(plan.topology, cluster.kubeconfig(), lease, deciders).await;
    let oracle = Oracle {
        checker: Arc::new(tokio::sync::Mutex::new(Checker::new(plan.pvc_names()))),
        objects: cluster.objects(&target.namespace),
        journal: rekon.journal.clone(),
    };
    let sampler = {
        let oracle = oracle.clone();
        tokio::spawn(async move {
            loop {
                oracle.check().await;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let mut count = |what: String| *outcome.disruptions.entry(what).or_default() += 1;
    let mut bad_module = false;

    for step in &plan.steps {
        if let Err(err) = workload::apply(cluster.client(), &target, &step.op).await {
            outcome.not_converged.push(err.to_string());
            break;
        }
        match step.disruption {
            Some(Disruption::CrashAndRestart) => {
                count("host crash and restart".into());
                rekon.crash_leader(plan.topology).await;
            }
            Some(Disruption::Failover) => {
                count("leader crash and failover".into());
                rekon.crash_leader(plan.topology).await;
            }
            Some(Disruption::BadModule(behaviour)) => {
                count(format!("bad module swapped in ({behaviour:?})"));
                pvc_slot.swap(guests.bad_pvc(behaviour));
                bad_module = true;
            }
            Some(Disruption::GoodModule) => {
                pvc_slot.swap(guests.good_pvc());
                bad_module = false;
            }
            None => {}
        }
        tokio::time::sleep(step.pause).await;
        oracle.check().await;
    }

    // The faults stop; rekon must now converge.
    cluster.stop_faults();
    if bad_module {
        pvc_slot.swap(guests.good_pvc());
    }
    let deadline = Instant::now() + CONVERGENCE;
    let mut pending = loop {
        let pending = match oracle.check().await {
            Some(objects) => unconverged(&objects),
            None => vec!["the server's objects could not be read".to_string()],
        };
        if pending.is_empty() || Instant::now() > deadline {
            break pending;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    if pending.is_empty() {
        for replica in &rekon.replicas {
            if let Err(err) = replica.wait_idle(Duration::from_secs(10)).await {
                pending.push(err.to_string());
            }
        }
    }
    outcome.not_converged.extend(pending);
    oracle.check().await;
    sampler.abort();

    let failed_decisions = rekon
        .journal
        .entries()
        .iter()
        .filter(|e| matches!(e, Entry::Decision { outcome, .. } if outcome.get("error").is_some()))
        .count() as u64;
    if failed_decisions > 0 {
        *outcome
            .disruptions
            .entry("failed guest decisions".into())
            .or_default() += failed_decisions;
    }
    let journal = rekon.journal.clone();
    rekon.stop().await;
    outcome.faults = cluster.faults_injected();
    outcome.violations = oracle.checker.lock().await.violations();
    if outcome.failed() {
        let objects = oracle.objects.snapshot().await.unwrap_or_default();
        outcome.evidence = keep_evidence(seed, &journal, &objects);
    }
    cluster.shutdown().await;
    outcome.elapsed = started.elapsed();
    outcome
}

/// Writes the journal (JSON lines) and the final objects of a failed run to
/// the temp directory, for diagnosis.
fn keep_evidence(
    seed: u64,
    journal: &Journal,
    objects: &[serde_json::Value],
) -> Option<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("rekon-campaign-{seed}"));
    std::fs::create_dir_all(&dir).ok()?;
    let lines: Vec<String> = journal
        .entries()
        .iter()
        .filter_map(|e| serde_json::to_string(e).ok())
        .collect();
    std::fs::write(dir.join("journal.jsonl"), lines.join("\n")).ok()?;
    std::fs::write(
        dir.join("objects.json"),
        serde_json::to_string_pretty(objects).ok()?,
    )
    .ok()?;
    Some(dir)
}
