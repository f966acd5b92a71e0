"""A ``rekon:reconcile/ephemeral-volume`` decision module, made by ``rekon new``.

The sample decision creates nothing. Write yours in ``decide``; the host calls
it once per pod key, in a fresh instance each time.
"""

from wit_world import exports
from wit_world.exports.volume_decider import VolumeDecision, VolumeInput


class VolumeDecider(exports.VolumeDecider):
    def decide(self, input: VolumeInput) -> VolumeDecision:
        return VolumeDecision(actions=[])
