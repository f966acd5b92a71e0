"""Case files (the ``rekon test`` format) against a guest, natively, under pytest.

Case inputs are the host's model in its serde form (kebab-case fields,
``{case: payload}`` or ``case`` for variants); they are read into the typed
componentize-py bindings of the world, projected the way the host projects them
(pvc-protection: slim pods of the PVC's namespace; claim key: a ``pod-state`` per
pod), handed to the guest, and its result compared with ``expect`` read the same
way. A guest's test module is two lines (see :func:`world_tests`)::

    from rekon_guest import cases
    test_there_are_enough_cases, test_case_holds = cases.world_tests("pvc-protection", Path(__file__).parent, 24)
"""

from __future__ import annotations

import dataclasses
import importlib
import re
import sys
import typing
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Union

import yaml

from . import bindings


class CaseError(Exception):
    """A case file or value that does not fit; the message says where."""


@dataclass(frozen=True)
class Case:
    file: Path
    name: str
    decision: str
    input: Any
    expect: Any

    def __str__(self) -> str:
        return f"{self.file.name}: {self.name}"


def use_bindings(world: str, guest_dir: Path) -> Path:
    """Generates the world's bindings under ``guest_dir/.bindings`` and puts them on ``sys.path``."""
    return bindings.load(world, bindings.wit_dir(guest_dir), guest_dir / ".bindings" / world)


def collect(*paths: Path) -> list[Case]:
    """Every case of every ``*.yaml``/``*.yml`` under ``paths``, files sorted; names must be unique."""
    files: list[Path] = []
    for path in paths:
        files += sorted(p for p in Path(path).rglob("*") if p.suffix in (".yaml", ".yml")) if Path(path).is_dir() else [Path(path)]
    if not files:
        raise CaseError(f"no case files (*.yaml, *.yml) in {', '.join(map(str, paths))}")
    found: list[Case] = []
    seen: set[str] = set()
    for file in files:
        doc = yaml.safe_load(file.read_text())
        if not isinstance(doc, dict) or set(doc) != {"cases"} or not isinstance(doc["cases"], list):
            raise CaseError(f"{file}: expected a map with only a `cases` list")
        for i, raw in enumerate(doc["cases"]):
            if not isinstance(raw, dict) or not {"name", "decision"} <= set(raw) <= {"name", "decision", "input", "expect"}:
                raise CaseError(f"{file}: case {i}: expected name, decision, input, expect")
            if raw["name"] in seen:
                raise CaseError(f"{file}: duplicate case name {raw['name']!r}")
            seen.add(raw["name"])
            found.append(Case(file, raw["name"], raw["decision"], raw.get("input"), raw.get("expect")))
    return found


# ---- reading values into the bindings' types ----

