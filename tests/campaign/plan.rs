//! A seed decides everything a run does: the workload, the API faults, the
//! topology and the disruptions. Same seed, same plan (ChaCha8).

use std::time::Duration;

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rekon_apiserver::{FaultConfig, RequestFault, Verb, WatchFault};

pub const NS: &str = "campaign";
pub const NODE: &str = "node-a";
pub const TEMPLATE: &str = "gpu";
/// Pod claim names a pod may take from the template.
const POD_CLAIMS: [&str; 2] = ["gpu", "fpga"];
const MAX_PVCS: usize = 6;
const MAX_PODS: usize = 6;

/// One change the workload makes through the API.
#[derive(Debug, Clone)]
pub enum Op {
    CreatePvc(String),
    DeletePvc(String),
    CreatePod(PodPlan),
    /// The pod's containers exit: phase Succeeded.
    FinishPod(String),
    DeletePod(String),
}

#[derive(Debug, Clone)]
pub struct PodPlan {
    pub name: String,
    /// Scheduled to [`NODE`] from the start (a pre-scheduled pod).
    pub scheduled: bool,
    pub pvcs: Vec<String>,
    /// Pod claims generated from [`TEMPLATE`].
    pub template_claims: Vec<String>,
    /// Allocated claims shared by name.
    pub shared_claims: Vec<String>,
}

/// Something that happens to rekon itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disruption {
    /// The single host's process dies mid-reconcile and starts again.
    CrashAndRestart,
    /// The leader's process dies; the standby takes over; the dead one comes back as standby.
    Failover,
    /// A misbehaving pvc-protection module is swapped in: every decision fails.
    BadModule(Misbehaviour),
    /// The reference module is swapped back in.
    GoodModule,
}

/// How the bad module fails: the misbehaving guest's behaviours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Misbehaviour {
    Loop,
    Bomb,
    Panic,
}

impl Misbehaviour {
    /// The PVC name that selects the behaviour in the misbehaving guest.
    pub fn pvc_name(self) -> &'static str {
        match self {
            Misbehaviour::Loop => "loop",
            Misbehaviour::Bomb => "bomb",
            Misbehaviour::Panic => "panic",
        }
    }
}

/// What a campaign exercises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Everything, drawn per seed: faults, topology, crashes, failovers, bad modules.
    Mixed,
    /// Kill the leader: two elected replicas; the leader dies without any cleanup (its
    /// runtime torn down mid-request, the lease not released) and a new process starts,
    /// once or twice mid-workload; API faults as drawn per seed.
    KillLeader,
    /// Kill the leader on a real kube-apiserver v1.20.2: no injected faults, no DRA (v1.20
    /// has no resource.k8s.io), PVCs created with the finalizer the admission plugin would
    /// add, and pods deleted with grace 0 (no kubelet finishes a graceful delete).
    KillLeaderReal,
}

impl Mode {
    /// The API server is a real one (`REKON_REAL_KUBECONFIG`).
    pub fn real(self) -> bool {
        self == Mode::KillLeaderReal
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// One host.
    Single,
    /// Two replicas under leader election.
    Elected,
}

#[derive(Debug, Clone)]
pub struct Step {
    pub op: Op,
    /// Applied right after the op, while its reconciles are in flight.
    pub disruption: Option<Disruption>,
    /// Pause before the next step.
    pub pause: Duration,
}

#[derive(Debug, Clone)]
pub struct Plan {
    pub seed: u64,
    pub mode: Mode,
    pub topology: Topology,
    pub shared_claims: Vec<String>,
    pub steps: Vec<Step>,
    pub faults: FaultConfig,
}

impl Plan {
    #[cfg(test)]
    pub fn for_seed(seed: u64) -> Self {
        Self::for_mode(seed, Mode::Mixed)
    }

    pub fn for_mode(seed: u64, mode: Mode) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let topology = if rng.random_bool(0.3) || mode != Mode::Mixed {
            Topology::Elected
        } else {
            Topology::Single
        };
        let shared_claims = (0..rng.random_range(0..=2))
            .map(|i| format!("shared-{i}"))
            .collect();
        let mut plan = Plan {
            seed,
            mode,
            topology,
            shared_claims,
            steps: Vec::new(),
            faults: faults(&mut rng, seed),
        };
        plan.steps = workload(&mut rng, &plan.shared_claims);
        match mode {
            Mode::Mixed => plan.disrupt(&mut rng),
            Mode::KillLeader => plan.kill_leader(&mut rng),
            Mode::KillLeaderReal => {
                plan.kill_leader(&mut rng);
                plan.without_dra_and_faults();
            }
        }
        plan
    }

