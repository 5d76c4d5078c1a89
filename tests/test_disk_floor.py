"""bench/disk_floor.py: the golden-ratio draw from a quantile table, and the analysis on
synthetic runs (no device is read here)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

_PATH = Path(__file__).resolve().parent.parent / "bench" / "disk_floor.py"
_spec = importlib.util.spec_from_file_location("disk_floor", _PATH)
assert _spec is not None and _spec.loader is not None
disk_floor = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(disk_floor)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0.01, 50.0), min_size=2, max_size=200), st.integers(1000, 20000))
def test_drawn_times_follow_the_stored_quantiles(sample, n):
    table = np.quantile(np.array(sample), disk_floor.QUANTILES)
    drawn = disk_floor._draw(np.full(n, 4096, np.int64), {4096: table})
    # the share of draws at or below each table value is the table's probability there (the
    # last one, where values tie), to within the golden-ratio points' discrepancy, which is
    # below 0.34 log(n) / n for these n (0.5 log(n) / n asserted)
    last = np.searchsorted(table, table, side="right") - 1
    share = np.searchsorted(np.sort(drawn), table, side="right") / n
    assert np.all(np.abs(share - disk_floor.QUANTILES[last]) <= 0.5 * np.log(n) / n + 1e-12)
    assert drawn.min() >= table[0] and drawn.max() <= table[-1]


@given(st.floats(0.01, 10.0), st.integers(1, 500))
def test_a_zero_spread_table_draws_its_one_time(t, n):
    table = np.full(disk_floor.QUANTILES.size, t)
    drawn = disk_floor._draw(np.full(n, 65536, np.int64), {65536: table})
    assert np.all(drawn == t)


def test_draw_is_deterministic_per_size_and_falls_back_to_the_nearest_size():
    tables = {4096: np.linspace(1.0, 2.0, disk_floor.QUANTILES.size),
              1 << 20: np.linspace(10.0, 20.0, disk_floor.QUANTILES.size)}
    length = np.array([4096, 1 << 20, 16384, 4096, 1 << 19], np.int64)
    a = disk_floor._draw(length, tables)
    assert np.array_equal(a, disk_floor._draw(length, tables))
    assert 1.0 <= a[0] <= 2.0 and 10.0 <= a[1] <= 20.0
    assert 1.0 <= a[2] <= 2.0  # 16 KiB: nearest fitted size is 4 KiB
    assert 10.0 <= a[4] <= 20.0  # 512 KiB: nearest is 1 MiB


def _run(path: Path, seed: int, stall_ms: float) -> None:
    rng = np.random.default_rng(seed)
    n = 4000
    length = rng.choice(np.array([4096, 65536, 1 << 20], np.int64), n)
    lat = (0.05 + length / 1.5e9 * 1e3) * rng.lognormal(0.0, 0.2, n)
    again = lat * rng.lognormal(0.0, 0.05, n)
    lat[7] = stall_ms
    np.savez(path, lat=(lat * 1e6).astype(np.int64), again=(again * 1e6).astype(np.int64),
             off=np.arange(n, dtype=np.int64) * 4096, length=length,
             comp=np.zeros(n, np.int8), span=1 << 30, seed=seed,
             load0=np.array([1.0, 1.0, 1.0]), load1=np.array([1.5, 1.0, 1.0]), wall=1.0)


def test_analyse_reports_floors_trims_windows_and_the_cross_run_noise_term(tmp_path, capsys):
    _run(tmp_path / "floor-4000-s1.npz", 1, 0.1)
    _run(tmp_path / "floor-4000-s2.npz", 2, 200.0)  # one 200 ms host stall in pass 1
    disk_floor.analyse(sorted(str(p) for p in tmp_path.glob("*.npz")), "vm-virtio", 1000)
    out = capsys.readouterr().out
    lines = {line.split(":")[0]: line for line in out.splitlines() if line.startswith("floor-")}
    assert "reads > 5 ms 0 in 0 clusters" in lines["floor-4000-s1.npz"]
    stalled = lines["floor-4000-s2.npz"]
    assert "reads > 5 ms 1 in 1 clusters, max 200.0 ms" in stalled
    # the stall dominates the floor; leaving the top 0.1 % out removes it
    floor = float(stalled.split("floor ")[1].split(" %")[0])
    trimmed = float(stalled.split("without the top 0.01 / 0.1 / 1 %: ")[1].split(" / ")[1])
    assert floor > 100 and trimmed < 20
    assert "model vm-virtio:" in stalled
    assert out.count("floor over 4 windows of 1000") == 2
    assert out.count("pass 1, window against the one 2 later") == 2
    assert out.count("noise term, cross-run: fitted on") == 2
    assert "noise term, cross-run, 2 pairs" in out


def test_demerit_helper_agrees_with_check_demerit():
    from seqheur.disk.check import demerit

    rng = np.random.default_rng(3)
    a, b = rng.exponential(1.0, 500), rng.exponential(1.2, 500)
    d, r = disk_floor._dem_pct(a, b)
    f = demerit(a, b)
    assert d == pytest.approx(f["demerit_percent"]) and r == pytest.approx(f["total_time_ratio"])
