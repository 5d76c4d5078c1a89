"""seqheur tune: the space derived from the registries, studies (resume, Parquet, constraint),
the best's spec fed back to replay, errors naming what is valid."""

from __future__ import annotations

import json
import sys

import polars as pl
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as hst

from seqheur import options as O
from seqheur import workloads
from seqheur.cli import cli
from seqheur.errors import SeqheurError, SpecError
from seqheur.executors import ExecutorSpec
from seqheur.io import write_parquet

optuna = pytest.importorskip("optuna")

from seqheur.tune import KINDS, parse_space, tune  # noqa: E402

SPACE = "detector=slowdown"  # one detector: one compiled loop for the whole file
MAX_WASTE = 0.3


def _registries():
    from seqheur.heuristics.registry import DETECTORS
    from seqheur.readahead import POLICIES
    from seqheur.tables import TABLES

    return {"detector": DETECTORS, "table": TABLES, "policy": POLICIES}


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    p = tmp_path_factory.mktemp("tune") / "t.parquet"
    write_parquet(workloads.paper(4, 2, reorder=0.1, seed=1), p)
    return p


@pytest.fixture(scope="module")
def study(trace, tmp_path_factory):
    out = tmp_path_factory.mktemp("tune-out")
    res = tune(trace, SPACE, trials=5, max_waste=MAX_WASTE, output=out, cache="1MiB")
    return out, res


# -- the space ------------------------------------------------------------------------------


def test_space_covers_every_tunable_option_of_every_registered_model():
    seen = set()
    for kind, reg in _registries().items():
        for name, entry in reg.entries().items():
            tunable = {o.name: o for o in O.options(entry.params) if o.tune}
            if not tunable:
                with pytest.raises(SpecError, match="searches nothing"):
                    parse_space(f"{kind}={name}")
                continue
            sp = parse_space(f"{kind}={name}")
            (alt,) = dict(sp.kinds)[kind]
            dims = {d.field: d for d in alt.dims}
            assert set(dims) == set(tunable), (kind, name)
            for f, o in tunable.items():
                d = dims[f]
                got = d.values if d.values else (d.lo, d.hi, d.scale)
                assert tuple(got) == tuple(o.tune), (kind, name, f)
                for end in ((d.lo, d.hi) if not d.values else d.values):  # the model takes it
                    entry.params(**{f: end})
                seen.add((kind, name, f))
    for must in [("detector", "freebsd4", "seqmax"), ("detector", "slowdown", "window"),
                 ("detector", "cursor", "cursors"), ("detector", "linux-3.12", "ra_kb"),
                 ("table", "nfsheur", "size"), ("table", "nfsheur", "probes"),
                 ("policy", "freebsd-cluster", "read_max"), ("policy", "fixed", "n")]:
        assert must in seen


def _tunable_alternatives():
    out = []
    for kind, reg in _registries().items():
        for name, entry in reg.entries().items():
            if any(o.tune for o in O.options(entry.params)):
                (alt,) = dict(parse_space(f"{kind}={name}").kinds)[kind]
                out.append((reg, alt))
    return out


@given(data=hst.data())
@settings(max_examples=60, deadline=None)
def test_a_trial_spec_parses_back_to_what_was_sampled(data):
    """Law: whatever values a trial draws, its spec string (what replay receives, what the
    best's replay options say) parses to the same parameters; grid levels stay in range."""
    reg, alt = data.draw(hst.sampled_from(_tunable_alternatives()))
    values = {}
    for d in alt.dims:
        if d.values:
            values[d.field] = data.draw(hst.sampled_from(d.values))
        elif d.scale == "pow2":
            values[d.field] = 1 << data.draw(hst.integers(d.lo.bit_length() - 1,
                                                         d.hi.bit_length() - 1))
        else:
            values[d.field] = data.draw(hst.integers(d.lo, d.hi))
        if not d.values:
            assert all(d.lo <= v <= d.hi for v in d.levels(data.draw(hst.integers(1, 6))))
    try:
        spec = alt.spec(values)
    except (SpecError, ValueError):
        return  # a combination the model rejects: the trial fails, nothing is replayed
    assert reg.parse(spec).params == alt.params(**dict(alt.fixed), **values)


def test_space_grammar():
    sp = parse_space("freebsd4,slowdown,cursor")  # bare names: the first kind knowing them all
    (det,) = [d for d in sp.dims() if d.name == "detector"]
    assert det.values == ("freebsd4", "slowdown", "cursor")
    assert parse_space("slowdown|cursor").dims()[0].values == ("slowdown", "cursor")
    sp = parse_space("detector=slowdown:seqmax=127;table=nfsheur:probes=1..16")
    names = {d.name: d for d in sp.dims()}
    assert "detector.slowdown.seqmax" not in names  # fixed by the term
    assert (names["table.nfsheur.probes"].lo, names["table.nfsheur.probes"].hi) == (1, 16)
    assert names["detector.slowdown.window_log2"].scale == "pow2"
    assert not any(d.name.startswith("table.") for d in parse_space("table=ellard|nfsheur:64x4;"
                                                                      "detector=cursor").dims()
                   if d.name != "table")  # an alias's preset and a positional value are fixed
    assert dict(parse_space("cursor").kinds)["table"][0].label == "freebsd4"  # the default


