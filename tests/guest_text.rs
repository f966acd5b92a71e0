//! A guest flooding text: what it returns reaches the log, Events and errors
//! only within the byte budget (docs/src/security.md, "Byte budget").
//!
//! The log is captured from a process-wide subscriber at `info` (rekon's
//! default), so the tests of this file run one after another.

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

use rekon_contract::{
    EphemeralVolumeWorld, ResourceClaimDecision, ResourceClaimInput, ResourceClaimWorld,
};
use rekon_controllers::budget::EVENT_NOTE_BYTES;
use rekon_controllers::decider::{DecideError, Decider, GuestInfo, Slot};
use rekon_controllers::observe::DecisionFailure;
use rekon_guest::ephemeral::{ClaimConflict, VolumeAction, VolumeDecision, VolumeInput};
use rekon_guest::model::{ClaimDecision, NewClaim, PodAction, PodDecision};
use rekon_simulate::{ClusterOptions, Deciders, Report, simulate};
use rekon_tests::sim::*;
use serde_json::{Value, json};

/// Log bytes one reconcile may add, whatever its guest returned: a few lines,
/// each carrying at most a cut decision and a cut error.
const LOG_BYTES_PER_DECISION: usize = 8 * 1024;

fn flood(bytes: usize) -> String {
    // Quotes and backslashes: escaping in a log line doubles them.
    "\"\\".repeat(bytes / 2)
}

fn guest(name: &str) -> GuestInfo {
    GuestInfo {
        name: name.into(),
        digest: "native".into(),
    }
}

/// Pod keys: a create-claim whose every string is 32 KiB, and a 64 KiB error
/// (validation refuses it). Claim keys: nothing to do.
struct FloodingClaims;

impl Decider<ResourceClaimWorld> for FloodingClaims {
    fn info(&self) -> GuestInfo {
        guest("flooding-claims")
    }

    fn decide(
        &self,
        _key: &str,
        input: ResourceClaimInput,
    ) -> Result<ResourceClaimDecision, DecideError> {
        let text = flood(32 * 1024);
        Ok(match input {
            ResourceClaimInput::Pod(_) => ResourceClaimDecision::Pod(PodDecision {
                actions: vec![PodAction::CreateClaim(NewClaim {
                    pod_claim_name: text.clone(),
                    generate_name: text.clone(),
                    template_name: text.clone(),
                    labels: vec![(text.clone(), text.clone())],
                    annotations: vec![(text.clone(), text.clone())],
                    owner_references: vec![],
                    claim_spec_json: text,
                })],
                error: Some(flood(64 * 1024)),
            }),
            ResourceClaimInput::Claim(_) => {
                ResourceClaimDecision::Claim(ClaimDecision::Actions(vec![]))
            }
        })
    }
}

/// Every decision fails with a 64 KiB error.
struct FailingLoudly;

impl Decider<ResourceClaimWorld> for FailingLoudly {
    fn info(&self) -> GuestInfo {
        guest("failing-loudly")
    }

    fn decide(
        &self,
        _key: &str,
        _input: ResourceClaimInput,
    ) -> Result<ResourceClaimDecision, DecideError> {
        Err(DecideError {
            guest: "failing-loudly".into(),
            message: flood(64 * 1024),
            failure: DecisionFailure::Trap,
        })
    }
}

/// Reports the pod's PVC as a conflict with a 100 KiB message.
struct LoudConflict;

impl Decider<EphemeralVolumeWorld> for LoudConflict {
    fn info(&self) -> GuestInfo {
        guest("loud-conflict")
    }

    fn decide(&self, _key: &str, input: VolumeInput) -> Result<VolumeDecision, DecideError> {
        let volume = &input.volumes[0];
        Ok(VolumeDecision {
            actions: vec![VolumeAction::Conflict(ClaimConflict {
                volume: volume.name.clone(),
                claim_name: format!("{}-{}", input.pod.name, volume.name),
                message: flood(100 * 1024),
            })],
        })
    }
}

