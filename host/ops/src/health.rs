//! Liveness and readiness. `/healthz` answers while the process serves HTTP;
//! `/readyz` needs the guests loaded with a module for at least one world (an
//! install with nothing to serve is not ready, and says why) and either a
//! standby role (a standby is ready: it holds no caches to sync) or a leader
//! whose caches synced.

use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use rekon_controllers::decider::Deciders;
use rekon_controllers::host::HostProbe;

/// What this replica is doing right now.
#[derive(Default)]
enum Role {
    /// Before the first election round (or the controllers' start).
    #[default]
    Starting,
    /// Campaigning for the lease while another replica leads.
    Standby,
    /// Running the controllers; ready once their caches synced, while every
    /// worker runs.
    Leading(HostProbe),
    /// SIGTERM received: stop getting traffic.
    Stopping,
}

#[derive(Default)]
pub struct Health {
    guests_loaded: AtomicBool,
    /// The worlds' slots, once loaded: asked whether any world is served.
    deciders: Mutex<Option<Deciders>>,
    role: Mutex<Role>,
}

/// One named readiness check and why it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub name: &'static str,
    pub failure: Option<String>,
}

/// The readiness checks, rendered like kube-apiserver's `/readyz?verbose`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readiness {
    pub checks: Vec<Check>,
}

impl Readiness {
    pub fn is_ready(&self) -> bool {
        self.checks.iter().all(|c| c.failure.is_none())
    }
}

impl fmt::Display for Readiness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for check in &self.checks {
            match &check.failure {
                None => writeln!(f, "[+]{} ok", check.name)?,
                Some(why) => writeln!(f, "[-]{} failed: {why}", check.name)?,
            }
        }
        let verdict = if self.is_ready() { "ok" } else { "failed" };
        writeln!(f, "readyz check {verdict}")
    }
}

impl Health {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn set_guests_loaded(&self, loaded: bool) {
        self.guests_loaded.store(loaded, Ordering::Release);
    }

    /// The guests are loaded into `deciders`; ready only while at least one
    /// world has a module (modules may still come from DecisionModule objects).
    pub fn set_deciders(&self, deciders: Deciders) {
        *self.deciders.lock().expect("health lock") = Some(deciders);
        self.set_guests_loaded(true);
    }

    pub fn set_standby(&self) {
        self.set_role(Role::Standby);
    }

    /// The controllers run on this replica in `host`.
    pub fn set_leading(&self, host: HostProbe) {
        self.set_role(Role::Leading(host));
    }

    pub fn set_stopping(&self) {
        self.set_role(Role::Stopping);
    }

    fn set_role(&self, role: Role) {
        *self.role.lock().expect("health lock") = role;
    }

    pub fn readiness(&self) -> Readiness {
        let guests = Check {
            name: "guests",
            failure: if !self.guests_loaded.load(Ordering::Acquire) {
                Some("decision modules not loaded".into())
            } else {
                let deciders = self.deciders.lock().expect("health lock");
                deciders.as_ref().and_then(Deciders::nothing_served)
            },
        };
        let role = match &*self.role.lock().expect("health lock") {
            Role::Starting => Some("starting".to_string()),
            Role::Standby => None,
            Role::Leading(host) => host.unready().map(|why| format!("leading; {why}")),
            Role::Stopping => Some("shutting down".to_string()),
        };
        Readiness {
            checks: vec![
                guests,
                Check {
                    name: "leader-or-standby",
                    failure: role,
                },
            ],
        }
    }

    /// `leader`, `standby`, `starting` or `stopping`, for logs and tests.
    pub fn role_name(&self) -> &'static str {
        match &*self.role.lock().expect("health lock") {
            Role::Starting => "starting",
            Role::Standby => "standby",
            Role::Leading(_) => "leader",
            Role::Stopping => "stopping",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_standby_with_loaded_guests_is_ready() {
        let health = Health::new();
        assert!(!health.readiness().is_ready(), "starting");
        health.set_standby();
        let readiness = health.readiness();
        assert!(!readiness.is_ready());
        assert!(
            readiness
                .to_string()
                .contains("[-]guests failed: decision modules not loaded"),
            "{readiness}"
        );
        health.set_guests_loaded(true);
        let readiness = health.readiness();
        assert!(readiness.is_ready(), "{readiness}");
        assert_eq!(
            readiness.to_string(),
            "[+]guests ok\n[+]leader-or-standby ok\nreadyz check ok\n"
        );
    }

    #[test]
    fn an_install_with_no_module_for_any_world_is_not_ready_and_says_why() {
        use std::sync::Arc;

        use rekon_contract::{PvcProtectionWorld, ResourceClaimWorld};
        use rekon_controllers::decider::{Decider, GuestInfo, Slot};

        struct Nothing;
        impl Decider<PvcProtectionWorld> for Nothing {
            fn info(&self) -> GuestInfo {
                GuestInfo {
                    name: "nothing".into(),
                    digest: "native".into(),
                }
            }
            fn decide(
                &self,
                _key: &str,
                _input: rekon_guest::model::PvcInput,
            ) -> Result<rekon_guest::model::PvcDecision, rekon_controllers::decider::DecideError>
            {
                Ok(rekon_guest::model::PvcDecision::Actions(vec![]))
            }
        }

        let pvc = Arc::new(Slot::<PvcProtectionWorld>::missing("sha256 mismatch"));
        let deciders =
            Deciders::new()
                .with(pvc.clone())
                .with(Arc::new(Slot::<ResourceClaimWorld>::missing(
                    "no DecisionModule names it",
                )));
        let health = Health::new();
        health.set_standby();
        health.set_deciders(deciders);
        let readiness = health.readiness().to_string();
        assert!(
            readiness.contains("[-]guests failed: no decision module serves any world")
                && readiness.contains("pvc-protection: sha256 mismatch")
                && readiness.contains("resource-claim: no DecisionModule names it"),
            "{readiness}"
        );
        pvc.swap(Arc::new(Nothing));
        let readiness = health.readiness();
        assert!(readiness.is_ready(), "{readiness}");
    }

    #[test]
    fn a_stopping_replica_is_not_ready() {
        let health = Health::new();
        health.set_guests_loaded(true);
        health.set_standby();
        health.set_stopping();
        assert_eq!(health.role_name(), "stopping");
        assert!(
            health
                .readiness()
                .to_string()
                .contains("[-]leader-or-standby failed: shutting down")
        );
    }
}
