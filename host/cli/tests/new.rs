//! `rekon new` as a guest author outside this repository uses it: scaffold,
//! build (cargo; npm; a venv with componentize-py), run the sample case
//! natively where the language has a runner and with `rekon test`.
//!
//! The TypeScript and Python cases need Node ≥ 20 with npm and python3 with
//! venv, and the npm and PyPI registries (or their caches).

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
    for world in WORLDS {
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
        passes_its_sample_case(&module, &dir);
    }
}

const WORLDS: [&str; 3] = ["pvc-protection", "resource-claim", "ephemeral-volume"];

/// `rekon test` of `module` against the project's sample case passes.
fn passes_its_sample_case(module: &Path, project: &Path) {
    assert!(module.is_file(), "{} was not built", module.display());
    let out = run(Command::new(env!("CARGO_BIN_EXE_rekon"))
        .args(["test", "--no-cache", "--guest"])
        .arg(module)
        .arg(project.join("cases")));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().last(),
        Some("1 passed, 0 failed"),
        "{stdout}"
    );
}

/// `rekon new --lang LANG --world W DIR` in an empty directory outside the
/// repository; the project must not point back into it.
fn scaffold(lang: &str, world: &str, dir: &Path) {
    run(Command::new(env!("CARGO_BIN_EXE_rekon"))
        .args(["new", "--lang", lang, "--world", world])
        .arg(dir));
    let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let repository = repository.canonicalize().unwrap();
    for entry in walk(dir) {
        let text = std::fs::read_to_string(&entry).unwrap_or_default();
        assert!(
            !text.contains(repository.to_str().unwrap()) && !text.contains("../../"),
            "{} points into the rekon repository",
            entry.display()
        );
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn a_new_typescript_guest_of_every_world_builds_and_passes_its_sample_case() {
    let projects = tempfile::tempdir().unwrap();
    for world in WORLDS {
        let name = format!("ts-{world}");
        let dir = projects.path().join(&name);
        scaffold("ts", world, &dir);
        run(Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&dir));
        let out = run(Command::new("npm").arg("test").current_dir(&dir));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("1 passed, 0 failed"),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        run(Command::new("npm").args(["run", "build"]).current_dir(&dir));
        passes_its_sample_case(&dir.join(format!("{name}.wasm")), &dir);
    }
}

#[test]
fn a_new_python_guest_of_every_world_builds_and_passes_its_sample_case() {
    let projects = tempfile::tempdir().unwrap();
    let venv = projects.path().join("venv");
    for world in WORLDS {
        let name = format!("py-{world}");
        let dir = projects.path().join(&name);
        scaffold("python", world, &dir);
        if !venv.exists() {
            // One venv for the three projects: their requirements.txt is the same.
            run(Command::new("python3").args(["-m", "venv"]).arg(&venv));
            run(Command::new(venv.join("bin/pip"))
                .args(["install", "--quiet", "--require-hashes", "-r"])
                .arg(dir.join("requirements.txt")));
        }
        let out = run(Command::new(venv.join("bin/python"))
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "guest"])
            .current_dir(&dir));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("2 passed"),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        let module = format!("{name}.wasm");
        run(Command::new(venv.join("bin/componentize-py"))
            .args(["-d", "wit", "-w"])
            .arg(format!("rekon:reconcile/{world}@0.2.0"))
            .args([
                "componentize",
                "app",
                "-p",
                "guest",
                "-p",
                ".",
                "-o",
                &module,
            ])
            .current_dir(&dir));
        passes_its_sample_case(&dir.join(module), &dir);
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
