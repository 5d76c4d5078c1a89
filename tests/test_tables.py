"""Table models: spec grammar, hashes and hand-worked lookups (docs/heuristics.md, Table models)."""

from __future__ import annotations

import numpy as np
import pytest

from seqheur.errors import SpecError
from seqheur.tables import (IdealTable, NfsheurTable, RaparmsTable, get_table, parse_table,
                            registered_tables, splitmix64, table_lookup)


def test_aliases_and_grammar() -> None:
    assert parse_table("freebsd4") == NfsheurTable(64, 4)
    assert parse_table("ellard") == NfsheurTable(1017, 32)
    assert parse_table("freebsd") == NfsheurTable(1031, 32)
    assert parse_table("freebsd4:hash=dense") == NfsheurTable(64, 4, "dense")
    assert parse_table("nfsheur:128x8:hash=uniform:seed=7") == NfsheurTable(128, 8, "uniform", 7)
    assert parse_table("raparms:threads=64") == RaparmsTable(64)
    assert parse_table("ideal") == IdealTable()
    # one option grammar: positional SIZExPROBES or keys, ',' or ':', options after aliases
    assert parse_table("nfsheur:size=64,probes=4") == NfsheurTable(64, 4)
    assert parse_table("nfsheur") == NfsheurTable(64, 4)  # the documented defaults
    assert parse_table("NFSHEUR:64X4,HASH=Dense") == NfsheurTable(64, 4, "dense")
    assert parse_table("freebsd4:probes=8") == NfsheurTable(64, 8)
    assert parse_table("ellard:seed=0x10") == NfsheurTable(1017, 32, seed=16)
    for spec in ("nfsheur:64x4", "nfsheur:64x4:hash=dense:seed=3", "raparms:threads=32",
                 "ideal"):
        assert parse_table(spec).spec == spec
        assert parse_table(parse_table(spec).spec) == parse_table(spec)


@pytest.mark.parametrize("bad, words", [
    ("nfsheur:64x4x2", "SIZExPROBES"), ("nfsheur:64", "SIZExPROBES"), ("nfsheur:0x4", "size"),
    ("nfsheur:64x4:hash=md5", "hash"), ("nfsheur:64x4:color=red", "unknown option"),
    ("raparms:threads=x", "integer"), ("ideal:hash=dense", "no options"),
    ("btree", "unknown table"), ("", "non-empty"), ("raparms:threads=8k", "plain integer"),
    ("nfsheur:64x4:size=8", "twice"), ("nfsheur:64x4:hash", "key=value"),
])
def test_bad_specs_name_the_problem(bad: str, words: str) -> None:
    with pytest.raises(SpecError, match=words):
        parse_table(bad)


def test_registered_tables_lists_kinds_and_aliases() -> None:
    rows = registered_tables()
    names = [t["name"] for t in rows]
    assert names[:3] == ["nfsheur", "raparms", "ideal"]
    assert {"freebsd4", "ellard", "freebsd"} <= set(names)
    by = {r["name"]: r for r in rows}
    assert by["nfsheur"]["grammar"] == "nfsheur:SIZExPROBES[:hash=uniform|dense][:seed=N]"
    assert by["freebsd4"]["alias_of"] == "nfsheur:64x4"
    assert [o["unit"] for o in by["nfsheur"]["options"]][:2] == ["slots", "slots"]
    for r in rows[:3]:
        assert r["doc"] and r["source"] and r["builtin"]


def test_table_registry_entries() -> None:
    from seqheur.tables import ideal_lookup, nfsheur_lookup

    assert get_table("nfsheur").params is NfsheurTable
    assert get_table("freebsd4").lookup is nfsheur_lookup  # an alias gives its target
    assert get_table("ideal").lookup is ideal_lookup
    with pytest.raises(SpecError, match="unknown table 'btree'; valid: nfsheur, raparms, ideal"):
        get_table("btree")


def test_splitmix64_matches_reference_values() -> None:
    # SplitMix64 seeded with 0: first outputs (Vigna's reference generator)
    assert int(splitmix64(0)) == 0xE220A8397B1DCDAF
    assert int(splitmix64(0x9E3779B97F4A7C15)) == 0x6E789E6AA1B965F4


