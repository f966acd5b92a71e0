//! `rekon run --embedded` serves `DecisionModule` objects from its start: the
//! embedded API server has the CRD installed before anything waits for it, so
//! no `--guests` directory is needed (issue 23).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kills rekon when the test ends, passed or not.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn rekon_run_embedded_serves_the_decision_module_crd_from_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("embedded.kubeconfig");
    let mut rekon = Running(
        Command::new(env!("CARGO_BIN_EXE_rekon"))
            .args(["run", "--embedded", "--metrics-addr", "127.0.0.1:0"])
            .arg("--write-kubeconfig")
            .arg(&kubeconfig)
            .env_remove("REKON_GUEST_DIR")
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start rekon run --embedded"),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = rekon.0.try_wait().unwrap() {
            panic!("rekon run --embedded exited ({status}) without --guests");
        }
        if kubeconfig.exists() {
            let got = Command::new("kubectl")
                .arg("--kubeconfig")
                .arg(&kubeconfig)
                .args(["get", "decisionmodules"])
                .output()
                .expect("kubectl is installed");
            if got.status.success() {
                return;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the embedded API server never served decisionmodules"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}
