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