def _kebab(camel: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", camel).lower()


def _is_variant_case(cls: type) -> bool:
    return dataclasses.is_dataclass(cls) and "_" in cls.__name__


def _case_name(cls: type) -> str:
    return _kebab(cls.__name__.split("_", 1)[1])


def _default(tp: Any, path: str) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is str:
        return ""
    if tp is bool:
        return False
    if tp is int:
        return 0
    if origin is list:
        return []
    if origin is tuple:
        return tuple(_default(a, path) for a in args)
    if origin is Union and type(None) in args:
        return None
    if isinstance(tp, type) and issubclass(tp, Enum):
        return next(iter(tp))
    if dataclasses.is_dataclass(tp) and not _is_variant_case(tp):
        return decode(tp, {}, path)
    raise CaseError(f"{path or '(top)'}: missing value (no default)")


def decode(tp: Any, value: Any, path: str = "") -> Any:
    """Reads ``value`` (serde form) as the bindings' type ``tp``."""
    at = path or "(top)"
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp in (str, bool, int):
        if type(value) is not tp:
            raise CaseError(f"{at}: expected {tp.__name__}, got {value!r}")
        return value
    if origin is list:
        if not isinstance(value, list):
            raise CaseError(f"{at}: expected a list, got {value!r}")
        return [decode(args[0], v, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is tuple:
        if not isinstance(value, list) or len(value) != len(args):
            raise CaseError(f"{at}: expected a list of {len(args)}, got {value!r}")
        return tuple(decode(a, v, f"{path}[{i}]") for i, (a, v) in enumerate(zip(args, value)))
    if origin is Union and type(None) in args:
        inner = next(a for a in args if a is not type(None))
        return None if value is None else decode(inner, value, path)
    if origin is Union:
        return _decode_variant(args, value, path)
    if isinstance(tp, type) and issubclass(tp, Enum):
        members = {_kebab(m.name.title().replace("_", "")): m for m in tp}
        if value not in members:
            raise CaseError(f"{at}: expected one of {', '.join(members)}, got {value!r}")
        return members[value]
    if dataclasses.is_dataclass(tp) and _is_variant_case(tp):
        return _decode_variant((tp,), value, path)
    if dataclasses.is_dataclass(tp):
        return _decode_record(tp, value, path)
    raise CaseError(f"{at}: unsupported type {tp!r}")


def _decode_record(tp: Any, value: Any, path: str) -> Any:
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise CaseError(f"{path or '(top)'}: expected a {tp.__name__} (a map), got {value!r}")
    hints = typing.get_type_hints(tp)
    names = {f.name.replace("_", "-"): f.name for f in dataclasses.fields(tp)}
    unknown = set(value) - set(names)
    if unknown:
        raise CaseError(f"{path or '(top)'}: unknown field `{sorted(unknown)[0]}` of {tp.__name__} (fields: {', '.join(names)})")
    kwargs = {}
    for kebab, field in names.items():
        at = f"{path}.{kebab}" if path else kebab
        kwargs[field] = decode(hints[field], value[kebab], at) if kebab in value else _default(hints[field], at)
    return tp(**kwargs)


def _decode_variant(cases: tuple[Any, ...], value: Any, path: str) -> Any:
    by_name = {_case_name(c): c for c in cases}
    if isinstance(value, str):
        tag, payload, unit = value, None, True
    elif isinstance(value, dict) and len(value) == 1:
        (tag, payload), unit = next(iter(value.items())), False
    else:
        raise CaseError(f"{path or '(top)'}: expected one of {', '.join(by_name)}, got {value!r}")
    if tag not in by_name:
        raise CaseError(f"{path or '(top)'}: unknown case `{tag}` (one of {', '.join(by_name)})")
    cls = by_name[tag]
    fields = dataclasses.fields(cls)
    if not fields:
        return cls()
    if unit:
        raise CaseError(f"{path or '(top)'}: `{tag}` needs a value")
    return cls(value=decode(typing.get_type_hints(cls)["value"], payload, f"{path}.{tag}"))


def encode(value: Any) -> Any:
    """A bindings value back in the serde form, for messages."""
    if isinstance(value, Enum):
        return _kebab(value.name.title().replace("_", ""))
    if dataclasses.is_dataclass(value) and _is_variant_case(type(value)):
        name = _case_name(type(value))
        return {name: encode(value.value)} if dataclasses.fields(value) else name
    if dataclasses.is_dataclass(value):
        return {f.name.replace("_", "-"): encode(getattr(value, f.name)) for f in dataclasses.fields(value) if getattr(value, f.name) is not None}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    return value


# ---- projections: the case-file model to each 0.2.0 decision's input ----

def _model_types() -> Any:
    return importlib.import_module("wit_world.imports.types")


def _project_pvc(raw: Any, input_type: Any) -> Any:
    """The model's pvc input (whole pods, optional live list) as ``pvc-decider``'s input."""
    types, pvc = _model_types(), importlib.import_module("wit_world.exports.pvc_decider")
    raw = raw or {}
    unknown = set(raw) - {"pvc", "cached-pods", "live-pods"}
    if unknown:
        raise CaseError(f"input: unknown field `{sorted(unknown)[0]}` of pvc-input")
    meta = decode(types.ObjectMeta, (raw.get("pvc") or {}).get("meta"), "input.pvc.meta")

    def project(pods: list[Any]) -> list[Any]:
        return [
            pvc.Pod(
                name=pod.meta.name,
                uid=pod.meta.uid,
                scheduled=pod.node_name != "",
                shut_down=pod.meta.deletion_timestamp is not None and pod.meta.deletion_grace_period_seconds == 0,
                volumes=[
                    pvc.Volume_Claim(v.source.value) if isinstance(v.source, types.VolumeSource_PersistentVolumeClaim) else pvc.Volume_Ephemeral(v.name)
                    for v in pod.volumes
                ],
            )
            for pod in pods
            if pod.meta.namespace == meta.namespace
        ]

    cached = decode(list[types.Pod], raw.get("cached-pods", []), "input.cached-pods")
    live = decode(typing.Optional[list[types.Pod]], raw.get("live-pods"), "input.live-pods")
    controller = next((o.uid for o in meta.owner_references if o.controller), None)
    return input_type(
        pvc=pvc.Pvc(
            name=meta.name, uid=meta.uid, resource_version=meta.resource_version,
            deleting=meta.deletion_timestamp is not None, finalizers=meta.finalizers, controller_uid=controller,
        ),
        cached_pods=project(cached),
        live_listed=live is not None,
        live_pods=project(live or []),
    )


def _project_claim(raw: Any, input_type: Any) -> Any:
    """The model's claim-key input (whole pods) as ``claim-decider``'s, a ``pod-state`` per pod."""
    claim = importlib.import_module("wit_world.exports.claim_decider")
    types = _model_types()

    def state(pod: Any) -> Any:
        return claim.PodState(uid=pod.meta.uid, phase=pod.phase, deleting=pod.meta.deletion_timestamp is not None, scheduled=pod.node_name != "")

    def project(value: Any, path: str) -> Any:
        if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in ("cached", "live"):
            (tag, pod), = value.items()
            case = claim.PodLookup_Cached if tag == "cached" else claim.PodLookup_Live
            return case(state(decode(types.Pod, pod, f"{path}.{tag}")))
        return decode(claim.PodLookup, value, path)

    raw = dict(raw or {})
    owner = raw.pop("owner-pod", None)
    reservations = raw.pop("reservations", [])
    projected = decode(input_type, raw, "input")
    projected.owner_pod = None if owner is None else state(decode(types.Pod, owner, "input.owner-pod"))
    projected.reservations = [
        claim.Reservation(
            consumer=decode(types.ConsumerReference, r.get("consumer"), f"input.reservations[{i}].consumer"),
            deleted=decode(bool, r.get("deleted", False), f"input.reservations[{i}].deleted"),
            pod=project(r.get("pod"), f"input.reservations[{i}].pod"),
        )
        for i, r in enumerate(reservations)
    ]
    return projected


def _as_is(raw: Any, input_type: Any) -> Any:
    return decode(input_type, raw, "input")


@dataclass(frozen=True)
class _Decision:
    method: str
    module: str
    input: str
    result: str
    project: Callable[[Any, Any], Any]


#: Per world: the exported interface's class name and the decisions case files name.
WORLDS: dict[str, tuple[str, dict[str, _Decision]]] = {
    "pvc-protection": ("PvcDecider", {
        "decide": _Decision("decide", "wit_world.exports.pvc_decider", "PvcInput", "PvcDecision", _project_pvc),
    }),
    "resource-claim": ("ClaimDecider", {
        "decide-pod": _Decision("decide_pod", "wit_world.exports.claim_decider", "PodInput", "PodDecision", _as_is),
        "decide-claim": _Decision("decide_claim", "wit_world.exports.claim_decider", "ClaimInput", "ClaimDecision", _project_claim),
    }),
    "ephemeral-volume": ("VolumeDecider", {
        "decide": _Decision("decide", "wit_world.exports.volume_decider", "VolumeInput", "VolumeDecision", _as_is),
    }),
}


def check(world: str, guest: Any, case: Case) -> None:
    """Runs one case against ``guest`` (an instance of the world's exported class);
    raises ``AssertionError`` explaining a mismatch, ``CaseError`` for a bad case."""
    if world not in WORLDS:
        raise CaseError(f"unknown world `{world}` (one of {', '.join(WORLDS)})")
    _, decisions = WORLDS[world]
    if case.decision not in decisions:
        raise CaseError(f"{case}: unknown decision `{case.decision}`: a {world} guest exports {', '.join(decisions)}")
    decision = decisions[case.decision]
    module = importlib.import_module(decision.module)
    result_type = getattr(module, decision.result)
    try:
        projected = decision.project(case.input, getattr(module, decision.input))
    except CaseError as err:
        raise CaseError(f"{case}: input is not a valid `{case.decision}` input: {err}") from None
    try:
        expected = decode(result_type, case.expect, "expect")
    except CaseError as err:
        raise CaseError(f"{case}: expect is not a valid `{case.decision}` result: {err}") from None
    actual = getattr(guest, decision.method)(projected)
    assert actual == expected, f"{case}: decision differs\n  expected {encode(expected)}\n  actual   {encode(actual)}"


def world_tests(world: str, guest_dir: Path, minimum: int = 1) -> tuple[Callable[[], None], Callable[[Case], None]]:
    """The two pytest tests of a guest, for its test module to bind by name::

        test_there_are_enough_cases, test_case_holds = cases.world_tests("pvc-protection", Path(__file__).parent, 24)

    Generates the world's bindings, imports the guest's ``app`` module and runs
    every case of ``guest_dir/../cases`` against the world's exported class."""
    import pytest

    use_bindings(world, guest_dir)
    if str(guest_dir) not in sys.path:
        sys.path.insert(0, str(guest_dir))
    app = importlib.import_module("app")
    guest_class = getattr(app, WORLDS[world][0])
    found = collect(guest_dir.parent / "cases")

    def test_there_are_enough_cases() -> None:
        assert len(found) >= minimum, f"only {len(found)} cases"

    @pytest.mark.parametrize("case", found, ids=str)
    def test_case_holds(case: Case) -> None:
        check(world, guest_class(), case)

    return test_there_are_enough_cases, test_case_holds
