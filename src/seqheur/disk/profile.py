"""DiskProfile: what seqheur knows about one disk, as JSON with a schema version.

A profile has two parts (docs/disk-bench.md):

* ``model`` — the parameters the disk-time model (:mod:`seqheur.disk.model`) runs on:
  capacity, positioning time by seek distance (seek + rotational latency), the average random
  positioning time, zone (ZCAV) media rates, the host-side transfer ceiling, per-command
  overheads and the drive's segmented read cache with its read-ahead.
* ``tables`` — what a bench measured (or a datasheet gave): sequential throughput by request
  size, random-read latency percentiles by size, latency by seek distance, throughput by
  position, queue-depth scaling, identical-block latency, first touch vs re-read, stream probe.

Every profile says where it came from: ``kind`` is ``"measured"`` (``provenance`` holds host,
time, tool version, O_DIRECT, repetitions) or ``"modelled"`` (``sources`` names the datasheet or
paper behind every number). Bundled profiles live in ``seqheur/disk/profiles/*.json`` and are
found by name with :func:`load_profile`; :func:`registered_profiles` lists them.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ProfileError
from ..io import write_json

SCHEMA = "seqheur.disk-profile"
SCHEMA_VERSION = 1
KINDS = ("measured", "modelled")
PROFILE_DIR = Path(__file__).resolve().parent / "profiles"

# The tables a profile may hold and the keys each row must have (more keys are allowed).
TABLE_KEYS: dict[str, tuple[str, ...]] = {
    "sequential": ("size", "mbps"),
    "random": ("size", "p50_s"),
    "seek": ("distance_bytes", "p50_s"),
    "zones": ("position_bytes", "mbps"),
    "queue_depth": ("depth", "size", "iops"),
    "cached": ("size", "p50_s"),
    "first_touch": ("mode", "p50_s"),
    "streams": ("streams", "p50_s"),
    "idle_gap": ("gap_s", "p50_s"),
}


@dataclass(frozen=True)
class DriveCache:
    """The drive's own segmented read cache (track buffer) and its read-ahead.

    ``segments`` segments of ``segment_bytes`` each, replaced LRU. After a media read the drive
    keeps reading ahead up to ``readahead_bytes`` past the request (never more than fills the
    segment). The first ``min_prefetch_bytes`` of that read-ahead are not preempted by the next
    command (SCSI caching mode page "Minimum Pre-fetch"); the rest happens only in idle time.
    A later read found in a segment costs ``hit_overhead_s`` plus the bus transfer.
    ``segments == 0`` means no drive cache.
    """

    segments: int = 0
    segment_bytes: int = 0
    readahead_bytes: int = 0
    min_prefetch_bytes: int = 0
    hit_overhead_s: float = 0.0

    @property
    def enabled(self) -> bool:
        return self.segments > 0 and self.segment_bytes > 0


@dataclass(frozen=True)
class HostThrottle:
    """A Linux blk-throttle read limit in front of the device: a cgroup's
    ``blkio.throttle.read_bps_device`` / ``read_iops_device`` (cgroup v1; ``io.max`` ``rbps`` /
    ``riops`` in v2). ``read_bps``/``read_iops`` 0: no limit of that kind. ``hz``: the
    kernel's ``CONFIG_HZ`` (the throttle counts time in jiffies of 1/hz s and budgets it in
    slices of hz/10 jiffies). The model (:func:`seqheur.disk.model.service_kernel`) follows
    the kernel's rules, docs/disk-bench.md "A throttled device"."""

    read_bps: int = 0
    read_iops: int = 0
    hz: int = 0

    @property
    def enabled(self) -> bool:
        return self.read_bps > 0 or self.read_iops > 0


