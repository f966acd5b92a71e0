//! What rekon reports about its modules: per controller the serving, shadow and
//! previous versions, swaps, rejections, rollbacks, shadow agreement, the last
//! error. Read by the metrics endpoint and written as the `--status-file`.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::config::Mode;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionStatus {
    pub name: String,
    pub sha256: String,
    pub path: String,
    /// The WIT contract it exports, e.g. `rekon:reconcile@0.1.0`.
    pub contract: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ControllerStatus {
    /// The version whose decisions are applied.
    pub active: Option<VersionStatus>,
    pub active_since: Option<DateTime<Utc>>,
    /// The candidate deciding beside it, if any.
    pub shadow: Option<VersionStatus>,
    /// What automatic rollback would republish.
    pub previous: Option<VersionStatus>,
    pub mode: Mode,
    /// Whether guests.yaml pins the digests.
    pub pinned: bool,
    /// Versions published (the first load included).
    pub swaps: u64,
    /// Configurations or modules refused; the old version kept serving.
    pub rejections: u64,
    /// Automatic rollbacks.
    pub rollbacks: u64,
    /// Decisions of the active version since it was activated, and how many
    /// trapped or overran their deadline or memory cap.
    pub decisions: u64,
    pub failures: u64,
    pub shadow_agreed: u64,
    pub shadow_differed: u64,
    pub shadow_failed: u64,
    /// Shadow decisions not run because the shadow budget was full.
    pub shadow_dropped: u64,
    /// When the shadow was promoted automatically (`autoPromote`).
    pub promoted_at: Option<DateTime<Utc>>,
    /// That promotion with its evidence.
    pub promotion: Option<Promotion>,
    /// Why the shadow will not be promoted (too many differences, a failure).
    pub promotion_stopped: Option<String>,
    /// The automatic rollback since the configuration was applied.
    pub rolled_back: Option<String>,
    /// The digest (`sha256:<hex>`) that automatic rollback took out of service.
    pub rolled_back_from: Option<String>,
    pub last_error: Option<String>,
    pub last_error_at: Option<DateTime<Utc>>,
}

/// A shadow promoted automatically, and the tally that earned it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Promotion {
    /// `sha256:<hex>` of the promoted module.
    pub digest: String,
    pub at: DateTime<Utc>,
    pub agreed: u64,
    pub differed: u64,
    pub failed: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Status {
    /// Keyed by controller name (`pvc-protection`, `resource-claim`).
    pub controllers: BTreeMap<String, ControllerStatus>,
}

impl Status {
    pub fn controller(&self, name: &str) -> Option<&ControllerStatus> {
        self.controllers.get(name)
    }

    /// Writes the status as JSON, atomically (write then rename).
    pub fn write_to(&self, path: &Path) -> std::io::Result<()> {
        let json = serde_json::to_vec_pretty(self).expect("status serialises");
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, json)?;
        std::fs::rename(tmp, path)
    }
}
