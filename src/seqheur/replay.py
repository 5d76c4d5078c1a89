"""Replay: a read stream through table + detector + read-ahead policy + buffer cache + disk.

For every READ, in server order (arrival at the server: the order its heuristic sees), one
fused numba loop (:mod:`seqheur.engine`) does:

1. the **table model** picks the file's slot (its ``lookup`` step, :mod:`seqheur.tables`); a fresh slot
   is ``reset`` by the detector; the **detector** ``update`` gives the seqcount;
2. the request is clipped at end of file and **classified** against the file's previous READ
   (cold, ejected, sequential, reordered, nonsequential; :func:`readahead.begin_request`);
3. the **read-ahead policy** (:mod:`seqheur.readahead`; for Linux detectors the detector
   itself, :mod:`seqheur.heuristics.linux`) reads demand and read-ahead blocks into the
   **cache** (:mod:`seqheur.cache`) and records every disk read it issues; each demand block
   is accounted, in order, when the policy reaches it: a hit if it was resident before this
   READ, else a miss with a cause (below) — with read-ahead off exactly an LRU;
4. the issued disk reads go, in batches, to the **disk-time model**
   (:mod:`seqheur.disk.model`), whose head and drive-cache state carry over between batches;
   nothing it computes feeds back, so one replay can be priced by several disk profiles
   (``Replayer(profiles=...)``, :func:`replay_profiles`).

**Causes** — every demand miss gets exactly one (so ``sum(lost_*) == misses``):
``evicted`` (the block was read ahead and evicted unused before this use), otherwise the
file's last *disruption* that read-ahead has not yet recovered from: ``cold`` (first READs of
the file), ``ejected`` (the file's table slot was recycled since its last READ),
``reordered`` (offset within ``reorder_window`` bytes of the end of the previous READ),
``nonsequential`` (further away); a file recovers when one of its READs is served without a
miss. A miss of a file with no pending disruption is ``short``: the access was sequential but
read-ahead did not reach far enough (still ramping up, or requests larger than the window).

**Metrics** (:mod:`seqheur.metrics`, the one schema): ``hits + misses == demand_blocks``;
``prefetched == prefetch_used + prefetch_wasted`` where wasted = evicted unused
(``prefetch_evicted``) + still unused at the end (``prefetch_unused_at_end``);
``coverage = prefetch_used / (prefetch_used + misses)`` (share of the misses without
read-ahead that read-ahead removed), ``accuracy = prefetch_used / prefetched`` (null when
nothing was prefetched); ``throughput_mbps`` = bytes the clients asked for / disk seconds
(10^6 bytes; null without a profile or disk time).

**Chunks.** All state (table, detector slots, disk head and segments, and the
:class:`seqheur.engine.World` the loop's steps share: cache, per-file history, counters, the
disk-op buffer) lives in arrays and numpy records held by a :class:`Replayer`; ``feed`` any
number of streams that share one file numbering (``ReadStream.slice``) and the result equals a
single replay of their concatenation. :func:`replay_chunks` does that for an iterable. The
summary reads the loop's counters by name (``world.ctr``, ``metrics.COUNTER_DTYPE``).

The loop is the engine's (:func:`seqheur.engine.loop`) composed of this detector's, table's and
policy's steps, compiled once and cached on disk, keyed by the sources of every module it
inlines. It starts loading the cache's hash line for the request ``engine.AHEAD`` places ahead
(the trace says which block comes next): the first probe of a block not touched for a while is
otherwise the loop's largest stall; it stops early when the disk-op buffer might overflow, and
the Replayer hands the buffered reads to the disk model.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pyarrow as pa
from numba import njit

from . import _pages
from . import cache as C
from . import engine as E
from . import metrics as M
from .config import DEFAULT, ReplayConfig, resolve_policy
from . import readahead as R
from .errors import SeqheurError
from .streams import ReadStream, attribute_file_sizes

# defaults live in seqheur.config.ReplayConfig; these names are kept for callers
DEFAULT_CACHE = DEFAULT.cache
DEFAULT_PROFILE = DEFAULT.profile
DEFAULT_REORDER_WINDOW = DEFAULT.reorder_window
_STEP = 1 << 22  # requests per progress step
_ACTS_CAP = 1 << 16  # read-ahead actions buffered before they are collected

# per-request columns (name, dtype): the stream's three, then the loop's results
_REQUEST_COLUMNS = (("file", np.int32), ("offset", np.int64), ("count", np.int32),
                    ("seqcount", np.int16), ("slot_fresh", np.bool_),
                    ("prefetch_blocks", np.int32), ("hit_blocks", np.int32),
                    ("miss_blocks", np.int32), ("cause", np.int8))
_LOOP_COLUMNS = _REQUEST_COLUMNS[3:]

SUMMARY_KEYS = M.SUMMARY_KEYS  # the summary columns, in order (seqheur.metrics)

# --------------------------------------------------------------------------------------------
# result


@dataclass(frozen=True)
class ReplayResult:
    """What a replay produced.

    ``summary``: a one-row polars DataFrame with :data:`seqheur.metrics.METRICS`' columns, so results of a
    sweep concatenate. ``requests``: per-request polars DataFrame (``file``, ``offset``,
    ``count``, ``seqcount``, ``slot_fresh``, ``prefetch_blocks``, ``hit_blocks``,
    ``miss_blocks``, ``cause``), or None when not kept or when they were streamed to the
    Parquet file ``requests_path`` (``requests_to=``; load it with ``polars.scan_parquet``).
    ``actions``: with ``actions=True``, one row per read-ahead action (:func:`actions_frame`),
    else None. ``timing``: with a timing model other than disk-only, its result
    (:class:`seqheur.timing.closed_loop.TimingResult`: per-READ issue and completion times),
    else None.
    """

    summary: Any
    requests: Any = None
    requests_path: Path | None = None
    actions: Any = None
    timing: Any = None

    def to_dict(self) -> dict[str, Any]:
        """The summary row as a plain dict (JSON-ready: NaN/inf become None)."""
        row = self.summary.row(0, named=True)
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                for k, v in row.items()}

    def to_json(self) -> str:
        """The summary row as a JSON object (the ``--json`` output)."""
        return json.dumps(self.to_dict(), indent=2)

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the per-request table to Parquet (atomically), the summary in the file's
        key-value metadata (``pyarrow.parquet.read_metadata(path).metadata``)."""
        from .io import ParquetSink, atomic_path

        if self.requests is None and self.requests_path is not None:
            if Path(path).resolve() != self.requests_path.resolve():
                with atomic_path(path) as tmp:
                    shutil.copyfile(self.requests_path, tmp)
            return Path(path)
        if self.requests is None:
            raise SeqheurError("this replay kept no per-request columns (per_request=False)")
        table = self.requests.to_arrow()
        sink = ParquetSink(path, table.schema)
        try:
            sink.write(table)
        except BaseException:
            sink.abort()
            raise
        return sink.close(self.parquet_metadata())

    def parquet_metadata(self) -> dict[bytes, bytes]:
        """Key-value metadata of the per-request Parquet file: the summary as JSON."""
        return {b"seqheur.replay.summary": self.to_json().encode()}