def test_grid_fits_the_budget_and_every_config_parses():
    from seqheur.config import resolve_policy
    from seqheur.heuristics.registry import parse_detector
    from seqheur.tables import parse_table

    sp = parse_space("slowdown|cursor;table=nfsheur")
    grid = sp.grid(20)
    assert 10 <= len(grid) <= 20 and len({json.dumps(c, sort_keys=True) for c in grid}) == len(grid)
    for c in grid:
        resolve_policy(c["policy"], parse_detector(c["detector"]).info)
        parse_table(c["table"])


@pytest.mark.parametrize("space, words", [
    ("slowdwn", ["no kind knows slowdwn", "slowdown", "nfsheur", "freebsd-cluster"]),
    ("kind=slowdown", ["unknown kind 'kind'", *KINDS]),
    ("slowdown:windo=1..2", ["windo", "numeric: window, seqmax"]),
    ("slowdown:windo=2", ["unknown option 'windo'", "window=65536"]),
    ("detector=slowdown;detector=cursor", ["names detector twice"]),
    ("never", ["searches nothing"]),
])
def test_bad_space_lists_what_is_valid(space, words):
    with pytest.raises(SpecError) as exc:
        parse_space(space)
    for w in words:
        assert w in str(exc.value)


@pytest.mark.parametrize("objective", ["waste", "latency", "throughput,throughput"])
def test_bad_objective_lists_what_is_valid(trace, tmp_path, objective):
    with pytest.raises(SpecError, match="'throughput,waste' .*objectives: throughput, waste"):
        tune(trace, SPACE, trials=1, objective=objective, output=tmp_path)


def test_bad_tune_declarations():
    with pytest.raises(ValueError, match="powers of two"):
        O.param(65536, unit="bytes", tune=(5000, 1 << 20))
    with pytest.raises(ValueError, match="does not hold the default"):
        O.param(8, tune=(16, 32))
    with pytest.raises(ValueError, match="tune=True"):
        O.param("a", choices=("a", "b"), tune=(1, 2))


# -- studies --------------------------------------------------------------------------------


def test_best_respects_the_constraint_and_parquet_has_every_trial(study):
    out, res = study
    df = pl.read_parquet(out / "trials.parquet")
    assert df.height == res.trials == 5
    assert {"number", "state", "throughput_mbps", "waste", "detector",
            "param.detector.slowdown.window_log2"} <= set(df.columns)
    assert df.schema["param.detector.slowdown.window_log2"] == pl.Int64  # typed, not text
    ok = df.filter((pl.col("state") == "COMPLETE") & (pl.col("waste") <= MAX_WASTE))
    if res.best is None:
        assert ok.height == 0
    else:
        assert res.best["waste"] <= MAX_WASTE
        assert res.best["throughput_mbps"] == pytest.approx(ok["throughput_mbps"].max(), rel=1e-12)
    assert (out / "pareto.png").read_bytes()[:4] == b"\x89PNG"
    doc = json.loads((out / "best.json").read_text())
    assert doc["bound"]["reference"] == "oracle_disk_seconds" and doc["bound"]["best_fraction"] > 0
    # nothing beats the lower bound (the oracle is not optimal on every trace: no such law)
    assert res.best is None or (doc["bound"]["lower_bound_throughput_mbps"]
                                >= res.best["throughput_mbps"] * (1 - 1e-9))
    assert "throughput" in doc["importances"]


def test_best_spec_replays_to_the_same_throughput(study, trace):
    _, res = study
    assert res.best is not None
    args = ["replay", str(trace), *res.best["replay_options"].split(), "--json"]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    assert got["throughput_mbps"] == pytest.approx(res.best["throughput_mbps"], rel=1e-9)


