"""How much any schedule leaves on the table: lower bounds on a trace (``seqheur bound``).

    r = seqheur.bound("t.parquet", cache="256MiB", profile="ide-7200")
    r["lower_bound_disk_seconds"], r["belady_misses"], r["lru_misses"], r["distinct_blocks"]

The trace becomes a ReadStream and file sizes exactly as in :func:`seqheur.replay.replay`
(:func:`seqheur.replay.file_sizes_for`: reply attributes, else the largest byte read); each
READ is clipped at its file's end and covers the blocks ``offset // B .. (offset + n - 1) //
B`` (B = ``block_size``), in trace order: the *demand reference sequence*.

**Belady.** ``belady_misses``: Belady's MIN (on a miss with the cache full, evict the block
whose next use is furthest in the future) over the demand references, demand only, with a
cache of ``cache_bytes // B`` blocks: the fewest loads any schedule, prefetching or not, can
make with that cache. ``lru_misses``: a plain LRU (:func:`seqheur.cache.lru_misses`).

**The disk lower bound** (``lower_bound_disk_seconds``) is a bound of *our* disk model
(:mod:`seqheur.disk.model`), for the files placed as the replay places them
(``DiskModel.place``), whatever the detector, table, policy and cache. Its terms:

* ``bound_first_seconds``: the first disk read of any schedule finds the head unknown: one
  random positioning plus one command overhead.
* ``bound_transfer_seconds``: every distinct demanded block's bytes (clipped at EOF), each at
  the fastest media rate a read that covers it can be charged (below).
* ``bound_gap_seconds``: the demanded bytes, sorted by disk address, form *runs*; every gap
  ``g`` between consecutive runs costs ``G(g)``, where ``G(d) = min(P(d), d / r_max)``, ``P``
  the model's positioning time for a seek of distance ``d`` (``_positioning``: seek curve +
  rotation, made non-decreasing from the right) and ``r_max`` the fastest zone.
* ``bound_reread_seconds``: ``belady_misses_drive - distinct_blocks`` blocks (Belady at the
  buffer cache plus every block the drive's segments can touch) re-read from the media, each
  at least the cheapest block's transfer term.

Why no schedule beats it. In the model every second of disk time does at most one piece of
*media work*: a positioning, a media read of ``L`` bytes charged ``L / rate(zone of its
start)`` (a host ceiling only slows it), the drive's own read-ahead, which reads at that rate
during a cache hit's time or the next op's first ``min_prefetch_bytes``; a drive-cache hit's
own bus transfer runs alongside and is not counted. Segments hold only bytes read from the
media, so the media work is a walk of the head over addresses, made of forward reads and
jumps (positionings), that reads every demanded byte at least once.

1. *Transfer.* A read covering byte ``y`` starts no more than ``L + RA`` bytes before it
   (``L``: the longest piece a read can have, a file's length rounded to blocks or the extent;
   ``RA``: the drive's read-ahead, which a streaming read may cover first); when ``y`` is at
   least one block past the start of its file's (or extent's) region it starts no earlier than
   ``RA`` before that region (only a partial last block, read whole, spills past a file's
   region). So ``y`` costs at least ``1 / max(rate of the zones it may start in)`` - the zone's
   own rate except near a zone boundary.
2. *Gaps.* ``G`` is below every jump (``P``) and every read over ``d`` bytes (``d / r_max``),
   non-decreasing, and subadditive: checked exactly at construction (a piecewise-linear
   ``G(a) + G(b) - G(a + b)`` is smallest at a vertex of its cells); if a profile's curve
   failed the check, ``G`` falls back to ``min(min P, d / r_max)``, which is concave
   (``bound_gap_cost`` says which). So ``G`` of distances is a metric on the line: the
   head's way from the last byte it touched in one run to the first byte of the next run it
   touches costs at least ``G`` of their distance, and the runs it passes through in turn form
   a connected walk over all runs, which costs at least a minimum spanning tree; on a line,
   with a non-decreasing ``G``, that tree joins neighbours: the sum of ``G(gap)``. A long seek
   over several gaps is therefore never undercounted; a short positioning *into* a gap
   (read-ahead that read part of it) is paid by the reads over the rest.
3. *Re-reads.* A block with no copy in the buffer cache and no byte in any drive segment must
   have all its bytes read from the media again before its next use. The buffer cache and the
   blocks touching the segments together hold at most ``C + D`` blocks
   (``drive_cache_blocks``), so by Belady's optimality at least ``belady_misses_drive`` such
   loads happen; those past the first of each block re-read bytes the transfer term counted
   once already. (With the drive's cache off, ``D = 0`` and the term is Belady's own extra
   misses.)

Terms 1-3 count disjoint media work, and the first read's positioning and overhead come on
top. The argument assumes what every built-in policy does: a read of a block transfers its
bytes up to the end of the file (``readahead.op_bytes``) and no read passes a file's last
block; replay runs its disk back to back (no idle time, in which the drive would read ahead
for free). The bound is *not* achievable in general: it ignores the order of requests
(a schedule must serve READs in trace order with a bounded cache), per-command overheads after
the first, and prices each gap at its cheapest crossing.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from numba import njit

from . import cache as C
from .config import DEFAULT, resolve_policy
from .disk.model import extent_piece
from .engine import cache_by_sources
from .errors import SeqheurError
from .options import parse_size
from .replay import _as_stream, file_sizes_for
from .streams import ReadStream
from . import _inlining

_inlining.install()  # numba's inliner: one copy of a callee's IR, not one per block (_inlining)

_ALIGN = 4096  # the disk model's file alignment (DiskModel.place)
KEY_SHIFT = np.int64(C.KEY_SHIFT)  # a key's file and block (cache.make_key)
BLOCK_MASK = np.int64((1 << C.KEY_SHIFT) - 1)

# -------------------------------------------------------------------------------------------
# the demand reference sequence


def block_shift(block_size: int) -> int:
    """log2 of a block size that is a power of two, else -1 (for :func:`block_span`)."""
    bs = int(block_size)
    return bs.bit_length() - 1 if bs > 0 and bs & (bs - 1) == 0 else -1


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def block_span(off, cnt, bs, shift):
    """The first and last block of bytes off..off+cnt-1 (cnt > 0): by shifts when the block
    size is a power of two (``shift`` >= 0, :func:`block_shift`; the same floor), as a
    division by a run-time value costs tens of cycles, most of a pass over the READs."""
    if shift >= 0:
        return off >> shift, (off + cnt - 1) >> shift
    return off // bs, (off + cnt - 1) // bs


@njit(cache=True, nogil=True)
def _count_refs(file, offset, count, sizes, bs, shift):
    n = 0
    for i in range(file.shape[0]):
        size = sizes[file[i]]
        off = offset[i]
        cnt = min(np.int64(count[i]), size - off)
        if cnt > 0:
            lo, hi = block_span(off, cnt, bs, shift)
            n += hi - lo + 1
    return n


@njit(cache=True, nogil=True, _nrt=False)
def _fill_refs(file, offset, count, sizes, bs, shift, out_file, out_block, out_start, out_end):
    """The references' file and block; with ``out_start`` and ``out_end`` not empty also
    each READ's first reference (a READ with no block: the next reference's index) and each
    reference's READ's last block (:func:`demand_refs_and_reads`)."""
    reads = out_start.shape[0] > 0
    k = 0
    for i in range(file.shape[0]):
        if reads:
            out_start[i] = k
        f = file[i]
        off = offset[i]
        cnt = min(np.int64(count[i]), sizes[f] - off)
        if cnt > 0:
            lo, hi = block_span(off, cnt, bs, shift)
            for b in range(lo, hi + 1):
                out_file[k] = f
                out_block[k] = b
                if reads:
                    out_end[k] = hi
                k += 1


def demand_refs(stream: ReadStream, sizes: np.ndarray, block_size: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """(file, block) of every demanded block, READ by READ in trace order, each READ clipped
    at its file's end as replay clips it."""
    return demand_refs_and_reads(stream, sizes, block_size, reads=False)[:2]


