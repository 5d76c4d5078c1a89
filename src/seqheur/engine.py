"""The engine: one request loop, specialised by composition, for both replay and detect.

For every READ of a chunk, in server order, the loop

1. **admits** the request (replay: stops early when the disk-op buffer might overflow, so the
   driver can hand the buffered reads to the disk model; starts loading the cache's hash line
   for the request ``AHEAD`` places later; detect: always admits);
2. **looks up** the file's slot in the table model (``lookup``, with the table's scalars
   ``prepare``-d once per call so they stay in registers); a fresh slot is counted (fresh,
   ejection when it held another file, cold when the file was never seen) and ``reset`` by the
   detector;
3. **decides** the request's seqcount (``decide``: the detector's ``update``; a detector that
   reads ahead itself decides while it reads, :func:`no_decision`);
4. **serves** it: ``serve(world, row, params, f, off, cnt, t, seq, fresh, stamp)`` turns the
   decision into demand and read-ahead reads against the cache in ``world`` and returns the
   seqcount to record (replay: the policy's serve step, e.g. ``readahead.serve_request``, or
   the detector's own read-ahead, e.g. ``heuristics.linux.serve_312``; detect:
   :func:`serve_nothing`);
5. **records** the per-request columns (``record``; only when ``keep``).

Each step is an ordinary jitted function; :func:`loop` closes a loop over one choice of them
(numba treats the captured functions as constants, so calls are direct and inlined as in a
hand-written loop). Loops are cached per process and on disk: numba keys a closure's cache
entry by its captured values, which for jitted functions differ in every process, so
:class:`EngineCache` keys it instead by the captured functions' names and the source of
every module they (transitively) use — a change to any of them compiles afresh, and every
process reuses one compilation otherwise.

Run with ``NUMBA_DISABLE_JIT=1`` and every step is plain Python: the loop can be stepped
through in a debugger and measured by coverage.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import threading
from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np
from numba import njit, uint64

from . import cache as C
from . import readahead as R
from . import _inlining

_inlining.install()  # numba's inliner: one copy of a callee's IR, not one per block (_inlining)

AHEAD = 8  # requests between the prefetch of a request's hash line and its probe (4 and 8
# measured alike; docs/performance.md)

_LOCK = threading.Lock()
_LOOPS: dict[tuple[Any, ...], Any] = {}


class Requests(NamedTuple):
    """One chunk of a read stream, as the loop reads it."""

    file: np.ndarray  # int32: dense file index
    offset: np.ndarray  # int64: bytes
    count: np.ndarray  # int32: bytes
    time_ns: np.ndarray  # int64: arrival time


def read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a`` (no copy). numba types a read-only array apart from a
    writable one, and a stream's columns are either (Arrow's zero-copy arrays are read-only,
    numpy's are not): handing a loop one kind whatever the source compiles it once, not twice
    (a third of the loops the test suite compiled were such twins)."""
    v = a.view()
    v.flags.writeable = False
    return v


def read_only_requests(file: np.ndarray, offset: np.ndarray, count: np.ndarray,
                       time_ns: np.ndarray) -> Requests:
    """:class:`Requests` over read-only views of the given arrays (:func:`read_only`)."""
    return Requests(read_only(file), read_only(offset), read_only(count), read_only(time_ns))


#: What the table did: slots (re)allocated, of them taken over from another file, and of them
#: for files seen for the first time.
TABLE_COUNTS_DTYPE = np.dtype([("fresh", np.int64), ("ejections", np.int64),
                               ("cold", np.int64)], align=True)


class TableCounts(NamedTuple):
    """``counts``: a :data:`TABLE_COUNTS_DTYPE` record; ``seen``: one byte per file (1 once
    the file had a slot)."""

    counts: Any  # numpy record
    seen: np.ndarray  # uint8[files]


def new_table_counts(n_files: int) -> TableCounts:
    return TableCounts(R.new_record(TABLE_COUNTS_DTYPE),
                       np.zeros(max(int(n_files), 1), np.uint8))


# --------------------------------------------------------------------------------------------
# the loop


def loop(prepare: Any, lookup: Any, reset: Any, decide: Any, serve: Any, admit: Any,
         record: Any, *, nrt: bool = False) -> Any:
    """The request loop over one choice of steps (see the module docstring), compiled once per
    process and cached on disk.

    ``run(requests, lo, hi, base, table, rows, params, world, out, keep, tcounts) -> i``
    processes requests ``lo..hi-1`` of ``requests`` (``base + i`` is request ``i``'s index in
    the whole trace) and returns the index of the first request it did not process (``hi``
    unless ``admit`` stopped it).

    Steps are compiled without numba's reference counting (``_nrt=False``: passing arrays to a
    separately compiled function in a hot loop otherwise costs an atomic increment and
    decrement per array per call, 7-11x slower in our measurements); ``nrt=True`` is for
    plug-in steps that allocate."""
    key = (prepare, lookup, reset, decide, serve, admit, record, nrt)
    with _LOCK:
        run = _LOOPS.get(key)
        if run is None:
            run = _compile(_make_loop(prepare, lookup, reset, decide, serve, admit, record), nrt)
            _LOOPS[key] = run
    return run


