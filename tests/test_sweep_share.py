"""Work shared across sweep configurations: one replay priced by several disk profiles gives,
row for row and bit for bit, what one replay per profile gives.

Floats are compared exactly here, not to a tolerance (tests/floatcmp.py): the shared path does
not compute them another way, it runs the same disk model on the same reads in the same
batches and adds the same per-read times in the same order; any difference is a bug.
"""

from __future__ import annotations

import math

import polars as pl
import pytest

from seqheur import workloads
from seqheur.errors import SeqheurError
from seqheur.executors import ExecutorSpec
from seqheur.io import write_parquet
from seqheur.replay import Replayer, observed_file_sizes, replay, replay_profiles
from seqheur.streams import reads
from seqheur.sweep import Config, grid_from_dict, share_groups, sweep

PROFILES = ["ide-7200", "scsi-10k", "ide-7200:drive_cache=false", None]


def same_row(a: dict, b: dict) -> list[str]:
    """Columns whose values differ (NaN equals NaN; floats bit for bit)."""
    assert list(a) == list(b)
    return [k for k in a if not (a[k] == b[k] or (isinstance(a[k], float) and isinstance(b[k], float)
                                                  and math.isnan(a[k]) and math.isnan(b[k])))]


@pytest.fixture(scope="module")
def stream():
    return reads(workloads.paper(6, 6, reorder=0.05, seed=3))


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    p = tmp_path_factory.mktemp("share") / "t.parquet"
    write_parquet(workloads.paper(6, 6, reorder=0.05, seed=3), p)
    return p


# detectors with the policies' serve step and with their own (Linux: reads ahead itself)
@pytest.mark.parametrize("detector,table,cache", [
    ("freebsd4", "freebsd4", "1MiB"), ("slowdown", "nfsheur:8x2", "16MiB"),
    ("always", "ideal", "1MiB"), ("never", "freebsd4", "16MiB"), ("cursor", "ellard", "4MiB"),
    ("linux-3.12", "freebsd4", "1MiB"), ("linux-6", "ideal", "4MiB")])
def test_profiles_from_one_replay_equal_one_replay_each(stream, detector, table, cache):
    sizes = observed_file_sizes(stream)
    shared = replay_profiles(stream, PROFILES, detector, table, cache=cache, file_sizes=sizes)
    assert len(shared) == len(PROFILES)
    rows = [r.summary.row(0, named=True) for r in shared]
    for profile, got in zip(PROFILES, rows):
        want = replay(stream, detector, table, cache=cache, profile=profile, file_sizes=sizes,
                      per_request=False).summary.row(0, named=True)
        assert not same_row(got, want), (profile, same_row(got, want))
    # the disk columns do differ between profiles: each profile priced the reads itself
    assert [r["profile"] for r in rows] == ["ide-7200", "scsi-10k",
                                            "ide-7200:drive_cache=false", None]
    assert len({r["disk_seconds"] for r in rows[:3]}) == 3 and math.isnan(rows[3]["disk_seconds"])


def test_profiles_fed_in_chunks_equal_one_replay_each(stream):
    """Drive state carried between batches: chunked feeds price as one replay per profile."""
    sizes = observed_file_sizes(stream)
    rp = Replayer(stream.file_ids, detector="slowdown", table="freebsd4", cache="1MiB",
                  profiles=PROFILES[:2], file_sizes=sizes, per_request=False)
    cut = len(stream) // 3
    for lo, hi in ((0, cut), (cut, 2 * cut), (2 * cut, len(stream))):
        rp.feed(stream.slice(lo, hi))
    for k, profile in enumerate(PROFILES[:2]):
        alone = Replayer(stream.file_ids, detector="slowdown", table="freebsd4", cache="1MiB",
                         profile=profile, file_sizes=sizes, per_request=False)
        for lo, hi in ((0, cut), (cut, 2 * cut), (2 * cut, len(stream))):
            alone.feed(stream.slice(lo, hi))
        assert not same_row(rp.summary(k), alone.summary())


def test_profiles_with_a_timing_model_equal_one_replay_each(stream):
    """The closed-loop model runs after the replay, once per profile on that profile's disk."""
    sizes = observed_file_sizes(stream)
    timed = "closed-loop:preset=paper-testbed"
    shared = replay_profiles(stream, PROFILES[:3], "slowdown", "ideal", cache="4MiB",
                             file_sizes=sizes, timing=timed)
    for profile, got in zip(PROFILES[:3], shared):
        want = replay(stream, "slowdown", "ideal", cache="4MiB", profile=profile,
                      file_sizes=sizes, per_request=False, timing=timed)
        a, b = got.summary.row(0, named=True), want.summary.row(0, named=True)
        assert "e2e_seconds" in a and not same_row(a, b), (profile, same_row(a, b))
        assert (got.timing.done_s == want.timing.done_s).all()
    assert len({r["e2e_seconds"] for r in shared}) == 3


