"""The decoder: chunked reading, the per-frame kernel, pool growth, call expiry, row batches.

Memory stays flat in the capture size: the file is read in fixed chunks, frames are decoded
straight from the chunk buffer, TCP records keep only their first/last bytes, and rows leave
as Arrow batches once their reply is in (or can no longer come: WINDOW_NS of capture time).
"""

from __future__ import annotations

import hashlib
import io
import ipaddress
import mmap
import os
import queue
import threading
from pathlib import Path
from typing import IO, Iterator

import numpy as np
import pyarrow as pa

from ...errors import IngestError
from ...io import decompression_errors, open_input
from ...schema import IngestReport, build_request_table, crc32_of, file_id_of
from . import container as ct
from ._layout import (C_CALLS, C_FRAG_DATAGRAMS, C_GSS_CONTROL, C_GSS_PRIVACY, C_MATCHED,
                      C_NFH, C_NFLOWS, C_NFS4_UNKNOWN_OP, C_NFS_UNDECODED, C_NFS_VERS_OTHER,
                      C_NJOIN, C_NOW, C_NPEND, C_NROWS, C_OOOBYTES, C_OOON, C_ORPHAN_CALLS,
                      C_ORPHAN_REPLIES, C_PARSED, C_PROG0, C_REPLIES, C_RETRANS,
                      C_RPC_ACCEPT_ERR, C_RPC_CALLS, C_RPC_DENIED, C_RPC_MALFORMED,
                      C_RPC_REPLIES, C_RPC_TRUNCMSG, C_SKIP0, C_SLOTTOP, C_TCP_GAP_BYTES,
                      C_TCP_GAPS, C_EMPTY_RECORD, C_LASTB, C_V4_ROWS_CAPPED, D_OOO, DN,
                      F_DIR0, FF, FLOWKEY, FR_NFRAMES, FR_USED, FRAGBUF, FRF, HEAD, HR_FH,
                      HR_MSGS, HR_ROWS, M_COUNT, M_EOF, M_FH, M_FSIZE, M_MINOR, M_OFFSET,
                      M_RET, M_RTIME, M_STATUS, NCTR, NFRAG, OF, PF, PROG_NAMES, R_COUNT,
                      R_EOF, R_FHLEN, R_FLOW, R_FRAME, R_FSIZE, R_MASK, R_MINOR, R_OFFSET, R_OP,
                      R_PROTO, R_RETCOUNT, R_RTIME, R_SIDE, R_STATUS, R_TIME, R_VERS, R_XID,
                      RF, S_CORRUPT, S_FRAGINC, S_TRUNCREC, SKIP_NAMES, TAIL, WINDOW_NS,
                      op_name)


def _refresh_kernel_cache() -> None:
    """Drop numba's on-disk cache when any kernel module changed.

    numba keys a cached function on its own file only, but the frame kernel inlines code from
    every module of this package, so an edit elsewhere would leave it stale."""
    here = Path(__file__).resolve().parent
    srcs = sorted(p for p in here.glob("*.py") if p.name not in ("_engine.py", "__init__.py",
                                                                   "synth.py"))
    digest = hashlib.blake2b(b"".join(p.read_bytes() for p in srcs), digest_size=8).hexdigest()
    cache = here / "__pycache__"
    stamp = cache / "seqheur-kernels.stamp"
    try:
        if stamp.is_file() and stamp.read_text() == digest:
            return
        # no stamp yet (a first run, or caches written before stamps existed): refresh too
        for f in list(cache.glob("*.nbi")) + list(cache.glob("*.nbc")):
            f.unlink(missing_ok=True)
        cache.mkdir(exist_ok=True)
        stamp.write_text(digest)
    except OSError:  # read-only install: numba then caches elsewhere or not at all
        pass


_refresh_kernel_cache()

from ._kernel import (expire, fnv_rehash, gather_fh, headroom_units, note_skip,  # noqa: E402
                      process, settle, shift_rows)

# skip reasons of frames that carry no NFS by nature (pure ACKs, other protocols): not worth
# an example
_NO_EXAMPLE = frozenset({"tcp_no_payload", "not_ip", "not_tcp_udp", "udp_not_rpc"})
from .tcp import compact_ooo, drain  # noqa: E402


