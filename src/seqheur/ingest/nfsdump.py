"""nfsdump text traces (Ellard/Harvard: EECS03, DEAS03, CAMPUS, ...) -> the request table.

The format (docs/formats.md): one line per RPC call or reply,
``time src dst U|T C3|R3|C2|R2 xid proc op [status] key value ... trailer``, numbers in hex
except times. Both the published (anonymized, ``con = XXX len = XXX``) and the raw nfsdump
output are read, NFSv2 and NFSv3, UDP and TCP.

How it is read: the decompressed bytes go to a numba kernel in chunks of ``chunk_lines``
lines (``_nfsdump_kernel.parse_chunk``); it tokenizes each line in place and keeps only what
the request table needs (fh, offset, count; status, count, eof, the first ``size``). Calls
and replies are joined on (client, server, transport, xid) by a streaming hash join whose
state carries over chunk and file boundaries; pending calls younger than ``window`` seconds
are carried to the next chunk, so memory stays flat in the file size.

Accounting: every line is parsed (a call or reply record) or skipped with a reason; see
``_nfsdump_kernel.SKIP_REASONS``. Values that do not parse (garbage hex, odd-length
handles) leave that column null and are counted in the report as ``bad_values``; the line
still counts as parsed. ``SHORT PACKET`` / ``+|+`` / ``+/+`` lines keep the fields printed
before the marker (counted as ``short_packets``).

Rows: a matched pair is one row (time = call, reply_time = reply). A call never answered is
a row with null reply columns (orphan call). A reply whose call was not seen is a row of its
own with ``time == reply_time`` and null call columns (orphan reply). A retransmitted call
(same key and op within ``window``) and a duplicate reply are collapsed into the first and
counted (``retransmissions``, ``duplicate_replies``).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import IngestError
from ..io import decompression_errors, open_input, peek_input
from ..schema import (IngestReport, build_request_table, concat_request_tables, crc32_of,
                      empty_request_table, file_id_of)
from . import _nfsdump_kernel as K

__all__ = ["NfsdumpOptions", "NfsdumpScan", "read_nfsdump", "scan_nfsdump", "sniff",
           "nfsdump_files"]

_TS = pa.timestamp("ns", tz="UTC")
_DICT = pa.dictionary(pa.int32(), pa.string())

CANONICAL_OPS: tuple[str, ...] = tuple(dict.fromkeys(c for _, c in K.OP_TOKENS))
_TOKEN_TO_CANON = np.array([CANONICAL_OPS.index(c) for _, c in K.OP_TOKENS], dtype=np.int32)
_CANON_DICT = pa.array(CANONICAL_OPS, type=pa.string())
_RWC = np.array([c in ("read", "write", "commit") for c in CANONICAL_OPS], dtype=bool)
_RW = np.array([c in ("read", "write") for c in CANONICAL_OPS], dtype=bool)
_READ = np.array([c == "read" for c in CANONICAL_OPS], dtype=bool)
_TRANSPORT_DICT = pa.array(["udp", "tcp"], type=pa.string())

_LINE_RE = re.compile(rb"^\s*\d+\.\d+\s+[0-9a-fA-F.:]+\s+[0-9a-fA-F.:]+\s+[UT]\s+[CR][23U]\s")


@dataclass(frozen=True)
class NfsdumpOptions:
    """How to read nfsdump text.

    chunk_lines: lines per chunk (memory ~ chunk_lines x line length, plus pending calls).
    window: seconds; a call with the key and op of a call seen less than this long ago is a
        retransmission, a reply matches only a call made at most this long before it, and a
        call still unanswered after this long is an orphan.
    max_line_bytes: longer lines (e.g. the NUL blocks of some hourly files) are skipped as
        ``overlong_line`` without being held in memory.
    """

    chunk_lines: int = 1 << 18
    window: float = 30.0
    max_line_bytes: int = 1 << 20

    def __post_init__(self) -> None:
        if self.chunk_lines < 1:
            raise ValueError("chunk_lines must be >= 1")
        if not self.window >= 0:
            raise ValueError("window must be >= 0 seconds")


def sniff(head: bytes, name: str) -> bool:
    """True if ``head`` (the first decompressed bytes) looks like nfsdump text."""
    for line in head.split(b"\n")[:64]:
        if _LINE_RE.match(line):
            return True
    return False


def nfsdump_files(path: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The trace files of ``path`` (a file, a directory of hourly files, or a list), in time
    order of their first record (files without one last, by name). In a directory, files
    that do not look like nfsdump text (``.sum``, ``.ck``, ...) are left out."""
    if isinstance(path, (str, os.PathLike)):
        p = Path(path)
        if not p.exists():
            raise IngestError(p, "no such file or directory")
        if p.is_dir():
            cands = sorted(q for q in p.iterdir() if q.is_file() and not q.name.startswith("."))
            files = [q for q in cands if q.stat().st_size and sniff(peek_input(q, 8192), q.name)]
            if not files:
                raise IngestError(p, "directory holds no nfsdump text files")
        else:
            files = [p]
    else:
        files = [Path(q) for q in path]
        for q in files:
            if not q.is_file():
                raise IngestError(q, "no such file")
    keyed = []
    for q in files:
        t = _first_time(q)
        keyed.append((t is None, t if t is not None else 0, q.name, q))
    keyed.sort(key=lambda k: k[:3])
    return [k[3] for k in keyed]