def _make_loop(prepare, lookup, reset, decide, serve, admit, record):
    def run(requests, lo, hi, base, table, rows, params, world, out, keep, tcounts):
        scalars = prepare(table)
        counts = tcounts.counts
        seen = tcounts.seen
        for i in range(lo, hi):
            if not admit(world, requests, i, hi):
                return i
            # unsigned index: numba then omits the negative-index wraparound code it cannot
            # prove away for a loop that does not start at 0
            u = uint64(i)
            f = requests.file[u]
            off = requests.offset[u]
            cnt = requests.count[u]
            t = requests.time_ns[u]
            slot, fresh, prev = lookup(table, scalars, f, t)
            row = rows[uint64(slot)]  # unsigned: no negative-index wraparound code
            if fresh:
                counts.fresh += 1
                if prev >= 0:
                    counts.ejections += 1
                if seen[uint64(f)] == 0:
                    seen[uint64(f)] = 1
                    counts.cold += 1
                reset(row, params, off, cnt, t)
            seq = decide(row, params, off, cnt, t)
            seq = serve(world, row, params, f, off, cnt, t, seq, fresh, base + i)
            if keep:
                record(out, u, seq, fresh, world)
        return hi

    return run


# --------------------------------------------------------------------------------------------
# steps shared by every detector


@njit(nogil=True, _nrt=False)
def no_decision(row, params, off, cnt, t):
    """Decide step of a detector that decides while it reads ahead (its serve step)."""
    return 0


@njit(nogil=True, _nrt=False, inline="always")
def serve_nothing(world, row, params, f, off, cnt, t, seq, fresh, stamp):
    """Serve step of ``detect``: the seqcount as decided, nothing read."""
    return seq


@njit(nogil=True, _nrt=False, inline="always")
def admit_all(world, requests, i, hi):
    """Admit step of ``detect``: nothing to make room for."""
    return True


@njit(nogil=True, _nrt=False, inline="always")
def record_detect(out, i, seq, fresh, world):
    """Record step of ``detect``: ``out`` = (seqcount, slot_fresh)."""
    out[0][i] = seq
    out[1][i] = fresh


def without_nrt(fn: Any) -> Any:
    """``fn`` compiled with ``_nrt=False`` (itself if it already is, or if it is not jitted)."""
    if getattr(fn, "targetoptions", {}).get("_nrt", True) is False or not hasattr(fn, "py_func"):
        return fn
    return _rejit(fn)


@functools.cache
def _rejit(fn: Any) -> Any:
    return njit(nogil=True, _nrt=False)(fn.py_func)


def cache_by_sources(dispatcher: Any) -> Any:
    """Give a jitted function that calls into other modules (a timing model's event loop
    calling the drive model) the on-disk cache of the engine loops, keyed by the source of
    everything it can reach: numba's ``cache=True`` keys by the function's own file only, so
    a change in a callee's module would load stale machine code. Idempotent; a no-op under
    ``NUMBA_DISABLE_JIT``. Returns the dispatcher."""
    if hasattr(dispatcher, "py_func") and not getattr(dispatcher, "_by_sources", False):
        dispatcher._cache = EngineCache(dispatcher.py_func)
        dispatcher._by_sources = True
    return dispatcher


def _compile(py_func: Callable[..., Any], nrt: bool = False) -> Any:
    """``njit`` a loop closure with the on-disk cache keyed by what it captures."""
    dispatcher = njit(nogil=True, _nrt=nrt)(py_func)
    if hasattr(dispatcher, "py_func"):  # not under NUMBA_DISABLE_JIT
        dispatcher._cache = EngineCache(dispatcher.py_func)
    return dispatcher


# --------------------------------------------------------------------------------------------
# steps of replay (cache, read-ahead, disk reads)


class World(NamedTuple):
    """What the replay's steps read and write besides the table and the detector rows. Typed
    state: numpy records (``np.record``, numba's ``Record``: passed by reference, a field is
    a load or store at a constant offset) and structured arrays, their dtypes owned by the
    module whose steps use them; a field is read by name (``world.ctr.hits``,
    ``world.fs[f].next``), never by an index constant."""

    policy: Any  # record of readahead.POLICY_DTYPE: block size, cluster, caps, reorder window
    policy_params: np.ndarray  # int64: the policy's own parameters, in field order (plug-ins)
    cache: C.CacheState
    fs: np.ndarray  # readahead.FILE_DTYPE[files]: per-file history (next, disrupt)
    fsize: np.ndarray  # int64[files]: bytes, -1 unknown
    ctr: Any  # record of metrics.COUNTER_DTYPE: the loop's counters, named as summary columns
    lost: np.ndarray  # int64[6]: misses per cause, at cause code - 1 (metrics.CAUSES)
    req: Any  # record of readahead.REQUEST_DTYPE: the current request's scratch
    ops: R.OpBuffer  # the disk reads not yet handed to the disk model
    acts: Any = None  # R.ActionBuffer: read-ahead actions not yet handed over (capacity 0: off)


