//! A module's description, checked once at load: names, kinds and field paths
//! well formed, and a scope the host can enforce. What a decision may do is
//! decided here, before any decision runs.

use rekon_contract::controller::{ChildScope, Description, Freshness, Kind, Mapping};

use super::paths::{FieldPath, PathError, Projection};
use crate::budget::cut;

/// Why a description was refused. Names the module and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DescriptionError {
    #[error("controller name {0:?}: a lowercase DNS label (a-z, 0-9, '-', at most 63) is needed")]
    Name(String),
    #[error("{controller}: {field}: {reason}")]
    Field {
        controller: String,
        field: String,
        reason: String,
    },
    #[error(transparent)]
    Path(#[from] PathError),
}

/// A kind the module may read live, checked.
#[derive(Debug, Clone)]
pub struct Read {
    pub kind: Kind,
    pub projection: Projection,
    pub freshness: Freshness,
    /// The watch whose mapping filters a list (`related-only`).
    pub related_by: Option<usize>,
}

/// A description the host can run: paths parsed, the scope in checkable form.
#[derive(Debug, Clone)]
pub struct Checked {
    pub description: Description,
    pub primary_projection: Projection,
    /// Per watch, in the description's order.
    pub watch_projections: Vec<Projection>,
    pub finalizers: Vec<String>,
    pub labels: Vec<String>,
    pub annotations: Vec<String>,
    pub status_fields: Vec<FieldPath>,
    pub delete_primary: bool,
    pub children: Vec<ChildScope>,
    pub event_reasons: Vec<String>,
    pub reads: Vec<Read>,
}

impl Checked {
    pub fn name(&self) -> &str {
        &self.description.name
    }

    /// The declared scope of a child kind.
    pub fn child(&self, kind: &Kind) -> Option<&ChildScope> {
        self.children.iter().find(|c| &c.kind == kind)
    }

    /// A kind the module may read.
    pub fn read(&self, kind: &Kind) -> Option<&Read> {
        self.reads.iter().find(|r| &r.kind == kind)
    }
}

/// Checks `description`.
pub fn check(description: Description) -> Result<Checked, DescriptionError> {
    let name = description.name.clone();
    if !is_dns_label(&name) {
        return Err(DescriptionError::Name(cut(&name, 128)));
    }
    let field = |field: &str, reason: String| DescriptionError::Field {
        controller: name.clone(),
        field: field.to_string(),
        reason,
    };
    check_kind(&description.primary).map_err(|r| field("primary", r))?;
    let scope = &description.scope;
    let status_fields: Vec<FieldPath> = scope
        .status_fields
        .iter()
        .map(|p| FieldPath::parse(p))
        .collect::<Result<_, _>>()?;
    let primary_projection =
        Projection::new(&description.primary_fields)?.with(status_fields.iter().map(|p| {
            FieldPath::parse(&format!("status.{}", p.as_str())).expect("prefixed valid path")
        }));
    let mut watch_projections = Vec::new();
    for (i, watch) in description.watches.iter().enumerate() {
        check_kind(&watch.kind).map_err(|r| field(&format!("watches[{i}].kind"), r))?;
        match &watch.mapping {
            Mapping::FieldIndex(path) | Mapping::Selector(path) | Mapping::NamedBy(path) => {
                FieldPath::parse(path)?;
            }
            Mapping::Owner | Mapping::SameName => {}
        }
        watch_projections.push(Projection::new(&watch.fields)?);
    }
    for (i, finalizer) in scope.finalizers.iter().enumerate() {
        if !is_qualified_name(finalizer) {
            return Err(field(
                &format!("scope.finalizers[{i}]"),
                format!(
                    "{:?} is not a qualified name (domain/name)",
                    cut(finalizer, 256)
                ),
            ));
        }
    }
    for (i, child) in scope.children.iter().enumerate() {
        check_kind(&child.kind).map_err(|r| field(&format!("scope.children[{i}].kind"), r))?;
        let owned_watch = description
            .watches
            .iter()
            .any(|w| w.kind == child.kind && w.mapping == Mapping::Owner);
        if (child.update || child.delete || child.create) && !owned_watch {
            return Err(field(
                &format!("scope.children[{i}]"),
                format!(
                    "{} must also be watched with the owner mapping: the host checks a child against its cache",
                    child.kind
                ),
            ));
        }
    }
    let mut reads = Vec::new();
    for (i, read) in scope.reads.iter().enumerate() {
        check_kind(&read.kind).map_err(|r| field(&format!("scope.reads[{i}].kind"), r))?;
        let related_by = if read.related_only {
            let mut watches = description.watches.iter().enumerate();
            let found = watches.find(|(_, w)| w.kind == read.kind).map(|(at, _)| at);
            match (found, watches.any(|(_, w)| w.kind == read.kind)) {
                (Some(at), false) => Some(at),
                (None, _) => {
                    return Err(field(
                        &format!("scope.reads[{i}].related-only"),
                        format!(
                            "{} is not watched: no mapping relates it to the primary",
                            read.kind
                        ),
                    ));
                }
                (Some(_), true) => {
                    return Err(field(
                        &format!("scope.reads[{i}].related-only"),
                        format!(
                            "{} is watched more than once: which mapping filters is ambiguous",
                            read.kind
                        ),
                    ));
                }
            }
        } else {
            None
        };
        reads.push(Read {
            kind: read.kind.clone(),
            projection: Projection::new(&read.fields)?,
            freshness: read.freshness,
            related_by,
        });
    }
    Ok(Checked {
        primary_projection,
        watch_projections,
        finalizers: scope.finalizers.clone(),
        labels: scope.labels.clone(),
        annotations: scope.annotations.clone(),
        status_fields,
        delete_primary: scope.delete_primary,
        children: scope.children.clone(),
        event_reasons: scope.event_reasons.clone(),
        reads,
        description,
    })
}

