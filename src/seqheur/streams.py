"""Request table -> server-ordered read streams, and per-file stream statistics.

A :class:`ReadStream` is what replay consumes: equal-length numpy arrays in the order the
server saw the requests. Statistics (sequential and reordered fractions, run lengths,
interleaved sub-streams) are defined in ``docs/formats.md`` §Stream statistics.
"""

from __future__ import annotations

import os

from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import _pages
from .errors import SeqheurError


@dataclass(frozen=True)
class ReadStream:
    """Server-ordered requests of a trace.

    ``file`` is a dense index 0..F-1 by first appearance; ``file_ids[file]`` maps back to the
    request table's ``file_id``. ``is_write`` is all False unless writes were asked for.
    """

    time_ns: np.ndarray  # int64
    file: np.ndarray  # int32
    offset: np.ndarray  # int64
    count: np.ndarray  # int32
    file_ids: np.ndarray  # uint64, length F
    is_write: np.ndarray | None = None  # bool
    source_index: np.ndarray | None = None  # uint64, row provenance

    def __post_init__(self) -> None:
        n = len(self.time_ns)
        for name in ("file", "offset", "count"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"ReadStream.{name} has {len(getattr(self, name))} values, expected {n}")

    def __len__(self) -> int:
        return len(self.time_ns)

    @property
    def n_files(self) -> int:
        return len(self.file_ids)

    def slice(self, start: int, stop: int) -> "ReadStream":
        """Requests [start, stop); keeps the full file index so chunks share file numbers."""
        return ReadStream(
            self.time_ns[start:stop], self.file[start:stop], self.offset[start:stop],
            self.count[start:stop], self.file_ids,
            None if self.is_write is None else self.is_write[start:stop],
            None if self.source_index is None else self.source_index[start:stop])

    @classmethod
    def from_arrays(cls, file: Sequence[int] | np.ndarray, offset: Sequence[int] | np.ndarray,
                    count: Sequence[int] | np.ndarray | int,
                    time_ns: Sequence[int] | np.ndarray | None = None) -> "ReadStream":
        """A stream from plain arrays (files given as any integers, renumbered densely)."""
        dense, ids = dense_index(np.asarray(file))
        off = np.asarray(offset, dtype=np.int64)
        cnt = np.broadcast_to(np.asarray(count, dtype=np.int32), off.shape).copy()
        t = np.arange(len(off), dtype=np.int64) if time_ns is None else np.asarray(time_ns, np.int64)
        return cls(t, dense, off, cnt, ids.astype(np.uint64))


#: The ops whose requests have an offset and a count, so they can form a stream.
STREAM_OPS = ("read", "write", "commit")


def no_stream_hint(table: Any, ops: Sequence[str] = ("read",)) -> str:
    """Why a trace gave no requests to stream: the ops it does hold, with their counts."""
    if not isinstance(table, pa.Table):
        table = table.to_arrow()
    if table.num_rows == 0:
        return "the trace holds no requests at all"
    col = table.column("op")
    if pa.types.is_dictionary(col.type):
        col = col.cast(pa.string())
    counts = pc.value_counts(col).to_pylist()
    held = ", ".join(f"{c['counts']} {c['values']}" for c in
                     sorted(counts, key=lambda c: -c["counts"])[:8])
    return (f"no {'/'.join(o.upper() for o in ops)} requests with a file handle, offset and "
            f"count; the trace holds {held} (choose others with --ops)")


#: The request-table columns a read stream is built from.
STREAM_COLUMNS = ("time", "file_id", "offset", "count", "op", "source_index")


