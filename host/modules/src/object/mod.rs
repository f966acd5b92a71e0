//! Decision modules delivered as Kubernetes objects: the `DecisionModule`
//! custom resource, fetching its modules (ConfigMap key or OCI image),
//! serving them through [`Modules`](crate::Modules), and a status that
//! explains every refusal, shadow tally, promotion and rollback.

mod decode;
mod fetch;
mod objects;
mod plan;
mod resource;
mod serve;
mod status;
mod writer;

pub use fetch::Fetcher;
pub use resource::{
    ActiveStatus, Condition, ConfigMapKey, DecisionModule, DecisionModuleSpec,
    DecisionModuleStatus, ModuleSource, ObjectName, Phase, PromotionStatus, RolledBackStatus,
    SecretKey, ShadowStatus, Verify, crd_yaml,
};
pub use serve::{API, ObjectOptions, ServingObjects, serve};
pub use status::{PROMOTED, PULLED, READY, VERIFIED};
pub use writer::StatusClient;
