"""check-model: the demerit figure's laws, the seeded stream, a small read-only run, the CLI.

Never asserts absolute timings: a measured run is checked for structure and counts only.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seqheur.disk import bench, check
from seqheur.disk.bench import BenchError, open_target
from seqheur.disk.check import check_model, demerit, make_stream
from seqheur.disk.model import DiskModel

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
MiB = 1 << 20

# response times in ms: non-negative, finite, no subnormals (their products underflow)
times = st.floats(min_value=0.0, max_value=1e4, allow_nan=False, allow_infinity=False,
                  allow_subnormal=False)
samples = st.lists(times, min_size=1, max_size=60)
pairs = st.integers(1, 60).flatmap(
    lambda n: st.tuples(st.lists(times, min_size=n, max_size=n),
                        st.lists(times, min_size=n, max_size=n)))


def _d(a, b) -> float:
    return demerit(a, b)["demerit"]


@given(samples)
def test_demerit_is_zero_for_identical_samples(x):
    assert _d(x, x) == pytest.approx(0.0, abs=1e-12)


@given(pairs)
def test_demerit_is_symmetric(ab):
    a, b = ab
    assert _d(a, b) == pytest.approx(_d(b, a), rel=1e-12, abs=1e-12)


@given(pairs, st.randoms(use_true_random=False))
def test_demerit_ignores_the_order_of_either_sample(ab, rnd):
    a, b = ab
    pa, pb = list(a), list(b)
    rnd.shuffle(pa)
    rnd.shuffle(pb)
    assert _d(pa, pb) == pytest.approx(_d(a, b), rel=1e-12, abs=1e-12)


@given(samples, st.floats(-100.0, 100.0, allow_subnormal=False))
def test_demerit_of_a_constant_shift_is_the_shift(x, c):
    shifted = [v + c for v in x]
    assert _d(x, shifted) == pytest.approx(abs(c), rel=1e-9, abs=1e-9)


@given(pairs, st.floats(1e-3, 1e3))
def test_demerit_scales_linearly(ab, k):
    a, b = ab
    scaled = _d([k * v for v in a], [k * v for v in b])
    assert scaled == pytest.approx(k * _d(a, b), rel=1e-9, abs=1e-9)


@settings(max_examples=50)
@given(pairs)
def test_demerit_figures_agree_with_their_definitions(ab):
    a, b = ab
    f = demerit(a, b)
    assert f["ops"] == len(a)
    assert f["measured_mean_ms"] == pytest.approx(float(np.mean(a)), rel=1e-9, abs=1e-9)
    assert f["predicted_mean_ms"] == pytest.approx(float(np.mean(b)), rel=1e-9, abs=1e-9)
    if sum(a) > 0:
        assert f["total_time_ratio"] == pytest.approx(sum(b) / sum(a), rel=1e-9)
        assert f["demerit_percent"] == pytest.approx(100 * f["demerit"] / np.mean(a), rel=1e-9)
    else:
        assert f["total_time_ratio"] is None and f["demerit_percent"] is None
    for s in ("measured", "predicted"):
        assert f[f"{s}_p50_ms"] <= f[f"{s}_p95_ms"] <= f[f"{s}_p99_ms"]


def test_demerit_worked_example_and_refusals():
    # sorted: (1, 2, 3) vs (1, 2, 7): differences 0, 0, 4 -> sqrt(16 / 3)
    f = demerit([3, 1, 2], [7, 2, 1])
    assert f["demerit"] == pytest.approx(math.sqrt(16 / 3))
    assert f["demerit_percent"] == pytest.approx(100 * math.sqrt(16 / 3) / 2)
    assert f["total_time_ratio"] == pytest.approx(10 / 6)
    with pytest.raises(ValueError, match="differ in size"):
        demerit([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="empty"):
        demerit([], [])
    with pytest.raises(ValueError, match="non-finite"):
        demerit([1.0], [float("nan")])


@settings(max_examples=50)
@given(pairs, st.randoms(use_true_random=False))
def test_tail_shares_are_ordered_fractions_blind_to_order(ab, rnd):
    a, b = ab
    t = check.tail(a, b)
    assert 0.0 <= t["share_top_0.1_percent"] <= t["share_top_1_percent"] <= 1.0 + 1e-12
    pa, pb = list(a), list(b)
    rnd.shuffle(pa)
    rnd.shuffle(pb)
    assert check.tail(pa, pb) == t


@given(st.lists(st.floats(0.0, 100.0, allow_subnormal=False), min_size=2, max_size=3000),
       st.floats(0.5, 100.0))
def test_tail_of_a_constant_shift_is_spread_evenly(x, c):
    # every quantile is c apart: the top k of n quantiles hold k / n of the squared distance,
    # and the rest's demerit is c
    t = check.tail(x, [v + c for v in x])
    n = len(x)
    assert t["share_top_1_percent"] == pytest.approx(math.ceil(n * 0.01) / n, rel=1e-6)
    assert t["share_top_0.1_percent"] == pytest.approx(math.ceil(n * 0.001) / n, rel=1e-6)
    rest = sorted(x)[: n - math.ceil(n * 0.001)]
    if np.mean(rest) > 0:
        assert t["demerit_percent_below_top_0.1_percent"] == pytest.approx(
            100 * c / np.mean(rest), rel=1e-6)


def test_tail_worked_example():
    # 1,000 equal reads against the same with one 100 ms stall: the stall is the whole demerit
    base = [0.1] * 1000
    stalled = [0.1] * 999 + [100.0]
    assert demerit(base, stalled)["demerit_percent"] > 1000
    t = check.tail(base, stalled)
    assert t["share_top_1_percent"] == t["share_top_0.1_percent"] == 1.0
    assert t["demerit_percent_below_top_0.1_percent"] == 0.0
    assert check.tail(base, base)["share_top_1_percent"] == 0.0
    with pytest.raises(ValueError, match="differ in size"):
        check.tail([1.0], [1.0, 2.0])


def test_meets_target():
    assert check.meets_target({"demerit_percent": 15.0, "total_time_ratio": 1.1})
    assert not check.meets_target({"demerit_percent": 15.1, "total_time_ratio": 1.0})
    assert not check.meets_target({"demerit_percent": 5.0, "total_time_ratio": 0.89})
    assert not check.meets_target({"demerit_percent": None, "total_time_ratio": 1.0})


# -- the stream --------------------------------------------------------------------------------
def test_stream_is_deterministic_from_its_seed_and_well_formed():
    span, align = 256 * MiB, 4096
    a, b = make_stream(span, align, 3000, 7), make_stream(span, align, 3000, 7)
    for name in ("offset", "length", "component"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
    assert a.segments == b.segments
    c = make_stream(span, align, 3000, 8)
    assert not np.array_equal(a.offset, c.offset)
    assert a.ops == 3000 and a.segments[0][0] == 0 and a.segments[-1][1] == 3000
    assert all(p[1] == q[0] for p, q in zip(a.segments, a.segments[1:]))
    assert all(len(set(a.length[i:j].tolist())) == 1 for i, j in a.segments)
    assert (a.offset % align == 0).all() and (a.length % align == 0).all()
    assert a.offset.min() >= 0 and (a.offset + a.length).max() <= span
    # it covers the span, and every component and several sizes are there
    assert a.offset.min() < span // 8 and a.offset.max() > span - span // 8
    assert set(a.component.tolist()) == set(range(len(check.COMPONENTS)))
    assert len(set(a.length.tolist())) >= 4
    # the mix is a share of requests (loosely: segments are drawn at random)
    share = np.bincount(a.component, minlength=len(check.COMPONENTS)) / a.ops
    for i, name in enumerate(check.COMPONENTS):
        assert abs(share[i] - check.MIX[name]) < 0.12, (name, share[i])
    # short seeks land near where the previous read ended, long seeks far from it
    ends = a.offset + a.length
    for name, near in (("short_seek", True), ("long_seek", False)):
        idx = np.flatnonzero(a.component == check.COMPONENTS.index(name))
        idx = idx[idx > 0]
        dist = np.abs(a.offset[idx] - ends[idx - 1])
        if near:
            assert (dist <= check.SHORT_SEEK_MAX).all()
        else:
            assert np.median(dist) >= span // 8


def test_stream_head_and_small_targets():
    s = make_stream(64 * MiB, 4096, 100, 1)
    h = s.head(37)
    assert h.ops == 37 and h.segments[-1][1] == 37
    assert np.array_equal(h.offset, s.offset[:37])
    with pytest.raises(BenchError, match="too small"):
        make_stream(8192, 4096, 10, 1)
    with pytest.raises(ValueError):
        make_stream(64 * MiB, 4096, 0, 1)
    tiny = make_stream(1 * MiB, 4096, 50, 1)  # sizes above a quarter of the span are left out
    assert tiny.length.max() <= 256 * 1024


# -- a measured run ----------------------------------------------------------------------------
def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def data_file(tmp_path_factory) -> Path:
    """16 MiB of random bytes on a disk-backed directory (zeros could be deduplicated)."""
    path = tmp_path_factory.mktemp("check") / "data.bin"
    path.write_bytes(os.urandom(16 * MiB))
    try:
        open_target(path).close()
    except BenchError as exc:
        pytest.skip(f"O_DIRECT unavailable in the temp directory: {exc}")
    return path


KEYS = {"target", "profile", "ops", "demerit", "demerit_percent", "total_time_ratio",
        "measured_mean_ms", "predicted_mean_ms", "measured_p50_ms", "predicted_p50_ms",
        "measured_p95_ms", "predicted_p95_ms", "measured_p99_ms", "predicted_p99_ms",
        "measured_total_s", "predicted_total_s", "meets_target", "components", "sizes",
        "stream", "device", "when", "where", "o_direct"}


def test_check_model_on_a_file_is_read_only_and_complete(data_file, monkeypatch):
    opened: list[int] = []
    real_open = os.open

    def spy(path, flags, *a, **k):
        if str(path) == str(data_file):
            opened.append(flags)
        return real_open(path, flags, *a, **k)

    monkeypatch.setattr(bench.os, "open", spy)
    before, mtime = _sha(data_file), data_file.stat().st_mtime_ns
    r1 = check_model(data_file, "vm-virtio", ops=300, seed=5, seconds=10, warmup_seconds=0.05)
    assert _sha(data_file) == before and data_file.stat().st_mtime_ns == mtime
    assert len(opened) == 1 and opened[0] & os.O_DIRECT
    assert opened[0] & os.O_ACCMODE == os.O_RDONLY and not opened[0] & WRITE_FLAGS

    assert KEYS <= set(r1)
    assert r1["ops"] == 300 and r1["stream"]["ops"] == 300 and not r1["stream"]["cut_by_time"]
    assert r1["profile"] == "vm-virtio" and r1["o_direct"] is True
    assert sum(c["ops"] for c in r1["components"].values()) == 300
    assert sum(c["ops"] for c in r1["sizes"].values()) == 300
    assert r1["demerit"] >= 0 and r1["measured_mean_ms"] > 0 and r1["predicted_mean_ms"] > 0
    assert 0 <= r1["tail"]["share_top_0.1_percent"] <= r1["tail"]["share_top_1_percent"] <= 1
    assert r1["device"]["kind"] == "file" and r1["device"]["size_bytes"] == 16 * MiB
    json.dumps(r1)  # JSON-ready as it is

    # same seed, same stream (the timings differ; the requests do not)
    r2 = check_model(data_file, "vm-virtio", ops=300, seed=5, seconds=10, warmup_seconds=0)
    assert r2["stream"]["components"] == r1["stream"]["components"]
    assert r2["stream"]["bytes"] == r1["stream"]["bytes"]
    r3 = check_model(data_file, "vm-virtio", ops=300, seed=6, seconds=10, warmup_seconds=0)
    assert r3["stream"]["components"] != r1["stream"]["components"]

    # the prediction is the drive model's on exactly that stream (no warm-up: fresh drive)
    s = make_stream(16 * MiB, r2["device"]["alignment"], 300, 5)
    model = DiskModel.from_profile("vm-virtio")
    want = model.run(np.zeros(s.ops, np.int64), s.offset, s.length,
                     file_sizes=np.array([16 * MiB]))
    assert r2["predicted_total_s"] == pytest.approx(want.total_seconds, rel=1e-9)


def test_time_budget_cuts_the_stream(data_file):
    r = check_model(data_file, "ide-7200", ops=100_000, seed=1, seconds=0.1,
                    warmup_seconds=0)
    assert 0 < r["ops"] < 100_000 and r["stream"]["cut_by_time"]
    assert r["stream"]["ops_planned"] == 100_000
    assert sum(c["ops"] for c in r["components"].values()) == r["ops"]


def test_repeat_reports_the_noise_floor(data_file):
    r = check_model(data_file, "vm-virtio", ops=200, seed=2, seconds=10, warmup_seconds=0,
                    repeat=True)
    nf = r["noise_floor"]
    assert 0 < nf["ops"] <= r["ops"] == 200 and nf["demerit"] >= 0
    assert nf["measured_mean_ms"] > 0 and nf["predicted_mean_ms"] > 0
    assert 0 <= nf["tail"]["share_top_1_percent"] <= 1
    assert "noise_floor" not in check_model(data_file, "vm-virtio", ops=20, warmup_seconds=0)


def test_bad_profile_fails_before_reading(data_file, monkeypatch):
    from seqheur.errors import ProfileError, SpecError

    monkeypatch.setattr(check, "open_target", lambda *a, **k: pytest.fail("target opened"))
    with pytest.raises(SpecError, match=r"nope.*valid: .*ide-7200.*vm-virtio"):
        check_model(data_file, "nope")
    with pytest.raises(ProfileError, match=r"missing\.json: no such profile file.*scsi-10k"):
        check_model(data_file, str(data_file.parent / "missing.json"))


# -- the CLI -----------------------------------------------------------------------------------
def test_cli_check_model(data_file, tmp_path):
    from click.testing import CliRunner

    from seqheur.cli import cli

    runner = CliRunner()
    out = tmp_path / "check.json"
    r = runner.invoke(cli, ["bench", "check-model", str(data_file), "--profile", "scsi-10k",
                            "--ops", "200", "--seed", "3", "--time", "10", "--json",
                            "-o", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert KEYS <= set(doc) and doc["ops"] == 200 and doc["profile"] == "scsi-10k"
    assert json.loads(out.read_text())["stream"] == doc["stream"]

    r = runner.invoke(cli, ["bench", "check-model", str(data_file), "-p", "ide-7200",
                            "--ops", "100", "--repeat"])
    assert r.exit_code == 0, r.output
    assert "demerit" in r.stdout and "\nall " in r.stdout and "target (" in r.stdout
    assert "\npass2/pass1 " in r.stdout
    assert "tail (all): the top 1 % / 0.1 % of quantiles hold" in r.stdout
    assert "tail (pass2/pass1)" in r.stdout

    r = runner.invoke(cli, ["bench", "check-model", str(data_file), "-p", "no-such-disk"])
    assert r.exit_code == 1
    assert "no-such-disk" in r.output and "ide-7200" in r.output
    assert "Traceback" not in r.output

    r = runner.invoke(cli, ["bench", "check-model", str(tmp_path / "absent"), "-p", "ide-7200"])
    assert r.exit_code == 1 and "absent: no such file or device" in r.output

    r = runner.invoke(cli, ["bench", "check-model", "--help"])
    assert r.exit_code == 0 and "--profile" in r.output and "demerit" in r.output
