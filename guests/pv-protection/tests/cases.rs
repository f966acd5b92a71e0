//! Every case file in `cases/` holds against the native logic, so the files are
//! known-good before `rekon test` runs them against the wasm component.

use std::path::Path;

use rekon_guest::cases::{check, read_dir, run_all};
use rekon_guest::controller::{Decision, Description, Input};
use rekon_guest_pv_protection::logic;

#[test]
fn every_case_holds() {
    let files = read_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("cases"));
    let counts = run_all(&files, |case| match case.decision.as_str() {
        "decide" => check::<Input, Decision>(case, logic::decide),
        "describe" => check::<Option<()>, Description>(case, |_| logic::describe()),
        other => Err(format!("unknown decision {other:?}")),
    });
    let decided = counts.get("decide").copied().unwrap_or(0);
    assert!(decided >= 8, "only {decided} decide cases");
    assert_eq!(counts.get("describe").copied(), Some(1));
}
