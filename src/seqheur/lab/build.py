"""Build the lab's C clients (load generator, FUSE bridge) from Debian packages only.

Binaries are cached under ``$SEQHEUR_LAB_CACHE`` (default ``~/.cache/seqheur/lab``) in a directory
named by a hash of the sources and compiler flags, so a stale build can never be used.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from .scenarios import LabError

CLIENTS_DIR = Path(__file__).resolve().parent / "clients"
CFLAGS = ["-O2", "-Wall", "-Wextra", "-Werror"]


def cache_dir() -> Path:
    env = os.environ.get("SEQHEUR_LAB_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "seqheur" / "lab"


def _pkg_config(name: str) -> list[str]:
    try:
        out = subprocess.run(["pkg-config", "--cflags", "--libs", name], check=True,
                             capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise LabError(f"pkg-config {name} failed ({exc}); install libfuse3-dev pkg-config") from exc
    return out.split()


def build_clients(force: bool = False) -> dict[str, Path]:
    """Compile loadgen and fusebridge if needed; map client name to its binary."""
    if shutil.which("gcc") is None:
        raise LabError("gcc not found; run `make lab` (or apt-get install gcc)")
    units = {
        "loadgen": (["loadgen.c"], ["-lnfs"]),
        "fusebridge": (["fusebridge.c"], _pkg_config("fuse3") + ["-lnfs"]),
    }
    digest = hashlib.sha256()
    for path in sorted(CLIENTS_DIR.glob("*.[ch]")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    for name, (srcs, libs) in sorted(units.items()):
        digest.update(repr((name, srcs, libs, CFLAGS)).encode())
    out_dir = cache_dir() / digest.hexdigest()[:16]
    out_dir.mkdir(parents=True, exist_ok=True)
    built = {}
    for name, (srcs, libs) in units.items():
        target = out_dir / name
        if force or not target.exists():
            tmp = out_dir / f".{name}.{os.getpid()}.tmp"
            cmd = ["gcc", *CFLAGS, "-o", str(tmp), *(str(CLIENTS_DIR / s) for s in srcs), *libs]
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode != 0:
                tmp.unlink(missing_ok=True)
                raise LabError(f"building {name} failed: {' '.join(cmd)}\n{res.stderr.strip()}")
            tmp.replace(target)
        built[name] = target
    return built
