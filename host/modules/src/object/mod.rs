//! Decision modules delivered as Kubernetes objects: the `DecisionModule`
//! custom resource, fetching its modules (ConfigMap key or OCI image),
//! serving them through [`Modules`](crate::Modules) (a built-in world's
//! module, or a controller module held against the scope the object pins),
//! a status that explains every refusal, shadow tally, promotion and
//! rollback, and a controller module's removal policy.

mod decode;
mod fetch;
mod objects;
mod plan;
mod removal;
mod resource;
mod serve;
mod status;
mod writer;

pub use fetch::Fetcher;
pub use removal::FINALIZER;
pub use resource::{
    ActiveStatus, Condition, ConfigMapKey, DecisionModule, DecisionModuleSpec,
    DecisionModuleStatus, ModuleSource, ObjectName, OnRemoval, Phase, PromotionStatus,
    RolledBackStatus, SecretKey, ShadowStatus, Verify, crd_yaml,
};
pub use serve::{API, ObjectOptions, ServingObjects, serve};
pub use status::{PROMOTED, PULLED, READY, VERIFIED};
pub use writer::StatusClient;
