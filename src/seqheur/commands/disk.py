"""Disk verbs: ``bench TARGET``, ``bench plot PROFILE``, ``bench check-model TARGET``,
``profiles``."""

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


@click.command("check-model")
@click.argument("target")
@click.option("-p", "--profile", required=True,
              help="disk profile: a registered name or spec (seqheur profiles) or a JSON file "
                   "written by seqheur bench -o")
@click.option("--ops", type=int, default=None, help="requests in the stream (default 60000)")
@click.option("--seed", type=int, default=None, help="stream seed (default 1)")
@click.option("--time", "seconds", type=float, default=None,
              help="measuring budget in s, the stream is cut there (default 20)")
@click.option("--repeat", is_flag=True,
              help="read the requests twice and report the second pass against the first "
                   "(the device's own noise floor under the demerit)")
@click.option("--throttle", "throttle_bps", default=None,
              help="read the stream through a blk-throttle read limit of this many bytes/s "
                   "(20MB = 20,000,000; root, cgroup v1 blkio, TARGET a block device) and run "
                   "the model with the same throttle in front of the profile")
@click.option("--throttle-iops", type=int, default=0,
              help="with --throttle: also a limit of this many reads/s (default none)")
@click.option("--hz", type=int, default=None,
              help="with --throttle: the kernel's CONFIG_HZ (default: read from "
                   "/proc/config.gz or /boot/config-RELEASE)")
@click.option("--json", "as_json", is_flag=True, help="print the result as one JSON object")
@click.option("-o", "--output", default=None, help="also write the JSON result here")
def check_model_cmd(target: str, profile: str, ops: int | None, seed: int | None,
                    seconds: float | None, repeat: bool, throttle_bps: str | None,
                    throttle_iops: int, hz: int | None, as_json: bool,
                    output: str | None) -> None:
    """Check a disk profile's drive model against TARGET (a block device or file).

    Reads a seeded synthetic stream (sequential runs, random reads, short and long seeks,
    several sizes) from TARGET, strictly read-only with O_DIRECT at queue depth 1, replays it
    through the model of PROFILE and reports the demerit (RMS distance between the measured
    and predicted response-time distributions), its share of the mean response time and the
    predicted / measured total time.

    \b
    Example:
      seqheur bench check-model /dev/loop0 --profile vm-virtio
      seqheur bench check-model data.bin -p mydisk.json --ops 5000 --json -o check.json
      seqheur bench check-model /dev/loop0 -p loop.json --throttle 20MB --time 60
    """
    from . import echo_json
    from ..disk import check
    from ..errors import SpecError
    from ..io import write_json
    from ..progress import enabled

    ops = check.DEFAULT_OPS if ops is None else ops
    seconds = check.DEFAULT_SECONDS if seconds is None else seconds
    if ops < 1:
        raise SpecError(f"--ops must be >= 1, not {ops}")
    if seconds <= 0:
        raise SpecError(f"--time must be > 0, not {seconds:g}")
    say = (lambda s: click.echo(f"  {s}", err=True)) if enabled() and not as_json else None
    import warnings

    limit = _throttle_of(throttle_bps, throttle_iops, hz)
    with warnings.catch_warnings(), _throttled(target, limit):
        warnings.simplefilter("always")
        warnings.showwarning = lambda msg, *a, **k: click.echo(f"seqheur: warning: {msg}",
                                                               err=True)
        res = check.check_model(target, profile, ops=ops,
                                seed=check.DEFAULT_SEED if seed is None else seed,
                                seconds=seconds, repeat=repeat, progress=say, throttle=limit)
    if output:
        write_json(res, output)
    if as_json:
        echo_json(res)
        return
    click.echo(_check_table(res))
    if output:
        click.echo(output)


def _throttle_of(bps: str | None, iops: int, hz: int | None) -> Any:
    """The HostThrottle of the --throttle options (None without --throttle)."""
    from ..disk.profile import HostThrottle
    from ..errors import SpecError
    from ..loopdev import kernel_hz
    from ..options import parse_size

    if bps is None:
        if iops or hz is not None:
            raise SpecError("--throttle-iops and --hz go with --throttle")
        return None
    rate = parse_size(bps)
    if rate <= 0 or iops < 0:
        raise SpecError(f"--throttle must be > 0 bytes/s and --throttle-iops >= 0, not "
                        f"{bps} and {iops}")
    return HostThrottle(read_bps=rate, read_iops=iops, hz=kernel_hz() if hz is None else hz)


