"""The host-throttle stage of the drive model (Linux blk-throttle's read limit): its laws, its
bookkeeping, and (``kernel`` marker) the model against the live kernel's throttle."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seqheur.disk.model import DiskModel
from seqheur.disk.profile import DiskProfile, DriveCache, HostThrottle
from seqheur.errors import ProfileError

HZ = 250
SLICE_S = 0.1  # DFL_THROTL_SLICE: hz / 10 jiffies


def fast(throttle: HostThrottle = HostThrottle(), **kw) -> DiskProfile:
    """A device far faster than any throttle here: 100 GB/s, no positioning, no overhead."""
    return DiskProfile(name="fast", kind="modelled", description="test", capacity_bytes=1 << 40,
                       zone_mbps=(1e5,), host_mbps=1e5, throttle=throttle, **kw)


def run(profile: DiskProfile, sizes, idle=None):
    sizes = np.asarray(sizes, dtype=np.int64)
    off = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    return DiskModel(profile).run(np.zeros(sizes.size, np.int64), off, sizes,
                                  np.array([int(sizes.sum()) + 1]), idle)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([4096, 16384, 65536, 262144, 1 << 20]), min_size=1,
                max_size=400),
       st.sampled_from([2_000_000, 20_000_000, 200_000_000]))
def test_long_run_rate_is_the_limit_within_one_slice(sizes, bps):
    """Back to back on a fast device, a throttle of B bytes/s lets through at most B per
    second plus one slice's budget (granted at the slice's start), and holds nothing back
    that the budget allows: the elapsed time is within a slice (and a jiffy) of bytes / B."""
    r = run(fast(HostThrottle(read_bps=bps, hz=HZ)), sizes)
    total, elapsed = sum(sizes), r.total_seconds
    assert elapsed >= (total - bps * SLICE_S) / bps - 1e-9
    assert elapsed <= total / bps + 2 * SLICE_S + 2 / HZ
    assert (r.seconds > 0).all()


def test_the_first_slice_is_a_burst_then_reads_wait_for_the_next():
    bps = 20_000_000  # a slice's budget: 2,000,000 bytes
    r = run(fast(HostThrottle(read_bps=bps, hz=HZ)), [65536] * 60)
    waited = r.seconds > 1e-3
    first = int(np.argmax(waited))
    assert first == 2_000_000 // 65536  # the 31st read is the first over the budget
    assert r.seconds[:first].max() < 1e-5  # the burst: the device's own time only
    # it waits to the end of the slice and one jiffy more, and the next slice's budget then
    # lets the next 30 reads through at once
    assert r.seconds[first] == pytest.approx(SLICE_S + 1 / HZ, abs=1e-3)
    assert np.count_nonzero(waited) == 1


def test_the_rule_step_by_step():
    """blk-throttle's checks one at a time (``throttle_step``, which the closed-loop timing
    model's block layer calls for the reads it holds): at 20 MB/s and CONFIG_HZ 250 a slice
    is 25 jiffies and 2,000,000 bytes; 15 reads of 128 KiB fit the first, the 16th waits to
    the slice's end and one jiffy more, then passes with the next slice's budget, which lets
    14 more through; after a long idle a new slice gives a full budget again."""
    from seqheur.disk.model import S_TSTART, throttle_step

    m = DiskModel(fast(HostThrottle(read_bps=20_000_000, hz=HZ)))
    st_, ip = m.new_state(), m.iparams
    w128 = 131072
    passed = 0
    while throttle_step(st_, ip, 0, w128, False) == 0:
        passed += 1
    assert passed == 15
    wait = throttle_step(st_, ip, 0, w128, False)
    assert wait == 26  # max(1, excess * hz / bps) + what is left of the slice (25)
    assert throttle_step(st_, ip, 26, w128, True) == 0
    more = 0
    while throttle_step(st_, ip, 26, w128, False) == 0:
        more += 1
    assert more == 14  # 30 reads of 128 KiB fit two slices' 4,000,000 bytes
    assert all(throttle_step(st_, ip, 500, w128, False) == 0 for _ in range(15))
    assert st_[S_TSTART] == 500


def test_small_reads_under_the_burst_are_never_held_back():
    r = run(fast(HostThrottle(read_bps=200_000_000, hz=HZ)), [4096] * 200)
    off = run(fast(), [4096] * 200)
    np.testing.assert_allclose(r.seconds, off.seconds, rtol=1e-12)


def test_an_idle_device_earns_a_new_burst():
    bps = 20_000_000
    sizes = [1 << 20] * 6
    busy = run(fast(HostThrottle(read_bps=bps, hz=HZ)), sizes)
    rested = run(fast(HostThrottle(read_bps=bps, hz=HZ)), sizes, idle=[0, 0.5, 0, 0, 0, 0])
    assert busy.seconds[1] > 0.05  # the second MiB is over the first slice's 2 MB
    assert rested.seconds[1] < 1e-3  # after 0.5 s idle the slice is over: a fresh budget


def test_iops_limit_spaces_reads_out():
    iops = 100  # one slice (25 jiffies) allows 10 reads
    r = run(fast(HostThrottle(read_iops=iops, hz=HZ)), [4096] * 100)
    assert r.total_seconds == pytest.approx(100 / iops, abs=2 * SLICE_S)
    assert np.count_nonzero(r.seconds[:10] > 1e-3) == 0


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([4096, 65536, 1 << 20]),
                          st.sampled_from([0.0, 0.0, 1e-3, 0.2])), min_size=2, max_size=60),
       st.integers(1, 59), st.booleans())
def test_chunked_equals_whole_with_a_throttle(ops, cut, cache):
    """The throttle's slice and the clock are drive state: chunks carry them over."""
    prof = fast(HostThrottle(read_bps=20_000_000, read_iops=3000, hz=HZ),
                cache=DriveCache(segments=2, segment_bytes=1 << 20, readahead_bytes=1 << 19)
                if cache else DriveCache())
    m = DiskModel(prof)
    ln = np.array([o[0] for o in ops], dtype=np.int64)
    idle = np.array([o[1] for o in ops])
    off = np.concatenate(([0], np.cumsum(ln)[:-1]))
    f = np.zeros(ln.size, np.int64)
    cut = min(cut, ln.size - 1)
    place = m.place(np.array([int(ln.sum()) + 1]))
    whole = m.service(f, off, ln, place, m.new_state(), idle)
    state = m.new_state()
    parts = [m.service(f[a:b], off[a:b], ln[a:b], place, state, idle[a:b])
             for a, b in ((0, cut), (cut, ln.size))]
    np.testing.assert_allclose(np.concatenate([p.seconds for p in parts]), whole.seconds,
                               rtol=1e-12, atol=0)


