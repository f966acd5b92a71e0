//! The precompiled cache as commands use it: a module digest compiles once,
//! whichever command loads it next.

use std::path::{Path, PathBuf};
use std::process::Output;

use rekon_runtime::testing::built_guest;

/// The line logged when a compilation starts (`rekon_runtime::progress`).
const COMPILING: &str = "compiling module";

/// Runs rekon at info level with `env` set and without an inherited cache
/// directory, so each test picks its own.
fn rekon(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_rekon"));
    command
        .args(args)
        .env("RUST_LOG", "info")
        .env_remove("REKON_CACHE_DIR");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("run rekon")
}

fn pvc_cases() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../guests/pvc-protection/cases")
}

/// `rekon test` of the pvc-protection guest; returns its stderr.
fn test_pvc(extra: &[&str], env: &[(&str, &Path)]) -> String {
    let guest = built_guest("rekon_guest_pvc_protection");
    let cases = pvc_cases();
    let mut args = vec!["test", "--guest", guest.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.push(cases.to_str().unwrap());
    let out = rekon(&args, env);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "stdout:\n{}\nstderr:\n{stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    stderr
}

fn cached_modules(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_second_rekon_test_of_a_module_does_not_compile_it() {
    let cache = tempfile::tempdir().unwrap();
    let flag = ["--cache-dir", cache.path().to_str().unwrap()];
    let first = test_pvc(&flag, &[]);
    assert!(first.contains(COMPILING), "first run compiles: {first}");
    assert!(
        first.contains("compiled module"),
        "and says when it is done: {first}"
    );
    assert_eq!(
        cached_modules(cache.path()).len(),
        1,
        "one entry per digest"
    );

    let second = test_pvc(&flag, &[]);
    assert!(
        !second.contains(COMPILING),
        "second run loads the cache: {second}"
    );
    assert_eq!(cached_modules(cache.path()).len(), 1);
}

#[test]
fn the_cache_defaults_to_xdg_cache_home_and_no_cache_keeps_nothing() {
    let home = tempfile::tempdir().unwrap();
    let xdg = [("XDG_CACHE_HOME", home.path())];
    let default_dir = home.path().join("rekon");

    test_pvc(&["--no-cache"], &xdg);
    assert!(
        cached_modules(&default_dir).is_empty(),
        "--no-cache writes nothing"
    );

    test_pvc(&[], &xdg);
    assert_eq!(cached_modules(&default_dir).len(), 1);
    let second = test_pvc(&[], &xdg);
    assert!(!second.contains(COMPILING), "{second}");
}

#[test]
fn rekon_cache_dir_is_shared_by_eval_and_test() {
    let cache = tempfile::tempdir().unwrap();
    let env = [("REKON_CACHE_DIR", cache.path())];
    let input = tempfile::Builder::new().suffix(".yaml").tempfile().unwrap();
    std::fs::write(
        input.path(),
        "pvc: {meta: {namespace: default, name: data, uid: u, resource-version: \"1\"}}\ncached-pods: []\n",
    )
    .unwrap();
    let guest = built_guest("rekon_guest_pvc_protection");
    let eval = rekon(
        &[
            "eval",
            "--guest",
            guest.to_str().unwrap(),
            "--decision",
            "decide",
            "--input",
            input.path().to_str().unwrap(),
        ],
        &env,
    );
    let eval_stderr = String::from_utf8_lossy(&eval.stderr);
    assert!(eval.status.success(), "{eval_stderr}");
    assert!(eval_stderr.contains(COMPILING), "{eval_stderr}");

    let test = test_pvc(&[], &env);
    assert!(
        !test.contains(COMPILING),
        "compiled by eval already: {test}"
    );
}
