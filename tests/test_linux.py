"""Linux on-demand read-ahead detectors (mm/readahead.c; docs/replay.md): window sizing, ramp, marker path, context
read-ahead and the 2.6.32 → 3.12 change."""

from __future__ import annotations

import numpy as np
import pytest

from seqheur.detect import detect
from seqheur.heuristics.linux import init_size, next_size
from seqheur.heuristics.registry import parse_detector
from seqheur.replay import replay
from seqheur.streams import ReadStream

PAGE = 4096


@pytest.mark.parametrize("req,want", [(1, 4), (2, 4), (3, 8), (4, 8), (5, 16), (8, 16), (9, 32),
                                      (100, 32)])
def test_init_window(req, want):
    assert init_size(req, 32) == want  # get_init_ra_size for max = 32


@pytest.mark.parametrize("cur,want", [(1, 4), (2, 4), (3, 6), (8, 16), (15, 30), (16, 32), (32, 32)])
def test_next_window(cur, want):
    assert next_size(cur, 32) == want


def test_registered_with_params():
    d = parse_detector("linux-3.12:ra_kb=256")
    assert d.params.ra_pages == 64 and d.max_seqcount == 64
    assert parse_detector("linux-2.6.32").max_seqcount == 32


@pytest.mark.parametrize("det", ["linux-2.6.32", "linux-3.12"])
def test_sequential_ramp_replay_equals_detect(det):
    """8 KiB sequential READs: init(2) = 4 pages, marker at page 2 → 8, then 16, then 32
    (get_init_ra_size, ondemand_readahead). A single sequential reader: the stand-in cache of ``detect`` is exact."""
    s = ReadStream.from_arrays(np.zeros(200, int), np.arange(200) * 8192, 8192)
    r = replay(s, det, "ideal", profile=None)
    seq = r.requests["seqcount"].to_list()
    assert seq[:8] == [4, 8, 16, 16, 16, 16, 32, 32]
    assert max(seq) == 32
    assert seq == detect(s, det, "ideal").seqcount.tolist()
    assert r["misses"] == 2  # the two pages of the first READ only
    assert r["prefetch_wasted"] == 0 and r["prefetched"] == r["prefetch_used"]


def _pages(pages_counts):
    off = [p * PAGE for p, _ in pages_counts]
    cnt = [n * PAGE for _, n in pages_counts]
    return ReadStream.from_arrays(np.zeros(len(off), int), off, cnt)


def test_context_readahead_any_history_vs_more_than_request():
    """READ page 100, page 500, then page 101: one cached history page before 101.
    2.6.32 starts context read-ahead (init(1+1) = 4, fully async, merged to 4 + 8 = 12 pages);
    3.12 needs history > req (1 > 1 is false): a plain one-page read (commit 2cad4018)."""
    s = _pages([(100, 1), (500, 1), (101, 1)])
    old = replay(s, "linux-2.6.32", "ideal", profile=None, file_sizes=None)
    new = replay(s, "linux-3.12", "ideal", profile=None, file_sizes=None)
    assert old.requests["prefetch_blocks"].to_list() == [0, 0, 11]
    assert new.requests["prefetch_blocks"].to_list() == [0, 0, 0]


def test_context_readahead_312_window():
    """Pages 100-101 cached by a 2-page random READ, page 500, then page 102: history 2 > 1.
    3.12: window min(2+1, 32) = 3 pages, async 1 → 2 pages ahead; 2.6.32: init(3) = 8, fully
    async, merged: 8 + next(8) = 24 pages → 23 ahead."""
    s = _pages([(100, 2), (500, 1), (102, 1)])
    new = replay(s, "linux-3.12", "ideal", profile=None, file_sizes=None)
    old = replay(s, "linux-2.6.32", "ideal", profile=None, file_sizes=None)
    assert new.requests["prefetch_blocks"].to_list() == [0, 0, 2]
    assert old.requests["prefetch_blocks"].to_list() == [0, 0, 23]


def test_random_reads_prefetch_nothing_in_312():
    rng = np.random.default_rng(7)
    pages = rng.choice(100_000, size=300, replace=False)
    s = ReadStream.from_arrays(np.zeros(300, int), pages * PAGE, PAGE)
    r = replay(s, "linux-3.12", "ideal", profile=None, file_sizes=None)
    assert r["prefetched"] == 0 and r["misses"] == 300


def test_interleaved_streams_on_one_file_use_the_marker_path():
    """Two sequential readers of one file, interleaved, one shared file_ra_state: the PG_readahead
    hit of the stream whose state was overwritten rebuilds its window from the page cache
    (nfsd keeps one per file), so both keep streaming: no misses after their first READs."""
    n = 400
    a = np.arange(n) * 8192
    b = (1 << 30) + np.arange(n) * 8192
    off = np.empty(2 * n, np.int64)
    off[0::2] = a
    off[1::2] = b
    s = ReadStream.from_arrays(np.zeros(2 * n, int), off, 8192)
    for det in ("linux-2.6.32", "linux-3.12"):
        r = replay(s, det, "ideal", profile=None, file_sizes=None)
        miss = r.requests["miss_blocks"].to_numpy()
        assert miss[10:].sum() == 0, det
        assert r["prefetch_wasted"] <= 2 * 64  # only the windows still ahead at the end


