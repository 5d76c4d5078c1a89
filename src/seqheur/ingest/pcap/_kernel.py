"""Top-level numba kernels of the decoder: the per-frame loop, call expiry, row batches.

Kept apart from the Python driver (_engine.py) so that editing the driver does not invalidate
the compiled cache of the (large) frame kernel. The kernels run once per batch do not allocate
(the driver passes their outputs and scratch space) and copy with loops, not slice
assignment: then they need neither numba's runtime nor its array module, whose set-up a
fresh process pays when it loads a cached kernel using them (0.04 s of CPU, a tenth of a
small capture's `seqheur ingest`).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from . import container as ct
from ._layout import (C_DEFERRED, C_NFH, C_SKIP0, C_NFLOWS, C_NJOIN, C_NOW, C_NPEND, C_NROWS,
                      C_OOOBYTES, C_OOON, C_ORPHAN_CALLS, C_SLOTTOP, HR_FH, HR_MSGS, HR_ROWS,
                      M_FH, NJ, NJA, P_KEY, P_NROWS, P_PROC, P_PROG, P_ROW0, P_STATE, P_TIME,
                      R_DONE, R_FHLEN, R_FHOFF, R_MASK, S_BADIF, S_CORRUPT)
from ._xdr import be16, be32, copy
from .net import flow_get, frame_outcome, l4
from .tcp import tcp_segment
from .rpc import join_insert


# frames ahead whose headers the frame kernel asks the CPU to fetch: a frame takes ~150 ns,
# a load from memory ~100 ns
PREFETCH_AHEAD = 3


@intrinsic
def prefetch(typingctx, arr, idx):
    """Ask the CPU to bring ``arr[idx]``'s cache line in (LLVM's ``llvm.prefetch``: a read,
    kept in every cache level). A hint: no effect on any result, and an address outside the
    array cannot fault."""
    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
            "llvm.prefetch.p0i8")
        builder.call(fn, [builder.bitcast(builder.gep(ary.data, [args[1]]), i8p),
                          i32(0), i32(3), i32(1)])
        return context.get_dummy_value()
    return types.void(arr, idx), codegen


@njit(**NJ)
def headroom_units(ctr):
    """Frames' worth (64 KiB) of stream bytes one step may decode: the frame itself plus every
    out-of-order segment it may release."""
    return 1 + ctr[C_OOOBYTES] // 65536 + 1


@njit(**NJ)
def note_skip(ctr, examples, code, frame):
    """Count frame ``frame`` under outcome ``code``; the first few frames skipped for each
    reason are kept as examples (``examples[reason, k]``, -1 unused)."""
    k = code - C_SKIP0
    if 0 <= k < examples.shape[0] and ctr[code] < examples.shape[1]:
        examples[k, ctr[code]] = frame
    ctr[code] += 1


@njit(**NJ)
def process(buf, foff, fcap, flink, fts, i0, n, fbase, fkey, fhash, fmeta, fbuf, fmap, fst, slots, slot_free, lin, ooo, opool, md, rows, pend, jt, fh, ctr, examples):
    """Decode frames i0..n-1; returns where it stopped (n, or earlier when a pool is low)."""
    for i in range(i0, n):
        # one frame may release every waiting out-of-order segment too: room for all of them
        hr = headroom_units(ctr)
        if ctr[C_NROWS] + HR_ROWS * hr > rows.shape[0] \
                or ctr[C_NPEND] + HR_MSGS * hr > pend.shape[0] \
                or (ctr[C_NJOIN] + HR_MSGS * hr) * 2 > jt.shape[0] \
                or ctr[C_NFH] + HR_FH * hr > fh.shape[0] \
                or (ctr[C_NFLOWS] + 2) * 2 > fhash.shape[0] or ctr[C_NFLOWS] + 2 > fkey.shape[0] \
                or ctr[C_SLOTTOP] < 2 or ctr[C_OOON] + 2 > ooo.shape[0] \
                or ctr[C_OOOBYTES] + 70000 > opool.shape[0]:
            return i
        if i + PREFETCH_AHEAD < n:
            # the walk that found these frames may have run on another core: fetch the
            # headers (link, IP, TCP, RPC, NFS: the first ~190 bytes) of a frame ahead
            ahead = foff[i + PREFETCH_AHEAD]
            prefetch(buf, ahead)
            prefetch(buf, ahead + 64)
            prefetch(buf, ahead + 128)
        lk = flink[i]
        if lk == ct.LINK_BAD_IF:
            note_skip(ctr, examples, S_BADIF, fbase + i + 1)
            continue
        if lk == ct.LINK_CORRUPT:
            note_skip(ctr, examples, S_CORRUPT, fbase + i + 1)
            continue
        ts = fts[i]
        if ts > ctr[C_NOW]:
            ctr[C_NOW] = ts
        off = foff[i]
        cl = fcap[i]
        code = -2
        # fast path for the usual frame (Ethernet, IPv4 without options or fragments, TCP or
        # UDP, headers complete): two call levels fewer; anything else takes frame_outcome,
        # which makes the same decisions with all the checks
        if lk == 1 and cl >= 42 and buf[off + 12] == 8 and buf[off + 13] == 0 \
                and buf[off + 14] == 0x45:
            p = off + 14
            tot = be16(buf, p + 2)
            ff = be16(buf, p + 6)
            proto = np.int64(buf[p + 9])
            if tot > 20 and (ff & 0x3FFF) == 0 and (proto == 6 or proto == 17):
                q = p + 20
                l4len = tot - 20
                l4avail = min(l4len, off + cl - q)
                if proto == 6:
                    if l4avail >= 20:
                        doff = (np.int64(buf[q + 12]) >> 4) * 4
                        if doff >= 20 and doff <= l4avail:
                            flow, d = flow_get(buf, p + 12, p + 16, 4, be16(buf, q),
                                               be16(buf, q + 2), 6, fkey, fhash, fst, ctr)
                            code = tcp_segment(buf, q + doff, l4len - doff, l4avail - doff,
                                               be32(buf, q + 4), np.int64(buf[q + 13]), flow, d,
                                               6, fbase + i + 1, ts, fst, slots, slot_free, lin,
                                               ooo, opool, md, rows, pend, jt, fh, ctr)
                elif l4avail >= 8:
                    code = l4(buf, q, l4len, l4avail, buf, p + 12, p + 16, 4, 17, fbase + i + 1,
                              ts, fkey, fhash, fst, slots, slot_free, lin, ooo, opool, md, rows,
                              pend, jt, fh, ctr)
        if code == -2:
            code = frame_outcome(buf, off, cl, lk, fbase + i + 1, ts, fkey, fhash, fmeta, fbuf, fmap, fst, slots, slot_free, lin, ooo, opool, md, rows, pend, jt, fh, ctr)
        if code >= 0 and code != C_DEFERRED:
            note_skip(ctr, examples, code, fbase + i + 1)
    return n


@njit(**NJA)
def fnv_rehash(fkey, n, size):
    fhash = np.zeros(size, np.int64)
    mask = np.uint64(size - 1)
    for f in range(n):
        h = np.uint64(0xCBF29CE484222325)
        for i in range(38):
            h = (h ^ np.uint64(fkey[f, i])) * np.uint64(0x100000001B3)
        j = np.int64(h & mask)
        while fhash[j] != 0:
            j = np.int64((np.uint64(j) + np.uint64(1)) & mask)
        fhash[j] = f + 1
    return fhash


@njit(**NJ)
def expire(pend, jt, rows, ctr, cutoff):
    """Forget calls made before ``cutoff`` (capture ns); compact the table; rebuild the join.

    Unanswered NFS calls among them become orphan calls; their rows are final."""
    n = ctr[C_NPEND]
    if cutoff > -(1 << 62):  # (the lowest cutoff asks for a rebuild of the join table only)
        old = False
        for e in range(n):
            if pend[e, P_TIME] < cutoff:
                old = True
                break
        if not old:
            return
    w = 0
    for e in range(n):
        if pend[e, P_TIME] < cutoff:
            if pend[e, P_STATE] == 0 and pend[e, P_PROG] == 100003 and pend[e, P_PROC] >= 0:
                ctr[C_ORPHAN_CALLS] += 1
            r0 = pend[e, P_ROW0]
            if r0 >= 0:
                for k in range(pend[e, P_NROWS]):
                    rows[r0 + k, R_DONE] = 1
            continue
        if w != e:
            for j in range(pend.shape[1]):
                pend[w, j] = pend[e, j]
        w += 1
    ctr[C_NPEND] = w
    for i in range(jt.shape[0]):
        jt[i, 0] = 0
        jt[i, 1] = 0
    ctr[C_NJOIN] = 0
    for e in range(w):
        join_insert(jt, pend[e, P_KEY], e, ctr)


@njit(**NJ)
def settle(rows, pend, fh, ctr, upto):
    """Number k of leading rows that are final (reply seen or call expired), at most upto."""
    k = 0
    while k < upto and rows[k, R_DONE] != 0:
        k += 1
    return k


@njit(**NJ)
def shift_rows(rows, pend, fh, ctr, k, scratch):
    """Drop rows [0, k) (already emitted): move the rest down, re-point calls and handles
    (``scratch``: as many bytes as ``fh``)."""
    n = ctr[C_NROWS]
    m = n - k
    for r in range(m):  # upwards: row k + r is read before anything overwrites it
        for j in range(rows.shape[1]):
            rows[r, j] = rows[k + r, j]
    for e in range(ctr[C_NPEND]):
        r0 = pend[e, P_ROW0]
        if r0 >= 0:
            pend[e, P_ROW0] = r0 - k if r0 >= k else -1
    ctr[C_NROWS] = m
    # compact the handle arena to the remaining rows' handles
    w = 0
    for r in range(m):
        if rows[r, R_MASK] & M_FH:
            o = rows[r, R_FHOFF]
            ln = rows[r, R_FHLEN]
            copy(scratch, w, fh, o, ln)
            rows[r, R_FHOFF] = w
            w += ln
    copy(fh, 0, scratch, 0, w)
    ctr[C_NFH] = w


@njit(**NJ)
def gather_fh(rows, fh, k, offs, data, first, seen):
    """Fill the Arrow binary buffers of the handles of rows [0, k) (``offs``: k + 1 int32
    offsets, ``data``: their bytes) and, for each row, ``first``: the first of those rows
    holding the same handle bytes (-1: no handle), so that each distinct handle is hashed
    once into ``file_id`` and ``fh_crc32``. ``seen``: a power of two >= 2k of int64."""
    total = 0
    offs[0] = 0
    for r in range(k):
        if rows[r, R_MASK] & M_FH:
            copy(data, total, fh, rows[r, R_FHOFF], rows[r, R_FHLEN])
            total += rows[r, R_FHLEN]
        offs[r + 1] = total
    for j in range(seen.shape[0]):
        seen[j] = -1
    mask = np.uint64(seen.shape[0] - 1)  # open addressing on FNV-1a of the handle bytes
    for r in range(k):
        first[r] = -1
        if rows[r, R_MASK] & M_FH:
            a = offs[r]
            n = offs[r + 1] - a
            h = np.uint64(0xCBF29CE484222325)
            for i in range(a, a + n):
                h = (h ^ np.uint64(data[i])) * np.uint64(0x100000001B3)
            j = np.int64(h & mask)
            while first[r] < 0:
                q = seen[j]
                if q < 0:
                    seen[j] = r
                    first[r] = r
                elif offs[q + 1] - offs[q] == n and _same_bytes(data, offs[q], a, n):
                    first[r] = q
                else:
                    j = np.int64((np.uint64(j) + np.uint64(1)) & mask)


@njit(**NJ)
def _same_bytes(data, a, b, n):
    for i in range(n):
        if data[a + i] != data[b + i]:
            return False
    return True
