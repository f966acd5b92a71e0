//! The host machinery shared by every controller: work queues and their rate
//! limits, creation expectations, the mutation cache, the deleted-pod memory, and
//! the pure event rules that decide which keys an event enqueues. (The one
//! `kube::Error` mapping is `rekon_controllers::writes::WriteError`.)

pub mod deleted_pods;
pub mod enqueue;
pub mod expectations;
pub mod key;
pub mod mutation_cache;
pub mod queue;
pub mod rate_limit;

pub use key::ObjectKey;