def _first_time(path: Path) -> int | None:
    try:
        head = peek_input(path, 1 << 16)
    except OSError:
        return None
    for line in head.split(b"\n"):
        if _LINE_RE.match(line):
            sec, _, frac = line.split()[0].partition(b".")
            return int(sec) * 10**9 + int((frac + b"000000000")[:9])
    return None


class _Hosts:
    """Growable interned host-id strings shared by all chunks (numba-side arrays)."""

    def __init__(self, cap: int = 1024) -> None:
        self.pool = np.zeros(cap * 16, dtype=np.uint8)
        self.offs = np.zeros(cap, dtype=np.int64)
        self.lens = np.zeros(cap, dtype=np.int64)
        self.slots = np.full(_pow2(cap * 2), -1, dtype=np.int64)
        self.meta = np.zeros(2, dtype=np.int64)
        self._strings: list[str] = []

    def grow(self) -> None:
        cap = self.offs.shape[0] * 2
        count = int(self.meta[0])
        pool = np.zeros(max(self.pool.shape[0] * 2, cap * 16), dtype=np.uint8)
        pool[: self.pool.shape[0]] = self.pool
        offs = np.zeros(cap, dtype=np.int64)
        offs[:count] = self.offs[:count]
        lens = np.zeros(cap, dtype=np.int64)
        lens[:count] = self.lens[:count]
        self.pool, self.offs, self.lens = pool, offs, lens
        self.slots = np.full(_pow2(cap * 2), -1, dtype=np.int64)
        K.rehash(self.pool, self.offs, self.lens, count, self.slots)

    def dictionary(self) -> pa.Array:
        count = int(self.meta[0])
        for i in range(len(self._strings), count):
            o, n = int(self.offs[i]), int(self.lens[i])
            self._strings.append(self.pool[o:o + n].tobytes().decode("ascii", "replace"))
        return pa.array(self._strings, type=pa.string())


def _pow2(n: int) -> int:
    return 1 << max(4, math.ceil(math.log2(max(n, 1))))


_REC_FIELDS = (("kind", np.uint8), ("time", np.int64), ("client", np.int32),
               ("server", np.int32), ("tr", np.uint8), ("vers", np.uint8), ("xid", np.uint32),
               ("op", np.int16), ("line", np.int64), ("off", np.uint64), ("cnt", np.uint32),
               ("ret", np.uint32), ("status", np.uint32), ("size", np.uint64),
               ("flags", np.uint16))