def attribute_file_sizes(source: Any, file_ids: np.ndarray) -> np.ndarray:
    """Per file of ``file_ids`` (uint64), the largest size the trace's reply attributes give
    it (``file_size`` of any op), -1 where none does. ``source``: a request table
    (Arrow/polars) or a trace path (a Parquet request table is read as its two columns)."""
    out = np.full(len(file_ids), -1, np.int64)
    if isinstance(source, (str, os.PathLike)):
        import pyarrow.parquet as pq

        try:
            pf = pq.ParquetFile(source)
        except (pa.ArrowInvalid, OSError):
            from .ingest import read_trace

            table = read_trace(source, warn_loss=False)[0]  # warned when it was streamed
        else:
            if not {"file_size", "file_id"} <= set(pf.schema_arrow.names) or not len(file_ids):
                return out
            for batch in pf.iter_batches(batch_size=BATCH_ROWS, columns=["file_id", "file_size"]):
                out = np.maximum(out, attribute_file_sizes(pa.Table.from_batches([batch]), file_ids))
            return out
    else:
        table = source if isinstance(source, pa.Table) else source.to_arrow()
    if table is None or "file_size" not in table.column_names or not len(file_ids):
        return out
    sub = table.select(["file_id", "file_size"]).filter(
        pc.and_(pc.is_valid(table["file_id"]), pc.is_valid(table["file_size"])))
    if sub.num_rows == 0:
        return out
    g = sub.group_by("file_id").aggregate([("file_size", "max")])
    ids = g["file_id"].to_numpy().astype(np.uint64)
    sizes = g["file_size_max"].to_numpy().astype(np.int64)
    order = np.argsort(file_ids)
    pos = np.searchsorted(file_ids, ids, sorter=order)
    ok = pos < len(file_ids)
    hit = np.zeros(len(ids), bool)
    hit[ok] = file_ids[order[pos[ok]]] == ids[ok]
    out[order[pos[hit]]] = sizes[hit]
    return out


def read_stream(path: Any, ops: Sequence[str] = ("read",), order: str = "server",
                provenance: bool = True) -> ReadStream:
    """The :class:`ReadStream` of a trace file of any format (``seqheur.ingest.read_trace``).

    A Parquet request table is read as its rows of ``ops`` and the :data:`STREAM_COLUMNS`
    only, so memory follows the READs, not the whole table; one already in server order (as
    ``seqheur ingest`` and ``seqheur synth`` write them) batch by batch into the stream's own
    arrays, so the peak is the stream plus one batch (:func:`_parquet_stream_in_order`).
    ``provenance=False`` leaves out ``source_index`` (8 of the 32 bytes a request; a replay
    does not use it).
    """
    if order == "server":
        stream = _parquet_stream_in_order(path, ops, provenance=provenance)
        if stream is not None:
            return stream
    table = _read_parquet_ops(path, ops)
    if table is None:
        from .ingest import read_trace

        table, _ = read_trace(path)  # losses: a TraceLossWarning
    return reads(table, ops=ops, order=order)


#: Rows a Parquet request table is read in by :func:`_parquet_stream_in_order`.
BATCH_ROWS = 1 << 18


def _parquet_stream_in_order(path: Any, ops: Sequence[str], batch_rows: int = BATCH_ROWS,
                             provenance: bool = True) -> ReadStream | None:
    """The server-ordered stream of a Parquet request table read batch by batch, each batch's
    requests written into arrays sized for the whole file: the peak is the stream's own 32
    bytes a request plus one batch (measured on synthetic traces of 4 M and 12 M requests: 38
    bytes a request more, against 109 when the table is read whole and then sorted). Equal to
    :func:`reads` of the whole table when the batches come in server order (each batch is
    sorted by :func:`reads`; their ranges of (time, source_index) must not overlap); None
    when they do not, or when ``path`` is not a Parquet request table: the caller then reads
    it whole."""
    import pyarrow.parquet as pq

    from .schema import COLUMNS, request_subschema

    try:
        pf = pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError, TypeError):
        return None
    if not all(c in pf.schema_arrow.names for c in COLUMNS):
        return None
    want = request_subschema(STREAM_COLUMNS)
    n = pf.metadata.num_rows
    # written once, front to back: small pages (_pages; 100 M requests 11-12 -> 7-8 s)
    time_ns = _pages.empty(n, np.int64)
    file = _pages.empty(n, np.int32)
    offset = _pages.empty(n, np.int64)
    count = _pages.empty(n, np.int32)
    src = _pages.empty(n if provenance else 0, np.uint64)
    is_write = None if all(o == "read" for o in ops) else _pages.empty(n, np.bool_)
    file_ids = np.zeros(0, np.uint64)
    pos = 0
    last: tuple[int, int] | None = None
    try:
        batches = (pa.Table.from_batches([b]).cast(want)
                   for b in pf.iter_batches(batch_size=batch_rows, columns=want.names))
        for chunk in scan_reads(batches, ops=ops):
            k = len(chunk)
            first = (int(chunk.time_ns[0]), int(chunk.source_index[0]))
            if last is not None and first < last:
                return None  # batches out of server order: sorting needs the whole table
            last = (int(chunk.time_ns[-1]), int(chunk.source_index[-1]))
            time_ns[pos:pos + k] = chunk.time_ns
            file[pos:pos + k] = chunk.file
            offset[pos:pos + k] = chunk.offset
            count[pos:pos + k] = chunk.count
            if provenance:
                src[pos:pos + k] = chunk.source_index
            if is_write is not None:
                is_write[pos:pos + k] = chunk.is_write
            file_ids = chunk.file_ids
            pos += k
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise SeqheurError(f"{path}: not a request table ({exc})") from None

    def fit(a: np.ndarray) -> np.ndarray:  # a copy only when many rows were not kept
        return a[:pos] if pos * 4 >= n * 3 else a[:pos].copy()

    return ReadStream(fit(time_ns), fit(file), fit(offset), fit(count), file_ids,
                      None if is_write is None else fit(is_write), fit(src) if provenance else None)


