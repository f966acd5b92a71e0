//! Every case file in `cases/` holds against the native logic, so the files are
//! known-good before `rekon test` runs them against the wasm component.

use std::path::Path;

use rekon_guest::cases::{check, read_dir, run_all};
use rekon_guest::ephemeral::{VolumeDecision, VolumeInput};
use rekon_guest_ephemeral_volume::logic;

#[test]
fn every_case_holds() {
    let files = read_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("cases"));
    let counts = run_all(&files, |case| match case.decision.as_str() {
        "decide" => check::<VolumeInput, VolumeDecision>(case, logic::decide),
        other => Err(format!("unknown decision {other:?}")),
    });
    let cases = counts.get("decide").copied().unwrap_or(0);
    assert!(cases >= 20, "only {cases} cases");
}