def test_trials_replay_with_the_sizes_replay_uses(tmp_path):
    """Files not read to their end: a trial lays them out with the trace's reply attributes,
    as ``seqheur replay TRACE`` does, not with the sizes the READs reach."""
    from seqheur.replay import observed_file_sizes
    from seqheur.streams import read_stream
    from seqheur.sweep import trace_file_sizes

    p = tmp_path / "r.parquet"
    write_parquet(workloads.random_reads(files=2, file_mb=4, requests=200, seed=5), p)
    assert (trace_file_sizes(str(p))[0] > observed_file_sizes(read_stream(p))).any()
    res = tune(p, SPACE, trials=2, output=tmp_path / "o", cache="1MiB")
    r = CliRunner().invoke(cli, ["replay", str(p), *res.best["replay_options"].split(), "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    assert got["file_sizes"] == "attributes"
    assert got["throughput_mbps"] == pytest.approx(res.best["throughput_mbps"], rel=1e-12)


def test_resume_continues_the_study(study, trace):
    out, res = study
    again = tune(trace, SPACE, trials=2, max_waste=MAX_WASTE, output=out, cache="1MiB")
    assert again.trials == res.trials + 2 and again.new_trials == 2
    st = optuna.load_study(study_name=f"seqheur-tune-{trace.stem}",
                           storage=f"sqlite:///{out / 'study.db'}")
    assert len(st.trials) == again.trials
    assert pl.read_parquet(out / "trials.parquet").height == again.trials
    with pytest.raises(SeqheurError, match="other settings"):
        tune(trace, "cursor", trials=1, max_waste=MAX_WASTE, output=out, cache="1MiB")


def test_cli_bad_space_and_missing_optuna(trace, tmp_path, monkeypatch):
    r = CliRunner().invoke(cli, ["tune", str(trace), "--space", "slowdwn", "--trials", "1",
                                 "-o", str(tmp_path)])
    assert r.exit_code == 1 and "no kind knows slowdwn" in r.output
    monkeypatch.setitem(sys.modules, "optuna", None)  # import optuna raises ImportError
    r = CliRunner().invoke(cli, ["tune", str(trace), "--space", "slowdown", "--trials", "1",
                                 "-o", str(tmp_path)])
    assert r.exit_code == 1 and "pip install 'seqheur[tune]'" in r.output


def test_two_objectives_give_a_pareto_front(trace, tmp_path):
    import seqheur

    res = seqheur.tune(trace, SPACE, trials=4, objective="throughput,waste", output=tmp_path,
                       cache="1MiB")  # the public API
    front = res.pareto
    assert front and all(a["throughput_mbps"] <= b["throughput_mbps"] and a["waste"] <= b["waste"]
                         for a, b in zip(front, front[1:]))  # more throughput costs waste
    assert set(res.importances) == {"throughput", "waste"}


def test_a_plug_in_model_is_tuned_through_the_cli(trace, tmp_path):
    from pathlib import Path

    toy = Path(__file__).resolve().parent / "toy_models.py"
    r = CliRunner().invoke(cli, ["tune", str(trace), "--plugin", str(toy), "--space",
                                 "detector=toy-run:cap=1..64", "--trials", "3", "--cache",
                                 "1MiB", "-o", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["replays"] >= 1 and doc["best"]["detector"].startswith("toy-run")
    assert doc["failed"] == 0
    r = CliRunner().invoke(cli, ["replay", str(trace), *doc["best"]["replay_options"].split(),
                                 "--json"])  # the options name the plug-in too
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["throughput_mbps"] == pytest.approx(
        doc["best"]["throughput_mbps"], rel=1e-9)


@pytest.mark.slow
def test_worker_processes_load_the_plug_in(trace, tmp_path):
    from pathlib import Path

    toy = Path(__file__).resolve().parent / "toy_models.py"
    res = tune(trace, "detector=toy-run:cap=1..64", trials=4, output=tmp_path, cache="1MiB",
               executor=ExecutorSpec("processes", 2), plugins=[toy])
    assert res.failed == 0 and res.trials == 4 and res.replays >= 1


@pytest.mark.dist
def test_dask_local_cluster(trace, tmp_path):
    res = tune(trace, SPACE, trials=2, output=tmp_path, cache="1MiB",
               executor=ExecutorSpec("dask-local", 2))
    assert res.trials == 2 and res.best is not None


def test_a_configuration_is_replayed_once_per_study(trace, tmp_path):
    res = tune(trace, "detector=freebsd4:seqmax=1..2", trials=6, output=tmp_path, cache="1MiB",
               batch=3)  # two configurations: repeats within a batch and across batches
    df = pl.read_parquet(tmp_path / "trials.parquet")
    assert res.replays == df.filter(~pl.col("reused")).height <= 2
    assert df.filter(pl.col("state") == "COMPLETE").height == 6
    for _, g in df.group_by("detector"):  # a reused trial carries the replayed values
        assert g["value_0"].n_unique() == 1


def test_an_interrupted_batch_leaves_no_trial_running(trace, tmp_path, monkeypatch):
    import seqheur.tune as T

    def interrupted(*_, **__):
        raise KeyboardInterrupt

    monkeypatch.setattr(T, "run_config", interrupted)
    with pytest.raises(KeyboardInterrupt):
        tune(trace, SPACE, trials=2, output=tmp_path, cache="1MiB", batch=2)
    st = optuna.load_study(study_name=f"seqheur-tune-{trace.stem}",
                           storage=f"sqlite:///{tmp_path / 'study.db'}")
    assert [t.state.name for t in st.trials] == ["FAIL", "FAIL"]
