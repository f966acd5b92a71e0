//! A seeded fault campaign (after Sieve and Acto): each seed picks a workload
//! (PVC lifecycles, pods with claims from templates, shared and reserved
//! claims), API faults (409/500/429, latency, lost responses, dropped, delayed
//! and closed watch streams, compaction), and disruptions of rekon itself (a
//! host crash and restart mid-reconcile, a leader failover, a misbehaving
//! module swapped in and out). The invariants are checked after every step and
//! every 20 ms; after the faults stop, everything must converge.
//!
//! `REKON_CAMPAIGN_SEEDS` (default 50) seeds from `REKON_CAMPAIGN_START`
//! (default 0), `REKON_CAMPAIGN_JOBS` (default 3) at once;
//! `REKON_CAMPAIGN_SEED` replays one seed.
//!
//! Kill the leader: two elected replicas, the leader killed with no cleanup and
//! a new process started, once or twice mid-workload. `REKON_CAMPAIGN_KILL_SEEDS`
//! (default 4) seeds on the embedded server (with the seed's API faults), and, when
//! `REKON_REAL_KUBECONFIG` names a real kube-apiserver v1.20.2, `REKON_CAMPAIGN_REAL_SEEDS`
//! (default 2) seeds there, one at a time (no injected faults, no DRA).

#[path = "campaign/guests.rs"]
mod guests;
#[path = "campaign/invariants.rs"]
mod invariants;
#[path = "campaign/plan.rs"]
mod plan;
#[path = "campaign/replicas.rs"]
mod replicas;
#[path = "campaign/run.rs"]
mod run;
#[path = "campaign/workload.rs"]
mod workload;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::guests::Guests;
use crate::plan::Mode;
use crate::run::{Outcome, REAL_KUBECONFIG_ENV, run_seed};

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number"))
    })
}

fn replay(seed: u64, test: &str) -> String {
    format!(
        "REKON_CAMPAIGN_SEED={seed} cargo test -p rekon-tests --test campaign -- --nocapture --exact {test}"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeded_fault_campaign() {
    campaign(
        Mode::Mixed,
        "REKON_CAMPAIGN_SEEDS",
        50,
        "seeded_fault_campaign",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_leader_mid_workload_keeps_the_invariants_and_converges() {
    campaign(
        Mode::KillLeader,
        "REKON_CAMPAIGN_KILL_SEEDS",
        4,
        "killing_the_leader_mid_workload_keeps_the_invariants_and_converges",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_leader_on_a_real_apiserver_keeps_the_invariants_and_converges() {
    if std::env::var_os(REAL_KUBECONFIG_ENV).is_none() {
        println!("{REAL_KUBECONFIG_ENV} is not set: no real kube-apiserver to run against");
        return;
    }
    campaign(
        Mode::KillLeaderReal,
        "REKON_CAMPAIGN_REAL_SEEDS",
        2,
        "killing_the_leader_on_a_real_apiserver_keeps_the_invariants_and_converges",
    )
    .await;
}

/// Runs the seeds of `mode` (how many: `seeds_env`, else `default_seeds`) and fails
/// naming the command that replays each failed seed.
async fn campaign(mode: Mode, seeds_env: &str, default_seeds: u64, test: &str) {
    let seeds: Vec<u64> = match env_number("REKON_CAMPAIGN_SEED") {
        Some(seed) => vec![seed],
        None => {
            let start = env_number("REKON_CAMPAIGN_START").unwrap_or(0);
            let count = env_number(seeds_env).unwrap_or(default_seeds);
            (start..start + count).collect()
        }
    };
    // On a shared real server every host watches every namespace: one seed at a time.
    let jobs = if mode.real() {
        1
    } else {
        env_number("REKON_CAMPAIGN_JOBS").unwrap_or(3).max(1) as usize
    };
    let began = Instant::now();
    let guests = Arc::new(Guests::load());
    let slots = Arc::new(Semaphore::new(jobs));
    let mut running = JoinSet::new();
    for seed in seeds.iter().copied() {
        let (guests, slots) = (guests.clone(), slots.clone());
        running.spawn(async move {
            let _slot = slots.acquire_owned().await.expect("semaphore");
            run_seed(seed, mode, &guests).await
        });
    }
    let mut outcomes: Vec<Outcome> = Vec::new();
    while let Some(outcome) = running.join_next().await {
        let outcome = outcome.expect("a seed's task panicked");
        if outcome.failed() {
            println!(
                "seed {} FAILED after {:?}\n{}violations: {:#?}\nnot converged: {:#?}\n\
                 journal and objects: {:?}\nreplay: {}\n",
                outcome.seed,
                outcome.elapsed,
                outcome.plan,
                outcome.violations,
                outcome.not_converged,
                outcome.evidence,
                replay(outcome.seed, test)
            );
        }
        outcomes.push(outcome);
    }
    outcomes.sort_by_key(|o| o.seed);
    println!("{mode:?} {}", summarize(&outcomes, began.elapsed()));
    let failed: Vec<String> = outcomes
        .iter()
        .filter(|o| o.failed())
        .map(|o| replay(o.seed, test))
        .collect();
    assert!(
        failed.is_empty(),
        "{} seeds failed; replay:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

fn summarize(outcomes: &[Outcome], elapsed: std::time::Duration) -> String {
    let mut faults: BTreeMap<&str, u64> = BTreeMap::new();
    let mut disruptions: BTreeMap<&str, u64> = BTreeMap::new();
    for o in outcomes {
        for (k, v) in &o.faults {
            *faults.entry(k).or_default() += v;
        }
        for (k, v) in &o.disruptions {
            *disruptions.entry(k).or_default() += v;
        }
    }
    let violations: usize = outcomes.iter().map(|o| o.violations.len()).sum();
    let not_converged = outcomes
        .iter()
        .filter(|o| !o.not_converged.is_empty())
        .count();
    let slowest = outcomes.iter().map(|o| o.elapsed).max().unwrap_or_default();
    let mut text = format!(
        "campaign: {} seeds in {elapsed:.1?} (slowest seed {slowest:.1?})\n\
         invariant violations: {violations}\nnon-converged runs: {not_converged}\n\
         faults injected ({} in all):\n",
        outcomes.len(),
        faults.values().sum::<u64>()
    );
    for (kind, n) in &faults {
        text += &format!("  {kind}: {n}\n");
    }
    text += "disruptions:\n";
    for (kind, n) in &disruptions {
        text += &format!("  {kind}: {n}\n");
    }
    text
}
