//! The chapter "From `rekon new` to a promoted module"
//! (docs/src/delivery/walkthrough.md) runs as written: every `sh` block, in
//! order, in one `bash -e` shell in an empty directory outside the repository,
//! with this build's `rekon` first on PATH and a loopback registry
//! (`REGISTRY`). Prints how long it took; the chapter states that time.
//!
//! Needs Node ≥ 20 with npm (and the npm registry, or its cache) and kubectl.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};

/// Longer than the walkthrough ever took; a step that hangs fails the test.
const DEADLINE: Duration = Duration::from_secs(600);

fn chapter() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/src/delivery/walkthrough.md")
}

/// The chapter's `sh` blocks, in order.
fn sh_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for event in Parser::new(markdown) {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) if &*info == "sh" => {
                current = Some(String::new())
            }
            Event::Text(text) if current.is_some() => current.as_mut().unwrap().push_str(&text),
            Event::End(TagEnd::CodeBlock) => blocks.extend(current.take()),
            _ => {}
        }
    }
    blocks
}

#[test]
fn the_walkthrough_chapter_runs_as_written() {
    let text = std::fs::read_to_string(chapter()).expect("the chapter");
    let blocks = sh_blocks(&text);
    assert!(blocks.len() >= 5, "{} sh blocks", blocks.len());
    let script = format!("set -euo pipefail\n{}", blocks.join("\n"));

    let registry = rekon_oci::testing::TestRegistry::start();
    let work = tempfile::tempdir().unwrap();
    let rekon = Path::new(env!("CARGO_BIN_EXE_rekon"));
    let path = std::env::join_paths(
        std::iter::once(rekon.parent().unwrap().to_path_buf()).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )),
    )
    .unwrap();
    let started = Instant::now();
    // Its own process group, so a hung step (a wait loop that never ends) and
    // the background `rekon run` are stopped together at the deadline.
    let stdout_path = work.path().join("stdout");
    let stderr_path = work.path().join("stderr");
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(work.path())
        .env("PATH", path)
        .env("REGISTRY", registry.host())
        .env_remove("KUBECONFIG")
        .env_remove("REKON_GUEST_DIR")
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .process_group(0)
        .spawn()
        .expect("bash");
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > DEADLINE {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let took = started.elapsed();
    let out_text = std::fs::read_to_string(&stdout_path).unwrap_or_default();
    let err_text = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let log = std::fs::read_to_string(work.path().join("my-guard/rekon.log")).unwrap_or_default();
    assert!(
        status.is_some_and(|s| s.success()),
        "the chapter's commands failed ({status:?}) after {took:?}\nstdout:\n{out_text}\nstderr:\n{err_text}\nrekon log (last 4 KiB):\n{}",
        &log[log.floor_char_boundary(log.len().saturating_sub(4096))..]
    );
    let stdout = out_text;
    // Promoted: version 2's digest serves, and it protected the workload.
    let v2 = std::fs::read_to_string(work.path().join("my-guard/v2.ref")).unwrap();
    assert!(v2.trim().contains("@sha256:"), "{v2}");
    assert!(
        stdout.contains("kubernetes.io/pvc-protection"),
        "the PVCs got the finalizer: {stdout}"
    );
    println!("walkthrough: {:.0} s", took.as_secs_f64());
}
