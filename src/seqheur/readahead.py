"""Read-ahead policies: a detector's seqcount → which blocks the file system reads ahead.

Spec strings (``parse_policy``), with the block size each models by default:

``freebsd4-cluster[:bsize=16384][:maxphys=131072][:maxra=32]``
    FreeBSD 4.x ``cluster_read`` (DragonFly 984263bc ``sys/kern/vfs_cluster.c``, the 4.x code).
    Block = UFS block, default 16 KiB (4.x newfs ``DFL_BLKSIZE``). ``racluster = maxphys /
    bsize`` (MAXPHYS 128 KiB → 8 blocks). On a demand miss: a synchronous read of the demand
    block (a cluster of ``min(ceil(rest/bsize), racluster)`` blocks when the rest of the request
    is larger than a block), then **one** asynchronous cluster of ``min(racluster, max(seqcount,
    ceil(request/bsize)))`` blocks if it starts below ``block + seqcount``. On a hit of a block
    carrying the read-ahead mark (``B_RAM``): scan the resident successors (up to ``maxra =
    min(2*racluster + rest//bsize, 32)``), re-mark every ``racluster``-th, and start the next
    cluster at the first hole if it lies below ``block + seqcount``. A read-ahead cluster marks
    its first block and its last (``cluster_rbuild``), so the next cluster is asked for when
    the reader *enters* the one before it, one cluster ahead (see :func:`cluster`).
``freebsd-cluster[:bsize=32768][:read_max=64][:read_min=1][:maxphys=131072]``
    Current FreeBSD ``cluster_read`` (freebsd-src ``sys/kern/vfs_cluster.c``). Block default 32
    KiB (current newfs default). Read-ahead extends to ``maxra = min(seqcount, read_max)``
    blocks past the demand block, issued as clusters of ``racluster`` blocks; seqcount 0 or 1
    reads nothing ahead (except that a demand miss always reads at least ``read_min`` blocks, as
    the kernel does); a hit re-triggers only on a block with ``B_RAM``.
``fixed:N[:bsize=8192]``
    Reads the N blocks after the request whenever the detector's seqcount is > 0 (no marks,
    every request). Block default 8 KiB (the 4.x NFS ``rsize``), so N counts NFS-sized blocks.
``none[:bsize=8192]``
    No read-ahead: demand reads only (a plain LRU cache).
``linux``
    Implied by the ``linux-2.6.32`` / ``linux-3.12`` detectors, which decide read-ahead
    themselves (:mod:`seqheur.linux`); 4 KiB pages.

``auto`` (the default of :func:`seqheur.replay`) picks ``linux`` for Linux detectors,
``freebsd-cluster`` for ``freebsd``, and ``freebsd4-cluster`` (the paper's setting) otherwise.

Model simplifications (docs/replay.md, "The model, per READ"): files are contiguous on disk
(every BMAP run is as long as a cluster may be); no buffer is ever busy; the end of file is the
file size when known (else read-ahead is not clipped). The numba step functions here are called
by the engine's request loop (:mod:`seqheur.engine`, driven by :mod:`seqheur.replay`); they are
not cached on disk on their own because they call into :mod:`seqheur.cache` (numba's cache does
not notice changes in another module); the specialised loop that inlines them is cached, keyed
by the sources of all of them.

**State** (``engine.World``), typed, every field read by name: the policy's record
(:data:`POLICY_DTYPE`) and a plug-in's own parameters, the per-file history
(:data:`FILE_DTYPE`), the loop's counters (``metrics.COUNTER_DTYPE``, named as the summary
columns they feed) and misses per cause (an int64 array at cause code - 1), the current
request's scratch (:data:`REQUEST_DTYPE`) and the disk-op buffer (:class:`OpBuffer`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
from numba import njit

from . import cache as C
from .errors import SpecError
from .options import format_spec, param
from .registry import Registry
from .metrics import CAUSES  # noqa: F401  (cause names, in code order 1..6)
from . import _inlining

_inlining.install()  # numba's inliner: one copy of a callee's IR, not one per block (_inlining)

# policy kinds
POL_NONE = 0
POL_FIXED = 1
POL_FREEBSD4 = 2
POL_FREEBSD = 3
POL_LINUX = 4


# miss causes (0 = no miss): the codes of metrics.CAUSES, 1..6
CAUSE_EJECTED = 1
CAUSE_REORDERED = 2
CAUSE_NONSEQUENTIAL = 3
CAUSE_COLD = 4
CAUSE_EVICTED = 5
CAUSE_SHORT = 6

# --------------------------------------------------------------------------------------------
# the replay's state, as numpy records (a structured scalar, numba's ``Record``) and structured
# arrays: numba passes a record by reference, also inside a NamedTuple, so a step adds to
# ``world.ctr.hits`` in place, and a field access compiles to one load or store at a constant
# offset, as an indexed word of an int64 array did. Dtypes are aligned (int64 fields at
# multiples of 8: numba then emits aligned accesses). Records are ``np.record`` (views of
# one-element ``np.recarray``), so plain Python (``NUMBA_DISABLE_JIT=1``) reads and writes the
# same attributes.

#: What the engine's steps read of the policy (``world.policy``); a plug-in policy's own
#: parameters are ``world.policy_params`` (ints in field order).
POLICY_DTYPE = np.dtype([
    ("kind", np.int64),  # POL_*
    ("bsize", np.int64),  # block size, bytes
    ("bshift", np.int64),  # log2(bsize): block arithmetic uses shifts (a 64-bit idiv costs
    # ~40+ cycles)
    ("racluster", np.int64),  # maxphys // bsize, blocks
    ("maxra", np.int64),  # 4.x MAXRA cap / current read_max, blocks
    ("read_min", np.int64),  # blocks
    ("n", np.int64),  # fixed:N
    ("window", np.int64),  # reorder window (bytes) for cause attribution
], align=True)

#: The current request's scratch (``world.req``): what it did, for the per-request columns
#: (``begin_request`` zeroes these), and — set by a serve step whose callees need them deep in
#: their call tree (Linux read-ahead) — its index, demand block range and end of file.
REQUEST_DTYPE = np.dtype([
    ("prefetch_blocks", np.int64),  # blocks it read ahead
    ("hit_blocks", np.int64),
    ("miss_blocks", np.int64),
    ("cause", np.int64),  # cause of its first missed block (0: none)
    ("request_class", np.int64),  # 0 = sequential, else a cause code (begin_request)
    ("stamp", np.int64),  # its index in the trace (cache entries it inserts carry it)
    ("d_lo", np.int64),  # first and last demand block
    ("d_hi", np.int64),
    ("eof_blk", np.int64),  # blocks up to end of file (-1: unknown)
    ("eof_bytes", np.int64),  # the file's size (-1: unknown)
], align=True)

#: Per-file history (``world.fs[f]``).
FILE_DTYPE = np.dtype([
    ("next", np.int64),  # end of the file's previous request (-1: not seen yet)
    ("disrupt", np.int64),  # cause code of the last disruption not yet recovered from (0: none)
    ("slot_hint", np.int64),  # cache slot index of its last demand block (-1: none; a hint
    # for cache.lookup_hinted, never trusted: the next block mostly shares its chunk)
], align=True)

#: The op buffer's fill level and size (``world.ops.fill``).
OPS_FILL_DTYPE = np.dtype([
    ("pending", np.int64),  # reads in the buffer (the driver hands them to the disk model)
    ("capacity", np.int64),
    ("per_block", np.int64),  # the most reads one demand block of a request may issue
], align=True)


class OpBuffer(NamedTuple):
    """The disk reads issued since the driver last handed them to the disk model (one entry
    per read: file, byte offset, length, the index in the trace of the request that issued it
    and whether that request waits for it), and its fill level."""

    file: np.ndarray  # int64[capacity]
    offset: np.ndarray  # int64[capacity]: bytes
    length: np.ndarray  # int64[capacity]: bytes
    request: np.ndarray  # int64[capacity]: the issuing request's stamp (index in the trace)
    sync: np.ndarray  # int64[capacity]: 1 = a demand read its request waits for, 0 = async
    fill: Any  # a record of OPS_FILL_DTYPE


#: Read-ahead actions (``world.acts``): one row per decision to read, for ``replay(...,
#: actions=True)``: which request, what kind (code in :data:`ACTION_KINDS`, 1-based), the
#: blocks it asked for ``[start, start+count)`` (cached ones are skipped, pages past EOF never
#: read), the block given the read-ahead mark (-1 none) and, for the Linux models, their
#: ``file_ra_state`` after it (start, size, async_size, folio order; -1 where not applicable).
ACTION_DTYPE = np.dtype([
    ("request", np.int64), ("file", np.int64), ("kind", np.int64), ("start", np.int64),
    ("count", np.int64), ("mark", np.int64), ("ra_start", np.int64), ("ra_size", np.int64),
    ("ra_async", np.int64), ("order", np.int64)], align=True)

#: Action kinds, code k at index k - 1: a window opened by a synchronous read-ahead (a miss),
#: the next window on a read-ahead mark, a synchronous window sized by the cached history
#: (Linux context read-ahead), the requested pages of a small random read, the requested
#: pages under FMODE_RANDOM (or read-ahead off), one page read by the copy loop itself, and a
#: FreeBSD cluster (sync: the demand cluster, read-ahead included; async: read ahead) and the
#: N blocks of ``fixed:N``.
ACTION_KINDS = ("sync", "async", "context", "plain", "forced", "page", "cluster-sync",
                "cluster-async", "fixed")
ACT_SYNC, ACT_ASYNC, ACT_CONTEXT, ACT_PLAIN, ACT_FORCED, ACT_PAGE = 1, 2, 3, 4, 5, 6
ACT_CLUSTER_SYNC, ACT_CLUSTER_ASYNC, ACT_FIXED = 7, 8, 9


class ActionBuffer(NamedTuple):
    """Read-ahead actions not yet handed to the driver (capacity 0: not recorded)."""

    rows: np.ndarray  # ACTION_DTYPE[capacity]
    fill: Any  # a record of OPS_FILL_DTYPE (per_block: the most actions per demand block)


def new_action_buffer(capacity: int, per_block: int = 4) -> ActionBuffer:
    fill = new_record(OPS_FILL_DTYPE)
    fill.capacity = capacity
    fill.per_block = per_block
    return ActionBuffer(np.zeros(int(capacity), ACTION_DTYPE), fill)


def new_record(dtype: np.dtype) -> Any:
    """A zeroed record of ``dtype``: a view of a one-element array, so writes (compiled or
    plain Python) land in it."""
    return np.zeros(1, dtype).view(np.recarray)[0]


def new_file_state(n_files: int) -> np.ndarray:
    """Per-file history of ``n_files`` files (at least one), none seen yet."""
    fs = np.zeros(max(int(n_files), 1), FILE_DTYPE).view(np.recarray)
    fs.next = -1
    fs.slot_hint = -1
    return fs


def new_op_buffer(capacity: int, per_block: int) -> OpBuffer:
    """An empty op buffer of ``capacity`` reads."""
    fill = new_record(OPS_FILL_DTYPE)
    fill.capacity = capacity
    fill.per_block = per_block
    return OpBuffer(*(np.zeros(int(capacity), np.int64) for _ in range(5)), fill)


MAXPHYS = 131072  # 4.x sys/i386/include/param.h
MAXRA_4X = 32  # 4.x vfs_cluster.c MAXRA
READ_MAX = 64  # current vfs.read_max default


def _check_bsize(name: str, bsize: int) -> None:
    if bsize < 512 or bsize & (bsize - 1):
        raise SpecError(f"policy {name}: bsize must be a power of two >= 512, not {bsize}")


def _check_cluster(name: str, bsize: int, maxphys: int) -> None:
    _check_bsize(name, bsize)
    if maxphys < bsize or maxphys & (maxphys - 1):
        raise SpecError(f"policy {name}: maxphys must be a power of two >= bsize ({bsize}), "
                        f"not {maxphys}")


@dataclass(frozen=True)
class Freebsd4ClusterParams:
    bsize: int = param(16384, unit="bytes", doc="UFS block size (4.x newfs DFL_BLKSIZE)")
    maxphys: int = param(MAXPHYS, unit="bytes", tune=(1 << 16, 1 << 20),
                         doc="largest transfer (MAXPHYS); a cluster is maxphys/bsize blocks")
    maxra: int = param(MAXRA_4X, unit="blocks", tune=(4, 256, "log"),
                       doc="cap of the resident-successor scan on a "
                       "B_RAM hit (vfs_cluster.c MAXRA)")

    def __post_init__(self) -> None:
        _check_cluster("freebsd4-cluster", self.bsize, self.maxphys)
        if self.maxra < 1:
            raise SpecError("policy freebsd4-cluster: maxra must be >= 1")


@dataclass(frozen=True)
class FreebsdClusterParams:
    bsize: int = param(32768, unit="bytes", doc="UFS block size (current newfs default)")
    read_max: int = param(READ_MAX, unit="blocks", tune=(8, 512, "log"),
                          doc="read-ahead cap (vfs.read_max)")
    read_min: int = param(1, unit="blocks", tune=(1, 16, "log"),
                          doc="blocks a demand miss reads at least "
                          "(vfs.read_min)")
    maxphys: int = param(MAXPHYS, unit="bytes", tune=(1 << 16, 1 << 20),
                         doc="largest transfer (MAXPHYS); a cluster is maxphys/bsize blocks")

    def __post_init__(self) -> None:
        _check_cluster("freebsd-cluster", self.bsize, self.maxphys)
        if self.read_max < 1:
            raise SpecError("policy freebsd-cluster: read_max must be >= 1")
        if self.read_min < 1:
            raise SpecError("policy freebsd-cluster: read_min must be >= 1")


@dataclass(frozen=True)
class FixedParams:
    spec_positional = ("n",)
    n: int = param(0, unit="blocks", tune=(0, 64),
                   doc="blocks read after the request when seqcount > 0",
                   required=True)
    bsize: int = param(8192, unit="bytes", doc="block size (the 4.x NFS rsize)")

    def __post_init__(self) -> None:
        _check_bsize("fixed", self.bsize)
        if self.n < 0:
            raise SpecError(f"policy fixed:N needs N >= 0, not {self.n}")


@dataclass(frozen=True)
class NoneParams:
    bsize: int = param(8192, unit="bytes", doc="block size (the 4.x NFS rsize)")

    def __post_init__(self) -> None:
        _check_bsize("none", self.bsize)


@dataclass(frozen=True)
class OwnParams:
    """A detector's own read-ahead (``linux``): its parameters are the detector's."""


@dataclass(frozen=True)
class Policy:
    """A parsed read-ahead policy: the registered name, its parameters and registry entry.

    ``request`` is the engine's serve step (None for a detector's own read-ahead)."""

    name: str
    params: Any
    entry: Any = field(default=None, compare=False, repr=False)
    bsize_own: int = 0  # block size of a detector's own read-ahead

    @property
    def kind(self) -> str:
        return self.name

    @property
    def bsize(self) -> int:
        return int(getattr(self.params, "bsize", 0) or self.bsize_own)

    @property
    def n(self) -> int:
        return int(getattr(self.params, "n", 0))

    @property
    def maxphys(self) -> int:
        return int(getattr(self.params, "maxphys", MAXPHYS))

    @property
    def maxra(self) -> int:
        return int(getattr(self.params, "maxra", getattr(self.params, "read_max", 0)))

    @property
    def read_min(self) -> int:
        return int(getattr(self.params, "read_min", 1))

    @property
    def racluster(self) -> int:
        return max(1, self.maxphys // self.bsize)

    @property
    def request(self) -> Any:
        return None if self.entry is None else self.entry.impl

    @property
    def spec(self) -> str:
        return format_spec(self.name, self.params)

    def __str__(self) -> str:
        return self.spec

    def ops_per_block(self, policy: Any) -> int:
        """The most disk reads one demand block of a request may issue, plus slack
        (``policy``: its :meth:`record`)."""
        bound = None if self.entry is None else self.entry.extra.get("ops_bound")
        if bound is None:
            return max_ops_per_request(policy, 1)
        return int(bound(self.params) if callable(bound) else bound) + 8

    def record(self, *, window: int = 65536) -> Any:
        """What the engine's steps read of the policy (``world.policy``,
        :data:`POLICY_DTYPE`); ``window``: the reorder window, bytes."""
        r = new_record(POLICY_DTYPE)
        r.kind = self.entry.code if self.entry is not None else POL_LINUX
        r.bsize = self.bsize
        r.bshift = self.bsize.bit_length() - 1
        r.racluster = self.racluster
        r.maxra = self.maxra
        r.read_min = self.read_min
        r.n = self.n
        r.window = window
        return r

    def own_params(self) -> np.ndarray:
        """The policy's own parameters for its serve step (``world.policy_params``): ints,
        in field order (what a plug-in policy reads; the built-in ones read :meth:`record`)."""
        return np.array([int(getattr(self.params, f.name))
                         for f in dataclasses.fields(self.params)], np.int64)


def _register_builtins() -> None:
    src4 = "DragonFly 984263bc sys/kern/vfs_cluster.c (FreeBSD 4.x cluster_read)"
    POLICIES.register("freebsd4-cluster", params=Freebsd4ClusterParams, impl=serve_request,
                      builtin=True, code=POL_FREEBSD4, source=src4,
                      doc="FreeBSD 4.x cluster_read: one async cluster of <= min(seqcount, "
                          "maxphys/bsize) blocks per trigger, re-armed by B_RAM")
    POLICIES.register("freebsd-cluster", params=FreebsdClusterParams, impl=serve_request,
                      builtin=True, code=POL_FREEBSD,
                      source="freebsd/freebsd-src sys/kern/vfs_cluster.c",
                      doc="current FreeBSD cluster_read: read ahead to min(seqcount, "
                          "read_max) blocks")
    POLICIES.register("fixed", params=FixedParams, impl=serve_request, builtin=True,
                      code=POL_FIXED, doc="read the N blocks after the request whenever "
                                          "seqcount > 0")
    POLICIES.register("none", params=NoneParams, impl=serve_request, builtin=True,
                      code=POL_NONE, doc="no read-ahead (plain LRU)")


POLICIES = Registry("policy", load=_register_builtins)


def register_policy(name: str, *, params: type, serve: Any, ops_bound: Any,
                    doc: str = "", source: str = "", replace: bool = False) -> Any:
    """Register a read-ahead policy: ``serve(world, row, params, f, off, cnt, t, seq, fresh,
    stamp) -> seqcount`` is its engine step (see :func:`serve_request`); the policy's own
    parameters reach it as ``world.policy_params``, ints in field order; what every policy
    has (block size and its log2, reorder window) is the record ``world.policy``. ``ops_bound(params)``
    (or an int): the most disk reads one demand block of a request may issue, read-ahead
    included (the engine sizes its disk-op buffer by it: an overflow would write past it)."""
    return POLICIES.register(name, params=params, impl=serve, doc=doc, source=source,
                             code=-1, replace=replace, ops_bound=ops_bound)


def own_read_ahead(name: str, bsize: int) -> Policy:
    """The policy of a detector that reads ahead itself (``linux``)."""
    return Policy(name, OwnParams(), None, bsize)


def parse_policy(spec: "str | Policy") -> Policy:
    """Parse a policy spec string (module docstring), e.g. ``fixed:8:bsize=4096``.

    >>> parse_policy("freebsd-cluster").racluster
    4
    """
    if isinstance(spec, Policy):
        return spec
    if isinstance(spec, str) and spec.strip().lower() == "linux":
        return own_read_ahead("linux", 4096)
    s = POLICIES.parse(spec)
    return Policy(s.name, s.params, s.entry)


def registered_policies() -> list[dict[str, Any]]:
    """Policies with their grammar, options (units, defaults) and doc (listings and docs)."""
    return POLICIES.describe() + [
        {"name": "linux", "grammar": "linux", "params": {}, "options": [],
         "doc": "implied by linux-* detectors: their own read-ahead (4 KiB pages)",
         "builtin": True}]


# --------------------------------------------------------------------------------------------
# numba step functions (not cached on their own: see module docstring)


@njit(nogil=True, _nrt=False)
def emit_op(ops, ctr, f, off, length, sync, request):
    """Record one disk read (bytes) issued by request ``request`` (its stamp), which waits for
    it when ``sync``, in the op buffer (the engine's admit step keeps room)."""
    fill = ops.fill
    k = fill.pending
    ops.file[k] = f
    ops.offset[k] = off
    ops.length[k] = length
    ops.request[k] = request
    ops.sync[k] = 1 if sync else 0
    fill.pending = k + 1
    ctr.disk_ops += 1
    ctr.disk_bytes += length
    if sync:
        ctr.disk_sync_ops += 1


@njit(nogil=True, _nrt=False)
def emit_action(acts, request, f, kind, start, count, mark, ra_start, ra_size, ra_async, order):
    """Record one read-ahead action (nothing when actions are not recorded)."""
    fill = acts.fill
    if fill.capacity == 0:
        return
    k = fill.pending
    r = acts.rows[k]
    r.request = request
    r.file = f
    r.kind = kind
    r.start = start
    r.count = count
    r.mark = mark
    r.ra_start = ra_start
    r.ra_size = ra_size
    r.ra_async = ra_async
    r.order = order
    fill.pending = k + 1


@njit(nogil=True, _nrt=False)
def op_bytes(start, nblk, bsize, eof_bytes):
    """Bytes a read of blocks [start, start+nblk) transfers (clipped at EOF when known)."""
    off = start * bsize
    ln = nblk * bsize
    if eof_bytes >= 0 and off + ln > eof_bytes:
        ln = eof_bytes - off
        if ln < bsize:  # a partial last block is still read whole by the file system
            ln = bsize if eof_bytes > off else 0
    return ln


@njit(nogil=True, _nrt=False, inline='always')
def insert_block(c, f, b, stamp, d_lo, d_hi, fl, ctr, req):
    """Insert non-resident block b of file f read by request ``stamp``, with cache flags
    ``fl`` (the read-ahead mark, a folio order).

    Blocks of the request's own demand range [d_lo, d_hi] are demand reads; any other block is
    read-ahead (prefetch-marked, counted). Returns the entry.
    """
    key = C.make_key(f, b)
    if b < d_lo or b > d_hi:
        fl |= C.F_PF
        ctr.prefetched += 1
        req.prefetch_blocks += 1
        return C.insert(c, key, fl, stamp)
    # a ghost: this demand block's miss is an eviction's fault
    return C.insert_noting_ghost(c, key, fl, stamp, C.F_WASGHOST)


@njit(nogil=True, _nrt=False, inline='always')
def cluster(c, f, start, maxn, sync, stamp, d_lo, d_hi, eof_blk, bsize, eof_bytes, ctr, req,
            ops, acts, base, past_chunk):
    """``cluster_rbuild``: read the run of non-resident blocks from ``start`` (at most ``maxn``,
    stopping at a resident block or EOF) as one disk read. Returns blocks read.

    Read-ahead marks (``B_RAM``) as freebsd/freebsd-src ``sys/kern/vfs_cluster.c`` sets them
    in ``cluster_read`` and ``cluster_rbuild`` (the same in revision 1.44 of 1997, the 4.x text
    and today's): a read-ahead (async) cluster marks its *first* block and, if the cluster
    reaches it, the last block of the run asked for; a demand (sync) cluster of one block
    marks it (``single_block_read``), a longer one its second block and the last block of the
    run asked for. A run cut short by a resident block so ends unmarked (but for the first /
    second). The first-block mark is what asks for the next cluster as the reader enters this
    one, so read-ahead already issued carries a reader over a few READs at low seqcount.

    ``base`` is the :func:`cache.chunk_base` of the keys below ``past_chunk`` (the first
    block's chunk, when the caller has just found it; ``past_chunk`` -1: not known)."""
    run = maxn
    if eof_blk >= 0 and start + run > eof_blk:
        run = eof_blk - start
    n = 0
    key = C.make_key(f, start)
    while n < run:
        if key + n >= past_chunk:  # one probe per chunk of blocks
            base = C.chunk_base(c, key + n)
            past_chunk = C.chunk_end(key + n)
        if C.resident_at(c, base, key + n) >= 0:
            break
        n += 1
    if n == 0:
        return 0
    last = -1
    for k in range(n):
        if not sync:
            ram = k == 0 or k == run - 1
        elif maxn == 1:
            ram = True
        else:
            ram = run > 1 and (k == 1 or k == run - 1)
        if ram:
            last = start + k
        insert_block(c, f, start + k, stamp, d_lo, d_hi, C.F_RAM if ram else 0, ctr, req)
    emit_op(ops, ctr, f, start * bsize, op_bytes(start, n, bsize, eof_bytes), sync, stamp)
    emit_action(acts, stamp, f, ACT_CLUSTER_SYNC if sync else ACT_CLUSTER_ASYNC, start, n,
                last, -1, -1, -1, -1)
    return n


@njit(nogil=True, _nrt=False)
def read_range(c, f, start, n, mark, stamp, d_lo, d_hi, eof_blk, bsize, eof_bytes, ctr, req, ops,
               sync):
    """Read every non-resident block of [start, start+n) (Linux ``ra_submit``), one disk read
    per contiguous run; block ``mark`` gets the read-ahead mark if newly read. Returns blocks
    read."""
    total = 0
    run = -1
    for k in range(n):
        b = start + k
        if eof_blk >= 0 and b >= eof_blk:
            break
        if C.lookup(c, C.make_key(f, b)) >= 0:
            if run >= 0:
                emit_op(ops, ctr, f, run * bsize, op_bytes(run, b - run, bsize, eof_bytes),
                        sync, stamp)
                run = -1
            continue
        insert_block(c, f, b, stamp, d_lo, d_hi, C.F_RAM if b == mark else 0, ctr, req)
        total += 1
        if run < 0:
            run = b
    if run >= 0:
        end = start + n
        if eof_blk >= 0 and end > eof_blk:
            end = eof_blk
        emit_op(ops, ctr, f, run * bsize, op_bytes(run, end - run, bsize, eof_bytes), sync,
                stamp)
    return total


@njit(nogil=True, _nrt=False)
def count_miss(c, e, f, b, fs, ctr, lost, req):
    """Count a demand miss of block b with its cause. ``e`` is the block's entry when this
    request has already read it (-1 when it is not resident). ``evicted`` if the block was
    read ahead and evicted unused (a ghost, or re-read while a ghost), else the file's pending
    disruption, else ``short``."""
    if e >= 0:
        ghost = (C.flags(c, e) & C.F_WASGHOST) != 0
    else:
        ghost = C.ghost_of(c, C.make_key(f, b)) >= 0
    count_miss_of(ghost, f, fs, ctr, lost, req)


@njit(nogil=True, _nrt=False, inline='always')
def count_miss_of(ghost, f, fs, ctr, lost, req):
    """:func:`count_miss` once it is known whether the block was a ghost."""
    if ghost:
        cause = CAUSE_EVICTED
    elif fs[f].disrupt != 0:
        cause = fs[f].disrupt
    else:
        cause = CAUSE_SHORT
    ctr.misses += 1
    lost[cause - 1] += 1
    req.miss_blocks += 1
    if req.cause == 0:
        req.cause = cause


@njit(nogil=True, _nrt=False, inline='always')
def visit_resident(c, e, stamp, f, b, fs, ctr, lost, req):
    """A demand read reaches resident entry ``e``: a hit unless this request itself read the
    block (then it is a miss); LRU touch; first use of a read-ahead block."""
    if C.stamp(c, e) == stamp:
        count_miss(c, e, f, b, fs, ctr, lost, req)
    else:
        ctr.hits += 1
        req.hit_blocks += 1
    demand_use(c, e, ctr)


@njit(nogil=True, _nrt=False, inline='always')
def demand_use(c, e, ctr):
    """LRU touch and first use of read-ahead (no hit/miss accounting)."""
    if C.use(c, e):
        ctr.prefetch_used += 1
    C.touch(c, e)


@njit(nogil=True, _nrt=False, inline='always')
def freebsd_request(c, f, off, cnt, seq, stamp, pol, eof_bytes, fs, ctr, lost, req, ops, acts):
    """One READ through ``ffs_read`` → ``cluster_read`` per block (4.x or current rules).

    Every demand block is accounted when the loop reaches it, in order, so that with
    read-ahead off the cache behaves exactly like an LRU over the block trace."""
    bsize = pol.bsize
    racluster = pol.racluster
    rmask = racluster - 1
    v4 = pol.kind == POL_FREEBSD4
    bsh = pol.bshift
    d_lo = off >> bsh
    d_hi = (off + cnt - 1) >> bsh
    eof_blk = -1
    if eof_bytes >= 0:
        eof_blk = (eof_bytes + bsize - 1) >> bsh
    end = off + cnt
    for lbn0 in range(d_lo, d_hi + 1):
        pos = lbn0 * bsize
        if pos < off:
            pos = off
        totread = end - pos  # uio_resid at this cluster_read call
        lbn = lbn0
        orig = lbn0
        key = C.make_key(f, lbn)
        e, pos = C.lookup_hinted(c, key, fs[f].slot_hint)
        ra_base = -1  # the read-ahead cluster's first chunk, when known (ra_end >= 0)
        ra_end = -1
        if v4:
            maxra = 2 * racluster + (totread >> bsh)
            if maxra > pol.maxra:
                maxra = pol.maxra
        else:
            maxra = seq
            if maxra > pol.maxra:
                maxra = pol.maxra
            if eof_blk >= 0 and (lbn + maxra + 1) * bsize > eof_bytes:
                maxra = (eof_bytes >> bsh) - lbn
        if e >= 0:
            fs[f].slot_hint = pos
            visit_resident(c, e, stamp, f, lbn, fs, ctr, lost, req)
            if seq == 0 or (C.flags(c, e) & C.F_RAM) == 0:
                continue
            C.clear_flag(c, e, C.F_RAM)
            i = 1
            past_chunk = C.chunk_end(key)  # the block's own chunk, found by the lookup
            base = C.chunk_base_of(pos)
            while i < maxra:
                if key + i >= past_chunk:  # one probe per chunk of blocks
                    base = C.chunk_base(c, key + i)
                    past_chunk = C.chunk_end(key + i)
                e2 = C.resident_at(c, base, key + i)
                if e2 < 0:
                    break
                if (i & rmask) == rmask or i == maxra - 1:  # racluster: a power of two
                    C.set_flag(c, e2, C.F_RAM)
                i += 1
            if i >= maxra:
                continue
            lbn = lbn + i
            # the scan's last chunk holds the hole it stopped at: the read-ahead cluster
            # starts there with no probe (nothing changed the cache since)
            ra_base = base
            ra_end = past_chunk
        else:
            # the lookup's slot (pos: authoritative on a miss, -1 when its chunk is absent)
            # says whether it is a ghost, and is the demand cluster's first chunk
            count_miss_of(pos >= 0 and C.slot_value_at(c, pos) < 0, f, fs, ctr, lost, req)
            tr = totread
            if not v4 and tr < pol.read_min * bsize:
                tr = pol.read_min * bsize
            if eof_bytes >= 0 and tr > eof_bytes - lbn * bsize:
                tr = eof_bytes - lbn * bsize
            nblks = 1
            if tr > bsize:
                nblks = (tr + bsize - 1) >> bsh
                if nblks > racluster:
                    nblks = racluster
            built = cluster(c, f, lbn, nblks, True, stamp, d_lo, d_hi, eof_blk, bsize,
                            eof_bytes, ctr, req, ops, acts,
                            C.chunk_base_of(pos) if pos >= 0 else -1, C.chunk_end(key))
            if built == 0:  # only past a known EOF, which the driver clips requests to
                built = 1
            # the block's chunk, if it was there before, is still (it holds the block now):
            # no probe then
            e, pos = C.lookup_hinted(c, key, pos)
            if e >= 0:  # (a cache smaller than the cluster may already have evicted it)
                fs[f].slot_hint = pos
                demand_use(c, e, ctr)
            lbn += built
            ra_end = -1  # the inserts may have made or freed chunks
        # read-ahead
        if v4:
            if seq > 0 and lbn < orig + seq:
                if eof_blk >= 0 and (lbn + 1) * bsize > eof_bytes:
                    continue
                n = (cnt + bsize - 1) >> bsh
                if n < seq:
                    n = seq
                if n > racluster:
                    n = racluster
                cluster(c, f, lbn, n, False, stamp, d_lo, d_hi, eof_blk, bsize, eof_bytes,
                        ctr, req, ops, acts, ra_base, ra_end)
        else:
            while lbn < orig + maxra:
                if eof_blk >= 0 and lbn >= eof_blk:
                    break
                built = cluster(c, f, lbn, racluster, False, stamp, d_lo, d_hi, eof_blk,
                                bsize, eof_bytes, ctr, req, ops, acts, ra_base, ra_end)
                lbn += built if built > 0 else 1
                ra_end = -1


@njit(nogil=True, _nrt=False, inline='always')
def simple_request(c, f, off, cnt, seq, stamp, pol, eof_bytes, fs, ctr, lost, req, ops, acts):
    """``none`` and ``fixed:N``: demand blocks (one disk read per missing run), then for
    ``fixed:N`` with seqcount > 0 the N blocks after the request."""
    bsize = pol.bsize
    bsh = pol.bshift
    d_lo = off >> bsh
    d_hi = (off + cnt - 1) >> bsh
    eof_blk = -1
    if eof_bytes >= 0:
        eof_blk = (eof_bytes + bsize - 1) >> bsh
    run = -1
    for b in range(d_lo, d_hi + 1):
        e = C.lookup(c, C.make_key(f, b))
        if e >= 0:
            if run >= 0:
                emit_op(ops, ctr, f, run * bsize, op_bytes(run, b - run, bsize, eof_bytes),
                        True, stamp)
                run = -1
            visit_resident(c, e, stamp, f, b, fs, ctr, lost, req)
        else:
            count_miss(c, -1, f, b, fs, ctr, lost, req)
            e = insert_block(c, f, b, stamp, d_lo, d_hi, 0, ctr, req)
            demand_use(c, e, ctr)
            if run < 0:
                run = b
    if run >= 0:
        emit_op(ops, ctr, f, run * bsize, op_bytes(run, d_hi + 1 - run, bsize, eof_bytes), True,
                stamp)
    if pol.kind == POL_FIXED and seq > 0 and pol.n > 0:
        read_range(c, f, d_hi + 1, pol.n, -1, stamp, d_lo, d_hi, eof_blk, bsize, eof_bytes,
                   ctr, req, ops, False)
        emit_action(acts, stamp, f, ACT_FIXED, d_hi + 1, pol.n, -1, -1, -1, -1, -1)


def max_ops_per_request(policy: Any, max_blocks: int) -> int:
    """An upper bound on the disk reads one request of ``max_blocks`` demand blocks issues
    (``policy``: a :data:`POLICY_DTYPE` record)."""
    if int(policy.kind) in (POL_FREEBSD4, POL_FREEBSD):
        return max_blocks * (int(policy.maxra) + 3) + 8
    return max_blocks + int(policy.n) + 8


# --------------------------------------------------------------------------------------------
# per-request driver pieces shared by every policy (and the Linux detectors)


@njit(nogil=True, _nrt=False)
def begin_request(f, off, cnt, fresh, pol, eof_bytes, fs, ctr, req):
    """Clip the request at EOF (as ``nfsrv_read`` does), classify it against the file's
    previous request and return the effective byte count.

    Class (kept in ``req.request_class``; any non-zero class becomes the file's *disruption*,
    the cause blamed for its misses until a request of the file is served without a miss):
    ``cold`` (first READ of the file), ``ejected`` (the table slot was recycled since the
    file's last READ), sequential (offset == end of the previous READ), ``reordered`` (within
    ``pol.window`` bytes of it), else ``nonsequential``."""
    req.prefetch_blocks = 0
    req.hit_blocks = 0
    req.miss_blocks = 0
    req.cause = 0
    req.request_class = 0
    ctr.requests += 1
    if eof_bytes >= 0:
        if off >= eof_bytes:
            cnt = 0
        elif off + cnt > eof_bytes:
            cnt = eof_bytes - off
    if cnt <= 0:
        ctr.zero_length_requests += 1
        return 0
    nxt = fs[f].next
    if nxt < 0:
        cls = CAUSE_COLD
    elif fresh:
        cls = CAUSE_EJECTED
    elif off == nxt:
        cls = 0
    elif abs(off - nxt) <= pol.window:
        cls = CAUSE_REORDERED
    else:
        cls = CAUSE_NONSEQUENTIAL
    if cls != 0:
        fs[f].disrupt = cls
    req.request_class = cls
    ctr.demand_bytes += cnt
    return cnt


@njit(nogil=True, _nrt=False, inline='always')
def begin_block_request(world, f, off, cnt, fresh, stamp, bshift):
    """:func:`begin_request` for a serve step that reads ahead itself (the Linux models), then
    the request's scratch its reads need deep in their call tree: its stamp, demand block range
    and end of file (blocks of ``1 << bshift`` bytes). Returns the effective byte count."""
    req = world.req
    eof_bytes = world.fsize[f]
    n = begin_request(f, off, cnt, fresh, world.policy, eof_bytes, world.fs, world.ctr, req)
    if n > 0:
        d_lo = off >> bshift
        d_hi = (off + n - 1) >> bshift
        world.ctr.demand_blocks += d_hi - d_lo + 1
        req.stamp = stamp
        req.d_lo = d_lo
        req.d_hi = d_hi
        req.eof_bytes = eof_bytes
        req.eof_blk = (eof_bytes + (1 << bshift) - 1) >> bshift if eof_bytes >= 0 else -1
    return n


@njit(nogil=True, _nrt=False)
def end_request(f, off, cnt, fs, req):
    if cnt > 0:
        if req.miss_blocks == 0:
            fs[f].disrupt = 0  # read-ahead has caught up with this file
        fs[f].next = off + cnt


@njit(nogil=True, _nrt=False, inline='always')
def serve_request(world, row, params, f, off, cnt, t, seq, fresh, stamp):
    """The engine's serve step of the FreeBSD, ``fixed`` and ``none`` policies: one READ,
    given the detector's seqcount (returned unchanged)."""
    pol = world.policy
    c = world.cache
    fs = world.fs
    ctr = world.ctr
    lost = world.lost
    req = world.req
    eof_bytes = world.fsize[f]
    cnt = begin_request(f, off, cnt, fresh, pol, eof_bytes, fs, ctr, req)
    if cnt > 0:
        d_lo = off >> pol.bshift
        d_hi = (off + cnt - 1) >> pol.bshift
        ctr.demand_blocks += d_hi - d_lo + 1
        kind = pol.kind
        if kind == POL_FREEBSD4 or kind == POL_FREEBSD:
            freebsd_request(c, f, off, cnt, seq, stamp, pol, eof_bytes, fs, ctr, lost, req,
                            world.ops, world.acts)
        else:
            simple_request(c, f, off, cnt, seq, stamp, pol, eof_bytes, fs, ctr, lost, req,
                           world.ops, world.acts)
    end_request(f, off, cnt, fs, req)
    return seq
