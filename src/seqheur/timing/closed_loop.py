"""``closed-loop``: what the clients see — READs through client slots, the network, nfsd
threads and a disk queue, simulated event by event (docs/timing.md).

The replay has already decided, in trace order, which disk reads every READ issued and which
of them the READ waits for (``sync``; read-ahead is asynchronous). This model times that:

* **client** — at most ``slots`` READs outstanding (nfsiods / RPC slots); READs are issued in
  trace order, each at ``max(free slot, its trace time - the first READ's)`` with
  ``think=trace``, or as soon as a slot is free with ``think=none`` (closed loop, back to back).
  A READ of more than ``rsize`` bytes is ``ceil(bytes / rsize)`` RPCs for the server's CPU
  (one slot, one round trip: its RPCs are taken as pipelined).
* **network** — a request reaches the server ``rtt_us / 2`` after its issue; a reply is on the
  wire for ``bytes / min(link_mbps, host_mbps)`` (MB = 10^6 bytes; 0 = no limit), one reply
  at a time, and reaches the client ``rtt_us / 2`` after it left. Request bytes and headers
  are not counted.
* **server** — ``nfsd`` threads take arrived READs in arrival order; a READ costs ``cpu_us``
  per RPC, then its disk reads enter the disk queue. The READ replies when its own demand
  reads are done and no earlier disk read of its bytes is still in flight (a read-ahead that
  has not finished, or another READ's demand read); its read-ahead reads do not hold it.
  The thread is free once the reply is handed to the network.
* **disk** — one queue, ``fifo`` (arrival order) or ``cscan`` (one-way elevator by the byte
  address of the file placement, :meth:`seqheur.disk.model.DiskModel.place`), feeding the
  drive model one read at a time (:func:`seqheur.disk.model.service_kernel`, its state carried
  from read to read; the time the drive was idle before a read lets its own read-ahead run).

Not modelled: CPU contention between nfsd threads, request bytes and per-packet overheads,
losses and retransmissions, client-side caching, writes and other RPCs, several clients (the
trace's READs share one set of slots). A READ is checked for in-flight reads of its bytes
against the last :data:`LOOKBACK` disk reads of its file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from ..disk.model import extent_address, service_kernel
from ..options import param

NAME = "closed-loop"
#: Jitted functions that call into other modules (the drive model): the replay caches them
#: on disk keyed by every source they reach, not by this file alone.
KERNELS = ("simulate", "op_address")
DOC = ("clients with N outstanding READs (think time from the trace or none), network RTT "
       "and bandwidth, nfsd threads with CPU per RPC, asynchronous read-ahead, a fifo or "
       "cscan disk queue feeding the drive model; event by event")
SOURCE = ("docs/timing.md; presets: Ellard & Seltzer 2003, NFS Tricks and Benchmarking Traps "
          "(FREENIX) testbed, with assumed figures marked")

#: Earlier disk reads of the same file a READ is checked against for reads still in flight.
LOOKBACK = 32

#: Named sets of values (``closed-loop:preset=NAME``); docs/timing.md gives every figure's
#: source, or says it is assumed and why.
PRESETS: dict[str, dict[str, Any]] = {
    # Ellard & Seltzer 2003 testbed (sections 4.1, 5.3): gigabit Ethernet, the server's PCI
    # DMA measured at 54 MB/s, 8 nfsds, 8 nfsiods, UDP, 8 KiB reads, a cyclic elevator
    # (bufqdisksort); rtt and cpu are assumed (docs/timing.md)
    "paper-testbed": dict(slots=8, rsize=8192, nfsd=8, link_mbps=125.0, rtt_us=100.0,
                          host_mbps=54.0, cpu_us=50.0, scheduler="cscan"),
    # a client and server on one machine over loopback: no wire, a short round trip
    "lab-loopback": dict(slots=16, rsize=1048576, nfsd=16, link_mbps=0.0, rtt_us=30.0,
                         host_mbps=0.0, cpu_us=20.0, scheduler="fifo"),
}


@dataclass(frozen=True)
class Params:
    """Options of the closed-loop model. Defaults: an ideal network and server (no round trip,
    no bandwidth limit, no CPU), 8 slots and 8 nfsd threads, a FIFO disk queue."""

    preset: str = param("none", choices=("none", *PRESETS),
                        doc="a named set of values (docs/timing.md); options after it override")
    slots: int = param(8, doc="READs a client keeps outstanding (nfsiods / RPC slots), >= 1")
    think: str = param("none", choices=("none", "trace"),
                       doc="none: issue as soon as a slot is free; trace: not before the "
                       "READ's trace time (offset from the first READ)")
    rsize: int = param(1048576, unit="bytes", doc="transport READ size: a READ of more bytes "
                       "costs ceil(bytes / rsize) RPCs of CPU")
    rtt_us: float = param(0.0, unit="µs", doc="network round trip time")
    link_mbps: float = param(0.0, unit="MB/s", doc="wire rate for replies, MB = 10^6 bytes; "
                             "0 = no limit")
    host_mbps: float = param(0.0, unit="MB/s", doc="host-side ceiling (PCI / NIC DMA) for "
                             "replies, MB = 10^6 bytes; 0 = no limit")
    nfsd: int = param(8, doc="server threads serving READs, >= 1")
    cpu_us: float = param(0.0, unit="µs", doc="server CPU time per RPC")
    scheduler: str = param("fifo", choices=("fifo", "cscan"),
                           doc="disk queue: fifo (arrival order) or cscan (one-way elevator "
                           "by byte address)")

    def __post_init__(self) -> None:
        if self.slots < 1:
            raise ValueError(f"slots must be >= 1, not {self.slots}")
        if self.nfsd < 1:
            raise ValueError(f"nfsd must be >= 1, not {self.nfsd}")
        if self.rsize < 1:
            raise ValueError(f"rsize must be >= 1 byte, not {self.rsize}")
        for name in ("rtt_us", "link_mbps", "host_mbps", "cpu_us"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, not {getattr(self, name)}")


@dataclass(frozen=True)
class TimingInputs:
    """What the replay hands a timing model: per READ (trace order) its trace time (ns) and
    bytes (after end-of-file clipping); per disk read (issue order) the READ that issued it,
    whether that READ waits for it, file, offset and length (bytes); the drive model and the
    files' placement on it."""

    time_ns: np.ndarray
    file: np.ndarray
    offset: np.ndarray
    nbytes: np.ndarray
    op_request: np.ndarray
    op_sync: np.ndarray
    op_file: np.ndarray
    op_offset: np.ndarray
    op_length: np.ndarray
    disk: Any  # seqheur.disk.model.DiskModel
    place: Any  # its Placement of the files


