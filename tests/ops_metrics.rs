//! `/metrics`, `/healthz` and `/readyz` scraped over HTTP from a running host
//! (embedded API server, the wasm reference guests): the controller-runtime,
//! work-queue, per-guest and resource-claim series move as reconciles happen;
//! and from `rekon run` serving a controller module, whose series carry the
//! module's name.

use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use rekon_controllers::host::{Host, HostConfig};
use rekon_controllers::journal::Journal;
use rekon_modules::ModuleDigest;
use rekon_ops::{GuestStatus, Health, Metrics, OpsServer, Supervision};
use rekon_runtime::testing::built_guest;
use rekon_simulate::{ClusterOptions, EmbeddedCluster, host_config};
use rekon_tests::cli::rekon_binary;
use rekon_tests::sim::*;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

struct Response {
    status: u16,
    headers: String,
    body: String,
}

/// A plain HTTP/1.1 GET, enough for the ops endpoints.
async fn get(addr: SocketAddr, path: &str) -> Response {
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connect to the ops server");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").expect("an HTTP response");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status code");
    Response {
        status,
        headers: head.to_ascii_lowercase(),
        body: body.to_string(),
    }
}

/// The value of the sample whose name and labels are exactly `series`.
fn try_sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

fn sample(text: &str, series: &str) -> f64 {
    try_sample(text, series).unwrap_or_else(|| panic!("no sample {series} in:\n{text}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_move_as_the_host_reconciles() {
    let cluster = EmbeddedCluster::start(&ClusterOptions::default())
        .await
        .unwrap();
    let mut state = vec![
        namespace("ns"),
        template("ns", "gpu"),
        pod_with_template_claims("ns", "web", "", &[("gpu", "gpu")]),
    ];
    state.extend((0..5).map(|i| deleting_pvc("ns", &format!("old-{i}"))));
    cluster.server.store().load_objects(state).unwrap();

    let metrics = Arc::new(Metrics::new());
    let health = Arc::new(Health::new());
    let server = OpsServer::start(
        "127.0.0.1:0".parse().unwrap(),
        metrics.clone(),
        health.clone(),
    )
    .await
    .unwrap();
    let addr = server.local_addr();
    assert_eq!(get(addr, "/healthz").await.status, 200);
    let not_ready = get(addr, "/readyz").await;
    assert_eq!(not_ready.status, 503);
    assert!(
        not_ready.body.contains("[-]guests failed"),
        "{}",
        not_ready.body
    );

    let deciders = wasm_deciders();
    let pvc_guest = deciders
        .get::<rekon_contract::PvcProtectionWorld>()
        .unwrap()
        .current()
        .info();
    metrics.active_module(
        "pvc-protection",
        &pvc_guest.name,
        &pvc_guest.digest,
        "rekon:reconcile@0.2.0",
    );
    health.set_guests_loaded(true);
    for controller in ["pvc-protection", "resource-claim"] {
        metrics.register_controller(controller);
    }
    let supervision = Supervision {
        metrics: metrics.clone(),
        health: health.clone(),
        shutdown_grace: Duration::from_secs(5),
    };
    let (client, observer, journal) = (
        cluster.client.clone(),
        metrics.clone(),
        Arc::new(Journal::new()),
    );
    let start = move || {
        Host::start(
            client.clone(),
            HostConfig {
                observer: observer.clone(),
                ..host_config(&deciders, journal.clone())
            },
        )
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(async move {
        supervision
            .run(start, async { stopped.await.unwrap_or(()) })
            .await;
    });

    wait_until("the old PVCs are released", Duration::from_secs(30), || {
        pvcs_left(&cluster) == 0
    })
    .await;
    wait_until("the pod's claim exists", Duration::from_secs(30), || {
        claims(&cluster.objects()).len() == 1
    })
    .await;
    let ready = get(addr, "/readyz").await;
    assert_eq!(ready.status, 200, "{}", ready.body);

    // A reconcile is counted when it returns, and the one that created the
    // claim returns "requeue" until the claim is observed: poll until the
    // counters settle, then read them once.
    let claim_success =
        r#"controller_runtime_reconcile_total{controller="resource-claim",result="success"}"#;
    let settled = Instant::now() + Duration::from_secs(10);
    while Instant::now() < settled {
        let text = get(addr, "/metrics").await.body;
        if try_sample(&text, claim_success) >= Some(1.0)
            && try_sample(&text, r#"workqueue_depth{name="pvc-protection"}"#) == Some(0.0)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let first = get(addr, "/metrics").await;
    assert_eq!(first.status, 200);
    assert!(
        first
            .headers
            .contains("content-type: application/openmetrics-text"),
        "{}",
        first.headers
    );
    let text = &first.body;
    let pvc_success =
        r#"controller_runtime_reconcile_total{controller="pvc-protection",result="success"}"#;
    let pvc_adds = r#"workqueue_adds_total{name="pvc-protection"}"#;
    let pvc_decisions = format!(
        r#"rekon_decision_duration_seconds_count{{controller="pvc-protection",guest="{}"}}"#,
        pvc_guest.name
    );
    let reconciled_before = sample(text, pvc_success);
    let adds_before = sample(text, pvc_adds);
    let decisions_before = sample(text, &pvc_decisions);
    assert!(
        reconciled_before >= 5.0,
        "one reconcile per old PVC at least:\n{text}"
    );
    assert!(adds_before >= 5.0);
    assert!(decisions_before >= 5.0);
    assert!(
        sample(
            text,
            r#"controller_runtime_reconcile_time_seconds_count{controller="pvc-protection"}"#
        ) >= 5.0
    );
    assert!(
        sample(
            text,
            r#"workqueue_work_duration_seconds_count{name="pvc-protection"}"#
        ) >= 5.0
    );
    assert!(
        sample(
            text,
            r#"workqueue_queue_duration_seconds_count{name="resource-claim"}"#
        ) >= 1.0
    );
    assert_eq!(
        sample(text, r#"workqueue_depth{name="pvc-protection"}"#),
        0.0
    );
    assert_eq!(
        sample(
            text,
            r#"controller_runtime_reconcile_errors_total{controller="pvc-protection"}"#
        ),
        0.0
    );
    assert!(sample(text, claim_success) >= 1.0, "{text}");
    assert_eq!(
        sample(
            text,
            r#"resourceclaim_controller_creates_total{status="success"}"#
        ),
        1.0
    );
    assert_eq!(
        sample(
            text,
            r#"resourceclaim_controller_creates_total{status="failure"}"#
        ),
        0.0
    );
    let info = format!(
        r#"rekon_guest_info{{controller="pvc-protection",guest="{}",digest="{}",contract="rekon:reconcile@0.2.0"}}"#,
        pvc_guest.name, pvc_guest.digest
    );
    assert_eq!(sample(text, &info), 1.0);

    // New work: three more protected PVCs, created and deleted through the API.
    let api: Api<PersistentVolumeClaim> = Api::namespaced(cluster.client.clone(), "ns");
    for i in 0..3 {
        let mut object = pvc("ns", &format!("new-{i}"));
        object["metadata"].as_object_mut().unwrap().remove("uid");
        let pvc: PersistentVolumeClaim = serde_json::from_value(object).unwrap();
        api.create(&PostParams::default(), &pvc).await.unwrap();
        api.delete(&format!("new-{i}"), &DeleteParams::default())
            .await
            .unwrap();
    }
    wait_until("the new PVCs are released", Duration::from_secs(30), || {
        pvcs_left(&cluster) == 0
    })
    .await;

    // A reconcile is counted when it returns, just after its write landed: poll.
    let deadline = Instant::now() + Duration::from_secs(10);
    let second = loop {
        let text = get(addr, "/metrics").await.body;
        if sample(&text, pvc_success) >= reconciled_before + 3.0 || Instant::now() >= deadline {
            break text;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        sample(&second, pvc_success) >= reconciled_before + 3.0,
        "reconciles moved:\n{second}"
    );
    assert!(sample(&second, pvc_adds) >= adds_before + 3.0);
    assert!(sample(&second, &pvc_decisions) >= decisions_before + 3.0);

    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("stops within the grace")
        .unwrap();
    let stopping = get(addr, "/readyz").await;
    assert_eq!(stopping.status, 503);
    assert!(stopping.body.contains("shutting down"), "{}", stopping.body);
    assert_eq!(get(addr, "/healthz").await.status, 200);
    server.stop().await;
}

/// Polls `/metrics` until `ready` holds of it, at most `within`.
async fn metrics_until(
    addr: SocketAddr,
    within: Duration,
    what: &str,
    log: &Mutex<Vec<String>>,
    ready: impl Fn(&str) -> bool,
) -> String {
    let deadline = Instant::now() + within;
    loop {
        let text = get(addr, "/metrics").await.body;
        if ready(&text) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "{what} within {within:?}:\n{text}\nrekon's log:\n{}",
            log.lock().unwrap().join("\n")
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `rekon run` serving a controller module from its guests directory: its
/// series carry the module's name (`rekon_guest_info` with its guest, digest
/// and contract, as a built-in world's module has; its reconciles and
/// decisions), and its `rekon_guest_info` goes when the module does.
#[tokio::test(flavor = "multi_thread")]
async fn a_controller_modules_series_carry_its_name() {
    let guests = tempfile::tempdir().unwrap();
    let module = guests.path().join("rekon_guest_pv_protection.wasm");
    std::fs::copy(built_guest("rekon_guest_pv_protection"), &module).unwrap();
    let digest = ModuleDigest::of(&std::fs::read(&module).unwrap());
    let work = tempfile::tempdir().unwrap();
    let kubeconfig = work.path().join("kubeconfig");
    let mut child = tokio::process::Command::new(rekon_binary())
        .args(["run", "--embedded", "--controllers", "pv-protection"])
        .args(["--metrics-addr", "127.0.0.1:0", "--rescan-seconds", "1"])
        .arg("--guests")
        .arg(guests.path())
        .arg("--write-kubeconfig")
        .arg(&kubeconfig)
        .env_remove("RUST_LOG")
        .env_remove("REKON_LOG_FORMAT")
        .current_dir(work.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start rekon run");
    // Every log line is kept (and the pipe drained); the address of /metrics
    // is the `addr=` of the line announcing it.
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let (addr_tx, addr_rx) = tokio::sync::oneshot::channel::<SocketAddr>();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let kept = log.clone();
    tokio::spawn(async move {
        let mut addr_tx = Some(addr_tx);
        while let Ok(Some(line)) = lines.next_line().await {
            if line.contains("serving /metrics") {
                let addr = line
                    .split_whitespace()
                    .find_map(|w| w.strip_prefix("addr=")?.parse().ok());
                if let (Some(tx), Some(addr)) = (addr_tx.take(), addr) {
                    let _ = tx.send(addr);
                }
            }
            kept.lock().unwrap().push(line);
        }
    });
    let addr = tokio::time::timeout(Duration::from_secs(60), addr_rx)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_else(|| {
            panic!(
                "rekon run announced no /metrics address:\n{}",
                log.lock().unwrap().join("\n")
            )
        });

    let info = |text: &str| -> Option<String> {
        text.lines()
            .find(|l| l.starts_with(r#"rekon_guest_info{controller="pv-protection","#))
            .map(str::to_string)
    };
    let text = metrics_until(
        addr,
        Duration::from_secs(60),
        "the module's rekon_guest_info",
        &log,
        |t| info(t).is_some(),
    )
    .await;
    let line = info(&text).unwrap();
    assert!(
        line.ends_with(&format!(
            r#"digest="sha256:{}",contract="rekon:reconcile@0.3.0"}} 1"#,
            digest.hex()
        )),
        "{line}"
    );
    let guest = line
        .split_once(r#"guest=""#)
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(guest, _)| guest.to_string())
        .expect("a guest label");

    // A PV to protect: its reconcile and decision are counted under the
    // module's name.
    let config = kube::Config::from_custom_kubeconfig(
        Kubeconfig::read_from(&kubeconfig).unwrap(),
        &KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let pv: PersistentVolume = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                 "hostPath": {"path": "/tmp/pv1"}}
    }))
    .unwrap();
    Api::<PersistentVolume>::all(client)
        .create(&PostParams::default(), &pv)
        .await
        .unwrap();
    let reconciled =
        r#"controller_runtime_reconcile_total{controller="pv-protection",result="success"}"#;
    let decided = format!(
        r#"rekon_decision_duration_seconds_count{{controller="pv-protection",guest="{guest}"}}"#
    );
    metrics_until(
        addr,
        Duration::from_secs(30),
        "a reconcile and a decision of the module",
        &log,
        |t| try_sample(t, reconciled) >= Some(1.0) && try_sample(t, &decided) >= Some(1.0),
    )
    .await;

    // The module goes (its file does): so does its rekon_guest_info.
    std::fs::remove_file(&module).unwrap();
    metrics_until(
        addr,
        Duration::from_secs(30),
        "the module's rekon_guest_info gone",
        &log,
        |t| info(t).is_none(),
    )
    .await;
    child.kill().await.unwrap();
}
