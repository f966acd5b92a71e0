//! `rekon diff` as users run it: the built binary comparing two built guests
//! on a state file and a script, or over case inputs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rekon_runtime::testing::built_guest;

const STATE: &str = "\
apiVersion: v1
kind: Namespace
metadata: {name: ns}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {namespace: ns, name: logs, finalizers: [kubernetes.io/pvc-protection]}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
";

const SCRIPT: &str =
    "- delete: {apiVersion: v1, kind: PersistentVolumeClaim, namespace: ns, name: logs}\n";

fn diff(dir: &Path, old: &str, new: &str) -> Output {
    let (state, script) = (dir.join("state.yaml"), dir.join("script.yaml"));
    std::fs::write(&state, STATE).unwrap();
    std::fs::write(&script, SCRIPT).unwrap();
    rekon_diff(old, new, "--state", &state, Some(&script))
}

/// `rekon diff` of the built guests `old` and `new`, over `--cases PATH` or
/// `--state PATH` (with a script).
fn rekon_diff(old: &str, new: &str, over: &str, path: &Path, script: Option<&Path>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_rekon"));
    command
        .arg("diff")
        .arg("--old")
        .arg(built_guest(old))
        .arg("--new")
        .arg(built_guest(new))
        .arg(over)
        .arg(path);
    if let Some(script) = script {
        command.arg("--script").arg(script);
    }
    command.output().expect("run rekon diff")
}

#[test]
fn differing_versions_print_each_differing_decision_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let out = diff(
        dir.path(),
        "rekon_guest_pvc_protection",
        "rekon_guest_misbehaving",
    );
    let stdout = exited(&out, 1);
    // Deleting the unused PVC: the reference asks for live pods then removes the
    // finalizer; the misbehaving guest does nothing both times.
    assert!(
        stdout.contains("--- ns/logs (decide): - old, + new\n- need-live-pods\n+ actions: []"),
        "{stdout}"
    );
    assert!(stdout.contains("- - remove-finalizer:"), "{stdout}");
    assert!(
        stdout.contains("decisions agreed, 2 differed, 0 failed"),
        "{stdout}"
    );
}

#[test]
fn identical_versions_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let out = diff(
        dir.path(),
        "rekon_guest_pvc_protection",
        "rekon_guest_pvc_protection",
    );
    let stdout = exited(&out, 0);
    assert!(stdout.contains("0 differed, 0 failed"), "{stdout}");
    assert!(!stdout.contains("---"), "{stdout}");
}

#[test]
fn versions_of_different_worlds_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = diff(
        dir.path(),
        "rekon_guest_pvc_protection",
        "rekon_guest_resource_claim",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("does not export any of rekon:reconcile/pvc-decider@0.2.0"),
        "{stderr}"
    );
}

/// The stdout of `out`, which must have exited with `code`.
fn exited(out: &Output, code: i32) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(code),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// N of the summary line's "N decisions agreed".
fn agreed(stdout: &str) -> u64 {
    stdout
        .rsplit(": ")
        .next()
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {stdout}"))
}

fn workspace_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative)
}

#[test]
fn over_case_inputs_each_differing_case_is_printed_under_its_name() {
    let cases = workspace_path("guests/pvc-protection/cases");
    let (old, new) = ("rekon_guest_pvc_protection", "rekon_guest_misbehaving");
    let out = rekon_diff(old, new, "--cases", &cases, None);
    let stdout = exited(&out, 1);
    // The misbehaving guest never asks for live pods.
    assert!(
        stdout.contains("(decide): - old, + new\n- need-live-pods\n+ actions: []"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("--- {}/", cases.display())),
        "{stdout}"
    );

    let out = rekon_diff(old, old, "--cases", &cases, None);
    let stdout = exited(&out, 0);
    assert!(agreed(&stdout) > 5, "every case is compared: {stdout}");
    assert!(
        stdout.contains("decisions agreed, 0 differed, 0 failed"),
        "{stdout}"
    );
}
