"""``seqheur.detect``: run a ReadStream through a table model and a detector.

Requests are processed in stream (server) order through one shared table, as the kernel does
(docs/heuristics.md). For every request the table picks the file's slot (fresh when newly
allocated or recycled, then the detector's ``reset`` runs), and the detector's ``update``
returns the request's seqcount. This is the inner loop the full replay builds on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import SeqheurError
from .heuristics.registry import DetectorSpec, parse_detector
from .streams import ReadStream
from .tables import TableModel, parse_table, steps_of
from . import engine as E


@dataclass(frozen=True)
class DetectResult:
    """Per-request ``seqcount`` (int16) and ``slot_fresh`` (bool), plus table counters.

    ``fresh``: requests whose slot was (re)allocated; ``ejections``: fresh slots taken from
    another file; ``cold``: fresh slots of files seen for the first time (a cold slot may still
    eject another file); ``fresh - cold`` are re-allocations of files that lost their slot.
    """

    detector: str
    table: str
    seqcount: np.ndarray
    slot_fresh: np.ndarray
    fresh: int
    ejections: int
    cold: int
    files: int

    def __len__(self) -> int:
        return len(self.seqcount)

    def summary(self) -> dict[str, Any]:
        n = len(self.seqcount)
        sc = self.seqcount
        return {
            "detector": self.detector,
            "table": self.table,
            "requests": n,
            "files": self.files,
            "fresh": self.fresh,
            "cold": self.cold,
            "table_ejections": self.ejections,
            "refetched": self.fresh - self.cold,
            "mean_seqcount": float(sc.mean()) if n else 0.0,
            "zero_seqcount": int((sc == 0).sum()),
            "max_seqcount": int(sc.max()) if n else 0,
        }


def make_state(spec: DetectorSpec, model: TableModel, file_ids: np.ndarray) -> tuple[tuple, np.ndarray, np.ndarray]:
    """(table state tuple, detector state array [n_slots, words], params int64 array)."""
    rows, words = model.n_slots(len(file_ids)), spec.state_words
    limit = int(os.environ.get("SEQHEUR_MAX_STATE_BYTES", 4 << 30))
    if rows * words * 8 > limit:
        raise SeqheurError(f"detector {spec.spec} on table {model.spec} needs {rows:,} slots x "
                           f"{words} words = {rows * words * 8 / 2**30:.1f} GiB of state "
                           f"(limit {limit / 2**30:.1f} GiB, $SEQHEUR_MAX_STATE_BYTES); use a "
                           f"bounded table such as nfsheur:1031x32")
    tab = model.make_state(np.asarray(file_ids, dtype=np.uint64))
    state = np.zeros((rows, words), dtype=np.int64)
    return tab, state, spec.param_array()


def detect(stream: ReadStream, detector: str | DetectorSpec = "freebsd4",
           table: str | TableModel = "nfsheur:64x4") -> DetectResult:
    """Seqcount of every request of ``stream`` under ``detector`` and ``table`` (spec strings
    or parsed specs), e.g. ``detect(s, "slowdown:window=64KiB", "ellard")``."""
    spec = parse_detector(detector)
    model = parse_table(table)
    n = len(stream)
    tab, state, params = make_state(spec, model, stream.file_ids)
    out = (np.empty(n, dtype=np.int16), np.empty(n, dtype=np.bool_))
    tcounts = E.new_table_counts(stream.n_files)
    if n:
        requests = _requests(stream, 0, n)
        _run_detect(spec.info, steps_of(model), requests, tab, state, params, out, tcounts)
    counts = tcounts.counts
    return DetectResult(spec.spec, model.spec, out[0], out[1], int(counts.fresh),
                        int(counts.ejections), int(counts.cold), stream.n_files)


@dataclass(frozen=True)
class TablePass:
    """What a table model does on a trace, without a detector: ``fresh_digest`` identifies
    the requests whose slot is fresh (a BLAKE2b digest of their indices), with the table
    counters of :class:`DetectResult`.

    A detector's state lives in one slot per file, reset exactly when the file's slot is
    fresh (a slot holds one file, and a file keeps its slot until it gets a fresh one), and
    every later step of a replay reads the table only through that state and the fresh flag.
    So two tables with the same fresh requests give every detector, policy, cache, disk and
    timing model the same replay, up to the table's own columns: its spec and ``ejections``
    (a table may eject a file that never returns, which no later request sees); ``fresh``
    and ``cold`` are equal by construction (``seqheur.sweep`` replays such tables once)."""

    table: str
    fresh_digest: str
    fresh: int
    ejections: int
    cold: int


def table_pass(stream: ReadStream, table: str | TableModel,
               chunk_rows: int = 1 << 22) -> TablePass:
    """Run ``stream`` through ``table`` alone (:class:`TablePass`), ``chunk_rows`` requests
    at a time (the fresh flags of one chunk in memory)."""
    import hashlib

    model = parse_table(table)
    spec = parse_detector("never")  # no state, no decision: only the table's work remains
    tab, state, params = make_state(spec, model, stream.file_ids)
    tcounts = E.new_table_counts(stream.n_files)
    run = detect_loop(spec.info, steps_of(model))
    digest = hashlib.blake2b(digest_size=16)
    n = len(stream)
    step = max(int(chunk_rows), 1)
    out = (np.empty(min(step, n), np.int16), np.empty(min(step, n), np.bool_))
    for lo in range(0, n, step):
        hi = min(lo + step, n)
        run(_requests(stream, lo, hi), 0, hi - lo, 0, tab, state, params, 0, out, True,
            tcounts)
        digest.update((np.flatnonzero(out[1][:hi - lo]) + lo).astype("<i8").tobytes())
    counts = tcounts.counts
    return TablePass(model.spec, digest.hexdigest(), int(counts.fresh), int(counts.ejections),
                     int(counts.cold))


def detect_loop(info: Any, table_steps: tuple[Any, Any], nrt: bool = False) -> Any:
    """The engine loop of ``detect``: the detector's ``reset`` and ``update`` on the table's
    steps, nothing served or admitted, seqcount and slot_fresh recorded. ``nrt=True`` keeps
    numba's reference counting (for plug-ins that allocate)."""
    prepare, lookup = table_steps
    reset, update = (info.reset, info.update) if nrt else (E.without_nrt(info.reset),
                                                            E.without_nrt(info.update))
    return E.loop(prepare, lookup, reset, update, E.serve_nothing, E.admit_all,
                  E.record_detect, nrt=nrt)