    /// The leader is killed after one or two distinct steps (never the first).
    fn kill_leader(&mut self, rng: &mut ChaCha8Rng) {
        let kills = rng.random_range(1..=2);
        let steps: Vec<usize> = (1..self.steps.len()).collect();
        for &i in steps.choose_multiple(rng, kills) {
            self.steps[i].disruption = Some(Disruption::Failover);
        }
    }

    /// For a v1.20 server: no claims of any kind, no injected faults.
    fn without_dra_and_faults(&mut self) {
        self.shared_claims.clear();
        self.faults = FaultConfig::new().seed(self.seed);
        for step in &mut self.steps {
            if let Op::CreatePod(pod) = &mut step.op {
                pod.template_claims.clear();
                pod.shared_claims.clear();
            }
        }
    }

    /// The PVCs the workload creates.
    pub fn pvc_names(&self) -> impl Iterator<Item = &str> {
        self.steps.iter().filter_map(|s| match &s.op {
            Op::CreatePvc(name) => Some(name.as_str()),
            _ => None,
        })
    }

    fn disrupt(&mut self, rng: &mut ChaCha8Rng) {
        let n = self.steps.len();
        let at = |rng: &mut ChaCha8Rng| rng.random_range(1..n);
        if rng.random_bool(0.5) {
            let disruption = match self.topology {
                Topology::Single => Disruption::CrashAndRestart,
                Topology::Elected => Disruption::Failover,
            };
            let i = at(rng);
            self.steps[i].disruption.get_or_insert(disruption);
        }
        if rng.random_bool(0.35) {
            let behaviour = *[Misbehaviour::Loop, Misbehaviour::Bomb, Misbehaviour::Panic]
                .choose(rng)
                .expect("non-empty");
            let bad = rng.random_range(0..n - 1);
            let good = rng.random_range(bad + 1..n);
            if self.steps[bad].disruption.is_none() && self.steps[good].disruption.is_none() {
                self.steps[bad].disruption = Some(Disruption::BadModule(behaviour));
                self.steps[good].disruption = Some(Disruption::GoodModule);
            }
        }
    }

    /// One line per step, for a failing seed's report.
    pub fn describe(&self) -> String {
        let mut text = format!(
            "seed {} ({:?}): {:?}, shared claims {:?}\nfaults: {}\n",
            self.seed,
            self.mode,
            self.topology,
            self.shared_claims,
            serde_json::to_string(&self.faults).unwrap_or_default()
        );
        for (i, step) in self.steps.iter().enumerate() {
            text += &format!("  {i:2}: {:?}", step.op);
            if let Some(d) = step.disruption {
                text += &format!("  + {d:?}");
            }
            text += "\n";
        }
        text
    }
}

fn workload(rng: &mut ChaCha8Rng, shared: &[String]) -> Vec<Step> {
    let mut live_pvcs: Vec<String> = Vec::new();
    let mut running: Vec<String> = Vec::new();
    let mut existing: Vec<String> = Vec::new();
    let (mut pvcs, mut pods) = (0, 0);
    let mut steps = Vec::new();
    let count = rng.random_range(10..=18);
    while steps.len() < count {
        let op = match rng.random_range(0..10) {
            0..=2 if pvcs < MAX_PVCS => {
                let name = format!("pvc-{pvcs}");
                pvcs += 1;
                live_pvcs.push(name.clone());
                Op::CreatePvc(name)
            }
            3..=5 if pods < MAX_PODS => {
                let name = format!("pod-{pods}");
                pods += 1;
                let pod = PodPlan {
                    name: name.clone(),
                    scheduled: rng.random_bool(0.8),
                    pvcs: pick(rng, &live_pvcs, 2),
                    template_claims: pick(rng, &POD_CLAIMS.map(String::from), 2),
                    shared_claims: pick(rng, shared, 1),
                };
                running.push(name.clone());
                existing.push(name);
                Op::CreatePod(pod)
            }
            6 if !running.is_empty() => {
                let name = running.swap_remove(rng.random_range(0..running.len()));
                Op::FinishPod(name)
            }
            7 if !existing.is_empty() => {
                let name = existing.swap_remove(rng.random_range(0..existing.len()));
                running.retain(|p| *p != name);
                Op::DeletePod(name)
            }
            8 | 9 if !live_pvcs.is_empty() => {
                Op::DeletePvc(live_pvcs.swap_remove(rng.random_range(0..live_pvcs.len())))
            }
            _ => continue,
        };
        steps.push(Step {
            op,
            disruption: None,
            pause: Duration::from_millis(rng.random_range(0..120)),
        });
    }
    steps
}