def test_profile_json_keeps_the_throttle_and_checks_it(tmp_path):
    p = fast(HostThrottle(read_bps=20_000_000, read_iops=4883, hz=HZ))
    path = p.save(tmp_path / "t.json")
    doc = json.loads(path.read_text())
    assert doc["model"]["throttle"] == {"read_bps": 20_000_000, "read_iops": 4883, "hz": HZ}
    assert DiskProfile.from_dict(doc).throttle == p.throttle
    assert "throttle" not in fast().to_dict()["model"]  # none: the key is absent
    with pytest.raises(ProfileError, match="CONFIG_HZ"):
        fast(HostThrottle(read_bps=1000))
    with pytest.raises(ProfileError, match="throttle"):
        fast(HostThrottle(read_bps=-1, hz=HZ))


def test_with_throttle_keeps_the_drive():
    base = DiskModel.from_profile("ide-7200:drive_cache=false")
    t = base.with_throttle(HostThrottle(read_bps=10**7, hz=HZ))
    assert not t.drive_cache and t.spec == base.spec
    np.testing.assert_array_equal(t.fparams, base.fparams)


def test_cli_throttle_refusals(tmp_path):
    from click.testing import CliRunner

    from seqheur.cli import cli

    data = tmp_path / "d.bin"
    data.write_bytes(b"\0" * 65536)
    runner = CliRunner()
    r = runner.invoke(cli, ["bench", "check-model", str(data), "-p", "vm-virtio",
                            "--throttle", "20MB", "--hz", "250"])
    assert r.exit_code == 1 and "not a block device" in r.output, r.output
    r = runner.invoke(cli, ["bench", "check-model", str(data), "-p", "vm-virtio", "--hz", "250"])
    assert r.exit_code == 1 and "go with --throttle" in r.output, r.output
    assert "Traceback" not in r.output


