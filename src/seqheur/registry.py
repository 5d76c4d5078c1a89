"""One registry shape for every model kind: detectors, table models, read-ahead policies, disks.

A model is registered once under a name with a frozen parameter dataclass (its fields declared
with :func:`seqheur.options.param`: default, unit, doc), its implementation, a doc line and a
source; spec strings are parsed by the one grammar of :mod:`seqheur.options`::

    POLICIES = Registry("policy", load=_register_builtins)
    POLICIES.register("fixed", params=FixedParams, impl=serve_fixed, doc="...", source="...",
                      builtin=True)
    POLICIES.alias("nfs8", "fixed:8")            # an alias: a name for preset values
    spec = POLICIES.parse("fixed:8:bsize=4KiB")  # Spec(name="fixed", params=FixedParams(...))
    spec.spec, spec.entry.impl, POLICIES.get("fixed"), POLICIES.names()

An entry is any object with ``name``, ``params``, ``doc``, ``source`` and ``builtin``
attributes: :class:`Entry` (``impl`` and free-form ``extra``) or a kind's own frozen dataclass
(the detector registry stores its ``DetectorInfo`` with :meth:`Registry.add`).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

from . import options as O
from .errors import SpecError

NAME_RE = r"[a-z][a-z0-9_]*(?:[.-][a-z0-9_]+)*"


@dataclass(frozen=True, eq=False)  # compared and hashed by identity (``extra`` is a dict)
class Entry:
    """A registered model: its name, params dataclass, implementation, doc and source."""

    name: str
    params: type
    impl: Any = None
    doc: str = ""
    source: str = ""
    builtin: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)

    def defaults(self) -> dict[str, Any]:
        return O.defaults(self.params)

    def __getattr__(self, key: str) -> Any:  # extra keys read as attributes
        extra = self.__dict__.get("extra") or {}
        if key in extra:
            return extra[key]
        raise AttributeError(key)


@dataclass(frozen=True)
class Alias:
    """Another name for a model with preset values (``freebsd4`` = ``nfsheur:64x4``)."""

    name: str
    target: str
    spec: str
    doc: str = ""


@dataclass(frozen=True)
class Spec:
    """A parsed spec string: the registered name, a params instance and the registry entry."""

    name: str
    params: Any
    entry: Any = field(compare=False, repr=False, default=None)

    @property
    def spec(self) -> str:
        """The canonical spec string (:func:`seqheur.options.format_spec`)."""
        return O.format_spec(self.name, self.params)

    def __str__(self) -> str:
        return self.spec


class Registry:
    """Name -> entry for one kind of model (``kind`` words the errors: "unknown policy 'x'").

    ``load``: called once, on the first query, to register the built-ins (import their
    modules). ``name_re``: the names this registry accepts.
    """

    def __init__(self, kind: str, *, load: Callable[[], Any] | None = None,
                 name_re: str = NAME_RE) -> None:
        self.kind = kind
        self._load = load
        self._loaded = load is None
        self._name_re = re.compile(name_re)
        self._entries: dict[str, Any] = {}
        self._aliases: dict[str, Alias] = {}

    # -- registration -------------------------------------------------------------------------

    def check(self, name: str, params: type) -> None:
        """SpecError unless ``name`` is well formed and ``params`` a frozen dataclass whose
        every field has a default and a kind the grammar knows."""
        if not isinstance(name, str) or not self._name_re.fullmatch(name):
            raise SpecError(f"{self.kind} name must match {self._name_re.pattern}, not {name!r}")
        if not (dataclasses.is_dataclass(params) and isinstance(params, type)):
            raise SpecError(f"{self.kind} {name!r}: params must be a dataclass type")
        if not params.__dataclass_params__.frozen:  # type: ignore[attr-defined]
            raise SpecError(f"{self.kind} {name!r}: params dataclass must be frozen")
        try:
            O.positional(params)  # also checks every field's default and kind
        except (TypeError, ValueError) as exc:
            raise SpecError(f"{self.kind} {name!r}: {exc}") from None

    def register(self, name: str, *, params: type, impl: Any = None, doc: str = "",
                 source: str = "", builtin: bool = False, aliases: Mapping[str, str] | None = None,
                 replace: bool = False, **extra: Any) -> Entry:
        """Register ``name`` as an :class:`Entry`; ``aliases``: alias name -> spec string.
        A taken name is a SpecError unless ``replace=True``."""
        self.check(name, params)
        entry = Entry(name, params, impl, " ".join(doc.split()), source, builtin, dict(extra))
        self.add(entry, replace=replace)
        for a, spec in (aliases or {}).items():
            self.alias(a, spec, replace=replace)
        return entry

    def add(self, entry: Any, *, replace: bool = False) -> Any:
        """Register a ready entry object (``name``, ``params``, ``doc``, ``source``,
        ``builtin``), e.g. a kind's own info dataclass."""
        self.check(entry.name, entry.params)
        if (entry.name in self._entries or entry.name in self._aliases) and not replace:
            raise SpecError(f"{self.kind} {entry.name!r} is already registered")
        self._aliases.pop(entry.name, None)
        self._entries[entry.name] = entry
        return entry

    def alias(self, name: str, spec: str, *, doc: str = "", replace: bool = False) -> Alias:
        """``name`` stands for the spec ``spec`` (a registered name and options); options
        after the alias override the preset ones (``freebsd4:probes=8``)."""
        if not self._name_re.fullmatch(name or ""):
            raise SpecError(f"{self.kind} alias must match {self._name_re.pattern}, not {name!r}")
        if (name in self._entries or name in self._aliases) and not replace:
            raise SpecError(f"{self.kind} {name!r} is already registered")
        target, _ = O.split_spec(spec)
        a = Alias(name, target, spec, " ".join(doc.split()))
        self._aliases[name] = a
        return a

    def unregister(self, name: str) -> None:
        """Remove a plug-in (or an alias); built-ins cannot be removed."""
        self._ensure()
        if name in self._aliases:
            del self._aliases[name]
            return
        entry = self._entries.get(name)
        if entry is None:
            raise SpecError(f"{self.kind} {name!r} is not registered")
        if getattr(entry, "builtin", False):
            raise SpecError(f"{self.kind} {name!r} is built in and cannot be unregistered")
        del self._entries[name]

    # -- queries ------------------------------------------------------------------------------

    def _ensure(self) -> None:
        if not self._loaded:
            self._loaded = True
            assert self._load is not None
            self._load()

    def _unknown(self, name: str) -> SpecError:
        valid = ", ".join(self.names()) or "none"
        al = ", ".join(f"{a.name} (= {a.spec})" for a in self._aliases.values())
        return SpecError(f"unknown {self.kind} {name!r}; valid: {valid}"
                         + (f"; aliases: {al}" if al else ""))

    def get(self, name: str) -> Any:
        """The entry of ``name`` (an alias gives its target's); SpecError listing the valid
        names if there is none."""
        entry, _ = self.resolve(name)
        return entry

    def resolve(self, name: str) -> tuple[Any, Any]:
        """(entry, preset params instance or None) of a name or alias."""
        self._ensure()
        key = name.strip().lower() if isinstance(name, str) else name
        if key in self._entries:
            return self._entries[key], None
        a = self._aliases.get(key)
        if a is None:
            raise self._unknown(name)
        target = self._entries.get(a.target)
        if target is None:
            raise self._unknown(a.target)
        _, parts = O.split_spec(a.spec)
        return target, O.parse_params(target.params, parts, spec=a.spec, kind=self.kind,
                                      name=target.name)

    def names(self) -> list[str]:
        """Registered names (built-ins first, in registration order), without aliases."""
        self._ensure()
        return list(self._entries)

    def aliases(self) -> dict[str, Alias]:
        self._ensure()
        return dict(self._aliases)

    def entries(self) -> dict[str, Any]:
        """Name -> entry, in registration order."""
        self._ensure()
        return dict(self._entries)

    def __contains__(self, name: object) -> bool:
        self._ensure()
        key = name.strip().lower() if isinstance(name, str) else name
        return key in self._entries or key in self._aliases

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        self._ensure()
        return len(self._entries)

    # -- spec strings -------------------------------------------------------------------------

    def parse(self, spec: "str | Spec") -> Spec:
        """``NAME[:POSITIONAL][:key=value,...]`` -> :class:`Spec` (SpecError on any mistake,
        naming the spec and listing the valid names or options)."""
        if isinstance(spec, Spec):
            return spec
        if not isinstance(spec, str) or not spec.strip():
            raise SpecError(f"{self.kind} spec must be a non-empty string, not {spec!r}")
        head, parts = O.split_spec(spec)
        entry, preset = self.resolve(head)
        base = O.values(preset) if preset is not None else None
        params = O.parse_params(entry.params, parts, spec=spec.strip(), kind=self.kind,
                                name=entry.name, base=base)
        return Spec(entry.name, params, entry)

    def format(self, name: str, params: Any) -> str:
        """The canonical spec string of ``params`` of model ``name``."""
        return O.format_spec(name, params)

    def describe(self) -> list[dict[str, Any]]:
        """One dict per entry, then per alias: name, grammar, options (unit, default, doc),
        doc, source, builtin; aliases carry ``alias_of`` (the spec they stand for)."""
        rows = []
        for e in self.entries().values():
            rows.append({"name": e.name, "grammar": O.grammar(e.name, e.params),
                         "params": O.defaults(e.params), "options": O.describe(e.params),
                         "doc": e.doc, "source": e.source, "builtin": bool(e.builtin)})
        for a in self.aliases().values():
            rows.append({"name": a.name, "grammar": a.name, "alias_of": a.spec, "params": {},
                         "options": [], "doc": a.doc, "source": "", "builtin": True})
        return rows
