"""``seqheur lab validate``: measured against predicted, on real lab runs (docs/capture-lab.md).

For each scenario the export lives on an ext4 file system of its own, on a loop device with
direct I/O (``losetup --direct-io=on``) over an image file on tmpfs, so the only slow part of a
disk read is a cgroup v1 blkio throttle of known rate (``blkio.throttle.read_bps_device`` and
``read_iops_device`` for the loop device; the lab's processes run in that cgroup). The loop
device's ``read_ahead_kb`` is set, the export files' pages are dropped right before the clients
start (after the lab's ``nfs-cat`` check), and ``/sys/block/loopN/stat`` is read before and
after the clients. Measured: the clients' NFS throughput (bytes their READs returned / first
READ issued to last reply received, from the clients' own logs) and the reads and bytes the
loop device served. Predicted: the captured trace replayed through ``linux-6`` with the
device's ``read_ahead_kb`` and ``max_sectors_kb``, the ``ideal`` table, an ample cache, a disk
profile of the unthrottled loop device and ``closed-loop:preset=lab-loopback`` with the
scenario's slots, the run's throttle and the queue's largest request. Before the scenarios,
probes measure the loop device's cost per read and the host's per READ (:func:`probe_device`,
:func:`probe_scenarios`); the disk profile and the model's reply path and round trip come
from them, so that the prediction holds where the host, not the throttle, sets the pace.

The pure parts (stat deltas, errors, rows, the report) need nothing; the run needs root and
the lab packages.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import statistics
import warnings
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from ..errors import SeqheurError
from ..loopdev import BLKIO, kernel_hz, throttled
from .scenarios import LabError, Reader, Scenario, get

# The default validation set: sequential, strided, concurrent readers, random, several files
# on one connection, a sequential reader with 8 READs in flight (the server sees them
# reordered), and a kernel client (FUSE bridge, the client's own read-ahead).
DEFAULT_SCENARIOS = ("seq-v3", "stride4-v3", "seq4-v3", "random-v3", "interleave4-v3",
                     "val-seqdepth8-v3", "fuse-seq-ra128k-v3")

# Targets of the project: relative error bounds per figure.
TARGETS = {"disk_bytes": 0.05, "disk_ops": 0.10, "mbps": 0.20}
# Figures compared without a target: the reads submitted to the block layer (before merging).
UNTARGETED = ("disk_bios",)

SECTOR = 512


def _validation_scenarios() -> dict[str, Scenario]:
    """Scenarios only ``lab validate`` uses (the registered ones serve the rest)."""
    s16 = get("seq-v3").files
    return {s.name: s for s in (
        Scenario("val-seqdepth8-v3", "one 16 MiB file, sequential 64 KiB READs, 8 in flight "
                 "(the server's threads serve them out of order)", 3, s16,
                 (Reader("seq", tuple(f.name for f in s16), 64 * 1024, depth=8),),
                 tags=("validate",)),
    )}


def scenario(name: str) -> Scenario:
    extra = _validation_scenarios()
    return extra[name] if name in extra else get(name)


# -- the host probe --------------------------------------------------------------------------
#
# Above the throttle (a fast device) what sets a loopback run's pace is the host: client,
# loopback TCP, ganesha and their copies on the machine's few CPUs. The probe measures it with
# runs whose READs the server answers from its page cache (no disk read). Two keep enough
# READs in flight that the host, not a round trip, is the limit: small READs give the cost of
# a reply, large ones the cost of its bytes. The model takes the two as one reply path
# (``reply_us`` + bytes at ``host_mbps``, one reply at a time): a host whose CPUs are busy
# with every reply does not serve two at once faster than one. The third keeps one READ in
# flight: its time less the reply path and the server's CPU is the round trip (``rtt_us``:
# the wake-ups and hand-offs between client, kernel and server that only a READ alone pays).

PROBE_SIZES = (4 * 1024, 128 * 1024)  # the validation set's smallest and largest READ


def probe_scenarios() -> tuple[Scenario, Scenario, Scenario]:
    """The host probe's runs over the 16 MiB file of ``seq-v3`` (cached: the probe does not
    drop its pages): 4000 random 4 KiB READs with 16 in flight, 500 random 128 KiB READs
    with 8 in flight, 1000 random 4 KiB READs one at a time."""
    s16 = get("seq-v3").files
    names = tuple(f.name for f in s16)
    small, large = PROBE_SIZES
    return (Scenario("probe-4k-v3", "host probe: 4000 random 4 KiB READs of a cached 16 MiB "
                     "file, 16 in flight", 3, s16,
                     (Reader("random", names, small, depth=16, reads=4000, seed=13),),
                     tags=("validate",)),
            Scenario("probe-128k-v3", "host probe: 500 random 128 KiB READs of a cached 16 "
                     "MiB file, 8 in flight", 3, s16,
                     (Reader("random", names, large, depth=8, reads=500, seed=17),),
                     tags=("validate",)),
            Scenario("probe-4k-alone-v3", "host probe: 1000 random 4 KiB READs of a cached 16 "
                     "MiB file, one at a time", 3, s16,
                     (Reader("random", names, small, depth=1, reads=1000, seed=19),),
                     tags=("validate",)))


@dataclass(frozen=True)
class CostLine:
    """What one operation of ``bytes`` costs, as measured at two sizes: ``fixed_us`` plus
    its bytes at ``mbps`` (MB = 10^6 B; 0: no per-byte cost found). ``per_op_us``: the
    measured microseconds per operation at each size."""

    fixed_us: float
    mbps: float
    per_op_us: dict[int, float]

    @classmethod
    def fit(cls, per_op_s: dict[int, float]) -> "CostLine":
        """The line through two (bytes, seconds per operation) points; a per-byte cost that
        comes out zero or negative (the large operations no slower a byte) is none, and a
        fixed cost that comes out negative (the large ones more than proportionally slower)
        is none: the line then goes through the origin and the large operations' time."""
        (b0, t0), (b1, t1) = sorted(per_op_s.items())
        measured = {b: 1e6 * t for b, t in per_op_s.items()}
        slope = (t1 - t0) / (b1 - b0)  # s per byte
        if slope <= 0:
            return cls(1e6 * t0, 0.0, measured)
        if t0 - slope * b0 < 0:
            return cls(0.0, 1e-6 * b1 / t1, measured)
        return cls(1e6 * (t0 - slope * b0), 1e-6 / slope, measured)

    def time_us(self, nbytes: int) -> float:
        """The line's microseconds for one operation of ``nbytes``."""
        return self.fixed_us + (nbytes / self.mbps if self.mbps > 0 else 0.0)


