//! `make demo` as users run it: the built binary with `run --embedded --demo`
//! on the built guests, read until the demo says it is done.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rekon_runtime::testing::guest_dir;

const DONE: &str = "demo: done";
const TIMEOUT: Duration = Duration::from_secs(240);
const CONTROLLERS: [&str; 3] = ["pvc-protection", "resource-claim", "ephemeral-volume"];

/// Kills the demo's process when the test ends, passed or not.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The demo's log lines, up to and including the one that ends it.
fn demo_log() -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Running(
        Command::new(env!("CARGO_BIN_EXE_rekon"))
            .args([
                "run",
                "--embedded",
                "--demo",
                "--metrics-addr",
                "127.0.0.1:0",
            ])
            .arg("--guests")
            .arg(guest_dir())
            .arg("--write-kubeconfig")
            .arg(dir.path().join("demo.kubeconfig"))
            .env_remove("RUST_LOG")
            .env_remove("REKON_LOG_FORMAT")
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start rekon run --embedded --demo"),
    );
    let stderr = child.0.stderr.take().unwrap();
    let (lines_tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + TIMEOUT;
    let mut log = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) => {
                let last = line.contains(DONE) || line.contains("demo failed");
                log.push(line);
                if last {
                    return log;
                }
            }
            Err(_) => panic!(
                "the demo did not finish within {TIMEOUT:?}:\n{}",
                log.join("\n")
            ),
        }
    }
}

/// The number after `field=` in a log line (0 when absent).
fn count(line: &str, field: &str) -> usize {
    line.split_whitespace()
        .find_map(|word| word.strip_prefix(field)?.strip_prefix('='))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[test]
fn the_demo_walks_all_three_controllers_without_a_warning() {
    let log = demo_log();
    let text = log.join("\n");
    assert!(text.contains(DONE), "the demo failed:\n{text}");
    let warnings: Vec<_> = log
        .iter()
        .filter(|l| l.contains(" WARN ") || l.contains(" ERROR "))
        .collect();
    assert!(warnings.is_empty(), "warnings in a clean demo run:\n{text}");
    for controller in CONTROLLERS {
        let wrote = log.iter().any(|line| {
            line.contains(&format!("reconciled controller=\"{controller}\""))
                && count(line, "writes") + count(line, "created") > 0
        });
        assert!(wrote, "controller {controller} never wrote:\n{text}");
    }
}
