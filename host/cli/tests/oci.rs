//! `rekon push`, `pull`, `inspect`, `sign`, `verify`, `generate-key`, and
//! references in `test` and `diff`, as users run them: the built binary against
//! a real distribution registry on loopback.

use std::path::Path;
use std::process::{Command, Output};

use rekon_oci::testing::TestRegistry;
use rekon_runtime::testing::built_guest;

fn rekon(cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rekon"))
        .args(args)
        .env("XDG_CACHE_HOME", cache)
        .env_remove("REKON_DOCKER_CONFIG")
        .output()
        .expect("run rekon")
}

/// stdout of a run that must succeed.
fn ok(out: Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn pvc_guest() -> String {
    built_guest("rekon_guest_pvc_protection")
        .to_str()
        .unwrap()
        .to_string()
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(bytes))
}

#[test]
fn push_prints_the_digest_reference_and_pull_writes_the_same_bytes() {
    let registry = TestRegistry::start();
    let cache = tempfile::tempdir().unwrap();
    let tag = registry.reference("platform/pvc-protection:v1");
    let pushed = ok(rekon(cache.path(), &["push", &pvc_guest(), &tag]))
        .trim()
        .to_string();
    let prefix = format!("{}/platform/pvc-protection@sha256:", registry.host());
    assert!(
        pushed.starts_with(&prefix) && pushed.len() == prefix.len() + 64,
        "{pushed}"
    );

    let out = cache.path().join("pulled.wasm");
    let printed = ok(rekon(
        cache.path(),
        &["pull", &pushed, "-o", out.to_str().unwrap()],
    ));
    let original = std::fs::read(pvc_guest()).unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), original);
    assert!(
        printed.contains(&pushed) && printed.contains(&sha256_hex(&original)),
        "{printed}"
    );

    // By tag: resolved to the same digest; the second time from the cache.
    let printed = ok(rekon(cache.path(), &["pull", &tag]));
    assert!(
        printed.contains(&pushed) && printed.contains("from cache"),
        "{printed}"
    );
    assert!(
        cache
            .path()
            .join("rekon/oci/blobs/sha256")
            .join(sha256_hex(&original))
            .is_file()
    );
}

#[test]
fn inspect_shows_world_contract_version_exports_digest_and_size_of_a_file_and_a_reference() {
    let registry = TestRegistry::start();
    let cache = tempfile::tempdir().unwrap();
    let original = std::fs::read(pvc_guest()).unwrap();
    let from_file = ok(rekon(cache.path(), &["inspect", &pvc_guest()]));
    for line in [
        "world: pvc-protection".to_string(),
        format!("sha256: {}", sha256_hex(&original)),
        format!("size: {} bytes", original.len()),
    ] {
        assert!(from_file.contains(&line), "{line} missing in\n{from_file}");
    }
    assert!(from_file.contains("contract version: 0."), "{from_file}");
    assert!(
        from_file.contains("exports: rekon:reconcile/") && from_file.contains("(decide"),
        "{from_file}"
    );

    let pushed = ok(rekon(
        cache.path(),
        &["push", &pvc_guest(), &registry.reference("p/pvc:v1")],
    ))
    .trim()
    .to_string();
    let from_registry = ok(rekon(cache.path(), &["inspect", &pushed]));
    assert!(
        from_registry.contains(&format!(
            "manifest digest: {}",
            pushed.split('@').nth(1).unwrap()
        )),
        "{from_registry}"
    );
    let without_name = |text: &str| {
        text.lines()
            .filter(|l| !l.starts_with("module:") && !l.starts_with("manifest"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(without_name(&from_registry), without_name(&from_file));
}

#[test]
fn test_and_diff_take_a_registry_reference_for_the_module() {
    let registry = TestRegistry::start();
    let cache = tempfile::tempdir().unwrap();
    let pushed = ok(rekon(
        cache.path(),
        &["push", &pvc_guest(), &registry.reference("p/pvc:v1")],
    ))
    .trim()
    .to_string();
    let cases = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../guests/pvc-protection/cases");
    let tested = ok(rekon(
        cache.path(),
        &["test", "--guest", &pushed, cases.to_str().unwrap()],
    ));
    assert!(tested.trim_end().ends_with(" passed, 0 failed"), "{tested}");

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("state.yaml"),
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns}\n",
    )
    .unwrap();
    let state = dir.path().join("state.yaml");
    let diffed = ok(rekon(
        cache.path(),
        &[
            "diff",
            "--old",
            &pushed,
            "--new",
            &pvc_guest(),
            "--state",
            state.to_str().unwrap(),
        ],
    ));
    assert!(diffed.contains("0 differed, 0 failed"), "{diffed}");
}

#[test]
fn a_signed_module_pulls_with_its_key_and_is_refused_with_another() {
    let registry = TestRegistry::start();
    let cache = tempfile::tempdir().unwrap();
    let keys = tempfile::tempdir().unwrap();
    let team = keys.path().join("team");
    let stranger = keys.path().join("stranger");
    ok(rekon(
        cache.path(),
        &["generate-key", team.to_str().unwrap()],
    ));
    ok(rekon(
        cache.path(),
        &["generate-key", stranger.to_str().unwrap()],
    ));
    let again = rekon(cache.path(), &["generate-key", team.to_str().unwrap()]);
    assert!(
        !again.status.success()
            && String::from_utf8_lossy(&again.stderr).contains("not overwriting")
    );

    let pushed = ok(rekon(
        cache.path(),
        &["push", &pvc_guest(), &registry.reference("p/pvc:v1")],
    ))
    .trim()
    .to_string();
    let team_key = format!("{}.key", team.display());
    let team_pub = format!("{}.pub", team.display());
    let stranger_pub = format!("{}.pub", stranger.display());

    let unsigned = rekon(cache.path(), &["pull", &pushed, "--key", &team_pub]);
    let stderr = String::from_utf8_lossy(&unsigned.stderr);
    assert!(
        !unsigned.status.success() && stderr.contains("is not signed") && stderr.contains(&pushed),
        "{stderr}"
    );

    let signature = ok(rekon(cache.path(), &["sign", "--key", &team_key, &pushed]));
    assert!(signature.trim().ends_with(".sig"), "{signature}");
    let verified = ok(rekon(
        cache.path(),
        &["verify", "--key", &team_pub, &pushed],
    ));
    assert_eq!(verified.trim(), format!("verified {pushed}"));
    let pulled = ok(rekon(cache.path(), &["pull", &pushed, "--key", &team_pub]));
    assert!(pulled.contains("signature verified"), "{pulled}");

    let wrong = rekon(cache.path(), &["pull", &pushed, "--key", &stranger_pub]);
    let stderr = String::from_utf8_lossy(&wrong.stderr);
    assert!(
        !wrong.status.success() && stderr.contains("bad signature"),
        "{stderr}"
    );
}

#[test]
fn pulling_a_missing_module_fails_naming_the_reference() {
    let registry = TestRegistry::start();
    let cache = tempfile::tempdir().unwrap();
    let missing = registry.reference(&format!("p/none@sha256:{}", "4".repeat(64)));
    let out = rekon(cache.path(), &["pull", &missing]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains(&missing) && stderr.contains("not found"),
        "{stderr}"
    );
}
