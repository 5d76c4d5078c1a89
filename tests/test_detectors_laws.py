"""Laws of detectors and tables (hypothesis), and the intuitive laws that do NOT hold, each
with its counterexample (see docs/heuristics.md "Laws")."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import seqheur
from seqheur.streams import ReadStream
from seqheur.tables import splitmix64

K8 = 8192
LAW_SETTINGS = settings(max_examples=60, deadline=None)


@st.composite
def streams(draw, min_count: int = 1, max_files: int = 6) -> ReadStream:
    """Small multi-file streams mixing sequential runs, small jumps and far jumps."""
    n = draw(st.integers(1, 120))
    files = draw(st.lists(st.integers(0, max_files - 1), min_size=n, max_size=n))
    moves = draw(st.lists(st.sampled_from(["seq", "seq", "seq", "near", "far", "zero", "back"]),
                          min_size=n, max_size=n))
    counts = draw(st.lists(st.sampled_from([x for x in (0, 512, K8, 32768) if x >= min_count]),
                           min_size=n, max_size=n))
    pos: dict[int, int] = {}
    offs = []
    for f, mv, c in zip(files, moves, counts):
        p = pos.get(f, 0)
        o = {"seq": p, "near": p + 3 * K8, "far": p + (1 << 24), "zero": 0,
             "back": max(0, p - 2 * K8)}[mv]
        offs.append(o)
        pos[f] = o + c
    return ReadStream.from_arrays(files, offs, counts)


TABLES = ["ideal", "nfsheur:64x4", "nfsheur:4x2", "nfsheur:2x1:hash=dense", "raparms:threads=1"]


@LAW_SETTINGS
@given(s=streams(min_count=1), table=st.sampled_from(TABLES))
def test_slowdown_never_below_freebsd4(s: ReadStream, table: str) -> None:
    """Holds on every table: the table's choices (probes, use counts, MRU order) do not depend
    on detector state, so both detectors see the same fresh slots."""
    a = seqheur.detect(s, "freebsd4", table)
    b = seqheur.detect(s, "slowdown", table)
    np.testing.assert_array_equal(a.slot_fresh, b.slot_fresh)
    assert (b.seqcount >= a.seqcount).all()


@LAW_SETTINGS
@given(s=streams(min_count=1), table=st.sampled_from(TABLES))
def test_freebsd_never_below_freebsd4(s: ReadStream, table: str) -> None:
    """The 2011 rule ramps by >= 1, keeps or halves where 4.x drops to 1/0."""
    a = seqheur.detect(s, "freebsd4", table)
    b = seqheur.detect(s, "freebsd", table)
    assert (b.seqcount >= a.seqcount).all()


def test_counterexample_slowdown_below_freebsd4_with_zero_length_read() -> None:
    """SlowDown moves nextoff on every READ (off + count), 4.x only when count > 0: a
    zero-length READ far away makes SlowDown lose the stream that 4.x still follows."""
    s = ReadStream.from_arrays([1, 1, 1], [0, 100_000, K8], [K8, 0, K8])
    a = seqheur.detect(s, "freebsd4", "ideal").seqcount.tolist()
    b = seqheur.detect(s, "slowdown", "ideal").seqcount.tolist()
    assert a == [5, 1, 2] and b == [5, 2, 1]


@LAW_SETTINGS
@given(s=streams())
def test_ideal_table_never_recycles(s: ReadStream) -> None:
    r = seqheur.detect(s, "freebsd4", "ideal")
    assert r.ejections == 0
    assert r.fresh == r.cold == len(np.unique(s.file))


@LAW_SETTINGS
@given(s=streams(max_files=6), det=st.sampled_from(["freebsd4", "slowdown", "freebsd", "cursor"]),
       size=st.integers(6, 40), probes=st.integers(1, 4))
def test_dense_hash_with_fewer_files_than_slots_is_ideal(s: ReadStream, det: str, size: int,
                                                         probes: int) -> None:
    """Holds: with hash=dense and at most SIZE files, file i starts at slot i, which no other
    file ever takes (an empty start slot wins the first comparison), so every lookup hits at
    the first probe and the table is exactly the ideal one."""
    a = seqheur.detect(s, det, "ideal")
    b = seqheur.detect(s, det, f"nfsheur:{size}x{probes}:hash=dense")
    np.testing.assert_array_equal(a.seqcount, b.seqcount)
    assert b.ejections == 0


def test_counterexample_fewer_files_than_slots_still_ejects() -> None:
    """Intuitive but false for hashed tables: "a table with more slots than active files never
    ejects". Five files whose hash lands on the same 64x4 start slot exceed the 4+1 candidates
    and evict each other although 59 slots are free (the effect Ellard & Seltzer measured)."""
    ids = np.arange(1, 20000, dtype=np.uint64)
    same = ids[(splitmix64(ids) % np.uint64(64)) == 0][:6]
    assert len(same) == 6
    n = 600
    f = np.tile(same, n // 6)
    off = np.repeat(np.arange(n // 6), 6) * K8
    s = ReadStream.from_arrays(f, off, K8)
    r = seqheur.detect(s, "freebsd4", "nfsheur:64x4")
    assert s.n_files < 64 and r.ejections == 595  # figures quoted in docs/heuristics.md
    assert float(seqheur.detect(s, "freebsd4", "ideal").seqcount.mean()) > 50
    assert float(r.seqcount.mean()) < 3  # every reader keeps losing its slot (2.03)


@LAW_SETTINGS
@given(readers=st.integers(1, 12), rounds=st.integers(1, 40), seed=st.integers(0, 10**6),
       det=st.sampled_from(["freebsd4", "slowdown", "freebsd", "cursor"]))
def test_ideal_sequential_readers_never_lose_seqcount(readers: int, rounds: int, seed: int,
                                                      det: str) -> None:
    """With the ideal table, a reader whose own READs are sequential never sees its seqcount
    fall, however it is interleaved with other readers."""
    rng = np.random.default_rng(seed)
    f = rng.permutation(np.repeat(np.arange(readers), rounds))
    off = np.zeros(len(f), np.int64)
    for r in range(readers):
        m = f == r
        off[m] = np.arange(int(m.sum())) * K8
    s = ReadStream.from_arrays(f, off, K8)
    sc = seqheur.detect(s, det, "ideal").seqcount.astype(int)
    for r in range(readers):
        assert (np.diff(sc[s.file == r]) >= 0).all()


def test_counterexample_hashed_table_sequential_reader_loses_seqcount() -> None:
    """The same law fails on nfsheur:64x4 with many readers: ejection resets seqcount."""
    rng = np.random.default_rng(3)
    readers, rounds = 64, 30
    f = rng.permutation(np.repeat(np.arange(readers), rounds))
    off = np.zeros(len(f), np.int64)
    for r in range(readers):
        off[f == r] = np.arange(rounds) * K8
    s = ReadStream.from_arrays(f, off, K8)
    res = seqheur.detect(s, "slowdown", "nfsheur:64x4")
    sc = res.seqcount.astype(int)
    falls = sum(int((np.diff(sc[s.file == r]) < 0).sum()) for r in range(readers))
    assert res.ejections == 273 and falls == 61  # quoted in docs/heuristics.md


@LAW_SETTINGS
@given(cursors=st.integers(1, 8), data=st.data())
def test_cursors_follow_s_stride_with_s_le_cursors(cursors: int, data) -> None:
    """Ellard & Seltzer §7: a stride reader over S <= cursors sub-streams (bases further apart
    than the window) reaches the sequential maximum on every sub-stream."""
    S = data.draw(st.integers(1, cursors))
    per = 140
    part = per * K8 + (1 << 20)
    offs = [k * part + i * K8 for i in range(per) for k in range(S)]
    s = ReadStream.from_arrays(np.zeros(len(offs), int), offs, K8)
    sc = seqheur.detect(s, f"cursor:cursors={cursors}", "ideal").seqcount
    assert (sc[-S:] == 127).all()
    if S >= 2:  # one descriptor cannot: 4.x and SlowDown stay low
        assert seqheur.detect(s, "freebsd4", "ideal").seqcount[-1] <= 1
        assert seqheur.detect(s, "slowdown", "ideal").seqcount[-1] <= 1


def test_counterexample_cursors_thrash_when_stride_exceeds_cursors() -> None:
    S, cursors, per = 5, 4, 60
    part = per * K8 + (1 << 20)
    offs = [k * part + i * K8 for i in range(per) for k in range(S)]
    s = ReadStream.from_arrays(np.zeros(len(offs), int), offs, K8)
    sc = seqheur.detect(s, f"cursor:cursors={cursors}", "ideal").seqcount
    # after the first READ (offset 0: 5), round-robin over 5 streams always recycles the
    # cursor needed next: every READ opens a fresh cursor (1 + 1)
    assert sc[0] == 5 and (sc[1:] == 2).all()


@LAW_SETTINGS
@given(s=streams(max_files=6), det=st.sampled_from(["freebsd4", "slowdown", "cursor", "zfetch"]),
       threads=st.integers(1, 64))
def test_raparms_dense_with_room_in_every_bucket_is_ideal(s: ReadStream, det: str,
                                                          threads: int) -> None:
    """Holds: with hash=dense, files i and i+16 share a bucket; 6 files never exceed the
    bucket's max(2, ...) entries, so nothing is recycled and results equal the ideal table."""
    a = seqheur.detect(s, det, "ideal")
    b = seqheur.detect(s, det, f"raparms:threads={threads}:hash=dense")
    np.testing.assert_array_equal(a.seqcount, b.seqcount)
    assert b.ejections == 0