@dataclass(frozen=True)
class HostCost:
    """The loopback host as the probe measured it: the reply path (``reply``: per reply and
    per byte, one reply at a time) and ``alone_us``, the time of a 4 KiB READ alone (one in
    flight) from the page cache; ``disk_reads``: what the device read during the probe (0
    when its READs were all served from the cache, as they should be)."""

    reply: CostLine
    alone_us: float
    disk_reads: int = 0

    def rtt_us(self, cpu_us: float) -> float:
        """The round trip that, with the reply path and ``cpu_us`` of server CPU, gives a
        READ alone the probe's time (at least 0)."""
        small = PROBE_SIZES[0]
        return max(0.0, self.alone_us - cpu_us - self.reply.time_us(small))

    def spec(self, cpu_us: float) -> str:
        """The closed-loop options that give the model this host."""
        return (f"reply_us={self.reply.fixed_us:.3f}:host_mbps={self.reply.mbps:.3f}:"
                f"rtt_us={self.rtt_us(cpu_us):.3f}")


# -- pure parts ------------------------------------------------------------------------------

def parse_block_stat(text: str) -> dict[str, int]:
    """``/sys/block/DEV/stat`` (Documentation/block/stat.rst): the read fields we use."""
    fields = text.split()
    if len(fields) < 4 or not all(f.isdigit() for f in fields):
        raise LabError(f"not a block device stat line: {text!r}")
    return {"read_ios": int(fields[0]), "read_merges": int(fields[1]),
            "read_sectors": int(fields[2]), "read_ticks_ms": int(fields[3])}


def stat_delta(before: str, after: str) -> dict[str, int]:
    """Reads completed and bytes read between two stat lines (fields 1 and 3 x 512)."""
    b, a = parse_block_stat(before), parse_block_stat(after)
    d = {k: a[k] - b[k] for k in a}
    if min(d.values()) < 0:
        raise LabError("block device counters went backwards (device reset during the run?)")
    return {"disk_ops": d["read_ios"], "disk_bytes": d["read_sectors"] * SECTOR,
            "merges": d["read_merges"]}


