//! The `DecisionModule` custom resource (`rekon.dev/v1alpha1`, cluster-scoped):
//! which module decides for one world, where it comes from, and what rekon
//! reports about it. The spec reads like a `guests.yaml` entry; the
//! CustomResourceDefinition in `deploy/` is generated from these types.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::{
    AutoPromote, AutoRollback, KindPin, MAX_COUNT, MAX_DEADLINE_MS, MAX_MEMORY_MIB, Mode, ScopePin,
};

/// A sha256 as `sha256:<hex>` or bare hex.
const SHA256_PATTERN: &str = "^(sha256:)?[0-9a-f]{64}$";

/// One world's module, or one controller module: the spec of a `DecisionModule`.
// kube's `printcolumn` is one attribute per column, which clippy takes for repeats.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "rekon.dev",
    version = "v1alpha1",
    kind = "DecisionModule",
    plural = "decisionmodules",
    singular = "decisionmodule",
    shortname = "dm",
    status = "DecisionModuleStatus",
    derive = "PartialEq",
    doc = "Which WebAssembly module decides for one rekon world, or runs as one controller, pulled, verified and rolled out by every rekon replica",
    printcolumn(name = "World", type_ = "string", json_path = ".spec.world"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "Digest", type_ = "string", json_path = ".status.active.digest"),
    printcolumn(
        name = "Agreed",
        type_ = "integer",
        json_path = ".status.shadow.agreed"
    ),
    printcolumn(
        name = "Differed",
        type_ = "integer",
        json_path = ".status.shadow.differed"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct DecisionModuleSpec {
    /// The world it decides for: `pvc-protection`, `resource-claim`, ...; any
    /// other name is a controller module's (the name its `describe` gives),
    /// which then needs `scope`. One object per world or controller.
    #[schemars(length(min = 1, max = 63))]
    pub world: String,
    /// The module: in mode `active` it serves, in mode `shadow` it is the candidate.
    pub module: ModuleSource,
    /// `active` (default), `shadow` (`previous` serves, `module` runs beside it) or
    /// `rollback` (`previous` serves).
    #[serde(default)]
    pub mode: Mode,
    /// Deadline of one decision, in milliseconds (1 to 10000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = MAX_DEADLINE_MS))]
    pub deadline_ms: Option<u64>,
    /// Memory cap of one decision, in MiB (at most the engine's maximum).
    #[serde(default, rename = "memoryMiB", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = MAX_MEMORY_MIB))]
    pub memory_mib: Option<u64>,
    /// A candidate deciding beside `module` in mode `active`, without effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shadow: Option<ModuleSource>,
    /// The version to go back to: serves in modes `shadow` and `rollback`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<ModuleSource>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_rollback: Option<AutoRollback>,
    /// In mode `shadow`: make the candidate active once it agreed often enough.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_promote: Option<AutoPromote>,
    /// A controller module's pinned scope (required for one): a version whose
    /// description asks for more is refused (`ScopeNotAllowed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<ScopePin>,
    /// A controller module's finalizers when the object is deleted, or when a
    /// new version no longer declares one: `Release` (default; removed from
    /// every primary object before the object goes) or `Keep`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_removal: Option<OnRemoval>,
}

/// What becomes of a controller module's finalizers on the objects it
/// protected, once it no longer serves them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum OnRemoval {
    /// rekon removes them from every primary object; the `DecisionModule`
    /// (held by rekon's finalizer) goes once none remains.
    #[default]
    Release,
    /// They stay, for another controller to honour.
    Keep,
}

/// Where a module's bytes come from: an OCI image, or a ConfigMap key.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModuleSource {
    /// `registry/repository@sha256:<manifest digest>`, or a tag with `sha256`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// `sha256:<hex>` (or bare hex) of the wasm bytes; required with a tag or a ConfigMap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(SHA256_PATTERN))]
    pub sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<ConfigMapKey>,
    /// Plain HTTP to the registry (loopback registries may use it without this).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure: bool,
    /// A `kubernetes.io/dockerconfigjson` Secret with the registry credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_secret: Option<ObjectName>,
    /// Require a cosign signature made with this key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<Verify>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
