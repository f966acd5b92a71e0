//! kube-rs against a CRD served by the embedded server: discovery finds it, `Api<DynamicObject>`
//! and a typed resource create, list, watch, replace and patch status; the schema refuses and
//! prunes; deleting the CRD removes its objects and its URLs.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::Discovery;
use kube::runtime::watcher::{self, Event};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::support::*;

pub const DECISION_MODULE_CRD: &str = include_str!("../fixtures/decisionmodule-crd.yaml");

/// A typed DecisionModule, as `#[derive(CustomResource)]` would generate it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct DecisionModule {
    metadata: kube::core::ObjectMeta,
    spec: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<Value>,
}

impl kube::Resource for DecisionModule {
    type DynamicType = ();
    type Scope = kube::core::ClusterResourceScope;
    fn kind(_: &()) -> std::borrow::Cow<'_, str> {
        "DecisionModule".into()
    }
    fn group(_: &()) -> std::borrow::Cow<'_, str> {
        "rekon.dev".into()
    }
    fn version(_: &()) -> std::borrow::Cow<'_, str> {
        "v1alpha1".into()
    }
    fn plural(_: &()) -> std::borrow::Cow<'_, str> {
        "decisionmodules".into()
    }
    fn meta(&self) -> &kube::core::ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut kube::core::ObjectMeta {
        &mut self.metadata
    }
}

/// Creates the DecisionModule CRD and waits until it is Established.
pub async fn install_decision_module_crd(client: &kube::Client) -> CustomResourceDefinition {
    let crd: CustomResourceDefinition = serde_yaml::from_str(DECISION_MODULE_CRD).unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &crd).await.unwrap();
    for _ in 0..100 {
        let crd = crds.get("decisionmodules.rekon.dev").await.unwrap();
        let established = crd
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .any(|c| c.type_ == "Established" && c.status == "True");
        if established {
            return crd;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the CRD never became Established");
}

fn module(name: &str, world: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "rekon.dev/v1alpha1", "kind": "DecisionModule",
        "metadata": {"name": name},
        "spec": {"world": world, "module": {"image": "registry.test/pvc@sha256:00"}, "extra": 1},
        "status": {"phase": "Active"}
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crd_is_discovered_and_its_objects_are_served_to_kube_clients() {
    let t = start_default().await;
    let crd = install_decision_module_crd(&t.client).await;
    let status = crd.status.unwrap();
    assert_eq!(status.accepted_names.unwrap().kind, "DecisionModule");
    assert_eq!(status.stored_versions, Some(vec!["v1alpha1".to_string()]));

    let discovery = Discovery::new(t.client.clone()).run().await.unwrap();
    let gvk = GroupVersionKind::gvk("rekon.dev", "v1alpha1", "DecisionModule");
    let (resource, caps) = discovery.resolve_gvk(&gvk).expect("discovered");
    assert_eq!(resource.plural, "decisionmodules");
    assert_eq!(caps.scope, kube::discovery::Scope::Cluster);
    assert!(caps.subresources.iter().any(|(r, _)| r.plural == "status"));

    let api: Api<DynamicObject> = Api::all_with(t.client.clone(), &resource);
    let created = api
        .create(&PostParams::default(), &module("pvc", "pvc-protection"))
        .await
        .unwrap();
    // Defaults filled, unknown fields pruned, status dropped on create, generation 1.
    assert_eq!(created.data["spec"]["mode"], "active");
    assert!(created.data["spec"].get("extra").is_none());
    assert!(created.data.get("status").is_none());
    assert_eq!(created.metadata.generation, Some(1));

    // Invalid objects: 422 naming every field.
    let mut bad = module("bad", "");
    bad.data["spec"]["mode"] = json!("fast");
    bad.data["spec"]["deadlineMs"] = json!(0);
    let err = api.create(&PostParams::default(), &bad).await.unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("{err}")
    };
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert!(
        status
            .message
            .starts_with("DecisionModule.rekon.dev \"bad\" is invalid: "),
        "{}",
        status.message
    );
    for part in [
        "spec.mode: Unsupported value: \"fast\": supported values: \"active\", \"shadow\", \"rollback\"",
        "spec.deadlineMs: Invalid value: 0: spec.deadlineMs in body should be greater than or equal to 1",
        "spec.world: Invalid value: \"\": spec.world in body should be at least 1 chars long",
    ] {
        assert!(
            status.message.contains(part),
            "{} lacks {part}",
            status.message
        );
    }

    // A watch sees the status writes; status writes keep the generation.
    let mut events = watcher::watcher(api.clone(), watcher::Config::default()).boxed();
    let mut seen_initial = false;
    while let Some(event) = events.next().await {
        if let Event::InitDone = event.unwrap() {
            seen_initial = true;
            break;
        }
    }
    assert!(seen_initial);

    let mut with_status = api.get("pvc").await.unwrap();
    with_status.data["status"] =
        json!({"phase": "Shadowing", "shadow": {"agreed": 3, "differed": 0}});
    with_status.data["spec"]["world"] = json!("ignored-on-status");
    let replaced = api
        .replace_status("pvc", &PostParams::default(), &with_status)
        .await
        .unwrap();
    assert_eq!(replaced.data["status"]["phase"], "Shadowing");
    assert_eq!(replaced.data["spec"]["world"], "pvc-protection");
    assert_eq!(replaced.metadata.generation, Some(1));

    let patched = api
        .patch_status(
            "pvc",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"status": {"phase": "Active", "active": {"digest": "sha256:ab"}}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(patched.data["status"]["active"]["digest"], "sha256:ab");
    assert_eq!(patched.metadata.generation, Some(1));

    // A spec patch bumps the generation and ignores status.
    let patched = api
        .patch(
            "pvc",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"mode": "shadow"}, "status": {"phase": "Pending"}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.metadata.generation, Some(2));
    assert_eq!(patched.data["status"]["phase"], "Active");
    // Strategic merge patches are for built-in kinds only.
    let err = api
        .patch(
            "pvc",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"mode": "active"}})),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 415),
        "{err}"
    );

    let mut phases = Vec::new();
    while phases.last().map(String::as_str) != Some("Active") {
        let event = tokio::time::timeout(Duration::from_secs(5), events.next())
            .await
            .expect("the watch delivers the status writes")
            .unwrap()
            .unwrap();
        if let Event::Apply(obj) = event {
            phases.push(
                obj.data["status"]["phase"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            );
        }
    }
    assert_eq!(phases, vec!["Shadowing", "Active"]);

    // The typed view reads the same objects.
    let typed: Api<DecisionModule> = Api::all(t.client.clone());
    let listed = typed.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].spec["mode"], "shadow");
    let replaced = typed
        .replace_status(
            "pvc",
            &PostParams::default(),
            &DecisionModule {
                status: Some(json!({"phase": "RolledBack"})),
                ..listed.items[0].clone()
            },
        )
        .await
        .unwrap();
    assert_eq!(replaced.status.unwrap()["phase"], "RolledBack");
}