def rel_error(predicted: float | None, measured: float | None) -> float | None:
    """(predicted - measured) / measured; None when either is missing or measured is 0."""
    if predicted is None or measured is None or measured == 0:
        return None
    return (predicted - measured) / measured


def client_span(logs: Sequence[Any]) -> tuple[int, float]:
    """Bytes the clients' READs returned and seconds from the first READ issued to the last
    reply received (the logs' CLOCK_REALTIME stamps), over all clients."""
    issued = [t for log in logs for _, t, _, _, _ in log.issued]
    done = [(t, st) for log in logs for t, st, _ in log.done.values()]
    if not issued or not done:
        raise LabError("the clients logged no READ")
    nbytes = sum(st for _, st in done if st > 0)
    return nbytes, (max(t for t, _ in done) - min(issued)) / 1e9


def median_of_runs(runs: Sequence[tuple[dict[str, Any], dict[str, Any]]]
                   ) -> tuple[dict[str, Any], dict[str, Any]]:
    """A scenario run several times: (measured, predicted) of each run -> the median of each
    compared figure on either side (of each run's own capture's prediction), with the
    measured runs' figures kept under ``runs`` and their throughput's spread (largest over
    least) under ``mbps_spread``. One run is returned as it is."""
    if len(runs) == 1:
        return runs[0]
    keys = (*TARGETS, *UNTARGETED)

    def med(values: list[Any]) -> Any:
        if any(v is None for v in values):
            return None
        if all(isinstance(v, int) for v in values):
            return statistics.median_low(values)
        return statistics.median(values)

    measured = {k: med([m[k] for m, _ in runs]) for k in keys if k in runs[0][0]}
    predicted = {k: med([p[k] for _, p in runs]) for k in keys if k in runs[0][1]}
    rates = [m["mbps"] for m, _ in runs if m["mbps"]]
    measured["runs"] = [dict(m) for m, _ in runs]
    measured["mbps_spread"] = max(rates) / min(rates) if rates else None
    return measured, predicted


def row(name: str, measured: dict[str, Any], predicted: dict[str, Any],
        settings: dict[str, Any]) -> dict[str, Any]:
    """One report row: measured, predicted, relative errors and whether each target is met
    (the figures of :data:`UNTARGETED`, when given, with their errors only)."""
    out: dict[str, Any] = {"scenario": name}
    for key in (*TARGETS, *UNTARGETED):
        if key in UNTARGETED and key not in predicted:
            continue
        m, p = measured.get(key), predicted.get(key)
        err = rel_error(p, m)
        out[f"measured_{key}"] = m
        out[f"predicted_{key}"] = p
        out[f"error_{key}"] = err
        if key in TARGETS:
            out[f"target_{key}_met"] = None if err is None else abs(err) <= TARGETS[key]
    out["measured"] = {k: v for k, v in measured.items()
                       if k not in TARGETS and k not in UNTARGETED}
    out["settings"] = settings
    return out


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:+.1f}%"


