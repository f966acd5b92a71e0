//! The host machinery shared by every controller: work queues and their rate
//! limits, creation expectations, the mutation cache and the deleted-pod
//! memory. (The one `kube::Error` mapping is
//! `rekon_controllers::writes::WriteError`; each controller's enqueue rules are
//! in its folder under `rekon_controllers`.)

pub mod deleted_pods;
pub mod expectations;
pub mod key;
pub mod mutation_cache;
pub mod queue;
pub mod rate_limit;

pub use key::ObjectKey;