def test_uniform_start_slots_and_seed() -> None:
    ids = np.arange(1, 1001, dtype=np.uint64)
    h = NfsheurTable(64, 4).make_state(ids)[4]
    assert h.min() >= 0 and h.max() < 64
    np.testing.assert_array_equal(h, (splitmix64(ids) % np.uint64(64)).astype(np.int64))
    h7 = NfsheurTable(64, 4, seed=7).make_state(ids)[4]
    assert not np.array_equal(h, h7)
    hd = NfsheurTable(1017, 32, "dense").make_state(np.arange(2000, dtype=np.uint64))[4]
    np.testing.assert_array_equal(hd, np.arange(2000) % 1017)


def _run(model, n_files: int, files: list[int]):
    tab = model.make_state(np.arange(n_files, dtype=np.uint64))
    return tab, [tuple(int(x) for x in table_lookup(tab, f, 0)) for f in files]


def test_nfsheur_probe_order_and_use_decay_by_hand() -> None:
    # 64x4, dense hash: files 0, 64, 128, 192, 256, 384 all start at slot 0.
    tab, out = _run(NfsheurTable(64, 4, "dense"), 400, [0, 64, 0, 64, 128, 192, 256])
    assert out == [(0, 1, -1), (1, 1, -1), (0, 0, -1), (1, 0, -1), (2, 1, -1), (3, 1, -1),
                   (4, 1, -1)]
    # uses worked by hand: slot 0 decays once per passing probe, hits add 16
    np.testing.assert_array_equal(tab[2][:5], [91, 93, 78, 79, 80])
    # slot 4 = h0 + TRY: compared for use, never for identity
    slot, fresh, prev = table_lookup(tab, 384, 0)
    assert (slot, fresh, prev) == (2, 1, 128)  # lowest use among slots 0..4: file 128 ejected
    np.testing.assert_array_equal(tab[2][:5], [90, 92, 80, 78, 80])


def test_nfsheur_last_candidate_holding_the_file_is_reused_as_is() -> None:
    # 8x2, dense: 0, 8, 16 start at slot 0; 16 lands in slot 2 (the unchecked candidate)
    seq = [0, 8, 16] + [0] * 10 + [8] * 10 + [16]
    tab, out = _run(NfsheurTable(8, 2, "dense"), 17, seq)
    assert out[2] == (2, 1, -1)
    assert out[-1] == (2, 0, -1)  # found only through the use comparison: not fresh
    np.testing.assert_array_equal(tab[2][:3], [227, 238, 96])


def test_nfsheur_last_candidate_can_duplicate_a_file() -> None:
    # right after insertion slot 2 is not the lowest: file 16 gets a second slot, ejecting 0
    tab, out = _run(NfsheurTable(8, 2, "dense"), 17, [0, 8, 16, 16])
    assert out[3] == (0, 1, 0)
    assert list(tab[1][:3]) == [16, 8, 16]


def test_nfsheur_modulo_wraps_around() -> None:
    tab, out = _run(NfsheurTable(1017, 32, "dense"), 2034, [1016, 2033, 0])
    assert out == [(1016, 1, -1), (0, 1, -1), (1, 1, -1)]


def test_use_count_cap() -> None:
    tab, _ = _run(NfsheurTable(64, 4, "dense"), 1, [0] * 300)
    assert tab[2][0] == 2048


def test_raparms_mru_buckets_by_hand() -> None:
    model = RaparmsTable(8, "dense")
    assert model.per_bucket == 2 and model.n_slots(0) == 32
    assert RaparmsTable(64).per_bucket == 8 and RaparmsTable(1).per_bucket == 2
    tab, out = _run(model, 40, [0, 16, 0, 32, 16, 1])
    assert out == [(1, 1, -1), (0, 1, -1), (1, 0, -1), (0, 1, 16), (1, 1, 0), (3, 1, -1)]
    assert list(tab[3][:2]) == [1, 0]  # bucket 0: MRU first


def test_ideal_never_ejects() -> None:
    tab, out = _run(IdealTable(), 5, [3, 1, 3, 4, 1, 0])
    assert out == [(3, 1, -1), (1, 1, -1), (3, 0, -1), (4, 1, -1), (1, 0, -1), (0, 1, -1)]


# ---- against the plain-Python transcription of the spec (heuristics/_reference.py)

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import seqheur  # noqa: E402
from seqheur.heuristics._reference import freebsd4_ref  # noqa: E402
from seqheur.streams import ReadStream  # noqa: E402


@settings(max_examples=80, deadline=None)
@given(data=st.data(), size=st.sampled_from([1, 3, 8, 64, 1017]), probes=st.integers(1, 6),
       slowdown=st.booleans())
