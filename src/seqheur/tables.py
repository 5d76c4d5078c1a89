"""Table models: where a server keeps per-file detector state (rules and sources:
docs/heuristics.md, Table models).

A table model decides, for every request, which *slot* holds the file's detector state and
whether that slot is *fresh* (newly allocated or recycled from another file, so the detector
must ``reset`` it). Four kinds:

``nfsheur:SIZExPROBES[:hash=uniform|dense][:seed=N]``
    The FreeBSD NFS server's open-addressed heuristic table (4.x ``sys/nfs/nfs_serv.c``). Probing starts at
    ``h0 mod SIZE`` (``& 63`` for 64 slots is the same value), tests ``PROBES`` slots for the
    file, decays the ``use`` count of every slot it passes, and otherwise recycles the slot
    with the lowest ``use`` among the ``PROBES + 1`` candidates (earliest wins ties; the last
    candidate is compared for ``use`` but never for identity, exactly as the kernel).
    New entries get ``use = 64``; every access adds 16, capped at 2048.
    Aliases: ``freebsd4`` = nfsheur:64x4, ``ellard`` = nfsheur:1017x32,
    ``freebsd`` = nfsheur:1031x32 (options may follow an alias: ``freebsd4:hash=dense``).
``raparms[:threads=N][:hash=uniform|dense][:seed=N]``
    Linux nfsd's read-ahead parameter cache, ≤ 5.3 (``fs/nfsd/vfs.c``): 16 buckets of
    ``n = max(2, ceil(2*threads/16))`` entries, each bucket an MRU list; a miss recycles the
    last idle entry (in a serial replay every entry is idle, so the bucket's LRU entry).
``filecache[:idle_ms=2000]``
    Linux nfsd's file cache, 5.4+ (``fs/nfsd/filecache.c``): READs of a file share one
    ``struct file`` and its ``file_ra_state`` while it stays cached; a file without a READ for
    longer than ``idle_ms`` (the laundrette closes unused files every 2 s) starts afresh.
``ideal``
    One slot per file, never ejected: the upper bound of any table.

**Hash.** The kernel hashes vnode (or dev, ino) addresses, which a trace does not have, so a
file's start value ``h0`` is chosen by the ``hash`` option:

* ``uniform`` (default): ``splitmix64(file_id XOR seed)`` — the 64-bit finaliser of
  Steele et al.'s SplitMix64 (add 0x9E3779B97F4A7C15; xor-shift 30, multiply
  0xBF58476D1CE4E5B9; xor-shift 27, multiply 0x94D049BB133111EB; xor-shift 31), standing for
  arbitrary vnode addresses. Deterministic: the same trace and seed give the same collisions.
* ``dense``: the file's dense index (order of first appearance), standing for vnodes
  allocated in order from a zone.

``h0 mod SIZE`` is the start slot of an nfsheur table and ``h0 & 15`` the raparms bucket.

**Interface for numba code** (the replay loop reuses it): ``model.make_state(file_ids)``
returns ``tab``, a tuple of five int64 arrays ``(cfg, slot_file, use, order, h0)``; the jitted
``table_lookup(tab, f) -> (slot, fresh, prev_file)`` maps dense file index ``f`` to its slot,
``fresh`` is 1 when the slot was (re)allocated and ``prev_file`` is the file whose state was
ejected (-1 if the slot was empty or not fresh). ``slot`` indexes the detector state array
(``state[slot]``, ``model.n_slots(n_files)`` rows). ``table_lookup`` mutates ``tab``.
For speed, a loop over one table kind can call the kind's own lookup with the ``cfg`` scalars
hoisted out of the loop (what :mod:`seqheur.heuristics._kernel` does):
``nfsheur_lookup(slot_file, use, h0, n, probes, use_init, use_inc, use_max, f)``,
``raparms_lookup(slot_file, order, h0, per_bucket, f)``, ``ideal_lookup(slot_file, f)``.
All are compiled with ``_nrt=False``; call them from ``_nrt=False`` code (see _kernel).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Union

import numpy as np
from numba import njit, uint64

from .errors import SpecError
from .options import format_spec, param
from .registry import Entry, Registry
from . import _inlining

_inlining.install()  # numba's inliner: one copy of a callee's IR, not one per block (_inlining)

# Table kinds in cfg[0]
KIND_IDEAL = 0
KIND_NFSHEUR = 1
KIND_RAPARMS = 2
KIND_FILECACHE = 3

# FreeBSD nfsheur use counts: NHUSE_INIT, NHUSE_INC, NHUSE_MAX
NHUSE_INIT = 64
NHUSE_INC = 16
NHUSE_MAX = 2048
RAPARM_BUCKETS = 16  # RAPARM_HASH_BITS = 4 (fs/nfsd/vfs.c)

# cfg layout: [kind, n_slots, probes, entries_per_bucket, buckets, use_init, use_inc, use_max]
_CFG_LEN = 8

_M64 = (1 << 64) - 1


# --------------------------------------------------------------------------------------------
# hashes


def splitmix64(x: np.ndarray | int) -> np.ndarray:
    """SplitMix64 finaliser of uint64 values (vectorised, wraps modulo 2**64)."""
    z = np.asarray(x, dtype=np.uint64).copy()
    with np.errstate(over="ignore"):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return z


def _h0(file_ids: np.ndarray, hash_kind: str, seed: int, modulus: int) -> np.ndarray:
    """Start slot (or bucket) per dense file index, as int64 in [0, modulus)."""
    n = len(file_ids)
    if hash_kind == "dense":
        v = np.arange(n, dtype=np.uint64)
    else:
        v = splitmix64(np.asarray(file_ids, dtype=np.uint64) ^ np.uint64(seed & _M64))
    return (v % np.uint64(modulus)).astype(np.int64)


# --------------------------------------------------------------------------------------------
# models (each class is its kind's frozen params dataclass and, for the built-ins, the model)

_HASHES = ("uniform", "dense")
_HASH_DOC = ("start slot: uniform = splitmix64(file id XOR seed), standing for vnode "
             "addresses; dense = the file's index in order of first appearance")


@dataclass(frozen=True)
class NfsheurTable:
    """FreeBSD ``nfsheur`` table: SIZE slots, PROBES probes per lookup (docs/heuristics.md)."""

    size: int = param(64, unit="slots", tune=(8, 4096, "log"), doc="slots in the table, >= 1")
    probes: int = param(4, unit="slots", tune=(1, 64, "log"), doc="slots probed per lookup, >= 1")
    hash: str = param("uniform", choices=_HASHES, doc=_HASH_DOC)
    seed: int = param(0, doc="seed of the uniform hash")

    kind_name = "nfsheur"
    spec_positional = ("size", "probes")  # nfsheur:64x4

    def __post_init__(self) -> None:
        if self.size < 1:
            raise SpecError(f"nfsheur: size must be >= 1, not {self.size}")
        if self.probes < 1:
            raise SpecError(f"nfsheur: probes must be >= 1, not {self.probes}")
        _check_hash(self.hash, "nfsheur")

    @property
    def spec(self) -> str:
        return format_spec(self.kind_name, self)

    def n_slots(self, n_files: int) -> int:
        return self.size

    def make_state(self, file_ids: np.ndarray) -> tuple[np.ndarray, ...]:
        cfg = np.array([KIND_NFSHEUR, self.size, self.probes, 0, 0, NHUSE_INIT, NHUSE_INC,
                        NHUSE_MAX], np.int64)
        return (cfg, np.full(self.size, -1, np.int64), np.zeros(self.size, np.int64),
                np.zeros(0, np.int64), _h0(file_ids, self.hash, self.seed, self.size))

    def __str__(self) -> str:
        return self.spec


@dataclass(frozen=True)
class RaparmsTable:
    """Linux nfsd read-ahead parameter cache (≤ 5.3): 16 MRU buckets."""

    threads: int = param(8, unit="threads", tune=(1, 256, "log"),
                         doc="nfsd threads: 16 buckets of "
                         "max(2, ceil(2 x threads / 16)) entries, >= 1")
    hash: str = param("uniform", choices=_HASHES, doc=_HASH_DOC)
    seed: int = param(0, doc="seed of the uniform hash")

    kind_name = "raparms"

    def __post_init__(self) -> None:
        if self.threads < 1:
            raise SpecError(f"raparms: threads must be >= 1, not {self.threads}")
        _check_hash(self.hash, "raparms")

    @property
    def per_bucket(self) -> int:
        # nfsd_racache_init(2 * nrservs): n = max(2, ceil(cache_size / 16))
        return max(2, math.ceil(2 * self.threads / RAPARM_BUCKETS))

    @property
    def spec(self) -> str:
        return format_spec(self.kind_name, self)

    def n_slots(self, n_files: int) -> int:
        return RAPARM_BUCKETS * self.per_bucket

    def make_state(self, file_ids: np.ndarray) -> tuple[np.ndarray, ...]:
        n = self.n_slots(0)
        cfg = np.array([KIND_RAPARMS, n, 0, self.per_bucket, RAPARM_BUCKETS, 0, 0, 0], np.int64)
        return (cfg, np.full(n, -1, np.int64), np.zeros(n, np.int64),
                np.arange(n, dtype=np.int64), _h0(file_ids, self.hash, self.seed, RAPARM_BUCKETS))

    def __str__(self) -> str:
        return self.spec


@dataclass(frozen=True)
class IdealTable:
    """One slot per file, allocated on first sight and never ejected."""

    kind_name = "ideal"

    @property
    def spec(self) -> str:
        return "ideal"

    def n_slots(self, n_files: int) -> int:
        return max(int(n_files), 1)

    def make_state(self, file_ids: np.ndarray) -> tuple[np.ndarray, ...]:
        n = self.n_slots(len(file_ids))
        cfg = np.array([KIND_IDEAL, n, 0, 0, 0, 0, 0, 0], np.int64)
        return (cfg, np.full(n, -1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64),
                np.zeros(0, np.int64))

    def __str__(self) -> str:
        return self.spec


@dataclass(frozen=True)
class FilecacheTable:
    """Linux nfsd's file cache (5.4+): READs of a file share the ``struct file`` (and its
    ``file_ra_state``) while it stays cached; the laundrette closes files left unused, so a
    file idle for longer than ``idle_ms`` starts with a fresh state."""

    idle_ms: int = param(2000, unit="ms", tune=(100, 60000, "log"),
                         doc="idle time after which the cached file is "
                         "closed (the laundrette runs every 2 s and closes files unused since "
                         "its previous pass: 2-4 s)")

    kind_name = "filecache"

    def __post_init__(self) -> None:
        if self.idle_ms < 0:
            raise SpecError(f"filecache: idle_ms must be >= 0, not {self.idle_ms}")

    @property
    def spec(self) -> str:
        return format_spec("filecache", self)

    def n_slots(self, n_files: int) -> int:
        return max(int(n_files), 1)

    def make_state(self, file_ids: np.ndarray) -> tuple[np.ndarray, ...]:
        n = self.n_slots(len(file_ids))
        cfg = np.array([KIND_FILECACHE, n, self.idle_ms * 1_000_000, 0, 0, 0, 0, 0], np.int64)
        return (cfg, np.full(n, -1, np.int64), np.zeros(n, np.int64), np.zeros(0, np.int64),
                np.zeros(0, np.int64))

    def __str__(self) -> str:
        return self.spec


@dataclass(frozen=True)
class PluginTable:
    """A parsed spec of a registered plug-in table: ``params`` is its params dataclass
    instance; the entry's ``make_state``/``n_slots`` and engine ``steps`` do the work."""

    kind_name: str
    params: Any
    entry: Any = field(compare=False, repr=False, default=None)

    @property
    def spec(self) -> str:
        return format_spec(self.kind_name, self.params)

    def n_slots(self, n_files: int) -> int:
        n = self.entry.n_slots
        return int(n(self.params, n_files) if callable(n) else n)

    def make_state(self, file_ids: np.ndarray) -> tuple[np.ndarray, ...]:
        return self.entry.make_state(self.params, file_ids)

    @property
    def steps(self) -> tuple[Any, Any]:
        return self.entry.steps

    def __str__(self) -> str:
        return self.spec