@dataclass(frozen=True)
class DiskProfile:
    """One disk, measured or modelled. Model parameters first, then the raw tables.

    Units: bytes, seconds, MB/s with MB = 10**6 bytes (the drive makers' and fio's unit).
    """

    name: str
    kind: str
    description: str
    capacity_bytes: int
    # positioning time (seek + rotational latency, no transfer) by absolute seek distance
    seek_distance_bytes: tuple[float, ...] = ()
    seek_seconds: tuple[float, ...] = ()
    random_positioning_s: float = 0.0
    # zone table: zone i starts at zone_start_bytes[i] and transfers at zone_mbps[i]
    zone_start_bytes: tuple[int, ...] = (0,)
    zone_mbps: tuple[float, ...] = (100.0,)
    host_mbps: float = 1e9
    command_overhead_s: float = 0.0
    cache: DriveCache = field(default_factory=DriveCache)
    throttle: HostThrottle = field(default_factory=HostThrottle)
    device: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check(self)

    # -- views ----------------------------------------------------------------------------
    @property
    def has_seek_curve(self) -> bool:
        return len(self.seek_distance_bytes) >= 2

    def summary(self) -> dict[str, Any]:
        """One line of facts for ``seqheur profiles``."""
        where = self.provenance.get("where") or self.provenance.get("from") or ""
        when = self.provenance.get("when", "")
        return {
            "name": self.name,
            "kind": self.kind,
            "capacity_gb": round(self.capacity_bytes / 1e9, 1),
            "random_ms": round(self.random_positioning_s * 1e3, 3),
            "media_mbps": [round(min(self.zone_mbps), 1), round(max(self.zone_mbps), 1)],
            "host_mbps": round(self.host_mbps, 1),
            "drive_cache": (f"{self.cache.segments}x{self.cache.segment_bytes // 1024}KiB"
                            if self.cache.enabled else "none"),
            "where": where,
            "when": when,
            "description": self.description,
        }

    def replace(self, **changes: Any) -> "DiskProfile":
        return dataclasses.replace(self, **changes)

    # -- JSON -----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "name": self.name,
            "kind": self.kind,
            "description": self.description,
            "device": self.device,
            "provenance": self.provenance,
            "model": {
                "capacity_bytes": self.capacity_bytes,
                "positioning": {"distance_bytes": list(self.seek_distance_bytes),
                                "seconds": list(self.seek_seconds)},
                "random_positioning_s": self.random_positioning_s,
                "zones": {"start_bytes": list(self.zone_start_bytes),
                          "mbps": list(self.zone_mbps)},
                "host_mbps": self.host_mbps,
                "command_overhead_s": self.command_overhead_s,
                "drive_cache": dataclasses.asdict(self.cache),
                **({"throttle": dataclasses.asdict(self.throttle)} if self.throttle.enabled
                   else {}),
            },
            "tables": self.tables,
            "sources": self.sources,
        }

    @classmethod
    def from_dict(cls, doc: dict[str, Any], *, origin: str = "<dict>") -> "DiskProfile":
        if not isinstance(doc, dict):
            raise ProfileError(f"{origin}: a disk profile is a JSON object")
        if doc.get("schema") != SCHEMA:
            raise ProfileError(f"{origin}: not a seqheur disk profile (schema={doc.get('schema')!r})")
        version = doc.get("schema_version")
        if version != SCHEMA_VERSION:
            raise ProfileError(f"{origin}: unsupported profile schema_version {version!r} "
                               f"(this seqheur reads {SCHEMA_VERSION})")
        try:
            m = doc["model"]
            pos = m.get("positioning") or {}
            zones = m["zones"]
            cache = DriveCache(**(m.get("drive_cache") or {}))
            throttle = HostThrottle(**(m.get("throttle") or {}))
            return cls(
                name=str(doc["name"]),
                kind=str(doc["kind"]),
                description=str(doc.get("description", "")),
                capacity_bytes=int(m["capacity_bytes"]),
                seek_distance_bytes=tuple(float(x) for x in pos.get("distance_bytes", ())),
                seek_seconds=tuple(float(x) for x in pos.get("seconds", ())),
                random_positioning_s=float(m["random_positioning_s"]),
                zone_start_bytes=tuple(int(x) for x in zones["start_bytes"]),
                zone_mbps=tuple(float(x) for x in zones["mbps"]),
                host_mbps=float(m["host_mbps"]),
                command_overhead_s=float(m.get("command_overhead_s", 0.0)),
                cache=cache,
                throttle=throttle,
                device=dict(doc.get("device") or {}),
                provenance=dict(doc.get("provenance") or {}),
                tables=dict(doc.get("tables") or {}),
                sources=dict(doc.get("sources") or {}),
            )
        except ProfileError as exc:
            raise ProfileError(f"{origin}: {exc}") from None
        except (KeyError, TypeError, ValueError) as exc:
            raise ProfileError(f"{origin}: malformed profile: {type(exc).__name__}: {exc}") from None

    def save(self, path: str | os.PathLike[str]) -> Path:
        return write_json(self.to_dict(), path)


