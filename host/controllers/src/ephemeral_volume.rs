//! Generic ephemeral volumes (upstream-behaviour §2): for each pod volume with
//! `ephemeral.volumeClaimTemplate`, the PVC `<pod>-<volume>` owned by the pod.
//!
//! The guest names the volumes whose PVC to create, or the first conflict; the
//! host builds every PVC from the template it projected itself (never from guest
//! output), checks the whole decision before writing anything, and creates each
//! PVC with its exact name (a create is conditional by nature: 409 if it exists).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PersistentVolumeClaimSpec, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use rekon_contract::EphemeralVolumeWorld;
use rekon_guest::ephemeral::{
    ClaimConflict, ClaimTemplate, ControllerRef, EphemeralPod, EphemeralVolume, ExistingClaim,
    VolumeAction, VolumeInput,
};
use rekon_guest::model;
use rekon_machinery::mutation_cache::MutationCache;
use serde_json::json;

use crate::cache::{Change, ObjectKey};
use crate::context::{Context, PODS_BY_PVC, reference};
use crate::decider::Slot;
use crate::projection::{CachedPod, CachedPvc};
use crate::reconcile::{Outcome, ReconcileError, decide, log_failure};
use crate::reconciler::Reconciler;
use crate::watches::Watches;
use crate::writes::Writer;

pub const NAME: &str = "ephemeral-volume";
/// Upstream's reason for a PVC that cannot be created or is not the pod's.
pub const REASON: &str = "FailedBinding";
/// The longest object name the API server accepts (a DNS subdomain).
pub const MAX_NAME_LENGTH: usize = 253;

/// One ephemeral volume's claim template, as the pod cache keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct EphemeralTemplate {
    pub volume: String,
    pub template: ClaimTemplate,
}

/// The ephemeral volumes of `pod`, in `spec.volumes` order: labels and
/// annotations sorted by key (they are BTreeMaps), the spec encoded once per
/// watch event. Empty for the many pods without ephemeral volumes.
pub fn templates(pod: &Pod) -> Vec<EphemeralTemplate> {
    let volumes = pod.spec.as_ref().and_then(|s| s.volumes.as_ref());
    let pairs = |map: Option<&std::collections::BTreeMap<String, String>>| {
        map.into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    volumes
        .into_iter()
        .flatten()
        .filter_map(|volume| {
            let template = volume.ephemeral.as_ref()?.volume_claim_template.as_ref()?;
            let meta = template.metadata.as_ref();
            Some(EphemeralTemplate {
                volume: volume.name.clone(),
                template: ClaimTemplate {
                    labels: pairs(meta.and_then(|m| m.labels.as_ref())),
                    annotations: pairs(meta.and_then(|m| m.annotations.as_ref())),
                    spec_json: serde_json::to_string(&template.spec)
                        .expect("a typed PersistentVolumeClaimSpec always encodes"),
                },
            })
        })
        .collect()
}

pub struct EphemeralVolumeController {
    ctx: Arc<Context>,
    decider: Arc<Slot<EphemeralVolumeWorld>>,
    /// Informer PVCs plus those this controller just created, so a decision
    /// taken before the watch delivers a create sees the PVC as existing.
    created: Mutex<MutationCache<model::Pvc>>,
}

impl Reconciler for EphemeralVolumeController {
    const NAME: &'static str = NAME;
    const APIS: &'static [&'static str] = &["v1"];
    type World = EphemeralVolumeWorld;
    type Key = ObjectKey;

    fn new(ctx: Arc<Context>, decider: Arc<Slot<EphemeralVolumeWorld>>) -> Self {
        Self {
            ctx,
            decider,
            created: Mutex::new(MutationCache::new()),
        }
    }

    fn watches(self: &Arc<Self>, watches: &mut Watches<'_, ObjectKey>) {
        watches.on::<CachedPod>(keys_for_pod);
        let this = self.clone();
        watches.on::<CachedPvc>(move |change| this.keys_for_pvc(change));
    }

    async fn reconcile(&self, key: &ObjectKey) -> Result<Outcome, ReconcileError> {
        let Some(pod) = self.ctx.caches.pods.get(key) else {
            return Ok(Outcome::Done);
        };
        if pod.ephemeral.is_empty() {
            return Ok(Outcome::Done);
        }
        let key_text = key.to_string();
        let input = self.input(&pod);
        let decider = self.decider.current();
        let decision = decide(
            &self.ctx,
            NAME,
            &key_text,
            &decider,
            input.clone(),
            summarize(&input),
        )
        .await?;
        let plan = validate(&input, &decision.actions)?;
        for volume in &plan.creates {
            self.create(&key_text, &pod, volume).await?;
        }
        if let Some(conflict) = plan.conflict {
            self.warn(&pod, &conflict.volume, &conflict.message).await;
            return Err(ReconcileError::Decision(format!(
                "PVC {}/{}: {}",
                key.namespace, conflict.claim_name, conflict.message
            )));
        }
        tracing::info!(controller = NAME, key = %key, created = plan.creates.len(), "reconciled");
        Ok(Outcome::Done)
    }

    async fn error_policy(&self, key: &ObjectKey, err: &ReconcileError) -> Outcome {
        log_failure(NAME, key, err);
        // 409 AlreadyExists: decide again on the fresh cache (owned or conflict).
        // A conflict action has recorded its own Event.
        if let ReconcileError::Write(write) = err
            && !write.is_conflict()
            && let Some(pod) = self.ctx.caches.pods.get(key)
        {
            self.warn(&pod, "", &write.to_string()).await;
        }
        err.requeue()
    }
}

