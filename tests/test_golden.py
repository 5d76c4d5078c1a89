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


def _check(recorded, keep) -> None:
    new = json.loads(json.dumps(golden.record(keep)))
    old = {trace: {k: v for k, v in entry.items() if k in new[trace]}
           for trace, entry in recorded.items()}
    bad = golden.compare(old, new)
    assert not bad, "\n".join(bad[:40]) + f"\n({len(bad)} mismatches)"


def _core(key: str) -> bool:
    """Every detector on the paper's table, every table under the paper's detector (each
    engine loop compiles once: the whole matrix is the slow test)."""
    _, det, table, *_ = key.split("|")
    return table == "freebsd4" or det == "freebsd4"


def test_replay_and_detect_outputs_are_unchanged(recorded):
    _check(recorded, _core)


@pytest.mark.slow
def test_every_combination_is_unchanged(recorded):
    _check(recorded, lambda key: True)
