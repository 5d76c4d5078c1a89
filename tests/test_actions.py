"""Read-ahead actions (``replay(..., actions=True)``), for every registered detector and
policy: with a cache large enough that nothing is evicted, the blocks a replay reads are
exactly the blocks its actions asked for plus the demand blocks, inside the file."""

from __future__ import annotations

import numpy as np
import pytest

from seqheur.heuristics.registry import DETECTORS
from seqheur.readahead import ACTION_KINDS
from seqheur.replay import replay
from seqheur.streams import ReadStream

SIZE = 4 << 20  # a multiple of every block size: no partial last block


def _stream() -> ReadStream:
    rng = np.random.default_rng(3)
    seq = np.arange(120) * 8192
    jumps = rng.integers(0, SIZE // 4096, 80) * 4096
    back = (np.arange(40)[::-1] + 300) * 8192
    offs = np.concatenate([seq, jumps, back, seq + (1 << 21)])
    files = np.concatenate([np.zeros(200, int), np.ones(40, int), np.zeros(120, int)])
    return ReadStream.from_arrays(files, offs, 8192)


# the built-in detectors: another module's plug-in (the conformance suite registers one at
# import and removes it after its tests) must not leak in when both modules are collected
CASES = [(d, "auto") for d in DETECTORS.names() if DETECTORS.get(d).builtin] + [
    ("always", "fixed:4"), ("freebsd4", "none")]


@pytest.mark.parametrize("det, pol", CASES)
def test_actions_account_for_every_block_read(det, pol):
    s = _stream()
    r = replay(s, det, "ideal", pol, cache="1GiB", profile=None,
               file_sizes=np.array([SIZE, SIZE]), actions=True)
    bsize = r["block_size"]
    nblk = SIZE // bsize
    a = r.actions
    assert set(a["kind"].unique().to_list()) <= set(ACTION_KINDS)
    assert (a["request"].to_numpy() < len(s)).all()
    wanted = [set(), set()]
    for row in a.iter_rows(named=True):
        wanted[row["file"]].update(range(row["start"], min(row["start"] + row["count"], nblk)))
    for f, off, cnt in zip(s.file, s.offset, s.count):
        wanted[f].update(range(off // bsize, (off + cnt - 1) // bsize + 1))
    assert r["disk_bytes"] == sum(len(w) for w in wanted) * bsize
    if pol == "none":
        assert a.height == 0


def test_actions_are_off_by_default():
    r = replay(_stream(), "linux-6", "ideal", profile=None, file_sizes=np.array([SIZE, SIZE]))
    assert r.actions is None
