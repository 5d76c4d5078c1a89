"""Run many independent tasks serially, on local processes, or on a Dask cluster.

Nothing here is home-made distribution: the local executor is the standard library's process
pool; the distributed one is ``dask.distributed`` (a ``LocalCluster`` or any scheduler address).
Tasks are plain top-level functions with picklable arguments; results come back as
``(index, outcome)`` in completion order, where an outcome is ``("ok", value)`` or
``("error", message)`` — a failing task never stops the others.
"""

from __future__ import annotations

import itertools
import os
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

from .errors import SeqheurError

_BATCHES = itertools.count()


@dataclass(frozen=True)
class ExecutorSpec:
    """Where tasks run: ``kind`` is "serial", "processes" (``workers`` local processes),
    "dask-local" (a LocalCluster of ``workers`` single-threaded processes) or "dask"
    (an existing scheduler at ``address``)."""

    kind: str = "serial"
    workers: int = 1
    address: str | None = None

    def describe(self) -> str:
        if self.kind == "dask":
            return f"dask scheduler {self.address}"
        if self.kind == "serial":
            return "serial"
        return f"{self.kind} x{self.workers}"


def executor_from_options(workers: int | None = None, dask_local: int | None = None,
                          scheduler: str | None = None) -> ExecutorSpec:
    chosen = [x is not None for x in (workers, dask_local, scheduler)]
    if sum(chosen) > 1:
        raise SeqheurError("choose one of --workers, --dask-local, --scheduler")
    if scheduler:
        return ExecutorSpec("dask", 0, scheduler)
    if dask_local is not None:
        if dask_local < 1:
            raise SeqheurError("--dask-local needs at least 1 worker")
        return ExecutorSpec("dask-local", dask_local)
    if workers is not None and workers > 1:
        return ExecutorSpec("processes", workers)
    return ExecutorSpec("serial", 1)


def guarded(fn: Callable[..., Any], args: tuple) -> tuple[str, Any]:
    """``fn(*args)`` as an outcome: ``("ok", value)``, or ``("error", message)`` if it raised."""
    try:
        return ("ok", fn(*args))
    except SeqheurError as exc:
        return ("error", str(exc))
    except Exception as exc:  # noqa: BLE001 - a task's failure is reported, not fatal
        tb = traceback.extract_tb(exc.__traceback__)
        where = f" at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno}" if tb else ""
        return ("error", f"{type(exc).__name__}: {exc}{where}")


def run_tasks(fn: Callable[..., Any], arg_list: Sequence[tuple], spec: ExecutorSpec
              ) -> Iterator[tuple[int, tuple[str, Any]]]:
    """Yield ``(i, outcome)`` for ``fn(*arg_list[i])`` as tasks complete."""
    with open_pool(spec) as run:
        yield from run(fn, arg_list)


@contextmanager
def open_pool(spec: ExecutorSpec) -> Iterator[Callable[[Callable[..., Any], Sequence[tuple]],
                                                       Iterator[tuple[int, tuple[str, Any]]]]]:
    """A ``run(fn, arg_list)`` like :func:`run_tasks` whose processes or Dask cluster last
    for the ``with`` block, for callers that submit batch after batch (``seqheur tune``)."""
    if spec.kind == "serial":
        yield lambda fn, arg_list: ((i, guarded(fn, args)) for i, args in enumerate(arg_list))
        return
    if spec.kind == "processes":
        # Not fork: polars' and numba's thread pools do not survive a fork of a process that
        # used them (children deadlock). A forkserver forks from a clean single-threaded
        # process; workers load numba kernels from the on-disk cache.
        import multiprocessing as mp

        ctx = mp.get_context("forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn")
        with ProcessPoolExecutor(max_workers=spec.workers, mp_context=ctx) as pool:
            def run(fn, arg_list):
                futures = {pool.submit(guarded, fn, args): i for i, args in enumerate(arg_list)}
                for fut in as_completed(futures):
                    yield futures[fut], fut.result()

            yield run
        return
    if spec.kind in ("dask-local", "dask"):
        with _dask_client(spec) as client:
            yield lambda fn, arg_list: _run_dask(client, fn, arg_list)
        return
    raise SeqheurError(f"unknown executor kind {spec.kind!r}")


@contextmanager
def _dask_client(spec: ExecutorSpec):
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:
        raise SeqheurError("Dask is not installed: pip install 'seqheur[dask]'") from exc
    cluster = None
    if spec.kind == "dask-local":
        cluster = LocalCluster(n_workers=spec.workers, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=40)
        client = Client(cluster)
    else:
        client = Client(spec.address, timeout="30s")
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _run_dask(client, fn, arg_list):
    from distributed import as_completed as dask_completed

    batch = next(_BATCHES)  # task keys unique across the batches of one client
    futures = [client.submit(guarded, fn, args, pure=False,
                             key=f"seqheur-task-{os.getpid()}-{batch}-{i}")
               for i, args in enumerate(arg_list)]
    index = {f.key: i for i, f in enumerate(futures)}
    for fut in dask_completed(futures):
        yield index[fut.key], fut.result()
