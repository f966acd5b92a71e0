//! Every case file in `cases/` holds against the native logic, so the files are
//! known-good before `rekon test` runs them against the wasm component. Case
//! inputs are the host's model; the logic gets them projected, as from the host.

use std::path::Path;

use rekon_guest::cases::{check, read_dir, run_all};
use rekon_guest::model::{PvcDecision, PvcInput};
use rekon_guest_pvc_protection::logic;

#[test]
fn every_case_holds() {
    let files = read_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("cases"));
    let counts = run_all(&files, |case| match case.decision.as_str() {
        "decide" => {
            check::<PvcInput, PvcDecision>(case, |input| logic::decide(&input.clone().into()))
        }
        other => Err(format!("unknown decision {other:?}")),
    });
    let cases = counts.get("decide").copied().unwrap_or(0);
    assert!(cases >= 24, "only {cases} cases");
}
