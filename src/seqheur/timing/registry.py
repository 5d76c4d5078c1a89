"""Timing models as a registry of the one shape (:class:`seqheur.registry.Registry`).

A timing model turns what a replay did (the READs in trace order with their times and bytes,
and the disk reads each one issued, in issue order) into the time the clients see. Built-ins:

``disk-only``
    Today's figure and nothing more: the disk's busy time (``disk_seconds``,
    ``throughput_mbps``); the summary is exactly the one of a replay without a timing model.
``closed-loop[:preset=NAME][:slots=N][:think=none|trace][:rsize=SIZE][:rtt_us=X]...``
    Clients with N outstanding READs, a network, nfsd threads and a disk queue, simulated
    event by event (:mod:`seqheur.timing.closed_loop`, docs/timing.md).

Spec strings use the grammar of :mod:`seqheur.options`. A model may declare named presets
(``closed-loop:preset=paper-testbed``): the preset's values replace the defaults, and options
given after it override them. The canonical spec (:attr:`TimingSpec.spec`) is the name, the
preset, then every option that differs from the preset's value (or the default), so parsing
it gives the same parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from .. import options as O
from ..errors import SpecError
from ..registry import Entry, Registry, Spec


def _register_builtins() -> None:
    from . import closed_loop, disk_only

    for mod in (disk_only, closed_loop):
        TIMINGS.register(mod.NAME, params=mod.Params, impl=mod.run, doc=mod.DOC,
                         source=mod.SOURCE, builtin=True, presets=mod.PRESETS,
                         kernels=tuple(getattr(mod, k) for k in getattr(mod, "KERNELS", ())))


TIMINGS = Registry("timing model", load=_register_builtins)


def register_timing(name: str, *, params: type, run: Any, doc: str = "", source: str = "",
                    presets: Mapping[str, Mapping[str, Any]] | None = None,
                    kernels: tuple[Any, ...] = (), replace: bool = False) -> Entry:
    """Register a timing model: ``run(params, inputs) -> TimingResult`` (see
    :func:`seqheur.timing.closed_loop.run`); ``presets``: name -> {field: value}, chosen
    by the params' ``preset`` field; ``kernels``: jitted functions calling into other
    modules, which the replay caches on disk keyed by every source they reach."""
    return TIMINGS.register(name, params=params, impl=run, doc=doc, source=source,
                            replace=replace, presets=dict(presets or {}),
                            kernels=tuple(kernels))


@dataclass(frozen=True)
class TimingSpec(Spec):
    """A parsed timing spec: the model name, its params and the registry entry."""

    @property
    def spec(self) -> str:
        """Canonical: name, ``preset=...`` when one is chosen, then the options that differ
        from the preset's values (or the defaults)."""
        preset = getattr(self.params, "preset", "none")
        base = _base(self.entry, preset)
        parts = []
        if preset != "none":
            parts.append(f"preset={preset}")
        for o in O.options(type(self.params)):
            if o.name == "preset":
                continue
            v = getattr(self.params, o.name)
            if v != base.get(o.name, o.default):
                parts.append(f"{o.name}={o.format(v)}")
        return self.name + "".join(":" + p for p in parts)

    @property
    def disk_only(self) -> bool:
        """Whether the model adds nothing to the disk-only summary."""
        return self.name == "disk-only"

    def __str__(self) -> str:
        return self.spec


def _base(entry: Any, preset: str) -> dict[str, Any]:
    presets = getattr(entry, "presets", {}) or {}
    if preset in (None, "none"):
        return {}
    if preset not in presets:
        valid = ", ".join(["none", *presets]) if presets else "none"
        raise SpecError(f"timing model {entry.name!r}: unknown preset {preset!r}; valid: "
                        f"{valid}")
    return dict(presets[preset])


def parse_timing(spec: "str | TimingSpec | None") -> TimingSpec | None:
    """``NAME[:preset=P][:key=value,...]`` -> :class:`TimingSpec`; None stays None (no
    timing model: the disk-only summary). SpecError naming the spec and listing the valid
    names, presets or options."""
    if spec is None or isinstance(spec, TimingSpec):
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise SpecError(f"timing model spec must be a non-empty string, not {spec!r}")
    head, parts = O.split_spec(spec)
    entry = TIMINGS.get(head)
    preset = "none"
    for part in parts:
        key, eq, val = part.partition("=")
        if eq and key.strip().lower() == "preset":
            preset = val.strip().lower()
    known = getattr(entry, "presets", {}) or {}
    base = _base(entry, preset) if preset in known else {}  # else the choice field says why
    params = O.parse_params(entry.params, parts, spec=spec.strip(), kind=TIMINGS.kind,
                            name=entry.name, base=base or None)
    return TimingSpec(entry.name, params, entry)


def registered_timings() -> list[dict[str, Any]]:
    """Every timing model with its options and presets (for listings)."""
    rows = TIMINGS.describe()
    for r in rows:
        entry = TIMINGS.entries().get(r["name"])
        r["presets"] = dict(getattr(entry, "presets", {}) or {}) if entry else {}
    return rows