/// Pod add with at least one ephemeral volume, not deleting; an update only
/// when the UID changed (delete + re-create seen as an update): the spec is
/// immutable. Pod deletes need nothing (the garbage collector removes the PVCs).
fn keys_for_pod(change: &Change<CachedPod>) -> Vec<ObjectKey> {
    let Change::Applied { old, new } = change else {
        return Vec::new();
    };
    let fresh = old
        .as_ref()
        .is_none_or(|old| old.pod.meta.uid != new.pod.meta.uid);
    if fresh && !new.ephemeral.is_empty() && !new.pod.meta.is_deleting() {
        vec![ObjectKey::of(&new.pod.meta)]
    } else {
        Vec::new()
    }
}

impl EphemeralVolumeController {
    /// Any PVC event enqueues the pods whose ephemeral volume names it: a delete
    /// re-creates an owned PVC, an add or update settles a conflict.
    fn keys_for_pvc(&self, change: &Change<CachedPvc>) -> Vec<ObjectKey> {
        let pvc = match change {
            Change::Applied { new, .. } => {
                self.created.lock().unwrap().on_add_or_update(&new.pvc);
                &new.pvc
            }
            Change::Deleted(old) => {
                self.created.lock().unwrap().on_delete(&old.pvc);
                &old.pvc
            }
        };
        let index = format!("{}/{}", pvc.meta.namespace, pvc.meta.name);
        self.ctx
            .caches
            .pods
            .by_index(PODS_BY_PVC, &index)
            .iter()
            .filter(|pod| {
                pod.ephemeral
                    .iter()
                    .any(|t| claim_name(&pod.pod.meta.name, &t.volume) == pvc.meta.name)
            })
            .map(|pod| ObjectKey::of(&pod.pod.meta))
            .collect()
    }

    /// The pod's ephemeral volumes, each with the cached PVC of its name.
    fn input(&self, pod: &CachedPod) -> VolumeInput {
        let meta = &pod.pod.meta;
        let mut created = self.created.lock().unwrap();
        let volumes = pod
            .ephemeral
            .iter()
            .map(|t| {
                let name = claim_name(&meta.name, &t.volume);
                let key = ObjectKey::new(meta.namespace.as_str(), name.as_str());
                let cached = self.ctx.caches.pvcs.get(&key).map(|p| p.pvc.clone());
                let existing = created
                    .get(&key.to_string(), cached)
                    .map(|pvc| ExistingClaim {
                        name: pvc.meta.name.clone(),
                        uid: pvc.meta.uid.clone(),
                        controller: pvc.meta.controller().map(|c| ControllerRef {
                            kind: c.kind.clone(),
                            name: c.name.clone(),
                            uid: c.uid.clone(),
                        }),
                    });
                EphemeralVolume {
                    name: t.volume.clone(),
                    template: t.template.clone(),
                    existing,
                }
            })
            .collect();
        VolumeInput {
            pod: EphemeralPod {
                namespace: meta.namespace.clone(),
                name: meta.name.clone(),
                uid: meta.uid.clone(),
                deleting: meta.is_deleting(),
            },
            volumes,
        }
    }