def demand_refs_and_reads(stream: ReadStream, sizes: np.ndarray, block_size: int,
                          reads: bool = True) -> tuple[np.ndarray, ...]:
    """:func:`demand_refs` and, in the same pass over the READs (with ``reads``; else empty
    arrays), the index of every READ's first reference (a READ with no block: the next
    reference's) and for every reference the last block of its READ."""
    file = np.ascontiguousarray(stream.file)
    offset = np.ascontiguousarray(stream.offset, dtype=np.int64)
    count = np.ascontiguousarray(stream.count)
    sizes = np.ascontiguousarray(sizes, dtype=np.int64)
    bs = np.int64(block_size)
    shift = np.int64(block_shift(block_size))
    n = _count_refs(file, offset, count, sizes, bs, shift)
    out_file = np.empty(n, np.int64)
    out_block = np.empty(n, np.int64)
    out_start = np.empty(file.shape[0] if reads else 0, np.int64)
    out_end = np.empty(n if reads else 0, np.int64)
    _fill_refs(file, offset, count, sizes, bs, shift, out_file, out_block, out_start, out_end)
    return out_file, out_block, out_start, out_end


# -------------------------------------------------------------------------------------------
# Belady's MIN


@njit(cache=True, nogil=True)
def next_uses(ids, n_ids):
    """For each reference, the index of the next reference to the same block (len: never)."""
    n = ids.shape[0]
    nxt = np.empty(n, np.int64)
    last = np.full(n_ids, n, np.int64)
    for i in range(n - 1, -1, -1):
        nxt[i] = last[ids[i]]
        last[ids[i]] = i
    return nxt


