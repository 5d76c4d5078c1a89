"""numba's IR inliner, copying a callee once per inlining instead of once per block.

Every engine loop inlines its steps (``@njit(inline="always")``: the replay loop twice as fast
as calling them, measured), and numba's inliner copies the callee's IR before splicing it in:
block by block, each block with ``copy.deepcopy`` and a memo of its own. A block's variables
point to the function's scope, which holds every variable of the function, so each block's copy
copies the whole scope again: the cost grows with blocks x variables. The serve step of a
FreeBSD-policy replay, with its own inlined steps, has about 1.8 M of them, and copying it took
three quarters of the 20 s a replay loop took to compile cold (measured with cProfile,
2026-11-27). The upstream reports: https://github.com/numba/numba/issues/8989 and
https://github.com/numba/numba/issues/9204 (numba 0.68 still copies block by block).

:func:`install` gives the inliner's module a ``copy`` whose ``deepcopy`` of a block shares one
memo with the other blocks of the same IR, so each copy copies the scope and every shared
object once, keeping the sharing the IR had (as one ``deepcopy`` of the whole IR would). The
compiled code is the same: the test suite compares the machine code of a loop compiled with
and without it (``tests/test_engine.py``). ``SEQHEUR_PLAIN_INLINING=1`` in the environment
leaves numba as it is. Idempotent; a no-op if numba's inliner no longer has this shape.
"""

from __future__ import annotations

import copy
import os
from typing import Any

ENV_PLAIN = "SEQHEUR_PLAIN_INLINING"


class _BlockMemo:
    """The memo of the IR whose blocks are being copied: its scope and the objects copied."""

    scope: Any = None
    memo: dict[int, Any] = {}


class _CopyOneMemoPerIR:
    """Stands for the ``copy`` module in numba's inliner (every other name is ``copy``'s)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)

    @staticmethod
    def deepcopy(x: Any, memo: dict[int, Any] | None = None) -> Any:
        from numba.core import ir

        if memo is None and isinstance(x, ir.Block):
            # A block of another scope, or one this memo already copied (the same IR copied
            # again), starts a new copy.
            if _BlockMemo.scope is not x.scope or id(x) in _BlockMemo.memo:
                _BlockMemo.scope = x.scope
                _BlockMemo.memo = {}
            return copy.deepcopy(x, _BlockMemo.memo)
        return copy.deepcopy(x, memo)


def install() -> bool:
    """Give numba's inliner the one-memo-per-IR copy; True if it is in place."""
    if os.environ.get(ENV_PLAIN, "") not in ("", "0"):
        return False
    try:
        from numba.core import inline_closurecall
    except ImportError:  # pragma: no cover - numba without the module: nothing to speed up
        return False
    current = getattr(inline_closurecall, "copy", None)
    if isinstance(current, _CopyOneMemoPerIR):
        return True
    if current is not copy:  # numba changed: leave it alone
        return False
    inline_closurecall.copy = _CopyOneMemoPerIR()
    return True
