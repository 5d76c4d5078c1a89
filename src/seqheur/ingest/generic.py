"""Simple traces: CSV or Parquet with columns ``time, file, offset, count`` (``op`` optional).

``time`` is seconds (float) or an Arrow/ISO timestamp; ``file`` is any identifier (its text
becomes the file handle bytes, so ``file_id`` follows the one documented hash). A Parquet file
that already is a request table is returned as is (validated).
"""

from __future__ import annotations

import csv
import os

import numpy as np
import pyarrow as pa

from ..errors import IngestError, SchemaError
from ..io import open_text
from ..schema import COLUMNS, IngestReport, build_request_table, conform

REQUIRED = ("time", "file", "offset", "count")
PARQUET_MAGIC = b"PAR1"


def sniff_parquet(head: bytes, name: str) -> bool:
    return head.startswith(PARQUET_MAGIC)


def sniff_csv(head: bytes, name: str) -> bool:
    first = head.split(b"\n", 1)[0].decode("utf-8", "replace").lower()
    cols = [c.strip() for c in first.split(",")]
    return all(c in cols for c in REQUIRED)


def read_table(path: str | os.PathLike[str]) -> tuple[pa.Table, IngestReport]:
    """A Parquet request table, or a Parquet simple trace (time, file, offset, count[, op])."""
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise IngestError(path, f"not a readable Parquet file ({exc})") from exc
    report = IngestReport(source=str(path), format="parquet", records_total=table.num_rows)
    if all(c in table.column_names for c in COLUMNS):
        try:
            table = conform(table)
        except SchemaError as exc:
            raise IngestError(path, str(exc), column=exc.column) from exc
        report.parsed = report.rows = table.num_rows
        return table, report
    missing = [c for c in REQUIRED if c not in table.column_names]
    if missing:
        raise IngestError(path, f"missing column(s) {', '.join(missing)}; a simple trace needs "
                                f"{', '.join(REQUIRED)} (op optional)", column=missing[0])
    cols = {c: table.column(c).to_pylist() for c in REQUIRED + (("op",) if "op" in table.column_names else ())}
    time_type = table.schema.field("time").type
    if pa.types.is_timestamp(time_type):
        # exact nanoseconds, not float seconds
        cols["time"] = table.column("time").cast(pa.timestamp("ns")).cast(pa.int64()).to_pylist()
        return _simple(path, cols, report, kind="row", time_scale=1)
    return _simple(path, cols, report, kind="row")


def read_csv(path: str | os.PathLike[str]) -> tuple[pa.Table, IngestReport]:
    """A CSV simple trace with a header line naming time, file, offset, count (op optional).

    A malformed value is an error naming the file, the line and the column: a simple trace is
    written by a person or a script, so a bad value means the trace is wrong, not damaged.
    """
    with open_text(path) as f:
        reader = csv.reader(f)
        try:
            header = [h.strip().lower() for h in next(reader)]
        except StopIteration:
            raise IngestError(path, "is empty") from None
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            raise IngestError(path, f"header lacks column(s) {', '.join(missing)}; need "
                                    f"{', '.join(REQUIRED)} (op optional)", record=1, kind="line",
                              column=missing[0])
        idx = {c: header.index(c) for c in REQUIRED + (("op",) if "op" in header else ())}
        cols: dict[str, list] = {c: [] for c in idx}
        lines: list[int] = []
        report = IngestReport(source=str(path), format="csv")
        for row in reader:
            line = reader.line_num
            if not row or all(not c.strip() for c in row):
                report.records_total += 1
                report.skip("blank_line", line)
                continue
            report.records_total += 1
            if len(row) < len(header):
                col = header[len(row)]
                raise IngestError(path, f"has {len(row)} fields, header has {len(header)}",
                                  record=line, kind="line", column=col)
            for c, i in idx.items():
                cols[c].append(row[i].strip())
            lines.append(line)
    return _simple(path, cols, report, kind="line", lines=lines)


def _simple(path, cols: dict[str, list], report: IngestReport, kind: str,
            lines: list[int] | None = None, time_scale: float = 1e9) -> tuple[pa.Table, IngestReport]:
    n = len(cols["time"])
    lines = lines if lines is not None else list(range(1, n + 1))
    time_ns = np.empty(n, np.int64)
    offset = np.empty(n, np.uint64)
    count = np.empty(n, np.uint32)
    for i in range(n):
        time_ns[i] = _number(path, cols["time"][i], lines[i], kind, "time", scale=time_scale)
        offset[i] = _number(path, cols["offset"][i], lines[i], kind, "offset", integer=True,
                            hi=2**64 - 1)
        count[i] = _number(path, cols["count"][i], lines[i], kind, "count", integer=True,
                           hi=2**32 - 1)
    fh = [str(v).encode() for v in cols["file"]]
    op = [str(v).lower() or "read" for v in cols["op"]] if "op" in cols else ["read"] * n
    table = build_request_table({
        "time": time_ns, "op": op, "fh": fh, "offset": offset, "count": count,
        "source_index": np.asarray(lines, np.uint64)}, n)
    report.parsed = report.rows = n
    report.check()
    return table, report


def _number(path, value, record: int, kind: str, column: str, *, scale: float = 1.0,
            integer: bool = False, hi: int | None = None) -> int:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        v = int(value) * int(scale)
    elif isinstance(value, float):
        v = int(round(value * scale)) if not integer else int(value)
    else:
        text = str(value).strip() if value is not None else ""
        try:
            if integer:
                v = int(text, 16) if text.lower().startswith("0x") else int(text)
            else:
                v = int(round(float(text) * scale))
        except ValueError:
            raise IngestError(path, f"{text!r} is not a{'n integer' if integer else ' number'}",
                              record=record, kind=kind, column=column) from None
    if v < 0 or (hi is not None and v > hi):
        raise IngestError(path, f"{v} is out of range", record=record, kind=kind, column=column)
    return v
