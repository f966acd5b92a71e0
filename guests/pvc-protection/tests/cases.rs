//! Every case file in `cases/` holds against the native logic, so the files are
//! known-good before `rekon test` runs them against the wasm component.
//!
//! Each value is read twice, through serde_yaml (single-key maps as enums) and
//! through a JSON value, so the files work with either way a runner loads them.

use std::path::{Path, PathBuf};

use rekon_guest::model::{PvcDecision, PvcInput};
use rekon_guest_pvc_protection::logic;
use serde::de::DeserializeOwned;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    cases: Vec<Case>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    decision: String,
    input: serde_yaml::Value,
    expect: serde_yaml::Value,
}

fn case_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("readable cases dir").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
}

/// Parse `value` as `T` both ways; both must agree.
///
/// serde_yaml 0.9 reads enums only from `!tags` unless told to accept the
/// single-key maps (`{remove-finalizer: ...}`) that JSON uses.
fn parse<T: DeserializeOwned + PartialEq + std::fmt::Debug>(
    value: &serde_yaml::Value,
) -> Result<T, String> {
    let direct: T = serde_yaml::with::singleton_map_recursive::deserialize(value.clone())
        .map_err(|e| format!("yaml: {e}"))?;
    let json = serde_json::to_value(value).map_err(|e| format!("to json: {e}"))?;
    let via_json: T = serde_json::from_value(json).map_err(|e| format!("json: {e}"))?;
    if direct != via_json {
        return Err(format!(
            "yaml and json readings differ: {direct:?} vs {via_json:?}"
        ));
    }
    Ok(direct)
}

fn run(case: &Case) -> Result<(), String> {
    if case.decision != "decide" {
        return Err(format!("unknown decision {:?}", case.decision));
    }
    let input: PvcInput = parse(&case.input).map_err(|e| format!("input: {e}"))?;
    let expect: PvcDecision = parse(&case.expect).map_err(|e| format!("expect: {e}"))?;
    let got = logic::decide(&input);
    if got != expect {
        return Err(format!("expected {expect:?}\n      got {got:?}"));
    }
    Ok(())
}

#[test]
fn every_case_holds() {
    let mut failures = Vec::new();
    let mut names = std::collections::HashSet::new();
    let mut count = 0;
    for path in case_files() {
        let text = std::fs::read_to_string(&path).expect("readable case file");
        let file: CaseFile =
            serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for case in &file.cases {
            count += 1;
            assert!(
                names.insert(case.name.clone()),
                "duplicate case name {:?}",
                case.name
            );
            if let Err(e) = run(case) {
                failures.push(format!("{} / {}: {e}", path.display(), case.name));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing cases:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(count >= 24, "only {count} cases");
}
