"""The replay's typed state: records and structured arrays read by field name, the counters
named as the summary columns they feed."""

from __future__ import annotations

import numpy as np

import seqheur
from seqheur import engine as E
from seqheur import metrics as M
from seqheur import readahead as R
from seqheur.replay import Replayer


def test_loop_counters_are_summary_counters() -> None:
    assert M.COUNTER_DTYPE.names == M.LOOP_COUNTERS
    assert set(M.LOOP_COUNTERS) <= set(M.COUNTERS)
    assert all(M.COUNTER_DTYPE[name] == np.int64 for name in M.LOOP_COUNTERS)


def test_records_are_written_in_place_in_plain_python() -> None:
    # what the steps do under NUMBA_DISABLE_JIT: attribute writes land in the record
    ctr = R.new_record(M.COUNTER_DTYPE)
    w = E.World(*([None] * 5), ctr, None, None, None)
    w.ctr.hits += 2
    assert ctr.hits == 2 and ctr["hits"] == 2
    fs = R.new_file_state(3)
    fs[1].disrupt = R.CAUSE_COLD
    assert fs.next.tolist() == [-1, -1, -1] and fs.disrupt.tolist() == [0, R.CAUSE_COLD, 0]


def test_summary_reads_the_counters_by_name_and_the_op_buffer_grows() -> None:
    n = 64
    s = seqheur.ReadStream.from_arrays([0] * n, np.arange(n) * 8192, 8192)
    rp = Replayer(s.file_ids, detector="freebsd4", table="ideal", policy="fixed:2",
                  cache="1MiB", profile=None, file_sizes=np.array([n * 8192 + 65536]))
    rp.feed(s)
    ops = rp.world.ops
    assert ops.fill.capacity == ops.file.shape[0] and ops.fill.per_block > 0
    # one request larger than the op buffer holds: the buffer is replaced by a larger one
    blocks = int(ops.fill.capacity) // int(ops.fill.per_block) + 1
    rp.feed(seqheur.ReadStream.from_arrays([0], [0], blocks * 8192))
    assert rp.world.ops.fill.capacity > ops.fill.capacity
    row = rp.summary()
    for name in M.LOOP_COUNTERS:
        assert row[name] == int(rp.world.ctr[name]), name
    assert row["requests"] == n + 1
    assert sum(row[f"lost_{c}"] for c in M.CAUSES) == row["misses"]
    assert rp.world.policy.bsize == 8192 and rp.world.policy.n == 2
    assert rp.world.fs[0].next == n * 8192 + 65536  # clipped at end of file
