"""The component's entry point: the ``volume-decider`` export of world
``rekon:reconcile/ephemeral-volume@0.2.0``."""

from wit_world import exports
from wit_world.exports.volume_decider import VolumeDecision, VolumeInput

import logic


class VolumeDecider(exports.VolumeDecider):
    def decide(self, input: VolumeInput) -> VolumeDecision:
        return logic.decide(input)
