"""Parameter sweeps: the cartesian grid of a TOML file, one summary row per configuration.

Grid file (``docs/scaling.md``)::

    detector = ["freebsd4", "slowdown", "cursor"]      # detector specs
    table    = ["freebsd4", "ellard", "ideal"]          # table specs
    policy   = ["auto"]                                 # read-ahead policies
    cache    = ["64MiB", "256MiB"]                      # buffer-cache sizes
    profile  = ["ide-7200"]                             # disk profiles (names or files)
    timing   = ["disk-only", "closed-loop:preset=paper-testbed"]   # timing models

    [detector_params.slowdown]      # adds slowdown:window=16384, slowdown:window=262144
    window = [16384, 262144]

    [nfsheur]                       # adds nfsheur:256x4, nfsheur:256x32, ...
    size = [256, 4096]
    probes = [4, 32]

Every axis is optional; the defaults are :class:`seqheur.config.ReplayConfig`'s (freebsd4,
freebsd4, auto = each detector's default policy, 256MiB, ide-7200, disk-only), so a sweep over
every registered detector with default options works. A timing model other than
``disk-only`` adds its end-to-end columns to the rows (docs/timing.md); a ``disk-only`` row's
``config_id`` is the same as before timing was an axis, so older outputs resume.
Configurations that differ only in their disk profile are one task: one replay priced by
each profile (:func:`share_groups`; the disk never feeds back into the replay, and a timing
model runs after it). Tables that make the same slots fresh on the trace (a pass of each table
alone first, ``detect.table_pass``) are one replay too, its rows given each table's own spec
and counters. Rows are bit-identical to one replay each. On worker processes or Dask the
tasks start longest first, by a short probe replay of each (:func:`probe_cost`).
Rows are identical whatever the executor (serial, local processes, Dask): they are ordered by
configuration, never by completion, and carry no wall-clock times. Re-running with the same output
skips configurations already there (failed ones are retried).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import time
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

from .config import DEFAULT
from .errors import SeqheurError
from .executors import ExecutorSpec, guarded, open_pool

AXES = ("detector", "table", "policy", "cache", "profile", "timing")
DEFAULTS = {a: getattr(DEFAULT, a) for a in AXES}  # seqheur.config.ReplayConfig
CHECKPOINT_SECONDS = 10.0


@dataclass(frozen=True)
class Config:
    detector: str
    table: str
    policy: str
    cache: str
    profile: str
    timing: str = DEFAULTS["timing"]

    def as_dict(self) -> dict[str, str]:
        return {a: getattr(self, a) for a in AXES}

    @property
    def config_id(self) -> str:
        key = self.as_dict()
        if key["timing"] == DEFAULTS["timing"]:  # the id a row had before timing was an axis
            del key["timing"]
        return hashlib.sha1(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def load_grid(path: str | os.PathLike[str]) -> list[Config]:
    """Configurations of a grid TOML file, in a stable order."""
    try:
        doc = tomllib.loads(Path(path).read_text())
    except tomllib.TOMLDecodeError as exc:
        raise SeqheurError(f"{path}: not valid TOML ({exc})") from exc
    except OSError as exc:
        raise SeqheurError(f"{path}: {exc.strerror}") from exc
    return grid_from_dict(doc, source=str(path))


def grid_from_dict(doc: dict[str, Any], source: str = "grid") -> list[Config]:
    known = set(AXES) | {"detector_params", "nfsheur"}
    unknown = sorted(set(doc) - known)
    if unknown:
        raise SeqheurError(f"{source}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    axes: dict[str, list[str]] = {}
    for a in AXES:
        v = doc.get(a)
        if v is None:
            axes[a] = []
        elif isinstance(v, (str, int, float)):
            axes[a] = [str(v)]
        elif isinstance(v, list) and v:
            axes[a] = [str(x) for x in v]
        else:
            raise SeqheurError(f"{source}: {a} must be a non-empty list of strings")
    for name, params in (doc.get("detector_params") or {}).items():
        if not isinstance(params, dict) or not params:
            raise SeqheurError(f"{source}: [detector_params.{name}] must map parameters to lists")
        keys = sorted(params)
        values = [params[k] if isinstance(params[k], list) else [params[k]] for k in keys]
        for combo in itertools.product(*values):
            axes["detector"].append(f"{name}:" + ",".join(f"{k}={v}" for k, v in zip(keys, combo)))
    if "nfsheur" in doc:
        nf = doc["nfsheur"]
        sizes, probes = nf.get("size"), nf.get("probes")
        if not sizes or not probes:
            raise SeqheurError(f"{source}: [nfsheur] needs size = [...] and probes = [...]")
        extra = "".join(f":{k}={nf[k]}" for k in ("hash", "seed") if k in nf)
        for s, p in itertools.product(sizes, probes):
            axes["table"].append(f"nfsheur:{s}x{p}{extra}")
    for a in AXES:
        if not axes[a]:
            axes[a] = [DEFAULTS[a]]
        axes[a] = list(dict.fromkeys(axes[a]))  # de-duplicate, keep order
    _check_timing(axes["timing"], source)
    return [Config(*combo) for combo in itertools.product(*(axes[a] for a in AXES))]


def _check_timing(specs: list[str], source: str) -> None:
    """A bad timing spec fails when the grid is read, not once per configuration."""
    from .errors import SpecError
    from .timing import parse_timing

    for spec in specs:
        try:
            parse_timing(spec)
        except SpecError as exc:
            raise SeqheurError(f"{source}: {exc}") from exc


@lru_cache(maxsize=4)
def _load_stream(path: str, mtime_ns: int, size: int):
    """A worker's copy of the trace's ReadStream, read once per process from shared storage."""
    from .streams import read_stream

    return read_stream(path, provenance=False)  # a replay needs no row provenance


def load_stream(path: str):
    st = os.stat(path)
    return _load_stream(str(path), st.st_mtime_ns, st.st_size)


def trace_file_sizes(path: str) -> tuple[Any, str]:
    """The file sizes ``seqheur replay TRACE`` uses for the trace at ``path`` (its reply
    attributes, else what its READs reach: ``replay.file_sizes_for`` "auto") and where they
    came from; read once per process."""
    st = os.stat(path)
    return _trace_file_sizes(str(path), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=4)
def _trace_file_sizes(path: str, mtime_ns: int, size: int) -> tuple[Any, str]:
    import warnings

    from .replay import file_sizes_for

    with warnings.catch_warnings():  # no attributes: the replay CLI warns, a row says so
        warnings.simplefilter("ignore", UserWarning)
        return file_sizes_for(path, load_stream(path), "auto")


def run_config(trace: str, config: dict[str, str]) -> dict[str, Any]:
    """Replay one configuration on the trace at ``trace``; the summary row as a dict. The file
    sizes are the ones ``seqheur replay TRACE`` uses (reply attributes), so a row reproduces
    with the replay command."""
    from .replay import replay

    stream = load_stream(trace)
    sizes, source = trace_file_sizes(trace)
    result = replay(stream, **config, per_request=False,  # a sweep keeps summary rows only
                    file_sizes=sizes)
    row = result.summary.to_dicts()[0]
    row["file_sizes"] = source  # "attributes" or "observed", as replay's own summary says
    return row


_SHARED_AXES = ("detector", "policy", "cache", "timing")  # one replay for all profiles, and
# for all tables with the same fresh requests
_TABLE_COLUMNS = {"table": "table", "table_fresh": "fresh", "table_ejections": "ejections",
                  "table_cold": "cold"}  # summary column -> TablePass field


def table_pass(trace: str, table: str) -> dict[str, Any]:
    """``detect.table_pass`` of the trace at ``trace``, as a dict (a task's result)."""
    import dataclasses

    from .detect import table_pass as run

    return dataclasses.asdict(run(load_stream(trace), table))


def run_configs(trace: str, configs: list[dict[str, str]],
                passes: dict[str, dict[str, Any]] | None = None) -> list[tuple[str, Any]]:
    """Configurations that differ only in their disk profile and, among tables with the same
    fresh requests (``passes``: :func:`table_pass` of each table), in their table, from one
    replay with the first one's table priced by each profile (``replay.replay_profiles``):
    one outcome per configuration, ``("ok", row)`` with the row :func:`run_config` gives, or
    ``("error", message)``. A row of another table than the replay's gets that table's spec
    and counters from its pass (``detect.TablePass``); the replay's own counters are checked
    against its table's pass first. If the shared replay fails, each configuration runs on
    its own, so a failure (a bad profile name) stays that configuration's, with the message
    it has alone."""
    if len(configs) == 1:
        return [guarded(run_config, (trace, configs[0]))]
    from .replay import replay_profiles

    first = configs[0]
    try:
        stream = load_stream(trace)
        sizes, source = trace_file_sizes(trace)
        profiles = list(dict.fromkeys(c["profile"] for c in configs))
        results = replay_profiles(stream, profiles, **{a: first[a] for a in (*_SHARED_AXES, "table")},
                                  file_sizes=sizes)
        rows = {p: r.summary.to_dicts()[0] for p, r in zip(profiles, results)}
        if any(c["table"] != first["table"] for c in configs):
            own = (passes or {})[first["table"]]
            for row in rows.values():
                if any(row[col] != own[key] for col, key in _TABLE_COLUMNS.items()):
                    raise SeqheurError(f"table {first['table']}: the replay's table counters "
                                       "differ from its table pass")
    except Exception:  # noqa: BLE001 - each configuration's own outcome, below
        return [guarded(run_config, (trace, c)) for c in configs]
    outcomes: list[tuple[str, Any]] = []
    for c in configs:
        row = dict(rows[c["profile"]])
        row["file_sizes"] = source  # as run_config's rows
        if c["table"] != first["table"]:
            row.update({col: passes[c["table"]][key] for col, key in _TABLE_COLUMNS.items()})
        outcomes.append(("ok", row))
    return outcomes


#: Requests of the trace's start a task is replayed over to estimate its cost (the first
#: half loads the task's kernels, the second half is timed), and at most this share of the
#: trace: the probes cost at most 1/64 of the replays they order.
PROBE_REQUESTS = 1 << 18
PROBE_SHARE = 64


def probe_cost(trace: str, configs: list[dict[str, str]]) -> float:
    """CPU seconds of the replay :func:`run_configs` makes for ``configs``, over the second
    half of the trace's first :data:`PROBE_REQUESTS` requests (at most 1/:data:`PROBE_SHARE`
    of the trace): an estimate of the task's cost, by which :func:`sweep` starts the
    longest tasks first. The first half loads the kernels and warms the cache, which the
    whole replay pays once. No timing model runs; the summary is discarded."""
    from .replay import Replayer

    stream = load_stream(trace)
    sizes, _ = trace_file_sizes(trace)
    first = configs[0]
    n = min(len(stream) // PROBE_SHARE, PROBE_REQUESTS)
    rp = Replayer(stream.file_ids, **{a: first[a] for a in (*_SHARED_AXES, "table")},
                  profiles=list(dict.fromkeys(c["profile"] for c in configs)),
                  file_sizes=sizes, per_request=False)
    rp.feed(stream.slice(0, n // 2))
    cpu = time.process_time()
    rp.feed(stream.slice(n // 2, n))
    return time.process_time() - cpu


def longest_first(costs: Sequence[float | None]) -> list[int]:
    """Task indices in the order to submit them: by estimated cost, longest first (a task
    whose estimate failed first of all, so its error is not the last thing a sweep waits
    for; ties in grid order). With as many workers as tasks this changes nothing; with
    fewer, the tasks left at the end are the short ones, so no worker waits long for the
    last (on the month's 32 replays a freebsd or linux-6 replay costs 2-3x another)."""
    return sorted(range(len(costs)),
                  key=lambda i: (costs[i] is not None, -(costs[i] or 0.0), i))


def share_groups(configs: Sequence[Config], table_class: dict[str, str] | None = None
                 ) -> list[list[int]]:
    """Indices of the configurations one task replays together, in order of first
    appearance: those equal but for ``profile`` and, among tables of the same class in
    ``table_class`` (table spec -> ``TablePass.fresh_digest``; a table without one is a
    class of its own), ``table``. The disk model never feeds back into the cache or the
    detector, and a timing model runs after the replay over its reads, so one replay's disk
    reads serve every profile; a detector sees its table only through the fresh flags."""
    table_class = table_class or {}
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, c in enumerate(configs):
        key = (*(getattr(c, a) for a in _SHARED_AXES),
               table_class.get(c.table, "spec " + c.table))
        groups.setdefault(key, []).append(i)
    return list(groups.values())


def tables_to_pass(configs: Sequence[Config]) -> list[str]:
    """Tables worth a pass: those of configurations that differ from another only in the
    table (and the profile), in order of first appearance."""
    tables: dict[tuple[str, ...], list[str]] = {}
    for c in configs:
        tables.setdefault(tuple(getattr(c, a) for a in _SHARED_AXES), []).append(c.table)
    return list(dict.fromkeys(t for ts in tables.values() if len(set(ts)) > 1 for t in ts))


def sweep(trace: str | os.PathLike[str], configs: Sequence[Config], output: str | os.PathLike[str] | None = None,
          executor: ExecutorSpec = ExecutorSpec(), resume: bool = True, share: bool = True):
    """Run every configuration; return a polars DataFrame (one row per configuration).

    With ``output``, rows are checkpointed there (atomically) as they complete, and rows of a
    previous run already in it are kept and not recomputed. ``share``: configurations that
    differ only in their disk profile, or in tables that make the same slots fresh on this
    trace, are one task and one replay (:func:`share_groups`, after a pass of each such table
    alone; rows identical to ``share=False``, one replay per configuration).
    """
    import polars as pl

    from .io import write_parquet
    from .progress import progress

    trace = str(Path(trace).resolve())
    if not Path(trace).exists():
        raise SeqheurError(f"{trace}: no such trace")
    done: dict[str, dict[str, Any]] = {}
    if output is not None and resume and Path(output).exists():
        prev = pl.read_parquet(output)
        for row in prev.to_dicts():
            if row.get("error") is None:
                done[row["config_id"]] = row
    todo = [c for c in configs if c.config_id not in done]
    rows: dict[str, dict[str, Any]] = dict(done)
    last = time.monotonic()

    def frame() -> pl.DataFrame:
        ordered = [rows[c.config_id] for c in configs if c.config_id in rows]
        return _frame(ordered)

    with open_pool(executor) as run, \
            progress(f"sweep ({executor.describe()})", total=len(todo)) as bar:
        passes: dict[str, dict[str, Any]] = {}
        if share:  # the tables' passes first, on the same workers (each reads the trace once)
            tables = tables_to_pass(todo)
            for t, (status, value) in run(table_pass, [(trace, t) for t in tables]):
                if status == "ok":  # else a class of its own: its replay reports the error
                    passes[tables[t]] = value
        groups = (share_groups(todo, {t: p["fresh_digest"] for t, p in passes.items()})
                  if share else [[i] for i in range(len(todo))])
        tasks = []
        for g in groups:
            members = [todo[i].as_dict() for i in g]
            tasks.append((trace, members, {c["table"]: passes[c["table"]] for c in members
                                           if c["table"] in passes}))
        if executor.kind != "serial" and len(tasks) > 1:  # the longest tasks first
            costs: list[float | None] = [None] * len(tasks)
            for k, (status, value) in run(probe_cost, [t[:2] for t in tasks]):
                if status == "ok":
                    costs[k] = value
            order = longest_first(costs)
            groups = [groups[k] for k in order]
            tasks = [tasks[k] for k in order]
        for g, task_outcome in run(run_configs, tasks):
            status, value = task_outcome
            # a task that failed as a whole (it should not: run_configs catches) fails each
            outcomes = value if status == "ok" else [task_outcome] * len(groups[g])
            for i, (status, value) in zip(groups[g], outcomes):
                c = todo[i]
                row = {"config_id": c.config_id, **c.as_dict()}
                if status == "ok":
                    row.update({k: v for k, v in value.items() if k not in AXES})
                    for a in AXES:  # the summary's canonical names, when they differ from the grid's
                        if a in value and str(value[a]) != row[a]:
                            row[f"{a}_name"] = value[a]
                    row["error"] = None
                else:
                    row["error"] = value
                rows[c.config_id] = row
                bar.advance()  # configurations, not tasks
            if output is not None and time.monotonic() - last > CHECKPOINT_SECONDS:
                write_parquet(frame(), output)
                last = time.monotonic()
    result = frame()
    if output is not None:
        write_parquet(result, output)
    return result


def _frame(rows: list[dict[str, Any]]):
    import polars as pl

    if not rows:
        return pl.DataFrame({"config_id": [], **{a: [] for a in AXES}, "error": []},
                            schema={"config_id": pl.Utf8, **{a: pl.Utf8 for a in AXES}, "error": pl.Utf8})
    keys: list[str] = []
    for r in rows:
        for k in r:
            if k not in keys:
                keys.append(k)
    if "error" in keys:
        keys.remove("error")
        keys.append("error")
    data = [{k: r.get(k) for k in keys} for r in rows]
    return pl.DataFrame(data, infer_schema_length=None).with_columns(pl.col("error").cast(pl.Utf8))