def next_and_previous_uses(ids, n_ids):
    """:func:`next_uses` and, in the same pass, for each reference the index of the previous
    reference to the same block (-1: none), each block's first reference (and a 0 after
    them: every block of ``0..n_ids-1`` is referenced) and :func:`longest_reuse` (passes of
    their own cost 0.012 s more on the benchmark's 2 M READs). The arrays are numpy's
    (:func:`_link_uses` fills them): numpy asks for huge pages for large ones, so when the
    allocator has given the heap's top back between calls, faulting them in again costs a
    few hundred page faults rather than tens of thousands."""
    n = ids.shape[0]
    nxt = np.empty(n, np.int64)
    prev = np.empty(n + 1, np.int64)  # prev[n]: where a reference with no next one writes
    last = np.full(n_ids + 1, n, np.int64)
    most = _link_uses(ids, nxt, prev, last)
    return nxt, prev[:n], last, int(most)


@njit(cache=True, nogil=True, _nrt=False)
def _link_uses(ids, nxt, prev, last):
    """:func:`next_and_previous_uses`' pass (``last``: ``n`` for each of the ``n_ids``
    blocks, and one more entry; ``prev``: n + 1 entries); returns the longest reuse.
    Without a branch on whether a reference has a next one: on the benchmark's trace that
    is a coin flip per reference, and its mispredictions cost a third of the pass."""
    n = ids.shape[0]
    most = 0
    for i in range(n - 1, -1, -1):
        j = last[ids[i]]
        nxt[i] = j
        prev[i] = -1  # until an earlier reference to the block is met
        prev[j] = i  # prev[n] when none
        most = max(most, j - i if j < n else 0)
        last[ids[i]] = i
    last[last.shape[0] - 1] = 0
    return most


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def uindex(i):
    """Index ``i``, known to be >= 0, as unsigned: numba then adds no negative-index check
    to the load or store (most of a heap walk's work is its loads and stores)."""
    return np.uint64(i)


# A max-heap of the resident blocks keyed by next use, and each block's place in it (so a
# block's key changes in place: no stale entries, and the heap stays the cache's size)


@njit(cache=True, nogil=True, _nrt=False)
def heap_up(hkey, hblk, pos, stride, run, i):
    """Move entry ``i`` up to its place; ``pos[block * stride + run]``: a block's entry."""
    key = hkey[uindex(i)]
    blk = hblk[uindex(i)]
    while i > 0:
        parent = (i - 1) >> 1
        if hkey[uindex(parent)] >= key:
            break
        hkey[uindex(i)] = hkey[uindex(parent)]
        hblk[uindex(i)] = hblk[uindex(parent)]
        pos[uindex(hblk[uindex(i)] * stride + run)] = i
        i = parent
    hkey[uindex(i)] = key
    hblk[uindex(i)] = blk
    pos[uindex(blk * stride + run)] = i


@njit(cache=True, nogil=True, _nrt=False)
def heap_down(hkey, hblk, pos, stride, run, size, i):
    """Move entry ``i`` down to its place in the heap of ``size`` entries."""
    key = hkey[uindex(i)]
    blk = hblk[uindex(i)]
    while True:
        big = 2 * i + 1
        if big >= size:
            break
        if big + 1 < size and hkey[uindex(big + 1)] > hkey[uindex(big)]:
            big += 1
        if hkey[uindex(big)] <= key:
            break
        hkey[uindex(i)] = hkey[uindex(big)]
        hblk[uindex(i)] = hblk[uindex(big)]
        pos[uindex(hblk[uindex(i)] * stride + run)] = i
        i = big
    hkey[uindex(i)] = key
    hblk[uindex(i)] = blk
    pos[uindex(blk * stride + run)] = i


