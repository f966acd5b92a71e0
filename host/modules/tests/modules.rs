//! Loading, refusing, promoting, shadowing and rolling back modules through
//! the guests directory, with the reference guests built by `make guests`.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rekon_contract::PvcProtectionWorld;
use rekon_controllers::decider::{DecideError, Decider, GuestInfo};
use rekon_guest::model::{PvcAction, PvcDecision, PvcInput};
use rekon_modules::testing::with_custom_section;
use rekon_modules::{Change, ModuleDigest, Modules, ModulesOptions, WatchOptions};
use rekon_runtime::World;
use rekon_runtime::testing::built_guest;

const FINALIZER: &str = "kubernetes.io/pvc-protection";

fn guest(stem: &str) -> Vec<u8> {
    std::fs::read(built_guest(stem)).unwrap()
}

fn reference() -> Vec<u8> {
    guest("rekon_guest_pvc_protection")
}

/// A directory holding `files` and a guests.yaml.
struct GuestsDir {
    dir: tempfile::TempDir,
}

impl GuestsDir {
    fn new() -> Self {
        let dir = Self {
            dir: tempfile::tempdir().unwrap(),
        };
        dir.put("resource-claim.wasm", &guest("rekon_guest_resource_claim"));
        dir
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a module file and returns its digest.
    fn put(&self, name: &str, bytes: &[u8]) -> ModuleDigest {
        std::fs::write(self.path().join(name), bytes).unwrap();
        ModuleDigest::of(bytes)
    }

    fn config(&self, yaml: &str) {
        std::fs::write(self.path().join("guests.yaml"), yaml).unwrap();
    }

    async fn open(&self) -> Modules {
        let mut options = ModulesOptions::new(self.path());
        options.engine.max_concurrent_decisions = 8;
        Modules::open(options).await.expect("modules open")
    }
}

fn pvc_config(module: &str, digest: &ModuleDigest, extra: &str) -> String {
    format!("pvc-protection:\n  module: {module}\n  sha256: {digest}\n{extra}")
}

fn input(name: &str, finalizer: bool) -> PvcInput {
    let mut input = PvcInput::default();
    input.pvc.meta.namespace = "ns".into();
    input.pvc.meta.name = name.into();
    if finalizer {
        input.pvc.meta.finalizers = vec![FINALIZER.into()];
    }
    input
}

/// The pvc-protection status once `done` holds of it (within 10 s).
async fn wait_for_status(
    modules: &Modules,
    done: impl Fn(&rekon_modules::ControllerStatus) -> bool,
) -> rekon_modules::ControllerStatus {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let status = modules.status().controllers["pvc-protection"].clone();
        if done(&status) {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "status never matched: {status:#?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn serving(modules: &Modules) -> GuestInfo {
    modules.slot::<PvcProtectionWorld>().current().info()
}

#[tokio::test(flavor = "multi_thread")]
async fn pinned_modules_serve_and_a_decision_in_flight_keeps_its_version() {
    let dir = GuestsDir::new();
    let v1 = dir.put("v1.wasm", &reference());
    let v2 = dir.put(
        "v2.wasm",
        &with_custom_section(&reference(), "rekon-build", b"2"),
    );
    assert_ne!(v1, v2, "the custom section makes a distinct build");
    dir.config(&pvc_config("v1.wasm", &v1, ""));
    let modules = dir.open().await;
    assert_eq!(serving(&modules).digest, v1.hex());
    assert_eq!(serving(&modules).name, "v1");
    let status = modules.status();
    let pvc = status.controller("pvc-protection").unwrap();
    assert!(pvc.pinned);
    assert_eq!(pvc.swaps, 1);
    assert_eq!(
        pvc.active.as_ref().unwrap().contract,
        "rekon:reconcile@0.2.0",
        "the status names the contract version the module exports"
    );
    let claim = status.controller("resource-claim").unwrap();
    assert!(
        !claim.pinned,
        "no guests.yaml entry: the conventional file, unpinned"
    );

    let in_flight = modules.slot::<PvcProtectionWorld>().current();
    dir.config(&pvc_config("v2.wasm", &v2, ""));
    let report = modules.reload().await;
    assert!(
        matches!(
            report.change(World::of::<rekon_contract::PvcProtectionWorld>()),
            Change::Published { .. }
        ),
        "{report:?}"
    );
    assert_eq!(
        report.change(World::of::<rekon_contract::ResourceClaimWorld>()),
        &Change::Unchanged
    );
    assert_eq!(serving(&modules).digest, v2.hex());
    assert_eq!(
        in_flight.info().digest,
        v1.hex(),
        "a decision that took v1 finishes on v1"
    );
    // v2 is the same logic: it decides like v1.
    let decision = modules
        .slot::<PvcProtectionWorld>()
        .current()
        .decide("ns/data", input("data", false))
        .unwrap();
    assert!(
        matches!(&decision, PvcDecision::Actions(a) if matches!(a[..], [PvcAction::AddFinalizer(_)])),
        "{decision:?}"
    );
    assert_eq!(
        modules
            .reload()
            .await
            .change(World::of::<rekon_contract::PvcProtectionWorld>()),
        &Change::Unchanged
    );
    let pvc = modules
        .status()
        .controller("pvc-protection")
        .cloned()
        .unwrap();
    assert_eq!(pvc.swaps, 2);
    assert_eq!(
        pvc.previous.unwrap().sha256,
        v1.hex(),
        "the replaced version is kept for rollback"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_modules_are_refused_and_the_old_version_keeps_serving() {
    let dir = GuestsDir::new();
    let good = dir.put("good.wasm", &reference());
    dir.config(&pvc_config("good.wasm", &good, ""));
    let modules = dir.open().await;

    let wrong_world = dir.put("claim.wasm", &guest("rekon_guest_resource_claim"));
    let core = dir.put("core.wasm", &wat::parse_str("(module)").unwrap());
    let garbage = dir.put("garbage.wasm", b"not wasm at all");
    let cases = [
        (
            pvc_config("good.wasm", &ModuleDigest::of(b"other"), ""),
            "but guests.yaml pins",
        ),
        (
            pvc_config("claim.wasm", &wrong_world, ""),
            "does not export any of rekon:reconcile/pvc-decider@0.2.0, rekon:reconcile/pvc-decider@0.1.0",
        ),
        (
            pvc_config("core.wasm", &core, ""),
            "is a core WebAssembly module, not a component",
        ),
        (pvc_config("garbage.wasm", &garbage, ""), "garbage.wasm"),
        (
            pvc_config("missing.wasm", &good, ""),
            "missing.wasm: cannot read",
        ),
        (
            "pvc-protection:\n  module: good.wasm\n".to_string(),
            "missing field `sha256`",
        ),
    ];
    for (n, (config, expected)) in cases.iter().enumerate() {
        dir.config(config);
        let report = modules.reload().await;
        let Change::Refused(reason) =
            report.change(World::of::<rekon_contract::PvcProtectionWorld>())
        else {
            panic!("{config}: not refused: {report:?}");
        };
        assert!(reason.contains(expected), "{config}: {reason}");
        assert_eq!(
            serving(&modules).digest,
            good.hex(),
            "{config}: the good version still serves"
        );
        let status = modules.status();
        let pvc = status.controller("pvc-protection").unwrap();
        assert_eq!(pvc.rejections, n as u64 + 1);
        assert!(pvc.last_error.as_deref().unwrap().contains(expected));
        assert_eq!(pvc.swaps, 1);
    }
    // The same refused configuration is not retried (nor reported) again.
    let before = modules
        .status()
        .controller("pvc-protection")
        .unwrap()
        .rejections;
    modules.reload().await;
    assert_eq!(
        modules
            .status()
            .controller("pvc-protection")
            .unwrap()
            .rejections,
        before
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn shadow_mode_counts_agreements_and_differences_and_applies_only_the_active() {
    let dir = GuestsDir::new();
    let old = dir.put("old.wasm", &reference());
    // Decides "nothing to do" for every PVC: right for a protected, unused PVC,
    // wrong for one missing its finalizer.
    let new = dir.put("new.wasm", &guest("rekon_guest_misbehaving"));
    let previous = format!("  previous: {{module: old.wasm, sha256: {old}}}\n");
    dir.config(&pvc_config(
        "new.wasm",
        &new,
        &format!("  mode: shadow\n{previous}"),
    ));
    let modules = dir.open().await;
    assert_eq!(
        serving(&modules).digest,
        old.hex(),
        "in shadow mode the previous version serves"
    );

    let decider = modules.slot::<PvcProtectionWorld>().current();
    let protected = decide(&decider, "ns/kept", input("kept", true)).unwrap();
    assert_eq!(protected, PvcDecision::Actions(vec![]));
    let unprotected = decide(&decider, "ns/fresh", input("fresh", false)).unwrap();
    assert!(
        matches!(&unprotected, PvcDecision::Actions(a) if a.len() == 1),
        "the active decision applies"
    );
    let shadow_trap = decide(&decider, "ns/panic", input("panic", false)).unwrap();
    assert!(
        matches!(&shadow_trap, PvcDecision::Actions(a) if a.len() == 1),
        "a trapping shadow changes nothing"
    );

    // The shadow decides on its own budget, after the active decision returned.
    let pvc = wait_for_status(&modules, |c| {
        c.shadow_agreed + c.shadow_differed + c.shadow_failed == 3
    })
    .await;
    assert_eq!(pvc.shadow.unwrap().sha256, new.hex());
    assert_eq!(
        (pvc.shadow_agreed, pvc.shadow_differed, pvc.shadow_failed),
        (1, 1, 1)
    );
    let differences = modules
        .shadow_tally(World::of::<rekon_contract::PvcProtectionWorld>())
        .unwrap()
        .differences();
    assert_eq!(differences[0].key, "ns/fresh");
    assert_eq!(differences[0].shadow, serde_json::json!({"actions": []}));
    assert_eq!(differences[1].key, "ns/panic");
    assert!(
        differences[1].shadow["error"]
            .as_str()
            .unwrap()
            .contains("panic requested")
    );

    // Promoting it is refused: it traps on an input the active version decided recently.
    dir.config(&pvc_config("new.wasm", &new, &previous));
    let report = modules.reload().await;
    assert!(
        matches!(report.change(World::of::<rekon_contract::PvcProtectionWorld>()), Change::Refused(r) if r.contains("key ns/panic")),
        "{report:?}"
    );
    assert_eq!(serving(&modules).digest, old.hex());
}

#[tokio::test(flavor = "multi_thread")]
async fn promotion_and_rollback_by_configuration() {
    let dir = GuestsDir::new();
    let v1 = dir.put("v1.wasm", &reference());
    let v2 = dir.put(
        "v2.wasm",
        &with_custom_section(&reference(), "rekon-build", b"2"),
    );
    let previous = format!("  previous: {{module: v1.wasm, sha256: {v1}}}\n");
    dir.config(&pvc_config(
        "v2.wasm",
        &v2,
        &format!("  mode: shadow\n{previous}"),
    ));
    let modules = dir.open().await;
    assert_eq!(serving(&modules).digest, v1.hex());
    modules
        .slot::<PvcProtectionWorld>()
        .current()
        .decide("ns/a", input("a", false))
        .unwrap();
    let pvc = wait_for_status(&modules, |c| c.shadow_agreed + c.shadow_differed == 1).await;
    assert_eq!(
        (pvc.shadow_agreed, pvc.shadow_differed),
        (1, 0),
        "same logic, same decisions"
    );

    // Promote: mode active.
    dir.config(&pvc_config("v2.wasm", &v2, &previous));
    modules.reload().await;
    assert_eq!(serving(&modules).digest, v2.hex());
    let pvc = modules
        .status()
        .controller("pvc-protection")
        .cloned()
        .unwrap();
    assert!(pvc.shadow.is_none());
    assert_eq!(pvc.previous.unwrap().sha256, v1.hex());

    // Roll back: mode rollback serves the previous version.
    dir.config(&pvc_config(
        "v2.wasm",
        &v2,
        &format!("  mode: rollback\n{previous}"),
    ));
    modules.reload().await;
    assert_eq!(serving(&modules).digest, v1.hex());
    assert_eq!(
        modules.status().controller("pvc-protection").unwrap().swaps,
        3
    );

    // Memory keeps the precompiled versions that serve or may serve: v1
    // serves, nothing backs it up, and resource-claim's module serves.
    dir.config(&pvc_config("v1.wasm", &v1, ""));
    modules.reload().await;
    assert_eq!(serving(&modules).digest, v1.hex());
    let status = modules.status().controllers["pvc-protection"].clone();
    let kept = 1 + usize::from(status.previous.is_some()) + 1;
    assert_eq!(
        modules.precompiled_in_memory(),
        kept,
        "v2 neither serves nor backs up: its precompiled form left memory ({status:?})"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_version_that_traps_on_a_recent_input_never_serves() {
    let dir = GuestsDir::new();
    let good = dir.put("good.wasm", &reference());
    let trapping = dir.put("trapping.wasm", &guest("rekon_guest_misbehaving"));
    dir.config(&pvc_config("good.wasm", &good, ""));
    let modules = dir.open().await;
    let decider = modules.slot::<PvcProtectionWorld>().current();
    decide(&decider, "ns/data", input("data", true)).unwrap();
    decide(&decider, "ns/panic", input("panic", true)).unwrap();

    dir.config(&pvc_config("trapping.wasm", &trapping, ""));
    let report = modules.reload().await;
    let Change::Refused(reason) = report.change(World::of::<rekon_contract::PvcProtectionWorld>())
    else {
        panic!("not refused: {report:?}");
    };
    assert!(
        reason.contains("recorded input of key ns/panic") && reason.contains("panic requested"),
        "{reason}"
    );
    assert_eq!(serving(&modules).digest, good.hex());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_version_failing_too_often_is_rolled_back_automatically() {
    let dir = GuestsDir::new();
    let good = dir.put("good.wasm", &reference());
    let trapping = dir.put("trapping.wasm", &guest("rekon_guest_misbehaving"));
    let status_file = dir.path().join("status.json");
    dir.config(&pvc_config(
        "trapping.wasm",
        &trapping,
        &format!(
            "  previous: {{module: good.wasm, sha256: {good}}}\n  \
             autoRollback: {{maxFailureFraction: 0.5, minDecisions: 4}}\n"
        ),
    ));
    let mut options = ModulesOptions::new(dir.path());
    options.status_file = Some(status_file.clone());
    let modules = Modules::open(options).await.unwrap();
    assert_eq!(serving(&modules).digest, trapping.hex());

    let decider = modules.slot::<PvcProtectionWorld>().current();
    decide(&decider, "ns/a", input("a", true)).unwrap();
    for n in 0..2 {
        assert!(
            decide(&decider, "ns/panic", input("panic", true)).is_err(),
            "trap {n}"
        );
    }
    assert_eq!(
        serving(&modules).digest,
        trapping.hex(),
        "2 of 3: too few decisions to judge"
    );
    assert!(decide(&decider, "ns/panic", input("panic", true)).is_err());
    assert_eq!(
        serving(&modules).digest,
        good.hex(),
        "3 of 4 failed: rolled back"
    );

    let pvc = modules
        .status()
        .controller("pvc-protection")
        .cloned()
        .unwrap();
    assert_eq!(pvc.rollbacks, 1);
    assert_eq!(
        (pvc.decisions, pvc.failures),
        (0, 0),
        "counted afresh for the new active version"
    );
    assert!(pvc.last_error.unwrap().contains("failed 3 of 4 decisions"));
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&status_file).unwrap()).unwrap();
    assert_eq!(written["controllers"]["pvc-protection"]["rollbacks"], 1);
    assert_eq!(
        written["controllers"]["pvc-protection"]["active"]["sha256"],
        good.hex()
    );

    // guests.yaml still names the failing version: it is not served again.
    assert_eq!(
        modules
            .reload()
            .await
            .change(World::of::<rekon_contract::PvcProtectionWorld>()),
        &Change::Unchanged
    );
    dir.config(&pvc_config(
        "trapping.wasm",
        &trapping,
        "  deadlineMs: 50\n",
    ));
    let report = modules.reload().await;
    assert!(
        matches!(report.change(World::of::<rekon_contract::PvcProtectionWorld>()), Change::Refused(r) if r.contains("rolled back automatically"))
    );
    assert_eq!(serving(&modules).digest, good.hex());
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn a_configmap_update_is_noticed_and_published() {
    use std::os::unix::fs::symlink;
    let root = tempfile::tempdir().unwrap();
    let v2_bytes = with_custom_section(&reference(), "rekon-build", b"2");
    let generation = |name: &str, pvc: &[u8]| {
        let dir = root.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("pvc.wasm"), pvc).unwrap();
        std::fs::write(dir.join("claim.wasm"), guest("rekon_guest_resource_claim")).unwrap();
        let claim = ModuleDigest::of(&guest("rekon_guest_resource_claim"));
        let config = format!(
            "{}resource-claim: {{module: claim.wasm, sha256: {claim}}}\n",
            pvc_config("pvc.wasm", &ModuleDigest::of(pvc), "")
        );
        std::fs::write(dir.join("guests.yaml"), config).unwrap();
    };
    generation("..2026_01_01", &reference());
    symlink("..2026_01_01", root.path().join("..data")).unwrap();
    for file in ["guests.yaml", "pvc.wasm", "claim.wasm"] {
        symlink(format!("..data/{file}"), root.path().join(file)).unwrap();
    }
    let modules = Modules::open(ModulesOptions::new(root.path()))
        .await
        .unwrap();
    let _watching = modules
        .watch(WatchOptions {
            debounce: Duration::from_millis(50),
            rescan: Duration::from_secs(3600),
            ..WatchOptions::default()
        })
        .unwrap();
    assert_eq!(
        serving(&modules).digest,
        ModuleDigest::of(&reference()).hex()
    );

    // kubelet's update: write the new generation, point ..data_tmp at it, rename over ..data.
    generation("..2026_01_02", &v2_bytes);
    symlink("..2026_01_02", root.path().join("..data_tmp")).unwrap();
    std::fs::rename(root.path().join("..data_tmp"), root.path().join("..data")).unwrap();
    std::fs::remove_dir_all(root.path().join("..2026_01_01")).unwrap();

    let v2 = ModuleDigest::of(&v2_bytes);
    let deadline = Instant::now() + Duration::from_secs(20);
    while serving(&modules).digest != v2.hex() {
        assert!(Instant::now() < deadline, "the update was not published");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let status = modules.status();
    assert_eq!(
        status.controller("pvc-protection").unwrap().rejections,
        0,
        "never read half an update"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_precompiled_cache_directory_serves_a_restart() {
    let dir = GuestsDir::new();
    let good = dir.put("good.wasm", &reference());
    dir.config(&pvc_config("good.wasm", &good, ""));
    let cache = tempfile::tempdir().unwrap();
    let open = || {
        let mut options = ModulesOptions::new(dir.path());
        options.cache_dir = Some(cache.path().to_path_buf());
        Modules::open(options)
    };
    let first = open().await.unwrap();
    let cached: Vec<_> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".cwasm"))
        .collect();
    assert_eq!(cached.len(), 2, "one per module: {cached:?}");
    assert!(cached.iter().any(|n| n.starts_with(good.hex())));
    drop(first);

    let started = Instant::now();
    let restarted = open().await.unwrap();
    let took = started.elapsed();
    assert_eq!(
        serving(&restarted).digest,
        good.hex(),
        "served from the cache (took {took:?})"
    );
    let decision = restarted
        .slot::<PvcProtectionWorld>()
        .current()
        .decide("ns/x", input("x", true))
        .unwrap();
    assert_eq!(decision, PvcDecision::Actions(vec![]));
}

#[tokio::test(flavor = "multi_thread")]
async fn without_guests_yaml_the_conventional_files_serve() {
    let dir = GuestsDir::new();
    let digest = dir.put("rekon_guest_pvc_protection.wasm", &reference());
    let modules = dir.open().await;
    assert_eq!(serving(&modules).name, "rekon_guest_pvc_protection");
    assert_eq!(serving(&modules).digest, digest.hex());
    let empty = tempfile::tempdir().unwrap();
    let err = Modules::open(ModulesOptions::new(empty.path()))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("expected pvc-protection.wasm or rekon_guest_pvc_protection.wasm"),
        "{err}"
    );
}

/// Polls `done` until it holds or 20 s pass.
async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unchanged_directory_causes_no_reload() {
    // `make demo`'s case: conventional names, no guests.yaml.
    let dir = GuestsDir::new();
    dir.put("rekon_guest_pvc_protection.wasm", &reference());
    let modules = dir.open().await;
    let _watching = modules
        .watch(WatchOptions {
            debounce: Duration::from_millis(10),
            rescan: Duration::from_secs(3600),
            ..WatchOptions::default()
        })
        .unwrap();
    // A reload reads every file, as the periodic rescan does; those reads are
    // no change and must not trigger the next reload.
    modules.reload().await;
    let after_reload = modules.reloads();
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        modules.reloads(),
        after_reload,
        "reloads without any change to the directory"
    );

    // A real change is still noticed.
    let v2 = dir.put(
        "rekon_guest_pvc_protection.wasm",
        &with_custom_section(&reference(), "rekon-build", b"2"),
    );
    eventually("the change was not published", || {
        serving(&modules).digest == v2.hex()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_status_file_shows_decision_and_shadow_counts() {
    let dir = GuestsDir::new();
    let old = dir.put("old.wasm", &reference());
    let new = dir.put(
        "new.wasm",
        &with_custom_section(&reference(), "rekon-build", b"2"),
    );
    dir.config(&pvc_config(
        "new.wasm",
        &new,
        &format!("  mode: shadow\n  previous: {{module: old.wasm, sha256: {old}}}\n"),
    ));
    let status_file = dir.path().join("status.json");
    let mut options = ModulesOptions::new(dir.path());
    options.status_file = Some(status_file.clone());
    let modules = Modules::open(options).await.unwrap();
    let _watching = modules
        .watch(WatchOptions {
            rescan: Duration::from_secs(3600),
            status_refresh: Duration::from_millis(50),
            ..WatchOptions::default()
        })
        .unwrap();
    let decider = modules.slot::<PvcProtectionWorld>().current();
    for name in ["a", "b", "c"] {
        decider
            .decide(&format!("ns/{name}"), input(name, true))
            .unwrap();
    }
    let counts = || -> Option<(u64, u64)> {
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&status_file).ok()?).ok()?;
        let pvc = &json["controllers"]["pvc-protection"];
        Some((pvc["decisions"].as_u64()?, pvc["shadowAgreed"].as_u64()?))
    };
    eventually("the status file never showed the counts", || {
        counts() == Some((3, 3))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn out_of_range_limits_are_refused_and_later_changes_still_apply() {
    let dir = GuestsDir::new();
    let good = dir.put("good.wasm", &reference());
    dir.config(&pvc_config("good.wasm", &good, ""));
    let modules = dir.open().await;
    let _watching = modules
        .watch(WatchOptions {
            debounce: Duration::from_millis(10),
            rescan: Duration::from_secs(3600),
            ..WatchOptions::default()
        })
        .unwrap();
    let v2 = dir.put(
        "v2.wasm",
        &with_custom_section(&reference(), "rekon-build", b"2"),
    );
    for (extra, field) in [
        ("  deadlineMs: 18446744073709551615\n", "deadlineMs"),
        ("  memoryMiB: 17592186044416\n", "memoryMiB"),
    ] {
        dir.config(&pvc_config("v2.wasm", &v2, extra));
        let report = modules.reload().await;
        assert!(
            matches!(report.change(World::of::<rekon_contract::PvcProtectionWorld>()),
                Change::Refused(r) if r.contains(&format!("guests.yaml: field `pvc-protection.{field}`"))),
            "{report:?}"
        );
        assert_eq!(serving(&modules).digest, good.hex());
    }
    // The watch still applies the next valid change.
    dir.config(&pvc_config("v2.wasm", &v2, "  deadlineMs: 10000\n"));
    eventually("the valid change was not published", || {
        serving(&modules).digest == v2.hex()
    })
    .await;
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn a_fifo_named_as_a_module_is_refused_promptly() {
    let dir = GuestsDir::new();
    let good = dir.put("good.wasm", &reference());
    dir.config(&pvc_config("good.wasm", &good, ""));
    let modules = dir.open().await;
    let fifo = dir.path().join("fifo.wasm");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    dir.config(&pvc_config("fifo.wasm", &good, ""));
    let report = tokio::time::timeout(Duration::from_secs(10), modules.reload())
        .await
        .expect("the reload returns instead of waiting for a writer");
    assert!(
        matches!(report.change(World::of::<rekon_contract::PvcProtectionWorld>()),
            Change::Refused(r) if r.contains("fifo.wasm: is a FIFO, not a regular file")),
        "{report:?}"
    );
    assert_eq!(serving(&modules).digest, good.hex());
}

#[allow(dead_code)]
fn assert_decider_is_shareable(
    decider: Arc<dyn Decider<PvcProtectionWorld>>,
) -> Arc<dyn Decider<PvcProtectionWorld>> {
    decider
}

/// One decision from a test's async context (the runtime never blocks on tokio).
fn decide(
    decider: &Arc<dyn Decider<PvcProtectionWorld>>,
    key: &str,
    input: PvcInput,
) -> Result<PvcDecision, DecideError> {
    decider.decide(key, input)
}