def report(rows: Sequence[dict[str, Any]]) -> str:
    """A plain-text table of the rows (what ``lab validate`` prints without ``--json``)."""
    head = (f"{'scenario':<20} {'MB/s meas':>9} {'pred':>7} {'err':>7}  {'disk MB meas':>12} "
            f"{'pred':>7} {'err':>7}  {'ops meas':>8} {'pred':>6} {'err':>7}  "
            f"{'bios meas':>9} {'pred':>6}")
    lines = [head]
    for r in rows:
        def num(v: Any, fmt: str) -> str:
            return "—" if v is None else format(v, fmt)
        lines.append(
            f"{r['scenario']:<20} {num(r['measured_mbps'], '9.2f')} "
            f"{num(r['predicted_mbps'], '7.2f')} {_pct(r['error_mbps']):>7}  "
            f"{num(r['measured_disk_bytes'] and r['measured_disk_bytes'] / 1e6, '12.2f')} "
            f"{num(r['predicted_disk_bytes'] and r['predicted_disk_bytes'] / 1e6, '7.2f')} "
            f"{_pct(r['error_disk_bytes']):>7}  {num(r['measured_disk_ops'], '8d')} "
            f"{num(r['predicted_disk_ops'], '6d')} {_pct(r['error_disk_ops']):>7}  "
            f"{num(r.get('measured_disk_bios'), '9d')} {num(r.get('predicted_disk_bios'), '6d')}"
            + (f"  runs' MB/s spread x{r['measured']['mbps_spread']:.2f}"
               if r["measured"].get("mbps_spread") else ""))
    settings = rows[0]["settings"] if rows else {}
    host = settings.get("host_probe")
    for line, what in ((settings.get("device_probe"), "loop device probe (direct reads, one "
                        "at a time)"),
                       (host and host["reply"], "host probe (READs from the page cache, at "
                        "saturation)")):
        if line:
            sizes = ", ".join(f"{int(size) // 1024} KiB {us:.1f} µs" for size, us in
                              sorted(line["per_op_us"].items(), key=lambda x: int(x[0])))
            lines.append(f"{what}: {sizes} -> {line['fixed_us']:.1f} µs + bytes at "
                         f"{line['mbps']:.0f} MB/s")
    if host:
        lines.append(f"host probe, one READ at a time: 4 KiB {host['alone_us']:.1f} µs; the "
                     f"device read {host['disk_reads']} times during the host probe")
    met = {k: sum(1 for r in rows if r[f"target_{k}_met"]) for k in TARGETS}
    lines.append("targets met: " + ", ".join(
        f"{k} ±{100 * t:.0f}%: {met[k]}/{len(rows)}" for k, t in TARGETS.items()))
    return "\n".join(lines)


# The loop device's own read rate, unthrottled (MB/s, 10^6 B/s): measured on the reference
# machine on 2026-11-26 with `dd if=/dev/loopN of=/dev/null iflag=direct` over a 256 MiB
# image on /dev/shm attached with --direct-io=on, three runs each: 1.5-2.0 GB/s with 128 KiB
# reads, 1.0-2.7 GB/s with 1 MiB reads (docs/capture-lab.md). Behind a throttle of 20-200
# MB/s it adds 0.1-1 % to a read's time, so its spread hardly matters.
LOOP_MBPS = 1500.0


def loop_profile(capacity: int, bps: int, iops: int, hz: int,
                 device: CostLine | None = None) -> Any:
    """The loop device behind the run's read throttle as a DiskProfile: ``device`` (its cost
    per read as the run measured it: :func:`probe_device`) or :data:`LOOP_MBPS` and no
    command overhead, and nothing else (no positioning, no drive cache: the backing store is
    tmpfs), with blk-throttle's limits of ``bps`` bytes/s and ``iops`` reads/s in front
    (the kernel's rules, jiffies of 1/``hz`` s: :class:`seqheur.disk.profile.HostThrottle`;
    the closed-loop model holds and merges reads there)."""
    from ..disk.profile import DiskProfile, HostThrottle

    if device is not None and device.mbps > 0:
        rate, overhead = device.mbps, device.fixed_us * 1e-6
        source = ("O_DIRECT reads of the run's loop device, 4 KiB and 1 MiB: "
                  f"{device.fixed_us:.1f} µs a read + {device.mbps:.0f} MB/s")
    else:
        rate, overhead = LOOP_MBPS, 0.0
        source = "dd iflag=direct of the loop device, 2026-11-26 (LOOP_MBPS)"
    return DiskProfile(
        name=f"loop-tmpfs-throttle-{bps}", kind="modelled",
        description=f"loop device (direct I/O, tmpfs image) behind a blkio read throttle of "
                    f"{bps} B/s and {iops} reads/s",
        capacity_bytes=capacity, zone_mbps=(rate,), command_overhead_s=overhead,
        throttle=HostThrottle(read_bps=bps, read_iops=iops, hz=hz),
        sources={"zones": source, "positioning": "none: tmpfs backing store",
                 "command_overhead_s": source if overhead else "none assumed (not measured)",
                 "throttle": "blkio.throttle.read_bps_device and read_iops_device of the "
                             "run; hz: the kernel's CONFIG_HZ"})


# The loop device probe: reads of these sizes, this many bytes each, one at a time.
DEVICE_PROBE = ((4 * 1024, 32 << 20), (1 << 20, 64 << 20))


