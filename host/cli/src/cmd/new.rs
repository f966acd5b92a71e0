//! `rekon new`: scaffolds a guest project outside this repository that builds
//! and passes its sample case out of the box.
//!
//! The templates (host/cli/templates/), the contract (wit/) and the TypeScript
//! and Python SDKs (guests/sdk/ts, guests/sdk/python, embedded by build.rs) are
//! carried in the binary, so the project needs nothing from a rekon checkout: a
//! Rust project depends on wit-bindgen from crates.io, a TypeScript project on
//! the SDK's npm packages at the versions of its package-lock.json, a Python
//! project on the SDK's hash-pinned requirements.txt.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use rekon_runtime::World;
use serde_json::Value;

/// The SDKs, file by file: `TS_SDK` and `PY_SDK`, (path inside the SDK, text).
mod sdk {
    include!(concat!(env!("OUT_DIR"), "/sdk.rs"));
}

#[derive(clap::Args)]
pub struct Args {
    /// The guest's language.
    #[arg(long, value_enum)]
    lang: Lang,
    /// The world the guest implements: pvc-protection, resource-claim or
    /// ephemeral-volume.
    #[arg(long)]
    world: String,
    /// The project directory to create (must not exist, or be empty). Its last
    /// component names the project.
    dir: PathBuf,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Lang {
    Rust,
    #[value(name = "ts")]
    TypeScript,
    Python,
}

/// The contract, as this rekon serves it (newest version only).
const WIT: [(&str, &str); 4] = [
    (
        "wit/types.wit",
        include_str!("../../../../wit/deps/rekon-reconcile@0.2.0/types.wit"),
    ),
    (
        "wit/pvc-protection.wit",
        include_str!("../../../../wit/deps/rekon-reconcile@0.2.0/pvc-protection.wit"),
    ),
    (
        "wit/resource-claim.wit",
        include_str!("../../../../wit/deps/rekon-reconcile@0.2.0/resource-claim.wit"),
    ),
    (
        "wit/ephemeral-volume.wit",
        include_str!("../../../../wit/deps/rekon-reconcile@0.2.0/ephemeral-volume.wit"),
    ),
];

/// One template per world: (world, src/lib.rs).
const RUST_WORLDS: [(&str, &str); 3] = [
    (
        "pvc-protection",
        include_str!("../../templates/rust/src/pvc-protection.rs"),
    ),
    (
        "resource-claim",
        include_str!("../../templates/rust/src/resource-claim.rs"),
    ),
    (
        "ephemeral-volume",
        include_str!("../../templates/rust/src/ephemeral-volume.rs"),
    ),
];

const RUST_COMMON: [(&str, &str); 4] = [
    (
        "Cargo.toml",
        include_str!("../../templates/rust/Cargo.toml"),
    ),
    (
        ".cargo/config.toml",
        include_str!("../../templates/rust/cargo/config.toml"),
    ),
    ("README.md", include_str!("../../templates/rust/README.md")),
    (".gitignore", "/target\n"),
];

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    if World::named(&args.world).is_some_and(World::is_generic) {
        anyhow::bail!(
            "`rekon new --world {}` has no template yet: start from guests/pv-protection \
             (Rust) or guests/sample-controller (TypeScript), see docs/src/guests/controller.md",
            args.world
        );
    }
    let world = World::named(&args.world)
        .filter(|w| !w.is_generic())
        .ok_or_else(|| {
            anyhow::anyhow!(
                "unknown world `{}`: expected one of {}",
                args.world,
                World::dedicated()
                    .map(|w| w.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?;
    let name = project_name(&args.dir)?;
    let files = match args.lang {
        Lang::Rust => rust_files(world.name(), &name),
        Lang::TypeScript => ts_files(world.name(), &name)?,
        Lang::Python => python_files(world.name(), &name),
    };
    write_project(&args.dir, &files)?;
    println!(
        "created {} ({:?} guest of world {}); next: see {}",
        args.dir.display(),
        args.lang,
        world.name(),
        args.dir.join("README.md").display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The directory's last component, checked to be a valid package name.
fn project_name(dir: &Path) -> anyhow::Result<String> {
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .with_context(|| format!("{}: cannot name a project after it", dir.display()))?;
    anyhow::ensure!(
        name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
        "{}: a project name starts with a letter and has only letters, digits, `-` and `_`",
        dir.display()
    );
    Ok(name.to_owned())
}

/// `text` with the project's placeholders filled in.
fn render(text: &str, world: &str, name: &str) -> String {
    text.replace("{{name}}", name)
        .replace("{{crate}}", &name.replace('-', "_"))
        .replace("{{world}}", world)
        .replace("{{rekon_version}}", env!("CARGO_PKG_VERSION"))
}

/// The template of `world` in a per-world list.
fn of_world<'a>(list: &'a [(&str, &'a str)], world: &str) -> &'a str {
    list.iter()
        .find(|(w, _)| *w == world)
        .map(|(_, text)| *text)
        .expect("a template for every world")
}

/// The sample case of each world, shared by every language.
const CASES: [(&str, &str); 3] = [
    (
        "pvc-protection",
        include_str!("../../templates/cases/pvc-protection.yaml"),
    ),
    (
        "resource-claim",
        include_str!("../../templates/cases/resource-claim.yaml"),
    ),
    (
        "ephemeral-volume",
        include_str!("../../templates/cases/ephemeral-volume.yaml"),
    ),
];

/// The contract's files, as every project carries them.
fn wit_files() -> impl Iterator<Item = (String, String)> {
    WIT.iter()
        .map(|(path, text)| (path.to_string(), text.to_string()))
}

/// The files of a Rust project of `world` named `name`: (relative path, text).
fn rust_files(world: &str, name: &str) -> Vec<(String, String)> {
    RUST_COMMON
        .iter()
        .chain(&[
            ("src/lib.rs", of_world(&RUST_WORLDS, world)),
            ("cases/sample.yaml", of_world(&CASES, world)),
        ])
        .map(|(path, text)| (path.to_string(), render(text, world, name)))
        .chain(wit_files())
        .collect()
}

const TS_WORLDS: [(&str, &str); 3] = [
    (
        "pvc-protection",
        include_str!("../../templates/ts/src/pvc-protection.ts"),
    ),
    (
        "resource-claim",
        include_str!("../../templates/ts/src/resource-claim.ts"),
    ),
    (
        "ephemeral-volume",
        include_str!("../../templates/ts/src/ephemeral-volume.ts"),
    ),
];

const TS_COMMON: [(&str, &str); 3] = [
    (
        "tsconfig.json",
        include_str!("../../templates/ts/tsconfig.json"),
    ),
    ("README.md", include_str!("../../templates/ts/README.md")),
    (".gitignore", include_str!("../../templates/ts/gitignore")),
];

/// Where a TypeScript project keeps the SDK (compiled with the guest).
const TS_SDK_DIR: &str = "rekon-guest";

/// The files of a TypeScript project: the SDK under `rekon-guest/`, a
/// package.json with the SDK's pinned dependencies and its lock file, so
/// `npm ci` installs exactly what the SDK was tested with.
fn ts_files(world: &str, name: &str) -> anyhow::Result<Vec<(String, String)>> {
    let sdk_file = |path: &str| {
        sdk::TS_SDK
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, text)| *text)
            .with_context(|| format!("the embedded TypeScript SDK has no {path}"))
    };
    let mut package: Value = serde_json::from_str(sdk_file("package.json")?)?;
    let mut lock: Value = serde_json::from_str(sdk_file("package-lock.json")?)?;
    let wasm = format!("{name}.wasm");
    let compiled = |tool: &str| format!("node dist/{TS_SDK_DIR}/src/{tool}");
    package["description"] = format!("rekon:reconcile/{world} decision module").into();
    package["scripts"] = serde_json::json!({
        "build": format!("tsc -p . && {} --world {world} --wit wit -o {wasm} dist/src/guest.js", compiled("build.js")),
        "test": format!("tsc -p . && {} --world {world} --guest dist/src/guest.js cases", compiled("cases/cli.js")),
    });
    // The project's own name and version; the SDK's bin entries and licence
    // are not the project's.
    let rename = |object: &mut Value| {
        if let Some(fields) = object.as_object_mut() {
            fields.remove("bin");
            fields.remove("license");
            fields.insert("name".into(), name.into());
            fields.insert("version".into(), "0.1.0".into());
        }
    };
    rename(&mut package);
    rename(&mut lock);
    rename(&mut lock["packages"][""]);
    let json = |value: &Value| serde_json::to_string_pretty(value).map(|text| text + "\n");
    let mut files = vec![
        ("package.json".to_string(), json(&package)?),
        ("package-lock.json".to_string(), json(&lock)?),
    ];
    files.extend(
        sdk::TS_SDK
            .iter()
            .filter(|(path, _)| *path != "package-lock.json")
            .map(|(path, text)| (format!("{TS_SDK_DIR}/{path}"), text.to_string())),
    );
    files.extend(
        TS_COMMON
            .iter()
            .chain(&[
                ("src/guest.ts", of_world(&TS_WORLDS, world)),
                ("cases/sample.yaml", of_world(&CASES, world)),
            ])
            .map(|(path, text)| (path.to_string(), render(text, world, name))),
    );
    files.extend(wit_files());
    Ok(files)
}

const PY_WORLDS: [(&str, &str); 3] = [
    (
        "pvc-protection",
        include_str!("../../templates/python/guest/pvc-protection.py"),
    ),
    (
        "resource-claim",
        include_str!("../../templates/python/guest/resource-claim.py"),
    ),
    (
        "ephemeral-volume",
        include_str!("../../templates/python/guest/ephemeral-volume.py"),
    ),
];

const PY_COMMON: [(&str, &str); 3] = [
    (
        "guest/test_cases.py",
        include_str!("../../templates/python/guest/test_cases.py"),
    ),
    (
        "README.md",
        include_str!("../../templates/python/README.md"),
    ),
    (
        ".gitignore",
        include_str!("../../templates/python/gitignore"),
    ),
];

/// The files of a Python project: the SDK package `rekon_guest/` and its
/// hash-pinned requirements.txt beside the guest in `guest/`.
fn python_files(world: &str, name: &str) -> Vec<(String, String)> {
    sdk::PY_SDK
        .iter()
        .map(|(path, text)| (path.to_string(), text.to_string()))
        .chain(
            PY_COMMON
                .iter()
                .chain(&[
                    ("guest/app.py", of_world(&PY_WORLDS, world)),
                    ("cases/sample.yaml", of_world(&CASES, world)),
                ])
                .map(|(path, text)| (path.to_string(), render(text, world, name))),
        )
        .chain(wit_files())
        .collect()
}

/// Writes `files` under `dir`, which must not exist or be empty.
fn write_project(dir: &Path, files: &[(String, String)]) -> anyhow::Result<()> {
    if dir.exists() {
        let mut entries =
            std::fs::read_dir(dir).with_context(|| format!("{}: cannot list", dir.display()))?;
        anyhow::ensure!(
            entries.next().is_none(),
            "{}: exists and is not empty",
            dir.display()
        );
    }
    for (path, text) in files {
        let path = dir.join(path);
        let parent = path
            .parent()
            .expect("files are under the project directory");
        std::fs::create_dir_all(parent)
            .with_context(|| format!("{}: cannot create", parent.display()))?;
        std::fs::write(&path, text).with_context(|| format!("{}: cannot write", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_world_has_a_rust_template() {
        for world in World::dedicated() {
            let files = rust_files(world.name(), "my-guest");
            let lib = &files.iter().find(|(p, _)| p == "src/lib.rs").unwrap().1;
            assert!(
                lib.contains(&format!("rekon:reconcile/{}@", world.name())),
                "{world}: {lib}"
            );
        }
    }

    #[test]
    fn a_typescript_project_carries_the_sdk_and_the_sdks_pins() {
        let files = ts_files("resource-claim", "my-guest").unwrap();
        let file = |path: &str| {
            let text = &files.iter().find(|(p, _)| p == path).unwrap().1;
            serde_json::from_str::<Value>(text).unwrap()
        };
        let (package, lock) = (file("package.json"), file("package-lock.json"));
        assert_eq!(package["name"], "my-guest");
        assert_eq!(lock["packages"][""]["name"], "my-guest");
        // npm ci refuses a lock whose root dependencies differ from package.json.
        assert_eq!(
            package["dependencies"],
            lock["packages"][""]["dependencies"]
        );
        assert!(package["dependencies"]["@bytecodealliance/componentize-js"].is_string());
        for path in [
            "rekon-guest/src/index.ts",
            "rekon-guest/src/build.ts",
            "src/guest.ts",
        ] {
            assert!(files.iter().any(|(p, _)| p == path), "{path} missing");
        }
        assert!(
            !files.iter().any(|(p, _)| p.contains("/tests/")),
            "the SDK's own tests are not shipped"
        );
    }

    #[test]
    fn a_python_project_carries_the_sdk_and_its_hash_pinned_requirements() {
        let files = python_files("pvc-protection", "my-guest");
        let text = |path: &str| &files.iter().find(|(p, _)| p == path).unwrap().1;
        assert!(text("requirements.txt").contains("--hash=sha256:"));
        assert!(text("rekon_guest/__init__.py").contains("CONTRACT_VERSION"));
        assert!(text("guest/test_cases.py").contains("\"pvc-protection\""));
        assert!(text("guest/app.py").contains("class PvcDecider"));
    }

    #[test]
    fn project_names_must_be_package_names() {
        assert_eq!(
            project_name(Path::new("/tmp/my-guest")).unwrap(),
            "my-guest"
        );
        assert!(project_name(Path::new("/tmp/1guest")).is_err());
        assert!(project_name(Path::new("/tmp/my guest")).is_err());
    }

    #[test]
    fn a_non_empty_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("keep"), "").unwrap();
        let err = write_project(dir.path(), &[]).unwrap_err();
        assert!(err.to_string().contains("exists and is not empty"), "{err}");
    }
}
