"""Numba kernels for the nfsdump text reader: a byte-level line tokenizer and a streaming
call/reply joiner. Private to ``ingest/nfsdump.py``; no Python objects cross the boundary.

Why bytes and not str: a per-line Python split costs ~2 µs; scanning the raw bytes of a whole
chunk in one jitted loop is what makes ~1 M lines/s per core possible. The hot kernels are
compiled without NRT reference counting (measured: half the run time went to atomic
incref/decref of the arrays handed to inlined helpers).
"""

from __future__ import annotations

import numpy as np
from numba import njit

# ---- skip reasons (index into SKIP_REASONS) -------------------------------------------------
SKIP_REASONS = (
    "blank_line",           # 0: empty or white space only
    "diagnostic_line",      # 1: nfsdump/anonymizer diagnostics: "XX ..."
    "not_a_record",         # 2: does not start with a digit (other junk, NUL blocks, ...)
    "bad_time",             # 3
    "bad_host",             # 4
    "bad_transport",        # 5: not U / T
    "bad_direction",        # 6: not C2 C3 R2 R3
    "unsupported_version",  # 7: CU<n>/RU<n> (the printer breaks such lines)
    "bad_xid",              # 8
    "bad_proc",             # 9
    "unknown_op",           # 10
    "bad_status",           # 11
    "truncated",            # 12: fixed fields missing or no trailer (con = / status=)
    "overlong_line",        # 13: (set by the Python reader) line longer than the limit
)
N_REASONS = len(SKIP_REASONS)
N_EXAMPLES = 3  # examples kept per reason per chunk

# ---- op names as printed (token) -> canonical request-table op name ---------------------------
OP_TOKENS = (
    ("null", "null"), ("getattr", "getattr"), ("setattr", "setattr"), ("root", "root"),
    ("lookup", "lookup"), ("readlink", "readlink"), ("read", "read"),
    ("writecach", "writecache"), ("writecac", "writecache"), ("writecache", "writecache"),
    ("write", "write"), ("create", "create"), ("remove", "remove"), ("rename", "rename"),
    ("link", "link"), ("symlink", "symlink"), ("mkdir", "mkdir"), ("rmdir", "rmdir"),
    ("readdir", "readdir"), ("statfs", "statfs"), ("access", "access"), ("mknod", "mknod"),
    ("readdirp", "readdirplus"), ("readdirplus", "readdirplus"), ("fsstat", "fsstat"),
    ("fsinfo", "fsinfo"), ("pathconf", "pathconf"), ("commit", "commit"),
    ("unknown", "unknown"), ("ffffffff", "unknown"),
)
_OPW = 12
OP_BYTES = np.zeros((len(OP_TOKENS), _OPW), dtype=np.uint8)
OP_LEN = np.zeros(len(OP_TOKENS), dtype=np.int64)
for _i, (_tok, _) in enumerate(OP_TOKENS):
    OP_BYTES[_i, : len(_tok)] = np.frombuffer(_tok.encode(), dtype=np.uint8)
    OP_LEN[_i] = len(_tok)

# ---- per-record flag bits ---------------------------------------------------------------------
F_OFF = 1
F_CNT = 2
F_RET = 4
F_STATUS = 8
F_SIZE = 16
F_EOF = 32       # eof present
F_EOFV = 64      # eof value
F_SHORT = 128    # SHORT PACKET / +|+ / +/+ seen: fields after it were not decoded
F_FH = 256

# counters[...] of parse_chunk
C_BAD_VALUES = 0
C_SHORT = 1

# join counters
J_CALLS = 0
J_REPLIES = 1
J_MATCHED = 2
J_RETRANS = 3
J_DUP_REPLIES = 4
J_ORPHAN_REPLIES = 5

# key codes inside a line
_K_OTHER = 0
_K_FH = 1
_K_OFF = 2
_K_COUNT = 3
_K_TCOUNT = 4
_K_SIZE = 5
_K_EOF = 6