@njit(nogil=True, _nrt=False, inline="always")
def admit_replay(world, requests, i, hi):
    """Stop before a request that might overflow the disk-op or action buffer; prefetch the cache's hash
    line of the request ``AHEAD`` places later (the trace says which block comes next: the first
    probe of a block not touched for a while is otherwise the loop's largest stall)."""
    pol = world.policy
    bsh = pol.bshift
    fill = world.ops.fill
    cnt = requests.count[uint64(i)]
    blocks = ((cnt + pol.bsize - 1) >> bsh) + 2
    if fill.pending + blocks * fill.per_block + 8 > fill.capacity:
        return False
    af = world.acts.fill
    if af.capacity > 0 and af.pending + blocks * af.per_block + 8 > af.capacity:
        return False
    if i + AHEAD < hi:
        j = uint64(i + AHEAD)
        C.prefetch_key(world.cache, C.make_key(requests.file[j], requests.offset[j] >> bsh))
    return True


@njit(nogil=True, _nrt=False, inline="always")
def record_replay(out, i, seq, fresh, world):
    """Record step of replay: ``out`` = (seqcount, slot_fresh, prefetch, hit and miss blocks,
    cause), from the request's scratch."""
    req = world.req
    out[0][i] = seq
    out[1][i] = fresh
    out[2][i] = req.prefetch_blocks
    out[3][i] = req.hit_blocks
    out[4][i] = req.miss_blocks
    out[5][i] = req.cause


# --------------------------------------------------------------------------------------------
# on-disk cache of closures


def _identity(obj: Any) -> str:
    """What a captured value is: a function's qualified name followed, for a closure, by the
    identities of what it captures in turn; anything else by its repr."""
    from numba.core.dispatcher import Dispatcher

    py = obj.py_func if isinstance(obj, Dispatcher) else obj
    if not inspect.isfunction(py):
        return repr(obj)
    name = f"{py.__module__}.{py.__qualname__}"
    if py.__closure__:
        name += "(" + ",".join(_identity(c.cell_contents) for c in py.__closure__) + ")"
    return name


_DIGESTS: dict[Any, str] = {}


def _source_digest(fn: Any) -> str:
    """:func:`_digest_of`, once per loop and process (numba asks on every load and save)."""
    digest = _DIGESTS.get(fn)
    if digest is None:
        digest = _DIGESTS[fn] = _digest_of(fn)
    return digest


def _digest_of(fn: Any) -> str:
    """Digest of what the compiled code of closure ``fn`` depends on: the identity of what it
    captures (:func:`_identity`) and the text of every source file of the functions it can
    reach (captured, global, or attributes of seqheur modules, transitively)."""
    from numba.core.dispatcher import Dispatcher

    files: dict[str, str] = {}
    todo = [fn]
    visited: set[int] = set()
    while todo:
        o = todo.pop()
        if id(o) in visited:
            continue
        visited.add(id(o))
        py = o.py_func if isinstance(o, Dispatcher) else o
        if not inspect.isfunction(py):
            continue
        path = inspect.getsourcefile(py)
        if path and path not in files:
            try:
                files[path] = Path(path).read_text()
            except OSError:
                files[path] = f"<unreadable {path}>"
        for value in list(py.__globals__.values()):
            if isinstance(value, Dispatcher):
                todo.append(value)
            elif inspect.ismodule(value) and value.__name__.startswith("seqheur"):
                # functions reached as module attributes (``C.lookup``)
                todo.extend(v for v in vars(value).values() if isinstance(v, Dispatcher))
        for cell in py.__closure__ or ():
            todo.append(cell.cell_contents)
    h = hashlib.sha256(_identity(fn).encode() + b"\0")
    for path in sorted(files):
        h.update(path.encode() + b"\0" + files[path].encode() + b"\0")
    return h.hexdigest()


def _cache_class() -> type:
    from numba.core.caching import FunctionCache

    class EngineCacheImpl(FunctionCache):
        """numba's function cache, keyed for a closure by the names and sources of what it
        captures instead of their pickled bytes (which differ per process)."""

        def _index_key(self, sig, codegen):
            code = self._py_func.__code__.co_code
            captured = _source_digest(self._py_func)
            return (sig, codegen.magic_tuple(),
                    (hashlib.sha256(code).hexdigest(), captured))

        def load_overload(self, sig, target_context):
            # An index written by other code (a type since renamed or removed) fails to
            # unpickle, with whatever error the missing name raises: a miss, and the loop
            # compiles and overwrites it, instead of every replay failing.
            try:
                return super().load_overload(sig, target_context)
            except Exception:  # noqa: BLE001 - any unloadable entry is a cache miss
                return None

    return EngineCacheImpl


class _LazyCacheClass:
    cls: type | None = None

    def __call__(self, py_func: Any) -> Any:
        if self.cls is None:
            self.cls = _cache_class()
        return self.cls(py_func)


EngineCache = _LazyCacheClass()
