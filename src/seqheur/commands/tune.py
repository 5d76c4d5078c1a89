"""Verb: tune (Optuna studies over the detectors', tables' and policies' tunable options)."""

from __future__ import annotations

from pathlib import Path

import click

from . import echo_json
from ..config import DEFAULT
from .data import executor_options


def register(cli: click.Group) -> None:
    cli.add_command(tune)


@click.command()
@click.argument("trace", type=click.Path(path_type=Path))
@click.option("--space", required=True, metavar="SPACE",
              help="models to search: 'slowdown|cursor', "
                   "'detector=slowdown;table=nfsheur:probes=1..16' (docs/tuning.md)")
@click.option("--objective", default="throughput", show_default=True,
              help="throughput (TPE) or throughput,waste (NSGA-II, the Pareto front)")
@click.option("--max-waste", type=float, default=None, metavar="FRACTION",
              help="constraint: read-ahead blocks never used / read ahead <= FRACTION")
@click.option("--trials", type=int, required=True, metavar="N",
              help="trials to add to the study")
@click.option("--cache", default=DEFAULT.cache, show_default=True, help="buffer cache size")
@click.option("--profile", default=DEFAULT.profile, show_default=True, help="disk profile")
@click.option("--storage", default=None, metavar="URL",
              help="Optuna storage (default: sqlite:///OUTDIR/study.db); a study of the same "
                   "name there is resumed")
@click.option("--study", default=None, help="study name (default: seqheur-tune-TRACESTEM)")
@click.option("--batch", type=int, default=None, metavar="N",
              help="trials replayed at once (default: the executor's workers; 8 with --scheduler)")
@click.option("--seed", type=int, default=0, show_default=True, help="sampler seed")
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True,
              metavar="OUTDIR", help="trials.parquet, best.json, pareto.png (and study.db)")
@click.option("--plugin", "plugins", multiple=True, metavar="MODULE|FILE.py",
              help="import a plug-in that registers models (repeatable; also loaded by every "
                   "worker)")
@click.option("--json", "as_json", is_flag=True, help="print best.json's content")
@executor_options
def tune(trace: Path, space: str, objective: str, max_waste: float | None, trials: int,
         cache: str, profile: str, storage: str | None, study: str | None, batch: int | None,
         seed: int, output: Path, plugins: tuple[str, ...], as_json: bool,
         workers: int | None,
         dask_local: int | None, scheduler: str | None) -> None:
    """Search detector, table and policy options for the best throughput on TRACE.

    Every option a model declares tunable (`seqheur detectors --json`: "tune") in the
    models SPACE names is searched, over its declared range; trials run like `seqheur
    sweep`'s configurations (serially, on --workers, or on Dask).

    \b
    Example:
      seqheur tune t.parquet --space 'slowdown|cursor' --max-waste 0.2 --trials 40 -o tune/
      seqheur replay t.parquet $(jq -r .best.replay_options tune/best.json)
    """
    from ..executors import executor_from_options
    from ..tune import tune as run

    res = run(trace, space, trials=trials, objective=objective, max_waste=max_waste,
              output=output, storage=storage, study=study, cache=cache, profile=profile,
              executor=executor_from_options(workers, dask_local, scheduler), batch=batch,
              seed=seed, plugins=plugins)
    if as_json:
        echo_json(res.to_dict())
        return
    click.echo(f"{res.new_trials} trials added; the study has {res.trials} "
               f"({res.replays} replayed, {res.failed} failed, the others reused a replay)")
    if res.best is None:
        click.echo("no feasible trial" + (f" (waste <= {max_waste:g})" if max_waste is not None
                                          else ""))
    else:
        b = res.best
        click.echo(f"best (trial {b['trial']}): {b['throughput_mbps']:.3f} MB/s, waste "
                   f"{b['waste']:.3f}")
        click.echo(f"  seqheur replay {trace} {b['replay_options']}")
        if res.bound.get("reference"):
            what = "the oracle's" if res.bound["reference"].startswith("oracle") else "the bound's"
            click.echo(f"  {res.bound['best_fraction']:.1%} of {what} throughput "
                       f"({res.bound['throughput_mbps']:.3f} MB/s at "
                       f"{res.bound['reference']} = {res.bound['disk_seconds']:.4g} s)")
            if res.bound.get("lower_bound_throughput_mbps"):
                click.echo(f"  the lower bound: {res.bound['lower_bound_throughput_mbps']:.3f} "
                           "MB/s (no schedule beats it)")
    for o, imp in res.importances.items():
        if "error" in imp:
            click.echo(f"importance ({o}): {imp['error']}")
        else:
            top = ", ".join(f"{k} {v:.2f}" for k, v in list(imp.items())[:5])
            click.echo(f"importance ({o}): {top}")
    click.echo(f"trials: {res.files['trials']}  plot: {res.files['pareto']}")
