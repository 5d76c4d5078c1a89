"""Processes the lab starts: every one is recorded by PID and stopped by that PID, newest first.

Each child gets its own session (so a terminal Ctrl-C reaches only the lab's controller, which
then stops the children in order) and ``PR_SET_PDEATHSIG = SIGKILL`` (so that if the controller
itself is killed, nothing it started survives it).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Sequence

_PR_SET_PDEATHSIG = 1
# Set (to "1") only for the process that runs inside the lab namespaces.
MARKER = "SEQHEUR_LAB_INNER"


def _die_with_parent() -> None:  # runs in the child between fork and exec
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def start_time(pid: int) -> int | None:
    """Field 22 of /proc/PID/stat (clock ticks since boot): with the PID it names one process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def is_running(pid: int, started: int | None) -> bool:
    """True if the process ``pid`` that started at ``started`` still exists (not a reused PID)."""
    now = start_time(pid)
    return now is not None and (started is None or now == started)


@dataclass
class Started:
    name: str
    argv: list[str]
    popen: subprocess.Popen[Any]
    started: int | None

    @property
    def pid(self) -> int:
        return self.popen.pid

    def record(self) -> dict[str, Any]:
        return {"name": self.name, "pid": self.pid, "starttime": self.started,
                "returncode": self.popen.returncode}


class Processes:
    """The processes one lab step started; ``stop_all`` stops the live ones, newest first."""

    def __init__(self) -> None:
        self.started: list[Started] = []

    def start(self, name: str, argv: Sequence[str], *, stdout: IO[Any] | int | None = None,
              stderr: IO[Any] | int | None = None, cwd: str | os.PathLike[str] | None = None,
              env: dict[str, str] | None = None) -> Started:
        popen = subprocess.Popen(list(argv), stdout=stdout, stderr=stderr, cwd=cwd, env=env,
                                 stdin=subprocess.DEVNULL, start_new_session=True,
                                 preexec_fn=_die_with_parent)
        proc = Started(name, list(argv), popen, start_time(popen.pid))
        self.started.append(proc)
        return proc

    @staticmethod
    def stop(proc: Started, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        """Send ``sig`` to this PID (if it still runs), wait, SIGKILL after ``timeout``."""
        if proc.popen.poll() is None:
            try:
                os.kill(proc.pid, sig)
            except ProcessLookupError:
                pass
            try:
                proc.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.popen.wait()
        return proc.popen.returncode

    def stop_all(self) -> None:
        for proc in reversed(self.started):
            self.stop(proc)

    def records(self) -> list[dict[str, Any]]:
        return [p.record() for p in self.started]


def wait_until(predicate: Any, timeout: float, step: float = 0.05) -> float | None:
    """Poll ``predicate()`` every ``step`` s; the seconds it took, or None after ``timeout``."""
    t0 = time.monotonic()
    while True:
        if predicate():
            return time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            return None
        time.sleep(step)
