//! Guests in other languages beside the Rust ones in one guests directory:
//! `make guests` writes `rekon_guest_<world>_ts.wasm` and `_py.wasm` next to the
//! conventional `rekon_guest_<world>.wasm`. Without guests.yaml only the
//! conventional names are read; guests.yaml picks any of them by name.

use rekon_contract::PvcProtectionWorld;
use rekon_guest::model::{PvcAction, PvcDecision, PvcInput};
use rekon_modules::{ModuleDigest, Modules, ModulesOptions};
use rekon_runtime::testing::built_guest;

fn guest(stem: &str) -> Vec<u8> {
    std::fs::read(built_guest(stem)).unwrap()
}

fn put(dir: &std::path::Path, name: &str, bytes: &[u8]) -> ModuleDigest {
    std::fs::write(dir.join(name), bytes).unwrap();
    ModuleDigest::of(bytes)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_conventional_rust_module_wins_over_the_language_suffixed_ones() {
    let dir = tempfile::tempdir().unwrap();
    put(
        dir.path(),
        "resource-claim.wasm",
        &guest("rekon_guest_resource_claim"),
    );
    let rust = put(
        dir.path(),
        "rekon_guest_pvc_protection.wasm",
        &guest("rekon_guest_pvc_protection"),
    );
    // Not modules at all: reading either would fail the load.
    put(
        dir.path(),
        "rekon_guest_pvc_protection_ts.wasm",
        b"not read",
    );
    put(
        dir.path(),
        "rekon_guest_pvc_protection_py.wasm",
        b"not read",
    );
    let modules = Modules::open(ModulesOptions::new(dir.path()))
        .await
        .expect("modules open");
    let serving = modules.slot::<PvcProtectionWorld>().current().info();
    assert_eq!(serving.name, "rekon_guest_pvc_protection");
    assert_eq!(serving.digest, rust.hex());
}

#[tokio::test(flavor = "multi_thread")]
async fn guests_yaml_serves_the_typescript_module_by_name() {
    let dir = tempfile::tempdir().unwrap();
    put(
        dir.path(),
        "resource-claim.wasm",
        &guest("rekon_guest_resource_claim"),
    );
    put(
        dir.path(),
        "rekon_guest_pvc_protection.wasm",
        &guest("rekon_guest_pvc_protection"),
    );
    let ts = put(
        dir.path(),
        "rekon_guest_pvc_protection_ts.wasm",
        &guest("rekon_guest_pvc_protection_ts"),
    );
    std::fs::write(
        dir.path().join("guests.yaml"),
        format!("pvc-protection:\n  module: rekon_guest_pvc_protection_ts.wasm\n  sha256: {ts}\n"),
    )
    .unwrap();
    let modules = Modules::open(ModulesOptions::new(dir.path()))
        .await
        .expect("modules open");
    let current = modules.slot::<PvcProtectionWorld>().current();
    assert_eq!(current.info().name, "rekon_guest_pvc_protection_ts");
    assert_eq!(current.info().digest, ts.hex());
    let mut input = PvcInput::default();
    input.pvc.meta.namespace = "ns".into();
    input.pvc.meta.name = "data".into();
    let decision = current
        .decide("ns/data", input)
        .expect("the TypeScript guest decides");
    assert!(
        matches!(&decision, PvcDecision::Actions(actions) if matches!(actions.as_slice(), [PvcAction::AddFinalizer(t)] if t.name == "data")),
        "{decision:?}"
    );
}
