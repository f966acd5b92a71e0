//! Differential conformance suite (issue 3 item 8).
//!
//! Runs every scenario of `tests/conformance/*.yaml` against the embedded API
//! server started in-process and, when `REKON_REAL_KUBECONFIG` names the
//! kubeconfig of a real kube-apiserver v1.20.2 (`.ci/run` starts one with
//! `../shared/tools/real-apiserver`), against that server too. Each server must
//! meet every expectation and both must agree on status codes, reasons, watch
//! event order and (where a step asks) normalised messages.
//!
//! No libtest harness: the per-scenario report is printed on every run.
//! Arguments that are not flags filter scenarios by name.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use rekon_tests::conformance::scenario::{self, Scenario};
use rekon_tests::conformance::suite::run_all;
use rekon_tests::conformance::transport::{ServerKind, Target};

const REAL_KUBECONFIG_ENV: &str = "REKON_REAL_KUBECONFIG";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        println!("differential: test");
        return ExitCode::SUCCESS;
    }
    let filters: Vec<String> = args.into_iter().filter(|a| !a.starts_with('-')).collect();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("differential: cannot start a tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&filters)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("differential: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the suite; `Ok(false)` when any scenario failed.
async fn run(filters: &[String]) -> anyhow::Result<bool> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance");
    let scenarios: Vec<Scenario> = scenario::load_dir(&dir)?
        .into_iter()
        .filter(|s| filters.is_empty() || filters.iter().any(|f| s.name.contains(f.as_str())))
        .collect();
    if scenarios.is_empty() {
        println!("differential: no scenario matches {filters:?}");
        return Ok(true);
    }

    // v1.20 enables the StorageObjectInUseProtection admission plugin by default.
    let config = rekon_apiserver::ServerConfig::new().pvc_protection_admission(true);
    let embedded = rekon_apiserver::ApiServer::start(config, "127.0.0.1:0".parse()?).await?;
    let mut targets = vec![
        Target::from_kubeconfig_yaml(ServerKind::Embedded, &embedded.kubeconfig_yaml()).await?,
    ];
    match real_target().await? {
        Some((target, path)) => {
            println!(
                "differential: running {} scenarios against the embedded server and the real kube-apiserver ({}={})",
                scenarios.len(),
                REAL_KUBECONFIG_ENV,
                path.display()
            );
            targets.push(target);
        }
        None => println!(
            "differential: {REAL_KUBECONFIG_ENV} is not set; running {} scenarios against the embedded server only",
            scenarios.len()
        ),
    }
    let real_ran = targets.iter().any(|t| t.kind == ServerKind::Real);

    let reports = run_all(&scenarios, &targets).await;
    embedded.shutdown().await;
    let mut failed = 0;
    for report in &reports {
        print!("{}", report.render());
        if !report.failures().is_empty() {
            failed += 1;
        }
    }
    println!(
        "differential: {} scenarios, {} passed, {failed} failed (servers: {})",
        reports.len(),
        reports.len() - failed,
        targets
            .iter()
            .map(|t| t.kind.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    if !real_ran {
        println!("differential: real kube-apiserver not available; ran the embedded server only");
    }
    Ok(failed == 0)
}

/// The real server named by `REKON_REAL_KUBECONFIG`, checked to answer.
async fn real_target() -> anyhow::Result<Option<(Target, PathBuf)>> {
    let Some(path) = std::env::var_os(REAL_KUBECONFIG_ENV).filter(|p| !p.is_empty()) else {
        return Ok(None);
    };
    let path = PathBuf::from(path);
    let target = Target::from_kubeconfig_file(ServerKind::Real, &path).await?;
    let version = target
        .send("GET", "/version", "application/json", None)
        .await
        .map_err(|e| {
            anyhow::anyhow!(
                "{REAL_KUBECONFIG_ENV}={} is set but the server does not answer: {e}",
                path.display()
            )
        })?;
    anyhow::ensure!(
        version.code == 200,
        "{REAL_KUBECONFIG_ENV}={}: GET /version answered {}: {}",
        path.display(),
        version.code,
        version.body
    );
    println!(
        "differential: real server version {}",
        version.body["gitVersion"].as_str().unwrap_or("?")
    );
    Ok(Some((target, path)))
}