@njit(cache=True, nogil=True, _nrt=False)
def _min_step(hkey, hblk, pos, stride, run, size, capacity, dead, ndead, b, i, key, never):
    """Reference ``i`` to block ``b``, next used at ``key`` (``never``: not again), in one
    MIN run: returns (missed, the heap's new size, the number of dead blocks).

    A block used again has that use as its key; a resident block's key was this
    reference's index, the least of all, so it only moves up. A block not used again is
    *dead*: it goes on the stack ``dead`` and keeps in the heap the index of its last
    reference, below every live key, so the root is the live block used furthest away. On
    a miss with the cache full, a dead block makes room if there is one (any block never
    used again is as good as another), else the root."""
    at = pos[b * stride + run]
    if at >= 0:
        if key == never:
            dead[ndead] = b
            ndead += 1
        else:
            hkey[at] = key
            heap_up(hkey, hblk, pos, stride, run, at)
        return False, size, ndead
    if capacity <= 0:
        return True, size, ndead
    own = key if key != never else i
    if size < capacity:
        hkey[size] = own
        hblk[size] = b
        heap_up(hkey, hblk, pos, stride, run, size)
        size += 1
    elif ndead > 0:  # its place, whose key was an earlier reference's index: up only
        ndead -= 1
        at = pos[dead[ndead] * stride + run]
        pos[dead[ndead] * stride + run] = -1
        hkey[at] = own
        hblk[at] = b
        heap_up(hkey, hblk, pos, stride, run, at)
    else:
        pos[hblk[0] * stride + run] = -1
        hkey[0] = own
        hblk[0] = b
        heap_down(hkey, hblk, pos, stride, run, size, 0)
    if key == never:
        dead[ndead] = b
        ndead += 1
    return True, size, ndead


@njit(cache=True, nogil=True)
def belady_runs(ids, nxt, capacity, other, n_ids):
    """Belady's MIN (on a miss with the cache full, evict the resident block whose next use
    is furthest in the future) over references ``ids`` (``nxt``: :func:`next_uses`), with
    ``capacity`` blocks and, in the same pass, with ``other`` blocks (0: not run). Returns
    (the references at which the first misses, in order; the second's misses)."""
    n = ids.shape[0]
    out = np.empty(n, np.int64)
    m = 0
    second = 0
    pos = np.full(2 * n_ids, -1, np.int32)  # block b's entry: pos[2b] first run, pos[2b+1]
    ka = np.empty(max(min(capacity, n_ids), 1), np.int64)  # the heaps: never above n_ids
    ba = np.empty(ka.shape[0], np.int64)
    da = np.empty(ka.shape[0], np.int64)
    kb = np.empty(max(min(other, n_ids), 1), np.int64)
    bb = np.empty(kb.shape[0], np.int64)
    db = np.empty(kb.shape[0], np.int64)
    size_a = size_b = dead_a = dead_b = 0
    for i in range(n):
        b = ids[i]
        missed, size_a, dead_a = _min_step(ka, ba, pos, 2, 0, size_a, capacity, da, dead_a,
                                           b, i, nxt[i], n)
        if missed:
            out[m] = i
            m += 1
        if other > 0:
            missed, size_b, dead_b = _min_step(kb, bb, pos, 2, 1, size_b, other, db, dead_b,
                                               b, i, nxt[i], n)
            second += missed
    return out[:m], second


@njit(cache=True, nogil=True)
def longest_reuse(nxt):
    """The most references from one reference to the next to the same block (0: none)."""
    n = nxt.shape[0]
    most = 0
    for i in range(n):
        if nxt[i] < n:
            most = max(most, nxt[i] - i)
    return most


@njit(cache=True, nogil=True)
def first_references(ids, n_ids):
    """The index of each block's first reference, in reference order."""
    seen = np.zeros(n_ids, np.bool_)
    out = np.empty(n_ids, np.int64)
    m = 0
    for i in range(ids.shape[0]):
        if not seen[ids[i]]:
            seen[ids[i]] = True
            out[m] = i
            m += 1
    return out[:m]


def first_references_of(prev, n_ids):
    """:func:`first_references` from the references' previous uses (-1: none): one
    sequential pass, no lookup per reference (0.005 -> 0.002 s on the benchmark's trace);
    the array is numpy's (:func:`next_and_previous_uses` says why)."""
    out = np.empty(n_ids + 1, np.int64)  # out[n_ids]: written past the last one
    return out[:_first_references_into(prev, out)]


@njit(cache=True, nogil=True, _nrt=False)
def _first_references_into(prev, out):
    """Without a branch per reference (a coin flip on the benchmark's trace): each index
    is written, and kept (the count moves on) when it is a first reference; at most
    ``out.shape[0] - 1`` of them."""
    m = 0
    for i in range(prev.shape[0]):
        out[m] = i
        m += prev[i] < 0
    return m


