"""A ``rekon:reconcile/pvc-protection`` decision module, made by ``rekon new``.

The sample decision adds the ``kubernetes.io/pvc-protection`` finalizer to a
PVC that lacks it and decides nothing else. Write yours in ``decide``; the host
calls it once per PVC key, in a fresh instance each time.
"""

from rekon_guest import has_finalizer, target
from wit_world import exports
from wit_world.exports.pvc_decider import (
    PvcAction_AddFinalizer,
    PvcDecision,
    PvcDecision_Actions,
    PvcInput,
)

FINALIZER = "kubernetes.io/pvc-protection"


class PvcDecider(exports.PvcDecider):
    def decide(self, input: PvcInput) -> PvcDecision:
        pvc = input.pvc
        if pvc.deleting or has_finalizer(pvc, FINALIZER):
            return PvcDecision_Actions([])
        return PvcDecision_Actions([PvcAction_AddFinalizer(target(pvc))])
