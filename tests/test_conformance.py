"""One conformance suite over every registered detector × table model (built-ins and a test
plug-in): seqcount bounds, determinism, reset semantics, saturation on sequential reads, low
seqcount on random reads, per-file state isolation (docs/heuristics.md, "Writing a detector plug-in")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pytest
from numba import njit

import seqheur
from seqheur.heuristics.registry import parse_detector, registered_detectors
from seqheur.streams import ReadStream

K8 = 8192


@dataclass(frozen=True)
class RunParams:
    """Test plug-in: counts back-to-back requests, 0 after any gap."""

    limit: int = 127


@njit(cache=True, nogil=True)
def _run_reset(state, params, offset, count, time_ns):
    state[0] = offset
    state[1] = 0


@njit(cache=True, nogil=True)
def _run_update(state, params, offset, count, time_ns):
    if offset == state[0]:
        state[1] = min(state[1] + 1, params[0])
    else:
        state[1] = 0
    state[0] = offset + count
    return state[1]


@seqheur.detector("test_run", params=RunParams, state_words=2, replace=True,
                  max_seqcount=lambda p: p.limit)
class TestRun:
    """conformance-suite plug-in"""

    reset = _run_reset
    update = _run_update


@pytest.fixture(scope="module", autouse=True)
def _plugin() -> Iterator[None]:
    yield
    seqheur.unregister_detector("test_run")


DETECTORS = sorted(registered_detectors())
TABLES = ["nfsheur:64x4", "nfsheur:64x4:hash=dense", "ellard", "freebsd", "nfsheur:4x2",
          "raparms", "raparms:threads=1", "ideal"]


def _mixed(seed: int, n: int = 3000, files: int = 40) -> ReadStream:
    """Interleaved sequential readers, some reordering, some random reads."""
    rng = np.random.default_rng(seed)
    f = rng.integers(0, files, n)
    pos = np.zeros(files, np.int64)
    off = np.empty(n, np.int64)
    for i in range(n):
        if rng.random() < 0.15:
            off[i] = int(rng.integers(0, 1 << 16)) * K8
        else:
            off[i] = pos[f[i]]
            pos[f[i]] += K8
    swap = np.flatnonzero(rng.random(n - 1) < 0.05)
    off[swap], off[swap + 1] = off[swap + 1].copy(), off[swap].copy()
    cnt = rng.choice([K8, K8, 32768, 4096, 0], n)
    t = np.cumsum(rng.integers(1, 5_000_000, n))  # a few seconds: zfetch reaping happens
    return ReadStream.from_arrays(f * 7919 + 3, off, cnt, time_ns=t)


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("det", DETECTORS)
def test_bounds_determinism_and_fresh_slots(det: str, table: str) -> None:
    s = _mixed(1)
    a = seqheur.detect(s, det, table)
    b = seqheur.detect(s, det, table)
    assert a.seqcount.dtype == np.int16 and a.slot_fresh.dtype == np.bool_
    assert len(a) == len(s)
    assert a.seqcount.min() >= 0
    assert a.seqcount.max() <= parse_detector(det).max_seqcount <= 127
    np.testing.assert_array_equal(a.seqcount, b.seqcount)
    np.testing.assert_array_equal(a.slot_fresh, b.slot_fresh)
    # every file's first request finds a fresh slot; counters agree with the flags
    _, first = np.unique(s.file, return_index=True)
    assert a.slot_fresh[first].all()
    assert a.fresh == int(a.slot_fresh.sum()) >= a.cold == s.n_files
    assert a.ejections <= a.fresh
    if table == "ideal":
        assert a.fresh == a.cold and a.ejections == 0


@pytest.mark.parametrize("det", DETECTORS)
def test_reset_semantics(det: str) -> None:
    """A fresh slot behaves as a brand-new detector: after an ejection the file's seqcount
    equals that of a stream starting at the re-allocating request."""
    # 1 slot, 1 probe: every change of file ejects the other
    offs = [0, K8, 2 * K8, 50 * K8, 3 * K8, 4 * K8]
    files = [1, 1, 1, 2, 1, 1]
    r = seqheur.detect(ReadStream.from_arrays(files, offs, K8), det, "nfsheur:1x1")
    assert list(r.slot_fresh) == [True, False, False, True, True, False]
    assert r.ejections == 2
    tail = seqheur.detect(ReadStream.from_arrays([1, 1], offs[4:], K8), det, "ideal")
    assert list(r.seqcount[4:]) == list(tail.seqcount)


@pytest.mark.parametrize("det", DETECTORS)
def test_pure_sequential_saturates(det: str) -> None:
    spec = parse_detector(det)
    rec = 1 << 17  # one ZFS record per read so every detector ramps
    n = 300
    s = ReadStream.from_arrays(np.zeros(n, int), np.arange(n) * rec, rec)
    r = seqheur.detect(s, spec, "ideal")
    assert int(r.seqcount[-1]) == spec.max_seqcount
    assert (np.diff(r.seqcount.astype(int)) >= 0).all()  # never falls on a clean stream


@pytest.mark.parametrize("det", [d for d in DETECTORS if d != "always"])
def test_purely_random_stays_low(det: str) -> None:
    rng = np.random.default_rng(5)
    n = 2000
    s = ReadStream.from_arrays(np.zeros(n, int), rng.integers(0, 1 << 20, n) * K8, K8)
    r = seqheur.detect(s, det, "ideal")
    # a fresh entry (or cursor) gives 1 + 1 = 2 on its first request; random reads keep at
    # most that, far below saturation
    assert float(r.seqcount.mean()) <= 2.0
    assert np.percentile(r.seqcount, 99) <= 5


def test_always_is_high_on_random() -> None:
    rng = np.random.default_rng(5)
    s = ReadStream.from_arrays(np.zeros(100, int), rng.integers(0, 1 << 20, 100) * K8, K8)
    assert (seqheur.detect(s, "always", "ideal").seqcount == 127).all()


@pytest.mark.parametrize("det", DETECTORS)
def test_state_isolated_per_file(det: str) -> None:
    """With the ideal table a file's seqcounts do not depend on other files' requests."""
    s = _mixed(2, n=1500, files=6)
    whole = seqheur.detect(s, det, "ideal")
    for f in range(s.n_files):
        m = s.file == f
        alone = ReadStream(s.time_ns[m], np.zeros(int(m.sum()), np.int32), s.offset[m],
                           s.count[m], s.file_ids[f:f + 1])
        np.testing.assert_array_equal(seqheur.detect(alone, det, "ideal").seqcount,
                                      whole.seqcount[m])


def test_empty_stream() -> None:
    s = ReadStream.from_arrays([], [], 0)
    for det in DETECTORS:
        r = seqheur.detect(s, det, "nfsheur:64x4")
        assert len(r) == 0 and r.fresh == 0 and r.summary()["requests"] == 0


# --------------------------------------------------------------------------------------------
# timing models (seqheur.timing): every registered model and preset, under every detector

def _timing_specs() -> list[str]:
    from seqheur.timing import registered_timings

    out = []
    for row in registered_timings():
        out.append(row["name"])
        out += [f"{row['name']}:preset={p}" for p in row["presets"]]
    return out


TIMING_SPECS = _timing_specs()


@pytest.mark.parametrize("timing", TIMING_SPECS)
@pytest.mark.parametrize("det", DETECTORS)
def test_timing_model_determinism_and_conservation(det: str, timing: str) -> None:
    """A timing model only adds its columns (the disk-only summary is unchanged), is
    deterministic, conserves bytes (the client receives the READs' bytes, the disk reads the
    replay's) and gives a utilisation in [0, 1]; an empty stream gives zero time."""
    import seqheur.metrics as M

    s = _mixed(3, n=1500, files=12)
    run = [seqheur.replay(s, det, "freebsd4", profile="ide-7200", file_sizes="observed",
                          per_request=False, timing=t) for t in (None, timing, timing)]
    base, a, b = (r.to_dict() for r in run)
    assert {k: a[k] for k in M.SUMMARY_KEYS} == base and a == b
    if run[1].timing is None:
        assert a == base
        return
    assert tuple(a) == M.SUMMARY_KEYS + M.TIMING_KEYS
    np.testing.assert_array_equal(run[1].timing.done_s, run[2].timing.done_s)
    assert run[1].timing.client_bytes == a["demand_bytes"]
    assert run[1].timing.disk_bytes == a["disk_bytes"]
    assert a["e2e_seconds"] > 0 and 0 < a["disk_utilisation"] <= 1 + 1e-9
    empty = seqheur.replay(ReadStream.from_arrays([], [], 0), det, "freebsd4",
                           profile="ide-7200", file_sizes="observed", timing=timing)
    assert empty["e2e_seconds"] == 0 and empty["read_latency_p50_ms"] is None
