//! The built-in kinds: every listable kind of the Kubernetes version k8s-openapi is generated
//! for, one version each (the most stable one, as discovery's preferred version).
//!
//! Each entry is read from the type's `k8s_openapi::Resource` and `ListableResource` consts
//! (group, version, kind, list kind, plural, scope) and its field list (a `status` field is a
//! `/status` subresource, true of every built-in kind), so none of that can drift from the
//! types the server decodes with. What the types do not say (short names, categories,
//! server-managed generation, the delete behaviours, field selectors) is upstream's registry
//! strategy, set in [`upstream`].
//!
//! The list of types is written once, in [`table`]. Deriving it in a build step would mean
//! finding k8s-openapi's source from a build script, which cargo only tells a build script
//! through a nested `cargo metadata` (that can block on the lock of the cargo running it);
//! instead `tests::every_listable_kind_is_served` runs `cargo metadata` after the build, reads
//! every `impl ListableResource` of the enabled version in k8s-openapi's source and fails,
//! naming the type, when a kind is missing or is not served at its most stable version. A
//! k8s-openapi upgrade is therefore one edit here, which the test points to.

use serde::de::{self, Deserializer, Visitor};
use serde::{Serialize, de::DeserializeOwned};

use k8s_openapi::{ClusterResourceScope, ListableResource, NamespaceResourceScope};

use super::{BASE, ResourceInfo, StatusWrite, normalize};

pub(super) const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// Kinds with a k8s-openapi type that the server does not serve, and why.
#[cfg_attr(not(test), allow(dead_code))]
pub const NOT_SERVED: &[(&str, &str, &str)] = &[(
    "",
    "ComponentStatus",
    "read-only, computed by kube-apiserver from its own health checks (deprecated since 1.19)",
)];

macro_rules! kinds {
    ($($ty:ty),* $(,)?) => { vec![$(described::<$ty>()),*] };
}

/// The built-in resources, the core group first.
pub(super) fn table() -> Vec<ResourceInfo> {
    use k8s_openapi::api::{
        admissionregistration, apiserverinternal, apps, autoscaling, batch, certificates,
        coordination, core, discovery, events, flowcontrol, networking, node, policy, rbac,
        resource, scheduling, storage, storagemigration,
    };
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions;
    use k8s_openapi::kube_aggregator::pkg::apis::apiregistration;
    let mut table = kinds![
        core::v1::Namespace,
        core::v1::Pod,
        core::v1::PersistentVolumeClaim,
        core::v1::PersistentVolume,
        core::v1::ConfigMap,
        core::v1::Endpoints,
        core::v1::Event,
        core::v1::LimitRange,
        core::v1::Node,
        core::v1::PodTemplate,
        core::v1::ReplicationController,
        core::v1::ResourceQuota,
        core::v1::Secret,
        core::v1::Service,
        core::v1::ServiceAccount,
        admissionregistration::v1::MutatingWebhookConfiguration,
        admissionregistration::v1::ValidatingAdmissionPolicy,
        admissionregistration::v1::ValidatingAdmissionPolicyBinding,
        admissionregistration::v1::ValidatingWebhookConfiguration,
        admissionregistration::v1beta1::MutatingAdmissionPolicy,
        admissionregistration::v1beta1::MutatingAdmissionPolicyBinding,
        apiextensions::v1::CustomResourceDefinition,
        apiregistration::v1::APIService,
        apiserverinternal::v1alpha1::StorageVersion,
        apps::v1::ControllerRevision,
        apps::v1::DaemonSet,
        apps::v1::Deployment,
        apps::v1::ReplicaSet,
        apps::v1::StatefulSet,
        autoscaling::v2::HorizontalPodAutoscaler,
        batch::v1::CronJob,
        batch::v1::Job,
        certificates::v1::CertificateSigningRequest,
        certificates::v1beta1::ClusterTrustBundle,
        certificates::v1beta1::PodCertificateRequest,
        coordination::v1::Lease,
        coordination::v1beta1::LeaseCandidate,
        discovery::v1::EndpointSlice,
        events::v1::Event,
        flowcontrol::v1::FlowSchema,
        flowcontrol::v1::PriorityLevelConfiguration,
        networking::v1::IPAddress,
        networking::v1::Ingress,
        networking::v1::IngressClass,
        networking::v1::NetworkPolicy,
        networking::v1::ServiceCIDR,
        node::v1::RuntimeClass,
        policy::v1::PodDisruptionBudget,
        rbac::v1::ClusterRole,
        rbac::v1::ClusterRoleBinding,
        rbac::v1::Role,
        rbac::v1::RoleBinding,
        resource::v1::DeviceClass,
        resource::v1::ResourceClaim,
        resource::v1::ResourceClaimTemplate,
        resource::v1::ResourceSlice,
        resource::v1alpha3::DeviceTaintRule,
        scheduling::v1::PriorityClass,
        scheduling::v1alpha1::Workload,
        storage::v1::CSIDriver,
        storage::v1::CSINode,
        storage::v1::CSIStorageCapacity,
        storage::v1::StorageClass,
        storage::v1::VolumeAttachment,
        storage::v1::VolumeAttributesClass,
        storagemigration::v1beta1::StorageVersionMigration,
    ];
    table.iter_mut().for_each(upstream);
    table
}