def probe_device(dev: str, rounds: int = 2) -> CostLine:
    """The loop device's cost per read, unthrottled: sequential O_DIRECT reads from its start
    through the disk bench's own read-only loop (:func:`seqheur.disk.bench.timed_reads`), of
    the sizes of :data:`DEVICE_PROBE`, one at a time; the least time a read of ``rounds``."""
    from ..disk.bench import BenchError, _seq_offsets, open_target, timed_reads

    per_op = {}
    try:
        with warnings.catch_warnings():
            # the bench warns that a mounted device's timings are noisy: the export is
            # mounted on purpose, and the probe measures the device as the scenarios use it
            warnings.filterwarnings("ignore", message=".* is in use", category=UserWarning)
            target = open_target(dev)
        with target:
            for size, nbytes in DEVICE_PROBE:
                count = nbytes // size
                per_op[size] = min(
                    timed_reads(target, size, _seq_offsets(0, nbytes, size), seconds=600.0,
                                max_ios=count).wall_s / count
                    for _ in range(rounds))
    except BenchError as exc:
        raise LabError(f"{dev}: the device probe failed: {exc}") from None
    return CostLine.fit(per_op)


def iops_for(bps: int) -> int:
    """The read_iops_device limit set with ``bps``: one 4 KiB read per 4096 bytes of the byte
    rate, so that blk-throttle's wait, the larger of the byte and the op wait, is the byte
    wait for every read of 4 KiB or more (the profile's throttle has both limits)."""
    return max(1, -(-bps // 4096))  # rounded up: the op wait never exceeds the byte wait


def slots_of(sc: Scenario) -> int:
    """READs the scenario's clients keep outstanding together (the model's shared slots):
    the sum of the libnfs readers' depths; a FUSE bridge is single-threaded: 1."""
    if sc.via == "fuse":
        return 1
    return sum(r.depth for r in sc.readers)


@dataclass(frozen=True)
class ValidateOptions:
    """``bps``: the read throttle, bytes/s (the iops throttle follows: :func:`iops_for`);
    ``read_ahead_kb``: the loop device's; ``table``: the replay's table model (``ideal``:
    ganesha's VFS backend keeps one open file descriptor per file, so one read-ahead state
    per file that is never evicted); ``timeout``: seconds per scenario's clients;
    ``probe``: measure the loop device's cost per read (:func:`probe_device`) and the host's
    per READ (:func:`probe_scenarios`) first, and give the model both (:class:`CostLine`);
    ``repeat``: run every scenario (and probe) that many times and compare the medians
    (:func:`median_of_runs`)."""

    bps: int = 20_000_000
    read_ahead_kb: int = 128
    table: str = "ideal"
    timeout: float = 120.0
    probe: bool = True
    repeat: int = 1

    def __post_init__(self) -> None:
        if self.repeat < 1:
            raise LabError(f"repeat must be >= 1, not {self.repeat}")


def predict(pcap: Path, sc: Scenario, ra_kb: int, io_kb: int, cache: int, profile: Any,
            table: str = "ideal", host: HostCost | None = None
            ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Replay a capture as the server's kernel would see it, on ``profile`` (the loop device
    behind the run's read throttle: :func:`loop_profile`), with the host's reply path when
    ``host`` is given (:class:`HostCost`); (figures, settings)."""
    from ..replay import replay

    detector = f"linux-6:ra_kb={ra_kb},io_kb={io_kb}"
    # the block layer merges up to the queue's max_sectors_kb (the read-ahead's io_kb)
    timing = (f"closed-loop:preset=lab-loopback:slots={slots_of(sc)}:"
              f"max_request={io_kb * 1024}")
    if host is not None:
        from ..timing.closed_loop import PRESETS

        timing += ":" + host.spec(float(PRESETS["lab-loopback"]["cpu_us"]))
    r = replay(str(pcap), detector, table, cache=cache, profile=profile, timing=timing,
               per_request=False)
    # the device's field 1 counts requests after merging; field 1 + 2 the reads submitted
    figures = {"mbps": r["e2e_throughput_mbps"], "disk_bytes": int(r["disk_bytes"]),
               "disk_ops": int(r["disk_requests"]), "disk_bios": int(r["disk_ops"])}
    settings = {"detector": detector, "table": table, "cache_bytes": cache,
                "profile": profile.name, "profile_mbps": profile.zone_mbps[0],
                "timing": r["timing"], "file_sizes": r["file_sizes"],
                "predicted_e2e_seconds": r["e2e_seconds"]}
    return figures, settings


# -- the machine side (root) -----------------------------------------------------------------

def read_block_stat(path: str) -> str:
    return Path(path).read_text()


def drop_file_pages(paths: Sequence[str]) -> None:
    """Write back and drop every cached page of ``paths`` (POSIX_FADV_DONTNEED)."""
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def environment_problems(scenarios: Sequence[Scenario]) -> list[str]:
    """Why ``lab validate`` cannot run here (empty: it can)."""
    from .runner import check_environment

    if os.geteuid() != 0:
        return ["needs root (a loop device, a blkio cgroup, the lab's namespaces)"]
    problems = [p if "make lab" not in p else p + "; needs the lab packages: make lab-deps"
                for p in check_environment(scenarios)]
    for tool in ("losetup", "mkfs.ext4"):
        if shutil.which(tool) is None:
            problems.append(f"missing {tool}")
    try:
        kernel_hz()
    except SeqheurError as exc:
        problems.append(str(exc))
    if not (BLKIO / "blkio.throttle.read_bps_device").exists():
        problems.append("needs cgroup v1 blkio throttling (/sys/fs/cgroup/blkio/blkio.throttle"
                        ".read_bps_device); cgroup v2 io.max is not supported yet")
    return problems


class LoopExport:
    """The export's file system: a scratch ext4 on a loop device reading its image with direct
    I/O (:class:`seqheur.loopdev.ScratchExt4`), the image on tmpfs (/dev/shm when it exists);
    removed on exit."""

    def __init__(self, size: int) -> None:
        from ..loopdev import ScratchExt4

        where = "/dev/shm" if os.path.isdir("/dev/shm") else None
        self.scratch = ScratchExt4(size, prefix="seqheur-validate-", direct_io=True,
                                   tmp_dir=where)
        self.mnt: Path | None = None

    @property
    def name(self) -> str:
        assert self.scratch.dev is not None
        return os.path.basename(self.scratch.dev)

    def sys(self, rel: str) -> Path:
        return Path(f"/sys/block/{self.name}/{rel}")

    def majmin(self) -> str:
        return self.sys("dev").read_text().strip()

    def __enter__(self) -> "LoopExport":
        try:
            self.mnt = Path(self.scratch.create())
            if self.sys("loop/dio").read_text().strip() != "1":
                raise LabError(f"{self.scratch.dev}: direct I/O refused by the backing file "
                               "system")
            return self
        except BaseException:
            self.__exit__()
            raise

    def __exit__(self, *exc: Any) -> None:
        self.scratch.remove()
        self.mnt = None


def validate(names: Sequence[str], options: ValidateOptions = ValidateOptions(),
             captures: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """Run each scenario on the throttled loop device, replay its capture, return the rows.
    ``captures``: a directory to keep NAME.pcap.gz + NAME.manifest.json in (else a temporary
    one, removed)."""
    from . import manifest as mf
    from .build import build_clients
    from .data import write_file
    from .runner import RunOptions, _Interrupted, _sigterm_as_interrupt, run_scenario
    from .runner import tool_versions

    scenarios = [scenario(n) for n in names]
    if not scenarios:
        raise LabError("no scenario given")
    problems = environment_problems(scenarios)
    if problems:
        raise LabError("lab validate cannot run here: " + "; ".join(problems))
    probes = probe_scenarios() if options.probe else ()
    specs = {f.name: f for s in (*scenarios, *probes) for f in s.files}
    total = sum(f.size for f in specs.values())
    binaries = build_clients()
    versions = tool_versions()
    keep = captures is not None
    out = Path(captures).resolve() if keep else Path(tempfile.mkdtemp(prefix="seqheur-val-"))
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".lab-work-", dir=out))
    os.chmod(work, 0o755)
    rows = []
    iops = iops_for(options.bps)
    try:
        with _sigterm_as_interrupt(), LoopExport(int(total * 1.25) + (64 << 20)) as loop:
            assert loop.mnt is not None
            export = loop.mnt / "export"
            export.mkdir()
            os.chmod(loop.mnt, 0o755)
            digests = {name: write_file(export, spec) for name, spec in specs.items()}
            os.sync()
            loop.sys("queue/read_ahead_kb").write_text(f"{options.read_ahead_kb}\n")
            ra_kb = int(loop.sys("queue/read_ahead_kb").read_text())
            io_kb = int(loop.sys("queue/max_sectors_kb").read_text())
            device = probe_device(str(loop.scratch.dev)) if options.probe else None
            profile = loop_profile(int(total * 1.25) + (64 << 20), options.bps, iops,
                                   kernel_hz(), device)
            cache = max(256 << 20, 2 * total)

            def run(sc: Scenario, block_stat: dict[str, Any], rep: int
                    ) -> tuple[dict[str, Any], Path, int, float, int]:
                """The manifest, where its capture is, the client bytes and seconds and the
                READs of one run (the ``rep``-th of the scenario)."""
                where = out if options.repeat == 1 else out / f"run{rep + 1}"
                where.mkdir(exist_ok=True)
                with throttled(loop.majmin(), options.bps, iops):
                    man = run_scenario(sc, where, work, export, digests, binaries, versions,
                                       RunOptions(timeout=options.timeout, keep_work=True),
                                       block_stat=block_stat)
                sdir = work / sc.name
                if sc.via == "fuse":
                    logs = [mf.parse_client_log(sdir / "bridge.log")]
                else:
                    logs = [mf.parse_client_log(sdir / f"client{i}.log")
                            for i in range(len(sc.readers))]
                nbytes, seconds = client_span(logs)
                shutil.rmtree(sdir, ignore_errors=True)
                return (man, where / man["pcap"]["file"], nbytes, seconds,
                        sum(len(log.done) for log in logs))

            def device_reads(man: dict[str, Any]) -> dict[str, int]:
                return stat_delta(man["block_device"]["before"], man["block_device"]["after"])

            host = None
            if probes:  # the export's pages stay cached (none dropped): the host's pace
                per_read, disk_reads = [], 0
                for sc in probes:
                    times = []
                    for rep in range(options.repeat):
                        man, _, _, seconds, nreads = run(
                            sc, {"stat": str(loop.sys("stat")), "files": []}, rep)
                        times.append(seconds / nreads)
                        disk_reads += device_reads(man)["disk_ops"]
                    per_read.append(statistics.median(times))
                host = HostCost(CostLine.fit(dict(zip(PROBE_SIZES, per_read[:2]))),
                                1e6 * per_read[2], disk_reads)
            for sc in scenarios:
                files = [str(export / f.name) for f in sc.files]
                runs = []
                for rep in range(options.repeat):
                    man, pcap, nbytes, seconds, _ = run(
                        sc, {"stat": str(loop.sys("stat")), "files": files}, rep)
                    disk = device_reads(man)
                    measured = {"mbps": nbytes / 1e6 / seconds if seconds > 0 else None,
                                "disk_bytes": disk["disk_bytes"],
                                "disk_ops": disk["disk_ops"], "client_bytes": nbytes,
                                "client_seconds": seconds,
                                "nfs_reads": man["checks"]["issued_reads"],
                                "disk_merges": disk["merges"],
                                "disk_bios": disk["disk_ops"] + disk["merges"]}
                    predicted, psettings = predict(pcap, sc, ra_kb, io_kb, cache, profile,
                                                   options.table, host)
                    runs.append((measured, predicted))
                measured, predicted = median_of_runs(runs)
                settings = {"device": loop.name, "read_ahead_kb": ra_kb,
                            "max_sectors_kb": io_kb, "throttle_read_bps": options.bps,
                            "throttle_read_iops": iops, "backing": "tmpfs image, direct I/O",
                            "clients_via": sc.via, **psettings, "repeat": options.repeat,
                            "device_probe": (None if device is None
                                             else dataclasses.asdict(device)),
                            "host_probe": None if host is None else dataclasses.asdict(host)}
                rows.append(row(sc.name, measured, predicted, settings))
    except (KeyboardInterrupt, _Interrupted) as exc:
        raise LabError(f"interrupted ({type(exc).__name__} {exc}); the lab's processes were "
                       "stopped, the loop device, its mount and the cgroup removed") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if not keep:
            shutil.rmtree(out, ignore_errors=True)
    return rows

