"""Progress display for long work (rich), shown on a terminal or when SEQHEUR_PROGRESS=1.

Library code reports progress through :func:`progress`; it costs nothing when hidden.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Iterator


class _Null:
    def advance(self, n: float = 1) -> None:  # noqa: D401 - trivial
        pass

    def update(self, completed: float) -> None:
        pass


class _Task:
    def __init__(self, prog, task_id) -> None:
        self._prog = prog
        self._id = task_id

    def advance(self, n: float = 1) -> None:
        self._prog.advance(self._id, n)

    def update(self, completed: float) -> None:
        self._prog.update(self._id, completed=completed)


def enabled() -> bool:
    flag = os.environ.get("SEQHEUR_PROGRESS")
    if flag is not None:
        return flag not in ("", "0", "false", "no")
    return sys.stderr.isatty()


@contextlib.contextmanager
def progress(description: str, total: float | None = None) -> Iterator[_Task | _Null]:
    """``with progress("replaying", total=n) as p: p.advance(k)``."""
    if not enabled():
        yield _Null()
        return
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn,
                               TextColumn, TimeElapsedColumn, TimeRemainingColumn)

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                  MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                  console=Console(stderr=True), transient=True) as prog:
        yield _Task(prog, prog.add_task(description, total=total))
