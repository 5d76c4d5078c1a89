"""Modules that are also the function they are named after (``seqheur.detect``,
``seqheur.replay``).

Python binds ``seqheur.detect`` to the *module* as soon as anything imports
``seqheur.detect``, shadowing the public function of the same name. Making the module callable
keeps ``seqheur.detect(stream, ...)`` working either way, without importing numba at package
import time.
"""

from __future__ import annotations

import functools
import sys
import types
from typing import Any, Callable


def callable_module(module_name: str, func: Callable[..., Any]) -> None:
    module = sys.modules[module_name]

    class _CallableModule(types.ModuleType):
        @functools.wraps(func)
        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            return func(*args, **kwargs)

    module.__class__ = _CallableModule