#[tokio::test(flavor = "multi_thread")]
async fn deleting_a_crd_deletes_its_objects_and_stops_serving_it() {
    let t = start_default().await;
    install_decision_module_crd(&t.client).await;
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("rekon.dev", "v1alpha1", "DecisionModule"),
        "decisionmodules",
    );
    let api: Api<DynamicObject> = Api::all_with(t.client.clone(), &resource);
    api.create(&PostParams::default(), &module("a", "w"))
        .await
        .unwrap();

    let crds: Api<CustomResourceDefinition> = Api::all(t.client.clone());
    let deleting = crds
        .delete("decisionmodules.rekon.dev", &Default::default())
        .await
        .unwrap();
    let marked = deleting.left().expect("the CRD waits for its objects");
    assert!(marked.metadata.deletion_timestamp.is_some());
    let conditions = marked.status.unwrap().conditions.unwrap();
    assert!(
        conditions
            .iter()
            .any(|c| c.type_ == "Terminating" && c.status == "True")
    );

    for _ in 0..100 {
        if crds
            .get_opt("decisionmodules.rekon.dev")
            .await
            .unwrap()
            .is_none()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        crds.get_opt("decisionmodules.rekon.dev")
            .await
            .unwrap()
            .is_none()
    );
    let reply = t
        .request(
            http::Method::GET,
            "/apis/rekon.dev/v1alpha1/decisionmodules",
            "application/json",
            None,
        )
        .await;
    assert_eq!(reply.code, 404);
    let groups = t
        .request(http::Method::GET, "/apis", "application/json", None)
        .await;
    assert!(!groups.body.to_string().contains("rekon.dev"));
    // Recreated, the CRD serves an empty collection: the old objects are gone.
    install_decision_module_crd(&t.client).await;
    assert!(
        api.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}
