"""Every case file in ../cases holds against the native logic, as the Rust
guest's ``tests/cases.rs`` does, before ``rekon test`` runs them against the component."""

from pathlib import Path

import pytest
from rekon_guest import cases

HERE = Path(__file__).parent
cases.use_bindings("ephemeral-volume", HERE)

import app  # noqa: E402  (needs the bindings on sys.path)

ALL = cases.collect(HERE.parent / "cases")


def test_there_are_enough_cases():
    assert len(ALL) >= 20


@pytest.mark.parametrize("case", ALL, ids=str)
def test_case_holds(case):
    cases.check("ephemeral-volume", app.VolumeDecider(), case)
