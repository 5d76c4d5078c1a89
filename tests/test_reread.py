"""Re-reads are their own category in stream statistics, never counted as reordering."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from seqheur.streams import ReadStream, stream_stats


def _stats(file, offset, count):
    return stream_stats(ReadStream.from_arrays(file, offset, count)).summary


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 16), min_size=1, max_size=60), st.integers(1, 3))
def test_a_file_read_again_from_the_start_is_all_rereads_and_no_reordering(sizes, passes):
    blocks = np.cumsum([0] + sizes[:-1]) * 4096
    counts = np.array(sizes) * 4096
    off = np.tile(blocks, passes)
    cnt = np.tile(counts, passes)
    s = _stats(np.zeros(len(off), int), off, cnt)
    assert s["reread"] == len(sizes) * (passes - 1)
    assert s["reordered"] == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 16), min_size=2, max_size=60), st.data())
def test_first_reads_of_new_bytes_are_never_rereads(sizes, data):
    # each READ asks for bytes no earlier READ asked for (any order, gaps allowed)
    starts = np.cumsum([0] + sizes[:-1]) * 4096
    order = data.draw(st.permutations(range(len(sizes))))
    off = starts[list(order)]
    cnt = (np.array(sizes) * 4096)[list(order)]
    s = _stats(np.zeros(len(off), int), off, cnt)
    assert s["reread"] == 0


def test_a_late_read_is_reordered_and_not_a_reread():
    s = _stats([0] * 4, [0, 16384, 8192, 24576], 8192)
    assert (s["reordered"], s["reread"]) == (1, 0)
