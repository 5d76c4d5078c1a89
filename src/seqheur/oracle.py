"""The clairvoyant read-ahead (``oracle``): an achievable schedule that knows the future.

    r = seqheur.oracle.run_oracle(stream, sizes, cache_bytes=..., block_size=16384,
                                  profile="ide-7200")
    r["disk_seconds"], r["misses"], r["throughput_mbps"]

It is replayed by the same :class:`seqheur.replay.Replayer` as every detector (same table
``ideal``, same buffer cache, same disk-op buffer handed to the same disk and timing models);
only the serve step differs: :func:`oracle_serve` in place of a policy's. For every READ, in
trace order, it

1. accounts the demand blocks in order exactly as ``readahead.simple_request`` does (a
   resident block is a hit and an LRU touch, a missing one a miss, inserted), so what it
   reads is what any schedule must have in the cache at that moment;
2. only when the READ missed, reads ahead: the following blocks of the file that the
   file's **future demand** uses (known from the whole trace: :class:`Future`) *before the
   cache would evict it*, skipping blocks already resident and reading **over** a gap
   (resident blocks, blocks not needed) when the gap is at most ``gap_blocks`` (its media
   time is below the command overhead plus the shortest positioning a second read would
   pay), stopping at the first longer gap, at the end of the file, or where a later READ
   would be served only in part (reading part of a READ saves no disk read); the read-ahead
   ends after the last READ it serves whole (the blocks admitted into a READ served in
   part are a way the rollouts try, below: they make that READ's read shorter). A block
   read over is not inserted: caching it would only push out blocks that will be used;
3. chooses how to read the demand and the read-ahead on a **shadow of the drive** (the
   same ``disk.model`` kernel and state, fed the same reads in the same order, so it is the
   drive's state at this moment), :func:`choose_reads`: it keeps the read-ahead unless the
   READ's own blocks followed at once by the rest (the best case for stopping) cost less,
   e.g. when the READ's blocks are in the drive's cache and the longer read is not; then
   it prices that choice together with what the next ``HORIZON`` READs would read (the
   blocks read in the look ahead resident for the READs after them, the choice's read-ahead
   up to its first use and after it while the cache would keep it, a block used in the
   look ahead while fewer distinct blocks than the cache's came since, :func:`price_after`;
   with caches of at most ``AHEAD_MAX`` blocks on a contiguous layout priced twice, the READs
   as they are and reading ahead as the oracle would, the cheaper, :func:`price_later`)
   against a few other ways: the read-ahead in a read of its own (room for the drive's
   read-ahead), reading over to a file's end that is near (the drive's read-ahead runs on
   into the next file; a partial last block read alone ends at the next file's start;
   not over a block a READ priced demands that neither cache would keep),
   the demand alone when the READs priced use all the read-ahead,
   with a buffer cache no larger than a drive segment, filling the segment (the drive's
   cache keeps what the buffer cache cannot), the read's last block apart (room for the
   drive's read-ahead), the blocks a drive segment holds apart (a hit) and, on a fragmented
   layout, the read-ahead (or the read over to a near file end) cut before an extent another
   read may stream into (with a buffer cache no larger than a drive segment, the read-ahead
   cut before any extent it would position to) and, with a buffer cache no larger than a
   drive segment, a read longer than a segment cut after its first (one read leaves only
   its last segment's bytes in the drive's cache); without a drive cache, the read over
   the gap to the first block the next READ of the file to read past it reads (that read
   then streams on where it would position); then the way chosen after a *wait*, when its first read lands in
   the segment the drive's read-ahead is filling, past where it got: re-reads of the last
   read (hits, during which the drive reads ahead) until the read-ahead holds the read, a
   hit then too (:func:`wait_hits`). The cheapest is issued: one disk read, or two back to
   back, after the wait's re-reads if any.

*Before the cache would evict it*: the cache is an LRU of ``C`` blocks, so a block inserted
now survives to its use iff fewer than ``C`` other distinct blocks are touched in between.
Those are the demand references in between (``D`` distinct blocks, the block itself
excluded; counted, walking the references from the one read ahead at, while that walk
costs at most ``WALK`` references per block the read admits (a lone reader), else bounded
from above by the smallest of a few limits, :func:`limits_of`, with ``reach``: per limit,
the furthest reference with at most ``limit + 1`` distinct blocks after the reference read
ahead at, two pointers per limit that move forward with the trace,
:func:`advance_reach`) and the blocks read ahead that are inserted before its use and used
only after it (a block read ahead and used before it is one of the ``D``). So each block
read ahead has a *slack*, ``C - 1 - D`` less those blocks; a block is read ahead only if its
own slack is >= 0 and every waiting block used before it (which it pushes down the LRU
list) has slack >= 1, which it then spends (:class:`Pending`: a segment tree over reference
indices with range add, range minimum and the count of blocks waiting under each node;
the blocks of one read admitted in the order of their use go in together once the read is
decided, :func:`commit`). Every block read ahead is therefore used before the cache evicts
it. A demand block of another reader may be
pushed out: the oracle does not protect re-references, which Belady-style eviction would.

On a trace of at most ``ROLLOUT_READS`` READs the replay is improved by **rollouts**
(:func:`rollouts`, a pilot method): the first replay logs, per decision of
:func:`choose_reads`, the ways it priced with their look-ahead prices (and a few it does
not price: the demand alone, the read-ahead in the same read or apart, the read-ahead on
into a later READ it serves in part, the way chosen in disk reads of a drive segment each);
then, decision by decision, each way priced within
``ROLLOUT_CLOSE`` of the chosen one is imposed there and the oracle's own choices run on
from it to the trace's end, and the run with the least disk time is kept when it beats the
schedule so far (at most ``ROLLOUT_MAX`` rollouts, and while the work they replay, READs
and decisions counted, fits ``ROLLOUT_WORK``: a count, so the same rollouts run on every
machine). Each run is a
replay of the same schedule-maker (one replayer, restarted for each), so the result is a
schedule the models ran, never dearer than the greedy one; on longer traces nothing is
logged or imposed and the replay is the greedy one.

It is a constructive schedule, not a proven optimum: the look ahead is a greedy estimate
(the READs after a choice are priced as reads of their missing blocks, without the
oracle's own later read-ahead and ways, and blocks count resident by a count of the
distinct blocks touched), and docs/bound.md lists where a detector still beats it (which
of its reads the drive's segments keep, beyond the READs looked ahead).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import leading_zeros

from . import cache as C
from . import engine as E
from . import readahead as R
from .disk.model import (F_HITOVER, F_HOST, I_NSEG, I_SEGBYTES, NO_EXTENTS, S_HDR, S_PFLIM,
                         S_PFPOS, S_PFSEG, _rate, extent_address, service_kernel,
                         service_read)
from .bound import (belady_fetches, demand_refs_and_reads, next_and_previous_uses,
                    next_uses, uindex)
from .replay import Replayer
from .streams import ReadStream
from . import _inlining

_inlining.install()  # numba's inliner: one copy of a callee's IR, not one per block (_inlining)


class Future(NamedTuple):
    """What the oracle knows of the future, indexed by the trace's demand references (every
    demanded block, READ by READ in trace order, as :func:`seqheur.bound.demand_refs`)."""

    ref0: np.ndarray  # int64[requests]: index of the READ's first demand reference
    rfile: np.ndarray  # int32[requests]: the READ's file (the stream's own array)
    keys: np.ndarray  # int64[distinct]: the distinct block keys (cache.make_key), sorted
    ids: np.ndarray  # int64[refs]: index of each reference's key in ``keys``
    ends: np.ndarray  # int64[refs]: the last block of each reference's READ
    walk: np.ndarray  # int64[distinct + 1]: per key, where next_use's walk along its
    # references stopped (its first reference to begin with); last, the k asked last
    walk_end: np.ndarray  # int64[distinct]: ends of that reference (per key, so that
    # the blocks of a read ahead, consecutive keys, find it side by side)
    cache_blocks: int  # C
    limits: np.ndarray  # int64[L]: bounds on D, ascending (0 .. C - 1)
    nxt: np.ndarray  # int64[refs]: the next reference to the same block (refs: none)
    prev: np.ndarray  # int64[refs]: the previous one (-1: none)
    window: np.ndarray  # int64[3, L]: per bound, a window of references (advance_reach)
    reach: np.ndarray  # int64[L]: per bound D, the furthest reference with at most D + 1
    # distinct blocks after the reference the oracle reads ahead at (the block among them)
    gap_blocks: int  # the longest gap a read covers rather than stop
    later: np.ndarray  # int64[requests]: the next READ of the same file (requests: none;
    # empty with caches above AHEAD_MAX, where the look ahead does not read ahead)


class Pending(NamedTuple):
    """The blocks read ahead and not yet used, at the reference of their use: each one's
    *slack* (how many more blocks may still be touched before its use without evicting it)
    in a segment tree with range add and range minimum over reference indices (unused
    positions hold a huge value), which also counts the blocks waiting under each node.

    A read ahead after reference ``k`` asks only about positions past ``k`` (the least
    slack in ``k+1 .. u-1``, how many wait past ``u > k``), and ``k`` only grows over the
    trace. So a block that reaches its use is not taken out: its position is at most every
    later ``k``; its slack is in no range asked about, and it is counted both in its
    position's count, which no later question reaches either.

    The tree covers a *window* of ``W`` positions from ``base`` (``frame``), not the whole
    trace: a block is read ahead only if used before the cache evicts it, so the positions
    asked about lie within a few cache sizes of ``k`` (W = 4C on the paper's workload at
    2 M READs: 2 MB of tree touched instead of 64 MB; no faster there, as the machine's
    caches held most of the questions' nodes either way, but the memory no longer grows
    with the trace). A position past the window moves it (:func:`fit`, :func:`_move`): it
    starts at ``k + 1`` (what lies before is never asked about again), twice as wide when
    the span asked about is more than half of it."""

    node: np.ndarray  # int32 (int64 for huge traces) [2N * 4], N > refs: node p's four
    # words from 4p on (:func:`_w`); the tree uses its first 2W nodes (root 1, leaves
    # W..2W-1: positions base..base+W-1), the rest is never touched (zero pages until a
    # wider window needs them): per node the least slack under it, its own pending add
    # included (_MIN); the add pending for its children (_ADD); the blocks waiting under it
    # (_COUNT); and padding, so that nodes are 16 bytes and siblings share a cache line
    frame: np.ndarray  # int64[2]: the window's width W (a power of two) and base
    cursor: np.ndarray  # int64[3]: admit_deferred's place in the tree: a node (0: none),
    # its height, the adds of its ancestors
    huge: int  # the slack of a position where no block waits (above any drift of adds)
    undo: np.ndarray  # int64[C + 1]: positions admitted by the read being planned
    admitted: np.ndarray  # int64[C + 1]: and their blocks
    slack: np.ndarray  # int64[C + 1]: and their slacks, while not yet in the tree (commit)


class Drive(NamedTuple):
    """A shadow of the replay's drive (``disk.model`` state, serviced with the same reads in
    the same order, so it is the drive's state at every decision), and scratch to price a
    read on a copy of it. ``on`` 0: no disk model (every read costs the same)."""

    on: int
    state: np.ndarray  # int64: the drive's state (DiskModel.new_state layout)
    trial: np.ndarray  # int64: scratch copy of it
    held: np.ndarray  # int64: the trial copy after a way's own reads (priced twice after it)
    ext_first: np.ndarray
    ext_base: np.ndarray
    extent_bytes: int
    ip: np.ndarray
    fp: np.ndarray
    seek_d: np.ndarray
    seek_t: np.ndarray
    zone_start: np.ndarray
    zone_rate: np.ndarray
    op_file: np.ndarray  # int64[1]: one read, as service_kernel takes it
    op_off: np.ndarray
    op_len: np.ndarray
    idle: np.ndarray  # float64[0]: back to back
    out_s: np.ndarray  # float64[1]
    out_f: np.ndarray  # uint8[1]
    ranges: np.ndarray  # int64[2 HORIZON, 4]: price_after's reads (file, first, last, touched)
    ext_prev: np.ndarray  # int64[extents]: the extent that ends where each one starts (-1)
    ext_file: np.ndarray  # int64[extents]: each extent's file
    last: np.ndarray  # int64[3]: the last read issued (file, offset, bytes; file -1: none),
    # which the waits re-read (:func:`wait_hits`)
    ranks: np.ndarray  # int64[RANK_MAX]: price_after's LRU places of resident blocks
    ways: np.ndarray  # int64[WAYS_MAX, 6]: choose_reads' ways to price (:func:`_add_way`)
    plan: np.ndarray  # int64[4]: choose_reads' calls so far (its decisions, numbered from
    # 0), the rows of ``forced`` and the next of them to apply (:func:`run_oracle`'s
    # rollouts); the blocks per disk read of the way chosen last (0: each read whole)
    forced: np.ndarray  # int64[F, 7]: ways imposed, in decision order: (decision, first
    # read's last block, second's, read-ahead lo, hi, look ahead reading ahead, blocks per
    # disk read (0: each read whole))
    log: np.ndarray  # int64[L, LOG_WAYS, 6]: the first L decisions' ways (as in ``forced``)
    log_s: np.ndarray  # float64[L, LOG_WAYS]: and their prices with the look ahead
    log_n: np.ndarray  # int64[L, 2]: per decision, the ways logged and which was chosen


def drive_of(model: Any, place: Any, forced: np.ndarray | None = None,
             log_decisions: int = 0) -> Drive:
    """The shadow of ``model`` (a DiskModel, or None) with files at ``place``; ``forced``
    and ``log_decisions``: :func:`_plan_of`."""
    if model is None:
        z = np.zeros(1, np.int64)
        f = np.zeros(1, np.float64)
        return Drive(0, z, z.copy(), z.copy(), z, z, 1, z, f, f, f, z, f, z.copy(), z.copy(),
                     z.copy(), np.zeros(0, np.float64), f.copy(), np.zeros(1, np.uint8),
                     np.zeros((2 * HORIZON, 4), np.int64), z.copy(), z.copy(),
                     np.full(3, -1, np.int64), np.zeros(RANK_MAX, np.int64),
                     np.zeros((WAYS_MAX, 6), np.int64), *_plan_of(forced, log_decisions))
    st = model.new_state()
    return Drive(1, st, st.copy(), st.copy(), place.ext_first, place.ext_base,
                 int(place.extent_bytes), *model.kernel_args(), np.zeros(1, np.int64),
                 np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(0, np.float64),
                 np.zeros(1, np.float64), np.zeros(1, np.uint8),
                 np.zeros((2 * HORIZON, 4), np.int64),
                 *_neighbours(place), np.full(3, -1, np.int64), np.zeros(RANK_MAX, np.int64),
                 np.zeros((WAYS_MAX, 6), np.int64), *_plan_of(forced, log_decisions))


def restart_drive(dr: Drive, model: Any, forced: np.ndarray | None = None,
                  log_decisions: int = 0) -> Drive:
    """``dr`` (of ``model``, a DiskModel or None) as :func:`drive_of` makes it, with
    ``forced`` and ``log_decisions``: the drive's state as it starts, the scratch as new, the
    last read none; the placement's arrays and the model's parameters kept."""
    if not dr.on:
        return drive_of(None, None, forced, log_decisions)
    start = model.new_state()
    for a in (dr.state, dr.trial, dr.held):
        a[:] = start
    for a in (dr.op_file, dr.op_off, dr.op_len, dr.out_s, dr.out_f, dr.ranges, dr.ranks,
              dr.ways):
        a[...] = 0
    dr.last[:] = -1
    return dr._replace(**dict(zip(("plan", "forced", "log", "log_s", "log_n"),
                                  _plan_of(forced, log_decisions))))


def _plan_of(forced: np.ndarray | None, log_decisions: int) -> tuple:
    """:class:`Drive`'s ``plan``, ``forced``, ``log``, ``log_s`` and ``log_n``: the ways
    imposed (rows of :attr:`Drive.forced`) and room to log the first ``log_decisions``
    decisions' ways (0: none, as in every replay but a rollout's)."""
    f = np.zeros((0, 7), np.int64) if forced is None else np.ascontiguousarray(forced, np.int64)
    plan = np.array([0, f.shape[0], 0, 0], np.int64)
    return (plan, f, np.zeros((log_decisions, LOG_WAYS, 6), np.int64),
            np.zeros((log_decisions, LOG_WAYS), np.float64),
            np.zeros((log_decisions, 2), np.int64))


def _neighbours(place: Any) -> tuple[np.ndarray, np.ndarray]:
    """For each extent of ``place``, the extent that ends where it starts on the disk (-1:
    none), and each extent's file."""
    base = np.asarray(place.ext_base, np.int64)
    first = np.asarray(place.ext_first, np.int64)
    order = np.argsort(base, kind="stable")
    ranked = base[order]
    want = base - np.int64(place.extent_bytes)
    at = np.minimum(np.searchsorted(ranked, want), max(base.size - 1, 0))
    prev = np.full(base.size, -1, np.int64)
    if base.size:
        hit = ranked[at] == want
        prev[hit] = order[at[hit]]
    return prev, np.repeat(np.arange(first.size - 1, dtype=np.int64), np.diff(first))