TableModel = Union[NfsheurTable, RaparmsTable, IdealTable, FilecacheTable, PluginTable]

ALIASES: dict[str, str] = {
    "freebsd4": "nfsheur:64x4",
    "ellard": "nfsheur:1017x32",
    "freebsd": "nfsheur:1031x32",
}
_ALIAS_DOCS = {"freebsd4": "FreeBSD 4.x (64 slots, 4 probes, & 63)",
               "ellard": "Ellard & Seltzer's enlargement (1017 slots, 32 probes, % 1017)",
               "freebsd": "FreeBSD since r228185 (1031 slots, 32 probes, % 1031)"}


def _check_hash(h: str, kind: str) -> None:
    if h not in _HASHES:
        raise SpecError(f"{kind}: hash must be one of {', '.join(_HASHES)}, not {h!r}")


# --------------------------------------------------------------------------------------------
# registry and spec strings


def _register_builtins() -> None:
    # the lookups are defined below; this runs on the first registry query
    register_table("nfsheur", params=NfsheurTable, lookup=nfsheur_lookup, builtin=True,
                   doc="FreeBSD NFS server nfsheur table: open addressing, use counts "
                       "64/+16/2048 decayed while probing, victim = lowest use",
                   source="FreeBSD sys/nfs/nfs_serv.c (4.x nfsheur); Ellard & Seltzer 2003 §6.3",
                   aliases={a: ALIASES[a] for a in ("freebsd4", "ellard", "freebsd")})
    register_table("raparms", params=RaparmsTable, lookup=raparms_lookup, builtin=True,
                   doc="Linux nfsd read-ahead parameter cache (<= 5.3): 16 MRU buckets of "
                       "max(2, ceil(2*threads/16)) entries",
                   source="Linux fs/nfsd/vfs.c nfsd_get_raparms (<= 5.3)")
    register_table("ideal", params=IdealTable, lookup=ideal_lookup, builtin=True,
                   doc="one slot per file, never ejected (upper bound)",
                   source="seqheur: the upper bound of any table")
    register_table("filecache", params=FilecacheTable, lookup=filecache_lookup, builtin=True,
                   doc="Linux nfsd file cache (>= 5.4): one ra state per file while it stays "
                       "cached; a file idle longer than idle_ms starts afresh",
                   source="Linux fs/nfsd/filecache.c (5.4+: nfsd_file, the laundrette)")


