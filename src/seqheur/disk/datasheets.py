"""The modelled profiles ``ide-7200`` and ``scsi-10k``: datasheet figures -> DiskProfile.

Ellard & Seltzer 2003 (§4) ran their benchmarks on a Western Digital WD200BB-75CAA0 (IDE,
7200 rpm, on a VIA 82C686 ATA66 controller) and an IBM DDYS-T36950N (Ultrastar 36LZX, SCSI,
10,000 rpm, on an Adaptec 29160 Ultra160 card). Every number below names its source and its
status:

* ``datasheet``: printed in the maker's specification (or a textbook quoting it);
* ``derived``: computed from datasheet numbers by the formula given;
* ``assumed``: not published for that drive; the value and the reason are stated;
* ``calibrated``: fitted by :func:`calibrate` to one number of the paper's Table 1, so the
  other Table 1 numbers are out-of-sample checks, not fits.

``python -m seqheur.disk.datasheets`` rewrites ``profiles/ide-7200.json`` and
``profiles/scsi-10k.json``; a test checks the bundled files equal this module's output.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .profile import PROFILE_DIR, DiskProfile, DriveCache

KiB = 1024
MB = 1e6

WD_SHEET = ("Western Digital, WD Caviar WD400BB specifications (model WD400BB-75CLB0; same "
            "20 GB/platter 7200 rpm Caviar BB family as the paper's one-platter WD200BB), "
            "mirror http://www.lyberty.com/tech/hard_drives/WD_Caviar_WD400BB_specs/index.html")
IBM_36LZX = ("IBM Ultrastar 36LZX (DDYS-T36950) figures as quoted in Bryant & O'Hallaron, "
             "Computer Systems: A Programmer's Perspective, Fig. 6.13 (source www.storage.ibm.com): "
             "10,000 rpm, avg rotational latency 2.99 ms, avg seek 4.9 ms, sustained 21-36 MB/s, "
             "11 zones, 15,110 cylinders, 36 GB")
IBM_36LZX_SPEC = ("IBM Ultrastar 36LZX hard disk drive specifications S31L-8989-05 (June 2000), "
                  "mode page 0C: Maximum Number of Notches = 0Bh (11 zones)")
IBM_146Z10 = ("IBM Ultrastar 146Z10 hard disk drive specifications §4.5.2.2: full stroke seek "
              "10.5 ms read (typical) — a later IBM 10K drive; the 36LZX figure was not found")
IBM_DDRS = ("IBM Ultrastar DDRS-3xxxx OEM specification §3.4.1 and mode page 08h: command "
            "overhead < 0.40 ms (cache miss), < 0.03 ms (cache hit); cache segments 3x128K or "
            "6x64K — the IBM SCSI generation before the 36LZX; the 36LZX's own figures were not found")
PAPER = ("Ellard & Seltzer, NFS Tricks and Benchmarking Traps, FREENIX 2003, "
         "§4 (testbed) and Table 1")


def _zones(capacity: float, n: int, outer_mbps: float, inner_mbps: float) -> tuple[list[int], list[float]]:
    """n equal-capacity zones whose rate follows constant linear density.

    Under constant linear density, rate ∝ radius r and the capacity outside radius r is
    ∝ (r_o² - r²); so at capacity fraction c the rate is
    outer * sqrt(1 - c * (1 - k²)), k = inner/outer. Each zone gets the rate at its middle.
    """
    k = inner_mbps / outer_mbps
    starts, rates = [], []
    for i in range(n):
        c = (i + 0.5) / n
        starts.append(int(capacity * i / n) // 4096 * 4096)
        rates.append(round(outer_mbps * math.sqrt(1.0 - c * (1.0 - k * k)), 3))
    # the first and last zones keep the datasheet's extreme rates exactly
    rates[0], rates[-1] = outer_mbps, inner_mbps
    return starts, rates


def _seek_curve(capacity: float, cylinders: int, track_bytes: float, t2t_s: float, avg_s: float,
                full_s: float, rot_s: float) -> tuple[list[float], list[float], dict[str, float]]:
    """Positioning time (seek + average rotational latency) by byte distance.

    Seek time by stroke fraction x: t(x) = a + b·sqrt(x) + c·x (the square-root-then-linear
    shape of Ruemmler & Wilkes 1994, "An introduction to disk drive modeling"), through three
    datasheet points: t(1 cylinder) = track-to-track, t(1/3) = average (the mean distance of
    uniformly random seeks is 1/3 of the stroke), t(1) = full stroke. Byte distance -> stroke
    fraction as d / capacity (ignores ZCAV's denser outer cylinders). Distances within one
    track pay only the rotational latency.
    """
    x1 = 1.0 / cylinders
    m = np.array([[1, math.sqrt(x1), x1], [1, math.sqrt(1 / 3), 1 / 3], [1, 1, 1]])
    a, b, c = np.linalg.solve(m, np.array([t2t_s, avg_s, full_s]))
    dist: list[float] = [512.0, float(int(track_bytes))]
    secs: list[float] = [rot_s, rot_s]
    d = capacity / cylinders
    while d < capacity:
        x = d / capacity
        dist.append(float(int(d)))
        secs.append(round(float(rot_s + a + b * math.sqrt(x) + c * x), 7))
        d *= 2.0
    dist.append(float(int(capacity)))
    secs.append(round(rot_s + full_s, 7))
    return dist, secs, {"a_s": float(a), "b_s": float(b), "c_s": float(c)}


def stride_reads(file_bytes: int, strides: int, block: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Disk reads of the paper's k-stride reader when the server does no read-ahead: block i of
    each of the k sub-streams in turn (offsets 0, n/k, 2n/k, ...), each block read once."""
    per = file_bytes // strides // block
    i = np.repeat(np.arange(per, dtype=np.int64), strides)
    s = np.tile(np.arange(strides, dtype=np.int64), per)
    offset = s * (file_bytes // strides) + i * block
    return np.zeros(offset.size, np.int64), offset, np.full(offset.size, block, np.int64)


# The paper's reader: a 256 MB file (§7, Table 1); FreeBSD 4.x FFS reads it in 16 KiB blocks
# (the newfs default block size of FreeBSD 4.x; assumption stated in docs/disk-bench.md).
TABLE1_FILE = 256 * 1024 * 1024
TABLE1_BLOCK = 16 * KiB
TABLE1 = {"ide-7200": {2: 7.66, 4: 7.83, 8: 5.26}, "scsi-10k": {2: 9.49, 4: 8.52, 8: 8.21}}


def stride_mbps(profile: DiskProfile, strides: int, *, drive_cache: bool = True) -> float:
    """Modelled disk throughput (MB/s) of the paper's k-stride reader without server read-ahead."""
    from .model import DiskModel

    f, o, n = stride_reads(TABLE1_FILE, strides, TABLE1_BLOCK)
    return DiskModel(profile, drive_cache=drive_cache).run(f, o, n).throughput_mbps


def calibrate(profile: DiskProfile, target_mbps: float) -> int:
    """The smallest non-preemptive drive read-ahead (16 KiB steps, up to the segment) for which
    the modelled disk-only 2-stride throughput reaches ``target_mbps``.

    Table 1 is end-to-end NFS throughput, which can only be lower than what the disk delivers,
    so the disk model must at least reach it: the smallest read-ahead that does is the least
    drive-cache help that explains the paper. Falls back to the full segment.
    """
    for mp in range(0, profile.cache.segment_bytes + 1, 16 * KiB):
        p = profile.replace(cache=DriveCache(**{**profile.cache.__dict__, "min_prefetch_bytes": mp}))
        if stride_mbps(p, 2) >= target_mbps:
            return mp
    return profile.cache.segment_bytes


def _profile(name: str, *, description: str, device: dict[str, Any], capacity: float,
             rpm: float, rot_s: float, t2t_s: float, avg_s: float, full_s: float, cylinders: int,
             zones_n: int, outer: float, inner: float, host: float, over: float, hit_over: float,
             segments: int, segment_bytes: int, sources: dict[str, str]) -> DiskProfile:
    track_inner = inner * MB * 60.0 / rpm
    dist, secs, fit = _seek_curve(capacity, cylinders, track_inner, t2t_s, avg_s, full_s, rot_s)
    starts, rates = _zones(capacity, zones_n, outer, inner)
    cache = DriveCache(segments=segments, segment_bytes=segment_bytes,
                       readahead_bytes=segment_bytes, min_prefetch_bytes=0, hit_overhead_s=hit_over)
    base = DiskProfile(
        name=name, kind="modelled", description=description, capacity_bytes=int(capacity),
        seek_distance_bytes=tuple(dist), seek_seconds=tuple(secs),
        random_positioning_s=round(rot_s + avg_s, 7),
        zone_start_bytes=tuple(starts), zone_mbps=tuple(rates), host_mbps=host,
        command_overhead_s=over, cache=cache, device=device,
        provenance={"kind": "modelled", "from": "datasheet figures of the paper's era",
                    "generator": "seqheur.disk.datasheets", "seek_fit": fit}, sources=sources)
    mp = calibrate(base, TABLE1[name][2])
    prof = base.replace(cache=DriveCache(**{**cache.__dict__, "min_prefetch_bytes": mp}))
    checks = {f"stride{k}": {"paper_mbps": v, "model_mbps": round(stride_mbps(prof, k), 2),
                             "model_no_drive_cache_mbps":
                                 round(stride_mbps(prof, k, drive_cache=False), 2)}
              for k, v in TABLE1[name].items()}
    prov = {**prof.provenance, "table1_check": checks,
            "table1_check_note": ("disk-only throughput of the k-stride reader with no server "
                                  "read-ahead (16 KiB FFS blocks, 256 MB file, back-to-back); "
                                  "stride2 is the calibration point (model >= paper, because the "
                                  "paper's figure is end-to-end NFS), stride4/8 are out of sample")}
    return prof.replace(provenance=prov)


def ide_7200() -> DiskProfile:
    rot = 4.2e-3
    src = {
        "capacity_bytes": f"datasheet: 20 GB nominal from the model name WD200BB (decimal GB, {WD_SHEET})",
        "rpm": f"datasheet: 7200 rpm ({WD_SHEET})",
        "rotational_latency": f"datasheet: average latency 4.2 ms ({WD_SHEET})",
        "seek": f"datasheet: read seek track-to-track 2.0 ms, average 8.9 ms, full stroke 21 ms ({WD_SHEET})",
        "positioning": "derived: seek(x) = a + b*sqrt(x) + c*x through the three seek figures, plus 4.2 ms rotational latency (see datasheets._seek_curve)",
        "random_positioning_s": "derived: average seek 8.9 ms + average latency 4.2 ms",
        "cylinders": "assumed: 16,383 (the drive's reported ATA CHS cylinder count; the physical count is not published) — only sets where the track-to-track point sits on the curve",
        "zones": f"datasheet: buffer-to-disk 400 Mbit/s maximum (50 MB/s) and 244 Mbit/s minimum (30.5 MB/s) ({WD_SHEET}); derived: rates between them by constant linear density; assumed: 16 equal-capacity zones (the count is not published)",
        "host_mbps": f"datasheet: 66.6 MB/s Ultra ATA mode 4 ({WD_SHEET}); the paper's VIA 82C686 controller is ATA66 ({PAPER})",
        "command_overhead_s": f"datasheet: controller overhead 0.3 ms average ({WD_SHEET})",
        "drive_cache.hit_overhead_s": "datasheet: the same 0.3 ms controller overhead (no separate hit figure is published)",
        "drive_cache.buffer": f"datasheet: buffer size 2 MB ({WD_SHEET})",
        "drive_cache.segments": "assumed: the 2 MB buffer as 16 segments of 128 KiB (WD does not publish its segmentation)",
        "drive_cache.readahead_bytes": "assumed: read ahead until the segment is full",
        "drive_cache.min_prefetch_bytes": f"calibrated by seqheur.disk.datasheets.calibrate: the smallest non-preemptive read-ahead for which the modelled disk-only 2-stride throughput reaches Table 1 ide1 UDP/Default s=2 = 7.66 MB/s (end-to-end NFS can only be slower than the disk) ({PAPER})",
    }
    return _profile(
        "ide-7200",
        description=("7200 rpm IDE disk of 2002 modelled on the paper's WD200BB-75CAA0 "
                     "(WD Caviar BB datasheet figures) behind an ATA66 controller"),
        device={"model": "WD200BB-75CAA0 (modelled)", "interface": "ATA66",
                "rotational": True, "logical_block_size": 512, "rpm": 7200,
                "buffer_bytes": 2 * 1024 * 1024},
        capacity=20e9, rpm=7200, rot_s=rot, t2t_s=2.0e-3, avg_s=8.9e-3, full_s=21e-3,
        cylinders=16383, zones_n=16, outer=50.0, inner=30.5, host=66.6, over=0.3e-3,
        hit_over=0.3e-3, segments=16, segment_bytes=128 * KiB, sources=src)


def scsi_10k() -> DiskProfile:
    src = {
        "capacity_bytes": f"datasheet: 36.9 GB nominal from the model name DDYS-T36950 ({IBM_36LZX})",
        "rpm": f"datasheet: 10,000 rpm ({IBM_36LZX})",
        "rotational_latency": f"datasheet: 2.99 ms ({IBM_36LZX})",
        "seek": f"datasheet: average seek 4.9 ms ({IBM_36LZX}); full stroke 10.5 ms ({IBM_146Z10}); assumed: track-to-track 0.6 ms (not found for the 36LZX; typical of 10K rpm SCSI drives of 2000)",
        "positioning": "derived: seek(x) = a + b*sqrt(x) + c*x through the three seek figures, plus 2.99 ms rotational latency",
        "random_positioning_s": "derived: average seek 4.9 ms + average latency 2.99 ms",
        "cylinders": f"datasheet: 15,110 ({IBM_36LZX})",
        "zones": f"datasheet: 11 zones ({IBM_36LZX_SPEC}); sustained 36 MB/s outer, 21 MB/s inner ({IBM_36LZX}); derived: rates between them by constant linear density",
        "host_mbps": f"derived: 133 MB/s, the 32-bit 33 MHz PCI bus of the paper's Pentium III server; the Adaptec 29160's Ultra160 SCSI bus (160 MB/s) is faster ({PAPER})",
        "command_overhead_s": f"datasheet (family): 0.40 ms cache miss ({IBM_DDRS})",
        "drive_cache.hit_overhead_s": f"datasheet (family): 0.03 ms cache hit ({IBM_DDRS})",
        "drive_cache.segments": f"datasheet (family): 6 segments of 64 KiB ({IBM_DDRS})",
        "drive_cache.readahead_bytes": "assumed: read ahead until the segment is full",
        "drive_cache.min_prefetch_bytes": f"calibrated by seqheur.disk.datasheets.calibrate: the smallest non-preemptive read-ahead for which the modelled disk-only 2-stride throughput reaches Table 1 scsi1 UDP/Default s=2 = 9.49 MB/s ({PAPER})",
        "tagged_queues": "not modelled: the model serves reads in issue order (the paper's tagged-queue reordering, §5.2, is out of scope)",
    }
    return _profile(
        "scsi-10k",
        description=("10,000 rpm SCSI disk of 2000 modelled on the paper's IBM DDYS-T36950N "
                     "(Ultrastar 36LZX) behind an Ultra160 adapter on 32-bit PCI"),
        device={"model": "IBM DDYS-T36950N (modelled)", "interface": "Ultra160 SCSI",
                "rotational": True, "logical_block_size": 512, "rpm": 10000},
        capacity=36.9e9, rpm=10000, rot_s=2.99e-3, t2t_s=0.6e-3, avg_s=4.9e-3, full_s=10.5e-3,
        cylinders=15110, zones_n=11, outer=36.0, inner=21.0, host=133.0, over=0.40e-3,
        hit_over=0.03e-3, segments=6, segment_bytes=64 * KiB, sources=src)


MODELLED = {"ide-7200": ide_7200, "scsi-10k": scsi_10k}


def main() -> None:
    for name, make in MODELLED.items():
        path = make().save(PROFILE_DIR / f"{name}.json")
        print(path)


if __name__ == "__main__":  # pragma: no cover
    main()
