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

**Layout** (numba, no Python objects): entries ``0..E-1`` are 32-byte records (words
``4e .. 4e + 3`` of the flat ``ent``) of ``key``, intrusive doubly-linked list links ``prev``/``nxt`` and ``stamp << 8 | flags`` (stamp =
request index of insertion), so an LRU move or an eviction touches one line per entry rather
than one per field (measured: a plain LRU over the replay benchmark's block trace runs ~1.9x
faster than with one array per field); two lists (resident LRU, ghost FIFO) and a free list
threaded through ``nxt``. A key reaches its entry through a **chunked block table**: a
file's blocks are grouped in chunks of ``CHUNK`` consecutive blocks; chunk ``k`` is ``CHUNK``
int32 slots of the flat ``slot`` from ``k * CHUNK``, one 64-byte line (0 = absent, ``e + 1`` = resident entry ``e``,
``-(e + 1)`` = ghost entry ``e``); an open-addressed hash table ``htab`` (linear probing,
backward-shift deletion, load ≤ 0.5 even with one chunk per entry) of (chunk key + 1, chunk)
pairs finds a chunk; a chunk whose slots are all 0 goes back to a free list (``cnext``).
Read-ahead and sequential readers touch runs of neighbouring blocks, so their probes land on
lines just used and the hash table changes only when a chunk is born or dies, not on every
insert and eviction, and it holds a pair per chunk in use rather than per block, so far fewer
of its lines are live: that matters most with 4 KiB pages (measured, paired in one process:
Linux read-ahead replay 1.4x faster; FreeBSD clusters of 16 KiB blocks ~1.05x; a plain LRU
with half its accesses missing ~0.95x, one more dependent load per probe). ``meta`` holds
list heads, sizes and counters. A walk over consecutive blocks of a file that changes
nothing (the FreeBSD ``B_RAM`` scan, a cluster's run of absent blocks) probes the hash table
once per chunk (:func:`chunk_base`, :func:`resident_at`); a ghost that is read again keeps
its entry and slot, now resident (:func:`insert`), rather than giving both back only to take
them again. A reader's next block is mostly in the chunk of its last one: the FreeBSD
policies keep that block's slot index per file and look there first
(:func:`lookup_hinted`: the slot's entry must hold the key, so a stale hint costs one load
and the hash probe it would have made anyway). All state is in these arrays, so a chunked replay can carry a
cache from one chunk to the next. Both record arrays are flat, indexed by a constant
multiple: a two-dimensional array's row index is multiplied by its row length loaded at run
time, one more step in every dependent walk of the lists; and every index into them is
unsigned, so numba omits the negative-index wraparound (a length kept, often on the stack,
and three more instructions on the way to each address).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from llvmlite import ir
from numba import njit, types, uint64
from numba.core import cgutils, config
from numba.extending import intrinsic

from .errors import SeqheurError
from . import _inlining

_inlining.install()  # numba's inliner: one copy of a callee's IR, not one per block (_inlining)

# flag bits
F_PF = 1  # brought in by read-ahead, not yet used by a demand read
F_RAM = 2  # read-ahead mark (FreeBSD B_RAM / Linux PG_readahead)
F_GHOST = 4  # evicted while F_PF was set; key kept for cause attribution only
F_WASGHOST = 8  # re-read while a ghost: the replay blames the pending demand miss on eviction
F_ORDER_SHIFT = 4  # bits 4-7: the order of the block's folio (the linux-6 page cache)

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
M_CFREE = 15  # free chunk list (through cnext)
_META_LEN = 16

# A key packs the dense file index above a 40-bit block number.
KEY_SHIFT = 40
MAX_FILES = 1 << 23

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


# chunked block table: CHUNK consecutive blocks of a file share one line of slots
CHUNK_BITS = 4
CHUNK = 1 << CHUNK_BITS

# entry record words (one 32-byte record per entry: the fields an LRU step touches share a line)
E_KEY = 0
E_PREV = 1
E_NXT = 2
E_SF = 3  # stamp << 8 | flags
_E_WORDS = 4
_FLAG_BITS = 8
_FLAG_MASK = (1 << _FLAG_BITS) - 1


class CacheState(NamedTuple):
    meta: np.ndarray  # int64[16]
    ent: np.ndarray  # int64[4E]: per entry key, prev, nxt, stamp << 8 | flags
    htab: np.ndarray  # int64[2H]: (chunk key + 1, chunk) pairs; 0 = empty
    slot: np.ndarray  # int32[E * CHUNK]: per chunk, 0 / e + 1 (resident) / -(e + 1) (ghost)
    cnext: np.ndarray  # int64[E]: next free chunk (free list)


def prefetch_counts(c: CacheState) -> tuple[int, int]:
    """(read-ahead blocks evicted before any use, resident read-ahead blocks still unused)."""
    return int(c.meta[M_EVICT_UNUSED]), int(c.meta[M_PF_RESIDENT])


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
    bits = max(4, int(2 * n - 1).bit_length())  # a chunk per entry at worst: load <= 0.5
    meta = np.zeros(_META_LEN, np.int64)
    meta[M_CAP] = cap
    meta[M_GCAP] = gcap
    meta[M_RHEAD] = meta[M_RTAIL] = meta[M_GHEAD] = meta[M_GTAIL] = -1
    meta[M_FREE] = 0
    meta[M_CFREE] = 0
    meta[M_SHIFT] = 64 - bits
    meta[M_HMASK] = (1 << bits) - 1
    meta[M_BSIZE] = block_size
    ent = np.zeros(n * _E_WORDS, np.int64)
    ent[E_KEY::_E_WORDS] = -1
    ent[E_PREV::_E_WORDS] = -1
    ent[E_NXT::_E_WORDS] = np.arange(1, n + 1)
    ent[_E_WORDS * (n - 1) + E_NXT] = -1
    cnext = np.arange(1, n + 1, dtype=np.int64)
    cnext[-1] = -1
    # zero = empty, so untouched pages of the two big tables are never faulted in
    return CacheState(meta, ent, np.zeros(2 << bits, np.int64), np.zeros(n * CHUNK, np.int32),
                      cnext)


def parse_size(text: str | int) -> int:
    """Bytes from ``256MiB``, ``64k``, ``1G``, ``4096``, ``1.5KiB``: the size grammar of
    :func:`seqheur.options.parse_size` (K/M/G, KiB/MiB/GiB binary; KB/MB/GB decimal)."""
    from .options import parse_size as _parse_size

    return _parse_size(text)


# --------------------------------------------------------------------------------------------
# numba kernels


@njit(cache=True, nogil=True, _nrt=False)
def make_key(f: int, block: int) -> int:
    # int64 first: numba widens an int32 file index itself, plain Python on numpy scalars
    # (NUMBA_DISABLE_JIT) would shift it out of an int32
    return (np.int64(f) << KEY_SHIFT) | block


@njit(cache=True, nogil=True, _nrt=False)
def flags(c: CacheState, e: int) -> int:
    """Flag bits of entry ``e``."""
    return c.ent[uint64(_E_WORDS * e + E_SF)] & _FLAG_MASK


@njit(cache=True, nogil=True, _nrt=False)
def stamp(c: CacheState, e: int) -> int:
    """Request index that inserted entry ``e``."""
    return c.ent[uint64(_E_WORDS * e + E_SF)] >> _FLAG_BITS


@njit(cache=True, nogil=True, _nrt=False)
def set_flag(c: CacheState, e: int, bits: int) -> None:
    c.ent[uint64(_E_WORDS * e + E_SF)] |= bits


@njit(cache=True, nogil=True, _nrt=False)
def clear_flag(c: CacheState, e: int, bits: int) -> None:
    c.ent[uint64(_E_WORDS * e + E_SF)] &= ~np.int64(bits)


@njit(cache=True, nogil=True, _nrt=False)
def entry_key(c: CacheState, e: int) -> int:
    return c.ent[uint64(_E_WORDS * e + E_KEY)]


@njit(cache=True, nogil=True, _nrt=False)
def next_entry(c: CacheState, e: int) -> int:
    """The entry after ``e`` in its list (towards the LRU / oldest end), or -1."""
    return c.ent[uint64(_E_WORDS * e + E_NXT)]


@njit(cache=True, nogil=True, _nrt=False)
def _home(c: CacheState, ck: int) -> int:
    return np.int64((np.uint64(ck) * _GOLDEN) >> np.uint64(c.meta[M_SHIFT]))


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _hpos(c: CacheState, ck: int) -> int:
    """Hash-table position of chunk key ``ck``, or -1."""
    mask = c.meta[M_HMASK]
    i = _home(c, ck)
    h = c.htab
    want = ck + 1
    while True:
        k = h[uint64(2 * i)]
        if k == want:
            return i
        if k == 0:
            return -1
        i = (i + 1) & mask


@njit(cache=True, nogil=True, _nrt=False)
def slot_of(chunk: int, key: int) -> int:
    """Index in ``c.slot`` of ``key``'s slot when chunk number ``chunk`` holds its chunk.
    (A one-line function LLVM inlines: a call of it compiles to the expression.)"""
    return (chunk << CHUNK_BITS) | (key & (CHUNK - 1))


@njit(cache=True, nogil=True, _nrt=False)
def chunk_base_of(pos: int) -> int:
    """The first slot index of the chunk holding slot index ``pos`` (its :func:`chunk_base`)."""
    return pos & ~np.int64(CHUNK - 1)


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _chunk_of(c: CacheState, key: int) -> int:
    """Chunk holding ``key``'s slot, or -1 (no block of that chunk is known)."""
    i = _hpos(c, key >> CHUNK_BITS)
    return c.htab[uint64(2 * i + 1)] if i >= 0 else -1


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _slot_value(c: CacheState, key: int) -> int:
    """``key``'s slot: 0 absent, e + 1 resident, -(e + 1) ghost."""
    k = _chunk_of(c, key)
    if k < 0:
        return 0
    return np.int64(c.slot[uint64(slot_of(k, key))])


@intrinsic
def _prefetch(typingctx, arr, flat):
    """``prefetcht0`` of element ``flat`` of C-contiguous ``arr`` counted in row-major order
    (LLVM's prefetch intrinsic: a read, kept in every cache level; never faults)."""
    sig = types.void(arr, flat)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = builder.gep(ary.data, [args[1]])
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]), "llvm.prefetch.p0i8")
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