TABLES = Registry("table", load=_register_builtins)


def register_table(name: str, *, params: type, make_state: Any = None, n_slots: Any = None,
                   lookup: Any = None, steps: tuple[Any, Any] | None = None, doc: str = "",
                   source: str = "", aliases: "dict[str, str] | None" = None,
                   replace: bool = False, builtin: bool = False) -> Entry:
    """Register a table model under ``name``.

    ``params``: a frozen dataclass (fields declared with :func:`seqheur.options.param`; a
    ``spec_positional`` class attribute names fields taken positionally, ``x``-joined).
    For a plug-in: ``make_state(params, file_ids) -> tab`` (a tuple of arrays),
    ``n_slots(params, n_files) -> int`` (or an int), and ``lookup``: a numba-jitted
    ``lookup(tab, f) -> (slot, fresh, prev_file)`` (``_nrt=False``-safe), or the engine's
    ``steps = (prepare(tab) -> k, step(tab, k, f, t) -> (slot, fresh, prev_file))`` (``t``:
    the READ's time in ns, for tables whose entries expire).
    The built-ins' params classes are the models themselves (``make_state``/``n_slots``
    methods; the engine's steps by ``kind_name``). ``aliases``: alias name -> spec string.
    """
    TABLES.check(name, params)
    if not builtin:
        if make_state is None or n_slots is None or (lookup is None and steps is None):
            raise SpecError(f"table {name!r}: a plug-in table needs make_state, n_slots and "
                            f"lookup (or steps)")
        if steps is None:
            steps = _steps_of_lookup(lookup)
    entry = TABLES.register(name, params=params, impl=lookup, doc=doc, source=source,
                            builtin=builtin, replace=replace, make_state=make_state,
                            n_slots=n_slots, lookup=lookup, steps=steps)
    for a, spec in (aliases or {}).items():
        TABLES.alias(a, spec, doc=_ALIAS_DOCS.get(a, "") if builtin else "", replace=replace)
    return entry


