//! The resource-claim controller's event rules (upstream-behaviour §3.1-§3.3).
//!
//! The controller has two kinds of keys, pod keys and claim keys; these functions
//! return both as [`ClaimWork`] and leave the key encoding (`pod:`/`claim:`) to
//! the caller. Claim lookups go through a caller-supplied closure so the rules run
//! against any cache (or a plain map in tests).

use std::borrow::Borrow;

use rekon_guest::model;

use crate::cache::ObjectKey;
use crate::events::{EventKind, push_unique};
use crate::projection::{ClaimName, pod_template_names, resolve_claim_name};

/// What the informer says about a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup<C> {
    Found(C),
    NotFound,
    /// A lister error other than not-found.
    Failed,
}

/// Whether the claim's reservations include this pod (by UID).
pub fn is_reserved_for(claim: &model::ResourceClaim, pod: &model::Pod) -> bool {
    claim.reserved_for.iter().any(|c| c.uid == pod.meta.uid)
}

/// PodNeedsWork: the pod key has claims to create, or (once scheduled) an
/// allocated claim to reserve for it. `lookup` finds a claim by name in the pod's
/// namespace.
///
/// Deviations: a terminal pod is never reserved for (open upstream issue
/// #141276), and a done pod needs no claims at all: re-creating the claim of a
/// finished pod (which the claim sync then deletes again) would loop forever.
pub fn pod_needs_work<C, F>(pod: &model::Pod, mut lookup: F) -> bool
where
    C: Borrow<model::ResourceClaim>,
    F: FnMut(&str) -> Lookup<C>,
{
    if pod.meta.is_deleting() || pod.is_done() {
        return false;
    }
    for pod_claim in &pod.resource_claims {
        let (name, check_owner) = match resolve_claim_name(pod, pod_claim) {
            ClaimName::Resolved { name, check_owner } => (name, check_owner),
            ClaimName::NotCreatedYet | ClaimName::Unsupported => return true,
            // Upstream stops at the first null name, for the whole pod.
            ClaimName::NotNeeded => return false,
        };
        let claim = match lookup(name) {
            Lookup::Found(claim) => claim,
            // A template claim is ours to create; a direct reference the user's.
            Lookup::NotFound => return pod_claim.resource_claim_template_name.is_some(),
            Lookup::Failed => return true,
        };
        let claim = claim.borrow();
        if check_owner && !pod.controls(&claim.meta) {
            // Someone else's claim under the generated name: only a user can fix it.
            return false;
        }
        if !pod.is_scheduled() {
            continue;
        }
        // CanBeReserved is always true for resource.k8s.io/v1 claims.
        if claim.allocated && !is_reserved_for(claim, pod) && !pod.is_done() {
            return true;
        }
    }
    false
}

/// The release path: a deleted or done pod no longer needs its claims, so every
/// claim it resolves to (non-null names only) is enqueued to drop the reservation.
pub fn release_claim_keys(pod: &model::Pod, deleted: bool) -> Vec<ObjectKey> {
    let mut keys = Vec::new();
    if deleted || pod.is_done() {
        for pod_claim in &pod.resource_claims {
            if let ClaimName::Resolved { name, .. } = resolve_claim_name(pod, pod_claim) {
                push_unique(&mut keys, ObjectKey::new(pod.meta.namespace.as_str(), name));
            }
        }
    }
    keys
}

/// The keys an event enqueues on the ResourceClaim controller's queue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClaimWork {
    /// `claim:` keys.
    pub claims: Vec<ObjectKey>,
    /// `pod:` keys.
    pub pods: Vec<ObjectKey>,
    /// A pod delete: remember this UID in the deleted-pod memory.
    pub deleted_pod_uid: Option<String>,
}

impl ClaimWork {
    fn merge(&mut self, other: ClaimWork) {
        for key in other.claims {
            push_unique(&mut self.claims, key);
        }
        for key in other.pods {
            push_unique(&mut self.pods, key);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.claims.is_empty() && self.pods.is_empty() && self.deleted_pod_uid.is_none()
    }
}

/// A pod add, update (`deleted` false, the new pod) or delete (`deleted` true).
/// Pods without resource claims are ignored.
pub fn work_for_pod_event<C, F>(pod: &model::Pod, deleted: bool, lookup: F) -> ClaimWork
where
    C: Borrow<model::ResourceClaim>,
    F: FnMut(&str) -> Lookup<C>,
{
    if pod.resource_claims.is_empty() {
        return ClaimWork::default();
    }
    let pods = if !deleted && pod_needs_work(pod, lookup) {
        vec![ObjectKey::of(&pod.meta)]
    } else {
        Vec::new()
    };
    ClaimWork {
        claims: release_claim_keys(pod, deleted),
        pods,
        deleted_pod_uid: deleted.then(|| pod.meta.uid.clone()),
    }
}

/// A claim event: add and update enqueue the claim itself (delete does not — the
/// inverted flag of k/k #132334 must not come back); in every case, each pod that
/// references the claim (from the pod → claim index) is re-examined as a non-delete
/// pod event.
pub fn work_for_claim_event<'p, P, C, F>(
    kind: EventKind,
    claim: &model::ResourceClaim,
    referencing_pods: P,
    mut lookup: F,
) -> ClaimWork
where
    P: IntoIterator<Item = &'p model::Pod>,
    C: Borrow<model::ResourceClaim>,
    F: FnMut(&str) -> Lookup<C>,
{
    let mut work = ClaimWork::default();
    if kind != EventKind::Deleted {
        work.claims.push(ObjectKey::of(&claim.meta));
    }
    for pod in referencing_pods {
        work.merge(work_for_pod_event(pod, false, &mut lookup));
    }
    work
}