if config.DISABLE_JIT:  # plain Python (stepping through the engine): a hint with no effect

    def _prefetch(arr, flat):  # noqa: F811
        return None


@njit(cache=True, nogil=True, _nrt=False)
def prefetch_key(c: CacheState, key: int) -> None:
    """Start loading the hash-table line of ``key``'s chunk. The replay calls it a few
    requests ahead: the first probe of a chunk not seen for a while misses the CPU caches,
    and the trace tells which block comes next."""
    _prefetch(c.htab, 2 * _home(c, key >> CHUNK_BITS))


@njit(cache=True, nogil=True, _nrt=False)
def find(c: CacheState, key: int) -> int:
    """Entry of ``key`` (resident or ghost), or -1."""
    v = _slot_value(c, key)
    if v == 0:
        return -1
    return v - 1 if v > 0 else -v - 1


@njit(cache=True, nogil=True, _nrt=False)
def ghost_of(c: CacheState, key: int) -> int:
    """Ghost entry of a key known not to be resident, or -1 (no probe while there are no
    ghosts, the usual case: read-ahead rarely loses blocks to eviction)."""
    if c.meta[M_NGHOST] == 0:
        return -1
    v = _slot_value(c, key)
    return -v - 1 if v < 0 else -1


@njit(cache=True, nogil=True, _nrt=False)
def lookup(c: CacheState, key: int) -> int:
    """Entry of a *resident* ``key`` (no LRU update), or -1 (absent or a ghost)."""
    v = _slot_value(c, key)
    return v - 1 if v > 0 else -1


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def locate(c: CacheState, key: int) -> tuple[int, int]:
    """(:func:`lookup` of ``key``, the index of its slot in ``c.slot`` or -1 when no block of
    its chunk is known): the slot index is the hint :func:`lookup_hinted` takes."""
    k = _chunk_of(c, key)
    if k < 0:
        return -1, -1
    pos = slot_of(k, key)
    v = np.int64(c.slot[uint64(pos)])
    return (v - 1 if v > 0 else -1), pos


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def slot_value_at(c: CacheState, pos: int) -> int:
    """The slot at index ``pos`` of ``c.slot`` (a :func:`locate` answer): 0 absent, e + 1
    resident, -(e + 1) ghost."""
    return np.int64(c.slot[uint64(pos)])


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def lookup_hinted(c: CacheState, key: int, hint: int) -> tuple[int, int]:
    """:func:`locate` of ``key``, first trying the chunk of slot index ``hint`` (any value;
    a reader's last block: its next one is mostly in the same chunk). No hash probe when
    that chunk's slot for ``key`` names a resident entry whose key is ``key``, a test that
    holds whatever the chunk now belongs to: a positive slot always names the resident entry
    of its own key (evictions clear or negate it, a chunk is freed only with every slot 0)."""
    if hint >= 0:
        pos = chunk_base_of(hint) | (key & (CHUNK - 1))
        if pos < len(c.slot):  # a hint from another cache's slot table
            v = np.int64(c.slot[uint64(pos)])
            if v > 0 and c.ent[uint64(_E_WORDS * (v - 1) + E_KEY)] == key:
                return v - 1, pos
    return locate(c, key)


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def chunk_base(c: CacheState, key: int) -> int:
    """Index in ``c.slot`` of the first slot of ``key``'s chunk, or -1 (no block of the
    chunk is known). With :func:`resident_at`, a walk over consecutive blocks of a file
    probes the hash table once per chunk of ``CHUNK`` blocks, not once per block; the base
    holds until the next insert or eviction."""
    k = _chunk_of(c, key)
    return k << CHUNK_BITS if k >= 0 else -1


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def chunk_end(key: int) -> int:
    """The first key past ``key``'s chunk."""
    return ((key >> CHUNK_BITS) + 1) << CHUNK_BITS


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def resident_at(c: CacheState, base: int, key: int) -> int:
    """:func:`lookup` of ``key`` given its :func:`chunk_base`: the resident entry, or -1."""
    if base < 0:
        return -1
    v = np.int64(c.slot[uint64(base | (key & (CHUNK - 1)))])
    return v - 1 if v > 0 else -1


