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
    assert [r["depth"] for r in t["queue_depth"] if r["pattern"] == "rand" and r["size"] == 4096] == [1, 2]
    assert all(r["p50_s"] > 0 and r["pairs"] > 0 for r in t["seek"])
    assert {r["mode"] for r in t["first_touch"]} == {"first touch", "re-read"}
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
                   "pwrite", "BLKFLSBUF", "BLKDISCARD", "BLKZEROOUT", "drop_caches"):
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
