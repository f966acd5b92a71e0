//! The campaign's oracle (ARCHITECTURE.md, "Reliability invariants"), read from
//! the server's objects and rekon's journal:
//!
//! - (a) no PVC loses its finalizer while a non-terminated pod on a node uses it;
//! - (b) never two claims for one pod claim;
//! - (c) no claim of a running pod is deleted or loses that pod's reservation;
//! - (d) every write carried its preconditions;
//!
//! and, once the faults stopped, convergence ([`unconverged`]).

use std::collections::{BTreeSet, HashMap, HashSet};

use rekon_controllers::journal::Entry;
use rekon_tests::sim::{POD_CLAIM_NAME, PVC_FINALIZER};
use serde_json::Value;

fn kind_is(o: &Value, kind: &str) -> bool {
    o["kind"] == kind
}

fn text<'a>(o: &'a Value, pointer: &str) -> &'a str {
    o.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn name(o: &Value) -> &str {
    text(o, "/metadata/name")
}

fn uid(o: &Value) -> &str {
    text(o, "/metadata/uid")
}

fn deleting(o: &Value) -> bool {
    !o["metadata"]["deletionTimestamp"].is_null()
}

fn scheduled(pod: &Value) -> bool {
    !text(pod, "/spec/nodeName").is_empty()
}

fn terminated(pod: &Value) -> bool {
    matches!(text(pod, "/status/phase"), "Succeeded" | "Failed")
}

/// A pod on a node that has not terminated.
fn running(pod: &Value) -> bool {
    scheduled(pod) && !terminated(pod)
}

/// Upstream's isPodDone: terminated, or deleted before it was scheduled.
fn done(pod: &Value) -> bool {
    terminated(pod) || (deleting(pod) && !scheduled(pod))
}

