"""Detector registry, spec strings and the plug-in API (docs/heuristics.md, "Writing a detector plug-in").

A detector is registered once under a name with

* ``params``: a frozen dataclass whose fields are ints or bools (defaults = published values);
  the replay passes them to numba as an int64 array in field order (``DetectorSpec.param_array``);
* ``state_words``: int64 words of state per table slot (an int, or a function of the params
  instance, e.g. cursors need ``1 + 3 * cursors``);
* ``reset(state, params, offset, count, time_ns)``: numba-jitted; initialise a fresh or recycled
  slot for the request about to be updated (``state`` is the slot's 1-D int64 row);
* ``update(state, params, offset, count, time_ns) -> seqcount``: numba-jitted; called for every
  request (also right after ``reset``), returns the detector's seqcount (0..127 for
  FreeBSD-style detectors);
* ``max_seqcount``: the value a long purely sequential stream saturates at (int or function of
  params), checked by the conformance suite.

The contract's ``reset(state, offset, count)``/``update(state, offset, count)`` are extended by
``params`` (an int64 array, so one compiled kernel serves every parameter value) and
``time_ns`` (the request's arrival time; zfetch's stream reaping needs it).

Spec strings: ``NAME[:k=v,...]`` in the one grammar of :mod:`seqheur.options` (``,`` or ``:``
separate parameters; each parameter's kind and unit come from its :func:`~seqheur.options.param`
declaration: sizes ``64KiB``/``64k`` = 65536, ``64KB`` = 64000; counts plain integers;
booleans ``true``/``false``). The registry is a :class:`seqheur.registry.Registry`
(``DETECTORS``) holding :class:`DetectorInfo` entries.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .. import options as O
from ..errors import SpecError
from ..registry import Registry

# built-in detector modules, imported on the first registry query
BUILTINS = ("freebsd4", "slowdown", "cursor", "freebsd", "zfetch", "always", "never",
            "linux", "linux6")  # linux: linux-2.6.32, linux-3.12

_builtins_loaded = False
DETECTORS = Registry("detector", load=lambda: _load_builtins())
_REGISTRY: dict[str, "DetectorInfo"] = DETECTORS._entries  # the registry's own dict


@dataclass(frozen=True)
class DetectorInfo:
    """A registered detector."""

    name: str
    params: type
    state_words: int | Callable[[Any], int]
    reset: Any  # numba dispatcher
    update: Any  # numba dispatcher
    doc: str = ""
    source: str = ""
    max_seqcount: int | Callable[[Any], int] = 127
    builtin: bool = False
    # How the detector's decision becomes disk reads in a replay: None = a read-ahead policy
    # reads after ``update`` (``policy`` names the default one); else the detector's own
    # read-ahead (Linux), a jitted engine serve step ``serve(world, row, params, f, off, cnt,
    # t, seq, fresh, stamp) -> seqcount`` that replaces ``update`` in a replay, with
    # ``block_size`` its page size and ``ops_bound(params)`` the most disk reads one demand
    # block of a request may issue.
    serve: Any = None
    policy: str = "freebsd4-cluster"
    block_size: int = 0
    ops_bound: Callable[[Any], int] | None = None

    def words(self, p: Any) -> int:
        return int(self.state_words(p) if callable(self.state_words) else self.state_words)

    def saturation(self, p: Any) -> int:
        return int(self.max_seqcount(p) if callable(self.max_seqcount) else self.max_seqcount)

    def defaults(self) -> dict[str, Any]:
        return {f.name: f.default for f in dataclasses.fields(self.params)}


@dataclass(frozen=True)
class DetectorSpec:
    """A parsed detector spec: the registered name and a params dataclass instance."""

    name: str
    params: Any

    @property
    def info(self) -> DetectorInfo:
        return get_detector(self.name)

    @property
    def spec(self) -> str:
        """Canonical spec string: the name plus every parameter that differs from its default
        (:func:`seqheur.options.format_spec`)."""
        return O.format_spec(self.name, self.params)

    def param_array(self) -> np.ndarray:
        return params_to_array(self.params)

    @property
    def state_words(self) -> int:
        return self.info.words(self.params)

    @property
    def max_seqcount(self) -> int:
        return self.info.saturation(self.params)

    def __str__(self) -> str:
        return self.spec


def params_to_array(p: Any) -> np.ndarray:
    """The params as int64 in field order; a choice field as the index of its value."""
    vals = [_as_int(getattr(p, f.name), f) for f in dataclasses.fields(p)]
    return np.array(vals if vals else [0], dtype=np.int64)  # never empty: numba typing


def _as_int(value: Any, field: Any) -> int:
    choices = field.metadata.get("choices", ())
    return choices.index(value) if isinstance(value, str) and choices else int(value)


# --------------------------------------------------------------------------------------------
# registration


def register_detector(name: str, *, params: type, state_words: int | Callable[[Any], int],
                      reset: Any, update: Any, doc: str = "", source: str = "",
                      max_seqcount: int | Callable[[Any], int] = 127,
                      replace: bool = False, builtin: bool = False, serve: Any = None,
                      policy: str | None = None, block_size: int = 0,
                      ops_bound: Callable[[Any], int] | None = None) -> DetectorInfo:
    """Register a detector under ``name`` (see module docstring for the contract).

    ``reset``/``update`` may be numba dispatchers or plain Python functions (jitted here with
    ``njit(cache=True, nogil=True)``). Registering a taken name raises SpecError unless
    ``replace=True``.
    """
    from numba import njit
    from numba.core.dispatcher import Dispatcher

    # '.' and '-' allowed inside names for versioned detectors such as linux-3.12
    if not re.fullmatch(r"[a-z][a-z0-9_]*(?:[.-][a-z0-9_]+)*", name or ""):
        raise SpecError(f"detector name must match [a-z][a-z0-9_]*(?:[.-][a-z0-9_]+)*, "
                        f"not {name!r}")
    if not (dataclasses.is_dataclass(params) and isinstance(params, type)):
        raise SpecError(f"detector {name!r}: params must be a dataclass type")
    if not params.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        raise SpecError(f"detector {name!r}: params dataclass must be frozen")
    for f in dataclasses.fields(params):
        if f.default is dataclasses.MISSING:
            raise SpecError(f"detector {name!r}: parameter {f.name!r} needs a default")
        if not (isinstance(f.default, (int, bool))
                or (isinstance(f.default, str) and f.metadata.get("choices"))):
            raise SpecError(f"detector {name!r}: parameter {f.name!r} must be an int, a bool "
                            "or a choice (numba receives the choice's index)")
    fns = []
    for label, fn in (("reset", reset), ("update", update)):
        if not isinstance(fn, Dispatcher):
            if not callable(fn):
                raise SpecError(f"detector {name!r}: {label} must be a function")
            fn = njit(cache=True, nogil=True)(fn)
        fns.append(fn)
    DETECTORS.check(name, params)
    if name in _REGISTRY and not replace:
        raise SpecError(f"detector {name!r} is already registered")
    if serve is not None and (ops_bound is None or block_size <= 0):
        raise SpecError(f"detector {name!r}: a detector with its own read-ahead (serve) must "
                        f"give block_size and ops_bound")
    info = DetectorInfo(name, params, state_words, fns[0], fns[1], doc=doc.strip(),
                        source=source, max_seqcount=max_seqcount, builtin=builtin,
                        serve=serve, policy=policy or ("own" if serve is not None
                                                       else "freebsd4-cluster"),
                        block_size=block_size, ops_bound=ops_bound)
    return DETECTORS.add(info, replace=True)


def detector(name: str, *, params: type, state_words: int | Callable[[Any], int],
             doc: str | None = None, source: str = "",
             max_seqcount: int | Callable[[Any], int] = 127, replace: bool = False,
             builtin: bool = False, serve: Any = None, policy: str | None = None,
             block_size: int = 0,
             ops_bound: Callable[[Any], int] | None = None) -> Callable[[Any], Any]:
    """Class (or module-like object) decorator: registers its ``reset`` and ``update``.

    >>> @detector("mine", params=MyParams, state_words=2)      # doctest: +SKIP
    ... class Mine:
    ...     reset = staticmethod(my_reset)
    ...     update = staticmethod(my_update)
    """

    def wrap(obj: Any) -> Any:
        register_detector(name, params=params, state_words=state_words,
                          reset=getattr(obj, "reset"), update=getattr(obj, "update"),
                          doc=doc if doc is not None else (obj.__doc__ or ""), source=source,
                          max_seqcount=max_seqcount, replace=replace, builtin=builtin,
                          serve=serve, policy=policy, block_size=block_size,
                          ops_bound=ops_bound)
        return obj

    return wrap


def unregister_detector(name: str) -> None:
    """Remove a plug-in (built-ins cannot be removed)."""
    DETECTORS.unregister(name)


def load_plugins(sources: "list[str] | tuple[str, ...]" = ()) -> list[str]:
    """Import plug-in modules that register detectors: dotted module names or ``.py`` paths,
    plus those listed in ``$SEQHEUR_PLUGINS`` (``os.pathsep``-separated). Returns the names
    of detectors that became registered."""
    import importlib.util
    import os
    from pathlib import Path

    _load_builtins()
    before = set(_REGISTRY)
    env = [x for x in os.environ.get("SEQHEUR_PLUGINS", "").split(os.pathsep) if x.strip()]
    for src in list(sources) + env:
        path = Path(src)
        if src.endswith(".py"):
            if not path.is_file():
                raise SpecError(f"plug-in {src}: no such file")
            modname = "seqheur_plugin_" + "".join(c if c.isalnum() else "_" for c in path.stem)
            import sys

            loaded = sys.modules.get(modname)
            if loaded is not None and Path(getattr(loaded, "__file__", "")).resolve() == path.resolve():
                continue  # already imported (and registered) in this process
            spec = importlib.util.spec_from_file_location(modname, path)
            if spec is None or spec.loader is None:
                raise SpecError(f"plug-in {src}: cannot be imported")
            mod = importlib.util.module_from_spec(spec)
            sys.modules[modname] = mod
            spec.loader.exec_module(mod)
        else:
            try:
                importlib.import_module(src)
            except ImportError as exc:
                raise SpecError(f"plug-in {src!r}: {exc}") from None
    return sorted(set(_REGISTRY) - before)


def _load_builtins() -> None:
    global _builtins_loaded
    if _builtins_loaded:
        return
    _builtins_loaded = True
    for mod in BUILTINS:
        importlib.import_module(f".{mod}", __package__)


def get_detector(name: str) -> DetectorInfo:
    return DETECTORS.get(name)


def registered_detectors() -> dict[str, DetectorInfo]:
    """Name -> DetectorInfo of every registered detector (built-ins first)."""
    return DETECTORS.entries()


# --------------------------------------------------------------------------------------------
# spec strings

def parse_detector(spec: "str | DetectorSpec") -> DetectorSpec:
    """Parse ``NAME[:k=v,...]`` into a :class:`DetectorSpec` (SpecError on any mistake,
    naming the spec and listing every parameter with its unit and default)."""
    if isinstance(spec, DetectorSpec):
        return spec
    p = DETECTORS.parse(spec)
    return DetectorSpec(p.name, p.params)
