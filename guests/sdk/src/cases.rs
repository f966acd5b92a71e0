//! Case files (the `rekon test` format) for guest authors' native tests: the same
//! files `rekon test` runs against the component prove the logic natively first.
//!
//! ```yaml
//! cases:
//!   - name: ...
//!     decision: decide        # decide | decide-pod | decide-claim
//!     input: {...}            # the model's serde form
//!     expect: {...}
//! ```

use std::fmt::Debug;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseFile {
    pub cases: Vec<Case>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub name: String,
    pub decision: String,
    pub input: serde_yaml::Value,
    pub expect: serde_yaml::Value,
}

/// Every `*.yaml` in `dir`, sorted, parsed; panics naming the file on bad input.
pub fn read_dir(dir: &Path) -> Vec<(PathBuf, CaseFile)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("readable cases dir").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("readable case file");
            let file =
                serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (path, file)
        })
        .collect()
}

/// Parses `value` as `T` both ways a runner may load it — serde_yaml with
/// single-key maps as enums, and through a JSON value — and requires both to agree.
pub fn parse<T: DeserializeOwned + PartialEq + Debug>(
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

/// Checks one case against `decide`.
pub fn check<I, D>(case: &Case, decide: impl Fn(&I) -> D) -> Result<(), String>
where
    I: DeserializeOwned + PartialEq + Debug,
    D: DeserializeOwned + PartialEq + Debug,
{
    let input: I = parse(&case.input).map_err(|e| format!("input: {e}"))?;
    let expect: D = parse(&case.expect).map_err(|e| format!("expect: {e}"))?;
    let got = decide(&input);
    if got != expect {
        return Err(format!("expected {expect:?}\n      got {got:?}"));
    }
    Ok(())
}

/// Runs every case of every file with `run`; returns the cases per decision name.
/// Panics listing every failure and any duplicate case name.
pub fn run_all(
    files: &[(PathBuf, CaseFile)],
    run: impl Fn(&Case) -> Result<(), String>,
) -> std::collections::BTreeMap<String, usize> {
    let mut failures = Vec::new();
    let mut names = std::collections::HashSet::new();
    let mut counts = std::collections::BTreeMap::new();
    for (path, file) in files {
        for case in &file.cases {
            assert!(
                names.insert(case.name.clone()),
                "duplicate case name {:?}",
                case.name
            );
            *counts.entry(case.decision.clone()).or_insert(0) += 1;
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
    counts
}
