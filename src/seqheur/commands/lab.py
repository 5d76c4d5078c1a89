"""Verbs for the real-traffic capture lab: ``lab list``, ``lab run`` and ``lab validate``."""

from __future__ import annotations

from pathlib import Path

import click

from . import echo_json


def register(cli: click.Group) -> None:
    cli.add_command(lab)


@click.group()
def lab() -> None:
    """Capture real NFS traffic: nfs-ganesha + libnfs/FUSE clients on loopback, in a private
    network namespace, with tcpdump (needs root; `make lab` installs the Debian packages).

    \b
    Example:
      seqheur lab list
      sudo seqheur lab run seq-v3 stride4-v3 fuse-seq-ra128k-v3 -o captures/
    """


@lab.command("list")
@click.option("--json", "as_json", is_flag=True, help="print the scenarios as JSON")
def list_(as_json: bool) -> None:
    """List the capture scenarios (name, NFS version, client kind, what it exercises).

    \b
    Example:
      seqheur lab list --json
    """
    import dataclasses

    from ..lab import SCENARIOS

    if as_json:
        echo_json([{"name": s.name, "summary": s.summary, "nfs_version": s.version,
                    "via": s.via, "read_ahead_kb": s.read_ahead_kb, "tags": list(s.tags),
                    "files": [dataclasses.asdict(f) for f in s.files],
                    "readers": [dataclasses.asdict(r) for r in s.readers]}
                   for s in SCENARIOS.values()])
        return
    width = max(len(n) for n in SCENARIOS)
    for s in SCENARIOS.values():
        via = s.via if s.read_ahead_kb is None else f"fuse ra={s.read_ahead_kb}k"
        click.echo(f"{s.name:<{width}}  v{'4.0' if s.version == 4 else '3  '}  {via:<13}  "
                   f"{s.summary}")


@lab.command("run")
@click.argument("scenarios", nargs=-1, required=True)
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True,
              help="directory for NAME.pcap.gz and NAME.manifest.json")
@click.option("--timeout", type=float, default=300.0, show_default=True,
              help="seconds the clients of one scenario may run")
@click.option("--keep-work", is_flag=True,
              help="keep the export, client logs and raw pcaps (kept anyway on failure)")
@click.option("--json", "as_json", is_flag=True, help="print a summary per scenario as JSON")
def run(scenarios: tuple[str, ...], output: Path, timeout: float, keep_work: bool,
        as_json: bool) -> None:
    """Capture each SCENARIO (or `all`) and verify it: the capture's READ calls, decoded by
    tshark, must equal the READs the clients logged, every READ must have its reply, and every
    byte read must match the generated export contents.

    \b
    Example:
      seqheur lab run demo-v3 -o traces/
      seqheur lab run all -o captures/ --json
    """
    from ..lab import SCENARIOS, RunOptions
    from ..lab import run as run_lab

    names = list(scenarios)
    if names == ["all"]:
        names = [n for n, s in SCENARIOS.items() if "test" not in s.tags]
    manifests = run_lab(names, output, RunOptions(timeout=timeout, keep_work=keep_work))
    rows = [{"scenario": m["scenario"]["name"], "pcap": str(output / m["pcap"]["file"]),
             "pcap_bytes": m["pcap"]["bytes"], "reads_issued": m["checks"]["issued_reads"],
             "tshark_read_calls": m["capture"]["tshark"]["read_calls"],
             "ok": m["checks"]["ok"]} for m in manifests]
    if as_json:
        echo_json(rows)
        return
    for r in rows:
        click.echo(f"{r['scenario']}: {r['reads_issued']} READs issued, "
                   f"{r['tshark_read_calls']} on the wire, {r['pcap_bytes']} bytes gzipped -> "
                   f"{r['pcap']}")


@lab.command("validate")
@click.argument("scenarios", nargs=-1)
@click.option("-o", "--output", type=click.Path(path_type=Path),
              help="write the rows as JSON to this file (atomically)")
@click.option("--captures", type=click.Path(path_type=Path),
              help="keep NAME.pcap.gz + NAME.manifest.json here (default: a temporary "
                   "directory, removed)")
@click.option("--bps", type=int, default=20_000_000, show_default=True,
              help="the loop device's read throttle, bytes/s (the iops throttle follows)")
@click.option("--ra-kb", type=int, default=128, show_default=True,
              help="the loop device's read_ahead_kb")
@click.option("--timeout", type=float, default=120.0, show_default=True,
              help="seconds the clients of one scenario may run")
@click.option("--probe/--no-probe", default=True, show_default=True,
              help="first measure the loop device's cost per read (O_DIRECT, read-only) and the "
                   "host's per READ (two runs from the page cache), and give them to the "
                   "model (the disk profile; the reply path: reply_us, host_mbps)")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
              help="run every scenario (and probe) this many times and compare the medians "
                   "(the rows keep each run's figures and the measured throughput's spread)")
@click.option("--json", "as_json", is_flag=True, help="print the rows as JSON")
def validate(scenarios: tuple[str, ...], output: Path | None, captures: Path | None, bps: int,
             ra_kb: int, timeout: float, probe: bool, repeat: int, as_json: bool) -> None:
    """Measured against predicted: run each SCENARIO (default: the validation set) with the
    export on a throttled loop device, then replay its capture through linux-6, the ideal
    table, a profile of the loop device and closed-loop:preset=lab-loopback with the run's
    throttle; report client throughput, disk bytes, disk requests (and the reads submitted),
    measured and predicted, with relative errors (needs root and the lab packages: make
    lab-deps; docs/capture-lab.md). Probes first measure what a read costs the loop device
    and what a READ costs the host when no disk read is needed, for the model.

    \b
    Example:
      sudo seqheur lab validate --json -o validate.json
      sudo seqheur lab validate seq-v3 random-v3 --bps 40000000
    """
    from ..io import write_json
    from ..lab.validate import DEFAULT_SCENARIOS, ValidateOptions, report
    from ..lab.validate import validate as run_validate

    opts = ValidateOptions(bps=bps, read_ahead_kb=ra_kb, timeout=timeout,
                           probe=probe, repeat=repeat)
    rows = run_validate(list(scenarios) or list(DEFAULT_SCENARIOS), opts, captures)
    if output is not None:
        write_json(rows, output)
    if as_json:
        echo_json(rows)
        return
    click.echo(report(rows))
