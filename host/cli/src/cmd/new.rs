//! `rekon new`: scaffolds a guest project outside this repository that builds
//! and passes its sample cases out of the box: a decision module of a
//! dedicated world (Rust, TypeScript, Python), or a controller module of the
//! generic world (`--world controller`, Rust or TypeScript: a small controller
//! with its CRD, case files and an example to simulate).
//!
//! The templates (host/cli/templates/), the contract (wit/) and the TypeScript
//! and Python SDKs (guests/sdk/ts, guests/sdk/python, embedded by build.rs) are
//! carried in the binary, so the project needs nothing from a rekon checkout: a
//! Rust project depends on wit-bindgen (and a controller on serde_json) from
//! crates.io, a TypeScript project on the SDK's npm packages at the versions of
//! its package-lock.json, a Python project on the SDK's hash-pinned
//! requirements.txt.

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
    /// The world the guest implements: pvc-protection, resource-claim,
    /// ephemeral-volume, or controller (a controller of its own: Rust or ts).
    #[arg(long)]
    world: String,
    /// The project directory to create (must not exist, or be empty). Its last
    /// component names the project (and a controller module's controller).
    dir: PathBuf,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Lang {
    Rust,
    #[value(name = "ts")]
    TypeScript,
    Python,
}

/// A template: (path in the project, text with placeholders).
type Files = &'static [(&'static str, &'static str)];

/// The contract of the dedicated worlds, as this rekon serves it (newest
/// version only).
const WIT: Files = &[
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

/// The generic world's contract: a package of its own (0.3.0).
const CONTROLLER_WIT: Files = &[(
    "wit/controller.wit",
    include_str!("../../../../wit/controller.wit"),
)];

/// What a project of each world carries whatever its language: the contract
/// and the case files; a controller also its custom resource and an example.
const WORLD_FILES: [(&str, Files); 4] = [
    (
        "pvc-protection",
        &[(
            "cases/sample.yaml",
            include_str!("../../templates/cases/pvc-protection.yaml"),
        )],
    ),
    (
        "resource-claim",
        &[(
            "cases/sample.yaml",
            include_str!("../../templates/cases/resource-claim.yaml"),
        )],
    ),
    (
        "ephemeral-volume",
        &[(
            "cases/sample.yaml",
            include_str!("../../templates/cases/ephemeral-volume.yaml"),
        )],
    ),
    (
        "controller",
        &[
            (
                "cases/describe.yaml",
                include_str!("../../templates/controller/cases/describe.yaml"),
            ),
            (
                "cases/decide.yaml",
                include_str!("../../templates/controller/cases/decide.yaml"),
            ),
            (
                "crd.yaml",
                include_str!("../../templates/controller/crd.yaml"),
            ),
            (
                "example.yaml",
                include_str!("../../templates/controller/example.yaml"),
            ),
        ],
    ),
];

const RUST_DEDICATED: Files = &[
    (
        "Cargo.toml",
        include_str!("../../templates/rust/Cargo.toml"),
    ),
    ("README.md", include_str!("../../templates/rust/README.md")),
];

/// Per world, the code of a Rust project.
const RUST_WORLDS: [(&str, Files); 4] = [
    (
        "pvc-protection",
        &[(
            "src/lib.rs",
            include_str!("../../templates/rust/src/pvc-protection.rs"),
        )],
    ),
    (
        "resource-claim",
        &[(
            "src/lib.rs",
            include_str!("../../templates/rust/src/resource-claim.rs"),
        )],
    ),
    (
        "ephemeral-volume",
        &[(
            "src/lib.rs",
            include_str!("../../templates/rust/src/ephemeral-volume.rs"),
        )],
    ),
    (
        "controller",
        &[
            (
                "Cargo.toml",
                include_str!("../../templates/rust/controller/Cargo.toml"),
            ),
            (
                "README.md",
                include_str!("../../templates/rust/controller/README.md"),
            ),
            (
                "src/lib.rs",
                include_str!("../../templates/rust/controller/lib.rs"),
            ),
            (
                "src/logic.rs",
                include_str!("../../templates/rust/controller/logic.rs"),
            ),
        ],
    ),
];

const RUST_COMMON: Files = &[
    (
        ".cargo/config.toml",
        include_str!("../../templates/rust/cargo/config.toml"),
    ),
    (".gitignore", "/target\n"),
];

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let world = World::named(&args.world).ok_or_else(|| {
        anyhow::anyhow!(
            "unknown world `{}`: expected one of {}",
            args.world,
            World::all()
                .map(|w| w.name())
                .collect::<Vec<_>>()
                .join(", ")
        )
    })?;
    anyhow::ensure!(
        !(world.is_generic() && args.lang == Lang::Python),
        "`rekon new --world {world}` has templates in Rust and TypeScript (`--lang rust`, \
         `--lang ts`), not Python"
    );
    let project = Project::named(&args.dir, world)?;
    let files = match args.lang {
        Lang::Rust => rust_files(&project),
        Lang::TypeScript => ts_files(&project)?,
        Lang::Python => python_files(&project),
    };
    write_project(&args.dir, &files)?;
    println!(
        "created {} ({:?} guest of world {world}); next: see {}",
        args.dir.display(),
        args.lang,
        args.dir.join("README.md").display()
    );
    Ok(ExitCode::SUCCESS)
}