def _run_detect(info: Any, table_steps: tuple[Any, Any], requests: Any, tab: Any,
                state: np.ndarray, params: np.ndarray, out: tuple, tcounts: Any) -> None:
    """Run :func:`detect_loop`; a plug-in that cannot compile without numba's reference
    counting falls back to a loop compiled with it."""
    from numba.core.errors import NumbaError

    n = len(requests.file)
    try:
        detect_loop(info, table_steps)(requests, 0, n, 0, tab, state, params, 0, out, True,
                                       tcounts)
    except NumbaError:
        if info.builtin:
            raise
        detect_loop(info, table_steps, nrt=True)(requests, 0, n, 0, tab, state, params, 0, out,
                                                 True, tcounts)


def _requests(stream: ReadStream, lo: int, hi: int) -> Any:
    """Requests ``lo..hi-1`` of ``stream`` as the engine loop reads them."""
    return E.read_only_requests(_c(stream.file[lo:hi], np.int32),
                                _c(stream.offset[lo:hi], np.int64),
                                _c(stream.count[lo:hi], np.int32),
                                _c(stream.time_ns[lo:hi], np.int64))


def _c(a: np.ndarray, dtype: Any) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=dtype)


from ._callable import callable_module  # noqa: E402

callable_module(__name__, detect)
