"""A scratch ext4 file system on a loop device (root): the live-kernel check's scratch files
and the lab validation's throttled export live on one. Made in a temporary directory, every
part of it (mount, loop device, image) removed again by :meth:`ScratchExt4.remove`, also after
a failure half-way through :meth:`ScratchExt4.create`."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from .errors import SpecError

#: cgroup v1's blkio hierarchy: blk-throttle's read limits per device and cgroup
BLKIO = Path("/sys/fs/cgroup/blkio")


@contextmanager
def sigterm_raises(exc_type: type[BaseException] = KeyboardInterrupt) -> Iterator[None]:
    """While inside, SIGTERM raises ``exc_type`` (as Ctrl-C raises KeyboardInterrupt), so the
    ``finally`` blocks and exit callbacks that remove loop devices, mounts and cgroups run on
    either; the previous handler is restored on exit. Outside the main thread (where Python
    allows no handler) signals are left to the caller."""

    def handler(signum: int, frame: Any) -> None:
        raise exc_type(f"signal {signum}")

    try:
        old = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


class ScratchExt4:
    """ext4 with 4 KiB blocks (the page size: page-cache and disk reads line up) on a loop
    device over a sparse image of ``size`` bytes in a new directory under ``tmp_dir`` (the
    system's default when None). ``direct_io``: the loop device reads its image with O_DIRECT,
    so the image's own page cache neither serves nor hides the device's reads."""

    def __init__(self, size: int, *, prefix: str, direct_io: bool = False,
                 tmp_dir: str | None = None) -> None:
        self.size = size
        self.prefix = prefix
        self.direct_io = direct_io
        self.tmp_dir = tmp_dir
        self.tmp: str | None = None
        self.dev: str | None = None  # /dev/loopN
        self.mnt: str | None = None  # where it is mounted

    def create(self) -> str:
        """Make, attach, format and mount it; returns the mount point."""
        try:
            self.tmp = tempfile.mkdtemp(prefix=self.prefix, dir=self.tmp_dir)
            image = os.path.join(self.tmp, "image")
            with open(image, "wb") as fh:
                fh.truncate(self.size)
            dio = ["--direct-io=on"] if self.direct_io else []
            self.dev = subprocess.run(["losetup", "--find", "--show", *dio, image], check=True,
                                      capture_output=True, text=True).stdout.strip()
            subprocess.run(["mkfs.ext4", "-q", "-F", "-b", "4096", self.dev], check=True,
                           capture_output=True)
            mnt = os.path.join(self.tmp, "mnt")
            os.mkdir(mnt)
            subprocess.run(["mount", self.dev, mnt], check=True, capture_output=True)
            self.mnt = mnt
            return mnt
        except BaseException:
            self.remove()
            raise

    def remove(self) -> None:
        """Unmount, detach and delete whatever of it exists (idempotent)."""
        if self.mnt is not None:
            subprocess.run(["umount", self.mnt], capture_output=True)
            self.mnt = None
        if self.dev:
            subprocess.run(["losetup", "-d", self.dev], capture_output=True)
            self.dev = None
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None


def kernel_hz() -> int:
    """The running kernel's CONFIG_HZ (jiffies per second: blk-throttle's clock), from its
    config (/proc/config.gz or /boot/config-RELEASE); a clear error when neither is
    readable."""
    import gzip

    release = os.uname().release
    for path, opener in (("/proc/config.gz", gzip.open), (f"/boot/config-{release}", open)):
        try:
            with opener(path, "rt") as fh:
                for line in fh:
                    if line.startswith("CONFIG_HZ="):
                        return int(line.split("=", 1)[1])
        except OSError:
            continue
    raise SpecError("the kernel's CONFIG_HZ is not readable (no /proc/config.gz, no "
                    f"/boot/config-{release}): give it (--hz)")


def _own_blkio_cgroup() -> Path:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, ctrls, path = line.split(":", 2)
        if "blkio" in ctrls.split(","):
            return BLKIO / path.lstrip("/")
    return BLKIO


@contextmanager
def throttled(majmin: str, bps: int, iops: int) -> Iterator[Path]:
    """This process (and so every process it starts: the lab's unshare, ganesha and clients)
    in a blkio cgroup of its own with read limits on the device ``majmin`` (bytes/s and
    reads/s; 0: none); back out on exit."""
    home = _own_blkio_cgroup()
    cg = BLKIO / f"seqheur-throttle-{os.getpid()}"
    cg.mkdir(exist_ok=True)
    try:
        (cg / "blkio.throttle.read_bps_device").write_text(f"{majmin} {bps}\n")
        (cg / "blkio.throttle.read_iops_device").write_text(f"{majmin} {iops}\n")
        (cg / "cgroup.procs").write_text(f"{os.getpid()}\n")
        try:
            yield cg
        finally:
            (home / "cgroup.procs").write_text(f"{os.getpid()}\n")
    finally:
        try:
            cg.rmdir()
        except OSError:
            pass