/// What the templates are filled in with.
struct Project {
    world: &'static str,
    /// The directory's last component: the package's name.
    name: String,
    /// A controller module's name for `--controllers`, metrics and Events: the
    /// project's name as a DNS label.
    controller: String,
}

impl Project {
    /// A project of `world` named after `dir`'s last component, checked to be a
    /// valid package name (and, for a controller, a DNS label once lower-cased
    /// with `_` as `-`).
    fn named(dir: &Path, world: World) -> anyhow::Result<Self> {
        let name = project_name(dir)?;
        let controller = name.to_ascii_lowercase().replace('_', "-");
        anyhow::ensure!(
            !world.is_generic() || (controller.len() <= 63 && !controller.ends_with('-')),
            "{}: a controller is named after its project, as a DNS label: at most 63 \
             characters, not ending with `-` or `_`",
            dir.display()
        );
        Ok(Self {
            world: world.name(),
            name,
            controller,
        })
    }

    fn is_controller(&self) -> bool {
        World::named(self.world).is_some_and(World::is_generic)
    }

    /// `text` with the project's placeholders filled in.
    fn render(&self, text: &str) -> String {
        text.replace("{{name}}", &self.name)
            .replace("{{crate}}", &self.name.replace('-', "_"))
            .replace("{{controller}}", &self.controller)
            .replace("{{world}}", self.world)
            .replace("{{rekon_version}}", env!("CARGO_PKG_VERSION"))
    }

    /// `files`, rendered, with the world's shared files and its contract.
    fn with_world_files<'a>(
        &self,
        files: impl IntoIterator<Item = &'a (&'static str, &'static str)>,
    ) -> Vec<(String, String)> {
        let wit = if self.is_controller() {
            CONTROLLER_WIT
        } else {
            WIT
        };
        files
            .into_iter()
            .chain(of_world(&WORLD_FILES, self.world))
            .map(|(path, text)| (path.to_string(), self.render(text)))
            .chain(
                wit.iter()
                    .map(|(path, text)| (path.to_string(), text.to_string())),
            )
            .collect()
    }
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

/// The template of `world` in a per-world list.
fn of_world<T: Copy>(list: &[(&str, T)], world: &str) -> T {
    list.iter()
        .find(|(w, _)| *w == world)
        .map(|(_, files)| *files)
        .expect("a template for every world")
}

/// The files of a Rust project: (relative path, text).
fn rust_files(project: &Project) -> Vec<(String, String)> {
    let dedicated = if project.is_controller() {
        &[]
    } else {
        RUST_DEDICATED
    };
    project.with_world_files(
        RUST_COMMON
            .iter()
            .chain(dedicated)
            .chain(of_world(&RUST_WORLDS, project.world)),
    )
}

/// Per world, the code of a TypeScript project (a controller's README too).
const TS_WORLDS: [(&str, Files); 4] = [
    (
        "pvc-protection",
        &[(
            "src/guest.ts",
            include_str!("../../templates/ts/src/pvc-protection.ts"),
        )],
    ),
    (
        "resource-claim",
        &[(
            "src/guest.ts",
            include_str!("../../templates/ts/src/resource-claim.ts"),
        )],
    ),
    (
        "ephemeral-volume",
        &[(
            "src/guest.ts",
            include_str!("../../templates/ts/src/ephemeral-volume.ts"),
        )],
    ),
    (
        "controller",
        &[
            (
                "README.md",
                include_str!("../../templates/ts/controller/README.md"),
            ),
            (
                "src/guest.ts",
                include_str!("../../templates/ts/controller/guest.ts"),
            ),
            (
                "src/logic.ts",
                include_str!("../../templates/ts/controller/logic.ts"),
            ),
        ],
    ),
];

