//! Upstream's pv-protection controller (pkg/controller/volume/pvprotection):
//! every PersistentVolume carries `kubernetes.io/pv-protection`; the finalizer
//! is removed only from a PV that is being deleted and is not bound
//! (`status.phase` is not `Bound`). Upstream adds the finalizer only to a PV
//! that is not being deleted, and reads no other object.

use rekon_guest::controller::{Action, Decision, Description, Input, Kind, Object, Scope};

/// The finalizer upstream's controller owns.
pub const FINALIZER: &str = "kubernetes.io/pv-protection";

pub fn describe() -> Description {
    Description {
        name: "pv-protection".into(),
        primary: Kind::new("", "v1", "PersistentVolume"),
        primary_fields: vec!["status.phase".into()],
        watches: Vec::new(),
        scope: Scope {
            finalizers: vec![FINALIZER.into()],
            ..Scope::default()
        },
    }
}

pub fn decide(input: &Input) -> Decision {
    let Ok(pv) = Object::parse(&input.primary) else {
        return Decision::Actions(Vec::new());
    };
    let protected = pv.has_finalizer(FINALIZER);
    let actions = if !pv.is_deleting() && !protected {
        vec![Action::AddFinalizer(FINALIZER.into())]
    } else if pv.is_deleting() && protected && !is_bound(&pv) {
        vec![Action::RemoveFinalizer(FINALIZER.into())]
    } else {
        Vec::new()
    };
    Decision::Actions(actions)
}

/// Upstream's `isBeingUsed`: a PV is used while its phase is `Bound`.
fn is_bound(pv: &Object) -> bool {
    pv.str("status.phase") == Some("Bound")
}
