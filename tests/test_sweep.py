"""Sweeps: grids, executors giving identical rows, resume, per-configuration failures."""

from __future__ import annotations

import polars as pl
import pytest
from click.testing import CliRunner
from floatcmp import SUMMARY_REL, assert_frames_close

from seqheur import workloads
from seqheur.cli import cli
from seqheur.errors import SeqheurError
from seqheur.executors import ExecutorSpec
from seqheur.io import write_parquet
from seqheur.sweep import grid_from_dict, load_grid, sweep

GRID = {"detector": ["freebsd4", "always"], "table": ["freebsd4", "ideal"], "cache": ["16MiB"],
        "detector_params": {"slowdown": {"window": [16384, 65536]}},
        "nfsheur": {"size": [8], "probes": [2]}}


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    p = tmp_path_factory.mktemp("sweep") / "t.parquet"
    write_parquet(workloads.paper(6, 6, reorder=0.05, seed=3), p)
    return p


def test_grid_expansion():
    configs = grid_from_dict(GRID)
    dets = sorted({c.detector for c in configs})
    tabs = sorted({c.table for c in configs})
    assert dets == ["always", "freebsd4", "slowdown:window=16384", "slowdown:window=65536"]
    assert tabs == ["freebsd4", "ideal", "nfsheur:8x2"]
    assert len(configs) == 12 and len({c.config_id for c in configs}) == 12
    # defaults come from ReplayConfig: each detector's own default policy
    assert {c.policy for c in configs} == {"auto"} and {c.profile for c in configs} == {"ide-7200"}


# slow: a cold run compiles every registered detector's replay loop (about 2 minutes);
# `make test-slow` and CI run it
@pytest.mark.slow
def test_sweep_over_every_registered_detector_with_defaults(trace):
    from seqheur.heuristics.registry import registered_detectors
    from seqheur.sweep import sweep

    names = sorted(registered_detectors())
    rows = sweep(trace, grid_from_dict({"detector": names}))
    assert sorted(rows["detector"].to_list()) == names
    assert set(rows["policy"].to_list()) == {"auto"}  # as asked; resolved in policy_name
    policies = dict(zip(rows["detector"].to_list(), rows["policy_name"].to_list()))
    assert policies["freebsd4"] == "freebsd4-cluster" and policies["linux-3.12"] == "linux"
    assert policies["freebsd"] == "freebsd-cluster"
    assert (rows["requests"] > 0).all()


def test_bad_grid(tmp_path):
    with pytest.raises(SeqheurError, match="unknown key"):
        grid_from_dict({"detectors": ["x"]})
    p = tmp_path / "g.toml"
    p.write_text("detector = [")
    with pytest.raises(SeqheurError, match="not valid TOML"):
        load_grid(p)


def test_serial_and_processes_identical_and_resumable(trace, tmp_path):
    configs = grid_from_dict(GRID)
    a = sweep(trace, configs, tmp_path / "a.parquet", ExecutorSpec("serial"))
    b = sweep(trace, configs, tmp_path / "b.parquet", ExecutorSpec("processes", 2))
    assert a.height == 12 and a["error"].null_count() == 12
    # float columns (disk seconds, throughput, ratios) to SUMMARY_REL (why: tests/floatcmp.py),
    # the rest exactly
    assert_frames_close(a, b, rel=SUMMARY_REL)
    assert_frames_close(pl.read_parquet(tmp_path / "a.parquet"), pl.read_parquet(tmp_path / "b.parquet"),
                        rel=SUMMARY_REL)
    # the enlarged-state detector beats the tiny table, as it should
    thr = {(r["detector"], r["table"]): r["throughput_mbps"] for r in a.iter_rows(named=True)}
    assert thr[("always", "ideal")] >= thr[("freebsd4", "nfsheur:8x2")]
    # resume: a partial file is completed, the rows already there are kept as they were
    write_parquet(a.head(5), tmp_path / "c.parquet")
    c = sweep(trace, configs, tmp_path / "c.parquet", ExecutorSpec("serial"))
    assert_frames_close(a, c, rel=SUMMARY_REL)


def test_failures_are_per_configuration(trace, tmp_path):
    configs = grid_from_dict({"detector": ["freebsd4", "nosuchdetector"], "table": ["ideal"]})
    df = sweep(trace, configs, tmp_path / "f.parquet")
    bad = df.filter(pl.col("detector") == "nosuchdetector")
    assert bad["error"][0] and "nosuchdetector" in bad["error"][0]
    assert df.filter(pl.col("detector") == "freebsd4")["error"][0] is None


def test_cli_sweep(trace, tmp_path):
    g = tmp_path / "grid.toml"
    g.write_text('detector = ["freebsd4", "slowdown"]\ntable = ["freebsd4"]\ncache = "16MiB"\n')
    res = CliRunner().invoke(cli, ["sweep", str(trace), "--grid", str(g), "-o", str(tmp_path / "s.parquet"),
                                   "--json"])
    assert res.exit_code == 0, res.output
    assert '"failed": 0' in res.output
    assert pl.read_parquet(tmp_path / "s.parquet").height == 2


@pytest.mark.dist
def test_dask_local_cluster_rows_identical_to_serial(trace, tmp_path):
    configs = grid_from_dict(GRID)
    a = sweep(trace, configs, None, ExecutorSpec("serial"))
    d = sweep(trace, configs, None, ExecutorSpec("dask-local", 2))
    assert_frames_close(a, d, rel=SUMMARY_REL)


