//! What a `DecisionModule`'s status says: its phase and conditions, computed
//! from what rekon did with the object (fetched, refused, applied) and what
//! its world's controller serves now (shadow tally, promotion, rollback).

use chrono::{SecondsFormat, Utc};

use crate::config::Mode;
use crate::object::resource::{
    ActiveStatus, Condition, DecisionModuleStatus, Phase, PromotionStatus, RolledBackStatus,
    ShadowStatus,
};
use crate::refusal::{Refusal, RefusalReason};
use crate::status::ControllerStatus;

pub const READY: &str = "Ready";
pub const PULLED: &str = "Pulled";
pub const VERIFIED: &str = "Verified";
pub const PROMOTED: &str = "Promoted";

/// What rekon did with one object's current generation.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Fetching and checking.
    Pulling,
    /// Published (or already serving); `promoted` when its status recorded a
    /// promotion, `rolled_back` the recorded rollback it honours.
    Applied {
        promoted: bool,
        rolled_back: Option<RolledBackStatus>,
    },
    Refused(Refusal),
    /// A controller module's object is deleted: its controller stopped, its
    /// removal policy runs (the message says how far).
    Releasing(String),
}

/// Whether a refusal happened while fetching (else while checking the bytes).
fn is_fetch_stage(reason: RefusalReason) -> bool {
    matches!(
        reason,
        RefusalReason::NotFound
            | RefusalReason::ManifestNotFound
            | RefusalReason::RegistryUnreachable
            | RefusalReason::Unauthorized
            | RefusalReason::TooLarge
    )
}