def _steps_of_lookup(lookup: Any) -> tuple[Any, Any]:
    """Engine steps around a plug-in's ``lookup(tab, f)``: nothing hoisted per chunk."""
    from numba import njit

    @njit(nogil=True, _nrt=False)
    def prepare(tab):
        return 0

    @njit(nogil=True, _nrt=False, inline="always")
    def step(tab, k, f, t):
        return lookup(tab, f)

    return prepare, step


def unregister_table(name: str) -> None:
    """Remove a plug-in table (or an alias); built-ins cannot be removed."""
    TABLES.unregister(name)


def get_table(name: str) -> Entry:
    """The registry entry of a table kind or alias (``name``, ``params``, ``doc``,
    ``source``, ``builtin``, ``lookup``, ``make_state``, ``n_slots``, ``steps``)."""
    return TABLES.get(name)


def parse_table(spec: str | TableModel) -> TableModel:
    """Parse a table spec string (see module docstring) into a frozen model dataclass.

    ``nfsheur:64x4`` = ``nfsheur:size=64,probes=4``; aliases take options
    (``freebsd4:hash=dense``); a plug-in table gives a :class:`PluginTable`.

    >>> parse_table("freebsd4")
    NfsheurTable(size=64, probes=4, hash='uniform', seed=0)
    """
    if isinstance(spec, (NfsheurTable, RaparmsTable, IdealTable, FilecacheTable, PluginTable)):
        return spec
    p = TABLES.parse(spec)
    if p.entry.builtin and p.entry.make_state is None:
        return p.params
    return PluginTable(p.name, p.params, p.entry)


