//! rekon's controller modules side by side with kube-controller-manager v1.20.2
//! (issue 22): the same script runs twice on a real kube-apiserver v1.20.2, once
//! with upstream's controller (`real-controller-manager start -- --controllers=NAME`)
//! and once with rekon's host serving only the module (in process, as `rekon run
//! --guests DIR --controllers NAME` does), and both must end in the same states,
//! the states upstream's code predicts. rekon must write once per unit of work
//! (its journal); the writes and fresh GETs of both are counted by the server
//! (`apiserver_request_total`, the harness's own writes taken out).
//!
//! Needs `REKON_REAL_KUBECONFIG` (the server; for ttl-after-finished started with
//! `REAL_APISERVER_FEATURE_GATES=TTLAfterFinished=true`) and the
//! `real-controller-manager` tool: `REKON_REAL_CONTROLLER_MANAGER`, else
//! `../shared/tools/real-controller-manager` beside the repository. Without them it
//! prints why and passes. Arguments that are not flags filter by controller name.
//!
//! No libtest harness: the side-by-side table is printed on every run.

#[path = "upstream_peers/peer.rs"]
mod peer;
#[path = "upstream_peers/pv.rs"]
mod pv;
#[path = "upstream_peers/ttl.rs"]
mod ttl;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use peer::{Case, Env, Harness, Peer, Run, Running, Side};

const REAL_KUBECONFIG_ENV: &str = "REKON_REAL_KUBECONFIG";
const KCM_ENV: &str = "REKON_REAL_CONTROLLER_MANAGER";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        println!("upstream_peers: test");
        return ExitCode::SUCCESS;
    }
    let filters: Vec<String> = args.into_iter().filter(|a| !a.starts_with('-')).collect();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("upstream_peers: cannot start a tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&filters)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("upstream_peers: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The controllers compared.
#[derive(Clone, Copy)]
enum Scenario {
    PvProtection,
    TtlAfterFinished,
}

impl Scenario {
    const ALL: [Scenario; 2] = [Scenario::PvProtection, Scenario::TtlAfterFinished];

    fn peer(self) -> &'static Peer {
        match self {
            Scenario::PvProtection => &pv::PEER,
            Scenario::TtlAfterFinished => &ttl::PEER,
        }
    }

    fn resource(self) -> &'static str {
        match self {
            Scenario::PvProtection => pv::RESOURCE,
            Scenario::TtlAfterFinished => ttl::RESOURCE,
        }
    }

    fn min_writes(self) -> u64 {
        match self {
            Scenario::PvProtection => pv::MIN_WRITES,
            Scenario::TtlAfterFinished => ttl::MIN_WRITES,
        }
    }

    /// Why it cannot run against this server, if it cannot.
    async fn unavailable(self, env: &Env) -> anyhow::Result<Option<String>> {
        let module =
            rekon_runtime::testing::guest_dir().join(format!("{}.wasm", self.peer().module));
        if !module.is_file() {
            return Ok(Some(format!(
                "{} does not exist (run `make guests`)",
                module.display()
            )));
        }
        if let Scenario::TtlAfterFinished = self {
            let h = Harness::new(env.client.clone());
            if !ttl::server_keeps_ttl(&h, &format!("peers-{}", env.run_id)).await? {
                return Ok(Some(
                    "the server drops spec.ttlSecondsAfterFinished (start it with REAL_APISERVER_FEATURE_GATES=TTLAfterFinished=true)"
                        .into(),
                ));
            }
        }
        Ok(None)
    }

    async fn canary(self, h: &Harness, prefix: &str) -> anyhow::Result<bool> {
        match self {
            Scenario::PvProtection => pv::canary(h, prefix).await,
            Scenario::TtlAfterFinished => ttl::canary(h, prefix).await,
        }
    }

    async fn script(self, h: &Harness, prefix: &str) -> anyhow::Result<(Vec<Case>, Vec<String>)> {
        match self {
            Scenario::PvProtection => pv::script(h, prefix).await,
            Scenario::TtlAfterFinished => ttl::script(h, prefix).await,
        }
    }

    async fn clean_up(self, h: &Harness, prefix: &str) -> anyhow::Result<()> {
        match self {
            Scenario::PvProtection => pv::clean_up(h, prefix).await,
            Scenario::TtlAfterFinished => ttl::clean_up(h, prefix).await,
        }
    }
}

async fn run(filters: &[String]) -> anyhow::Result<bool> {
    let Some(env) = environment().await? else {
        return Ok(true);
    };
    let mut ok = true;
    for scenario in Scenario::ALL {
        let name = scenario.peer().name;
        if !filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        if let Some(reason) = scenario.unavailable(&env).await? {
            println!("upstream_peers: {name}: skipped: {reason}");
            continue;
        }
        let kcm = run_side(scenario, Side::Kcm, &env).await?;
        let rekon = run_side(scenario, Side::Rekon, &env).await?;
        let failures = compare(scenario, &kcm, &rekon);
        print!("{}", render(scenario, &kcm, &rekon, &failures));
        ok &= failures.is_empty();
    }
    Ok(ok)
}

