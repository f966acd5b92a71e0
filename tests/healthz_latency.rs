//! Decisions run off the async workers: with one runtime thread and guests that
//! loop until their deadline (and one that panics, writing to stderr), `/healthz`
//! still answers within 50 ms at p99.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rekon_contract::PvcProtectionWorld;
use rekon_controllers::decider::Slot;
use rekon_controllers::host::{Host, HostConfig};
use rekon_controllers::journal::Journal;
use rekon_ops::{Health, Metrics, OpsServer};
use rekon_runtime::{Engine, EngineConfig, World};
use rekon_simulate::{ClusterOptions, Deciders, EmbeddedCluster};
use rekon_tests::sim::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PROBES: usize = 40;

async fn probe(addr: std::net::SocketAddr) -> Duration {
    let started = Instant::now();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: rekon\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    started.elapsed()
}

#[tokio::test(flavor = "current_thread")]
async fn healthz_stays_fast_while_guests_loop_on_one_runtime_thread() {
    let cluster = EmbeddedCluster::start(&ClusterOptions::default())
        .await
        .unwrap();
    let mut objects = vec![namespace("ns"), deleting_pvc("ns", "panic")];
    for n in 0..8 {
        let ns = format!("loop-{n}");
        objects.push(namespace(&ns));
        objects.push(deleting_pvc(&ns, "loop"));
    }
    cluster.server.store().load_objects(objects).unwrap();

    let engine = Engine::new(EngineConfig::default()).unwrap();
    let looping = engine
        .loader()
        .world(World::of::<rekon_contract::PvcProtectionWorld>())
        .file(rekon_runtime::testing::built_guest(
            "rekon_guest_misbehaving",
        ))
        .expect("misbehaving guest (run `make guests`)");
    let deciders =
        Deciders::new().with(Arc::new(Slot::<PvcProtectionWorld>::new(Arc::new(looping))));
    let metrics = Arc::new(Metrics::new());
    let host = Host::start(
        cluster.client.clone(),
        HostConfig {
            workers: 4,
            controllers: "pvc-protection".parse().unwrap(),
            ..HostConfig::new(deciders, Arc::new(Journal::new()), metrics.clone())
        },
    );
    let ops = OpsServer::start(
        "127.0.0.1:0".parse().unwrap(),
        metrics,
        Arc::new(Health::new()),
    )
    .await
    .unwrap();

    // Wait until the guests are busy looping.
    let deadline = Instant::now() + Duration::from_secs(20);
    while host
        .journal()
        .entries()
        .iter()
        .filter(|e| !e.is_write())
        .count()
        < 8
    {
        assert!(Instant::now() < deadline, "no decisions started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut latencies = Vec::with_capacity(PROBES);
    for _ in 0..PROBES {
        latencies.push(probe(ops.local_addr()).await);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    latencies.sort();
    let p50 = latencies[PROBES / 2];
    let p99 = latencies[(PROBES * 99).div_ceil(100) - 1];
    let decisions = host
        .journal()
        .entries()
        .iter()
        .filter(|e| !e.is_write())
        .count();
    println!(
        "/healthz over {PROBES} probes, 1 runtime thread, looping guests ({decisions} decisions): p50 {p50:?}, p99 {p99:?}"
    );
    assert!(p99 < Duration::from_millis(50), "p99 {p99:?}");
    assert!(decisions >= 8);
    ops.stop().await;
    host.shutdown(Duration::from_secs(1)).await;
    cluster.server.shutdown().await;
}
