//! Embeds the TypeScript and Python guest SDKs (guests/sdk/ts, guests/sdk/python)
//! in the binary, so `rekon new --lang ts|python` scaffolds a project that needs
//! nothing from a rekon checkout. Writes `$OUT_DIR/sdk.rs`: one list of
//! (path inside the SDK, text) per language, every file the SDK ships.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// What a project needs of each SDK: its sources and pins, not its own tests,
/// build output or installed packages.
const SDKS: [(&str, &str, &[&str], &[&str]); 2] = [
    (
        "TS_SDK",
        "guests/sdk/ts",
        &[
            "package.json",
            "package-lock.json",
            "tsconfig.base.json",
            "src",
            "generated",
        ],
        &["src/tests"],
    ),
    (
        "PY_SDK",
        "guests/sdk/python",
        &["requirements.txt", "rekon_guest"],
        &[],
    ),
];

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("../..");
    let mut out = String::new();
    for (name, dir, parts, skipped) in SDKS {
        let base = root.join(dir);
        let mut files = Vec::new();
        for part in parts {
            let path = base.join(part);
            println!("cargo:rerun-if-changed={}", path.display());
            collect(&base, &path, skipped, &mut files);
        }
        files.sort();
        writeln!(out, "pub const {name}: &[(&str, &str)] = &[").unwrap();
        for file in files {
            let relative = file.strip_prefix(&base).unwrap().to_str().unwrap();
            let absolute = file.canonicalize().unwrap();
            writeln!(
                out,
                "    ({relative:?}, include_str!({:?})),",
                absolute.to_str().unwrap()
            )
            .unwrap();
        }
        writeln!(out, "];").unwrap();
    }
    let dest = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("sdk.rs");
    std::fs::write(dest, out).unwrap();
}

/// Every file at or under `path`, except under `skipped` (relative to `base`)
/// and Python caches.
fn collect(base: &Path, path: &Path, skipped: &[&str], files: &mut Vec<PathBuf>) {
    let relative = path.strip_prefix(base).unwrap();
    if skipped.iter().any(|s| relative == Path::new(s))
        || path.file_name().is_some_and(|n| n == "__pycache__")
    {
        return;
    }
    if path.is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            collect(base, &entry.unwrap().path(), skipped, files);
        }
    } else {
        files.push(path.to_path_buf());
    }
}