fn has_finalizer(o: &Value, finalizer: &str) -> bool {
    o["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| f.iter().any(|x| x == finalizer))
}

fn pvc_claim_names(pod: &Value) -> impl Iterator<Item = &str> {
    pod["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.pointer("/persistentVolumeClaim/claimName")?.as_str())
}

/// The UID of the pod controlling `claim`, if one does.
fn owner_pod(claim: &Value) -> Option<&str> {
    claim["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|o| o["kind"] == "Pod" && o["controller"] == true)?["uid"]
        .as_str()
}

fn reserved_uids(claim: &Value) -> impl Iterator<Item = &str> {
    claim["status"]["reservedFor"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["uid"].as_str())
}

/// What the checker learned about a claim in earlier snapshots.
#[derive(Debug, Default)]
struct SeenClaim {
    name: String,
    owner: Option<String>,
    reserved_for: HashSet<String>,
}

/// Checks snapshots as they come, remembering claims and their reservations.
#[derive(Debug, Default)]
pub struct Checker {
    /// PVCs the workload created: only these are expected to exist.
    pvcs: HashSet<String>,
    claims: HashMap<String, SeenClaim>,
    journal_checked: usize,
    found: BTreeSet<String>,
}

impl Checker {
    pub fn new<'a>(pvcs: impl IntoIterator<Item = &'a str>) -> Self {
        Self {
            pvcs: pvcs.into_iter().map(String::from).collect(),
            ..Self::default()
        }
    }

    /// Every distinct violation seen so far.
    pub fn violations(&self) -> Vec<String> {
        self.found.iter().cloned().collect()
    }

    /// Checks one consistent snapshot of the server's objects.
    pub fn objects(&mut self, objects: &[Value]) {
        let pods: Vec<&Value> = objects.iter().filter(|o| kind_is(o, "Pod")).collect();
        let pvcs: HashMap<&str, &Value> = objects
            .iter()
            .filter(|o| kind_is(o, "PersistentVolumeClaim"))
            .map(|o| (name(o), o))
            .collect();
        let claims: Vec<&Value> = objects
            .iter()
            .filter(|o| kind_is(o, "ResourceClaim"))
            .collect();

        // (a)
        for pod in pods.iter().filter(|p| running(p)) {
            for pvc in pvc_claim_names(pod).filter(|n| self.pvcs.contains(*n)) {
                match pvcs.get(pvc) {
                    None => self.found.insert(format!(
                        "(a) PVC {pvc} is gone while running pod {} uses it",
                        name(pod)
                    )),
                    Some(o) if !has_finalizer(o, PVC_FINALIZER) => self.found.insert(format!(
                        "(a) PVC {pvc} lost its finalizer while running pod {} uses it",
                        name(pod)
                    )),
                    Some(_) => false,
                };
            }
        }

        // (b)
        let mut per_pod_claim: HashMap<(String, String), Vec<&str>> = HashMap::new();
        for claim in &claims {
            if let (Some(owner), Some(pod_claim)) = (
                owner_pod(claim),
                claim["metadata"]["annotations"][POD_CLAIM_NAME].as_str(),
            ) {
                per_pod_claim
                    .entry((owner.to_string(), pod_claim.to_string()))
                    .or_default()
                    .push(name(claim));
            }
        }
        for ((owner, pod_claim), names) in per_pod_claim {
            if names.len() > 1 {
                let pod = pods
                    .iter()
                    .find(|p| uid(p) == owner)
                    .map_or(owner.as_str(), |p| name(p));
                self.found.insert(format!(
                    "(b) pod {pod} has {} claims for pod claim {pod_claim}: {names:?}",
                    names.len()
                ));
            }
        }

        // (c): first what this snapshot shows, then what earlier ones promised.
        let live: HashMap<&str, &Value> = claims.iter().map(|c| (uid(c), *c)).collect();
        for claim in &claims {
            let seen = self.claims.entry(uid(claim).to_string()).or_default();
            seen.name = name(claim).to_string();
            seen.owner = owner_pod(claim).map(String::from);
            seen.reserved_for
                .extend(reserved_uids(claim).map(String::from));
        }
        let running_pods: HashMap<&str, &str> = pods
            .iter()
            .filter(|p| running(p))
            .map(|p| (uid(p), name(p)))
            .collect();
        for (claim_uid, seen) in &self.claims {
            let users = seen.owner.iter().chain(&seen.reserved_for);
            for pod_uid in users {
                let Some(pod) = running_pods.get(pod_uid.as_str()) else {
                    continue;
                };
                match live.get(claim_uid.as_str()) {
                    None => {
                        self.found.insert(format!(
                            "(c) claim {} was deleted while its pod {pod} runs",
                            seen.name
                        ));
                    }
                    Some(claim) if deleting(claim) => {
                        self.found.insert(format!(
                            "(c) claim {} is being deleted while its pod {pod} runs",
                            seen.name
                        ));
                    }
                    Some(claim)
                        if seen.reserved_for.contains(pod_uid)
                            && !reserved_uids(claim).any(|u| u == pod_uid) =>
                    {
                        self.found.insert(format!(
                            "(c) claim {} lost the reservation of running pod {pod}",
                            seen.name
                        ));
                    }
                    Some(_) => {}
                }
            }
        }
    }

    /// (d): checks the journal entries recorded since the last call.
    pub fn journal(&mut self, entries: &[Entry]) {
        for entry in entries.iter().skip(self.journal_checked) {
            if let Entry::Write {
                verb,
                resource,
                namespace,
                name,
                preconditions,
                ..
            } = entry
            {
                let has = |field: &Option<String>| field.as_deref().is_some_and(|v| !v.is_empty());
                let missing = match verb.as_str() {
                    "update" | "patch" => !has(&preconditions.resource_version),
                    "delete" => !has(&preconditions.uid) || !has(&preconditions.resource_version),
                    _ => false,
                };
                if missing {
                    self.found.insert(format!(
                        "(d) {verb} of {resource} {namespace}/{name} without preconditions: {preconditions:?}"
                    ));
                }
            }
        }
        self.journal_checked = entries.len();
    }
}

/// What is still not converged (ARCHITECTURE.md invariant 4), empty when done.
pub fn unconverged(objects: &[Value]) -> Vec<String> {
    let pods: Vec<&Value> = objects.iter().filter(|o| kind_is(o, "Pod")).collect();
    let pod_by_uid: HashMap<&str, &Value> = pods.iter().map(|p| (uid(p), *p)).collect();
    let mut pending = Vec::new();
    for pvc in objects
        .iter()
        .filter(|o| kind_is(o, "PersistentVolumeClaim"))
    {
        let used = pods
            .iter()
            .any(|p| scheduled(p) && pvc_claim_names(p).any(|n| n == name(pvc)));
        if deleting(pvc) && !used {
            pending.push(format!(
                "PVC {} is deleting and unused but kept its finalizer",
                name(pvc)
            ));
        }
        if !deleting(pvc) && !has_finalizer(pvc, PVC_FINALIZER) {
            pending.push(format!("PVC {} has no finalizer", name(pvc)));
        }
    }
    let claims: Vec<&Value> = objects
        .iter()
        .filter(|o| kind_is(o, "ResourceClaim"))
        .collect();
    for claim in &claims {
        if let Some(owner) = owner_pod(claim)
            && pod_by_uid.get(owner).is_none_or(|p| done(p))
        {
            pending.push(format!(
                "generated claim {} of a done or gone pod still exists",
                name(claim)
            ));
        }
        for reserved in reserved_uids(claim) {
            if pod_by_uid.get(reserved).is_none_or(|p| done(p)) {
                pending.push(format!(
                    "claim {} is still reserved for done or gone pod {reserved}",
                    name(claim)
                ));
            }
        }
    }
    for pod in pods.iter().filter(|p| !done(p) && !deleting(p)) {
        let statuses = pod["status"]["resourceClaimStatuses"].as_array();
        for pod_claim in pod["spec"]["resourceClaims"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let pc = pod_claim["name"].as_str().unwrap_or("");
            if let Some(shared) = pod_claim["resourceClaimName"].as_str() {
                // The controller reserves only an allocated claim (upstream §3.4
                // step 5); once the last consumer left, the claim is deallocated
                // (§3.7) and only a scheduler, which the campaign does not run,
                // allocates it again.
                let claim = claims.iter().find(|c| name(c) == shared);
                let allocated = claim.is_some_and(|c| !c["status"]["allocation"].is_null());
                let reserved = claim.is_some_and(|c| reserved_uids(c).any(|u| u == uid(pod)));
                if scheduled(pod) && allocated && !reserved {
                    pending.push(format!(
                        "shared claim {shared} is not reserved for pre-scheduled pod {}",
                        name(pod)
                    ));
                }
                continue;
            }
            let generated = statuses
                .into_iter()
                .flatten()
                .find(|s| s["name"] == pc)
                .and_then(|s| s["resourceClaimName"].as_str());
            let exists = generated.is_some_and(|g| {
                claims
                    .iter()
                    .any(|c| name(c) == g && owner_pod(c) == Some(uid(pod)))
            });
            if !exists {
                pending.push(format!(
                    "pod {} has no status naming a live claim for pod claim {pc} ({generated:?})",
                    name(pod)
                ));
            }
        }
    }
    pending
}

#[cfg(test)]
mod tests {
    use super::*;
    use rekon_tests::sim::{claim, controlled_by, deleting_pvc, pod, pvc, pvc_volume};
    use serde_json::json;

    #[test]
    fn a_running_pods_pvc_without_finalizer_is_a_violation() {
        let user = pod("ns", "p", "node-a", json!([pvc_volume("v", "data")]));
        let mut bare = pvc("ns", "data");
        bare["metadata"]["finalizers"] = json!([]);
        let mut checker = Checker::new(["data"]);
        checker.objects(&[user.clone(), pvc("ns", "data")]);
        assert!(checker.violations().is_empty());
        checker.objects(&[user, bare]);
        assert_eq!(checker.violations().len(), 1, "{:?}", checker.violations());
    }

    #[test]
    fn two_claims_for_one_pod_claim_and_a_lost_reservation_are_violations() {
        let user = pod("ns", "p", "node-a", json!([]));
        let mut a = claim("ns", "p-gpu-a", false, &[]);
        let mut b = claim("ns", "p-gpu-b", false, &[]);
        for c in [&mut a, &mut b] {
            controlled_by(c, &user);
            c["metadata"]["annotations"] = json!({POD_CLAIM_NAME: "gpu"});
        }
        let shared = claim("ns", "shared", true, &[("p", "uid-pod-p")]);
        let mut checker = Checker::new([]);
        checker.objects(&[user.clone(), a.clone(), shared]);
        assert!(
            checker.violations().is_empty(),
            "{:?}",
            checker.violations()
        );
        checker.objects(&[user, a, b, claim("ns", "shared", true, &[])]);
        let found = checker.violations();
        assert!(found.iter().any(|v| v.starts_with("(b)")), "{found:?}");
        assert!(
            found.iter().any(|v| v.contains("lost the reservation")),
            "{found:?}"
        );
    }

    #[test]
    fn a_deleting_unused_pvc_is_not_converged() {
        assert_eq!(unconverged(&[deleting_pvc("ns", "data")]).len(), 1);
        let user = pod("ns", "p", "node-a", json!([pvc_volume("v", "data")]));
        assert!(unconverged(&[deleting_pvc("ns", "data"), user]).is_empty());
    }
}