@dataclass(frozen=True)
class TimingResult:
    """Per READ: issue and completion time at the client (s from the first issue); totals."""

    issue_s: np.ndarray
    done_s: np.ndarray
    disk_busy_s: float
    disk_end_s: float  # when the disk finished its last read (read-ahead may outlast replies)
    client_bytes: int  # bytes the replies carried to the client
    disk_bytes: int  # bytes the disk reads transferred

    @property
    def e2e_seconds(self) -> float:
        return float(self.done_s.max()) if self.done_s.size else 0.0

    def summary(self, demand_bytes: int) -> dict[str, Any]:
        """The timing columns of the summary (:data:`seqheur.metrics.TIMING_METRICS`)."""
        e2e = self.e2e_seconds
        span = max(e2e, self.disk_end_s)
        lat_ms = (self.done_s - self.issue_s) * 1e3
        nan = float("nan")
        pct = (np.percentile(lat_ms, [50, 95, 99]) if lat_ms.size else [nan] * 3)
        return {"e2e_seconds": e2e,
                "e2e_throughput_mbps": demand_bytes / 1e6 / e2e if e2e > 0 else nan,
                "read_latency_p50_ms": float(pct[0]), "read_latency_p95_ms": float(pct[1]),
                "read_latency_p99_ms": float(pct[2]),
                "disk_utilisation": self.disk_busy_s / span if span > 0 else nan}