def test_profiles_refuse_no_disk_with_a_timing_model_and_an_empty_list(stream):
    sizes = observed_file_sizes(stream)
    with pytest.raises(SeqheurError, match="needs a disk profile"):
        Replayer(stream.file_ids, profiles=["ide-7200", None], file_sizes=sizes,
                 timing="closed-loop:preset=paper-testbed")
    with pytest.raises(SeqheurError, match="profiles is empty"):
        Replayer(stream.file_ids, profiles=[], file_sizes=sizes)


def test_share_groups_join_only_what_differs_by_profile():
    timed = "closed-loop:preset=paper-testbed"
    configs = grid_from_dict({"detector": ["freebsd4", "linux-3.12"], "cache": ["1MiB", "4MiB"],
                              "profile": ["ide-7200", "scsi-10k"],
                              "timing": ["disk-only", timed]})
    groups = share_groups(configs)
    assert sorted(i for g in groups for i in g) == list(range(len(configs)))
    for g in groups:
        members = [configs[i] for i in g]
        assert len(g) == 2 and {c.profile for c in members} == {"ide-7200", "scsi-10k"}
        assert len({(c.detector, c.table, c.policy, c.cache, c.timing) for c in members}) == 1
    assert len(groups) == 8


GRID = {"detector": ["freebsd4", "slowdown", "always", "linux-3.12"],
        "table": ["freebsd4", "nfsheur:8x2"], "cache": ["1MiB", "16MiB"],
        "profile": ["ide-7200", "scsi-10k", "vm-virtio"]}


def frames_identical(a: pl.DataFrame, b: pl.DataFrame) -> None:
    assert a.columns == b.columns and a.dtypes == b.dtypes and a.height == b.height
    for name in a.columns:  # floats bit for bit (NaN where NaN, null where null)
        assert a[name].equals(b[name], check_names=True), name


# ~95 s with a cold numba cache (eight engine loops of its own), the largest part of a cold
# default run: `make test-slow` and CI run it; the default run keeps the sweep-level identity
# on worker processes below and the per-profile identity over seven detectors above
@pytest.mark.slow
def test_shared_sweep_rows_identical_to_one_replay_each(trace, tmp_path):
    configs = grid_from_dict(GRID)
    alone = sweep(trace, configs, None, ExecutorSpec("serial"), share=False)
    shared = sweep(trace, configs, tmp_path / "s.parquet", ExecutorSpec("serial"))
    assert alone["error"].null_count() == len(configs) == 48
    frames_identical(alone, shared)
    frames_identical(alone, pl.read_parquet(tmp_path / "s.parquet"))
    # resume: a partial file is completed by shared tasks over what is missing only
    write_parquet(alone.head(7), tmp_path / "r.parquet")
    frames_identical(alone, sweep(trace, configs, tmp_path / "r.parquet", ExecutorSpec("serial")))


def test_shared_sweep_identical_on_worker_processes_and_with_timing(trace):
    configs = grid_from_dict({**GRID, "detector": ["slowdown", "linux-3.12"],
                              "table": ["freebsd4"],
                              "timing": ["disk-only", "closed-loop:preset=paper-testbed"]})
    alone = sweep(trace, configs, None, ExecutorSpec("serial"), share=False)
    frames_identical(alone, sweep(trace, configs, None, ExecutorSpec("processes", 2)))


def test_a_bad_profile_fails_only_its_configuration(trace, monkeypatch):
    import seqheur.progress as progress_module

    advanced = []
    real = progress_module.progress

    def counting(description, total=None):  # the bar counts configurations, not tasks
        ctx = real(description, total)

        class Counting:
            def __enter__(self):
                bar = ctx.__enter__()
                inner = bar.advance
                bar.advance = lambda n=1: (advanced.append(n), inner(n))[1]
                return bar

            def __exit__(self, *exc):
                return ctx.__exit__(*exc)

        return Counting()

    monkeypatch.setattr(progress_module, "progress", counting)
    configs = [Config("slowdown", "freebsd4", "auto", "1MiB", p)
               for p in ("ide-7200", "nosuchdisk", "scsi-10k")]
    assert share_groups(configs) == [[0, 1, 2]]
    shared = sweep(trace, configs, None, ExecutorSpec("serial"))
    alone = sweep(trace, configs, None, ExecutorSpec("serial"), share=False)
    assert sum(advanced) == 2 * len(configs)
    errors = shared["error"].to_list()
    assert errors[0] is None and errors[2] is None and "nosuchdisk" in errors[1]
    frames_identical(alone, shared)