@njit(cache=True, nogil=True, _nrt=False)
def any_resident(c: CacheState, key: int, n: int) -> bool:
    """Is any of the ``n`` consecutive keys from ``key`` (consecutive blocks of one file)
    resident? One hash probe per chunk of 16 blocks, not one per block."""
    k = key
    end = key + n
    while k < end:
        stop = ((k >> CHUNK_BITS) + 1) << CHUNK_BITS
        if stop > end:
            stop = end
        ch = _chunk_of(c, k)
        if ch >= 0:
            for j in range(k & (CHUNK - 1), ((stop - 1) & (CHUNK - 1)) + 1):
                if c.slot[uint64((ch << CHUNK_BITS) | j)] > 0:
                    return True
        k = stop
    return False


@njit(cache=True, nogil=True, _nrt=False)
def _set_slot(c: CacheState, key: int, v: int) -> None:
    """Set the slot of ``key``, whose chunk exists (e + 1, or -(e + 1) for a ghost)."""
    c.slot[uint64(slot_of(_chunk_of(c, key), key))] = v


@njit(cache=True, nogil=True, _nrt=False)
def _hdelete_at(c: CacheState, i: int) -> None:
    """Empty hash position ``i`` (backward-shift deletion keeps every probe run unbroken)."""
    mask = c.meta[M_HMASK]
    h = c.htab
    j = i
    while True:
        j = (j + 1) & mask
        k = h[uint64(2 * j)]
        if k == 0:
            break
        hm = _home(c, k - 1)
        # keep the pair at j when its home lies cyclically in (i, j]; else shift it back to i
        if i <= j:
            stays = i < hm <= j
        else:
            stays = hm > i or hm <= j
        if not stays:
            h[uint64(2 * i)] = k
            h[uint64(2 * i + 1)] = h[uint64(2 * j + 1)]
            i = j
    h[uint64(2 * i)] = 0
    h[uint64(2 * i + 1)] = 0


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _remove_slot(c: CacheState, key: int) -> None:
    """Forget ``key``'s slot; a chunk left with no live slot is freed."""
    ck = key >> CHUNK_BITS
    i = _hpos(c, ck)
    if i < 0:
        return
    k = c.htab[uint64(2 * i + 1)]
    base = k << CHUNK_BITS
    c.slot[uint64(base | (key & (CHUNK - 1)))] = 0
    live = np.int32(0)
    for j in range(CHUNK):  # one line, already loaded: cheaper than a count on another line
        live |= c.slot[uint64(base | j)]
    if live != 0:
        return
    _hdelete_at(c, i)
    c.cnext[k] = c.meta[M_CFREE]
    c.meta[M_CFREE] = k


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _add_slot(c: CacheState, key: int, e: int) -> None:
    """Point ``key``'s slot (absent) at resident entry ``e``, creating its chunk if needed."""
    k = _chunk_of(c, key)
    if k < 0:  # the chunk's first live block (rare for runs of neighbouring blocks)
        k = c.meta[M_CFREE]
        c.meta[M_CFREE] = c.cnext[k]
        ck = key >> CHUNK_BITS
        mask = c.meta[M_HMASK]
        h = c.htab
        i = _home(c, ck)
        while h[uint64(2 * i)] != 0:
            i = (i + 1) & mask
        h[uint64(2 * i)] = ck + 1
        h[uint64(2 * i + 1)] = k
    c.slot[uint64(slot_of(k, key))] = e + 1


