"""rekon guest SDK for Python.

- The contract's types are the componentize-py bindings of a world
  (``wit_world``; :mod:`rekon_guest.bindings` generates them).
- Helpers mirroring the Rust SDK: targets and finalizer checks, the ephemeral
  claim name and ``ControlledBy``, the generated-claim naming rule.
- :mod:`rekon_guest.cases` runs case files (the ``rekon test`` format) against a
  guest natively, under pytest.

Everything in this module is pure Python with no import of the bindings at
module load, so a guest imports it inside the component and in tests alike.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

#: The version of the WIT package this SDK targets.
CONTRACT_VERSION = "0.2.0"

#: Marks a claim as generated for the pod claim named in its value.
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"

_MAX_BASE_LEN = 57


class Targetable(Protocol):
    name: str
    uid: str
    resource_version: str


class HasFinalizers(Protocol):
    finalizers: Sequence[str]


def target(obj: Targetable) -> Any:
    """The object's target as the guest sees it now (``types.Target``)."""
    from wit_world.imports.types import Target

    return Target(name=obj.name, uid=obj.uid, resource_version=obj.resource_version)


def has_finalizer(obj: HasFinalizers, finalizer: str) -> bool:
    """``finalizer`` is among the object's finalizers."""
    return finalizer in obj.finalizers


def claim_name(pod_name: str, volume_name: str) -> str:
    """EphemeralClaimName (upstream-behaviour §1.1): ``<pod>-<volume>``, no suffix."""
    return f"{pod_name}-{volume_name}"


def generate_name(pod_name: str, pod_claim_name: str) -> str:
    """The generated claim's ``generateName`` (upstream's rule, as in the Rust SDK).

    ``<pod>-<pod claim>-``, or, when that is longer than 57 bytes, both parts cut
    in proportion to their share of the untruncated base and joined by one
    hyphen, without a trailing hyphen. Lengths are UTF-8 bytes; a cut never
    splits a character.
    """
    pod_bytes = len(pod_name.encode())
    claim_bytes = len(pod_claim_name.encode())
    base_len = pod_bytes + claim_bytes + 2
    if base_len <= _MAX_BASE_LEN:
        return f"{pod_name}-{pod_claim_name}-"
    return (
        _prefix(pod_name, pod_bytes * _MAX_BASE_LEN // base_len)
        + "-"
        + _prefix(pod_claim_name, claim_bytes * _MAX_BASE_LEN // base_len)
    )


def _prefix(s: str, max_bytes: int) -> str:
    return s.encode()[:max_bytes].decode(errors="ignore")
