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

import heapq
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
    m = int(inputs.op_request.size)
    i64 = np.int64
    op_req = np.ascontiguousarray(inputs.op_request, i64)
    op_file = np.ascontiguousarray(inputs.op_file, i64)
    op_off = np.ascontiguousarray(inputs.op_offset, i64)
    op_len = np.ascontiguousarray(inputs.op_length, i64)
    op_sync = np.ascontiguousarray(inputs.op_sync, i64)
    nbytes = np.ascontiguousarray(inputs.nbytes, i64)
    t = np.ascontiguousarray(inputs.time_ns, i64)
    arrive = ((t - t[0]) / 1e9 if n and params.think == "trace" else np.zeros(n))
    rpcs = np.maximum(1, -(-nbytes // int(params.rsize))).astype(i64)
    place = inputs.place
    addr = op_address(op_file, op_off, place.ext_first, place.ext_base,
                      i64(place.extent_bytes))
    first_op = np.searchsorted(op_req, np.arange(n + 1, dtype=i64)).astype(i64)
    wait_start, wait_ops = waited_ops(np.ascontiguousarray(inputs.file, i64),
                                      np.ascontiguousarray(inputs.offset, i64), nbytes,
                                      first_op, op_file, op_off, op_len, op_sync,
                                      np.argsort(op_file, kind="stable").astype(i64))
    waiter_start, waiters = invert(wait_start, wait_ops, m)
    rate = min((r for r in (params.link_mbps, params.host_mbps) if r > 0), default=0.0) * 1e6
    issue = np.zeros(n)
    done = np.zeros(n)
    state = inputs.disk.new_state()
    busy, disk_end = simulate(
        arrive, nbytes, rpcs, first_op, wait_start, wait_ops, waiter_start, waiters, op_file,
        op_off, op_len, addr, int(params.slots), params.rtt_us * 0.5e-6, rate,
        params.cpu_us * 1e-6, int(params.nfsd), params.scheduler == "cscan", place.ext_first,
        place.ext_base, i64(place.extent_bytes), *inputs.disk.kernel_args(), state, issue, done)
    return TimingResult(issue, done, float(busy), float(disk_end), int(nbytes.sum()),
                        int(op_len.sum()))


# --------------------------------------------------------------------------------------------
# preparation: addresses, and which disk reads each READ waits for


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


@njit(cache=True, nogil=True)
def waited_ops(file, offset, nbytes, first_op, op_file, op_off, op_len, op_sync, by_file):
    """Per READ r, the disk reads it waits for, as CSR (``start[r]:start[r+1]`` of ``ops``):
    its own synchronous reads, and the earlier reads (of earlier READs; among the last
    LOOKBACK of its file) that overlap its bytes. ``by_file``: op indices stably sorted by
    file."""
    n = file.size
    m = op_file.size
    # per file, where its ops start in by_file
    nf = 0
    for j in range(m):
        if op_file[j] + 1 > nf:
            nf = op_file[j] + 1
    for r in range(n):
        if file[r] + 1 > nf:
            nf = file[r] + 1
    fstart = np.zeros(nf + 1, np.int64)
    for j in range(m):
        fstart[op_file[j] + 1] += 1
    for f in range(nf):
        fstart[f + 1] += fstart[f]
    start = np.zeros(n + 1, np.int64)
    out = np.empty(m + n * 4 + 16, np.int64)
    k = 0
    for r in range(n):
        s = first_op[r]
        e = first_op[r + 1]
        if out.size < k + (e - s) + LOOKBACK:
            bigger = np.empty(2 * out.size + (e - s) + LOOKBACK, np.int64)
            bigger[:k] = out[:k]
            out = bigger
        for j in range(s, e):
            if op_sync[j] != 0:
                out[k] = j
                k += 1
        a = offset[r]
        b = a + nbytes[r]
        if b > a:
            f = file[r]
            lo = fstart[f]
            hi = fstart[f + 1]
            # by_file[lo:hi] is increasing: the file's ops issued before this READ's first
            p = np.searchsorted(by_file[lo:hi], s) + lo
            q = p - 1
            while q >= lo and q >= p - LOOKBACK:
                j = by_file[q]
                if op_off[j] < b and a < op_off[j] + op_len[j]:
                    out[k] = j
                    k += 1
                q -= 1
        start[r + 1] = k
    return start, out[:k].copy()


@njit(cache=True, nogil=True)
def invert(start, ops, m):
    """The CSR of :func:`waited_ops` turned around: per disk read, the READs waiting for it."""
    n = start.size - 1
    wstart = np.zeros(m + 1, np.int64)
    for k in range(ops.size):
        wstart[ops[k] + 1] += 1
    for j in range(m):
        wstart[j + 1] += wstart[j]
    fill = wstart[:-1].copy()
    out = np.empty(ops.size, np.int64)
    for r in range(n):
        for k in range(start[r], start[r + 1]):
            j = ops[k]
            out[fill[j]] = r
            fill[j] += 1
    return wstart, out


# --------------------------------------------------------------------------------------------
# the event loop

EV_TRY = 0  # the client tries to issue READs
EV_ARRIVE = 1  # a READ reaches the server
EV_CPU = 2  # an nfsd has done a READ's CPU work: its disk reads enter the queue
EV_DISK = 3  # a disk read finished
EV_RECV = 4  # a reply reached the client

# READ states at the server
R_NOT_YET = 0
R_WAITING = 1
R_REPLIED = 2


@njit(nogil=True)  # cached on disk by the replay, keyed by sources (engine.cache_by_sources)
def simulate(arrive, nbytes, rpcs, first_op, wait_start, wait_ops, waiter_start, waiters,
             op_file, op_off, op_len, addr, slots, half_rtt, rate, cpu_s, nfsd, cscan,
             ext_first, ext_base, extent_bytes, ip, fp, seek_d, seek_t, zone_start,
             zone_rate, dstate, issue, done):
    """Run the events; fills ``issue`` and ``done`` (client times, s) and returns the disk's
    busy seconds and when it finished its last read. Events at one time run in the order they
    were scheduled."""
    n = arrive.size
    m = op_file.size
    heap = [(0.0, np.int64(0), np.int64(0), np.int64(0))]  # (time, seq, kind, id)
    heap.pop()
    seq = 0
    # client
    nxt = 0
    free_slots = slots
    try_pending = False
    # server
    state = np.full(n, R_NOT_YET, np.int64)
    pending = np.zeros(n, np.int64)
    nfsd_q = np.empty(n, np.int64)  # READs waiting for a thread, FIFO
    nq_head = 0
    nq_tail = 0
    idle_threads = nfsd
    link_free = 0.0
    # disk
    op_done = np.zeros(m, np.bool_)
    dq = np.empty(m, np.int64)  # disk reads in the queue, arrival order
    taken = np.zeros(m, np.bool_)
    dq_head = 0
    dq_tail = 0
    disk_busy = False
    disk_free_at = 0.0
    head_addr = np.int64(0)
    busy = 0.0
    idle = np.zeros(1)
    out_s = np.zeros(1)
    out_f = np.zeros(1, np.uint8)

    heapq.heappush(heap, (0.0, np.int64(seq), np.int64(EV_TRY), np.int64(0)))
    seq += 1
    while len(heap) > 0:
        now, _, kind, x = heapq.heappop(heap)
        if kind == EV_TRY or kind == EV_RECV:
            if kind == EV_TRY:
                try_pending = False
            else:
                done[x] = now
                free_slots += 1
            # issue READs in trace order while a slot is free and their time has come
            while free_slots > 0 and nxt < n:
                if arrive[nxt] > now:
                    if not try_pending:
                        heapq.heappush(heap, (arrive[nxt], np.int64(seq), np.int64(EV_TRY),
                                              np.int64(0)))
                        seq += 1
                        try_pending = True
                    break
                issue[nxt] = now
                heapq.heappush(heap, (now + half_rtt, np.int64(seq), np.int64(EV_ARRIVE),
                                      np.int64(nxt)))
                seq += 1
                free_slots -= 1
                nxt += 1
            continue
        if kind == EV_ARRIVE:
            nfsd_q[nq_tail] = x
            nq_tail += 1
        elif kind == EV_CPU:
            # the READ's disk reads enter the queue; it waits for what is not yet done
            for j in range(first_op[x], first_op[x + 1]):
                dq[dq_tail] = j
                dq_tail += 1
            cnt = 0
            for k in range(wait_start[x], wait_start[x + 1]):
                if not op_done[wait_ops[k]]:
                    cnt += 1
            pending[x] = cnt
            state[x] = R_WAITING
        elif kind == EV_DISK:
            op_done[x] = True
            disk_busy = False
            disk_free_at = now
            for k in range(waiter_start[x], waiter_start[x + 1]):
                r = waiters[k]
                if state[r] == R_WAITING:
                    pending[r] -= 1
        # replies: a waiting READ with nothing pending replies and frees its thread
        if kind == EV_CPU:
            if pending[x] == 0:
                link_free = _reply(heap, seq, x, now, nbytes, rate, half_rtt, link_free)
                seq += 1
                state[x] = R_REPLIED
                idle_threads += 1
        elif kind == EV_DISK:
            for k in range(waiter_start[x], waiter_start[x + 1]):
                r = waiters[k]
                if state[r] == R_WAITING and pending[r] == 0:
                    link_free = _reply(heap, seq, r, now, nbytes, rate, half_rtt, link_free)
                    seq += 1
                    state[r] = R_REPLIED
                    idle_threads += 1
        # free threads take arrived READs in arrival order
        while idle_threads > 0 and nq_head < nq_tail:
            r = nfsd_q[nq_head]
            nq_head += 1
            idle_threads -= 1
            heapq.heappush(heap, (now + cpu_s * rpcs[r], np.int64(seq), np.int64(EV_CPU),
                                  np.int64(r)))
            seq += 1
        # an idle disk starts the next read of its queue
        if not disk_busy:
            while dq_head < dq_tail and taken[dq[dq_head]]:
                dq_head += 1
            if dq_head < dq_tail:
                j = _pick(dq, dq_head, dq_tail, taken, addr, head_addr, cscan)
                taken[j] = True
                idle[0] = now - disk_free_at
                service_kernel(op_file[j:j + 1], op_off[j:j + 1], op_len[j:j + 1], idle,
                               ext_first, ext_base, extent_bytes, ip, fp, seek_d, seek_t,
                               zone_start, zone_rate, dstate, out_s, out_f)
                busy += out_s[0]
                head_addr = addr[j] + op_len[j]
                disk_busy = True
                heapq.heappush(heap, (now + out_s[0], np.int64(seq), np.int64(EV_DISK),
                                      np.int64(j)))
                seq += 1
    return busy, disk_free_at


@njit(cache=True, nogil=True)
def _reply(heap, seq, r, now, nbytes, rate, half_rtt, link_free):
    """Send READ r's reply: on the wire after the replies before it, then half a round trip
    to the client. Returns when the wire is free again."""
    start = now if now > link_free else link_free
    end = start + (nbytes[r] / rate if rate > 0 else 0.0)
    heapq.heappush(heap, (end + half_rtt, np.int64(seq), np.int64(EV_RECV), np.int64(r)))
    return end


@njit(cache=True, nogil=True)
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