pub struct ConfigMapKey {
    #[schemars(length(min = 1, max = 63))]
    pub namespace: String,
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// The key in `binaryData` (or `data`) holding the module.
    #[schemars(length(min = 1, max = 253))]
    pub key: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
pub struct ObjectName {
    #[schemars(length(min = 1, max = 63))]
    pub namespace: String,
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
}

/// The public key a cosign signature must verify with: inline PEM, or a Secret key.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Verify {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_key_secret: Option<SecretKey>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
pub struct SecretKey {
    #[schemars(length(min = 1, max = 63))]
    pub namespace: String,
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    #[schemars(length(min = 1, max = 253))]
    pub key: String,
}

/// Where a `DecisionModule` stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum Phase {
    /// Seen, not yet worked on.
    Pending,
    /// Fetching and checking the module.
    Pulling,
    /// The previous version serves; the candidate decides beside it.
    Shadowing,
    /// The module serves.
    Active,
    /// It failed too often; the previous version serves again.
    RolledBack,
    /// Refused: see the `Ready` condition. Whatever served before keeps serving.
    Rejected,
    /// Deleted: the controller stopped, its finalizers are being released.
    Releasing,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pending => "Pending",
            Phase::Pulling => "Pulling",
            Phase::Shadowing => "Shadowing",
            Phase::Active => "Active",
            Phase::RolledBack => "RolledBack",
            Phase::Rejected => "Rejected",
            Phase::Releasing => "Releasing",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionModuleStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// The generation of the spec this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = MAX_COUNT))]
    pub observed_generation: Option<i64>,
    /// The version whose decisions are applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<ActiveStatus>,
    /// The candidate deciding beside it, and how it compares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shadow: Option<ShadowStatus>,
    /// The build automatic rollback took out of service. Every replica, and
    /// rekon after a restart, serves `previous` instead while `module` names
    /// this digest; name a new build to serve again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolled_back: Option<RolledBackStatus>,
    /// The shadow's automatic promotion and the evidence it was made on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promotion: Option<PromotionStatus>,
    /// `Ready`, `Pulled`, `Verified`, `Promoted`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// A controller module's primary kind, as the serving version describes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary: Option<KindPin>,
    /// The scope the serving controller module declares (within `spec.scope`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<ScopePin>,
    /// Finalizer names being released from every primary object (`onRemoval:
    /// Release`, the object deleted or a version no longer declaring them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub releasing: Vec<String>,
    /// Primary objects still carrying one of `releasing`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = MAX_COUNT))]
    pub remaining: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActiveStatus {
    /// `sha256:<hex>` of the wasm bytes.
    pub digest: String,
    /// Where it came from: the image reference or `configmap/NAMESPACE/NAME#KEY`.
    pub image: String,
    /// The `rekon:reconcile` version it exports.
    pub contract_version: String,
    /// RFC 3339 time it started serving.
    pub since: String,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
pub struct ShadowStatus {
    pub digest: String,
    #[schemars(range(max = MAX_COUNT))]
    pub agreed: u64,
    #[schemars(range(max = MAX_COUNT))]
    pub differed: u64,
    #[schemars(range(max = MAX_COUNT))]
    pub failed: u64,
    /// Shadow decisions not run: the shadow budget was full.
    #[serde(default)]
    #[schemars(range(max = MAX_COUNT))]
    pub dropped: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolledBackStatus {
    /// `sha256:<hex>` of the module bytes rolled back.
    #[schemars(pattern(SHA256_PATTERN))]
    pub digest: String,
    /// RFC 3339 time of the rollback.
    pub at: String,
    pub message: String,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromotionStatus {
    /// `sha256:<hex>` of the module promoted.
    #[schemars(pattern(SHA256_PATTERN))]
    pub digest: String,
    /// RFC 3339 time of the promotion.
    pub at: String,
    /// The shadow's tally when it was promoted.
    #[schemars(range(max = MAX_COUNT))]
    pub agreed: u64,
    #[schemars(range(max = MAX_COUNT))]
    pub differed: u64,
    #[schemars(range(max = MAX_COUNT))]
    pub failed: u64,
}

/// A Kubernetes condition (`type`, `status`, `reason`, `message`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    pub reason: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = MAX_COUNT))]
    pub observed_generation: Option<i64>,
}

impl DecisionModuleStatus {
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }
}

/// The CustomResourceDefinition as YAML, as `deploy/decisionmodules.yaml` holds it.
pub fn crd_yaml() -> String {
    use kube::CustomResourceExt;
    let header = "# Generated from host/modules/src/object/resource.rs; regenerate with\n\
                  # REKON_WRITE_CRD=1 cargo test -p rekon-modules deploy_crd_matches_the_rust_types\n";
    format!(
        "{header}{}",
        serde_yaml::to_string(&DecisionModule::crd()).expect("CRD serialises")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEPLOYED: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../deploy/decisionmodules.yaml"
    );

    #[test]
    fn deploy_crd_matches_the_rust_types() {
        let generated = crd_yaml();
        if std::env::var_os("REKON_WRITE_CRD").is_some() {
            std::fs::write(DEPLOYED, &generated).unwrap();
        }
        let deployed = std::fs::read_to_string(DEPLOYED).unwrap();
        assert!(
            deployed == generated,
            "deploy/decisionmodules.yaml differs from the Rust types; regenerate it with \
             REKON_WRITE_CRD=1 cargo test -p rekon-modules deploy_crd_matches_the_rust_types"
        );
    }

    #[test]
    fn every_integer_of_the_crd_has_a_maximum() {
        fn walk(path: &str, schema: &serde_json::Value, missing: &mut Vec<String>) {
            if schema["type"] == "integer" && schema.get("maximum").is_none() {
                missing.push(path.to_string());
            }
            for (name, property) in schema["properties"].as_object().into_iter().flatten() {
                walk(&format!("{path}.{name}"), property, missing);
            }
            if let Some(items) = schema.get("items") {
                walk(&format!("{path}[]"), items, missing);
            }
        }
        use kube::CustomResourceExt;
        let crd = serde_json::to_value(DecisionModule::crd()).unwrap();
        let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        let mut missing = Vec::new();
        walk("", schema, &mut missing);
        assert!(
            missing.is_empty(),
            "integers without a maximum: {missing:?}"
        );
        assert!(schema["properties"]["spec"]["properties"]["world"].is_object());
    }

    #[test]
    fn the_issue_example_reads_as_a_spec() {
        let object: DecisionModule = serde_yaml::from_str(
            "apiVersion: rekon.dev/v1alpha1\nkind: DecisionModule\nmetadata: {name: pvc-protection}\n\
             spec:\n  world: pvc-protection\n  module:\n    image: registry.example.com/platform/pvc-protection@sha256:abc\n    insecure: false\n\
             \x20 mode: shadow\n  deadlineMs: 100\n  memoryMiB: 64\n  previous: {configMap: {namespace: a, name: b, key: c}, sha256: 'sha256:00'}\n\
             \x20 autoRollback: {maxFailureFraction: 0.05, minDecisions: 50}\n  autoPromote: {minDecisions: 500, maxDifferences: 0}\n",
        )
        .unwrap();
        assert_eq!(object.spec.mode, Mode::Shadow);
        assert_eq!(object.spec.memory_mib, Some(64));
        assert_eq!(object.spec.auto_promote.unwrap().min_decisions, 500);
        assert_eq!(object.spec.previous.unwrap().config_map.unwrap().key, "c");
    }

    #[test]
    fn the_crd_is_cluster_scoped_with_status_and_printer_columns() {
        use kube::CustomResourceExt;
        let crd = DecisionModule::crd();
        assert_eq!(crd.spec.scope, "Cluster");
        let version = &crd.spec.versions[0];
        assert!(version.subresources.as_ref().unwrap().status.is_some());
        let columns: Vec<&str> = version
            .additional_printer_columns
            .as_ref()
            .unwrap()
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(
            columns,
            ["World", "Phase", "Digest", "Agreed", "Differed", "Age"]
        );
    }
}