/// A scope the server serves: namespaced or cluster-wide (subresource types are not listable).
trait Scope {
    const NAMESPACED: bool;
}

impl Scope for NamespaceResourceScope {
    const NAMESPACED: bool = true;
}

impl Scope for ClusterResourceScope {
    const NAMESPACED: bool = false;
}

/// What the type says about itself.
fn described<K>() -> ResourceInfo
where
    K: ListableResource + DeserializeOwned + Serialize,
    K::Scope: Scope,
{
    ResourceInfo {
        group: K::GROUP,
        version: K::VERSION,
        kind: K::KIND,
        list_kind: K::LIST_KIND,
        plural: K::URL_PATH_SEGMENT,
        singular: Box::leak(K::KIND.to_ascii_lowercase().into_boxed_str()),
        namespaced: <K::Scope as Scope>::NAMESPACED,
        has_status: field_names::<K>().contains(&"status"),
        normalize: normalize::<K>,
        ..BASE
    }
}

/// The JSON field names of a k8s-openapi type: its `Deserialize` passes them to
/// `deserialize_struct`, where this deserializer records them and stops.
fn field_names<K: DeserializeOwned>() -> &'static [&'static str] {
    let mut fields: &'static [&'static str] = &[];
    let _ = K::deserialize(FieldProbe(&mut fields));
    fields
}

struct FieldProbe<'a>(&'a mut &'static [&'static str]);