@njit(cache=True, nogil=True)
def _tok(buf, n, q):
    """Next token at or after byte ``q`` of the current line: (start, end). Every byte
    <= 32 other than the newline separates tokens (blanks, CR, NUL and other control bytes);
    at the newline or the end of the buffer the token is empty and does not move on.
    """
    p = q
    while p < n:
        c = buf[p]
        if c <= 32 and c != 10:
            p += 1
        else:
            break
    s = p
    while p < n and buf[p] > 32:
        p += 1
    return s, p


@njit(cache=True, nogil=True)
def _hexval(buf, s, e, maxdigits):
    """(value, ok) of a hex token of at most ``maxdigits`` significant digits."""
    while e - s > maxdigits and buf[s] == 48:  # leading zeros do not count
        s += 1
    n = e - s
    if n <= 0 or n > maxdigits:
        return np.uint64(0), False
    v = np.uint64(0)
    for i in range(s, e):
        c = buf[i]
        if 48 <= c <= 57:
            d = c - 48
        elif 97 <= c <= 102:
            d = c - 87
        elif 65 <= c <= 70:
            d = c - 55
        else:
            return np.uint64(0), False
        v = (v << np.uint64(4)) | np.uint64(d)
    return v, True


@njit(cache=True, nogil=True)
def _timeval(buf, s, e):
    """(ns since epoch, ok) of ``secs[.frac]`` (frac = decimal fraction, 1..9 digits)."""
    sec = np.int64(0)
    i = s
    nd = 0
    while i < e and 48 <= buf[i] <= 57:
        sec = sec * 10 + (buf[i] - 48)
        i += 1
        nd += 1
    # int64 nanoseconds end in 2262: later (garbage) times are rejected, not wrapped
    if nd == 0 or nd > 10 or sec > 9_223_372_035:
        return np.int64(0), False
    frac = np.int64(0)
    fd = 0
    if i < e and buf[i] == 46:
        i += 1
        while i < e and 48 <= buf[i] <= 57:
            if fd >= 9:
                return np.int64(0), False
            frac = frac * 10 + (buf[i] - 48)
            fd += 1
            i += 1
        if fd == 0:
            return np.int64(0), False
    if i != e:
        return np.int64(0), False
    while fd < 9:
        frac *= 10
        fd += 1
    return sec * 1000000000 + frac, True


@njit(cache=True, nogil=True)
def _ends_con(buf, s, e):
    return e - s >= 3 and buf[e - 3] == 99 and buf[e - 2] == 111 and buf[e - 1] == 110


@njit(cache=True, nogil=True)
def _find_status_eq(buf, s, e):
    """Index just after ``status=`` inside [s, e), or -1."""
    # s t a t u s =
    for i in range(s, e - 6):
        if (buf[i] == 115 and buf[i + 1] == 116 and buf[i + 2] == 97 and buf[i + 3] == 116
                and buf[i + 4] == 117 and buf[i + 5] == 115 and buf[i + 6] == 61):
            return i + 7
    return -1


@njit(cache=True, nogil=True)
def _starts_status_eq(buf, s, e):
    return (e - s >= 7 and buf[s] == 115 and buf[s + 1] == 116 and buf[s + 2] == 97
            and buf[s + 3] == 116 and buf[s + 4] == 117 and buf[s + 5] == 115
            and buf[s + 6] == 61)


@njit(cache=True, nogil=True)
def _is_short_marker(buf, s, e):
    n = e - s
    if n == 3 and buf[s] == 43 and buf[s + 2] == 43 and (buf[s + 1] == 124 or buf[s + 1] == 47):
        return True  # +|+ (v2 call) / +/+ (v2 reply)
    # SHORT (the following PACKET is fused with the next token)
    return (n >= 5 and buf[s] == 83 and buf[s + 1] == 72 and buf[s + 2] == 79
            and buf[s + 3] == 82 and buf[s + 4] == 84)


@njit(cache=True, nogil=True)
def _op_index(buf, s, e):
    n = e - s
    if n > _OPW:
        return -1
    for k in range(OP_LEN.shape[0]):
        if OP_LEN[k] != n or OP_BYTES[k, 0] != buf[s]:
            continue
        same = True
        for j in range(1, n):
            if OP_BYTES[k, j] != buf[s + j]:
                same = False
                break
        if same:
            return k
    return -1


