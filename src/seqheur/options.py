"""The one option grammar of every spec string: detectors, tables, policies, caches, disks.

A spec is a registered name, then options::

    NAME[:POSITIONAL][:key=value[,key=value...]]

``:`` and ``,`` both separate options (``slowdown:window=64KiB,seqmax=64`` =
``slowdown:window=64KiB:seqmax=64``); keys are case-insensitive; a key may be given once. A
model whose parameters declare a positional form (``spec_positional`` on the params class)
takes it as the first value, without a key: ``fixed:8`` (= ``fixed:n=8``), ``nfsheur:64x4``
(= ``nfsheur:size=64,probes=4``; several positional fields are joined by ``x``).

The grammar is driven by the model's frozen parameter dataclass: every field is declared with
:func:`param`, which records its default, unit, kind and a one-line doc in the field's
metadata. Kinds and the values they accept:

``size``
    bytes (or another byte unit, e.g. ``KiB``): ``65536``, ``64KiB``, ``64K``, ``64k`` (all
    65536), ``64KB`` (64000); ``K``/``M``/``G``/``T`` and ``KiB``/``MiB``/``GiB``/``TiB``
    (any case) are binary, ``KB``/``MB``/``GB``/``TB`` decimal; ``B`` = bytes; a fraction is
    allowed when the result is whole (``1.5KiB`` = 1536). A field whose unit is ``KiB``
    takes a plain number in KiB, or a suffixed size converted to KiB (``1MiB`` -> 1024).
``count``
    a plain integer (``0x`` hex allowed); a suffix is an error.
``bool``
    ``true/false``, ``1/0``, ``yes/no``, ``on/off``.
``choice``
    one of the field's ``choices`` (case-insensitive).
``float``
    a decimal number (``0.75``, ``1e3``).

Fields declared without :func:`param` (plain plug-in dataclasses) get a kind from their
default: ``bool`` -> bool, ``int`` -> count, ``float`` -> float, ``str`` -> any string.

Every mistake is a :class:`~seqheur.errors.SpecError` naming the spec, the bad part, and every
valid key with its default, unit and doc, e.g.::

    detector 'slowdown:windo=3': unknown option 'windo'; valid: window=65536 bytes (...),
    seqmax=127 count (...)

:func:`format_spec` is the canonical spec (the positional value, then the options that
differ from their defaults, all ``:``-separated, sizes in their unit as plain integers), and
``parse(format_spec(name, p)) == p`` for every valid ``p``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from .errors import SpecError

KINDS = ("size", "count", "bool", "choice", "float", "str")

# Bytes per unit of a ``size`` field's unit (a size field's unit must be one of these).
UNIT_BYTES: dict[str, int] = {"bytes": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20,
                              "GiB": 1 << 30}

# Size suffixes (matched case-insensitively): a bare letter or ...iB is binary, ...B decimal.
SIZE_SUFFIXES: dict[str, int] = {"": 1, "b": 1}
for _i, _l in enumerate("kmgt", 1):
    SIZE_SUFFIXES[_l] = 1024 ** _i
    SIZE_SUFFIXES[_l + "ib"] = 1024 ** _i
    SIZE_SUFFIXES[_l + "b"] = 1000 ** _i
del _i, _l

_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")
_SIZE_RE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([A-Za-z]*)\s*")
_COUNT_RE = re.compile(r"\s*[+-]?(?:0[xX][0-9a-fA-F]+|\d+)\s*")
_SIZE_HELP = "an integer with an optional suffix K/KiB/KB, M/MiB/MB, G/GiB/GB, T/TiB/TB"


# --------------------------------------------------------------------------------------------
# declaring parameters


def param(default: Any, *, unit: str = "", doc: str = "", kind: str | None = None,
          choices: Iterable[str] | None = None, required: bool = False,
          tune: Any = None) -> Any:
    """A parameter field of a frozen params dataclass, with its unit, kind and doc::

        @dataclass(frozen=True)
        class SlowdownParams:
            window: int = param(65536, unit="bytes", doc="reorder window")
            seqmax: int = param(127, doc="seqcount cap")

    ``kind`` defaults from the default and unit: ``choices`` -> ``choice``, bool -> ``bool``,
    int with a byte unit (``bytes``, ``KiB``, ...) -> ``size``, int -> ``count`` (unit
    ``count`` unless given), float -> ``float``. ``required``: the spec must give the value
    (positionally or by key) even though the dataclass has a default.

    ``tune``: the field is a setting ``seqheur tune`` searches (:data:`TUNE_SCALES`), over
    ``(lo, hi)`` or ``(lo, hi, scale)`` in the field's unit, ends included and the default
    inside; the scale is ``pow2`` (powers of two only: window and read-ahead sizes) for a
    ``size``, else ``linear`` unless given (``log``: uniform in the logarithm, for a count
    spanning decades). ``True`` for a ``bool`` or ``choice`` (every value). Fields without it
    (a model's environment: block size, device limits, hash seeds) are never tuned.
    """
    ch = tuple(choices) if choices is not None else ()
    k = kind or _infer_kind(default, unit, ch)
    if k not in KINDS:
        raise ValueError(f"param kind must be one of {KINDS}, not {k!r}")
    if k == "choice" and default not in ch:
        raise ValueError(f"param default {default!r} is not one of its choices {ch}")
    if k == "size" and unit not in UNIT_BYTES:
        raise ValueError(f"a size param's unit must be one of {', '.join(UNIT_BYTES)}, "
                         f"not {unit!r}")
    if k == "count" and not unit:
        unit = "count"
    return dataclasses.field(default=default, metadata={
        "kind": k, "unit": unit, "doc": " ".join(doc.split()), "choices": ch,
        "required": bool(required), "tune": _tune_range(tune, k, default, ch)})


# How ``seqheur tune`` samples a numeric field: uniformly, uniformly in log(value), or over the
# powers of two between the ends (uniformly in log2).
TUNE_SCALES = ("linear", "log", "pow2")


def _tune_range(tune: Any, kind: str, default: Any, choices: tuple[str, ...]) -> tuple:
    """The normalised ``tune`` metadata: ``()`` (not tuned), ``(lo, hi, scale)`` or, for a
    bool or choice, its values."""
    if tune is None or tune is False:
        return ()
    if kind in ("bool", "choice"):
        if tune is not True:
            raise ValueError(f"a {kind} param is tuned over all its values: tune=True, not {tune!r}")
        return (False, True) if kind == "bool" else choices
    if kind == "str" or tune is True or not isinstance(tune, tuple) or len(tune) not in (2, 3):
        raise ValueError(f"a {kind} param's tune must be (lo, hi) or (lo, hi, scale), not {tune!r}")
    lo, hi = tune[0], tune[1]
    scale = tune[2] if len(tune) == 3 else ("pow2" if kind == "size" else "linear")
    if scale not in TUNE_SCALES:
        raise ValueError(f"tune scale must be one of {', '.join(TUNE_SCALES)}, not {scale!r}")
    if not lo <= default <= hi:
        raise ValueError(f"tune range {lo}..{hi} does not hold the default {default!r}")
    if scale == "log" and lo <= 0:
        raise ValueError(f"a log tune range must start above 0, not at {lo}")
    if scale == "pow2" and not all(v > 0 and int(v) == v and int(v) & (int(v) - 1) == 0
                                   for v in (lo, hi)):
        raise ValueError(f"a pow2 tune range needs powers of two at both ends, not {lo}..{hi}")
    return (lo, hi, scale)


def _infer_kind(default: Any, unit: str, choices: tuple[str, ...]) -> str:
    if choices:
        return "choice"
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, int):
        return "size" if unit in UNIT_BYTES else "count"
    if isinstance(default, float):
        return "float"
    return "str"


@dataclass(frozen=True)
class Option:
    """One parameter of a params dataclass, as the grammar sees it."""

    name: str
    default: Any
    kind: str
    unit: str = ""
    doc: str = ""
    choices: tuple[str, ...] = ()
    required: bool = False
    tune: tuple = ()  # what ``seqheur tune`` searches: (lo, hi, scale), the values, or ()

    def parse(self, text: str) -> Any:
        """The value of ``text`` for this option; ValueError with a reason if it is not one."""
        t = text.strip()
        if self.kind == "size":
            per = UNIT_BYTES[self.unit]
            m = _SIZE_RE.fullmatch(t)
            if m and not m.group(2) and per != 1:  # a plain number is in the field's unit
                return _whole(m.group(1), 1, f"expected a whole number of {self.unit}")
            b = _size_bytes(t)
            if b % per:
                raise ValueError(f"{b} bytes is not a whole number of {self.unit}")
            return b // per
        if self.kind == "count":
            if not _COUNT_RE.fullmatch(t):
                raise ValueError("expected a count: a plain integer (no unit suffix)")
            return int(t, 0)
        if self.kind == "bool":
            low = t.lower()
            if low in _TRUE:
                return True
            if low in _FALSE:
                return False
            raise ValueError("expected a boolean: true/false, 1/0, yes/no, on/off")
        if self.kind == "choice":
            low = t.lower()
            for c in self.choices:
                if low == c.lower():
                    return c
            raise ValueError(f"expected one of {'|'.join(self.choices)}")
        if self.kind == "float":
            try:
                v = float(t)
            except ValueError:
                raise ValueError("expected a number") from None
            if not math.isfinite(v):
                raise ValueError("expected a finite number")
            return v
        if not t:
            raise ValueError("expected a value")
        return t

    def format(self, value: Any) -> str:
        """``value`` as the canonical spec text (sizes as plain integers in the unit)."""
        if isinstance(value, bool):
            return "true" if value else "false"
        if self.kind == "float":
            return repr(float(value))
        return str(value)

    @property
    def placeholder(self) -> str:
        """How the grammar line shows the value: ``uniform|dense``, ``SIZE``, ``N``, ..."""
        return {"choice": "|".join(self.choices), "bool": "true|false", "size": "SIZE",
                "count": "N", "float": "X"}.get(self.kind, "TEXT")

    def describe(self) -> str:
        """``window=65536 bytes (SlowDown's reorder window)``, ``hash=uniform [uniform|dense]
        (...)``, ``assume_more=false [bool] (...)``."""
        unit = {"choice": "[" + "|".join(self.choices) + "]",
                "bool": "[bool]"}.get(self.kind, self.unit)
        s = f"{self.name}={self.format(self.default)}" + (f" {unit}" if unit else "")
        if self.required:
            s += ", required"
        return s + (f" ({self.doc})" if self.doc else "")

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "default": self.default, "kind": self.kind,
                "unit": self.unit, "doc": self.doc, "choices": list(self.choices),
                "required": self.required, "tune": list(self.tune)}


def _whole(num: str, mult: int, what: str) -> int:
    if "." in num:
        frac = float(num) * mult
        if frac != int(frac):
            raise ValueError(what)
        return int(frac)
    return int(num) * mult


def _size_bytes(text: str) -> int:
    m = _SIZE_RE.fullmatch(text)
    if not m:
        raise ValueError(f"expected a size: {_SIZE_HELP}")
    suffix = m.group(2).lower()
    if suffix not in SIZE_SUFFIXES:
        raise ValueError(f"unknown size unit {m.group(2)!r} (use K/KiB/KB, M/MiB/MB, "
                         f"G/GiB/GB, T/TiB/TB)")
    return _whole(m.group(1), SIZE_SUFFIXES[suffix], "expected a whole number of bytes")


def parse_size(text: "str | int") -> int:
    """Bytes of a size: ``65536``, ``64KiB``, ``64K``, ``64k`` (= 65536), ``64KB`` (= 64000),
    ``1.5MiB``; an int is returned as is. SpecError if it is not a size or negative."""
    if isinstance(text, bool):
        raise SpecError(f"size {text!r}: expected {_SIZE_HELP}")
    if isinstance(text, int) or (hasattr(text, "dtype") and getattr(text, "dtype").kind in "iu"):
        v = int(text)
        if v < 0:
            raise SpecError(f"size {text!r} is negative")
        return v
    if isinstance(text, float) and text.is_integer() and text >= 0:
        return int(text)
    if not isinstance(text, str):
        raise SpecError(f"size {text!r}: expected {_SIZE_HELP}")
    if text.strip().startswith("-"):
        raise SpecError(f"size {text!r} is negative")
    try:
        return _size_bytes(text)
    except ValueError as exc:
        raise SpecError(f"size {text!r}: {exc}") from None


@functools.lru_cache(maxsize=None)
def options(params_cls: type) -> tuple[Option, ...]:
    """The options of a params dataclass, in field order."""
    if not (dataclasses.is_dataclass(params_cls) and isinstance(params_cls, type)):
        raise TypeError(f"{params_cls!r} is not a dataclass type")
    out = []
    for f in dataclasses.fields(params_cls):
        if f.default is dataclasses.MISSING:
            raise TypeError(f"{params_cls.__name__}.{f.name} needs a default")
        md = f.metadata
        if "kind" in md:
            out.append(Option(f.name, f.default, md["kind"], md.get("unit", ""),
                              md.get("doc", ""), tuple(md.get("choices", ())),
                              bool(md.get("required", False)), tuple(md.get("tune", ()))))
        else:
            kind = _infer_kind(f.default, md.get("unit", ""), ())
            out.append(Option(f.name, f.default, kind,
                              md.get("unit", "count" if kind == "count" else ""),
                              md.get("doc", "")))
    return tuple(out)


def positional(params_cls: type) -> tuple[str, ...]:
    """Fields taken by the positional first value (``spec_positional`` on the class)."""
    pos = tuple(getattr(params_cls, "spec_positional", ()) or ())
    names = {o.name for o in options(params_cls)}
    for p in pos:
        if p not in names:
            raise TypeError(f"{params_cls.__name__}.spec_positional names no field {p!r}")
    return pos


def describe(params_cls: type) -> list[dict[str, Any]]:
    """Every option of a params class as a dict (name, default, kind, unit, doc, choices,
    required, positional), for listings (``seqheur detectors --json`` and the like)."""
    pos = positional(params_cls)
    return [dict(o.as_dict(), positional=o.name in pos) for o in options(params_cls)]


def valid_options(params_cls: type, name: str = "") -> str:
    """``window=65536 bytes (...), seqmax=127 count (...)`` (or ``none``), as errors list them."""
    pos = positional(params_cls)
    text = ", ".join(o.describe() for o in options(params_cls))
    if not text:
        return f"none ({name or 'it'} takes no options)"
    if pos:
        text = f"{_positional_placeholder(pos)} first, or " + text
    return text


def _positional_placeholder(pos: tuple[str, ...]) -> str:
    return "x".join(p.upper() for p in pos)


def grammar(name: str, params_cls: type) -> str:
    """The spec's grammar line, e.g. ``nfsheur:SIZExPROBES[:hash=uniform|dense][:seed=N]``."""
    pos = positional(params_cls)
    s = name + (":" + _positional_placeholder(pos) if pos else "")
    for o in options(params_cls):
        if o.name not in pos:
            s += f"[:{o.name}={o.placeholder}]"
    return s


# --------------------------------------------------------------------------------------------
# parsing and formatting


def split_spec(spec: str) -> tuple[str, list[str]]:
    """``NAME`` (lower case) and the option parts of a spec string."""
    head, _, rest = spec.strip().partition(":")
    parts = [p.strip() for p in re.split(r"[:,]", rest) if p.strip()] if rest else []
    return head.strip().lower(), parts


def parse_params(params_cls: type, parts: "Iterable[str] | str", *, spec: str | None = None,
                 kind: str = "", name: str = "", base: Mapping[str, Any] | None = None) -> Any:
    """A ``params_cls`` instance from option parts (``["64x4", "hash=dense"]`` or the text
    after the name, ``"64x4:hash=dense"``). ``base``: values to start from (an alias's), which
    the parts override. ``spec``/``kind``/``name`` only word the errors."""
    if isinstance(parts, str):
        parts = [p.strip() for p in re.split(r"[:,]", parts) if p.strip()]
    parts = list(parts)
    name = name or getattr(params_cls, "__name__", "")
    where = (kind + " " if kind else "") + repr(spec if spec is not None else name)

    def fail(msg: str) -> SpecError:
        return SpecError(f"{where}: {msg}; valid: {valid_options(params_cls, name)}")

    opts = {o.name: o for o in options(params_cls)}
    pos = positional(params_cls)
    values: dict[str, Any] = dict(base or {})
    given: set[str] = set()

    def put(key: str, text: str, shown: str) -> None:
        if key in given:
            raise fail(f"option {key!r} given twice")
        try:
            values[key] = opts[key].parse(text)
        except ValueError as exc:
            raise fail(f"{shown}: {exc}") from None
        given.add(key)

    for i, part in enumerate(parts):
        key, eq, val = part.partition("=")
        if not eq:
            if i == 0 and pos:
                pieces = re.split(r"[xX]", key) if len(pos) > 1 else [key]
                if len(pieces) != len(pos) or not all(p.strip() for p in pieces):
                    raise fail(f"expected {_positional_placeholder(pos)} as the first value "
                               f"({grammar(name, params_cls)}), not {part!r}")
                for field_name, piece in zip(pos, pieces):
                    put(field_name, piece, f"{field_name}={piece.strip()}")
                continue
            raise fail(f"unknown option {part!r} (options are key=value)")
        key = key.strip().lower()
        if key not in opts:
            raise fail(f"unknown option {key!r}")
        put(key, val, part)
    missing = [o.name for o in opts.values() if o.required and o.name not in given
               and o.name not in (base or {})]
    if missing:
        raise fail(f"{', '.join(missing)} required: {grammar(name, params_cls)}")
    try:
        return params_cls(**values)
    except (SpecError, ValueError, TypeError) as exc:
        raise fail(str(exc)) from None


def format_spec(name: str, params: Any) -> str:
    """The canonical spec string: the name, the positional value (if the model has one), then
    every option that differs from its default, ``:``-separated."""
    cls = type(params)
    pos = positional(cls)
    opts = options(cls)
    by = {o.name: o for o in opts}
    parts = []
    if pos:
        parts.append("x".join(by[p].format(getattr(params, p)) for p in pos))
    for o in opts:
        if o.name in pos:
            continue
        v = getattr(params, o.name)
        if v != o.default:
            parts.append(f"{o.name}={o.format(v)}")
    return name + "".join(":" + p for p in parts)


def defaults(params_cls: type) -> dict[str, Any]:
    """Field name -> default."""
    return {o.name: o.default for o in options(params_cls)}


def values(params: Any) -> dict[str, Any]:
    """Field name -> value of a params instance (shallow, unlike ``dataclasses.asdict``)."""
    return {f.name: getattr(params, f.name) for f in dataclasses.fields(params)}
