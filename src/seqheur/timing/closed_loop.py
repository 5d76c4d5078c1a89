"""``closed-loop``: what the clients see — READs through client slots, the network, nfsd
threads and a disk queue, simulated event by event (docs/timing.md).

The replay has already decided, in trace order, which disk reads every READ issued and which
of them the READ waits for (``sync``; read-ahead is asynchronous). This model times that:

* **client** — at most ``slots`` READs outstanding (nfsiods / RPC slots); READs are issued in
  trace order, each at ``max(free slot, its trace time - the first READ's)`` with
  ``think=trace``, or as soon as a slot is free with ``think=none`` (closed loop, back to back).
  ``clients=per-file``: each file is read by a process of its own instead, with ``slots``
  READs outstanding, its READs issued in their trace order and independently of other
  files' (think time none): one process's READs no longer wait for another's to be issued.
  A READ of more than ``rsize`` bytes is ``ceil(bytes / rsize)`` RPCs for the server's CPU
  (one slot, one round trip: its RPCs are taken as pipelined).
* **network** — a request reaches the server ``rtt_us / 2`` after its issue; a reply is on the
  wire for ``reply_us + bytes / min(link_mbps, host_mbps)`` (MB = 10^6 bytes; 0 = no limit),
  one reply at a time, and reaches the client ``rtt_us / 2`` after it left. Request bytes
  and headers are not counted.
* **server** — ``nfsd`` threads take arrived READs in arrival order; a READ costs ``cpu_us``
  per RPC, then its disk reads enter the disk queue. The READ replies when its own demand
  reads are done and no earlier disk read of its bytes is still in flight (a read-ahead that
  has not finished, or another READ's demand read); its read-ahead reads do not hold it.
  The thread is free once the reply is handed to the network.
* **disk** — one queue, ``fifo`` (arrival order) or ``cscan`` (one-way elevator by the byte
  address of the file placement, :meth:`seqheur.disk.model.DiskModel.place`), or ``tcq`` (a
  tagged command queue: the drive holds up to ``tcq_depth`` requests and serves them in the
  order they reached it; the host keeps the rest in ``cscan`` order and sends the next one
  when a request completes), feeding the drive model one read at a time
  (:func:`seqheur.disk.model.service_read`, its state carried from read to read; the time the
  drive was idle before a read lets its own read-ahead run).
* **block layer** (Linux's, read at the source: block/blk-throttle.c, block/blk-merge.c,
  block/blk-mq.c) — the disk profile's host throttle (``DiskProfile.throttle``: a
  blk-throttle read limit) in front of the queue, with the kernel's rules
  (:func:`seqheur.disk.model.throttle_step`: slices of hz/10 jiffies, an idle throttle lets a
  slice's budget through at once, a read over the budget is held, with every read after it,
  and asked again when the throttle's timer fires). ``merge``: a read that continues a request, or ends where one starts, joins it
  within ``max_request`` bytes (back and front merges up to ``max_sectors_kb``): ``plug``
  only among reads the throttle holds (it lets them go in one batch under one plug, and a
  plug merges a bio into the request added last), as with the scheduler ``none``, where a
  request that passed goes straight to the driver; ``elevator`` also into any request
  waiting in the disk queue (an I/O scheduler's merge lookup). The drive serves a request
  as one read.

Not modelled: CPU contention between nfsd threads, request bytes and per-packet overheads,
losses and retransmissions, client-side caching, writes and other RPCs, several clients (the
trace's READs share one set of slots). A READ is checked for in-flight reads of its bytes
against the last :data:`LOOKBACK` disk reads of its file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, NamedTuple

import numpy as np
from numba import njit

from ..disk.model import I_HZ, extent_address, service_read, throttle_step
from ..options import param
from .. import _inlining, _pages

_inlining.install()  # numba's inliner: one copy of a callee's IR, not one per block (_inlining)

NAME = "closed-loop"
#: Jitted functions that call into other modules (the drive model): the replay caches them
#: on disk keyed by every source they reach, not by this file alone.
KERNELS = ("_short_loop", "simulate_exact", "_exact_loop", "op_address",
           "_serve_next")
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
    # a client and server on one machine over loopback: no wire, a short round trip; the
    # Linux block layer merges adjacent reads (queue/nomerges 0) up to the queue's
    # max_sectors_kb (1280 here: the kernel's default cap), with the scheduler "none" (the
    # loop device's) only reads blk-throttle held and let go together (docs/timing.md)
    "lab-loopback": dict(slots=16, rsize=1048576, nfsd=16, link_mbps=0.0, rtt_us=30.0,
                         host_mbps=0.0, cpu_us=20.0, scheduler="fifo", merge="plug",
                         max_request=1310720),
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
    clients: str = param("trace", choices=("trace", "per-file"),
                         doc="trace: one client issues every READ in trace order, slots in "
                         "all; per-file: each file is read by a process of its own, slots "
                         "READs each, independently of the others (think none)")
    rsize: int = param(1048576, unit="bytes", doc="transport READ size: a READ of more bytes "
                       "costs ceil(bytes / rsize) RPCs of CPU")
    rtt_us: float = param(0.0, unit="µs", doc="network round trip time")
    link_mbps: float = param(0.0, unit="MB/s", doc="wire rate for replies, MB = 10^6 bytes; "
                             "0 = no limit")
    host_mbps: float = param(0.0, unit="MB/s", doc="host-side ceiling (PCI / NIC DMA) for "
                             "replies, MB = 10^6 bytes; 0 = no limit")
    reply_us: float = param(0.0, unit="µs", doc="host time per reply on the reply path, "
                            "one reply at a time like the wire's bytes (with host_mbps: a "
                            "host whose replies go through one CPU's worth of copying, "
                            "such as a loopback lab); 0 = none")
    nfsd: int = param(8, doc="server threads serving READs, >= 1")
    cpu_us: float = param(0.0, unit="µs", doc="server CPU time per RPC")
    scheduler: str = param("fifo", choices=("fifo", "cscan", "tcq"),
                           doc="disk queue: fifo (arrival order), cscan (one-way elevator "
                           "by byte address) or tcq (the drive's tagged queue: it holds up "
                           "to tcq_depth requests and serves them in arrival order; the "
                           "host keeps the rest in cscan order)")
    tcq_depth: int = param(64, doc="tcq: requests the drive holds at once (its tagged "
                           "queue depth, the host's openings), >= 1")
    merge: str = param("off", choices=("off", "plug", "elevator"),
                       doc="block-layer merging of a read into a request it continues (back "
                       "merge) or ends just before (front merge): plug: into the newest read "
                       "the throttle holds (they leave it under one plug; Linux with the "
                       "scheduler none); elevator: also into any request in the disk queue "
                       "(an I/O scheduler's merge lookup); off: none")
    max_request: int = param(1310720, unit="bytes", doc="largest request merging builds "
                             "(Linux: the queue's max_sectors_kb; 1280 KiB is the kernel's "
                             "default cap)")

    def __post_init__(self) -> None:
        if self.slots < 1:
            raise ValueError(f"slots must be >= 1, not {self.slots}")
        if self.nfsd < 1:
            raise ValueError(f"nfsd must be >= 1, not {self.nfsd}")
        if self.rsize < 1:
            raise ValueError(f"rsize must be >= 1 byte, not {self.rsize}")
        if self.max_request < 1:
            raise ValueError(f"max_request must be >= 1 byte, not {self.max_request}")
        if self.tcq_depth < 1:
            raise ValueError(f"tcq_depth must be >= 1, not {self.tcq_depth}")
        if self.clients == "per-file" and self.think != "none":
            raise ValueError("clients=per-file issues READs as soon as their process may: "
                             "it needs think=none")
        for name in ("rtt_us", "link_mbps", "host_mbps", "reply_us", "cpu_us"):
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
    nbytes: np.ndarray  # any integer type
    op_request: np.ndarray
    op_sync: np.ndarray
    op_file: np.ndarray
    op_offset: np.ndarray
    op_length: np.ndarray
    disk: Any  # seqheur.disk.model.DiskModel
    place: Any  # its Placement of the files


@dataclass(frozen=True, init=False, eq=False)
class TimingResult:
    """What a timing model gives the replay: per READ (trace order) its issue and completion
    time at the client, and the run's totals. The public surface, which a model registered
    with :func:`seqheur.timing.register_timing` builds and the replay reads:

    * ``issue_s``, ``done_s`` — per READ, seconds from the first issue (float64 arrays);
    * ``e2e_seconds`` — the last reply's arrival (``done_s.max()``, 0 without READs);
    * ``disk_busy_s``, ``disk_end_s`` (when the disk finished its last read: read-ahead may
      outlast the replies), ``client_bytes`` (bytes the replies carried), ``disk_bytes``
      (bytes the disk reads transferred), ``disk_requests`` (requests the drive served: the
      disk reads after merging);
    * :meth:`summary` — the timing columns of the replay's summary.

    A model that keeps only what a summary needs passes ``issue_s = done_s = None`` with
    the READs' latencies (``latency_runs``: (values, counts), the latencies
    ``(done_s - issue_s) * 1e3`` in ms as runs of one value, in any order), the last reply
    (``last_done_s``), optionally the latencies counted by bucket (``latency_buckets``:
    (counts, least, greatest) per bucket of :func:`percentiles_of_runs`) and ``times``, a
    function of no arguments returning a result that has the times: it is called once, when
    ``issue_s`` or ``done_s`` is first read (the closed-loop model's short loop; the result
    stays picklable when ``times`` is). The times are then kept in the result (it is
    frozen: nothing else changes). Results are not compared with ``==`` (they hold arrays)."""

    disk_busy_s: float
    disk_end_s: float
    client_bytes: int
    disk_bytes: int
    disk_requests: int
    latency_runs: tuple[np.ndarray, np.ndarray] | None
    last_done_s: float | None
    latency_buckets: tuple[np.ndarray, np.ndarray, np.ndarray] | None
    # the times, None until computed (``times``); private: read them as issue_s and done_s
    _issue_s: np.ndarray | None = field(repr=False)
    _done_s: np.ndarray | None = field(repr=False)
    _times: Callable[[], TimingResult] | None = field(repr=False)

    def __init__(self, issue_s: np.ndarray | None, done_s: np.ndarray | None,
                 disk_busy_s: float, disk_end_s: float, client_bytes: int, disk_bytes: int,
                 disk_requests: int, *,
                 latency_runs: tuple[np.ndarray, np.ndarray] | None = None,
                 last_done_s: float | None = None,
                 latency_buckets: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
                 times: Callable[[], TimingResult] | None = None) -> None:
        if (issue_s is None) != (done_s is None):
            raise ValueError("issue_s and done_s: both arrays, or both None")
        if issue_s is None and (latency_runs is None or last_done_s is None or times is None):
            raise ValueError("a result without times needs latency_runs, last_done_s and "
                             "times (a function giving a result with them)")
        put = partial(object.__setattr__, self)
        put("disk_busy_s", disk_busy_s)
        put("disk_end_s", disk_end_s)
        put("client_bytes", client_bytes)
        put("disk_bytes", disk_bytes)
        put("disk_requests", disk_requests)
        put("latency_runs", latency_runs)
        put("last_done_s", last_done_s)
        put("latency_buckets", latency_buckets)
        put("_issue_s", issue_s)
        put("_done_s", done_s)
        put("_times", times)

    @property
    def issue_s(self) -> np.ndarray:
        """Per READ, when the client issued it (s from the first issue)."""
        return self._with_times()[0]

    @property
    def done_s(self) -> np.ndarray:
        """Per READ, when its reply reached the client (s from the first issue)."""
        return self._with_times()[1]

    @property
    def has_times(self) -> bool:
        """Whether ``issue_s`` and ``done_s`` are at hand (else the first read of either
        computes them)."""
        return self._issue_s is not None

    def _with_times(self) -> tuple[np.ndarray, np.ndarray]:
        if self._issue_s is None:  # once: the result is frozen, its times computed late
            r = self._times()
            object.__setattr__(self, "_issue_s", r.issue_s)
            object.__setattr__(self, "_done_s", r.done_s)
        return self._issue_s, self._done_s

    @property
    def e2e_seconds(self) -> float:
        """The first READ's issue to the last reply's arrival (s)."""
        if self.last_done_s is not None:
            return self.last_done_s
        return float(self.done_s.max()) if self.done_s.size else 0.0

    def summary(self, demand_bytes: int) -> dict[str, Any]:
        """The timing columns of the summary (:data:`seqheur.metrics.TIMING_METRICS`)."""
        e2e = self.e2e_seconds
        span = max(e2e, self.disk_end_s)
        nan = float("nan")
        q = (50, 95, 99)
        pct = (percentiles_of_runs(*self.latency_runs, q, buckets=self.latency_buckets)
               if self.latency_runs is not None
               else latency_percentiles(self.issue_s, self.done_s, q))
        return {"e2e_seconds": e2e,
                "e2e_throughput_mbps": demand_bytes / 1e6 / e2e if e2e > 0 else nan,
                "read_latency_p50_ms": float(pct[0]), "read_latency_p95_ms": float(pct[1]),
                "read_latency_p99_ms": float(pct[2]),
                "disk_utilisation": self.disk_busy_s / span if span > 0 else nan,
                "disk_requests": self.disk_requests}


def latency_percentiles(issue: np.ndarray, done: np.ndarray, q: tuple[float, ...],
                        distinct: int = 1 << 14) -> list[float]:
    """``np.percentile((done - issue) * 1e3, q)`` (linear interpolation) without sorting or
    partitioning every latency: one pass counts them in buckets that keep their order (16 per
    power of two) with each bucket's least and greatest; a rank in a bucket of one value is
    that value. A second pass takes the latencies of the other buckets holding a wanted
    rank: a bucket of an eighth of them or more (the model's crowd: on the replay
    benchmark's stream three in four fall in one bucket but share a few hundred values) is
    counted value by value and the rank found among its values; the others are collected
    and partitioned (and the crowded ones too when they have more than ``distinct`` values).
    Exact: the same order statistics, interpolated as numpy does."""
    lat = (np.asarray(done, np.float64) - np.asarray(issue, np.float64)) * 1e3
    return percentiles_of_runs(*_runs_of(lat), q, distinct)


def percentiles_of_runs(values: np.ndarray, counts: np.ndarray, q: tuple[float, ...],
                        distinct: int = 1 << 14, buckets: Any = None) -> list[float]:
    """:func:`latency_percentiles` of latencies (ms) given as runs: ``counts[i]`` of value
    ``values[i]``, in any order. ``buckets``: the first pass's counts (per bucket; each
    bucket's least and greatest), if the caller has them (the short loop counts the
    latencies as it finds them)."""
    n = int(counts.sum())
    if n == 0:
        return [float("nan")] * len(q)
    if buckets is not None:
        hist, least, most = buckets
    else:
        hist = np.zeros(_LAT_BUCKETS, np.int64)
        least = np.full(_LAT_BUCKETS, np.inf)
        most = np.full(_LAT_BUCKETS, -np.inf)
        if not _latency_buckets(values, counts, hist, least, most):  # NaN or infinite
            return [float(x) for x in np.percentile(np.repeat(values, counts), q)]
    below = np.cumsum(hist) - hist  # latencies in lower buckets
    qs = np.true_divide(np.asarray(q, np.float64), 100)
    v = (n - 1) * qs  # numpy's "linear" virtual index
    lo = np.floor(v).astype(np.int64)
    hi = np.minimum(lo + 1, n - 1)
    ranks = np.unique(np.concatenate([lo, hi]))
    buckets = np.searchsorted(below + hist, ranks, side="right")  # the bucket of each rank
    value = {int(k): float(least[b]) for k, b in zip(ranks, buckets) if least[b] == most[b]}
    todo = [(int(k), int(b)) for k, b in zip(ranks, buckets) if int(k) not in value]
    if todo:
        # a bucket holding an eighth of the latencies or more is counted value by value
        # (the crowd: few values, each many times), the others collected and partitioned;
        # with more values than ``distinct`` in the crowded ones, every bucket is collected
        how = np.zeros(_LAT_BUCKETS, np.int8)
        for _, b in todo:
            how[b] = _COUNT if hist[b] * 8 >= n else _COLLECT
        counted = how == _COUNT
        value_of = np.empty(2 * distinct)  # open addressing, half full at most
        count_of = np.zeros(2 * distinct, np.int64)  # 0: a free place
        pool = np.empty(int(hist[how == _COLLECT].sum()), np.float64)
        if not _count_or_collect(values, counts, how, value_of, count_of, pool):
            how[counted] = _COLLECT
            counted[:] = False
            pool = np.empty(int(hist[how == _COLLECT].sum()), np.float64)
            _count_or_collect(values, counts, how, value_of, count_of, pool)
        used = count_of > 0
        vals, cnts = value_of[used], count_of[used]
        order = np.argsort(vals, kind="stable")
        vals, cnts = vals[order], cnts[order]
        of_bucket = (np.maximum(vals, 0.0).view(np.uint64) >> np.uint64(48)).astype(
            np.int64)  # as _latency_buckets
        collect = []
        for k, b in todo:
            if counted[b]:  # the rank among its bucket's values, in order
                mine = of_bucket == b
                at = np.searchsorted(np.cumsum(cnts[mine]), k - below[b], side="right")
                value[k] = float(vals[mine][at])
            else:
                collect.append((k, b))
        if collect:
            # a rank's place among the collected latencies: minus those in buckets not taken
            taken = np.where(how == _COLLECT, 0, hist)
            skipped = np.cumsum(taken) - taken
            local = np.array([k - skipped[b] for k, b in collect], np.int64)
            pool.partition(local)  # in place: np.partition would copy the pool first
            value.update({k: float(x) for (k, _), x in zip(collect, pool[local])})
    a = np.array([value[k] for k in lo.tolist()])
    b = np.array([value[k] for k in hi.tolist()])
    gamma = v - lo
    diff = b - a
    out = np.where(gamma >= 0.5, b - diff * (1 - gamma), a + diff * gamma)
    return [float(x) for x in out]


_LAT_BUCKETS = 1 << 16
_COLLECT = 1  # what the second pass does with a bucket's latencies
_COUNT = 2


@njit(cache=True, nogil=True)
def _runs_of(lats):
    """The latencies as runs of one value (most of the model's latencies repeat the one
    before): values and counts."""
    values = np.empty(lats.size)
    counts = np.empty(lats.size, np.int64)
    k = -1
    for lat in lats:
        if k >= 0 and lat == values[k]:
            counts[k] += 1
        else:
            k += 1
            values[k] = lat
            counts[k] = 1
    return values[:k + 1], counts[:k + 1]


@njit(cache=True, nogil=True)
def _latency_buckets(values, counts, hist, least, most):
    """Count the latencies (ms; ``counts[i]`` of ``values[i]``) per bucket, with each
    bucket's least and greatest; False (counting stopped) at one not finite. The bucket is
    the top 16 bits of the float (sign, exponent, 4 bits of mantissa): for latencies >= 0
    it never decreases with the latency, 16 buckets per power of two."""
    word = np.zeros(1)
    bits = word.view(np.uint64)
    for i in range(values.size):
        v = values[i]
        if not v < np.inf or v != v:  # NaN or infinite
            return False
        word[0] = v if v > 0.0 else 0.0  # no -0.0 or negative latency: a bucket >= 0
        b = bits[0] >> 48
        hist[b] += counts[i]
        if v < least[b]:
            least[b] = v
        if v > most[b]:
            most[b] = v
    return True


@njit(cache=True, nogil=True)
def _count_or_collect(values, counts, how, value_of, count_of, pool):
    """The second pass over the latencies (ms; ``counts[i]`` of ``values[i]``): those of
    the buckets to collect go to ``pool``; those of the buckets to count are counted value
    by value in an open-addressed table (``value_of``, ``count_of``: 0 a free place) kept
    at most half full. False when they have more values than that."""
    word = np.zeros(1)
    bits = word.view(np.uint64)
    mask = value_of.size - 1
    room = value_of.size // 2
    k = 0
    for i in range(values.size):
        v = values[i]
        word[0] = v if v > 0.0 else 0.0
        h = how[bits[0] >> 48]
        if h == _COUNT:
            word[0] = v + 0.0  # -0.0 and 0.0: one value
            p = np.int64((bits[0] * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)) & mask
            while count_of[p] > 0 and value_of[p] != v:
                p = (p + 1) & mask
            if count_of[p] == 0:
                if room == 0:
                    return False
                room -= 1
                value_of[p] = v
            count_of[p] += counts[i]
        elif h == _COLLECT:
            for _ in range(counts[i]):
                pool[k] = v
                k += 1
    return True


def run(params: Params, inputs: TimingInputs, *, exact: bool = False) -> TimingResult:
    """Simulate the replay's READs and disk reads under ``params``. ``exact``: every event
    in the exact loop (the short loop gives the same result; this checks it).

    The short loop keeps each READ's latency and the last reply's arrival, which is all a
    summary needs; the READs' issue and completion times are then computed when first asked
    for (:attr:`TimingResult.issue_s`), by the same run again."""
    out = _run(params, inputs, exact, False, OP_RING)
    if out[0] is not None:
        return out[0]
    fields, runs, last_done, buckets = out[2:]
    return TimingResult(None, None, *fields, latency_runs=runs, last_done_s=last_done,
                        latency_buckets=buckets,
                        times=partial(_times_again, params, inputs, exact, out[1]))


def _times_again(params: Params, inputs: TimingInputs, exact: bool, ring: int) -> TimingResult:
    """:func:`run` again, keeping the READs' times (a module function, not a closure: a
    result stays picklable)."""
    return _run(params, inputs, exact, True, ring)[0]


def _run(params: Params, inputs: TimingInputs, exact: bool, keep_times: bool,
         op_ring_most: int) -> tuple:
    """:func:`run` with disk reads in flight at most ``op_ring_most`` apart in a ring (more:
    a place for every read). The exact loop, or the short loop with ``keep_times``, records
    the READs' times: returns (the result, None). Else returns (None, the ring used, then
    the result's totals, its latencies as runs, the last reply and the latencies' counts
    by bucket, or None)."""
    n = int(inputs.time_ns.size)
    i64 = np.int64
    op_req = np.ascontiguousarray(inputs.op_request, i64)
    op_file = np.ascontiguousarray(inputs.op_file, i64)
    op_off = np.ascontiguousarray(inputs.op_offset, i64)
    op_len = np.ascontiguousarray(inputs.op_length, i64)
    op_sync = np.ascontiguousarray(inputs.op_sync, i64)
    nbytes = np.ascontiguousarray(inputs.nbytes)  # any integer type: no copy to int64
    file = np.ascontiguousarray(inputs.file)
    offset = np.ascontiguousarray(inputs.offset, i64)
    t = np.ascontiguousarray(inputs.time_ns, i64)
    arrive = ((t - t[0]) / 1e9 if n and params.think == "trace" else np.zeros(0))
    nfiles = 1 + max(int(file.max()) if n else 0, int(op_file.max()) if op_file.size else 0)
    place = inputs.place
    ext = i64(place.extent_bytes)
    addr = op_address(op_file, op_off, place.ext_first, place.ext_base, ext)
    rate = min((r for r in (params.link_mbps, params.host_mbps) if r > 0), default=0.0) * 1e6
    slots = int(params.slots)
    half_rtt = params.rtt_us * 0.5e-6
    cpu_s = params.cpu_us * 1e-6
    reply_s = params.reply_us * 1e-6
    cscan = params.scheduler in ("cscan", "tcq")  # tcq: the host's queue is an elevator

    def disk() -> Disk:
        return new_disk(inputs, addr, op_file, op_off, op_len, params.merge,
                        params.max_request,
                        params.tcq_depth if params.scheduler == "tcq" else 0)

    per_file = params.clients == "per-file"
    cl = per_file_clients(file, op_req, nfiles) if per_file else no_clients()
    # no READ ever waits for a thread: the short loop
    short = params.nfsd >= slots and not exact and not per_file
    # places for the disk reads in flight: per-file processes issue their files' reads out
    # of order, so a place for each; one client issues them in order, so a ring
    op_ring = _ring_size(op_req.size if per_file else min(op_req.size, op_ring_most))
    times = n if keep_times or not short else 0
    issue, done = _client_times(times), _client_times(times)
    # the latencies as runs of one value, in the order the replies come: at most n
    runs = n if short else 0
    run_v, run_k = _client_times(runs), _pages.empty(runs, op_req.dtype)
    last_done = 0.0
    while True:
        d = disk()
        if short:
            busy, disk_end, status, last_done, hist, bounds, finite, nrun = simulate(
                arrive, nbytes, i64(params.rsize), file, offset, op_req, op_sync, op_off,
                op_len, slots, half_rtt, rate, reply_s, cpu_s, nfiles, cscan, ext, d, issue,
                done, run_v, run_k, op_ring)
        else:
            if issue.size < n:  # the short loop gave up: the exact loop keeps the times
                issue, done = _client_times(n), _client_times(n)
            busy, disk_end, status = simulate_exact(arrive, nbytes, i64(params.rsize), file,
                                                    offset, op_req, op_sync, op_off, op_len,
                                                    slots, half_rtt, rate, reply_s, cpu_s,
                                                    int(params.nfsd), nfiles, cscan, ext, d,
                                                    issue, done, cl, op_ring)
        if status == DONE:
            break
        if status == RING_FULL:  # a place for every read: never full
            op_ring = _ring_size(op_req.size)
        else:  # a tie the short loop cannot order
            short = False
    fields = (float(busy), float(disk_end), _total(nbytes), _total(op_len),
              int(op_len.size - d.blk[1]))
    if not short or keep_times:
        return TimingResult(issue, done, *fields), None
    counts = (hist, bounds[0], bounds[1]) if finite else None
    return None, op_ring, fields, (run_v[:nrun], run_k[:nrun]), float(last_done), counts


@njit(cache=True, nogil=True)
def _total(a):
    """The sum of an integer array as an int64 (no int64 copy of an int32 array)."""
    t = 0
    for x in a:
        t += x
    return t


def _client_times(n):
    """Room for one per-READ figure (issue or completion time, latency), on small pages
    (``seqheur._pages``: fresh huge pages cost more system time; docs/timing.md, Speed)."""
    return _pages.empty(n, np.float64)


class Clients(NamedTuple):
    """Per-file processes (``clients=per-file``): the READs of each file in trace order
    (``reads[start:end]`` of the file, ``next`` its first not yet issued), the files that have
    READs by their first one (``order``), and where each READ's disk reads start
    (``op_first[x]:op_first[x + 1]``). Empty arrays: one client, trace order."""

    op_first: np.ndarray  # int64[READs + 1]
    reads: np.ndarray  # int64[READs]
    next: np.ndarray  # int64[files]
    end: np.ndarray  # int64[files]
    order: np.ndarray  # int64[files with READs]


def per_file_clients(file: np.ndarray, op_req: np.ndarray, nfiles: int) -> Clients:
    """A process per file for the READs of ``file`` and the disk reads of ``op_req``."""
    i64 = np.int64
    n = file.size
    reads = np.argsort(file, kind="stable").astype(i64)
    counts = np.bincount(file, minlength=nfiles).astype(i64)
    end = np.cumsum(counts)
    start = end - counts
    has = np.flatnonzero(counts)
    order = has[np.argsort(reads[start[has]], kind="stable")].astype(i64)
    op_first = np.searchsorted(op_req, np.arange(n + 1, dtype=i64)).astype(i64)
    return Clients(op_first, reads, start, end, order)


def no_clients() -> Clients:
    """One client issuing in trace order (:class:`Clients` empty)."""
    z = np.zeros(0, np.int64)
    return Clients(z, z, z, z, z)


def new_disk(inputs: TimingInputs, addr: np.ndarray, op_file: np.ndarray, op_off: np.ndarray,
             op_len: np.ndarray, merge: str, max_request: int, tcq_depth: int = 0) -> "Disk":
    """An empty disk queue in front of the replay's drive model (its state fresh) for the
    disk reads ``op_*`` (int64) starting at disk addresses ``addr``; ``merge``: off, plug or
    elevator, up to ``max_request`` bytes; the drive model's host throttle, if it has one,
    holds reads in front of the queue (and the drive is handed only what it let go);
    ``tcq_depth`` > 0: the drive's tagged queue of that depth (the queue is then the host's,
    kept in cscan order)."""
    i64 = np.int64
    m = op_file.size
    # the block layer's arrays, empty when it is off (no merging, no throttle): the queue
    # then holds reads, and a run does not pay for them
    model = inputs.disk
    throttled = model.throttled
    b = m if merge != "off" or throttled else 0
    place = inputs.place
    _, *drive = model.kernel_args()
    return Disk(np.empty(m, i64), np.empty(m, i64), np.zeros(m + 1, i64), addr, op_file,
                op_off, op_len,
                place.ext_first, place.ext_base, model.drive_params(), *drive,
                model.new_state(), np.empty((6, b), i64),
                np.array([max_request if merge != "off" else 0, 0, merge == "plug", 0, 0]
                         + ([0] * (TQ_RING - 5 + tcq_depth) if tcq_depth > 0 else []), i64),
                model.iparams, np.array([1.0 if throttled else 0.0, 0.0]))


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
# scheduled in (time, sequence) order, so instead of one heap :func:`simulate_exact` keeps a
# queue per kind and takes the least of their heads: READs reach the server in issue order;
# replies reach the client in the order they were sent (each leaves the wire after the one
# before); the disk and the client's retry are one event at a time. Only CPU events can be
# scheduled out of time order (a READ of more RPCs takes longer): they are kept sorted, one
# per outstanding READ at most.
#
# :func:`simulate` gets the same answer with two kinds of events instead of five when there
# are at least as many nfsd threads as client slots (a READ never waits for a thread): a
# READ's arrival only schedules its CPU event, and a reply's arrival at the client only
# frees the slot the next READ takes, so both are computed when they become known (the
# reply's when the reply is sent: replies arrive in the order they are sent). What is left
# is CPU events (sorted by time, as above) and the disk's. Events at one time that are not
# of one kind are the only place where the order of scheduling (the sequence numbers, which
# the short loop does not keep) could change the result: :func:`simulate` gives up when a CPU
# event and the disk's fall at the same time, and the exact loop runs instead.

EV_NONE = -1
EV_TRY = 0  # the client tries to issue READs
EV_ARRIVE = 1  # a READ reaches the server
EV_CPU = 2  # an nfsd has done a READ's CPU work: its disk reads enter the queue
EV_DISK = 3  # a disk read finished
EV_RECV = 4  # a reply reached the client

NO_LINK = -1

# how a run of the loops ended
DONE = 0
TIE = 1  # the short loop met a CPU event and the disk's at one time: the exact loop decides
RING_FULL = 2  # reads in flight too far apart for the ring of their state (Waits)

#: Places for disk reads in flight (:class:`Waits`) a run starts with; a run that needs
#: more starts again with one for every read.
OP_RING = 1 << 16

#: A file offset above every read's (:attr:`Waits.span` of a file with none in flight).
SPAN_NONE = np.int64(1 << 62)


class Waits(NamedTuple):
    """Which disk reads the READs wait for. Per outstanding READ, at the slot number it took
    when issued (``slots`` of them: the state of a run's READs fits in a few lines of memory):
    its disk reads ``[op_lo, op_hi)``, how many reads of its file came before them, and how
    many reads it still waits for (from its CPU event). Per disk read in flight (issued with
    its READ, not yet done), at ``j & (ring - 1)`` in arrays of ``ring`` entries (a power of
    2): its index among its file's reads (NO_LINK once done: the place is free); the reads
    in flight, per file, in issue order (doubly linked by read number, the newest at
    ``live_tail``); the READs waiting for it, in READ order (linked nodes from a pool).
    Only the reads in flight need a place, and READs issued in trace order issue their
    reads in order: a ring far smaller than the run's reads holds them (a run's fresh pages
    cost more than its events, and a small ring stays in the CPU's cache). A read whose
    place is still taken (read ``j - ring`` not done) fills the ring: :func:`_issued` says
    so and the run starts again with a ring of every read."""

    op_lo: np.ndarray  # int64[slots]
    op_hi: np.ndarray  # int64[slots]
    file_ops_before: np.ndarray  # int64[slots]
    pending: np.ndarray  # int64[slots]
    op_rank: np.ndarray  # int64[ring]
    file_ops: np.ndarray  # int64[files]: reads of the file issued so far
    live_tail: np.ndarray  # int64[files]
    live_prev: np.ndarray  # int64[ring]
    live_next: np.ndarray  # int64[ring]
    w_head: np.ndarray  # int64[ring]
    w_tail: np.ndarray  # int64[ring]
    node_r: np.ndarray  # int64[nodes]: the waiting READ
    node_slot: np.ndarray  # int64[nodes]: its slot number
    node_next: np.ndarray  # int64[nodes]: the next node (of the read's list or the free list)
    # int64[2 * files]: per file f, its reads in flight lie within [span[2f], span[2f + 1])
    # (file offsets; SPAN_NONE, -SPAN_NONE: none in flight): a READ of bytes outside it
    # overlaps none of them, and the tight loop over the cache's READs skips the look-back
    span: np.ndarray


@njit(cache=True, nogil=True)
def new_waits(op_req, nfiles, slots, ring):
    """Empty bookkeeping for ``slots`` outstanding READs, the disk reads of ``op_req`` (in
    flight at most ``ring`` apart, a power of 2) and ``nfiles`` files. A node lives from a
    READ's CPU event to the end of the read it waits for, and the READ is outstanding all
    that time: at most ``slots`` READs, each waiting for its own reads and LOOKBACK earlier
    ones; the pool holds that many."""
    m = op_req.size
    most = 0
    streak = 0
    for j in range(m):
        streak = streak + 1 if j > 0 and op_req[j] == op_req[j - 1] else 1
        most = max(most, streak)
    nodes = slots * (most + LOOKBACK)
    node_next = np.arange(1, nodes + 1, dtype=np.int64)  # all free, in a list
    node_next[nodes - 1] = NO_LINK
    return Waits(np.empty(slots, np.int64), np.empty(slots, np.int64),
                 np.empty(slots, np.int64), np.zeros(slots, np.int64),
                 np.full(ring, NO_LINK, np.int64), np.zeros(nfiles, np.int64),
                 np.full(nfiles, NO_LINK, np.int64), np.empty(ring, np.int64),
                 np.empty(ring, np.int64), np.empty(ring, np.int64), np.empty(ring, np.int64),
                 np.empty(nodes, np.int64), np.empty(nodes, np.int64), node_next,
                 _no_spans(nfiles))


@njit(cache=True, nogil=True)
def _no_spans(nfiles):
    """:attr:`Waits.span` with no read in flight."""
    span = np.empty(2 * nfiles, np.int64)
    span[0::2] = SPAN_NONE
    span[1::2] = -SPAN_NONE
    return span


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _issued(x, slot, file, op_req, d, op_ptr, w):
    """READ x is issued into ``slot``: its disk reads (from ``op_ptr`` on, those of
    ``op_req == x``; ``d``: the disk's reads, :class:`Disk`) are ranked among their file's
    and in flight until the disk says so, within their file's span in flight. Returns the
    next read, or NO_LINK when one finds its place in the ring still taken."""
    op_file = d.op_file
    m = op_file.size
    mask = _ring_mask(w.op_rank)
    w.file_ops_before[slot] = w.file_ops[file[x]]
    w.op_lo[slot] = op_ptr
    while op_ptr < m and op_req[op_ptr] == x:
        k = op_ptr & mask
        if w.op_rank[k] != NO_LINK:  # read op_ptr - ring is still in flight
            return NO_LINK
        f = op_file[op_ptr]
        lo = d.op_off[op_ptr]
        hi = lo + d.op_len[op_ptr]
        if lo < w.span[2 * f]:
            w.span[2 * f] = lo
        if hi > w.span[2 * f + 1]:
            w.span[2 * f + 1] = hi
        w.op_rank[k] = w.file_ops[f]
        w.file_ops[f] += 1
        last = w.live_tail[f]
        w.live_prev[k] = last
        w.live_next[k] = NO_LINK
        if last != NO_LINK:
            w.live_next[last & mask] = op_ptr
        w.live_tail[f] = op_ptr
        w.w_head[k] = NO_LINK
        w.w_tail[k] = NO_LINK
        op_ptr += 1
    w.op_hi[slot] = op_ptr
    return op_ptr


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _issue_read(x, now, issue, arr_r, arr_seq, arr_slot, issued, seq, free_slot, nfree, file,
                op_req, d, op_lo, w):
    """:func:`_exact_loop`: the client issues READ x at ``now`` into the next free slot; it
    joins the READs on their way to the server (the ring ``arr_*``, in issue order, with
    sequence number ``seq``); its disk reads start at ``op_lo``. Returns the READs issued,
    the next sequence number, the free slots left and where its disk reads end."""
    q = issued & _ring_mask(arr_r)
    issue[x] = now
    arr_r[q] = x
    arr_seq[q] = seq
    nfree -= 1
    arr_slot[q] = free_slot[nfree]
    op_end = _issued(x, free_slot[nfree], file, op_req, d, op_lo, w)
    return issued + 1, seq + 1, nfree, op_end


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _process_issues(f, k, cl, now, issue, arr_r, arr_seq, arr_slot, issued, seq, free_slot,
                    nfree, file, op_req, d, w):
    """:func:`_exact_loop`, ``clients=per-file``: process f issues its next k READs (fewer
    at its last) at ``now`` (:func:`_issue_read`). Returns the READs issued, the next
    sequence number and the free slots left."""
    for _ in range(k):
        if cl.next[f] >= cl.end[f]:
            break
        x = cl.reads[cl.next[f]]
        cl.next[f] += 1
        issued, seq, nfree, _ = _issue_read(x, now, issue, arr_r, arr_seq, arr_slot, issued,
                                            seq, free_slot, nfree, file, op_req, d,
                                            cl.op_first[x], w)
    return issued, seq, nfree


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _server_has(x, slot, file, offset, nbytes, op_sync, op_off, op_len, d, dq_head, dq_tail,
                cscan, now, w, free):
    """READ x's CPU work is done: its disk reads enter the queue (``dq_head:dq_tail``), and
    it waits for its demand reads and for earlier reads of its bytes not yet done (among the
    last LOOKBACK of its file). Sets ``w.pending[slot]``; returns the queue's new end and
    the node pool's free list."""
    cnt = 0
    lo = w.op_lo[slot]
    for j in range(lo, w.op_hi[slot]):
        dq_tail = _enqueue(d, j, dq_head, dq_tail, cscan, now)
        if op_sync[j] != 0:
            cnt += 1
            free = _wait_for(j, x, slot, w, free)
    before = w.file_ops_before[slot]
    j = _overlap_in_flight(x, lo, before, w.live_tail[file[x]], file, offset, nbytes, op_off,
                           op_len, w)
    while j != NO_LINK:
        cnt += 1
        free = _wait_for(j, x, slot, w, free)
        j = _overlap_in_flight(x, lo, before, w.live_prev[j & _ring_mask(w.op_rank)], file,
                               offset, nbytes, op_off, op_len, w)
    w.pending[slot] = cnt
    return dq_tail, free


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _overlap_in_flight(x, lo, before, j, file, offset, nbytes, op_off, op_len, w):
    """The look-back of READ x, whose own disk reads start at ``lo``, ``before`` reads of its
    file before them: from disk read j on, back along its file's reads in flight, the next
    one issued before x's own reads and among the last LOOKBACK of its file that holds some
    of its bytes; NO_LINK when none does."""
    a = offset[x]
    b = a + nbytes[x]
    if b <= a:
        return NO_LINK
    oldest = before - LOOKBACK
    mask = _ring_mask(w.op_rank)
    while j != NO_LINK:
        if j < lo:
            if w.op_rank[j & mask] < oldest:
                return NO_LINK
            if op_off[j] < b and a < op_off[j] + op_len[j]:
                return j
        j = w.live_prev[j & mask]
    return NO_LINK


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _in_span(x, file, offset, nbytes, w):
    """Whether READ x's bytes meet its file's span of reads in flight (:attr:`Waits.span`):
    if not, no read in flight holds any of them (:func:`_overlap_in_flight` finds none)."""
    f = file[x]
    a = offset[x]
    return w.span[2 * f] < a + nbytes[x] and a < w.span[2 * f + 1]


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _wait_for(j, r, slot, w, free):
    """READ r (in ``slot``) waits for disk read j: a node from the free list into j's list
    of waiters, kept in READ order (CPU events come nearly in READ order: almost always an
    append). Returns the free list's new head."""
    q = j & _ring_mask(w.w_head)  # the read's place in the ring
    k = free
    free = w.node_next[k]
    w.node_r[k] = r
    w.node_slot[k] = slot
    last = w.w_tail[q]
    if last == NO_LINK:
        w.node_next[k] = NO_LINK
        w.w_head[q] = k
        w.w_tail[q] = k
    elif w.node_r[last] < r:
        w.node_next[k] = NO_LINK
        w.node_next[last] = k
        w.w_tail[q] = k
    else:
        before = NO_LINK
        at = w.w_head[q]
        while w.node_r[at] < r:
            before = at
            at = w.node_next[at]
        w.node_next[k] = at
        if before == NO_LINK:
            w.w_head[q] = k
        else:
            w.node_next[before] = k
    return free


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _read_done(j, f, d, w):
    """Disk read j (of file f) is done: no longer in flight, its place in the ring free. A
    read at an end of its file's span in flight (:class:`Waits`) has the span worked out
    again from the reads left."""
    mask = _ring_mask(w.op_rank)
    k = j & mask
    after = w.live_next[k]
    before = w.live_prev[k]
    if after != NO_LINK:
        w.live_prev[after & mask] = before
    else:
        w.live_tail[f] = before
    if before != NO_LINK:
        w.live_next[before & mask] = after
    w.op_rank[k] = NO_LINK
    if d.op_off[j] == w.span[2 * f] or d.op_off[j] + d.op_len[j] == w.span[2 * f + 1]:
        lo = SPAN_NONE
        hi = -SPAN_NONE
        i = w.live_tail[f]
        while i != NO_LINK:
            a = d.op_off[i]
            b = a + d.op_len[i]
            lo = a if a < lo else lo
            hi = b if b > hi else hi
            i = w.live_prev[i & mask]
        w.span[2 * f] = lo
        w.span[2 * f + 1] = hi


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _request_done(j, d, w, free, ready_r, ready_slot):
    """The drive has served the request whose first read is j (NO_LINK: none, the throttle's
    hold ended): its reads are done, in the order they joined it, and each one's waiters, in
    READ order, wait for it no more. The READs left waiting for nothing go to ``ready_r``
    (their slots to ``ready_slot``) in that order, the order they reply in; returns how
    many, and the node pool's free list. At most one READ a slot: ``slots`` entries."""
    nready = 0
    while j != NO_LINK:
        _read_done(j, d.op_file[j], d, w)
        k = w.w_head[j & _ring_mask(w.w_head)]
        while k != NO_LINK:
            slot = w.node_slot[k]
            w.pending[slot] -= 1
            if w.pending[slot] == 0:
                ready_r[nready] = w.node_r[k]
                ready_slot[nready] = slot
                nready += 1
            after = w.node_next[k]
            w.node_next[k] = free
            free = k
            k = after
        j = d.rq[0, j] if d.rq.shape[1] else NO_LINK
    return nready, free


@njit(cache=True, nogil=True)
def _wire(reply_s):
    """:func:`_send`'s state: no reply sent yet (bytes -1, time -1) and the host's time per
    reply."""
    wire = np.full(3, -1.0)
    wire[2] = reply_s
    return wire


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _send(r, now, nbytes, rate, link_free, wire):
    """READ r's reply goes on the wire after the replies before it; returns when it leaves
    the wire (the wire is free again then). ``wire``: the bytes of the reply before and its
    time on the wire (most replies have the bytes of the one before: no division), and the
    host's time per reply (``reply_us``), which the reply takes on the same path."""
    nb = nbytes[r]
    if nb != wire[0]:
        wire[0] = nb
        wire[1] = wire[2] + (nb / rate if rate > 0 else 0.0)
    start = now if now > link_free else link_free
    return start + wire[1]


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _replied(x, slot, t, issued_at, done, keep_times, last_done, run, run_len, hist, bounds,
             word, bits, runs):
    """:func:`_short_loop`: READ x (in ``slot``) has its reply at time t: its latency (ms)
    and, with ``keep_times``, its completion. The latencies are kept and counted as
    :func:`_latency_buckets` counts them a run of one value at a time (``run``,
    ``run_len``; :func:`_count_run`). Returns the latest reply so far and the run."""
    return _latency(x, issued_at[slot], t, done, keep_times, last_done, run, run_len, hist,
                    bounds, word, bits, runs)


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _latency(x, t_issue, t, done, keep_times, last_done, run, run_len, hist, bounds, word,
             bits, runs):
    """:func:`_replied` for READ x issued at ``t_issue``."""
    v = (t - t_issue) * 1e3
    if keep_times:
        done[x] = t
    if run_len > 0 and v == run:
        run_len += 1
    else:
        if run_len > 0:
            _count_run(run, run_len, hist, bounds, word, bits, runs)
        run = v
        run_len = 1
    return (t if t > last_done else last_done), run, run_len


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _count_run(v, k, hist, bounds, word, bits, runs):
    """Keep ``k`` latencies of value ``v`` (``runs``: values, counts and how many runs so
    far) and count them in their bucket (``hist``; least and greatest in ``bounds``);
    ``word[1]`` set at one not finite. ``bits``: ``word[:1]`` as uint64."""
    run_v, run_k, nrun = runs
    i = nrun[0]
    run_v[i] = v
    run_k[i] = k
    nrun[0] = i + 1
    if not v < np.inf or v != v:  # NaN or infinite
        word[1] = 1.0
    word[0] = v if v > 0.0 else 0.0  # no -0.0 or negative latency: a bucket >= 0
    b = bits[0] >> 48
    hist[b] += k
    if v < bounds[0, b]:
        bounds[0, b] = v
    if v > bounds[1, b]:
        bounds[1, b] = v


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _cpu_event(t, s, r, slot, cpu_t, cpu_seq, cpu_r, cpu_slot, head, length):
    """Queue the CPU event of READ r (in ``slot``) at time t (sequence s) in the ring of CPU
    events, sorted by time; among equal times after the ones queued before."""
    mask = _ring_mask(cpu_t)  # a power of 2
    p = length
    while p > 0 and cpu_t[(head + p - 1) & mask] > t:
        q = (head + p) & mask
        w = (head + p - 1) & mask
        cpu_t[q] = cpu_t[w]
        cpu_seq[q] = cpu_seq[w]
        cpu_r[q] = cpu_r[w]
        cpu_slot[q] = cpu_slot[w]
        p -= 1
    q = (head + p) & mask
    cpu_t[q] = t
    cpu_seq[q] = s
    cpu_r[q] = r
    cpu_slot[q] = slot


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _ring_mask(ring):
    """The mask of a ring buffer (its size a power of 2) with the sign bit clear: an index
    masked by it is known not to be negative, so numba's wraparound of negative indices
    compiles to nothing."""
    return (ring.size - 1) & 0x7FFFFFFFFFFFFFFF


@njit(cache=True, nogil=True, _nrt=False)
def _ring_size(slots):
    """The least power of 2 >= slots: ring buffers indexed with a mask, not a division."""
    ring = 1
    while ring < slots:
        ring *= 2
    return ring


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _issue(r, free_at, mask, think, arrive, last_issue, keep_times, issue, free_slot, nfree,
           issued_at, file, op_req, d, op_ptr, w, half_rtt, cpu_s, nbytes, rsize):
    """Issue READ ``r`` into a free slot: at the later of its slot's release (``free_at``, a
    ring), its trace time (with think time) and the READ before's issue (the client issues
    in order). Returns (its issue time, when it reaches its nfsd's CPU, its slot, the free
    slots left, the disk reads' pointer from :func:`_issued`: ``NO_LINK`` if the ring of
    reads in flight is full)."""
    t, t_cpu = _issue_times(r, free_at, mask, think, arrive, last_issue, half_rtt, cpu_s,
                            nbytes, rsize)
    if keep_times:
        issue[r] = t
    nfree -= 1
    slot = free_slot[nfree]
    issued_at[slot] = t
    op_ptr = _issued(r, slot, file, op_req, d, op_ptr, w)
    return t, t_cpu, slot, nfree, op_ptr


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _issue_times(r, free_at, mask, think, arrive, last_issue, half_rtt, cpu_s, nbytes, rsize):
    """When READ ``r`` is issued (:func:`_issue`) and when it reaches its nfsd's CPU."""
    t = free_at[r & mask]
    if think and arrive[r] > t:
        t = arrive[r]
    if last_issue > t:
        t = last_issue
    return t, (t + half_rtt) + cpu_s * _rpcs(nbytes[r], rsize)


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _rpcs(nbytes, rsize):
    """RPCs of a READ of ``nbytes``: ceil(nbytes / rsize), at least one."""
    return (nbytes + rsize - 1) // rsize if nbytes > rsize else 1


class Disk(NamedTuple):
    """The disk queue and the drive: the queued reads (``fifo``: ``dq[head:tail]`` in
    arrival order; ``cscan``: ``dq[:tail]`` with their addresses in ``qaddr``: in no order
    without a block layer or a tagged queue (:func:`_elevator_take`), else sorted by
    address, then arrival), the drive model's arrays and state."""

    dq: np.ndarray  # int64[m]
    qaddr: np.ndarray  # int64[m]
    # int64[m + 1]: the unordered cscan queue's arrival numbers (equal addresses are served
    # oldest first), the next one at qseq[m]
    qseq: np.ndarray
    addr: np.ndarray  # int64[m]: byte address where each read starts
    op_file: np.ndarray
    op_off: np.ndarray
    op_len: np.ndarray
    ext_first: np.ndarray
    ext_base: np.ndarray
    ip: np.ndarray
    fp: np.ndarray
    seek_d: np.ndarray
    seek_t: np.ndarray
    zone_start: np.ndarray
    zone_rate: np.ndarray
    dstate: np.ndarray
    # The block layer's requests, int64[6, m] (m = 0 when there is no block layer: no
    # merging, no throttle; one array, not six: fewer fields to pass to every call). The
    # queue holds each request's first read (its head); the reads merged into it follow in
    # a list. Row 0: the request's next read (NO_LINK: the last); per head, 1: its last
    # read, 2-4: its extent (file offset, bytes, disk address); 5: the requests the
    # throttle holds, oldest first, at rq[5, blk[3]:blk[4]].
    rq: np.ndarray
    # int64[5]: the largest request (0: no merging); reads merged so far; 1: plug merging
    # (held reads into the newest held request), 0: elevator (also any queued request);
    # where the throttle's held requests start and end in rq[5]. With a tagged queue (the
    # drive's) it goes on (one array, not two: one field less to pass to every call):
    # [TQ_COUNT] requests at the drive (the one in service included), [TQ_HEAD] the oldest's
    # place in the ring, [TQ_SENT] the disk address where the request the host sent last
    # ends (its elevator's position), then the ring of ``depth`` request heads from [TQ_RING]
    blk: np.ndarray
    # the drive model's parameters with its host throttle (``ip`` has it off: the block
    # layer holds reads itself, :func:`seqheur.disk.model.throttle_step`, its slice kept in
    # ``dstate``)
    tip: np.ndarray
    # float64[2]: 1.0 when there is a throttle; when it lets its oldest held request go (s)
    gate: np.ndarray


# the drive's tagged queue in Disk.blk
TQ_COUNT = 5
TQ_HEAD = 6
TQ_SENT = 7
TQ_RING = 8


@njit(cache=True, nogil=True, _nrt=False)
def _joins(d, j, h, limit):
    """How disk read j would merge into queued request h: 1 back (j starts where h ends, in
    its file and on the disk), -1 front (j ends where h starts), 0 not at all (another file,
    not adjacent, or the request would exceed ``limit`` bytes)."""
    if d.op_file[h] != d.op_file[j] or d.rq[3, h] + d.op_len[j] > limit:
        return 0
    if d.rq[2, h] + d.rq[3, h] == d.op_off[j] and d.rq[4, h] + d.rq[3, h] == d.addr[j]:
        return 1
    if d.op_off[j] + d.op_len[j] == d.rq[2, h] and d.addr[j] + d.op_len[j] == d.rq[4, h]:
        return -1
    return 0


@njit(cache=True, nogil=True, _nrt=False)
def _join(d, j, h, how):
    """Disk read j joins request h at its end (``how`` 1) or its start (-1)."""
    d.rq[0, d.rq[1, h]] = j
    d.rq[1, h] = j
    d.rq[3, h] += d.op_len[j]
    d.blk[1] += 1
    if how < 0:
        d.rq[2, h] = d.op_off[j]
        d.rq[4, h] = d.addr[j]


@njit(cache=True, nogil=True, _nrt=False)
def _merge(d, j, k, how, cscan):
    """Disk read j joins the request at queue position k, at its end (``how`` 1) or its
    start (-1; with ``cscan`` the request moves back into address order)."""
    h = d.dq[k]
    _join(d, j, h, how)
    if how < 0:
        if cscan:
            while k > 0 and d.qaddr[k - 1] > d.rq[4, h]:
                d.dq[k] = d.dq[k - 1]
                d.qaddr[k] = d.qaddr[k - 1]
                k -= 1
            d.dq[k] = h
            d.qaddr[k] = d.rq[4, h]


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _enqueue(d, j, head, tail, cscan, now):
    """Disk read j is submitted at ``now``; returns the disk queue's new end (the queue is
    ``dq[head:tail]``, or ``dq[:tail]`` with ``cscan``).

    With a throttle (``d.gate``) the read first meets it, as a bio meets blk-throttle before
    the request queue: while reads are held it is held behind them, and with merging on it
    joins the newest held request if it continues it or ends where it starts (the throttle
    lets its held reads go in one batch, submitted under one plug, and a plug merges a bio
    into the request added last); else it passes if the budget covers it, or is held. A
    read that passes (or every read, without a throttle) enters the disk queue, where
    ``elevator`` merging joins it to a queued request it continues (newest first with
    ``fifo``, highest address first with ``cscan``), else to one it ends just before; with
    ``plug`` a request in the disk queue is already the driver's and takes no read. Merged
    requests stay within the largest request size. Otherwise the read is a request of its
    own; ``cscan``: after the requests at its address or below, so equal addresses keep
    arrival order."""
    if d.rq.shape[1] == 0:  # no block layer: every read is a request, queued at once
        return _push(d, j, d.addr[j], tail, cscan)
    return _enqueue_blk(d, j, head, tail, cscan, now)


@njit(cache=True, nogil=True, _nrt=False)
def _enqueue_blk(d, j, head, tail, cscan, now):
    """:func:`_enqueue` through the block layer (the throttle, merging): a call of its own,
    not inlined, so that the loops without a block layer carry none of its code."""
    d.rq[0, j] = NO_LINK
    d.rq[1, j] = j
    d.rq[2, j] = d.op_off[j]
    d.rq[3, j] = d.op_len[j]
    d.rq[4, j] = d.addr[j]
    limit = d.blk[0]
    g = d.gate
    if g[0] > 0.0:
        tail = _throttle_release(d, now, tail, cscan)
        if d.blk[3] < d.blk[4]:  # reads are held: behind them
            h = d.rq[5, d.blk[4] - 1]
            how = _joins(d, j, h, limit) if limit > 0 else 0
            if how != 0:
                _join(d, j, h, how)
                return tail
            d.rq[5, d.blk[4]] = j
            d.blk[4] += 1
            return tail
        hz = d.tip[I_HZ]
        jiffy = _jiffy(now, hz)
        wait = throttle_step(d.dstate, d.tip, jiffy, d.op_len[j], False)
        if wait > 0:
            d.rq[5, d.blk[4]] = j
            d.blk[4] += 1
            g[1] = (jiffy + wait) / hz
            return tail
    if limit > 0 and d.blk[2] == 0:  # elevator
        front = -1
        for k in range(tail - 1, (0 if cscan else head) - 1, -1):
            how = _joins(d, j, d.dq[k], limit)
            if how > 0:
                _merge(d, j, k, how, cscan)
                return tail
            if how < 0 and front < 0:
                front = k
        if front >= 0:
            _merge(d, j, front, -1, cscan)
            return tail
    return _push(d, j, d.rq[4, j], tail, cscan)


@njit(cache=True, nogil=True, _nrt=False)
def _push(d, j, a, tail, cscan):
    """Request j (its first read), starting at disk address ``a``, enters the disk queue;
    returns the queue's new end. With a tagged queue the host sends it (or the next in its
    elevator's order) on to the drive at once if the drive has room."""
    if not cscan:
        d.dq[tail] = j
        return tail + 1
    if d.rq.shape[1] == 0 and not _tagged(d):  # unordered: _elevator_take finds the next
        d.dq[tail] = j
        d.qaddr[tail] = a
        m = d.qseq.size - 1
        d.qseq[tail] = d.qseq[m]
        d.qseq[m] += 1
        return tail + 1
    k = tail  # after the requests at its address or below: those above move up one
    while k > 0 and d.qaddr[k - 1] > a:
        d.dq[k] = d.dq[k - 1]
        d.qaddr[k] = d.qaddr[k - 1]
        k -= 1
    d.dq[k] = j
    d.qaddr[k] = a
    tail += 1
    if _tagged(d):
        tail = _tcq_send(d, tail)
    return tail


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _tagged(d):
    """Whether the drive has a tagged queue (its state after the block layer's in blk)."""
    return d.blk.size > TQ_RING


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _cscan_take(d, tail, from_addr):
    """Take the request a one-way elevator at ``from_addr`` serves next from the sorted
    queue ``dq[:tail]``: the lowest address at or past it, wrapping to the lowest (among
    equal addresses the oldest). Returns it and the queue's new end."""
    lo = 0
    hi = tail
    while lo < hi:  # the first read at or past the position
        mid = (lo + hi) >> 1
        below = d.qaddr[mid] < from_addr
        lo = mid + 1 if below else lo
        hi = hi if below else mid
    if lo == tail:
        lo = 0
    j = d.dq[lo]
    for k in range(lo, tail - 1):
        d.dq[k] = d.dq[k + 1]
        d.qaddr[k] = d.qaddr[k + 1]
    return j, tail - 1


#: Added to the address of a queued request below the elevator's position: it comes after
#: every one at or past it (disk addresses are below 2^62)
_WRAPPED = np.int64(1 << 62)


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _elevator_take(d, tail, from_addr):
    """:func:`_cscan_take` over the unordered queue ``dq[:tail]`` (no block layer, no tagged
    queue): the least (address, arrival) at or past ``from_addr``, else the least overall,
    found in one pass; the last request fills its place. The queue holds a dozen reads or so
    when the drive takes one: a pass over them costs less than keeping them sorted (an
    insertion and a removal each moved half the queue)."""
    a = d.qaddr[0]  # the queue is not empty
    best = a + _WRAPPED if a < from_addr else a
    k_best = 0
    for k in range(1, tail):
        a = d.qaddr[k]
        key = a + _WRAPPED if a < from_addr else a
        if key < best or (key == best and d.qseq[k] < d.qseq[k_best]):
            best = key
            k_best = k
    j = d.dq[k_best]
    last = tail - 1
    d.dq[k_best] = d.dq[last]
    d.qaddr[k_best] = d.qaddr[last]
    d.qseq[k_best] = d.qseq[last]
    return j, last


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _extent(d, j):
    """Request j's file offset, bytes and the disk address where it ends."""
    if d.rq.shape[1]:  # the block layer's request
        return d.rq[2, j], d.rq[3, j], d.rq[4, j] + d.rq[3, j]
    return d.op_off[j], d.op_len[j], d.addr[j] + d.op_len[j]


@njit(cache=True, nogil=True, _nrt=False)
def _tcq_send(d, tail):
    """The host sends requests of its queue ``dq[:tail]`` to the drive's tagged queue, in
    its elevator's order from the last one it sent, while the drive has room. Returns the
    host queue's new end."""
    t = d.blk
    depth = t.size - TQ_RING
    while t[TQ_COUNT] < depth and tail > 0:
        j, tail = _cscan_take(d, tail, t[TQ_SENT])
        t[TQ_RING + (t[TQ_HEAD] + t[TQ_COUNT]) % depth] = j
        t[TQ_COUNT] += 1
        t[TQ_SENT] = _extent(d, j)[2]
    return tail


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _tcq_done(d, tail):
    """The drive has finished its oldest request (the one it was serving): with a tagged
    queue its tag is free, and the host sends the next. Returns the host queue's new end."""
    if not _tagged(d):
        return tail
    t = d.blk
    t[TQ_HEAD] = (t[TQ_HEAD] + 1) % (t.size - TQ_RING)
    t[TQ_COUNT] -= 1
    return _tcq_send(d, tail)


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _disk_has_work(d, head, tail):
    """Whether an idle disk has something to do: queued requests, the drive's tagged queue,
    or requests the throttle holds."""
    return head != tail or d.gate[0] > 0.0 or (_tagged(d) and d.blk[TQ_COUNT] > 0)


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _jiffy(t, hz):
    """The jiffy (of 1/hz s, counted from the run's start) that time ``t`` (s) falls in; a
    time the model computed as a jiffy's start stays in that jiffy."""
    return np.int64(np.floor(t * hz + 1e-6))


@njit(cache=True, nogil=True, _nrt=False)
def _throttle_release(d, now, tail, cscan):
    """The throttle lets its held requests go, oldest first, at the jiffies its timer fires
    and its budget admits them, up to ``now``: each enters the disk queue (whose new end is
    returned). Requests the same release admits leave together (blk-throttle dispatches
    them in one batch)."""
    g = d.gate
    hz = d.tip[I_HZ]
    while d.blk[3] < d.blk[4] and g[1] <= now:
        h = d.rq[5, d.blk[3]]
        jiffy = _jiffy(g[1], hz)
        wait = throttle_step(d.dstate, d.tip, jiffy, d.rq[3, h], True)
        if wait > 0:
            g[1] = (jiffy + wait) / hz
            continue
        d.blk[3] += 1
        tail = _push(d, h, d.rq[4, h], tail, cscan)
    return tail


# inlined into the loops; called alone (tests), cached by the replay keyed by sources
@njit(nogil=True, _nrt=False, inline="always")
def _serve_next(d, head, tail, head_addr, cscan, extent_bytes, now, idle_s):
    """The idle disk takes the next request of its queue at ``now``, after ``idle_s``
    seconds idle, and serves it with the drive model as one read: the oldest (fifo), or the
    one at the lowest address at or past the head, wrapping to the lowest address (cscan;
    among equal addresses the oldest), or the oldest the drive holds (tcq: it stays there,
    holding its tag, until :func:`_tcq_done`). Returns the request's first read (-1: none
    taken), its service time (or, when the throttle holds the request, how long it holds
    it), the queue's new head and end, and the disk address where the request ends."""
    if d.gate[0] > 0.0:
        tail = _throttle_release(d, now, tail, cscan)
    if _tagged(d):
        if d.blk[TQ_COUNT] == 0:
            return _idle(d, now, head, tail)
        j = d.blk[TQ_RING + d.blk[TQ_HEAD]]
    elif head == tail:
        return _idle(d, now, head, tail)
    elif cscan:
        if d.rq.shape[1] == 0:
            j, tail = _elevator_take(d, tail, head_addr)
        else:
            j, tail = _cscan_take(d, tail, head_addr)
    else:
        j = d.dq[head]
        head += 1
    off, length, end = _extent(d, j)
    service, _ = service_read(d.op_file[j], off, length, True, idle_s, d.ext_first,
                              d.ext_base, extent_bytes, d.ip, d.fp, d.seek_d, d.seek_t,
                              d.zone_start, d.zone_rate, d.dstate)
    return j, service, head, tail, end


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _idle(d, now, head, tail):
    """:func:`_serve_next` with nothing to serve: the throttle may hold the next request
    (until ``d.gate[1]``)."""
    if d.blk[3] < d.blk[4]:
        return -1, d.gate[1] - now, head, tail, np.int64(0)
    return -1, 0.0, head, tail, np.int64(0)


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _start_disk(d, head, tail, head_addr, cscan, extent_bytes, now, free_at, busy):
    """:func:`_short_loop`: the idle disk (free since ``free_at``) starts the next request at
    ``now`` if it has work (:func:`_serve_next`). Returns whether it is busy then, until
    when, the request's first read (NO_LINK: the throttle's hold), the queue's new head and
    end, the disk address where the request ends (the head's) and the busy seconds."""
    if not _disk_has_work(d, head, tail):
        return False, 0.0, np.int64(0), head, tail, head_addr, busy
    j, service, head, tail, end = _serve_next(d, head, tail, head_addr, cscan, extent_bytes,
                                              now, now - free_at)
    if j >= 0:
        return True, now + service, j, head, tail, end, busy + service
    if service > 0.0:  # the throttle holds the next request that long
        return True, now + service, np.int64(NO_LINK), head, tail, head_addr, busy
    return False, 0.0, np.int64(0), head, tail, head_addr, busy


def simulate(arrive, nbytes, rsize, file, offset, op_req, op_sync, op_off, op_len, slots,
             half_rtt, rate, reply_s, cpu_s, nfiles, cscan, extent_bytes, d, issue, done,
             run_v, run_k, op_ring):
    """The events of a run where no READ waits for an nfsd thread (the caller checks): fills
    ``run_v``, ``run_k`` with the READs' latencies at the client (ms: (done - issue) * 1e3)
    as runs of one value, in the order the replies came, and, unless they are empty,
    ``issue`` and ``done`` (client times, s); returns the disk's busy seconds, when it
    finished its last read, a status, the last reply's arrival, the latencies counted as
    :func:`_latency_buckets` counts them (per bucket; each bucket's least and greatest;
    whether all were finite) and how many runs. Status: DONE; TIE when a CPU event and the
    disk's fell at the same time (then nothing returned holds: run :func:`simulate_exact`); RING_FULL when
    reads more than ``op_ring`` (a power of 2) apart were in flight at once (:class:`Waits`;
    run again with a larger ring). ``arrive``: per READ the earliest issue time (s), or
    empty (no think time). Allocates the loop's state and runs :func:`_short_loop`.

    A Python function, not a jitted one: jitted, it held a copy of the loop optimised again
    with it, and that copy, loaded from the on-disk cache, ran 10-15 % slower than the
    loop's own compilation (the one a process that compiled it runs); called from here the
    loop is always its own compilation, loaded or not (docs/timing.md, the eleventh pass)."""
    ring = _ring_size(slots)  # queues of at most slots events, indexed modulo a power of 2
    hist = np.zeros(_LAT_BUCKETS, np.int64)
    bounds = np.empty((2, _LAT_BUCKETS))
    bounds[0] = np.inf
    bounds[1] = -np.inf
    word = np.zeros(2)
    nrun = np.zeros(1, np.int64)
    busy, disk_end, status, last_done = _short_loop(
        arrive, nbytes, rsize, file, offset, op_req, op_sync, op_off, op_len,
        slots, half_rtt, rate, cpu_s, cscan, extent_bytes, d, issue, done,
        new_waits(op_req, nfiles, slots, op_ring),
        np.arange(slots - 1, -1, -1, dtype=np.int64), np.empty(slots, np.int64),
        np.empty(slots, np.int64), np.zeros(ring), np.empty(ring),
        np.empty(ring, np.int64), np.empty(ring, np.int64),
        np.empty(ring, np.int64), np.empty(slots), hist, bounds, word,
        word[:1].view(np.uint64), (run_v, run_k, nrun), _wire(reply_s))
    return busy, disk_end, status, last_done, hist, bounds, word[1] == 0.0, nrun[0]


@njit(nogil=True, _nrt=False)  # cached on disk by the replay, keyed by sources
def _short_loop(arrive, nbytes, rsize, file, offset, op_req, op_sync, op_off, op_len, slots,
                half_rtt, rate, cpu_s, cscan, extent_bytes, d, issue, done, w, free_slot,
                ready_r, ready_slot, free_at, cpu_t, cpu_r, cpu_slot, no_seq, issued_at, hist,
                bounds, word, bits, runs, wire):
    """:func:`simulate`'s loop, over state allocated for it: without reference counting
    (``_nrt=False``), the disk queue's helpers are inlined into it rather than called with
    every array of the drive model and the queue as arguments. ``free_slot``: slot numbers
    free for the next READs (a stack; all, top first); ``ready_*``: ``slots`` entries;
    ``free_at`` (zeros), ``cpu_*`` and ``no_seq``: rings of ``_ring_size(slots)``;
    ``issued_at``: the issue time of the READ in each slot. The READs' times are written
    only if ``issue`` is not empty (their latencies always: a summary needs no more)."""
    n = nbytes.size
    m = op_req.size
    think = arrive.size > 0
    keep_times = issue.size > 0
    last_done = 0.0
    run = 0.0  # the latencies' run of one value not yet counted (_replied)
    run_len = 0
    mask = _ring_mask(free_at)
    node_free = 0
    op_ptr = 0
    # slot numbers free for the next READs: a READ's is free once it replies
    nfree = slots
    # client: READ y takes the slot freed by the (y - slots)-th reply to arrive (the first
    # slots READs: free at 0); replies arrive in the order they are sent; free_at holds
    # READ y's at y & mask, once known
    known = slots  # READs [0, known) have their slot's time
    nxt = 0
    last_issue = 0.0
    # CPU events, sorted by time (cpu_*; no_seq: CPU events of this loop have no sequence
    # numbers)
    cpu_head = 0
    cpu_len = 0
    link_free = 0.0
    dq_head = 0
    dq_tail = 0
    disk_busy = False
    disk_t = 0.0
    disk_op = 0
    disk_free_at = 0.0
    head_addr = np.int64(0)
    busy = 0.0
    while True:
        # the fast pass: no CPU event queued. While the next READ's slot is known and its CPU
        # event comes before anything else (the disk's next event, or the disk idle with
        # nothing to start), that event is the next one: the READ is issued and its CPU
        # event runs at once, without the queue of CPU events; a reply frees the slot a
        # later READ takes. With several READs' slots known, the one issued first has the
        # first CPU event (READs are issued in order, so its issue time is the least) when
        # its CPU time is the least one (one RPC, or no CPU per RPC): else it and the others
        # take the queue. The same steps as below, in the same order
        while cpu_len == 0 and nxt < known and nxt < n:
            # first the READs the cache served, back to back: no disk read of their own,
            # none of their bytes in flight, their CPU event before the disk's. Each takes
            # a slot and gives it back at once, so only its times are worked out (the same
            # steps as below, without the bookkeeping that only a READ left waiting needs)
            if disk_busy or not _disk_has_work(d, dq_head, dq_tail):
                while nxt < known and nxt < n and (op_ptr == m or op_req[op_ptr] != nxt):
                    x = nxt
                    t_issue, t = _issue_times(x, free_at, mask, think, arrive, last_issue,
                                              half_rtt, cpu_s, nbytes, rsize)
                    if ((disk_busy and t >= disk_t)
                            or (x + 1 < known and cpu_s > 0.0 and nbytes[x] > rsize)
                            or (_in_span(x, file, offset, nbytes, w) and _overlap_in_flight(
                                x, op_ptr, w.file_ops[file[x]], w.live_tail[file[x]], file,
                                offset, nbytes, op_off, op_len, w) != NO_LINK)):
                        break  # the steps below take it
                    last_issue = t_issue
                    if keep_times:
                        issue[x] = t_issue
                    nxt += 1
                    now = t
                    link_free = _send(x, now, nbytes, rate, link_free, wire)
                    last_done, run, run_len = _latency(
                        x, t_issue, link_free + half_rtt, done, keep_times, last_done, run,
                        run_len, hist, bounds, word, bits, runs)
                    free_at[known & mask] = link_free + half_rtt
                    known += 1
                if not (nxt < known and nxt < n):
                    break
            last_issue, t, slot, nfree, op_ptr = _issue(
                nxt, free_at, mask, think, arrive, last_issue, keep_times, issue, free_slot,
                nfree, issued_at, file, op_req, d, op_ptr, w, half_rtt, cpu_s, nbytes,
                rsize)
            if op_ptr == NO_LINK:
                return busy, disk_free_at, RING_FULL, last_done
            x = nxt
            nxt += 1
            if ((t >= disk_t if disk_busy else _disk_has_work(d, dq_head, dq_tail))
                    or (nxt < known and cpu_s > 0.0 and nbytes[x] > rsize)):
                cpu_t[cpu_head] = t  # its CPU event, for the loop below
                cpu_r[cpu_head] = x
                cpu_slot[cpu_head] = slot
                cpu_len = 1
                break
            now = t
            if op_ptr == w.op_lo[slot] and _overlap_in_flight(
                    x, op_ptr, w.file_ops_before[slot], w.live_tail[file[x]], file, offset,
                    nbytes, op_off, op_len, w) == NO_LINK:  # nothing to queue or wait for
                w.pending[slot] = 0
            else:
                dq_tail, node_free = _server_has(x, slot, file, offset, nbytes, op_sync,
                                                 op_off, op_len, d, dq_head, dq_tail, cscan,
                                                 now, w, node_free)
                if not disk_busy:
                    disk_busy, disk_t, disk_op, dq_head, dq_tail, head_addr, busy = (
                        _start_disk(d, dq_head, dq_tail, head_addr, cscan, extent_bytes, now,
                                    disk_free_at, busy))
                if w.pending[slot] != 0:
                    continue
            link_free = _send(x, now, nbytes, rate, link_free, wire)
            last_done, run, run_len = _replied(x, slot, link_free + half_rtt, issued_at,
                                               done, keep_times, last_done, run, run_len, hist,
                                               bounds, word, bits, runs)
            free_at[known & mask] = link_free + half_rtt
            known += 1
            free_slot[nfree] = slot
            nfree += 1
        # issue every READ whose slot is known: at the later of its slot, its trace time
        # and the READ before; it reaches the server half a round trip later and has its
        # thread at once. Not while the one CPU event queued is of a READ of one RPC (or
        # RPCs cost no CPU): the later READs' CPU events come after it (issued no earlier,
        # no cheaper), so they wait for the fast pass
        while nxt < known and nxt < n and not (
                cpu_len == 1 and (cpu_s == 0.0 or nbytes[cpu_r[cpu_head]] <= rsize)):
            last_issue, t, slot, nfree, op_ptr = _issue(
                nxt, free_at, mask, think, arrive, last_issue, keep_times, issue, free_slot,
                nfree, issued_at, file, op_req, d, op_ptr, w, half_rtt, cpu_s, nbytes,
                rsize)
            if op_ptr == NO_LINK:
                return busy, disk_free_at, RING_FULL, last_done
            q = (cpu_head + cpu_len) & mask
            if cpu_len == 0 or cpu_t[(q - 1) & mask] <= t:  # in time order: append
                cpu_t[q] = t
                cpu_r[q] = nxt
                cpu_slot[q] = slot
            else:
                _cpu_event(t, 0, nxt, slot, cpu_t, no_seq, cpu_r, cpu_slot, cpu_head, cpu_len)
            cpu_len += 1
            nxt += 1
        if cpu_len > 0:
            if disk_busy and cpu_t[cpu_head] == disk_t:
                return busy, disk_free_at, TIE, last_done
            is_cpu = not disk_busy or cpu_t[cpu_head] < disk_t
        elif disk_busy:
            is_cpu = False
        else:
            break
        if is_cpu:
            now = cpu_t[cpu_head]
            x = cpu_r[cpu_head]
            slot = cpu_slot[cpu_head]
            cpu_head = (cpu_head + 1) & mask
            cpu_len -= 1
            dq_tail, node_free = _server_has(x, slot, file, offset, nbytes, op_sync, op_off,
                                             op_len, d, dq_head, dq_tail, cscan, now, w,
                                             node_free)
            if w.pending[slot] == 0:
                link_free = _send(x, now, nbytes, rate, link_free, wire)
                last_done, run, run_len = _replied(x, slot, link_free + half_rtt, issued_at,
                                                   done, keep_times, last_done, run, run_len,
                                                   hist, bounds, word, bits, runs)
                free_at[known & mask] = link_free + half_rtt
                known += 1
                free_slot[nfree] = slot
                nfree += 1
        else:
            now = disk_t
            disk_busy = False
            if disk_op != NO_LINK:  # a read done, not the throttle's hold
                disk_free_at = now
                dq_tail = _tcq_done(d, dq_tail)
            nready, node_free = _request_done(disk_op, d, w, node_free, ready_r, ready_slot)
            for i in range(nready):  # they reply, in that order
                r = ready_r[i]
                link_free = _send(r, now, nbytes, rate, link_free, wire)
                last_done, run, run_len = _replied(r, ready_slot[i], link_free + half_rtt,
                                                   issued_at, done, keep_times, last_done,
                                                   run, run_len, hist, bounds, word, bits, runs)
                free_at[known & mask] = link_free + half_rtt
                known += 1
                free_slot[nfree] = ready_slot[i]
                nfree += 1
        if not disk_busy:
            disk_busy, disk_t, disk_op, dq_head, dq_tail, head_addr, busy = _start_disk(
                d, dq_head, dq_tail, head_addr, cscan, extent_bytes, now, disk_free_at, busy)
    if run_len > 0:
        _count_run(run, run_len, hist, bounds, word, bits, runs)
    return busy, disk_free_at, DONE, last_done


@njit(nogil=True)  # cached on disk by the replay, keyed by sources (engine.cache_by_sources)
def simulate_exact(arrive, nbytes, rsize, file, offset, op_req, op_sync, op_off, op_len,
                   slots, half_rtt, rate, reply_s, cpu_s, nfsd, nfiles, cscan, extent_bytes, d,
                   issue, done, cl, op_ring):
    """Run every event in (time, sequence) order; fills ``issue`` and ``done`` (client times,
    s) and returns the disk's busy seconds, when it finished its last read and a status
    (DONE, or RING_FULL as :func:`simulate`'s). ``arrive``: per READ the earliest issue time
    (s), or empty (no think time); ``cl``: per-file processes of ``slots`` READs each
    (:class:`Clients`), or empty: one client with ``slots`` in all (disk reads in flight at
    most ``op_ring`` apart, a power of 2). Allocates the loop's state and runs
    :func:`_exact_loop`."""
    total = slots * cl.order.size if cl.order.size else slots  # READs outstanding at most
    ring = _ring_size(total)  # queues of at most that many events, indexed modulo a power of 2
    i64 = np.int64
    return _exact_loop(arrive, nbytes, rsize, file, offset, op_req, op_sync, op_off, op_len,
                       slots, half_rtt, rate, cpu_s, nfsd, cscan, extent_bytes, d, issue, done,
                       new_waits(op_req, nfiles, total, op_ring),
                       np.arange(total - 1, -1, -1, dtype=i64),
                       np.empty(total, i64), np.empty(total, i64), np.empty(ring, i64),
                       np.empty(ring, i64), np.empty(ring, i64), np.empty(ring, i64),
                       np.empty(ring), np.empty(ring, i64), np.empty(ring, i64),
                       np.empty(ring, i64), np.empty(ring), np.empty(ring, i64),
                       np.empty(ring, i64), np.empty(ring, i64), np.empty(ring, i64), cl,
                       _wire(reply_s))


@njit(nogil=True, _nrt=False)  # cached on disk by the replay, keyed by sources
def _exact_loop(arrive, nbytes, rsize, file, offset, op_req, op_sync, op_off, op_len, slots,
                half_rtt, rate, cpu_s, nfsd, cscan, extent_bytes, d, issue, done, w,
                free_slot, ready_r, ready_slot, arr_seq, arr_slot, nq, nq_slot, cpu_t,
                cpu_seq, cpu_r, cpu_slot, rv_t, rv_seq, rv_r, rv_slot, arr_r, cl, wire):
    """:func:`simulate_exact`'s loop over state allocated for it (without reference
    counting, as :func:`_short_loop`). ``free_slot``: every slot number, top first (as many
    as READs may be outstanding); ``ready_*``: that many entries; the others: rings of
    ``_ring_size`` of it. ``cl``: per-file processes, or empty (:class:`Clients`)."""
    n = nbytes.size
    think = arrive.size > 0
    per_file = cl.order.size > 0
    mask = _ring_mask(cpu_t)
    node_free = 0
    op_ptr = 0
    # slot numbers free for the next READs (a stack): a READ's is free once its reply arrives
    nfree = free_slot.size
    # ready_*: the READs a finished request lets reply, in order (at most one a slot)
    seq = np.int64(0)
    # client: READs [0, nxt) issued; the retry event
    nxt = 0
    free_slots = slots
    try_pending = True  # the first event: the client tries at time 0
    try_t = 0.0
    try_seq = seq
    seq += 1
    # network to the server: the READs issued so far, in issue order (ring arr_r, with their
    # sequence numbers and slots), [arr_head, issued) of them on their way
    arr_head = 0
    issued = 0
    # server: READs waiting for a thread (FIFO ring nq, nq_slot); CPU events sorted by time
    # (cpu_*)
    nq_head = 0
    nq_len = 0
    idle_threads = nfsd
    cpu_head = 0
    cpu_len = 0
    # the wire: replies in the order sent (ring rv_*)
    link_free = 0.0
    rv_head = 0
    rv_len = 0
    # disk
    dq_head = 0
    dq_tail = 0
    disk_busy = False
    disk_t = 0.0
    disk_seq = np.int64(0)
    disk_op = 0
    disk_free_at = 0.0
    head_addr = np.int64(0)
    busy = 0.0

    while True:
        # the next event: the least (time, sequence) of the queues' heads
        kind = EV_NONE
        now = 0.0
        best_seq = np.int64(0)
        if try_pending:
            kind = EV_TRY
            now = try_t
            best_seq = try_seq
        if arr_head < issued:
            t = issue[arr_r[arr_head & mask]] + half_rtt
            s = arr_seq[arr_head & mask]
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
            r = -1
            if kind == EV_TRY:
                try_pending = False
            else:
                r = rv_r[rv_head]
                done[r] = now
                free_slot[nfree] = rv_slot[rv_head]
                nfree += 1
                rv_head = (rv_head + 1) & mask
                rv_len -= 1
                free_slots += 1
            if per_file:
                if r < 0:  # the start: every process its first slots READs, by first READ
                    for f in cl.order:
                        issued, seq, nfree = _process_issues(
                            f, slots, cl, now, issue, arr_r, arr_seq, arr_slot, issued, seq,
                            free_slot, nfree, file, op_req, d, w)
                else:  # the process whose READ came back issues its next one
                    issued, seq, nfree = _process_issues(
                        file[r], 1, cl, now, issue, arr_r, arr_seq, arr_slot, issued, seq,
                        free_slot, nfree, file, op_req, d, w)
                continue
            # issue READs in trace order while a slot is free and their time has come
            while free_slots > 0 and nxt < n:
                if think and arrive[nxt] > now:
                    if not try_pending:
                        try_pending = True
                        try_t = arrive[nxt]
                        try_seq = seq
                        seq += 1
                    break
                issued, seq, nfree, op_ptr = _issue_read(nxt, now, issue, arr_r, arr_seq,
                                                         arr_slot, issued, seq, free_slot,
                                                         nfree, file, op_req, d,
                                                         op_ptr, w)
                if op_ptr == NO_LINK:
                    return busy, disk_free_at, RING_FULL
                free_slots -= 1
                nxt += 1
            continue

        if kind == EV_ARRIVE:
            nq[(nq_head + nq_len) & mask] = arr_r[arr_head & mask]
            nq_slot[(nq_head + nq_len) & mask] = arr_slot[arr_head & mask]
            nq_len += 1
            arr_head += 1
        elif kind == EV_CPU:
            x = cpu_r[cpu_head]
            slot = cpu_slot[cpu_head]
            cpu_head = (cpu_head + 1) & mask
            cpu_len -= 1
            dq_tail, node_free = _server_has(x, slot, file, offset, nbytes, op_sync, op_off,
                                             op_len, d, dq_head, dq_tail, cscan, now, w,
                                             node_free)
            if w.pending[slot] == 0:
                link_free = _send(x, now, nbytes, rate, link_free, wire)
                q = (rv_head + rv_len) & mask
                rv_t[q] = link_free + half_rtt
                rv_seq[q] = seq
                rv_r[q] = x
                rv_slot[q] = slot
                rv_len += 1
                seq += 1
                idle_threads += 1
        else:  # EV_DISK
            disk_busy = False
            if disk_op != NO_LINK:  # a read done, not the throttle's hold
                disk_free_at = now
                dq_tail = _tcq_done(d, dq_tail)
            nready, node_free = _request_done(disk_op, d, w, node_free, ready_r, ready_slot)
            for i in range(nready):  # they reply, in that order
                r = ready_r[i]
                link_free = _send(r, now, nbytes, rate, link_free, wire)
                q = (rv_head + rv_len) & mask
                rv_t[q] = link_free + half_rtt
                rv_seq[q] = seq
                rv_r[q] = r
                rv_slot[q] = ready_slot[i]
                rv_len += 1
                seq += 1
                idle_threads += 1
        # free threads take arrived READs in arrival order
        while idle_threads > 0 and nq_len > 0:
            r = nq[nq_head]
            slot = nq_slot[nq_head]
            nq_head = (nq_head + 1) & mask
            nq_len -= 1
            idle_threads -= 1
            _cpu_event(now + cpu_s * _rpcs(nbytes[r], rsize), seq, r, slot, cpu_t, cpu_seq,
                       cpu_r, cpu_slot, cpu_head, cpu_len)
            cpu_len += 1
            seq += 1
        # an idle disk starts the next read of its queue
        if not disk_busy and _disk_has_work(d, dq_head, dq_tail):
            j, service, dq_head, dq_tail, end = _serve_next(d, dq_head, dq_tail, head_addr,
                                                            cscan,
                                                       extent_bytes, now, now - disk_free_at)
            if j >= 0:
                busy += service
                head_addr = end
                disk_busy = True
                disk_t = now + service
                disk_seq = seq
                disk_op = j
                seq += 1
            elif service > 0.0:  # the throttle holds the next request that long
                disk_busy = True
                disk_t = now + service
                disk_seq = seq
                disk_op = NO_LINK
                seq += 1
    return busy, disk_free_at, DONE
