"""The component's entry point: the ``pvc-decider`` export of world
``rekon:reconcile/pvc-protection@0.2.0``."""

from wit_world import exports
from wit_world.exports.pvc_decider import PvcDecision, PvcInput

import logic


class PvcDecider(exports.PvcDecider):
    def decide(self, input: PvcInput) -> PvcDecision:
        return logic.decide(input)
