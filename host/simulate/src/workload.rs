//! Generated starting states for `rekon simulate --workload`, so a scale run needs no state
//! file: the same objects at any size, from one name and a number of units.

use serde_json::{Value, json};

const PVC_PROTECTION: &str = "kubernetes.io/pvc-protection";

/// A generated state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// In one namespace, per unit: a deleting PVC no pod uses (its finalizer must go), and a
    /// running pod with the PVC it uses (whose finalizer must stay).
    Release,
}

impl std::str::FromStr for Workload {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, String> {
        match name {
            "release" => Ok(Workload::Release),
            other => Err(format!("unknown workload {other:?} (known: release)")),
        }
    }
}

/// The namespace generated objects live in.
pub const NAMESPACE: &str = "release";

impl Workload {
    /// Objects per unit.
    pub fn objects_per_unit(self) -> usize {
        match self {
            Workload::Release => 3,
        }
    }

    /// The state: the namespace, then `units` units, made one object at a time so a
    /// large run never holds the whole generated state (as JSON trees it costs several
    /// times what the store keeps of it).
    pub fn objects(self, units: usize) -> impl Iterator<Item = Value> + Send {
        let namespace =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}});
        std::iter::once(namespace).chain((0..units).flat_map(move |i| match self {
            Workload::Release => [
                pvc(&format!("unused-{i}"), true),
                pvc(&format!("used-{i}"), false),
                running_pod(&format!("pod-{i}"), &format!("used-{i}")),
            ],
        }))
    }
}

fn pvc(name: &str, deleting: bool) -> Value {
    let mut pvc = json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"namespace": NAMESPACE, "name": name, "finalizers": [PVC_PROTECTION]},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    });
    if deleting {
        let meta = pvc["metadata"]
            .as_object_mut()
            .expect("metadata is an object");
        meta.insert("deletionTimestamp".into(), "2026-01-01T00:00:00Z".into());
        meta.insert("deletionGracePeriodSeconds".into(), 0.into());
    }
    pvc
}

fn running_pod(name: &str, claim: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": NAMESPACE, "name": name},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "i"}],
                 "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": claim}}]},
        "status": {"phase": "Running"}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_unit_is_a_deleting_pvc_a_running_pod_and_its_pvc() {
        let state: Vec<Value> = Workload::Release.objects(2).collect();
        assert_eq!(state.len(), 1 + 2 * Workload::Release.objects_per_unit());
        let deleting: Vec<_> = state
            .iter()
            .filter(|o| o["metadata"]["deletionTimestamp"].is_string())
            .map(|o| o["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(deleting, ["unused-0", "unused-1"]);
        let used: Vec<_> = state
            .iter()
            .filter_map(|o| o.pointer("/spec/volumes/0/persistentVolumeClaim/claimName"))
            .collect();
        assert_eq!(used, ["used-0", "used-1"]);
    }
}
