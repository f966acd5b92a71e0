//! pvc-protection's reference logic linked natively (feature `native`): the
//! same decisions as its guest, without the sandbox.

use rekon_contract::PvcProtectionWorld;
use rekon_guest::model::{PvcDecision, PvcInput};

use super::NAME;
use crate::decider::{DecideError, Decider, GuestInfo, Native};

impl Decider<PvcProtectionWorld> for Native {
    fn info(&self) -> GuestInfo {
        Native::info(NAME)
    }

    fn decide(&self, _key: &str, input: PvcInput) -> Result<PvcDecision, DecideError> {
        Ok(rekon_guest_pvc_protection::logic::decide(&input.into()))
    }
}
