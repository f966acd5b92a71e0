//! The plain-Rust model of the `controller` world (`rekon:reconcile@0.3.0`),
//! field for field as in `wit/controller.wit`, with the serde form of the other
//! worlds (WIT names, kebab-case; empty lists and absent options may be omitted).
//!
//! Objects cross the boundary as JSON text; in case files and `rekon eval` they
//! are written as YAML/JSON objects ([`json_text`] converts). [`Object`] reads
//! one on the guest side.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A Kubernetes kind; `group` is empty for the core API.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct Kind {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl Kind {
    pub fn new(group: &str, version: &str, kind: &str) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    /// `v1` or `group/version`, as objects carry it in `apiVersion`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.api_version(), self.kind)
    }
}

/// How an event of a watched kind names primary keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mapping {
    FieldIndex(String),
    Selector(String),
    NamedBy(String),
    Owner,
    SameName,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Watch {
    pub kind: Kind,
    pub mapping: Mapping,
    #[serde(default)]
    pub fields: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct ChildScope {
    pub kind: Kind,
    pub create: bool,
    pub update: bool,
    pub delete: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct ReadScope {
    pub kind: Kind,
    pub fields: Vec<String>,
    pub freshness: Freshness,
    /// Lists give only what the watch of this kind relates to the primary.
    pub related_only: bool,
}

/// How fresh a live list must be (see `wit/controller.wit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Freshness {
    /// Issued after the host took the key (upstream's rule).
    #[default]
    AfterDequeue,
    /// Issued after the host observed the primary copy, shared by the keys of a namespace.
    AfterObserved,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct Scope {
    pub finalizers: Vec<String>,
    pub labels: Vec<String>,
    pub annotations: Vec<String>,
    pub status_fields: Vec<String>,
    pub delete_primary: bool,
    pub children: Vec<ChildScope>,
    pub event_reasons: Vec<String>,
    pub reads: Vec<ReadScope>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct Description {
    pub name: String,
    pub primary: Kind,
    pub primary_fields: Vec<String>,
    pub watches: Vec<Watch>,
    pub scope: Scope,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct Related {
    pub kind: Kind,
    #[serde(with = "json_text::list")]
    pub objects: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct ListRequest {
    pub kind: Kind,
    pub label_selector: String,
    pub field_selector: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct GetRequest {
    pub kind: Kind,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReadRequest {
    List(ListRequest),
    Get(GetRequest),
}

impl ReadRequest {
    pub fn kind(&self) -> &Kind {
        match self {
            Self::List(list) => &list.kind,
            Self::Get(get) => &get.kind,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ReadResult {
    pub request: ReadRequest,
    #[serde(default, with = "json_text::list")]
    pub objects: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct Input {
    #[serde(with = "json_text")]
    pub primary: String,
    pub related: Vec<Related>,
    pub reads: Vec<ReadResult>,
    pub now: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct KeyValue {
    pub key: String,
    pub value: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Propagation {
    Background,
    Foreground,
    Orphan,
}

impl Propagation {
    /// The API's spelling (`DeleteOptions.propagationPolicy`).
    pub fn api_name(self) -> &'static str {
        match self {
            Self::Background => "Background",
            Self::Foreground => "Foreground",
            Self::Orphan => "Orphan",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct PrimaryDeletion {
    pub resource_version: String,
    pub propagation: Option<Propagation>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct ChildRef {
    pub kind: Kind,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct ChildUpdate {
    pub kind: Kind,
    pub name: String,
    pub resource_version: String,
    #[serde(with = "json_text")]
    pub patch: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct Event {
    pub warning: bool,
    pub reason: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    AddFinalizer(String),
    RemoveFinalizer(String),
    SetLabels(Vec<KeyValue>),
    SetAnnotations(Vec<KeyValue>),
    PatchStatus(#[serde(with = "json_text")] String),
    DeletePrimary(PrimaryDeletion),
    CreateChild(#[serde(with = "json_text")] String),
    UpdateChild(ChildUpdate),
    DeleteChild(ChildRef),
    Event(Event),
    RequeueAfter(u64),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decision {
    Actions(Vec<Action>),
    Read(Vec<ReadRequest>),
}

impl Default for Decision {
    fn default() -> Self {
        Self::Actions(Vec::new())
    }
}

/// JSON text in the model, a structured value in serde forms (case files, `rekon eval`):
/// a YAML mapping becomes its compact JSON text, and JSON text is written back as
/// the value it holds. A string stays a string, so hand-written JSON text works too.
pub mod json_text {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::Value;

    pub fn serialize<S: Serializer>(text: &str, serializer: S) -> Result<S::Ok, S::Error> {
        match serde_json::from_str::<Value>(text) {
            Ok(value) => value.serialize(serializer),
            Err(_) => serializer.serialize_str(text),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
        Ok(match Value::deserialize(deserializer)? {
            Value::String(text) => text,
            Value::Null => String::new(),
            value => value.to_string(),
        })
    }

    /// [`json_text`] for every element of a list.
    pub mod list {
        use super::*;

        pub fn serialize<S: Serializer>(
            texts: &[String],
            serializer: S,
        ) -> Result<S::Ok, S::Error> {
            let values: Vec<Value> = texts
                .iter()
                .map(|text| {
                    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone()))
                })
                .collect();
            values.serialize(serializer)
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(
            deserializer: D,
        ) -> Result<Vec<String>, D::Error> {
            Ok(Vec::<Value>::deserialize(deserializer)?
                .into_iter()
                .map(|value| match value {
                    Value::String(text) => text,
                    value => value.to_string(),
                })
                .collect())
        }
    }
}

/// One projected object, parsed: what a guest decides on.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Object(pub Value);

impl Object {
    /// Parses projected JSON text (the host always sends an object).
    pub fn parse(text: &str) -> Result<Self, String> {
        serde_json::from_str(text)
            .map(Object)
            .map_err(|err| format!("not a JSON object: {err}"))
    }

    /// The value at a dotted path (`status.phase`), if present.
    pub fn get(&self, path: &str) -> Option<&Value> {
        path.split('.')
            .try_fold(&self.0, |value, part| value.get(part))
    }

    /// The string at a dotted path, if it is one.
    pub fn str(&self, path: &str) -> Option<&str> {
        self.get(path).and_then(Value::as_str)
    }

    /// The integer at a dotted path, if it is one.
    pub fn i64(&self, path: &str) -> Option<i64> {
        self.get(path).and_then(Value::as_i64)
    }

    pub fn name(&self) -> &str {
        self.str("metadata.name").unwrap_or_default()
    }

    pub fn namespace(&self) -> &str {
        self.str("metadata.namespace").unwrap_or_default()
    }

    pub fn uid(&self) -> &str {
        self.str("metadata.uid").unwrap_or_default()
    }

    pub fn resource_version(&self) -> &str {
        self.str("metadata.resourceVersion").unwrap_or_default()
    }

    /// `metadata.deletionTimestamp` is set.
    pub fn is_deleting(&self) -> bool {
        self.get("metadata.deletionTimestamp")
            .is_some_and(|t| !t.is_null())
    }

    pub fn finalizers(&self) -> Vec<&str> {
        self.get("metadata.finalizers")
            .and_then(Value::as_array)
            .map(|list| list.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    pub fn has_finalizer(&self, finalizer: &str) -> bool {
        self.finalizers().contains(&finalizer)
    }

    /// Whether a controller owner reference carries `uid`.
    pub fn is_controlled_by(&self, uid: &str) -> bool {
        self.get("metadata.ownerReferences")
            .and_then(Value::as_array)
            .is_some_and(|refs| {
                refs.iter().any(|r| {
                    r.get("controller").and_then(Value::as_bool) == Some(true)
                        && r.get("uid").and_then(Value::as_str) == Some(uid)
                })
            })
    }
}

/// Implements `From` in both directions between this module's types and the
/// bindings generated for the `controller` interface (guest: wit-bindgen, host:
/// wasmtime's `bindgen!`), given the path of the generated module:
///
/// ```text
/// rekon_guest::impl_controller_conversions!(exports::rekon::reconcile0_3_0::controller_decider);
/// ```
#[macro_export]
macro_rules! impl_controller_conversions {
    ($($v:ident)::+ $(,)?) => {
        $crate::__rekon_record!($($v)::+::Kind, $crate::controller::Kind {
            group: one, version: one, kind: one,
        });
        $crate::__rekon_variant!($($v)::+::Mapping, $crate::controller::Mapping {
            FieldIndex(one), Selector(one), NamedBy(one); Owner, SameName
        });
        $crate::__rekon_record!($($v)::+::Watch, $crate::controller::Watch {
            kind: one, mapping: one, fields: one,
        });
        $crate::__rekon_record!($($v)::+::ChildScope, $crate::controller::ChildScope {
            kind: one, create: one, update: one, delete: one,
        });
        $crate::__rekon_variant!($($v)::+::Freshness, $crate::controller::Freshness {
            ; AfterDequeue, AfterObserved
        });
        $crate::__rekon_record!($($v)::+::ReadScope, $crate::controller::ReadScope {
            kind: one, fields: one, freshness: one, related_only: one,
        });
        $crate::__rekon_record!($($v)::+::Scope, $crate::controller::Scope {
            finalizers: one, labels: one, annotations: one, status_fields: one,
            delete_primary: one, children: vec, event_reasons: one, reads: vec,
        });
        $crate::__rekon_record!($($v)::+::Description, $crate::controller::Description {
            name: one, primary: one, primary_fields: one, watches: vec, scope: one,
        });
        $crate::__rekon_record!($($v)::+::Related, $crate::controller::Related {
            kind: one, objects: one,
        });
        $crate::__rekon_record!($($v)::+::ListRequest, $crate::controller::ListRequest {
            kind: one, label_selector: one, field_selector: one,
        });
        $crate::__rekon_record!($($v)::+::GetRequest, $crate::controller::GetRequest {
            kind: one, name: one,
        });
        $crate::__rekon_variant!($($v)::+::ReadRequest, $crate::controller::ReadRequest {
            List(one), Get(one);
        });
        $crate::__rekon_record!($($v)::+::ReadResult, $crate::controller::ReadResult {
            request: one, objects: one,
        });
        $crate::__rekon_record!($($v)::+::Input, $crate::controller::Input {
            primary: one, related: vec, reads: vec, now: one,
        });
        $crate::__rekon_record!($($v)::+::KeyValue, $crate::controller::KeyValue {
            key: one, value: one,
        });
        $crate::__rekon_variant!($($v)::+::Propagation, $crate::controller::Propagation {
            ; Background, Foreground, Orphan
        });
        $crate::__rekon_record!($($v)::+::PrimaryDeletion, $crate::controller::PrimaryDeletion {
            resource_version: one, propagation: opt,
        });
        $crate::__rekon_record!($($v)::+::ChildRef, $crate::controller::ChildRef {
            kind: one, name: one, uid: one, resource_version: one,
        });
        $crate::__rekon_record!($($v)::+::ChildUpdate, $crate::controller::ChildUpdate {
            kind: one, name: one, resource_version: one, patch: one,
        });
        $crate::__rekon_record!($($v)::+::Event, $crate::controller::Event {
            warning: one, reason: one, message: one,
        });
        $crate::__rekon_variant!($($v)::+::Action, $crate::controller::Action {
            AddFinalizer(one), RemoveFinalizer(one), SetLabels(vec), SetAnnotations(vec),
            PatchStatus(one), DeletePrimary(one), CreateChild(one), UpdateChild(one),
            DeleteChild(one), Event(one), RequeueAfter(one);
        });
        $crate::__rekon_variant!($($v)::+::Decision, $crate::controller::Decision {
            Actions(vec), Read(vec);
        });
    };
}

/// Exports a controller module from its plain-Rust logic: `describe()` and
/// `decide(&Input)` in module `$logic` (a path from the crate root), as the `controller-decider` interface of
/// `rekon:reconcile/controller@0.3.0`, with the bump allocator (a fresh instance
/// per decision). For guest crates of this repository (`guests/<name>`, the WIT
/// at `../../wit`); the crate depends on `wit-bindgen` itself.
///
/// ```text
/// pub mod logic;
/// rekon_guest::export_controller!(crate::logic);
/// ```
#[macro_export]
macro_rules! export_controller {
    ($($logic:tt)+) => {
        #[cfg(target_arch = "wasm32")]
        mod component {
            wit_bindgen::generate!({
                path: "../../wit",
                world: "rekon:reconcile/controller@0.3.0",
            });

            $crate::impl_controller_conversions!(
                exports::rekon::reconcile0_3_0::controller_decider
            );

            use exports::rekon::reconcile0_3_0::controller_decider::{
                Decision, Description, Guest, Input,
            };

            struct Module;

            impl Guest for Module {
                fn describe() -> Description {
                    $($logic)+::describe().into()
                }

                fn decide(input: Input) -> Decision {
                    $($logic)+::decide(&input.into()).into()
                }
            }

            export!(Module);

            /// Each decision runs in a fresh instance: no memory is ever freed.
            #[global_allocator]
            static ALLOC: $crate::alloc::BumpAlloc = $crate::alloc::BumpAlloc::new();
        }
    };
}

#[cfg(test)]
mod tests {
    //! Round trips model → generated → model, with the world's bindings generated
    //! natively the way a guest crate does, and the serde form of case files.

    use super::*;

    mod world {
        wit_bindgen::generate!({
            path: "../../wit",
            world: "rekon:reconcile/controller@0.3.0",
        });
    }

    crate::impl_controller_conversions!(world::exports::rekon::reconcile0_3_0::controller_decider);

    use world::exports::rekon::reconcile0_3_0::controller_decider as generated;

    fn round_trip<G, M: Into<G>>(value: M) -> M
    where
        G: Into<M>,
    {
        let generated: G = value.into();
        generated.into()
    }

    fn kind() -> Kind {
        Kind::new("apps", "v1", "Deployment")
    }

    #[test]
    fn description_input_and_decision_round_trip_with_every_field_set() {
        let description = Description {
            name: "sample".into(),
            primary: Kind::new("samplecontroller.k8s.io", "v1alpha1", "Foo"),
            primary_fields: vec!["spec".into()],
            watches: vec![
                Watch {
                    kind: kind(),
                    mapping: Mapping::Owner,
                    fields: vec!["status.availableReplicas".into()],
                },
                Watch {
                    kind: kind(),
                    mapping: Mapping::NamedBy("spec.deploymentName".into()),
                    fields: vec![],
                },
            ],
            scope: Scope {
                finalizers: vec!["f".into()],
                labels: vec!["l".into()],
                annotations: vec!["a".into()],
                status_fields: vec!["availableReplicas".into()],
                delete_primary: true,
                children: vec![ChildScope {
                    kind: kind(),
                    create: true,
                    update: true,
                    delete: false,
                }],
                event_reasons: vec!["Synced".into()],
                reads: vec![ReadScope {
                    kind: kind(),
                    fields: vec!["spec".into()],
                    freshness: Freshness::AfterObserved,
                    related_only: true,
                }],
            },
        };
        assert_eq!(
            round_trip::<generated::Description, _>(description.clone()),
            description
        );
        let input = Input {
            primary: r#"{"metadata":{"name":"a"}}"#.into(),
            related: vec![Related {
                kind: kind(),
                objects: vec!["{}".into()],
            }],
            reads: vec![ReadResult {
                request: ReadRequest::Get(GetRequest {
                    kind: kind(),
                    name: "a".into(),
                }),
                objects: vec![],
            }],
            now: "2026-11-26T00:00:00Z".into(),
        };
        assert_eq!(round_trip::<generated::Input, _>(input.clone()), input);
        let decision = Decision::Actions(vec![
            Action::AddFinalizer("f".into()),
            Action::SetLabels(vec![KeyValue {
                key: "l".into(),
                value: None,
            }]),
            Action::DeletePrimary(PrimaryDeletion {
                resource_version: "7".into(),
                propagation: Some(Propagation::Foreground),
            }),
            Action::RequeueAfter(1500),
        ]);
        assert_eq!(
            round_trip::<generated::Decision, _>(decision.clone()),
            decision
        );
    }

    #[test]
    fn case_files_write_objects_as_yaml_and_the_model_holds_json_text() {
        let input: Input = serde_json::from_value(serde_json::json!({
            "primary": { "metadata": { "name": "pv" }, "status": { "phase": "Bound" } },
            "now": "2026-11-26T00:00:00Z",
        }))
        .unwrap();
        let primary = Object::parse(&input.primary).unwrap();
        assert_eq!(primary.name(), "pv");
        assert_eq!(primary.str("status.phase"), Some("Bound"));
        let back = serde_json::to_value(&input).unwrap();
        assert_eq!(back["primary"]["status"]["phase"], "Bound");
    }

    #[test]
    fn object_reads_metadata_and_paths() {
        let object = Object::parse(
            r#"{"metadata":{"name":"a","deletionTimestamp":"t","finalizers":["x"],
                "ownerReferences":[{"uid":"u","controller":true}]},"spec":{"replicas":2}}"#,
        )
        .unwrap();
        assert!(object.is_deleting());
        assert!(object.has_finalizer("x"));
        assert!(!object.has_finalizer("y"));
        assert!(object.is_controlled_by("u"));
        assert!(!object.is_controlled_by("v"));
        assert_eq!(object.i64("spec.replicas"), Some(2));
        assert_eq!(object.get("spec.missing"), None);
    }
}
