"""File sizes from the trace's reply attributes (``file_sizes="auto"``, the default): read-ahead
runs to the real end of a file, not to its last READ, and the summary says where the sizes
came from."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from seqheur.replay import replay
from seqheur.schema import build_request_table
from seqheur.streams import reads


def _table(with_sizes: bool):
    n = 16  # 16 READs of 32 KiB: the first 512 KiB of two 4 MiB files
    fh = [b"\x01" * 8] * n + [b"\x02" * 8] * n
    off = list(range(0, n * 32768, 32768)) * 2
    return build_request_table({
        "time": np.arange(2 * n, dtype=np.int64) * 1000, "op": ["read"] * (2 * n), "fh": fh,
        "offset": np.array(off, np.uint64), "count": np.full(2 * n, 32768, np.uint32),
        "file_size": np.full(2 * n, 4 << 20, np.uint64) if with_sizes else None,
        "source_index": np.arange(2 * n, dtype=np.uint64)})


def test_attribute_sizes_let_read_ahead_pass_the_last_read():
    t = _table(True)
    auto = replay(t, "linux-6", "ideal", profile=None)
    observed = replay(t, "linux-6", "ideal", profile=None, file_sizes="observed")
    assert auto["file_sizes"] == "attributes" and observed["file_sizes"] == "observed"
    # the last window reaches past the last READ only when the file is known to go on
    assert auto["prefetched"] > observed["prefetched"]
    assert auto["demand_blocks"] == observed["demand_blocks"]


def test_no_attributes_fall_back_to_observed_with_a_warning():
    t = _table(False)
    with pytest.warns(UserWarning, match="no reply attributes"):
        r = replay(t, "linux-6", "ideal", profile=None)
    assert r["file_sizes"] == "observed"


def test_a_built_stream_takes_its_sizes_from_sizes_from():
    t = _table(True)
    s = reads(t)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = replay(s, "linux-6", "ideal", profile=None, sizes_from=t)
    assert r["file_sizes"] == "attributes"
    assert replay(s, "linux-6", "ideal", profile=None)["file_sizes"] == "observed"
    assert replay(s, "linux-6", "ideal", profile=None,
                  file_sizes=np.array([4 << 20] * 2))["file_sizes"] == "given"
