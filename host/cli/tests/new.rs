//! `rekon new` as a guest author outside this repository uses it: scaffold,
//! build (cargo; npm; a venv with componentize-py), run the sample case
//! natively where the language has a runner and with `rekon test`. A
//! controller module (`--world controller`) also runs on the embedded API
//! server (`rekon simulate`) and is compared with a second version
//! (`rekon diff`).
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
    passes_its_cases(module, project, 1);
}

/// `rekon test` of `module` against the project's `count` cases passes.
fn passes_its_cases(module: &Path, project: &Path, count: usize) {
    assert!(module.is_file(), "{} was not built", module.display());
    let out = run(Command::new(env!("CARGO_BIN_EXE_rekon"))
        .args(["test", "--no-cache", "--guest"])
        .arg(module)
        .arg(project.join("cases")));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().last(),
        Some(format!("{count} passed, 0 failed").as_str()),
        "{stdout}"
    );
}

/// The cases of the controller template: `describe` and six decisions.
const CONTROLLER_CASES: usize = 7;

/// `rekon simulate` of the project's example (its CRD, a Namespace, an App)
/// with `module` as the only controller: the App ends with its Deployment,
/// owned by it, and a status.
fn runs_on_the_embedded_server(module: &Path, project: &Path, controller: &str) {
    let guests = project.join("guests");
    std::fs::create_dir_all(&guests).unwrap();
    std::fs::copy(module, guests.join("controller.wasm")).unwrap();
    let out = run(Command::new(env!("CARGO_BIN_EXE_rekon"))
        .args(["simulate", "--no-cache", "--guests"])
        .arg(&guests)
        .args(["--controllers", controller, "--state", "crd.yaml"])
        .args(["--state", "example.yaml"])
        .current_dir(project));
    let objects: Vec<serde_json::Value> = serde_yaml::Deserializer::from_slice(&out.stdout)
        .map(|document| serde::Deserialize::deserialize(document).unwrap())
        .collect();
    let find = |kind: &str| {
        objects
            .iter()
            .find(|o| o["kind"] == kind && o["metadata"]["name"] == "web")
            .unwrap_or_else(|| panic!("no {kind} web in {objects:#?}"))
    };
    let (app, deployment) = (find("App"), find("Deployment"));
    assert_eq!(app["status"]["availableReplicas"], 0, "{app:#}");
    assert_eq!(deployment["metadata"]["namespace"], "demo");
    assert_eq!(
        deployment["metadata"]["ownerReferences"][0]["uid"], app["metadata"]["uid"],
        "{deployment:#}"
    );
    assert_eq!(deployment["spec"]["replicas"], 2);
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.27"
    );
}

#[test]
fn a_new_rust_controller_builds_passes_its_cases_runs_and_diffs() {
    let projects = tempfile::tempdir().unwrap();
    let target = scaffold_target(projects.path());
    let dir = projects.path().join("my-controller");
    scaffold("rust", "controller", &dir);
    let cargo = |args: &[&str]| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut command = Command::new(cargo);
        command
            .args(args)
            .current_dir(&dir)
            .env("CARGO_TARGET_DIR", &target)
            // The test's own build settings are not the project's.
            .env_remove("CARGO_BUILD_TARGET")
            .env_remove("RUSTFLAGS");
        run(&mut command)
    };
    // The README's commands: the logic natively, then the component.
    let native = cargo(&["test", "--target", "host-tuple"]);
    let native = String::from_utf8_lossy(&native.stdout);
    assert!(native.contains("3 passed; 0 failed"), "{native}");
    cargo(&["build"]);
    let module = target.join("wasm32-wasip2/debug/my_controller.wasm");
    passes_its_cases(&module, &dir, CONTROLLER_CASES);
    runs_on_the_embedded_server(&module, &dir, "my-controller");

    // A second version naming its container differently: `rekon diff` shows
    // where it decides otherwise, over the cases and over the example.
    let old = projects.path().join("old.wasm");
    std::fs::copy(&module, &old).unwrap();
    let logic = dir.join("src/logic.rs");
    let text = std::fs::read_to_string(&logic).unwrap();
    let renamed = text.replace(
        r#"const CONTAINER: &str = "app";"#,
        r#"const CONTAINER: &str = "web";"#,
    );
    assert_ne!(text, renamed, "the template names its container");
    std::fs::write(&logic, renamed).unwrap();
    cargo(&["build"]);
    let diff = |compared: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_rekon"))
            .args(["diff", "--no-cache", "--old"])
            .arg(&old)
            .arg("--new")
            .arg(&module)
            .args(compared)
            .current_dir(&dir)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(out.status.code(), Some(1), "{stdout}");
        let changed = |sign: char, line: &str| {
            stdout
                .lines()
                .any(|l| l.starts_with(sign) && l.ends_with(line))
        };
        assert!(
            changed('-', "name: app") && changed('+', "name: web"),
            "{stdout}"
        );
        stdout
    };
    let over_cases = diff(&["--cases", "cases"]);
    // Creating and updating the Deployment differ; the rest agrees.
    assert!(
        over_cases.contains("4 decisions agreed, 3 differed, 0 failed"),
        "{over_cases}"
    );
    let over_example = diff(&["--state", "crd.yaml", "--state", "example.yaml"]);
    assert!(
        over_example.contains("--- demo/web (decide)"),
        "{over_example}"
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
fn a_new_typescript_controller_builds_passes_its_cases_and_runs() {
    let projects = tempfile::tempdir().unwrap();
    let dir = projects.path().join("ts-controller");
    scaffold("ts", "controller", &dir);
    run(Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(&dir));
    let out = run(Command::new("npm").arg("test").current_dir(&dir));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("{CONTROLLER_CASES} passed, 0 failed")),
        "{stdout}"
    );
    run(Command::new("npm").args(["run", "build"]).current_dir(&dir));
    let module = dir.join("ts-controller.wasm");
    passes_its_cases(&module, &dir, CONTROLLER_CASES);
    runs_on_the_embedded_server(&module, &dir, "ts-controller");
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

#[test]
fn new_refuses_a_python_controller_naming_the_languages_it_has() {
    let projects = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rekon"))
        .args(["new", "--lang", "python", "--world", "controller"])
        .arg(projects.path().join("c"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("(`--lang rust`, `--lang ts`), not Python"),
        "{stderr}"
    );
    assert!(!projects.path().join("c").exists(), "nothing written");
}
