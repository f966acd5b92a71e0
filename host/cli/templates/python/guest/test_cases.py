"""Every case file in ../cases holds against the decision in app.py, natively,
before `rekon test` runs them against the component."""

from pathlib import Path

from rekon_guest import cases

test_there_are_enough_cases, test_case_holds = cases.world_tests("{{world}}", Path(__file__).parent)