def test_counterexample_raparms_three_files_in_one_bucket() -> None:
    """Two entries per bucket (threads <= 16): three files sharing a bucket, read in turn,
    always miss (MRU keeps the other two)."""
    files = [0, 16, 32] * 20
    offs = [i // 3 * K8 for i in range(60)]
    # dense index = order of first appearance: give the stream 33 files so 16 and 32 exist
    f = list(range(33)) + files
    o = [0] * 33 + offs
    s = ReadStream.from_arrays(f, o, K8)
    r = seqheur.detect(s, "freebsd4", "raparms:hash=dense")
    assert r.slot_fresh[33:].all() and r.ejections >= 60


def _cursor_reference(offsets, counts, cursors=4, window=65536):
    """The cursor rule (docs/heuristics.md) in plain Python (full scan, no shortcut)."""
    cur: list[list[int]] = []  # [nextoff, seq, last_use]
    out = []
    for tick, (off, cnt) in enumerate(zip(offsets, counts), 1):
        cands = [(abs(off - c[0]), -c[2], k) for k, c in enumerate(cur) if abs(off - c[0]) <= window]
        if cands:
            k = min(cands)[2]
        else:
            if len(cur) < cursors:
                cur.append([0, 0, 0])
                k = len(cur) - 1
            else:
                k = min(range(len(cur)), key=lambda j: cur[j][2])
            cur[k][0] = off
            cur[k][1] = 4 if off == 0 else 1
        c = cur[k]
        if (off == 0 and c[1] > 0) or off == c[0]:
            c[1] = min(c[1] + 1, 127)
        elif abs(off - c[0]) > window:
            c[1] //= 2
        c[0] = off + cnt
        c[2] = tick
        out.append(c[1])
    return out


@LAW_SETTINGS
@given(data=st.data(), cursors=st.integers(1, 5))
def test_cursor_kernel_matches_reference(data, cursors: int) -> None:
    n = data.draw(st.integers(1, 80))
    offs = data.draw(st.lists(st.sampled_from([0, K8, 2 * K8, 3 * K8, 9 * K8, 10 * K8, 1 << 20,
                                               (1 << 20) + K8, 1 << 30]), min_size=n, max_size=n))
    counts = data.draw(st.lists(st.sampled_from([K8, 0, 4096]), min_size=n, max_size=n))
    s = ReadStream.from_arrays(np.zeros(n, int), offs, counts)
    got = seqheur.detect(s, f"cursor:cursors={cursors}", "ideal").seqcount.tolist()
    assert got == _cursor_reference(offs, counts, cursors)
