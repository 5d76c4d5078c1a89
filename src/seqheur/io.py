"""Atomic output writers and a compressed-input opener.

Every output is written to a temporary file beside the target and renamed into place, so a
reader never sees half a file and an interrupted run leaves the old file intact.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import json
import lzma
import os
import tempfile
from pathlib import Path
from typing import IO, Any, Iterator

import pyarrow as pa

PathLike = str | os.PathLike[str]

_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bz2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)


def _temp_beside(target: Path) -> Path:
    if target.is_dir():  # say so before writing anything (the rename would fail at the end)
        from .errors import SeqheurError

        raise SeqheurError(f"{target}: is a directory; give a file to write, e.g. "
                           f"{target / ('out' + (target.suffix or '.parquet'))}")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    # mkstemp makes the file 0600; outputs get the usual mode (0666 less the umask)
    os.chmod(tmp, 0o666 & ~_umask())
    return Path(tmp)


@contextlib.contextmanager
def atomic_path(path: PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success rename it onto ``path``."""
    target = Path(path)
    tmp_path = _temp_beside(target)
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_parquet(table: pa.Table | Any, path: PathLike, *, compression: str = "zstd") -> Path:
    """Write an Arrow table (or polars DataFrame) to Parquet atomically."""
    import pyarrow.parquet as pq

    if not isinstance(table, pa.Table):
        table = table.to_arrow()
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression=compression)
    return Path(path)


def read_request_columns(path: PathLike, columns: Any, ops: Any = None) -> pa.Table:
    """Only ``columns`` of a Parquet request table (typed as the request schema has them), and
    only the rows whose ``op`` is in ``ops`` when given: memory follows what is read."""
    import pyarrow.parquet as pq

    from .schema import request_subschema

    want = request_subschema(columns)
    filters = None if ops is None else [("op", "in", list(ops))]
    return pq.read_table(path, columns=want.names, filters=filters).cast(want)


class ParquetSink:
    """A Parquet file written table by table (bounded memory), atomically: the file appears at
    ``path`` only when :meth:`close` succeeds; :meth:`abort` (or an error) leaves nothing."""

    def __init__(self, path: PathLike, schema: pa.Schema, *, compression: str = "zstd",
                 use_dictionary: bool | list[str] = True) -> None:
        import pyarrow.parquet as pq

        self.path = Path(path)
        self._tmp = _temp_beside(self.path)
        try:
            self._writer = pq.ParquetWriter(self._tmp, schema, compression=compression,
                                            use_dictionary=use_dictionary)
        except BaseException:
            self._tmp.unlink(missing_ok=True)
            raise
        self.rows = 0

    def write(self, table: pa.Table) -> None:
        self._writer.write_table(table)
        self.rows += table.num_rows

    def close(self, metadata: dict[bytes, bytes] | None = None) -> Path:
        """Finish the file (``metadata``: key-value pairs for its footer) and rename it into
        place."""
        try:
            if metadata:
                self._writer.add_key_value_metadata(metadata)
            self._writer.close()
            os.replace(self._tmp, self.path)
        finally:
            self._tmp.unlink(missing_ok=True)
        return self.path

    def abort(self) -> None:
        try:
            self._writer.close()
        finally:
            self._tmp.unlink(missing_ok=True)


def write_json(obj: Any, path: PathLike) -> Path:
    """Write JSON atomically (sorted keys are not imposed: dict order is the caller's)."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, default=_json_default) + "\n")
    return Path(path)


def write_text(text: str, path: PathLike) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    return Path(path)


def write_bytes(data: bytes, path: PathLike) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def _json_default(value: Any) -> Any:
    import numpy as np

    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def sniff_compression(head: bytes) -> str | None:
    """Name of the compression whose magic starts ``head`` (gzip, bz2, xz, zstd) or None."""
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return name
    return None


def open_input(path: PathLike) -> IO[bytes]:
    """Open a trace for binary reading, decompressing gz/bz2/xz/zst by content, not name."""
    raw = open(path, "rb")  # noqa: SIM115 - returned to the caller
    head = raw.peek(8)[:8] if hasattr(raw, "peek") else b""
    kind = sniff_compression(head)
    if kind is None:
        return raw
    if kind == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    if kind == "bz2":
        return bz2.BZ2File(raw, mode="rb")  # type: ignore[return-value]
    if kind == "xz":
        return lzma.LZMAFile(raw, mode="rb")  # type: ignore[return-value]
    import zstandard

    reader = zstandard.ZstdDecompressor().stream_reader(raw, closefd=True)
    return io.BufferedReader(reader)  # type: ignore[arg-type]


def open_text(path: PathLike, encoding: str = "utf-8", errors: str = "replace") -> IO[str]:
    """Text view of :func:`open_input` (undecodable bytes replaced, never an exception)."""
    return io.TextIOWrapper(open_input(path), encoding=encoding, errors=errors, newline="")


def decompression_errors() -> tuple[type[BaseException], ...]:
    """What a damaged or cut compressed stream raises while it is read (gzip: EOFError,
    BadGzipFile or zlib.error; xz: LZMAError; zstd: ZstdError); other OSErrors are real
    read failures."""
    import zlib

    errs: tuple[type[BaseException], ...] = (EOFError, gzip.BadGzipFile, zlib.error,
                                             lzma.LZMAError)
    try:
        import zstandard

        errs += (zstandard.ZstdError,)
    except ImportError:  # pragma: no cover - a dependency
        pass
    return errs


def peek_input(path: PathLike, n: int = 4096) -> bytes:
    """The first ``n`` decompressed bytes of a trace (for format sniffing); of a damaged or
    cut compressed stream, what decompressed before the damage (the reader then says where it
    stopped)."""
    out = bytearray()
    with open_input(path) as f:
        try:
            while len(out) < n:
                chunk = f.read1(n - len(out)) if hasattr(f, "read1") else f.read(n - len(out))
                if not chunk:
                    break
                out += chunk
        except decompression_errors():
            pass
    return bytes(out)
