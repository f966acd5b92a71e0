//! The `rekon` binary as users run it, from the workspace tests (which, unlike
//! host/cli's own, get no `CARGO_BIN_EXE_rekon`): `REKON_BIN`, or the debug
//! binary beside the test's own executable. `cargo test --workspace` (`make
//! test`) builds it; before a single test of this crate, `cargo build -p rekon`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `rekon` binary to run.
///
/// # Panics
///
/// When it does not exist.
pub fn rekon_binary() -> PathBuf {
    let path = match std::env::var_os("REKON_BIN") {
        Some(path) => PathBuf::from(path),
        // target/<profile>/deps/<test> → target/<profile>/rekon
        None => std::env::current_exe()
            .expect("the test's executable")
            .parent()
            .and_then(Path::parent)
            .expect("target/<profile>/deps")
            .join(format!("rekon{}", std::env::consts::EXE_SUFFIX)),
    };
    assert!(
        path.is_file(),
        "{} does not exist: run `cargo build -p rekon` first (or set REKON_BIN)",
        path.display()
    );
    path
}

/// Runs `rekon ARGS` to completion.
pub fn rekon(args: &[&str]) -> Output {
    Command::new(rekon_binary())
        .args(args)
        .output()
        .expect("run rekon")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// A path of the repository, from its root.
pub fn workspace_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative)
}

/// Runs the shipped cases of one guest and checks every case passed.
pub fn shipped_cases_pass(guest: &str, cases: &Path) {
    let guest = rekon_runtime::testing::built_guest(guest);
    let out = rekon(&["test", "--guest", path_str(&guest), path_str(cases)]);
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        text(&out.stderr)
    );
    let summary = stdout.lines().last().unwrap_or_default();
    let passed: usize = summary
        .strip_suffix(" passed, 0 failed")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected summary line {summary:?}"));
    assert!(passed > 0, "no cases ran");
    let ok_lines = stdout.lines().filter(|l| l.starts_with("ok   ")).count();
    assert_eq!(ok_lines, passed, "{stdout}");
}