class OracleWorld(NamedTuple):
    """``engine.World`` with the oracle's future (the engine's steps read fields by name)."""

    policy: Any
    policy_params: np.ndarray
    cache: C.CacheState
    fs: np.ndarray
    fsize: np.ndarray
    ctr: Any
    lost: np.ndarray
    req: Any
    ops: R.OpBuffer
    acts: Any
    future: Future
    pending: Pending
    drive: Drive


# -------------------------------------------------------------------------------------------
# the future, precomputed


def _walk_start(first, ends):
    """:attr:`Future.walk` (a copy of ``first``: next_use moves it) and
    :attr:`Future.walk_end`, in one pass (numpy's gather took 2.5% of the oracle's time);
    numpy's arrays (``bound.next_and_previous_uses`` says why)."""
    walk = np.empty_like(first)
    walk_end = np.empty(first.shape[0] - 1, np.int64)
    _fill_walk_start(first, ends, walk, walk_end)
    return walk, walk_end


@njit(cache=True, nogil=True, _nrt=False)
def _fill_walk_start(first, ends, walk, walk_end):
    for j in range(walk_end.shape[0]):
        walk[j] = first[j]
        walk_end[j] = ends[first[j]]
    walk[walk.shape[0] - 1] = first[first.shape[0] - 1]


class Refs(NamedTuple):
    """A trace's demand references (:func:`seqheur.bound.demand_refs`) and their blocks'
    identities, computed once and shared by the bound, the oracle and the reference
    schedules; with what the oracle's :class:`Future` needs of them, or None."""

    file: np.ndarray  # int64[refs]
    block: np.ndarray  # int64[refs]
    keys: np.ndarray  # int64[distinct]: sorted distinct keys (cache.make_key)
    ids: np.ndarray  # int64[refs]: index of each reference's key in ``keys``
    nxt: np.ndarray  # int64[refs]: the next reference to the same block (refs: none)
    start: np.ndarray | None = None  # int64[requests]: each READ's first reference
    end: np.ndarray | None = None  # int64[refs]: the last block of each reference's READ
    prev: np.ndarray | None = None  # int64[refs]: the previous reference to the same block
    first: np.ndarray | None = None  # int64[distinct + 1]: each block's first reference, a 0
    longest: int | None = None  # bound.longest_reuse of nxt


def _dense_ids(rf, rb, first, shift):
    """The sorted distinct keys of references (rf, rb) and each one's index among them, by
    marking every block of the files (file f's blocks at first[f]..first[f + 1] - 1, in
    key order) instead of sorting; numpy's arrays (``bound.next_and_previous_uses`` says
    why)."""
    slot = np.zeros(first[-1], np.int64)
    uniq = np.empty(_mark_blocks(rf, rb, first, slot), np.int64)
    ids = np.empty(rf.shape[0], np.int64)
    _number_blocks(rf, rb, first, shift, slot, uniq, ids)
    return uniq, ids


@njit(cache=True, nogil=True, _nrt=False)
def _mark_blocks(rf, rb, first, slot):
    """:func:`_dense_ids`' marks (1: referenced) in ``slot``; returns their number."""
    for i in range(rf.shape[0]):
        slot[first[rf[i]] + rb[i]] = 1
    m = 0
    for s in range(slot.shape[0]):
        m += slot[s]
    return m


@njit(cache=True, nogil=True, _nrt=False)
def _number_blocks(rf, rb, first, shift, slot, uniq, ids):
    """:func:`_dense_ids`' keys (``uniq``) and ``ids`` from the marks in ``slot``."""
    j = 0
    for f in range(first.shape[0] - 1):
        for s in range(first[f], first[f + 1]):
            if slot[s] != 0:
                uniq[j] = (np.int64(f) << shift) | (s - first[f])
                slot[s] = j
                j += 1
    for i in range(rf.shape[0]):
        ids[i] = slot[first[rf[i]] + rb[i]]


def refs_of(stream: ReadStream, sizes: np.ndarray, block_size: int,
            reads: bool = False) -> Refs:
    """The :class:`Refs` of ``stream`` with READs clipped at ``sizes`` (int64 per file);
    with ``reads`` also their ``start``, ``end`` and ``prev`` (for :func:`future_of`), in
    the same passes."""
    rf, rb, start, end = demand_refs_and_reads(stream, sizes, block_size, reads)
    sizes = np.asarray(sizes, np.int64)
    # every demanded block lies below its file's end: when the files' blocks are not many
    # more than the references, marking them is cheaper than sorting the keys
    blocks = np.maximum(sizes, 0) // block_size + 1
    if sizes.size and float(blocks.sum()) <= 4.0 * rf.size + 65536:
        first = np.zeros(sizes.size + 1, np.int64)
        np.cumsum(blocks, out=first[1:])
        uniq, ids = _dense_ids(rf, rb, first, np.int64(C.KEY_SHIFT))
    else:
        keys = (rf << np.int64(C.KEY_SHIFT)) | rb
        uniq, ids = np.unique(keys, return_inverse=True)
        uniq, ids = uniq.astype(np.int64), ids.astype(np.int64)
    if not reads:
        return Refs(rf, rb, uniq, ids, next_uses(ids, uniq.size))
    nxt, prev, first, longest = next_and_previous_uses(ids, uniq.size)
    return Refs(rf, rb, uniq, ids, nxt, start, end, prev, first, int(longest))


def future_of(stream: ReadStream, sizes: np.ndarray, block_size: int, cache_blocks: int,
              gap_blocks: int, refs: Refs | None = None) -> Future:
    """The oracle's :class:`Future` for ``stream`` with a cache of ``cache_blocks`` blocks
    (``refs``: the stream's :class:`Refs`, if already computed with ``reads``)."""
    sizes = np.ascontiguousarray(sizes, dtype=np.int64)
    if refs is None or refs.prev is None:
        refs = refs_of(stream, sizes, block_size, reads=True)
    limits = limits_of(cache_blocks)
    first, first_end = _walk_start(refs.first, refs.end)
    window = np.zeros((3, limits.size), np.int64)
    window[0] = -1
    rfile = E.read_only(np.ascontiguousarray(stream.file, dtype=np.int32))
    return Future(ref0=refs.start, rfile=rfile,
                  keys=refs.keys, ids=refs.ids, ends=refs.end, walk=first, walk_end=first_end,
                  cache_blocks=int(cache_blocks),
                  limits=limits, nxt=refs.nxt, prev=refs.prev, window=window,
                  reach=np.zeros(limits.size, np.int64),
                  gap_blocks=int(gap_blocks),
                  later=_later_reads(stream.file, stream.n_files) if cache_blocks <= AHEAD_MAX
                  else np.zeros(0, np.int64))


@njit(cache=True, nogil=True, _nrt=False)
def _fill_later(rfile, seen, later):
    """Per READ, the next READ of the same file (``later``; its length: none); ``seen``:
    per file, -1 to begin with."""
    n = rfile.shape[0]
    for r in range(n - 1, -1, -1):
        f = rfile[r]
        later[r] = n if seen[f] < 0 else seen[f]
        seen[f] = r


def _later_reads(rfile: np.ndarray, n_files: int) -> np.ndarray:
    """Per READ, the next READ of the same file (``len(rfile)``: none)."""
    later = np.empty(rfile.shape[0], np.int64)
    _fill_later(rfile, np.full(max(int(n_files), 1), -1, np.int64), later)
    return later


