"""Buffer-cache model: LRU exactness, prefetch marks, ghosts, hash-table integrity, and the
libcachesim oracle (read-ahead off ⇒ the same misses as an LRU simulator)."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from seqheur import cache as C
from seqheur.errors import SeqheurError
from seqheur.replay import replay
from seqheur.streams import ReadStream


def _reference_lru(files, blocks, cap):
    od: OrderedDict[tuple[int, int], None] = OrderedDict()
    misses = 0
    for f, b in zip(files.tolist(), blocks.tolist()):
        k = (f, b)
        if k in od:
            od.move_to_end(k)
        else:
            misses += 1
            od[k] = None
            if len(od) > cap:
                od.popitem(last=False)
    return misses, [(f << C.KEY_SHIFT) | b for f, b in reversed(od.keys())]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 6), st.integers(1, 80), st.sampled_from([1, 3, 16, 1 << 30]),
       st.integers(0, 2**32 - 1))
def test_lru_equals_reference(cap, nfiles, nblocks, stride, seed):
    """Exact LRU whatever the spacing of blocks: neighbours sharing chunks of the block table
    (stride 1, 3), one block a chunk (16), and blocks far apart (2**30)."""
    rng = np.random.default_rng(seed)
    n = 600
    files = rng.integers(0, nfiles, n).astype(np.int64)
    blocks = rng.integers(0, nblocks, n).astype(np.int64) * stride
    c = C.new_cache(cap * 4096, 4096)
    got = C.lru_misses(files, blocks, c)
    want, order = _reference_lru(files, blocks, cap)
    assert got == want
    assert C.resident_keys(c) == order
    _check_integrity(c)


def _check_integrity(c: C.CacheState) -> None:
    """Every resident and ghost key is found through the block table at its own entry, the
    lists have the sizes meta claims, no other slot is set, every chunk with a set slot
    is hashed, every other chunk is empty and on the free list."""
    meta = c.meta
    seen = 0
    for head, flag_ghost, size in ((C.M_RHEAD, False, C.M_NRES), (C.M_GHEAD, True, C.M_NGHOST)):
        e = int(meta[head])
        k = 0
        while e >= 0:
            assert bool(C.flags(c, e) & C.F_GHOST) == flag_ghost
            assert C.find(c, int(C.entry_key(c, e))) == e
            k += 1
            e = int(C.next_entry(c, e))
        assert k == meta[size]
        seen += k
    assert int(np.count_nonzero(c.slot)) == seen
    hashed = c.htab[1::2][c.htab[0::2] != 0]
    free = []
    k = int(meta[C.M_CFREE])
    while k >= 0:
        free.append(k)
        k = int(c.cnext[k])
    chunks = c.slot.reshape(-1, C.CHUNK)
    assert sorted(hashed.tolist() + free) == list(range(len(chunks)))  # each chunk once
    assert chunks[hashed].any(axis=1).all() and not chunks[free].any()
    assert meta[C.M_NRES] <= meta[C.M_CAP] and meta[C.M_NGHOST] <= meta[C.M_GCAP]


@njit(cache=True)
def _drive(c, ops, keys, stamps):
    """Random mix of demand touches, demand inserts and prefetch inserts."""
    used = 0
    prefetched = 0
    for i in range(len(ops)):
        k = keys[i]
        e = C.lookup(c, k)
        if e >= 0:
            if C.use(c, e):
                used += 1
            C.touch(c, e)
        elif ops[i] == 0:
            C.insert(c, k, 0, stamps[i])
        else:
            C.insert(c, k, C.F_PF, stamps[i])
            prefetched += 1
    return used, prefetched


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 30), st.integers(0, 2**32 - 1))
def test_prefetch_accounting_and_ghosts(cap, seed):
    rng = np.random.default_rng(seed)
    n = 2000
    ops = rng.integers(0, 2, n).astype(np.int64)
    keys = rng.integers(0, 3 * cap + 5, n).astype(np.int64)
    c = C.new_cache(cap * 512, 512)
    used, prefetched = _drive(c, ops, keys, np.arange(n, dtype=np.int64))
    pf_resident = sum(1 for k in C.resident_keys(c) if C.flags(c, C.find(c, k)) & C.F_PF)
    assert pf_resident == c.meta[C.M_PF_RESIDENT]
    # every prefetched block is used, evicted unused, or still resident unused
    assert prefetched == used + c.meta[C.M_EVICT_UNUSED] + pf_resident
    assert c.meta[C.M_EVICT_UNUSED] >= c.meta[C.M_NGHOST]
    _check_integrity(c)


def test_ghost_is_remembered_and_dropped():
    c = C.new_cache(2 * 4096, 4096)
    C.insert(c, C.make_key(0, 1), C.F_PF, 0)
    C.insert(c, C.make_key(0, 2), 0, 1)
    C.insert(c, C.make_key(0, 3), 0, 2)  # evicts block 1 unused -> ghost
    assert c.meta[C.M_EVICT_UNUSED] == 1 and c.meta[C.M_NGHOST] == 1
    g = C.find(c, C.make_key(0, 1))
    assert g >= 0 and C.flags(c, g) & C.F_GHOST and C.lookup(c, C.make_key(0, 1)) == -1
    C.insert(c, C.make_key(0, 1), 0, 3)  # re-read: the ghost goes, the block is resident
    assert c.meta[C.M_NGHOST] == 0 and C.lookup(c, C.make_key(0, 1)) >= 0
    _check_integrity(c)


def test_ghost_list_is_bounded():
    c = C.new_cache(3 * 4096, 4096)
    for b in range(50):
        C.insert(c, C.make_key(1, b), C.F_PF, b)
    assert c.meta[C.M_NGHOST] == c.meta[C.M_GCAP] == 3
    assert c.meta[C.M_EVICT_UNUSED] == 47
    _check_integrity(c)


def test_parse_size_and_errors():
    assert C.parse_size("256MiB") == 256 << 20
    assert C.parse_size("64k") == 65536
    assert C.parse_size("1G") == 1 << 30
    assert C.parse_size(4096) == 4096
    assert C.parse_size("1.5KiB") == 1536
    with pytest.raises(SeqheurError):
        C.parse_size("12 parsecs")
    with pytest.raises(SeqheurError):
        C.new_cache(100, 4096)


# --------------------------------------------------------------------------------------------
# oracle: read-ahead off ⇒ LRU misses equal libcachesim's LRU on the same block trace


def _block_trace(stream: ReadStream, bsize: int) -> tuple[np.ndarray, np.ndarray]:
    files, blocks = [], []
    for f, off, cnt in zip(stream.file.tolist(), stream.offset.tolist(), stream.count.tolist()):
        if cnt <= 0:
            continue
        for b in range(off // bsize, (off + cnt - 1) // bsize + 1):
            files.append(f)
            blocks.append(b)
    return np.array(files, np.int64), np.array(blocks, np.int64)


def libcachesim_lru_misses(files: np.ndarray, blocks: np.ndarray, bsize: int, cap_bytes: int,
                           path) -> int:
    lcs = pytest.importorskip("libcachesim", reason="libcachesim (PyPI) is not installed")
    dt = np.dtype([("t", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])
    rec = np.zeros(len(files), dt)  # oracleGeneral binary records
    rec["t"] = np.arange(len(files)) // 1000
    rec["id"] = (files.astype(np.uint64) << np.uint64(C.KEY_SHIFT)) + blocks.astype(np.uint64) + 1
    rec["size"] = bsize
    rec["next"] = -1
    rec.tofile(path)
    reader = lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE)
    lru = lcs.LRU(cache_size=cap_bytes)
    miss_ratio, _ = lru.process_trace(reader)
    return int(round(miss_ratio * len(files)))


@settings(max_examples=12, deadline=None)
@given(st.integers(1, 64), st.sampled_from([4096, 8192, 16384]), st.integers(0, 2**32 - 1))
def test_none_policy_equals_libcachesim_lru(tmp_path_factory, cap_blocks, bsize, seed):
    rng = np.random.default_rng(seed)
    n = 3000
    nfiles = int(rng.integers(1, 6))
    f = rng.integers(0, nfiles, n)
    # mostly sequential runs with random jumps, requests of 1-3 blocks' worth of bytes
    off = np.cumsum(rng.integers(1, 3 * bsize, n)) % (50 * bsize)
    cnt = rng.integers(1, 3 * bsize, n)
    s = ReadStream.from_arrays(f, off, cnt)
    r = replay(s, "always", "ideal", f"none:bsize={bsize}", cache=cap_blocks * bsize,
               profile=None, file_sizes=None)
    files, blocks = _block_trace(s, bsize)
    path = tmp_path_factory.mktemp("lcs") / "trace.oracleGeneral"
    want = libcachesim_lru_misses(files, blocks, bsize, cap_blocks * bsize, path)
    assert r["demand_blocks"] == len(blocks)
    assert r["misses"] == want
    assert r["prefetched"] == 0


def test_any_resident_equals_a_block_by_block_search():
    import numpy as np

    from seqheur import cache as C

    rng = np.random.default_rng(5)
    c = C.new_cache(64 * 4096, 4096)  # 64 blocks: inserts evict, chunks die and come back
    for b in rng.integers(0, 200, 400):
        key = C.make_key(3, int(b))
        if C.lookup(c, key) < 0:
            C.insert(c, key, 0, 1)
    for _ in range(300):
        lo, n = int(rng.integers(0, 220)), int(rng.integers(1, 70))
        want = any(C.lookup(c, C.make_key(3, b)) >= 0 for b in range(lo, lo + n))
        assert C.any_resident(c, C.make_key(3, lo), n) == want
        assert not C.any_resident(c, C.make_key(4, lo), n)  # another file


def _ghost_keys(c):
    out = []
    e = int(c.meta[C.M_GHEAD])
    while e >= 0:
        out.append(int(C.entry_key(c, e)))
        e = int(C.next_entry(c, e))
    return out


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 12), st.integers(0, 2**32 - 1))
def test_lists_with_ghosts_equal_a_reference(cap, seed):
    """Resident LRU order, ghost FIFO order, flags and counters against a plain-Python model,
    with re-reads of ghosts (their entry is reused in place) noting F_WASGHOST."""
    rng = np.random.default_rng(seed)
    c = C.new_cache(cap * 512, 512)
    res: OrderedDict[int, int] = OrderedDict()  # key -> flags, least recent first
    ghosts: list[int] = []  # newest first
    unused = 0
    for i in range(600):
        key = C.make_key(int(rng.integers(0, 3)), int(rng.integers(0, 3 * cap + 4)))
        if key in res:
            e = C.lookup(c, key)
            assert e >= 0
            C.use(c, e)
            C.touch(c, e)
            res[key] &= ~(C.F_PF | C.F_WASGHOST)
            res.move_to_end(key)
            continue
        pf = C.F_PF if rng.integers(0, 2) else 0
        want = pf
        if key in ghosts:
            ghosts.remove(key)
            if not pf:
                want |= C.F_WASGHOST
        if len(res) >= cap:
            victim, vfl = res.popitem(last=False)
            if vfl & C.F_PF:
                unused += 1
                ghosts.insert(0, victim)
                del ghosts[cap:]
        res[key] = want
        if pf:
            e = C.insert(c, key, pf, i)
        else:
            e = C.insert_noting_ghost(c, key, 0, i, C.F_WASGHOST)
        assert C.flags(c, e) == want and C.stamp(c, e) == i
    assert C.resident_keys(c) == list(reversed(res))
    assert _ghost_keys(c) == ghosts
    assert c.meta[C.M_EVICT_UNUSED] == unused
    assert c.meta[C.M_PF_RESIDENT] == sum(1 for fl in res.values() if fl & C.F_PF)
    _check_integrity(c)


def test_chunk_walk_equals_lookup():
    rng = np.random.default_rng(7)
    c = C.new_cache(64 * 4096, 4096)
    for b in rng.integers(0, 200, 400):
        key = C.make_key(2, int(b))
        if C.lookup(c, key) < 0:
            C.insert(c, key, 0, 1)
    for b in range(0, 240):
        key = C.make_key(2, b)
        assert C.resident_at(c, C.chunk_base(c, key), key) == C.lookup(c, key)
        assert C.chunk_end(key) == C.make_key(2, (b // C.CHUNK + 1) * C.CHUNK)


def test_hinted_lookup_equals_lookup_whatever_the_hint():
    """``lookup_hinted`` trusts no hint: stale slots (evicted blocks, ghosts, chunks freed and
    given to another file), slots of other files, and hints out of range all give
    ``lookup``'s entry, and ``locate``'s slot names it."""
    rng = np.random.default_rng(11)
    c = C.new_cache(48 * 4096, 4096)  # 48 blocks: chunks die and are reused
    hints = [-1, 0, 5, len(c.slot) - 1, len(c.slot), len(c.slot) + 40, 1 << 40]
    for i in range(3000):
        f, b = int(rng.integers(0, 4)), int(rng.integers(0, 120))
        key = C.make_key(f, b)
        e, pos = C.locate(c, key)
        assert e == C.lookup(c, key)
        if pos >= 0:
            hints.append(pos)
            v = int(c.slot[pos])
            assert (v - 1 if v > 0 else -1) == e
        for h in rng.choice(hints, 6):
            he, hpos = C.lookup_hinted(c, key, int(h))
            assert he == e
            if he >= 0:
                assert int(c.slot[hpos]) == e + 1
        if e >= 0:
            C.touch(c, e)
        else:
            C.insert(c, key, C.F_PF if rng.integers(0, 2) else 0, i)
