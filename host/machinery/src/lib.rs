//! The host machinery shared by every controller: work queues and their rate
//! limits, expectations, the mutation cache, the deleted-pod memory, the API error
//! mapping, and the pure event rules that decide which keys an event enqueues.

pub mod deleted_pods;
pub mod enqueue;
pub mod error;
pub mod expectations;
pub mod key;
pub mod mutation_cache;
pub mod queue;
pub mod rate_limit;

pub use key::ObjectKey;
