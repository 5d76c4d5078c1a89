"""``linux-6`` against read-ahead windows observed on a live Linux 6.18.44 (ext4 with large
folios): the kernel's readahead tracepoints (sync_ra, async_ra, page_cache_ra_order) gave the
(trigger page, window start, size) of every read-ahead for these patterns, on a loop device
at read_ahead_kb 128 (max_sectors_kb 1280) and on a virtio disk at 8192 (max_sectors_kb 4096).
The page-by-page check of every pattern is ``seqheur kernel-check`` (tests/test_kernel_check.py
replays recorded observations; the ``kernel`` marker runs it against this machine's kernel)."""

from __future__ import annotations

import numpy as np
import pytest

from seqheur.replay import replay
from seqheur.streams import ReadStream

MiB = 1 << 20


def _windows(offsets, count, det="linux-6", size=64 * MiB):
    offs = np.asarray(offsets, np.int64)
    s = ReadStream.from_arrays(np.zeros(len(offs), np.int64), offs, np.full(len(offs), count))
    r = replay(s, det, "ideal", cache="4GiB", profile=None, file_sizes=np.array([size]),
               actions=True)
    a = r.actions
    return r, [(row["kind"], row["start"], row["count"]) for row in a.iter_rows(named=True)]


def test_sequential_4k_ramp_with_folio_trim_at_128k():
    r, w = _windows(np.arange(1024) * 4096, 4096)
    assert w[:8] == [("sync", 0, 4), ("async", 4, 8), ("async", 12, 4), ("async", 16, 8),
                     ("async", 24, 8), ("async", 32, 16), ("async", 48, 16),
                     ("async", 64, 32)]
    assert all(x[2] == 32 for x in w[8:])
    assert r["disk_bytes"] == 1056 * 4096  # 1024 reads bring in 1056 pages


def test_sequential_32k_at_128k():
    _, w = _windows(np.arange(64) * 32768, 32768)
    assert w[:5] == [("sync", 0, 16), ("async", 16, 32), ("async", 48, 32), ("async", 80, 16),
                     ("async", 96, 32)]


def test_one_mib_reads_raise_the_window_to_io_pages():
    _, w = _windows(np.arange(2) * MiB, MiB)
    assert w[:2] == [("sync", 0, 256), ("async", 256, 256)]


@pytest.mark.parametrize("count, sizes", [
    (4096, [4, 16, 60, 240, 448, 256, 512]),
    (32768, [32, 128, 256, 480, 896, 1280, 1024]),
    (MiB, [512, 1024, 2048]),
])
def test_virtio_disk_at_8192k(count, sizes):
    n = (sum(sizes) * 4096) // count + 1
    _, w = _windows(np.arange(n) * count, count, "linux-6:ra_kb=8192,io_kb=4096", 256 * MiB)
    assert [x[2] for x in w[:len(sizes)]] == sizes


def test_backward_and_random_reads_bring_in_only_their_pages():
    r, w = _windows((np.arange(64)[::-1] + 100) * 32768, 32768)
    assert {x[0] for x in w} == {"plain"} and r["prefetched"] == 0
    r, w = _windows(np.arange(64) * 4096, 4096, "linux-6:fadvise=random")
    assert {x[0] for x in w} == {"forced"} and r["prefetched"] == 0


def test_actions_explain_every_page_read():
    """With an ample cache, the pages a replay reads are exactly the actions' ranges (inside
    the file) less what was already cached."""
    rng = np.random.default_rng(7)
    offs = np.concatenate([np.arange(200) * 8192, rng.integers(0, 2000, 300) * 4096,
                           np.arange(1500, 1700) * 4096])
    r, _ = _windows(offs, 6144, size=8 * MiB)
    pages = set()
    for row in r.actions.iter_rows(named=True):
        pages.update(p for p in range(row["start"], row["start"] + row["count"]) if p < 2048)
    assert len(pages) * 4096 == r["disk_bytes"]


@pytest.mark.parametrize("cache", ["512KiB", "1MiB"])
def test_a_cache_smaller_than_the_window(cache):
    """1 MiB reads open windows of up to io_pages (320 pages): larger than the cache, which
    evicts pages of a window while it is read; every demand page is still accounted once."""
    offs = np.concatenate([np.arange(24) * MiB, (np.arange(24)[::-1] + 30) * MiB])
    s = ReadStream.from_arrays(np.zeros(len(offs), np.int64), offs, np.full(len(offs), MiB))
    r = replay(s, "linux-6", "ideal", cache=cache, profile=None,
               file_sizes=np.array([64 * MiB]), actions=True)
    assert r["hits"] + r["misses"] == r["demand_blocks"] == 48 * 256
