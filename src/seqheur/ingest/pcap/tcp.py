"""TCP per-connection reassembly and RPC record marking (RFC 5531 §11).

Each direction of a connection is a byte stream tracked by its next expected sequence number.
In-order payload runs through a record-marking state machine; a record found whole inside one
segment is decoded straight from the capture buffer, anything longer is assembled in a slot
that keeps its first HEAD and last TAIL bytes (enough for every field we read). Out-of-order
segments wait in a pool until the hole fills; after OOO_PER_DIR waiting segments (or at the
end of the capture) the hole is declared a gap. Streams that start mid-record (capture
started late, gap) resynchronise on the first plausible record mark + RPC header.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._layout import (C_DEFERRED, C_EMPTY_RECORD, C_OOOBYTES, C_OOON, C_PARSED, C_RPC_TRUNCMSG,
                      C_SLOTTOP, C_TCP_GAP_BYTES, C_TCP_GAPS, D_BAD, D_FRAG, D_HAVE, D_HDRN,
                      D_HDRV, D_HLEN, D_INMSG, D_LAST, D_MLEN, D_NEXT, D_OOO, D_SLOT, D_SYNC,
                      D_TAILN, D_TBAD, DN, F_DIR0, HEAD, MAXREC, NJ, O_AVAIL, O_DIR, O_FLOW,
                      O_FRAME, O_LEN, O_POFF, O_SEQ, O_TS, O_USED, OOO_PER_DIR, S_NOPAYLOAD,
                      S_RETRANS, S_UNSYNCED, TAIL, NJA)
from ._xdr import be32, copy
from .rpc import looks_like_call, looks_like_reply, rpc_message

M32 = (1 << 32) - 1


@njit(**NJ)
def sdelta(a, b):
    """a - b as a signed 32-bit sequence-space difference."""
    d = (a - b) & M32
    if d >= (1 << 31):
        d -= 1 << 32
    return d


@njit(**NJ)
def find_mark(src, a, n, md):
    """Offset in src[a:a+n] of the first plausible record mark followed by an RPC header
    (md is scratch)."""
    for q in range(0, n - 15):
        v = be32(src, a + q)
        flen = v & 0x7FFFFFFF
        if flen < 12 or flen > MAXREC:
            continue
        b = src[a + q + 8]
        if b != 0:
            continue  # msg_type's high byte is zero
        md[0] = a + q + 4
        md[1] = min(n - q - 4, flen)
        md[2] = 0
        md[3] = 0
        md[4] = flen
        if looks_like_call(src, md) or looks_like_reply(src, md):
            return q
    return -1


@njit(**NJ)
def slot_free_(slot_free, ctr, s):
    top = ctr[C_SLOTTOP]
    slot_free[top] = s
    ctr[C_SLOTTOP] = top + 1


@njit(**NJ)
def reset_msg(fst, flow, b, slot_free, ctr, abandoned):
    if fst[flow, b + D_INMSG] != 0:
        if abandoned:
            ctr[C_RPC_TRUNCMSG] += 1
        s = fst[flow, b + D_SLOT]
        if s >= 0:
            slot_free_(slot_free, ctr, s)
    fst[flow, b + D_SLOT] = -1
    fst[flow, b + D_INMSG] = 0
    fst[flow, b + D_MLEN] = 0
    fst[flow, b + D_FRAG] = 0
    fst[flow, b + D_HDRN] = 0
    fst[flow, b + D_HDRV] = 0
    fst[flow, b + D_LAST] = 0


@njit(**NJ)
def lose_sync(fst, flow, b, slot_free, ctr):
    reset_msg(fst, flow, b, slot_free, ctr, True)
    fst[flow, b + D_SYNC] = 0


@njit(**NJ)
def complete(flow, b, d, proto, frame, ts, fst, slots, slot_free, lin, ooo, opool, md, rows, pend, jt, fh, ctr):
    s = fst[flow, b + D_SLOT]
    m = fst[flow, b + D_MLEN]
    hl = fst[flow, b + D_HLEN]
    tl = min(TAIL, m - fst[flow, b + D_TBAD])
    if tl < 0:
        tl = 0
    copy(lin, 0, slots[s], 0, hl)
    t0 = m - tl
    r0 = t0 % TAIL
    c = min(tl, TAIL - r0)
    copy(lin, hl, slots[s], HEAD + r0, c)
    copy(lin, hl + c, slots[s], HEAD, tl - c)
    md[0] = 0
    md[1] = hl
    md[2] = hl
    md[3] = tl
    md[4] = m
    reset_msg(fst, flow, b, slot_free, ctr, False)
    rpc_message(lin, md, flow, d, proto, frame, ts, rows, pend, jt, fh, ctr)


@njit(**NJ)
def tcp_data(src, a, plen, avail, flow, d, proto, frame, ts, fst, slots, slot_free, lin, ooo, opool, md, rows, pend, jt, fh, ctr):
    """Feed in-order stream bytes (the first ``avail`` of ``plen`` present); frame outcome."""
    b = F_DIR0 + d * DN
    p = 0
    used = False
    if fst[flow, b + D_SYNC] == 0:
        q = find_mark(src, a, avail, md)
        if q < 0:
            return S_UNSYNCED
        p = q
        reset_msg(fst, flow, b, slot_free, ctr, True)
        fst[flow, b + D_SYNC] = 1
    while p < plen:
        frag = fst[flow, b + D_FRAG]
        if frag == 0:
            if p >= avail:  # a record mark fell in bytes the capture did not keep
                lose_sync(fst, flow, b, slot_free, ctr)
                break
            hn = fst[flow, b + D_HDRN]
            if hn == 0 and p + 4 <= avail:
                v = be32(src, a + p)
                p += 4
            else:
                v = (fst[flow, b + D_HDRV] << 8) | np.int64(src[a + p])
                p += 1
                hn += 1
                if hn < 4:
                    fst[flow, b + D_HDRN] = hn
                    fst[flow, b + D_HDRV] = v
                    continue
                fst[flow, b + D_HDRN] = 0
                fst[flow, b + D_HDRV] = 0
            last = (v >> 31) & 1
            flen = v & 0x7FFFFFFF
            inmsg = fst[flow, b + D_INMSG]
            bad = flen > MAXREC or (inmsg == 0 and flen < 8 and not (flen == 0 and last == 1)) \
                or (inmsg != 0 and fst[flow, b + D_MLEN] + flen > MAXREC)
            if bad:
                lose_sync(fst, flow, b, slot_free, ctr)
                q = find_mark(src, a + p, avail - p, md)
                if q < 0:
                    break
                p += q
                fst[flow, b + D_SYNC] = 1
                continue
            used = True
            if flen == 0:
                if inmsg != 0:
                    complete(flow, b, d, proto, frame, ts, fst, slots, slot_free, lin, ooo, opool, md, rows, pend, jt, fh, ctr)
                else:
                    ctr[C_EMPTY_RECORD] += 1
                continue
            fst[flow, b + D_FRAG] = flen
            fst[flow, b + D_LAST] = last
            continue
        take = min(frag, plen - p)
        used = True
        inmsg = fst[flow, b + D_INMSG]
        last = fst[flow, b + D_LAST]
        if inmsg == 0 and last == 1 and take == frag and p + take <= avail:
            md[0] = a + p
            md[1] = take
            md[2] = 0
            md[3] = 0
            md[4] = take
            p += take
            fst[flow, b + D_FRAG] = 0
            rpc_message(src, md, flow, d, proto, frame, ts, rows, pend, jt, fh, ctr)
            continue
        if inmsg == 0:
            top = ctr[C_SLOTTOP] - 1
            ctr[C_SLOTTOP] = top
            fst[flow, b + D_SLOT] = slot_free[top]
            fst[flow, b + D_INMSG] = 1
            fst[flow, b + D_MLEN] = 0
            fst[flow, b + D_HLEN] = 0
            fst[flow, b + D_BAD] = 0
            fst[flow, b + D_TBAD] = 0
        s = fst[flow, b + D_SLOT]
        m = fst[flow, b + D_MLEN]
        av = avail - p
        if av > take:
            av = take
        if av < 0:
            av = 0
        if fst[flow, b + D_BAD] == 0 and fst[flow, b + D_HLEN] == m and m < HEAD and av > 0:
            c = min(av, HEAD - m)
            copy(slots[s], m, src, a + p, c)
            fst[flow, b + D_HLEN] = m + c
        if av < take:
            fst[flow, b + D_BAD] = 1
            fst[flow, b + D_TBAD] = m + take
        if av > 0:
            # only bytes that can end up among the record's last TAIL bytes go to the ring:
            # with the last fragment under way the record's end is known
            lo = m + av - min(av, TAIL)
            if last == 1:
                lo = max(lo, m + frag - TAIL)
            hi = m + av
            while lo < hi:
                r0 = lo % TAIL
                c = min(hi - lo, TAIL - r0)
                copy(slots[s], HEAD + r0, src, a + p + (lo - m), c)
                lo += c
        m += take
        fst[flow, b + D_MLEN] = m
        fst[flow, b + D_TAILN] = m
        p += take
        fst[flow, b + D_FRAG] = frag - take
        if frag - take == 0:
            if last == 1:
                complete(flow, b, d, proto, frame, ts, fst, slots, slot_free, lin, ooo, opool, md, rows, pend, jt, fh, ctr)
    return C_PARSED if used else S_UNSYNCED


@njit(**NJ)
def tcp_segment(src, a, plen, avail, seq, flags, flow, d, proto, frame, ts, fst, slots, slot_free, lin, ooo, opool, md, rows, pend, jt, fh, ctr):
    """One TCP segment's payload; returns the frame outcome (C_DEFERRED if held)."""
    b = F_DIR0 + d * DN
    if flags & 2:  # SYN: a new stream starts at seq + 1, on a record boundary
        reset_msg(fst, flow, b, slot_free, ctr, True)
        seq = (seq + 1) & M32
        fst[flow, b + D_NEXT] = seq
        fst[flow, b + D_HAVE] = 1
        fst[flow, b + D_SYNC] = 1
    if plen <= 0:
        return S_NOPAYLOAD
    if fst[flow, b + D_HAVE] == 0:
        fst[flow, b + D_NEXT] = seq
        fst[flow, b + D_HAVE] = 1
        fst[flow, b + D_SYNC] = 0
    delta = sdelta(seq, fst[flow, b + D_NEXT])
    if delta < 0:
        if delta + plen <= 0:
            return S_RETRANS
        cut = -delta
        a += cut
        plen -= cut
        avail = max(avail - cut, 0)
        delta = 0
    if delta > 0:
        if stash(src, a, plen, avail, seq, flow, d, frame, ts, fst, slots, slot_free, lin, ooo, opool, md, rows, pend, jt, fh, ctr):
            if fst[flow, b + D_OOO] > OOO_PER_DIR:
                drain(flow, d, proto, False, fst, slots, slot_free, lin, ooo, opool, md, rows, pend, jt, fh, ctr)  # jumps the first hole, keeps the rest
            return C_DEFERRED
        # no room to wait for the hole: declare it a gap now
        ctr[C_TCP_GAPS] += 1
        ctr[C_TCP_GAP_BYTES] += delta
        lose_sync(fst, flow, b, slot_free, ctr)
        fst[flow, b + D_NEXT] = seq
    frag = fst[flow, b + D_FRAG]
    m = fst[flow, b + D_MLEN]
    if fst[flow, b + D_SYNC] != 0 and fst[flow, b + D_INMSG] != 0 and frag > plen \
            and avail == plen and (fst[flow, b + D_HLEN] < m or m >= HEAD) \
            and (fst[flow, b + D_LAST] == 0 or frag - plen >= TAIL):
        # the common middle of a long record: no head bytes, no tail bytes, no mark
        fst[flow, b + D_FRAG] = frag - plen
        fst[flow, b + D_MLEN] = m + plen
        fst[flow, b + D_TAILN] = m + plen
        code = C_PARSED
        if fst[flow, b + D_LAST] == 0:  # the record's end is unknown: keep its latest bytes
            c = min(plen, TAIL)
            lo = m + plen - c
            hi = m + plen
            s = fst[flow, b + D_SLOT]
            while lo < hi:
                r0 = lo % TAIL
                c = min(hi - lo, TAIL - r0)
                copy(slots[s], HEAD + r0, src, a + (lo - m), c)
                lo += c
    else:
        code = tcp_data(src, a, plen, avail, flow, d, proto, frame, ts, fst, slots, slot_free, lin, ooo, opool, md, rows, pend, jt, fh, ctr)
    fst[flow, b + D_NEXT] = (fst[flow, b + D_NEXT] + plen) & M32
    if fst[flow, b + D_OOO] > 0:
        drain(flow, d, proto, False, fst, slots, slot_free, lin, ooo, opool, md, rows, pend, jt, fh, ctr)
    return code


