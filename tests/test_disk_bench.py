"""The raw-device bench: read-only by construction, clear refusals, sane profiles, CLI.

Never asserts absolute timings (spec §13): structure and sanity only.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from seqheur.disk import bench
from seqheur.disk.bench import BenchConfig, BenchError, open_target, run_bench
from seqheur.disk.profile import load_profile

TINY = BenchConfig(seconds=1.5, reps=2, sizes=(4096, 65536, 1 << 20), depths=(1, 2), zones=3)
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@pytest.fixture(scope="module")
def data_file(tmp_path_factory) -> Path:
    """32 MiB of random bytes on a disk-backed directory (zeros could be deduplicated)."""
    path = tmp_path_factory.mktemp("disk") / "data.bin"
    path.write_bytes(os.urandom(32 << 20))
    try:
        open_target(path).close()
    except BenchError as exc:
        pytest.skip(f"O_DIRECT unavailable in the temp directory: {exc}")
    return path


def _check_profile(prof, sizes) -> None:
    t = prof.tables
    seq_sizes = [r["size"] for r in t["sequential"]]
    assert seq_sizes == sorted(seq_sizes) and set(seq_sizes) <= set(sizes)
    for name in ("sequential", "random", "queue_depth", "cached", "zones"):
        for r in t[name]:
            assert r["ios"] > 0 and r["short_reads"] == 0
            assert 0 < r["p50_s"] <= r["p90_s"] <= r["p99_s"]
            assert r["mbps"]["min"] <= r["mbps"]["median"] <= r["mbps"]["max"]
            assert r["mbps"]["min"] > 0
            assert r["cpu"]["median"] >= 0
    qd = [(r["depth"], r["backend"]) for r in t["queue_depth"]
          if r["pattern"] == "rand" and r["size"] == 4096]
    assert qd[:2] == [(1, "threads"), (2, "threads")]
    if bench.aio_available():
        assert qd[2:] == [(2, "aio")]
    assert all(r["p50_s"] > 0 and r["pairs"] > 0 for r in t["seek"])
    assert {r["mode"] for r in t["first_touch"]} == {"first touch", "re-read"}
    assert [r["gap_s"] for r in t["idle_gap"]] == list(bench.IDLE_GAPS)
    assert all(r["ios"] >= 3 and r["p50_s"] > 0 for r in t["idle_gap"])
    assert prof.kind == "measured" and prof.provenance["o_direct"] is True
    assert prof.provenance["where"] and prof.provenance["when"]
    assert prof.capacity_bytes > 0 and prof.host_mbps > 0 and min(prof.zone_mbps) > 0


def test_bench_file_is_read_only_and_sane(data_file, tmp_path, monkeypatch):
    opened: list[tuple[str, int]] = []
    real_open = os.open

    def spy(path, flags, *a, **k):
        opened.append((str(path), flags))
        return real_open(path, flags, *a, **k)

    monkeypatch.setattr(bench.os, "open", spy)
    before = _sha(data_file)
    mtime = data_file.stat().st_mtime_ns
    prof = run_bench(data_file, TINY)
    assert _sha(data_file) == before and data_file.stat().st_mtime_ns == mtime
    targets = [f for p, f in opened if p == str(data_file)]
    assert len(targets) == 1, "the target is opened exactly once"
    assert targets[0] & os.O_ACCMODE == os.O_RDONLY and not targets[0] & WRITE_FLAGS
    assert targets[0] & os.O_DIRECT
    _check_profile(prof, TINY.sizes)
    out = prof.save(tmp_path / "p.json")
    assert load_profile(out) == prof


def test_bench_module_has_no_write_paths():
    src = Path(bench.__file__).read_text()
    code = re.sub(r'""".*?"""', "", src, flags=re.S)  # the docstrings may name what is banned
    for banned in ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND", "os.write",
                   "pwrite", "PWRITE", "BLKFLSBUF", "BLKDISCARD", "BLKZEROOUT", "drop_caches"):
        assert banned not in code, banned
    assert code.count("os.open(") == 1


def test_refuses_non_targets(tmp_path):
    with pytest.raises(BenchError, match="not a block device or regular file"):
        open_target("/dev/null")
    with pytest.raises(BenchError, match="not a block device or regular file"):
        open_target(tmp_path)
    with pytest.raises(BenchError, match="no such file"):
        open_target(tmp_path / "missing")


@pytest.mark.parametrize("code", [errno.EPERM, errno.EACCES])
def test_permission_errors_give_one_clear_line(data_file, monkeypatch, code):
    real_open = os.open

    def deny(path, flags, *a, **k):
        if str(path) != str(data_file):
            return real_open(path, flags, *a, **k)
        raise PermissionError(code, os.strerror(code), path)

    monkeypatch.setattr(bench.os, "open", deny)
    with pytest.raises(BenchError) as info:
        open_target(data_file)
    msg = str(info.value)
    assert "\n" not in msg and errno.errorcode[code] in msg and "read-only" in msg
    assert "loop device" in msg


def test_o_direct_refusal_never_falls_back(data_file, monkeypatch):
    real_open = os.open

    def einval(path, flags, *a, **k):
        if str(path) == str(data_file) and flags & os.O_DIRECT:
            raise OSError(errno.EINVAL, "Invalid argument", path)
        return real_open(path, flags, *a, **k)

    monkeypatch.setattr(bench.os, "open", einval)
    with pytest.raises(BenchError, match="O_DIRECT is not supported.*--buffered"):
        run_bench(data_file, TINY)


def test_access_mode_is_checked_after_open(data_file, monkeypatch):
    real = bench.fcntl.fcntl

    def lie(fd, cmd, *a):
        return os.O_RDWR if cmd == bench.fcntl.F_GETFL else real(fd, cmd, *a)

    monkeypatch.setattr(bench.fcntl, "fcntl", lie)
    with pytest.raises(BenchError, match="not read-only"):
        open_target(data_file)


@pytest.mark.skipif(not bench.aio_available(), reason="native AIO syscalls not mapped here")
@pytest.mark.parametrize("pattern", ["rand", "seq"])
def test_aio_backend_reads_full_blocks(data_file, pattern):
    with open_target(data_file) as t:
        span = t.size // t.align * t.align
        offs = (bench._rand_offsets(0, span, 65536, 3) if pattern == "rand"
                else bench._seq_offsets(0, span, 65536))
        run = bench.timed_reads(t, 65536, offs, depth=4, seconds=0.2,
                                                  backend="aio")
    assert run.short_reads == 0 and run.ios > 0 and (run.lat_ns > 0).all()
    assert run.threads == 1 and run.mbps > 0


def test_only_allowlisted_ioctls(data_file):
    with open_target(data_file) as t:
        with pytest.raises(KeyError):
            bench._ioctl(t.fd, 0x1261)  # BLKFLSBUF is not on the read-only allow-list


def test_cli_bench_and_plot(data_file, tmp_path):
    from click.testing import CliRunner

    from seqheur.cli import cli

    runner = CliRunner()
    out = tmp_path / "p.json"
    r = runner.invoke(cli, ["bench", str(data_file), "-o", str(out), "--time", "1",
                            "--reps", "1", "--sizes", "4k,64k", "--zones", "2", "--depths", "1,2"])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert doc["schema"] == "seqheur.disk-profile" and doc["kind"] == "measured"
    png = tmp_path / "p.png"
    r = runner.invoke(cli, ["bench", "plot", str(out), "-o", str(png)])
    assert r.exit_code == 0, r.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = runner.invoke(cli, ["bench", "plot", "scsi-10k", "-o", str(tmp_path / "s.png")])
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli, ["bench", "/dev/null", "-o", str(tmp_path / "x.json")])
    assert r.exit_code == 1 and "not a block device" in r.output
    r = runner.invoke(cli, ["profiles", "--json"])
    assert r.exit_code == 0
    names = {row["name"] for row in json.loads(r.output)}
    assert {"ide-7200", "scsi-10k"} <= names


# -- Tier 2: a read-only loop device (root) ----------------------------------------------------
def _losetup(*args: str) -> str:
    return subprocess.run(["losetup", *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def loop_device(data_file):
    if os.geteuid() != 0 or not shutil.which("losetup"):
        pytest.skip("needs root and losetup")
    try:
        dev = _losetup("-r", "-f", "--show", "--direct-io=on", str(data_file))
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"no loop devices here: {exc.stderr.strip()}")
    try:
        yield Path(dev)
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)


@pytest.mark.slow
def test_bench_loop_device_never_writes(loop_device, data_file):
    before_dev, before_file = _sha(loop_device), _sha(data_file)
    with open_target(loop_device) as t:
        assert t.kind == "block" and t.meta["read_only"] is True
        assert t.size == data_file.stat().st_size
    prof = run_bench(loop_device, TINY)
    assert _sha(loop_device) == before_dev and _sha(data_file) == before_file
    _check_profile(prof, TINY.sizes)
    assert prof.device["kind"] == "block" and "logical_block_size" in prof.device


# -- Tier 0: the profile builder on tables from a known disk (no I/O) -------------------------
def _mmm(v: float, spread: float = 0.01) -> dict:
    return {"min": v * (1 - spread), "median": v, "max": v * (1 + spread)}


def _synthetic_tables(noise: float = 0.01) -> tuple[dict, dict]:
    cap, over, media, rand_pos = 8 << 30, 2e-4, 40e6, 8e-3
    zone_rates = [60e6 - 4e6 * i for i in range(8)]

    def pos(d: float) -> float:
        return 2e-3 + 8e-3 * (d / cap) ** 0.5

    def row(size: float, p50: float, **kw) -> dict:
        return {"size": int(size), "p50_s": p50, "p90_s": p50 * 1.1, "p99_s": p50 * 1.3,
                "mbps": _mmm(size / p50 / 1e6, noise), "iops": _mmm(1 / p50, noise),
                "p50_rep_s": _mmm(p50, noise), "ios": 100, "short_reads": 0,
                "cpu": _mmm(0.1), "client_bound": False, **kw}

    sizes = [4096, 65536, 1 << 20]
    tables = {
        "sequential": [row(s, over + s / media) for s in sizes],
        "random": [row(s, over + rand_pos + s / media) for s in sizes],
        "seek": [row(4096, over + pos(d) + 4096 / media, distance_bytes=d, pairs=200)
                 for d in [4096 * 4 ** i for i in range(12)]],
        "zones": [{"position_bytes": i * cap // 8, "window_bytes": cap // 8, "size": 1 << 20,
                   "mbps": _mmm(r / 1e6, noise)} for i, r in enumerate(zone_rates)],
        "queue_depth": [row(4096, over + rand_pos, depth=1, pattern="rand")],
        "cached": [row(4096, 3e-4)],
        "streams": [{"streams": k, "size": 4096, "p50_s": 3e-4 if k <= 4 else 9e-3}
                    for k in (1, 2, 4, 8, 16)],
    }
    truth = {"cap": cap, "over": over, "pos": pos, "zones": zone_rates, "rand_pos": rand_pos}
    return tables, truth


def test_profile_builder_recovers_a_known_disk():
    tables, truth = _synthetic_tables()
    t = bench.Target(path="sim", fd=-1, kind="block", size=truth["cap"], align=4096, direct=True)
    prov = {"where": "sim", "when": "2026-01-01T00:00:00+00:00", "mode": "O_DIRECT",
            "seek_flat": bench._is_flat([r["p50_s"] for r in tables["seek"]],
                                        [r["p50_rep_s"] for r in tables["seek"]]),
            "zones_flat": bench._is_flat([r["mbps"]["median"] for r in tables["zones"]],
                                         [r["mbps"] for r in tables["zones"]])}
    assert prov["seek_flat"] is False and prov["zones_flat"] is False
    p = bench._profile_from_tables("sim", t, tables, {"kind": "block"}, prov)
    assert p.command_overhead_s == pytest.approx(truth["over"], rel=0.05)
    assert p.random_positioning_s == pytest.approx(truth["rand_pos"], rel=0.05)
    for d, s in zip(p.seek_distance_bytes, p.seek_seconds):
        assert s == pytest.approx(truth["pos"](d), rel=0.05)
    assert [round(z) for z in p.zone_mbps] == [round(r / 1e6) for r in truth["zones"]]
    assert p.cache.segments == 4
    # the same curves buried in run-to-run noise larger than the trend are recorded as flat
    noisy, _ = _synthetic_tables(noise=2.5)
    assert bench._is_flat([r["p50_s"] for r in noisy["seek"]], [r["p50_rep_s"] for r in noisy["seek"]])
    assert bench._is_flat([r["mbps"]["median"] for r in noisy["zones"]], [r["mbps"] for r in noisy["zones"]])
