"""Disk verbs: ``bench TARGET``, ``bench plot PROFILE``, ``profiles``."""

from __future__ import annotations

from typing import Any

import click


def _parse_sizes(text: str) -> tuple[int, ...]:
    from ..errors import SpecError

    units = {"": 1, "b": 1, "k": 1024, "kib": 1024, "m": 1 << 20, "mib": 1 << 20}
    out = []
    for part in text.split(","):
        s = part.strip().lower()
        num = s.rstrip("kmib")
        unit = s[len(num):]
        if not num.isdigit() or unit not in units:
            raise SpecError(f"bad size {part!r} (use e.g. 4k,64k,1m)")
        out.append(int(num) * units[unit])
    return tuple(out)


@click.command("plot")
@click.argument("profile")
@click.option("-o", "--output", required=True, help="PNG to write")
def plot_cmd(profile: str, output: str) -> None:
    """Draw a disk profile (bundled name or JSON file) as one PNG.

    \b
    Example:
      seqheur bench plot ide-7200 -o ide.png
    """
    from ..disk.plot import plot_profile

    click.echo(str(plot_profile(profile, output)))


class _BenchCommand(click.Command):
    """``seqheur bench TARGET`` and ``seqheur bench plot PROFILE`` under one name."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] == "plot":
            ctx.meta["seqheur.bench.plot"] = args[1:]
            return []
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        if "seqheur.bench.plot" in ctx.meta:
            return plot_cmd.main(ctx.meta["seqheur.bench.plot"], prog_name="seqheur bench plot",
                                 standalone_mode=False)
        return super().invoke(ctx)


@click.command("bench", cls=_BenchCommand)
@click.argument("target")
@click.option("-o", "--output", required=True, help="profile JSON to write")
@click.option("--quick", is_flag=True, help="about 10 s, 3 repetitions")
@click.option("--time", "seconds", type=float, default=None, help="total time budget (s), default 60")
@click.option("--sizes", default="4k,16k,64k,256k,1m", show_default=True, help="request sizes")
@click.option("--zones", type=int, default=None, help="positions across the target (default 16)")
@click.option("--depths", default="1,2,4,8", show_default=True, help="queue depths (threads)")
@click.option("--reps", type=int, default=None, help="interleaved repetitions (default 5, quick 3)")
@click.option("--buffered", is_flag=True, help="no O_DIRECT (labelled buffered; page cache dropped)")
@click.option("--name", default=None, help="profile name (default: target file name)")
@click.option("--note", default=None, help="what the target is (kept in the profile)")
@click.option("--json", "as_json", is_flag=True, help="print the model parameters as JSON")
def bench_cmd(target: str, output: str, quick: bool, seconds: float | None, sizes: str,
              zones: int | None, depths: str, reps: int | None, buffered: bool, name: str | None,
              note: str | None, as_json: bool) -> None:
    """Measure a block device or file, strictly read-only, into a disk profile.

    Also: seqheur bench plot PROFILE -o PNG (the profile as figures).

    \b
    Example:
      seqheur bench /dev/loop0 -o loop.json --quick
      seqheur bench plot loop.json -o loop.png
    """
    from . import echo_json
    from ..disk.bench import BenchConfig, run_bench
    from ..errors import SpecError

    base = BenchConfig.quick() if quick else BenchConfig()
    try:
        depth_list = tuple(int(x) for x in depths.split(","))
    except ValueError:
        raise SpecError(f"bad --depths {depths!r} (use e.g. 1,2,4,8)") from None
    cfg = BenchConfig(seconds=seconds if seconds is not None else base.seconds,
                      reps=reps if reps is not None else base.reps,
                      sizes=_parse_sizes(sizes), depths=depth_list,
                      zones=zones if zones is not None else base.zones)
    from ..progress import enabled

    say = (lambda s: click.echo(f"  {s}", err=True)) if enabled() else None
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = lambda msg, *a, **k: click.echo(f"seqheur: warning: {msg}", err=True)
        prof = run_bench(target, cfg, direct=not buffered, name=name, note=note, progress=say)
    prof.save(output)
    if as_json:
        echo_json(prof.to_dict()["model"])
    else:
        click.echo(output)


@click.command("profiles")
@click.option("--json", "as_json", is_flag=True)
def profiles_cmd(as_json: bool) -> None:
    """List the bundled disk profiles (measured or modelled, and from what).

    \b
    Example:
      seqheur profiles --json
    """
    from . import echo_json
    from ..disk.profile import load_profile, registered_profiles

    rows = [load_profile(n).summary() for n in registered_profiles()]
    if as_json:
        echo_json(rows)
        return
    for r in rows:
        click.echo(f"{r['name']:18s} {r['kind']:9s} {r['capacity_gb']:>7} GB  random "
                   f"{r['random_ms']:>6} ms  media {r['media_mbps'][0]}-{r['media_mbps'][1]} MB/s  "
                   f"host {r['host_mbps']} MB/s  cache {r['drive_cache']}")
        click.echo(f"{'':18s} {r['description']}")


def register(cli: click.Group) -> None:
    cli.add_command(bench_cmd)
    cli.add_command(profiles_cmd)
