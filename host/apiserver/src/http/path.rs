//! Resource URL paths: `/api/v1/...` and `/apis/<group>/<version>/...`, cluster-wide and
//! namespaced, with an optional subresource.

use crate::crd::CustomResources;
use crate::errors::ApiError;
use crate::resources::{self, ResourceId};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourcePath {
    pub resource: ResourceId,
    /// Namespace from the URL; None for cluster-scoped resources and cluster-wide collections.
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

/// Parses a resource URL; `custom` adds the resources of this server's CRDs.
pub fn parse(path: &str, custom: &CustomResources) -> Result<ResourcePath, ApiError> {
    let not_found = || ApiError::path_not_found(path);
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segments.as_slice() {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return Err(not_found()),
    };
    let lookup = |plural: &str| {
        resources::by_group_version_plural(group, version, plural)
            .or_else(|| custom.by_plural(group, version, plural))
            .ok_or_else(not_found)
    };
    let parsed = match rest {
        // A namespace's own subresources are addressed like namespaced collections.
        ["namespaces", name, sub @ ("status" | "finalize")] if group.is_empty() => ResourcePath {
            resource: resources::namespaces(),
            namespace: None,
            name: Some(name.to_string()),
            subresource: Some(sub.to_string()),
        },
        ["namespaces", ns, plural, tail @ ..] if tail.len() <= 2 => {
            let resource = lookup(plural)?;
            if !resource.info().namespaced {
                return Err(not_found());
            }
            ResourcePath {
                resource,
                namespace: Some(ns.to_string()),
                name: tail.first().map(|s| s.to_string()),
                subresource: tail.get(1).map(|s| s.to_string()),
            }
        }
        [plural, tail @ ..] if tail.len() <= 2 => {
            let resource = lookup(plural)?;
            if resource.info().namespaced && !tail.is_empty() {
                return Err(not_found());
            }
            ResourcePath {
                resource,
                namespace: None,
                name: tail.first().map(|s| s.to_string()),
                subresource: tail.get(1).map(|s| s.to_string()),
            }
        }
        _ => return Err(not_found()),
    };
    if let Some(sub) = &parsed.subresource
        && !(sub == "status" && parsed.resource.info().has_status)
        && !(sub == "scale" && parsed.resource.info().has_scale)
    {
        return Err(not_found());
    }
    if parsed.name.as_deref() == Some("") {
        return Err(not_found());
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(path: &str) -> Result<ResourcePath, ApiError> {
        super::parse(path, &CustomResources::default())
    }

    #[test]
    fn parses_the_url_shapes() {
        let p = parse("/api/v1/namespaces/d/pods/p/status").unwrap();
        assert_eq!(p.resource, resources::pods());
        assert_eq!(
            (
                p.namespace.as_deref(),
                p.name.as_deref(),
                p.subresource.as_deref()
            ),
            (Some("d"), Some("p"), Some("status"))
        );
        let all = parse("/api/v1/pods").unwrap();
        assert_eq!((all.namespace, all.name), (None, None));
        let ns = parse("/api/v1/namespaces/d").unwrap();
        assert_eq!(
            (ns.resource, ns.name.as_deref()),
            (resources::namespaces(), Some("d"))
        );
        let lease = parse("/apis/coordination.k8s.io/v1/namespaces/d/leases/l").unwrap();
        assert_eq!(lease.resource.info().kind, "Lease");
        let dc = parse("/apis/resource.k8s.io/v1/deviceclasses/gpu").unwrap();
        assert_eq!(dc.name.as_deref(), Some("gpu"));
        assert!(parse("/api/v1/pods/p").is_err());
        assert!(parse("/api/v1/namespaces/d/configmaps/c/status").is_err());
        assert!(parse("/apis/coordination.k8s.io/v2/namespaces/d/leases").is_err());
        assert_eq!(
            parse("/api/v1/namespaces/d/status")
                .unwrap()
                .subresource
                .as_deref(),
            Some("status")
        );
    }
}