@njit(cache=True, nogil=True, _nrt=False)
def _unlink(c: CacheState, e: int, head: int, tail: int) -> None:
    ent = c.ent
    p = ent[uint64(_E_WORDS * e + E_PREV)]
    n = ent[uint64(_E_WORDS * e + E_NXT)]
    if p >= 0:
        ent[uint64(_E_WORDS * p + E_NXT)] = n
    else:
        c.meta[head] = n
    if n >= 0:
        ent[uint64(_E_WORDS * n + E_PREV)] = p
    else:
        c.meta[tail] = p


@njit(cache=True, nogil=True, _nrt=False)
def _push_head(c: CacheState, e: int, head: int, tail: int) -> None:
    ent = c.ent
    h = c.meta[head]
    ent[uint64(_E_WORDS * e + E_PREV)] = -1
    ent[uint64(_E_WORDS * e + E_NXT)] = h
    if h >= 0:
        ent[uint64(_E_WORDS * h + E_PREV)] = e
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
    c.ent[uint64(_E_WORDS * e + E_KEY)] = -1
    c.ent[uint64(_E_WORDS * e + E_SF)] = 0
    c.ent[uint64(_E_WORDS * e + E_NXT)] = c.meta[M_FREE]
    c.meta[M_FREE] = e


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _evict_one(c: CacheState) -> None:
    v = c.meta[M_RTAIL]
    _unlink(c, v, M_RHEAD, M_RTAIL)
    # The next victim is the new tail, untouched for a whole cache lifetime: start loading
    # what its eviction will touch (its predecessor's record and its hash line).
    p = c.meta[M_RTAIL]
    if p >= 0:
        pp = c.ent[uint64(_E_WORDS * p + E_PREV)]
        if pp >= 0:
            _prefetch(c.ent, _E_WORDS * pp)
        _prefetch(c.htab, 2 * _home(c, c.ent[uint64(_E_WORDS * p + E_KEY)] >> CHUNK_BITS))
    c.meta[M_NRES] -= 1
    c.meta[M_EVICTIONS] += 1
    if (c.ent[uint64(_E_WORDS * v + E_SF)] & F_PF) != 0:
        c.meta[M_EVICT_UNUSED] += 1
        c.meta[M_PF_RESIDENT] -= 1
        sf = _E_WORDS * v + E_SF
        c.ent[sf] = (c.ent[sf] & ~np.int64(_FLAG_MASK)) | F_GHOST
        _set_slot(c, c.ent[uint64(_E_WORDS * v + E_KEY)], -(v + 1))
        _push_head(c, v, M_GHEAD, M_GTAIL)
        c.meta[M_NGHOST] += 1
        if c.meta[M_NGHOST] > c.meta[M_GCAP]:
            g = c.meta[M_GTAIL]
            _unlink(c, g, M_GHEAD, M_GTAIL)
            c.meta[M_NGHOST] -= 1
            _remove_slot(c, c.ent[uint64(_E_WORDS * g + E_KEY)])
            _free(c, g)
    else:
        _remove_slot(c, c.ent[uint64(_E_WORDS * v + E_KEY)])
        _free(c, v)


