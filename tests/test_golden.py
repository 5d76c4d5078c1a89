"""Bit-exact regression: every detector x table x policy combination on the bundled traces,
the lab captures and seeded random traces gives the recorded outputs (tests/golden/)."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("golden_record", HERE / "golden" / "record.py")
golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden)


@pytest.fixture(scope="module")
def recorded():
    return json.loads(gzip.decompress(golden.OUT.read_bytes()))


def test_golden_file_covers_every_trace_and_combination(recorded):
    names = set(golden.streams())
    assert set(recorded) == names
    n_combos = len(list(golden.combos()))
    for entry in recorded.values():
        assert sum(k.startswith("replay|") for k in entry) == n_combos


def test_replay_and_detect_outputs_are_unchanged(recorded):
    bad = golden.compare(recorded, json.loads(json.dumps(golden.record())))
    assert not bad, "\n".join(bad[:40]) + f"\n({len(bad)} mismatches)"
