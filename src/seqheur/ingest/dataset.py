"""Many trace files -> one partitioned Parquet dataset, read back as one time-ordered trace.

``ingest_many`` ingests each input file (any format ``read_trace`` knows) in parallel on the
chosen executor and writes ``DATASET/part-NNNNN.parquet`` (one per input, in input order)
plus ``DATASET/_ingest.json`` (the merged report, each file's report, and each part's time
range). ``scan_dataset`` yields the dataset in time order chunk by chunk: parts whose time
ranges do not overlap (hourly files) are read one at a time; parts that overlap are merged and
sorted together, so memory is bounded by the largest group of overlapping parts.
"""

from __future__ import annotations

import glob
import json
import os
from pathlib import Path
from typing import Any, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import IngestError, SeqheurError
from ..schema import IngestReport, concat_request_tables

MANIFEST = "_ingest.json"
PART = "part-{:05d}.parquet"


def expand_inputs(spec: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Files named by a directory, a glob pattern, a file, or a list of those (sorted by name
    within each directory/glob, which is time order for hourly trace files)."""
    items = [spec] if isinstance(spec, (str, os.PathLike)) else list(spec)
    out: list[Path] = []
    for item in items:
        p = Path(item)
        if p.is_dir():
            out.extend(sorted(q for q in p.iterdir() if q.is_file() and not q.name.startswith((".", "_"))))
        elif any(ch in str(item) for ch in "*?["):
            out.extend(sorted(Path(q) for q in glob.glob(str(item)) if Path(q).is_file()))
        elif p.exists():
            out.append(p)
        else:
            raise IngestError(p, "no such file, directory or matching glob")
    if not out:
        raise SeqheurError(f"no trace files in {spec}")
    return out


def is_dataset(path: str | os.PathLike[str]) -> bool:
    p = Path(path)
    return p.is_dir() and (p / MANIFEST).exists()


def _ingest_one(src: str, dst: str) -> dict[str, Any]:
    import pyarrow.parquet as pq

    from ..ingest import ingest_file

    # a capture streams into its part (memory flat in its size); the part's time range is
    # read back from its time column alone
    rows, report = ingest_file(src, dst)  # the ingest report carries the losses
    t = pq.read_table(dst, columns=["time"]).column("time").cast(pa.int64())
    lo = pc.min(t).as_py() if rows else None
    hi = pc.max(t).as_py() if rows else None
    return {"source": src, "part": Path(dst).name, "rows": rows, "min_time_ns": lo,
            "max_time_ns": hi, "report": report.to_dict()}


def ingest_many(inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
                out_dir: str | os.PathLike[str], executor=None) -> tuple[dict[str, Any], IngestReport]:
    """Ingest every input file into ``out_dir`` as a partitioned dataset. Returns
    (manifest, merged report). A file that fails is reported in the manifest, not fatal."""
    from ..executors import ExecutorSpec, run_tasks
    from ..io import write_json
    from ..progress import progress

    files = expand_inputs(inputs)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    args = [(str(f), str(out / PART.format(i))) for i, f in enumerate(files)]
    parts: list[dict[str, Any] | None] = [None] * len(files)
    errors: list[dict[str, str]] = []
    with progress(f"ingest {len(files)} files", total=len(files)) as bar:
        for i, (status, value) in run_tasks(_ingest_one, args, executor or ExecutorSpec()):
            if status == "ok":
                parts[i] = value
            else:
                errors.append({"source": str(files[i]), "error": value})
            bar.advance()
    merged = IngestReport(source=str(out), format="dataset")
    for part in parts:
        if part is not None:
            merged = merged.merge(_report_from_dict(part["report"]))
    merged.source = str(out)
    manifest = {"parts": [p for p in parts if p is not None], "errors": errors,
                "report": merged.to_dict()}
    write_json(manifest, out / MANIFEST)
    return manifest, merged


def _report_from_dict(d: dict[str, Any]) -> IngestReport:
    fields = ("records_total", "parsed", "calls", "replies", "matched", "orphan_calls",
              "orphan_replies", "retransmissions", "rows")
    return IngestReport(source=d.get("source", ""), format=d.get("format", ""),
                        skipped=dict(d.get("skipped", {})), **{k: int(d.get(k, 0)) for k in fields})


def read_manifest(path: str | os.PathLike[str]) -> dict[str, Any]:
    p = Path(path) / MANIFEST
    try:
        return json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise IngestError(p, f"not a seqheur dataset manifest ({exc})") from exc


def _groups(parts: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Parts grouped so that groups are disjoint and ordered in time."""
    timed = sorted((p for p in parts if p["rows"]), key=lambda p: (p["min_time_ns"], p["part"]))
    groups: list[list[dict[str, Any]]] = []
    hi = None
    for p in timed:
        if groups and hi is not None and p["min_time_ns"] <= hi:
            groups[-1].append(p)
            hi = max(hi, p["max_time_ns"])
        else:
            groups.append([p])
            hi = p["max_time_ns"]
    return groups


def scan_dataset(path: str | os.PathLike[str], columns: Sequence[str] | None = None,
                 ops: Sequence[str] | None = None) -> Iterator[pa.Table]:
    """The dataset's request tables in time order, one group of overlapping parts at a time.

    ``columns`` (must include ``time``) and ``ops`` read only those columns and the rows of
    those ops: a replay needs six of the request table's columns and its READ rows, a small
    share of the bytes of a part (memory follows what is read).
    """
    import pyarrow.parquet as pq

    from ..io import read_request_columns
    from ..schema import conform

    root = Path(path)
    manifest = read_manifest(root)
    if columns is not None and "time" not in columns:
        raise SeqheurError("scan_dataset: columns must include 'time' (parts are merged by it)")

    def load(part: str) -> pa.Table:
        if columns is None:  # whole rows, conformed to the current request schema
            filters = None if ops is None else [("op", "in", list(ops))]
            return conform(pq.read_table(root / part, filters=filters))
        return read_request_columns(root / part, columns, ops)

    for group in _groups(manifest["parts"]):
        tables = [load(p["part"]) for p in group]
        table = concat_request_tables(tables)
        if len(group) > 1:
            table = table.take(pc.sort_indices(table, sort_keys=[("time", "ascending")]))
        del tables
        yield table
        del table  # before the next group is read: one group in memory at a time


def read_dataset(path: str | os.PathLike[str]) -> tuple[pa.Table, IngestReport]:
    """The whole dataset as one time-ordered request table."""
    manifest = read_manifest(path)
    table = concat_request_tables(list(scan_dataset(path)))
    report = _report_from_dict(manifest["report"])
    report.source = str(path)
    return table, report
