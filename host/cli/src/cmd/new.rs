//! `rekon new`: scaffolds a guest project outside this repository that builds
//! and passes its sample case out of the box.
//!
//! The templates (host/cli/templates/<lang>/) and the contract (wit/) are
//! carried in the binary, so the project needs nothing from a rekon checkout:
//! a Rust project depends on wit-bindgen from crates.io and generates its
//! bindings from its own copy of the WIT files.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use rekon_runtime::World;

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

/// One template per world: (world, src/lib.rs, cases/sample.yaml).
const RUST_WORLDS: [(&str, &str, &str); 3] = [
    (
        "pvc-protection",
        include_str!("../../templates/rust/src/pvc-protection.rs"),
        include_str!("../../templates/rust/cases/pvc-protection.yaml"),
    ),
    (
        "resource-claim",
        include_str!("../../templates/rust/src/resource-claim.rs"),
        include_str!("../../templates/rust/cases/resource-claim.yaml"),
    ),
    (
        "ephemeral-volume",
        include_str!("../../templates/rust/src/ephemeral-volume.rs"),
        include_str!("../../templates/rust/cases/ephemeral-volume.yaml"),
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
    let name = project_name(&args.dir)?;
    let files = match args.lang {
        Lang::Rust => rust_files(world.name(), &name),
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

/// The files of a Rust project of `world` named `name`: (relative path, text).
fn rust_files(world: &str, name: &str) -> Vec<(String, String)> {
    let (_, lib, cases) = RUST_WORLDS
        .iter()
        .find(|(w, _, _)| *w == world)
        .expect("a template for every world");
    let render = |text: &str| {
        text.replace("{{name}}", name)
            .replace("{{crate}}", &name.replace('-', "_"))
            .replace("{{world}}", world)
    };
    RUST_COMMON
        .iter()
        .chain(&[("src/lib.rs", *lib), ("cases/sample.yaml", *cases)])
        .map(|(path, text)| (path.to_string(), render(text)))
        .chain(
            WIT.iter()
                .map(|(path, text)| (path.to_string(), text.to_string())),
        )
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
        for world in World::all() {
            let files = rust_files(world.name(), "my-guest");
            let lib = &files.iter().find(|(p, _)| p == "src/lib.rs").unwrap().1;
            assert!(
                lib.contains(&format!("rekon:reconcile/{}@", world.name())),
                "{world}: {lib}"
            );
        }
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
