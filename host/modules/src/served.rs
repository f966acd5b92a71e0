//! What the controllers' slot holds: the serving decider (alone or with a
//! shadow) wrapped to count its failures since activation, trip automatic
//! rollback, and remember recent inputs for the next version's canary replay.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rekon_contract::WitWorld;
use rekon_controllers::decider::{DecideError, Decider, GuestInfo};
use rekon_controllers::observe::DecisionFailure;

use crate::config::AutoRollback;

/// The latest input of each of the most recently decided keys (per decision
/// function: a pod key and a claim key never replace each other).
pub struct RecentInputs<W: WitWorld> {
    capacity: usize,
    inputs: Mutex<VecDeque<(String, W::Input)>>,
}

impl<W: WitWorld> RecentInputs<W> {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            inputs: Mutex::new(VecDeque::with_capacity(capacity)),
        }
    }

    pub fn is_enabled(&self) -> bool {
        self.capacity > 0
    }

    pub fn record(&self, key: &str, input: W::Input) {
        let function = W::function(&input);
        let mut inputs = self.inputs.lock().unwrap();
        if let Some(at) = inputs
            .iter()
            .position(|(k, i)| k == key && W::function(i) == function)
        {
            inputs.remove(at);
        } else if inputs.len() == self.capacity {
            inputs.pop_front();
        }
        inputs.push_back((key.to_string(), input));
    }

    /// Oldest first.
    pub fn snapshot(&self) -> Vec<(String, W::Input)> {
        self.inputs.lock().unwrap().iter().cloned().collect()
    }
}

/// Failure accounting of one activation of a version.
pub struct Guard {
    decisions: AtomicU64,
    failures: AtomicU64,
    policy: Option<AutoRollback>,
    tripped: AtomicBool,
    /// Called once, from the decision that crossed the threshold.
    on_trip: Box<dyn Fn(u64, u64) + Send + Sync>,
}

impl Guard {
    pub fn new(policy: Option<AutoRollback>, on_trip: Box<dyn Fn(u64, u64) + Send + Sync>) -> Self {
        Self {
            decisions: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            policy,
            tripped: AtomicBool::new(false),
            on_trip,
        }
    }

    pub fn decisions(&self) -> u64 {
        self.decisions.load(Ordering::Relaxed)
    }

    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    fn observe<D>(&self, result: &Result<D, DecideError>) {
        let decisions = self.decisions.fetch_add(1, Ordering::Relaxed) + 1;
        // Traps, overrun deadlines and memory caps are the module's fault; a
        // full instance pool is not.
        let failed = matches!(
            result,
            Err(DecideError {
                failure: DecisionFailure::Trap
                    | DecisionFailure::Deadline
                    | DecisionFailure::Memory,
                ..
            })
        );
        let failures = if failed {
            self.failures.fetch_add(1, Ordering::Relaxed) + 1
        } else {
            self.failures()
        };
        let Some(policy) = &self.policy else { return };
        if policy.exceeded(decisions, failures) && !self.tripped.swap(true, Ordering::AcqRel) {
            (self.on_trip)(decisions, failures);
        }
    }
}

/// The published decider of one controller.
pub struct Served<W: WitWorld> {
    inner: Arc<dyn Decider<W>>,
    guard: Arc<Guard>,
    recent: Arc<RecentInputs<W>>,
}

impl<W: WitWorld> Served<W> {
    pub fn new(
        inner: Arc<dyn Decider<W>>,
        guard: Arc<Guard>,
        recent: Arc<RecentInputs<W>>,
    ) -> Self {
        Self {
            inner,
            guard,
            recent,
        }
    }
}

impl<W: WitWorld> Decider<W> for Served<W> {
    fn info(&self) -> GuestInfo {
        self.inner.info()
    }

    fn decide(&self, key: &str, input: W::Input) -> Result<W::Decision, DecideError> {
        if self.recent.is_enabled() {
            self.recent.record(key, input.clone());
        }
        let result = self.inner.decide(key, input);
        self.guard.observe(&result);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rekon_contract::PvcProtectionWorld;
    use rekon_guest::model::PvcInput;

    fn pvc(name: &str) -> PvcInput {
        let mut input = PvcInput::default();
        input.pvc.meta.name = name.into();
        input
    }

    #[test]
    fn recent_inputs_keep_the_latest_input_of_the_latest_keys() {
        let recent = RecentInputs::<PvcProtectionWorld>::new(2);
        recent.record("a", pvc("a1"));
        recent.record("b", pvc("b1"));
        recent.record("a", pvc("a2"));
        recent.record("c", pvc("c1"));
        let kept: Vec<_> = recent
            .snapshot()
            .into_iter()
            .map(|(k, i)| format!("{k}={}", i.pvc.meta.name))
            .collect();
        assert_eq!(kept, ["a=a2", "c=c1"]);
    }

    fn failure(kind: DecisionFailure) -> Result<(), DecideError> {
        Err(DecideError {
            guest: "g".into(),
            message: "m".into(),
            failure: kind,
        })
    }

    #[test]
    fn the_guard_trips_once_past_the_failure_fraction() {
        let trips = Arc::new(Mutex::new(Vec::new()));
        let seen = trips.clone();
        let guard = Guard::new(
            Some(AutoRollback {
                max_failure_fraction: 0.5,
                min_decisions: 4,
            }),
            Box::new(move |d, f| seen.lock().unwrap().push((d, f))),
        );
        guard.observe(&failure(DecisionFailure::Trap));
        guard.observe(&failure(DecisionFailure::Deadline));
        guard.observe(&failure(DecisionFailure::Other));
        assert!(
            trips.lock().unwrap().is_empty(),
            "three decisions are fewer than minDecisions"
        );
        guard.observe(&Ok(()));
        assert!(
            trips.lock().unwrap().is_empty(),
            "2 of 4 is not more than half"
        );
        guard.observe(&failure(DecisionFailure::Memory));
        guard.observe(&failure(DecisionFailure::Trap));
        assert_eq!(
            *trips.lock().unwrap(),
            [(5, 3)],
            "tripped once, at the crossing decision"
        );
        assert_eq!((guard.decisions(), guard.failures()), (6, 4));
    }
}
