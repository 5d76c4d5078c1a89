"""Field indices and constants shared by the numba kernels.

The decoder keeps all state in a handful of numpy arrays (2-D int64 tables with named columns,
uint8 byte pools), so that the kernels take plain arrays and compile once. Module-level ints
are compile-time constants for numba.
"""

from __future__ import annotations

# Hot-path kernels run without NRT reference counting: with it, every call increments and
# decrements each array argument (~20 of them), which cost more than decoding a frame. They
# therefore never allocate; the few helpers that do (pool growth, row batches) use NJA.
NJ = dict(cache=True, nogil=True, _nrt=False)
NJA = dict(cache=True, nogil=True)

# --- sizes -------------------------------------------------------------------------------
HEAD = 2048          # message bytes kept from the start of a reassembled TCP record
TAIL = 1024          # ... and from its end (NFSv4 ops after WRITE/READ data)
MAXREC = 1 << 27     # largest RPC record accepted while in sync
FLOWKEY = 40         # bytes of a flow key
FRAGBUF = 65536 + 16  # reassembly buffer per IPv4 datagram (+ 8 address bytes)
NFRAG = 32           # datagrams reassembled at once
OOO_PER_DIR = 64     # out-of-order segments held per direction before a gap is declared
V4_MAX_ROWS = 32     # rows emitted per COMPOUND at most
HR_ROWS = 17600      # worst-case rows one frame can add (64 KiB / 4 bytes per v4 op)
HR_MSGS = 8400       # worst-case RPC messages one frame can hold
HR_FH = HR_ROWS * 130
WINDOW_NS = 120 * 1_000_000_000  # calls older than this (capture time) stop waiting for replies

# --- rows (one per request-table row) -----------------------------------------------------
R_TIME, R_RTIME, R_FLOW, R_SIDE, R_XID, R_VERS, R_MINOR, R_OP = 0, 1, 2, 3, 4, 5, 6, 7
R_FHOFF, R_FHLEN, R_OFFSET, R_COUNT, R_RETCOUNT, R_EOF, R_STATUS, R_FSIZE = 8, 9, 10, 11, 12, 13, 14, 15
R_FRAME, R_MASK, R_V4POS, R_FHPEND, R_DONE, R_PROTO = 16, 17, 18, 19, 20, 21
RF = 22
# presence bits in R_MASK
M_RTIME, M_MINOR, M_FH, M_OFFSET, M_COUNT, M_RET, M_EOF, M_STATUS, M_FSIZE = (
    1, 2, 4, 8, 16, 32, 64, 128, 256)

# --- pending calls (one per RPC call, any program) ----------------------------------------
P_KEY, P_TIME, P_FRAME, P_PROG, P_VERS, P_PROC, P_ROW0, P_NROWS = 0, 1, 2, 3, 4, 5, 6, 7
P_STATE, P_MINOR, P_GSS, P_NG, P_G0 = 8, 9, 10, 11, 12  # P_G0..P_G0+7: 4 (GETFH pos, fh id) pairs
P_LIVE = 20
PF = 21

# --- flows (canonical endpoint pairs) -----------------------------------------------------
F_PROTO, F_ALEN = 0, 1
F_DIR0 = 2
D_NEXT, D_HAVE, D_SYNC, D_HDRN, D_HDRV, D_FRAG, D_LAST, D_MLEN = 0, 1, 2, 3, 4, 5, 6, 7
D_SLOT, D_HLEN, D_TAILN, D_BAD, D_TBAD, D_OOO, D_INMSG = 8, 9, 10, 11, 12, 13, 14
DN = 15
FF = F_DIR0 + 2 * DN

# --- out-of-order TCP segments -------------------------------------------------------------
O_USED, O_FLOW, O_DIR, O_SEQ, O_LEN, O_AVAIL, O_POFF, O_FRAME, O_TS = 0, 1, 2, 3, 4, 5, 6, 7, 8
OF = 9

# --- IPv4 fragment reassembly slots ----------------------------------------------------------
FR_USED, FR_SRC, FR_DST, FR_ID, FR_PROTO, FR_TOTAL, FR_NFRAMES, FR_TS, FR_SEQ = 0, 1, 2, 3, 4, 5, 6, 7, 8
FR_FILLED = 9
FRF = 10

