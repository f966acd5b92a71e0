//! `rekon new` as a guest author outside this repository uses it: scaffold,
//! build with cargo, run the sample case with `rekon test`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run(command: &mut Command) -> Output {
    let out = command.output().expect("spawn");
    assert!(
        out.status.success(),
        "{command:?} failed\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Where scaffolded projects build: a directory of their own inside the
/// workspace's target directory, so wit-bindgen compiles once across runs
/// (and never waits for the lock of the build running this test).
fn scaffold_target(fallback: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(|dir| PathBuf::from(dir).join("scaffold"))
        .unwrap_or_else(|| fallback.join("target"))
}

#[test]
fn a_new_rust_guest_of_every_world_builds_and_passes_its_sample_case() {
    let projects = tempfile::tempdir().unwrap();
    let target = scaffold_target(projects.path());
    for world in ["pvc-protection", "resource-claim", "ephemeral-volume"] {
        let name = format!("my-{world}");
        let dir = projects.path().join(&name);
        run(Command::new(env!("CARGO_BIN_EXE_rekon"))
            .args(["new", "--lang", "rust", "--world", world])
            .arg(&dir));
        assert!(
            dir.join("wit/types.wit").is_file(),
            "the contract is copied"
        );

        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        run(Command::new(cargo)
            .arg("build")
            .current_dir(&dir)
            .env("CARGO_TARGET_DIR", &target)
            // The test's own build settings are not the project's.
            .env_remove("CARGO_BUILD_TARGET")
            .env_remove("RUSTFLAGS"));
        let module = target
            .join("wasm32-wasip2/debug")
            .join(format!("{}.wasm", name.replace('-', "_")));
        assert!(module.is_file(), "{} was not built", module.display());

        let out = run(Command::new(env!("CARGO_BIN_EXE_rekon"))
            .args(["test", "--no-cache", "--guest"])
            .arg(&module)
            .arg(dir.join("cases")));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            stdout.lines().last(),
            Some("1 passed, 0 failed"),
            "{stdout}"
        );
    }
}

#[test]
fn new_refuses_an_unknown_world_naming_the_known_ones() {
    let projects = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rekon"))
        .args(["new", "--lang", "rust", "--world", "pvc"])
        .arg(projects.path().join("g"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("unknown world `pvc`") && stderr.contains("pvc-protection"),
        "{stderr}"
    );
    assert!(!projects.path().join("g").exists(), "nothing written");
}
