"""Every case file in ../cases holds against the native logic, as the Rust
guest's ``tests/cases.rs`` does, before ``rekon test`` runs them against the component."""

from pathlib import Path

from rekon_guest import cases

test_there_are_enough_cases, test_case_holds = cases.world_tests("pvc-protection", Path(__file__).parent, 24)
