"""Check the disk-time model against a real device: same request stream, measured vs predicted.

``check_model(target, profile)`` reads a synthetic stream from ``target`` (strictly read-only,
O_DIRECT, through :func:`seqheur.disk.bench.open_target` and
:func:`~seqheur.disk.bench.timed_reads`, the bench's own native read loop), records every
request's response time, replays the same requests (same offsets, sizes and order, queue depth
1, back to back) through :class:`~seqheur.disk.model.DiskModel` of ``profile``, and compares
the two response-time distributions with :func:`demerit`.

The demerit figure is Ruemmler & Wilkes' ("An Introduction to Disk Drive Modeling", IEEE
Computer 1994), also DiskSim's validation measure: the root-mean-square horizontal distance
between the measured and the predicted response-time CDFs. With equally many samples that is
the RMS of the differences of the two sorted samples. It compares distributions, not requests:
a model that swaps the times of two requests is not penalised, one that gets the spread wrong
is. The total-time ratio is reported beside it because a small demerit can hide a constant
bias on a stream dominated by one kind of request.

The stream (:func:`make_stream`) is deterministic from its seed: segments of sequential runs,
random reads, short seeks and long seeks, of several request sizes, over the whole span of the
target. Each segment has one request size so that it runs as one call of the native loop (no
Python between its reads); between segments Python runs for some microseconds, which the
result reports as ``host_gap_mean_us``. As in the bench, a discarded warm-up run of a stream
with another seed comes first (it wakes the device and loads the compiled loop), and it reads
other blocks, so the measured reads stay first touches, as the profile's random reads were.
"""

from __future__ import annotations

import datetime as _dt
import os
import socket
import time
import warnings
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np

from .. import __version__
from ..errors import ProfileError, SpecError
from .bench import KiB, MiB, BenchError, Target, _listed_offsets, open_target, timed_reads
from .model import DiskModel
from .profile import DiskProfile, HostThrottle

DEFAULT_OPS = 60_000
DEFAULT_SECONDS = 20.0
DEFAULT_SEED = 1
# share of the requests per component, and the sizes each draws from
MIX: dict[str, float] = {"sequential": 0.4, "random": 0.3, "short_seek": 0.15,
                         "long_seek": 0.15}
SIZES: dict[str, tuple[int, ...]] = {
    "sequential": (16 * KiB, 64 * KiB, 256 * KiB, 1 * MiB),
    "random": (4 * KiB, 16 * KiB, 64 * KiB),
    "short_seek": (4 * KiB, 16 * KiB, 64 * KiB),
    "long_seek": (4 * KiB, 16 * KiB, 64 * KiB),
}
SHORT_SEEK_MAX = 1 * MiB      # short seeks: at most this far from where the last read ended
RUN_LENGTH = (8, 64)          # reads per sequential run
BURST = (4, 16)               # reads per segment of the other components
WARMUP_SECONDS = 1.0
# the project's acceptance rule for a profile (docs/disk-bench.md)
TARGET_DEMERIT_PERCENT = 15.0
TARGET_TOTAL_RATIO = (0.9, 1.1)


# ---------------------------------------------------------------------------------------------
# the demerit figure
# ---------------------------------------------------------------------------------------------
def _q(x: np.ndarray, p: float) -> float:
    return float(np.percentile(x, p))