/// A template add (≈1.35+): the pods of its namespace that reference it by name,
/// so their claims are created without waiting for the pod key's backoff.
pub fn pods_for_template_add<'p, P>(
    template: &model::ResourceClaimTemplate,
    pods: P,
) -> Vec<ObjectKey>
where
    P: IntoIterator<Item = &'p model::Pod>,
{
    pods.into_iter()
        .filter(|pod| pod.meta.namespace == template.meta.namespace)
        .filter(|pod| pod_template_names(pod).any(|name| name == template.meta.name))
        .map(|pod| ObjectKey::of(&pod.meta))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::events::fixtures::*;
    use model::PodPhase::*;

    fn template_claim(name: &str, template: &str) -> model::PodResourceClaim {
        model::PodResourceClaim {
            name: name.into(),
            resource_claim_name: None,
            resource_claim_template_name: Some(template.into()),
        }
    }

    fn direct_claim(name: &str, claim: &str) -> model::PodResourceClaim {
        model::PodResourceClaim {
            name: name.into(),
            resource_claim_name: Some(claim.into()),
            resource_claim_template_name: None,
        }
    }

    fn status(name: &str, claim: Option<&str>) -> model::PodResourceClaimStatus {
        model::PodResourceClaimStatus {
            name: name.into(),
            resource_claim_name: claim.map(Into::into),
        }
    }

    fn claim(name: &str) -> model::ResourceClaim {
        let mut c = model::ResourceClaim::default();
        c.meta.namespace = "ns".into();
        c.meta.name = name.into();
        c.meta.uid = format!("{name}-uid");
        c
    }

    fn owned_by(mut c: model::ResourceClaim, pod: &model::Pod) -> model::ResourceClaim {
        c.meta.owner_references.push(model::OwnerReference {
            api_version: "v1".into(),
            kind: "Pod".into(),
            name: pod.meta.name.clone(),
            uid: pod.meta.uid.clone(),
            controller: true,
            block_owner_deletion: true,
        });
        c
    }

    fn allocated(mut c: model::ResourceClaim) -> model::ResourceClaim {
        c.allocated = true;
        c
    }

    fn reserved_for(mut c: model::ResourceClaim, pod: &model::Pod) -> model::ResourceClaim {
        c.reserved_for.push(pod.consumer());
        c
    }

    /// An informer of claims by name.
    struct Informer(HashMap<String, model::ResourceClaim>);

    impl Informer {
        fn of(claims: impl IntoIterator<Item = model::ResourceClaim>) -> Self {
            Self(
                claims
                    .into_iter()
                    .map(|c| (c.meta.name.clone(), c))
                    .collect(),
            )
        }

        fn lookup<'a>(&'a self) -> impl FnMut(&str) -> Lookup<&'a model::ResourceClaim> + 'a {
            |name| self.0.get(name).map_or(Lookup::NotFound, Lookup::Found)
        }
    }

    fn names(keys: &[ObjectKey]) -> Vec<String> {
        keys.iter().map(ToString::to_string).collect()
    }

    // ---- PodNeedsWork ----

    #[test]
    fn a_deleting_pod_never_needs_work() {
        let mut p = deleting(pod("p", "pu"));
        p.resource_claims = vec![template_claim("gen", "t")];
        assert!(!pod_needs_work(&p, Informer::of([]).lookup()));
    }

    #[test]
    fn a_claim_not_created_yet_needs_work() {
        let mut p = pod("p", "pu");
        p.resource_claims = vec![template_claim("gen", "t")];
        assert!(pod_needs_work(&p, Informer::of([]).lookup()));
    }

    #[test]
    fn an_unsupported_pod_claim_needs_work_so_the_sync_reports_it() {
        let mut p = pod("p", "pu");
        p.resource_claims = vec![model::PodResourceClaim {
            name: "x".into(),
            ..Default::default()
        }];
        assert!(pod_needs_work(&p, Informer::of([]).lookup()));
    }

    #[test]
    fn a_null_name_stops_the_whole_pod() {
        let mut p = pod("p", "pu");
        p.resource_claims = vec![template_claim("none", "t"), template_claim("later", "t")];
        p.resource_claim_statuses = vec![status("none", None)];
        assert!(
            !pod_needs_work(&p, Informer::of([]).lookup()),
            "the later claim is never examined"
        );
    }

    #[test]
    fn a_missing_generated_claim_must_be_created_but_a_missing_direct_one_is_the_users() {
        let mut p = pod("p", "pu");
        p.resource_claims = vec![template_claim("gen", "t")];
        p.resource_claim_statuses = vec![status("gen", Some("p-gen-x1"))];
        assert!(pod_needs_work(&p, Informer::of([]).lookup()), "recreate");

        let mut q = pod("q", "qu");
        q.resource_claims = vec![direct_claim("d", "shared"), template_claim("gen", "t")];
        assert!(
            !pod_needs_work(&q, Informer::of([]).lookup()),
            "the user must create it; later claims are not examined"
        );
    }

    #[test]
    fn a_lister_failure_needs_work() {
        let mut p = pod("p", "pu");
        p.resource_claims = vec![direct_claim("d", "shared")];
        let failing = |_: &str| Lookup::<model::ResourceClaim>::Failed;
        assert!(pod_needs_work(&p, failing));
    }

    #[test]
    fn a_generated_name_owned_by_someone_else_is_left_to_the_user() {
        let mut p = scheduled(pod("p", "pu"));
        p.resource_claims = vec![template_claim("gen", "t")];
        p.resource_claim_statuses = vec![status("gen", Some("p-gen-x1"))];
        let other = pod("other", "ou");
        let informer = Informer::of([allocated(owned_by(claim("p-gen-x1"), &other))]);
        assert!(!pod_needs_work(&p, informer.lookup()));
    }

    #[test]
    fn an_unscheduled_pod_with_all_claims_present_needs_no_work() {
        let mut p = pod("p", "pu");
        p.resource_claims = vec![template_claim("gen", "t"), direct_claim("d", "shared")];
        p.resource_claim_statuses = vec![status("gen", Some("p-gen-x1"))];
        let informer = Informer::of([
            allocated(owned_by(claim("p-gen-x1"), &p)),
            allocated(claim("shared")),
        ]);
        assert!(
            !pod_needs_work(&p, informer.lookup()),
            "the scheduler reserves"
        );
    }

    #[test]
    fn an_unscheduled_pod_keeps_checking_later_claims() {
        let mut p = pod("p", "pu");
        p.resource_claims = vec![direct_claim("d", "shared"), template_claim("gen", "t")];
        let informer = Informer::of([claim("shared")]);
        assert!(
            pod_needs_work(&p, informer.lookup()),
            "gen is not created yet"
        );
    }

    #[test]
    fn a_scheduled_pod_needs_a_reservation_on_an_allocated_unreserved_claim() {
        let mut p = scheduled(pod("p", "pu"));
        p.resource_claims = vec![direct_claim("d", "shared")];
        let need = Informer::of([allocated(claim("shared"))]);
        assert!(pod_needs_work(&p, need.lookup()));

        let reserved = Informer::of([reserved_for(allocated(claim("shared")), &p)]);
        assert!(!pod_needs_work(&p, reserved.lookup()));

        let unallocated = Informer::of([claim("shared")]);
        assert!(!pod_needs_work(&p, unallocated.lookup()));
    }

    #[test]
    fn a_terminal_scheduled_pod_is_not_reserved_for() {
        // Open upstream issue #141276: do not re-add a finished pod to reservedFor.
        let mut p = with_phase(scheduled(pod("p", "pu")), Succeeded);
        p.resource_claims = vec![direct_claim("d", "shared")];
        let informer = Informer::of([allocated(claim("shared"))]);
        assert!(!pod_needs_work(&p, informer.lookup()));
    }

    // ---- pod events ----

    #[test]
    fn pods_without_claims_are_ignored_even_on_delete() {
        let p = pod("p", "pu");
        let work = work_for_pod_event(&p, true, Informer::of([]).lookup());
        assert!(work.is_empty());
    }

    #[test]
    fn a_pod_delete_releases_resolved_claims_and_is_remembered() {
        let mut p = scheduled(pod("p", "pu"));
        p.resource_claims = vec![
            template_claim("gen", "t"),
            direct_claim("d", "shared"),
            template_claim("none", "t"),
            template_claim("later", "t"),
        ];
        p.resource_claim_statuses = vec![status("gen", Some("p-gen-x1")), status("none", None)];
        let work = work_for_pod_event(&p, true, Informer::of([]).lookup());
        assert_eq!(names(&work.claims), ["ns/p-gen-x1", "ns/shared"]);
        assert!(work.pods.is_empty(), "a deleted pod key is never enqueued");
        assert_eq!(work.deleted_pod_uid.as_deref(), Some("pu"));
    }

    #[test]
    fn a_done_pod_releases_its_claims() {
        for done in [
            with_phase(scheduled(pod("p", "pu")), Succeeded),
            with_phase(scheduled(pod("p", "pu")), Failed),
            deleting(pod("p", "pu")), // deleting while unscheduled
        ] {
            let mut done = done;
            done.resource_claims = vec![direct_claim("d", "shared")];
            let work = work_for_pod_event(&done, false, Informer::of([]).lookup());
            assert_eq!(names(&work.claims), ["ns/shared"], "{:?}", done.phase);
            assert_eq!(work.deleted_pod_uid, None);
        }
    }

    #[test]
    fn a_running_pod_deleting_on_a_node_keeps_its_claims() {
        let mut p = deleting(with_phase(scheduled(pod("p", "pu")), Running));
        p.resource_claims = vec![direct_claim("d", "shared")];
        let work = work_for_pod_event(&p, false, Informer::of([]).lookup());
        assert!(work.claims.is_empty());
        assert!(work.pods.is_empty());
    }

    #[test]
    fn a_pod_add_that_needs_claims_enqueues_the_pod() {
        let mut p = pod("p", "pu");
        p.resource_claims = vec![template_claim("gen", "t")];
        let work = work_for_pod_event(&p, false, Informer::of([]).lookup());
        assert_eq!(names(&work.pods), ["ns/p"]);
        assert!(work.claims.is_empty());
    }

    // ---- claim events ----

    #[test]
    fn claim_add_and_update_enqueue_the_claim_but_delete_does_not() {
        // k/k #132334: the inverted flag stopped add/update from enqueueing.
        let c = claim("shared");
        let none: [&model::Pod; 0] = [];
        for kind in [EventKind::Added, EventKind::Updated] {
            let work = work_for_claim_event(kind, &c, none, Informer::of([]).lookup());
            assert_eq!(names(&work.claims), ["ns/shared"], "{kind:?}");
        }
        let work = work_for_claim_event(EventKind::Deleted, &c, none, Informer::of([]).lookup());
        assert!(work.claims.is_empty());
    }

    #[test]
    fn a_claim_event_re_examines_the_pods_that_reference_it() {
        let mut waiting = scheduled(pod("waiting", "wu"));
        waiting.resource_claims = vec![direct_claim("d", "shared")];
        let mut finished = with_phase(scheduled(pod("finished", "fu")), Succeeded);
        finished.resource_claims = vec![direct_claim("d", "shared")];
        let c = allocated(claim("shared"));
        let informer = Informer::of([c.clone()]);
        let work = work_for_claim_event(
            EventKind::Updated,
            &c,
            [&waiting, &finished],
            informer.lookup(),
        );
        assert_eq!(names(&work.pods), ["ns/waiting"], "needs a reservation");
        assert_eq!(
            names(&work.claims),
            ["ns/shared"],
            "the claim once, though the finished pod releases it too"
        );
        assert_eq!(
            work.deleted_pod_uid, None,
            "pods are not deleted by a claim event"
        );
    }

    #[test]
    fn deleting_a_generated_claim_enqueues_its_pod_to_recreate_it() {
        let mut p = pod("p", "pu");
        p.resource_claims = vec![template_claim("gen", "t")];
        p.resource_claim_statuses = vec![status("gen", Some("p-gen-x1"))];
        let c = owned_by(claim("p-gen-x1"), &p);
        let work = work_for_claim_event(EventKind::Deleted, &c, [&p], Informer::of([]).lookup());
        assert!(work.claims.is_empty());
        assert_eq!(names(&work.pods), ["ns/p"]);
    }

    // ---- templates ----

    #[test]
    fn a_template_add_enqueues_the_pods_of_its_namespace_that_reference_it() {
        let mut t = model::ResourceClaimTemplate::default();
        t.meta.namespace = "ns".into();
        t.meta.name = "gpu".into();
        let mut a = pod("a", "au");
        a.resource_claims = vec![template_claim("x", "gpu")];
        let mut b = pod("b", "bu");
        b.resource_claims = vec![template_claim("x", "cpu")];
        let mut elsewhere = pod("c", "cu");
        elsewhere.meta.namespace = "other".into();
        elsewhere.resource_claims = vec![template_claim("x", "gpu")];
        assert_eq!(
            names(&pods_for_template_add(&t, [&a, &b, &elsewhere])),
            ["ns/a"]
        );
    }
}
