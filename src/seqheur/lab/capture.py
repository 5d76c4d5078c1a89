"""tcpdump on ``lo`` with full packets (docs/capture-lab.md).

``-s 0`` because snaplen-limited captures lose RPC records on pipelined traffic; ``-Z root`` so
tcpdump can write into root's directory; the client starts only after tcpdump says
``listening on``; and tcpdump gets SIGINT only ≥ 1 s after the last packet, or the last
TPACKET_V3 block is never delivered (a 0.5 s wait once gave 0 packets captured).
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .proc import Processes, Started
from .scenarios import LabError
from .server import MNT_PORT, NFS_PORT, RPCBIND_PORT

FILTER = f"port {NFS_PORT} or port {MNT_PORT} or port {RPCBIND_PORT}"
DRAIN_SECONDS = 1.2


@dataclass
class Tcpdump:
    proc: Started
    pcap: Path
    banner: str

    @classmethod
    def start(cls, procs: Processes, pcap: Path, timeout: float = 15.0) -> "Tcpdump":
        argv = ["tcpdump", "-i", "lo", "-n", "-s", "0", "-B", "262144", "-Z", "root",
                "-w", str(pcap), FILTER]
        proc = procs.start("tcpdump", argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        assert proc.popen.stderr is not None
        fd = proc.popen.stderr.fileno()
        seen = b""
        deadline = time.monotonic() + timeout
        while b"listening on" not in seen:
            left = deadline - time.monotonic()
            if left <= 0 or proc.popen.poll() is not None:
                raise LabError(f"tcpdump did not start listening: {seen.decode(errors='replace')}")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 4096)
                if not chunk:
                    continue
                seen += chunk
        return cls(proc, pcap, seen.decode(errors="replace").strip())

    def stop(self) -> dict[str, Any]:
        """Drain, SIGINT, and return tcpdump's own counters; raise if the kernel dropped any."""
        time.sleep(DRAIN_SECONDS)
        Processes.stop(self.proc, signal.SIGINT, timeout=20)
        assert self.proc.popen.stderr is not None
        text = self.proc.popen.stderr.read().decode(errors="replace")
        stats: dict[str, Any] = {"banner": self.banner}
        for key, pat in (("captured", r"(\d+) packets? captured"),
                         ("received_by_filter", r"(\d+) packets? received by filter"),
                         ("dropped_by_kernel", r"(\d+) packets? dropped by kernel")):
            m = re.search(pat, text)
            stats[key] = int(m.group(1)) if m else None
        if stats["dropped_by_kernel"] != 0:
            raise LabError(f"tcpdump: kernel dropped packets or no summary: {text.strip()}")
        return stats
