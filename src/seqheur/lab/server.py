"""nfs-ganesha (VFS backend) and rpcbind, as the lab runs them inside its private namespace.

Configuration and pitfalls: docs/capture-lab.md In particular no ``Bind_Addr`` (it is fatal
inside a network namespace that has only ``lo``; there 0.0.0.0 already means loopback only),
``Graceless = true`` (stale recovery state can never block a run), ``Mount_Path_Pseudo`` (v3
MOUNT of the same ``/export`` path as v4), and rpcbind started as plain ``rpcbind -f``
(``-h 127.0.0.1`` aborts with a double free in rpcbind 1.2.6).
"""

from __future__ import annotations

import pwd
import subprocess
from pathlib import Path

from .proc import Processes, Started, wait_until
from .scenarios import LabError

NFS_PORT = 2049
MNT_PORT = 20048
RPCBIND_PORT = 111
EXPORT = "/export"


def ganesha_config(export_dir: Path, recovery_dir: Path) -> str:
    """ganesha.conf for a read-only export of ``export_dir`` as /export (v3 and v4, TCP)."""
    return f"""\
NFS_CORE_PARAM {{
    NFS_Port = {NFS_PORT};
    MNT_Port = {MNT_PORT};
    Enable_NLM = false;  Enable_RQUOTA = false;  Enable_UDP = false;
    Protocols = 3, 4;
    Mount_Path_Pseudo = true;
}}
NFSV4 {{ Graceless = true; RecoveryBackend = fs; RecoveryRoot = {recovery_dir}; Minor_Versions = 0, 1, 2; }}
NFS_KRB5 {{ Active_krb5 = false; }}
EXPORT {{
    Export_Id = 1;  Path = {export_dir};  Pseudo = {EXPORT};
    Protocols = 3, 4;  Transports = TCP;  SecType = sys;  Squash = No_Root_Squash;
    Access_Type = None;
    CLIENT {{ Clients = 127.0.0.1; Access_Type = RO; }}
    FSAL {{ Name = VFS; }}
}}
LOG {{ Default_Log_Level = EVENT; }}
"""


def _ok(argv: list[str]) -> bool:
    try:
        return subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=5).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def start_rpcbind(procs: Processes, timeout: float = 10.0) -> tuple[Started, float]:
    """Start ``rpcbind -f`` (on a private /run); return it and its readiness time in seconds."""
    run_dir = Path("/run/rpcbind")
    run_dir.mkdir(parents=True, exist_ok=True)
    try:  # Debian's rpcbind drops privileges to _rpc and keeps its state here
        user = pwd.getpwnam("_rpc")
        import os

        os.chown(run_dir, user.pw_uid, user.pw_gid)
    except KeyError:
        pass
    proc = procs.start("rpcbind", ["rpcbind", "-f"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    took = wait_until(lambda: proc.popen.poll() is not None or _ok(["rpcinfo", "-p", "127.0.0.1"]),
                      timeout)
    if took is None or proc.popen.poll() is not None:
        raise LabError(f"rpcbind did not become ready (exit status {proc.popen.poll()})")
    return proc, took


def start_ganesha(procs: Processes, conf: Path, log: Path, pidfile: Path, versions: tuple[int, ...],
                  timeout: float = 30.0) -> tuple[Started, float]:
    """Start ganesha.nfsd in the foreground; ready when ``nfs-ls`` works for each version."""
    proc = procs.start("ganesha.nfsd",
                       ["ganesha.nfsd", "-F", "-f", str(conf), "-L", str(log), "-p", str(pidfile)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def ready() -> bool:
        if proc.popen.poll() is not None:
            return True
        return all(_ok(["nfs-ls", f"nfs://127.0.0.1{EXPORT}?version={v}"]) for v in versions)

    took = wait_until(ready, timeout)
    if took is None or proc.popen.poll() is not None:
        raise LabError(f"ganesha did not start serving within {timeout:g} s (exit status "
                       f"{proc.popen.poll()}); {log}: {serious_log_lines(log)}")
    return proc, took


# Logged as CRIT/MAJ by every lab run, and harmless (docs/capture-lab.md).
_NOISE = ("DBUS", "dbus", "gssd", "keytab", "RADOS", "krb5")


def serious_log_lines(log: Path, limit: int = 5) -> str:
    """The last few CRIT/MAJ/FATAL lines of a ganesha log, without the known harmless ones."""
    if not log.exists():
        return "(no log)"
    lines = [line.split(" : ", 3)[-1] for line in log.read_text(errors="replace").splitlines()
             if any(k in line for k in (":CRIT :", ":MAJ :", ":FATAL :"))
             and not any(n in line for n in _NOISE)]
    return " | ".join(lines[-limit:]) or "(no CRIT/MAJ/FATAL lines)"
