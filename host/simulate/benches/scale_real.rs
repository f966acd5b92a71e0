//! rekon against upstream kube-controller-manager v1.20.2 (pvc-protection only) on
//! a real kube-apiserver v1.20.2, both started by the tools in `$REKON_PEER_TOOLS`
//! (default `/work/shared/tools`).
//!
//! Each row: a fresh server; N unused PVCs created (admission adds the finalizer)
//! with N pods on a node using other PVCs, spread over 1 or 100 namespaces; all
//! PVCs deleted; then the controller process starts and the clock runs until no
//! PVC is left. API requests come from the server's own `apiserver_request_total`
//! (after minus before, the harness's own polls subtracted), peak RSS is the
//! controller's VmHWM.
//!
//! `make bench-scale-real` (needs `cargo build --release -p rekon` and `make guests`).
//! Environment: `REAL_MAX_N` (default 10000), `REAL_TIMEOUT` seconds per row
//! (default 900), `REAL_WORKLOADS` (`release-1ns,release-100ns`), `REAL_SETTINGS`
//! (`default,qps-20,qps-500`), `REAL_CONTROLLERS` (`rekon,kcm`), `REKON_BIN`.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim, Pod};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client};
use serde_json::json;

/// Requests in flight while the harness sets a row up.
const SETUP_CONCURRENCY: usize = 64;
const POLL: Duration = Duration::from_millis(250);

#[derive(Debug, Clone, Copy, PartialEq)]
enum Controller {
    Rekon,
    Kcm,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Setting {
    /// Each controller's defaults (kcm: 20 QPS / 30 burst; rekon: no client limit).
    Default,
    /// Both at this QPS, with 1.5× burst.
    Qps(u32),
}

impl Setting {
    fn name(self) -> String {
        match self {
            Self::Default => "default".into(),
            Self::Qps(q) => format!("qps-{q}"),
        }
    }

    fn flags(self) -> Vec<String> {
        match self {
            Self::Default => vec![],
            Self::Qps(q) => vec![
                "--kube-api-qps".into(),
                q.to_string(),
                "--kube-api-burst".into(),
                (q * 3 / 2).to_string(),
            ],
        }
    }
}

#[derive(Debug)]
struct Measured {
    secs: f64,
    released: usize,
    requests: BTreeMap<String, f64>,
    peak_kib: u64,
}

fn tools() -> PathBuf {
    std::env::var_os("REKON_PEER_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/work/shared/tools".into())
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name}: not a number: {v}"))
        })
        .unwrap_or(default)
}

fn env_list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Runs a tool command and returns the value of its `prefix` output line.
async fn tool(args: &[&str], prefix: &str) -> String {
    let out = tokio::process::Command::new(args[0])
        .args(&args[1..])
        .stderr(Stdio::inherit())
        .output()
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", args[0]));
    assert!(out.status.success(), "{args:?} failed: {}", out.status);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix(prefix).map(str::to_string))
        .unwrap_or_else(|| panic!("{args:?} printed no `{prefix}` line"))
}

/// A running real API server; stopped on drop.
struct Server {
    kubeconfig: PathBuf,
    pidfile: String,
    client: Client,
}

impl Server {
    async fn start(dir: &Path) -> Server {
        let kubeconfig = dir.join("kubeconfig");
        let bin = tools().join("real-apiserver");
        let pidfile = tool(
            &[
                bin.to_str().expect("path"),
                "start",
                "--kubeconfig",
                kubeconfig.to_str().expect("path"),
            ],
            "pid-file: ",
        )
        .await;
        let kc = Kubeconfig::read_from(&kubeconfig).expect("kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
            .await
            .expect("client config");
        let client = Client::try_from(config).expect("client");
        Server {
            kubeconfig,
            pidfile,
            client,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let bin = tools().join("real-apiserver");
        let _ = std::process::Command::new(bin)
            .args(["stop", &self.pidfile])
            .status();
    }
}

/// `apiserver_request_total` summed by verb.
async fn request_totals(client: &Client) -> BTreeMap<String, f64> {
    let text = client
        .request_text(
            http::Request::get("/metrics")
                .body(Vec::new())
                .expect("request"),
        )
        .await
        .expect("GET /metrics");
    let mut totals = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let verb = labels
            .split(',')
            .find_map(|l| l.strip_prefix("verb=\""))
            .map(|v| v.trim_end_matches('"').to_lowercase())
            .unwrap_or_default();
        *totals.entry(verb).or_default() += value.parse::<f64>().unwrap_or(0.0);
    }
    totals
}

async fn setup(client: &Client, n: usize, namespaces: usize) {
    let ns = |i: usize| format!("scale-{}", i % namespaces);
    for i in 0..namespaces {
        let obj: Namespace =
            serde_json::from_value(json!({"metadata": {"name": ns(i)}})).expect("namespace");
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &obj)
            .await
            .expect("create namespace");
    }
    let create = |i: usize| {
        let client = client.clone();
        let ns = ns(i);
        async move {
            let pod: Pod = serde_json::from_value(json!({
                "metadata": {"name": format!("pod-{i}")},
                "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "i"}],
                         "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": format!("live-{i}")}}]}
            }))
            .expect("pod");
            let pvc: PersistentVolumeClaim = serde_json::from_value(json!({
                "metadata": {"name": format!("data-{i}")},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
            }))
            .expect("pvc");
            Api::<Pod>::namespaced(client.clone(), &ns)
                .create(&PostParams::default(), &pod)
                .await?;
            Api::<PersistentVolumeClaim>::namespaced(client, &ns)
                .create(&PostParams::default(), &pvc)
                .await?;
            Ok::<_, kube::Error>(())
        }
    };
    futures::stream::iter(0..n)
        .map(create)
        .buffer_unordered(SETUP_CONCURRENCY)
        .try_collect::<()>()
        .await
        .expect("creating pods and PVCs");
    let delete = |i: usize| {
        let api = Api::<PersistentVolumeClaim>::namespaced(client.clone(), &ns(i));
        async move {
            api.delete(&format!("data-{i}"), &DeleteParams::default())
                .await
                .map(|_| ())
        }
    };
    futures::stream::iter(0..n)
        .map(delete)
        .buffer_unordered(SETUP_CONCURRENCY)
        .try_collect::<()>()
        .await
        .expect("deleting PVCs");
}

