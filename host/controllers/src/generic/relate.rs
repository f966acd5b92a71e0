//! How a watched kind relates to the primary, both ways: which primary keys an
//! event of an object enqueues (the old and the new object of an update), and
//! which objects a decision of a primary is given. One [`Relation`] per watch,
//! built from its [`Mapping`]; the indexes it needs live on the caches.

use std::sync::Arc;

use rekon_contract::controller::{Kind, Mapping};
use serde_json::Value;

use super::object::{Cached, by_namespace};
use super::paths::FieldPath;
use crate::cache::{Cache, Change, ObjectKey};

/// Index of a watched kind's objects by the uids of their owners.
const BY_OWNER: &str = "owner-uid";
/// Index of a watched kind's objects by `namespace/value` at the mapping's path.
const BY_FIELD: &str = "field";
/// Index of objects by namespace.
pub const BY_NAMESPACE: &str = "namespace";

/// One watch's relation to the primary.
pub struct Relation {
    mapping: Mapping,
    path: Option<FieldPath>,
    /// The primary's kind (owner references name it).
    primary: Kind,
    /// The index on the primary cache this relation reads (`named-by`).
    primary_index: Option<String>,
}

impl Relation {
    /// `index` numbers the watch: the primary cache gets one index per
    /// `named-by` watch.
    pub fn new(mapping: &Mapping, primary: &Kind, index: usize) -> Self {
        let path = match mapping {
            Mapping::FieldIndex(p) | Mapping::Selector(p) | Mapping::NamedBy(p) => {
                Some(FieldPath::parse(p).expect("paths are checked with the description"))
            }
            Mapping::Owner | Mapping::SameName => None,
        };
        Self {
            primary_index: matches!(mapping, Mapping::NamedBy(_))
                .then(|| format!("named-by-{index}")),
            mapping: mapping.clone(),
            path,
            primary: primary.clone(),
        }
    }

    /// The watched kind's cache, with the index this relation reads.
    pub fn related_cache(&self) -> Cache<Cached> {
        let cache = Cache::new().with_index(BY_NAMESPACE, by_namespace);
        match (&self.mapping, &self.path) {
            (Mapping::Owner, _) => cache.with_index(BY_OWNER, |o: &Cached| {
                owner_refs(&o.value())
                    .filter_map(|r| r.get("uid").and_then(Value::as_str).map(str::to_string))
                    .collect()
            }),
            (Mapping::FieldIndex(_), Some(path)) => {
                let path = path.clone();
                cache.with_index(BY_FIELD, move |o: &Cached| in_namespace(&path, o))
            }
            _ => cache,
        }
    }

    /// Adds the index this relation reads on the primary cache, if any.
    pub fn index_primary(&self, cache: Cache<Cached>) -> Cache<Cached> {
        match (&self.primary_index, &self.path) {
            (Some(name), Some(path)) => {
                let path = path.clone();
                cache.with_index(name.clone(), move |o: &Cached| in_namespace(&path, o))
            }
            _ => cache,
        }
    }

    /// The primary keys an event of a watched object enqueues: those of the
    /// new object and, on an update, of the old one too (a Foo that changed
    /// its deployment's name re-evaluates both).
    pub fn keys(&self, change: &Change<Cached>, primaries: &Cache<Cached>) -> Vec<ObjectKey> {
        let mut keys = Vec::new();
        match change {
            Change::Applied { old, new } => {
                self.keys_of(new, primaries, &mut keys);
                if let Some(old) = old {
                    self.keys_of(old, primaries, &mut keys);
                }
            }
            Change::Deleted(old) => self.keys_of(old, primaries, &mut keys),
        }
        keys.sort();
        keys.dedup();
        keys
    }

    fn keys_of(&self, object: &Cached, primaries: &Cache<Cached>, keys: &mut Vec<ObjectKey>) {
        let namespace = &object.key.namespace;
        match (&self.mapping, &self.path) {
            (Mapping::Owner, _) => {
                let group = &self.primary.group;
                keys.extend(
                    owner_refs(&object.value())
                        .filter(|r| {
                            r.get("kind").and_then(Value::as_str)
                                == Some(self.primary.kind.as_str())
                                && api_group(r.get("apiVersion").and_then(Value::as_str)) == group
                        })
                        .filter_map(|r| r.get("name").and_then(Value::as_str))
                        .map(|name| ObjectKey::new(namespace.as_str(), name)),
                );
            }
            (Mapping::SameName, _) => keys.push(object.key.clone()),
            (Mapping::FieldIndex(_), Some(path)) => keys.extend(
                path.strings(&object.value())
                    .into_iter()
                    .map(|name| ObjectKey::new(namespace.as_str(), name)),
            ),
            (Mapping::Selector(_), Some(path)) => {
                let object = object.value();
                keys.extend(
                    primaries
                        .by_index(BY_NAMESPACE, namespace)
                        .iter()
                        .filter(|p| selects(path.first(&p.value()), &object))
                        .map(|p| p.key.clone()),
                );
            }
            (Mapping::NamedBy(_), Some(_)) => {
                let index = self
                    .primary_index
                    .as_deref()
                    .expect("named-by has its index");
                keys.extend(
                    primaries
                        .by_index(index, &object.key.to_string_in_namespace())
                        .iter()
                        .map(|p| p.key.clone()),
                );
            }
            _ => {}
        }
    }