@njit(cache=True, nogil=True)
def belady_fetches(ids, nxt, capacity, n_ids):
    """The references at which Belady's MIN with ``capacity`` blocks misses, in order
    (indices into ``ids``; :func:`belady_runs`). They are also Cao et al.'s *conservative*
    schedule's fetches (:mod:`seqheur.oracle`)."""
    return belady_runs(ids, nxt, capacity, 0, n_ids)[0]


@njit(cache=True, nogil=True)
def belady_misses(ids, nxt, capacity, n_ids):
    """Demand misses of Belady's MIN with ``capacity`` blocks (:func:`belady_fetches`)."""
    if capacity >= n_ids:
        return n_ids
    return belady_fetches(ids, nxt, capacity, n_ids).shape[0]


def belady(keys: np.ndarray, capacity: int | None) -> int:
    """Belady's MIN demand misses of a reference sequence of hashable int64 keys (None: an
    unbounded cache, the number of distinct keys)."""
    uniq, ids = np.unique(np.asarray(keys, np.int64), return_inverse=True)
    if capacity is None:
        return int(uniq.size)
    ids = ids.astype(np.int64)
    return int(belady_misses(ids, next_uses(ids, uniq.size), int(capacity), uniq.size))


# -------------------------------------------------------------------------------------------
# the disk lower bound


@cache_by_sources  # calls the drive model's extent_piece: keyed by every source
@njit(nogil=True, _nrt=False)
def _block_pieces(keys, sizes, bs, ext_first, ext_base, extent_bytes, out_addr, out_len,
                  out_base, out_owner):
    """Physically contiguous pieces of each block (``keys``: ``cache.make_key``; its bytes
    up to its file's end in ``sizes``), as ``disk.model.service_kernel`` maps file offsets:
    extent by extent; ``out_base``: the start of the piece's region (its file's for a
    contiguous layout, else its extent's). Returns the number of pieces."""
    m = 0
    for i in range(keys.shape[0]):
        f = keys[i] >> KEY_SHIFT
        off = (keys[i] & BLOCK_MASK) * bs
        rem = min(bs, sizes[f] - off)
        while rem > 0:
            base, within, piece = extent_piece(f, off, rem, ext_first, ext_base,
                                               extent_bytes)
            out_addr[m] = base + within
            out_len[m] = piece
            out_base[m] = base
            out_owner[m] = i
            m += 1
            rem -= piece
            off += piece
    return m


def distance_cost(model: Any) -> tuple[Callable[[np.ndarray], np.ndarray], str]:
    """``G`` of the module docstring for a DiskModel, and how it was made: ``"positioning"``
    (``min(P(d), d / r_max)``, checked subadditive) or ``"min-positioning"`` (the fallback)."""
    r = float(model.zone_rate.max())
    if model.seek_d.size == 0:  # no curve: every positioning is the random one
        p0 = float(model.fparams[3])
        return (lambda d: np.minimum(np.asarray(d, np.float64) / r, p0)), "positioning"
    dpts = np.asarray(model.seek_d, np.float64)
    tpts = np.minimum.accumulate(np.asarray(model.seek_t, np.float64)[::-1])[::-1]

    def g(d: Any) -> np.ndarray:
        d = np.asarray(d, np.float64)
        return np.minimum(np.interp(d, dpts, tpts), d / r)

    # breakpoints of g: the curve's, and where d / r crosses each of its pieces
    pts = [0.0, *dpts.tolist(), tpts[0] * r, tpts[-1] * r]
    for j in range(dpts.size - 1):
        s = (tpts[j + 1] - tpts[j]) / (dpts[j + 1] - dpts[j])
        if s != 1.0 / r:
            x = (tpts[j] - s * dpts[j]) / (1.0 / r - s)
            if dpts[j] < x < dpts[j + 1]:
                pts.append(x)
    b = np.unique(np.asarray(pts, np.float64))
    b = np.append(b, 2.0 * b[-1] + 1.0)
    a1, b1 = np.meshgrid(b, b)
    s2, a2 = np.meshgrid(b, b)
    a = np.concatenate([a1.ravel(), a2.ravel()])
    c = np.concatenate([b1.ravel(), (s2 - a2).ravel()])
    keep = (a > 0) & (c > 0)
    a, c = a[keep], c[keep]
    slack = g(a) + g(c) - g(a + c)
    if slack.min() >= -1e-12 * float(tpts[-1]):
        return g, "positioning"
    pmin = float(tpts.min())
    return (lambda d: np.minimum(np.asarray(d, np.float64) / r, pmin)), "min-positioning"


