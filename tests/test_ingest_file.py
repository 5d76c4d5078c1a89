"""ingest_file (what `seqheur ingest` runs for one trace): a capture streamed batch by batch
into Parquet gives the rows and report ``read_trace`` gives, in the same order; a capture that
fails leaves no output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from seqheur.errors import IngestError
from seqheur.ingest import ingest_file, read_trace
from seqheur.ingest.pcap import _engine
from seqheur.ingest.pcap import synth as S
from seqheur.schema import REQUEST_SCHEMA, fh_columns

TRACES = Path(__file__).resolve().parent.parent / "traces"


def _decoded(table: pa.Table) -> pa.Table:
    """Dictionary columns as their values (batches written apart keep their own dictionaries)."""
    cols = [c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c
            for c in table.columns]
    return pa.table(cols, names=table.column_names).combine_chunks()


def _same_as_read_trace(src: Path, out: Path) -> int:
    rows, report = ingest_file(src, out)
    table, want = read_trace(src, warn_loss=False)
    got = pq.read_table(out)
    assert got.schema == REQUEST_SCHEMA
    assert rows == got.num_rows == table.num_rows
    assert _decoded(got).equals(_decoded(table))
    assert report.to_dict() == want.to_dict()
    # the decoder hashes each distinct handle of a batch once: the same ids as hashing every row
    file_id, crc = fh_columns(got.column("fh"))
    assert got.column("file_id").combine_chunks().equals(file_id)
    assert got.column("fh_crc32").combine_chunks().equals(crc)
    return rows


@pytest.mark.parametrize("name", sorted(p.name for p in TRACES.glob("*.pcap.gz")))
def test_bundled_traces_stream_to_the_rows_read_trace_gives(name, tmp_path):
    assert _same_as_read_trace(TRACES / name, tmp_path / "t.parquet") > 0


def test_many_batches_stream_in_order(tmp_path, monkeypatch):
    cap = tmp_path / "c.pcap"
    S.generate_read_capture(cap, S.ReadCaptureParams(target_bytes=2 << 20, udp_read=1024,
                                                     tcp_read=2048))
    monkeypatch.setattr(_engine, "CHUNK", 1 << 16)  # 64 KiB chunks,
    monkeypatch.setattr(_engine, "BATCH_ROWS", 100)  # a batch from nearly every one
    rows = _same_as_read_trace(cap, tmp_path / "t.parquet")
    assert pq.ParquetFile(tmp_path / "t.parquet").metadata.num_row_groups > 3
    assert rows > 1000


def test_a_handle_pool_at_its_least_headroom_grows_to_the_same_rows(tmp_path, monkeypatch):
    """The decoder's handle pool starts with room to spare; started at the frame kernel's
    least headroom it grows at the first handle stored, and the rows are the same."""
    src = TRACES / "demo-v3.pcap.gz"
    want = ingest_file(src, tmp_path / "want.parquet")
    alloc, grow, sizes = _engine.Decoder._alloc, _engine.Decoder._grow, []

    def least(self):
        alloc(self)
        self.fh = np.zeros(_engine.HR_FH * 2, np.uint8)

    def grow_noted(self):
        before = self.fh.shape[0]
        grow(self)
        sizes.append((before, self.fh.shape[0]))

    monkeypatch.setattr(_engine.Decoder, "_alloc", least)
    monkeypatch.setattr(_engine.Decoder, "_grow", grow_noted)
    got = ingest_file(src, tmp_path / "got.parquet")
    assert (_engine.HR_FH * 2, _engine.HR_FH * 4) in sizes
    assert got[0] == want[0] > 0 and got[1].to_dict() == want[1].to_dict()
    assert pq.read_table(tmp_path / "got.parquet").equals(pq.read_table(tmp_path / "want.parquet"))


def test_a_capture_with_no_rows_writes_an_empty_table(tmp_path):
    cap = tmp_path / "empty.pcap"
    with open(cap, "wb") as f:
        S.CaptureWriter(f)
    assert _same_as_read_trace(cap, tmp_path / "t.parquet") == 0


def test_a_capture_that_fails_leaves_no_output(tmp_path):
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"\xd4\xc3\xb2\xa1" + b"\x00" * 10)  # pcap magic, header cut short
    out = tmp_path / "t.parquet"
    with pytest.raises(IngestError):
        ingest_file(bad, out, format="pcap")
    assert list(tmp_path.iterdir()) == [bad]


def test_cached_kernels_load_without_numba_s_target_refresh(tmp_path):
    """A fresh process whose pcap kernels are cached loads them without numba's target
    refresh (which imports every feature numba can compile, numba.np.linalg among them: a
    fifth of a small capture's `seqheur ingest`) and, the kernels run per batch allocating
    nothing, without numba's array module; nor does it import dateutil (which Arrow's type
    inference of a list of strings imports); and it writes the rows read_trace gives."""
    src = TRACES / "demo-v3.pcap.gz"
    out = tmp_path / "t.parquet"
    code = ("import sys; from seqheur.ingest import ingest_file; "
            f"ingest_file({str(src)!r}, {str(out)!r}); "
            "print([m for m in ('numba.np.linalg', 'numba.np.arrayobj', 'dateutil') "
            "if m in sys.modules])")

    def run() -> str:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True, timeout=600).stdout.strip()

    run()  # compiles the kernels if their cache is cold (compiling refreshes the target)
    assert run() == "[]"
    table, _ = read_trace(src, warn_loss=False)
    assert _decoded(pq.read_table(out)).equals(_decoded(table))


def test_numba_extensions_wait_for_a_cache_miss(tmp_path):
    """A kernel loaded from numba's cache skips numba's scan of every installed distribution
    for extensions; one compiled (a cache miss) has its extensions initialised first."""
    (tmp_path / "toy_kernel.py").write_text(
        "from numba import njit\n\n\n@njit(cache=True)\ndef bump(x):\n    return x + 1\n")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import toy_kernel; "
            "from numba.core import entrypoints; "
            "from seqheur.ingest.pcap._engine import _load_cached_without_refresh; "
            "_load_cached_without_refresh([toy_kernel.bump]); "
            "print(toy_kernel.bump(41), entrypoints._already_initialized, "
            "toy_kernel.bump.stats.cache_hits.total())")

    def run() -> list[str]:
        return subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                              text=True, check=True, timeout=600).stdout.split()

    assert run() == ["42", "True", "0"]  # compiled: extensions initialised before compiling
    assert run() == ["42", "False", "1"]  # loaded from the cache: no scan