def registered_tables() -> list[dict[str, Any]]:
    """Table kinds, then aliases, with their grammar, options (default, unit, doc), doc and
    source (for ``seqheur tables``)."""
    return TABLES.describe()


# --------------------------------------------------------------------------------------------
# numba kernel


@njit(cache=True, nogil=True, _nrt=False)
def nfsheur_lookup(slot_file, use, h0, n, probes, use_init, use_inc, use_max, f):
    """The nfsheur lookup of file ``f``: (slot, fresh, prev_file). Scalars are passed separately so a
    calling loop can keep them in registers. Indices are cast to uint64 (all are >= 0) so
    numba emits no negative-index wraparound (measured ~20 % faster)."""
    i = h0[uint64(f)]
    ui = uint64(i)
    if slot_file[ui] == f:
        # found at the start slot: the loop below would break at once without decaying
        u = use[ui] + use_inc
        use[ui] = u if u < use_max else use_max
        return i, 0, -1
    best = i
    for _ in range(probes):
        ui = uint64(i)
        if slot_file[ui] == f:
            best = i
            break
        # every slot passed over loses one use point before the next is compared
        u = use[ui]
        if u > 0:
            use[ui] = u - 1
        i += 1
        if i == n:
            i = 0
        if use[uint64(i)] < use[uint64(best)]:  # strict: the earliest minimum wins
            best = i
    fresh = 0
    prev = -1
    ub = uint64(best)
    if slot_file[ub] != f:
        fresh = 1
        prev = slot_file[ub]
        slot_file[ub] = f
        use[ub] = use_init
    u = use[ub] + use_inc
    use[ub] = u if u < use_max else use_max
    return best, fresh, prev


@njit(cache=True, nogil=True, _nrt=False)
def raparms_lookup(slot_file, order, h0, per, f):
    """The raparms lookup of file ``f`` in its MRU bucket: (slot, fresh, prev_file)."""
    base = h0[uint64(f)] * per
    pos = per - 1  # miss: the last idle entry of the MRU list
    found = False
    for k in range(per):
        if slot_file[uint64(order[uint64(base + k)])] == f:
            pos = k
            found = True
            break
    s = order[uint64(base + pos)]
    fresh = 0
    prev = -1
    if not found:
        fresh = 1
        prev = slot_file[uint64(s)]
        slot_file[uint64(s)] = f
    for k in range(pos, 0, -1):  # move to the head (MRU)
        order[uint64(base + k)] = order[uint64(base + k - 1)]
    order[uint64(base)] = s
    return s, fresh, prev


