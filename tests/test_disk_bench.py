"""The raw-device bench: read-only by construction, clear refusals, sane profiles, CLI.

Never asserts absolute timings: structure and sanity only.
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


@pytest.mark.skipif(not bench.aio_available(), reason="native AIO syscalls not mapped here")
def test_aio_backend_stops_when_a_finite_source_runs_out(data_file):
    with open_target(data_file) as t:
        offs = [k * t.align * 16 for k in range(11)]  # fewer than the deadline would allow
        run = bench.timed_reads(t, t.align, bench._listed_offsets(offs), depth=4, seconds=5,
                                backend="aio")
    assert run.ios == 11 and run.short_reads == 0


def _native_read(t, bs: int, offsets: list[int]) -> tuple[tuple[int, int, int, int], bytes]:
    """One call of the native loop over ``offsets``: its counts and the buffer it left."""
    import mmap

    import numpy as np

    pread, clock_gettime, errno_location = bench._native_calls()
    mm = mmap.mmap(-1, bs)
    buf = np.frombuffer(mm, dtype=np.uint8)
    offs = np.asarray(offsets, dtype=np.int64)
    lat = np.zeros(offs.size, dtype=np.int64)
    try:
        got = bench._read_loop(pread, clock_gettime, errno_location, bench.time.CLOCK_MONOTONIC,
                               t.fd, buf, bs, offs, lat, np.zeros(2, dtype=np.int64),
                               2**62, np.zeros(1, dtype=np.int64))
        assert (lat[:got[1]] > 0).all()
        return tuple(int(x) for x in got), buf.tobytes()
    finally:
        del buf
        mm.close()


def test_native_loop_reads_the_requested_offsets(data_file):
    data = data_file.read_bytes()
    with open_target(data_file) as t:
        bs = t.align
        slots = t.size // bs
        for off in [0, (slots - 1) * bs, 7 * bs, 12345 * bs % t.size]:
            got, buf = _native_read(t, bs, [off])
            assert got == (1, 1, 0, 0) and buf == data[off:off + bs]
        # several reads in one call: all full, and the buffer holds the last one
        offs = [3 * bs, 0, 100 * bs, 5 * bs]
        got, buf = _native_read(t, bs, offs)
        assert got == (4, 4, 0, 0) and buf == data[5 * bs:6 * bs]


def test_native_loop_counts_short_reads_at_eof(tmp_path):
    path = tmp_path / "tail.bin"
    path.write_bytes(os.urandom(5 * 4096 + 1000))  # the last block is partial
    try:
        t = open_target(path)
    except BenchError as exc:
        pytest.skip(f"O_DIRECT unavailable in the temp directory: {exc}")
    with t:
        bs = t.align
        if bs != 4096:
            pytest.skip(f"alignment {bs}: the partial tail is not a whole aligned read here")
        got, buf = _native_read(t, bs, [4 * bs, 5 * bs, 6 * bs])
        # full, then 1000 bytes (partial), then 0 bytes past the end: 2 short reads, no error
        assert got == (3, 1, 2, 0)
        assert buf[:1000] == path.read_bytes()[5 * bs:]
        run = bench.timed_reads(t, bs, bench._listed_offsets([0, 4 * bs, 5 * bs, 6 * bs]),
                                seconds=5)
        assert run.ios == 2 and run.short_reads == 2 and run.bytes == 2 * bs


def test_native_loop_reports_the_errno(data_file):
    import mmap

    with open_target(data_file) as t:
        probe = mmap.mmap(-1, t.align)
        try:
            os.preadv(t.fd, [probe], 1)
            pytest.skip("this file system accepts unaligned O_DIRECT reads")
        except OSError as exc:
            assert exc.errno == errno.EINVAL
        finally:
            probe.close()
        # an O_DIRECT read at an unaligned offset fails with EINVAL: one clear line, no retry
        with pytest.raises(BenchError, match=r"offset 1 failed: EINVAL \(Invalid argument\)"):
            bench.timed_reads(t, t.align, bench._listed_offsets([0, 1, 0]), depth=1)
        got, _ = _native_read(t, t.align, [0, 1, 0])
        assert got == (1, 1, 0, errno.EINVAL)


def test_offset_sources():
    import numpy as np

    bs, span = 4096, 4096 * 1000
    # sequential: one stream, thread k of 3 takes positions k, k+3, ...; a later run continues
    seq = bench._seq_offsets(0, span, bs)
    chunks = [c(4) for c in seq(3)]
    assert sorted(np.concatenate(chunks).tolist()) == [i * bs for i in range(12)]
    assert chunks[1].tolist() == [bs, 4 * bs, 7 * bs, 10 * bs]
    assert seq(1)[0](2).tolist() == [12 * bs, 13 * bs]
    wrap = bench._seq_offsets(0, 3 * bs, bs)(1)[0](5)
    assert wrap.tolist() == [0, bs, 2 * bs, 0, bs]
    # random: aligned, in range, per-thread streams, never restarted by a later run
    rnd = bench._rand_offsets(0, span, bs, 7)
    a, b = (c(5000) for c in rnd(2))
    assert (a % bs == 0).all() and a.min() >= 0 and a.max() < span
    assert not np.array_equal(a, b)
    again = rnd(2)[0](5000)
    assert not np.array_equal(a, again)
    # a list: each offset once, split across threads by position
    lst = bench._listed_offsets([10, 20, 30, 40, 50])
    t0, t1 = lst(2)
    assert t0(10).tolist() == [10, 30, 50] and t1(1).tolist() == [20] and t1(5).tolist() == [40]
    assert t1(5).size == 0
    # interleaved streams: read i goes to stream i mod k, at that stream's next block
    streams = bench._interleaved_streams(3, 100 * bs, bs)(1)[0]
    assert streams(7).tolist() == [0, 100 * bs, 200 * bs, bs, 101 * bs, 201 * bs, 2 * bs]


@pytest.mark.parametrize("depth", [1, 4])
def test_timed_reads_threads_and_max_ios(data_file, depth):
    with open_target(data_file) as t:
        span = t.size // t.align * t.align
        run = bench.timed_reads(t, t.align, bench._rand_offsets(0, span, t.align, 1),
                                depth=depth, seconds=5, max_ios=3000)
    # max_ios bounds each thread; chunks grow past the first, so this spans several chunks
    assert run.ios == 3000 * depth and run.short_reads == 0 and run.threads == depth
    assert (run.lat_ns > 0).all() and run.cpu_s >= 0


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
    # each zone's rate to half a MB/s (the zones are 4 MB/s apart; noise is 1 %), stated
    # instead of comparing round()ed fits, which can flip at a .5 boundary
    assert list(p.zone_mbps) == pytest.approx([r / 1e6 for r in truth["zones"]], abs=0.5)
    assert p.cache.segments == 4
    # the same curves buried in run-to-run noise larger than the trend are recorded as flat
    noisy, _ = _synthetic_tables(noise=2.5)
    assert bench._is_flat([r["p50_s"] for r in noisy["seek"]], [r["p50_rep_s"] for r in noisy["seek"]])
    assert bench._is_flat([r["mbps"]["median"] for r in noisy["zones"]], [r["mbps"] for r in noisy["zones"]])
