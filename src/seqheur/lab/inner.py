"""The part of a lab run that executes inside the private namespaces (``unshare --net --mount``).

``python -m seqheur.lab.inner PLAN.json``: bring up ``lo`` (the namespace's only interface), put a
tmpfs on /run, start rpcbind and ganesha, check them with ``nfs-cat``, start tcpdump, mount the FUSE bridge if the scenario
uses it, run the clients, then stop everything this process started, by PID, newest first (also
on an error, SIGINT or SIGTERM). Writes a result JSON (what ran, PIDs, timings, tcpdump counters,
errors); verification against the capture happens outside, in ``seqheur.lab.runner``.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from ..io import write_json
from .capture import Tcpdump
from .proc import MARKER, Processes, wait_until
from .scenarios import LabError
from .server import EXPORT, ganesha_config, serious_log_lines, start_ganesha, start_rpcbind




class _Stop(Exception):
    """Raised by the SIGINT/SIGTERM handler so that cleanup runs in ``finally``."""


def _on_signal(signum: int, frame: Any) -> None:
    raise _Stop(f"interrupted by signal {signum}")


def _run(argv: list[str], **kw: Any) -> str:
    res = subprocess.run(argv, capture_output=True, text=True, timeout=30, **kw)
    if res.returncode != 0:
        raise LabError(f"{' '.join(argv)} failed: {res.stderr.strip()}")
    return res.stdout


def _network() -> dict[str, Any]:
    """Bring up lo and prove the namespace has no other interface and only loopback addresses."""
    # No IPv6 at all (sysctls under net/ are per network namespace): 127.0.0.1 is then the
    # namespace's one and only address.
    for conf in ("all", "default", "lo"):
        Path(f"/proc/sys/net/ipv6/conf/{conf}/disable_ipv6").write_text("1\n")
    _run(["ip", "link", "set", "lo", "up"])
    links = [line.split(":")[1].strip() for line in _run(["ip", "-o", "link"]).splitlines()]
    addrs = [line.split()[3] for line in _run(["ip", "-o", "addr"]).splitlines()]
    if links != ["lo"] or addrs != ["127.0.0.1/8"]:
        raise LabError(f"namespace is not loopback-only: links {links}, addresses {addrs}")
    # Namespace identities (inode numbers, as /proc/PID/ns/* show them on the host too), so a
    # caller can check afterwards that nothing lives in them any more.
    ns = {kind: os.stat(f"/proc/self/ns/{kind}").st_ino for kind in ("net", "pid", "mnt")}
    return {"links": links, "addresses": addrs, "ns_inodes": ns}


def _mounted(mountpoint: Path) -> bool:
    target = str(mountpoint)
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == target for line in f)


def _nfs_cat_check(plan: dict[str, Any]) -> dict[str, Any]:
    """Before the capture starts: a third-party client (libnfs-utils' ``nfs-cat``) reads the
    smallest exported file of the scenario, and its sha256 must be the generated file's."""
    f = min(plan["files"], key=lambda f: f["size"])
    url = f"nfs://127.0.0.1{EXPORT}/{f['name']}?version={plan['version']}"
    res = subprocess.run(["nfs-cat", url], capture_output=True, timeout=120)
    digest = hashlib.sha256(res.stdout).hexdigest()
    if res.returncode != 0 or digest != f["sha256"]:
        raise LabError(f"nfs-cat {url}: exit {res.returncode}, {len(res.stdout)} bytes, sha256 "
                       f"{digest} != {f['sha256']}: {res.stderr.decode(errors='replace')[-300:]}")
    return {"client": "nfs-cat", "url": url, "bytes": len(res.stdout), "sha256_ok": True}


def run(plan: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {"scenario": plan["scenario"], "ok": False, "errors": [],
                              "timings": {}, "clients": []}
    procs = Processes()
    work = Path(plan["workdir"])
    timings = result["timings"]
    t_start = time.monotonic()
    bridge = None
    handles: list[Any] = []  # stderr files of the processes started here

    def err_file(name: str) -> Any:
        handles.append(open(work / name, "w"))
        return handles[-1]

    try:
        result["network"] = _network()
        # A private /run: rpcbind's socket and state never touch the host's.
        _run(["mount", "-t", "tmpfs", "tmpfs", "/run"])
        _, timings["rpcbind_ready_s"] = start_rpcbind(procs)
        conf = work / "ganesha.conf"
        (work / "recovery").mkdir(exist_ok=True)
        conf.write_text(ganesha_config(Path(plan["export"]), work / "recovery"))
        t0 = time.monotonic()
        ganesha, timings["ganesha_ready_s"] = start_ganesha(
            procs, conf, work / "ganesha.log", work / "ganesha.pid", (3, plan["version"]))
        timings["server_start_s"] = time.monotonic() - t0
        result["server_check"] = _nfs_cat_check(plan)
        if plan.get("block_stat"):  # lab validate: cold export pages, the device's counters
            from .validate import drop_file_pages, read_block_stat

            drop_file_pages(plan["block_stat"]["files"])
            result["block_stat"] = {"before": read_block_stat(plan["block_stat"]["stat"])}
        dump = Tcpdump.start(procs, Path(plan["pcap"]))
        t0 = time.monotonic()
        clients = []
        if plan["via"] == "fuse":
            mnt = Path(plan["mountpoint"])
            mnt.mkdir(parents=True, exist_ok=True)
            bridge = procs.start("fusebridge", [
                plan["fusebridge"], "127.0.0.1", EXPORT, str(plan["version"]), plan["bridge_log"],
                str(mnt)], stdout=subprocess.DEVNULL, stderr=err_file("fusebridge.err"))
            if wait_until(lambda: _mounted(mnt) or bridge.popen.poll() is not None, 20) is None \
                    or bridge.popen.poll() is not None:
                raise LabError(f"FUSE bridge did not mount: "
                               f"{(work / 'fusebridge.err').read_text()[-1000:]}")
            dev = _run(["mountpoint", "-d", str(mnt)]).strip()
            ra_path = Path(f"/sys/class/bdi/{dev}/read_ahead_kb")
            ra_path.write_text(f"{plan['read_ahead_kb']}\n")
            result["read_ahead_kb"] = int(ra_path.read_text())
            result["bdi"] = dev
            for i, reader in enumerate(plan["readers"]):
                err = err_file(f"client{i}.err")
                clients.append(procs.start(f"reader{i}", [
                    plan["python"], "-m", "seqheur.lab.reader", json.dumps(reader["spec"]),
                    str(mnt), reader["log"]], stdout=subprocess.DEVNULL, stderr=err,
                    env={**os.environ, "PYTHONPATH": plan["pythonpath"]}))
        else:
            for i, reader in enumerate(plan["readers"]):
                spec = reader["spec"]
                argv = [plan["loadgen"], "-s", "127.0.0.1", "-e", EXPORT,
                        "-v", str(plan["version"]), "-p", spec["pattern"], "-z", str(spec["size"]),
                        "-d", str(spec["depth"]), "-k", str(spec["streams"]),
                        "-n", str(spec["reads"]), "-S", str(spec["seed"]), "-l", reader["log"],
                        *spec["files"]]
                err = err_file(f"client{i}.err")
                clients.append(procs.start(f"loadgen{i}", argv, stdout=subprocess.DEVNULL,
                                           stderr=err))
        deadline = time.monotonic() + plan["timeout"]
        for i, client in enumerate(clients):
            try:
                rc = client.popen.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                Processes.stop(client)
                rc = None
            err = (work / f"client{i}.err").read_text(errors="replace")[-2000:]
            result["clients"].append({"name": client.name, "pid": client.pid, "returncode": rc,
                                      "stderr": err})
            if rc != 0:
                result["errors"].append(f"{client.name} exited with {rc}: {err.strip()}")
        timings["clients_s"] = time.monotonic() - t0
        if plan.get("block_stat"):
            result["block_stat"]["after"] = read_block_stat(plan["block_stat"]["stat"])
        if bridge is not None:
            # Unmounting ends the bridge's FUSE loop cleanly (exit 0); a signal would make
            # fuse_main report failure (8) even on success. The PID stop is the fallback.
            _run(["umount", plan["mountpoint"]])
            try:
                bridge.popen.wait(10)
            except subprocess.TimeoutExpired:
                Processes.stop(bridge)
            if _mounted(Path(plan["mountpoint"])):
                raise LabError("FUSE bridge stopped but its mount remains")
            result["bridge_returncode"] = bridge.popen.returncode
            if bridge.popen.returncode != 0:
                result["errors"].append(f"fusebridge exited with {bridge.popen.returncode}: "
                                        f"{(work / 'fusebridge.err').read_text()[-1000:]}")
        result["tcpdump"] = dump.stop()
        if ganesha.popen.poll() is not None:
            result["errors"].append(f"ganesha died during the run (exit {ganesha.popen.poll()}): "
                                    f"{serious_log_lines(work / 'ganesha.log')}")
        result["ok"] = not result["errors"]
    except (LabError, _Stop, OSError, subprocess.SubprocessError) as exc:
        result["errors"].append(f"{type(exc).__name__}: {exc}")
    finally:
        # A second Ctrl-C must not cut the cleanup short.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        t0 = time.monotonic()
        if bridge is not None and bridge.popen.poll() is None:
            Processes.stop(bridge)
        procs.stop_all()
        for handle in handles:
            handle.close()
        timings["stop_s"] = time.monotonic() - t0
        timings["total_s"] = time.monotonic() - t_start
        result["processes"] = procs.records()
        result["ganesha_log_tail"] = _tail(work / "ganesha.log")
        write_json(result, plan["result"])
    return result


def _tail(path: Path, n: int = 3000) -> str:
    return path.read_text(errors="replace")[-n:] if path.exists() else ""


def main(argv: list[str]) -> int:
    if os.environ.get(MARKER) != "1":
        print("seqheur.lab.inner runs only inside the lab namespace (use `seqheur lab run`)",
              file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    plan = json.loads(Path(argv[0]).read_text())
    try:
        result = run(plan)
    except Exception:  # noqa: BLE001 - last resort: the result file must say what happened
        write_json({"scenario": plan.get("scenario"), "ok": False,
                    "errors": [traceback.format_exc()]}, plan["result"])
        return 1
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