@njit(cache=True, nogil=True)
def _host_ok(buf, s, e):
    # anonymized "30.0801", raw "0a000001.0801", -v dotted quad "10.0.0.1.0801"; and the
    # "ip:port" / "[v6]:port" of tables exported from pcap captures
    if e - s == 0 or e - s > 64:
        return False
    for i in range(s, e):
        c = buf[i]
        if not ((48 <= c <= 57) or (97 <= c <= 102) or (65 <= c <= 70) or c == 46 or c == 58
                or c == 91 or c == 93):
            return False
    return True


@njit(cache=True, nogil=True)
def _fnv(buf, s, e):
    h = np.uint64(1469598103934665603)
    for i in range(s, e):
        h = (h ^ np.uint64(buf[i])) * np.uint64(1099511628211)
    return h


@njit(cache=True, nogil=True)
def _intern(buf, s, e, pool, offs, lens, slots, meta):
    """Dense id of the token buf[s:e] in a growable string table; -2 when the table is full
    (the caller grows it and resumes at the same line)."""
    mask = np.uint64(slots.shape[0] - 1)
    j = _fnv(buf, s, e) & mask
    n = e - s
    while True:
        idx = slots[j]
        if idx < 0:
            break
        if lens[idx] == n:
            o = offs[idx]
            same = True
            for k in range(n):
                if pool[o + k] != buf[s + k]:
                    same = False
                    break
            if same:
                return idx
        j = (j + np.uint64(1)) & mask
    cnt = meta[0]
    used = meta[1]
    if (cnt + 1) * 2 > slots.shape[0] or cnt >= offs.shape[0] or used + n > pool.shape[0]:
        return -2
    for k in range(n):
        pool[used + k] = buf[s + k]
    offs[cnt] = used
    lens[cnt] = n
    slots[j] = cnt
    meta[0] = cnt + 1
    meta[1] = used + n
    return cnt


@njit(cache=True, nogil=True)
def rehash(pool, offs, lens, count, slots):
    """Fill an empty (all -1) ``slots`` from the first ``count`` interned strings."""
    mask = np.uint64(slots.shape[0] - 1)
    for idx in range(count):
        j = _fnv(pool, offs[idx], offs[idx] + lens[idx]) & mask
        while slots[j] >= 0:
            j = (j + np.uint64(1)) & mask
        slots[j] = idx


@njit(cache=True, nogil=True)
def _skip(code, line_no, ls, le, skip_counts, ex_line, ex_start, ex_end):
    k = skip_counts[code]
    if k < N_EXAMPLES:
        ex_line[code, k] = line_no
        ex_start[code, k] = ls
        ex_end[code, k] = le
    skip_counts[code] = k + 1