class _Records:
    """Column arrays of parsed lines (calls and replies), plus the decoded file handles."""

    def __init__(self, cols: dict[str, np.ndarray], fh: pa.Array) -> None:
        self.cols = cols
        self.fh = fh

    def __len__(self) -> int:
        return len(self.cols["kind"])

    @classmethod
    def empty(cls) -> "_Records":
        return cls({k: np.zeros(0, dtype=t) for k, t in _REC_FIELDS}, pa.array([], pa.binary()))

    def take(self, idx: np.ndarray) -> "_Records":
        return _Records({k: v[idx] for k, v in self.cols.items()},
                        self.fh.take(pa.array(idx, type=pa.int64())))

    @staticmethod
    def concat(a: "_Records", b: "_Records") -> "_Records":
        if not len(a):
            return b
        return _Records({k: np.concatenate([a.cols[k], b.cols[k]]) for k in a.cols},
                        pa.concat_arrays([a.fh, b.fh]))


class _Parser:
    """Reads one file's bytes and yields _Records for chunks of up to chunk_lines lines."""

    def __init__(self, path: Path, opts: NfsdumpOptions, hosts: _Hosts,
                 report: IngestReport) -> None:
        self.path = path
        self.opts = opts
        self.hosts = hosts
        self.report = report
        n = opts.chunk_lines
        self.out = {k: np.zeros(n, dtype=t) for k, t in _REC_FIELDS}
        self.fh_offs = np.zeros(n + 1, dtype=np.int64)
        self.fh_data = np.zeros(1 << 16, dtype=np.uint8)
        self.skip_counts = np.zeros(K.N_REASONS, dtype=np.int64)
        self.ex_line = np.zeros((K.N_REASONS, K.N_EXAMPLES), dtype=np.int64)
        self.ex_start = np.zeros((K.N_REASONS, K.N_EXAMPLES), dtype=np.int64)
        self.ex_end = np.zeros((K.N_REASONS, K.N_EXAMPLES), dtype=np.int64)
        self.counters = np.zeros(3, dtype=np.int64)
        self.lines = 0
        self.bytes_read = 0

    def chunks(self) -> Iterator[_Records]:
        opts = self.opts
        block = int(min(max(opts.chunk_lines * 160, 1 << 16), 64 << 20))
        n_lines = 0  # lines in the chunk being filled
        n_rec = 0
        n_fh = 0
        # one buffer for the whole file: the unparsed tail moves to its front and the next
        # block is read in behind it (no per-block concatenation copies)
        buf = bytearray(block + opts.max_line_bytes + 1)
        end = 0  # valid bytes in buf
        pos = 0
        eof = False
        with open_input(self.path) as f:
            while True:
                # the kernel sees whole lines only: up to the last newline (all at the end)
                if eof:
                    limit = end
                else:
                    k = buf.rfind(b"\n", pos, end)
                    limit = k + 1 if k >= 0 else pos
                if limit > pos:
                    arr = np.frombuffer(buf, dtype=np.uint8, count=limit)
                    need = n_fh + (limit - pos) // 2 + 16
                    if need > self.fh_data.shape[0]:
                        grown = np.zeros(_pow2(need), dtype=np.uint8)
                        grown[:n_fh] = self.fh_data[:n_fh]
                        self.fh_data = grown
                    self.skip_counts[:] = 0
                    o = self.out
                    nxt, nl, nr, nfh, full = K.parse_chunk(
                        arr, pos, opts.chunk_lines - n_lines, self.lines + n_lines,
                        opts.max_line_bytes,
                        self.hosts.pool, self.hosts.offs, self.hosts.lens, self.hosts.slots,
                        self.hosts.meta,
                        o["kind"][n_rec:], o["time"][n_rec:], o["client"][n_rec:],
                        o["server"][n_rec:], o["tr"][n_rec:], o["vers"][n_rec:],
                        o["xid"][n_rec:], o["op"][n_rec:], o["line"][n_rec:],
                        o["off"][n_rec:], o["cnt"][n_rec:], o["ret"][n_rec:],
                        o["status"][n_rec:], o["size"][n_rec:], o["flags"][n_rec:],
                        self.fh_offs[n_rec:], self.fh_data[n_fh:],
                        self.skip_counts, self.ex_line, self.ex_start, self.ex_end,
                        self.counters)
                    # the kernel writes offsets relative to its slice, starting with a 0 at
                    # fh_offs[n_rec] even when it parses nothing
                    self.fh_offs[n_rec:n_rec + nr + 1] += n_fh
                    self._note_skips(buf)
                    n_lines += nl
                    n_rec += nr
                    n_fh += nfh
                    pos = nxt
                    if full:
                        self.hosts.grow()
                        continue
                    if n_lines >= opts.chunk_lines:
                        yield self._emit(n_rec, n_fh)
                        self.lines += n_lines
                        n_lines = n_rec = n_fh = 0
                        continue
                    if pos < limit:
                        continue
                if eof:
                    break
                # out of whole lines: read more
                if end - pos > opts.max_line_bytes:
                    # one line longer than the limit: skip it without holding it
                    self.report.skip("overlong_line", record=self.lines + n_lines + 1,
                                     detail=_show(bytes(buf[pos:pos + 80])))
                    n_lines += 1
                    after = self._discard_line(f, len(buf))
                    pos = 0
                    if after is None:
                        end, eof = 0, True
                    else:
                        buf[:len(after)] = after
                        end = len(after)
                    if n_lines >= opts.chunk_lines:
                        yield self._emit(n_rec, n_fh)
                        self.lines += n_lines
                        n_lines = n_rec = n_fh = 0
                    continue
                rest = end - pos
                if rest:
                    buf[:rest] = buf[pos:end]
                got = self._fill(f, memoryview(buf)[rest:])
                self.bytes_read += got
                end = rest + got
                pos = 0
                if not got:
                    eof = True
        if n_lines or n_rec:
            yield self._emit(n_rec, n_fh)
            self.lines += n_lines
        self.report.extra["bad_values"] = self.report.extra.get("bad_values", 0) + int(
            self.counters[K.C_BAD_VALUES])
        self.report.extra["short_packets"] = self.report.extra.get("short_packets", 0) + int(
            self.counters[K.C_SHORT])
        self.counters[:] = 0

    def _fill(self, f: Any, view: memoryview) -> int:
        """Read into ``view``; of a damaged or cut compressed stream keep every line decoded
        before the damage and record where and why reading stopped (the rest is unknown)."""
        read = getattr(f, "readinto1", None) or f.readinto
        total = 0
        while total < len(view):
            try:
                got = read(view[total:])
            except decompression_errors() as exc:
                if "stopped" not in self.report.extra:
                    self.report.extra["stopped"] = f"decompression stopped: {exc}"
                    self.report.extra["stopped_at_byte"] = self.bytes_read + total
                    self.report.extra["bytes_unread"] = None
                break
            if not got:
                break
            total += got
            if not getattr(f, "readinto1", None):
                break
        return total

    def _discard_line(self, f: Any, size: int) -> bytes | None:
        """Read on to the end of the current (overlong) line; the bytes after it (fewer than
        ``size``), or None at end of input."""
        while True:
            view = memoryview(bytearray(size))
            data = bytes(view[:self._fill(f, view)])
            self.bytes_read += len(data)
            if not data:
                return None
            i = data.find(b"\n")
            if i >= 0:
                return data[i + 1:]

    def _note_skips(self, buf: bytes) -> None:
        for code in np.flatnonzero(self.skip_counts):
            n = int(self.skip_counts[code])
            reason = K.SKIP_REASONS[code]
            shown = min(n, K.N_EXAMPLES)
            for k in range(shown):
                s, e = int(self.ex_start[code, k]), int(self.ex_end[code, k])
                self.report.skip(reason, record=int(self.ex_line[code, k]),
                                 detail=_show(buf[s:min(e, s + 160)]))
            if n > shown:
                self.report.skip(reason, n=n - shown)

    def _emit(self, n_rec: int, n_fh: int) -> _Records:
        # hand the filled arrays over and start the next chunk in fresh ones (no copy)
        cols = {k: v[:n_rec] for k, v in self.out.items()}
        offs = self.fh_offs[: n_rec + 1]
        data = self.fh_data[:n_fh]
        n = self.opts.chunk_lines
        self.out = {k: np.empty(n, dtype=t) for k, t in _REC_FIELDS}
        self.fh_offs = np.empty(n + 1, dtype=np.int64)
        self.fh_data = np.empty(self.fh_data.shape[0], dtype=np.uint8)
        has = (cols["flags"] & K.F_FH) != 0
        # guard the zero-copy Arrow construction below against any offset bookkeeping slip
        if offs[0] != 0 or offs[-1] != n_fh or (n_rec and bool(np.any(offs[1:] < offs[:-1]))):
            raise AssertionError(f"{self.path}: internal error: bad file-handle offsets")
        validity = pa.py_buffer(np.packbits(has, bitorder="little"))
        fh = pa.Array.from_buffers(pa.binary(), n_rec,
                                   [validity, pa.py_buffer(offs.astype(np.int32)),
                                    pa.py_buffer(data)], null_count=int(n_rec - has.sum()))
        return _Records(cols, fh)