# --------------------------------------------------------------------------------------------
# the replayer (all state, chunk by chunk)


def file_sizes_for(source: Any, stream: ReadStream, how: Any = "auto"
                   ) -> tuple[np.ndarray | None, str]:
    """The file sizes a replay uses, and where they came from (the summary's ``file_sizes``).

    ``how``: ``"auto"`` — the reply attributes of ``source`` (a trace path or request table;
    NFS replies carry the file's size), at least as large as what the stream reads, and
    ``observed`` for files without attributes (a warning when no file has any);
    ``"observed"`` — the largest byte each file's requests read (read-ahead never passes it,
    so waste past a file's last READ is not counted); an int64 array per dense file index
    (``given``); None (``none``: no end of file)."""
    if how is None:
        return None, "none"
    if not isinstance(how, str):
        return np.asarray(how, np.int64), "given"
    if how not in ("auto", "observed"):
        raise SeqheurError(f"file_sizes must be 'auto', 'observed', an array or None, not "
                           f"{how!r}")
    observed = observed_file_sizes(stream)
    if how == "observed" or stream.n_files == 0:
        return observed, "observed"
    attrs = (attribute_file_sizes(source, stream.file_ids) if source is not None
             else np.full(stream.n_files, -1, np.int64))
    known = attrs >= 0
    if not known.any():
        if source is not None:
            import warnings

            warnings.warn("no reply attributes give file sizes: files end at their last READ "
                          "(read-ahead past it is not replayed; file_sizes = observed)",
                          stacklevel=3)
        return observed, "observed"
    sizes = np.where(known, np.maximum(attrs, observed), observed)
    return sizes, "attributes" if known.all() else "attributes+observed"


def observed_file_sizes(stream: ReadStream) -> np.ndarray:
    """Per-file size estimate: the largest ``offset + count`` the stream reads (int64[F])."""
    sizes = np.zeros(stream.n_files, np.int64)
    if len(stream):
        _max_end(np.ascontiguousarray(stream.file), np.ascontiguousarray(stream.offset),
                 np.ascontiguousarray(stream.count), sizes)
    return sizes


@njit(cache=True, nogil=True)
def _max_end(file, offset, count, out):
    for i in range(file.shape[0]):
        e = offset[i] + count[i]
        if e > out[file[i]]:
            out[file[i]] = e


@njit(cache=True, nogil=True)
def _clipped_bytes(file, offset, count, fsize, out):
    """The bytes each READ gets: ``count`` clipped at the end of its file (``fsize`` -1:
    unknown, not clipped)."""
    for i in range(file.shape[0]):
        eof = fsize[file[i]]
        c = np.int64(count[i])
        if eof >= 0:
            c = min(max(eof - offset[i], 0), c)
        out[i] = c


