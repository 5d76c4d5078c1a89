"""Buffer-cache model: a block-granular LRU with a byte capacity and prefetch accounting.

The cache holds ``capacity // block_size`` blocks keyed by ``(file, block)``. A block brought
in by read-ahead carries the *prefetched* mark until its first demand use; at that moment it
counts as ``used``. A marked block that reaches the LRU end is evicted *unused* (``wasted``);
it then stays a while as a *ghost* (key only, no data) so that a later demand miss on it can
be blamed on the eviction (cause ``evicted``). Ghosts live in their own FIFO list of the same
length as the cache (like ARC's ghost lists), so a ghost is forgotten after ``capacity``
further unused evictions. The per-block *read-ahead mark* (FreeBSD ``B_RAM``, Linux
``PG_readahead``) is a second flag bit that the read-ahead models set and test.

With read-ahead off the model is a plain LRU over block accesses: a demand hit moves the
block to the most-recently-used end, a miss inserts it there and evicts the least recently
used block when full (tests check the miss count against ``libcachesim``'s LRU).

**Layout** (numba, structure of arrays, no Python objects): entries ``0..E-1`` with ``key``,
``flags``, ``stamp`` (request index of insertion) and intrusive doubly-linked list links
``prev``/``nxt``; two lists (resident LRU, ghost FIFO) and a free list threaded through
``nxt``; an open-addressed hash table ``htab`` (linear probing, backward-shift deletion, load
≤ 0.5) of (key, entry) pairs maps a key to its entry; the key sits beside the entry and a
ghost's entry is stored complemented, so a residency probe touches one cache line. ``meta`` holds list heads, sizes and counters. All state is
in these arrays, so a chunked replay can carry a cache from one chunk to the next.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .errors import SeqheurError

# flag bits
F_PF = 1  # brought in by read-ahead, not yet used by a demand read
F_RAM = 2  # read-ahead mark (FreeBSD B_RAM / Linux PG_readahead)
F_GHOST = 4  # evicted while F_PF was set; key kept for cause attribution only
F_WASGHOST = 8  # re-read while a ghost: the replay blames the pending demand miss on eviction

# meta words
M_CAP = 0  # resident capacity (blocks)
M_GCAP = 1  # ghost capacity (entries)
M_NRES = 2
M_NGHOST = 3
M_RHEAD = 4  # resident list, head = most recently used
M_RTAIL = 5
M_GHEAD = 6  # ghost list, head = newest
M_GTAIL = 7
M_FREE = 8  # free list (through nxt)
M_SHIFT = 9  # 64 - log2(len(htab))
M_HMASK = 10
M_EVICT_UNUSED = 11  # prefetched blocks evicted before any demand use
M_PF_RESIDENT = 12  # resident blocks still carrying F_PF
M_EVICTIONS = 13  # all evictions
M_BSIZE = 14  # block size in bytes (informational)
_META_LEN = 16

# A key packs the dense file index above a 40-bit block number.
KEY_SHIFT = 40
BLOCK_MASK = (1 << KEY_SHIFT) - 1
MAX_FILES = 1 << 23

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


class CacheState(NamedTuple):
    meta: np.ndarray  # int64[16]
    key: np.ndarray  # int64[E]
    prev: np.ndarray  # int32[E]
    nxt: np.ndarray  # int32[E]
    flags: np.ndarray  # uint8[E]
    stamp: np.ndarray  # int64[E]
    htab: np.ndarray  # int64[2H]: (key, entry) pairs; key -1 = empty, entry ~e = ghost


def new_cache(capacity_bytes: int, block_size: int) -> CacheState:
    """An empty cache of ``capacity_bytes // block_size`` blocks (at least one)."""
    if block_size <= 0:
        raise SeqheurError(f"cache block size must be positive, not {block_size}")
    cap = int(capacity_bytes) // int(block_size)
    if cap < 1:
        raise SeqheurError(f"cache of {capacity_bytes} bytes holds no {block_size}-byte block")
    if cap > (1 << 29):
        raise SeqheurError(f"cache of {cap} blocks is too large for the model (max 2**29)")
    gcap = cap
    n = cap + gcap
    bits = max(4, int(2 * n - 1).bit_length())
    meta = np.zeros(_META_LEN, np.int64)
    meta[M_CAP] = cap
    meta[M_GCAP] = gcap
    meta[M_RHEAD] = meta[M_RTAIL] = meta[M_GHEAD] = meta[M_GTAIL] = -1
    meta[M_FREE] = 0
    meta[M_SHIFT] = 64 - bits
    meta[M_HMASK] = (1 << bits) - 1
    meta[M_BSIZE] = block_size
    nxt = np.arange(1, n + 1, dtype=np.int32)
    nxt[-1] = -1
    return CacheState(meta, np.full(n, -1, np.int64), np.full(n, -1, np.int32), nxt,
                      np.zeros(n, np.uint8), np.zeros(n, np.int64),
                      np.full(2 << bits, -1, np.int64))


