//! `rekon test`: table-driven case files against a guest.
//!
//! ```yaml
//! cases:
//!   - name: some case
//!     decision: decide            # a function of the guest's world (decide, decide-pod, ...)
//!     input: {...}                # the model's serde form
//!     expect: {...}               # the decision, compared structurally
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use rekon_runtime::{GuestPre, JsonDecisionError};
use serde::Deserialize;

use crate::guest_io::{self, GuestArgs};
use crate::line_diff::line_diff;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    guest: GuestArgs,
    /// Case files, or directories searched recursively for *.yaml / *.yml.
    #[arg(required = true)]
    cases: Vec<PathBuf>,
}

/// A case file (`rekon diff --cases` reads them too).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseFile {
    pub cases: Vec<Case>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub name: String,
    pub decision: String,
    // Read as JSON values: serde_yaml's own `Value` only knows enums written as
    // YAML tags, while case files (like the model's JSON) write `{variant: ...}`.
    pub input: serde_json::Value,
    pub expect: serde_json::Value,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let guest = args.guest.load(None)?;
    let files = case_files(&args.cases)?;
    let mut tally = Tally::default();
    for file in &files {
        run_file(&guest, file, &mut tally);
    }
    println!("{} passed, {} failed", tally.passed, tally.failed);
    Ok(if tally.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[derive(Default)]
struct Tally {
    passed: usize,
    failed: usize,
}

/// Runs every case of one file; a file that cannot be read counts as one failure.
fn run_file(guest: &GuestPre, file: &Path, tally: &mut Tally) {
    let shown = file.display();
    let cases: CaseFile = match guest_io::read_file(file) {
        Ok(cases) => cases,
        Err(err) => {
            println!("FAIL {shown}: {err:#}");
            tally.failed += 1;
            return;
        }
    };
    for case in cases.cases {
        match run_case(guest, &case) {
            Ok(()) => {
                println!("ok   {shown}: {}", case.name);
                tally.passed += 1;
            }
            Err(why) => {
                println!("FAIL {shown}: {}", case.name);
                for line in why.lines() {
                    println!("    {line}");
                }
                tally.failed += 1;
            }
        }
    }
}

/// `Err` carries the explanation to print under the FAIL line.
fn run_case(guest: &GuestPre, case: &Case) -> Result<(), String> {
    let (world, decision) = (guest.world(), case.decision.as_str());
    if !world.functions().contains(&decision) {
        return Err(format!(
            "unknown decision `{decision}`: a {world} guest exports {}",
            world.functions().join(", ")
        ));
    }
    let expected = world
        .decision_json(decision, case.expect.clone())
        .map_err(|e| format!("expect is not a valid `{decision}` result: {e}"))?;
    let actual = match guest_io::decide(guest, decision, case.input.clone()) {
        Ok(actual) => actual,
        Err(JsonDecisionError::Input { source, .. }) => {
            return Err(format!("input is not a valid `{decision}` input: {source}"));
        }
        Err(JsonDecisionError::Decision(err)) => return Err(err.to_string()),
    };
    if actual == expected {
        return Ok(());
    }
    let diff = line_diff(
        &guest_io::to_pretty_json(&expected),
        &guest_io::to_pretty_json(&actual),
    );
    Err(format!("decision differs (- expected, + actual):\n{diff}"))
}

/// The case files named by `paths`, directories expanded recursively, sorted.
pub fn case_files(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            collect_yaml(path, &mut files)?;
        } else if path.is_file() {
            files.push(path.clone());
        } else {
            anyhow::bail!("{}: no such case file or directory", path.display());
        }
    }
    anyhow::ensure!(
        !files.is_empty(),
        "no case files (*.yaml, *.yml) in {}",
        paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(files)
}

fn collect_yaml(dir: &Path, files: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let mut entries = std::fs::read_dir(dir)
        .with_context(|| format!("{}: cannot list", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("{}: cannot list", dir.display()))?;
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect_yaml(&path, files)?;
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml")
        ) {
            files.push(path);
        }
    }
    Ok(())
}