def test_kernel_matches_python_reference(data, size: int, probes: int, slowdown: bool) -> None:
    n = data.draw(st.integers(1, 150))
    files = data.draw(st.lists(st.integers(0, 20), min_size=n, max_size=n))
    offs = data.draw(st.lists(st.sampled_from([0, 8192, 16384, 24576, 1 << 20, 70000]),
                              min_size=n, max_size=n))
    counts = data.draw(st.lists(st.sampled_from([0, 8192, 100]), min_size=n, max_size=n))
    s = ReadStream.from_arrays(files, offs, counts)
    model = NfsheurTable(size, probes, "uniform", seed=11)
    h0 = model.make_state(s.file_ids)[4][s.file]
    ref_seq, ref_fresh = freebsd4_ref(s.file.tolist(), h0.tolist(), offs, counts, size, probes,
                                      65536 if slowdown else None)
    r = seqheur.detect(s, "slowdown" if slowdown else "freebsd4", model)
    assert r.seqcount.tolist() == ref_seq
    assert r.slot_fresh.tolist() == ref_fresh


def test_plugin_table_registered_and_used_by_name() -> None:
    """A table plug-in: params dataclass + make_state + n_slots + jitted lookup(tab, f)."""
    from dataclasses import dataclass

    from numba import njit, uint64

    import seqheur
    from seqheur.options import param
    from seqheur.streams import ReadStream
    from seqheur.tables import register_table, unregister_table

    @dataclass(frozen=True)
    class ModParams:
        spec_positional = ("slots",)
        slots: int = param(16, unit="slots", doc="file f lives in slot f mod slots")

    @njit(nogil=True, _nrt=False)
    def mod_lookup(tab, f):
        slot_file = tab[0]
        s = f % slot_file.shape[0]
        prev = slot_file[uint64(s)]
        if prev == f:
            return s, 0, -1
        slot_file[uint64(s)] = f
        return s, 1, prev

    with pytest.raises(SpecError, match="needs make_state"):
        register_table("modulo", params=ModParams, lookup=mod_lookup)
    register_table("modulo", params=ModParams, lookup=mod_lookup, doc="f mod slots",
                   make_state=lambda p, ids: (np.full(p.slots, -1, np.int64),),
                   n_slots=lambda p, n: p.slots)
    try:
        m = parse_table("modulo:1")
        assert m.spec == "modulo:1" and m.n_slots(10) == 1 and m.kind_name == "modulo"
        assert parse_table("modulo:slots=1") == m
        s = ReadStream.from_arrays(np.array([0, 0, 1, 0]), np.array([0, 8192, 0, 16384]),
                                   np.full(4, 8192))
        r = seqheur.detect(s, "freebsd4", "modulo:1")
        # one slot shared by two files: file 1 ejects file 0, which then starts over
        assert r.slot_fresh.tolist() == [True, False, True, True]
        assert r.summary()["table"] == "modulo:1"
        assert "modulo" in [t["name"] for t in registered_tables()]
    finally:
        unregister_table("modulo")
    with pytest.raises(SpecError, match="unknown table 'modulo'"):
        parse_table("modulo:1")
    with pytest.raises(SpecError, match="built in"):
        unregister_table("nfsheur")


def test_filecache_keeps_a_files_state_until_it_is_idle_longer_than_idle_ms():
    """nfsd's file cache (5.4+): one ra state per file while cached; a READ after more than
    idle_ms without one finds the file closed, so its state starts afresh (fresh, not an
    ejection: no other file took the slot)."""
    import numpy as np

    import seqheur

    ms = 1_000_000
    t = np.array([0, 500, 1000, 1500, 5000, 5100, 8000], np.int64) * ms
    s = seqheur.ReadStream.from_arrays([7] * 7, np.arange(7) * 8192, 8192, time_ns=t)
    d = seqheur.detect(s, "freebsd4", "filecache")  # idle_ms 2000: 1500 -> 5000 closes it
    assert d.slot_fresh.tolist() == [True, False, False, False, True, False, True]
    assert d.summary()["table_ejections"] == 0
    d2 = seqheur.detect(s, "freebsd4", "filecache:idle_ms=10000")
    assert d2.slot_fresh.tolist() == [True] + [False] * 6
    ideal = seqheur.detect(s, "freebsd4", "ideal")
    assert d2.seqcount.tolist() == ideal.seqcount.tolist()
