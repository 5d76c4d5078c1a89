"""Large arrays on small pages.

numpy asks the kernel for transparent huge pages (``madvise(MADV_HUGEPAGE)``) for every array
of 4 MiB or more. With the kernel's usual settings (``transparent_hugepage/enabled`` and
``defrag`` both ``madvise``) a fault on such an array may first compact memory to find a free
huge page, synchronously; on the VMs seqheur is measured on, first-touching fresh huge pages
costs several times the system time of small ones (docs/architecture.md: reading a 100 M-request
stream, 6.9-7.3 s of system time against 2.8-3.1; docs/timing.md: the timing model's per-READ
times).

:func:`empty` maps a large array's memory afresh (an anonymous ``mmap``: a mapping of its own
that nothing has advised), so it lands on small pages whatever the allocator did before. (Memory
from ``malloc``, numba's included, is not enough: a region numpy advised and freed keeps the
advice, and the next allocation there inherits it.) Use it for a large array written once,
front to back, soon after it is made (a stream read from Parquet, a record of disk reads). An
array made and freed again and again can do better on numpy's huge pages once the heap keeps
them (``bound.py``).
"""

from __future__ import annotations

import mmap

import numpy as np

#: From one huge page's size on, an array gets a mapping of its own. (numpy advises arrays
#: of 4 MiB or more, but a smaller one may land in a region an earlier one advised.)
OWN_MAPPING_BYTES = 2 << 20


def empty(n: int, dtype: "np.dtype | type") -> np.ndarray:
    """``np.empty(n, dtype)`` on small pages: a fresh anonymous mapping for 2 MiB or more
    (zero-filled by the kernel as it is touched), released with the last array that uses it."""
    dt = np.dtype(dtype)
    nbytes = int(n) * dt.itemsize
    if nbytes < OWN_MAPPING_BYTES:
        return np.empty(n, dt)
    return np.frombuffer(mmap.mmap(-1, nbytes), dt, count=int(n))