def _sorted_pair(measured_ms: Sequence[float] | np.ndarray,
                 predicted_ms: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both samples sorted as float64, checked equal in size, non-empty and finite."""
    m = np.sort(np.asarray(measured_ms, dtype=np.float64).ravel())
    p = np.sort(np.asarray(predicted_ms, dtype=np.float64).ravel())
    if m.size != p.size:
        raise ValueError(f"the samples differ in size ({m.size} measured, {p.size} predicted)")
    if m.size == 0:
        raise ValueError("the samples are empty")
    if not (np.isfinite(m).all() and np.isfinite(p).all()):
        raise ValueError("the samples hold a non-finite time")
    return m, p


def demerit(measured_ms: Sequence[float] | np.ndarray,
            predicted_ms: Sequence[float] | np.ndarray) -> dict[str, Any]:
    """Compare two response-time samples of equal size (milliseconds).

    ``demerit`` (ms) is the RMS of the differences of the sorted samples: the RMS horizontal
    distance between the two CDFs at equal quantiles (Ruemmler & Wilkes 1994). It is zero for
    identical samples, symmetric, blind to the order of either sample, ``|c|`` when one sample
    is the other shifted by ``c`` and scales with the samples. ``demerit_percent`` is it as a
    share of the measured mean; ``total_time_ratio`` is predicted total / measured total (None
    where the measured figure is 0)."""
    m, p = _sorted_pair(measured_ms, predicted_ms)
    d = float(np.sqrt(np.mean((m - p) ** 2)))
    m_mean, p_mean = float(m.mean()), float(p.mean())
    m_tot, p_tot = float(m.sum()), float(p.sum())
    out: dict[str, Any] = {
        "ops": int(m.size),
        "demerit": d,
        "demerit_percent": 100.0 * d / m_mean if m_mean > 0 else None,
        "total_time_ratio": p_tot / m_tot if m_tot > 0 else None,
        "measured_mean_ms": m_mean,
        "predicted_mean_ms": p_mean,
    }
    for pct in (50, 95, 99):
        out[f"measured_p{pct}_ms"] = _q(m, pct)
        out[f"predicted_p{pct}_ms"] = _q(p, pct)
    return out


TAIL_FRACTIONS = (0.01, 0.001)  # the top quantiles whose share of the demerit is reported


def tail(measured_ms: Sequence[float] | np.ndarray,
         predicted_ms: Sequence[float] | np.ndarray) -> dict[str, Any]:
    """Where a demerit comes from: the share of its squared distance owed to the top 1 % and
    0.1 % of quantiles (by measured rank, at least one pair each), and the demerit of the
    rest, below the top 0.1 %, as a share of that rest's measured mean.

    On a virtual disk a few host stalls (tens to hundreds of ms among reads of 0.1 ms) can
    hold nearly all of the squared distance; these figures tell such a run from a model whose
    spread is wrong throughout. They diagnose; the target is judged on :func:`demerit` alone.
    """
    m, p = _sorted_pair(measured_ms, predicted_ms)
    sq = (m - p) ** 2
    total = float(sq.sum())
    out: dict[str, Any] = {}
    for frac in TAIL_FRACTIONS:
        k = int(np.ceil(m.size * frac))
        out[f"share_top_{frac * 100:g}_percent"] = float(sq[-k:].sum()) / total if total else 0.0
    rest = m.size - int(np.ceil(m.size * TAIL_FRACTIONS[-1]))
    if rest:
        body_mean = float(m[:rest].mean())
        body = float(np.sqrt(sq[:rest].mean()))
        out["demerit_percent_below_top_0.1_percent"] = (100.0 * body / body_mean
                                                        if body_mean > 0 else None)
    else:
        out["demerit_percent_below_top_0.1_percent"] = None
    return out


def meets_target(fig: dict[str, Any]) -> bool:
    """The project's acceptance rule: demerit <= 15 % of the measured mean response time and
    total predicted time within +-10 % of the measured one."""
    pct, ratio = fig.get("demerit_percent"), fig.get("total_time_ratio")
    return (pct is not None and ratio is not None and pct <= TARGET_DEMERIT_PERCENT
            and TARGET_TOTAL_RATIO[0] <= ratio <= TARGET_TOTAL_RATIO[1])


# ---------------------------------------------------------------------------------------------
# the stream
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Stream:
    """Requests in issue order; ``segments[i] = (first, end)`` index ranges of one size."""

    offset: np.ndarray      # int64 bytes
    length: np.ndarray      # int64 bytes
    component: np.ndarray   # int8 index into COMPONENTS
    segments: tuple[tuple[int, int], ...]

    @property
    def ops(self) -> int:
        return int(self.offset.size)

    def head(self, n: int) -> "Stream":
        """The first ``n`` requests (a run cut short by its time budget)."""
        segs = tuple((a, min(b, n)) for a, b in self.segments if a < n)
        return Stream(self.offset[:n], self.length[:n], self.component[:n], segs)


COMPONENTS = tuple(MIX)


def make_stream(span: int, align: int, ops: int, seed: int) -> Stream:
    """``ops`` requests over ``[0, span)`` drawn from ``seed`` (same arguments, same stream).

    Offsets and sizes are multiples of ``align``; sizes a target cannot hold four times over
    are left out, as the bench does."""
    if ops < 1:
        raise ValueError(f"ops must be >= 1, not {ops}")
    span = span // align * align
    sizes = {c: tuple(s for s in ss if s % align == 0 and s * 4 <= span)
             for c, ss in SIZES.items()}
    if not any(sizes.values()):
        raise BenchError(f"the target is too small ({span} bytes) for request sizes "
                         f"{sorted({s for ss in SIZES.values() for s in ss})} at alignment "
                         f"{align}")
    comps = [c for c in COMPONENTS if sizes[c]]
    # a component is picked per segment; dividing by its mean segment length makes MIX the
    # share of requests rather than of segments
    seg_len = {c: sum(RUN_LENGTH if c == "sequential" else BURST) / 2 for c in comps}
    weights = np.array([MIX[c] / seg_len[c] for c in comps])
    weights = weights / weights.sum()
    rng = np.random.default_rng(seed)
    off: list[np.ndarray] = []
    ln: list[np.ndarray] = []
    comp: list[np.ndarray] = []
    segs: list[tuple[int, int]] = []
    n = 0
    last_end = 0  # where the previous read ended: short and long seeks are measured from it
    while n < ops:
        c = comps[int(rng.choice(len(comps), p=weights))]
        bs = int(rng.choice(sizes[c]))
        slots = (span - bs) // align + 1  # aligned start positions for a read of bs bytes
        if c == "sequential":
            k = int(rng.integers(RUN_LENGTH[0], RUN_LENGTH[1] + 1))
            k = min(k, span // bs, ops - n)
            first = int(rng.integers(0, (span - k * bs) // align + 1)) * align
            o = first + bs * np.arange(k, dtype=np.int64)
        else:
            k = min(int(rng.integers(BURST[0], BURST[1] + 1)), ops - n)
            o = np.empty(k, dtype=np.int64)
            if c == "random":
                o[:] = rng.integers(0, slots, k) * align
            else:
                for j in range(k):
                    if c == "short_seek":
                        d = int(rng.integers(1, SHORT_SEEK_MAX // align + 1)) * align
                    else:  # a quarter to three quarters of the span away
                        d = int(rng.integers(span // 4 // align, 3 * span // 4 // align + 1)) \
                            * align
                    sign = 1 if rng.random() < 0.5 else -1
                    pos = last_end + sign * d
                    if not 0 <= pos <= span - bs:
                        pos = last_end - sign * d
                    if c == "long_seek":
                        pos %= span - bs + align
                    pos = min(max(pos, 0), span - bs) // align * align
                    o[j] = pos
                    last_end = pos + bs
        last_end = int(o[-1]) + bs
        off.append(o)
        ln.append(np.full(k, bs, dtype=np.int64))
        comp.append(np.full(k, COMPONENTS.index(c), dtype=np.int8))
        segs.append((n, n + k))
        n += k
    return Stream(np.concatenate(off), np.concatenate(ln), np.concatenate(comp), tuple(segs))


def describe_stream(stream: Stream, span: int, seed: int) -> dict[str, Any]:
    """What the stream holds: per component the requests and sizes (for the report)."""
    comps = {}
    for i, c in enumerate(COMPONENTS):
        sel = stream.component == i
        if sel.any():
            sz, cnt = np.unique(stream.length[sel], return_counts=True)
            comps[c] = {"ops": int(sel.sum()), "sizes": {str(int(s)): int(k)
                                                         for s, k in zip(sz, cnt)}}
    return {"seed": seed, "ops": stream.ops, "segments": len(stream.segments),
            "span_bytes": span, "bytes": int(stream.length.sum()), "mix": dict(MIX),
            "components": comps, "run_length": list(RUN_LENGTH), "burst": list(BURST),
            "short_seek_max_bytes": SHORT_SEEK_MAX,
            "long_seek": "a quarter to three quarters of the span from the last read",
            "queue_depth": 1, "issue": "back to back"}


# ---------------------------------------------------------------------------------------------
# measuring and predicting
# ---------------------------------------------------------------------------------------------
def _measure(t: Target, stream: Stream, seconds: float) -> tuple[np.ndarray, float]:
    """Read the stream segment by segment with the bench's native loop until it ends or
    ``seconds`` pass; (latency ns of the prefix read, wall seconds)."""
    lats: list[np.ndarray] = []
    w0 = time.perf_counter()
    end = w0 + seconds
    for a, b in stream.segments:
        left = end - time.perf_counter()
        if left <= 0:
            break
        bs = int(stream.length[a])
        run = timed_reads(t, bs, _listed_offsets(stream.offset[a:b].tolist()), seconds=left)
        if run.short_reads:  # offsets end inside the span: a short read is the target's fault
            raise BenchError(f"{t.path}: {run.short_reads} short read(s) of {bs} bytes inside "
                             f"its {t.size}-byte span")
        lats.append(run.lat_ns)
        if run.ios < b - a:  # the deadline passed inside this segment
            break
    wall = time.perf_counter() - w0
    return (np.concatenate(lats) if lats else np.empty(0, dtype=np.int64)), wall


def resolve_model(profile: "str | os.PathLike[str] | DiskProfile") -> DiskModel:
    """The drive model of a registered profile name or spec, a profile JSON file or a
    :class:`DiskProfile`; an unknown one is a clear error listing the registered profiles."""
    if isinstance(profile, DiskProfile):
        return DiskModel(profile)
    text = os.fspath(profile)
    if os.path.exists(text):
        return DiskModel.from_profile(text)
    from .registry import DISKS, parse_disk

    try:
        return parse_disk(text).model()
    except SpecError as exc:
        if os.sep in text or text.endswith(".json"):
            raise ProfileError(f"{text}: no such profile file (registered disk profiles: "
                               f"{', '.join(DISKS.names())})") from None
        raise SpecError(f"--profile {text}: {exc}") from None


def _device(t: Target) -> dict[str, Any]:
    """The device facts the bench records in a profile, plus how much of a file is allocated
    (holes are read without touching the disk)."""
    dev: dict[str, Any] = {"path": t.path, "kind": t.kind, "size_bytes": t.size,
                           "alignment": t.align, **t.meta}
    try:
        dev["rotational"] = bool(int(t.meta.get("rotational", "")))
    except ValueError:
        dev["rotational"] = None
    if t.kind == "file":
        st = os.fstat(t.fd)
        dev["allocated_bytes"] = int(st.st_blocks) * 512
        if dev["allocated_bytes"] < 0.9 * t.size:
            warnings.warn(f"{t.path} is sparse ({dev['allocated_bytes']} of {t.size} bytes "
                          "allocated): reads of its holes never reach the disk; fill it with "
                          "random bytes first", stacklevel=3)
    return dev


def _by(keys: np.ndarray, names: dict[int, str], meas: np.ndarray,
        pred: np.ndarray) -> dict[str, dict[str, Any]]:
    return {names[int(k)]: demerit(meas[keys == k], pred[keys == k]) for k in np.unique(keys)}


def check_model(target: "str | os.PathLike[str]",
                profile: "str | os.PathLike[str] | DiskProfile", *, ops: int = DEFAULT_OPS,
                seed: int = DEFAULT_SEED,
                seconds: float = DEFAULT_SECONDS, warmup_seconds: float = WARMUP_SECONDS,
                repeat: bool = False, progress: Any = None,
                throttle: "HostThrottle | None" = None) -> dict[str, Any]:
    """Measure a synthetic stream on ``target`` (read-only, O_DIRECT, QD1) and compare it with
    the drive model of ``profile``: one JSON-ready dict (see the module docstring and
    docs/disk-bench.md, "Checking the drive model"). ``ops`` requests at most, cut short
    after ``seconds`` of measuring (``ops`` then says how many were read).

    ``repeat``: read the same requests a second time and add ``noise_floor``, the figures of
    the second pass against the first: what the device's own run-to-run variation leaves to
    any model, the floor under the demerit a model can reach.

    ``throttle``: the blk-throttle limit the caller has put on this process's reads of
    ``target`` (``seqheur bench check-model --throttle``); the model runs the profile with it
    in front (:class:`~seqheur.disk.profile.HostThrottle`)."""
    if seconds <= 0:
        raise ValueError(f"seconds must be > 0, not {seconds}")
    say = progress or (lambda s: None)
    model = resolve_model(profile)  # a bad profile fails before any read
    if throttle is not None:
        model = model.with_throttle(throttle)
    t_start = time.time()
    with open_target(target) as t:
        span = t.size // t.align * t.align
        stream = make_stream(span, t.align, ops, seed)
        device = _device(t)
        warm_lat = np.empty(0, dtype=np.int64)
        warm = make_stream(span, t.align, max(1, min(ops, 2000)), seed + 1)
        if warmup_seconds > 0:
            say("warm-up (discarded)")
            warm_lat, _ = _measure(t, warm, warmup_seconds)
        say(f"measuring {stream.ops} requests (at most {seconds:g} s)")
        lat, wall = _measure(t, stream, seconds)
        again = np.empty(0, dtype=np.int64)
        if repeat and lat.size:
            say("measuring the same requests again (noise floor)")
            again, _ = _measure(t, stream.head(int(lat.size)), seconds)
    if lat.size == 0:
        raise BenchError(f"{target}: no request completed within {seconds:g} s")
    done = stream.head(int(lat.size))
    # the model sees the warm-up too, so its drive state (head, segments) is the device's
    place = model.place(np.array([span], dtype=np.int64))
    state = model.new_state()
    w = warm.head(int(warm_lat.size))
    if w.ops:
        model.service(np.zeros(w.ops, np.int64), w.offset, w.length, place, state)
    res = model.service(np.zeros(done.ops, np.int64), done.offset, done.length, place, state)
    meas_ms = lat / 1e6
    pred_ms = res.seconds * 1e3
    fig = demerit(meas_ms, pred_ms)
    prof = model.profile
    out: dict[str, Any] = {
        "target": str(target),
        "profile": model.spec,
        "profile_kind": prof.kind,
        "profile_description": prof.description,
        "throttle": asdict(prof.throttle) if prof.throttle.enabled else None,
        **fig,
        "measured_total_s": float(meas_ms.sum() / 1e3),
        "predicted_total_s": float(res.total_seconds),
        "predicted_positionings": res.positionings,
        "predicted_cache_hits": res.hits,
        "host_gap_mean_us": max(0.0, (wall - float(lat.sum()) / 1e9) / lat.size * 1e6),
        "meets_target": meets_target(fig),
        "tail": tail(meas_ms, pred_ms),
        "target_rule": {"demerit_percent_max": TARGET_DEMERIT_PERCENT,
                        "total_time_ratio": list(TARGET_TOTAL_RATIO)},
        "components": _by(done.component.astype(np.int64), dict(enumerate(COMPONENTS)),
                          meas_ms, pred_ms),
        "sizes": _by(done.length, {int(s): str(int(s)) for s in np.unique(done.length)},
                     meas_ms, pred_ms),
        "stream": {**describe_stream(done, span, seed), "ops_planned": stream.ops,
                   "cut_by_time": done.ops < stream.ops, "time_budget_s": seconds,
                   "warmup_ops": w.ops, "warmup_seed": seed + 1},
        "device": device,
        "span_exceeds_profile_capacity": span > prof.capacity_bytes,
        "when": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "where": socket.gethostname(),
        "tool": f"seqheur bench check-model {__version__}",
        "o_direct": True,
        "elapsed_s": round(time.time() - t_start, 2),
    }
    if again.size:
        n = int(again.size)  # the second pass may be cut by the time budget sooner
        out["noise_floor"] = {**demerit(meas_ms[:n], again[:n] / 1e6),
                              "tail": tail(meas_ms[:n], again[:n] / 1e6),
                              "what": "second pass of the same requests against the first "
                                      "(predicted_* = the second pass)"}
    return out
