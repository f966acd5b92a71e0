"""The SDK's own tests: the generated-claim naming rule (the Rust SDK's tests,
case for case), and the case runner projecting inputs and failing what must fail."""

from pathlib import Path

import pytest
from rekon_guest import cases, generate_name

cases.use_bindings("resource-claim", Path(__file__).parent)

from wit_world.exports import claim_decider as claim  # noqa: E402


def test_a_short_base_is_pod_claim_and_a_trailing_hyphen():
    assert generate_name("test-pod", "acme-resource") == "test-pod-acme-resource-"


def test_a_long_base_is_cut_in_proportion_without_a_trailing_hyphen():
    assert generate_name("a" * 40, "b" * 30) == "a" * 31 + "-" + "b" * 23


def test_a_base_of_57_is_kept_and_one_of_58_is_cut():
    assert generate_name("p" * 27, "c" * 28) == "p" * 27 + "-" + "c" * 28 + "-"
    assert generate_name("p" * 28, "c" * 28) == "p" * 27 + "-" + "c" * 27


def test_a_cut_never_exceeds_the_limit_in_bytes():
    for pod in range(1, 80):
        for c in range(1, 80, 7):
            assert len(generate_name("p" * pod, "c" * c)) <= 57
    assert len(generate_name("é" * 40, "ß" * 30).encode()) <= 57


class ScheduledCachedPods:
    """Asks for the cached reserved pods the projection says are scheduled."""

    def decide_claim(self, input: claim.ClaimInput) -> claim.ClaimDecision:
        return claim.ClaimDecision_NeedLivePods(
            [r.consumer.name for r in input.reservations if isinstance(r.pod, claim.PodLookup_Cached) and r.pod.value.scheduled]
        )


def case(expect) -> cases.Case:
    pod = lambda name, node: {"cached": {"meta": {"name": name, "uid": name}, "node-name": node}}  # noqa: E731
    return cases.Case(
        Path("inline.yaml"),
        "claim key",
        "decide-claim",
        {
            "claim": {"meta": {"name": "c"}},
            "reservations": [
                {"consumer": {"resource": "pods", "name": "a", "uid": "a"}, "pod": pod("a", "node-1")},
                {"consumer": {"resource": "pods", "name": "b", "uid": "b"}, "pod": pod("b", "")},
            ],
        },
        expect,
    )


def test_the_claim_key_input_is_projected_to_pod_states():
    cases.check("resource-claim", ScheduledCachedPods(), case({"need-live-pods": ["a"]}))


def test_a_different_decision_fails_with_both_shown():
    with pytest.raises(AssertionError, match="decision differs"):
        cases.check("resource-claim", ScheduledCachedPods(), case({"need-live-pods": ["a", "b"]}))


def test_a_misspelt_expectation_is_named():
    with pytest.raises(cases.CaseError, match="unknown case `need-live-pod`"):
        cases.check("resource-claim", ScheduledCachedPods(), case({"need-live-pod": []}))