@njit(cache=True, nogil=True, _nrt=False)
def _zone_of(zone_start, addr):
    """The zone of disk address ``addr`` (the last zone starting at or before it; 0 before
    the first)."""
    lo = 0
    hi = zone_start.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if zone_start[mid] <= addr:
            lo = mid + 1
        else:
            hi = mid
    return max(lo - 1, 0)


@cache_by_sources  # calls the drive model's extent_piece: keyed by every source
@njit(nogil=True, _nrt=False)
def _transfer_and_gaps(keys, sizes, bs, ext_first, ext_base, extent_bytes, longest, ra,
                       zone_start, span_max, piece_s, gaps):
    """Terms 1 and 2 of the module docstring over :func:`_block_pieces`' pieces, made as it
    makes them (no arrays of them: a pass over four arrays of a piece per block cost more
    than the work): per piece, its bytes at the fastest rate of the zones a read covering
    it may start in (``span_max[first, last]``: the fastest of zones first to last), into
    ``piece_s``; the gaps between runs of pieces (each piece's start less the furthest end
    before it, when positive) into ``gaps`` while the pieces come in address order.
    Returns (the pieces, the gaps or -1 if the pieces are not in address order, the least
    sum over a block of its pieces' seconds: inf without blocks)."""
    m = 0
    k = 0
    cheapest = np.inf
    last_addr = np.int64(0)
    end = np.int64(0)
    for i in range(keys.shape[0]):
        f = keys[i] >> KEY_SHIFT
        off = (keys[i] & BLOCK_MASK) * bs
        rem = min(bs, sizes[f] - off)
        block_s = 0.0
        while rem > 0:
            base, within, ln = extent_piece(f, off, rem, ext_first, ext_base, extent_bytes)
            addr = base + within
            lo = addr - longest - ra
            if addr - base >= bs:
                lo = max(lo, base - ra)
            rate = span_max[_zone_of(zone_start, lo), _zone_of(zone_start, addr + ln - 1)]
            piece_s[m] = ln / rate
            block_s += piece_s[m]
            if m == 0:
                end = addr + ln
            elif k >= 0:
                if addr < last_addr:
                    k = -1
                else:
                    if addr > end:
                        gaps[k] = addr - end
                        k += 1
                    end = max(end, addr + ln)
            last_addr = addr
            m += 1
            rem -= ln
            off += ln
        cheapest = min(cheapest, block_s)
    return m, k, cheapest


