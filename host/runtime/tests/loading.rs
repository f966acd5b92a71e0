//! Loading rejects what the host cannot run, with messages naming the file,
//! what it exports and what was expected.

use rekon_runtime::testing::built_guest;
use rekon_runtime::{Engine, EngineConfig, LoadError, World};

fn engine() -> Engine {
    Engine::new(EngineConfig {
        max_concurrent_decisions: 4,
        max_memory_bytes: 64 << 20,
        ..EngineConfig::default()
    })
    .unwrap()
}

fn write_temp(name: &str, bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    (dir, path)
}

#[test]
fn core_module_is_rejected_with_a_build_hint() {
    let core = wat::parse_str(r#"(module (func (export "decide")))"#).unwrap();
    let (_dir, path) = write_temp("core.wasm", &core);
    let err = engine().loader().file(&path).unwrap_err();
    assert!(matches!(err, LoadError::CoreModule { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.starts_with(&format!(
            "{}: is a core WebAssembly module, not a component; build for wasm32-wasip2",
            path.display()
        )),
        "{message}"
    );
}

#[test]
fn empty_component_exports_nothing() {
    let err = engine()
        .loader()
        .bytes("empty", b"(component)")
        .unwrap_err();
    assert!(matches!(err, LoadError::NoSupportedWorld { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.starts_with(
            "empty: does not export any of rekon:reconcile/pvc-decider@0.2.0, \
             rekon:reconcile/claim-decider@0.2.0, "
        ),
        "{message}"
    );
    assert!(
        message.ends_with(
            "; it exports nothing; host supports rekon:reconcile 0.3.0, 0.2.0, 0.1.0"
        ),
        "{message}"
    );
    assert!(message.contains("rekon:reconcile/claim-decider@0.1.0"), "{message}");
    // Every world's decider, at every version that has the world.
    for world in World::all() {
        let newest = if world.is_generic() { "0.3.0" } else { "0.2.0" };
        let export = format!("rekon:reconcile/{}@{newest}", world.interface());
        assert!(message.contains(&export), "{message}");
    }
}

#[test]
fn unsupported_contract_version_is_named() {
    let future = r#"(component
        (instance $decider)
        (export "rekon:reconcile/pvc-decider@0.9.0" (instance $decider))
    )"#;
    let err = engine()
        .loader()
        .world(World::of::<rekon_contract::PvcProtectionWorld>())
        .bytes("future", future.as_bytes())
        .unwrap_err();
    assert!(matches!(err, LoadError::UnsupportedVersion { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "future: exports rekon:reconcile/pvc-decider@0.9.0: rekon:reconcile 0.9.0 is not a \
         contract version this host supports (it supports 0.3.0, 0.2.0, 0.1.0); rebuild the guest \
         against one of them"
    );
}

#[test]
fn guest_of_another_world_is_rejected_listing_its_exports() {
    let path = built_guest("rekon_guest_pvc_protection");
    let err = engine()
        .loader()
        .world(World::of::<rekon_contract::ResourceClaimWorld>())
        .file(&path)
        .unwrap_err();
    let message = err.to_string();
    assert!(
        message.starts_with(&format!(
            "{}: does not export any of rekon:reconcile/claim-decider@0.2.0, \
             rekon:reconcile/claim-decider@0.1.0; it exports \
             rekon:reconcile/pvc-decider@0.2.0",
            path.display()
        )),
        "{message}"
    );
}

#[test]
fn world_is_detected_from_the_exports() {
    let engine = engine();
    let pvc = engine
        .loader()
        .file(built_guest("rekon_guest_pvc_protection"))
        .unwrap();
    let claim = engine
        .loader()
        .file(built_guest("rekon_guest_resource_claim"))
        .unwrap();
    assert_eq!(
        pvc.world(),
        World::of::<rekon_contract::PvcProtectionWorld>()
    );
    assert_eq!(
        claim.world(),
        World::of::<rekon_contract::ResourceClaimWorld>()
    );
    assert_eq!(pvc.version().version, "0.2.0");
    assert_eq!(pvc.version().package(), "rekon:reconcile@0.2.0");
    assert_eq!(pvc.id().name(), "rekon_guest_pvc_protection");
    assert_eq!(pvc.id().digest().len(), 64);
    assert_ne!(pvc.id().digest(), claim.id().digest());
}

#[test]
fn garbage_and_missing_files_name_the_file() {
    let (_dir, path) = write_temp("junk.wasm", b"\0asm\x0d\0\x01\0garbage");
    let err = engine().loader().file(&path).unwrap_err();
    assert!(matches!(err, LoadError::Compile { .. }), "{err}");
    assert!(err.to_string().starts_with(&format!(
        "{}: not a valid WebAssembly component",
        path.display()
    )));

    let err = engine()
        .loader()
        .file("/nonexistent/guest.wasm")
        .unwrap_err();
    assert!(matches!(err, LoadError::Read { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with("/nonexistent/guest.wasm: cannot read")
    );
}

#[test]
fn memory_cap_above_the_engine_maximum_is_refused() {
    let err = engine()
        .loader()
        .limits(rekon_runtime::Limits {
            memory_bytes: 128 << 20,
            ..Default::default()
        })
        .file(built_guest("rekon_guest_pvc_protection"))
        .unwrap_err();
    assert!(matches!(err, LoadError::MemoryCapTooLarge { .. }), "{err}");
}

#[test]
fn precompiled_component_loads_and_decides_like_the_original() {
    let engine = engine();
    let bytes = std::fs::read(built_guest("rekon_guest_pvc_protection")).unwrap();
    let cwasm = engine.precompile("pvc-protection", &bytes).unwrap();

    let err = engine.loader().bytes("cwasm", &cwasm).unwrap_err();
    assert!(matches!(err, LoadError::Precompiled { .. }), "{err}");

    // SAFETY: produced just above by the same engine.
    let precompiled = unsafe { engine.loader().precompiled("pvc", &cwasm) }.unwrap();
    let original = engine.loader().bytes("pvc", &bytes).unwrap();
    let input = || rekon_contract::model::PvcInput {
        pvc: rekon_contract::model::Pvc::default(),
        ..Default::default()
    };
    assert_eq!(
        precompiled.decide_pvc(input()).unwrap(),
        original.decide_pvc(input()).unwrap()
    );
}

#[test]
fn loaded_guests_can_be_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<rekon_runtime::GuestPre>();
    assert_send_sync::<Engine>();
}

#[test]
fn the_ephemeral_volume_guest_is_detected_and_decides_through_the_generic_call() {
    use rekon_contract::EphemeralVolumeWorld;
    use rekon_guest::ephemeral::*;
    let guest = engine()
        .loader()
        .file(built_guest("rekon_guest_ephemeral_volume"))
        .expect("ephemeral-volume guest (run `make guests`)");
    assert_eq!(
        guest.world(),
        World::of::<rekon_contract::EphemeralVolumeWorld>()
    );
    assert_eq!(guest.version().version, "0.2.0");
    let input = VolumeInput {
        pod: EphemeralPod {
            namespace: "ns".into(),
            name: "web".into(),
            uid: "pu".into(),
            deleting: false,
        },
        volumes: vec![EphemeralVolume {
            name: "scratch".into(),
            ..EphemeralVolume::default()
        }],
    };
    let decision = guest.decide::<EphemeralVolumeWorld>(input).unwrap();
    assert_eq!(
        decision.actions,
        [VolumeAction::CreatePvc("scratch".into())]
    );
    // A guest of another world is refused by name, not trapped.
    let pvc = engine()
        .loader()
        .file(built_guest("rekon_guest_pvc_protection"))
        .unwrap();
    let err = pvc
        .decide::<EphemeralVolumeWorld>(VolumeInput::default())
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("is a pvc-protection guest and does not export `decide`"),
        "{err}"
    );
}