/// The real server and the controller-manager tool, or `None` (printed why).
async fn environment() -> anyhow::Result<Option<Env>> {
    let Some(kubeconfig) = std::env::var_os(REAL_KUBECONFIG_ENV).filter(|v| !v.is_empty()) else {
        println!(
            "upstream_peers: skipped: {REAL_KUBECONFIG_ENV} is not set (the kubeconfig of a real kube-apiserver v1.20.2)"
        );
        return Ok(None);
    };
    let kcm_tool = match std::env::var_os(KCM_ENV) {
        Some(v) if v.is_empty() => {
            println!("upstream_peers: skipped: {KCM_ENV} is empty (no kube-controller-manager)");
            return Ok(None);
        }
        Some(v) => PathBuf::from(v),
        None => {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/tools/real-controller-manager")
        }
    };
    if !kcm_tool.is_file() {
        println!(
            "upstream_peers: skipped: {} does not exist (set {KCM_ENV} to the real-controller-manager tool)",
            kcm_tool.display()
        );
        return Ok(None);
    }
    // Idempotent: returns at once once built.
    let build = tokio::process::Command::new(&kcm_tool)
        .arg("build")
        .output()
        .await?;
    if !build.status.success() {
        println!(
            "upstream_peers: skipped: `{} build` failed:\n{}",
            kcm_tool.display(),
            String::from_utf8_lossy(&build.stderr)
        );
        return Ok(None);
    }
    let kubeconfig = PathBuf::from(kubeconfig);
    let client = peer::client_for(&kubeconfig).await?;
    let version = client.apiserver_version().await.map_err(|e| {
        anyhow::anyhow!(
            "{REAL_KUBECONFIG_ENV}={} is set but the server does not answer: {e}",
            kubeconfig.display()
        )
    })?;
    println!(
        "upstream_peers: real server {}, kube-controller-manager from {}",
        version.git_version,
        kcm_tool.display()
    );
    let run_id = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_millis()
        % 0x10_0000;
    Ok(Some(Env {
        kubeconfig,
        client,
        kcm_tool,
        logs: tempfile::tempdir()?,
        run_id: format!("{run_id:05x}"),
    }))
}

/// One side: the controller started, checked to act (a canary), the script,
/// the server's counts around the script, the controller stopped, clean-up.
async fn run_side(scenario: Scenario, side: Side, env: &Env) -> anyhow::Result<Run> {
    let peer = scenario.peer();
    let prefix = env.prefix(peer, side);
    let h = Harness::new(env.client.clone());
    let running = Running::start(side, peer, env).await?;
    let measured = async {
        if !scenario.canary(&h, &prefix).await? {
            anyhow::bail!(
                "{}: {side} did not act on the canary within a minute; {}",
                peer.name,
                running.explain()
            );
        }
        scenario.clean_up(&h, &prefix).await?;
        let before = peer::server_counts(&h.client, scenario.resource()).await?;
        let own = h.writes();
        let (cases, problems) = scenario.script(&h, &prefix).await?;
        let after = peer::server_counts(&h.client, scenario.resource()).await?;
        let server = peer::controller_requests(&before, &after, h.writes() - own);
        Ok::<_, anyhow::Error>((cases, problems, server))
    }
    .await;
    let journal = running.stop(env).await?;
    scenario.clean_up(&h, &prefix).await?;
    let (cases, problems, server) = measured?;
    Ok(Run {
        side,
        cases,
        problems,
        server,
        journal: journal.map(|j| peer::journal_requests(&j, &prefix, &format!("{prefix}-canary"))),
    })
}

/// What is wrong: the sides disagree, a side is not upstream's behaviour, or
/// rekon wrote more than once per unit of work.
fn compare(scenario: Scenario, kcm: &Run, rekon: &Run) -> Vec<String> {
    let mut failures = Vec::new();
    for (k, r) in kcm.cases.iter().zip(&rekon.cases) {
        if k.observed != r.observed {
            failures.push(format!(
                "{}: {} {}, rekon {}",
                k.name, kcm.side, k.observed, r.observed
            ));
        }
    }
    for run in [kcm, rekon] {
        for case in &run.cases {
            if case.observed != case.expected {
                failures.push(format!(
                    "{}: {} {}, upstream's behaviour is {}",
                    case.name, run.side, case.observed, case.expected
                ));
            }
        }
        failures.extend(run.problems.iter().map(|p| format!("{}: {p}", run.side)));
    }
    if let Some(journal) = rekon.journal
        && journal.writes != scenario.min_writes()
    {
        failures.push(format!(
            "rekon wrote {} times; one write per unit of work is {}",
            journal.writes,
            scenario.min_writes()
        ));
    }
    failures
}

fn render(scenario: Scenario, kcm: &Run, rekon: &Run, failures: &[String]) -> String {
    let row = |case: &str, expected: &str, kcm: &str, rekon: &str| {
        format!("{case:<24} {expected:<40} {kcm:<60} {rekon}\n")
    };
    let mut out = format!(
        "== {} (resource {})\n",
        scenario.peer().name,
        scenario.resource()
    );
    out += &row(
        "case",
        "expected",
        &kcm.side.to_string(),
        &rekon.side.to_string(),
    );
    for (k, r) in kcm.cases.iter().zip(&rekon.cases) {
        out += &row(
            k.name,
            &k.expected.to_string(),
            &format!("{} {}", k.observed, k.note),
            &format!("{} {}", r.observed, r.note),
        );
    }
    out += &format!(
        "requests on {}: {} {} writes, {} GETs (server); rekon {} writes, {} GETs (server)",
        scenario.resource(),
        kcm.side,
        kcm.server.writes,
        kcm.server.gets,
        rekon.server.writes,
        rekon.server.gets
    );
    if let Some(journal) = rekon.journal {
        out += &format!(
            ", {} writes, {} GETs (journal)",
            journal.writes, journal.gets
        );
    }
    out += "\n";
    if failures.is_empty() {
        out += &format!("{}: agree\n", scenario.peer().name);
    } else {
        out += &format!("{}: FAILED\n", scenario.peer().name);
        for failure in failures {
            out += &format!("  - {failure}\n");
        }
    }
    out
}