def _load_cached_without_refresh(kernels) -> None:
    """Let these kernels load their cached machine code without numba's target refresh.

    Before it loads a function from its on-disk cache, numba refreshes its whole CPU target:
    it imports and registers the implementation of every feature it can compile (~0.1 s of
    CPU, a fifth of a small capture's ``seqheur ingest``). Compiling needs that; loading
    compiled code needs only the runtime's allocator (for the kernels that allocate). On a
    cache miss numba's compiler refreshes the target itself, so a kernel compiled here is
    compiled as before.

    Likewise numba initialises its extensions before a kernel's first call, reading the entry
    points of every installed distribution (~4 ms, on the way to the first batch). Loading
    machine code needs no extension: here they are initialised on a cache miss, before the
    compiler starts. With a numba whose cache lacks the methods used, or with caching off,
    the kernels load as usual."""
    from numba.core import entrypoints
    from numba.core.runtime import nrt

    for kernel in kernels:
        cache = getattr(kernel, "_cache", None)
        guard = getattr(cache, "_guard_against_spurious_io_errors", None)
        load = getattr(cache, "_load_overload", None)
        if guard is None or load is None or not hasattr(kernel, "_compilation_chain_init_hook"):
            continue

        def load_overload(sig, target_context, guard=guard, load=load,
                          needs_nrt=kernel.targetoptions.get("_nrt", True)):
            if needs_nrt:  # (a kernel compiled without the runtime never calls into it)
                nrt.rtsys.initialize(target_context)
            with guard():
                cres = load(sig, target_context)
            if cres is None:  # a miss: numba compiles next, with its extensions
                entrypoints.init_all()
            return cres

        cache.load_overload = load_overload
        kernel._compilation_chain_init_hook = _no_extensions_yet


def _no_extensions_yet() -> None:
    """A kernel's first call: extensions wait for a cache miss (_load_cached_without_refresh)."""


_load_cached_without_refresh((ct.walk_pcap, ct.walk_pcapng, process, note_skip, headroom_units,
                              fnv_rehash, expire, settle, shift_rows, gather_fh, compact_ooo,
                              drain))

CHUNK = 8 << 20
BATCH_ROWS = 1 << 16
FRAME_BATCH = 1 << 14