/// Up to `max` distinct items of `from`.
fn pick(rng: &mut ChaCha8Rng, from: &[String], max: usize) -> Vec<String> {
    let n = rng.random_range(0..=max.min(from.len()));
    from.choose_multiple(rng, n).cloned().collect()
}

const WATCHED: [&str; 4] = [
    "pods",
    "persistentvolumeclaims",
    "resourceclaims",
    "resourceclaimtemplates",
];

fn faults(rng: &mut ChaCha8Rng, seed: u64) -> FaultConfig {
    let mut faults = FaultConfig::new().seed(seed);
    if rng.random_bool(0.7) {
        faults = faults.request(
            RequestFault::new()
                .verbs([Verb::Create, Verb::Update, Verb::Patch, Verb::Delete])
                .conflict(rng.random_range(0.0..0.25))
                .server_error(rng.random_range(0.0..0.1))
                .too_many_requests(rng.random_range(0.0..0.1), 1)
                .latency(Duration::from_millis(rng.random_range(0..20))),
        );
    }
    if rng.random_bool(0.4) {
        faults = faults.request(
            RequestFault::new()
                .verbs([Verb::Create, Verb::Patch, Verb::Delete])
                .lost_response(rng.random_range(0.05..0.25)),
        );
    }
    if rng.random_bool(0.3) {
        faults = faults.request(
            RequestFault::new()
                .verbs([Verb::Get, Verb::List])
                .server_error(rng.random_range(0.0..0.1)),
        );
    }
    if rng.random_bool(0.5) {
        let count = rng.random_range(1..=WATCHED.len());
        let resources: Vec<&str> = WATCHED.choose_multiple(rng, count).copied().collect();
        let mut watch = WatchFault::new()
            .resources(resources.iter().flat_map(|r| qualified(r)))
            .drop_events(rng.random_range(0.0..0.15))
            .delay(Duration::from_millis(rng.random_range(0..400)));
        if rng.random_bool(0.5) {
            watch = watch.close_after_events(rng.random_range(5..40));
        }
        faults = faults.watch(watch);
    }
    if rng.random_bool(0.3) {
        faults = faults
            .compact_every(Duration::from_millis(rng.random_range(300..1500)))
            .compact_before_watch(rng.random_range(0.0..0.3));
    }
    faults
}

/// A resource as fault rules name it: plural, and plural.group for the DRA kinds.
fn qualified(plural: &str) -> Vec<String> {
    if plural.starts_with("resourceclaim") {
        vec![plural.to_string(), format!("{plural}.resource.k8s.io")]
    } else {
        vec![plural.to_string()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_always_makes_the_same_plan() {
        for seed in 0..20 {
            assert_eq!(
                Plan::for_seed(seed).describe(),
                Plan::for_seed(seed).describe()
            );
        }
        assert_ne!(Plan::for_seed(1).describe(), Plan::for_seed(2).describe());
    }

    #[test]
    fn kill_the_leader_plans_kill_an_elected_leader_mid_workload() {
        for seed in 0..50 {
            for mode in [Mode::KillLeader, Mode::KillLeaderReal] {
                let plan = Plan::for_mode(seed, mode);
                assert_eq!(plan.topology, Topology::Elected);
                let kills = plan
                    .steps
                    .iter()
                    .filter(|s| s.disruption == Some(Disruption::Failover))
                    .count();
                assert!((1..=2).contains(&kills), "seed {seed}: {kills} kills");
                assert!(plan.steps[0].disruption.is_none());
                assert!(
                    plan.steps
                        .iter()
                        .all(|s| matches!(s.disruption, None | Some(Disruption::Failover)))
                );
            }
            let real = Plan::for_mode(seed, Mode::KillLeaderReal);
            assert_eq!(real.faults, FaultConfig::new().seed(seed));
            assert!(real.shared_claims.is_empty());
            assert!(real.steps.iter().all(|s| match &s.op {
                Op::CreatePod(p) => p.template_claims.is_empty() && p.shared_claims.is_empty(),
                _ => true,
            }));
        }
    }
}
