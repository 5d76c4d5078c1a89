"""One configuration home: :class:`ReplayConfig` holds every choice a replay is made of, with
the defaults in one place, and resolves them (a detector's default policy included) the same
way for ``replay``, ``compare``, ``sweep``, ``reproduce``, the CLI and the API."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import SpecError


@dataclass(frozen=True)
class ReplayConfig:
    """What to replay a trace through.

    ``detector``/``table``/``policy``: spec strings (``seqheur detectors``, ``seqheur tables``,
    ``seqheur policies``); policy ``auto`` is the detector's default (``freebsd-cluster`` for
    ``freebsd``, a Linux detector's own read-ahead, else ``freebsd4-cluster``, the paper's
    setting). ``cache``: buffer-cache size (``256MiB``; K/M/G and KiB/MiB/GiB are binary, KB/
    MB/GB decimal). ``profile``: a disk profile name or JSON path, or None for no disk time.
    ``reorder_window``: bytes from the expected offset within which a READ counts as
    reordered (Ellard & Seltzer's "within 64k"). ``drive_cache``: model the drive's segmented
    read cache. ``clip_eof``: requests and read-ahead stop at each file's (observed) end.
    ``timing``: a timing model spec (``closed-loop:preset=paper-testbed``; docs/timing.md)
    whose end-to-end columns join the summary; ``disk-only`` (the default) adds none.
    ``ops_capacity``: the replay's disk-read buffer, in reads (no effect on results).
    """

    detector: str = "freebsd4"
    table: str = "freebsd4"
    policy: str = "auto"
    cache: str = "256MiB"
    profile: str | None = "ide-7200"
    reorder_window: int = 65536
    drive_cache: bool = True
    clip_eof: bool = True
    timing: str = "disk-only"
    #: disk reads the replay buffers before handing them to the disk model: a memory/overhead
    #: trade only, since how the reads are cut in batches changes no result
    ops_capacity: int = 1 << 20


DEFAULT = ReplayConfig()


def resolve_policy(policy: Any, info: Any) -> Any:
    """The read-ahead policy of a detector: ``auto`` (or None) is the detector's default; a
    detector with read-ahead of its own (``info.serve``) takes only its own."""
    from . import readahead as R

    auto = policy is None or (isinstance(policy, str) and policy.strip().lower() == "auto")
    if info.serve is not None:
        own = R.own_read_ahead(info.policy, info.block_size)
        if auto or (isinstance(policy, str) and policy.strip().lower() == info.policy):
            return own
        raise SpecError(f"detector {info.name} decides its own read-ahead: use policy "
                        f"{info.policy!r} or 'auto', not {str(policy)!r}")
    pol = R.parse_policy(info.policy if auto else policy)
    if pol.request is None:
        raise SpecError(f"policy {pol.spec!r} is a detector's own read-ahead and goes with "
                        f"that detector, not {info.name!r}")
    return pol