const TS_DEDICATED: Files = &[("README.md", include_str!("../../templates/ts/README.md"))];

const TS_COMMON: Files = &[
    (
        "tsconfig.json",
        include_str!("../../templates/ts/tsconfig.json"),
    ),
    (".gitignore", include_str!("../../templates/ts/gitignore")),
];

/// Where a TypeScript project keeps the SDK (compiled with the guest).
const TS_SDK_DIR: &str = "rekon-guest";

/// The files of a TypeScript project: the SDK under `rekon-guest/`, a
/// package.json with the SDK's pinned dependencies and its lock file, so
/// `npm ci` installs exactly what the SDK was tested with.
fn ts_files(project: &Project) -> anyhow::Result<Vec<(String, String)>> {
    let (world, name) = (project.world, project.name.as_str());
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
    let dedicated = if project.is_controller() {
        &[]
    } else {
        TS_DEDICATED
    };
    files.extend(
        project.with_world_files(
            TS_COMMON
                .iter()
                .chain(dedicated)
                .chain(of_world(&TS_WORLDS, world)),
        ),
    );
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

const PY_COMMON: Files = &[
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
fn python_files(project: &Project) -> Vec<(String, String)> {
    let app = [("guest/app.py", of_world(&PY_WORLDS, project.world))];
    sdk::PY_SDK
        .iter()
        .map(|(path, text)| (path.to_string(), text.to_string()))
        .chain(project.with_world_files(PY_COMMON.iter().chain(&app)))
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

    fn project(world: &str, name: &str) -> Project {
        Project::named(Path::new(name), World::named(world).unwrap()).unwrap()
    }

    fn file<'a>(files: &'a [(String, String)], path: &str) -> &'a str {
        let found = files.iter().find(|(p, _)| p == path);
        &found.unwrap_or_else(|| panic!("{path} missing")).1
    }

    #[test]
    fn every_world_has_a_rust_template() {
        for world in World::all() {
            let files = rust_files(&project(world.name(), "my-guest"));
            assert!(
                file(&files, "src/lib.rs").contains(&format!("rekon:reconcile/{}@", world.name())),
                "{world}"
            );
            let paths: std::collections::BTreeSet<_> = files.iter().map(|(p, _)| p).collect();
            assert_eq!(paths.len(), files.len(), "{world}: a path written twice");
            for path in ["Cargo.toml", "README.md", ".cargo/config.toml"] {
                file(&files, path);
            }
        }
    }

    #[test]
    fn a_controller_project_carries_its_contract_cases_and_custom_resource() {
        for files in [
            rust_files(&project("controller", "My_Controller")),
            ts_files(&project("controller", "My_Controller")).unwrap(),
        ] {
            let wit: Vec<_> = files
                .iter()
                .filter(|(p, _)| p.starts_with("wit/"))
                .collect();
            assert_eq!(wit.len(), 1, "only the generic world's package");
            assert!(wit[0].1.contains("package rekon:reconcile@0.3.0;"));
            let described = file(&files, "cases/describe.yaml");
            assert!(described.contains("name: my-controller"), "{described}");
            assert!(!described.contains("{{"), "every placeholder is filled");
            assert!(file(&files, "crd.yaml").contains("kind: CustomResourceDefinition"));
            assert!(file(&files, "README.md").contains("--controllers my-controller"));
        }
    }

    #[test]
    fn a_controller_needs_a_dns_label_and_rust_or_typescript() {
        let controller = World::named("controller").unwrap();
        let long = "c".repeat(64);
        for bad in ["ends-", "ends_", long.as_str()] {
            let err = Project::named(Path::new(bad), controller).err();
            assert!(
                err.is_some_and(|e| e.to_string().contains("DNS label")),
                "{bad} accepted"
            );
        }
        // A dedicated world's module is not named after its project.
        assert!(
            Project::named(Path::new("ends-"), World::named("pvc-protection").unwrap()).is_ok()
        );
    }

    #[test]
    fn a_typescript_project_carries_the_sdk_and_the_sdks_pins() {
        let files = ts_files(&project("resource-claim", "my-guest")).unwrap();
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
        let files = python_files(&project("pvc-protection", "my-guest"));
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