def _read_parquet_ops(path: Any, ops: Sequence[str]) -> pa.Table | None:
    """Rows of ``ops`` and stream columns of a Parquet request table; None when ``path`` is
    not one (``read_trace`` then reads it, or names the problem)."""
    import pyarrow.parquet as pq

    from .io import read_request_columns
    from .schema import COLUMNS

    try:
        names = pq.read_schema(path).names
    except (pa.ArrowInvalid, OSError):
        return None  # not Parquet (another format, compressed, or damaged)
    if not all(c in names for c in COLUMNS):
        return None  # a simple trace (time, file, offset, count): read_trace converts it
    try:
        return read_request_columns(path, STREAM_COLUMNS, ops)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise SeqheurError(f"{path}: not a request table ({exc})") from None


def reads(table: pa.Table | Any, ops: Sequence[str] = ("read",), order: str = "server") -> ReadStream:
    """Build the :class:`ReadStream` of a request table.

    Rows whose op is in ``ops`` and that have a file_id, offset and count are kept. ``order``
    is "server" (by call arrival time, ties by source_index) or "source" (as stored).
    """
    bad = sorted(set(ops) - set(STREAM_OPS))
    if bad:
        raise SeqheurError(f"ops {', '.join(map(repr, bad))} do not form read streams; valid: "
                           f"{', '.join(STREAM_OPS)} (the ops with an offset and a count)")
    if not isinstance(table, pa.Table):
        table = table.to_arrow()
    if order not in ("server", "source"):
        raise SeqheurError(f"order must be 'server' or 'source', not {order!r}")
    mask = _op_mask(table.column("op"), ops)
    for name in ("file_id", "offset", "count"):
        col = table.column(name)
        if col.null_count:
            mask &= pc.is_valid(col).to_numpy(zero_copy_only=False)
    sub = table.select(list(STREAM_COLUMNS))
    if not mask.all():
        sub = sub.filter(pa.array(mask))
    # Each column is taken out of Arrow, converted and permuted one at a time, and no copy is
    # made where the type already fits: peak memory is what limits the size of a trace (or of
    # a dataset part, out of core) that can be replayed.
    time_ns = _ns(sub.column("time"))
    src = _np(sub.column("source_index"), np.uint64)
    perm = _server_order(time_ns, src) if order == "server" else None

    def take(a: np.ndarray) -> np.ndarray:
        return a if perm is None else a[perm]

    time_ns = take(time_ns)
    src = take(src)
    dense, file_ids = dense_index(take(_np(sub.column("file_id"), np.uint64)))
    offset = take(_np(sub.column("offset"), np.int64))
    count = take(np.minimum(_np(sub.column("count"), np.int64), np.iinfo(np.int32).max).astype(np.int32))
    is_write = None
    if any(o != "read" for o in ops):
        opv = sub.column("op")
        opv = opv.cast(pa.string()) if pa.types.is_dictionary(opv.type) else opv
        is_write = take(pc.equal(opv, "write").to_numpy(zero_copy_only=False))
    return ReadStream(time_ns, dense, offset, count, file_ids, is_write, src)


def _op_mask(op_col: pa.ChunkedArray, ops: Sequence[str]) -> np.ndarray:
    """Which rows' op is one of ``ops`` (null: no). A dictionary column (as Parquet request
    tables are read) is tested on its few dictionary values and their indices, without
    decoding the strings of every row (4.6x faster on 256 k-row batches)."""
    if not pa.types.is_dictionary(op_col.type):
        m = pc.is_in(op_col, value_set=pa.array(list(ops), pa.string()))
        return m.fill_null(False).to_numpy(zero_copy_only=False)
    wanted = set(ops)
    parts = []
    for chunk in op_col.chunks:
        keep = np.array([v in wanted for v in chunk.dictionary.to_pylist()] or [False], bool)
        m = keep[chunk.indices.fill_null(0).to_numpy(zero_copy_only=False)]
        if chunk.null_count:
            m &= chunk.is_valid().to_numpy(zero_copy_only=False)
        parts.append(m)
    return np.concatenate(parts) if parts else np.zeros(0, bool)