def limits_of(cache_blocks: int) -> np.ndarray:
    """The bounds on ``D`` (distinct blocks demanded before a block's use) the oracle can
    tell apart: 0, 1, an eighth, a quarter, half, three quarters of the cache and all but one
    block. A block is charged the smallest bound at least its ``D`` (unless its ``D`` is
    counted: ``WALK``)."""
    c = int(cache_blocks)
    want = {0, 1, c // 8, c // 4, c // 2, 3 * c // 4, c - 1}
    return np.array(sorted(d for d in want if 0 <= d <= c - 1), np.int64)


WALK = 32  # references a read ahead may walk per block it admits to count D exactly
_MIN, _ADD, _COUNT = 0, 1, 2  # a Pending node's words


@njit(nogil=True, _nrt=False, inline="always")
def _w(p, word):
    """The index in ``Pending.node`` of node ``p``'s ``word``: unsigned, so that numba adds
    no check for a negative index, and in a flat array, so that a node's place is a shift,
    not a multiplication by a row stride read at run time (both on the critical path of
    every step of the tree's walks: the oracle's tree work took about a fifth less on the
    benchmark's trace, by profile samples against the engine loop's)."""
    return np.uint64(4 * p + word)
HORIZON = 24  # READs after a miss with which choose_reads prices a way of reading it
FIRST_WINDOW = 1024  # the Pending tree's first width (it widens as the trace needs)


def new_pending(future: Future) -> Pending:
    refs = int(future.ids.size)
    n = 1 << max(1, refs.bit_length())
    # a slack is at most C; the adds move a position by at most one per block admitted (at
    # most one per reference), and a node holds its minimum less the adds above it: with
    # C + refs < 2^28 all of it, around a huge value of 2^30, fits 32 bits (the tree is then
    # half the size: what it costs is its cache misses)
    small = future.cache_blocks + refs < 1 << 28
    huge = 1 << 30 if small else 1 << 60
    node = np.zeros(8 * n, np.int32 if small else np.int64)
    w = min(FIRST_WINDOW, n)
    node[_MIN:8 * w:4] = huge
    c = future.cache_blocks
    return Pending(node, np.array([w, 0], np.int64), np.zeros(3, np.int64), huge,
                   np.zeros(c + 1, np.int64), np.zeros(c + 1, np.int64),
                   np.zeros(c + 1, np.int64))


def gap_blocks_of(model: Any, block_size: int) -> int:
    """The longest run of blocks whose media time is below the command overhead plus the
    shortest positioning of ``model`` (a DiskModel; None: 0): reading over it is cheaper
    than stopping and starting a second read after it."""
    if model is None:
        return 0
    rate = float(model.zone_rate.max())
    shortest = float(model.seek_t.min()) if model.seek_t.size else float(model.fparams[3])
    return int((float(model.fparams[1]) + shortest) * rate // block_size)


# -------------------------------------------------------------------------------------------
# the serve step


@njit(nogil=True, _nrt=False, inline="always")
def key_at(fut, j, key):
    """``j`` if it is block ``key``'s index among the trace's distinct blocks, else -1 (the
    caller walks a file's blocks in order with the index of the first key >= the block's,
    which moves on by one exactly when it matched)."""
    if j < fut.keys.shape[0] and fut.keys[j] == key:
        return j
    return -1


@njit(nogil=True, _nrt=False)
def next_use(fut, j, k):
    """The first demand reference of distinct block ``j`` after reference ``k`` (-1:
    none): a walk along the block's references from where its last one stopped
    (``fut.walk``), forward, or back when asked about an earlier ``k``. The oracle asks in
    trace order, so each block's references are walked once over the whole replay (no
    references grouped by block to search, which cost a sort of them all)."""
    n = fut.nxt.shape[0]
    x = fut.walk[j]
    while x <= k and fut.nxt[x] < n:
        x = fut.nxt[x]
    if k < fut.walk[-1]:  # an earlier k than the last question's (not the oracle's way)
        while fut.prev[x] > k:
            x = fut.prev[x]
    if x != fut.walk[j]:
        fut.walk[j] = x
        fut.walk_end[j] = fut.ends[x]
    fut.walk[-1] = k
    return x if x > k else -1


@njit(nogil=True, _nrt=False)
def advance_reach(fut, k):
    """Set ``fut.reach`` for reads ahead after reference ``k``: per bound D, the largest r
    >= k such that references k+1..r name at most D + 1 distinct blocks. Two pointers per
    bound, moved only as far as the oracle asks (it asks in trace order; asked for an
    earlier reference, a window starts over): a window k+1..r-1 keeps its distinct blocks'
    count; a reference entering it names a new block iff the block's previous reference is
    at most k, one leaving it takes its block out iff the block's next reference is past
    the window. Every access is sequential, its index unsigned (``bound.uindex``: these
    walks, once over the trace per bound, took 30% less on the benchmark's trace)."""
    n = fut.nxt.shape[0]
    win = fut.window
    for j in range(fut.limits.shape[0]):
        width = fut.limits[j] + 1
        at = win[0, j]
        r = win[1, j]
        distinct = win[2, j]
        if k < at:
            at = -1
            r = 0
            distinct = 0
        for p in range(at + 1, min(k, r - 1) + 1):  # references at+1..k leave the window
            if fut.nxt[uindex(p)] >= r:
                distinct -= 1
        if r < k + 1:
            r = k + 1
        while r < n and (fut.prev[uindex(r)] > k or distinct < width):
            if fut.prev[uindex(r)] <= k:
                distinct += 1
            r += 1
        fut.reach[j] = r - 1
        win[0, j] = k
        win[1, j] = r
        win[2, j] = distinct


@njit(nogil=True, _nrt=False)
def demand_limit(fut, u):
    """The smallest bound on the distinct blocks demanded after the reference of the last
    :func:`advance_reach` and before reference ``u`` (the block used at ``u`` excluded), or
    -1 when above all bounds."""
    for j in range(fut.limits.shape[0]):
        if u <= fut.reach[j]:
            return fut.limits[j]
    return -1


# segment tree with range add and range minimum, bottom-up and without pushing adds down:
# an inner node keeps the add of its whole range (_ADD), counted in its own minimum (_MIN),
# so a node's true minimum is its _MIN plus the adds of its ancestors


@njit(nogil=True, _nrt=False, inline="always")
def _apply(node, p, v, n):
    node[_w(p, _MIN)] += v
    if p < n:
        node[_w(p, _ADD)] += v


@njit(nogil=True, _nrt=False, inline="always")
def _pull(node, p):
    node[_w(p, _MIN)] = (min(node[_w(2 * p, _MIN)], node[_w(2 * p + 1, _MIN)])
                         + node[_w(p, _ADD)])


@njit(nogil=True, _nrt=False)
def _build(node, p):
    while p > 1:
        p >>= 1
        _pull(node, p)


@njit(nogil=True, _nrt=False)
def _above(node, p):
    """The adds pending above node ``p`` (its ancestors')."""
    s = np.int64(0)
    while p > 1:
        p >>= 1
        s += node[_w(p, _ADD)]
    return s


@njit(nogil=True, _nrt=False, inline="always")
def _leaf(pd, x):
    """The node of position ``x`` (within the window)."""
    return pd.frame[0] + x - pd.frame[1]


@njit(nogil=True, _nrt=False, inline="always")
def fit(pd, k, u):
    """Make position ``u``, asked about after reference ``k``, part of the window (checked
    in the caller: the window seldom moves)."""
    if u >= pd.frame[1] + pd.frame[0]:
        _move(pd, k, u)


@njit(nogil=True, _nrt=False)
def _move(pd, k, u):
    """Move the window (:class:`Pending`) so that it holds position ``u``, asked about after
    reference ``k``: from ``k + 1``, as wide, or twice as wide (or more) when ``u - k`` is
    more than half its width. The adds are pushed down to the leaves, the leaves of
    positions k+1.. moved to their new places (to the left, or to a wider tree's leaves,
    which lie past the old tree), the new positions empty, and the nodes above rebuilt:
    the same answers as before for every position asked about from now on."""
    w = pd.frame[0]
    base = pd.frame[1]
    node = pd.node
    full = node.shape[0] >> 3  # N: the node array holds 2N nodes of 4 words
    nw = w
    while nw < full and 2 * (u - k) > nw:
        nw *= 2
    for p in range(1, w):  # parents before children
        a = node[_w(p, _ADD)]
        if a != 0:
            node[_w(p, _ADD)] = 0
            for q in range(2 * p, 2 * p + 2):
                node[_w(q, _MIN)] += a
                if q < w:
                    node[_w(q, _ADD)] += a
    live = base + w - (k + 1)  # positions k+1..base+w-1 (ascending: moved left or past)
    for i in range(max(live, 0)):
        node[_w(nw + i, _MIN)] = node[_w(w + k + 1 - base + i, _MIN)]
        node[_w(nw + i, _COUNT)] = node[_w(w + k + 1 - base + i, _COUNT)]
    for i in range(max(live, 0), nw):
        node[_w(nw + i, _MIN)] = pd.huge
        node[_w(nw + i, _COUNT)] = 0
    for p in range(nw - 1, 0, -1):
        node[_w(p, _ADD)] = 0
        node[_w(p, _MIN)] = min(node[_w(2 * p, _MIN)], node[_w(2 * p + 1, _MIN)])
        node[_w(p, _COUNT)] = node[_w(2 * p, _COUNT)] + node[_w(2 * p + 1, _COUNT)]
    pd.frame[0] = nw
    pd.frame[1] = k + 1
    pd.cursor[0] = 0


@njit(nogil=True, _nrt=False)
def range_add(pd, lo, hi, v):
    """Add ``v`` to the slack of every position in [lo, hi) (within the window)."""
    node = pd.node
    n = pd.frame[0]
    if lo >= hi:
        return
    a = _leaf(pd, lo)
    b = _leaf(pd, hi)
    while a < b:
        if a & 1:
            _apply(node, a, v, n)
            a += 1
        if b & 1:
            b -= 1
            _apply(node, b, v, n)
        a >>= 1
        b >>= 1
    _build(node, _leaf(pd, lo))
    _build(node, _leaf(pd, hi) - 1)


@njit(nogil=True, _nrt=False)
def range_min(pd, lo, hi):
    """The smallest slack in [lo, hi) (huge when no block waits there), lo < hi, and how
    many blocks wait there. The nodes taken on the left all lie under the node left of
    ``a`` one level up, those on the right under ``b``: each side adds the add of that one
    node per level, then of its ancestors, which the two sides share from where their
    paths meet (walked once)."""
    node = pd.node
    a = _leaf(pd, lo)
    b = _leaf(pd, hi)
    left = pd.huge
    right = pd.huge
    waiting = np.int64(0)
    while a < b:
        if a & 1:
            left = min(left, node[_w(a, _MIN)])
            waiting += node[_w(a, _COUNT)]
            a += 1
        if b & 1:
            b -= 1
            right = min(right, node[_w(b, _MIN)])
            waiting += node[_w(b, _COUNT)]
        a >>= 1
        b >>= 1
        left += node[_w(a - 1, _ADD)]
        right += node[_w(b, _ADD)]
    a -= 1  # the two nodes are on one level: up together until they meet
    while a > 1 and a != b:
        a >>= 1
        b >>= 1
        left += node[_w(a, _ADD)]
        right += node[_w(b, _ADD)]
    if a == b:  # the adds of the shared ancestor and above it
        return min(left, right) + _above(node, a), waiting
    return min(left + _above(node, a), right + _above(node, b)), waiting


@njit(nogil=True, _nrt=False)
def _waiting_after(node, p):
    """Blocks waiting at positions after leaf ``p``: the right siblings up its path."""
    s = np.int64(0)
    while p > 1:
        if p & 1 == 0:
            s += node[_w(p + 1, _COUNT)]
        p >>= 1
    return s


@njit(nogil=True, _nrt=False)
def admit(pd, cache_blocks, k, u, d):
    """Read ahead, after reference ``k``, a block used at ``u`` with at most ``d`` distinct
    blocks demanded in between, if no block read ahead is evicted unused for it: its own
    slack (``C - 1 - d`` less the blocks waiting for a later use) and that of every waiting
    block used before it (each of which it pushes down the LRU list) must stay >= 0."""
    fit(pd, k, u)
    node = pd.node
    n = pd.frame[0]
    p = _leaf(pd, u)
    slack = cache_blocks - 1 - d - _waiting_after(node, p)
    if slack < 0:
        return False
    if k + 1 < u:
        if range_min(pd, k + 1, u)[0] < 1:
            return False
        a = _leaf(pd, k + 1)
        b = p
        while a < b:
            if a & 1:
                _apply(node, a, -1, n)
                a += 1
            if b & 1:
                b -= 1
                _apply(node, b, -1, n)
            a >>= 1
            b >>= 1
        _build(node, _leaf(pd, k + 1))
    # the leaf holds its slack less the adds above it; leaf u-1's rebuild is due: both
    # paths go up together
    node[_w(p, _MIN)] = slack - _above(node, p)
    node[_w(p, _COUNT)] += 1
    q = p - 1 if k + 1 < u else p
    while p > 1:
        p >>= 1
        q >>= 1
        node[_w(p, _COUNT)] += 1
        _pull(node, p)
        if q != p:
            _pull(node, q)
    return True


@njit(nogil=True, _nrt=False)
def _seat(pd, x):
    """Put the cursor (``pd.cursor``) on the leaf of position ``x``."""
    p = _leaf(pd, x)
    pd.cursor[0] = p
    pd.cursor[1] = 0
    pd.cursor[2] = _above(pd.node, p)


@njit(nogil=True, _nrt=False)
def _sweep(pd, x):
    """Move the cursor right to position ``x`` through the largest nodes that lie between:
    (the least slack, the blocks waiting) over the positions it passed (huge, 0: none)."""
    node = pd.node
    p = pd.cursor[0]
    h = pd.cursor[1]
    above = pd.cursor[2]
    end = _leaf(pd, x)
    least = pd.huge
    waiting = np.int64(0)
    while (p << h) < end:
        if ((p + 1) << h) <= end:  # wholly before x: taken, then the next node right
            least = min(least, node[_w(p, _MIN)] + above)
            waiting += node[_w(p, _COUNT)]
            while p & 1:  # never the root: x lies within the window
                p >>= 1
                h += 1
                above -= node[_w(p, _ADD)]
            p += 1
        else:  # x within it: its left half
            above += node[_w(p, _ADD)]
            p *= 2
            h -= 1
    pd.cursor[0] = p
    pd.cursor[1] = h
    pd.cursor[2] = above
    return least, waiting


@njit(nogil=True, _nrt=False)
def _step(pd):
    """Move the cursor past the position it is at; the blocks waiting there."""
    node = pd.node
    p = pd.cursor[0]
    h = pd.cursor[1]
    above = pd.cursor[2]
    while h > 0:
        above += node[_w(p, _ADD)]
        p *= 2
        h -= 1
    waiting = node[_w(p, _COUNT)]
    while p & 1 and p > 1:
        p >>= 1
        h += 1
        above -= node[_w(p, _ADD)]
    pd.cursor[0] = p + 1 if p > 1 else 0  # 0: past the window's end
    pd.cursor[1] = h
    pd.cursor[2] = above
    return waiting


@njit(nogil=True, _nrt=False)
def admit_deferred(pd, cache_blocks, k, u, d, i, least, after):
    """:func:`admit` for the ``i``-th block read ahead after reference ``k`` when the
    blocks admitted before it (uses ``pd.undo[:i]``, ascending) are used before ``u`` and
    are not in the tree yet (:func:`commit`): the tree is as before them, ``least`` is the
    least slack over positions k+1..pd.undo[i-1] with them counted (huge for i = 0) and
    ``after`` the blocks the tree has waiting after pd.undo[i-1]. Past pd.undo[i-1] none of
    them changes a slack nor waits, so the tree answers for pd.undo[i-1]+1..u. Returns
    (admitted, the new least, the blocks waiting after u).

    The questions of one read go left to right over consecutive ranges, so a cursor walks
    the tree (:func:`_sweep`) instead of each range climbing to the root from both ends."""
    fit(pd, k, u)
    if i == 0:
        after = _waiting_after(pd.node, _leaf(pd, u))
        _seat(pd, k + 1)
        found = _sweep(pd, u)[0]
        _step(pd)
    else:
        if pd.cursor[0] == 0:  # the window moved
            _seat(pd, pd.undo[i - 1] + 1)
        found, between = _sweep(pd, u)
        after -= between + _step(pd)
    slack = cache_blocks - 1 - d - after
    if slack < 0:
        return False, least, after
    least = min(least, found)
    if k + 1 < u and least < 1:
        return False, least, after
    pd.slack[i] = slack
    return True, min(least - 1, slack), after


@njit(nogil=True, _nrt=False)
def commit(pd, k, m):
    """Put the first ``m`` blocks admitted by :func:`admit_deferred` in the tree as ``m``
    admits in turn would have: the positions between k+1 and the first one's use lose m,
    those between the i-th's and the next's m - 1 - i, the i-th block waits with its slack
    less m - 1 - i.

    One walk of the tree from the left, depth first, instead of a range add per block and
    a rebuild of their paths: a node that holds a block's position or the span's start is
    entered (and rebuilt once its children are done), one inside a single step of that
    staircase takes the step's add whole, one outside the span is left as it is. A read
    ahead of a few hundred blocks (the usual case) enters each node once, where a range
    add and a path per block would climb the tree's shared levels for every block."""
    if m == 0:
        return
    node = pd.node
    w = pd.frame[0]
    start = _leaf(pd, k + 1)
    p = 1
    h = 0  # the height of node p: it covers leaves p << h .. ((p + 1) << h) - 1
    while (np.int64(1) << h) < w:
        h += 1
    above = np.int64(0)  # the adds of p's ancestors
    j = 0  # the next block to place (theirs are the leaves _leaf(pd, pd.undo[j]), ascending)
    while True:
        lo = p << h
        hi = (p + 1) << h
        nxt = _leaf(pd, pd.undo[j]) if j < m else hi
        if hi <= start or j == m:
            pass  # before the span, or past its last block: unchanged
        elif lo < start or nxt < hi:
            if p < w:  # holds the span's start or a block's leaf: entered
                above += node[_w(p, _ADD)]
                p *= 2
                h -= 1
                continue
            # the block's leaf: its slack less the adds above it
            node[_w(p, _MIN)] = pd.slack[j] - (m - 1 - j) - above
            node[_w(p, _COUNT)] += 1
            j += 1
        else:  # within one step: the blocks from the j-th on are used after it
            _apply(node, p, j - m, w)
        while p & 1 and p > 1:  # a right child done: its parent's children are done
            p >>= 1
            h += 1
            above -= node[_w(p, _ADD)]
            _pull(node, p)
            node[_w(p, _COUNT)] = node[_w(2 * p, _COUNT)] + node[_w(2 * p + 1, _COUNT)]
        if p == 1:
            return
        p += 1


@njit(nogil=True, _nrt=False)
def release(pd, u):
    """The block admitted at ``u`` is not read after all."""
    node = pd.node
    p = _leaf(pd, u)
    node[_w(p, _MIN)] = pd.huge - _above(node, p)
    node[_w(p, _COUNT)] -= 1
    while p > 1:
        p >>= 1
        node[_w(p, _COUNT)] -= 1
        _pull(node, p)


@njit(nogil=True, _nrt=False)
def service_one(dr, st, f, off, ln):
    """Seconds the drive in state ``st`` takes for one read (``st`` advances)."""
    dr.op_file[0] = f
    dr.op_off[0] = off
    dr.op_len[0] = ln
    service_kernel(dr.op_file, dr.op_off, dr.op_len, dr.idle, dr.ext_first, dr.ext_base,
                   dr.extent_bytes, dr.ip, dr.fp, dr.seek_d, dr.seek_t, dr.zone_start,
                   dr.zone_rate, st, dr.out_s, dr.out_f)
    return dr.out_s[0]


@njit(nogil=True, _nrt=False)
def price(dr, f, off, ln, fresh):
    """Seconds of one read on the trial copy of the drive: from the drive's state when
    ``fresh``, else after the reads priced since."""
    if fresh:
        for j in range(dr.state.shape[0]):
            dr.trial[j] = dr.state[j]
    return service_one(dr, dr.trial, f, off, ln)


@njit(nogil=True, _nrt=False, inline="always")
def _read_in(rng, m, fr, b, touched, cap):
    """Whether block ``b`` of file ``fr`` was read by one of the first ``m`` reads of the
    look ahead (``rng`` rows: file, first block, last block, blocks touched when read) and
    fewer than ``cap`` blocks were touched since (so the LRU cache still holds it): the
    blocks its read inserted after it, and those touched after that read."""
    for i in range(m):
        if rng[i, 0] == fr and rng[i, 1] <= b and b <= rng[i, 2] and \
                rng[i, 2] - b + touched - rng[i, 3] <= cap:
            return True
    return False


@njit(nogil=True, _nrt=False)
def fewer_between(fut, p, x, cap):
    """Whether fewer than ``cap`` distinct blocks are referenced between demand references
    ``p`` and ``x`` (each counted at its first reference after ``p``): the block referenced
    at ``p`` is then still in an LRU cache of ``cap`` blocks at ``x``, as far as the demand
    goes. The walk stops at the ``cap``-th."""
    d = 0
    for y in range(p + 1, x):
        if fut.prev[y] < p:
            d += 1
            if d >= cap:
                return False
    return True


RANK_MAX = 16  # the largest cache whose LRU order the look ahead walks (:func:`_newer`)


@njit(nogil=True, _nrt=False)
def _newer(c, e, most):
    """How many resident blocks were used more recently than entry ``e`` (at most
    ``most``: the walk from the LRU list's head stops there)."""
    x = c.meta[C.M_RHEAD]
    n = 0
    while x != e and x >= 0 and n < most:
        x = C.next_entry(c, x)
        n += 1
    return n


@njit(nogil=True, _nrt=False)
def price_after(dr, c, fut, fsize, bsize, stamp, f, lo, hi, ahead):
    """Seconds, on the trial drive after the reads priced on it, of what the next
    ``HORIZON`` READs after READ ``stamp`` would read: each one's blocks that are neither
    resident, nor among file ``f``'s blocks ``lo..hi`` (a candidate's read-ahead), nor read
    by an earlier READ of the look ahead, as one read. An estimate of how a candidate
    leaves the drive for what follows (the oracle's later reads may read ahead, or take
    another way). A block resident now, or read in the look ahead, counts as resident only
    while fewer than the cache's blocks were touched since (distinct blocks first touched
    after READ ``stamp``: it may be the least recently used one), or while fewer distinct
    blocks than the cache's are referenced after its last use in the look ahead
    (:func:`fewer_between`); a block of ``lo..hi``
    up to its first use (it was admitted so), and after it also while fewer references than
    the cache's blocks come between two of its uses. A block read in the look ahead also
    counts the blocks its read inserted after it; with a cache of at most ``RANK_MAX``
    blocks a block resident now survives to its first use in the look ahead only while its
    place in the LRU list, plus the blocks inserted since and those used since that were
    older than it, leaves it in the cache. With ``ahead``, a READ that reads also reads
    ahead as the oracle would, in a read of its own right after (:func:`read_ahead`: the
    blocks of its file that the look ahead's later READs demand), resident for them; not on
    a fragmented layout.
    Returns (seconds, how many such read-aheads were read)."""
    n = fut.ref0.shape[0]
    nref = fut.ids.shape[0]
    shift = np.int64(C.KEY_SHIFT)
    mask = (np.int64(1) << shift) - 1
    cap = fut.cache_blocks
    rng = dr.ranges
    m = 0
    s = 0.0
    touched = hi - lo + 1 if hi >= lo else 0
    small = cap <= RANK_MAX
    absent = touched  # blocks inserted since the choice (small caches)
    rk = dr.ranks  # the LRU places of the resident blocks used since (small caches)
    nr = 0
    ahead_reads = 0
    stop = min(n, stamp + 1 + HORIZON)
    k0 = (fut.ref0[stamp + 1] if stamp + 1 < n else nref) - 1  # READ stamp's last reference
    for r in range(stamp + 1, stop):
        read = r  # (r is reused below)
        e = fut.ref0[r + 1] if r + 1 < n else nref
        fr = np.int64(-1)
        first = np.int64(-1)
        end = np.int64(-1)
        for x in range(fut.ref0[r], e):
            key = fut.keys[fut.ids[x]]
            fr = key >> shift
            b = key & mask
            if fut.prev[x] <= k0:  # a block not touched since READ stamp
                touched += 1
            # a block of the candidate's read-ahead survives to its first use (it was
            # admitted so), and after it while fewer than the cache's blocks were touched
            # since its last use (fewer references) or since the choice
            if fr == f and lo <= b and b <= hi and (fut.prev[x] <= k0 or x - fut.prev[x] <= cap
                                                    or touched <= cap):
                continue
            if small and fut.prev[x] <= k0:
                # with a small cache, its first use in the look ahead finds it resident iff
                # its place in the LRU list now, plus the blocks inserted since and those
                # used since that were older than it, leaves it among the cache's blocks
                e = C.lookup(c, key)
                if e < 0:
                    absent += 1
                else:
                    r = _newer(c, e, cap)
                    pushes = absent
                    for i in range(nr):
                        if rk[i] > r:
                            pushes += 1
                    if nr < rk.shape[0]:
                        rk[nr] = r
                        nr += 1
                    if r + pushes < cap:
                        continue
            elif touched <= cap and C.lookup(c, key) >= 0:
                continue
            # demanded within the look ahead and fewer distinct blocks than the cache's
            # referenced since: the LRU cache still holds it, however many blocks were
            # touched since the choice (the references since bound that count from above)
            if fut.prev[x] > k0 and (x - fut.prev[x] <= cap or
                                     fewer_between(fut, fut.prev[x], x, cap)):
                continue
            if _read_in(rng, m, fr, b, touched, cap):
                continue
            if first < 0:
                first = b
            end = b
        if first < 0:
            continue
        s += service_one(dr, dr.trial, fr, first * bsize,
                         R.op_bytes(first, end - first + 1, bsize, fsize[fr]))
        rng[m, 0] = fr
        rng[m, 1] = first
        rng[m, 2] = end
        rng[m, 3] = touched
        m += 1
        # (not on a fragmented layout: the oracle cuts its read-ahead at extents there,
        # a way the look ahead does not price; reading ahead across them it lost traces)
        if ahead and fut.later[read] < stop and dr.extent_bytes == NO_EXTENTS:
            reach = read_ahead(c, fut, f, lo, hi, read, stop, fr, first, end, touched <= cap)
            if reach > end:
                ahead_reads += 1
                s += service_one(dr, dr.trial, fr, (end + 1) * bsize,
                                 R.op_bytes(end + 1, reach - end, bsize, fsize[fr]))
                rng[m, 0] = fr
                rng[m, 1] = end + 1
                rng[m, 2] = reach
                rng[m, 3] = touched
                m += 1
    return s, ahead_reads


@njit(nogil=True, _nrt=False)
def read_ahead(c, fut, f, lo, hi, read, stop, fr, first, end, fresh):
    """The last block of what the oracle's own read-ahead would read after a READ of the
    look ahead reads file ``fr``'s blocks first..end (READ ``read``; :func:`price_after`
    with ``ahead``): the blocks of ``fr`` that the look ahead's later READs (up to
    ``stop``) demand past ``end``, over gaps of at most ``gap_blocks``, skipping blocks
    resident now (while ``fresh``: few blocks touched since the choice) and file ``f``'s
    blocks lo..hi (a candidate's read-ahead), the whole read at most the cache's blocks
    less one; ``end``: none."""
    n = fut.ref0.shape[0]
    nref = fut.ids.shape[0]
    shift = np.int64(C.KEY_SHIFT)
    mask = (np.int64(1) << shift) - 1
    top = first + fut.cache_blocks - 2  # the read's blocks and its read-ahead fit the cache
    reach = end
    r = fut.later[read]
    while r < stop:
        e = fut.ref0[r + 1] if r + 1 < n else nref
        for x in range(fut.ref0[r], e):
            key = fut.keys[fut.ids[x]]
            b = key & mask
            if b <= reach or (fr == f and lo <= b and b <= hi):
                continue
            if b > reach + 1 + fut.gap_blocks or b > top:
                return reach
            if fresh and C.lookup(c, key) >= 0:
                continue
            reach = b
        r = fut.later[r]
    return reach


@njit(nogil=True, _nrt=False)
def price_reads(dr, c, fut, fsize, bsize, stamp, f, start, end1, end2, lo, hi, ahead):
    """Seconds of reading blocks start..end1 of file ``f`` (then end1 + 1..end2 apart when
    end2 > end1) from the drive's state, and of the next READs after them
    (:func:`price_later`, f's blocks lo..hi resident)."""
    eof = fsize[f]
    s = price(dr, f, start * bsize, R.op_bytes(start, end1 - start + 1, bsize, eof), True)
    if end2 > end1:
        s += price(dr, f, (end1 + 1) * bsize, R.op_bytes(end1 + 1, end2 - end1, bsize, eof),
                   False)
    return s + price_later(dr, c, fut, fsize, bsize, stamp, f, lo, hi, ahead)


AHEAD_MAX = 16  # the largest cache with which price_later prices the READs reading ahead


@njit(nogil=True, _nrt=False)
def price_later(dr, c, fut, fsize, bsize, stamp, f, lo, hi, ahead):
    """:func:`price_after` from the trial drive; with ``ahead`` priced twice, the READs
    reading ahead as the oracle would and as they are, the cheaper (the oracle's own later
    read-ahead may stream on where a READ's read alone positions, e.g. a file's block 0
    read with the blocks after it; but it may also take a drive segment the READs as they
    are would have found holding a block). The second pricing only when the first read
    ahead at all (else it would read the same). Only with a cache of at most
    ``AHEAD_MAX`` blocks: where every miss is priced with a larger cache (many readers,
    1 MiB) it cost `bound` about a tenth more and changed no choice."""
    if not ahead or fut.cache_blocks > AHEAD_MAX:
        return price_after(dr, c, fut, fsize, bsize, stamp, f, lo, hi, False)[0]
    for j in range(dr.trial.shape[0]):
        dr.held[j] = dr.trial[j]
    ahead, n = price_after(dr, c, fut, fsize, bsize, stamp, f, lo, hi, True)
    if n == 0:  # no READ priced read ahead: the same reads as without
        return ahead
    for j in range(dr.trial.shape[0]):
        dr.trial[j] = dr.held[j]
    return min(ahead, price_after(dr, c, fut, fsize, bsize, stamp, f, lo, hi, False)[0])


@njit(nogil=True, _nrt=False)
def used_soon(fut, stamp, f, lo, hi):
    """Whether one of the ``HORIZON`` READs after READ ``stamp`` demands a block of file
    ``f`` in lo..hi."""
    n = fut.ref0.shape[0]
    mask = (np.int64(1) << np.int64(C.KEY_SHIFT)) - 1
    for r in range(stamp + 1, min(n, stamp + 1 + HORIZON)):
        if fut.rfile[r] != f:
            continue
        e = fut.ref0[r + 1] if r + 1 < n else fut.ids.shape[0]
        if e > fut.ref0[r] and (fut.keys[fut.ids[fut.ref0[r]]] & mask) <= hi and \
                (fut.keys[fut.ids[e - 1]] & mask) >= lo:
            return True
    return False


@njit(nogil=True, _nrt=False)
def _first_jump(dr, fut, stamp, f, bsize, lo, hi, any_jump):
    """The block before the first of file ``f``'s blocks lo..hi that starts an extent not
    lying right after the previous one on the disk (a read across it positions), when
    ``any_jump`` or the extent just before that one on the disk is another file's and holds
    blocks that one of the ``HORIZON`` READs after READ ``stamp`` demands (reading those,
    the head or the drive's read-ahead streams on into it); -1: none (a contiguous layout,
    extents smaller than a block, or no such extent)."""
    eb = dr.extent_bytes
    if eb == NO_EXTENTS or eb < bsize:
        return -1
    for b in range(lo, hi + 1):
        off = b * bsize
        if off % eb == 0:
            k = off // eb
            if extent_address(f, k, dr.ext_first, dr.ext_base, eb) != extent_address(
                    f, k - 1, dr.ext_first, dr.ext_base, eb) + eb:
                if any_jump:
                    return b - 1
                g = dr.ext_first[f] + k
                if g >= dr.ext_first[f + 1] or dr.ext_prev[g] < 0:
                    return -1
                p = dr.ext_prev[g]
                fp = dr.ext_file[p]
                kp = p - dr.ext_first[fp]
                if fp != f and used_soon(fut, stamp, fp, kp * eb // bsize,
                                         ((kp + 1) * eb - 1) // bsize):
                    return b - 1
                return -1
    return -1


@njit(nogil=True, _nrt=False)
def _held(dr, f, bsize, lo, hi):
    """The last of file ``f``'s blocks lo..hi such that one drive segment holds lo up to it
    (within one extent), when that is not all of them; -1: none."""
    nseg = dr.ip[I_NSEG]
    if nseg == 0:
        return -1
    eb = dr.extent_bytes
    off = lo * bsize
    k = np.int64(0) if eb == NO_EXTENTS else off // eb
    addr = extent_address(f, k, dr.ext_first, dr.ext_base, eb) + off - k * eb
    top = hi if eb == NO_EXTENTS else min(hi, ((k + 1) * eb) // bsize - 1)
    held = np.int64(-1)
    st = dr.state
    for g in range(nseg):
        a = st[S_HDR + g]
        e = st[S_HDR + nseg + g]
        if a >= 0 and a <= addr and addr + bsize <= e:
            held = max(held, min(top, lo + (e - addr) // bsize - 1))
    return held if held < hi else -1


@njit(nogil=True, _nrt=False)
def over_lost(fut, stamp, f, bsize, eof, seg, first, over, tail):
    """Whether one read of file ``f``'s blocks first..tail (the file's last), reading over
    from block ``over`` on, reads over a block that one of the ``HORIZON`` READs after READ
    ``stamp`` demands and that neither cache keeps: the read is a drive segment (``seg``
    bytes; 0: no drive cache, not asked) or longer, so the drive keeps only its last ``seg``
    bytes, and blocks read over are not inserted in the buffer cache. Such a block is read
    for nothing and read again at its use."""
    ln = R.op_bytes(first, tail - first + 1, bsize, eof)
    if seg <= 0 or ln < seg:
        return False
    kept = (first * bsize + ln - seg + bsize - 1) // bsize  # the first block the drive keeps
    return kept > over and used_soon(fut, stamp, f, over, kept - 1)


@njit(nogil=True, _nrt=False)
def next_start(fut, stamp, f, far, tail):
    """The block before the first block past ``far`` that the first of the ``HORIZON``
    READs after READ ``stamp`` to demand one of file ``f``'s blocks past ``far`` demands,
    when at most ``gap_blocks`` lie between (and it is at most ``tail``, the file's last
    block, when known: ``tail >= 0``) and no READ of another file demands a block before
    it (its read would move the head); -1: none, or no gap (that READ's block is
    ``far + 1``)."""
    n = fut.ref0.shape[0]
    mask = (np.int64(1) << np.int64(C.KEY_SHIFT)) - 1
    for r in range(stamp + 1, min(n, stamp + 1 + HORIZON)):
        e = fut.ref0[r + 1] if r + 1 < n else fut.ids.shape[0]
        if e == fut.ref0[r]:
            continue  # no block demanded
        if fut.rfile[r] != f:
            return -1
        for x in range(fut.ref0[r], e):
            b = fut.keys[fut.ids[x]] & mask
            if b > far:
                if b == far + 1 or b - far - 1 > fut.gap_blocks or (tail >= 0 and b > tail):
                    return -1
                return b - 1
    return -1


WAIT_MAX = 8  # re-reads a wait issues at most before one read (the engine's admit step
# keeps room in the op buffer for 8 reads per READ beyond one per demand block)


@njit(nogil=True, _nrt=False, inline="always")
def _address(dr, f, off):
    """The disk address of byte ``off`` of file ``f``."""
    eb = dr.extent_bytes
    k = np.int64(0) if eb == NO_EXTENTS else off // eb
    return extent_address(f, k, dr.ext_first, dr.ext_base, eb) + off - k * eb


@njit(nogil=True, _nrt=False, inline="always")
def _piece_of(dr, f, off, ln):
    """(disk address, bytes) of the first physically contiguous piece of file ``f``'s bytes
    off..off+ln (a read crossing an extent is serviced piece by piece)."""
    eb = dr.extent_bytes
    if eb == NO_EXTENTS:
        return _address(dr, f, off), ln
    k = off // eb
    return _address(dr, f, off), min(ln, (k + 1) * eb - off)


@njit(nogil=True, _nrt=False)
def _hit_elsewhere(dr, st, addr, end):
    """Whether the drive (state ``st``) serves addr..end from a segment other than the one
    it is reading ahead into: the read starts outside that one's range (else that segment
    serves it, from the media past where the read-ahead got) and a segment holds all of it."""
    nseg = dr.ip[I_NSEG]
    seg = st[S_PFSEG]
    if seg >= 0 and st[S_HDR + seg] <= addr and addr <= st[S_PFLIM]:
        return False
    for s in range(nseg):
        first = st[S_HDR + s]
        if first >= 0 and first <= addr and end <= st[S_HDR + nseg + s]:
            return True
    return False


@njit(nogil=True, _nrt=False)
def _in_filling(dr, st, f, off, ln, ahead):
    """Whether file ``f``'s bytes off..off+ln are all drive-cache hits now (not ``ahead``),
    or (``ahead``) will be once the drive's read-ahead (state ``st``) gets further: each of
    its pieces (one per extent it crosses) a hit now, in the segment being filled or in
    another one, or in the segment being filled past where the read-ahead got, up to its
    limit, at least one of them. With ``ahead``, where the read-ahead must have got before
    the read for it to be all hits (0: nowhere; the hits of its pieces before one in the
    segment being filled give the read-ahead their time too; and WAIT_MAX re-reads of the
    last read must give it time to get there, even at the fastest zone's rate); without, 1
    when all are hits, else 0."""
    seg = st[S_PFSEG]
    if seg < 0 or ln <= 0:
        return 0
    pos = st[S_PFPOS]
    rate = _rate(dr.zone_start, dr.zone_rate, pos)
    need = np.int64(0)
    lead = 0.0  # seconds of the read's pieces before this one, all hits
    while ln > 0:
        addr, piece = _piece_of(dr, f, off, ln)
        end = addr + piece
        if st[S_HDR + seg] <= addr and addr <= st[S_PFLIM]:
            if end > pos:
                if not ahead or end > st[S_PFLIM]:
                    return 0
                need = max(need, end - np.int64(lead * rate))
        elif not _hit_elsewhere(dr, st, addr, end):
            return 0
        lead += (dr.fp[F_HITOVER] if lead == 0.0 else 0.0) + piece / dr.fp[F_HOST]
        off += piece
        ln -= piece
    if not ahead:
        return 1
    if need <= pos:
        return 0
    fastest = 0.0
    for r in dr.zone_rate:
        fastest = max(fastest, r)
    if (need - pos) / fastest <= WAIT_MAX * (dr.fp[F_HITOVER] + dr.last[2] / dr.fp[F_HOST]):
        return need
    return 0


@njit(nogil=True, _nrt=False)
def wait_hits(dr, st, f, off, ln):
    """(re-reads, seconds): the drive (state ``st``, which advances) is reading ahead into
    a segment that will hold file ``f``'s bytes off..off+ln, and has not got there yet;
    re-reading the last read issued while the drive's cache holds it (a hit, in that segment
    or another, a command and its bus transfer), lets the read-ahead run on meanwhile, so the read becomes a hit too,
    with no command overhead and no new read-ahead it must finish. Re-reads until the
    read-ahead gets there, at most ``WAIT_MAX``; (0, 0.0) when no wait applies."""
    lf = dr.last[0]
    if dr.ip[I_NSEG] == 0 or lf < 0:
        return 0, 0.0
    end = _in_filling(dr, st, f, off, ln, True)
    if end == 0:
        return 0, 0.0
    s = 0.0
    n = 0
    while n < WAIT_MAX and st[S_PFPOS] < end and _in_filling(dr, st, lf, dr.last[1],
                                                              dr.last[2], False) > 0:
        s += service_one(dr, st, lf, dr.last[1], dr.last[2])
        n += 1
    return n, s


@njit(nogil=True, _nrt=False)
def price_waited(dr, c, fut, fsize, bsize, stamp, f, start, end1, end2, lo, hi, ahead):
    """(seconds, re-reads) of :func:`price_reads`'s reads after a wait for the drive's
    read-ahead (:func:`wait_hits`); (inf, 0) when no wait applies."""
    eof = fsize[f]
    for j in range(dr.state.shape[0]):
        dr.trial[j] = dr.state[j]
    ln = R.op_bytes(start, end1 - start + 1, bsize, eof)
    n, s = wait_hits(dr, dr.trial, f, start * bsize, ln)
    if n == 0:
        return np.inf, 0
    s += service_one(dr, dr.trial, f, start * bsize, ln)
    if end2 > end1:
        s += price(dr, f, (end1 + 1) * bsize, R.op_bytes(end1 + 1, end2 - end1, bsize, eof),
                   False)
    return s + price_later(dr, c, fut, fsize, bsize, stamp, f, lo, hi, ahead), n


WAYS_MAX = 16  # choose_reads' ways other than the first choice (14), with room
LOG_WAYS = WAYS_MAX + 6  # a decision's ways logged: the first choice, the table's, six more
WAY_FIXED = 0  # a way whose reads are known before any is priced
WAY_DEMAND = 1  # the demand alone: priced unless the way chosen so far already reads it so
WAY_SPLIT = 2  # splits the way chosen so far: the rest of it (its second read too) in one read
SPLIT_LAST = -2  # a split way's first read ends at the block before the chosen way's last


@njit(nogil=True, _nrt=False, inline="always")
def _add_way(ways, m, kind, end1, end2, lo, hi, ahead):
    """Row ``m`` of the table of ways (:func:`choose_reads`): its kind, the first read's last
    block, the second's (-1: none), the read-ahead lo..hi it keeps and whether the look
    ahead is priced also reading ahead; returns the next row."""
    ways[m, 0] = kind
    ways[m, 1] = end1
    ways[m, 2] = end2
    ways[m, 3] = lo
    ways[m, 4] = hi
    ways[m, 5] = ahead
    return m + 1


@njit(nogil=True, _nrt=False)
def _note(dr, d, e1, e2, lo, hi, ahead, s, piece=0):
    """Log way (e1, e2, lo, hi, ahead, piece) priced ``s`` at decision ``d`` (when it fits
    and is not logged already); returns its row (-1: not logged)."""
    lg = dr.log
    n = dr.log_n[d, 0]
    for i in range(n):
        if lg[d, i, 0] == e1 and lg[d, i, 1] == e2 and lg[d, i, 2] == lo and \
                lg[d, i, 3] == hi and lg[d, i, 4] == ahead and lg[d, i, 5] == piece:
            return i
    if n >= lg.shape[1]:
        return -1
    lg[d, n, 0] = e1
    lg[d, n, 1] = e2
    lg[d, n, 2] = lo
    lg[d, n, 3] = hi
    lg[d, n, 4] = ahead
    lg[d, n, 5] = piece
    dr.log_s[d, n] = s
    dr.log_n[d, 0] = n + 1
    return n


@njit(nogil=True, _nrt=False)
def _note_priced(dr, c, fut, fsize, bsize, stamp, f, start, e1, e2, lo, hi, ahead, d):
    """Price way (e1, e2, lo, hi, ahead) as :func:`choose_reads` prices its table's, and log
    it at decision ``d``: a way the table did not price, for :func:`run_oracle`'s rollouts
    (the choice is not changed by it)."""
    s = price_reads(dr, c, fut, fsize, bsize, stamp, f, start, e1, e2, lo, hi, ahead != 0)
    _note(dr, d, e1, e2, lo, hi, ahead, s)


@njit(nogil=True, _nrt=False)
def price_pieces(dr, f, a, b, bsize, eof, piece, fresh):
    """Seconds of blocks a..b of file ``f`` read in disk reads of ``piece`` blocks each (the
    last shorter), back to back on the trial drive (from the drive's state when
    ``fresh``)."""
    s = 0.0
    while a <= b:
        e = min(b, a + piece - 1)
        s += price(dr, f, a * bsize, R.op_bytes(a, e - a + 1, bsize, eof), fresh)
        fresh = False
        a = e + 1
    return s


@njit(nogil=True, _nrt=False)
def price_in_pieces(dr, c, fut, fsize, bsize, stamp, f, start, end1, end2, lo, hi, ahead,
                    piece):
    """:func:`price_reads` with each of the way's reads in disk reads of ``piece`` blocks."""
    eof = fsize[f]
    s = price_pieces(dr, f, start, end1, bsize, eof, piece, True)
    if end2 > end1:
        s += price_pieces(dr, f, end1 + 1, end2, bsize, eof, piece, False)
    return s + price_later(dr, c, fut, fsize, bsize, stamp, f, lo, hi, ahead)


@njit(nogil=True, _nrt=False)
def _note_more(dr, c, fut, fsize, bsize, stamp, f, start, last, far, d, best1, best2, lo, hi,
               ahead, part=-1):
    """Log the ways a rollout may try beyond the table's: the read-ahead on into a later
    READ it serves in part, when blocks far + 1..``part`` were admitted but that READ's
    next block was not (it would not survive in the cache, or is not wanted): up to
    ``part`` in the same read, cached (the READ still reads, but fewer blocks: a
    drive-cache hit costs its bytes' transfer, which the media read before streamed
    anyway); the demand alone, the read-ahead in the same read and in a read of its own
    (each once); with a drive cache, the way chosen (``best1``, ``best2``, lo..hi) and the
    read-ahead in the same read in disk reads of a drive segment each, when a read is
    longer (after each read the drive reads ahead while the host turns the command round,
    streaming on)."""
    if part > far:  # the read-ahead on into a later READ it serves in part, cached
        _note_priced(dr, c, fut, fsize, bsize, stamp, f, start, part, -1, last + 1, part, 1, d)
    if far > last:
        _note_priced(dr, c, fut, fsize, bsize, stamp, f, start, last, -1, far + 1, far, 1, d)
        _note_priced(dr, c, fut, fsize, bsize, stamp, f, start, far, -1, last + 1, far, 1, d)
        _note_priced(dr, c, fut, fsize, bsize, stamp, f, start, last, far, last + 1, far, 1, d)
    piece = dr.ip[I_SEGBYTES] // bsize if dr.ip[I_NSEG] > 0 else 0
    if piece <= 0:
        return
    if best1 - start + 1 > piece or best2 - best1 > piece:
        s = price_in_pieces(dr, c, fut, fsize, bsize, stamp, f, start, best1, best2, lo, hi,
                            ahead != 0, piece)
        _note(dr, d, best1, best2, lo, hi, ahead, s, piece)
    if far - start + 1 > piece:
        s = price_in_pieces(dr, c, fut, fsize, bsize, stamp, f, start, far, -1, last + 1, far,
                            True, piece)
        _note(dr, d, far, -1, last + 1, far, 1, s, piece)


@njit(nogil=True, _nrt=False)
def _waited(dr, c, fut, fsize, bsize, stamp, f, start, best1, best2, lo, hi, ahead, best):
    """(best1, best2, re-reads): the way chosen, after a wait for the drive's read-ahead
    when its first read lands in the segment being filled past where the read-ahead got
    and the wait prices cheaper (:func:`price_waited`)."""
    if dr.ip[I_NSEG] > 0 and dr.last[0] >= 0 and _in_filling(
            dr, dr.state, f, start * bsize, R.op_bytes(start, best1 - start + 1, bsize,
                                                       fsize[f]), True) > 0:
        s, n = price_waited(dr, c, fut, fsize, bsize, stamp, f, start, best1, best2, lo, hi,
                            ahead)
        if s < best:
            return best1, best2, n
    return best1, best2, 0


@njit(nogil=True, _nrt=False)
def choose_reads(dr, c, fut, fsize, bsize, stamp, f, start, last, far, eof_blk, latest,
                 part=-1):
    """How to read blocks start..last of file ``f`` (a READ's misses) with the read-ahead
    last + 1..far (``latest``: the last use of a block of it): (end1, end2, waits, hi), one
    read start..end1, then one of end1 + 1..end2 when end2 > end1, and ``hi`` the last
    block of the read-ahead kept; the read-ahead is dropped when neither read reaches
    ``far``. Blocks past ``far`` are read over, not cached, unless a rollout imposed a way
    whose ``hi`` is past it: the read-ahead on up to ``part`` (blocks far + 1..part were
    admitted but serve a later READ only in part; :func:`_note_more`).

    First the read-ahead or not, as one read each: it is dropped when the demand followed
    at once by the rest costs less than the whole (the best case for stopping), e.g. when
    the demand is in the drive's cache and the longer read is not. Then that choice is
    priced with the next ``HORIZON`` READs (:func:`price_reads`; twice, those READs as they
    are and reading ahead as the oracle would, the cheaper, :func:`price_later`) against
    the other ways, and a cheaper one replaces it (ties keep the earlier):

    * the read-ahead in a read of its own (a shorter first read leaves the drive room to
      read ahead in its segment);
    * when the file ends within ``gap_blocks``: reading over to its end, in the same read,
      apart, or apart with the read-ahead (the drive's read-ahead then runs on into the
      next file, and a partial last block read alone ends at the next file's start), unless
      that read reads over a block a READ priced demands that neither cache keeps
      (:func:`over_lost`);
    * the demand alone, when every block of the read-ahead is used within the READs priced
      (so what dropping it costs is priced too), also after the read-ahead apart was chosen
      with a cache of at most ``AHEAD_MAX`` blocks (a later miss of the file may read its
      earlier blocks and the read-ahead in one stream, which the look ahead then prices);
    * with a buffer cache no larger than one of the drive's segments, when a READ priced
      uses a block past the read-ahead that the segment would hold: filling the segment
      from the READ's first block, in one read or the demand then the rest (the drive's
      cache keeps what the buffer cache cannot; priced with the READs as they are only);
    * the read's last block apart, when a READ priced uses a block the drive's read-ahead
      after it could reach (after a read of L bytes the drive reads ahead at most
      ``segment - L``), or when it is the file's partial last block (read alone it is read
      whole, ending past the file, maybe where another file's blocks start);
    * the blocks a drive segment holds apart, then the rest (a read is a segment hit only
      when one segment holds all of it);
    * with a buffer cache no larger than one of the drive's segments, a read longer than a
      segment cut after its first segment, when a READ priced uses a block of that segment
      (one read leaves only its last segment's bytes in the drive's cache);
    * on a fragmented layout, the read-ahead cut before the first extent it would position
      to, when the extent lying just before that one on the disk holds blocks a READ priced
      demands (reading those, the head or the drive's read-ahead streams on into it; the
      rest is read at a later miss), or, with a buffer cache no larger than one of the
      drive's segments, whatever lies before it (the later miss moves the drive's
      read-ahead, and so which segments keep what the buffer cache cannot); and, when the
      file ends within ``gap_blocks``, the read over to its end cut the same way (the first
      condition only), in one read or after the demand apart;
    * without a drive cache, reading over the gap up to the block before the first block
      past the read-ahead that the next READ of the file to read past it demands, when the
      gap is at most ``gap_blocks`` and no READ of another file demands a block before that
      one (:func:`next_start`): the head stops where a read ends,
      so that READ's read streams on where it would position (with a drive cache, the
      drive's read-ahead reads the gap into a segment and makes it a hit).

    Last, the way chosen after a wait (:func:`wait_hits`), when its first read lands in the
    segment the drive's read-ahead is filling, past where it got; the third value is the
    number of re-reads the wait issues before the reads (0: none).

    A rollout (:func:`run_oracle`) may impose the way of a decision (:attr:`Drive.forced`:
    the way, then the wait as above) and log the ways priced at each (:attr:`Drive.log`,
    with a few more the table does not price); neither changes any other choice."""
    d = dr.plan[0]  # this decision's number
    dr.plan[0] = d + 1
    dr.plan[3] = 0
    i = dr.plan[2]
    if i < dr.plan[1] and dr.forced[i, 0] == d:
        dr.plan[2] = i + 1
        w = dr.forced
        if w[i, 6] > 0:  # in disk reads of a few blocks each (no wait priced)
            dr.plan[3] = w[i, 6]
            return w[i, 1], w[i, 2], 0, w[i, 4]
        s = price_reads(dr, c, fut, fsize, bsize, stamp, f, start, w[i, 1], w[i, 2], w[i, 3],
                        w[i, 4], w[i, 5] != 0)
        e1, e2, n = _waited(dr, c, fut, fsize, bsize, stamp, f, start, w[i, 1], w[i, 2],
                            w[i, 3], w[i, 4], w[i, 5] != 0, s)
        return e1, e2, n, w[i, 4]
    # logged up to the log's room, after the last way imposed (the decisions before it are
    # the run's it was imposed on, whose log a rollout has already read)
    logging = d < dr.log_n.shape[0] and (dr.plan[1] == 0 or d > dr.forced[dr.plan[1] - 1, 0])
    best1 = far
    eof = fsize[f]
    if far > last:
        near_s = price(dr, f, start * bsize, R.op_bytes(start, last - start + 1, bsize, eof),
                       True)
        rest_s = price(dr, f, (last + 1) * bsize, R.op_bytes(last + 1, far - last, bsize, eof),
                       False)
        far_s = price(dr, f, start * bsize, R.op_bytes(start, far - start + 1, bsize, eof),
                      True)
        if far_s > near_s + rest_s:
            best1 = last
    tail = eof_blk - 1 if eof_blk > 0 else -1
    near_end = tail >= far and tail - far <= fut.gap_blocks  # the next file is near
    to_tail = near_end and tail > far
    # with a buffer cache no larger than one of the drive's segments, the segment filled
    # from the READ's start, when a READ priced uses a block of it past the read-ahead
    # (which the cache could not keep until then)
    seg = dr.ip[I_SEGBYTES]
    drive_cache = dr.ip[I_NSEG] > 0
    # the gate of the ways that count on what the drive's segments keep and the buffer
    # cache cannot: a buffer cache no larger than one segment
    small_cache = drive_cache and fut.cache_blocks * bsize <= seg
    held_seg = seg if drive_cache else 0  # what the drive keeps of a read (0: nothing)
    fill = min(start + seg // bsize - 1, tail) if tail >= 0 else start + seg // bsize - 1
    to_fill = (small_cache and fill > far and not (to_tail and fill == tail)
               and used_soon(fut, stamp, f, far + 1, fill))
    horizon = min(stamp + 1 + HORIZON, fut.ref0.shape[0])
    within = horizon == fut.ref0.shape[0] or latest < fut.ref0[horizon]
    # the read-ahead apart gives the drive more room to read ahead: worth pricing when a
    # READ priced uses a block that read-ahead could reach, or the next file is near
    to_split = far > last and (near_end or (drive_cache and used_soon(
        fut, stamp, f, far + 1, far + seg // bsize)))
    # the read's last block apart: after a read of L bytes the drive reads ahead at most
    # ``segment - L``, after one block nearly a segment; worth pricing when a READ priced
    # uses a block that read-ahead could reach; and when it is the file's partial last
    # block, which read alone is read whole, ending past the file (maybe where another
    # file's blocks start)
    to_last = best1 > start and ((best1 == tail and eof % bsize != 0) or (
        drive_cache and (to_split if best1 == far > last and not near_end else
                               used_soon(fut, stamp, f, best1 + 1, best1 + seg // bsize))))
    # on a fragmented layout, the read-ahead up to the first extent the head cannot stream
    # into (the rest read at a later miss, perhaps streaming on from another file's
    # extent); with a buffer cache no larger than a drive segment at any such extent (the
    # rest read at a later miss moves the drive's read-ahead elsewhere, and which segments
    # then keep what the buffer cache cannot, the look ahead prices)
    cut = (_first_jump(dr, fut, stamp, f, bsize, last + 1, far, small_cache)
           if best1 == far > last else -1)
    # and reading over to the file's end cut the same way: up to the end of the extent
    # before the first one it would position to (the rest read at the later miss, the head
    # streaming on into it from the other file's extent)
    cut_tail = _first_jump(dr, fut, stamp, f, bsize, far + 1, tail, False) if to_tail else -1
    if cut_tail <= far:
        cut_tail = -1
    # the blocks a drive segment holds apart (a hit), the rest in a read of its own: a
    # read is a hit only when a segment holds all of it
    held = _held(dr, f, bsize, start, best1)
    # with a buffer cache no larger than a segment, a read longer than a segment leaves
    # only its last segment's bytes in the drive's cache: its first segment in a read of
    # its own keeps the READ's first blocks there, for a READ priced that uses one again
    head = start + seg // bsize - 1
    to_head = small_cache and start <= head < best1 and used_soon(fut, stamp, f, start, head)
    # the first read lands in the segment the drive is reading ahead into, past where it
    # got: a wait for it (re-reads of the last read, hits) may make the read a hit
    to_wait = drive_cache and dr.last[0] >= 0 and _in_filling(
        dr, dr.state, f, start * bsize, R.op_bytes(start, best1 - start + 1, bsize, eof),
        True) > 0
    # with no drive cache, a read ends where the head stops and a read starting elsewhere
    # positions: reading over the gap up to the block that the next READ of the file to
    # demand past the read-ahead reads first lets that read stream on (with a drive cache,
    # the drive's read-ahead reads the gap into a segment and makes that read a hit)
    to_next = next_start(fut, stamp, f, far, tail) if not drive_cache else -1
    if not (to_tail or to_fill or to_split or to_last or cut >= 0 or held >= 0 or to_head or (
            far > last and best1 == far and within) or to_wait or to_next >= 0):
        if logging:
            _note_priced(dr, c, fut, fsize, bsize, stamp, f, start, best1, -1, last + 1, best1,
                         1, d)
            _note_more(dr, c, fut, fsize, bsize, stamp, f, start, last, far, d, best1, -1,
                       last + 1, best1, 1, part)
        return best1, -1, 0, best1  # one way only
    # the table of ways, in the order they are priced (ties keep the earlier): each a
    # first read's end and a second's, the read-ahead it keeps; a way that reads over to a
    # file's or an extent's end only when it reads over no block lost to both caches
    # (:func:`over_lost`: blocks from ``over`` on, the read from its first block)
    ways = dr.ways
    over = far + 1
    m = 0
    if to_split:  # the read-ahead apart
        m = _add_way(ways, m, WAY_FIXED, last, far, last + 1, far, 1)
    if to_tail:  # over to the file's end, in one read, or apart after the read-ahead
        if not over_lost(fut, stamp, f, bsize, eof, held_seg, start, over, tail):
            m = _add_way(ways, m, WAY_FIXED, tail, -1, last + 1, far, 1)
        if not over_lost(fut, stamp, f, bsize, eof, held_seg, over, over, tail):
            m = _add_way(ways, m, WAY_FIXED, far, tail, last + 1, far, 1)
    # the demand, then the read-ahead and the file's end in a read of their own
    if far != last and to_tail and not over_lost(fut, stamp, f, bsize, eof, held_seg,
                                                 last + 1, over, tail):
        m = _add_way(ways, m, WAY_FIXED, last, tail, last + 1, far, 1)
    # the demand alone, when the READs priced use all the read-ahead (also after the
    # read-ahead apart was chosen, where the look ahead reads ahead as the oracle would: a
    # later miss of the file may read the READ's earlier blocks and the read-ahead in one
    # stream)
    if far != last and within:
        m = _add_way(ways, m, WAY_DEMAND, last, -1, far + 1, far, 1)
    # over to fill the segment, in one read or apart: it reads over blocks the look ahead's
    # own read-ahead would read again, so it is priced only as the READs are (with it, it won
    # where it lost on the disk)
    if to_fill:
        m = _add_way(ways, m, WAY_FIXED, fill, -1, last + 1, far, 0)
        m = _add_way(ways, m, WAY_FIXED, last, fill, last + 1, far, 0)
    if cut_tail >= 0:  # over to an extent's end, in one read or after the demand apart
        if not over_lost(fut, stamp, f, bsize, eof, held_seg, start, over, cut_tail):
            m = _add_way(ways, m, WAY_FIXED, cut_tail, -1, last + 1, far, 1)
        if not over_lost(fut, stamp, f, bsize, eof, held_seg, last + 1, over, cut_tail):
            m = _add_way(ways, m, WAY_FIXED, last, cut_tail, last + 1, far, 1)
    if to_next >= 0:  # over the gap to the next READ's first block (no drive cache)
        m = _add_way(ways, m, WAY_FIXED, to_next, -1, last + 1, far, 1)
    # the ways that split the first read of the way chosen so far (its last block apart;
    # what a drive segment holds, then the rest; its first segment, then the rest), and
    # between the first two, the read-ahead up to the first extent it jumps to
    if to_last:
        m = _add_way(ways, m, WAY_SPLIT, SPLIT_LAST, -1, 0, 0, 1)
    if cut >= 0:
        m = _add_way(ways, m, WAY_FIXED, cut, -1, last + 1, cut, 1)
    if held >= 0:
        m = _add_way(ways, m, WAY_SPLIT, held, -1, 0, 0, 1)
    if to_head:
        m = _add_way(ways, m, WAY_SPLIT, head, -1, 0, 0, 1)
    best2 = -1
    best_lo = last + 1
    best_hi = best1
    best = price_reads(dr, c, fut, fsize, bsize, stamp, f, start, best1, -1, last + 1, best1,
                       True)
    best_ahead = True
    if logging:
        _note(dr, d, best1, -1, last + 1, best1, 1, best)
    for i in range(m):
        kind = ways[i, 0]
        e1 = ways[i, 1]
        e2 = ways[i, 2]
        lo = ways[i, 3]
        hi = ways[i, 4]
        ahead = ways[i, 5] != 0
        if kind == WAY_DEMAND and best1 == last and (best2 < 0 or
                                                     fut.cache_blocks > AHEAD_MAX):
            continue  # the way chosen reads the demand alone already
        if kind == WAY_SPLIT:
            if e1 == SPLIT_LAST:
                e1 = best1 - 1
            e2 = max(best1, best2)
            lo = best_lo
            hi = best_hi
        s = price_reads(dr, c, fut, fsize, bsize, stamp, f, start, e1, e2, lo, hi, ahead)
        if logging and e1 >= start:  # (a split of a one-block read reads nothing first)
            _note(dr, d, e1, e2, lo, hi, 1 if ahead else 0, s)
        if s < best:
            best = s
            best1 = e1
            best2 = e2
            best_lo = lo
            best_hi = hi
            best_ahead = ahead
    if logging:
        dr.log_n[d, 1] = _note(dr, d, best1, best2, best_lo, best_hi, 1 if best_ahead else 0,
                               best)
        _note_more(dr, c, fut, fsize, bsize, stamp, f, start, last, far, d, best1, best2,
                   best_lo, best_hi, 1 if best_ahead else 0, part)
    # the way chosen after a wait for the drive's read-ahead, when its first read lands in
    # the segment being filled, past where the read-ahead got
    e1, e2, n = _waited(dr, c, fut, fsize, bsize, stamp, f, start, best1, best2, best_lo,
                        best_hi, best_ahead, best)
    return e1, e2, n, best_hi


@njit(nogil=True, _nrt=False)
def issue(world, f, start, last, eof, stamp):
    """Read blocks start..last of file f as one disk read (the replay's and the shadow's)."""
    bsize = world.policy.bsize
    ln = R.op_bytes(start, last - start + 1, bsize, eof)
    R.emit_op(world.ops, world.ctr, f, start * bsize, ln, True, stamp)
    dr = world.drive
    if dr.on != 0:
        service_one(dr, dr.state, f, start * bsize, ln)
        dr.last[0] = f
        dr.last[1] = start * bsize
        dr.last[2] = ln


@njit(nogil=True, _nrt=False)
def issue_pieces(world, f, start, last, eof, stamp, piece):
    """Read blocks start..last of file f in disk reads of ``piece`` blocks each."""
    while start <= last:
        e = min(last, start + piece - 1)
        issue(world, f, start, e, eof, stamp)
        start = e + 1


@njit(nogil=True, _nrt=False)
def wait(world, n, stamp):
    """Re-read the last read issued ``n`` times (:func:`wait_hits`: hits while the drive
    reads ahead)."""
    dr = world.drive
    for _ in range(n):
        R.emit_op(world.ops, world.ctr, dr.last[0], dr.last[1], dr.last[2], True, stamp)
        service_one(dr, dr.state, dr.last[0], dr.last[1], dr.last[2])


@njit(nogil=True, _nrt=False)
def wanted(c, fut, key, j, k):
    """Block ``key`` (index ``j`` among the trace's distinct blocks, -1: never demanded) as a
    read-ahead candidate after demand reference k: (its next use, the bound on the distinct
    blocks demanded before it, the last block of the READ of that use); use -1 when
    resident, -2 when never used again or used too late to survive in the cache."""
    if C.lookup(c, key) >= 0:
        return -1, -1, -1
    if j < 0:
        return -2, -1, -1
    u = next_use(fut, j, k)
    if u < 0:
        return -2, -1, -1
    d = demand_limit(fut, u)
    if d < 0:
        return -2, -1, -1
    return u, d, fut.walk_end[j]


# inlined into the engine's loop: a call would copy the whole OracleWorld (some 60 arrays,
# a few hundred machine words) for every READ; inlined, the oracle's replay took 26% less
@njit(nogil=True, _nrt=False, inline="always")
def oracle_serve(world, row, params, f, off, cnt, t, seq, fresh, stamp):
    """The oracle's serve step (module docstring); ``world`` is an :class:`OracleWorld`."""
    pol = world.policy
    c = world.cache
    fs = world.fs
    ctr = world.ctr
    lost = world.lost
    req = world.req
    fut = world.future
    dr = world.drive
    eof = world.fsize[f]
    cnt = R.begin_request(f, off, cnt, fresh, pol, eof, fs, ctr, req)
    if cnt > 0:
        bsh = pol.bshift
        bsize = pol.bsize
        d_lo = off >> bsh
        d_hi = (off + cnt - 1) >> bsh
        ctr.demand_blocks += d_hi - d_lo + 1
        eof_blk = (eof + bsize - 1) >> bsh if eof >= 0 else -1
        gap = fut.gap_blocks
        start = -1  # first block of the read being built (-1: none)
        last = -1  # its last block that has to be read
        pd = world.pending
        for b in range(d_lo, d_hi + 1):
            key = C.make_key(f, b)
            e = C.lookup(c, key)
            # a block read ahead that reaches its use (or was lost) stops waiting with
            # nothing to undo: its position is at most every later read's reference k, and
            # the Pending trees are only asked about positions past k (:class:`Pending`)
            if e >= 0:
                R.visit_resident(c, e, stamp, f, b, fs, ctr, lost, req)
                continue
            R.count_miss(c, -1, f, b, fs, ctr, lost, req)
            e = R.insert_block(c, f, b, stamp, d_lo, d_hi, 0, ctr, req)
            R.demand_use(c, e, ctr)
            # a run of blocks the cache holds between misses is read over when it is
            # short (cheaper than a second positioning), except with a drive cache: a
            # read made longer by it may no longer fit a drive segment (which keeps a
            # read's last bytes) and leaves the drive less room to read ahead after it,
            # so a READ asking for its first blocks again, or for blocks just past it,
            # finds them in no segment (docs/bound.md, "Seed 71's losses")
            if start >= 0 and b - last - 1 > (gap if world.drive.ip[I_NSEG] == 0 else 0):
                issue(world, f, start, last, eof, stamp)
                start = -1
            if start < 0:
                start = b
            last = b
        if start >= 0:
            # how far the read could go: the blocks the future needs before eviction
            k = fut.ref0[stamp] + d_hi - d_lo  # this READ's last demand reference
            advance_reach(fut, k)
            far = last  # the read ends here, or after the last READ it wholly serves
            seen = last  # the last block wanted so far
            whole = -1  # the last block of the READs the wanted blocks serve
            n_adm = 0  # admitted so far (pd.undo[:n_adm]: their uses)
            kept = 0  # of them, up to far
            # while they are used in the order they are admitted, admitted blocks go in the
            # tree only once the read is decided (admit_deferred, commit)
            deferred = True
            least = pd.huge
            after = np.int64(0)
            # D counted exactly (the distinct blocks demanded in k+1..w_at-1), walking the
            # references from k on while that costs at most WALK per block admitted: a
            # bound from the limits may refuse a block that would survive (a lone reader
            # whose whole file fits the cache); with many readers between a block and its
            # use the walk would cost more than the read, and the bound is kept
            w_at = k + 1
            w_distinct = 0
            b = d_hi + 1
            j0 = fut.ids[k] + 1  # the first key after this READ's last block
            jn = j0  # the first key >= block b's
            while b - seen - 1 <= gap and n_adm < pd.undo.shape[0]:
                if eof_blk >= 0 and b >= eof_blk:
                    break
                key = C.make_key(f, b)
                j = key_at(fut, jn, key)
                if j >= 0:
                    jn += 1
                u, d, end = wanted(c, fut, key, j, k)
                if u >= w_at and u - k <= WALK * (n_adm + 1):
                    while w_at < u:
                        if fut.prev[w_at] <= k:  # its block's first reference after k
                            w_distinct += 1
                        w_at += 1
                    d = w_distinct
                if u >= 0:
                    if deferred and n_adm > 0 and u < pd.undo[n_adm - 1]:
                        commit(pd, k, n_adm)  # out of order: the rest one at a time
                        deferred = False
                    if deferred:
                        ok, least, after = admit_deferred(pd, fut.cache_blocks, k, u, d,
                                                          n_adm, least, after)
                    else:
                        ok = admit(pd, fut.cache_blocks, k, u, d)
                    if not ok:
                        break  # it, or a block waiting, would be evicted unused
                    pd.undo[n_adm] = u
                    pd.admitted[n_adm] = b
                    n_adm += 1
                    seen = b
                    if end > whole:
                        whole = end
                elif u == -2 and b <= whole:
                    break  # a READ this read would serve in part only: no read saved
                if b >= whole and seen > far:
                    far = seen
                    kept = n_adm
                b += 1
            # the blocks admitted past far serve a later READ in part only: reading them
            # saves that READ no disk read, but makes its read shorter (a drive-cache hit
            # costs its bytes' transfer), a way the rollouts try (choose_reads' ``part``);
            # priced in the table, it changed the greedy schedule both ways (docs/bound.md,
            # "A loss found afterwards")
            part = seen if seen > far else np.int64(-1)
            end1 = far  # the read: blocks start..end1, then end1 + 1..end2 apart (-1: none)
            end2 = -1
            n_wait = 0
            if dr.on != 0:
                latest = np.int64(-1)  # the last use of a block read ahead
                for i in range(kept):
                    latest = max(latest, pd.undo[i])
                end1, end2, n_wait, hi = choose_reads(dr, c, fut, world.fsize, bsize, stamp,
                                                      f, start, last, far, eof_blk, latest,
                                                      part)
                if part > far and far < hi <= part:  # the read-ahead into the READ in part
                    far = hi
                    kept = n_adm
                    while kept > 0 and pd.admitted[kept - 1] > far:
                        kept -= 1
                elif end1 < far and end2 < far:  # the read-ahead dropped, or cut short
                    far = max(last, end1, end2)
                    while kept > 0 and pd.admitted[kept - 1] > far:
                        kept -= 1
            if deferred:  # the blocks admitted, then not read, never went in
                commit(pd, k, kept)
            else:
                for i in range(n_adm - 1, kept - 1, -1):  # admitted, then not read: undone
                    release(pd, pd.undo[i])
                    range_add(pd, k + 1, pd.undo[i], 1)
            # the blocks admitted up to far are still wanted (inserting others makes none
            # of them resident); any other block is asked again, as an insert may have
            # pushed out one that was resident
            jn = j0
            p = 0
            for b in range(last + 1, far + 1):
                key = C.make_key(f, b)
                j = key_at(fut, jn, key)
                if j >= 0:
                    jn += 1
                if p < kept and pd.admitted[p] == b:
                    p += 1
                elif wanted(c, fut, key, j, k)[0] < 0:
                    continue
                R.insert_block(c, f, b, stamp, d_lo, d_hi, 0, ctr, req)
            wait(world, n_wait, stamp)
            piece = dr.plan[3]  # blocks per disk read (a rollout's way; 0: whole)
            if piece > 0:
                issue_pieces(world, f, start, end1, eof, stamp, piece)
                if end2 > end1:
                    issue_pieces(world, f, end1 + 1, end2, eof, stamp, piece)
            else:
                issue(world, f, start, end1, eof, stamp)
                if end2 > end1:
                    issue(world, f, end1 + 1, end2, eof, stamp)
    R.end_request(f, off, cnt, fs, req)
    return seq


# -------------------------------------------------------------------------------------------
# the replay


class OracleReplayer(Replayer):
    """A :class:`Replayer` (table ``ideal``, no detector) whose serve step is the oracle's,
    given the trace's :class:`Future` (the whole trace must be known before the first feed:
    it is a schedule made offline)."""

    #: a disk read per run of blocks read, not per block (3,194 for the benchmark's 2 M
    #: READs): the replay's million zeroed buffer entries (40 MB) cost more than the batches
    OPS_CAPACITY = 1 << 14

    def __init__(self, file_ids: np.ndarray, future: Future, *, block_size: int,
                 forced: np.ndarray | None = None, log_decisions: int = 0,
                 **kwargs: Any) -> None:
        kwargs.setdefault("ops_capacity", self.OPS_CAPACITY)
        super().__init__(file_ids, detector="never", table="ideal",
                         policy=f"none:bsize={int(block_size)}", **kwargs)
        from .tables import steps_of

        self.world = OracleWorld(*self.world, future=future, pending=new_pending(future),
                                 drive=drive_of(self.disk, getattr(self, "place", None),
                                                forced, log_decisions))
        # what a replay moves of the future (next_use's walks, the windows), as it starts
        self._future_start = {name: getattr(future, name).copy() for name in _FUTURE_MOVED}
        prepare, lookup = steps_of(self.model)
        self._run = E.loop(prepare, lookup, E.without_nrt(self.spec.info.reset),
                           E.no_decision, oracle_serve, E.admit_replay, E.record_replay)

    def restart(self, forced: np.ndarray | None = None, log_decisions: int = 0) -> None:
        """Back to the state before the first feed (:meth:`Replayer.restart`), with the ways
        ``forced`` imposed and room to log ``log_decisions`` decisions (as the constructor's
        arguments): the future's walks and windows (all a replay changes of it) as they
        start, the read-ahead's pending blocks none, the drive's shadow as the drive starts.
        The drive's plan and log are new arrays: those of a :class:`Drive` taken from an
        earlier run stay as that run left them."""
        super().restart()
        fut = self.world.future
        for name, start in self._future_start.items():
            getattr(fut, name)[...] = start
        self.world = self.world._replace(
            pending=new_pending(fut),
            drive=restart_drive(self.world.drive, self.disk, forced, log_decisions))


#: the arrays of a :class:`Future` a replay changes (the rest is read only)
_FUTURE_MOVED = ("walk", "walk_end", "window", "reach")

ROLLOUT_READS = 1000  # the longest trace (READs) whose choices run_oracle improves by rollouts
ROLLOUT_MAX = 8  # rollouts per trace at most (bound's cost on the law's traces)
ROLLOUT_CLOSE = 0.2  # a way is tried when its look-ahead price is within this of the chosen's
ROLLOUT_LOG = 256  # decisions logged (and so open to a rollout) per replay
#: work the rollouts of a trace may replay in all, a run's work being its READs plus
#: ROLLOUT_DECISION_WORK times its decisions (choose_reads' calls): on the demo capture a
#: decision of a run without the log costs about 4 us, a READ about 0.4 us. A rollout starts
#: only when the work of the rollouts so far and of the last run (the next one's, about)
#: fits: the law's traces (at most 50 READs, so at most 50 decisions, 550 a run) get all
#: ROLLOUT_MAX; the demo capture gets 2 at 1 MiB (1838 a run) and 5 at 256 MiB (828), so
#: that bound stays within 3x one replay there. A count, not a clock: the same rollouts run
#: on every machine.
ROLLOUT_DECISION_WORK = 10
ROLLOUT_WORK = 4400


def run_oracle(stream: ReadStream, sizes: np.ndarray | None, *, cache_bytes: int,
               block_size: int, profile: Any, layout: Any = None, drive_cache: bool = True,
               timing: Any = None, refs: Refs | None = None,
               rollout_reads: int = ROLLOUT_READS) -> dict[str, Any]:
    """Replay ``stream`` through the oracle; the summary row (``seqheur.metrics`` columns).
    ``refs``: the stream's :class:`Refs` at these sizes, if already computed;
    ``rollout_reads``: the longest trace (READs) improved by rollouts (-1: none)."""
    from .disk.model import DiskModel, Layout

    model = None
    if profile is not None:
        model = DiskModel.from_profile(profile, layout if layout is not None else Layout(),
                                       drive_cache=drive_cache)
    eof = sizes if sizes is not None else np.full(stream.n_files, np.iinfo(np.int64).max // 4,
                                                  np.int64)
    eof = np.ascontiguousarray(eof, dtype=np.int64)
    gap = gap_blocks_of(model, block_size)
    if refs is None or refs.prev is None:
        refs = refs_of(stream, eof, block_size, reads=True)

    rp: OracleReplayer | None = None

    def replay(forced: np.ndarray | None, log_decisions: int) -> tuple[dict, Drive]:
        # one replayer for every run, restarted: building one (future, profile, placement,
        # the loop's lookup) cost about 1.3 ms, more than a run of a short trace's READs
        nonlocal rp
        if rp is None:
            fut = future_of(stream, eof, block_size, cache_bytes // block_size, gap, refs)
            rp = OracleReplayer(stream.file_ids, fut, block_size=block_size,
                                cache=cache_bytes, profile=profile, file_sizes=sizes,
                                layout=layout, drive_cache=drive_cache, per_request=False,
                                timing=timing, forced=forced, log_decisions=log_decisions)
        else:
            rp.restart(forced, log_decisions)
        rp.feed(stream)
        return rp.summary(), rp.world.drive

    if model is None or len(stream) > rollout_reads:
        out = replay(None, 0)[0]
    else:
        out = rollouts(replay, len(stream))
    out["detector"] = out["policy"] = "oracle"
    return out


def rollouts(replay: Any, reads: int) -> dict[str, Any]:
    """The oracle's replay improved by rollouts (a pilot method): the oracle's own choices
    are a greedy schedule; at each decision in turn (:func:`choose_reads`' calls, in trace
    order), each other way whose look-ahead price is within ``ROLLOUT_CLOSE`` of the
    chosen's, cheapest first, is imposed there and the oracle's own choices run on from it
    to the trace's end (the same replay: the drive, the cache and the read-ahead's
    admissions as they follow from it); the one with the least disk time is kept when it
    takes less than the schedule so far, and the decisions after it are those of its run.
    At most ``ROLLOUT_MAX`` rollouts, and while their work fits ``ROLLOUT_WORK`` (a count,
    not a clock: the same rollouts on every machine). ``replay(forced, log_decisions)``:
    (summary, Drive) of one replay with the ways ``forced`` imposed; ``reads``: the trace's
    READs."""
    def work(decisions: int) -> int:
        return reads + ROLLOUT_DECISION_WORK * decisions

    def room() -> bool:  # for another rollout
        return tried < ROLLOUT_MAX and spent + last <= ROLLOUT_WORK

    out, dr = replay(None, ROLLOUT_LOG)
    forced = np.zeros((0, 7), np.int64)
    decisions = int(dr.plan[0])  # of the schedule kept
    tried = 0
    spent = 0  # work replayed by the rollouts so far
    last = work(decisions)  # and by the last run: about the next's
    d = 0
    while d < min(decisions, ROLLOUT_LOG) and room():
        if dr is None:
            # the schedule kept again, logging its decisions' ways: a rollout runs without
            # its log (half a run's time on the demo capture at 1 MiB), needed only once it
            # is kept and a later decision is rolled out; the log prices ways on scratch
            # copies of the drive only, so the run is the same
            dr = replay(forced, ROLLOUT_LOG)[1]
        n, chosen = int(dr.log_n[d, 0]), int(dr.log_n[d, 1])
        base = dr.log_s[d, chosen]
        order = sorted((float(dr.log_s[d, i]), i) for i in range(n) if i != chosen and
                       dr.log_s[d, i] <= base * (1 + ROLLOUT_CLOSE))
        won = None
        for _, i in order:
            if not room():
                break
            tried += 1
            way = np.concatenate([[d], dr.log[d, i]]).astype(np.int64)
            trial = np.vstack([forced, way[None, :]])
            o, t = replay(trial, 0)
            last = work(int(t.plan[0]))
            spent += last
            # the best of the decision's ways, not the first that beats the schedule so far:
            # on seed 59's trace 337 the first (the block, then blocks 1 to 8 apart, 76.267
            # ms) is not the one that wins past the look ahead (the block alone, 72.593 ms)
            if o["disk_seconds"] < (out if won is None else won[0])["disk_seconds"]:
                won = (o, int(t.plan[0]), trial)
        if won is not None:
            out, decisions, forced = won
            dr = None
        d += 1
    return out




# -------------------------------------------------------------------------------------------
# Cao, Felten, Karlin & Li's integrated prefetching and caching (SIGMETRICS 1995)


#: *Conservative*: exactly the replacements of Belady's MIN (so its fetches are MIN's misses),
#: each fetch started as early as that allows; its disk reads are MIN's missed references, in
#: reference order (their indices).
conservative_fetches = belady_fetches


def aggressive_fetches(ids, nxt, capacity, n_ids, fetch_time):
    """*Aggressive*: whenever the disk is free, fetch the first block of the future
    references not in the cache, evicting the block whose next reference is furthest away,
    but only if that reference comes after the fetched block's ("do no harm"). Time: one
    unit per reference served, ``fetch_time`` units per fetch, one fetch at a time.
    Returns (the reference index each fetch is for, in issue order; elapsed time units).

    The resident blocks still referenced (*live*) are known by their next references: a
    set of reference indices (each one a block's: the block of reference ``x`` is
    ``ids[x]``) kept as a bitmap with a summary bitmap above it, level by level up to one
    word (:func:`_bits_set`): the furthest is found from the top word down, a word per
    level, where a max-heap of the live blocks climbed and sifted through up to log2(C)
    levels per reference (0.017 s against 0.034 s on the benchmark's trace, 2 M READs);
    the keys are distinct, so either evicts the same block. Those never referenced again
    (*dead*) are only on a stack. A fetch is decided only when none is in flight, so every
    resident block has arrived and the one to evict is a dead block if any (which of them
    is no matter), else the furthest. The arrays are numpy's
    (``bound.next_and_previous_uses`` says why)."""
    n = ids.shape[0]
    out = np.empty(n, np.int64)
    state = np.full(n_ids, -1, np.int8)  # -1: not resident; 0: live; -2: dead
    arrived = np.zeros(n_ids, np.bool_)
    dead = np.empty(max(min(capacity, n_ids), 1), np.int64)
    sizes = [max((n + 63) >> 6, 1)]
    while sizes[-1] > 1:
        sizes.append((sizes[-1] + 63) >> 6)
    base = np.zeros(len(sizes), np.int64)
    base[1:] = np.cumsum(sizes)[:-1]
    bits = np.zeros(sum(sizes), np.uint64)
    m, t = _aggressive_run(ids, nxt, np.int64(capacity), np.int64(fetch_time), out, state,
                           arrived, dead, bits, base)
    return out[:m], t


@njit(nogil=True, _nrt=False, inline="always")
def _bits_set(bits, base, x):
    """Put ``x`` in the set (:func:`aggressive_fetches`): its bit, and in each level above
    the bit of the word below, up to a word that was not empty."""
    for lv in range(base.shape[0]):
        i = base[lv] + (x >> 6)
        before = bits[i]
        bits[i] = before | (np.uint64(1) << np.uint64(x & 63))
        if before != 0:
            return
        x >>= 6


@njit(nogil=True, _nrt=False, inline="always")
def _bits_clear(bits, base, x):
    """Take ``x`` (in the set) out of it: its bit, and in each level above the bit of a
    word left empty."""
    for lv in range(base.shape[0]):
        i = base[lv] + (x >> 6)
        w = bits[i] & ~(np.uint64(1) << np.uint64(x & 63))
        bits[i] = w
        if w != 0:
            return
        x >>= 6


@njit(nogil=True, _nrt=False, inline="always")
def _bits_max(bits, base):
    """The largest member of the set (not empty): from the top word down, the highest bit
    of the word below each level's."""
    x = np.int64(0)
    for lv in range(base.shape[0] - 1, -1, -1):
        x = (x << 6) | (63 - np.int64(leading_zeros(bits[base[lv] + x])))
    return x


@E.cache_by_sources
@njit(nogil=True, _nrt=False)
def _aggressive_run(ids, nxt, capacity, fetch_time, out, state, arrived, dead, bits, base):
    """:func:`aggressive_fetches`' simulation (its arrays allocated by the caller: without
    reference counting; every index unsigned, ``bound.uindex``); returns (the fetches
    written to ``out``, elapsed time units)."""
    n = ids.shape[0]
    m = 0
    ndead = 0
    used = 0  # resident (or in flight): live + ndead
    t = 0
    busy_until = 0
    flight = -1
    p = 0
    q = 0
    while p < n:
        if flight >= 0 and t >= busy_until:
            arrived[uindex(flight)] = True
            flight = -1
        if flight < 0:
            if q < p:
                q = p
            while q < n and state[uindex(ids[uindex(q)])] != -1:
                q += 1
            if q < n and (used < capacity or ndead > 0
                          or (used > 0 and _bits_max(bits, base) > q)):
                b = ids[uindex(q)]
                if used < capacity:
                    used += 1
                elif ndead > 0:  # a dead block makes room
                    ndead -= 1
                    state[uindex(dead[uindex(ndead)])] = -1
                    arrived[uindex(dead[uindex(ndead)])] = False
                else:  # the live block referenced furthest away (after q) makes room
                    far = _bits_max(bits, base)
                    _bits_clear(bits, base, far)
                    state[uindex(ids[uindex(far)])] = -1
                    arrived[uindex(ids[uindex(far)])] = False
                state[uindex(b)] = 0
                _bits_set(bits, base, q)
                flight = b
                busy_until = t + fetch_time
                out[uindex(m)] = q
                m += 1
        b = ids[uindex(p)]
        if state[uindex(b)] == 0 and (arrived[uindex(b)] or flight != b):
            _bits_clear(bits, base, p)  # its next reference was p
            if nxt[uindex(p)] == n:  # dead: onto the stack
                state[uindex(b)] = -2
                dead[uindex(ndead)] = b
                ndead += 1
            else:
                _bits_set(bits, base, nxt[uindex(p)])
            p += 1
            t += 1
        else:  # stall until the block in flight (this one) arrives
            t = busy_until
    return m, t


@E.cache_by_sources
@njit(nogil=True, _nrt=False)
def fetch_seconds(fetched, rf, rb, eof, bs, ext_first, ext_base, extent_bytes, ip, fp, seek_d,
                  seek_t, zone_start, zone_rate, state):
    """Disk seconds of the fetches' reads in issue order (``fetched``: reference indices),
    each one block (a partial last block read whole, none past the end of the file), on a
    drive in ``state`` (it advances), summed in issue order as ``np.cumsum`` sums them: what
    ``DiskModel.service`` of those reads gives, without arrays of reads and of seconds (and
    without reference counting, which cost as much as the drive's model here)."""
    total = 0.0
    for i in range(fetched.shape[0]):
        f = rf[fetched[i]]
        off = rb[fetched[i]] * bs
        ln = bs if eof[f] > off else 0
        t, _ = service_read(f, off, ln, False, 0.0, ext_first, ext_base, extent_bytes, ip, fp,
                            seek_d, seek_t, zone_start, zone_rate, state)
        total += t
    return total


@njit(cache=True, nogil=True, _nrt=False)
def _span(a):
    """``a.max() - a.min()`` of a non-empty array in one pass over it (numpy makes two)."""
    lo = a[0]
    hi = a[0]
    for i in range(1, a.shape[0]):
        lo = min(lo, a[i])
        hi = max(hi, a[i])
    return hi - lo


def reference_schedules(stream: ReadStream, sizes: np.ndarray | None, *, cache_blocks: int,
                        block_size: int, model: Any, fetch_time: int | None = None,
                        refs: Refs | None = None, conservative: Any = None) -> dict[str, Any]:
    """Aggressive and conservative (above) over ``stream``'s demand references with a cache
    of ``cache_blocks`` blocks, each fetch one block read by ``model`` (a DiskModel, or None:
    no disk time), in issue order. ``fetch_time``: a fetch's time in references (default: a
    block read at the drive's random positioning over the trace's mean time per demanded
    block, at least 1). ``refs``: the stream's :class:`Refs` at these sizes, and
    ``conservative``: :func:`conservative_fetches` of them, if already computed."""
    eof = sizes if sizes is not None else np.full(stream.n_files, np.iinfo(np.int64).max // 4,
                                                  np.int64)
    eof = np.ascontiguousarray(eof, dtype=np.int64)
    if refs is None:
        refs = refs_of(stream, eof, block_size)
    rf, rb, uniq, ids, nxt = refs.file, refs.block, refs.keys, refs.ids, refs.nxt
    if fetch_time is None:
        fetch_time = 1
        span = float(_span(stream.time_ns)) if len(stream) else 0.0
        if model is not None and span > 0 and ids.size:
            block_s = float(model.fparams[3] + model.fparams[1]
                            + block_size / model.zone_rate.max())
            fetch_time = max(1, int(round(block_s / (span * 1e-9 / ids.size))))
    out: dict[str, Any] = {"reference_fetch_time": int(fetch_time)}
    cons = (conservative if conservative is not None
            else conservative_fetches(ids, nxt, np.int64(cache_blocks), uniq.size))
    aggr, elapsed = aggressive_fetches(ids, nxt, np.int64(cache_blocks), uniq.size,
                                       np.int64(fetch_time))
    place = model.place(np.maximum(eof, 1)) if model is not None else None
    for name, refs in (("aggressive", aggr), ("conservative", cons)):
        out[f"{name}_fetches"] = int(refs.size)
        out[f"{name}_disk_seconds"] = None
        if model is not None and name == "conservative" and np.array_equal(refs, aggr):
            # the same reads in the same order: the same time
            out[f"{name}_disk_seconds"] = out["aggressive_disk_seconds"]
        elif model is not None:
            out[f"{name}_disk_seconds"] = float(fetch_seconds(
                refs, rf, rb, eof, np.int64(block_size), place.ext_first, place.ext_base,
                np.int64(place.extent_bytes), *model.kernel_args(), model.new_state()))
    out["aggressive_elapsed_refs"] = int(elapsed)
    return out


__all__ = ["Future", "OracleReplayer", "Refs", "refs_of", "aggressive_fetches", "conservative_fetches",
           "future_of", "oracle_serve", "reference_schedules", "run_oracle"]
