"""The one option grammar (seqheur.options) and the one registry shape (seqheur.registry):
grammar laws over every registered detector, table and disk profile, size spellings, and
error messages that name the spec, the bad part and every valid option."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from seqheur import options as O
from seqheur.errors import SeqheurError, SpecError
from seqheur.heuristics.registry import DETECTORS, parse_detector
from seqheur.registry import Registry
from seqheur.tables import TABLES, parse_table

KiB, MiB, GiB, TiB = 1 << 10, 1 << 20, 1 << 30, 1 << 40

# --------------------------------------------------------------------------------------------
# sizes, counts, booleans

SPELLINGS = [
    ("65536", 65536), ("64KiB", 65536), ("64K", 65536), ("64k", 65536), ("64kib", 65536),
    ("64 KiB", 65536), ("64KB", 64000), ("64kb", 64000), ("64kB", 64000),
    ("2M", 2 * MiB), ("2m", 2 * MiB), ("2MiB", 2 * MiB), ("2MB", 2_000_000),
    ("3G", 3 * GiB), ("3GiB", 3 * GiB), ("3GB", 3_000_000_000), ("1T", TiB), ("1TB", 10**12),
    ("4096B", 4096), ("4096b", 4096), ("1.5KiB", 1536), ("0.5k", 512), ("0", 0),
]


@pytest.mark.parametrize("text, value", SPELLINGS)
def test_size_spellings(text: str, value: int) -> None:
    assert O.parse_size(text) == value


SUFFIXES = [(s, 1024 ** i) for i, l in enumerate("kmgt", 1)
            for s in (l, l.upper(), l + "ib", l.upper() + "iB", l.upper() + "IB")] + \
           [(s, 1000 ** i) for i, l in enumerate("kmgt", 1)
            for s in (l + "b", l.upper() + "B", l + "B")] + [("", 1), ("B", 1), ("b", 1)]


@given(n=st.integers(0, 1 << 20), suffix=st.sampled_from(SUFFIXES))
def test_every_size_spelling_law(n: int, suffix: tuple[str, int]) -> None:
    text, mult = suffix
    assert O.parse_size(f"{n}{text}") == n * mult


@pytest.mark.parametrize("bad", ["12 parsecs", "-1", "x", "0.3k", "1.5", "64KiBs", "", "1e3"])
def test_bad_sizes(bad: str) -> None:
    with pytest.raises(SpecError, match="size"):
        O.parse_size(bad)


def test_cache_parse_size_is_the_option_grammar() -> None:
    from seqheur import cache as C

    assert C.parse_size("256MiB") == C.parse_size("256M") == 256 * MiB
    assert C.parse_size("256MB") == 256_000_000  # decimal, as everywhere
    with pytest.raises(SeqheurError):
        C.parse_size("12 parsecs")


def test_count_bool_choice_float() -> None:
    count = O.Option("n", 0, "count")
    assert count.parse("42") == 42 and count.parse("-3") == -3 and count.parse("0x10") == 16
    for bad in ("4k", "1.5", "KiB", ""):
        with pytest.raises(ValueError, match="plain integer"):
            count.parse(bad)
    flag = O.Option("b", False, "bool")
    for t in ("true", "1", "yes", "on", "TRUE", "On"):
        assert flag.parse(t) is True
    for t in ("false", "0", "no", "off", "No"):
        assert flag.parse(t) is False
    with pytest.raises(ValueError, match="boolean"):
        flag.parse("2")
    ch = O.Option("hash", "uniform", "choice", choices=("uniform", "dense"))
    assert ch.parse("DENSE") == "dense"
    with pytest.raises(ValueError, match="uniform|dense"):
        ch.parse("md5")
    fl = O.Option("x", 0.0, "float")
    assert fl.parse("0.75") == 0.75
    with pytest.raises(ValueError):
        fl.parse("nan")


def test_size_field_in_kib() -> None:
    kib = O.Option("ra_kb", 128, "size", unit="KiB")
    assert kib.parse("256") == 256 and kib.parse("1MiB") == 1024 and kib.parse("2048B") == 2
    with pytest.raises(ValueError, match="KiB"):
        kib.parse("1000B")


# --------------------------------------------------------------------------------------------
# a params class exercising every kind


@dataclass(frozen=True)
class Demo:
    spec_positional = ("size", "probes")

    size: int = O.param(64, unit="slots", doc="slots")
    probes: int = O.param(4, unit="slots", doc="probes per lookup")
    window: int = O.param(65536, unit="bytes", doc="reorder window")
    ra: int = O.param(128, unit="KiB", doc="read-ahead")
    hash: str = O.param("uniform", choices=("uniform", "dense"), doc="start slot")
    sticky: bool = O.param(False, doc="keep it")
    frac: float = O.param(0.0, unit="fraction", doc="where")
    n: int = O.param(0, doc="how many", required=True)


def test_grammar_forms_are_equal() -> None:
    a = O.parse_params(Demo, "64x4:n=1")
    assert a == O.parse_params(Demo, "size=64,probes=4,n=1") == O.parse_params(Demo, "N=1")
    b = O.parse_params(Demo, "8X2,WINDOW=64k:hash=Dense,sticky=on,n=3,frac=0.5,ra=1MiB")
    assert b == Demo(8, 2, 65536, 1024, "dense", True, 0.5, 3)
    assert O.format_spec("demo", b) == "demo:8x2:ra=1024:hash=dense:sticky=true:frac=0.5:n=3"
    assert O.parse_params(Demo, "64x4:window=64KB,n=0").window == 64000
    assert O.grammar("demo", Demo) == ("demo:SIZExPROBES[:window=SIZE][:ra=SIZE]"
                                       "[:hash=uniform|dense][:sticky=true|false][:frac=X][:n=N]")
    rows = O.describe(Demo)
    assert rows[0] == {"name": "size", "default": 64, "kind": "count", "unit": "slots",
                       "doc": "slots", "choices": [], "required": False, "positional": True,
                       "tune": []}
    assert [r["kind"] for r in rows] == ["count", "count", "size", "size", "choice", "bool",
                                         "float", "count"]


@pytest.mark.parametrize("parts, words", [
    ("64x4:n=1:windo=3", "unknown option 'windo'"),
    ("64x4:n=1:window=big", "window=big: expected a size"),
    ("64x4:n=1:window=1.2k", "whole number"),
    ("64x4:n=4k", "n=4k: expected a count: a plain integer"),
    ("64x4:n=1:sticky=2", "boolean"),
    ("64x4:n=1:hash=md5", "expected one of uniform|dense"),
    ("64:n=1", "expected SIZExPROBES as the first value"),
    ("64x4x2:n=1", "expected SIZExPROBES"),
    ("64x4:size=3:n=1", "'size' given twice"),
    ("64x4:dense:n=1", "unknown option 'dense' (options are key=value)"),
    ("64x4", "n required"),
])
def test_errors_name_spec_part_and_every_option(parts: str, words: str) -> None:
    with pytest.raises(SpecError) as e:
        O.parse_params(Demo, parts, spec="demo:" + parts, kind="model", name="demo")
    msg = str(e.value)
    assert msg.startswith(f"model 'demo:{parts}': ")
    assert words in msg
    assert msg.endswith("; valid: SIZExPROBES first, or " + ", ".join(
        o.describe() for o in O.options(Demo)))
    assert "window=65536 bytes (reorder window)" in msg
    assert "hash=uniform [uniform|dense] (start slot)" in msg
    assert "n=0 count, required (how many)" in msg


def test_plain_plugin_dataclass_kinds() -> None:
    @dataclass(frozen=True)
    class Plain:
        step: int = 2
        on: bool = True
        x: float = 1.0

    assert [o.kind for o in O.options(Plain)] == ["count", "bool", "float"]
    assert O.parse_params(Plain, "step=3,on=no,x=2") == Plain(3, False, 2.0)
    with pytest.raises(SpecError, match="plain integer"):
        O.parse_params(Plain, "step=3k")


def test_param_declaration_errors() -> None:
    with pytest.raises(ValueError, match="choices"):
        O.param("md5", choices=("uniform", "dense"))
    with pytest.raises(ValueError, match="unit"):
        O.param(1, kind="size", unit="pages")
    with pytest.raises(ValueError, match="kind"):
        O.param(1, kind="colour")


# --------------------------------------------------------------------------------------------
# laws over every registered detector and table


def _value(opt: O.Option) -> st.SearchStrategy:
    near = st.just(opt.default)
    if opt.kind == "bool":
        return st.booleans()
    if opt.kind == "choice":
        return st.sampled_from(opt.choices)
    if opt.kind == "float":
        return st.floats(0, 1e6, allow_nan=False, allow_infinity=False)
    if opt.kind == "str":
        return st.text("abc", min_size=1, max_size=4)
    small = st.integers(0, 140)
    big = st.integers(0, 1 << 40)
    if opt.kind == "size":
        return st.one_of(near, small, big, st.integers(0, 4096).map(lambda k: k * 1024))
    return st.one_of(near, small, big, st.integers(-3, 3))


def _params(params_cls: type) -> st.SearchStrategy:
    opts = O.options(params_cls)
    return st.fixed_dictionaries(
        {o.name: st.one_of(st.just(o.default), _value(o)) for o in opts})


def _build(params_cls: type, values: dict):
    try:
        return params_cls(**values)
    except (ValueError, SpecError, TypeError):
        return None


def _spell(opt: O.Option, value, draw) -> str:
    """One of the spellings of ``value`` the grammar accepts (not only the canonical)."""
    if opt.kind == "bool":
        return draw(st.sampled_from(["true", "1", "yes", "on", "True"] if value
                                    else ["false", "0", "no", "off", "FALSE"]))
    if opt.kind == "choice":
        return draw(st.sampled_from([value, value.upper(), value.capitalize()]))
    if opt.kind == "size":
        per = O.UNIT_BYTES[opt.unit]
        b = value * per
        forms = [str(value)]
        for i, letter in enumerate("kmg", 1):
            if b and b % (1024 ** i) == 0:
                n = b // (1024 ** i)
                forms += [f"{n}{letter}", f"{n}{letter.upper()}iB", f"{n}{letter.upper()}"]
            if b and b % (1000 ** i) == 0 and per == 1:
                forms.append(f"{b // 1000 ** i}{letter.upper()}B")
        return draw(st.sampled_from(forms))
    return opt.format(value)


MODELS = ([("detector", n, e.params) for n, e in DETECTORS.entries().items() if e.builtin]
          + [("table", n, e.params) for n, e in TABLES.entries().items() if e.builtin])


@pytest.mark.parametrize("kind, name, params_cls", MODELS, ids=[m[1] for m in MODELS])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(data=st.data())
def test_parse_format_round_trip(kind: str, name: str, params_cls: type, data) -> None:
    p = _build(params_cls, data.draw(_params(params_cls)))
    assume(p is not None)
    text = O.format_spec(name, p)
    parse = parse_detector if kind == "detector" else parse_table
    got = parse(text)
    assert (got.params if kind == "detector" else got) == p
    assert got.spec == text  # canonical is a fixed point
    # any other spelling: keys in any case, ',' or ':', sizes with suffixes, bool words,
    # positional or by key, defaults given or left out
    pos = O.positional(params_cls)
    use_pos = bool(pos) and data.draw(st.booleans())
    parts = ["x".join(str(getattr(p, f)) for f in pos)] if use_pos else []
    for o in O.options(params_cls):
        v = getattr(p, o.name)
        if (use_pos and o.name in pos) or (v == o.default and not o.required
                                           and data.draw(st.booleans())):
            continue
        parts.append(f"{data.draw(st.sampled_from([o.name, o.name.upper()]))}="
                     f"{_spell(o, v, data.draw)}")
    seps = [data.draw(st.sampled_from([":", ","])) for _ in parts[1:]]
    spelled = name + (":" + parts[0] if parts else "") + "".join(
        sep + part for sep, part in zip(seps, parts[1:]))
    again = parse(spelled)
    assert (again.params if kind == "detector" else again) == p, spelled


@pytest.mark.parametrize("kind, name, params_cls", MODELS, ids=[m[1] for m in MODELS])
@settings(max_examples=25, deadline=None)
@given(key=st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8),
       bad=st.sampled_from(["zz", "1.5q", "-", "64kibb", "x1"]), data=st.data())
def test_every_error_lists_the_valid_keys(kind: str, name: str, params_cls: type, key: str,
                                          bad: str, data) -> None:
    opts = O.options(params_cls)
    names = [o.name for o in opts]
    parse = parse_detector if kind == "detector" else parse_table
    cases = []
    if key not in names:
        cases.append(f"{name}:{key}=1")
    if opts:
        o = data.draw(st.sampled_from(opts))
        if o.kind != "str":
            cases.append(f"{name}:{o.name}={bad}")
    for spec in cases:
        with pytest.raises(SpecError) as e:
            parse(spec)
        msg = str(e.value)
        assert repr(spec) in msg
        tail = msg.split("; valid: ", 1)[1]
        if opts:
            for o in opts:
                assert o.describe() in tail
        else:
            assert tail.startswith("none")


def test_detector_spec_behaviour_change_64k_is_binary() -> None:
    assert parse_detector("slowdown:window=64k").params.window == 65536
    assert parse_detector("slowdown:window=64K").params.window == 65536
    assert parse_detector("slowdown:window=64KB").params.window == 64000
    assert parse_detector("cursor:cursors=8,window=1MiB:seqmax=100").spec == \
        "cursor:cursors=8:window=1048576:seqmax=100"


# --------------------------------------------------------------------------------------------
# the registry base


@dataclass(frozen=True)
class Knobs:
    spec_positional = ("n",)
    n: int = O.param(0, unit="blocks", doc="blocks", required=True)
    bsize: int = O.param(8192, unit="bytes", doc="block size")


def test_registry_shape() -> None:
    loaded = []
    reg = Registry("gadget", load=lambda: (loaded.append(1),
                                           reg.register("fixed", params=Knobs, impl="f",
                                                        doc="fixed  read-ahead",
                                                        source="here", builtin=True,
                                                        aliases={"nfs8": "fixed:8"})))
    assert not loaded
    assert reg.names() == ["fixed"] and loaded == [1]
    e = reg.get("FIXED")
    assert (e.name, e.params, e.impl, e.doc, e.source, e.builtin) == \
        ("fixed", Knobs, "f", "fixed read-ahead", "here", True)
    assert reg.get("nfs8") is e and "nfs8" in reg and len(reg) == 1
    s = reg.parse("fixed:4:bsize=4KiB")
    assert s.params == Knobs(4, 4096) and s.spec == "fixed:4:bsize=4096" and s.entry is e
    assert reg.parse("nfs8").params == Knobs(8)
    assert reg.parse("nfs8:bsize=16k").spec == "fixed:8:bsize=16384"
    with pytest.raises(SpecError, match="n required: fixed:N"):
        reg.parse("fixed:bsize=4k")
    with pytest.raises(SpecError,
                       match=r"unknown gadget 'flux'; valid: fixed; aliases: nfs8 \(= fixed:8\)"):
        reg.parse("flux")
    with pytest.raises(SpecError, match="already registered"):
        reg.register("fixed", params=Knobs)
    with pytest.raises(SpecError, match="frozen"):
        reg.register("loose", params=dataclasses.make_dataclass("L", [("a", int, 1)]))
    with pytest.raises(SpecError, match="name"):
        reg.register("Bad Name", params=Knobs)
    with pytest.raises(SpecError, match="built in"):
        reg.unregister("fixed")
    reg.register("mine", params=Knobs, impl=None, colour="red")
    assert reg.get("mine").colour == "red" and not reg.get("mine").builtin
    rows = {r["name"]: r for r in reg.describe()}
    assert rows["fixed"]["grammar"] == "fixed:N[:bsize=SIZE]"
    assert rows["nfs8"]["alias_of"] == "fixed:8"
    reg.unregister("mine")
    assert reg.names() == ["fixed"]


def test_detectors_and_tables_are_registries() -> None:
    assert isinstance(DETECTORS, Registry) and isinstance(TABLES, Registry)
    for reg in (DETECTORS, TABLES):
        for name, e in reg.entries().items():
            if not e.builtin:
                continue  # plug-ins registered by other tests
            assert e.name == name and dataclasses.is_dataclass(e.params)
            assert e.doc and e.source and e.builtin
            for o in O.options(e.params):
                assert o.doc, (name, o.name)  # every built-in parameter is documented


# --------------------------------------------------------------------------------------------
# disk profiles


def test_disk_specs() -> None:
    from seqheur.disk.model import DiskModel, Layout
    from seqheur.disk.registry import DISKS, DiskParams, parse_disk

    assert {"ide-7200", "scsi-10k"} <= set(DISKS.names())
    d = parse_disk("ide-7200:drive_cache=off,extent=64KiB:seed=3")
    assert d.params == DiskParams(drive_cache=False, extent=65536, seed=3)
    assert d.spec == "ide-7200:drive_cache=false:extent=65536:seed=3"
    m = DiskModel.from_profile("ide-7200:drive_cache=false")
    assert not m.drive_cache and m.spec == "ide-7200:drive_cache=false"
    assert DiskModel.from_profile("ide-7200").drive_cache
    m = DiskModel.from_profile("scsi-10k:start=0.75", Layout())
    assert m.layout == Layout(start=0.75)
    # MB/s to bytes/s: a product, so 1e-12 relative (a unit slip is a factor >= 1.048576)
    assert DiskModel.from_profile("ide-7200:host_mbps=10").fparams[0] == pytest.approx(10e6, rel=1e-12)
    with pytest.raises(SpecError, match="not both"):
        DiskModel.from_profile("ide-7200:start=0.5", Layout(start=0.25))
    with pytest.raises(SpecError, match="unknown option 'drive_cahce'.*drive_cache=true"):
        parse_disk("ide-7200:drive_cahce=0")
    with pytest.raises(SpecError, match="unknown disk profile 'floppy'; valid: .*ide-7200"):
        parse_disk("floppy")
    for name in DISKS.names():
        e = DISKS.get(name)
        assert e.doc and e.source and e.impl().name == name