def run(params: Params, inputs: TimingInputs) -> TimingResult:
    """Simulate the replay's READs and disk reads under ``params``."""
    n = int(inputs.time_ns.size)
    i64 = np.int64
    op_req = np.ascontiguousarray(inputs.op_request, i64)
    op_file = np.ascontiguousarray(inputs.op_file, i64)
    op_off = np.ascontiguousarray(inputs.op_offset, i64)
    op_len = np.ascontiguousarray(inputs.op_length, i64)
    op_sync = np.ascontiguousarray(inputs.op_sync, i64)
    nbytes = np.ascontiguousarray(inputs.nbytes, i64)
    file = np.ascontiguousarray(inputs.file)
    offset = np.ascontiguousarray(inputs.offset, i64)
    t = np.ascontiguousarray(inputs.time_ns, i64)
    arrive = ((t - t[0]) / 1e9 if n and params.think == "trace" else np.zeros(0))
    nfiles = 1 + max(int(file.max()) if n else 0, int(op_file.max()) if op_file.size else 0)
    place = inputs.place
    addr = op_address(op_file, op_off, place.ext_first, place.ext_base,
                      i64(place.extent_bytes))
    rate = min((r for r in (params.link_mbps, params.host_mbps) if r > 0), default=0.0) * 1e6
    issue = np.empty(n)
    done = np.empty(n)
    state = inputs.disk.new_state()
    busy, disk_end = simulate(
        arrive, nbytes, i64(params.rsize), file, offset, op_req, op_sync, op_file, op_off,
        op_len, addr, nfiles, int(params.slots), params.rtt_us * 0.5e-6, rate,
        params.cpu_us * 1e-6, int(params.nfsd), params.scheduler == "cscan", place.ext_first,
        place.ext_base, i64(place.extent_bytes), *inputs.disk.kernel_args(), state, issue, done)
    return TimingResult(issue, done, float(busy), float(disk_end), int(nbytes.sum()),
                        int(op_len.sum()))


@njit(nogil=True)  # cached on disk by the replay, keyed by sources (engine.cache_by_sources)
def op_address(file, offset, ext_first, ext_base, extent_bytes):
    """Byte address on the disk where each read starts (the placement's first extent of the
    file when it is contiguous)."""
    out = np.empty(file.size, np.int64)
    for j in range(file.size):
        k = offset[j] // extent_bytes
        out[j] = (extent_address(file[j], k, ext_first, ext_base, extent_bytes)
                  + offset[j] - k * extent_bytes)
    return out


# --------------------------------------------------------------------------------------------
# the event loop
#
# Events at one time run in the order they were scheduled: every event carries a sequence
# number, and the next event is the least (time, sequence) pair. Each kind of event is
# scheduled in (time, sequence) order, so instead of one heap the loop keeps a queue per kind
# and takes the least of their heads: READs reach the server in issue order; replies leave
# the wire in the order they were sent (each after the one before); the disk and the client's
# retry are one event at a time. Only CPU events can be scheduled out of time order (a READ
# of more RPCs takes longer): they are kept sorted, a few at most (one per busy nfsd).

EV_NONE = -1
EV_TRY = 0  # the client tries to issue READs
EV_ARRIVE = 1  # a READ reaches the server
EV_CPU = 2  # an nfsd has done a READ's CPU work: its disk reads enter the queue
EV_DISK = 3  # a disk read finished
EV_RECV = 4  # a reply reached the client

NO_LINK = -1


