"""Large arrays on small pages (seqheur._pages): what they are, and the huge-page advice they
lack, read from the kernel's own record of the process's mappings."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from seqheur import _pages

BIG = 64 << 20  # well past numpy's 4 MiB huge-page threshold


def _huge_page_advice(a: np.ndarray) -> bool:
    """Whether any mapping under ``a``'s bytes carries MADV_HUGEPAGE ("hg" in its VmFlags in
    /proc/self/smaps; numpy advises the huge-page-aligned middle of an array, so its first
    page may lie in a mapping of its own without the flag)."""
    lo_a = a.ctypes.data
    hi_a = lo_a + a.nbytes
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and ":" not in head:
            lo, hi = (int(x, 16) for x in head.split("-"))
            inside = lo < hi_a and lo_a < hi
        elif inside and line.startswith("VmFlags:") and "hg" in line.split()[1:]:
            return True
    return False


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint64, np.bool_, np.float64])
def test_empty_is_a_plain_writable_array_of_the_dtype(dtype):
    a = _pages.empty(1000, dtype)
    assert a.dtype == np.dtype(dtype) and a.shape == (1000,)
    assert a.flags.c_contiguous and a.flags.writeable
    a[:] = 1
    assert int(a.sum()) == 1000
    assert _pages.empty(0, dtype).size == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")
def test_large_arrays_carry_no_huge_page_advice_where_numpys_do():
    ours = _pages.empty(BIG // 8, np.int64)
    theirs = np.empty(BIG // 8, np.int64)
    if not _huge_page_advice(theirs):
        pytest.skip("numpy gives no huge-page advice here (NUMPY_MADVISE_HUGEPAGE=0, or a "
                    "kernel without transparent huge pages)")
    assert not _huge_page_advice(ours)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")
def test_read_stream_fills_small_page_arrays(tmp_path):
    """The stream read from Parquet is on ``_pages``' arrays (no huge-page advice) and equals
    the stream of the same table read whole."""
    from seqheur import workloads
    from seqheur.io import write_parquet
    from seqheur.streams import read_stream, reads

    table = workloads.paper(readers=4, total_mb=8000, request_kb=8, seed=3)  # ~1 M READs
    path = tmp_path / "t.parquet"
    write_parquet(table, path)
    stream = read_stream(path)
    whole = reads(table)
    assert stream.offset.nbytes > 4 << 20
    for name in ("time_ns", "file", "offset", "count"):
        np.testing.assert_array_equal(getattr(stream, name), getattr(whole, name))
        assert not _huge_page_advice(getattr(stream, name)), name
