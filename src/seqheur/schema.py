"""The request table: one row per NFS operation, the contract between ingest and the rest.

Columns, types and meanings are documented in ``docs/formats.md``. Readers
build tables with :func:`build_request_table`, which casts to exactly these types; anything
else that produces a request table can be checked with :func:`validate`.

``file_id`` is the one documented 64-bit hash of a file handle's bytes, used everywhere:
the first 8 bytes, little-endian, of BLAKE2b with an 8-byte digest (``file_id_of``).
``fh_crc32`` is zlib's CRC-32 of the same bytes, which equals tshark's ``nfs.fh.hash``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import zlib
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import numpy as np
import pyarrow as pa

from .errors import SchemaError

_TS = pa.timestamp("ns", tz="UTC")
_DICT = pa.dictionary(pa.int32(), pa.string())

REQUEST_SCHEMA = pa.schema(
    [
        pa.field("time", _TS, nullable=False),
        pa.field("reply_time", _TS),
        pa.field("client", _DICT),
        pa.field("server", _DICT),
        pa.field("transport", _DICT),
        pa.field("xid", pa.uint32()),
        pa.field("vers", pa.uint8()),
        pa.field("minor", pa.uint8()),
        pa.field("op", _DICT),
        pa.field("fh", pa.binary()),
        pa.field("file_id", pa.uint64()),
        pa.field("fh_crc32", pa.uint32()),
        pa.field("offset", pa.uint64()),
        pa.field("count", pa.uint32()),
        pa.field("ret_count", pa.uint32()),
        pa.field("eof", pa.bool_()),
        pa.field("status", pa.uint32()),
        pa.field("file_size", pa.uint64()),
        pa.field("source_index", pa.uint64(), nullable=False),
    ]
)
COLUMNS: tuple[str, ...] = tuple(REQUEST_SCHEMA.names)


def file_id_of(fh: bytes) -> int:
    """The documented 64-bit file id of a file handle: BLAKE2b-64 of its bytes, little-endian."""
    return int.from_bytes(hashlib.blake2b(fh, digest_size=8).digest(), "little")


def crc32_of(fh: bytes) -> int:
    """CRC-32 of the file-handle bytes (tshark's ``nfs.fh.hash``)."""
    return zlib.crc32(fh) & 0xFFFFFFFF


def fh_columns(fh: pa.Array | pa.ChunkedArray) -> tuple[pa.Array, pa.Array]:
    """(file_id, fh_crc32) arrays for a binary fh column, hashing each distinct handle once."""
    if isinstance(fh, pa.ChunkedArray):
        fh = fh.combine_chunks()
    encoded = fh.dictionary_encode()
    uniques = encoded.dictionary.to_pylist()
    ids = np.fromiter((file_id_of(u) for u in uniques), dtype=np.uint64, count=len(uniques))
    crcs = np.fromiter((crc32_of(u) for u in uniques), dtype=np.uint32, count=len(uniques))
    idx = encoded.indices
    valid = idx.is_valid()
    take_idx = idx.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    mask = ~valid.to_numpy(zero_copy_only=False) if idx.null_count else None
    file_id = pa.array(ids[take_idx] if len(ids) else np.zeros(len(idx), np.uint64), mask=mask,
                       type=pa.uint64())
    fh_crc = pa.array(crcs[take_idx] if len(crcs) else np.zeros(len(idx), np.uint32), mask=mask,
                      type=pa.uint32())
    return file_id, fh_crc


def build_request_table(columns: Mapping[str, Any], n: int | None = None,
                        extra: Mapping[str, Any] | None = None) -> pa.Table:
    """Make a request table from column values (numpy arrays, lists or Arrow arrays).

    Missing columns become all-null; ``file_id`` and ``fh_crc32`` are computed from ``fh``
    when not given. Times may be int64 nanoseconds since the epoch.
    """
    if n is None:
        n = next((len(v) for v in columns.values() if v is not None), 0)
    arrays = []
    for f in REQUEST_SCHEMA:
        value = columns.get(f.name)
        if value is None and f.name in ("file_id", "fh_crc32") and columns.get("fh") is not None:
            fid, crc = fh_columns(_to_arrow(columns["fh"], pa.binary()))
            value = fid if f.name == "file_id" else crc
        if value is None:
            if not f.nullable:
                raise SchemaError(f.name, "is required and was not given")
            arrays.append(pa.nulls(n, f.type))
            continue
        arr = _to_arrow(value, f.type)
        if len(arr) != n:
            raise SchemaError(f.name, f"has {len(arr)} values, expected {n}")
        arrays.append(arr)
    table = pa.Table.from_arrays(arrays, schema=REQUEST_SCHEMA)
    for name, value in (extra or {}).items():
        table = table.append_column(name, _to_arrow(value, None))
    return table


def _to_arrow(value: Any, typ: pa.DataType | None) -> pa.Array | pa.ChunkedArray:
    if isinstance(value, pa.ChunkedArray):
        if value.type == typ:  # kept in chunks: a binary column may hold more than 2 GiB
            return value
        value = value.combine_chunks()
    if isinstance(value, pa.Array):
        arr = value
    elif isinstance(value, np.ndarray) and typ is not None and pa.types.is_timestamp(typ):
        arr = pa.array(value.astype(np.int64), type=pa.int64())
    elif typ is not None and pa.types.is_dictionary(typ):
        arr = pa.array(value, type=pa.string()) if not isinstance(value, pa.Array) else value
    else:
        arr = pa.array(value, type=typ) if typ is not None and not pa.types.is_timestamp(typ) \
            else pa.array(value)
    if typ is None:
        return arr
    if pa.types.is_timestamp(typ) and pa.types.is_integer(arr.type):
        # (no cast when the integers are int64 already: a cast imports pyarrow.compute, a
        # measurable share of a small capture's `seqheur ingest`)
        if arr.type != pa.int64():
            arr = arr.cast(pa.int64())
        arr = arr.view(typ)
    if pa.types.is_dictionary(typ) and not pa.types.is_dictionary(arr.type):
        arr = arr.cast(pa.string()).dictionary_encode()
        if arr.type != typ:
            arr = arr.cast(typ)
    if arr.type != typ:
        arr = arr.cast(typ)
    return arr


def request_subschema(columns: Iterable[str]) -> pa.Schema:
    """The request schema's fields ``columns``, in that order (to read or cast a projection)."""
    return pa.schema([REQUEST_SCHEMA.field(c) for c in columns])


def empty_request_table() -> pa.Table:
    return REQUEST_SCHEMA.empty_table()


def validate(table: pa.Table) -> pa.Table:
    """Check ``table`` against the request-table contract; raise SchemaError naming the
    first offending column. Extra columns after the contract's are allowed."""
    names = table.column_names
    for i, f in enumerate(REQUEST_SCHEMA):
        if f.name not in names:
            raise SchemaError(f.name, "is missing")
        got = table.schema.field(f.name).type
        if not _same_type(got, f.type):
            raise SchemaError(f.name, f"has type {got}, expected {f.type}")
        if not f.nullable and table.column(f.name).null_count:
            raise SchemaError(f.name, f"has {table.column(f.name).null_count} nulls; it may have none")
    return table


def _same_type(got: pa.DataType, want: pa.DataType) -> bool:
    if pa.types.is_dictionary(want):
        return pa.types.is_dictionary(got) and (
            pa.types.is_string(got.value_type) or pa.types.is_large_string(got.value_type))
    if pa.types.is_timestamp(want):
        return pa.types.is_timestamp(got) and got.unit == want.unit and got.tz in ("UTC", "+00:00")
    return got == want


def conform(table: pa.Table) -> pa.Table:
    """Cast a table that matches the contract up to representation to the exact schema: what
    polars or another tool writes back after filtering a trace (``large_binary``,
    ``large_string``, string views, plain strings for dictionary columns, other integer widths,
    other timestamp units in UTC). Values that do not fit raise SchemaError naming the column."""
    names = table.column_names
    cols = []
    for f in REQUEST_SCHEMA:
        if f.name not in names:
            raise SchemaError(f.name, "is missing")
        col = table.column(f.name)
        got = col.type
        if got != f.type:
            if not _castable(got, f.type):
                raise SchemaError(f.name, f"has type {got}, expected {f.type} (or a type that "
                                          f"casts to it without loss)")
            try:
                col = col.cast(f.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SchemaError(f.name, f"cannot be cast from {got} to {f.type}: {exc}") from None
        cols.append(col)
    out = validate(pa.Table.from_arrays(cols, schema=REQUEST_SCHEMA))
    for name in names:
        if name not in COLUMNS:
            out = out.append_column(table.schema.field(name), table.column(name))
    return out


def _castable(got: pa.DataType, want: pa.DataType) -> bool:
    """Whether a column of type ``got`` holds the same values as ``want`` in another form."""
    t = pa.types
    if _same_type(got, want):
        return True
    stringy = (t.is_string(got) or t.is_large_string(got)
               or getattr(t, "is_string_view", lambda _: False)(got))
    if t.is_dictionary(want):
        return stringy or (t.is_dictionary(got) and _castable(got.value_type, pa.string()))
    if t.is_timestamp(want):
        return t.is_timestamp(got) and got.tz in ("UTC", "+00:00", "Etc/UTC")
    if t.is_binary(want):
        return (t.is_binary(got) or t.is_large_binary(got) or t.is_fixed_size_binary(got)
                or getattr(t, "is_binary_view", lambda _: False)(got))
    if t.is_string(want):
        return stringy
    if t.is_integer(want):
        return t.is_integer(got)
    if t.is_floating(want):
        return t.is_floating(got) or t.is_integer(got)
    return False


@dataclass
class IngestReport:
    """What a reader did with every record: parsed + sum(skipped) == records_total, always."""

    source: str = ""
    format: str = ""
    records_total: int = 0
    parsed: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    calls: int = 0
    replies: int = 0
    matched: int = 0
    orphan_calls: int = 0
    orphan_replies: int = 0
    retransmissions: int = 0
    rows: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    # first few skipped records, for the user: (record number, reason, detail)
    examples: list[tuple[int, str, str]] = field(default_factory=list)

    MAX_EXAMPLES = 20
    # Skip reasons that lose nothing a replay needs: records that by nature carry no NFS call
    # or reply (pure ACKs, other protocols, retransmitted copies, blank and diagnostic lines).
    # Every other reason is data lost.
    NOT_LOSS = frozenset({"not_ip", "not_tcp_udp", "udp_not_rpc", "tcp_no_payload",
                          "tcp_retransmission", "blank_line", "diagnostic_line"})

    def lost(self) -> dict[str, int]:
        """Records skipped for reasons that lose data, by reason."""
        return {k: n for k, n in self.skipped.items() if k not in self.NOT_LOSS}

    def stopped_line(self, source: str | None = None) -> str | None:
        """The human line for a reader that stopped early (file, where, why, how much was
        left), or None when it read to the end."""
        stopped = self.extra.get("stopped")
        if not stopped:
            return None
        at, unread = self.extra.get("stopped_at_byte"), self.extra.get("bytes_unread")
        where = f" at byte {at:,}" if at is not None else ""
        left = (f"; {unread:,} bytes left unread" if unread is not None else
                "; the rest of the file could not be read (damaged compressed stream)")
        return f"{source or self.source}: reading stopped{where}: {stopped}{left}"

    def loss_summary(self) -> str | None:
        """One line saying what was lost (an early stop, records skipped for a lossy reason),
        or None when nothing was."""
        parts = [self.stopped_line()] if self.extra.get("stopped") else []
        lost = self.lost()
        if lost:
            parts.append(f"{self.source}: skipped " + ", ".join(
                f"{n} {k}" for k, n in sorted(lost.items())))
        return "; ".join(parts) if parts else None

    def skip(self, reason: str, record: int | None = None, detail: str = "", n: int = 1) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + n
        if record is not None and len(self.examples) < self.MAX_EXAMPLES:
            self.examples.append((int(record), reason, detail))

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())

    def check(self) -> "IngestReport":
        """Raise AssertionError if a record went unaccounted."""
        if self.parsed + self.skipped_total != self.records_total:
            raise AssertionError(
                f"{self.source}: parsed {self.parsed} + skipped {self.skipped_total} "
                f"!= records_total {self.records_total}")
        return self

    def merge(self, other: "IngestReport") -> "IngestReport":
        """Sum of two reports (e.g. hourly files of one trace)."""
        out = dataclasses.replace(self, skipped=dict(self.skipped), extra=dict(self.extra),
                                  examples=list(self.examples))
        for name in ("records_total", "parsed", "calls", "replies", "matched", "orphan_calls",
                     "orphan_replies", "retransmissions", "rows"):
            setattr(out, name, getattr(self, name) + getattr(other, name))
        for k, v in other.skipped.items():
            out.skipped[k] = out.skipped.get(k, 0) + v
        for k, v in other.extra.items():
            if isinstance(v, (int, float)) and isinstance(out.extra.get(k, 0), (int, float)):
                out.extra[k] = out.extra.get(k, 0) + v
        out.examples = (out.examples + other.examples)[: self.MAX_EXAMPLES]
        out.source = self.source if self.source == other.source else f"{self.source}, {other.source}"
        return out

    def to_dict(self) -> dict[str, Any]:
        d = {
            "source": self.source,
            "format": self.format,
            "records_total": self.records_total,
            "parsed": self.parsed,
            "skipped": dict(sorted(self.skipped.items())),
            "calls": self.calls,
            "replies": self.replies,
            "matched": self.matched,
            "orphan_calls": self.orphan_calls,
            "orphan_replies": self.orphan_replies,
            "retransmissions": self.retransmissions,
            "rows": self.rows,
        }
        d.update(self.extra)
        if self.examples:
            d["skipped_examples"] = [
                {"record": r, "reason": why, "detail": detail} for r, why, detail in self.examples]
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


def concat_request_tables(tables: Iterable[pa.Table]) -> pa.Table:
    """Concatenate request tables, unifying their dictionaries."""
    tables = list(tables)
    if not tables:
        return empty_request_table()
    return pa.concat_tables(tables, promote_options="default").unify_dictionaries()
