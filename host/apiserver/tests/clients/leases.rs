//! kube-lease-manager (leader election through server-side apply with conflicts and strategic
//! merge patches) against the embedded server: one holder at a time, hand-over on release.

use std::time::Duration;

use kube_lease_manager::LeaseManagerBuilder;
use rekon_apiserver::{ServerConfig, resources};

use crate::support::*;

#[tokio::test(flavor = "multi_thread")]
async fn lease_manager_hands_over_on_release() {
    let t = start(ServerConfig::new()).await;
    let manager = |identity: &str| {
        LeaseManagerBuilder::new(t.client.clone(), "leader")
            .with_namespace("default")
            .with_identity(identity)
            .with_duration(5)
            .with_grace(1)
            .build()
    };
    let a = manager("a").await.unwrap();
    let b = manager("b").await.unwrap();
    assert!(
        tokio::time::timeout(Duration::from_secs(5), a.changed())
            .await
            .unwrap()
            .unwrap(),
        "a becomes leader"
    );

    // While a holds the lease, b does not get it.
    let b_waiting = tokio::time::timeout(Duration::from_millis(700), b.changed()).await;
    assert!(
        b_waiting.is_err(),
        "b must not become leader while a holds the lease"
    );

    let leases = resources::by_plural("coordination.k8s.io", "leases").unwrap();
    let holder = |t: &TestServer| {
        t.server.store().get(leases, "default", "leader").unwrap()["spec"]["holderIdentity"].clone()
    };
    assert_eq!(holder(&t), "a");

    a.release().await.unwrap();
    assert!(
        tokio::time::timeout(Duration::from_secs(5), b.changed())
            .await
            .unwrap()
            .unwrap(),
        "b takes over"
    );
    assert_eq!(holder(&t), "b");
    let lease = t.server.store().get(leases, "default", "leader").unwrap();
    assert_eq!(
        lease["spec"]["leaseTransitions"], 2,
        "one transition per acquisition"
    );
}