@njit(nogil=True)  # cached on disk by the replay, keyed by sources (engine.cache_by_sources)
def simulate(arrive, nbytes, rsize, file, offset, op_req, op_sync, op_file, op_off, op_len,
             addr, nfiles, slots, half_rtt, rate, cpu_s, nfsd, cscan, ext_first, ext_base,
             extent_bytes, ip, fp, seek_d, seek_t, zone_start, zone_rate, dstate, issue, done):
    """Run the events; fills ``issue`` and ``done`` (client times, s) and returns the disk's
    busy seconds and when it finished its last read. ``arrive``: per READ the earliest issue
    time (s), or empty (no think time)."""
    n = nbytes.size
    m = op_file.size
    think = arrive.size > 0
    seq = np.int64(0)
    # client: READs [0, nxt) issued; the retry event
    nxt = 0
    free_slots = slots
    try_pending = True  # the first event: the client tries at time 0
    try_t = 0.0
    try_seq = seq
    seq += 1
    # network to the server: READs [arr_head, nxt) on their way, sequence numbers by READ
    arr_head = 0
    arr_seq = np.empty(slots, np.int64)
    # server: READs waiting for a thread (FIFO ring); CPU events sorted by time
    nq = np.empty(slots, np.int64)
    nq_head = 0
    nq_len = 0
    idle_threads = nfsd
    cpu_t = np.empty(slots)
    cpu_seq = np.empty(slots, np.int64)
    cpu_r = np.empty(slots, np.int64)
    cpu_head = 0
    cpu_len = 0
    pending = np.zeros(n, np.int64)  # disk reads a READ still waits for
    # the READs' disk reads: [op_lo[r], op_hi[r]), and which of the file's reads came before
    op_lo = np.empty(n, np.int64)
    op_hi = np.empty(n, np.int64)
    file_ops_before = np.empty(n, np.int64)
    op_rank = np.empty(m, np.int64)  # the read's index among its file's reads
    file_ops = np.zeros(nfiles, np.int64)
    op_ptr = 0
    # disk reads not yet done, per file, in issue order (doubly linked; the newest is the tail)
    live_tail = np.full(nfiles, NO_LINK, np.int64)
    live_prev = np.empty(m, np.int64)
    live_next = np.empty(m, np.int64)
    # READs waiting for each disk read, in READ order (linked nodes from a pool)
    w_head = np.full(m, NO_LINK, np.int64)
    w_tail = np.full(m, NO_LINK, np.int64)
    # a node lives from a READ's CPU event to the end of the read it waits for, and the READ
    # is outstanding all that time: at most slots READs, each waiting for its own reads and
    # LOOKBACK earlier ones
    most = 0
    streak = 0
    for j in range(m):
        streak = streak + 1 if j > 0 and op_req[j] == op_req[j - 1] else 1
        most = max(most, streak)
    nodes = slots * (most + LOOKBACK)
    node_r = np.empty(nodes, np.int64)
    node_next = np.arange(1, nodes + 1, dtype=np.int64)  # the free list
    node_next[nodes - 1] = NO_LINK
    node_free = 0
    # the wire: replies in the order sent (ring)
    link_free = 0.0
    rv_t = np.empty(slots)
    rv_seq = np.empty(slots, np.int64)
    rv_r = np.empty(slots, np.int64)
    rv_head = 0
    rv_len = 0
    # disk
    dq = np.empty(m, np.int64)  # disk reads in the queue, arrival order
    taken = np.zeros(m, np.bool_)
    dq_head = 0
    dq_tail = 0
    disk_busy = False
    disk_t = 0.0
    disk_seq = np.int64(0)
    disk_op = 0
    disk_free_at = 0.0
    head_addr = np.int64(0)
    busy = 0.0
    idle = np.zeros(1)
    one_file = np.zeros(1, np.int64)  # the read handed to the drive model
    one_off = np.zeros(1, np.int64)
    one_len = np.zeros(1, np.int64)
    out_s = np.zeros(1)
    out_f = np.zeros(1, np.uint8)

    while True:
        # the next event: the least (time, sequence) of the queues' heads
        kind = EV_NONE
        now = 0.0
        best_seq = np.int64(0)
        if try_pending:
            kind = EV_TRY
            now = try_t
            best_seq = try_seq
        if arr_head < nxt:
            t = issue[arr_head] + half_rtt
            s = arr_seq[arr_head % slots]
            if kind == EV_NONE or t < now or (t == now and s < best_seq):
                kind = EV_ARRIVE
                now = t
                best_seq = s
        if cpu_len > 0:
            t = cpu_t[cpu_head]
            s = cpu_seq[cpu_head]
            if kind == EV_NONE or t < now or (t == now and s < best_seq):
                kind = EV_CPU
                now = t
                best_seq = s
        if disk_busy:
            if kind == EV_NONE or disk_t < now or (disk_t == now and disk_seq < best_seq):
                kind = EV_DISK
                now = disk_t
                best_seq = disk_seq
        if rv_len > 0:
            t = rv_t[rv_head]
            s = rv_seq[rv_head]
            if kind == EV_NONE or t < now or (t == now and s < best_seq):
                kind = EV_RECV
                now = t
                best_seq = s
        if kind == EV_NONE:
            break

        if kind == EV_TRY or kind == EV_RECV:
            if kind == EV_TRY:
                try_pending = False
            else:
                done[rv_r[rv_head]] = now
                rv_head = (rv_head + 1) % slots
                rv_len -= 1
                free_slots += 1
            # issue READs in trace order while a slot is free and their time has come
            while free_slots > 0 and nxt < n:
                if think and arrive[nxt] > now:
                    if not try_pending:
                        try_pending = True
                        try_t = arrive[nxt]
                        try_seq = seq
                        seq += 1
                    break
                issue[nxt] = now
                arr_seq[nxt % slots] = seq
                seq += 1
                # its disk reads: ranked among their file's, not done until the disk says so
                file_ops_before[nxt] = file_ops[file[nxt]]
                op_lo[nxt] = op_ptr
                while op_ptr < m and op_req[op_ptr] == nxt:
                    f = op_file[op_ptr]
                    op_rank[op_ptr] = file_ops[f]
                    file_ops[f] += 1
                    live_prev[op_ptr] = live_tail[f]
                    live_next[op_ptr] = NO_LINK
                    if live_tail[f] != NO_LINK:
                        live_next[live_tail[f]] = op_ptr
                    live_tail[f] = op_ptr
                    op_ptr += 1
                op_hi[nxt] = op_ptr
                free_slots -= 1
                nxt += 1
            continue

        if kind == EV_ARRIVE:
            nq[(nq_head + nq_len) % slots] = arr_head
            nq_len += 1
            arr_head += 1
        elif kind == EV_CPU:
            x = cpu_r[cpu_head]
            cpu_head = (cpu_head + 1) % slots
            cpu_len -= 1
            # the READ's disk reads enter the queue; it waits for its demand reads and for
            # earlier reads of its bytes not yet done (among the last LOOKBACK of its file)
            cnt = 0
            for j in range(op_lo[x], op_hi[x]):
                dq[dq_tail] = j
                dq_tail += 1
                if op_sync[j] != 0:
                    cnt += 1
                    node_free = _wait_for(j, x, w_head, w_tail, node_r, node_next, node_free)
            a = offset[x]
            b = a + nbytes[x]
            if b > a:
                oldest = file_ops_before[x] - LOOKBACK
                j = live_tail[file[x]]
                while j != NO_LINK:
                    if j < op_lo[x]:
                        if op_rank[j] < oldest:
                            break
                        if op_off[j] < b and a < op_off[j] + op_len[j]:
                            cnt += 1
                            node_free = _wait_for(j, x, w_head, w_tail, node_r, node_next,
                                                  node_free)
                    j = live_prev[j]
            pending[x] = cnt
            if cnt == 0:
                link_free = _reply(x, now, nbytes, rate, half_rtt, link_free, seq, rv_t,
                                   rv_seq, rv_r, rv_head, rv_len)
                rv_len += 1
                seq += 1
                idle_threads += 1
        else:  # EV_DISK
            j = disk_op
            disk_busy = False
            disk_free_at = now
            f = op_file[j]
            if live_next[j] != NO_LINK:
                live_prev[live_next[j]] = live_prev[j]
            else:
                live_tail[f] = live_prev[j]
            if live_prev[j] != NO_LINK:
                live_next[live_prev[j]] = live_next[j]
            # its waiters, in READ order: those waiting for nothing else reply
            k = w_head[j]
            while k != NO_LINK:
                r = node_r[k]
                pending[r] -= 1
                if pending[r] == 0:
                    link_free = _reply(r, now, nbytes, rate, half_rtt, link_free, seq, rv_t,
                                       rv_seq, rv_r, rv_head, rv_len)
                    rv_len += 1
                    seq += 1
                    idle_threads += 1
                after = node_next[k]
                node_next[k] = node_free
                node_free = k
                k = after
        # free threads take arrived READs in arrival order
        while idle_threads > 0 and nq_len > 0:
            r = nq[nq_head]
            nq_head = (nq_head + 1) % slots
            nq_len -= 1
            idle_threads -= 1
            t = now + cpu_s * ((nbytes[r] + rsize - 1) // rsize if nbytes[r] > rsize else 1)
            # sorted by time; among equal times, scheduling order
            p = cpu_len
            while p > 0 and cpu_t[(cpu_head + p - 1) % slots] > t:
                q = (cpu_head + p) % slots
                w = (cpu_head + p - 1) % slots
                cpu_t[q] = cpu_t[w]
                cpu_seq[q] = cpu_seq[w]
                cpu_r[q] = cpu_r[w]
                p -= 1
            q = (cpu_head + p) % slots
            cpu_t[q] = t
            cpu_seq[q] = seq
            cpu_r[q] = r
            cpu_len += 1
            seq += 1
        # an idle disk starts the next read of its queue
        if not disk_busy:
            while dq_head < dq_tail and taken[dq[dq_head]]:
                dq_head += 1
            if dq_head < dq_tail:
                j = _pick(dq, dq_head, dq_tail, taken, addr, head_addr, cscan)
                taken[j] = True
                idle[0] = now - disk_free_at
                one_file[0] = op_file[j]
                one_off[0] = op_off[j]
                one_len[0] = op_len[j]
                service_kernel(one_file, one_off, one_len, idle,
                               ext_first, ext_base, extent_bytes, ip, fp, seek_d, seek_t,
                               zone_start, zone_rate, dstate, out_s, out_f)
                busy += out_s[0]
                head_addr = addr[j] + op_len[j]
                disk_busy = True
                disk_t = now + out_s[0]
                disk_seq = seq
                disk_op = j
                seq += 1
    return busy, disk_free_at


@njit(cache=True, nogil=True, _nrt=False)
def _wait_for(j, r, w_head, w_tail, node_r, node_next, free):
    """READ r waits for disk read j: a node from the free list into j's list of waiters,
    kept in READ order (CPU events come nearly in READ order: almost always an append).
    Returns the free list's new head."""
    k = free
    free = node_next[k]
    node_r[k] = r
    last = w_tail[j]
    if last == NO_LINK:
        node_next[k] = NO_LINK
        w_head[j] = k
        w_tail[j] = k
    elif node_r[last] < r:
        node_next[k] = NO_LINK
        node_next[last] = k
        w_tail[j] = k
    else:
        before = NO_LINK
        at = w_head[j]
        while node_r[at] < r:
            before = at
            at = node_next[at]
        node_next[k] = at
        if before == NO_LINK:
            w_head[j] = k
        else:
            node_next[before] = k
    return free


@njit(cache=True, nogil=True, _nrt=False)
def _reply(r, now, nbytes, rate, half_rtt, link_free, seq, rv_t, rv_seq, rv_r, rv_head,
           rv_len):
    """Send READ r's reply: on the wire after the replies before it, then half a round trip
    to the client (queued as event ``seq``). Returns when the wire is free again."""
    start = now if now > link_free else link_free
    end = start + (nbytes[r] / rate if rate > 0 else 0.0)
    q = (rv_head + rv_len) % rv_t.size
    rv_t[q] = end + half_rtt
    rv_seq[q] = seq
    rv_r[q] = r
    return end


@njit(cache=True, nogil=True, _nrt=False)
def _pick(dq, lo, hi, taken, addr, head_addr, cscan):
    """The next disk read: the oldest in the queue (fifo), or the one at the lowest address
    at or past the head, wrapping to the lowest address (cscan; ties: the oldest)."""
    if not cscan:
        return dq[lo]
    best = -1
    low = -1
    for k in range(lo, hi):
        j = dq[k]
        if taken[j]:
            continue
        if addr[j] >= head_addr and (best < 0 or addr[j] < addr[best]):
            best = j
        if low < 0 or addr[j] < addr[low]:
            low = j
    return best if best >= 0 else low