def _show(b: bytes, limit: int = 120) -> str:
    text = b.decode("utf-8", "backslashreplace").replace("\x00", "\\x00").rstrip("\r\n")
    return text if len(text) <= limit else text[:limit] + "..."


class _Joiner:
    """Streaming call/reply join over chunks (and files) of records."""

    def __init__(self, opts: NfsdumpOptions, hosts: _Hosts, report: IngestReport) -> None:
        self.opts = opts
        self.hosts = hosts
        self.report = report
        self.window_ns = int(opts.window * 1e9)
        self.carry = _Records.empty()
        self.table = self._new_table(_pow2(2 * opts.chunk_lines + 16))
        self.counters = np.zeros(6, dtype=np.int64)
        self.fh_known: pa.Array | None = None  # distinct handles seen, in hash order
        self.fh_ids = np.zeros(0, dtype=np.uint64)
        self.fh_crcs = np.zeros(0, dtype=np.uint32)

    @staticmethod
    def _new_table(cap: int) -> dict[str, np.ndarray]:
        return {"used": np.zeros(cap, dtype=np.bool_), "client": np.zeros(cap, dtype=np.int32),
                "server": np.zeros(cap, dtype=np.int32), "tr": np.zeros(cap, dtype=np.uint8),
                "xid": np.zeros(cap, dtype=np.uint32), "replied": np.zeros(cap, dtype=np.bool_),
                "time": np.zeros(cap, dtype=np.int64), "op": np.zeros(cap, dtype=np.int16),
                "row": np.zeros(cap, dtype=np.int64)}

    def process(self, recs: _Records, final: bool) -> pa.Table:
        t = self.table
        n_carry = len(self.carry)
        comb = _Records.concat(self.carry, recs)
        n = len(comb)
        used_now = int(t["used"].sum())
        if 2 * (used_now + len(recs)) + 1 > t["used"].shape[0]:
            # not expected (rebuild sizes for a full chunk), but never overfill the table
            self._resize(2 * (used_now + len(recs)) + 16)
            t = self.table
        c = comb.cols
        row_call = np.empty(n, dtype=np.int64)
        row_reply = np.empty(n, dtype=np.int64)
        before = self.counters.copy()
        nrow = K.join_records(c["kind"], c["time"], c["client"], c["server"], c["tr"], c["xid"],
                              c["op"], n_carry, self.window_ns,
                              t["used"], t["client"], t["server"], t["tr"], t["xid"],
                              t["replied"], t["time"], t["op"], t["row"],
                              row_call, row_reply, self.counters)
        row_call, row_reply = row_call[:nrow], row_reply[:nrow]
        cutoff = int(recs.cols["time"][-1]) - self.window_ns if len(recs) else \
            np.iinfo(np.int64).min
        used_now += int(self.counters[K.J_CALLS] - before[K.J_CALLS])  # upper bound
        new = self._new_table(_pow2(2 * (used_now + self.opts.chunk_lines) + 16)) \
            if not final else self._new_table(16)
        carry, _kept = K.carry_and_rebuild(
            nrow, cutoff, final, t["used"], t["client"], t["server"], t["tr"], t["xid"],
            t["replied"], t["time"], t["op"], t["row"],
            new["used"], new["client"], new["server"], new["tr"], new["xid"], new["replied"],
            new["time"], new["op"], new["row"])
        self.table = new
        self.carry = comb.take(row_call[carry])
        emit = ~carry
        d = self.counters - before
        rep = self.report
        rep.calls += int(d[K.J_CALLS])
        rep.replies += int(d[K.J_REPLIES])
        rep.matched += int(d[K.J_MATCHED])
        rep.retransmissions += int(d[K.J_RETRANS])
        rep.orphan_replies += int(d[K.J_ORPHAN_REPLIES])
        rep.extra["duplicate_replies"] = rep.extra.get("duplicate_replies", 0) + int(
            d[K.J_DUP_REPLIES])
        table = self._rows(comb, row_call[emit], row_reply[emit])
        rep.orphan_calls += int(np.count_nonzero((row_call[emit] >= 0) & (row_reply[emit] < 0)))
        rep.rows += table.num_rows
        return table

    def _resize(self, need: int) -> None:
        self.table = _reinsert(self.table, self._new_table(_pow2(need)))

    def _rows(self, comb: _Records, rc: np.ndarray, rr: np.ndarray) -> pa.Table:
        c = comb.cols
        n = len(rc)
        if n == 0:
            return empty_request_table()
        has_call = rc >= 0
        has_reply = rr >= 0
        src = np.where(has_call, rc, rr)
        rci = np.where(has_call, rc, 0)
        rri = np.where(has_reply, rr, 0)
        order = np.argsort(c["time"][src], kind="stable")
        has_call, has_reply, src, rci, rri = (has_call[order], has_reply[order], src[order],
                                              rci[order], rri[order])
        canon = _TOKEN_TO_CANON[c["op"][src]]
        cflags = c["flags"][rci]
        rflags = c["flags"][rri]
        rwc = _RWC[canon]
        rw = _RW[canon]

        def col(values: np.ndarray, valid: np.ndarray, typ: pa.DataType) -> pa.Array:
            return pa.array(values, type=typ, mask=~valid)

        time = pa.array(c["time"][src], type=pa.int64()).view(_TS)
        reply_time = col(c["time"][rri], has_reply, pa.int64()).view(_TS)
        hostdict = self.hosts.dictionary()
        client = pa.DictionaryArray.from_arrays(pa.array(c["client"][src], pa.int32()), hostdict)
        server = pa.DictionaryArray.from_arrays(pa.array(c["server"][src], pa.int32()), hostdict)
        transport = pa.DictionaryArray.from_arrays(
            pa.array(c["tr"][src].astype(np.int32), pa.int32()), _TRANSPORT_DICT)
        op = pa.DictionaryArray.from_arrays(pa.array(canon, pa.int32()), _CANON_DICT)
        fh = comb.fh.take(pa.array(rci, type=pa.int64(), mask=~has_call))
        file_id, fh_crc = self._fh_hashes(fh)
        columns = {
            "time": time,
            "reply_time": reply_time,
            "client": client,
            "server": server,
            "transport": transport,
            "xid": pa.array(c["xid"][src], pa.uint32()),
            "vers": pa.array(c["vers"][src], pa.uint8()),
            "op": op,
            "fh": fh,
            "file_id": file_id,
            "fh_crc32": fh_crc,
            "offset": col(c["off"][rci], has_call & rwc & ((cflags & K.F_OFF) != 0), pa.uint64()),
            "count": col(c["cnt"][rci], has_call & rwc & ((cflags & K.F_CNT) != 0), pa.uint32()),
            "ret_count": col(c["ret"][rri], has_reply & rw & ((rflags & K.F_RET) != 0),
                             pa.uint32()),
            "eof": col((rflags & K.F_EOFV) != 0,
                       has_reply & _READ[canon] & ((rflags & K.F_EOF) != 0), pa.bool_()),
            "status": col(c["status"][rri], has_reply & ((rflags & K.F_STATUS) != 0),
                          pa.uint32()),
            "file_size": col(c["size"][rri], has_reply & ((rflags & K.F_SIZE) != 0),
                             pa.uint64()),
            "source_index": pa.array(c["line"][src].astype(np.uint64), pa.uint64()),
        }
        return build_request_table(columns, n=n)

    _FH_CACHE_MAX = 1 << 20  # distinct handles remembered (memory stays bounded)

    def _fh_hashes(self, fh: pa.Array) -> tuple[pa.Array, pa.Array]:
        """file_id / fh_crc32 (the schema's documented hashes), each distinct handle hashed
        once per reader: a chunk's distinct handles are looked up in the ones seen before
        with one vectorized ``index_in``; only new ones are hashed in Python."""
        enc = fh.dictionary_encode()
        uniq = enc.dictionary
        idx = enc.indices
        valid = np.asarray(idx.is_valid())
        if len(uniq) == 0:
            z = np.zeros(len(fh), np.uint64)
            return (pa.array(z, pa.uint64(), mask=~valid),
                    pa.array(z.astype(np.uint32), pa.uint32(), mask=~valid))
        known = self.fh_known
        if known is not None and len(known) + len(uniq) > self._FH_CACHE_MAX:
            known = None
        if known is None:
            pos = np.full(len(uniq), -1, dtype=np.int64)
        else:
            pos = pc.index_in(uniq, value_set=known).fill_null(-1).to_numpy(
                zero_copy_only=False).astype(np.int64)
        new = np.flatnonzero(pos < 0)
        if len(new):
            fresh = uniq.take(pa.array(new)).to_pylist()
            new_ids = np.fromiter((file_id_of(u) for u in fresh), np.uint64, len(fresh))
            new_crc = np.fromiter((crc32_of(u) for u in fresh), np.uint32, len(fresh))
            base = 0 if known is None else len(known)
            pos[new] = base + np.arange(len(new))
            added = uniq.take(pa.array(new))
            if known is None:
                self.fh_known, self.fh_ids, self.fh_crcs = added, new_ids, new_crc
            else:
                self.fh_known = pa.concat_arrays([known, added])
                self.fh_ids = np.concatenate([self.fh_ids, new_ids])
                self.fh_crcs = np.concatenate([self.fh_crcs, new_crc])
        take = idx.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        rows = pos[take]
        return (pa.array(self.fh_ids[rows], pa.uint64(), mask=~valid),
                pa.array(self.fh_crcs[rows], pa.uint32(), mask=~valid))


