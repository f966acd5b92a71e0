//! The worlds a guest can implement and the decisions each exports.

use std::fmt;
use std::str::FromStr;

use rekon_contract::ContractVersion;

/// A controller world of `rekon:reconcile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum World {
    PvcProtection,
    ResourceClaim,
    EphemeralVolume,
}

impl World {
    pub const ALL: [World; 3] = [
        World::PvcProtection,
        World::ResourceClaim,
        World::EphemeralVolume,
    ];

    /// The WIT world name, without package or version.
    pub const fn name(self) -> &'static str {
        match self {
            World::PvcProtection => "pvc-protection",
            World::ResourceClaim => "resource-claim",
            World::EphemeralVolume => "ephemeral-volume",
        }
    }

    /// The world called `name` (a contract `WitWorld::NAME`); compile-time only:
    /// a name the runtime does not know fails the build.
    pub const fn named(name: &str) -> World {
        let mut i = 0;
        while i < World::ALL.len() {
            if const_eq(World::ALL[i].name(), name) {
                return World::ALL[i];
            }
            i += 1;
        }
        panic!("the contract binds a world the runtime's World does not list")
    }

    /// The exported decider interface, without package or version.
    pub fn interface(self) -> &'static str {
        match self {
            World::PvcProtection => "pvc-decider",
            World::ResourceClaim => "claim-decider",
            World::EphemeralVolume => "volume-decider",
        }
    }

    /// The interface a component of this world exports in `version`; `None`
    /// when the world is not part of that version.
    pub fn export(self, version: &ContractVersion) -> Option<&'static str> {
        match self {
            World::PvcProtection => Some(version.pvc_decider),
            World::ResourceClaim => Some(version.claim_decider),
            World::EphemeralVolume => version.volume_decider,
        }
    }

    pub fn decisions(self) -> &'static [Decision] {
        match self {
            World::PvcProtection => &[Decision::Decide],
            World::ResourceClaim => &[Decision::DecidePod, Decision::DecideClaim],
            // Its one function is also called `decide`.
            World::EphemeralVolume => &[Decision::Decide],
        }
    }
}

const fn const_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

impl fmt::Display for World {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One exported decision function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Decision {
    /// `pvc-decider.decide`.
    Decide,
    /// `claim-decider.decide-pod`.
    DecidePod,
    /// `claim-decider.decide-claim`.
    DecideClaim,
}

impl Decision {
    pub const ALL: [Decision; 3] = [Decision::Decide, Decision::DecidePod, Decision::DecideClaim];

    /// The WIT function name.
    pub fn name(self) -> &'static str {
        match self {
            Decision::Decide => "decide",
            Decision::DecidePod => "decide-pod",
            Decision::DecideClaim => "decide-claim",
        }
    }

    pub fn world(self) -> World {
        match self {
            Decision::Decide => World::PvcProtection,
            Decision::DecidePod | Decision::DecideClaim => World::ResourceClaim,
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, thiserror::Error)]
#[error("unknown decision `{0}`: expected one of decide, decide-pod, decide-claim")]
pub struct UnknownDecision(String);

impl FromStr for Decision {
    type Err = UnknownDecision;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Decision::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| UnknownDecision(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_round_trip_by_name_and_belong_to_their_world() {
        for decision in Decision::ALL {
            assert_eq!(decision.name().parse::<Decision>().unwrap(), decision);
            assert!(decision.world().decisions().contains(&decision));
        }
        let err = "decide-pvc".parse::<Decision>().unwrap_err();
        assert!(err.to_string().contains("decide-pvc"));
    }

    #[test]
    fn exports_name_the_versioned_interface() {
        for v in rekon_contract::SUPPORTED_VERSIONS {
            for world in World::ALL {
                if let Some(export) = world.export(v) {
                    assert_eq!(
                        export,
                        format!("rekon:reconcile/{}@{}", world.interface(), v.version)
                    );
                }
            }
        }
        let v = &rekon_contract::SUPPORTED_VERSIONS[0];
        assert_eq!(
            World::PvcProtection.export(v),
            Some("rekon:reconcile/pvc-decider@0.2.0")
        );
        assert_eq!(
            World::EphemeralVolume.export(v),
            Some("rekon:reconcile/volume-decider@0.2.0")
        );
        let v0_1 = rekon_contract::ContractVersion::find("0.1.0").unwrap();
        assert_eq!(World::EphemeralVolume.export(v0_1), None);
    }
}
