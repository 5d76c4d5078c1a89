"""Run capture-lab scenarios: export data, namespace, capture, verification, manifest.

For each scenario the controller (this module, in the caller's process) re-executes
``seqheur.lab.inner`` under ``unshare --net --mount --pid`` — a fresh network namespace whose
only interface is ``lo``, a private mount namespace, and a PID namespace whose init is the inner
step — waits for it, then decodes the capture with
tshark and checks it against the clients' logs, gzips the pcap and writes the manifest.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import glob
import gzip
import hashlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ..io import write_json, write_text
from . import manifest as mf
from .build import build_clients
from .data import write_file

from .proc import MARKER, _die_with_parent
from .scenarios import LabError, Scenario, get, plan_app_reads, plan_reads
from .tshark import addresses, decode_reads

TOOLS = ("unshare", "ip", "mount", "mountpoint", "rpcbind", "rpcinfo", "ganesha.nfsd", "nfs-ls",
         "tcpdump", "tshark", "gcc", "pkg-config")


@dataclass(frozen=True)
class RunOptions:
    """``timeout``: seconds a scenario's clients may run; ``keep_work``: keep export, logs and
    raw pcaps (always kept when a scenario fails)."""

    timeout: float = 300.0
    keep_work: bool = False


def check_environment(scenarios: Sequence[Scenario] = ()) -> list[str]:
    """Why the lab cannot run here (empty list: it can). Cheap; runs nothing but one unshare."""
    problems = []
    if os.geteuid() != 0:
        problems.append("needs root (network and mount namespaces, ganesha, tcpdump)")
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        problems.append(f"missing tools: {', '.join(missing)} (run `make lab`)")
    if not Path("/usr/include/nfsc/libnfs.h").exists():
        problems.append("missing libnfs-dev (/usr/include/nfsc/libnfs.h)")
    if not glob.glob("/usr/lib/*/ganesha/libfsalvfs.so") + glob.glob("/usr/lib/ganesha/libfsalvfs.so"):
        problems.append("missing nfs-ganesha-vfs (libfsalvfs.so)")
    if any(s.via == "fuse" for s in scenarios):
        if not Path("/dev/fuse").exists():
            problems.append("no /dev/fuse")
        elif "fuse" not in Path("/proc/filesystems").read_text().split():
            problems.append("kernel has no fuse file system")
        elif shutil.which("pkg-config") and subprocess.run(
                ["pkg-config", "--exists", "fuse3"]).returncode != 0:
            problems.append("missing libfuse3-dev")
    if not problems:
        res = subprocess.run([*UNSHARE, "--", "true"], capture_output=True, text=True)
        if res.returncode != 0:
            problems.append(f"cannot create namespaces: {res.stderr.strip()}")
    return problems


def tool_versions() -> dict[str, str]:
    """Kernel and Debian package versions, recorded in every manifest."""
    out = {"kernel": platform.release()}
    for pkg in ("nfs-ganesha", "rpcbind", "libnfs-dev", "tcpdump", "tshark", "libfuse3-dev"):
        res = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True,
                             text=True)
        out[pkg] = res.stdout.strip() if res.returncode == 0 else "unknown"
    return out


class _Interrupted(Exception):
    pass


def _sigterm_as_interrupt():
    """SIGTERM raises :class:`_Interrupted` inside (lab processes, mounts and cgroups are
    then stopped and removed as after Ctrl-C)."""
    from ..loopdev import sigterm_raises

    return sigterm_raises(_Interrupted)


UNSHARE = ["unshare", "--net", "--mount", "--propagation", "private", "--pid", "--fork",
           "--mount-proc", "--kill-child"]


def _children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _in_namespace(plan_path: Path, timeout: float) -> int:
    """Run the inner step in fresh network, mount and PID namespaces; on interruption stop it
    (by PID) and re-raise.

    The PID namespace is the backstop: the inner step is its init, so when the step ends for any
    reason the kernel kills whatever is left inside — which matters for rpcbind, whose
    PR_SET_PDEATHSIG is cleared when it drops privileges to _rpc. ``--kill-child`` makes
    unshare SIGKILL the step if unshare itself is killed (we are its PDEATHSIG parent).
    """
    pkg_root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, MARKER: "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [pkg_root, os.environ.get("PYTHONPATH")]))}
    argv = [*UNSHARE, "--", sys.executable, "-m", "seqheur.lab.inner", str(plan_path)]
    # Same process group as us: a terminal Ctrl-C reaches the inner step directly (unshare
    # ignores it while it waits), and the step stops what it started, in order.
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
    try:
        return proc.wait(timeout)
    except (KeyboardInterrupt, _Interrupted, subprocess.TimeoutExpired):
        if proc.poll() is None:
            # unshare ignores SIGTERM while it waits: ask the step itself to stop
            for child in _children(proc.pid) or [proc.pid]:
                os.kill(child, signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()  # --kill-child: the step dies, and the namespaces with it
                proc.wait()
        raise


def _gzip(src: Path, dst: Path) -> None:
    tmp = dst.with_name(f".{dst.name}.tmp")
    with open(src, "rb") as fin, open(tmp, "wb") as raw:
        # mtime=0 and no file name: the same capture always gzips to the same bytes
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as gz:
            shutil.copyfileobj(fin, gz, 1 << 20)
    tmp.replace(dst)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def run_scenario(scenario: Scenario, out_dir: Path, work: Path, export: Path,
                 file_digests: dict[str, str], binaries: dict[str, Path], versions: dict[str, str],
                 options: RunOptions, block_stat: dict[str, Any] | None = None
                 ) -> dict[str, Any]:
    """Capture one scenario into ``out_dir``; return its manifest (raise LabError on failure).
    ``block_stat`` (``lab validate``): ``{"stat": /sys/block/DEV/stat, "files": [paths]}``:
    the files' pages are dropped before the clients start and the device's counters read
    before and after them (the manifest's ``block_device``)."""
    sdir = work / scenario.name
    sdir.mkdir(parents=True, exist_ok=True)
    pcap = sdir / f"{scenario.name}.pcap"
    readers = [{"spec": dataclasses.asdict(r), "log": str(sdir / f"client{i}.log")}
               for i, r in enumerate(scenario.readers)]
    plan = {
        "scenario": scenario.name, "version": scenario.version, "via": scenario.via,
        "read_ahead_kb": scenario.read_ahead_kb, "workdir": str(sdir), "export": str(export),
        "pcap": str(pcap), "result": str(sdir / "result.json"),
        "loadgen": str(binaries["loadgen"]), "fusebridge": str(binaries["fusebridge"]),
        "python": sys.executable, "pythonpath": str(Path(__file__).resolve().parents[2]),
        "mountpoint": str(sdir / "mnt"), "bridge_log": str(sdir / "bridge.log"),
        "readers": readers, "timeout": options.timeout,
        "files": [{"name": f.name, "size": f.size, "sha256": file_digests[f.name]}
                  for f in scenario.files],
        "block_stat": block_stat,
    }
    plan_path = sdir / "plan.json"
    write_json(plan, plan_path)
    started = _dt.datetime.now(_dt.timezone.utc)
    rc = _in_namespace(plan_path, options.timeout + 120)
    result_path = Path(plan["result"])
    if not result_path.exists():
        raise LabError(f"{scenario.name}: the namespace step wrote no result (exit {rc}); "
                       f"work kept in {sdir}")
    result = json.loads(result_path.read_text())
    if rc != 0 or not result.get("ok"):
        errors = "; ".join(result.get("errors", [])) or f"exit status {rc}"
        raise LabError(f"{scenario.name}: capture failed: {errors} (work kept in {sdir})")

    sizes = {f.name: f.size for f in scenario.files}
    if scenario.via == "fuse":
        logs = [mf.parse_client_log(Path(plan["bridge_log"]))]
        kinds = ["fusebridge"]
    else:
        logs = [mf.parse_client_log(Path(r["log"])) for r in readers]
        kinds = ["loadgen"] * len(logs)
    capture = decode_reads(pcap)
    checks = mf.compare(logs, capture)
    data_mismatches = sum(b for log in logs for _, _, b in log.done.values())
    failures = sum(1 for log in logs for _, st, _ in log.done.values() if st < 0)
    app_rows: list[list[Any]] = []
    plan_ok: bool | None = None
    if scenario.via == "libnfs":
        plan_ok = all(
            [(log.files[f]["name"], o, n) for _, _, f, o, n in sorted(log.issued)]
            == plan_reads(r, sizes) for r, log in zip(scenario.readers, logs))
        unfinished = sum(len(log.issued) - len(log.done) for log in logs)
    else:
        plan_ok = True
        unfinished = sum(len(log.issued) - len(log.done) for log in logs)
        for i, r in enumerate(scenario.readers):
            app = mf.parse_app_log(Path(readers[i]["log"]))
            names = list(r.files)
            plan_ok &= [(names[f], o, n) for _, _, f, o, n, _, _ in app] == plan_app_reads(r, sizes)
            data_mismatches += sum(row[6] for row in app)
            app_rows += [[i, s, t, names[f], o, n, got, bad] for s, t, f, o, n, got, bad in app]
    checks.update({
        "issued_equals_plan": plan_ok,
        "client_data_mismatches": data_mismatches,
        "failed_reads": failures,
        "unfinished_reads": unfinished,
        "tcpdump_dropped_by_kernel": result["tcpdump"]["dropped_by_kernel"],
        "capture_addresses": addresses(pcap),
    })
    ok = (checks["capture_equals_manifest"] and checks["per_connection_order_equal"]
          and checks["all_replied"] and plan_ok and data_mismatches == 0 and failures == 0
          and unfinished == 0 and checks["tcpdump_dropped_by_kernel"] == 0
          and checks["issued_reads"] > 0 and checks["capture_addresses"] == ["127.0.0.1"])
    checks["ok"] = bool(ok)

    gz = out_dir / f"{scenario.name}.pcap.gz"
    _gzip(pcap, gz)
    handles = [{"fh": meta["fh"], "name": meta["name"], "size": meta["size"],
                "crc32": checks["fh_crc32"].get(meta["fh"]), "client": ci}
               for ci, log in enumerate(logs) for meta in log.files.values()]
    del checks["fh_crc32"]
    man: dict[str, Any] = {
        "schema": mf.SCHEMA,
        "scenario": {"name": scenario.name, "summary": scenario.summary,
                     "nfs_version": "4.0" if scenario.version == 4 else "3", "transport": "tcp",
                     "via": scenario.via, "read_ahead_kb": scenario.read_ahead_kb,
                     "readers": [dataclasses.asdict(r) for r in scenario.readers]},
        "created": started.isoformat(timespec="seconds"),
        "tools": versions,
        "pcap": {"file": gz.name, "bytes": gz.stat().st_size, "sha256": _sha256(gz),
                 "raw_bytes": pcap.stat().st_size},
        "server": {"address": "127.0.0.1", "nfs_port": 2049, "mount_port": 20048,
                   "export": "/export", "software": "nfs-ganesha (FSAL VFS) + rpcbind"},
        "files": [{"name": f.name, "size": f.size, "sha256": file_digests[f.name]}
                  for f in scenario.files],
        "file_handles": handles,
        "clients": [{"id": i, "kind": kind, "client_port": log.port,
                     "reads_issued": len(log.issued), "totals": log.totals}
                    for i, (kind, log) in enumerate(zip(kinds, logs))],
        "reads": {"columns": mf.READ_COLUMNS, "rows": mf.read_rows(logs)},
        "capture": {"tcpdump": result["tcpdump"], "tshark": capture.summary()},
        "checks": checks,
        "server_check": result.get("server_check"),
        "namespace": {**result["network"], "bdi": result.get("bdi"),
                      "read_ahead_kb": result.get("read_ahead_kb")},
        "processes": result["processes"],
        "timings": result["timings"],
    }
    if result.get("block_stat"):
        man["block_device"] = result["block_stat"]
    if app_rows:
        man["app_reads"] = {"columns": mf.APP_COLUMNS, "rows": app_rows}
    write_text(mf.dumps(man), out_dir / f"{scenario.name}.manifest.json")
    if not ok:
        counts = ("client_data_mismatches", "failed_reads", "unfinished_reads",
                  "missing_from_capture", "extra_in_capture", "unknown_file_handles",
                  "tcpdump_dropped_by_kernel")
        failed = {k: v for k, v in checks.items()
                  if (k in counts and v) or (k not in counts and (v is False or v is None))}
        if checks["capture_addresses"] != ["127.0.0.1"]:
            failed["capture_addresses"] = checks["capture_addresses"]
        raise LabError(f"{scenario.name}: verification failed: {failed} (work kept in {sdir})")
    if not options.keep_work:
        shutil.rmtree(sdir)
    return man


def run(names: Sequence[str | Scenario], out_dir: str | os.PathLike[str],
        options: RunOptions = RunOptions()) -> list[dict[str, Any]]:
    """Capture each scenario (a registered name or a :class:`Scenario` made by the caller) into
    ``out_dir`` (NAME.pcap.gz + NAME.manifest.json); return the manifests."""
    scenarios = [n if isinstance(n, Scenario) else get(n) for n in names]
    if not scenarios:
        raise LabError("no scenario given (see `seqheur lab list`)")
    problems = check_environment(scenarios)
    if problems:
        raise LabError("the capture lab cannot run here: " + "; ".join(problems))
    out = Path(out_dir).resolve()  # ganesha and the namespace step need absolute paths
    out.mkdir(parents=True, exist_ok=True)
    binaries = build_clients()
    versions = tool_versions()
    work = Path(tempfile.mkdtemp(prefix=".lab-work-", dir=out))
    os.chmod(work, 0o755)  # ganesha serves files below it
    export = work / "export"
    export.mkdir()
    specs = {f.name: f for s in scenarios for f in s.files}
    for s in scenarios:
        for f in s.files:
            if specs[f.name] != f:
                raise LabError(f"file {f.name} has two sizes across the chosen scenarios")
    manifests = []
    from rich.progress import Progress

    failed = False
    try:
        with _sigterm_as_interrupt(), Progress(transient=True,
                                               disable=not sys.stderr.isatty()) as bar:
            task = bar.add_task("export files", total=len(specs))
            digests = {}
            for spec in specs.values():
                digests[spec.name] = write_file(export, spec)
                bar.advance(task)
            task = bar.add_task("scenarios", total=len(scenarios))
            for s in scenarios:
                bar.update(task, description=f"capturing {s.name}")
                manifests.append(run_scenario(s, out, work, export, digests, binaries,
                                              versions, options))
                bar.advance(task)
    except (KeyboardInterrupt, _Interrupted) as exc:
        failed = True
        raise LabError(f"interrupted ({type(exc).__name__} {exc}); every process the lab "
                       f"started was stopped; work kept in {work}") from None
    except BaseException:
        failed = True  # keep the export, logs and raw pcaps for a look
        raise
    finally:
        if not failed and not options.keep_work:
            shutil.rmtree(work, ignore_errors=True)
    return manifests
