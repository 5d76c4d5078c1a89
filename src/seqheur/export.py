"""Request table -> nfsdump text (the anonymized style of the published Harvard traces).

Every row becomes a call line and, when ``reply_time`` is set, a reply line; the lines are
written in time order (a call before its reply at equal times). Trailers are the anonymized
``con = XXX len = XXX`` (calls) and ``status=XXX pl = XXX con = XXX len = XXX`` (replies), so
the output feeds Ellard's tools (nfsscan, nfsdump.pl) and ``read_nfsdump``.

What is written per row (see docs/formats.md, "nfsdump text traces"):
- call: ``fh`` (``file`` for commit) when known; read/write/commit add ``off``/``count``
  (NFSv2: read ``offset count tcount``, write ``begoff 0 offset tcount``); write adds
  ``stable U``.
- reply: the status (``OK`` or hex; for ``null`` the ``status=`` token as in the traces);
  when ``file_size`` is known a post-op attribute group whose ``size`` is the file size and
  ``fileid`` the low 32 bits of ``file_id`` (the other attributes are placeholders:
  ``ftype 1 mode 1a4 nlink 1 uid 0 gid 0``, times = reply time); read adds ``count``
  (ret_count) and, for v3, ``eof``; v3 write adds ``count`` and ``stable F``.
- A row whose call was never seen (orphan reply: ``time == reply_time`` and no fh, offset
  or count) gets only its reply line.

Not representable, hence not written: NFSv4 rows (nfsdump has no v4 syntax; counted as
skipped), eof of v2 reads and ret_count of v2 writes (v2 replies have no such fields).
Missing identity columns get stand-ins: client ``0.0000``, server ``0.0801``, transport
UDP, version 3, xid = row number.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterator

import numpy as np
import pyarrow as pa

from .errors import SchemaError
from .io import atomic_path
from .schema import validate

_V3 = ("null getattr setattr lookup access readlink read write create mkdir symlink mknod "
       "remove rmdir rename link readdir readdirplus fsstat fsinfo pathconf commit").split()
_V2 = ("null getattr setattr root lookup readlink read writecache write create remove rename "
       "link symlink mkdir rmdir readdir statfs").split()
V3_PROCS = {name: i for i, name in enumerate(_V3)}
V2_PROCS = {name: i for i, name in enumerate(_V2)}

_BATCH = 1 << 16


@dataclass
class ExportReport:
    """What ``export_nfsdump`` wrote: rows in, lines out, rows left out by reason."""

    rows: int = 0
    calls: int = 0
    replies: int = 0
    skipped: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {"rows": self.rows, "call_lines": self.calls, "reply_lines": self.replies,
                "lines": self.calls + self.replies, "skipped": dict(self.skipped)}


def _op_token(op: str, vers: int, reply: bool) -> tuple[int, str]:
    procs = V2_PROCS if vers == 2 else V3_PROCS
    proc = procs.get(op, 0xFFFFFFFF)
    if op == "readdirplus":
        return proc, "readdirp"
    if op == "writecache" and vers == 2:
        return proc, "writecac" if reply else "writecach"
    return proc, op


def _utime(ns: int) -> str:
    sec, rest = divmod(ns, 1_000_000_000)
    return f"{sec}.{rest // 1000:06d}"


def _col(table: pa.Table, name: str) -> list:
    col = table.column(name)
    if pa.types.is_timestamp(col.type):
        col = col.cast(pa.int64())
    elif pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    return col.to_pylist()


def nfsdump_lines(table: pa.Table, report: ExportReport | None = None) -> Iterator[str]:
    """The nfsdump text lines (without newline) of a request table, in time order."""
    validate(table)
    report = report if report is not None else ExportReport()
    n = table.num_rows
    report.rows += n
    if n == 0:
        return
    t = table.column("time").cast(pa.int64()).to_numpy()
    rt_col = table.column("reply_time").cast(pa.int64())
    has_reply = np.asarray(rt_col.is_valid())
    rt = rt_col.fill_null(0).to_numpy()
    orphan_reply = (has_reply & (rt == t) & np.asarray(table.column("fh").is_null())
                    & np.asarray(table.column("offset").is_null())
                    & np.asarray(table.column("count").is_null()))
    has_call = ~orphan_reply
    vers_col = table.column("vers")
    vers = vers_col.fill_null(3).to_numpy()
    bad_vers = ~np.isin(vers, (2, 3))
    if bad_vers.any():
        report.skipped["nfsv4_not_expressible"] = int(bad_vers.sum())
    op_null = np.asarray(table.column("op").is_null())
    if op_null.any():
        report.skipped["no_op"] = int((op_null & ~bad_vers).sum())
    keep = ~bad_vers & ~op_null
    # (time, row, is_reply), stably sorted: calls first at equal times
    call_rows = np.flatnonzero(keep & has_call)
    reply_rows = np.flatnonzero(keep & has_reply)
    times = np.concatenate([t[call_rows], rt[reply_rows]])
    rows = np.concatenate([call_rows, reply_rows])
    kinds = np.concatenate([np.zeros(len(call_rows), np.int8), np.ones(len(reply_rows), np.int8)])
    order = np.lexsort((kinds, rows, times))
    rows, kinds = rows[order], kinds[order]
    report.calls += len(call_rows)
    report.replies += len(reply_rows)
    for b in range(0, len(rows), _BATCH):
        br, bk = rows[b:b + _BATCH], kinds[b:b + _BATCH]
        uniq, inv = np.unique(br, return_inverse=True)
        sub = table.take(pa.array(uniq))
        yield from _format(sub, inv, bk, uniq)


def _format(sub: pa.Table, inv: np.ndarray, kinds: np.ndarray, rowno: np.ndarray) -> Iterator[str]:
    time = _col(sub, "time")
    rtime = _col(sub, "reply_time")
    client = _col(sub, "client")
    server = _col(sub, "server")
    transport = _col(sub, "transport")
    xid = _col(sub, "xid")
    vers = _col(sub, "vers")
    op = _col(sub, "op")
    fh = _col(sub, "fh")
    file_id = _col(sub, "file_id")
    offset = _col(sub, "offset")
    count = _col(sub, "count")
    ret = _col(sub, "ret_count")
    eof = _col(sub, "eof")
    status = _col(sub, "status")
    size = _col(sub, "file_size")
    for i, kind in zip(inv.tolist(), kinds.tolist()):
        v = vers[i] or 3
        o = op[i]
        c = client[i] or "0.0000"
        s = server[i] or "0.0801"
        tr = "T" if transport[i] == "tcp" else "U"
        x = xid[i] if xid[i] is not None else int(rowno[i]) & 0xFFFFFFFF
        if kind == 0:
            proc, name = _op_token(o, v, False)
            parts = [f"{_utime(time[i])} {c} {s} {tr} C{v} {x:x} {proc:x} {name}"]
            h = fh[i]
            if h is not None:
                parts.append(f"{'file' if o == 'commit' else 'fh'} {h.hex()}")
            off, cnt = offset[i], count[i]
            if o == "read":
                if v == 2:
                    if off is not None:
                        parts.append(f"offset {off:x}")
                    if cnt is not None:
                        parts.append(f"count {cnt:x} tcount {cnt:x}")
                else:
                    if off is not None:
                        parts.append(f"off {off:x}")
                    if cnt is not None:
                        parts.append(f"count {cnt:x}")
            elif o == "write":
                if v == 2:
                    parts.append("begoff 0")
                    if off is not None:
                        parts.append(f"offset {off:x}")
                    if cnt is not None:
                        parts.append(f"tcount {cnt:x}")
                else:
                    if off is not None:
                        parts.append(f"off {off:x}")
                    if cnt is not None:
                        parts.append(f"count {cnt:x}")
                    parts.append("stable U")
            elif o == "commit":
                if off is not None:
                    parts.append(f"off {off:x}")
                if cnt is not None:
                    parts.append(f"count {cnt:x}")
            parts.append("con = XXX len = XXX")
            yield " ".join(parts)
        else:
            proc, name = _op_token(o, v, True)
            st = status[i]
            head = f"{_utime(rtime[i])} {s} {c} {tr} R{v} {x:x} {proc:x} {name}"
            if o == "null" or st is None:
                sv = "XXX" if st is None else f"{st:x}"
                yield f"{head} status={sv} pl = XXX con = XXX len = XXX"
                continue
            parts = [head, "OK" if st == 0 else f"{st:x}"]
            sz = size[i]
            if sz is not None:
                tstr = _utime(rtime[i])
                fid = (file_id[i] or 0) & 0xFFFFFFFF
                if v == 2:
                    parts.append(f"ftype 1 mode 81a4 nlink 1 uid 0 gid 0 size {sz:x} blksize 2000 "
                                 f"rdev 0 blocks {(sz + 511) // 512:x} fsid 0 fileid {fid:x} "
                                 f"atime {tstr} mtime {tstr} ctime {tstr}")
                else:
                    parts.append(f"ftype 1 mode 1a4 nlink 1 uid 0 gid 0 size {sz:x} "
                                 f"used {(sz + 4095) // 4096 * 4096:x} rdev 0 rdev2 0 fsid 0 "
                                 f"fileid {fid:x} atime {tstr} mtime {tstr} ctime {tstr}")
            r = ret[i]
            if o == "read":
                if r is not None:
                    parts.append(f"count {r:x}")
                if v == 3 and eof[i] is not None:
                    parts.append(f"eof {int(eof[i])}")
            elif o == "write" and v == 3:
                if r is not None:
                    parts.append(f"count {r:x}")
                parts.append("stable F")
            parts.append("status=XXX pl = XXX con = XXX len = XXX")
            yield " ".join(parts)


def _open_out(path: Path) -> IO[str]:
    name = path.name
    if name.endswith(".gz"):
        return gzip.open(path, "wt", encoding="ascii", compresslevel=6)
    if name.endswith(".bz2"):
        return bz2.open(path, "wt", encoding="ascii")
    if name.endswith(".xz"):
        return lzma.open(path, "wt", encoding="ascii")
    if name.endswith(".zst"):
        import io

        import zstandard

        raw = open(path, "wb")  # noqa: SIM115 - closed via the wrapper
        return io.TextIOWrapper(zstandard.ZstdCompressor().stream_writer(raw), encoding="ascii")
    return open(path, "w", encoding="ascii", newline="\n")


def export_nfsdump(table: pa.Table, out: str | os.PathLike[str]) -> ExportReport:
    """Write ``table`` as nfsdump text to ``out`` (atomically; ``.gz``/``.bz2``/``.xz``/``.zst``
    compress by suffix). Returns what was written."""
    if not isinstance(table, pa.Table):
        raise SchemaError("table", f"expected a pyarrow Table, got {type(table).__name__}")
    report = ExportReport()
    target = Path(out)
    with atomic_path(target) as tmp:
        tmp_named = tmp.with_name(tmp.name + "".join(target.suffixes[-1:]))
        try:
            with _open_out(tmp_named) as f:
                batch: list[str] = []
                for line in nfsdump_lines(table, report):
                    batch.append(line)
                    if len(batch) >= _BATCH:
                        f.write("\n".join(batch))
                        f.write("\n")
                        batch.clear()
                if batch:
                    f.write("\n".join(batch))
                    f.write("\n")
            os.replace(tmp_named, tmp)
        finally:
            if tmp_named.exists():
                tmp_named.unlink()
    return report


def nfsdump_text(table: pa.Table) -> str:
    """The whole nfsdump text of a (small) table, newline-terminated."""
    lines = list(nfsdump_lines(table))
    return "\n".join(lines) + ("\n" if lines else "")