# --- counters ------------------------------------------------------------------------------
# frame outcomes: parsed + every skip reason; the names (below) become IngestReport.skipped
C_PARSED = 0
C_DEFERRED = 1            # not an outcome: frame held (out-of-order segment, IP fragment)
NO_OUTCOME = -1           # outcome already counted by the handler
SKIP_NAMES = (
    "unsupported_linktype",      # 2
    "not_ip",                    # 3
    "truncated_headers",         # 4  snaplen cut inside link/IP/UDP/TCP headers
    "bad_ip_header",             # 5
    "not_tcp_udp",               # 6
    "ipv6_fragment",             # 7
    "ip_fragment_incomplete",    # 8
    "ip_fragment_duplicate",     # 9
    "udp_not_rpc",               # 10
    "tcp_no_payload",            # 11
    "tcp_retransmission",        # 12
    "tcp_unsynced",              # 13  stream bytes before a record mark was found
    "bad_interface",             # 14  pcapng packet naming an undefined interface
    "truncated_record",          # 15  container record cut by end of file
    "corrupt_record",            # 16  container record header makes no sense; reading stopped
    "bad_l4_header",             # 17
)
C_SKIP0 = 2
(S_LINKTYPE, S_NOTIP, S_TRUNC, S_BADIP, S_NOTL4, S_V6FRAG, S_FRAGINC, S_FRAGDUP, S_UDPNOTRPC,
 S_NOPAYLOAD, S_RETRANS, S_UNSYNCED, S_BADIF, S_TRUNCREC, S_CORRUPT, S_BADL4) = range(2, 18)

# message / RPC level (not frames)
C_CALLS = 20              # NFS calls (first transmission)
C_REPLIES = 21            # NFS replies matched to a call (first)
C_ORPHAN_REPLIES = 22     # replies (any program) with no call seen
C_RETRANS = 23            # retransmitted calls + duplicate replies collapsed
C_RPC_CALLS = 24          # all RPC calls
C_RPC_REPLIES = 25        # all RPC replies
C_RPC_MALFORMED = 26      # messages too short / inconsistent to decode
C_RPC_TRUNCMSG = 27       # TCP records abandoned (gap, lost sync)
C_RPC_DENIED = 28
C_RPC_ACCEPT_ERR = 29
C_TCP_GAPS = 30
C_TCP_GAP_BYTES = 31
C_PROG0 = 32              # calls per program class, see PROG_NAMES
PROG_NAMES = ("nfs", "mount", "portmap", "nlm", "nfs_acl", "nsm", "rquota", "nfs4_callback", "other")
C_NFS_UNDECODED = 41      # NFS calls/replies whose arguments/results could not be decoded fully
C_NFS4_UNKNOWN_OP = 42
C_GSS_CONTROL = 43
C_GSS_PRIVACY = 44
C_EMPTY_RECORD = 45
C_NFS_VERS_OTHER = 46
C_ORPHAN_CALLS = 47
C_MATCHED = 48
C_FRAG_DATAGRAMS = 49
C_V4_ROWS_CAPPED = 50
# pool bookkeeping
C_NFLOWS = 60
C_NROWS = 61
C_NPEND = 62
C_NFH = 63
C_SLOTTOP = 64            # free slots on the stack
C_OOON = 65
C_OOOBYTES = 66
C_NJOIN = 67
C_FRAGSEQ = 68
C_NOW = 69                # latest capture time seen
C_LASTA, C_LASTB, C_LASTF, C_LASTD = 70, 71, 72, 73  # last IPv4 flow looked up
NCTR = 80

# op codes in rows: v2 -> 200 + proc, v3 -> 300 + proc, v4 -> 400 + opnum, v4 NULL -> 399
NFS2_PROCS = ("null", "getattr", "setattr", "root", "lookup", "readlink", "read", "writecache",
              "write", "create", "remove", "rename", "link", "symlink", "mkdir", "rmdir",
              "readdir", "statfs")
NFS3_PROCS = ("null", "getattr", "setattr", "lookup", "access", "readlink", "read", "write",
              "create", "mkdir", "symlink", "mknod", "remove", "rmdir", "rename", "link",
              "readdir", "readdirplus", "fsstat", "fsinfo", "pathconf", "commit")
NFS4_OPS = {3: "access", 4: "close", 5: "commit", 6: "create", 9: "getattr", 10: "getfh",
            15: "lookup", 18: "open", 22: "putfh", 25: "read", 38: "write"}


def op_name(code: int) -> str:
    if 200 <= code < 200 + len(NFS2_PROCS):
        return NFS2_PROCS[code - 200]
    if 300 <= code < 300 + len(NFS3_PROCS):
        return NFS3_PROCS[code - 300]
    if code == 399:
        return "null"
    if code - 400 in NFS4_OPS:
        return NFS4_OPS[code - 400]
    return f"op{code}"
