"""Trace readers. ``read_trace`` sniffs the format by content (after decompression) and
dispatches to the reader of that format; each reader returns ``(table, IngestReport)``.

Adding a format: a module here with ``read_X(path) -> (pa.Table, IngestReport)`` and a
``sniff(head: bytes, name: str) -> bool``, plus one line in ``FORMATS``.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..errors import IngestError
from ..io import peek_input
from ..schema import IngestReport

# format name -> (module, reader function[, sniff function, default "sniff"]).
# Order matters: the first sniff that matches wins.
FORMATS: dict[str, tuple[str, ...]] = {
    "pcap": ("pcap", "read_pcap"),
    "nfsdump": ("nfsdump", "read_nfsdump"),
    "parquet": ("generic", "read_table", "sniff_parquet"),
    "csv": ("generic", "read_csv", "sniff_csv"),
}


def sniff_format(path: str | os.PathLike[str]) -> str:
    """Name of the trace format of ``path`` (see FORMATS), judged by content."""
    p = Path(path)
    if not p.exists():
        raise IngestError(p, "no such file")
    if p.is_dir():
        from .dataset import is_dataset

        if is_dataset(p):
            return "dataset"
        raise IngestError(p, "is a directory but not a seqheur dataset; make one with "
                             "`seqheur ingest DIR -o DATASET/`")
    if p.stat().st_size == 0:
        raise IngestError(p, "is empty (zero bytes)")
    head = peek_input(p, 8192)
    if not head:
        from ..io import sniff_compression

        with open(p, "rb") as fh:
            kind = sniff_compression(fh.read(8))
        raise IngestError(p, f"is empty (0 bytes after {kind} decompression)" if kind else
                          "is empty")
    if len(head) < 24 and head[:4] in _CAPTURE_MAGIC:
        raise IngestError(p, f"a capture cut short in its file header ({len(head)} of "
                             f"{'at least 28' if head[:4] == _PCAPNG_MAGIC else 24} bytes)")
    for fmt, (mod_name, _, *sniffer) in FORMATS.items():
        try:
            mod = importlib.import_module(f".{mod_name}", __name__)
        except ModuleNotFoundError:  # a reader not built yet
            continue
        sniff = getattr(mod, sniffer[0] if sniffer else "sniff", None)
        if sniff is not None and sniff(head, p.name):
            return fmt
    raise IngestError(p, "unrecognised trace format (expected pcap/pcapng, nfsdump text, "
                         "Parquet or CSV with columns time,file,offset,count)")


_PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
# pcap (either byte order, microsecond or nanosecond) and pcapng section header magics
_CAPTURE_MAGIC = {b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1",
                  b"\xa1\xb2\x3c\x4d", _PCAPNG_MAGIC}


def read_trace(path: str | os.PathLike[str], format: str | None = None,
               warn_loss: bool = True, **kwargs: Any) -> tuple[pa.Table, IngestReport]:
    """Read any supported trace into the request table. ``format`` overrides sniffing.

    A trace read with losses (reading stopped early, records skipped for a reason that loses
    data) raises a :class:`~seqheur.errors.TraceLossWarning` saying what was lost, unless
    ``warn_loss=False`` (a caller that reports the losses itself, as ``seqheur ingest``)."""
    fmt = format or sniff_format(path)
    if fmt == "dataset":
        from .dataset import read_dataset

        return read_dataset(path)
    if fmt not in FORMATS:
        raise IngestError(path, f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    mod_name, fn = FORMATS[fmt][:2]
    reader = getattr(importlib.import_module(f".{mod_name}", __name__), fn)
    table, report = reader(path, **kwargs)
    report.check()
    loss = report.loss_summary() if warn_loss else None
    if loss:  # nothing lost silently
        import warnings

        from ..errors import TraceLossWarning

        warnings.warn(TraceLossWarning(loss), stacklevel=2)
    return table, report


def ingest_file(path: str | os.PathLike[str], output: str | os.PathLike[str],
                format: str | None = None) -> tuple[int, IngestReport]:
    """Read one trace and write its request table to ``output`` (Parquet, atomically): the
    rows ``read_trace`` returns, in the same order. Returns (rows, report); losses are in the
    report, not warned (the caller reports them, as ``seqheur ingest`` does).

    A capture is streamed batch by batch into the Parquet file (one row group or more per
    batch), so memory stays flat in the capture size and no whole-table copy is made; other
    formats are read whole (nfsdump re-sorts calls carried across its chunks at the end)."""
    fmt = format or sniff_format(path)
    if fmt != "pcap":
        from ..io import write_parquet

        table, report = read_trace(path, format=fmt, warn_loss=False)
        write_parquet(table, output)
        return table.num_rows, report
    from ..io import ParquetSink
    from ..schema import REQUEST_SCHEMA, empty_request_table
    from .pcap import scan_pcap

    # Parquet dictionary pages only for the columns Arrow holds as dictionaries (endpoints,
    # transport, op): the others (times, offsets, xids, handles) are mostly distinct, and
    # trying a dictionary on them made writing 1.3x slower and the file 6% larger (450 k
    # rows, zstd). zstd over snappy: files 2.3x smaller for 1.4x the write time (0.14 vs
    # 0.10 s for those rows, whose capture takes ~1.1 s to decode).
    def open_sink() -> ParquetSink:
        return ParquetSink(output, REQUEST_SCHEMA, compression="zstd", use_dictionary=[
            f.name for f in REQUEST_SCHEMA if pa.types.is_dictionary(f.type)])

    scan = scan_pcap(path)
    sink: ParquetSink | None = None
    try:
        for batch in scan:
            # opened at the first batch: a capture that fails at its header leaves no file
            sink = sink or open_sink()
            sink.write(batch)
        report = scan.report.check()
        if sink is None:
            sink = open_sink()
            sink.write(empty_request_table())
        sink.close()
    except BaseException:
        if sink is not None:
            sink.abort()
        raise
    return sink.rows, report