@njit(cache=True, nogil=True, _nrt=False)
def _sequential_sum(start, values):
    """``start`` plus ``values`` added one at a time, in order (what ``np.cumsum`` of the two
    gives last, without its two arrays of fresh pages)."""
    total = start
    for i in range(values.shape[0]):
        total += values[i]
    return total


class DiskPricer:
    """One disk model pricing a replay's disk reads, batch after batch: the files' placement
    on it, the drive's state (head, cache segments) and the running totals of the summary's
    disk columns."""

    def __init__(self, profile: Any, file_sizes: np.ndarray, layout: Any,
                 drive_cache: bool) -> None:
        from .disk.model import DiskModel, Layout

        self.disk = DiskModel.from_profile(profile, layout if layout is not None else Layout(),
                                           drive_cache=drive_cache)
        self.name = getattr(self.disk, "spec", None) or str(profile)  # with its options
        self.place = self.disk.place(np.maximum(file_sizes, 1))
        self.restart()

    def restart(self) -> None:
        """The drive as it starts a replay, and no disk read priced yet."""
        self.state = self.disk.new_state()
        self.seconds = 0.0
        self.positionings = 0
        self.hits = 0

    def price(self, file: np.ndarray, offset: np.ndarray, length: np.ndarray) -> None:
        """Service the next batch of disk reads (issue order) and add up their time."""
        res = self.disk.service(file, offset, length, self.place, self.state)
        # strictly sequential sum: the total must not depend on where chunks were cut
        self.seconds = float(_sequential_sum(self.seconds, res.seconds))
        self.positionings += res.positionings
        self.hits += res.hits