    /// The watched objects a decision of `primary` is given, sorted by key.
    pub fn related(&self, primary: &Cached, cache: &Cache<Cached>) -> Vec<Arc<Cached>> {
        let namespace = &primary.key.namespace;
        match (&self.mapping, &self.path) {
            (Mapping::Owner, _) if primary.uid.is_empty() => Vec::new(),
            (Mapping::Owner, _) => cache.by_index(BY_OWNER, &primary.uid),
            (Mapping::SameName, _) => cache.get(&primary.key).into_iter().collect(),
            (Mapping::FieldIndex(_), _) => {
                cache.by_index(BY_FIELD, &format!("{namespace}/{}", primary.key.name))
            }
            (Mapping::Selector(_), Some(path)) => {
                let primary = primary.value();
                let selector = path.first(&primary);
                if selector.is_none() {
                    return Vec::new();
                }
                cache
                    .by_index(BY_NAMESPACE, namespace)
                    .into_iter()
                    .filter(|o| selects(selector, &o.value()))
                    .collect()
            }
            (Mapping::NamedBy(_), Some(path)) => {
                let primary_value = primary.value();
                let mut found: Vec<Arc<Cached>> = path
                    .strings(&primary_value)
                    .into_iter()
                    .filter_map(|name| cache.get(&ObjectKey::new(namespace.as_str(), name)))
                    .collect();
                found.sort_by(|a, b| a.key.cmp(&b.key));
                found.dedup_by(|a, b| a.key == b.key);
                found
            }
            _ => Vec::new(),
        }
    }
}

trait InNamespace {
    fn to_string_in_namespace(&self) -> String;
}

