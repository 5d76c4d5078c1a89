"""Read-ahead policies: spec strings and hand-worked cluster_read traces (docs/replay.md)."""

from __future__ import annotations

import numpy as np
import pytest

from seqheur.errors import SpecError
from seqheur.readahead import FixedParams, Policy, parse_policy
from seqheur.replay import replay
from seqheur.streams import ReadStream


def _seq(n: int, size: int = 8192, file_bytes: int | None = None) -> ReadStream:
    return ReadStream.from_arrays(np.zeros(n, int), np.arange(n) * size, size)


def test_parse_policy_defaults_and_round_trip():
    p = parse_policy("freebsd4-cluster")
    assert (p.bsize, p.racluster, p.maxra) == (16384, 8, 32)
    p = parse_policy("freebsd-cluster")
    assert (p.bsize, p.racluster, p.maxra, p.read_min) == (32768, 4, 64, 1)
    assert parse_policy("fixed:8") == Policy("fixed", FixedParams(8, 8192))
    assert parse_policy("none").bsize == 8192
    assert parse_policy("linux").bsize == 4096
    for spec in ("freebsd4-cluster:bsize=8192", "freebsd-cluster:read_max=8:read_min=2",
                 "fixed:3:bsize=4096", "none:bsize=16384", "freebsd4-cluster:maxphys=65536"):
        assert parse_policy(parse_policy(spec).spec) == parse_policy(spec)
    assert parse_policy("freebsd-cluster:bsize=16KiB").bsize == 16384


@pytest.mark.parametrize("bad", ["", "cluster", "fixed", "fixed:x", "none:n=3",
                                 "freebsd-cluster:bsize=1000", "freebsd4-cluster:read_min=2",
                                 "fixed:2:bsize=0", "freebsd-cluster:read_max=0"])
def test_parse_policy_errors(bad):
    with pytest.raises(SpecError):
        parse_policy(bad)


def test_freebsd4_cluster_hand_trace():
    """freebsd4 + 4.x cluster_read, 8 KiB sequential READs on 16 KiB blocks (4.x vfs_cluster.c).

    READ 0: seqcount 5 (new slot at offset 0); block 0 misses → synchronous read with B_RAM,
    then one async cluster of min(racluster 8, max(5, 1)) = 5 blocks [1..5] (B_RAM on its
    first block, 1, and its last, 5: cluster_rbuild). READ 1 (block 0 again, B_RAM): scan
    finds 1..5 resident, hole at 6 = 0 + 6 → not below block + seqcount (6): nothing. READ 2
    (block 1, B_RAM), seqcount 7: hole at 6 < 1 + 7 → cluster of min(8, 7) = 7 blocks
    [6..12]. READs 3..9 (blocks 1..4): no mark. READ 10 reaches block 5 (B_RAM), seqcount 15:
    the scan finds 6..12, hole at 13 < 5 + 15 → cluster [13..20]; READ 12 (block 6, first of
    [6..12]) → cluster [21..28]."""
    r = replay(_seq(64), "freebsd4", "ideal", "freebsd4-cluster", profile=None)
    pf = r.requests["prefetch_blocks"].to_list()
    assert pf[:14] == [5, 0, 7, 0, 0, 0, 0, 0, 0, 0, 8, 0, 8, 0]
    assert r.requests["seqcount"].to_list()[:3] == [5, 6, 7]
    assert r["misses"] == 1 and r["lost_cold"] == 1


def test_freebsd4_cluster_marks_as_cluster_rbuild():
    """A read-ahead cluster marks its first block and the last block of the run it asked for;
    cut short by a resident block it keeps only the first mark (4.x vfs_cluster.c
    cluster_rbuild). READ 0 (block 3): sync block 3 (marked), async [4..11] marked 4 and 11.
    READ 1 (block 0): sync block 0, async run of 8 asked from block 1 stops at resident
    block 3: [1..2], marked 1 only (the action's ``mark`` is the last block marked)."""
    s = ReadStream.from_arrays(np.zeros(2, int), np.array([3 * 16384, 0]), 8192)
    r = replay(s, "always", "ideal", "freebsd4-cluster", profile=None, actions=True,
               file_sizes=None)
    rows = r.actions.select("request", "kind", "start", "count", "mark").rows()
    assert rows == [(0, "cluster-sync", 3, 1, 3), (0, "cluster-async", 4, 8, 11),
                    (1, "cluster-sync", 0, 1, 0), (1, "cluster-async", 1, 2, 1)]


def test_freebsd_cluster_hand_trace():
    """always (seqcount 127) + current cluster_read, 32 KiB blocks (current vfs_cluster.c): the first READ
    reads block 0 and clusters of 4 up to block 64 (maxra = min(127, 64)); READ 1 (block 0,
    B_RAM) finds all 63 successors resident and only re-marks; block 3 (B_RAM every 4th) then
    extends the read-ahead by one cluster."""
    r = replay(_seq(512), "always", "ideal", "freebsd-cluster", profile=None)
    pf = r.requests["prefetch_blocks"].to_list()
    assert pf[0] == 64
    assert pf[1:12] == [0] * 11
    assert pf[12] == 4  # offset 96 KiB = block 3
    assert r["misses"] == 1


def test_freebsd_cluster_seqcount_one_reads_nothing_ahead():
    # seqcount 0 or 1: maxra <= 1, the read-ahead loop never runs (current vfs_cluster.c)
    r = replay(_seq(64), "always:seqcount=1", "ideal", "freebsd-cluster", profile=None)
    assert r["prefetched"] == 0


def test_fixed_reads_n_blocks_after_the_request():
    r = replay(_seq(32), "always", "ideal", "fixed:4", profile=None)
    pf = r.requests["prefetch_blocks"].to_list()
    assert pf[:4] == [4, 1, 1, 1]
    assert pf[-4:] == [0, 0, 0, 0]  # clipped at the (observed) end of file
    assert r["misses"] == 1


def test_none_reads_nothing_ahead():
    r = replay(_seq(32), "always", "ideal", "none", profile=None)
    assert r["prefetched"] == 0 and r["misses"] == 32


def test_eof_clipping_and_unclipped():
    clipped = replay(_seq(16), "always", "ideal", "fixed:8", profile=None)
    unclipped = replay(_seq(16), "always", "ideal", "fixed:8", profile=None, file_sizes=None)
    assert clipped["prefetch_wasted"] == 0
    assert unclipped["prefetch_wasted"] == 8  # the 8 blocks past the last READ
    assert unclipped["prefetch_unused_at_end"] == 8


def test_policy_must_match_detector_family():
    with pytest.raises(SpecError):
        replay(_seq(4), "linux-3.12", "ideal", "freebsd-cluster", profile=None)
    with pytest.raises(SpecError):
        replay(_seq(4), "freebsd4", "ideal", "linux", profile=None)