class Replayer:
    """Replay state carried across chunks of one trace (see module docstring).

    ``file_ids``: the trace's file ids (uint64, one per dense file index; every chunk must use
    this numbering). ``file_sizes``: bytes per file; the disk model lays files out with these
    sizes and (``clip_eof``) requests and read-ahead stop at a file's end. ``None``: no
    end-of-file clipping, and no disk layout, so it requires ``profile=None``.
    ``requests_to``: a Parquet path; the per-request columns are written there step by step
    (``_STEP`` requests at a time, so memory stays bounded however long the trace) instead of
    being kept, and the file appears when :meth:`result` finishes it (:meth:`abort` drops it).
    ``profiles``: instead of ``profile``, several disk profiles (each entry as ``profile``)
    that all price the one replay's disk reads, each with its own layout placement and drive
    state (:class:`DiskPricer`): the cache and the detector never see the disk, so
    ``summary(k)`` is exactly the row a replay with ``profile=profiles[k]`` gives, for the
    cost of one replay plus the disk model (and the timing model) per profile.
    ``ops_capacity``: disk reads buffered before they go to the disk model (how they are cut
    in batches changes no result: :meth:`DiskPricer.price`; a request needing more grows it).
    """

    def __init__(self, file_ids: np.ndarray, *, detector: Any = DEFAULT.detector,
                 table: Any = DEFAULT.table, policy: Any = DEFAULT.policy,
                 cache: Any = DEFAULT_CACHE,
                 profile: Any = DEFAULT_PROFILE, file_sizes: np.ndarray | None = None,
                 reorder_window: int = DEFAULT_REORDER_WINDOW, layout: Any = None,
                 drive_cache: bool = True, per_request: bool = True,
                 clip_eof: bool = True, requests_to: str | os.PathLike[str] | None = None,
                 actions: bool = False, size_source: str | None = None,
                 timing: Any = None, profiles: Sequence[Any] | None = None,
                 ops_capacity: int = DEFAULT.ops_capacity) -> None:
        from .heuristics.registry import parse_detector
        from .tables import parse_table

        self.spec = parse_detector(detector)
        self.model = parse_table(table)
        info = self.spec.info
        self.policy = resolve_policy(policy, info)
        self.cache_bytes = C.parse_size(cache)
        self.cache_text = cache if isinstance(cache, str) else f"{self.cache_bytes}B"
        if reorder_window < 0:
            raise SeqheurError(f"reorder_window must be >= 0, not {reorder_window}")
        self.reorder_window = int(reorder_window)
        if ops_capacity < 1:
            raise SeqheurError(f"ops_capacity must be >= 1, not {ops_capacity}")
        self.ops_capacity = int(ops_capacity)
        self.file_ids = np.asarray(file_ids, dtype=np.uint64)
        nf = len(self.file_ids)
        if nf >= C.MAX_FILES:
            raise SeqheurError(f"{nf} files: the cache model keys at most {C.MAX_FILES - 1}")
        policy = self.policy.record(window=self.reorder_window)
        fsize = np.full(max(nf, 1), -1, np.int64)  # -1: end of file unknown
        self.sizes: np.ndarray | None = None
        self.size_source = size_source or ("none" if file_sizes is None else "given")
        if file_sizes is not None:
            fsz = np.asarray(file_sizes, dtype=np.int64)
            if fsz.shape != (nf,):
                raise SeqheurError(f"file_sizes has {fsz.size} entries for {nf} files")
            self.sizes = fsz
            if clip_eof:
                fsize[:nf] = fsz
        if info.serve is not None:  # the detector reads ahead itself
            per_blk = info.ops_bound(self.spec.params) + 8
            decide, serve = E.no_decision, E.without_nrt(info.serve)
        else:
            per_blk = self.policy.ops_per_block(policy)
            decide, serve = E.without_nrt(info.update), self.policy.request
        self._ops_per_block = per_blk
        self._keeps_actions = bool(actions)
        self.world = E.World(
            policy=policy, policy_params=self.policy.own_params(),
            cache=C.new_cache(self.cache_bytes, self.policy.bsize),  # checks the sizes
            fs=None, fsize=fsize, ctr=None, lost=None, req=None, ops=None)
        chosen = [profile] if profiles is None else list(profiles)
        if not chosen:
            raise SeqheurError("profiles is empty: give at least one disk profile (or None)")
        if file_sizes is None and any(p is not None for p in chosen):
            raise SeqheurError("the disk model needs file sizes to lay files out: pass "
                               "file_sizes (or profile=None)")
        self.pricers = [None if p is None else DiskPricer(p, fsz, layout, drive_cache)
                        for p in chosen]
        first = self.pricers[0]
        self.disk = None if first is None else first.disk  # the timing model's and the oracle's
        if first is not None:
            self.place = first.place
        self._init_timing(timing)
        self.requests_to = Path(requests_to) if requests_to is not None else None
        self.per_request = per_request or self.requests_to is not None
        self._sink: Any = None
        self._new_run(self.world.cache)
        from .tables import steps_of

        prepare, lookup = steps_of(self.model)
        self._run = E.loop(prepare, lookup, E.without_nrt(info.reset), decide, serve,
                           E.admit_replay, E.record_replay)

    def _new_run(self, cache: C.CacheState | None = None) -> None:
        """The state of a replay that has been fed nothing: the table and detector state,
        the cache (``cache``, empty, if given), the loop's counters and buffers, the drives'
        states and totals, the timing model's record and the READs kept."""
        from .detect import make_state

        nf = len(self.file_ids)
        self.tab, self.state, self.params = make_state(self.spec, self.model, self.file_ids)
        self.tcounts = E.new_table_counts(nf)
        self.world = self.world._replace(
            cache=cache if cache is not None else C.new_cache(self.cache_bytes,
                                                              self.policy.bsize),
            fs=R.new_file_state(nf), ctr=R.new_record(M.COUNTER_DTYPE),
            lost=np.zeros(len(M.CAUSES), np.int64), req=R.new_record(R.REQUEST_DTYPE),
            ops=R.new_op_buffer(self.ops_capacity, self._ops_per_block),
            acts=R.new_action_buffer(_ACTS_CAP if self._keeps_actions else 0))
        self._actions: list[np.ndarray] | None = [] if self._keeps_actions else None
        for pricer in self.pricers:
            if pricer is not None:
                pricer.restart()
        self._timing_results: dict[int, Any] = {}  # per profile, until the next feed
        self._t_reqs: list[tuple[np.ndarray, ...]] = []
        # every disk read (request, sync, file, offset, length) in arrays of room for more:
        # the first self._t_nops of them (_record_ops)
        self._t_ops: tuple[np.ndarray, ...] | None = None
        self._t_nops = 0
        self._parts: list[dict[str, np.ndarray]] = []
        self.base = 0

    def restart(self) -> None:
        """Forget everything fed: the replayer as it was built, same configuration, for
        another replay of a trace with the same files. What building costs (the detector's
        and the profiles' parsing and loading, the files' placement, the loop's lookup) is
        not paid again: on a trace of a few hundred READs that is most of a replay's time.
        A per-request file being written is dropped."""
        self.abort()
        self._new_run()

    def _init_timing(self, timing: Any) -> None:
        """A timing model other than disk-only keeps the READs' times and bytes and every disk
        read (request, sync, file, offset, length) for the model to run at the end."""
        from .timing import parse_timing

        spec = parse_timing(timing)
        self.timing = None if spec is None or spec.disk_only else spec
        if self.timing is not None and any(p is None for p in self.pricers):
            raise SeqheurError(f"timing model {self.timing.spec!r} needs a disk profile "
                               f"(profile=None has no disk time)")
        if self.timing is not None:
            for kernel in getattr(self.timing.entry, "kernels", ()):
                E.cache_by_sources(kernel)

    # -- feeding ------------------------------------------------------------------------------

    def feed(self, stream: ReadStream, progress: Any = None) -> None:
        """Replay the next chunk of the trace."""
        nf = len(self.file_ids)
        if stream.n_files != nf or (nf and not np.array_equal(stream.file_ids, self.file_ids)):
            raise SeqheurError("every chunk must share the first chunk's file numbering "
                               "(use ReadStream.slice)")
        n = len(stream)
        file = np.ascontiguousarray(stream.file, dtype=np.int32)
        offset = np.ascontiguousarray(stream.offset, dtype=np.int64)
        count = np.ascontiguousarray(stream.count, dtype=np.int32)
        time_ns = np.ascontiguousarray(stream.time_ns, dtype=np.int64)
        if n and (offset.min() < 0 or count.min() < 0):
            raise SeqheurError("negative offset or count in the stream")
        if n:
            fill = self.world.ops.fill
            need = (int(count.max()) // int(self.policy.bsize) + 3) * int(fill.per_block) + 16
            if need > fill.capacity:  # one huge request must fit the op buffer
                cap = 1 << int(need * 2 - 1).bit_length()
                self._flush()
                self.world = self.world._replace(
                    ops=R.new_op_buffer(cap, int(fill.per_block)))
            acts = self.world.acts.fill
            need = (int(count.max()) // int(self.policy.bsize) + 3) * int(acts.per_block) + 16
            if acts.capacity and need > acts.capacity:
                self._flush()
                self.world = self.world._replace(acts=R.new_action_buffer(
                    1 << int(need * 2 - 1).bit_length(), int(acts.per_block)))
        if self.timing is not None:
            self._t_reqs.append((time_ns, file, offset, count))
            self._timing_results = {}  # a summary taken before this feed no longer holds
        keep = self.per_request
        lo = 0
        while lo < n:
            hi = min(n, lo + _STEP)
            step = E.read_only_requests(file[lo:hi], offset[lo:hi], count[lo:hi],
                                         time_ns[lo:hi])
            m = hi - lo if keep else 0
            out = {name: np.zeros(m, dtype) for name, dtype in _LOOP_COLUMNS}
            columns = tuple(out.values())
            i = 0
            while i < hi - lo:  # the loop returns early when the disk-op buffer is full
                i = self._run(step, i, hi - lo, self.base + lo, self.tab, self.state,
                              self.params, self.world, columns, keep, self.tcounts)
                self._flush(self.base + lo + i, self.base + n)
            if keep:
                out["file"], out["offset"], out["count"] = step.file, step.offset, step.count
                self._keep(out)
            if progress is not None:
                progress(hi - lo)
            lo = hi
        self.base += n

    def _keep(self, out: dict[str, np.ndarray]) -> None:
        if self.requests_to is None:
            self._parts.append(out)
            return
        table = _requests_frame([out]).to_arrow()
        if self._sink is None:
            from .io import ParquetSink

            self._sink = ParquetSink(self.requests_to, table.schema)
        self._sink.write(table)

    def abort(self) -> None:
        """Drop a per-request file being streamed (after an error)."""
        if self._sink is not None:
            self._sink.abort()
            self._sink = None

    def _flush(self, replayed: int = 0, fed: int = 0) -> None:
        """Hand the disk reads the loop has left in its buffer to the pricers (and the
        timing model's record), ``replayed`` READs of the ``fed`` so far (0: unknown)."""
        acts = self.world.acts
        k = int(acts.fill.pending)
        if k:
            self._actions.append(acts.rows[:k].copy())
            acts.fill.pending = 0
        ops = self.world.ops
        k = int(ops.fill.pending)
        if k == 0:
            return
        if self.timing is not None:
            self._record_ops((ops.request, ops.sync, ops.file, ops.offset, ops.length), k,
                             replayed, fed)
        for pricer in self.pricers:
            if pricer is not None:
                pricer.price(ops.file[:k], ops.offset[:k], ops.length[:k])
        ops.fill.pending = 0

    def _record_ops(self, cols: tuple[np.ndarray, ...], k: int, replayed: int,
                    fed: int) -> None:
        """Append the first ``k`` disk reads of ``cols`` to the timing model's record, whose
        arrays have room for the reads of every READ fed so far as the reads per READ
        replayed so far foretell (a quarter more): the model takes them as they are, with
        no join of chunks at the end (at 20 M READs a pass over 125 MB of fresh pages).
        Room runs out only when the reads come denser later: then arrays half as large
        again (or as the estimate says), the reads so far copied over."""
        have = self._t_nops
        need = have + k
        rec = self._t_ops
        if rec is None or need > rec[0].size:
            room = need
            if 0 < replayed < fed:
                room = max(room, need * fed // replayed + need // 4)
            if rec is not None:
                room = max(room, rec[0].size * 3 // 2)
            grown = tuple(_pages.empty(room, c.dtype) for c in cols)
            if rec is not None:
                for a, b in zip(grown, rec):
                    a[:have] = b[:have]
            self._t_ops = rec = grown
        for a, c in zip(rec, cols):
            a[have:need] = c[:k]
        self._t_nops = need

    # -- results ------------------------------------------------------------------------------

    def summary(self, k: int = 0) -> dict[str, Any]:
        """The summary row (:data:`seqheur.metrics.METRICS`, in that order), its disk columns
        priced by the ``k``-th of ``profiles`` (the one ``profile`` by default)."""
        self._flush()
        ctr = self.world.ctr
        lost = self.world.lost
        counts = self.tcounts.counts
        pricer = self.pricers[k]
        has_disk = pricer is not None
        row: dict[str, Any] = {
            "detector": self.spec.spec,
            "table": self.model.spec,
            "policy": self.policy.spec,
            "cache": self.cache_text,
            "profile": pricer.name if has_disk else None,
            "file_sizes": self.size_source,
            **{name: int(ctr[name]) for name in M.LOOP_COUNTERS},
            "table_ejections": int(counts.ejections),
            **{f"lost_{name}": int(lost[c]) for c, name in enumerate(M.CAUSES)},
            "disk_seconds": pricer.seconds if has_disk else float("nan"),
            "block_size": int(self.policy.bsize),
            "cache_bytes": self.cache_bytes,
            "files": len(self.file_ids),
            "prefetch_evicted": C.prefetch_counts(self.world.cache)[0],
            "prefetch_unused_at_end": C.prefetch_counts(self.world.cache)[1],
            "table_fresh": int(counts.fresh),
            "table_cold": int(counts.cold),
            "disk_positionings": pricer.positionings if has_disk else None,
            "disk_cache_hits": pricer.hits if has_disk else None,
            "reorder_window": self.reorder_window,
        }
        row.update(M.derive(row))
        out = {key: row[key] for key in M.SUMMARY_KEYS}
        if self.timing is not None:
            out["timing"] = self.timing.spec
            out.update(self.timing_result(k).summary(int(out["demand_bytes"])))
        return out

    def timing_result(self, k: int = 0) -> Any:
        """Run the timing model over everything fed so far, on the ``k``-th profile's disk
        (once; None without a model)."""
        if self.timing is None:
            return None
        if k not in self._timing_results:
            self._timing_results[k] = self.timing.entry.impl(self.timing.params,
                                                             self.timing_inputs(k))
        return self._timing_results[k]

    def timing_inputs(self, k: int = 0) -> Any:
        """What the timing model is given: every READ fed so far and every disk read, on the
        ``k``-th profile's disk (:class:`seqheur.timing.closed_loop.TimingInputs`; needs a
        timing model). The replay's reads are the same for every profile: the model runs
        afterwards, on a drive of its own, and feeds nothing back."""
        from .timing.closed_loop import TimingInputs

        if self.timing is None:
            raise SeqheurError("this replay has no timing model (timing=None or disk-only)")
        self._flush()

        def cat(parts: list[tuple[np.ndarray, ...]], k: int) -> np.ndarray:
            if not parts:
                return np.zeros(0, np.int64)
            if len(parts) == 1:  # one feed: its arrays as they are (a copy of 2 M is ms)
                return parts[0][k]
            out = _pages.empty(sum(p[k].size for p in parts), parts[0][k].dtype)
            return np.concatenate([p[k] for p in parts], out=out)

        file, offset, count = (cat(self._t_reqs, k) for k in (1, 2, 3))
        # the bytes each READ gets: clipped at the end of file as the replay clipped it. No
        # READ was clipped (the usual case) when the bytes the replay counted after clipping
        # (demand_bytes; a clipped count is never larger) are all the READs asked for: then
        # the counts, not a copy (a sum is a third of a pass that looks for a clipped READ)
        nbytes = count
        if int(count.sum(dtype=np.int64)) != int(self.world.ctr["demand_bytes"]):
            nbytes = np.empty(file.size, np.int64)
            _clipped_bytes(file, offset, count, self.world.fsize, nbytes)
        return TimingInputs(cat(self._t_reqs, 0), file, offset, nbytes,
                            *(self._t_ops[j][:self._t_nops] if self._t_ops is not None
                              else np.zeros(0, np.int64) for j in range(5)),
                            disk=self.pricers[k].disk, place=self.pricers[k].place)

    def result(self) -> ReplayResult:
        summary = M.summary_frame([self.summary()])
        if self.requests_to is not None:
            if self._sink is None:  # nothing fed: an empty file with the columns' types
                self._keep({name: np.zeros(0, dtype) for name, dtype in _REQUEST_COLUMNS})
            path = self._sink.close(ReplayResult(summary).parquet_metadata())
            self._sink = None
            return ReplayResult(summary, None, path, actions=self.actions(),
                                timing=self.timing_result())
        requests = None
        if self.per_request:
            requests = _requests_frame(self._parts)
        return ReplayResult(summary, requests, actions=self.actions(),
                            timing=self.timing_result())

    def actions(self) -> Any:
        """The read-ahead actions so far (:func:`actions_frame`), None when not recorded."""
        if self._actions is None:
            return None
        self._flush()
        rows = np.concatenate(self._actions) if self._actions else np.zeros(0, R.ACTION_DTYPE)
        return actions_frame(rows)


def actions_frame(rows: np.ndarray) -> Any:
    """Actions as a polars DataFrame: ``request`` (index in the trace), ``file`` (dense
    index), ``kind`` (:data:`seqheur.readahead.ACTION_KINDS`), ``start`` and ``count`` (blocks
    asked for: pages for Linux), ``mark`` (block given the read-ahead mark, null none),
    ``ra_start``/``ra_size``/``ra_async`` (the Linux ``file_ra_state`` after the action) and
    ``order`` (its folio order; null where the model has none)."""
    import polars as pl

    kinds = pl.Enum(list(R.ACTION_KINDS))
    cols = {name: rows[name] for name in R.ACTION_DTYPE.names}
    frame = pl.DataFrame(cols)
    return frame.with_columns(
        pl.col("file").cast(pl.Int32),
        pl.Series("kind", [R.ACTION_KINDS[k - 1] for k in rows["kind"]], dtype=kinds),
        *(pl.when(pl.col(c) >= 0).then(pl.col(c)).otherwise(None).alias(c)
          for c in ("mark", "ra_start", "ra_size", "ra_async", "order")))


def _requests_frame(parts: list[dict[str, np.ndarray]]) -> Any:
    import polars as pl

    def cat(name: str, dtype: Any) -> np.ndarray:
        if not parts:
            return np.zeros(0, dtype)
        return np.concatenate([p[name] for p in parts]).astype(dtype, copy=False)

    columns: dict[str, Any] = {name: cat(name, dtype) for name, dtype in _REQUEST_COLUMNS}
    columns["cause"] = pl.Series("cause", columns["cause"]).replace_strict(
        {k + 1: name for k, name in enumerate(R.CAUSES)}, default=None,
        return_dtype=pl.Enum(list(R.CAUSES)))
    return pl.DataFrame(columns)


# --------------------------------------------------------------------------------------------
# public API


def _as_stream(obj: Any) -> ReadStream:
    if isinstance(obj, ReadStream):
        return obj
    from .streams import read_stream, reads

    if isinstance(obj, (str, os.PathLike)):
        return read_stream(obj)
    if isinstance(obj, pa.Table) or hasattr(obj, "to_arrow"):
        return reads(obj)
    raise SeqheurError(f"replay needs a ReadStream, a request table or a trace path, not {type(obj).__name__}")


def _stream_and_sizes(stream_or_table: Any, sizes_from: Any,
                      file_sizes: Any) -> tuple[ReadStream, Any, str]:
    """The ReadStream a replay runs on, its file sizes and where they came from (the reply
    attributes of ``sizes_from`` when the input is already a ReadStream)."""
    stream = _as_stream(stream_or_table)
    source = sizes_from if isinstance(stream_or_table, ReadStream) else stream_or_table
    sizes, size_source = file_sizes_for(source, stream, file_sizes)
    return stream, sizes, size_source


def replay(stream_or_table: Any, detector: Any = DEFAULT.detector, table: Any = DEFAULT.table,
           policy: Any = DEFAULT.policy, cache: Any = DEFAULT_CACHE,
           profile: Any = DEFAULT_PROFILE, *,
           file_sizes: Any = "auto", reorder_window: int = DEFAULT_REORDER_WINDOW,
           layout: Any = None, drive_cache: bool = True, per_request: bool = True,
           clip_eof: bool = True, progress: bool = False,
           requests_to: str | os.PathLike[str] | None = None,
           config: ReplayConfig | None = None, actions: bool = False,
           sizes_from: Any = None, timing: Any = None) -> ReplayResult:
    """Replay a trace and score its read-ahead (see the module docstring).

    ``stream_or_table``: a ReadStream, a request table (Arrow/polars) or a trace path.
    ``detector``/``table``/``policy``: spec strings (``seqheur detectors``, ``seqheur tables``,
    :func:`seqheur.readahead.parse_policy`; policy ``auto`` picks by detector). ``cache``: bytes
    or a size like ``"256MiB"``. ``profile``: a bundled DiskProfile name, a JSON path, a
    DiskProfile, or None (no disk time). ``file_sizes``: ``"auto"`` (the trace's reply
    attributes, else what it reads: :func:`file_sizes_for`), ``"observed"`` (largest
    offset+count read per file), an int64 array per dense file index, or None (no end-of-file
    clipping; needs ``profile=None``); they lay the files out on the disk and, with
    ``clip_eof``, end requests and read-ahead; the summary's ``file_sizes`` says which. ``reorder_window``: bytes around the expected offset that make a READ
    ``reordered`` rather than ``nonsequential``. ``per_request=False`` keeps only the summary;
    ``requests_to=PATH`` streams the per-request columns to a Parquet file (summary in its
    metadata) instead of keeping them in memory. ``config``: a :class:`ReplayConfig`
    supplying detector, table, policy, cache, profile, reorder window, drive cache,
    end-of-file clipping, the disk-read buffer and (unless ``timing`` is given) the timing
    model instead of the arguments. ``actions=True`` records every read-ahead
    action (``ReplayResult.actions``: why each block was read). ``sizes_from``: the trace path
    or request table whose reply attributes give the file sizes when ``stream_or_table`` is
    an already built ReadStream. ``timing``: a timing model spec (``"closed-loop:slots=8"``,
    ``"closed-loop:preset=paper-testbed"``; docs/timing.md) whose end-to-end columns
    (``e2e_seconds``, ``e2e_throughput_mbps``, READ latency percentiles, ``disk_utilisation``)
    are added to the summary; None or ``"disk-only"``: the summary as without one.

    >>> r = replay(ReadStream.from_arrays([0] * 8, range(0, 65536, 8192), 8192), "always",
    ...            "ideal", "fixed:1", profile=None)
    >>> r["misses"]
    1
    """
    ops_capacity = DEFAULT.ops_capacity
    if config is not None:
        detector, table, policy, cache = config.detector, config.table, config.policy, config.cache
        profile, reorder_window = config.profile, config.reorder_window
        drive_cache, clip_eof = config.drive_cache, config.clip_eof
        timing = config.timing if timing is None else timing
        ops_capacity = config.ops_capacity
    stream, sizes, size_source = _stream_and_sizes(stream_or_table, sizes_from, file_sizes)
    rp = Replayer(stream.file_ids, detector=detector, table=table, policy=policy, cache=cache,
                  profile=profile, file_sizes=sizes, reorder_window=reorder_window,
                  layout=layout, drive_cache=drive_cache, per_request=per_request,
                  clip_eof=clip_eof, requests_to=requests_to, actions=actions,
                  size_source=size_source, timing=timing, ops_capacity=ops_capacity)
    try:
        if progress and len(stream) > _STEP:
            from rich.progress import Progress

            with Progress(transient=True) as bar:
                task = bar.add_task(f"replay {rp.spec.spec}", total=len(stream))
                rp.feed(stream, progress=lambda k: bar.advance(task, k))
        else:
            rp.feed(stream)
        return rp.result()
    except BaseException:
        rp.abort()
        raise


def replay_profiles(stream_or_table: Any, profiles: Sequence[Any],
                    detector: Any = DEFAULT.detector, table: Any = DEFAULT.table,
                    policy: Any = DEFAULT.policy, cache: Any = DEFAULT_CACHE, *,
                    file_sizes: Any = "auto", reorder_window: int = DEFAULT_REORDER_WINDOW,
                    layout: Any = None, drive_cache: bool = True, clip_eof: bool = True,
                    sizes_from: Any = None, timing: Any = None) -> list[ReplayResult]:
    """One replay priced by several disk profiles: a summary-only :class:`ReplayResult` per
    entry of ``profiles``, each identical to ``replay(..., profile=p, per_request=False)``
    (``Replayer(profiles=...)``); with a ``timing`` model, its result (run once per
    profile) is each one's ``timing``. The other arguments are :func:`replay`'s."""
    stream, sizes, size_source = _stream_and_sizes(stream_or_table, sizes_from, file_sizes)
    rp = Replayer(stream.file_ids, detector=detector, table=table, policy=policy, cache=cache,
                  profiles=profiles, file_sizes=sizes, reorder_window=reorder_window,
                  layout=layout, drive_cache=drive_cache, per_request=False,
                  clip_eof=clip_eof, size_source=size_source, timing=timing)
    rp.feed(stream)
    return [ReplayResult(M.summary_frame([rp.summary(k)]), timing=rp.timing_result(k))
            for k in range(len(profiles))]


def replay_chunks(chunks: Iterable[ReadStream], detector: Any = DEFAULT.detector,
                  table: Any = DEFAULT.table, policy: Any = DEFAULT.policy,
                  cache: Any = DEFAULT_CACHE,
                  profile: Any = DEFAULT_PROFILE, *, file_sizes: np.ndarray | None = None,
                  reorder_window: int = DEFAULT_REORDER_WINDOW, layout: Any = None,
                  drive_cache: bool = True, per_request: bool = True,
                  clip_eof: bool = True,
                  requests_to: str | os.PathLike[str] | None = None,
                  size_source: str | None = None, timing: Any = None) -> ReplayResult:
    """Replay consecutive chunks of one trace; equal to :func:`replay` of their concatenation
    given the same ``file_sizes`` (chunks must share the file numbering). With
    ``requests_to`` the per-request columns go to that Parquet file chunk by chunk, so memory
    stays bounded by the chunk size. ``size_source``: where ``file_sizes`` came from, for the
    summary (default ``given``). ``timing``: as for :func:`replay` (the model keeps every
    READ's time and bytes and every disk read until the end)."""
    rp: Replayer | None = None
    try:
        for chunk in chunks:
            if rp is None:
                rp = Replayer(chunk.file_ids, detector=detector, table=table, policy=policy,
                              cache=cache, profile=profile, file_sizes=file_sizes,
                              reorder_window=reorder_window, layout=layout,
                              drive_cache=drive_cache, per_request=per_request,
                              clip_eof=clip_eof, requests_to=requests_to,
                              size_source=size_source, timing=timing)
            rp.feed(chunk)
            del chunk  # not alive while the next one is read
        if rp is None:
            raise SeqheurError("replay_chunks got no chunks")
        return rp.result()
    except BaseException:
        if rp is not None:
            rp.abort()
        raise


class _CallableModule(types.ModuleType):
    """``seqheur.replay`` is both this module and the function: importing the submodule
    rebinds the package attribute to the module, so the module forwards calls."""

    def __call__(self, *args: Any, **kwargs: Any) -> ReplayResult:
        return replay(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule


from ._callable import callable_module  # noqa: E402

callable_module(__name__, replay)