# -- against the live kernel ----------------------------------------------------------------
def _why_no_throttle() -> str | None:
    if os.geteuid() != 0:
        return "needs root (a loop device and a blkio cgroup)"
    if not Path("/sys/fs/cgroup/blkio/blkio.throttle.read_bps_device").exists():
        return "needs cgroup v1 blkio throttling"
    if shutil.which("losetup") is None:
        return "needs losetup"
    if not os.path.isdir("/dev/shm"):
        return "needs /dev/shm for the loop device's image"
    return None


@pytest.mark.kernel
def test_model_matches_the_live_kernels_throttle(tmp_path):
    """``check-model --throttle 20MB`` on a loop device over tmpfs: the device itself takes
    microseconds, so the response times are the kernel's throttle; the model with the same
    throttle must meet the project's drive-model target (demerit <= 15 % of the mean, total
    within +-10 %). The device's own speed comes from ``seqheur bench --quick`` of it."""
    why = _why_no_throttle()
    if why:
        pytest.skip(why)
    from click.testing import CliRunner

    from seqheur.cli import cli

    image = Path("/dev/shm") / f"seqheur-throttle-test-{os.getpid()}.img"
    with open(image, "wb") as fh:
        fh.write(os.urandom(256 << 20))
    dev = subprocess.run(["losetup", "-r", "-f", "--show", "--direct-io=on", str(image)],
                         capture_output=True, text=True, check=True).stdout.strip()
    try:
        runner = CliRunner()
        prof = tmp_path / "loop.json"
        r = runner.invoke(cli, ["bench", dev, "--quick", "-o", str(prof), "--name", "loop"])
        assert r.exit_code == 0, r.output
        r = runner.invoke(cli, ["bench", "check-model", dev, "-p", str(prof), "--throttle",
                                "20MB", "--time", "12", "--json"])
        assert r.exit_code == 0, r.output
        doc = json.loads(r.stdout)
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)
        image.unlink()
    assert doc["throttle"]["read_bps"] == 20_000_000
    assert doc["ops"] > 500
    assert 0.9 <= doc["total_time_ratio"] <= 1.1, doc
    assert doc["demerit_percent"] <= 15.0, doc


def test_the_check_table_names_the_throttle():
    from seqheur.commands.disk import _check_table

    fig = {"ops": 10, "measured_mean_ms": 1.0, "predicted_mean_ms": 1.1, "measured_p50_ms": 0.1,
           "predicted_p50_ms": 0.1, "measured_p99_ms": 9.0, "predicted_p99_ms": 9.5,
           "demerit": 0.1, "demerit_percent": 10.0, "total_time_ratio": 1.1}
    res = {"target": "/dev/loop9", "profile": "loop", "stream": {"seed": 1, "cut_by_time": False},
           "throttle": {"read_bps": 20_000_000, "read_iops": 4883, "hz": HZ}, "components": {},
           "target_rule": {"demerit_percent_max": 15.0, "total_time_ratio": [0.9, 1.1]},
           "meets_target": True, **fig}
    head = _check_table(res).splitlines()[0]
    assert "behind a read throttle of 20000000 B/s and 4883 reads/s" in head
    assert "throttle" not in _check_table({**res, "throttle": None}).splitlines()[0]