def test_replay_takes_a_replay_config(trace):
    import seqheur
    from seqheur.config import ReplayConfig

    cfg = ReplayConfig(detector="slowdown", table="ellard", cache="64MiB", profile=None)
    a = seqheur.replay(trace, config=cfg, per_request=False).to_dict()
    b = seqheur.replay(trace, "slowdown", "ellard", cache="64MiB", profile=None,
                       per_request=False).to_dict()
    assert a == b and a["policy"] == "freebsd4-cluster"


def test_timing_is_an_axis_and_disk_only_ids_are_unchanged(trace, tmp_path):
    import seqheur
    from seqheur.config import ReplayConfig

    timed = "closed-loop:preset=paper-testbed"
    configs = grid_from_dict({"detector": ["freebsd4"], "table": ["ideal"], "cache": ["16MiB"],
                              "timing": ["disk-only", timed]})
    assert [c.timing for c in configs] == ["disk-only", timed]
    # a disk-only row keeps the id it had before timing was an axis (older outputs resume)
    old_style = grid_from_dict({"detector": ["freebsd4"], "table": ["ideal"], "cache": ["16MiB"]})
    assert old_style[0].config_id == configs[0].config_id != configs[1].config_id
    rows = sweep(trace, configs, tmp_path / "s.parquet")
    assert rows["timing"].to_list() == ["disk-only", timed]
    disk_only, e2e = rows.to_dicts()
    assert disk_only["e2e_throughput_mbps"] is None and e2e["e2e_throughput_mbps"] > 0
    # the timed row is what replay gives with that timing model (from a ReplayConfig too)
    cfg = ReplayConfig(detector="freebsd4", table="ideal", cache="16MiB", timing=timed)
    ref = seqheur.replay(trace, config=cfg, per_request=False).to_dict()
    assert e2e["e2e_throughput_mbps"] == pytest.approx(ref["e2e_throughput_mbps"], rel=SUMMARY_REL)
    assert e2e["throughput_mbps"] == pytest.approx(disk_only["throughput_mbps"], rel=SUMMARY_REL)
    with pytest.raises(SeqheurError, match="unknown option 'slot'.*valid: .*slots="):
        grid_from_dict({"timing": ["closed-loop:slot=4"]})


def test_rows_use_the_file_sizes_replay_uses(tmp_path):
    """Files not read to their end: a sweep row lays them out with the trace's reply
    attributes, as ``seqheur replay TRACE`` does, and says so."""
    import seqheur

    p = tmp_path / "r.parquet"
    write_parquet(workloads.random_reads(files=2, file_mb=4, requests=200, seed=5), p)
    rows = sweep(p, grid_from_dict({"detector": ["always"], "cache": ["1MiB"]})).to_dicts()
    ref = seqheur.replay(p, "always", cache="1MiB", per_request=False).to_dict()
    assert rows[0]["file_sizes"] == ref["file_sizes"] == "attributes"
    assert rows[0]["throughput_mbps"] == pytest.approx(ref["throughput_mbps"], rel=SUMMARY_REL)


@pytest.mark.dist
def test_sweep_on_a_scheduler_address_rows_identical_to_serial(trace, tmp_path):
    """The same sweep, unchanged, on a Dask scheduler at an address (a scheduler and two
    single-threaded workers started here as separate processes on the loopback, as on a
    cluster), through the CLI's --scheduler: rows equal the serial ones."""
    import json
    import os
    import shutil
    import subprocess
    import sys
    import time

    dask = shutil.which("dask", path=os.path.dirname(sys.executable))
    if dask is None:
        pytest.skip("the dask command line is not installed (the dask extra)")
    info = tmp_path / "scheduler.json"
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", "0",
                               "--no-dashboard", "--scheduler-file", str(info)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        for _ in range(600):
            if info.exists() and info.stat().st_size:
                break
            time.sleep(0.1)
        address = json.loads(info.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        procs.append(subprocess.Popen([dask, "worker", "--scheduler-file", str(info),
                                       "--nworkers", "2", "--nthreads", "1", "--no-dashboard"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        grid = tmp_path / "grid.toml"
        grid.write_text('detector = ["freebsd4", "always"]\ntable = ["freebsd4", "ideal"]\n'
                        'cache = ["16MiB"]\n')
        out = tmp_path / "remote.parquet"
        res = CliRunner().invoke(cli, ["sweep", str(trace), "--grid", str(grid), "-o", str(out),
                                       "--scheduler", address, "--json"])
        assert res.exit_code == 0, res.output
        assert json.loads(res.output)["failed"] == 0
        serial = sweep(trace, load_grid(grid), None, ExecutorSpec("serial"))
        assert_frames_close(serial, pl.read_parquet(out), rel=SUMMARY_REL)
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def test_tasks_start_longest_first():
    from seqheur.sweep import longest_first

    # a failed estimate first (its error is reported at once), then by cost, ties in order
    assert longest_first([1.0, 3.0, None, 3.0, 0.5]) == [2, 1, 3, 0, 4]
    assert longest_first([]) == []


def test_probe_cost_replays_the_start_of_the_trace(trace, monkeypatch):
    import seqheur.sweep as sw
    from seqheur.replay import Replayer

    fed = []  # the lengths of the chunks the probe replays: the first half untimed
    real_feed = Replayer.feed
    monkeypatch.setattr(Replayer, "feed", lambda self, s, *a: (fed.append(len(s)),
                                                               real_feed(self, s, *a))[1])
    monkeypatch.setattr(sw, "PROBE_SHARE", 4)
    config = {"detector": "freebsd4", "table": "ideal", "policy": "auto", "cache": "16MiB",
              "profile": "ide-7200", "timing": "disk-only"}
    cost = sw.probe_cost(str(trace), [config, dict(config, profile="scsi-10k")])
    n = len(sw.load_stream(str(trace))) // 4
    assert cost >= 0 and fed == [n // 2, n - n // 2]