fn check_kind(kind: &Kind) -> Result<(), String> {
    if kind.version.is_empty() || kind.kind.is_empty() {
        return Err(format!("{kind}: version and kind are needed"));
    }
    Ok(())
}

/// Whether `name` is a lowercase DNS label (what a controller is named by).
pub fn is_dns_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

/// A finalizer is a qualified name: `domain/name` (what the API server accepts).
fn is_qualified_name(name: &str) -> bool {
    let Some((domain, local)) = name.split_once('/') else {
        return false;
    };
    !domain.is_empty()
        && !local.is_empty()
        && name.len() <= 316
        && domain
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && local
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
}

#[cfg(test)]
mod tests {
    use rekon_contract::controller::{ChildScope, ReadScope, Scope, Watch};

    use super::*;

    fn foo() -> Description {
        Description {
            name: "sample".into(),
            primary: Kind::new("example.com", "v1alpha1", "Foo"),
            primary_fields: vec!["spec".into()],
            watches: vec![Watch {
                kind: Kind::new("apps", "v1", "Deployment"),
                mapping: Mapping::Owner,
                fields: vec!["spec.replicas".into()],
            }],
            scope: Scope {
                status_fields: vec!["availableReplicas".into()],
                children: vec![ChildScope {
                    kind: Kind::new("apps", "v1", "Deployment"),
                    create: true,
                    update: true,
                    delete: false,
                }],
                ..Scope::default()
            },
        }
    }

    #[test]
    fn a_good_description_is_checked() {
        let checked = check(foo()).unwrap();
        assert_eq!(checked.name(), "sample");
        assert!(
            checked
                .child(&Kind::new("apps", "v1", "Deployment"))
                .is_some()
        );
    }

    #[test]
    fn every_refusal_names_the_field() {
        let mut bad_name = foo();
        bad_name.name = "Example_Controller".into();
        assert!(matches!(check(bad_name), Err(DescriptionError::Name(_))));

        let mut unwatched_child = foo();
        unwatched_child.watches.clear();
        let err = check(unwatched_child).unwrap_err().to_string();
        assert!(err.contains("scope.children[0]"), "{err}");

        let mut bad_finalizer = foo();
        bad_finalizer.scope.finalizers = vec!["no-domain".into()];
        let err = check(bad_finalizer).unwrap_err().to_string();
        assert!(err.contains("scope.finalizers[0]"), "{err}");

        let mut bad_path = foo();
        bad_path.primary_fields = vec!["spec..x".into()];
        let err = check(bad_path).unwrap_err().to_string();
        assert!(err.contains("spec..x"), "{err}");

        let mut no_kind = foo();
        no_kind.primary.kind.clear();
        let err = check(no_kind).unwrap_err().to_string();
        assert!(err.contains("primary"), "{err}");
    }

    #[test]
    fn a_related_only_read_needs_exactly_one_watch_of_its_kind() {
        let read = |kind: Kind| ReadScope {
            kind,
            related_only: true,
            ..ReadScope::default()
        };
        let mut related = foo();
        related.scope.reads = vec![read(Kind::new("apps", "v1", "Deployment"))];
        let checked = check(related.clone()).unwrap();
        let deployments = checked
            .read(&Kind::new("apps", "v1", "Deployment"))
            .unwrap();
        assert_eq!(deployments.related_by, Some(0));

        let mut unwatched = foo();
        unwatched.scope.reads = vec![read(Kind::new("", "v1", "Pod"))];
        let err = check(unwatched).unwrap_err().to_string();
        assert!(
            err.contains("scope.reads[0].related-only") && err.contains("not watched"),
            "{err}"
        );

        let mut twice = related;
        twice.watches.push(Watch {
            kind: Kind::new("apps", "v1", "Deployment"),
            mapping: Mapping::NamedBy("spec.deploymentName".into()),
            fields: vec![],
        });
        let err = check(twice).unwrap_err().to_string();
        assert!(err.contains("more than once"), "{err}");
    }
}