@njit(cache=True, nogil=True, _nrt=False)
def insert(c: CacheState, key: int, flags: int, stamp: int) -> int:
    """Insert non-resident ``key`` at the MRU end (evicting the LRU block when full).

    A ghost of ``key`` is dropped first. ``flags`` may carry F_PF and F_RAM. Returns the entry.
    """
    return _insert(c, key, flags, stamp, 0)


@njit(cache=True, nogil=True, _nrt=False)
def insert_noting_ghost(c: CacheState, key: int, flags: int, stamp: int, if_ghost: int) -> int:
    """:func:`insert`, with the flags ``if_ghost`` added when ``key`` was a ghost (a demand
    read's F_WASGHOST: one probe of the key instead of a :func:`ghost_of` before this)."""
    return _insert(c, key, flags, stamp, if_ghost)


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _insert(c: CacheState, key: int, flags: int, stamp: int, if_ghost: int) -> int:
    g = -1
    gslot = uint64(0)
    if c.meta[M_NGHOST] != 0:
        k = _chunk_of(c, key)
        if k >= 0:
            gslot = uint64(slot_of(k, key))
            v = np.int64(c.slot[gslot])
            if v < 0:
                g = -v - 1
                flags |= if_ghost
    if g >= 0:
        # The ghost's entry becomes the block's resident entry: the lists change exactly as
        # dropping the ghost and inserting afresh would, without emptying its slot (and
        # maybe freeing its chunk) only to fill it again. Its slot stays valid through the
        # eviction below: a chunk with a live slot is never freed, and hash deletions move
        # (chunk key, chunk) pairs, never a chunk's slots.
        _unlink(c, g, M_GHEAD, M_GTAIL)
        c.meta[M_NGHOST] -= 1
    if c.meta[M_NRES] >= c.meta[M_CAP]:
        _evict_one(c)
    ent = c.ent
    if g >= 0:
        e = g
    else:
        e = c.meta[M_FREE]
        c.meta[M_FREE] = ent[uint64(_E_WORDS * e + E_NXT)]
    ent[uint64(_E_WORDS * e + E_KEY)] = key
    ent[uint64(_E_WORDS * e + E_SF)] = (stamp << _FLAG_BITS) | flags
    _push_head(c, e, M_RHEAD, M_RTAIL)
    c.meta[M_NRES] += 1
    if (flags & F_PF) != 0:
        c.meta[M_PF_RESIDENT] += 1
    if g >= 0:
        c.slot[gslot] = e + 1
    else:
        _add_slot(c, key, e)
    return e


@njit(cache=True, nogil=True, _nrt=False)
def use(c: CacheState, e: int) -> bool:
    """First demand use of resident entry ``e``: clears F_PF (and F_WASGHOST); True if it was
    prefetched."""
    sf = c.ent[uint64(_E_WORDS * e + E_SF)]
    c.ent[uint64(_E_WORDS * e + E_SF)] = sf & ~np.int64(F_PF | F_WASGHOST)
    if (sf & F_PF) != 0:
        c.meta[M_PF_RESIDENT] -= 1
        return True
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
        out.append(int(c.ent[uint64(_E_WORDS * e + E_KEY)]))
        e = int(c.ent[uint64(_E_WORDS * e + E_NXT)])
    return out
