//! resource-claim's reference logic linked natively (feature `native`): the
//! same decisions as its guest, without the sandbox.

use rekon_contract::{ResourceClaimDecision, ResourceClaimInput, ResourceClaimWorld};
use rekon_guest_resource_claim::logic;

use super::NAME;
use crate::decider::{DecideError, Decider, GuestInfo, Native};

impl Decider<ResourceClaimWorld> for Native {
    fn info(&self) -> GuestInfo {
        Native::info(NAME)
    }

    fn decide(
        &self,
        _key: &str,
        input: ResourceClaimInput,
    ) -> Result<ResourceClaimDecision, DecideError> {
        Ok(match input {
            ResourceClaimInput::Pod(i) => ResourceClaimDecision::Pod(logic::decide_pod(&i)),
            ResourceClaimInput::Claim(i) => {
                ResourceClaimDecision::Claim(logic::decide_claim(&i.into()))
            }
        })
    }
}
