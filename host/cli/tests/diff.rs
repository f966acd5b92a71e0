//! `rekon diff` as users run it: the built binary comparing two built guests
//! on a state file and a script.

use std::path::Path;
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
    std::fs::write(dir.join("state.yaml"), STATE).unwrap();
    std::fs::write(dir.join("script.yaml"), SCRIPT).unwrap();
    Command::new(env!("CARGO_BIN_EXE_rekon"))
        .arg("diff")
        .arg("--old")
        .arg(built_guest(old))
        .arg("--new")
        .arg(built_guest(new))
        .arg("--state")
        .arg(dir.join("state.yaml"))
        .arg("--script")
        .arg(dir.join("script.yaml"))
        .output()
        .expect("run rekon diff")
}

#[test]
fn differing_versions_print_each_differing_decision_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let out = diff(
        dir.path(),
        "rekon_guest_pvc_protection",
        "rekon_guest_misbehaving",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
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
