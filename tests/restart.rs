//! The host is stopped mid-run and started again against the same API server:
//! it converges, nothing is lost, nothing is duplicated.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rekon_contract::{ResourceClaimDecision, ResourceClaimInput, ResourceClaimWorld};
use rekon_controllers::decider::{DecideError, Decider, GuestInfo, Slot};
use rekon_controllers::host::Host;
use rekon_controllers::journal::Journal;
use rekon_guest::model::PodAction;
use rekon_simulate::{ClusterOptions, EmbeddedCluster, host_config};
use rekon_tests::sim::*;
use serde_json::json;

const QUIET: Duration = Duration::from_millis(300);
const BOUND: Duration = Duration::from_secs(2);
const TIMEOUT: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread")]
async fn a_host_stopped_mid_run_converges_after_a_restart() {
    let cluster = EmbeddedCluster::start(&ClusterOptions::default())
        .await
        .unwrap();
    let mut state = vec![namespace("ns")];
    for i in 0..30 {
        state.push(deleting_pvc("ns", &format!("data-{i}")));
    }
    cluster.server.store().load_objects(state).unwrap();

    let first_journal = Arc::new(Journal::new());
    let first = Host::start(
        cluster.client.clone(),
        host_config(&wasm_deciders(), first_journal.clone()),
    );
    // Stop it as soon as it has written something, long before it is done.
    let deadline = Instant::now() + TIMEOUT;
    while first_journal.writes().iter().filter(|w| matches!(w, rekon_controllers::journal::Entry::Write { verb, .. } if verb == "patch")).count() < 1 {
        assert!(Instant::now() < deadline, "the first host never wrote");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    first.shutdown(Duration::from_secs(5)).await;
    let remaining = cluster
        .objects()
        .iter()
        .filter(|o| o["kind"] == "PersistentVolumeClaim")
        .count();
    assert!(
        remaining > 0,
        "the first host was stopped before it finished"
    );

    let second_journal = Arc::new(Journal::new());
    let second = Host::start(
        cluster.client.clone(),
        host_config(&wasm_deciders(), second_journal.clone()),
    );
    second
        .wait_idle(QUIET, BOUND, TIMEOUT)
        .await
        .expect("the restarted host converges");
    second.shutdown(Duration::from_secs(5)).await;
    let left: Vec<_> = cluster
        .objects()
        .into_iter()
        .filter(|o| o["kind"] == "PersistentVolumeClaim")
        .collect();
    assert!(
        left.is_empty(),
        "every unused deleting PVC was released: {left:?}"
    );
}

/// The reference guest, except that pod decisions never write the pod status:
/// the cluster then looks exactly as if the host died between the claim create
/// and the status write.
struct StatusWriteNeverHappens(Arc<dyn Decider<ResourceClaimWorld>>);

impl Decider<ResourceClaimWorld> for StatusWriteNeverHappens {
    fn info(&self) -> GuestInfo {
        self.0.info()
    }

    fn decide(
        &self,
        key: &str,
        input: ResourceClaimInput,
    ) -> Result<ResourceClaimDecision, DecideError> {
        let mut decision = self.0.decide(key, input)?;
        if let ResourceClaimDecision::Pod(pod) = &mut decision {
            pod.actions
                .retain(|a| !matches!(a, PodAction::SetClaimStatuses(_)));
        }
        Ok(decision)
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_claim_created_before_a_crash_is_adopted_not_duplicated() {
    let cluster = EmbeddedCluster::start(&ClusterOptions::default())
        .await
        .unwrap();
    cluster
        .server
        .store()
        .load_objects(vec![
            namespace("ns"),
            template("ns", "gpu"),
            pod_with_template_claims("ns", "web", "", &[("gpu", "gpu")]),
        ])
        .unwrap();

    let wasm = wasm_deciders();
    let claim = wasm.get::<ResourceClaimWorld>().unwrap().current();
    let crashing = wasm
        .clone()
        .with(Arc::new(Slot::<ResourceClaimWorld>::new(Arc::new(
            StatusWriteNeverHappens(claim),
        ))));
    let first_journal = Arc::new(Journal::new());
    let first = Host::start(
        cluster.client.clone(),
        host_config(&crashing, first_journal.clone()),
    );
    first
        .wait_idle(QUIET, BOUND, TIMEOUT)
        .await
        .expect("first host settles");
    first.shutdown(Duration::from_secs(5)).await;
    assert_eq!(claims(&cluster.objects()).len(), 1, "the claim was created");
    let pod = find(&cluster.objects(), "Pod", "ns", "web")
        .cloned()
        .unwrap();
    assert!(
        pod["status"]["resourceClaimStatuses"].is_null(),
        "and the pod status never written"
    );

    let second_journal = Arc::new(Journal::new());
    let second = Host::start(
        cluster.client.clone(),
        host_config(&wasm, second_journal.clone()),
    );
    second
        .wait_idle(QUIET, BOUND, TIMEOUT)
        .await
        .expect("restarted host converges");
    second.shutdown(Duration::from_secs(5)).await;

    let objects = cluster.objects();
    let all = claims(&objects);
    assert_eq!(all.len(), 1, "adopted, not duplicated");
    let name = all[0]["metadata"]["name"].clone();
    let pod = find(&objects, "Pod", "ns", "web").unwrap();
    assert_eq!(
        pod["status"]["resourceClaimStatuses"],
        json!([{"name": "gpu", "resourceClaimName": name}])
    );
    let created_again = writes(&second_journal)
        .iter()
        .any(|(verb, r, ..)| verb == "create" && r == "resourceclaims");
    assert!(!created_again, "the restarted host created nothing");
}
