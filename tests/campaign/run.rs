//! One seed, start to end: cluster, rekon, workload with faults and
//! disruptions, a check after every step (and every 20 ms), then the faults
//! stop and the run must converge.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rekon_apiserver::KubeletMode;
use rekon_controllers::journal::{Entry, Journal};
use rekon_simulate::{ClusterOptions, Deciders, EmbeddedCluster};
use rekon_tests::sim::{claim, namespace, template};

use crate::guests::{Guests, share};
use crate::invariants::{Checker, unconverged};
use crate::plan::{Disruption, NS, Plan, TEMPLATE, Topology};
use crate::replicas::Replica;
use crate::workload;

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

/// The checker fed from the server's store and the journal.
#[derive(Clone)]
struct Oracle {
    checker: Arc<Mutex<Checker>>,
    store: rekon_apiserver::Store,
    journal: Arc<Journal>,
}

impl Oracle {
    fn check(&self) -> Vec<serde_json::Value> {
        // Lock first: the sampler and the steps both check, and an older snapshot
        // checked after a newer one would show a claim created in between as deleted.
        let mut checker = self.checker.lock().unwrap();
        let objects = self.store.snapshot();
        let entries = self.journal.entries();
        checker.objects(&objects);
        checker.journal(&entries);
        objects
    }
}

/// The replicas of rekon in a run and what happens to them.
struct Rekon {
    kubeconfig: String,
    deciders: Deciders,
    journal: Arc<Journal>,
    replicas: Vec<Replica>,
    started: usize,
}

impl Rekon {
    async fn start(topology: Topology, kubeconfig: String, deciders: Deciders) -> Self {
        let mut rekon = Self {
            kubeconfig,
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

pub async fn run_seed(seed: u64, guests: &Guests) -> Outcome {
    let started = Instant::now();
    let plan = Plan::for_seed(seed);
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
    let cluster = EmbeddedCluster::start(&ClusterOptions {
        seed,
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

    let deciders = guests.deciders();
    let pvc_slot = deciders
        .get::<rekon_contract::PvcProtectionWorld>()
        .expect("a pvc-protection slot");
    let mut rekon = Rekon::start(plan.topology, cluster.server.kubeconfig_yaml(), deciders).await;
    let oracle = Oracle {
        checker: Arc::new(Mutex::new(Checker::new(plan.pvc_names()))),
        store: cluster.server.store(),
        journal: rekon.journal.clone(),
    };
    let sampler = {
        let oracle = oracle.clone();
        tokio::spawn(async move {
            loop {
                oracle.check();
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let mut count = |what: String| *outcome.disruptions.entry(what).or_default() += 1;
    let mut bad_module = false;

    for step in &plan.steps {
        if let Err(err) = workload::apply(&cluster.client, &step.op).await {
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
        oracle.check();
    }

    // The faults stop; rekon must now converge.
    cluster.server.stop_faults();
    if bad_module {
        pvc_slot.swap(guests.good_pvc());
    }
    let deadline = Instant::now() + CONVERGENCE;
    let mut pending = loop {
        let pending = unconverged(&oracle.check());
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
    oracle.check();
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
    outcome.faults = cluster
        .server
        .faults_injected()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    outcome.violations = oracle.checker.lock().unwrap().violations();
    if outcome.failed() {
        outcome.evidence = keep_evidence(seed, &journal, &cluster.objects());
    }
    cluster.server.shutdown().await;
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
