"""Specialised, disk-cached numba loops over (table model × detector).

numba cannot call an arbitrary jitted function passed as an argument at full speed, and a
closure over one is recompiled in every process (its cache key pickles the closure cells, which
differ per process). So for each detector a tiny module is *generated* whose globals ``_reset``
and ``_update`` are bound to the detector's dispatchers before the first call; the file name
carries a hash of the loop template, ``tables.py`` and the source files of the detector (and of
every jitted function its modules refer to), so numba's on-disk cache (keyed by the generated
file) is reused across processes and invalidated when any of them changes. Built-ins and plug-ins take the same path; calls inline, so both run at full speed.

``specialize(template, bindings, tag)`` is the general tool (the replay issue can build its own
loops the same way); ``detect_loop(info)`` returns the loop used by :func:`seqheur.detect`:

    run(file, offset, count, time_ns, tab, state, params, out_seq, out_fresh, counters, seen) -> n

Two loops per detector: one for nfsheur tables, one shared by ideal and raparms. The lookup is
called directly with the table scalars hoisted out of the loop (measured 42 -> 68 M requests/s
for freebsd4 + nfsheur:64x4 against a loop calling the generic ``table_lookup``).

``counters``: [0] fresh slots, [1] ejections (fresh slot that held another file), [2] cold
(fresh slots of files never seen before; ``seen`` is a uint8 array, one per file).

**Speed notes for numba callers.** Passing arrays to a separately compiled jitted function from
inside a hot loop costs NRT reference counting (atomic inc/dec per array per call; 7-11x slower
in our measurements). ``table_lookup``, the built-in detectors and these loops are therefore
compiled with ``_nrt=False`` (they never allocate); a replay loop calling them should be too.
Plug-in functions are re-jitted with ``_nrt=False`` for the loop (falling back to the
plug-in's own dispatchers if that does not compile, e.g. when it allocates arrays). Index
arrays with ``uint64(i)`` where ``i >= 0`` is known: numba then omits negative-index
wraparound code (20-30 % faster here).

Generated files live in ``$SEQHEUR_CACHE_DIR`` (default ``$XDG_CACHE_HOME/seqheur`` or
``~/.cache/seqheur``) under ``kernels/``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import os
import sys
import tempfile
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

_LOCK = threading.Lock()
_LOOPS: dict[tuple[Any, ...], Any] = {}

DETECT_TEMPLATE = '''
from numba import njit, uint64
from seqheur.tables import ideal_lookup, nfsheur_lookup, raparms_lookup


@njit(cache=__CACHE__, nogil=True, _nrt=__NRT__)
def run(file, offset, count, time_ns, tab, state, params, out_seq, out_fresh, counters, seen):
    cfg = tab[0]
    slot_file = tab[1]
    use = tab[2]
    order = tab[3]
    h0 = tab[4]
    # table scalars, hoisted so they stay in registers
    kind = cfg[0]
    n_slots = cfg[1]
    probes = cfg[2]
    per = cfg[3]
    use_init = cfg[5]
    use_inc = cfg[6]
    use_max = cfg[7]
    n = file.shape[0]
    for i in range(n):
        __LOOKUP__
        row = state[uint64(slot)]  # unsigned: no negative-index wraparound code
        if fresh:
            counters[0] += 1
            if prev >= 0:
                counters[1] += 1
            if seen[file[i]] == 0:
                seen[file[i]] = 1
                counters[2] += 1
            _reset(row, params, offset[i], count[i], time_ns[i])
        out_seq[i] = _update(row, params, offset[i], count[i], time_ns[i])
        out_fresh[i] = fresh
    return n
'''

# Table kind (tables.KIND_*) -> (loop variant, lookup code in the generated loop). nfsheur,
# the hot case, gets its own loop; ideal and raparms share one that switches on the kind at run
# time (a perfectly predicted branch; measured no slower for ideal), which keeps the number of
# loops to compile per detector at two.
_OTHER = """if kind == 2:
            slot, fresh, prev = raparms_lookup(slot_file, order, h0, per, file[i])
        else:
            slot, fresh, prev = ideal_lookup(slot_file, file[i])"""
LOOKUPS = {
    0: ("other", _OTHER),
    1: ("nfsheur", "slot, fresh, prev = nfsheur_lookup(slot_file, use, h0, n_slots, probes, "
                   "use_init, use_inc, use_max, file[i])"),
    2: ("other", _OTHER),
}


def cache_dir() -> Path:
    env = os.environ.get("SEQHEUR_CACHE_DIR")
    if env:
        base = Path(env)
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "seqheur"
    d = base / "kernels"
    try:
        d.mkdir(parents=True, exist_ok=True)
        probe = d / ".writable"
        probe.touch()
        return d
    except OSError:
        d = Path(tempfile.gettempdir()) / f"seqheur-kernels-{os.getuid()}"
        d.mkdir(parents=True, exist_ok=True)
        return d


def _source_of(fn: Any) -> str | None:
    """Source text the compiled code of ``fn`` depends on: the whole file defining it and,
    transitively, the files of every jitted function its module refers to (numba's cache does
    not track such dependencies). None if some source cannot be found."""
    from numba.core.dispatcher import Dispatcher

    py = getattr(fn, "py_func", fn)
    try:
        inspect.getsource(py)  # raises for functions compiled from strings
    except (OSError, TypeError):
        return None
    seen: dict[str, str] = {}
    todo = [py]
    while todo:
        f = todo.pop()
        try:
            path = inspect.getsourcefile(f)
        except TypeError:
            return None
        if path is None:
            return None
        if path in seen:
            continue
        try:
            seen[path] = Path(path).read_text()
        except OSError:
            return None
        for value in list(getattr(f, "__globals__", {}).values()):
            if isinstance(value, Dispatcher):
                todo.append(value.py_func)
    return "\0".join(f"{p}\0{seen[p]}" for p in sorted(seen))


def _tables_source() -> str:
    from .. import tables

    return Path(tables.__file__).read_text()


def specialize(template: str, bindings: dict[str, Any], tag: str, *,
               attr: str = "run", nrt: bool = False) -> Any:
    """Compile ``template`` (Python source defining ``attr``) with globals ``bindings``.

    ``__CACHE__`` in the template becomes True when every bound function's source is known
    (so the on-disk cache can be keyed by it), else False (compiled per process).
    """
    sources = [template, _tables_source()]
    cacheable = True
    for key in sorted(bindings):
        src = _source_of(bindings[key])
        if src is None:
            cacheable = False
            break
        sources.append(f"{key}:{getattr(bindings[key], '__module__', '')}:{src}")
    text = template.replace("__CACHE__", "True" if cacheable else "False")
    text = text.replace("__NRT__", "True" if nrt else "False")
    sources.append(f"nrt={nrt}")
    digest = hashlib.sha256("\0".join(sources).encode()).hexdigest()[:16]
    safe = "".join(c if c.isalnum() else "_" for c in tag)
    modname = f"seqheur_kernel_{safe}_{digest}"
    header = f"# generated by seqheur.heuristics._kernel for {tag}; do not edit\n"
    body = header + text
    with _LOCK:
        mod = sys.modules.get(modname)
        if mod is None:
            path = cache_dir() / f"{modname}.py"
            if not path.exists() or path.read_text() != body:
                tmp = path.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_text(body)
                os.replace(tmp, path)  # atomic: concurrent processes see a whole file
            spec = importlib.util.spec_from_file_location(modname, path)
            assert spec is not None and spec.loader is not None
            mod = importlib.util.module_from_spec(spec)
            for key, value in bindings.items():
                setattr(mod, key, value)
            spec.loader.exec_module(mod)
            for key, value in bindings.items():  # bind again: the module body must not shadow
                setattr(mod, key, value)
            sys.modules[modname] = mod
    assert isinstance(mod, ModuleType)
    return getattr(mod, attr)


def without_nrt(fn: Any) -> Any:
    """``fn`` compiled with ``_nrt=False`` (itself if it already is)."""
    from numba import njit

    if getattr(fn, "targetoptions", {}).get("_nrt", True) is False:
        return fn
    return njit(nogil=True, _nrt=False)(fn.py_func)


def detect_loop(info: Any, kind: int = 1, nrt: bool = False) -> Any:
    """The specialised detect loop for a registered detector and table kind (tables.KIND_*),
    cached per process.

    ``nrt=False`` (fast) binds NRT-free versions of the detector's functions; use ``nrt=True``
    if those fail to compile (see :func:`run_detect_loop`).
    """
    variant, lookup = LOOKUPS[int(kind)]
    key = (info.name, id(info.update), variant, nrt)
    loop = _LOOPS.get(key)
    if loop is None:
        if nrt:
            binds = {"_reset": info.reset, "_update": info.update}
        else:
            binds = {"_reset": without_nrt(info.reset), "_update": without_nrt(info.update)}
        template = DETECT_TEMPLATE.replace("__LOOKUP__", lookup)
        loop = specialize(template, binds, f"detect_{info.name}_{variant}", nrt=nrt)
        _LOOPS[key] = loop
    return loop


def run_detect_loop(info: Any, kind: int, *args: Any) -> int:
    """Run the fast loop; if the detector cannot compile without NRT, the NRT one."""
    from numba.core.errors import NumbaError

    try:
        return detect_loop(info, kind, nrt=False)(*args)
    except NumbaError:
        if info.builtin:
            raise
        return detect_loop(info, kind, nrt=True)(*args)
