//! The scope is the operator's: a DecisionModule or a guests.yaml entry pins
//! the scope it allows (as it pins a digest), and a module version whose
//! description asks for more is refused (`ScopeNotAllowed`), naming what it
//! asked for. Shadow and promotion go through the same check, so they can never
//! widen it.

use rekon_contract::controller::{Description, Scope};

use super::paths::FieldPath;

/// What a description asks for beyond the pinned scope, one line each; empty
/// when it stays within.
pub fn beyond(pinned: &Scope, description: &Description) -> Vec<String> {
    let asked = &description.scope;
    let mut wider = Vec::new();
    let mut names = |what: &str, asked: &[String], allowed: &[String]| {
        for name in asked.iter().filter(|n| !allowed.contains(n)) {
            wider.push(format!("{what} {name:?}"));
        }
    };
    names("finalizer", &asked.finalizers, &pinned.finalizers);
    names("label", &asked.labels, &pinned.labels);
    names("annotation", &asked.annotations, &pinned.annotations);
    names("event reason", &asked.event_reasons, &pinned.event_reasons);
    let allowed_status: Vec<FieldPath> = pinned
        .status_fields
        .iter()
        .filter_map(|p| FieldPath::parse(p).ok())
        .collect();
    for field in &asked.status_fields {
        let covered = FieldPath::parse(field)
            .is_ok_and(|path| allowed_status.iter().any(|a| a.covers(&path)));
        if !covered {
            wider.push(format!("status field {field:?}"));
        }
    }
    if asked.delete_primary && !pinned.delete_primary {
        wider.push(format!("deleting the primary {}", description.primary));
    }
    for child in &asked.children {
        let allowed = pinned.children.iter().find(|c| c.kind == child.kind);
        for (verb, asks, may) in [
            ("create", child.create, allowed.is_some_and(|c| c.create)),
            ("update", child.update, allowed.is_some_and(|c| c.update)),
            ("delete", child.delete, allowed.is_some_and(|c| c.delete)),
        ] {
            if asks && !may {
                wider.push(format!("{verb} child {}", child.kind));
            }
        }
    }
    for read in &asked.reads {
        if !pinned.reads.iter().any(|r| r.kind == read.kind) {
            wider.push(format!("live read of {}", read.kind));
        }
    }
    wider
}

#[cfg(test)]
mod tests {
    use rekon_contract::controller::{ChildScope, Kind, ReadScope};

    use super::*;

    fn description(scope: Scope) -> Description {
        Description {
            name: "sample".into(),
            primary: Kind::new("example.com", "v1alpha1", "Foo"),
            scope,
            ..Description::default()
        }
    }

    fn pinned() -> Scope {
        Scope {
            finalizers: vec!["example.com/f".into()],
            status_fields: vec!["conditions".into(), "availableReplicas".into()],
            children: vec![ChildScope {
                kind: Kind::new("apps", "v1", "Deployment"),
                create: true,
                update: true,
                delete: false,
            }],
            event_reasons: vec!["Synced".into()],
            ..Scope::default()
        }
    }

    #[test]
    fn the_same_or_a_narrower_scope_is_allowed() {
        assert!(beyond(&pinned(), &description(pinned())).is_empty());
        let narrower = Scope {
            status_fields: vec!["conditions".into()],
            ..Scope::default()
        };
        assert!(beyond(&pinned(), &description(narrower)).is_empty());
    }

    #[test]
    fn every_widening_is_named() {
        let wider = Scope {
            finalizers: vec!["example.com/f".into(), "example.com/g".into()],
            labels: vec!["team".into()],
            status_fields: vec!["phase".into()],
            delete_primary: true,
            children: vec![ChildScope {
                kind: Kind::new("apps", "v1", "Deployment"),
                create: true,
                update: true,
                delete: true,
            }],
            reads: vec![ReadScope {
                kind: Kind::new("", "v1", "Secret"),
                fields: vec![],
                ..Default::default()
            }],
            ..pinned()
        };
        let found = beyond(&pinned(), &description(wider));
        assert_eq!(
            found,
            [
                "finalizer \"example.com/g\"",
                "label \"team\"",
                "status field \"phase\"",
                "deleting the primary example.com/v1alpha1/Foo",
                "delete child apps/v1/Deployment",
                "live read of v1/Secret",
            ]
        );
    }
}
