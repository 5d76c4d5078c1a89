"""The ordinary application reader of FUSE scenarios: plain ``os.pread`` (or a shared ``mmap``)
on the bridge's mount.

Run inside the lab namespace as ``python -m seqheur.lab.reader SPEC_JSON MOUNT LOG``. It logs each
read() it makes ("A seq t_ns file offset length got mismatches") and checks the bytes the kernel
returned against the export's contents; exit status 1 on any mismatch or short read.
"""

from __future__ import annotations

import json
import mmap
import os
import sys
import time

from .data import mismatches
from .scenarios import Reader, plan_app_reads


def main(argv: list[str]) -> int:
    spec, mount, log_path = argv
    fields = json.loads(spec)
    fields["files"] = tuple(fields["files"])
    reader = Reader(**fields)
    fds = {name: os.open(os.path.join(mount, name), os.O_RDONLY) for name in reader.files}
    sizes = {name: os.fstat(fd).st_size for name, fd in fds.items()}
    maps = ({name: mmap.mmap(fd, 0, prot=mmap.PROT_READ) for name, fd in fds.items()}
            if reader.mmap else {})
    index = {name: i for i, name in enumerate(reader.files)}
    bad_total = 0
    with open(log_path, "w") as log:
        for seq, (name, off, length) in enumerate(plan_app_reads(reader, sizes)):
            t = time.time_ns()
            data = maps[name][off:off + length] if maps else os.pread(fds[name], length, off)
            bad = mismatches(name, off, data) + (length - len(data))
            bad_total += bad
            log.write(f"A\t{seq}\t{t}\t{index[name]}\t{off}\t{length}\t{len(data)}\t{bad}\n")
    for m in maps.values():
        m.close()
    for fd in fds.values():
        os.close(fd)
    return 1 if bad_total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