/// PVCs left in the cluster, and the LISTs it took: one with limit 1, and a full
/// metadata list when the server leaves out `remainingItemCount`.
async fn pvcs_left(client: &Client) -> (usize, f64) {
    let api = Api::<PersistentVolumeClaim>::all(client.clone());
    let list = api
        .list_metadata(&ListParams::default().limit(1))
        .await
        .expect("list PVCs");
    match (list.metadata.remaining_item_count, &list.metadata.continue_) {
        (Some(rest), _) => (list.items.len() + rest as usize, 1.0),
        (None, Some(token)) if !token.is_empty() => {
            let all = api
                .list_metadata(&ListParams::default())
                .await
                .expect("list PVCs");
            (all.items.len(), 2.0)
        }
        (None, _) => (list.items.len(), 1.0),
    }
}

fn vm_hwm_kib(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Starts the controller; returns its pid and, for rekon, its process handle.
async fn start_controller(
    controller: Controller,
    setting: Setting,
    kubeconfig: &Path,
    dir: &Path,
) -> (u32, Option<tokio::process::Child>) {
    match controller {
        Controller::Kcm => {
            let bin = tools().join("real-controller-manager");
            let log = dir.join("kcm.log");
            let mut args = vec![
                bin.to_str().expect("path").to_string(),
                "start".into(),
                "--kubeconfig".into(),
                kubeconfig.to_str().expect("path").into(),
                "--log".into(),
                log.to_str().expect("path").into(),
            ];
            let flags = setting.flags();
            if !flags.is_empty() {
                args.push("--".into());
                args.extend(flags);
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let pid = tool(&args, "pid: ").await;
            (pid.trim().parse().expect("kcm pid"), None)
        }
        Controller::Rekon => {
            let bin = std::env::var("REKON_BIN").unwrap_or_else(|_| {
                format!(
                    "{}/release/rekon",
                    std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into())
                )
            });
            let guests = std::env::var("REKON_GUEST_DIR").expect("REKON_GUEST_DIR");
            let help = std::process::Command::new(&bin)
                .args(["run", "--help"])
                .output()
                .unwrap_or_else(|e| panic!("{bin}: {e} (cargo build --release -p rekon)"));
            let mut cmd = tokio::process::Command::new(&bin);
            cmd.args(["run", "--kubeconfig"])
                .arg(kubeconfig)
                .args(["--guests", &guests, "--metrics-addr", "127.0.0.1:0"])
                .args(setting.flags())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(dir.join("rekon.log")).expect("log"))
                .kill_on_drop(true);
            // v1.20 has no resource.k8s.io: run PVC protection only where the flag exists.
            if String::from_utf8_lossy(&help.stdout).contains("--controllers") {
                cmd.args(["--controllers", "pvc-protection"]);
            }
            let child = cmd.spawn().expect("start rekon");
            (child.id().expect("rekon pid"), Some(child))
        }
    }
}

async fn stop_controller(pid: u32, child: Option<tokio::process::Child>) {
    match child {
        Some(mut child) => {
            let _ = child.kill().await;
        }
        None => {
            let bin = tools().join("real-controller-manager");
            let _ = tokio::process::Command::new(bin)
                .args(["stop", &pid.to_string()])
                .status()
                .await;
        }
    }
}

