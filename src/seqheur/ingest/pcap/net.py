"""Link layer, IPv4/IPv6, IPv4 fragment reassembly, UDP and TCP demultiplexing (numba).

Link types: Ethernet (+802.1Q/802.1ad tags), Linux SLL and SLL2, raw IP (101, 12, 14, 228,
229), BSD loopback (0, host byte order; 108, network order). Flows are canonical endpoint
pairs (lower address:port first) so both directions of a conversation share one flow id; the
direction (0/1) says which end sent a packet.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._layout import (C_DEFERRED, C_FRAG_DATAGRAMS, C_FRAGSEQ, C_LASTA, C_LASTB, C_LASTD,
                      C_LASTF, C_NFLOWS, C_PARSED, D_SLOT,
                      DN, F_ALEN, F_DIR0, F_PROTO, FLOWKEY, FR_DST, FR_FILLED, FR_ID,
                      FR_NFRAMES, FR_PROTO, FR_SEQ, FR_SRC, FR_TOTAL, FR_TS, FR_USED, NJ,
                      NO_OUTCOME, S_BADIP, S_BADL4, S_FRAGDUP, S_FRAGINC, S_LINKTYPE, S_NOTIP,
                      S_NOTL4, S_TRUNC, S_UDPNOTRPC, S_V6FRAG)
from ._xdr import be16, be32, copy, le32
from .rpc import looks_like_call, looks_like_reply, rpc_message
from .tcp import tcp_segment

FRAG_DATA = 65536  # frag buffer: datagram bytes, then src(4) dst(4) addresses


@njit(**NJ)
def flow_get(abuf, s_off, d_off, alen, sport, dport, proto, fkey, fhash, fst, ctr):
    """(flow id, direction) of a packet, creating the flow on first sight."""
    ka = -1
    kb = -1
    if alen == 4:  # consecutive packets mostly share a flow: skip the hash for a repeat
        ka = (be32(abuf, s_off) << 32) | be32(abuf, d_off)
        kb = (sport << 24) | (dport << 8) | proto
        if ctr[C_LASTA] == ka and ctr[C_LASTB] == kb:
            return ctr[C_LASTF], ctr[C_LASTD]
    f, d = _flow_lookup(abuf, s_off, d_off, alen, sport, dport, proto, fkey, fhash, fst, ctr)
    ctr[C_LASTA] = ka
    ctr[C_LASTB] = kb
    ctr[C_LASTF] = f
    ctr[C_LASTD] = d
    return f, d


@njit(**NJ)
def _flow_lookup(abuf, s_off, d_off, alen, sport, dport, proto, fkey, fhash, fst, ctr):
    n = ctr[C_NFLOWS]
    k = fkey[n]
    k[:] = 0
    swap = sport > dport
    for i in range(alen):
        x = abuf[s_off + i]
        y = abuf[d_off + i]
        if x != y:
            swap = x > y
            break
    if swap:
        copy(k, 0, abuf, d_off, alen)
        copy(k, 16, abuf, s_off, alen)
        pa, pb = dport, sport
    else:
        copy(k, 0, abuf, s_off, alen)
        copy(k, 16, abuf, d_off, alen)
        pa, pb = sport, dport
    k[32] = pa >> 8
    k[33] = pa & 255
    k[34] = pb >> 8
    k[35] = pb & 255
    k[36] = proto
    k[37] = alen
    h = np.uint64(0xCBF29CE484222325)
    for i in range(38):
        h = (h ^ np.uint64(k[i])) * np.uint64(0x100000001B3)
    mask = np.uint64(fhash.shape[0] - 1)
    j = np.int64(h & mask)
    while True:
        v = fhash[j]
        if v == 0:
            fhash[j] = n + 1
            ctr[C_NFLOWS] = n + 1
            fst[n, :] = 0
            fst[n, F_PROTO] = proto
            fst[n, F_ALEN] = alen
            fst[n, F_DIR0 + D_SLOT] = -1
            fst[n, F_DIR0 + DN + D_SLOT] = -1
            return n, 1 if swap else 0
        same = True
        kk = fkey[v - 1]
        for i in range(38):
            if kk[i] != k[i]:
                same = False
                break
        if same:
            return v - 1, 1 if swap else 0
        j = np.int64((np.uint64(j) + np.uint64(1)) & mask)


@njit(**NJ)
def l4(src, q, l4len, l4avail, abuf, s_off, d_off, alen, proto, frame, ts, fkey, fhash, fst, slots, slot_free, lin, ooo, opool, md, rows, pend, jt, fh, ctr):
    """UDP or TCP at src[q:]: l4len bytes on the wire, l4avail of them captured."""
    if proto == 17:
        if l4avail < 8:
            return S_TRUNC
        sport = be16(src, q)
        dport = be16(src, q + 2)
        ulen = be16(src, q + 4)
        if ulen < 8:
            if ulen == 0:  # jumbogram / offloaded: trust IP
                ulen = l4len
            else:
                return S_BADL4
        plen = min(ulen, l4len) - 8
        pav = min(plen, l4avail - 8)
        md[0] = q + 8
        md[1] = pav
        md[2] = 0
        md[3] = 0
        md[4] = plen
        if not (looks_like_call(src, md) or looks_like_reply(src, md)):
            return S_UDPNOTRPC
        flow, d = flow_get(abuf, s_off, d_off, alen, sport, dport, 17, fkey, fhash, fst, ctr)
        md[0] = q + 8
        md[1] = pav
        md[2] = 0
        md[3] = 0
        md[4] = plen
        if rpc_message(src, md, flow, d, 17, frame, ts, rows, pend, jt, fh, ctr):
            return C_PARSED
        return S_UDPNOTRPC
    if proto == 6:
        if l4avail < 20:
            return S_TRUNC
        doff = (np.int64(src[q + 12]) >> 4) * 4
        if doff < 20 or doff > l4len:
            return S_BADL4
        if doff > l4avail:
            return S_TRUNC
        sport = be16(src, q)
        dport = be16(src, q + 2)
        seq = be32(src, q + 4)
        flags = np.int64(src[q + 13])
        flow, d = flow_get(abuf, s_off, d_off, alen, sport, dport, 6, fkey, fhash, fst, ctr)
        return tcp_segment(src, q + doff, l4len - doff, l4avail - doff, seq, flags, flow, d, 6,
                           frame, ts, fst, slots, slot_free, lin, ooo, opool, md, rows, pend, jt, fh, ctr)
    return S_NOTL4


@njit(**NJ)
def ipv4_fragment(buf, p, ihl, tot, e, frame, ts, fkey, fhash, fmeta, fbuf, fmap, fst, slots, slot_free, lin, ooo, opool, md, rows, pend, jt, fh, ctr):
    src32 = be32(buf, p + 12)
    dst32 = be32(buf, p + 16)
    ident = be16(buf, p + 4)
    proto = np.int64(buf[p + 9])
    ff = be16(buf, p + 6)
    fo = (ff & 0x1FFF) * 8
    mf = (ff >> 13) & 1
    q = p + ihl
    plen = tot - ihl
    if q + plen > e:
        return S_TRUNC  # a cut fragment can never complete its datagram
    if fo + plen > FRAG_DATA or (mf == 1 and (plen & 7) != 0) or plen <= 0:
        return S_BADIP
    s = -1
    free = -1
    oldest = -1
    for i in range(fmeta.shape[0]):
        if fmeta[i, FR_USED] == 0:
            if free < 0:
                free = i
        elif fmeta[i, FR_SRC] == src32 and fmeta[i, FR_DST] == dst32 \
                and fmeta[i, FR_ID] == ident and fmeta[i, FR_PROTO] == proto:
            s = i
            break
        elif oldest < 0 or fmeta[i, FR_SEQ] < fmeta[oldest, FR_SEQ]:
            oldest = i
    if s < 0:
        if free < 0:  # evict the datagram waiting longest
            free = oldest
            ctr[S_FRAGINC] += fmeta[free, FR_NFRAMES]
        s = free
        fmeta[s, :] = 0
        fmeta[s, FR_USED] = 1
        fmeta[s, FR_SRC] = src32
        fmeta[s, FR_DST] = dst32
        fmeta[s, FR_ID] = ident
        fmeta[s, FR_PROTO] = proto
        fmeta[s, FR_TOTAL] = -1
        fmeta[s, FR_TS] = ts
        copy(fbuf[s], FRAG_DATA, buf, p + 12, 8)
        fmap[s, :] = 0
        ctr[C_FRAGSEQ] += 1
        fmeta[s, FR_SEQ] = ctr[C_FRAGSEQ]
    b0 = fo >> 3
    b1 = (fo + plen + 7) >> 3
    new = 0
    mv = fmap[s, b0:b1]
    for bi in range(b1 - b0):
        new += mv[bi] == 0
    if new == b1 - b0:  # nothing of it seen before: one copy
        mv[:] = 1
        copy(fbuf[s], fo, buf, q, plen)
    elif new > 0:  # overlaps an earlier fragment: the first copy of each block wins
        for bi in range(b0, b1):
            if fmap[s, bi] == 0:
                fmap[s, bi] = 1
                lo = bi * 8
                hi = min(lo + 8, fo + plen)
                copy(fbuf[s], lo, buf, q + lo - fo, hi - lo)
    if mf == 0:
        fmeta[s, FR_TOTAL] = fo + plen
    if new == 0:
        return S_FRAGDUP
    fmeta[s, FR_NFRAMES] += 1
    fmeta[s, FR_FILLED] += new
    total = fmeta[s, FR_TOTAL]
    if total < 0 or fmeta[s, FR_FILLED] < (total + 7) >> 3:
        return C_DEFERRED
    nfr = fmeta[s, FR_NFRAMES]
    fmeta[s, FR_USED] = 0
    ctr[C_FRAG_DATAGRAMS] += 1
    fb = fbuf[s]
    code = l4(fb, 0, total, total, fb, FRAG_DATA, FRAG_DATA + 4, 4, proto, frame, ts, fkey, fhash, fst, slots, slot_free, lin, ooo, opool, md, rows, pend, jt, fh, ctr)
    if code == C_DEFERRED:  # the TCP segment waits; it counts itself later as one frame
        ctr[C_PARSED] += nfr - 1
    else:
        ctr[code] += nfr
    return NO_OUTCOME


@njit(**NJ)
def frame_outcome(buf, off, caplen, link, frame, ts, fkey, fhash, fmeta, fbuf, fmap, fst, slots, slot_free, lin, ooo, opool, md, rows, pend, jt, fh, ctr):
    """Decode one captured frame; returns the counter index of its outcome."""
    e = off + caplen
    p = off
    v = 0  # IP version
    if link == 1:
        if caplen < 14:
            return S_TRUNC
        et = be16(buf, off + 12)
        p = off + 14
        while et == 0x8100 or et == 0x88A8 or et == 0x9100:
            if p + 4 > e:
                return S_TRUNC
            et = be16(buf, p + 2)
            p += 4
        v = 4 if et == 0x0800 else (6 if et == 0x86DD else 0)
    elif link == 113:
        if caplen < 16:
            return S_TRUNC
        et = be16(buf, off + 14)
        p = off + 16
        v = 4 if et == 0x0800 else (6 if et == 0x86DD else 0)
    elif link == 276:
        if caplen < 20:
            return S_TRUNC
        et = be16(buf, off)
        p = off + 20
        v = 4 if et == 0x0800 else (6 if et == 0x86DD else 0)
    elif link == 101 or link == 12 or link == 14 or link == 228 or link == 229:
        if caplen < 1:
            return S_TRUNC
        v = np.int64(buf[off]) >> 4
    elif link == 0 or link == 108:
        if caplen < 4:
            return S_TRUNC
        fam = be32(buf, off) if link == 108 else le32(buf, off)
        if link == 0 and fam > 0xFFFF:
            fam = be32(buf, off)
        p = off + 4
        v = 4 if fam == 2 else (6 if fam == 10 or fam == 24 or fam == 28 or fam == 30 else 0)
    else:
        return S_LINKTYPE
    if v == 4:
        if e - p < 20:
            return S_TRUNC
        if (np.int64(buf[p]) >> 4) != 4:
            return S_BADIP
        ihl = (np.int64(buf[p]) & 15) * 4
        tot = be16(buf, p + 2)
        if tot == 0:  # segmentation offload: the length was never filled in
            tot = e - p
        if ihl < 20 or tot < ihl:
            return S_BADIP
        if p + ihl > e:
            return S_TRUNC
        ff = be16(buf, p + 6)
        if (ff & 0x3FFF) != 0:
            return ipv4_fragment(buf, p, ihl, tot, e, frame, ts, fkey, fhash, fmeta, fbuf, fmap, fst, slots, slot_free, lin, ooo, opool, md, rows, pend, jt, fh, ctr)
        q = p + ihl
        l4len = tot - ihl
        return l4(buf, q, l4len, min(l4len, e - q), buf, p + 12, p + 16, 4,
                  np.int64(buf[p + 9]), frame, ts, fkey, fhash, fst, slots, slot_free, lin, ooo, opool, md, rows, pend, jt, fh, ctr)
    if v == 6:
        if e - p < 40:
            return S_TRUNC
        if (np.int64(buf[p]) >> 4) != 6:
            return S_BADIP
        plen = be16(buf, p + 4)
        nh = np.int64(buf[p + 6])
        q = p + 40
        end = q + plen
        while True:
            if nh == 0 or nh == 43 or nh == 60 or nh == 51:
                if q + 2 > e:
                    return S_TRUNC
                ln = (np.int64(buf[q + 1]) + 2) * 4 if nh == 51 else (np.int64(buf[q + 1]) + 1) * 8
                nh = np.int64(buf[q])
                q += ln
                continue
            break
        if nh == 44:
            return S_V6FRAG
        if q > end:
            return S_BADIP
        l4len = end - q
        return l4(buf, q, l4len, max(0, min(l4len, e - q)), buf, p + 8, p + 24, 16, nh, frame,
                  ts, fkey, fhash, fst, slots, slot_free, lin, ooo, opool, md, rows, pend, jt, fh, ctr)
    return S_NOTIP