def test_raparms_table_recycles_linux_state():
    """With more concurrently read files than raparms entries (32), a file's file_ra_state is
    recycled between its READs (ejections, windows restart from 0), yet sequential readers lose
    nothing: the PG_readahead hit rebuilds the window from the page cache (ondemand_readahead marker
    branch, §4.8). With ideal tables nothing is ejected."""
    files = 80
    rounds = 40
    f = np.tile(np.arange(files), rounds)
    off = np.repeat(np.arange(rounds), files) * 8192
    s = ReadStream.from_arrays(f, off, 8192)
    rap = replay(s, "linux-3.12", "raparms", profile=None)
    ideal = replay(s, "linux-3.12", "ideal", profile=None)
    assert rap["table_ejections"] > 0
    assert ideal["table_ejections"] == 0 and ideal["lost_ejected"] == 0
    assert (rap.requests["seqcount"] == 0).sum() > (ideal.requests["seqcount"] == 0).sum()
    assert rap["misses"] == ideal["misses"] == files * 2


def test_splice_caller_is_the_nfsd_default_and_sees_a_one_page_skip_as_sequential():
    """nfsd's splice read records prev_pos as the page after the last page spliced, so a 4 KiB
    READ two pages after the previous one is a sequential miss (an initial window); through
    read(2) it is a random read of its own page."""
    import numpy as np

    from seqheur.replay import replay
    from seqheur.streams import ReadStream

    offs = (100 + 2 * np.arange(6)) * 4096
    s = ReadStream.from_arrays(np.zeros(len(offs), int), offs, 4096)

    def kinds(det):
        r = replay(s, det, "ideal", profile=None, file_sizes=np.array([64 << 20]),
                   actions=True, cache="1GiB")
        return [(k, c) for k, c in r.actions.select("kind", "count").rows()]

    assert kinds("linux-3.12") == kinds("linux-3.12:caller=splice")
    assert kinds("linux-3.12:caller=splice")[:2] == [("plain", 1), ("sync", 4)]
    assert kinds("linux-3.12:caller=read") == [("plain", 1)] * 6


def test_splice_reads_large_requests_in_pipe_chunks():
    """A 1 MiB READ is 16 splice calls of 16 pages: every call past the window's end runs the
    read-ahead again, so the stream still ramps to ra_pages-sized windows."""
    import numpy as np

    from seqheur.replay import replay
    from seqheur.streams import ReadStream

    s = ReadStream.from_arrays(np.zeros(8, int), np.arange(8) << 20, 1 << 20)
    r = replay(s, "linux-3.12", "ideal", profile=None, file_sizes=np.array([64 << 20]),
               actions=True, cache="1GiB")
    assert r["demand_blocks"] == 8 * 256
    assert r.actions["count"].max() <= 2 * 32


def _eof_actions(det, offs, cnts, size):
    import numpy as np

    from seqheur.replay import replay
    from seqheur.streams import ReadStream

    s = ReadStream.from_arrays(np.zeros(len(offs), int), np.asarray(offs), np.asarray(cnts))
    r = replay(s, det, "ideal", profile=None, file_sizes=np.array([size]), actions=True,
               cache="1GiB")
    return r, r.actions


def test_read_ahead_is_sized_from_the_count_asked_not_the_eof_clipped_one():
    """do_generic_file_read and the splice read take req from the requested count: a 256 KiB
    READ of the last page of a file asks for more than ra_pages, so it opens an initial
    window (init(64 pages) = 32, all of it async, so merged with the next: 64); with the
    EOF-clipped count (1 page) it would be a small random read of its own page."""
    size = 1 << 20
    for caller in ("read", "splice"):
        _, a = _eof_actions(f"linux-3.12:caller={caller}", [size - 4096], [262144], size)
        first = a.row(0, named=True)
        assert (first["kind"], first["start"], first["ra_size"]) == ("sync", 255, 64), caller


def test_a_read_past_eof_runs_read_ahead_on_the_read_path_only():
    """read(2) at EOF: the sync read-ahead runs (the window restarts at the EOF page, nothing
    read past it) and the page is instantiated; nfsd's splice path returns first."""
    size = 256 * 1024
    offs = [size - 8192, size]
    r, a = _eof_actions("linux-3.12:caller=read", offs, [8192, 4096], size)
    past = a.filter(a["request"] == 1).rows(named=True)
    assert [(x["kind"], x["start"]) for x in past] == [("sync", 64), ("page", 64)]
    assert r["disk_bytes"] <= size  # no disk read past EOF
    _, b = _eof_actions("linux-3.12:caller=splice", offs, [8192, 4096], size)
    assert b.filter(b["request"] == 1).height == 0