@njit(**NJ)
def stash(src, a, plen, avail, seq, flow, d, frame, ts, fst, slots, slot_free, lin, ooo, opool, md, rows, pend, jt, fh, ctr):
    used = ctr[C_OOOBYTES]
    if used + avail > opool.shape[0]:
        return False
    for i in range(ooo.shape[0]):
        if ooo[i, O_USED] == 0:
            ooo[i, O_USED] = 1
            ooo[i, O_FLOW] = flow
            ooo[i, O_DIR] = d
            ooo[i, O_SEQ] = seq
            ooo[i, O_LEN] = plen
            ooo[i, O_AVAIL] = avail
            ooo[i, O_POFF] = used
            ooo[i, O_FRAME] = frame
            ooo[i, O_TS] = ts
            copy(opool, used, src, a, avail)
            ctr[C_OOOBYTES] = used + avail
            ctr[C_OOON] += 1
            fst[flow, F_DIR0 + d * DN + D_OOO] += 1
            return True
    return False


@njit(**NJ)
def drain(flow, d, proto, force, fst, slots, slot_free, lin, ooo, opool, md, rows, pend, jt, fh, ctr):
    """Feed waiting segments that the stream has reached; with ``force`` jump holes."""
    b = F_DIR0 + d * DN
    while fst[flow, b + D_OOO] > 0:
        nxt = fst[flow, b + D_NEXT]
        best = -1
        bd = np.int64(1) << 40
        for i in range(ooo.shape[0]):
            if ooo[i, O_USED] != 0 and ooo[i, O_FLOW] == flow and ooo[i, O_DIR] == d:
                dl = sdelta(ooo[i, O_SEQ], nxt)
                if dl < bd:
                    bd = dl
                    best = i
        if best < 0:
            fst[flow, b + D_OOO] = 0
            break
        if bd > 0:
            if not force and fst[flow, b + D_OOO] <= OOO_PER_DIR:
                break
            ctr[C_TCP_GAPS] += 1
            ctr[C_TCP_GAP_BYTES] += bd
            lose_sync(fst, flow, b, slot_free, ctr)
            fst[flow, b + D_NEXT] = ooo[best, O_SEQ]
            bd = 0
        ooo[best, O_USED] = 0
        fst[flow, b + D_OOO] -= 1
        ctr[C_OOON] -= 1
        plen = ooo[best, O_LEN]
        avail = ooo[best, O_AVAIL]
        a = ooo[best, O_POFF]
        if bd + plen <= 0:
            ctr[S_RETRANS] += 1
        else:
            cut = -bd
            code = tcp_data(opool, a + cut, plen - cut, max(avail - cut, 0), flow, d, proto,
                            ooo[best, O_FRAME], ooo[best, O_TS], fst, slots, slot_free, lin, ooo, opool, md, rows, pend, jt, fh, ctr)
            fst[flow, b + D_NEXT] = (fst[flow, b + D_NEXT] + plen - cut) & M32
            ctr[code] += 1
    if ctr[C_OOON] == 0:
        ctr[C_OOOBYTES] = 0


@njit(**NJA)
def compact_ooo(ooo, opool, ctr):
    """Move waiting segments' bytes to the front of the pool (they were bump-allocated)."""
    n = ooo.shape[0]
    offs = np.full(n, np.int64(1) << 62)
    for i in range(n):
        if ooo[i, O_USED] != 0:
            offs[i] = ooo[i, O_POFF]
    order = np.argsort(offs)
    w = 0
    for j in range(n):
        i = order[j]
        if ooo[i, O_USED] == 0:
            break
        av = ooo[i, O_AVAIL]
        src = ooo[i, O_POFF]
        if src != w:
            opool[w:w + av] = opool[src:src + av].copy()
        ooo[i, O_POFF] = w
        w += av
    ctr[C_OOOBYTES] = w