def _server_order(time_ns: np.ndarray, src: np.ndarray) -> np.ndarray | None:
    """The permutation into server order (by time, ties by source index; stable), or None
    when the rows are in that order already (as ``seqheur ingest`` and ``seqheur synth``
    write them): two comparisons instead of a sort and a copy of every column."""
    later = time_ns[1:] > time_ns[:-1]
    if later.all() or (
            (later | ((time_ns[1:] == time_ns[:-1]) & (src[1:] >= src[:-1]))).all()):
        return None
    return np.lexsort((src, time_ns))


def _np(col: pa.ChunkedArray, dtype: Any) -> np.ndarray:
    return col.to_numpy().astype(dtype, copy=False)


def dense_index(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(dense int32 index by first appearance, the keys in that order)."""
    if len(keys) == 0:
        return np.zeros(0, np.int32), np.zeros(0, keys.dtype)
    # Arrow's dictionary encoding hashes in one pass and numbers by first appearance (a sort
    # based np.unique took 1.0 s and several copies of the column for 4 M keys; this, 0.07 s)
    enc = pc.dictionary_encode(pa.array(keys))
    return (enc.indices.to_numpy().astype(np.int32, copy=False),
            enc.dictionary.to_numpy().astype(keys.dtype, copy=False))


def _ns(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    return col.cast(pa.int64()).to_numpy(zero_copy_only=False).astype(np.int64)


# --------------------------------------------------------------------------------------------
# Stream statistics
# --------------------------------------------------------------------------------------------

#: A READ is "reordered" when it starts below the highest end offset already requested in its
#: file by at most this many of its own lengths (FreeBSD's NFS server tolerates 16 RPCs).
REORDER_DEPTH = 16
#: Sub-streams tracked per file (the least recently used is forgotten beyond that).
MAX_SUBSTREAMS = 16
#: A sub-stream counts when it carries at least this many READs and this share of its file's.
MIN_SUBSTREAM_READS = 8
MIN_SUBSTREAM_SHARE = 0.05


def _stats_kernel_impl(file, offset, count, n_files, reorder_depth, max_streams):
    n = len(file)
    sequential = np.zeros(n, np.bool_)
    reordered = np.zeros(n, np.bool_)
    reread = np.zeros(n, np.bool_)
    first = np.zeros(n, np.bool_)
    cov_lo = np.zeros(n_files, np.int64)  # the file's contiguous requested extent [lo, hi)
    cov_hi = np.zeros(n_files, np.int64)
    stream_of = np.zeros(n, np.int64)  # global id of the sub-stream each READ joined
    seen = np.zeros(n_files, np.bool_)
    prev_end = np.zeros(n_files, np.int64)
    max_end = np.zeros(n_files, np.int64)
    cur_run = np.zeros(n_files, np.int64)
    run_len = np.zeros(n, np.int64)
    run_file = np.zeros(n, np.int64)
    n_runs = 0
    s_expect = np.zeros((n_files, max_streams), np.int64)
    s_id = np.full((n_files, max_streams), -1, np.int64)
    s_used = np.zeros((n_files, max_streams), np.int64)
    next_id = 0
    for i in range(n):
        f = file[i]
        off = offset[i]
        cnt = count[i]
        end = off + cnt
        window = reorder_depth * max(cnt, 1)
        if not seen[f]:
            seen[f] = True
            first[i] = True
            cur_run[f] = 1
            max_end[f] = end
            cov_lo[f] = off
            cov_hi[f] = end
        else:
            # a re-read: every byte it asks for was asked for before (within the contiguous
            # extent; bytes past a hole are not tracked, so a re-read of them is not seen)
            if cnt > 0 and off >= cov_lo[f] and end <= cov_hi[f]:
                reread[i] = True
            elif off <= cov_hi[f] and end > cov_hi[f] and off >= cov_lo[f]:
                cov_hi[f] = end
            elif end >= cov_lo[f] and off < cov_lo[f] and end <= cov_hi[f]:
                cov_lo[f] = off
            if off == prev_end[f]:
                sequential[i] = True
                cur_run[f] += 1
            else:
                run_len[n_runs] = cur_run[f]
                run_file[n_runs] = f
                n_runs += 1
                cur_run[f] = 1
            if not reread[i] and off < max_end[f] and max_end[f] - off <= window:
                reordered[i] = True
            if end > max_end[f]:
                max_end[f] = end
        prev_end[f] = end
        # sub-streams: join the nearest stream whose expected offset is within the window
        best = -1
        best_d = window + 1
        lru = 0
        for s in range(max_streams):
            if s_id[f, s] < 0:
                if best < 0:
                    lru = s
                continue
            d = abs(off - s_expect[f, s])
            if d <= window and d < best_d:
                best = s
                best_d = d
            if s_id[f, lru] >= 0 and s_used[f, s] < s_used[f, lru]:
                lru = s
        if best < 0:
            best = lru
            s_id[f, best] = next_id
            next_id += 1
            s_expect[f, best] = end
        elif end > s_expect[f, best]:
            s_expect[f, best] = end
        s_used[f, best] = i + 1
        stream_of[i] = s_id[f, best]
    for f in range(n_files):
        if seen[f]:
            run_len[n_runs] = cur_run[f]
            run_file[n_runs] = f
            n_runs += 1
    return (sequential, reordered, reread, first, stream_of, run_len[:n_runs],
            run_file[:n_runs])


_stats_kernel = None


def _kernel():
    global _stats_kernel
    if _stats_kernel is None:
        from numba import njit

        _stats_kernel = njit(cache=True, nogil=True)(_stats_kernel_impl)
    return _stats_kernel


@dataclass(frozen=True)
class StreamStats:
    """Statistics of a trace's read streams (definitions in docs/formats.md)."""

    summary: dict[str, Any]
    files: Any  # polars.DataFrame, one row per file
    run_lengths: Any  # polars.DataFrame: file, run_length (requests)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.summary)


def stream_stats(stream: ReadStream, reorder_depth: int = REORDER_DEPTH,
                 max_substreams: int = MAX_SUBSTREAMS) -> StreamStats:
    """Per-trace and per-file statistics of a :class:`ReadStream`.

    * sequential: the READ starts where the file's previous READ ended;
    * re-read: every byte it asks for was asked for before in its file (within the file's
      contiguous requested extent; a re-read is not counted as reordered);
    * reordered (out of order): it starts below the highest end offset already requested in
      its file, by at most ``reorder_depth`` of its own lengths (a late READ, not a seek), and
      is not a re-read;
    * runs: maximal sequences of sequential READs of a file, in requests;
    * sub-streams: READs are matched to the nearest of up to ``max_substreams`` per-file
      cursors within the reorder window; a cursor that carries at least 8 READs and 5% of its
      file's READs is a sub-stream (an S-stride reader shows S of them).
    Fractions are over READs that have a predecessor in their file (all but each first READ).
    """
    import polars as pl

    seq, reo, rer, first, stream_of, run_len, run_file = _kernel()(
        stream.file.astype(np.int64), stream.offset, stream.count.astype(np.int64),
        stream.n_files, int(reorder_depth), int(max_substreams))
    df = pl.DataFrame({
        "file": stream.file, "bytes": stream.count.astype(np.int64), "sequential": seq,
        "reordered": reo, "reread": rer, "first": first, "stream": stream_of,
        "time_ns": stream.time_ns})
    per_stream = df.group_by("file", "stream").agg(pl.len().alias("reads"))
    per_file = df.group_by("file").agg(
        pl.len().alias("requests"), pl.col("bytes").sum(), pl.col("sequential").sum(),
        pl.col("reordered").sum(), pl.col("reread").sum(),
        pl.col("time_ns").min().alias("first_ns"),
        pl.col("time_ns").max().alias("last_ns"))
    per_stream = per_stream.join(per_file.select("file", "requests"), on="file")
    long_streams = per_stream.filter(
        (pl.col("reads") >= MIN_SUBSTREAM_READS)
        & (pl.col("reads") >= MIN_SUBSTREAM_SHARE * pl.col("requests")))
    sub = long_streams.group_by("file").agg(pl.len().alias("substreams"))
    runs = pl.DataFrame({"file": run_file.astype(np.int32), "run_length": run_len})
    run_agg = runs.group_by("file").agg(pl.col("run_length").mean().alias("mean_run"),
                                        pl.col("run_length").max().alias("max_run"))
    files = (per_file.join(sub, on="file", how="left").join(run_agg, on="file", how="left")
             .with_columns(pl.col("substreams").fill_null(0).cast(pl.Int64)))
    files = files.with_columns(
        pl.col("file").map_batches(lambda s: pl.Series(stream.file_ids[s.to_numpy()]),
                                   return_dtype=pl.UInt64).alias("file_id"),
        (pl.col("sequential") / (pl.col("requests") - 1).clip(lower_bound=1)).alias("sequential_fraction"),
        (pl.col("reordered") / (pl.col("requests") - 1).clip(lower_bound=1)).alias("reordered_fraction"),
        (pl.col("reread") / (pl.col("requests") - 1).clip(lower_bound=1)).alias("reread_fraction"),
    ).sort("file")
    n = len(stream)
    with_pred = max(n - stream.n_files, 1)
    hist = _run_histogram(run_len)
    subs = files.get_column("substreams").to_numpy() if len(files) else np.zeros(0, np.int64)
    summary = {
        "requests": int(n),
        "files": int(stream.n_files),
        "bytes": int(stream.count.astype(np.int64).sum()),
        "sequential": int(seq.sum()),
        "reordered": int(reo.sum()),
        "sequential_fraction": float(seq.sum() / with_pred) if n else 0.0,
        "reordered_fraction": float(reo.sum() / with_pred) if n else 0.0,
        "reread": int(rer.sum()),
        "reread_fraction": float(rer.sum() / with_pred) if n else 0.0,
        "runs": int(len(run_len)),
        "mean_run_length": float(run_len.mean()) if len(run_len) else 0.0,
        "run_length_histogram": hist,
        "substreams": int(subs.sum()),
        "max_substreams_per_file": int(subs.max()) if len(subs) else 0,
        "strided_files": int((subs > 1).sum()),
        "duration_s": float((stream.time_ns.max() - stream.time_ns.min()) / 1e9) if n else 0.0,
        "reorder_depth": int(reorder_depth),
    }
    return StreamStats(summary, files, runs)


def _run_histogram(run_len: np.ndarray) -> dict[str, int]:
    """Runs by length in power-of-two bins: "1", "2-3", "4-7", ..."""
    if len(run_len) == 0:
        return {}
    b = np.floor(np.log2(np.maximum(run_len, 1))).astype(np.int64)
    counts = np.bincount(b)
    out = {}
    for k, c in enumerate(counts):
        if c:
            lo, hi = 1 << k, (1 << (k + 1)) - 1
            out[str(lo) if lo == hi else f"{lo}-{hi}"] = int(c)
    return out


def trace_stats(table: pa.Table | Any, ops: Sequence[str] = ("read",), **kw: Any) -> StreamStats:
    """:func:`stream_stats` of a request table's server-ordered READs."""
    return stream_stats(reads(table, ops=ops), **kw)


def scan_reads(tables: Iterable[pa.Table], ops: Sequence[str] = ("read",),
               chunk_rows: int | None = None,
               file_ids: np.ndarray | None = None) -> Iterator[ReadStream]:
    """Time-ordered request tables (e.g. ``ingest.dataset.scan_dataset``) as a sequence of
    ReadStream chunks that share one dense file index.

    File numbers are assigned by first appearance across all chunks, exactly as
    :func:`reads` would on the concatenated trace, so a chunked replay that carries its state
    from chunk to chunk sees the same files as a one-shot replay. Each chunk's ``file_ids``
    covers every file seen so far — or, when the whole trace's numbering ``file_ids`` is known
    (a first pass), that numbering, in every chunk.
    """
    index: dict[int, int] = {} if file_ids is None else {
        int(f): k for k, f in enumerate(file_ids.tolist())}
    ids: list[int] = [] if file_ids is None else list(file_ids.tolist())
    for table in tables:
        s = reads(table, ops=ops)
        if len(s) == 0:
            continue
        mapping = np.empty(len(s.file_ids), np.int32)
        for j, fid in enumerate(s.file_ids.tolist()):
            k = index.get(fid)
            if k is None:
                if file_ids is not None:
                    raise SeqheurError(f"file id {fid} is not in the given numbering")
                k = index[fid] = len(ids)
                ids.append(fid)
            mapping[j] = k
        full = ReadStream(s.time_ns, mapping[s.file], s.offset, s.count,
                          np.asarray(ids, np.uint64), s.is_write, s.source_index)
        del s, mapping
        step = chunk_rows or len(full)
        for start in range(0, len(full), step):
            yield full.slice(start, start + step)
        del table, full  # before the next table is read
