"""pcap / pcapng captures of NFS (v2, v3, v4.x) over ONC RPC on UDP or TCP -> request table.

``read_pcap(path)`` returns ``(table, IngestReport)``; ``scan_pcap(path)`` yields the same rows
as Arrow tables chunk by chunk (memory flat in the capture size) and exposes the report once
exhausted. Captures may be gzip/bzip2/xz/zstd-compressed (detected by content).

Every frame is accounted for: ``report.parsed`` (frames that carried RPC) plus
``report.skipped`` (reason -> frames) equals ``report.records_total``. RPC is recognised by
content, not port. Layout and field meanings: docs/formats.md, "pcap and pcapng captures".
"""

from __future__ import annotations

import os
from typing import Iterator

import pyarrow as pa

from ...schema import IngestReport, concat_request_tables, empty_request_table
from . import container as _ct

__all__ = ["read_pcap", "scan_pcap", "sniff", "PcapScan"]


def sniff(head: bytes, name: str = "") -> bool:
    """True if ``head`` (first decompressed bytes of a file) starts a pcap or pcapng capture."""
    return _ct.parse_pcap_header(head) is not None or _ct.is_pcapng(head)


class PcapScan:
    """Iterator of request-table batches from one capture; ``report`` is final once exhausted.

    >>> scan = scan_pcap("trace.pcap.gz")
    >>> for batch in scan: ...
    >>> scan.report.to_dict()
    """

    def __init__(self, path: str | os.PathLike[str], chunk_bytes: int | None = None) -> None:
        from ._engine import CHUNK, Decoder

        self._dec = Decoder(path, chunk_bytes or CHUNK)
        self._it: Iterator[pa.Table] | None = None
        self.done = False

    @property
    def report(self) -> IngestReport:
        return self._dec.report

    def __iter__(self) -> "PcapScan":
        if self._it is None:
            self._it = self._dec.batches()
        return self

    def __next__(self) -> pa.Table:
        if self._it is None:
            self._it = self._dec.batches()
        try:
            return next(self._it)
        except StopIteration:
            self.done = True
            raise


def scan_pcap(path: str | os.PathLike[str], chunk_bytes: int | None = None) -> PcapScan:
    """Decode a capture chunk by chunk: iterate for Arrow tables, then read ``.report``."""
    return PcapScan(path, chunk_bytes)


def read_pcap(path: str | os.PathLike[str], chunk_bytes: int | None = None
              ) -> tuple[pa.Table, IngestReport]:
    """Decode a whole capture into one request table and its IngestReport."""
    scan = scan_pcap(path, chunk_bytes)
    tables = list(scan)
    table = concat_request_tables(tables) if tables else empty_request_table()
    return table, scan.report.check()
