"""Disk models as a registry of the one shape (:class:`seqheur.registry.Registry`).

Every bundled profile (``seqheur/disk/profiles/*.json``: ``ide-7200``, ``scsi-10k``, ...) is
registered under its name with :class:`DiskParams`, the options of the disk-time model that
are not part of the profile: whether the drive's cache is used, a host-side transfer ceiling,
and the file layout. Spec strings use the grammar of :mod:`seqheur.options`::

    ide-7200                                  # the profile as measured/modelled
    ide-7200:drive_cache=false                # no segmented drive cache / drive read-ahead
    scsi-10k:start=0.75                       # files start 3/4 into the disk (slower zones)
    ide-7200:extent=64KiB,seed=3              # a fragmented file system: 64 KiB extents
    ide-7200:host_mbps=33.3                   # cap transfers at 33.3 MB/s (a slower bus)

``parse_disk(spec)`` gives a :class:`DiskSpec` (``.profile()``, ``.layout()``, ``.model()``);
:meth:`seqheur.disk.model.DiskModel.from_profile` accepts such a spec wherever it accepts a
bundled name, so ``replay(..., profile="ide-7200:drive_cache=false")`` works.
:func:`register_disk` adds a profile (a :class:`DiskProfile`, a JSON path or a loader) by name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..errors import SpecError
from ..options import param
from ..registry import Entry, Registry, Spec
from .profile import DiskProfile, load_profile, registered_profiles


@dataclass(frozen=True)
class DiskParams:
    """Options of the disk-time model on top of a profile (all default to the profile as is)."""

    drive_cache: bool = param(True, doc="use the drive's segmented read cache and its "
                              "read-ahead; false: every read goes to the media")
    host_mbps: float = param(0.0, unit="MB/s", doc="host-side transfer ceiling, MB = 10^6 "
                             "bytes; 0 = the profile's")
    start: float = param(0.0, unit="fraction", doc="where the first file begins, a fraction "
                         "of the capacity in [0, 1); 0 = outer edge, the fastest zone")
    extent: int = param(0, unit="bytes", doc="0 = contiguous files; else files are cut into "
                        "extents of this size, a multiple of 512, shuffled: a fragmented "
                        "file system")
    seed: int = param(0, doc="shuffle seed of a fragmented layout")

    def __post_init__(self) -> None:
        if self.host_mbps < 0:
            raise ValueError(f"host_mbps must be >= 0, not {self.host_mbps}")
        self.layout()  # Layout checks start and extent

    def layout(self) -> Any:
        from .model import Layout

        return Layout(start=self.start, extent_bytes=self.extent, seed=self.seed)

    @property
    def has_layout(self) -> bool:
        return (self.start, self.extent, self.seed) != (0.0, 0, 0)


def _register_bundled() -> None:
    for name, path in registered_profiles().items():
        register_disk(name, profile=path, builtin=True)


DISKS = Registry("disk profile", load=_register_bundled)


def register_disk(name: str, *,
                  profile: "DiskProfile | str | os.PathLike[str] | Callable[[], DiskProfile]",
                  doc: str = "", source: str = "", params: type = DiskParams,
                  replace: bool = False, builtin: bool = False) -> Entry:
    """Register a disk profile under ``name``: a :class:`DiskProfile`, a profile JSON path, or
    a zero-argument loader. ``doc``/``source`` default to the profile's description and
    provenance (read from the file now for a path)."""
    if isinstance(profile, DiskProfile):
        prof = profile

        def loader() -> DiskProfile:
            return prof
    elif callable(profile):
        loader = profile  # type: ignore[assignment]
        prof = None
    else:
        path = Path(os.fspath(profile))

        def loader() -> DiskProfile:
            return load_profile(path)

        prof = loader() if not doc else None
        source = source or str(path)
    if prof is not None:
        doc = doc or prof.description
        if not source:
            src = prof.sources or prof.provenance
            source = "; ".join(f"{k}: {v}" for k, v in list(src.items())[:3]) if src else ""
    return DISKS.register(name, params=params, impl=loader, doc=doc, source=source,
                          builtin=builtin, replace=replace, kind=(prof.kind if prof else ""))


@dataclass(frozen=True)
class DiskSpec(Spec):
    """A parsed disk spec: the profile name, :class:`DiskParams` and the registry entry."""

    def profile(self) -> DiskProfile:
        return self.entry.impl()

    def layout(self) -> Any:
        return self.params.layout()

    def model(self, layout: Any = None, *, drive_cache: bool = True,
              host_mbps: float | None = None) -> Any:
        """The :class:`~seqheur.disk.model.DiskModel`; explicit arguments combine with the
        spec's options (``drive_cache`` both must allow; a ``layout`` argument only if the
        spec sets none)."""
        from .model import DiskModel, Layout

        p = self.params
        if p.has_layout and layout is not None and layout != Layout():
            raise SpecError(f"disk profile {self.spec!r}: give the layout in the spec or as "
                            f"layout=, not both")
        lay = self.layout() if p.has_layout or layout is None else layout
        host = host_mbps if host_mbps is not None else (p.host_mbps or None)
        m = DiskModel(self.profile(), lay, drive_cache=drive_cache and p.drive_cache,
                      host_mbps=host)
        m.spec = self.spec
        return m

    def __str__(self) -> str:
        return self.spec


def parse_disk(spec: "str | DiskSpec") -> DiskSpec:
    """``NAME[:k=v,...]`` of a registered disk profile -> :class:`DiskSpec` (SpecError naming
    the spec and listing the valid names or options)."""
    if isinstance(spec, DiskSpec):
        return spec
    p = DISKS.parse(spec)
    return DiskSpec(p.name, p.params, p.entry)


def is_disk_spec(text: str) -> bool:
    """Whether ``text`` names a registered disk profile (with or without options) rather
    than a profile file."""
    if not isinstance(text, str) or os.path.exists(text):
        return False
    return text.partition(":")[0].strip().lower() in DISKS


def get_disk(name: str) -> Entry:
    return DISKS.get(name)


def registered_disks() -> list[dict[str, Any]]:
    """Every registered disk profile with its options (for listings)."""
    return DISKS.describe()