impl<'de> Deserializer<'de> for FieldProbe<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("only structs are probed"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = fields;
        Err(de::Error::custom("probed"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

const POD_FIELDS: &[(&str, &str)] = &[
    ("spec.nodeName", "/spec/nodeName"),
    ("spec.restartPolicy", "/spec/restartPolicy"),
    ("spec.schedulerName", "/spec/schedulerName"),
    ("spec.serviceAccountName", "/spec/serviceAccountName"),
    ("status.phase", "/status/phase"),
    ("status.podIP", "/status/podIP"),
    ("status.nominatedNodeName", "/status/nominatedNodeName"),
];

const NAMESPACE_FIELDS: &[(&str, &str)] = &[
    ("status.phase", "/status/phase"),
    ("name", "/metadata/name"),
];

const NAME_FIELD: &[(&str, &str)] = &[("name", "/metadata/name")];

const CORE_EVENT_FIELDS: &[(&str, &str)] = &[
    ("involvedObject.kind", "/involvedObject/kind"),
    ("involvedObject.namespace", "/involvedObject/namespace"),
    ("involvedObject.name", "/involvedObject/name"),
    ("involvedObject.uid", "/involvedObject/uid"),
    ("involvedObject.apiVersion", "/involvedObject/apiVersion"),
    (
        "involvedObject.resourceVersion",
        "/involvedObject/resourceVersion",
    ),
    ("involvedObject.fieldPath", "/involvedObject/fieldPath"),
    ("reason", "/reason"),
    ("reportingComponent", "/reportingComponent"),
    ("source", "/source/component"),
    ("type", "/type"),
];

const SECRET_FIELDS: &[(&str, &str)] = &[("type", "/type")];
const NODE_FIELDS: &[(&str, &str)] = &[("spec.unschedulable", "/spec/unschedulable")];
const JOB_FIELDS: &[(&str, &str)] = &[("status.successful", "/status/successful")];
const REPLICAS_FIELDS: &[(&str, &str)] = &[("status.replicas", "/status/replicas")];

/// Upstream's registry strategies, per resource. Generation, the deleted-object answer and
/// the status-write rules of v1.20's kinds were observed on the real v1.20.2 server (pods,
/// PVCs and PodTemplates keep v1.20's unmanaged generation so the differential suite agrees;
/// Jobs and CronJobs follow the newer releases, which manage it).
fn upstream(info: &mut ResourceInfo) {
    let resource = (info.group, info.plural);
    info.short_names = match resource {
        ("", "configmaps") => &["cm"],
        ("", "endpoints") => &["ep"],
        ("", "events") | ("events.k8s.io", "events") => &["ev"],
        ("", "limitranges") => &["limits"],
        ("", "namespaces") => &["ns"],
        ("", "nodes") => &["no"],
        ("", "persistentvolumeclaims") => &["pvc"],
        ("", "persistentvolumes") => &["pv"],
        ("", "pods") => &["po"],
        ("", "replicationcontrollers") => &["rc"],
        ("", "resourcequotas") => &["quota"],
        ("", "serviceaccounts") => &["sa"],
        ("", "services") => &["svc"],
        ("apiextensions.k8s.io", "customresourcedefinitions") => &["crd", "crds"],
        ("apps", "daemonsets") => &["ds"],
        ("apps", "deployments") => &["deploy"],
        ("apps", "replicasets") => &["rs"],
        ("apps", "statefulsets") => &["sts"],
        ("autoscaling", "horizontalpodautoscalers") => &["hpa"],
        ("batch", "cronjobs") => &["cj"],
        ("certificates.k8s.io", "certificatesigningrequests") => &["csr"],
        ("networking.k8s.io", "ingresses") => &["ing"],
        ("networking.k8s.io", "networkpolicies") => &["netpol"],
        ("policy", "poddisruptionbudgets") => &["pdb"],
        ("scheduling.k8s.io", "priorityclasses") => &["pc"],
        ("storage.k8s.io", "storageclasses") => &["sc"],
        ("storage.k8s.io", "volumeattributesclasses") => &["vac"],
        _ => &[],
    };
    info.categories = match resource {
        ("", "pods" | "replicationcontrollers" | "services")
        | ("apps", "daemonsets" | "deployments" | "replicasets" | "statefulsets")
        | ("autoscaling", "horizontalpodautoscalers")
        | ("batch", "cronjobs" | "jobs") => &["all"],
        ("admissionregistration.k8s.io", _)
        | ("apiextensions.k8s.io", _)
        | ("apiregistration.k8s.io", _) => &["api-extensions"],
        _ => &[],
    };
    info.manages_generation = matches!(
        resource,
        ("", "replicationcontrollers")
            | ("admissionregistration.k8s.io", _)
            | ("apiextensions.k8s.io", _)
            | (
                "apps",
                "daemonsets" | "deployments" | "replicasets" | "statefulsets"
            )
            | ("batch", _)
            | ("flowcontrol.apiserver.k8s.io", _)
            | (
                "networking.k8s.io",
                "ingresses" | "ingressclasses" | "networkpolicies"
            )
            | ("policy", _)
            | ("resource.k8s.io", _)
            | ("scheduling.k8s.io", "priorityclasses")
    );
    info.returns_deleted_object = matches!(
        resource,
        (
            "",
            "namespaces"
                | "pods"
                | "persistentvolumeclaims"
                | "persistentvolumes"
                | "podtemplates"
                | "resourcequotas"
        ) | ("apiextensions.k8s.io", _)
            | ("resource.k8s.io", _)
            | ("storage.k8s.io", _)
    );
    info.has_scale = matches!(
        resource,
        ("", "replicationcontrollers") | ("apps", "deployments" | "replicasets" | "statefulsets")
    );
    info.orphans_by_default =
        matches!(resource, ("", "replicationcontrollers") | ("batch", "jobs"));
    info.status_write = match resource {
        ("apps", "deployments") => StatusWrite::WithAnnotations,
        ("apiextensions.k8s.io", _)
        | ("admissionregistration.k8s.io", _)
        | ("certificates.k8s.io", "podcertificaterequests")
        | ("networking.k8s.io", "servicecidrs")
        | ("resource.k8s.io", _)
        | ("storagemigration.k8s.io", _) => StatusWrite::StatusOnly,
        _ => StatusWrite::WithMetadata,
    };
    info.selectable_fields = match resource {
        ("", "pods") => POD_FIELDS,
        ("", "namespaces") => NAMESPACE_FIELDS,
        ("", "persistentvolumeclaims") => NAME_FIELD,
        ("", "events") => CORE_EVENT_FIELDS,
        ("", "secrets") => SECRET_FIELDS,
        ("", "nodes") => NODE_FIELDS,
        ("", "replicationcontrollers") | ("apps", "replicasets") => REPLICAS_FIELDS,
        ("batch", "jobs") => JOB_FIELDS,
        _ => &[],
    };
    match resource {
        ("", "namespaces") => {
            info.verbs = &[
                "create", "delete", "get", "list", "patch", "update", "watch",
            ];
        }
        ("", "pods") => info.graceful = true,
        // events.k8s.io/v1 Events are core Events in another shape (see `conversion`).
        ("events.k8s.io", "events") => info.storage_group = Some(""),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::collections::BTreeMap;
    use std::path::PathBuf;

    /// `v1` > `v1beta2` > `v1beta1` > `v1alpha1`, and `v2` > `v1`: Kubernetes' version priority.
    fn stability(version: &str) -> (u8, u32, u32) {
        let rest = version.trim_start_matches('v');
        let digits = |s: &str| -> u32 { s.parse().unwrap_or(0) };
        for (marker, level) in [("beta", 1), ("alpha", 0)] {
            if let Some((major, minor)) = rest.split_once(marker) {
                return (level, digits(major), digits(minor));
            }
        }
        (2, digits(rest), 0)
    }

    /// k8s-openapi's source folder of the enabled Kubernetes version. Only this platform's
    /// packages: `--offline` cannot fetch the others.
    // The version is assigned inside k8s-openapi's macros, only the enabled one expands.
    #[allow(clippy::needless_late_init)]
    fn k8s_openapi_source() -> PathBuf {
        let rustc = std::process::Command::new("rustc")
            .arg("-vV")
            .output()
            .expect("rustc runs");
        let rustc = String::from_utf8_lossy(&rustc.stdout);
        let host = rustc
            .lines()
            .find_map(|l| l.strip_prefix("host: "))
            .expect("rustc -vV names the host");
        let out = std::process::Command::new(env!("CARGO"))
            .args(["metadata", "--format-version", "1", "--offline"])
            .args(["--filter-platform", host])
            .arg("--manifest-path")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
            .output()
            .expect("cargo metadata runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let manifest = metadata["packages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "k8s-openapi")
            .and_then(|p| p["manifest_path"].as_str())
            .expect("k8s-openapi is a dependency");
        // Exactly one of these expands: the enabled version.
        let version: &str;
        k8s_openapi::k8s_if_1_33! { version = "v1_33"; }
        k8s_openapi::k8s_if_1_34! { version = "v1_34"; }
        k8s_openapi::k8s_if_1_35! { version = "v1_35"; }
        k8s_openapi::k8s_if_1_36! { version = "v1_36"; }
        k8s_openapi::k8s_if_1_37! { version = "v1_37"; }
        PathBuf::from(manifest)
            .parent()
            .unwrap()
            .join("src")
            .join(version)
    }

    fn const_value<'a>(source: &'a str, name: &str) -> &'a str {
        let start = source
            .find(&format!("const {name}: &'static str = \""))
            .unwrap_or_else(|| panic!("{name} in {source:.200}"));
        let value = &source[start..];
        let value = &value[value.find('"').unwrap() + 1..];
        &value[..value.find('"').unwrap()]
    }

    fn listable(dir: &std::path::Path, out: &mut Vec<(String, String, String, PathBuf)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                listable(&path, out);
            } else if let Ok(source) = std::fs::read_to_string(&path)
                && source.contains("impl crate::ListableResource for")
            {
                out.push((
                    const_value(&source, "GROUP").to_string(),
                    const_value(&source, "KIND").to_string(),
                    const_value(&source, "VERSION").to_string(),
                    path,
                ));
            }
        }
    }

    #[test]
    fn every_listable_kind_is_served() {
        let dir = k8s_openapi_source();
        let mut found = Vec::new();
        listable(&dir, &mut found);
        assert!(
            found.len() > 50,
            "{} listable types in {}",
            found.len(),
            dir.display()
        );
        let mut best: BTreeMap<(String, String), (String, PathBuf)> = BTreeMap::new();
        for (group, kind, version, path) in found {
            let entry = best
                .entry((group, kind))
                .or_insert((version.clone(), path.clone()));
            if stability(&version) > stability(&entry.0) {
                *entry = (version, path);
            }
        }
        let served = table();
        let mut problems = Vec::new();
        for ((group, kind), (version, path)) in &best {
            if NOT_SERVED.iter().any(|(g, k, _)| g == group && k == kind) {
                continue;
            }
            match served.iter().find(|i| i.group == group && i.kind == kind) {
                None => problems.push(format!(
                    "{kind}.{group} {version} ({}) is not in builtin::table",
                    path.display()
                )),
                Some(info) if info.version != version => problems.push(format!(
                    "{kind}.{group} is served as {} but {version} is more stable",
                    info.version
                )),
                Some(_) => {}
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
        assert_eq!(served.len() + NOT_SERVED.len(), best.len());
    }

    #[test]
    fn the_types_say_scope_status_and_names() {
        let served = table();
        let find = |group: &str, plural: &str| {
            served
                .iter()
                .find(|i| i.group == group && i.plural == plural)
                .unwrap()
        };
        let pv = find("", "persistentvolumes");
        assert!(!pv.namespaced && pv.has_status);
        assert_eq!(
            (pv.kind, pv.list_kind, pv.singular),
            (
                "PersistentVolume",
                "PersistentVolumeList",
                "persistentvolume"
            )
        );
        let jobs = find("batch", "jobs");
        assert!(jobs.namespaced && jobs.has_status && jobs.manages_generation);
        assert!(!find("", "configmaps").has_status);
        assert!(!find("rbac.authorization.k8s.io", "clusterroles").namespaced);
        assert_eq!(stability("v2"), (2, 2, 0));
        assert!(stability("v1") > stability("v1beta2"));
        assert!(stability("v1beta1") > stability("v1alpha3"));
    }
}
