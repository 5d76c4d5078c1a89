"""The capture lab: a real NFS server (nfs-ganesha VFS + rpcbind) and real clients (a libnfs load
generator, a FUSE bridge under the kernel's readahead) on loopback inside a private network
namespace, captured with tcpdump and checked with tshark. See docs/capture-lab.md.

Public entry points: :data:`SCENARIOS`, :func:`run`, :class:`RunOptions`,
:func:`check_environment`. Imported lazily, so that the processes the lab runs as
``python -m seqheur.lab.X`` load only what they need.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "RunOptions": "runner", "check_environment": "runner", "run": "runner",
    "SCENARIOS": "scenarios", "LabError": "scenarios", "Reader": "scenarios",
    "Scenario": "scenarios", "get": "scenarios", "plan_reads": "scenarios",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'seqheur.lab' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