def copy_cache(c: CacheState) -> CacheState:
    return CacheState(*(a.copy() for a in c))


def parse_size(text: str | int) -> int:
    """Bytes from ``256MiB``, ``64k``, ``1G``, ``4096`` (binary units; k/M/G = KiB/MiB/GiB)."""
    if isinstance(text, (int, np.integer)):
        return int(text)
    s = str(text).strip()
    units = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20,
             "mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
             "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40}
    num = s.rstrip("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    unit = s[len(num):].strip().lower()
    try:
        value = float(num)
    except ValueError:
        raise SeqheurError(f"size {text!r}: expected a number with an optional unit such as 256MiB") from None
    if unit not in units:
        raise SeqheurError(f"size {text!r}: unknown unit {unit!r} (use KiB, MiB, GiB)")
    out = int(value * units[unit])
    if out < 0:
        raise SeqheurError(f"size {text!r} is negative")
    return out


# --------------------------------------------------------------------------------------------
# numba kernels


@njit(cache=True, nogil=True, _nrt=False)
def make_key(f: int, block: int) -> int:
    return (f << KEY_SHIFT) | block


@njit(cache=True, nogil=True, _nrt=False)
def _home(c: CacheState, key: int) -> int:
    return np.int64((np.uint64(key) * _GOLDEN) >> np.uint64(c.meta[M_SHIFT]))


@njit(cache=True, nogil=True, _nrt=False)
def _hslot(c: CacheState, key: int) -> int:
    """Hash-table slot holding ``key``, or -1."""
    mask = c.meta[M_HMASK]
    i = _home(c, key)
    h = c.htab
    while True:
        k = h[2 * i]
        if k == key:
            return i
        if k < 0:
            return -1
        i = (i + 1) & mask


@njit(cache=True, nogil=True, _nrt=False)
def find(c: CacheState, key: int) -> int:
    """Entry of ``key`` (resident or ghost), or -1."""
    i = _hslot(c, key)
    if i < 0:
        return -1
    v = c.htab[2 * i + 1]
    return v if v >= 0 else ~v


@njit(cache=True, nogil=True, _nrt=False)
def lookup(c: CacheState, key: int) -> int:
    """Entry of a *resident* ``key`` (no LRU update), or -1 (absent or a ghost)."""
    mask = c.meta[M_HMASK]
    i = _home(c, key)
    h = c.htab
    while True:
        k = h[2 * i]
        if k == key:
            v = h[2 * i + 1]
            return v if v >= 0 else -1
        if k < 0:
            return -1
        i = (i + 1) & mask


@njit(cache=True, nogil=True, _nrt=False)
def _hset(c: CacheState, key: int, v: int) -> None:
    """Set the value stored with present ``key`` (entry, or ~entry for a ghost)."""
    c.htab[2 * _hslot(c, key) + 1] = v


@njit(cache=True, nogil=True, _nrt=False)
def _hdelete(c: CacheState, key: int) -> None:
    i = _hslot(c, key)
    if i < 0:
        return
    mask = c.meta[M_HMASK]
    h = c.htab
    j = i
    while True:
        j = (j + 1) & mask
        k = h[2 * j]
        if k < 0:
            break
        hm = _home(c, k)
        # keep the pair at j when its home lies cyclically in (i, j]; else shift it back to i
        if i <= j:
            stays = i < hm <= j
        else:
            stays = hm > i or hm <= j
        if not stays:
            h[2 * i] = k
            h[2 * i + 1] = h[2 * j + 1]
            i = j
    h[2 * i] = -1
    h[2 * i + 1] = -1


@njit(cache=True, nogil=True, _nrt=False)
def _hinsert(c: CacheState, key: int, e: int) -> None:
    mask = c.meta[M_HMASK]
    i = _home(c, key)
    h = c.htab
    while h[2 * i] >= 0:
        i = (i + 1) & mask
    h[2 * i] = key
    h[2 * i + 1] = e


@njit(cache=True, nogil=True, _nrt=False)
def _unlink(c: CacheState, e: int, head: int, tail: int) -> None:
    p = c.prev[e]
    n = c.nxt[e]
    if p >= 0:
        c.nxt[p] = n
    else:
        c.meta[head] = n
    if n >= 0:
        c.prev[n] = p
    else:
        c.meta[tail] = p


@njit(cache=True, nogil=True, _nrt=False)
def _push_head(c: CacheState, e: int, head: int, tail: int) -> None:
    h = c.meta[head]
    c.prev[e] = -1
    c.nxt[e] = h
    if h >= 0:
        c.prev[h] = e
    else:
        c.meta[tail] = e
    c.meta[head] = e


@njit(cache=True, nogil=True, _nrt=False)
def touch(c: CacheState, e: int) -> None:
    """Move resident entry ``e`` to the most-recently-used end."""
    if c.meta[M_RHEAD] == e:
        return
    _unlink(c, e, M_RHEAD, M_RTAIL)
    _push_head(c, e, M_RHEAD, M_RTAIL)


@njit(cache=True, nogil=True, _nrt=False)
def _free(c: CacheState, e: int) -> None:
    c.key[e] = -1
    c.flags[e] = 0
    c.nxt[e] = c.meta[M_FREE]
    c.meta[M_FREE] = e


@njit(cache=True, nogil=True, _nrt=False)
def _evict_one(c: CacheState) -> None:
    v = c.meta[M_RTAIL]
    _unlink(c, v, M_RHEAD, M_RTAIL)
    c.meta[M_NRES] -= 1
    c.meta[M_EVICTIONS] += 1
    if (c.flags[v] & F_PF) != 0:
        c.meta[M_EVICT_UNUSED] += 1
        c.meta[M_PF_RESIDENT] -= 1
        c.flags[v] = F_GHOST
        _hset(c, c.key[v], ~v)
        _push_head(c, v, M_GHEAD, M_GTAIL)
        c.meta[M_NGHOST] += 1
        if c.meta[M_NGHOST] > c.meta[M_GCAP]:
            g = c.meta[M_GTAIL]
            _unlink(c, g, M_GHEAD, M_GTAIL)
            c.meta[M_NGHOST] -= 1
            _hdelete(c, c.key[g])
            _free(c, g)
    else:
        _hdelete(c, c.key[v])
        _free(c, v)


@njit(cache=True, nogil=True, _nrt=False)
def forget_ghost(c: CacheState, e: int) -> None:
    """Drop ghost entry ``e`` (its block was demanded or re-read)."""
    _unlink(c, e, M_GHEAD, M_GTAIL)
    c.meta[M_NGHOST] -= 1
    _hdelete(c, c.key[e])
    _free(c, e)


@njit(cache=True, nogil=True, _nrt=False)
def insert(c: CacheState, key: int, flags: int, stamp: int) -> int:
    """Insert non-resident ``key`` at the MRU end (evicting the LRU block when full).

    A ghost of ``key`` is dropped first. ``flags`` may carry F_PF and F_RAM. Returns the entry.
    """
    g = find(c, key)
    if g >= 0:
        forget_ghost(c, g)
    if c.meta[M_NRES] >= c.meta[M_CAP]:
        _evict_one(c)
    e = c.meta[M_FREE]
    c.meta[M_FREE] = c.nxt[e]
    c.key[e] = key
    c.flags[e] = flags
    c.stamp[e] = stamp
    _push_head(c, e, M_RHEAD, M_RTAIL)
    c.meta[M_NRES] += 1
    if (flags & F_PF) != 0:
        c.meta[M_PF_RESIDENT] += 1
    _hinsert(c, key, e)
    return e


@njit(cache=True, nogil=True, _nrt=False)
def use(c: CacheState, e: int) -> bool:
    """First demand use of resident entry ``e``: clears F_PF (and F_WASGHOST); True if it was
    prefetched."""
    if (c.flags[e] & F_PF) != 0:
        c.flags[e] &= ~np.uint8(F_PF | F_WASGHOST)
        c.meta[M_PF_RESIDENT] -= 1
        return True
    c.flags[e] &= ~np.uint8(F_WASGHOST)
    return False


@njit(cache=True, nogil=True, _nrt=False)
def lru_misses(files: np.ndarray, blocks: np.ndarray, c: CacheState) -> int:
    """Plain LRU over a block trace (demand only): the number of misses."""
    misses = 0
    for i in range(len(blocks)):
        k = make_key(files[i], blocks[i])
        e = lookup(c, k)
        if e >= 0:
            touch(c, e)
        else:
            insert(c, k, 0, i)
            misses += 1
    return misses


def resident_keys(c: CacheState) -> list[int]:
    """Resident keys from MRU to LRU (for tests and debugging; walks the list in Python)."""
    out = []
    e = int(c.meta[M_RHEAD])
    while e >= 0:
        out.append(int(c.key[e]))
        e = int(c.nxt[e])
    return out