/// Everything logged at `info` and above since the process started.
fn log() -> &'static Arc<Mutex<Vec<u8>>> {
    static LOG: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOG.get_or_init(|| {
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = log.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .with_ansi(false)
            .with_writer(move || Sink(sink.clone()))
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("one subscriber per process");
        log
    })
}

struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Serializes the tests: each measures the log growth of its own run.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Runs `state` with `deciders`; returns the report and the log it added.
async fn run_logged(state: Vec<Value>, deciders: Deciders, controllers: &str) -> (Report, String) {
    let log = log();
    let _one = ONE_AT_A_TIME.lock().await;
    let before = log.lock().unwrap().len();
    let options = ClusterOptions {
        controllers: controllers.parse().unwrap(),
        ..ClusterOptions::default()
    };
    let journal = Arc::new(rekon_controllers::journal::Journal::new());
    let report = simulate(state, vec![], options, quick(), deciders, journal)
        .await
        .expect("the simulation runs");
    let added = String::from_utf8_lossy(&log.lock().unwrap()[before..]).into_owned();
    (report, added)
}

/// The log grew by at most the budget per decision, and no line is longer
/// than the budget of one decision.
#[track_caller]
fn assert_bounded(log: &str, decisions: usize) {
    assert!(decisions >= 1, "the guest decided at least once");
    let longest = log.lines().map(str::len).max().unwrap_or(0);
    assert!(
        longest <= LOG_BYTES_PER_DECISION,
        "a {longest}-byte log line: {}",
        &log[..log.floor_char_boundary(512)]
    );
    assert!(
        log.len() <= decisions * LOG_BYTES_PER_DECISION,
        "{} log bytes for {decisions} decisions",
        log.len()
    );
}

fn claim_deciders(decider: Arc<dyn Decider<ResourceClaimWorld>>) -> Deciders {
    Deciders::new().with(Arc::new(Slot::<ResourceClaimWorld>::new(decider)))
}

fn claim_state() -> Vec<Value> {
    vec![
        namespace("ns"),
        template("ns", "gpu"),
        pod_with_template_claims("ns", "web", "", &[("acme", "gpu")]),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_decision_full_of_long_strings_logs_a_bounded_amount() {
    let (report, log) = run_logged(
        claim_state(),
        claim_deciders(Arc::new(FloodingClaims)),
        "resource-claim",
    )
    .await;
    assert!(claims(&report.objects).is_empty(), "validation refused it");
    let decided = decisions(&report.journal, "pod:ns/web").len();
    assert!(log.contains("reconciled"), "{log}");
    assert_bounded(&log, decided);
    for note in event_notes(&report.objects, "Pod", "ns", "web") {
        assert!(note.len() <= EVENT_NOTE_BYTES, "{} bytes", note.len());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_guest_error_of_64_kib_logs_a_bounded_amount() {
    let (report, log) = run_logged(
        claim_state(),
        claim_deciders(Arc::new(FailingLoudly)),
        "resource-claim",
    )
    .await;
    let decided = decisions(&report.journal, "pod:ns/web").len();
    assert!(log.contains("reconcile failed"), "{log}");
    assert_bounded(&log, decided);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_ephemeral_conflict_uses_upstreams_wording_and_logs_a_bounded_amount() {
    let web = pod("ns", "web", "", json!([ephemeral_volume("scratch")]));
    let other = pod("ns", "other", "", json!([]));
    let mut foreign = pvc("ns", "web-scratch");
    controlled_by(&mut foreign, &other);
    let deciders = Deciders::new().with(Arc::new(Slot::<EphemeralVolumeWorld>::new(Arc::new(
        LoudConflict,
    ))));
    let (report, log) = run_logged(
        vec![namespace("ns"), web, other, foreign],
        deciders,
        "ephemeral-volume",
    )
    .await;
    let decided = decisions(&report.journal, "ns/web").len();
    assert_bounded(&log, decided);
    let notes = event_notes(&report.objects, "Pod", "ns", "web");
    assert!(
        notes.iter().any(|n| n
            == "ephemeral volume scratch: PVC ns/web-scratch was not created for pod ns/web (pod is not owner)"),
        "{notes:?}"
    );
}