    /// POSTs the PVC of `volume`, built from the host's own input (never from
    /// guest output).
    async fn create(
        &self,
        key: &str,
        pod: &CachedPod,
        volume: &EphemeralVolume,
    ) -> Result<(), ReconcileError> {
        let pvc = build_pvc(&pod.pod.meta, volume)?;
        let writer = Writer {
            client: self.ctx.client.clone(),
            journal: self.ctx.journal.clone(),
            controller: NAME,
        };
        let stored = writer.create(key, &pod.pod.meta.namespace, &pvc).await?;
        self.created
            .lock()
            .unwrap()
            .mutation(rekon_contract::project::project_pvc(&stored));
        Ok(())
    }

    /// A Warning Event on the pod, with upstream's reason and message form.
    async fn warn(&self, pod: &CachedPod, volume: &str, message: &str) {
        let note = if volume.is_empty() {
            message.to_string()
        } else {
            format!("ephemeral volume {volume}: {message}")
        };
        self.ctx
            .event(
                reference("Pod", "v1", &pod.pod.meta),
                true,
                REASON,
                "CreatePVC",
                note,
            )
            .await;
    }
}

/// EphemeralClaimName: `<pod>-<volume>`, no suffix.
pub fn claim_name(pod: &str, volume: &str) -> String {
    format!("{pod}-{volume}")
}

/// The PVC of one ephemeral volume: exact name, the template's labels,
/// annotations and spec, one controlling owner reference to the pod.
pub fn build_pvc(
    pod: &model::ObjectMeta,
    volume: &EphemeralVolume,
) -> Result<PersistentVolumeClaim, ReconcileError> {
    let template = &volume.template;
    let spec: PersistentVolumeClaimSpec =
        serde_json::from_str(&template.spec_json).map_err(|err| {
            ReconcileError::Decision(format!(
                "pod {}/{} volume {}: claim template spec is not a PersistentVolumeClaimSpec: {err}",
                pod.namespace, pod.name, volume.name
            ))
        })?;
    let map =
        |pairs: &[(String, String)]| (!pairs.is_empty()).then(|| pairs.iter().cloned().collect());
    Ok(PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(claim_name(&pod.name, &volume.name)),
            namespace: Some(pod.namespace.clone()),
            labels: map(&template.labels),
            annotations: map(&template.annotations),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Pod".into(),
                name: pod.name.clone(),
                uid: pod.uid.clone(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    })
}

/// What a valid decision asks for.
#[derive(Debug, PartialEq)]
pub struct Plan<'a> {
    /// The volumes whose PVC to create, in the decision's order.
    pub creates: Vec<&'a EphemeralVolume>,
    pub conflict: Option<ClaimConflict>,
}

/// Checks the whole decision against the input before any write: nothing for a
/// deleting pod; each create names a volume of the input once, whose PVC does
/// not exist and whose name is valid; at most one conflict, last, naming
/// `<pod>-<volume>` of a volume of the input. A refusal names the action index.
pub fn validate<'a>(
    input: &'a VolumeInput,
    actions: &[VolumeAction],
) -> Result<Plan<'a>, ReconcileError> {
    let pod = &input.pod;
    let reject = |index: usize, why: String| {
        Err(ReconcileError::Rejected(format!(
            "pod {}/{}: action {index}: {why}",
            pod.namespace, pod.name
        )))
    };
    if pod.deleting && !actions.is_empty() {
        return reject(0, "the pod is being deleted: no action allowed".into());
    }
    if actions.len() > input.volumes.len() + 1 {
        return reject(
            input.volumes.len() + 1,
            format!(
                "{} actions for {} volumes",
                actions.len(),
                input.volumes.len()
            ),
        );
    }
    let mut plan = Plan {
        creates: Vec::new(),
        conflict: None,
    };
    let mut seen = HashSet::new();
    for (index, action) in actions.iter().enumerate() {
        if plan.conflict.is_some() {
            return reject(index, "an action after a conflict".into());
        }
        let volume_name = match action {
            VolumeAction::CreatePvc(volume) => volume,
            VolumeAction::Conflict(conflict) => &conflict.volume,
        };
        let Some(volume) = input.volumes.iter().find(|v| &v.name == volume_name) else {
            return reject(index, format!("names no ephemeral volume: {volume_name:?}"));
        };
        let name = pod.claim_name(&volume.name);
        match action {
            VolumeAction::CreatePvc(_) => {
                if !seen.insert(volume.name.as_str()) {
                    return reject(index, format!("creates the PVC of {name} twice"));
                }
                if volume.existing.is_some() {
                    return reject(index, format!("PVC {name} already exists"));
                }
                if name.len() > MAX_NAME_LENGTH {
                    return reject(index, format!("PVC name {name} is too long"));
                }
                plan.creates.push(volume);
            }
            VolumeAction::Conflict(conflict) => {
                if conflict.claim_name != name {
                    return reject(
                        index,
                        format!("conflict names {:?}, not {name}", conflict.claim_name),
                    );
                }
                // Upstream reports a conflict only for an existing PVC the pod
                // does not control (§2 step 2); anything else would publish
                // guest text as a Warning Event about nothing.
                let Some(existing) = &volume.existing else {
                    return reject(index, format!("a conflict, but no PVC {name} exists"));
                };
                if existing
                    .controller
                    .as_ref()
                    .is_some_and(|c| c.uid == pod.uid)
                {
                    return reject(
                        index,
                        format!("a conflict, but the pod controls PVC {name}"),
                    );
                }
                plan.conflict = Some(conflict.clone());
            }
        }
    }
    Ok(plan)
}

