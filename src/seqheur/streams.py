"""Request table -> server-ordered read streams, and per-file stream statistics.

A :class:`ReadStream` is what replay consumes: equal-length numpy arrays in the order the
server saw the requests. Statistics (sequential and reordered fractions, run lengths,
interleaved sub-streams) are defined in ``docs/formats.md`` §Stream statistics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

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
        f = np.asarray(file)
        uniq, first = np.unique(f, return_index=True)
        order = np.argsort(first, kind="stable")
        dense_of = np.empty(len(uniq), np.int32)
        dense_of[order] = np.arange(len(uniq), dtype=np.int32)
        dense = dense_of[np.searchsorted(uniq, f)] if len(f) else np.zeros(0, np.int32)
        off = np.asarray(offset, dtype=np.int64)
        cnt = np.broadcast_to(np.asarray(count, dtype=np.int32), off.shape).copy()
        t = np.arange(len(off), dtype=np.int64) if time_ns is None else np.asarray(time_ns, np.int64)
        return cls(t, dense.astype(np.int32), off, cnt, uniq[order].astype(np.uint64))


def reads(table: pa.Table | Any, ops: Sequence[str] = ("read",), order: str = "server") -> ReadStream:
    """Build the :class:`ReadStream` of a request table.

    Rows whose op is in ``ops`` and that have a file_id, offset and count are kept. ``order``
    is "server" (by call arrival time, ties by source_index) or "source" (as stored).
    """
    if not isinstance(table, pa.Table):
        table = table.to_arrow()
    op_col = table.column("op")
    if pa.types.is_dictionary(op_col.type):
        op_col = op_col.cast(pa.string())
    mask = pc.is_in(op_col, value_set=pa.array(list(ops), pa.string()))
    for name in ("file_id", "offset", "count"):
        mask = pc.and_(mask, pc.is_valid(table.column(name)))
    mask = mask.fill_null(False) if hasattr(mask, "fill_null") else mask
    sub = table.select(["time", "file_id", "offset", "count", "op", "source_index"]).filter(mask)
    time_ns = _ns(sub.column("time"))
    src = sub.column("source_index").to_numpy().astype(np.uint64)
    if order == "server":
        perm = np.lexsort((src, time_ns))
    elif order == "source":
        perm = np.arange(len(time_ns))
    else:
        raise SeqheurError(f"order must be 'server' or 'source', not {order!r}")
    fid = sub.column("file_id").to_numpy().astype(np.uint64)[perm]
    offset = sub.column("offset").to_numpy().astype(np.int64)[perm]
    count = sub.column("count").to_numpy().astype(np.int64)
    count = np.minimum(count, np.iinfo(np.int32).max).astype(np.int32)[perm]
    dense, file_ids = dense_index(fid)
    is_write = None
    if any(o != "read" for o in ops):
        opv = sub.column("op")
        opv = opv.cast(pa.string()) if pa.types.is_dictionary(opv.type) else opv
        is_write = pc.equal(opv, "write").to_numpy(zero_copy_only=False)[perm]
    return ReadStream(time_ns[perm], dense, offset, count, file_ids, is_write, src[perm])


def dense_index(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(dense int32 index by first appearance, the keys in that order)."""
    if len(keys) == 0:
        return np.zeros(0, np.int32), np.zeros(0, keys.dtype)
    uniq, first, inv = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(uniq), np.int32)
    rank[order] = np.arange(len(uniq), dtype=np.int32)
    return rank[inv.ravel()], uniq[order]


def _ns(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    return col.cast(pa.int64()).to_numpy(zero_copy_only=False).astype(np.int64)
