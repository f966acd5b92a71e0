//! CustomResourceDefinitions (`apiextensions.k8s.io/v1`): the resources a server serves
//! because a CRD says so. The CRD objects themselves are stored like any other; after every
//! write that touches one, the store converges their status (as upstream's naming and
//! establishing controllers do) and rebuilds its [`CustomResources`], which discovery, URL
//! routing, admission (defaults, pruning, schema validation) and Table rendering read.
//! Deleting a CRD removes its objects first ([`cleanup`]).

pub mod cleanup;
pub mod definition;
pub mod schema;
pub mod table;

use serde_json::Value;

use crate::errors::{ApiError, Cause};
use crate::resources::ResourceId;
pub use definition::ServedVersion;

/// The custom resources one server serves, from its stored CRDs.
#[derive(Debug, Default)]
pub struct CustomResources {
    versions: Vec<ServedVersion>,
    /// A stored CRD is being deleted (even one that serves no version).
    terminating: bool,
}

impl CustomResources {
    /// From every stored CRD, in name order.
    pub fn from_stored<'a>(crds: impl Iterator<Item = &'a Value>) -> Self {
        let crds: Vec<&Value> = crds.collect();
        CustomResources {
            terminating: crds.iter().any(|crd| crate::meta::is_deleting(crd)),
            versions: crds
                .into_iter()
                .flat_map(definition::served_versions)
                .collect(),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &ServedVersion> {
        self.versions.iter()
    }

    /// Whether a CRD is being deleted.
    pub fn any_terminating(&self) -> bool {
        self.terminating
    }

    pub fn get(&self, resource: ResourceId) -> Option<&ServedVersion> {
        self.versions.iter().find(|v| v.resource == resource)
    }

    pub fn by_plural(&self, group: &str, version: &str, plural: &str) -> Option<ResourceId> {
        self.versions.iter().map(|v| v.resource).find(|id| {
            let info = id.info();
            info.group == group && info.version == version && info.plural == plural
        })
    }

    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<ResourceId> {
        self.versions
            .iter()
            .map(|v| v.resource)
            .find(|id| id.info().kind == kind && id.info().api_version() == api_version)
    }

    /// (group, version) pairs served, each once, in CRD order.
    pub fn group_versions(&self) -> Vec<(&'static str, &'static str)> {
        let mut out: Vec<(&str, &str)> = Vec::new();
        for version in &self.versions {
            let info = version.resource.info();
            if !out.contains(&(info.group, info.version)) {
                out.push((info.group, info.version));
            }
        }
        out
    }

    /// Every served group-version: the built-in ones, then those of the CRDs.
    pub fn all_group_versions(&self) -> Vec<(&'static str, &'static str)> {
        let mut all = crate::resources::group_versions();
        all.extend(self.group_versions());
        all
    }

    /// Every served resource: the built-in ones, then those of the CRDs.
    pub fn all_resources(&self) -> Vec<ResourceId> {
        crate::resources::all()
            .chain(self.versions.iter().map(|v| v.resource))
            .collect()
    }

    /// Upstream's decoder for a custom resource: defaults, then pruning; a terminating CRD
    /// takes no new objects.
    pub fn admit(
        &self,
        resource: ResourceId,
        obj: &mut Value,
        creating: bool,
    ) -> Result<(), ApiError> {
        let Some(version) = self.get(resource) else {
            return Ok(());
        };
        if creating && version.terminating {
            return Err(ApiError::method_not_allowed(
                "create not allowed while custom resource definition is terminating",
            ));
        }
        if let Some(schema) = &version.schema {
            schema.default_and_prune(obj);
        }
        Ok(())
    }

    /// Schema violations of a custom resource about to be stored.
    pub fn validate(&self, resource: ResourceId, obj: &Value) -> Vec<Cause> {
        self.get(resource)
            .and_then(|v| v.schema.as_ref())
            .map(|schema| schema.validate(obj))
            .unwrap_or_default()
    }
}
