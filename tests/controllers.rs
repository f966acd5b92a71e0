//! `--controllers`: a disabled controller watches nothing and writes nothing;
//! the others run as usual.

use rekon_controllers::journal::Entry;
use rekon_simulate::ClusterOptions;
use rekon_tests::sim::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_disabled_controller_does_nothing_while_the_others_run() {
    let state = vec![
        namespace("ns"),
        deleting_pvc("ns", "unused"),
        template("ns", "gpu"),
        pod_with_template_claims("ns", "trainer", "", &[("gpu", "gpu")]),
    ];
    let options = ClusterOptions {
        controllers: "*,-resource-claim".parse().unwrap(),
        ..ClusterOptions::default()
    };
    let report = run(state, vec![], options, quick()).await;
    report.converged.expect("converged");

    assert!(
        find(&report.objects, "PersistentVolumeClaim", "ns", "unused").is_none(),
        "pvc-protection released the unused PVC"
    );
    assert!(
        claims(&report.objects).is_empty(),
        "resource-claim is disabled: no claim generated"
    );
    let controllers: Vec<String> = report
        .journal
        .entries()
        .into_iter()
        .map(|e| match e {
            Entry::Decision { controller, .. } | Entry::Write { controller, .. } => controller,
        })
        .collect();
    assert!(controllers.iter().any(|c| c == "pvc-protection"));
    assert!(
        controllers.iter().all(|c| c != "resource-claim"),
        "{controllers:?}"
    );
}

/// API discovery decides whether a controller starts: the embedded server serves
/// `resource.k8s.io/v1`, so resource-claim starts; a group/version it does not
/// serve (as `resource.k8s.io/v1` on a v1.20 server) keeps a controller waiting.
#[tokio::test(flavor = "multi_thread")]
async fn discovery_tells_served_from_missing_apis() {
    use rekon_controllers::builtin::CONTROLLERS;
    use rekon_controllers::selection::{missing_apis, serves};
    let cluster = rekon_simulate::EmbeddedCluster::start(&ClusterOptions::default())
        .await
        .unwrap();
    let client = &cluster.client;
    assert!(serves(client, "v1").await.unwrap());
    assert!(serves(client, "resource.k8s.io/v1").await.unwrap());
    assert!(!serves(client, "resource.k8s.io/v1alpha9").await.unwrap());
    assert!(!serves(client, "v2").await.unwrap());
    for controller in CONTROLLERS {
        assert_eq!(
            missing_apis(client, controller.apis).await.unwrap(),
            Vec::<&str>::new(),
            "{} needs only served APIs",
            controller.name
        );
    }
    assert_eq!(
        missing_apis(client, &["v1", "resource.k8s.io/v1alpha9"])
            .await
            .unwrap(),
        ["resource.k8s.io/v1alpha9"]
    );
    cluster.server.shutdown().await;
}
