//! The guests of `guests/` through the CLI as users run it (`rekon test`, `rekon
//! eval`, `rekon diff`: the built binary on the built modules): every guest's
//! shipped cases pass, and the host names no controller module: a controller
//! is a module, not host code.

use std::process::{Command, Output};

use rekon_runtime::testing::built_guest;
use rekon_tests::cli::{path_str, rekon, shipped_cases_pass, text, workspace_path};

/// A controller module of `guests/`: its directory name, and the file stem
/// `make guests` builds it as.
struct Guest {
    dir: String,
    stem: String,
}

/// Every controller module of `guests/`: a Rust crate exporting the generic
/// world (`export_controller!`), or a TypeScript guest whose `ts/world` names it.
fn controller_module_guests() -> Vec<Guest> {
    let mut guests: Vec<Guest> = std::fs::read_dir(workspace_path("guests"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|path| {
            let dir = path.file_name()?.to_str()?.to_string();
            let stem = format!("rekon_guest_{}", dir.replace('-', "_"));
            let rust = std::fs::read_to_string(path.join("src/lib.rs"))
                .is_ok_and(|lib| lib.contains("export_controller!"));
            let ts = std::fs::read_to_string(path.join("ts/world"))
                .is_ok_and(|world| world.trim() == "controller");
            match (rust, ts) {
                (true, _) => Some(Guest { dir, stem }),
                (false, true) => Some(Guest {
                    dir,
                    stem: format!("{stem}_ts"),
                }),
                (false, false) => None,
            }
        })
        .collect();
    guests.sort_by(|a, b| a.dir.cmp(&b.dir));
    guests
}

#[test]
fn the_four_controller_modules_are_found() {
    let dirs: Vec<String> = controller_module_guests()
        .into_iter()
        .map(|g| g.dir)
        .collect();
    for expected in [
        "pv-protection",
        "pvc-protection-generic",
        "sample-controller",
        "ttl-after-finished",
    ] {
        assert!(dirs.iter().any(|d| d == expected), "{expected}: {dirs:?}");
    }
}

#[test]
fn pvc_protection_cases_pass() {
    shipped_cases_pass(
        "rekon_guest_pvc_protection",
        &workspace_path("guests/pvc-protection/cases"),
    );
}

#[test]
fn resource_claim_cases_pass() {
    shipped_cases_pass(
        "rekon_guest_resource_claim",
        &workspace_path("guests/resource-claim/cases"),
    );
}

#[test]
fn every_controller_modules_shipped_cases_pass() {
    let mut ran = 0;
    for guest in controller_module_guests() {
        let cases = workspace_path(&format!("guests/{}/cases", guest.dir));
        if cases.is_dir() {
            shipped_cases_pass(&guest.stem, &cases);
            ran += 1;
        }
    }
    assert!(
        ran >= 3,
        "pv-protection, sample-controller and ttl-after-finished have cases"
    );
}

/// A deleting, unbound PV: pv-protection releases it.
const DELETING_PV: &str = r#"
primary:
  apiVersion: v1
  kind: PersistentVolume
  metadata: {name: pv1, uid: u1, resourceVersion: "3", deletionTimestamp: "2026-11-26T00:00:00Z", finalizers: [kubernetes.io/pv-protection]}
  status: {phase: Released}
now: "2026-11-26T00:00:01Z"
"#;

#[test]
fn eval_describes_a_controller_module_and_decides_one_input() {
    let guest = built_guest("rekon_guest_pv_protection");
    // `describe` takes no input.
    let out = rekon(&[
        "eval",
        "--guest",
        path_str(&guest),
        "--decision",
        "describe",
    ]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let description: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(description["name"], "pv-protection");
    assert_eq!(description["primary"]["kind"], "PersistentVolume");
    assert_eq!(
        description["scope"]["finalizers"],
        serde_json::json!(["kubernetes.io/pv-protection"])
    );
    assert!(
        text(&out.stderr).contains("exports rekon:reconcile@0.3.0"),
        "{}",
        text(&out.stderr)
    );

    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("input.yaml");
    std::fs::write(&input, DELETING_PV).unwrap();
    let out = rekon(&[
        "eval",
        "--guest",
        path_str(&guest),
        "--decision",
        "decide",
        "--input",
        path_str(&input),
    ]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let decision: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        decision,
        serde_json::json!({"actions": [{"remove-finalizer": "kubernetes.io/pv-protection"}]})
    );

    // `decide` does take one.
    let out = rekon(&["eval", "--guest", path_str(&guest), "--decision", "decide"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("`decide` decides on an input: pass --input FILE"),
        "{}",
        text(&out.stderr)
    );
}

/// The stdout of `out`, which must have exited with `code`.
fn exited(out: &Output, code: i32) -> String {
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(code),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    stdout
}

/// The generic world in `rekon diff`: the old controller module runs on the
/// state, the new one in its shadow; both descriptions are compared too.
#[test]
fn identical_controller_module_versions_agree_over_a_simulation() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("pvs.yaml");
    std::fs::write(
        &state,
        "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv1}\n\
         spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /tmp/pv1}}\n",
    )
    .unwrap();
    let script = dir.path().join("script.yaml");
    std::fs::write(
        &script,
        "- delete: {apiVersion: v1, kind: PersistentVolume, name: pv1}\n",
    )
    .unwrap();
    let module = built_guest("rekon_guest_pv_protection");
    let out = rekon(&[
        "diff",
        "--old",
        path_str(&module),
        "--new",
        path_str(&module),
        "--state",
        path_str(&state),
        "--script",
        path_str(&script),
    ]);
    let stdout = exited(&out, 0);
    // The description, adding the finalizer, and releasing the deleted PV.
    let agreed: u64 = stdout
        .rsplit(": ")
        .next()
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {stdout}"));
    assert!(agreed >= 3, "{stdout}");
    assert!(stdout.contains("0 differed, 0 failed"), "{stdout}");
}

/// The API server's own admission (upstream's StorageObjectInUseProtection)
/// adds `kubernetes.io/pv-protection` to a new PersistentVolume: API server
/// behaviour, not the controller's. A hit of host/apiserver/ naming that
/// finalizer is allowed; nothing else of host/ may name a controller module.
fn allowed(hit: &str) -> bool {
    let lower = hit.to_ascii_lowercase();
    hit.starts_with("host/apiserver/")
        && (lower.contains("kubernetes.io/pv-protection")
            || lower.contains("pv_protection_finalizer"))
}

#[test]
fn no_host_file_names_a_controller_module() {
    let guests = controller_module_guests();
    // pv-protection, pv_protection, PvProtection: any separator or none.
    let pattern = guests
        .iter()
        .map(|g| g.dir.replace('-', "[-_]?"))
        .collect::<Vec<_>>()
        .join("|");
    let out = Command::new("git")
        .current_dir(workspace_path(""))
        .args(["grep", "-n", "-i", "-E", &pattern, "--", "host/"])
        .output()
        .expect("run git grep (the test needs a git checkout)");
    // git grep exits 1 when nothing matches.
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "git grep: {}",
        text(&out.stderr)
    );
    let hits: Vec<String> = text(&out.stdout)
        .lines()
        .filter(|hit| !allowed(hit))
        .map(str::to_string)
        .collect();
    assert!(
        hits.is_empty(),
        "host/ names a controller module ({pattern}); a controller is a module and its cases, not host code:\n{}",
        hits.join("\n")
    );
}