def _check(p: DiskProfile) -> None:
    """Reject profiles the model cannot run on, naming the offending field."""
    if p.kind not in KINDS:
        raise ProfileError(f"kind must be one of {KINDS}, not {p.kind!r}")
    if p.capacity_bytes <= 0:
        raise ProfileError("model.capacity_bytes must be > 0")
    if len(p.seek_distance_bytes) != len(p.seek_seconds):
        raise ProfileError("model.positioning: distance_bytes and seconds differ in length")
    if any(b <= a for a, b in zip(p.seek_distance_bytes, p.seek_distance_bytes[1:])):
        raise ProfileError("model.positioning.distance_bytes must be strictly increasing")
    if any(s < 0 for s in p.seek_seconds) or p.random_positioning_s < 0:
        raise ProfileError("positioning times must be >= 0")
    if not p.zone_start_bytes or len(p.zone_start_bytes) != len(p.zone_mbps):
        raise ProfileError("model.zones: start_bytes and mbps must be non-empty and equal length")
    if p.zone_start_bytes[0] != 0:
        raise ProfileError("model.zones.start_bytes must begin at 0")
    if any(b <= a for a, b in zip(p.zone_start_bytes, p.zone_start_bytes[1:])):
        raise ProfileError("model.zones.start_bytes must be strictly increasing")
    if any(r <= 0 for r in p.zone_mbps) or p.host_mbps <= 0:
        raise ProfileError("transfer rates (zones.mbps, host_mbps) must be > 0")
    if p.command_overhead_s < 0:
        raise ProfileError("model.command_overhead_s must be >= 0")
    c = p.cache
    if min(c.segments, c.segment_bytes, c.readahead_bytes, c.min_prefetch_bytes) < 0 \
            or c.hit_overhead_s < 0:
        raise ProfileError("model.drive_cache: values must be >= 0")
    if c.segments > 4096:
        raise ProfileError("model.drive_cache.segments must be <= 4096")
    t = p.throttle
    if min(t.read_bps, t.read_iops, t.hz) < 0:
        raise ProfileError("model.throttle: values must be >= 0")
    if t.enabled and t.hz < 10:
        raise ProfileError("model.throttle.hz (the kernel's CONFIG_HZ) must be >= 10 with a "
                           "read_bps or read_iops limit")
    for name, rows in p.tables.items():
        keys = TABLE_KEYS.get(name)
        if not isinstance(rows, list):
            raise ProfileError(f"tables.{name} must be a list of rows")
        if keys is None:
            continue
        for i, row in enumerate(rows):
            missing = [k for k in keys if k not in row]
            if missing:
                raise ProfileError(f"tables.{name}[{i}] lacks {', '.join(missing)}")


# -- registry --------------------------------------------------------------------------------
def registered_profiles() -> dict[str, Path]:
    """Bundled profiles by name (file stem), sorted."""
    if not PROFILE_DIR.is_dir():
        return {}
    return {p.stem: p for p in sorted(PROFILE_DIR.glob("*.json"))}


def load_profile(name_or_path: "str | os.PathLike[str] | DiskProfile") -> DiskProfile:
    """A bundled profile by name (``ide-7200``), or a profile JSON file by path."""
    if isinstance(name_or_path, DiskProfile):
        return name_or_path
    text = os.fspath(name_or_path)
    path = Path(text)
    bundled = registered_profiles()
    if text in bundled and not path.exists():
        path = bundled[text]
    elif not path.exists():
        names = ", ".join(bundled) or "none"
        raise ProfileError(f"{text}: no such profile file or bundled profile (bundled: {names})")
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ProfileError(f"{path}: not JSON: line {exc.lineno}: {exc.msg}") from None
    except OSError as exc:
        raise ProfileError(f"{path}: {exc.strerror}") from None
    return DiskProfile.from_dict(doc, origin=str(path))