def drive_cache_blocks(model: Any, block_size: int) -> int:
    """The most demanded blocks the drive's segments can touch at once (0: no drive cache)."""
    nseg, seg = int(model.iparams[0]), int(model.iparams[1])
    if nseg == 0:
        return 0
    per_seg = -(-seg // min(block_size, _ALIGN)) + 1
    ext = int(model.layout.extent_bytes)
    if ext:
        per_seg += 2 * (-(-seg // ext) + 1)
    return nseg * per_seg


def disk_bound(model: Any, sizes: np.ndarray, keys: np.ndarray, block_size: int
               ) -> dict[str, Any]:
    """The terms of the disk lower bound (no re-reads) for the distinct blocks ``keys``
    (``cache.make_key``, int64)."""
    bs = int(block_size)
    sizes = np.ascontiguousarray(sizes, np.int64)
    place = model.place(np.maximum(sizes, 1))
    ext = int(model.layout.extent_bytes)
    cap = keys.size * (1 if ext == 0 else bs // ext + 2)
    # 1. transfer, each piece at the fastest zone a read covering it may start in
    ra = int(model.iparams[2])
    longest = int(((np.maximum(sizes, 1) + bs - 1) // bs * bs).max()) if sizes.size else bs
    if ext:
        longest = min(longest, ext)
    zr = model.zone_rate
    nz = zr.size
    span_max = np.array([[zr[i:max(i, j) + 1].max() for j in range(nz)] for i in range(nz)],
                        np.float64)
    keys = np.ascontiguousarray(keys, np.int64)
    # numpy's arrays, not numba's (next_and_previous_uses says why)
    piece_s, gaps = np.empty(cap), np.empty(max(cap - 1, 0), np.int64)
    m, k, cheapest = _transfer_and_gaps(
        keys, sizes, np.int64(bs), place.ext_first, place.ext_base,
        np.int64(place.extent_bytes), np.int64(longest), np.int64(ra),
        np.ascontiguousarray(model.zone_start), span_max, piece_s, gaps)
    piece_s = piece_s[:m]
    # 2. gaps between runs, in address order (a contiguous layout has them so already)
    if k >= 0:
        gaps = gaps[:k]
    else:
        addr, ln = np.empty(cap, np.int64), np.empty(cap, np.int64)
        base, owner = np.empty(cap, np.int64), np.empty(cap, np.int64)
        _block_pieces(keys, sizes, np.int64(bs), place.ext_first, place.ext_base,
                      np.int64(place.extent_bytes), addr, ln, base, owner)
        addr, ln = addr[:m], ln[:m]
        order = np.argsort(addr, kind="stable")
        a_sorted, e_sorted = addr[order], (addr + ln)[order]
        gaps = a_sorted[1:] - np.maximum.accumulate(e_sorted)[:-1]
        gaps = gaps[gaps > 0]
    cost, how = distance_cost(model)
    return {
        "bound_first_seconds": float(model.fparams[3] + model.fparams[1]) if m else 0.0,
        "bound_transfer_seconds": float(piece_s.sum()),
        "bound_gap_seconds": float(cost(gaps.astype(np.float64)).sum()) if gaps.size else 0.0,
        "bound_gap_cost": how,
        "runs": int(gaps.size + 1) if m else 0,
        "_cheapest_block_s": float(cheapest) if keys.size else 0.0,
    }


# -------------------------------------------------------------------------------------------
# public API


def default_block_size() -> int:
    """The block size of the default replay configuration's policy (16 KiB)."""
    from .heuristics.registry import parse_detector

    return int(resolve_policy(DEFAULT.policy, parse_detector(DEFAULT.detector).info).bsize)


def _cache_bytes(cache: Any) -> int | None:
    if cache is None or (isinstance(cache, str)
                         and cache.strip().lower() in ("none", "unbounded", "inf")):
        return None
    return parse_size(cache)


def bound(trace_or_stream: Any, cache: Any = DEFAULT.cache, profile: Any = DEFAULT.profile,
          block_size: Any = None, *, file_sizes: Any = "auto", layout: Any = None,
          drive_cache: bool = True, sizes_from: Any = None, timing: Any = None,
          oracle: bool = True, references: bool = True) -> dict[str, Any]:
    """Lower bounds of a trace (module docstring): a dict with ``lower_bound_disk_seconds``
    (None without a profile), ``belady_misses``, ``lru_misses``, ``distinct_blocks``,
    ``requests``, ``block_size``, ``cache_bytes``, ``profile`` and the bound's terms; with
    ``oracle`` the clairvoyant read-ahead's replay (:mod:`seqheur.oracle`:
    ``oracle_disk_seconds``, ``oracle_throughput_mbps``, ``oracle_misses``, ...; ``timing``: a
    timing model for its end-to-end columns); with ``references`` Cao et al.'s aggressive and
    conservative schedules (``aggressive_disk_seconds``, ``conservative_disk_seconds``, their
    fetches).

    ``trace_or_stream``, ``file_sizes``, ``layout``, ``drive_cache``, ``sizes_from`` and
    ``profile`` (a spec, a profile JSON path or None) are as for :func:`seqheur.replay`.
    ``cache``: a size (``"256MiB"``), or None / ``"unbounded"``. ``block_size``: the cache
    block (a size; default: the default policy's, 16 KiB); compare with a replay whose
    summary has the same ``block_size``.

    >>> s = ReadStream.from_arrays([0, 0, 1, 0], [0, 16384, 0, 0], [16384] * 4)
    >>> r = bound(s, cache="32KiB", profile=None)
    >>> r["distinct_blocks"], r["belady_misses"], r["lru_misses"]
    (3, 3, 4)
    """
    stream = _as_stream(trace_or_stream)
    source = sizes_from if isinstance(trace_or_stream, ReadStream) else trace_or_stream
    sizes, size_source = file_sizes_for(source, stream, file_sizes)
    bs = default_block_size() if block_size is None else parse_size(block_size)
    if bs <= 0:
        raise SeqheurError(f"block size must be positive, not {block_size!r}")
    cache_bytes = _cache_bytes(cache)
    lru_cache = None if cache_bytes is None else C.new_cache(cache_bytes, bs)  # checks the size
    cap = None if cache_bytes is None else cache_bytes // bs
    model = None
    if profile is not None:
        from .disk.model import DiskModel, Layout

        if sizes is None:
            raise SeqheurError("the disk model needs file sizes to lay files out: pass "
                               "file_sizes (or profile=None)")
        model = DiskModel.from_profile(profile, layout if layout is not None else Layout(),
                                       drive_cache=drive_cache)
    eof_sizes = sizes
    if sizes is None:  # no end of file: every READ is demanded whole
        sizes = np.full(stream.n_files, np.iinfo(np.int64).max // 4, np.int64)
    from .oracle import conservative_fetches, refs_of

    refs = refs_of(stream, sizes, bs, reads=oracle)
    rf, rb, uniq, ids, nxt = refs.file, refs.block, refs.keys, refs.ids, refs.nxt
    distinct = int(uniq.size)
    # one MIN pass gives conservative's fetches (MIN's misses), Belady's misses and those
    # with the drive's segments added (the re-read term), unless LRU already tells
    d = drive_cache_blocks(model, bs) if model is not None else 0
    cons = None
    bel = bel_d = distinct
    lru = distinct  # every block missed once: a cache that holds them all
    if lru_cache is not None and (refs.longest if refs.longest is not None
                                  else longest_reuse(nxt)) > cap:
        # else every re-reference comes at most C references after the last one to its
        # block, so fewer than C other blocks were touched in between: an LRU hit
        lru = int(C.lru_misses(rf, rb, lru_cache))
    if lru == distinct and references:
        # LRU misses each block once (so does any cache holding every block), so MIN (never
        # more misses than LRU, never fewer than the distinct blocks) does, with this cache
        # or a larger one: its misses are the blocks' first references
        cons = (first_references_of(refs.prev, distinct) if refs.prev is not None
                else first_references(ids, distinct))
    elif references or lru > distinct:
        drive = model is not None and cap is not None and cap + d < distinct
        fetched, bel_d = belady_runs(
            ids, nxt, np.int64(cap if cap is not None else distinct + 1),
            np.int64(cap + d if drive else 0), distinct)
        cons = fetched if references else None
        bel = int(fetched.size) if cap is not None else distinct
        bel_d = int(bel_d) if drive else distinct
    out: dict[str, Any] = {
        "requests": len(stream),
        "demand_blocks": int(rf.size),
        "distinct_blocks": distinct,
        "belady_misses": bel,
        "lru_misses": lru,
        "block_size": bs,
        "cache": cache if isinstance(cache, str) or cache is None else f"{cache_bytes}B",
        "cache_bytes": cache_bytes,
        "cache_blocks": cap,
        "profile": None if model is None else (getattr(model, "spec", None) or str(profile)),
        "file_sizes": size_source,
        "files": stream.n_files,
        "lower_bound_disk_seconds": None,
    }
    if oracle:
        out.update(_oracle_keys(stream, eof_sizes, bs, cache_bytes, distinct, profile, layout,
                                drive_cache, timing, refs))
    if references:
        from .oracle import reference_schedules

        out.update(reference_schedules(stream, eof_sizes, cache_blocks=cap if cap is not None
                                       else distinct + 1, block_size=bs, model=model,
                                       refs=refs, conservative=cons))
    if model is None:
        return out
    terms = disk_bound(model, sizes, uniq, bs)
    reread = (bel_d - distinct) * terms.pop("_cheapest_block_s")
    out.update(terms)
    out["drive_cache_blocks"] = d
    out["belady_misses_drive"] = bel_d
    out["bound_reread_seconds"] = float(reread)
    out["lower_bound_disk_seconds"] = float(
        out["bound_first_seconds"] + out["bound_transfer_seconds"] + out["bound_gap_seconds"]
        + reread)
    return out


def _oracle_keys(stream: ReadStream, sizes: Any, bs: int, cache_bytes: int | None,
                 distinct: int, profile: Any, layout: Any, drive_cache: bool,
                 timing: Any, refs: Any) -> dict[str, Any]:
    """The oracle's replay (:mod:`seqheur.oracle`) as ``oracle_*`` keys; an unbounded cache
    is one that holds every distinct block (the oracle inserts no other)."""
    from .oracle import run_oracle

    cb = cache_bytes if cache_bytes is not None else (distinct + 1) * bs
    r = run_oracle(stream, sizes, cache_bytes=cb, block_size=bs, profile=profile,
                   layout=layout, drive_cache=drive_cache, timing=timing,
                   refs=refs if sizes is not None else None)
    keys = {"oracle_disk_seconds": r["disk_seconds"] if profile is not None else None,
            "oracle_throughput_mbps": r["throughput_mbps"] if profile is not None else None,
            "oracle_misses": r["misses"], "oracle_disk_ops": r["disk_ops"],
            "oracle_prefetched": r["prefetched"]}
    if "e2e_seconds" in r:
        keys["oracle_e2e_seconds"] = r["e2e_seconds"]
        keys["oracle_e2e_throughput_mbps"] = r["e2e_throughput_mbps"]
    return keys


__all__ = ["bound", "belady", "belady_misses", "demand_refs", "demand_refs_and_reads",
           "disk_bound", "distance_cost", "drive_cache_blocks", "next_and_previous_uses",
           "next_uses"]


from ._callable import callable_module  # noqa: E402

callable_module(__name__, bound)
