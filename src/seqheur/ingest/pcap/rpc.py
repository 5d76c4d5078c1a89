"""ONC RPC (RFC 5531): recognise calls and replies by content, join them, dispatch to NFS.

Calls are keyed on (flow, caller side, xid), the flow being the transport's endpoint pair, so a
reply (sent by the other side) finds its call whatever the ports. A second call with a live key
is a retransmission and a second reply a duplicate: both are collapsed and counted. The reply
carries no program/procedure, so the pending entry remembers them. Every program is joined;
only NFS (100003) makes rows, the others are counted by class.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._layout import (C_CALLS, C_GSS_CONTROL, C_GSS_PRIVACY, C_MATCHED, C_NFS_UNDECODED,
                      C_NFS_VERS_OTHER, C_NJOIN, C_NPEND, C_NROWS, C_ORPHAN_REPLIES, C_PROG0,
                      C_REPLIES, C_RETRANS, C_RPC_ACCEPT_ERR, C_RPC_CALLS, C_RPC_DENIED,
                      C_RPC_MALFORMED, C_RPC_REPLIES, M_MINOR, M_RTIME, NJ, P_FRAME, P_GSS,
                      P_KEY, P_LIVE, P_MINOR, P_NG, P_NROWS, P_PROC, P_PROG, P_ROW0, P_STATE,
                      P_TIME, P_VERS, R_DONE, R_FHPEND, R_FLOW, R_FRAME, R_MASK, R_MINOR, R_OP,
                      R_PROTO, R_RTIME, R_SIDE, R_TIME, R_VERS, R_XID, WINDOW_NS)
from ._xdr import pad4, u32
from .nfs2 import nfs2_call, nfs2_reply
from .nfs3 import nfs3_call, nfs3_reply
from .nfs4 import nfs4_call, nfs4_reply



@njit(**NJ)
def mix64(x):
    z = np.uint64(x) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(**NJ)
def join_find(jt, key):
    mask = np.uint64(jt.shape[0] - 1)
    h = np.int64(mix64(key) & mask)
    while True:
        v = jt[h, 1]
        if v == 0:
            return -1
        if jt[h, 0] == key:
            return v - 1
        h = np.int64((np.uint64(h) + np.uint64(1)) & mask)


@njit(**NJ)
def join_insert(jt, key, e, ctr):
    mask = np.uint64(jt.shape[0] - 1)
    h = np.int64(mix64(key) & mask)
    while jt[h, 1] != 0:
        if jt[h, 0] == key:
            jt[h, 1] = e + 1
            return
        h = np.int64((np.uint64(h) + np.uint64(1)) & mask)
    jt[h, 0] = key
    jt[h, 1] = e + 1
    ctr[C_NJOIN] += 1


@njit(**NJ)
def prog_class(prog):
    if prog == 100003:
        return 0
    if prog == 100005:
        return 1
    if prog == 100000:
        return 2
    if prog == 100021:
        return 3
    if prog == 100227:
        return 4
    if prog == 100024:
        return 5
    if prog == 100011:
        return 6
    if 0x40000000 <= prog < 0x60000000:
        return 7
    return 8


@njit(**NJ)
def plausible_flavor(f):
    return f == 0 or f == 1 or f == 2 or f == 3 or f == 6 or f == 390003 or f == 390004 \
        or f == 390005


@njit(**NJ)
def looks_like_call(src, md):
    """RPC call header check (rpcvers 2, sane credential/verifier) on what is present."""
    if u32(src, md, 4) != 0 or u32(src, md, 8) != 2:
        return False
    vers = u32(src, md, 16)
    cf = u32(src, md, 24)
    cl = u32(src, md, 28)
    if vers < 0 or vers > 0xFFFF or cf < 0 or not plausible_flavor(cf) or cl < 0 or cl > 400:
        return False
    p = 32 + pad4(cl)
    vf = u32(src, md, p)
    vl = u32(src, md, p + 4)
    if vf >= 0 and (not plausible_flavor(vf) or vl > 400):
        return False
    return True


@njit(**NJ)
def looks_like_reply(src, md):
    if u32(src, md, 4) != 1:
        return False
    rs = u32(src, md, 8)
    if rs == 0:
        vf = u32(src, md, 12)
        vl = u32(src, md, 16)
        if vf < 0 or vl < 0 or not plausible_flavor(vf) or vl > 400:
            return False
        acc = u32(src, md, 20 + pad4(vl))
        return acc < 0 or acc <= 5
    if rs == 1:
        rj = u32(src, md, 12)
        return rj == 0 or rj == 1
    return False


@njit(**NJ)
def rpc_message(src, md, flow, side, proto, frame, ts, rows, pend, jt, fh, ctr):
    """Handle one RPC message; True if it was RPC (a frame carrying it counts as parsed)."""
    if md[4] < 12:
        return False
    xid = u32(src, md, 0)
    mt = u32(src, md, 4)
    if xid < 0 or mt < 0:
        return False
    if mt == 0:
        if not looks_like_call(src, md):
            return False
        return rpc_call(src, md, xid, flow, side, proto, frame, ts, rows, pend, jt, fh, ctr)
    if mt == 1:
        key = ((flow * 2 + (1 - side)) << 32) | xid
        e = join_find(jt, key)
        if e < 0 or pend[e, P_LIVE] == 0 or ts - pend[e, P_TIME] > WINDOW_NS:
            # (a reply later than the window answers nothing, whatever the chunking)
            if not looks_like_reply(src, md):
                return False
            ctr[C_RPC_REPLIES] += 1
            ctr[C_ORPHAN_REPLIES] += 1
            return True
        rpc_reply(src, md, e, ts, rows, pend, fh, ctr)
        return True
    return False


@njit(**NJ)
def rpc_call(src, md, xid, flow, side, proto, frame, ts, rows, pend, jt, fh, ctr):
    prog = u32(src, md, 12)
    vers = u32(src, md, 16)
    proc = u32(src, md, 20)
    cf = u32(src, md, 24)
    cl = u32(src, md, 28)
    if prog < 0 or proc < 0:
        ctr[C_RPC_MALFORMED] += 1
        return True
    key = ((flow * 2 + side) << 32) | xid
    e = join_find(jt, key)
    if e >= 0 and pend[e, P_LIVE] != 0 and ts - pend[e, P_TIME] <= WINDOW_NS:
        ctr[C_RETRANS] += 1
        return True
    ctr[C_RPC_CALLS] += 1
    cls = prog_class(prog)
    ctr[C_PROG0 + cls] += 1
    e = ctr[C_NPEND]
    ctr[C_NPEND] = e + 1
    pend[e, :] = 0
    pend[e, P_KEY] = key
    pend[e, P_TIME] = ts
    pend[e, P_FRAME] = frame
    pend[e, P_PROG] = prog
    pend[e, P_VERS] = vers
    pend[e, P_PROC] = proc
    pend[e, P_LIVE] = 1
    pend[e, P_ROW0] = -1
    join_insert(jt, key, e, ctr)
    if cls != 0:
        return True
    if vers < 2 or vers > 4:
        ctr[C_NFS_VERS_OTHER] += 1
        pend[e, P_PROC] = -1
        return True
    p = 32 + pad4(cl)
    vl = u32(src, md, p + 4)
    if vl < 0:
        ctr[C_NFS_UNDECODED] += 1
        vl = 0
    p += 8 + pad4(vl)
    if cf == 6:  # RPCSEC_GSS: cred body = version, gss_proc, seq_num, service, handle
        gproc = u32(src, md, 36)
        service = u32(src, md, 44)
        if gproc != 0:
            ctr[C_GSS_CONTROL] += 1
            pend[e, P_PROC] = -1
            return True
        if service == 3:
            ctr[C_GSS_PRIVACY] += 1
            pend[e, P_PROC] = -1
            return True
        if service == 2:
            p += 8
            pend[e, P_GSS] = 2
    ctr[C_CALLS] += 1
    r0 = ctr[C_NROWS]
    rows[r0, :] = 0
    rows[r0, R_TIME] = ts
    rows[r0, R_FLOW] = flow
    rows[r0, R_SIDE] = side
    rows[r0, R_XID] = xid
    rows[r0, R_VERS] = vers
    rows[r0, R_FRAME] = frame
    rows[r0, R_PROTO] = proto
    rows[r0, R_FHPEND] = -1
    n = 1
    if vers == 3:
        rows[r0, R_OP] = 300 + proc
        if not nfs3_call(src, md, p, proc, rows, r0, fh, ctr):
            ctr[C_NFS_UNDECODED] += 1
    elif vers == 2:
        rows[r0, R_OP] = 200 + proc
        if not nfs2_call(src, md, p, proc, rows, r0, fh, ctr):
            ctr[C_NFS_UNDECODED] += 1
    else:
        tl = u32(src, md, p)
        minor = u32(src, md, p + 4 + pad4(tl)) if tl >= 0 and tl <= 1024 else -1
        if minor >= 0 and minor < 256:
            rows[r0, R_MINOR] = minor
            rows[r0, R_MASK] |= M_MINOR
            pend[e, P_MINOR] = minor
        if proc == 0:
            rows[r0, R_OP] = 399
        elif proc == 1:
            n = nfs4_call(src, md, p, rows, r0, fh, ctr, pend, e)
            if n < 0:
                n = -1 - n
                ctr[C_NFS_UNDECODED] += 1
        else:
            n = 0
            ctr[C_NFS_UNDECODED] += 1
    pend[e, P_ROW0] = r0
    pend[e, P_NROWS] = n
    ctr[C_NROWS] = r0 + n
    return True


@njit(**NJ)
def rpc_reply(src, md, e, ts, rows, pend, fh, ctr):
    if pend[e, P_STATE] != 0:
        ctr[C_RETRANS] += 1
        return
    pend[e, P_STATE] = 1
    ctr[C_RPC_REPLIES] += 1
    nfs = pend[e, P_PROG] == 100003 and pend[e, P_PROC] >= 0
    r0 = pend[e, P_ROW0]
    n = pend[e, P_NROWS]
    if nfs:
        ctr[C_REPLIES] += 1
        ctr[C_MATCHED] += 1
    if r0 >= 0:
        for k in range(n):
            rows[r0 + k, R_RTIME] = ts
            rows[r0 + k, R_MASK] |= M_RTIME
            rows[r0 + k, R_DONE] = 1
    if not nfs or r0 < 0:
        return
    rs = u32(src, md, 8)
    if rs != 0:
        ctr[C_RPC_DENIED] += 1
        return
    vl = u32(src, md, 16)
    if vl < 0:
        ctr[C_NFS_UNDECODED] += 1
        return
    p = 20 + pad4(vl)
    acc = u32(src, md, p)
    if acc != 0:
        ctr[C_RPC_ACCEPT_ERR] += 1
        return
    p += 4
    if pend[e, P_GSS] == 2:
        p += 8
    vers = pend[e, P_VERS]
    proc = pend[e, P_PROC]
    if vers == 3:
        ok = nfs3_reply(src, md, p, proc, rows, r0)
    elif vers == 2:
        ok = nfs2_reply(src, md, p, proc, rows, r0)
    elif proc == 1:
        ok = nfs4_reply(src, md, p, rows, r0, n, fh, ctr, pend, e)
    else:
        ok = True
    if not ok:
        ctr[C_NFS_UNDECODED] += 1