/// The status of an object at `generation` after `outcome`, given its world's
/// controller (`None` for an object that does not serve its world: a
/// duplicate, an unknown world). Conditions keep their transition time from
/// `previous` while their status stays the same.
pub fn compute(
    generation: Option<i64>,
    outcome: &Outcome,
    auto_promote: bool,
    controller: Option<&ControllerStatus>,
    previous: Option<&DecisionModuleStatus>,
) -> DecisionModuleStatus {
    let condition = |type_: &str, ok: Option<bool>, reason: &str, message: String| Condition {
        type_: type_.into(),
        status: match ok {
            Some(true) => "True",
            Some(false) => "False",
            None => "Unknown",
        }
        .into(),
        reason: reason.into(),
        message,
        last_transition_time: None,
        observed_generation: generation,
    };
    let now = Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true);
    // A rollback made here now, else the recorded one the plan honours.
    let rolled_back = controller
        .and_then(|c| Some((c.rolled_back.clone()?, c.rolled_back_from.clone()?)))
        .map(|(message, digest)| RolledBackStatus {
            at: previous
                .and_then(|p| p.rolled_back.as_ref())
                .filter(|r| r.digest == digest)
                .map_or_else(|| now.clone(), |r| r.at.clone()),
            digest,
            message,
        })
        .or_else(|| match outcome {
            Outcome::Applied { rolled_back, .. } => rolled_back.clone(),
            // Kept while fetching or refused: the record outlives this process.
            _ => previous.and_then(|p| p.rolled_back.clone()),
        });
    let promoted_now = controller.is_some_and(|c| c.promoted_at.is_some());
    let stopped = controller.and_then(|c| c.promotion_stopped.clone());
    let (phase, mut conditions) = match outcome {
        Outcome::Pulling => (
            Phase::Pulling,
            vec![
                condition(
                    READY,
                    Some(false),
                    "Pulling",
                    "fetching and checking the module".into(),
                ),
                condition(PULLED, None, "Pulling", "fetching the module".into()),
            ]
            .into_iter()
            // A recorded promotion stays recorded while the object is fetched again.
            .chain(previous.and_then(|p| p.condition(PROMOTED)).cloned())
            .collect(),
        ),
        Outcome::Refused(refusal) => {
            let reason = refusal.reason.as_str();
            let serving = controller
                .and_then(|c| c.active.as_ref())
                .map(|a| format!("; {} (sha256 {}) keeps serving", a.path, a.sha256))
                .unwrap_or_default();
            let message = format!("{}{serving}", refusal.message);
            let mut conditions = vec![condition(READY, Some(false), reason, message.clone())];
            if is_fetch_stage(refusal.reason) {
                conditions.push(condition(PULLED, Some(false), reason, message));
            } else if refusal.reason != RefusalReason::DuplicateWorld
                && refusal.reason != RefusalReason::InvalidSpec
            {
                conditions.push(condition(
                    PULLED,
                    Some(true),
                    "Pulled",
                    "module fetched".into(),
                ));
                conditions.push(condition(VERIFIED, Some(false), reason, message));
            }
            (Phase::Rejected, conditions)
        }
        Outcome::Releasing(message) => (
            Phase::Releasing,
            vec![condition(READY, Some(false), "Releasing", message.clone())],
        ),
        Outcome::Applied { promoted, .. } => {
            let fetched = condition(PULLED, Some(true), "Pulled", "every module fetched".into());
            let verified = condition(
                VERIFIED,
                Some(true),
                "Verified",
                "digests, world, contract version and canary replay checked".into(),
            );
            let (phase, ready) = if let Some(record) = &rolled_back {
                (
                    Phase::RolledBack,
                    condition(READY, Some(false), "RolledBack", record.message.clone()),
                )
            } else if controller.is_some_and(|c| c.mode == Mode::Shadow) {
                (
                    Phase::Shadowing,
                    condition(
                        READY,
                        Some(true),
                        "Shadowing",
                        "the previous version serves; the candidate decides beside it".into(),
                    ),
                )
            } else {
                (
                    Phase::Active,
                    condition(READY, Some(true), "Active", "the module serves".into()),
                )
            };
            let mut conditions = vec![ready, fetched, verified];
            if auto_promote || *promoted {
                conditions.push(if *promoted || promoted_now {
                    condition(
                        PROMOTED,
                        Some(true),
                        "Promoted",
                        "the shadow agreed often enough and serves".into(),
                    )
                } else if let Some(note) = stopped {
                    condition(PROMOTED, Some(false), "PromotionStopped", note)
                } else {
                    condition(
                        PROMOTED,
                        Some(false),
                        "WaitingForEvidence",
                        "the shadow is collecting decisions".into(),
                    )
                });
            }
            (phase, conditions)
        }
    };
    for condition in &mut conditions {
        let kept = previous
            .and_then(|p| p.condition(&condition.type_))
            .filter(|p| p.status == condition.status)
            .and_then(|p| p.last_transition_time.clone());
        condition.last_transition_time = Some(kept.unwrap_or_else(|| now.clone()));
    }
    let serves = matches!(outcome, Outcome::Applied { .. } | Outcome::Refused(_));
    let active = controller
        .filter(|_| serves)
        .and_then(|c| Some((c.active.as_ref()?, c.active_since?)))
        .map(|(version, since)| ActiveStatus {
            digest: version.sha256.clone(),
            image: version.path.clone(),
            contract_version: version
                .contract
                .rsplit_once('@')
                .map(|(_, v)| v.to_string())
                .unwrap_or_else(|| version.contract.clone()),
            since: since.to_rfc3339_opts(SecondsFormat::Secs, true),
        });
    let shadow = controller.filter(|_| serves).and_then(|c| {
        c.shadow.as_ref().map(|s| ShadowStatus {
            digest: s.sha256.clone(),
            agreed: c.shadow_agreed,
            differed: c.shadow_differed,
            failed: c.shadow_failed,
            dropped: c.shadow_dropped,
        })
    });
    // A promotion made here now, else the one recorded for this generation.
    let promotion = controller
        .and_then(|c| c.promotion.as_ref())
        .map(|p| PromotionStatus {
            digest: p.digest.clone(),
            at: p.at.to_rfc3339_opts(SecondsFormat::Secs, true),
            agreed: p.agreed,
            differed: p.differed,
            failed: p.failed,
        })
        .or_else(|| match outcome {
            Outcome::Applied { promoted: true, .. } | Outcome::Pulling => {
                previous.and_then(|p| p.promotion.clone())
            }
            _ => None,
        });
    DecisionModuleStatus {
        phase: Some(phase),
        observed_generation: generation,
        active,
        shadow,
        rolled_back,
        promotion,
        conditions,
        ..DecisionModuleStatus::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::VersionStatus;

    fn serving(mode: Mode) -> ControllerStatus {
        let version = |sha: &str| VersionStatus {
            name: "v".into(),
            sha256: sha.into(),
            path: "configmap/ns/v1#module.wasm".into(),
            contract: "rekon:reconcile@0.2.0".into(),
        };
        ControllerStatus {
            active: Some(version("sha256:11")),
            active_since: Some(Utc::now()),
            shadow: (mode == Mode::Shadow).then(|| version("sha256:22")),
            previous: None,
            mode,
            pinned: true,
            swaps: 1,
            rejections: 0,
            rollbacks: 0,
            decisions: 0,
            failures: 0,
            shadow_agreed: 7,
            shadow_differed: 0,
            shadow_failed: 0,
            shadow_dropped: 0,
            promoted_at: None,
            promotion: None,
            promotion_stopped: None,
            rolled_back: None,
            rolled_back_from: None,
            last_error: None,
            last_error_at: None,
        }
    }

    #[test]
    fn a_refusal_names_what_keeps_serving_and_fails_the_stage_it_happened_in() {
        let refusal = Refusal::new(RefusalReason::DigestMismatch, "configmap/ns/v2#k: mismatch");
        let status = compute(
            Some(3),
            &Outcome::Refused(refusal),
            false,
            Some(&serving(Mode::Active)),
            None,
        );
        assert_eq!(status.phase, Some(Phase::Rejected));
        let ready = status.condition(READY).unwrap();
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("False", "DigestMismatch")
        );
        assert!(
            ready
                .message
                .contains("configmap/ns/v1#module.wasm (sha256 sha256:11) keeps serving")
        );
        assert_eq!(status.condition(VERIFIED).unwrap().status, "False");
        assert_eq!(status.condition(PULLED).unwrap().status, "True");
        assert_eq!(status.active.unwrap().contract_version, "0.2.0");
        assert_eq!(status.observed_generation, Some(3));
    }

    #[test]
    fn a_shadow_waiting_for_evidence_shows_its_tally_and_keeps_transition_times() {
        let first = compute(
            Some(1),
            &Outcome::Applied {
                promoted: false,
                rolled_back: None,
            },
            true,
            Some(&serving(Mode::Shadow)),
            None,
        );
        assert_eq!(first.phase, Some(Phase::Shadowing));
        assert_eq!(first.shadow.as_ref().unwrap().agreed, 7);
        assert_eq!(
            first.condition(PROMOTED).unwrap().reason,
            "WaitingForEvidence"
        );
        let mut earlier = first.clone();
        for c in &mut earlier.conditions {
            c.last_transition_time = Some("2020-01-01T00:00:00Z".into());
        }
        let again = compute(
            Some(1),
            &Outcome::Applied {
                promoted: false,
                rolled_back: None,
            },
            true,
            Some(&serving(Mode::Shadow)),
            Some(&earlier),
        );
        assert_eq!(
            again
                .condition(READY)
                .unwrap()
                .last_transition_time
                .as_deref(),
            Some("2020-01-01T00:00:00Z")
        );
    }
}