def test_a_group_failing_as_a_whole_fails_each_configuration_as_alone(trace):
    configs = [Config("nosuchdetector", "freebsd4", "auto", "1MiB", p)
               for p in ("ide-7200", "scsi-10k")]
    shared = sweep(trace, configs, None, ExecutorSpec("serial"))
    alone = sweep(trace, configs, None, ExecutorSpec("serial"), share=False)
    assert all("nosuchdetector" in e for e in shared["error"].to_list())
    frames_identical(alone, shared)


def test_table_pass_counts_as_detect_and_names_the_fresh_requests(stream):
    from seqheur.detect import detect, table_pass

    for table in ("freebsd4", "nfsheur:2x1", "ideal", "raparms", "filecache:idle_ms=1"):
        got = table_pass(stream, table, chunk_rows=97)  # chunks: the table carried across
        want = detect(stream, "never", table)
        assert (got.table, got.fresh, got.ejections, got.cold) == (
            want.table, want.fresh, want.ejections, want.cold)
        assert got == table_pass(stream, table)  # the digest does not depend on the chunks
    # a table too small for the trace's files refreshes slots the ideal one never does
    assert table_pass(stream, "nfsheur:2x1").fresh_digest != table_pass(stream, "ideal").fresh_digest
    assert table_pass(stream, "nfsheur:4096x4").fresh_digest == table_pass(stream, "ideal").fresh_digest


def test_tables_with_the_same_fresh_requests_are_one_replay(trace, monkeypatch):
    """ideal and the large tables never refresh a slot here, nfsheur:2x1 does: one replay for
    the first three per detector and cache, rows identical to a replay per configuration."""
    import seqheur.replay as replay_module
    from seqheur.sweep import tables_to_pass

    configs = grid_from_dict({"detector": ["slowdown", "linux-6"],
                              "table": ["ideal", "nfsheur:2x1", "ellard", "nfsheur:4096x4"],
                              "cache": ["1MiB"], "profile": ["ide-7200", "scsi-10k"]})
    assert tables_to_pass(configs) == ["ideal", "nfsheur:2x1", "ellard", "nfsheur:4096x4"]
    calls = []
    real = replay_module.replay_profiles
    monkeypatch.setattr(replay_module, "replay_profiles",
                        lambda *a, **k: (calls.append(k["table"]), real(*a, **k))[1])
    shared = sweep(trace, configs, None, ExecutorSpec("serial"))
    assert sorted(calls) == ["ideal", "ideal", "nfsheur:2x1", "nfsheur:2x1"]
    alone = sweep(trace, configs, None, ExecutorSpec("serial"), share=False)
    assert alone["error"].null_count() == len(configs) == 16
    frames_identical(alone, shared)
    assert set(alone["table_ejections"].to_list()) != {0}  # the small table's counters kept


def test_tables_to_pass_only_where_a_table_is_all_that_differs():
    from seqheur.sweep import tables_to_pass

    one = grid_from_dict({"detector": ["slowdown", "cursor"], "table": ["ellard"],
                          "cache": ["1MiB", "4MiB"]})
    assert tables_to_pass(one) == []
    mixed = [Config("slowdown", "ideal", "auto", "1MiB", "ide-7200"),
             Config("cursor", "ellard", "auto", "1MiB", "ide-7200"),
             Config("cursor", "freebsd4", "auto", "1MiB", "ide-7200")]
    assert tables_to_pass(mixed) == ["ellard", "freebsd4"]


def test_a_bad_table_fails_only_its_configuration(trace):
    configs = [Config("slowdown", t, "auto", "1MiB", "ide-7200")
               for t in ("ideal", "nosuchtable", "ellard")]
    shared = sweep(trace, configs, None, ExecutorSpec("serial"))
    errors = shared["error"].to_list()
    assert errors[0] is None and errors[2] is None and "unknown table 'nosuchtable'" in errors[1]
    frames_identical(sweep(trace, configs, None, ExecutorSpec("serial"), share=False), shared)
