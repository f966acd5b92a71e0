//! `rekon test` and `rekon eval` as users run them: the built binary on the
//! built guests (that every guest's shipped cases pass is `tests/shipped_guests.rs`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rekon_runtime::testing::built_guest;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rekon(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rekon"))
        .args(args)
        .output()
        .expect("run rekon")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

const UNUSED_DELETING_PVC: &str = r#"
pvc:
  meta:
    namespace: default
    name: data
    uid: uid-data
    resource-version: "7"
    deletion-timestamp: "2026-01-01T00:00:00Z"
    finalizers: [kubernetes.io/pvc-protection]
cached-pods: []
live-pods: []
"#;

#[test]
fn failing_case_shows_a_diff_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let cases = dir.path().join("wrong.yaml");
    let indented: String = UNUSED_DELETING_PVC
        .lines()
        .map(|l| format!("      {l}\n"))
        .collect();
    std::fs::write(
        &cases,
        format!(
            "cases:\n  - name: expects the wrong thing\n    decision: decide\n    input:\n{indented}    expect: need-live-pods\n"
        ),
    )
    .unwrap();
    let guest = built_guest("rekon_guest_pvc_protection");
    let out = rekon(&["test", "--guest", path_str(&guest), path_str(&cases)]);
    let stdout = text(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "FAIL {}: expects the wrong thing",
            cases.display()
        )),
        "{stdout}"
    );
    assert!(stdout.contains("- \"need-live-pods\""), "{stdout}");
    assert!(stdout.contains("+   \"actions\": ["), "{stdout}");
    assert_eq!(
        stdout.lines().last(),
        Some("0 passed, 1 failed"),
        "{stdout}"
    );
}

/// `rekon eval --decision decide` of `guest` on `input` (YAML).
fn eval_decide(guest: &Path, input: &str) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("input.yaml");
    std::fs::write(&file, input).unwrap();
    rekon(&[
        "eval",
        "--guest",
        path_str(guest),
        "--decision",
        "decide",
        "--input",
        path_str(&file),
    ])
}

#[test]
fn eval_prints_the_decision_as_json() {
    let out = eval_decide(
        &built_guest("rekon_guest_pvc_protection"),
        UNUSED_DELETING_PVC,
    );
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let decision: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        decision,
        serde_json::json!({"actions": [{"remove-finalizer": {
            "name": "data", "uid": "uid-data", "resource-version": "7"
        }}]})
    );
    assert!(
        text(&out.stderr).contains("exports rekon:reconcile@0.2.0"),
        "eval names the contract version: {}",
        text(&out.stderr)
    );
}

/// A module built for the previous contract decides the same and says so.
#[test]
fn eval_runs_a_0_1_0_module_and_names_its_contract() {
    let guest = rekon_runtime::testing::contract_fixture("0.1.0", "rekon_guest_pvc_protection");
    let out = eval_decide(&guest, UNUSED_DELETING_PVC);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("exports rekon:reconcile@0.1.0"),
        "{}",
        text(&out.stderr)
    );
    let decision: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        decision,
        serde_json::json!({"actions": [{"remove-finalizer": {
            "name": "data", "uid": "uid-data", "resource-version": "7"
        }}]})
    );
}

/// A panicking guest is a trap reported with its message, not a crashed
/// rekon (exit 101): `rekon eval` runs decisions inside its tokio runtime.
#[test]
fn eval_reports_a_guest_panic_as_a_trap_with_exit_code_2() {
    let out = eval_decide(
        &built_guest("rekon_guest_misbehaving"),
        "pvc:\n  meta:\n    name: panic\n",
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(
        stderr.contains("decision `decide` failed: guest rekon_guest_misbehaving@sha256:")
            && stderr.contains("wasm trap")
            && stderr.contains("misbehaving guest: panic requested by PVC \"panic\""),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn test_reports_a_guest_panic_as_a_failed_case() {
    let dir = tempfile::tempdir().unwrap();
    let cases = dir.path().join("panic.yaml");
    std::fs::write(
        &cases,
        "cases:\n  - name: panics\n    decision: decide\n    \
         input: {pvc: {meta: {name: panic}}}\n    expect: {actions: []}\n",
    )
    .unwrap();
    let guest = built_guest("rekon_guest_misbehaving");
    let out = rekon(&["test", "--guest", path_str(&guest), path_str(&cases)]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "stdout: {stdout}");
    assert!(
        stdout.contains("FAIL") && stdout.contains("panic requested by PVC \"panic\""),
        "{stdout}"
    );
    assert_eq!(
        stdout.lines().last(),
        Some("0 passed, 1 failed"),
        "{stdout}"
    );
}

#[test]
fn core_module_is_rejected_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    // The smallest valid core module: preamble, version 1, layer 0.
    let module = dir.path().join("core.wasm");
    std::fs::write(&module, b"\0asm\x01\0\0\0").unwrap();
    let cases = workspace().join("guests/pvc-protection/cases");
    let out = rekon(&["test", "--guest", path_str(&module), path_str(&cases)]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{}: is a core WebAssembly module, not a component; build for wasm32-wasip2",
            module.display()
        )),
        "{stderr}"
    );
}

#[test]
fn wrong_world_is_rejected_listing_exports() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("input.json");
    std::fs::write(&input, "{}").unwrap();
    let guest = built_guest("rekon_guest_pvc_protection");
    let out = rekon(&[
        "eval",
        "--guest",
        path_str(&guest),
        "--decision",
        "decide-claim",
        "--input",
        path_str(&input),
    ]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{}: does not export any of rekon:reconcile/claim-decider@0.2.0, \
             rekon:reconcile/claim-decider@0.1.0; it exports rekon:reconcile/pvc-decider@0.2.0",
            guest.display()
        )),
        "{stderr}"
    );

    // An empty component exports no world at all.
    let empty = dir.path().join("empty.wasm");
    std::fs::write(&empty, b"\0asm\x0d\0\x01\0").unwrap();
    let out = rekon(&[
        "eval",
        "--guest",
        path_str(&empty),
        "--decision",
        "decide",
        "--input",
        path_str(&input),
    ]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("it exports nothing"), "{stderr}");
}

#[test]
fn bad_input_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("input.json");
    std::fs::write(&input, r#"{"pvc": {"meta": {"name": 3}}}"#).unwrap();
    let guest = built_guest("rekon_guest_pvc_protection");
    let out = rekon(&[
        "eval",
        "--guest",
        path_str(&guest),
        "--decision",
        "decide",
        "--input",
        path_str(&input),
    ]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("{}: not a valid `decide` input", input.display())),
        "{stderr}"
    );
}