def _reinsert(old: dict[str, np.ndarray], new: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Copy every entry into a bigger table (entries unchanged). Only reached if a chunk
    outgrows the table sized for it at the previous rebuild, which should not happen."""
    cap = new["used"].shape[0]
    for j in np.flatnonzero(old["used"]):
        h = _py_key_hash(int(old["client"][j]), int(old["server"][j]), int(old["tr"][j]),
                         int(old["xid"][j]))
        q = h & (cap - 1)
        while new["used"][q]:
            q = (q + 1) & (cap - 1)
        for k in new:
            new[k][q] = old[k][j]
    return new


def _py_key_hash(c: int, s: int, tr: int, x: int) -> int:
    m = (1 << 64) - 1
    h = (c * 0x9E3779B97F4A7C15) & m
    h ^= (s * 0xC2B2AE3D27D4EB4F) & m
    h ^= ((x * 0x165667B19E3779F9) + tr) & m
    h ^= h >> 29
    return h


class NfsdumpScan:
    """Iterate over request tables of an nfsdump trace, chunk by chunk, with flat memory.

    Each yielded table is time-ordered; a call answered in a later chunk is yielded with
    that chunk. ``report`` is complete once the iteration has finished.
    """

    def __init__(self, path: Any, opts: NfsdumpOptions) -> None:
        self.files = nfsdump_files(path)
        self.opts = opts
        self._source = str(path) if isinstance(path, (str, os.PathLike)) else ", ".join(
            str(p) for p in self.files)
        self.report = self._new_report()

    def _new_report(self) -> IngestReport:
        report = IngestReport(source=self._source, format="nfsdump")
        report.extra["files"] = len(self.files)
        return report

    def __iter__(self) -> Iterator[pa.Table]:
        if self.report.records_total:
            self.report = self._new_report()  # iterating again starts a fresh count
        hosts = _Hosts()
        joiner = _Joiner(self.opts, hosts, self.report)
        chunks = 0
        for fi, path in enumerate(self.files):
            parser = _Parser(path, self.opts, hosts, self.report)
            pending: _Records | None = None
            for recs in parser.chunks():
                # one chunk of look-ahead so that the very last chunk is processed as final
                if pending is not None:
                    chunks += 1
                    yield joiner.process(pending, final=False)
                pending = recs
            self.report.records_total += parser.lines
            if pending is not None:
                chunks += 1
                yield joiner.process(pending, final=fi == len(self.files) - 1)
            elif fi == len(self.files) - 1:
                yield joiner.process(_Records.empty(), final=True)
        self.report.parsed = self.report.calls + self.report.replies
        self.report.extra["chunks"] = chunks
        self.report.check()


def scan_nfsdump(path: Any, chunk_lines: int = NfsdumpOptions.chunk_lines, *,
                 window: float = NfsdumpOptions.window,
                 max_line_bytes: int = NfsdumpOptions.max_line_bytes) -> NfsdumpScan:
    """Chunked reader: ``for table in (scan := scan_nfsdump(p)): ...``; then ``scan.report``.

    ``path``: a file (plain or gz/bz2/xz/zst), a directory of hourly files, or a list of
    files; files are read in time order and calls are joined with replies across files.
    """
    return NfsdumpScan(path, NfsdumpOptions(chunk_lines=chunk_lines, window=window,
                                            max_line_bytes=max_line_bytes))


def read_nfsdump(path: Any, *, chunk_lines: int = NfsdumpOptions.chunk_lines,
                 window: float = NfsdumpOptions.window,
                 max_line_bytes: int = NfsdumpOptions.max_line_bytes,
                 ) -> tuple[pa.Table, IngestReport]:
    """Read an nfsdump text trace (file, directory of hourly files, or list) into one
    time-ordered request table and its IngestReport."""
    scan = scan_nfsdump(path, chunk_lines, window=window, max_line_bytes=max_line_bytes)
    tables = [t for t in scan if t.num_rows]
    if not tables:
        return empty_request_table(), scan.report
    table = tables[0] if len(tables) == 1 else concat_request_tables(tables)
    if len(tables) > 1:
        # chunks are each sorted; calls carried across a chunk boundary are not
        # (left in chunks otherwise: a copy of every column buys nothing)
        t = table.column("time").cast(pa.int64()).to_numpy()
        if len(t) > 1 and not bool(np.all(t[1:] >= t[:-1])):
            table = _take_sorted(table, np.argsort(t, kind="stable"))
    return table, scan.report


def _take_sorted(table: pa.Table, perm: np.ndarray) -> pa.Table:
    """``table.take(perm)`` for a permutation that moves few rows (the calls carried across
    chunk boundaries): only the blocks of rows that ``perm`` reorders (each one it maps onto
    itself) are gathered; the rows it leaves in place stay zero-copy slices."""
    # [a, b) is closed under perm where the running max of perm[:b] is b - 1
    ends = np.flatnonzero(np.maximum.accumulate(perm) == np.arange(len(perm))) + 1
    starts = np.concatenate(([0], ends[:-1]))
    pieces = []
    prev = 0
    for i in np.flatnonzero(ends - starts > 1):
        a, b = int(starts[i]), int(ends[i])
        if a > prev:
            pieces.append(table.slice(prev, a - prev))
        pieces.append(table.slice(a, b - a).take(pa.array(perm[a:b] - a)))
        prev = b
    if prev < len(perm):
        pieces.append(table.slice(prev))
    return pa.concat_tables(pieces) if len(pieces) > 1 else pieces[0]
