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
from typing import Any, Iterator


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
