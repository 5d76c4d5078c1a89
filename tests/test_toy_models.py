"""Adding a detector, a table model and a read-ahead policy is one definition and one
registration line each (tests/toy_models.py); the toy models replay through the API and the
CLI like the built-ins, and the conformance laws hold for them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

import seqheur
from seqheur.streams import ReadStream

TOY = Path(__file__).resolve().parent / "toy_models.py"


def _toys():
    from seqheur.heuristics.registry import load_plugins

    load_plugins([str(TOY)])


def _stream() -> ReadStream:
    # two files read sequentially, interleaved, 8 KiB READs
    n = 64
    file = np.tile([0, 1], n // 2)
    offset = np.repeat(np.arange(n // 2), 2) * 8192
    return ReadStream.from_arrays(file, offset, 8192)


def test_toy_models_replay_through_the_api() -> None:
    _toys()
    s = _stream()
    d = seqheur.detect(s, "toy-run:cap=5", "toy-modulo:2")
    # a fresh slot expects the READ it is reset for: the first READ is a run of 1
    assert d.seqcount.tolist()[:6] == [1, 1, 2, 2, 3, 3] and d.seqcount.max() == 5
    assert d.fresh == 2 and d.ejections == 0
    r = seqheur.replay(s, "toy-run", "toy-modulo:2", "toy-lookahead:ahead=4", profile=None)
    assert r["policy"] == "toy-lookahead" and r["detector"] == "toy-run"
    assert r["hits"] + r["misses"] == r["demand_blocks"] == 64
    assert r["prefetched"] > 0 and r["prefetch_used"] > 0
    # reading ahead removes misses the same replay without read-ahead has
    plain = seqheur.replay(s, "toy-run", "toy-modulo:2", "none", profile=None)
    assert r["misses"] < plain["misses"] == 64
    # a one-slot table ejects the other file on every READ: the run never grows
    one = seqheur.detect(s, "toy-run", "toy-modulo:1")
    assert one.seqcount.max() == 1 and one.ejections == 63


def test_toy_models_replay_through_the_cli(tmp_path: Path) -> None:
    from seqheur.io import write_parquet

    _toys()
    trace = tmp_path / "t.parquet"
    s = _stream()
    table = seqheur.workloads.paper(2, 1, seed=1)
    write_parquet(table, trace)
    out = subprocess.run(
        [sys.executable, "-m", "seqheur", "replay", str(trace), "--plugin", str(TOY),
         "--detector", "toy-run:cap=8", "--table", "toy-modulo:size=2",
         "--policy", "toy-lookahead:ahead=2,min_seq=1", "--profile", "none", "--json"],
        capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    row = json.loads(out.stdout)
    api = seqheur.replay(trace, "toy-run:cap=8", "toy-modulo:2", "toy-lookahead:ahead=2:min_seq=1",
                         profile=None)
    assert row["misses"] == api["misses"] and row["prefetched"] == api["prefetched"] > 0
    assert row["policy"] == "toy-lookahead:ahead=2:min_seq=1"
    assert len(s) == 64