class Decoder:
    """Stateful capture decoder. Iterate ``batches()`` for Arrow tables; ``report`` after."""

    def __init__(self, path: str | os.PathLike[str], chunk_bytes: int = CHUNK) -> None:
        self.path = Path(path)
        self.chunk = max(int(chunk_bytes), 1 << 16)
        self.report = IngestReport(source=str(path), format="pcap")
        self.frames = 0
        self.stop_reason = ""
        self.flow_names: dict[int, tuple[str, str]] = {}
        self._alloc()

    # --- state ---------------------------------------------------------------------------
    def _alloc(self) -> None:
        nflow, nrow, npend, nslot = 1024, 1 << 16, 1 << 15, 64
        self.fkey = np.zeros((nflow, FLOWKEY), np.uint8)
        self.fhash = np.zeros(nflow * 4, np.int64)
        self.fst = np.zeros((nflow, FF), np.int64)
        self.slots = np.zeros((nslot, HEAD + TAIL), np.uint8)
        self.slot_free = np.arange(nslot, dtype=np.int64)
        self.lin = np.zeros(HEAD + TAIL, np.uint8)
        self.ooo = np.zeros((256, OF), np.int64)
        self.opool = np.zeros(1 << 20, np.uint8)
        self.md = np.zeros(5, np.int64)
        self.fmeta = np.zeros((NFRAG, FRF), np.int64)
        self.fbuf = np.zeros((NFRAG, FRAGBUF), np.uint8)
        self.fmap = np.zeros((NFRAG, 8192), np.uint8)
        self.rows = np.zeros((nrow + HR_ROWS, RF), np.int64)
        self.pend = np.zeros((npend + HR_MSGS, PF), np.int64)
        self.jt = np.zeros((1 << 16, 2), np.int64)
        # the frame kernel wants room for at least two headroom units beyond the handles
        # stored: at 2 units the pool would grow (and load a kernel for it) at the first one
        self.fh = np.zeros(HR_FH * 4, np.uint8)
        self.ctr = np.zeros(NCTR, np.int64)
        # the first frames skipped for each reason (frame numbers, -1 unused): the report's
        # examples, as nfsdump's show the first lines skipped
        self.examples = np.full((len(SKIP_NAMES), 3), -1, np.int64)
        self.ctr[C_SLOTTOP] = nslot
        self.ctr[C_LASTB] = -1  # no cached flow yet

    def _tuples(self):
        return (self.fkey, self.fhash, self.fmeta, self.fbuf, self.fmap, self.fst, self.slots,
                self.slot_free, self.lin, self.ooo, self.opool, self.md, self.rows, self.pend,
                self.jt, self.fh, self.ctr)

    def _grow(self) -> None:
        c = self.ctr
        hr = int(headroom_units(c))
        while c[C_NROWS] + HR_ROWS * hr > self.rows.shape[0]:
            self.rows = _enlarge(self.rows, 2 * self.rows.shape[0])
        if c[C_NPEND] + HR_MSGS * hr > self.pend.shape[0]:
            self.expire(c[C_NOW] - WINDOW_NS)
            while c[C_NPEND] + HR_MSGS * hr > self.pend.shape[0] // 2:
                self.pend = _enlarge(self.pend, 2 * self.pend.shape[0])
        if (c[C_NJOIN] + HR_MSGS * hr) * 2 > self.jt.shape[0]:
            size = self.jt.shape[0]
            while (c[C_NPEND] + HR_MSGS * hr) * 4 > size:
                size *= 2
            self.jt = np.zeros((size, 2), np.int64)
            expire(self.pend, self.jt, self.rows, c, np.int64(-(1 << 62)))
        while c[C_NFH] + HR_FH * hr > self.fh.shape[0]:
            self.fh = _enlarge(self.fh, 2 * self.fh.shape[0])
        if c[C_NFLOWS] + 2 > self.fkey.shape[0] or (c[C_NFLOWS] + 2) * 2 > self.fhash.shape[0]:
            n = 2 * self.fkey.shape[0]
            self.fkey = _enlarge(self.fkey, n)
            self.fst = _enlarge(self.fst, n)
            self.fhash = fnv_rehash(self.fkey, c[C_NFLOWS], 4 * n)
        if c[C_SLOTTOP] < 2:
            old = self.slots.shape[0]
            self.slots = _enlarge(self.slots, 2 * old)
            free = np.zeros(2 * old, np.int64)
            free[: c[C_SLOTTOP]] = self.slot_free[: c[C_SLOTTOP]]
            free[c[C_SLOTTOP]: c[C_SLOTTOP] + old] = np.arange(old, 2 * old)
            c[C_SLOTTOP] += old
            self.slot_free = free
        if c[C_OOON] + 2 > self.ooo.shape[0]:
            self.ooo = _enlarge(self.ooo, 2 * self.ooo.shape[0])
        if c[C_OOOBYTES] + 70000 > self.opool.shape[0]:
            compact_ooo(self.ooo, self.opool, c)
            if c[C_OOOBYTES] + 70000 > self.opool.shape[0] // 2:
                self.opool = _enlarge(self.opool, 2 * self.opool.shape[0])

    def expire(self, cutoff: int) -> None:
        expire(self.pend, self.jt, self.rows, self.ctr, np.int64(cutoff))

    # --- reading -------------------------------------------------------------------------
    def _open(self) -> tuple[IO[bytes], bytes]:
        if not self.path.exists():
            raise IngestError(self.path, "no such file")
        if self.path.is_dir():
            raise IngestError(self.path, "is a directory; give a capture file")
        f = open_input(self.path)
        try:
            head = f.read(24)
        except (OSError, *_DECOMPRESS_ERRORS) as exc:
            f.close()
            raise IngestError(self.path, f"cannot read: {exc}") from exc
        if not head:
            f.close()
            raise IngestError(self.path, "is empty (zero bytes)")
        return f, head

    def batches(self) -> Iterator[pa.Table]:
        f, head = self._open()
        with f:
            hdr = ct.parse_pcap_header(head)
            if hdr is not None:
                self.report.extra["container"] = "pcap"
                self.report.extra["linktypes"] = [hdr.linktype]
                start = 24
            elif head[:4] == ct.PCAPNG_SHB:
                if len(head) < 12 or not ct.is_pcapng(head[:12]):
                    raise IngestError(self.path, "pcapng section header is cut short or has "
                                      "no byte-order magic")
                self.report.extra["container"] = "pcapng"
                start = 0
            else:
                if len(head) < 24 and head[:4] in ct.PCAP_MAGICS:
                    raise IngestError(self.path, f"pcap file header is cut short ({len(head)} "
                                      "of 24 bytes)")
                raise IngestError(self.path, "not a pcap or pcapng capture (magic "
                                  f"{head[:4].hex()})")
            self._walk_setup(hdr)
            if type(f) is io.BufferedReader and hasattr(mmap, "MAP_PRIVATE"):
                # plain file: map it window by window (no copy; pages leave with the window)
                yield from self._run_mmap(f.fileno(), start)
            else:
                yield from self._run_stream(f, head[start:] if hdr is None else b"")
        yield from self._finish()

    def _walk_setup(self, hdr: ct.PcapHeader | None) -> None:
        self.hdr = hdr
        self.st = np.zeros(2, np.int64)
        self.ifs = np.zeros((ct.MAXIF, 5), np.int64)
        self.maxcap = max(262144, min(hdr.snaplen, 1 << 24)) if hdr is not None else 0
        self.fa = _frame_arrays(self.chunk)

    def _walk_batch(self, buf: np.ndarray, pos: int, end: int,
                    fa: tuple[np.ndarray, ...]) -> tuple[int, int, int]:
        """Walk the next complete records of buf[pos:end] into ``fa``; (frames, new pos, stop
        reason). Reads only the buffer and the walk's own state (the container's header,
        pcapng's interfaces), never the decoder's: the walk may run ahead of the decoding."""
        foff, fcap, fwire, fts, flink = fa
        if self.hdr is not None:
            h = self.hdr
            return ct.walk_pcap(buf, pos, end, h.big_endian, h.nanosecond, self.maxcap,
                                h.linktype, foff, fcap, fwire, fts, flink)
        return ct.walk_pcapng(buf, pos, end, self.st, self.ifs, foff, fcap, fwire, fts, flink)

    def _decode_batch(self, buf: np.ndarray, fa: tuple[np.ndarray, ...], n: int) -> None:
        foff, fcap, _, fts, flink = fa
        self._decode(buf, foff, fcap, flink, fts, n)
        self.frames += n

    def _walk(self, buf: np.ndarray, pos: int, end: int) -> tuple[int, int]:
        """Walk and decode the complete records in buf[pos:end]; (new pos, stop reason)."""
        while True:
            n, pos, why = self._walk_batch(buf, pos, end, self.fa)
            self._decode_batch(buf, self.fa, n)
            if why != ct.FULL:
                return pos, why

    def _corrupt(self) -> None:
        self.frames += 1
        note_skip(self.ctr, self.examples, S_CORRUPT, self.frames)
        self.stop_reason = (f"frame {self.frames}: record header makes no sense (impossible "
                            "length); stopped reading there")

    def _stopped_at(self, offset: int, unread: int | None) -> None:
        """Where reading stopped (byte offset in the file, or in the decompressed stream of a
        compressed file) and how many bytes were left unread (None: unknown, the rest of a
        damaged compressed stream cannot be measured)."""
        self.stop_offset = int(offset)
        self.stop_unread = None if unread is None else int(unread)

    def _cut(self, rest: int) -> None:
        self.frames += 1
        note_skip(self.ctr, self.examples, S_TRUNCREC, self.frames)
        cut = f"frame {self.frames}: cut short by the end of the file ({rest} bytes of it present)"
        self.stop_reason = f"{self.stop_reason}; {cut}" if self.stop_reason else cut

    def _run_mmap(self, fd: int, start: int) -> Iterator[pa.Table]:
        """Decode a plain file window by window while a helper thread maps and walks ahead.

        The walk of a window needs only the bytes and where the previous walk stopped, never
        the decoder's state, so a thread (``_walk_windows``) maps the windows and walks their
        records one batch ahead of the frame kernel (both kernels release the GIL). Here the
        batches are decoded, and the windows ended, in the order the walk made them: the
        decoder sees the same calls as when one thread did both."""
        size = os.fstat(fd).st_size
        if start >= size:
            return
        free: queue.SimpleQueue = queue.SimpleQueue()  # frame arrays the decoder is done with
        walked: queue.SimpleQueue = queue.SimpleQueue()  # the walk's output, in order
        for _ in range(2):  # two sets: walk one batch while the other is decoded
            free.put(())
        walker = threading.Thread(target=self._walk_windows, args=(fd, start, size, free, walked),
                                  name="seqheur-pcap-walk", daemon=True)
        walker.start()
        try:
            while True:
                item = walked.get()
                if isinstance(item, BaseException):
                    raise item
                if len(item) == 3:  # a batch of frames
                    buf, fa, n = item
                    self._decode_batch(buf, fa, n)
                    del item, buf
                    free.put(fa)
                    continue
                mm, file_pos, why, last = item  # the end of a window's walk
                del item
                try:
                    mm.close()
                except BufferError:  # a view is still referenced: the mapping goes with it
                    pass
                del mm
                yield from self._emit(final=False)
                if why == ct.CORRUPT:
                    self._corrupt()
                    self._stopped_at(file_pos, size - file_pos)
                    return
                if last:  # the window reached the end of the file
                    if file_pos < size:
                        self._cut(size - file_pos)
                        self._stopped_at(file_pos, size - file_pos)
                    return
        finally:
            free.put(None)  # a walk waiting for arrays stops there
            walker.join()

    def _walk_windows(self, fd: int, start: int, size: int, free: queue.SimpleQueue,
                      walked: queue.SimpleQueue) -> None:
        """The helper thread of ``_run_mmap``: map the file window by window and walk each
        window's records into frame arrays taken from ``free`` (None there: stop); put
        ``(buf, arrays, frames)`` for each batch and ``(mmap, file offset where the walk
        stopped, stop reason, window reached the end)`` after each window on ``walked``,
        then stop after a corrupt record or the file's last window. An error is put there too,
        in its place in the order."""
        try:
            gran = mmap.ALLOCATIONGRANULARITY
            window = max(self.chunk, gran)
            maxn = _frame_count(window)
            file_pos = start
            flags = mmap.MAP_PRIVATE  # (MAP_POPULATE would copy every page of a writable map)
            while True:
                base = file_pos - file_pos % gran
                length = min(window, size - base)
                mm = mmap.mmap(fd, length, flags=flags, prot=mmap.PROT_READ | mmap.PROT_WRITE,
                               offset=base)
                _prefault(mm)
                buf = np.frombuffer(mm, np.uint8)
                pos = file_pos - base
                while True:
                    fa = free.get()
                    if fa is None:  # the decoder stopped
                        return
                    if not fa or fa[0].shape[0] != maxn:
                        fa = _frame_arrays(window)
                    n, pos, why = self._walk_batch(buf, pos, length, fa)
                    walked.put((buf, fa, n))
                    if why != ct.FULL:
                        break
                del buf
                last = base + length >= size
                walked.put((mm, base + pos, why, last))
                del mm
                progressed = base + pos > file_pos
                file_pos = base + pos
                if why == ct.CORRUPT or last:
                    return
                if not progressed:  # one record larger than the window
                    window *= 2
                    maxn = _frame_count(window)
        except BaseException as exc:  # raised by the decoder's thread, in its place
            walked.put(exc)

    def _run_stream(self, f: IO[bytes], carry: bytes) -> Iterator[pa.Table]:
        buf = np.empty(self.chunk, np.uint8)
        have = len(carry)
        buf[:have] = np.frombuffer(carry, np.uint8)
        eof = False
        pos = 0
        done = 0  # bytes of the (decompressed) stream before buf[0]
        while True:
            if not eof and have < buf.shape[0]:
                got = _readinto(f, buf, have, self)
                if got == 0:
                    eof = True
                have += got
            pos, why = self._walk(buf, pos, have)
            yield from self._emit(final=False)
            if why == ct.CORRUPT:
                self._corrupt()
                self._stopped_at(done + pos, None)
                return
            rest = have - pos
            if eof:
                damaged = bool(self.stop_reason)  # the decompressor gave up: rest unknown
                if rest > 0:
                    self._cut(rest)
                if rest > 0 or damaged:
                    self._stopped_at(done + pos, None if damaged else rest)
                return
            if pos == 0 and have == buf.shape[0]:  # one record larger than the buffer
                bigger = np.empty(buf.shape[0] * 2, np.uint8)
                bigger[:have] = buf[:have]
                buf = bigger
                self.fa = _frame_arrays(buf.shape[0])
                continue
            buf[:rest] = buf[pos:have].copy()
            done += pos
            have = rest
            pos = 0

    def _decode(self, buf, foff, fcap, flink, fts, n) -> None:
        i = 0
        while i < n:
            fkey, fhash, fmeta, fbuf, fmap, fst, slots, slot_free, lin, ooo, opool, md, rows, pend, jt, fh, ctr = self._tuples()
            i = process(buf, foff, fcap, flink, fts, i, n, self.frames, fkey, fhash, fmeta, fbuf, fmap, fst, slots, slot_free, lin, ooo, opool, md, rows, pend, jt, fh, ctr, self.examples)
            if i < n:
                self._grow()

    def _finish(self) -> Iterator[pa.Table]:
        c = self.ctr
        # waiting out-of-order segments: jump their holes now
        fl = c[C_NFLOWS]
        for flow in range(fl):
            for d in range(2):
                if self.fst[flow, F_DIR0 + d * DN + D_OOO] > 0:
                    self._grow()  # room for everything the waiting segments may hold
                    fkey, fhash, fmeta, fbuf, fmap, fst, slots, slot_free, lin, ooo, opool, md, rows, pend, jt, fh, ctr = self._tuples()
                    drain(flow, d, self.fst[flow, 0], True, fst, slots, slot_free, lin, ooo, opool, md, rows, pend, jt, fh, ctr)
        for s in range(NFRAG):
            if self.fmeta[s, FR_USED]:
                c[S_FRAGINC] += self.fmeta[s, FR_NFRAMES]
                self.fmeta[s, FR_USED] = 0
        self.expire(np.iinfo(np.int64).max)
        yield from self._emit(final=True)
        self._fill_report()

    # --- output --------------------------------------------------------------------------
    def _emit(self, final: bool) -> Iterator[pa.Table]:
        c = self.ctr
        if not final:
            self.expire(c[C_NOW] - WINDOW_NS)
        n = int(c[C_NROWS])
        k = int(settle(self.rows, self.pend, self.fh, c, n))
        if k == 0 or (not final and k < BATCH_ROWS):
            return  # batches of at least BATCH_ROWS rows keep Arrow's per-table cost small
        table = self._table(k)
        shift_rows(self.rows, self.pend, self.fh, c, k, np.empty_like(self.fh))
        self.report.rows += k
        yield table

    def _names(self, flow: int) -> tuple[str, str]:
        got = self.flow_names.get(flow)
        if got is None:
            key = bytes(self.fkey[flow])
            alen = key[37]
            a = _addr(key[0:alen], int.from_bytes(key[32:34], "big"))
            b = _addr(key[16:16 + alen], int.from_bytes(key[34:36], "big"))
            got = self.flow_names[flow] = (a, b)
        return got

    def _table(self, k: int) -> pa.Table:
        r = self.rows[:k]
        mask = r[:, R_MASK]
        flows = r[:, R_FLOW]
        sides = r[:, R_SIDE]
        ends: dict[str, int] = {}
        cli = np.empty(k, np.int32)
        srv = np.empty(k, np.int32)
        uniq, inv = np.unique(flows * 2 + sides, return_inverse=True)
        cli_u = np.empty(len(uniq), np.int32)
        srv_u = np.empty(len(uniq), np.int32)
        for j, kv in enumerate(uniq.tolist()):
            a, b = self._names(kv // 2)
            c_name, s_name = (a, b) if kv % 2 == 0 else (b, a)
            cli_u[j] = ends.setdefault(c_name, len(ends))
            srv_u[j] = ends.setdefault(s_name, len(ends))
        cli = cli_u[inv.reshape(-1)]
        srv = srv_u[inv.reshape(-1)]
        endpoint_dict = pa.array(list(ends), pa.string())
        ops = r[:, R_OP]
        uops, op_idx = np.unique(ops, return_inverse=True)
        # (string lists typed: inferring their type imports dateutil, 3 ms of a start-up)
        op_arr = pa.DictionaryArray.from_arrays(
            pa.array(op_idx.astype(np.int32)),
            pa.array([op_name(int(o)) for o in uops], pa.string()))
        proto = r[:, R_PROTO]
        tr = pa.DictionaryArray.from_arrays(pa.array((proto == 6).astype(np.int32)),
                                            pa.array(["udp", "tcp"], pa.string()))
        has_fh = (mask & M_FH) != 0
        offs = np.empty(k + 1, np.int32)
        data = np.empty(max(int(r[:, R_FHLEN][has_fh].sum()), 1), np.uint8)
        first = np.empty(k, np.int64)
        seen = np.empty(_pow2_at_least(2 * k), np.int64)
        gather_fh(self.rows, self.fh, k, offs, data, first, seen)
        fh_arr = pa.Array.from_buffers(
            pa.binary(), k, [pa.py_buffer(np.packbits(has_fh, bitorder="little")),
                             pa.py_buffer(offs), pa.py_buffer(data)], null_count=int(k - has_fh.sum()))
        # file_id and fh_crc32 of each distinct handle (the kernel found them), as
        # schema.fh_columns computes them; here without Arrow's dictionary_encode, whose
        # pyarrow.compute import costs 0.03 s of CPU, a twentieth of a small capture's ingest
        lead = np.flatnonzero(first == np.arange(k))
        handles = [data[offs[r]:offs[r + 1]].tobytes() for r in lead.tolist()]
        which = np.zeros(k, np.int64)
        which[lead] = np.arange(len(lead))
        which = which[np.maximum(first, 0)]
        ids = np.fromiter((file_id_of(h) for h in handles), np.uint64, len(handles))
        crcs = np.fromiter((crc32_of(h) for h in handles), np.uint32, len(handles))
        no_fh = ~has_fh

        def col(field: int, bit: int, dtype: type) -> pa.Array:
            # converted by numpy, not by an Arrow cast: the cast imports pyarrow.compute
            # (~0.025 s of CPU, a twentieth of a small capture's ingest); the kernels store
            # these fields from XDR words of the column's width, so the values fit
            vals = r[:, field]
            vals = vals.view(np.uint64) if dtype is np.uint64 else vals.astype(dtype)
            return pa.array(vals, mask=(mask & bit) == 0)

        columns = {
            "time": pa.array(r[:, R_TIME], pa.int64()),
            "reply_time": pa.array(r[:, R_RTIME], mask=(mask & M_RTIME) == 0, type=pa.int64()),
            "client": pa.DictionaryArray.from_arrays(pa.array(cli), endpoint_dict),
            "server": pa.DictionaryArray.from_arrays(pa.array(srv), endpoint_dict),
            "transport": tr,
            "xid": pa.array(r[:, R_XID].astype(np.uint32)),
            "vers": pa.array(r[:, R_VERS].astype(np.uint8)),
            "minor": col(R_MINOR, M_MINOR, np.uint8),
            "op": op_arr,
            "fh": fh_arr,
            "file_id": pa.array(ids[which] if len(ids) else np.zeros(k, np.uint64), mask=no_fh),
            "fh_crc32": pa.array(crcs[which] if len(crcs) else np.zeros(k, np.uint32),
                                 mask=no_fh),
            "offset": col(R_OFFSET, M_OFFSET, np.uint64),
            "count": col(R_COUNT, M_COUNT, np.uint32),
            "ret_count": col(R_RETCOUNT, M_RET, np.uint32),
            "eof": pa.array(r[:, R_EOF] != 0, mask=(mask & M_EOF) == 0),
            "status": col(R_STATUS, M_STATUS, np.uint32),
            "file_size": col(R_FSIZE, M_FSIZE, np.uint64),
            "source_index": pa.array(r[:, R_FRAME].astype(np.uint64)),
        }
        return build_request_table(columns, n=k)

    def _fill_report(self) -> None:
        c = self.ctr
        rep = self.report
        rep.records_total = self.frames
        rep.parsed = int(c[C_PARSED])
        for i, name in enumerate(SKIP_NAMES):
            v = int(c[C_SKIP0 + i])
            if v:
                rep.skip(name, n=v)
        for frame, i in sorted((int(f), i) for i, row in enumerate(self.examples)
                               for f in row if f >= 0 and SKIP_NAMES[i] not in _NO_EXAMPLE):
            if len(rep.examples) < rep.MAX_EXAMPLES:
                rep.examples.append((frame, SKIP_NAMES[i], ""))
        rep.calls = int(c[C_CALLS])
        rep.replies = int(c[C_REPLIES])
        rep.matched = int(c[C_MATCHED])
        rep.orphan_calls = int(c[C_ORPHAN_CALLS])
        rep.orphan_replies = int(c[C_ORPHAN_REPLIES])
        rep.retransmissions = int(c[C_RETRANS])
        rep.extra["rpc_calls"] = int(c[C_RPC_CALLS])
        rep.extra["rpc_replies"] = int(c[C_RPC_REPLIES])
        rep.extra["rpc_programs"] = {name: int(c[C_PROG0 + i]) for i, name in enumerate(PROG_NAMES)
                                     if c[C_PROG0 + i]}
        for key, idx in (("rpc_malformed", C_RPC_MALFORMED), ("rpc_denied", C_RPC_DENIED),
                         ("rpc_accept_errors", C_RPC_ACCEPT_ERR),
                         ("tcp_records_abandoned", C_RPC_TRUNCMSG), ("tcp_gaps", C_TCP_GAPS),
                         ("tcp_gap_bytes", C_TCP_GAP_BYTES), ("nfs_undecoded", C_NFS_UNDECODED),
                         ("nfs4_unknown_ops", C_NFS4_UNKNOWN_OP),
                         ("nfs_other_versions", C_NFS_VERS_OTHER),
                         ("rpcsec_gss_control", C_GSS_CONTROL),
                         ("rpcsec_gss_privacy", C_GSS_PRIVACY),
                         ("empty_records", C_EMPTY_RECORD),
                         ("ip_datagrams_reassembled", C_FRAG_DATAGRAMS),
                         ("nfs4_rows_capped", C_V4_ROWS_CAPPED)):
            rep.extra[key] = int(c[idx])
        if self.stop_reason:
            rep.extra["stopped"] = self.stop_reason
            rep.extra["stopped_at_byte"] = getattr(self, "stop_offset", None)
            rep.extra["bytes_unread"] = getattr(self, "stop_unread", None)


MADV_POPULATE_READ = 22  # Linux >= 5.14: map the window's pages in one call, no COW copies


def _prefault(mm: mmap.mmap) -> None:
    """Map a window's pages up front (one system call instead of a fault per few pages)."""
    try:
        mm.madvise(MADV_POPULATE_READ)
    except (OSError, ValueError, AttributeError):
        try:
            mm.madvise(mmap.MADV_WILLNEED)
        except (OSError, ValueError, AttributeError):
            pass


def _frame_count(nbytes: int) -> int:
    # walk and decode at most FRAME_BATCH frames at a time: read in one thread, their headers
    # are still in the CPU cache when the decoder reads them after the walk; mapped, the walk
    # runs at most one batch ahead of the decoder
    return min(nbytes // 16 + 1, FRAME_BATCH)


def _frame_arrays(nbytes: int) -> tuple[np.ndarray, ...]:
    """Per-frame arrays of one walk batch (data offset, captured and wire length, time,
    link type) for a buffer of ``nbytes``."""
    maxn = _frame_count(nbytes)
    return tuple(np.empty(maxn, np.int64) for _ in range(5))


def _pow2_at_least(n: int) -> int:
    return 1 << max(int(n) - 1, 1).bit_length()


def _enlarge(a: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros((n,) + a.shape[1:], a.dtype)
    out[: a.shape[0]] = a
    return out


_DECOMPRESS_ERRORS = decompression_errors()


def _readinto(f: IO[bytes], buf: np.ndarray, at: int, dec: "Decoder") -> int:
    """Fill ``buf[at:]``; of a damaged or cut compressed stream, keep every byte decoded
    before the damage (``readinto1`` hands over each decompressed piece, where one large
    ``readinto`` would drop the whole call's data on the error)."""
    view = memoryview(buf)[at:]
    read = getattr(f, "readinto1", None) or f.readinto  # type: ignore[attr-defined]
    total = 0
    while total < len(view):
        try:
            got = read(view[total:])
        except _DECOMPRESS_ERRORS as exc:
            # a damaged or cut compressed stream: what was decoded before stands
            dec.stop_reason = dec.stop_reason or f"decompression stopped: {exc}"
            return total
        except OSError as exc:
            raise IngestError(dec.path, f"read failed: {exc}") from exc
        if not got:
            break
        total += got
    return total


def _addr(raw: bytes, port: int) -> str:
    if len(raw) == 4:
        return f"{ipaddress.IPv4Address(raw)}:{port}"
    return f"[{ipaddress.IPv6Address(raw)}]:{port}"