def _throttled(target: str, limit: Any) -> Any:
    """This process's reads of the block device ``target`` under ``limit`` (a blkio cgroup of
    its own, removed on exit); nothing without a limit."""
    import contextlib
    import os
    import stat

    from ..errors import SpecError

    if limit is None:
        return contextlib.nullcontext()
    from ..loopdev import BLKIO, throttled

    try:
        st = os.stat(target)
    except OSError as exc:
        raise SpecError(f"{target}: {exc.strerror}") from None
    if not stat.S_ISBLK(st.st_mode):
        raise SpecError(f"--throttle: {target} is not a block device (blk-throttle limits a "
                        "device's reads; use a loop device over a file)")
    if os.geteuid() != 0 or not (BLKIO / "blkio.throttle.read_bps_device").exists():
        raise SpecError("--throttle needs root and cgroup v1 blkio throttling "
                        f"({BLKIO}/blkio.throttle.read_bps_device)")
    majmin = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
    return throttled(majmin, limit.read_bps, limit.read_iops)


def _check_table(res: dict[str, Any]) -> str:
    """The human view of a check-model result: one row for all requests, one per component."""
    st = res["stream"]
    t = res.get("throttle")
    behind = ""
    if t:
        ops = f" and {t['read_iops']} reads/s" if t["read_iops"] else ""
        behind = f" behind a read throttle of {t['read_bps']} B/s{ops}"
    lines = [f"{res['target']} vs profile {res['profile']}{behind}: {res['ops']} requests "
             f"(seed {st['seed']}{', cut by --time' if st['cut_by_time'] else ''}), "
             f"QD1 back to back, O_DIRECT",
             f"{'':11s} {'ops':>6s} {'mean ms':>15s} {'p50 ms':>15s} {'p99 ms':>15s} "
             f"{'demerit':>8s} {'%mean':>6s} {'total':>6s}",
             f"{'':11s} {'':>6s} {'meas / pred':>15s} {'meas / pred':>15s} "
             f"{'meas / pred':>15s} {'ms':>8s} {'':>6s} {'ratio':>6s}"]

    def num(x: Any, fmt: str) -> str:
        return "-" if x is None else format(x, fmt)

    rows = [("all", res), *res["components"].items()]
    if "noise_floor" in res:
        rows.append(("pass2/pass1", res["noise_floor"]))
    for name, f in rows:
        lines.append(
            f"{name:11s} {f['ops']:>6d} "
            f"{f['measured_mean_ms']:>7.3f}/{f['predicted_mean_ms']:<7.3f} "
            f"{f['measured_p50_ms']:>7.3f}/{f['predicted_p50_ms']:<7.3f} "
            f"{f['measured_p99_ms']:>7.3f}/{f['predicted_p99_ms']:<7.3f} "
            f"{f['demerit']:>8.3f} {num(f['demerit_percent'], '.1f'):>6s} "
            f"{num(f['total_time_ratio'], '.3f'):>6s}")
    for name, f in (("all", res), ("pass2/pass1", res.get("noise_floor"))):
        tl = f.get("tail") if f else None
        if tl:
            lines.append(f"tail ({name}): the top 1 % / 0.1 % of quantiles hold "
                         f"{100 * tl['share_top_1_percent']:.0f} % / "
                         f"{100 * tl['share_top_0.1_percent']:.0f} % of the squared distance; "
                         f"below the top 0.1 %: demerit "
                         f"{num(tl['demerit_percent_below_top_0.1_percent'], '.1f')} % of "
                         f"the mean")
    rule = res["target_rule"]
    lo, hi = rule["total_time_ratio"]
    lines.append(f"target (demerit <= {rule['demerit_percent_max']:g} % of the mean, total "
                 f"ratio {lo:g}-{hi:g}): {'met' if res['meets_target'] else 'NOT met'}")
    return "\n".join(lines)


# verbs that share the name ``bench`` with the measuring command: ``bench plot PROFILE``,
# ``bench check-model TARGET``; a TARGET named like one of them needs a path (./plot)
_BENCH_SUBCOMMANDS = {"plot": plot_cmd, "check-model": check_model_cmd}


class _BenchCommand(click.Command):
    """``seqheur bench TARGET`` and its subcommands (``plot``, ``check-model``) under one
    name."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] in _BENCH_SUBCOMMANDS:
            ctx.meta["seqheur.bench.sub"] = (args[0], args[1:])
            return []
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        if "seqheur.bench.sub" in ctx.meta:
            name, args = ctx.meta["seqheur.bench.sub"]
            return _BENCH_SUBCOMMANDS[name].main(args, prog_name=f"seqheur bench {name}",
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

    \b
    Also:
      seqheur bench plot PROFILE -o PNG        the profile as figures
      seqheur bench check-model TARGET -p P    the profile's drive model against TARGET

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
