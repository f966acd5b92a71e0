//! The plain-Rust model of the `rekon:reconcile@0.1.0` contract.
//!
//! Every type mirrors one WIT type field for field (same names, snake_case), so
//! decision logic written against it runs natively in unit tests and benches and,
//! through [`crate::impl_contract_conversions!`], inside a component. The JSON form
//! (serde) mirrors the WIT names in kebab-case; it is the input and output format
//! of `rekon eval` and `rekon test`.

use serde::{Deserialize, Serialize};

/// `metadata.ownerReferences[]`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct OwnerReference {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    pub controller: bool,
    pub block_owner_deletion: bool,
}

/// The metadata every projected object carries.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct ObjectMeta {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    pub deletion_timestamp: Option<String>,
    pub deletion_grace_period_seconds: Option<i64>,
    pub finalizers: Vec<String>,
    pub owner_references: Vec<OwnerReference>,
    pub labels: Vec<(String, String)>,
    pub annotations: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct Pvc {
    pub meta: ObjectMeta,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PodPhase {
    #[default]
    Pending,
    Running,
    Succeeded,
    Failed,
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VolumeSource {
    PersistentVolumeClaim(String),
    Ephemeral,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct PodVolume {
    pub name: String,
    pub source: VolumeSource,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct PodResourceClaim {
    pub name: String,
    pub resource_claim_name: Option<String>,
    pub resource_claim_template_name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct PodResourceClaimStatus {
    pub name: String,
    pub resource_claim_name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct Pod {
    pub meta: ObjectMeta,
    pub node_name: String,
    pub phase: PodPhase,
    pub volumes: Vec<PodVolume>,
    pub resource_claims: Vec<PodResourceClaim>,
    pub resource_claim_statuses: Vec<PodResourceClaimStatus>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct ConsumerReference {
    pub api_group: String,
    pub resource: String,
    pub name: String,
    pub uid: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct ResourceClaim {
    pub meta: ObjectMeta,
    pub allocated: bool,
    pub reserved_for: Vec<ConsumerReference>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct ResourceClaimTemplate {
    pub meta: ObjectMeta,
    pub claim_spec_json: String,
}

/// The object an action writes, as the guest saw it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct Target {
    pub name: String,
    pub uid: String,
    pub resource_version: String,
}

// ---- pvc-protection ----

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct PvcInput {
    pub pvc: Pvc,
    pub cached_pods: Vec<Pod>,
    pub live_pods: Option<Vec<Pod>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PvcAction {
    AddFinalizer(Target),
    RemoveFinalizer(Target),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PvcDecision {
    Actions(Vec<PvcAction>),
    NeedLivePods,
}

// ---- resource-claim, pod key ----

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct PodInput {
    pub pod: Pod,
    pub claims: Vec<ResourceClaim>,
    pub owned_claims: Vec<ResourceClaim>,
    pub templates: Vec<ResourceClaimTemplate>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct NewClaim {
    pub pod_claim_name: String,
    pub generate_name: String,
    pub template_name: String,
    pub labels: Vec<(String, String)>,
    pub annotations: Vec<(String, String)>,
    pub owner_references: Vec<OwnerReference>,
    pub claim_spec_json: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StatusClaim {
    Existing(String),
    Created,
    None,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct DesiredClaimStatus {
    pub name: String,
    pub claim: StatusClaim,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ClaimStatuses {
    pub pod: Target,
    pub statuses: Vec<DesiredClaimStatus>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ReservationAdd {
    pub claim: Target,
    pub consumer: ConsumerReference,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PodAction {
    CreateClaim(NewClaim),
    SetClaimStatuses(ClaimStatuses),
    Reserve(ReservationAdd),
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct PodDecision {
    pub actions: Vec<PodAction>,
    pub error: Option<String>,
}

// ---- resource-claim, claim key ----

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PodLookup {
    Cached(Pod),
    Live(Pod),
    NotFound,
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Reservation {
    pub consumer: ConsumerReference,
    #[serde(default)]
    pub deleted: bool,
    pub pod: PodLookup,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct ClaimInput {
    pub claim: ResourceClaim,
    pub reservations: Vec<Reservation>,
    pub owner_pod: Option<Pod>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct StatusUpdate {
    pub claim: Target,
    pub reserved_for: Vec<ConsumerReference>,
    pub clear_allocation: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct FinalizerRemoval {
    pub claim: Target,
    pub finalizer: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClaimAction {
    UpdateStatus(StatusUpdate),
    RemoveFinalizer(FinalizerRemoval),
    Delete(Target),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClaimDecision {
    Actions(Vec<ClaimAction>),
    NeedLivePods(Vec<String>),
}

// ---- predicates shared by every decision ----

impl ObjectMeta {
    pub fn is_deleting(&self) -> bool {
        self.deletion_timestamp.is_some()
    }

    pub fn has_finalizer(&self, finalizer: &str) -> bool {
        self.finalizers.iter().any(|f| f == finalizer)
    }

    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The first owner reference with `controller: true`.
    pub fn controller(&self) -> Option<&OwnerReference> {
        self.owner_references.iter().find(|o| o.controller)
    }

    /// The object's target as the guest sees it now.
    pub fn target(&self) -> Target {
        Target {
            name: self.name.clone(),
            uid: self.uid.clone(),
            resource_version: self.resource_version.clone(),
        }
    }
}

impl OwnerReference {
    /// A controlling owner reference to a core/v1 Pod.
    pub fn is_pod_controller(&self) -> bool {
        self.controller && self.api_version == "v1" && self.kind == "Pod"
    }
}

impl Pod {
    pub fn is_scheduled(&self) -> bool {
        !self.node_name.is_empty()
    }

    /// Terminal phase, or deleted while unscheduled (upstream `isPodDone`).
    pub fn is_done(&self) -> bool {
        matches!(self.phase, PodPhase::Succeeded | PodPhase::Failed)
            || (self.meta.is_deleting() && !self.is_scheduled())
    }

    /// Kubelet finished, or force-deleted: deletion timestamp with grace 0.
    pub fn is_shut_down(&self) -> bool {
        self.meta.is_deleting() && self.meta.deletion_grace_period_seconds == Some(0)
    }

    /// `obj` is in this pod's namespace and controlled by this pod's UID.
    pub fn controls(&self, obj: &ObjectMeta) -> bool {
        obj.namespace == self.meta.namespace
            && obj
                .owner_references
                .iter()
                .any(|o| o.controller && o.uid == self.meta.uid)
    }

    /// This pod as a `reservedFor` entry.
    pub fn consumer(&self) -> ConsumerReference {
        ConsumerReference {
            api_group: String::new(),
            resource: "pods".into(),
            name: self.meta.name.clone(),
            uid: self.meta.uid.clone(),
        }
    }
}

impl ConsumerReference {
    pub fn is_pod(&self) -> bool {
        self.api_group.is_empty() && self.resource == "pods"
    }
}
