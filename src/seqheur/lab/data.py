"""Export files with verifiable contents (byte-identical to ``clients/pattern.h``).

A file is a sequence of 4 KiB blocks of 128 records of 32 bytes. Record 0 of block *b* stamps the
file name and the block's byte offset (``name@0000000a3000====...\\n``); records 1..127 carry
their index inside the block (``rec001.....\\n``). Any READ payload can therefore be checked
against its (file, offset): a READ of the wrong file or at the wrong block is caught by the stamp,
a shift inside a block by the record index. Only record 0 differs between blocks, which keeps
full-payload captures highly compressible (gzip finds the previous block 4 KiB back).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

BLOCK = 4096
RECORD = 32
_PER_BLOCK = BLOCK // RECORD
# Records 1..127 are the same in every block: build them once.
_TAIL = b"".join(
    (f"rec{i:03d}".encode().ljust(31, b".") + b"\n") for i in range(1, _PER_BLOCK)
)


@dataclass(frozen=True)
class ExportFile:
    """One generated file of the export: its name (relative to the export root) and size."""

    name: str
    size: int


def _stamp(name: str, block: int) -> bytes:
    return (f"{name}@{block * BLOCK:012x}".encode()[:31]).ljust(31, b"=") + b"\n"


def expected_bytes(name: str, offset: int, length: int) -> bytes:
    """The exact contents of ``name`` in [offset, offset + length), as the lab generates them."""
    if offset < 0 or length < 0:
        raise ValueError("offset and length must be non-negative")
    first, last = offset // BLOCK, (offset + length + BLOCK - 1) // BLOCK
    blob = b"".join(_stamp(name, b) + _TAIL for b in range(first, last))
    start = offset - first * BLOCK
    return blob[start:start + length]


def mismatches(name: str, offset: int, data: bytes) -> int:
    """How many bytes of ``data`` (read at ``offset`` of ``name``) differ from the contents."""
    want = expected_bytes(name, offset, len(data))
    if want == data:
        return 0
    return sum(a != b for a, b in zip(want, data))


def write_file(directory: Path, spec: ExportFile) -> str:
    """Create ``directory/spec.name`` (streamed, 1 MiB at a time); return its sha256 hex."""
    path = directory / spec.name
    path.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    step = 256 * BLOCK
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as out:
        for off in range(0, spec.size, step):
            chunk = expected_bytes(spec.name, off, min(step, spec.size - off))
            digest.update(chunk)
            out.write(chunk)
    tmp.replace(path)
    return digest.hexdigest()
