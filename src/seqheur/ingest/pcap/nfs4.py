"""NFSv4.0/4.1/4.2 COMPOUND (RFC 7530, 8881, 7862) -> one row per op of interest.

Operations carry no length, so the call decoder steps over the arguments of every op it knows
(all of 4.0, the common 4.1/4.2 ones) and stops at the first it does not (counted). The
current file handle is tracked through the compound: PUTFH sets it (bytes known from the call);
PUTROOTFH/PUTPUBFH/LOOKUP/LOOKUPP/OPEN-by-name/CREATE/OPENATTR make it *unknown* until a GETFH
in the reply names it; SAVEFH/RESTOREFH copy it. Rows are made for READ, WRITE, OPEN, CLOSE,
COMMIT, GETATTR and LOOKUP: the handle of a LOOKUP row is the directory's (as in v3), that of
an OPEN row the opened file's, all others the current handle. Replies list results in call
order and stop at the first failing op, so result i belongs to call op i.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._layout import (C_NFH, C_NFS4_UNKNOWN_OP, C_V4_ROWS_CAPPED, M_COUNT, M_EOF, M_FH, M_FSIZE,
                      M_OFFSET, M_RET, M_STATUS, NJ, P_G0, P_NG, R_COUNT, R_EOF, R_FHLEN,
                      R_FHOFF, R_FHPEND, R_FSIZE, R_MASK, R_OFFSET, R_OP, R_RETCOUNT, R_STATUS,
                      R_V4POS, RF, V4_MAX_ROWS)
from ._xdr import at, fh_store, pad4, u32, u64
from .nfs3 import put

FHSIZE4 = 128
STATEID = 16
MAXOPAQUE = 1 << 20


@njit(**NJ)
def opaque(src, md, p, maxn):
    n = u32(src, md, p)
    if n < 0 or n > maxn:
        return -1
    return p + 4 + pad4(n)


@njit(**NJ)
def bitmap(src, md, p):
    n = u32(src, md, p)
    if n < 0 or n > 64:
        return -1
    return p + 4 + 4 * n


@njit(**NJ)
def fattr4(src, md, p):
    p = bitmap(src, md, p)
    if p < 0:
        return -1
    return opaque(src, md, p, MAXOPAQUE)


@njit(**NJ)
def owner(src, md, p):
    return opaque(src, md, p + 8, 1024)


@njit(**NJ)
def opaques(src, md, p, maxcount):
    """An XDR array of opaques (``sec_oid4<>``)."""
    n = u32(src, md, p)
    if n < 0 or n > maxcount:
        return -1
    p += 4
    for _ in range(n):
        p = opaque(src, md, p, 1024)
        if p < 0:
            return -1
    return p


@njit(**NJ)
def impl_id(src, md, p):
    """``nfs_impl_id4<1>``: domain, name, date (nfstime4)."""
    n = u32(src, md, p)
    if n == 0:
        return p + 4
    if n != 1:
        return -1
    p = opaque(src, md, p + 4, 1024)
    if p >= 0:
        p = opaque(src, md, p, 1024)
    return p + 12 if p >= 0 else -1


@njit(**NJ)
def exchange_id_args(src, md, p):
    """EXCHANGE_ID4args (RFC 8881 18.35): client owner (verifier, id), flags, state
    protection (none, machine credentials: two bitmaps, SSV: two bitmaps, two oid arrays, two
    counts), implementation id."""
    p = opaque(src, md, p + 8, 1024)
    if p < 0:
        return -1
    how = u32(src, md, p + 4)
    p += 8
    if how == 1 or how == 2:
        p = bitmap(src, md, p)
        if p >= 0:
            p = bitmap(src, md, p)
        if how == 2 and p >= 0:
            p = opaques(src, md, p, 64)
            if p >= 0:
                p = opaques(src, md, p, 64)
            if p >= 0:
                p += 8
    elif how != 0:
        return -1
    return impl_id(src, md, p) if p >= 0 else -1


@njit(**NJ)
def channel_attrs(src, md, p):
    """channel_attrs4: six counts and ``ca_rdma_ird<1>``."""
    n = u32(src, md, p + 24)
    if n < 0 or n > 1:
        return -1
    return p + 28 + 4 * n


@njit(**NJ)
def create_session_args(src, md, p):
    """CREATE_SESSION4args (RFC 8881 18.36): client id, sequence id, flags, fore and back
    channel attributes, callback program, callback security parameters (AUTH_NONE, AUTH_SYS,
    RPCSEC_GSS handles)."""
    p = channel_attrs(src, md, p + 16)
    if p >= 0:
        p = channel_attrs(src, md, p)
    if p < 0:
        return -1
    n = u32(src, md, p + 4)
    if n < 0 or n > 16:
        return -1
    p += 8
    for _ in range(n):
        flavor = u32(src, md, p)
        p += 4
        if flavor == 1:  # authsys_parms: stamp, machine name, uid, gid, gids<16>
            p = opaque(src, md, p + 4, 255)
            if p < 0:
                return -1
            g = u32(src, md, p + 8)
            if g < 0 or g > 16:
                return -1
            p += 12 + 4 * g
        elif flavor == 6:  # gss_cb_handles4: service, two handles
            p = opaque(src, md, p + 4, 1024)
            if p >= 0:
                p = opaque(src, md, p, 1024)
            if p < 0:
                return -1
        elif flavor != 0:
            return -1
    return p


@njit(**NJ)
def netloc(src, md, p):
    """netloc4 (RFC 7862): a name or URL string, or a netaddr4 (netid, address)."""
    t = u32(src, md, p)
    if t == 1 or t == 2:
        return opaque(src, md, p + 4, 1024)
    if t == 3:
        p = opaque(src, md, p + 4, 1024)
        return opaque(src, md, p, 1024) if p >= 0 else -1
    return -1


@njit(**NJ)
def fattr4_size(src, md, p):
    """Size attribute of a fattr4 at p, or -1 if it is absent."""
    nw = u32(src, md, p)
    if nw <= 0 or nw > 64:
        return -1
    w0 = u32(src, md, p + 4)
    if w0 < 0 or (w0 & (1 << 4)) == 0:
        return -1
    q = p + 4 + 4 * nw + 4  # attr values after the opaque length
    if w0 & 1:  # supported_attrs: bitmap4
        q = bitmap(src, md, q)
        if q < 0:
            return -1
    if w0 & 2:
        q += 4
    if w0 & 4:
        q += 4
    if w0 & 8:
        q += 8
    if at(md, q, 8) < 0:
        return -1
    return u64(src, md, q)


@njit(**NJ)
def _row(rows, r0, k, tmpl, op, pos, cur_kind, cur_off, cur_len, cur_id):
    r = r0 + k
    for j in range(RF):
        rows[r, j] = rows[tmpl, j]
    rows[r, R_OP] = 400 + op
    rows[r, R_V4POS] = pos
    rows[r, R_FHPEND] = -1
    if cur_kind == 1:
        put(rows, r, R_FHOFF, M_FH, cur_off)
        rows[r, R_FHLEN] = cur_len
    elif cur_kind == 2:
        rows[r, R_FHPEND] = cur_id
    return r


@njit(**NJ)
def _interesting(op):
    return op == 25 or op == 38 or op == 18 or op == 4 or op == 5 or op == 9 or op == 15


@njit(**NJ)
def nfs4_call(src, md, p, rows, r0, fh, ctr, pend, e):
    """Decode COMPOUND args at p; rows r0.. are made from the template already in row r0.

    Returns the number of rows made (>= 0), or -1-n when decoding stopped early after n rows.
    """
    tmpl = rows.shape[0] - 1  # scratch row (the pool always keeps headroom past r0)
    for j in range(RF):
        rows[tmpl, j] = rows[r0, j]
    p = opaque(src, md, p, 1024)  # tag
    if p < 0:
        return -1
    minor = u32(src, md, p)
    nops = u32(src, md, p + 4)
    if minor < 0 or nops < 0:
        return -1
    p += 8
    cur_kind, cur_off, cur_len, cur_id = 0, 0, 0, 0
    sav_kind, sav_off, sav_len, sav_id = 0, 0, 0, 0
    k = 0
    for pos in range(min(nops, 4096)):
        op = u32(src, md, p)
        if op < 0:
            return -1 - k
        p += 4
        if _interesting(op) and k >= V4_MAX_ROWS:
            ctr[C_V4_ROWS_CAPPED] += 1
        elif _interesting(op) and op != 18:
            r = _row(rows, r0, k, tmpl, op, pos, cur_kind, cur_off, cur_len, cur_id)
            k += 1
            if op == 25:  # READ: stateid, offset, count
                if at(md, p + STATEID, 12) < 0:
                    return -1 - k
                put(rows, r, R_OFFSET, M_OFFSET, u64(src, md, p + STATEID))
                put(rows, r, R_COUNT, M_COUNT, u32(src, md, p + STATEID + 8))
            elif op == 38:  # WRITE: stateid, offset, stable, data<>
                if at(md, p + STATEID, 16) < 0:
                    return -1 - k
                put(rows, r, R_OFFSET, M_OFFSET, u64(src, md, p + STATEID))
                put(rows, r, R_COUNT, M_COUNT, u32(src, md, p + STATEID + 12))
            elif op == 5:  # COMMIT: offset, count
                if at(md, p, 12) < 0:
                    return -1 - k
                put(rows, r, R_OFFSET, M_OFFSET, u64(src, md, p))
                put(rows, r, R_COUNT, M_COUNT, u32(src, md, p + 8))
        # step over the arguments and follow the current file handle
        if op == 3 or op == 19 or op == 52 or op == 58:
            p += 4
            if op == 19:
                cur_kind, cur_id = 2, pos
        elif op == 4:
            p += 4 + STATEID
        elif op == 5:
            p += 12
        elif op == 6:
            t = u32(src, md, p)
            p += 4
            if t == 5:
                p = opaque(src, md, p, MAXOPAQUE)
            elif t == 3 or t == 4:
                p += 8
            if p >= 0:
                p = opaque(src, md, p, MAXOPAQUE)
            if p >= 0:
                p = fattr4(src, md, p)
            cur_kind, cur_id = 2, pos
        elif op == 7 or op == 30 or op == 57:
            p += 8
        elif op == 8 or op == 44 or op == 45 or op == 66 or op == 67:
            p += 16
        elif op == 9:
            p = bitmap(src, md, p)
        elif op == 10:
            if cur_kind == 2 and pend[e, P_NG] < 4:
                g = pend[e, P_NG]
                pend[e, P_G0 + 2 * g] = pos
                pend[e, P_G0 + 2 * g + 1] = cur_id
                pend[e, P_NG] = g + 1
        elif op == 11 or op == 28 or op == 33:
            p = opaque(src, md, p, MAXOPAQUE)
        elif op == 12:
            nlo = u32(src, md, p + 24)
            p += 28
            if nlo < 0:
                p = -1
            elif nlo != 0:
                p = owner(src, md, p + 4 + STATEID + 4)
            else:
                p += STATEID + 4
        elif op == 13:
            p = owner(src, md, p + 20)
        elif op == 14:
            p += 40
        elif op == 15:
            p = opaque(src, md, p, MAXOPAQUE)
            cur_kind, cur_id = 2, pos
        elif op == 16:
            cur_kind, cur_id = 2, pos
        elif op == 17 or op == 37:
            p = fattr4(src, md, p)
        elif op == 18:
            p = owner(src, md, p + 12)
            by_name = True
            if p >= 0:
                ot = u32(src, md, p)
                p += 4
                if ot == 1:
                    mode = u32(src, md, p)
                    p += 4
                    if mode == 0 or mode == 1:
                        p = fattr4(src, md, p)
                    elif mode == 2:
                        p += 8
                    elif mode == 3:
                        p = fattr4(src, md, p + 8)
                    else:
                        p = -1
                elif ot != 0:
                    p = -1
            if p >= 0:
                claim = u32(src, md, p)
                p += 4
                if claim == 0 or claim == 3:
                    p = opaque(src, md, p, MAXOPAQUE)
                elif claim == 1:
                    p += 4
                elif claim == 2:
                    p = opaque(src, md, p + STATEID, MAXOPAQUE)
                elif claim == 4 or claim == 6:
                    by_name = False
                elif claim == 5:
                    p += STATEID
                    by_name = False
                else:
                    p = -1
            if by_name:
                cur_kind, cur_id = 2, pos
            if k >= V4_MAX_ROWS:
                pass
            else:
                _row(rows, r0, k, tmpl, op, pos, cur_kind, cur_off, cur_len, cur_id)
                k += 1
        elif op == 20:
            p += STATEID + 4
        elif op == 21:
            p += STATEID + 12
        elif op == 22:
            n = u32(src, md, p)
            if n < 0 or n > FHSIZE4:
                p = -1
            else:
                off = fh_store(src, md, p + 4, n, fh, ctr, C_NFH)
                if off < 0:
                    p = -1
                else:
                    cur_kind, cur_off, cur_len = 1, off, n
                    p += 4 + pad4(n)
        elif op == 23 or op == 24:
            cur_kind, cur_id = 2, pos
        elif op == 25:
            p += STATEID + 12
        elif op == 26:
            p = bitmap(src, md, p + 24)
        elif op == 27:
            pass
        elif op == 29:
            p = opaque(src, md, p, MAXOPAQUE)
            if p >= 0:
                p = opaque(src, md, p, MAXOPAQUE)
        elif op == 31:
            cur_kind, cur_off, cur_len, cur_id = sav_kind, sav_off, sav_len, sav_id
        elif op == 32:
            sav_kind, sav_off, sav_len, sav_id = cur_kind, cur_off, cur_len, cur_id
        elif op == 34:
            p = fattr4(src, md, p + STATEID)
        elif op == 35:
            p = opaque(src, md, p + 8, 1024)
            if p >= 0:
                p = opaque(src, md, p + 4, 1024)
            if p >= 0:
                p = opaque(src, md, p, 1024)
            if p >= 0:
                p += 4
        elif op == 36:
            p += 16
        elif op == 38:
            p = opaque(src, md, p + STATEID + 12, 1 << 30)
        elif op == 39:
            p = owner(src, md, p)
        elif op == 41:
            p += 24
        elif op == 42:
            p = exchange_id_args(src, md, p)
        elif op == 43:
            p = create_session_args(src, md, p)
        elif op == 44 or op == 45 or op == 66 or op == 67:  # session id, stateid
            p += 16
        elif op == 46:  # GET_DIR_DELEGATION: signal, bitmap, two delays, two bitmaps
            p = bitmap(src, md, p + 4)
            if p >= 0:
                p = bitmap(src, md, p + 24)
            if p >= 0:
                p = bitmap(src, md, p)
        elif op == 52 or op == 58:  # SECINFO_NO_NAME style, RECLAIM_COMPLETE one_fs
            p += 4
        elif op == 57:  # DESTROY_CLIENTID
            p += 8
        elif op == 60:  # COPY: two stateids, offsets, length, two bools, source servers<>
            n = u32(src, md, p + 2 * STATEID + 32)
            p += 2 * STATEID + 36
            if n < 0 or n > 64:
                p = -1
            for _ in range(max(n, 0)):
                if p >= 0:
                    p = netloc(src, md, p)
        elif op == 61:  # COPY_NOTIFY: stateid, destination server
            p = netloc(src, md, p + STATEID)
        elif op == 64:  # LAYOUTERROR: offset, length, stateid, device_error4<>
            n = u32(src, md, p + 16 + STATEID)
            p = -1 if n < 0 or n > 4096 else p + 20 + STATEID + 24 * n
        elif op == 65:  # LAYOUTSTATS: offset, length, stateid, two io_info4, deviceid, update
            p = opaque(src, md, p + 16 + STATEID + 32 + 16 + 4, MAXOPAQUE)
        elif op == 70:  # WRITE_SAME: stateid, stable, app_data_block4
            p = opaque(src, md, p + STATEID + 4 + 44, MAXOPAQUE)
        elif op == 47:
            p = bitmap(src, md, p + 24)
        elif op == 48:
            p += 24
        elif op == 49:
            nb = u32(src, md, p + 20 + STATEID)
            p += 24 + STATEID
            if nb == 1:
                p += 8
            tb = u32(src, md, p)
            p += 4
            if tb == 1:
                p += 12
            if nb < 0 or tb < 0:
                p = -1
            else:
                p = opaque(src, md, p + 4, MAXOPAQUE)
        elif op == 50:
            p += 56
        elif op == 51:
            rt = u32(src, md, p + 12)
            p += 16
            if rt == 1:
                p = opaque(src, md, p + 16 + STATEID, MAXOPAQUE)
            elif rt < 0:
                p = -1
        elif op == 53:
            p += 32
        elif op == 54:
            p = opaque(src, md, p, MAXOPAQUE)
            if p >= 0:
                p = opaque(src, md, p, MAXOPAQUE)
        elif op == 55:
            n = u32(src, md, p)
            p = -1 if n < 0 or n > 4096 else p + 4 + STATEID * n
        elif op == 56:
            c = u32(src, md, p + 4)
            p += 8
            if c == 1:
                p += 4
            elif c < 0:
                p = -1
        elif op == 59 or op == 62:
            p += STATEID + 16
        elif op == 63:
            p = bitmap(src, md, p + STATEID + 16)
        elif op == 68 or op == 69:
            p += STATEID + 12
        elif op == 71:
            p += 2 * STATEID + 24
        else:
            ctr[C_NFS4_UNKNOWN_OP] += 1
            return -1 - k
        if p < 0:
            return -1 - k
    return k


@njit(**NJ)
def _row_at(rows, r0, nrows, pos):
    for k in range(nrows):
        if rows[r0 + k, R_V4POS] == pos:
            return r0 + k
    return -1


@njit(**NJ)
def nfs4_reply(src, md, p, rows, r0, nrows, fh, ctr, pend, e):
    """Decode COMPOUND results at p into the call's rows; False if decoding stopped early."""
    st = u32(src, md, p)
    if st < 0:
        return False
    p = opaque(src, md, p + 4, 1024)
    if p < 0:
        return False
    nres = u32(src, md, p)
    if nres < 0:
        return False
    p += 4
    for pos in range(min(nres, 4096)):
        op = u32(src, md, p)
        s = u32(src, md, p + 4)
        if op < 0 or s < 0:
            return False
        p += 8
        r = _row_at(rows, r0, nrows, pos)
        if r >= 0:
            put(rows, r, R_STATUS, M_STATUS, s)
        if s != 0:
            return True
        if op == 3 or op == 5:  # ACCESS: supported + access; COMMIT: verifier
            p += 8
        elif op == 69:  # SEEK: eof + offset
            p += 12
        elif op == 35:  # SETCLIENTID: clientid + verifier
            p += 16
        elif op == 4 or op == 12 or op == 14 or op == 20 or op == 21:  # a stateid
            p += STATEID
        elif op == 36:
            pass
        elif op == 6:
            p = bitmap(src, md, p + 20)
        elif op == 9:
            if r >= 0:
                sz = fattr4_size(src, md, p)
                if sz >= 0:
                    put(rows, r, R_FSIZE, M_FSIZE, sz)
            p = fattr4(src, md, p)
        elif op == 10:
            n = u32(src, md, p)
            if n < 0 or n > FHSIZE4:
                return False
            for g in range(pend[e, P_NG]):
                if pend[e, P_G0 + 2 * g] == pos:
                    fid = pend[e, P_G0 + 2 * g + 1]
                    off = fh_store(src, md, p + 4, n, fh, ctr, C_NFH)
                    if off >= 0:
                        for k in range(nrows):
                            rr = r0 + k
                            if rows[rr, R_FHPEND] == fid:
                                put(rows, rr, R_FHOFF, M_FH, off)
                                rows[rr, R_FHLEN] = n
                                rows[rr, R_FHPEND] = -1
            p += 4 + pad4(n)
        elif op == 11 or op == 28:
            p += 20
        elif op == 29:
            p += 40
        elif op == 7 or op == 8 or op == 13 or op == 15 or op == 16 or op == 17 or op == 19 \
                or op == 22 or op == 23 or op == 24 or op == 30 or op == 31 or op == 32 \
                or op == 37 or op == 39 or op == 44 or op == 45 or op == 57 or op == 58 \
                or op == 59 or op == 62 or op == 71:
            pass
        elif op == 18:
            p = bitmap(src, md, p + STATEID + 24)
            if p < 0:
                return False
            dt = u32(src, md, p)
            p += 4
            if dt == 1 or dt == 2:
                p += STATEID + 4
                if dt == 2:
                    p += 12
                p = opaque(src, md, p + 12, 1024)
            elif dt == 3:
                why = u32(src, md, p)
                p += 4
                if why == 1 or why == 2:
                    p += 4
            elif dt != 0:
                return False
        elif op == 25:
            eof = u32(src, md, p)
            n = u32(src, md, p + 4)
            if eof < 0 or n < 0:
                return False
            if r >= 0:
                put(rows, r, R_EOF, M_EOF, 1 if eof != 0 else 0)
                put(rows, r, R_RETCOUNT, M_RET, n)
            p += 8 + pad4(n)
        elif op == 27:
            p = opaque(src, md, p, MAXOPAQUE)
        elif op == 34:
            p = bitmap(src, md, p)
        elif op == 38:
            n = u32(src, md, p)
            if n < 0:
                return False
            if r >= 0:
                put(rows, r, R_RETCOUNT, M_RET, n)
            p += 16
        elif op == 41:
            p += 24
        elif op == 53:
            p += STATEID + 20
        elif op == 55:
            n = u32(src, md, p)
            p = -1 if n < 0 or n > 4096 else p + 4 + 4 * n
        else:
            return pos + 1 >= nres  # results we cannot step over: fine if nothing follows
        if p < 0:
            return False
    return True
