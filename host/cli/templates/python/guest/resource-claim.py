"""A ``rekon:reconcile/resource-claim`` decision module, made by ``rekon new``.

The sample decisions do nothing: no claim to create for a pod, no change to a
claim. Write yours in ``decide_pod`` and ``decide_claim``; the host calls them
once per key, in a fresh instance each time.
"""

from wit_world import exports
from wit_world.exports.claim_decider import (
    ClaimDecision,
    ClaimDecision_Actions,
    ClaimInput,
    PodDecision,
    PodInput,
)


class ClaimDecider(exports.ClaimDecider):
    def decide_pod(self, input: PodInput) -> PodDecision:
        return PodDecision(actions=[], error=None)

    def decide_claim(self, input: ClaimInput) -> ClaimDecision:
        return ClaimDecision_Actions([])
