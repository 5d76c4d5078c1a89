"""Detector registry, spec strings and the plug-in API (DESIGN.md "Detector contract").

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

Spec strings: ``NAME[:k=v,...]`` (``,`` or ``:`` separate parameters; values are integers,
optionally with a size suffix ``KiB``/``MiB``/``GiB``/``k``/``M``, or ``true``/``false``).
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..errors import SpecError

# built-in detector modules, imported on the first registry query
BUILTINS = ("freebsd4", "slowdown", "cursor", "freebsd", "zfetch", "always", "never",
            "linux")  # linux: linux-2.6.32, linux-3.12 (issue 4)

_REGISTRY: dict[str, "DetectorInfo"] = {}
_builtins_loaded = False


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
        """Canonical spec string: the name plus every parameter that differs from its default."""
        diffs = [f"{f.name}={_fmt_value(getattr(self.params, f.name))}"
                 for f in dataclasses.fields(self.params)
                 if getattr(self.params, f.name) != f.default]
        return self.name + (":" + ",".join(diffs) if diffs else "")

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


def _fmt_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def params_to_array(p: Any) -> np.ndarray:
    vals = [int(getattr(p, f.name)) for f in dataclasses.fields(p)]
    return np.array(vals if vals else [0], dtype=np.int64)  # never empty: numba typing


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
        if not isinstance(f.default, (int, bool)):
            raise SpecError(f"detector {name!r}: parameter {f.name!r} must be an int or bool")
    fns = []
    for label, fn in (("reset", reset), ("update", update)):
        if not isinstance(fn, Dispatcher):
            if not callable(fn):
                raise SpecError(f"detector {name!r}: {label} must be a function")
            fn = njit(cache=True, nogil=True)(fn)
        fns.append(fn)
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
    _REGISTRY[name] = info
    return info


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
    _load_builtins()
    info = _REGISTRY.get(name)
    if info is None:
        raise SpecError(f"detector {name!r} is not registered")
    if info.builtin:
        raise SpecError(f"detector {name!r} is built in and cannot be unregistered")
    del _REGISTRY[name]


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
    _load_builtins()
    info = _REGISTRY.get(name)
    if info is None:
        raise SpecError(f"unknown detector {name!r}; valid: {', '.join(sorted(_REGISTRY))}")
    return info


def registered_detectors() -> dict[str, DetectorInfo]:
    """Name -> DetectorInfo of every registered detector (built-ins first)."""
    _load_builtins()
    return dict(_REGISTRY)


# --------------------------------------------------------------------------------------------
# spec strings

_SUFFIX = {"": 1, "k": 1000, "m": 1000**2, "g": 1000**3, "kib": 1024, "mib": 1024**2,
           "gib": 1024**3, "kb": 1000, "mb": 1000**2, "gb": 1000**3}


def parse_int(text: str) -> int:
    """An integer with an optional size suffix (``64KiB`` -> 65536); raises ValueError."""
    m = re.fullmatch(r"\s*([+-]?(?:0x[0-9a-f]+|\d+))\s*([a-z]*)\s*", text.lower())
    if not m or m.group(2) not in _SUFFIX:
        raise ValueError(text)
    return int(m.group(1), 0) * _SUFFIX[m.group(2)]


def parse_detector(spec: "str | DetectorSpec") -> DetectorSpec:
    """Parse ``NAME[:k=v,...]`` into a :class:`DetectorSpec` (SpecError on any mistake)."""
    if isinstance(spec, DetectorSpec):
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise SpecError(f"detector spec must be a non-empty string, not {spec!r}")
    head, _, rest = spec.strip().partition(":")
    info = get_detector(head.strip().lower())
    names = {f.name: f for f in dataclasses.fields(info.params)}
    values: dict[str, Any] = {}
    for part in (p for p in re.split(r"[:,]", rest) if p.strip()):
        key, eq, val = part.partition("=")
        key = key.strip().lower()
        if not eq or key not in names:
            valid = ", ".join(f"{k}={_fmt_value(f.default)}" for k, f in names.items()) or "none"
            raise SpecError(f"detector {spec!r}: unknown parameter {part!r}; "
                            f"{info.name} takes: {valid}")
        default = names[key].default
        try:
            if isinstance(default, bool):
                low = val.strip().lower()
                if low not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError(val)
                values[key] = low in ("true", "1", "yes")
            else:
                values[key] = parse_int(val)
        except ValueError:
            raise SpecError(f"detector {spec!r}: {key} must be "
                            f"{'a boolean' if isinstance(default, bool) else 'an integer'}, "
                            f"not {val!r}") from None
    try:
        p = info.params(**values)
    except (TypeError, ValueError) as exc:
        raise SpecError(f"detector {spec!r}: {exc}") from None
    return DetectorSpec(info.name, p)
