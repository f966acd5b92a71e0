//! The container image (Dockerfile) ships every reference module: its build
//! stage takes them from `make reference-guests`, which follows guests/* as
//! the Makefile's other guest targets do, and names no guest crate itself.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use rekon_runtime::World;
use rekon_runtime::testing::{built_guest, guest_dir};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn dockerfile() -> String {
    std::fs::read_to_string(root().join("Dockerfile")).expect("Dockerfile at the workspace root")
}

#[test]
fn the_dockerfile_takes_its_guests_from_the_makefile_and_names_no_guest_crate() {
    let text = dockerfile();
    assert!(
        text.contains("make reference-guests") && text.contains("GUESTS_OUT=/out/guests"),
        "Dockerfile: the build stage must run `make reference-guests ... GUESTS_OUT=/out/guests`"
    );
    assert!(
        text.lines()
            .any(|l| l.trim() == "COPY --from=build /out/guests /usr/share/rekon/guests"),
        "Dockerfile: the runtime stage must copy /out/guests to /usr/share/rekon/guests"
    );
    let instructions: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect();
    for named in ["rekon-guest-", "rekon_guest_"] {
        let naming: Vec<&&str> = instructions.iter().filter(|l| l.contains(named)).collect();
        assert!(
            naming.is_empty(),
            "Dockerfile names guest crates by hand ({named:?}); let the Makefile follow guests/*: {naming:?}"
        );
    }
}

#[test]
fn make_reference_guests_copies_one_module_per_world() {
    let out = tempfile::tempdir().unwrap();
    // `-o guests -o guests-rust`: the guests are built already (the test needs
    // them built), so only the copying runs here, never a nested build.
    let status = Command::new("make")
        .current_dir(root())
        .args(["--no-print-directory", "-o", "guests", "-o", "guests-rust"])
        .arg("reference-guests")
        .arg(format!("GUESTS_OUT={}", out.path().display()))
        .arg(format!("REKON_GUEST_DIR={}", guest_dir().display()))
        .status()
        .expect("run make");
    assert!(status.success(), "make reference-guests failed: {status}");
    let copied: BTreeSet<String> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let worlds: BTreeSet<String> = World::dedicated()
        .map(|w| format!("{}.wasm", w.name()))
        .collect();
    assert_eq!(copied, worlds, "one module per world, named <world>.wasm");
    for world in World::dedicated() {
        let built = built_guest(&format!("rekon_guest_{}", world.name().replace('-', "_")));
        assert_eq!(
            std::fs::read(out.path().join(format!("{}.wasm", world.name()))).unwrap(),
            std::fs::read(&built).unwrap(),
            "{}.wasm is not the module built from guests/{}",
            world.name(),
            world.name()
        );
    }
}