async fn run_row(
    controller: Controller,
    setting: Setting,
    n: usize,
    namespaces: usize,
    timeout: Duration,
) -> Measured {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(dir.path()).await;
    setup(&server.client, n, namespaces).await;
    let before = request_totals(&server.client).await;
    let started = Instant::now();
    let (pid, child) = start_controller(controller, setting, &server.kubeconfig, dir.path()).await;
    let mut polls = 0.0;
    let mut left = n;
    let mut peak_kib = 0;
    while left > 0 && started.elapsed() < timeout {
        tokio::time::sleep(POLL).await;
        peak_kib = vm_hwm_kib(pid).unwrap_or(peak_kib);
        let (now_left, lists) = pvcs_left(&server.client).await;
        left = now_left;
        polls += lists;
    }
    let secs = started.elapsed().as_secs_f64();
    peak_kib = vm_hwm_kib(pid).unwrap_or(peak_kib);
    stop_controller(pid, child).await;
    let after = request_totals(&server.client).await;
    let mut requests: BTreeMap<String, f64> = after
        .iter()
        .map(|(verb, total)| (verb.clone(), total - before.get(verb).unwrap_or(&0.0)))
        .filter(|(_, d)| *d > 0.0)
        .collect();
    // The harness's own polls and its one GET /metrics in between.
    *requests.entry("list".into()).or_default() -= polls;
    *requests.entry("get".into()).or_default() -= 1.0;
    requests.retain(|_, d| *d > 0.0);
    if left > 0 {
        let log = dir.keep();
        eprintln!("row not finished; logs kept in {}", log.display());
    }
    Measured {
        secs,
        released: n - left,
        requests,
        peak_kib,
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let max_n = env_number("REAL_MAX_N", 10_000) as usize;
    let timeout = Duration::from_secs(env_number("REAL_TIMEOUT", 900));
    let workloads = env_list("REAL_WORKLOADS", "release-1ns,release-100ns");
    let settings: Vec<Setting> = env_list("REAL_SETTINGS", "default,qps-20,qps-500")
        .iter()
        .map(|s| match s.as_str() {
            "default" => Setting::Default,
            q => Setting::Qps(
                q.strip_prefix("qps-")
                    .and_then(|q| q.parse().ok())
                    .unwrap_or_else(|| panic!("REAL_SETTINGS: unknown setting {q}")),
            ),
        })
        .collect();
    let controllers: Vec<Controller> = env_list("REAL_CONTROLLERS", "rekon,kcm")
        .iter()
        .map(|c| match c.as_str() {
            "rekon" => Controller::Rekon,
            "kcm" => Controller::Kcm,
            other => panic!("REAL_CONTROLLERS: unknown controller {other}"),
        })
        .collect();
    println!(
        "rekon (release) vs kube-controller-manager v1.20.2 pvc-protection, real kube-apiserver v1.20.2"
    );
    println!(
        "| workload | N | setting | controller | all released in | API requests / PVC (by verb) | peak RSS |"
    );
    println!("|---|---|---|---|---|---|---|");
    for workload in &workloads {
        let namespaces = match workload.as_str() {
            "release-1ns" => 1,
            "release-100ns" => 100,
            other => panic!("REAL_WORKLOADS: unknown workload {other}"),
        };
        for n in [1_000, 10_000].into_iter().filter(|&n| n <= max_n) {
            for setting in &settings {
                for controller in &controllers {
                    // kcm's default is 20/30: the qps-20 row is the same run.
                    if *controller == Controller::Kcm && *setting == Setting::Qps(20) {
                        continue;
                    }
                    let m = run_row(*controller, *setting, n, namespaces, timeout).await;
                    let total: f64 = m.requests.values().sum();
                    let by_verb = m
                        .requests
                        .iter()
                        .map(|(v, c)| format!("{v} {:.2}", c / n as f64))
                        .collect::<Vec<_>>()
                        .join(", ");
                    let time = if m.released == n {
                        format!("{:.1} s", m.secs)
                    } else {
                        format!("**not done**: {} of {n} in {:.0} s", m.released, m.secs)
                    };
                    println!(
                        "| {workload} | {n} | {} | {} | {time} | {:.2} ({by_verb}) | {:.0} MiB |",
                        setting.name(),
                        match controller {
                            Controller::Rekon => "rekon",
                            Controller::Kcm => "kube-controller-manager",
                        },
                        total / n as f64,
                        m.peak_kib as f64 / 1024.0
                    );
                    std::io::stdout().flush().expect("stdout");
                }
            }
        }
    }
    println!(
        "API requests: the server's apiserver_request_total after minus before the controller ran, the harness's polls subtracted; divided by N"
    );
}