@njit(cache=True, nogil=True, _nrt=False)
def ideal_lookup(slot_file, f):
    """One slot per file: (f, fresh on first sight, -1)."""
    uf = uint64(f)
    if slot_file[uf] != f:
        slot_file[uf] = f
        return f, 1, -1
    return f, 0, -1


@njit(cache=True, nogil=True, _nrt=False)
def filecache_lookup(slot_file, last, idle_ns, f, t):
    """One slot per file, fresh on first sight and after ``idle_ns`` without a READ (the file
    was closed by nfsd's laundrette); ``t`` is the READ's time (ns)."""
    uf = uint64(f)
    fresh = 0
    if slot_file[uf] != f or t - last[uf] > idle_ns:
        slot_file[uf] = f
        fresh = 1
    last[uf] = t
    return f, fresh, -1


@njit(cache=True, nogil=True, _nrt=False, inline="always")  # one call site per replay loop
def table_lookup(tab, f, t):
    """(slot, fresh, prev_file) of dense file ``f`` read at time ``t`` (ns); mutates the
    table state ``tab``."""
    cfg = tab[0]
    kind = cfg[0]
    if kind == KIND_NFSHEUR:
        return nfsheur_lookup(tab[1], tab[2], tab[4], cfg[1], cfg[2], cfg[5], cfg[6], cfg[7], f)
    if kind == KIND_RAPARMS:
        return raparms_lookup(tab[1], tab[3], tab[4], cfg[3], f)
    if kind == KIND_FILECACHE:
        return filecache_lookup(tab[1], tab[2], cfg[2], f, t)
    return ideal_lookup(tab[1], f)


# The engine's table steps: ``prepare(tab)`` reads a table's scalars once per chunk, so the
# loop keeps them in registers (measured 42 -> 68 M requests/s for freebsd4 + nfsheur:64x4
# against reading them from ``cfg`` for every request); ``lookup(tab, k, f, t)`` is the kind's
# lookup with those scalars ``k`` (``t``: the READ's time, for kinds that expire entries).
# One pair per kind: each kind gets a loop of its own.


@njit(cache=True, nogil=True, _nrt=False)
def nfsheur_prepare(tab):
    cfg = tab[0]
    return (cfg[1], cfg[2], cfg[5], cfg[6], cfg[7])  # slots, probes, use init/inc/max


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def nfsheur_step(tab, k, f, t):
    return nfsheur_lookup(tab[1], tab[2], tab[4], k[0], k[1], k[2], k[3], k[4], f)


@njit(cache=True, nogil=True, _nrt=False)
def raparms_prepare(tab):
    return tab[0][3]  # entries per bucket


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def raparms_step(tab, k, f, t):
    return raparms_lookup(tab[1], tab[3], tab[4], k, f)


@njit(cache=True, nogil=True, _nrt=False)
def ideal_prepare(tab):
    return 0


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def ideal_step(tab, k, f, t):
    return ideal_lookup(tab[1], f)


@njit(cache=True, nogil=True, _nrt=False)
def filecache_prepare(tab):
    return tab[0][2]  # idle time, ns


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def filecache_step(tab, k, f, t):
    return filecache_lookup(tab[1], tab[2], k, f, t)


STEPS = {"nfsheur": (nfsheur_prepare, nfsheur_step), "raparms": (raparms_prepare, raparms_step),
         "ideal": (ideal_prepare, ideal_step),
         "filecache": (filecache_prepare, filecache_step)}


def steps_of(model: Any) -> tuple[Any, Any]:
    """The engine's (prepare, lookup) steps of a table model: its own ``steps`` if it has
    them (a plug-in table), else those of its built-in kind."""
    return getattr(model, "steps", None) or STEPS[model.kind_name]