# _nrt=False: no reference counting in the hot loops. With it, every array passed to an
# (inlined) helper costs an atomic incref/decref pair, which measured at half the run time.
@njit(cache=True, nogil=True, _nrt=False)
def parse_chunk(buf, pos, max_lines, line_base, max_line,
                h_pool, h_offs, h_lens, h_slots, h_meta,
                r_kind, r_time, r_client, r_server, r_tr, r_vers, r_xid, r_op, r_line,
                r_off, r_cnt, r_ret, r_status, r_size, r_flags, fh_offs, fh_data,
                skip_counts, ex_line, ex_start, ex_end, counters):
    """Parse up to ``max_lines`` lines of ``buf`` from byte ``pos``; ``buf`` must end at a
    line end (the caller cuts it after the last newline, or at end of input).

    One pass over the bytes: the tokenizer stops at the newline, so the line end is found by
    finishing the line. Returns (next_pos, lines_done, records_done, fh_bytes, full):
    ``full`` is 1 when the host table ran out of room (grow it and call again from
    ``next_pos``, the start of the line not yet done).
    """
    n = buf.shape[0]
    nl = 0
    nr = 0
    fhpos = np.int64(0)
    fh_offs[0] = 0
    while nl < max_lines and pos < n:
        ls = pos
        q = pos
        line_no = line_base + nl + 1
        code = -1
        fh_start = fhpos
        bad = 0
        short = False
        for _once in range(1):  # a block to break out of with a skip code
            s, t = _tok(buf, n, q)
            q = t
            if s == t:
                # nothing but separators: blank, or NUL/control bytes (hourly files with
                # NUL blocks) which are junk, not an empty line
                code = 0
                j = ls
                while j < n and buf[j] != 10:
                    c = buf[j]
                    if not (c == 32 or c == 9 or c == 13 or c == 11 or c == 12):
                        code = 2
                        break
                    j += 1
                break
            c0 = buf[s]
            if c0 < 48 or c0 > 57:
                code = 1 if (c0 == 88 and t - s >= 2 and buf[s + 1] == 88) else 2
                break
            tns, ok = _timeval(buf, s, t)
            if not ok:
                code = 3
                break
            s1, t1 = _tok(buf, n, q)
            q = t1
            s2, t2 = _tok(buf, n, q)
            q = t2
            s3, t3 = _tok(buf, n, q)
            q = t3
            s4, t4 = _tok(buf, n, q)
            q = t4
            s5, t5 = _tok(buf, n, q)
            q = t5
            s6, t6 = _tok(buf, n, q)
            q = t6
            s7, t7 = _tok(buf, n, q)
            q = t7
            if s7 == t7:
                code = 12
                break
            if not _host_ok(buf, s1, t1) or not _host_ok(buf, s2, t2):
                code = 4
                break
            if not (t3 - s3 == 1 and (buf[s3] == 85 or buf[s3] == 84)):
                code = 5
                break
            if not (t4 - s4 == 2 and (buf[s4] == 67 or buf[s4] == 82)
                    and (buf[s4 + 1] == 50 or buf[s4 + 1] == 51)):
                code = 7 if (t4 - s4 >= 2 and (buf[s4] == 67 or buf[s4] == 82)
                             and buf[s4 + 1] == 85) else 6
                break
            xid, ok = _hexval(buf, s5, t5, 8)
            if not ok:
                code = 8
                break
            _proc, ok = _hexval(buf, s6, t6, 8)
            if not ok:
                code = 9
                break
            op = _op_index(buf, s7, t7)
            if op < 0:
                code = 10
                break
            is_reply = buf[s4] == 82
            flags = 0
            status = np.uint64(0)
            trailer = False
            if is_reply:
                s8, t8 = _tok(buf, n, q)
                q = t8
                if s8 == t8:
                    code = 12
                    break
                if _starts_status_eq(buf, s8, t8):
                    # null (and v2 root/writecache) replies have no status token: the
                    # trailer's status= carries it (XXX in anonymized traces -> unknown)
                    trailer = True
                    status, ok = _hexval(buf, s8 + 7, t8, 8)
                    if ok:
                        flags |= F_STATUS
                elif t8 - s8 == 2 and buf[s8] == 79 and buf[s8 + 1] == 75:  # OK
                    flags |= F_STATUS
                elif _is_short_marker(buf, s8, t8):
                    short = True
                else:
                    status, ok = _hexval(buf, s8, t8, 8)
                    if not ok:
                        code = 11
                        break
                    flags |= F_STATUS
            # ---- key/value pairs up to the trailer
            off = np.uint64(0)
            cnt = np.uint64(0)
            tcnt = np.uint64(0)
            have_tcnt = False
            ret = np.uint64(0)
            size = np.uint64(0)
            key = -1
            while not trailer:
                s, t = _tok(buf, n, q)
                q = t
                if s == t:
                    break
                c = buf[s]
                m = t - s
                if short:
                    if not is_reply:
                        if _ends_con(buf, s, t):
                            trailer = True
                    elif _find_status_eq(buf, s, t) >= 0:
                        trailer = True
                    continue
                # cheap first-byte filters keep helper calls off the per-token path
                if not is_reply:
                    if c == 99 and m == 3 and buf[s + 1] == 111 and buf[s + 2] == 110:  # con
                        trailer = True
                        break
                elif (c == 115 and m >= 7 and buf[s + 1] == 116 and buf[s + 2] == 97
                      and buf[s + 3] == 116 and buf[s + 4] == 117 and buf[s + 5] == 115
                      and buf[s + 6] == 61):  # status=
                    trailer = True
                    break
                if (c == 83 or c == 43) and _is_short_marker(buf, s, t):
                    short = True
                    if not is_reply and _ends_con(buf, s, t):
                        trailer = True
                    elif is_reply and _find_status_eq(buf, s, t) >= 0:
                        trailer = True
                    continue
                if key < 0:
                    # a switch on length and first byte: most keys (ftype, mode, nlink, uid,
                    # ...) are rejected by the first compare
                    key = _K_OTHER
                    if m == 2:
                        if c == 102 and buf[s + 1] == 104:  # fh
                            key = _K_FH
                    elif m == 3:
                        if c == 111 and buf[s + 1] == 102 and buf[s + 2] == 102:  # off
                            key = _K_OFF
                        elif c == 101 and buf[s + 1] == 111 and buf[s + 2] == 102:  # eof
                            key = _K_EOF
                    elif m == 4:
                        if c == 115 and buf[s + 1] == 105 and buf[s + 2] == 122 and \
                                buf[s + 3] == 101:  # size
                            key = _K_SIZE
                        elif c == 102 and buf[s + 1] == 105 and buf[s + 2] == 108 and \
                                buf[s + 3] == 101:  # file
                            key = _K_FH
                    elif m == 5:
                        if c == 99 and buf[s + 1] == 111 and buf[s + 2] == 117 and \
                                buf[s + 3] == 110 and buf[s + 4] == 116:  # count
                            key = _K_COUNT
                    elif m == 6:
                        if c == 111 and buf[s + 1] == 102 and buf[s + 2] == 102 and \
                                buf[s + 3] == 115 and buf[s + 4] == 101 and buf[s + 5] == 116:
                            key = _K_OFF  # offset (v2)
                        elif c == 116 and buf[s + 1] == 99 and buf[s + 2] == 111 and \
                                buf[s + 3] == 117 and buf[s + 4] == 110 and buf[s + 5] == 116:
                            key = _K_TCOUNT  # tcount (v2)
                    continue
                kc = key
                key = -1
                if kc == _K_OTHER:
                    continue
                if not is_reply:
                    if kc == _K_FH:
                        if flags & F_FH:
                            continue
                        okh = m % 2 == 0 and m <= 512
                        if okh:
                            for i in range(0, m, 2):
                                hi = buf[s + i]
                                lo = buf[s + i + 1]
                                if 48 <= hi <= 57:
                                    hv = hi - 48
                                elif 97 <= hi <= 102:
                                    hv = hi - 87
                                elif 65 <= hi <= 70:
                                    hv = hi - 55
                                else:
                                    okh = False
                                    break
                                if 48 <= lo <= 57:
                                    lv = lo - 48
                                elif 97 <= lo <= 102:
                                    lv = lo - 87
                                elif 65 <= lo <= 70:
                                    lv = lo - 55
                                else:
                                    okh = False
                                    break
                                fh_data[fhpos + i // 2] = hv * 16 + lv
                        if okh:
                            fhpos += m // 2
                            flags |= F_FH
                        else:
                            bad += 1
                    elif kc == _K_OFF:
                        if flags & F_OFF:
                            continue
                        v, ok = _hexval(buf, s, t, 16)
                        if ok:
                            off = v
                            flags |= F_OFF
                        else:
                            bad += 1
                    elif kc == _K_COUNT:
                        if flags & F_CNT:
                            continue
                        v, ok = _hexval(buf, s, t, 8)
                        if ok:
                            cnt = v
                            flags |= F_CNT
                        else:
                            bad += 1
                    elif kc == _K_TCOUNT:
                        v, ok = _hexval(buf, s, t, 8)
                        if ok:
                            tcnt = v
                            have_tcnt = True
                        else:
                            bad += 1
                else:
                    if kc == _K_SIZE:
                        # first occurrence = the object's post-op attributes (lookup replies
                        # repeat the group for the directory)
                        if flags & F_SIZE:
                            continue
                        v, ok = _hexval(buf, s, t, 16)
                        if ok:
                            size = v
                            flags |= F_SIZE
                        else:
                            bad += 1
                    elif kc == _K_COUNT:
                        if flags & F_RET:
                            continue
                        v, ok = _hexval(buf, s, t, 8)
                        if ok:
                            ret = v
                            flags |= F_RET
                        else:
                            bad += 1
                    elif kc == _K_EOF:
                        if flags & F_EOF:
                            continue
                        v, ok = _hexval(buf, s, t, 8)
                        if ok:
                            flags |= F_EOF
                            if v != 0:
                                flags |= F_EOFV
                        else:
                            bad += 1
            if not trailer:
                code = 12
                break
            # ---- accepted: intern hosts (client first as in the call)
            if is_reply:
                cs, ce, ss, se = s2, t2, s1, t1
            else:
                cs, ce, ss, se = s1, t1, s2, t2
            # look-up inline (a helper call per host costs more than the hashing); only a
            # first sighting goes to _intern
            cid = -1
            sid = -1
            mask = np.uint64(h_slots.shape[0] - 1)
            for which in range(2):
                hs = cs if which == 0 else ss
                he = ce if which == 0 else se
                hh = np.uint64(1469598103934665603)
                for i in range(hs, he):
                    hh = (hh ^ np.uint64(buf[i])) * np.uint64(1099511628211)
                j = hh & mask
                hid = -1
                hl = he - hs
                while True:
                    idx = h_slots[j]
                    if idx < 0:
                        break
                    if h_lens[idx] == hl:
                        o = h_offs[idx]
                        same = True
                        for i in range(hl):
                            if h_pool[o + i] != buf[hs + i]:
                                same = False
                                break
                        if same:
                            hid = idx
                            break
                    j = (j + np.uint64(1)) & mask
                if hid < 0:
                    hid = _intern(buf, hs, he, h_pool, h_offs, h_lens, h_slots, h_meta)
                if which == 0:
                    cid = hid
                else:
                    sid = hid
            if cid < 0 or sid < 0:
                fh_offs[nr] = fh_start
                return ls, nl, nr, fh_start, 1
            if not is_reply and (flags & F_CNT) == 0 and have_tcnt:
                cnt = tcnt
                flags |= F_CNT
            if short:
                flags |= F_SHORT
            r_kind[nr] = 1 if is_reply else 0
            r_time[nr] = tns
            r_client[nr] = cid
            r_server[nr] = sid
            r_tr[nr] = 1 if buf[s3] == 84 else 0
            r_vers[nr] = buf[s4 + 1] - 48
            r_xid[nr] = np.uint32(xid)
            r_op[nr] = op
            r_line[nr] = line_no
            r_off[nr] = off
            r_cnt[nr] = np.uint32(cnt)
            r_ret[nr] = np.uint32(ret)
            r_status[nr] = np.uint32(status)
            r_size[nr] = size
            r_flags[nr] = flags
        # ---- to the end of the line
        le = q
        while le < n and buf[le] != 10:
            le += 1
        if le - ls > max_line:
            code = 13
        if code >= 0:
            fhpos = fh_start
            _skip(code, line_no, ls, le, skip_counts, ex_line, ex_start, ex_end)
        else:
            if short:
                counters[C_SHORT] += 1
            counters[C_BAD_VALUES] += bad
            nr += 1
            fh_offs[nr] = fhpos
        pos = le + 1 if le < n else n
        nl += 1
    return pos, nl, nr, fhpos, 0

# ---- call/reply join -------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def _key_hash(c, s, tr, x):
    h = np.uint64(c) * np.uint64(0x9E3779B97F4A7C15)
    h ^= np.uint64(s) * np.uint64(0xC2B2AE3D27D4EB4F)
    h ^= np.uint64(x) * np.uint64(0x165667B19E3779F9) + np.uint64(tr)
    h ^= h >> np.uint64(29)
    return h


@njit(cache=True, nogil=True, _nrt=False)
def _find(t_used, t_client, t_server, t_tr, t_xid, c, s, tr, x):
    mask = np.uint64(t_used.shape[0] - 1)
    j = _key_hash(c, s, tr, x) & mask
    while t_used[j]:
        if t_xid[j] == x and t_client[j] == c and t_server[j] == s and t_tr[j] == tr:
            return np.int64(j), True
        j = (j + np.uint64(1)) & mask
    return np.int64(j), False


@njit(cache=True, nogil=True, _nrt=False)
def join_records(kind, time, client, server, tr, xid, op, n_carry, window_ns,
                 t_used, t_client, t_server, t_tr, t_xid, t_replied, t_time, t_op, t_row,
                 row_call, row_reply, counters):
    """Join calls and replies in record order.

    Records [0, n_carry) are pending calls carried from the previous chunk; rows
    [0, n_carry) are theirs and the table already points at them. Returns the row count.
    A call with the key of a recent (``window_ns``) call of the same op is a retransmission
    and is dropped; so is a second reply. A reply matches a pending call of its key and op
    made at most ``window_ns`` before it (so the result does not depend on where chunks
    end); any other reply is an orphan and gets a row of its own. The table must have room for every new record.
    """
    nrow = n_carry
    for i in range(n_carry):
        row_call[i] = i
        row_reply[i] = -1
    for i in range(n_carry, kind.shape[0]):
        c = client[i]
        s = server[i]
        x = xid[i]
        r = tr[i]
        j, found = _find(t_used, t_client, t_server, t_tr, t_xid, c, s, r, x)
        if kind[i] == 0:
            counters[J_CALLS] += 1
            if found and t_op[j] == op[i] and abs(time[i] - t_time[j]) <= window_ns:
                counters[J_RETRANS] += 1
                continue
            row_call[nrow] = i
            row_reply[nrow] = -1
            t_used[j] = True
            t_client[j] = c
            t_server[j] = s
            t_tr[j] = r
            t_xid[j] = x
            t_replied[j] = False
            t_time[j] = time[i]
            t_op[j] = op[i]
            t_row[j] = nrow
            nrow += 1
        else:
            counters[J_REPLIES] += 1
            if found and t_op[j] == op[i]:
                if not t_replied[j] and t_row[j] >= 0 and time[i] - t_time[j] <= window_ns:
                    row_reply[t_row[j]] = i
                    t_replied[j] = True
                    counters[J_MATCHED] += 1
                    continue
                if t_replied[j] and abs(time[i] - t_time[j]) <= window_ns:
                    counters[J_DUP_REPLIES] += 1
                    continue
            row_call[nrow] = -1
            row_reply[nrow] = i
            counters[J_ORPHAN_REPLIES] += 1
            nrow += 1
    return nrow


@njit(cache=True, nogil=True)
def carry_and_rebuild(nrow, cutoff_ns, final,
                      t_used, t_client, t_server, t_tr, t_xid, t_replied, t_time, t_op, t_row,
                      n_used, n_client, n_server, n_tr, n_xid, n_replied, n_time, n_op, n_row):
    """End of a chunk: pick the rows to carry (pending calls newer than ``cutoff_ns``) and
    copy the still-recent entries into the new (empty) table ``n_*``, re-pointing carried
    rows to their new index and emitted ones to -1. Returns (carry mask over rows, entries)."""
    carry = np.zeros(nrow, dtype=np.bool_)
    if not final:
        for j in range(t_used.shape[0]):
            if t_used[j] and not t_replied[j] and t_row[j] >= 0 and t_time[j] >= cutoff_ns:
                carry[t_row[j]] = True
    newidx = np.full(nrow, -1, dtype=np.int64)
    k = 0
    for r in range(nrow):
        if carry[r]:
            newidx[r] = k
            k += 1
    kept = 0
    if final:
        return carry, kept
    mask = np.uint64(n_used.shape[0] - 1)
    for j in range(t_used.shape[0]):
        if not t_used[j] or t_time[j] < cutoff_ns:
            continue
        if not t_replied[j]:
            if t_row[j] < 0 or newidx[t_row[j]] < 0:
                continue  # its row is emitted as an orphan
            row = newidx[t_row[j]]
        else:
            row = -1
        q = _key_hash(t_client[j], t_server[j], t_tr[j], t_xid[j]) & mask
        while n_used[q]:
            q = (q + np.uint64(1)) & mask
        n_used[q] = True
        n_client[q] = t_client[j]
        n_server[q] = t_server[j]
        n_tr[q] = t_tr[j]
        n_xid[q] = t_xid[j]
        n_replied[q] = t_replied[j]
        n_time[q] = t_time[j]
        n_op[q] = t_op[j]
        n_row[q] = row
        kept += 1
    return carry, kept