fn summarize(input: &VolumeInput) -> serde_json::Value {
    json!({
        "pod": { "uid": input.pod.uid, "deleting": input.pod.deleting },
        "volumes": input.volumes.iter().map(|v| json!({
            "name": v.name,
            "existing": v.existing.as_ref().map(|e| &e.uid),
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(deleting: bool, existing: Option<&str>) -> VolumeInput {
        let volume = |name: &str, existing: Option<ExistingClaim>| EphemeralVolume {
            name: name.into(),
            template: ClaimTemplate {
                labels: vec![("app".into(), "web".into())],
                annotations: vec![("note".into(), "n".into())],
                spec_json: r#"{"accessModes":["ReadWriteOnce"]}"#.into(),
            },
            existing,
        };
        VolumeInput {
            pod: EphemeralPod {
                namespace: "ns".into(),
                name: "web".into(),
                uid: "pu".into(),
                deleting,
            },
            volumes: vec![
                volume("a", None),
                volume(
                    "b",
                    existing.map(|uid| ExistingClaim {
                        name: "web-b".into(),
                        uid: uid.into(),
                        controller: None,
                    }),
                ),
            ],
        }
    }

    fn create(volume: &str) -> VolumeAction {
        VolumeAction::CreatePvc(volume.into())
    }

    fn conflict(volume: &str, claim_name: &str) -> VolumeAction {
        VolumeAction::Conflict(ClaimConflict {
            volume: volume.into(),
            claim_name: claim_name.into(),
            message: "not owner".into(),
        })
    }

    fn rejection(input: &VolumeInput, actions: &[VolumeAction]) -> String {
        match validate(input, actions) {
            Err(ReconcileError::Rejected(why)) => why,
            other => panic!("expected a rejection, got {other:?}"),
        }
    }

    #[test]
    fn a_valid_decision_plans_creates_then_the_conflict() {
        let input = input(false, Some("other"));
        let plan = validate(&input, &[create("a"), conflict("b", "web-b")]).unwrap();
        assert_eq!(
            plan.creates
                .iter()
                .map(|v| v.name.as_str())
                .collect::<Vec<_>>(),
            ["a"]
        );
        assert_eq!(plan.conflict.unwrap().claim_name, "web-b");
    }

    #[test]
    fn invalid_decisions_are_refused_whole_naming_the_action() {
        let fresh = input(false, None);
        let why = rejection(&fresh, &[create("a"), create("zzz")]);
        assert!(
            why.contains("pod ns/web: action 1") && why.contains("zzz"),
            "{why}"
        );
        assert!(rejection(&fresh, &[create("a"), create("a")]).contains("twice"));
        assert!(rejection(&fresh, &[conflict("a", "web-x")]).contains("web-x"));
        let foreign = input(false, Some("other"));
        assert!(
            rejection(&foreign, &[conflict("b", "web-b"), create("a")])
                .contains("after a conflict")
        );
        let exists = input(false, Some("pu"));
        assert!(rejection(&exists, &[create("b")]).contains("already exists"));
        let deleting = input(true, None);
        assert!(rejection(&deleting, &[create("a")]).contains("being deleted"));
        let many = vec![create("a"); 4];
        assert!(rejection(&fresh, &many).contains("4 actions for 2 volumes"));
        assert_eq!(validate(&deleting, &[]).unwrap().creates.len(), 0);
    }

    #[test]
    fn a_conflict_needs_an_existing_pvc_the_pod_does_not_control() {
        let fresh = input(false, None);
        let why = rejection(&fresh, &[conflict("b", "web-b")]);
        assert!(why.contains("no PVC web-b exists"), "{why}");
        let mut owned = input(false, Some("pvc-uid"));
        owned.volumes[1].existing.as_mut().unwrap().controller = Some(ControllerRef {
            kind: "Pod".into(),
            name: "web".into(),
            uid: "pu".into(),
        });
        let why = rejection(&owned, &[conflict("b", "web-b")]);
        assert!(why.contains("the pod controls"), "{why}");
        let foreign = input(false, Some("pvc-uid"));
        assert!(validate(&foreign, &[conflict("b", "web-b")]).is_ok());
    }

    #[test]
    fn a_create_longer_than_an_object_name_is_refused() {
        let mut long = input(false, None);
        long.volumes[0].name = "v".repeat(MAX_NAME_LENGTH);
        let name = long.volumes[0].name.clone();
        assert!(rejection(&long, &[create(&name)]).contains("too long"));
    }

    #[test]
    fn the_pvc_is_built_from_the_template_with_one_controlling_owner() {
        let input = input(false, None);
        let meta = model::ObjectMeta {
            namespace: "ns".into(),
            name: "web".into(),
            uid: "pu".into(),
            ..Default::default()
        };
        let pvc = build_pvc(&meta, &input.volumes[0]).unwrap();
        assert_eq!(pvc.metadata.name.as_deref(), Some("web-a"));
        assert_eq!(pvc.metadata.generate_name, None);
        assert_eq!(pvc.metadata.labels.unwrap()["app"], "web");
        assert_eq!(pvc.metadata.annotations.unwrap()["note"], "n");
        let owners = pvc.metadata.owner_references.unwrap();
        assert_eq!(owners.len(), 1);
        let owner = &owners[0];
        assert_eq!((owner.kind.as_str(), owner.uid.as_str()), ("Pod", "pu"));
        assert_eq!(owner.controller, Some(true));
        assert_eq!(owner.block_owner_deletion, Some(true));
        assert_eq!(
            pvc.spec.unwrap().access_modes,
            Some(vec!["ReadWriteOnce".to_string()])
        );
        let mut bad = input.volumes[0].clone();
        bad.template.spec_json = "[1]".into();
        let err = build_pvc(&meta, &bad).unwrap_err().to_string();
        assert!(err.contains("ns/web volume a"), "{err}");
    }

    fn k8s_pod(uid: &str, deleting: bool) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"namespace": "ns", "name": "web", "uid": uid,
                         "deletionTimestamp": deleting.then_some("2026-01-01T00:00:00Z")},
            "spec": {"containers": [], "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "shared"}},
                {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
                    "metadata": {"labels": {"z": "1", "a": "2"}},
                    "spec": {"accessModes": ["ReadWriteOnce"]}}}}
            ]}
        }))
        .unwrap()
    }

    #[test]
    fn templates_project_only_ephemeral_volumes_sorted() {
        let templates = templates(&k8s_pod("u1", false));
        assert_eq!(templates.len(), 1);
        assert_eq!(templates[0].volume, "scratch");
        let keys: Vec<&str> = templates[0]
            .template
            .labels
            .iter()
            .map(|l| l.0.as_str())
            .collect();
        assert_eq!(keys, ["a", "z"]);
        assert_eq!(
            templates[0].template.spec_json,
            r#"{"accessModes":["ReadWriteOnce"]}"#
        );
    }

    #[test]
    fn pods_are_enqueued_on_add_and_uid_change_only() {
        let pod =
            |uid: &str, deleting: bool| Arc::new(CachedPod::from_pod(&k8s_pod(uid, deleting)));
        let key = vec![ObjectKey::new("ns", "web")];
        let added = Change::Applied {
            old: None,
            new: pod("u1", false),
        };
        assert_eq!(keys_for_pod(&added), key);
        let same = Change::Applied {
            old: Some(pod("u1", false)),
            new: pod("u1", false),
        };
        assert!(keys_for_pod(&same).is_empty());
        let recreated = Change::Applied {
            old: Some(pod("u1", false)),
            new: pod("u2", false),
        };
        assert_eq!(keys_for_pod(&recreated), key);
        let deleting = Change::Applied {
            old: None,
            new: pod("u1", true),
        };
        assert!(keys_for_pod(&deleting).is_empty());
        assert!(keys_for_pod(&Change::Deleted(pod("u1", false))).is_empty());
    }
}