impl InNamespace for ObjectKey {
    /// `namespace/name`, also for a cluster-scoped object (`/name`), as the indexes store it.
    fn to_string_in_namespace(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// `namespace/value` of each string at `path` in `object` (the index values of
/// a field index and of `named-by`).
fn in_namespace(path: &FieldPath, object: &Cached) -> Vec<String> {
    path.strings(&object.value())
        .into_iter()
        .map(|v| format!("{}/{v}", object.key.namespace))
        .collect()
}

fn owner_refs(object: &Value) -> impl Iterator<Item = &Value> {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// The group of an `apiVersion` (`apps/v1` → `apps`, `v1` → ``).
fn api_group(api_version: Option<&str>) -> &str {
    match api_version.and_then(|v| v.split_once('/')) {
        Some((group, _)) => group,
        None => "",
    }
}

/// Whether a label selector selects `object`. `selector` is a LabelSelector
/// (`matchLabels`, `matchExpressions`) or a plain map of labels; an absent or
/// empty one selects nothing (as workload controllers treat it).
pub fn selects(selector: Option<&Value>, object: &Value) -> bool {
    let Some(selector) = selector.and_then(Value::as_object) else {
        return false;
    };
    let labels = object
        .pointer("/metadata/labels")
        .and_then(Value::as_object);
    let label = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
    let structured =
        selector.contains_key("matchLabels") || selector.contains_key("matchExpressions");
    let match_labels = if structured {
        selector.get("matchLabels").and_then(Value::as_object)
    } else {
        Some(selector)
    };
    let expressions = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let pairs = match_labels.map(|m| m.len()).unwrap_or(0);
    if pairs == 0 && expressions.is_empty() {
        return false;
    }
    let labels_match = match_labels
        .into_iter()
        .flatten()
        .all(|(key, value)| label(key) == value.as_str());
    labels_match
        && expressions.iter().all(|e| {
            let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|v| v.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            match e.get("operator").and_then(Value::as_str) {
                Some("In") => label(key).is_some_and(|v| values.contains(&v)),
                Some("NotIn") => label(key).is_none_or(|v| !values.contains(&v)),
                Some("Exists") => label(key).is_some(),
                Some("DoesNotExist") => label(key).is_none(),
                _ => false,
            }
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cached(value: Value) -> Arc<Cached> {
        Arc::new(Cached::new(&value))
    }

    fn foo(name: &str, deployment: &str) -> Arc<Cached> {
        cached(json!({
            "apiVersion": "example.com/v1alpha1", "kind": "Foo",
            "metadata": { "namespace": "ns", "name": name, "uid": format!("uid-{name}"), "resourceVersion": "1" },
            "spec": { "deploymentName": deployment, "selector": { "matchLabels": { "app": name } } }
        }))
    }

    fn deployment(name: &str, owner: Option<&str>, app: &str) -> Arc<Cached> {
        let owners = owner.map(|o| {
            json!([{ "apiVersion": "example.com/v1alpha1",
            "kind": "Foo", "name": o, "uid": format!("uid-{o}"), "controller": true }])
        });
        cached(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": { "namespace": "ns", "name": name, "uid": format!("d-{name}"), "resourceVersion": "1",
                          "labels": { "app": app }, "ownerReferences": owners.unwrap_or(json!([])) }
        }))
    }

    fn primary_kind() -> Kind {
        Kind::new("example.com", "v1alpha1", "Foo")
    }

    fn setup(mapping: Mapping) -> (Relation, Cache<Cached>, Cache<Cached>) {
        let relation = Relation::new(&mapping, &primary_kind(), 0);
        let primaries = relation.index_primary(Cache::new().with_index(BY_NAMESPACE, by_namespace));
        let related = relation.related_cache();
        (relation, primaries, related)
    }

    fn applied(old: Option<Arc<Cached>>, new: Arc<Cached>) -> Change<Cached> {
        Change::Applied { old, new }
    }

    #[test]
    fn owner_references_of_the_primary_kind_name_the_key_and_find_the_children() {
        let (relation, primaries, related) = setup(Mapping::Owner);
        let child = deployment("web", Some("a"), "a");
        related.apply((*child).clone());
        assert_eq!(
            relation.keys(&applied(None, child), &primaries),
            [ObjectKey::new("ns", "a")]
        );
        let orphan = deployment("other", None, "a");
        assert!(relation.keys(&applied(None, orphan), &primaries).is_empty());
        let names: Vec<_> = relation
            .related(&foo("a", "web"), &related)
            .iter()
            .map(|o| o.key.name.clone())
            .collect();
        assert_eq!(names, ["web"]);
        assert!(relation.related(&foo("b", "web"), &related).is_empty());
    }

    #[test]
    fn named_by_maps_both_the_old_and_the_new_name() {
        let (relation, primaries, related) = setup(Mapping::NamedBy("spec.deploymentName".into()));
        primaries.apply((*foo("a", "web")).clone());
        primaries.apply((*foo("b", "api")).clone());
        let keys = relation.keys(
            &applied(
                Some(deployment("api", None, "x")),
                deployment("web", None, "x"),
            ),
            &primaries,
        );
        assert_eq!(keys, [ObjectKey::new("ns", "a"), ObjectKey::new("ns", "b")]);
        related.apply((*deployment("web", None, "x")).clone());
        let found = relation.related(&foo("a", "web"), &related);
        assert_eq!(found.len(), 1);
        assert!(relation.related(&foo("a", "missing"), &related).is_empty());
    }

    #[test]
    fn a_field_index_maps_values_to_keys_in_the_objects_namespace() {
        let (relation, primaries, related) = setup(Mapping::FieldIndex(
            "spec.volumes[*].persistentVolumeClaim.claimName".into(),
        ));
        let pod = cached(
            json!({ "metadata": { "namespace": "ns", "name": "p", "uid": "u" },
            "spec": { "volumes": [ { "persistentVolumeClaim": { "claimName": "data" } },
                                   { "persistentVolumeClaim": { "claimName": "logs" } } ] } }),
        );
        related.apply((*pod).clone());
        assert_eq!(
            relation.keys(&Change::Deleted(pod), &primaries),
            [ObjectKey::new("ns", "data"), ObjectKey::new("ns", "logs")]
        );
        let pvc = cached(json!({ "metadata": { "namespace": "ns", "name": "data", "uid": "c" } }));
        assert_eq!(relation.related(&pvc, &related).len(), 1);
        let other =
            cached(json!({ "metadata": { "namespace": "other", "name": "data", "uid": "c2" } }));
        assert!(relation.related(&other, &related).is_empty());
    }

    #[test]
    fn a_selector_maps_labels_to_the_primaries_that_select_them() {
        let (relation, primaries, related) = setup(Mapping::Selector("spec.selector".into()));
        primaries.apply((*foo("a", "web")).clone());
        primaries.apply((*foo("b", "web")).clone());
        let labelled = deployment("d", None, "b");
        related.apply((*labelled).clone());
        assert_eq!(
            relation.keys(&applied(None, labelled), &primaries),
            [ObjectKey::new("ns", "b")]
        );
        assert_eq!(relation.related(&foo("b", "x"), &related).len(), 1);
        assert!(relation.related(&foo("a", "x"), &related).is_empty());
    }

    #[test]
    fn selectors_follow_match_labels_and_expressions() {
        let object = json!({ "metadata": { "labels": { "app": "web", "tier": "front" } } });
        assert!(selects(Some(&json!({ "app": "web" })), &object));
        assert!(!selects(Some(&json!({})), &object), "empty selects nothing");
        assert!(!selects(None, &object));
        let expr = |op: &str, values: Value| json!({ "matchExpressions": [{ "key": "tier", "operator": op, "values": values }] });
        assert!(selects(
            Some(&expr("In", json!(["front", "back"]))),
            &object
        ));
        assert!(!selects(Some(&expr("NotIn", json!(["front"]))), &object));
        assert!(selects(Some(&expr("Exists", json!([]))), &object));
        assert!(!selects(Some(&expr("DoesNotExist", json!([]))), &object));
        assert!(!selects(
            Some(&json!({ "matchLabels": { "app": "api" } })),
            &object
        ));
    }
}
