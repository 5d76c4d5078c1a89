"""The capture lab: a real NFS server (nfs-ganesha VFS + rpcbind) and real clients (a libnfs load
generator, a FUSE bridge under the kernel's readahead) on loopback inside a private network
namespace, captured with tcpdump and checked with tshark. See docs/capture-lab.md.

Public entry points: :data:`SCENARIOS`, :func:`run`, :class:`RunOptions`,
:func:`check_environment`.
"""

from __future__ import annotations

from .runner import RunOptions, check_environment, run
from .scenarios import SCENARIOS, LabError, Reader, Scenario, get, plan_reads

__all__ = ["SCENARIOS", "LabError", "Reader", "RunOptions", "Scenario", "check_environment",
           "get", "plan_reads", "run"]
