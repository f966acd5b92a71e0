//! Running rekon in a cluster: Prometheus metrics, health and readiness, the
//! ops HTTP server (`/metrics`, `/healthz`, `/readyz`), leader election on a
//! Lease, and the supervisor that runs the controllers only while leading.

pub mod guest_status;
pub mod health;
pub mod leader;
pub mod metrics;
pub mod server;
pub mod supervise;

pub use guest_status::{GuestStatus, NoGuestStatus, ShadowOutcome};
pub use health::Health;
pub use leader::{ElectionConfig, LeaderElector, LeadershipLost};
pub use metrics::Metrics;
pub use server::OpsServer;
pub use supervise::Supervision;
