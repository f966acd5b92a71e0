//! Every case file in `cases/` holds against the native logic, so the files are
//! known-good before `rekon test` runs them against the wasm component. Case
//! inputs are the host's model; the logic gets them projected, as from the host.

use std::path::Path;

use rekon_guest::cases::{check, read_dir, run_all};
use rekon_guest::model::{ClaimDecision, ClaimInput, PodDecision, PodInput};
use rekon_guest_resource_claim::logic;

#[test]
fn every_case_holds() {
    let files = read_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("cases"));
    let counts = run_all(&files, |case| match case.decision.as_str() {
        "decide-pod" => check::<PodInput, PodDecision>(case, logic::decide_pod),
        "decide-claim" => check::<ClaimInput, ClaimDecision>(case, |input| {
            logic::decide_claim(&input.clone().into())
        }),
        other => Err(format!("unknown decision {other:?}")),
    });
    let pod_cases = counts.get("decide-pod").copied().unwrap_or(0);
    let claim_cases = counts.get("decide-claim").copied().unwrap_or(0);
    assert!(pod_cases >= 24, "only {pod_cases} decide-pod cases");
    assert!(claim_cases >= 20, "only {claim_cases} decide-claim cases");
}
