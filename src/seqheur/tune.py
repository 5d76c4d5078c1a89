"""Tune: Optuna studies over the tunable parameters the registries declare.

The search space is not written per detector: every field a model declares with
``options.param(..., tune=...)`` (detectors, tables, policies; ``seqheur detectors --json``
lists each option's ``tune``) is a dimension, over its declared range and scale. A SPACE
string picks the models (docs/tuning.md)::

    SPACE := TERM (";" TERM)*
    TERM  := [KIND "="] ALT (("|" | ",") ALT)*       KIND: detector, table, policy
    ALT   := a spec of the option grammar (seqheur.options), where a value may be a range
             LO..HI (searched, overriding the declared range) or a value (fixed)

``slowdown|cursor`` (a bare term is the first kind, of detector, table, policy, that knows
every name), ``detector=slowdown:seqmax=127;table=nfsheur:probes=1..16``. A field is searched
unless the term fixes it (a value, the positional form, or an alias's preset: ``table=ellard``
is nfsheur:1017x32, fixed; ``table=nfsheur`` searches size and probes). A kind with several
alternatives is a categorical dimension of its own; a kind the SPACE does not name is
:class:`seqheur.config.ReplayConfig`'s default.

A trial is one replay (``sweep.run_config``: the same function, executors and trace loading as
``seqheur sweep``), scored on ``throughput`` (``throughput_mbps``, maximised) and ``waste``
(``prefetch_wasted / prefetched``, the share of read-ahead blocks never used, 0 when nothing
was read ahead; minimised). One objective: TPE; two: NSGA-II for the Pareto front. With
``max_waste`` the waste limit is an Optuna constraint (``Trial.set_constraint``: the samplers
prefer feasible trials) and the reported best is the best feasible trial. Trials that ask for a
configuration already replayed in the study reuse its result (``reused``): ``replays`` counts
the evaluations.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from . import options as O
from .config import DEFAULT
from .errors import SeqheurError, SpecError
from .executors import ExecutorSpec, open_pool
from .heuristics.registry import load_plugins
from .io import atomic_path, write_parquet
from .sweep import Config, run_config

KINDS = ("detector", "table", "policy")
ATTR = "seqheur"  # the user attribute holding what a trial recorded (one storage write)
# objective -> its direction: throughput_mbps, and waste (:func:`waste`)
OBJECTIVES = {"throughput": "maximize", "waste": "minimize"}
# How close the best is to the best any schedule could do: the first of these keys the bound
# result has (disk seconds), best first.
# the achievable best first (the clairvoyant read-ahead), then the floor no schedule beats
REFERENCES = ("oracle_disk_seconds", "lower_bound_disk_seconds")


def _optuna() -> Any:
    try:
        import optuna
    except ImportError:
        raise SeqheurError("seqheur tune needs Optuna: pip install 'seqheur[tune]'") from None
    return optuna


# --------------------------------------------------------------------------------------------
# the space


@dataclass(frozen=True)
class Dim:
    """One searched field: ``name`` is the Optuna parameter (``detector.slowdown.window_log2``:
    a ``pow2`` field is searched by its exponent)."""

    name: str
    field: str
    kind: str  # the option's kind
    lo: Any = None
    hi: Any = None
    scale: str = ""  # linear, log, pow2; "" for a categorical
    values: tuple = ()
    default: Any = None

    def suggest(self, trial: Any) -> Any:
        if self.values:
            return trial.suggest_categorical(self.name, list(self.values))
        if self.scale == "pow2":
            return 1 << trial.suggest_int(self.name, self.lo.bit_length() - 1,
                                          self.hi.bit_length() - 1)
        if self.kind == "float":
            return trial.suggest_float(self.name, self.lo, self.hi, log=self.scale == "log")
        return trial.suggest_int(self.name, self.lo, self.hi, log=self.scale == "log")

    def levels(self, k: int) -> list[Any]:
        """A grid's axis: the default for ``k`` = 1, else the middles of ``k`` equal cells
        of the range on its scale (the ends of a declared range are its extremes, rarely
        good settings: an ends-first grid of 2 levels is all corners)."""
        if k == 1:
            return [self.default]
        if self.values:
            return list(self.values)[:k]
        at = [(i + 0.5) / k for i in range(k)]
        if self.scale == "pow2":
            a, b = self.lo.bit_length() - 1, self.hi.bit_length() - 1
            return sorted({1 << round(a + (b - a) * x) for x in at})
        if self.scale == "log":
            pts = [math.exp(math.log(self.lo) + (math.log(self.hi) - math.log(self.lo)) * x)
                   for x in at]
        else:
            pts = [self.lo + (self.hi - self.lo) * x for x in at]
        return sorted({p if self.kind == "float" else int(round(p)) for p in pts})


@dataclass(frozen=True)
class Alternative:
    """One model of a kind: its registered name, the values the SPACE fixed and the searched
    dimensions. ``label`` is the alternative as written (``freebsd4``, ``nfsheur``)."""

    kind: str
    label: str
    model: str
    params: type | None  # None: policy auto
    fixed: tuple[tuple[str, Any], ...]
    dims: tuple[Dim, ...]

    def spec(self, values: dict[str, Any]) -> str:
        if self.params is None:
            return self.label
        return O.format_spec(self.model, self.params(**dict(self.fixed), **values))


@dataclass(frozen=True)
class Space:
    """The parsed SPACE: per kind, its alternatives."""

    text: str
    kinds: tuple[tuple[str, tuple[Alternative, ...]], ...]

    def dims(self) -> list[Dim]:
        out = []
        for kind, alts in self.kinds:
            if len(alts) > 1:
                out.append(Dim(kind, kind, "choice", values=tuple(a.label for a in alts)))
            for a in alts:
                out.extend(a.dims)
        return out

    def suggest(self, trial: Any) -> dict[str, str]:
        """The detector, table and policy specs of a trial."""
        config = {}
        for kind, alts in self.kinds:
            alt = alts[0]
            if len(alts) > 1:
                label = trial.suggest_categorical(kind, [a.label for a in alts])
                alt = next(a for a in alts if a.label == label)
            config[kind] = alt.spec({d.field: d.suggest(trial) for d in alt.dims})
        return config

    def grid(self, budget: int) -> list[dict[str, str]]:
        """A cartesian grid of at most ``budget`` configurations over the same dimensions:
        every combination of the kinds' alternatives gets an equal share; within it, the
        searched dimensions get one more level each in turn (one level: the default; more:
        :meth:`Dim.levels`) while the product fits."""
        import itertools

        combos = list(itertools.product(*(alts for _, alts in self.kinds)))
        share = max(budget // len(combos), 1)
        configs: list[dict[str, str]] = []
        for combo in combos:
            dims = [(a, d) for a in combo for d in a.dims]
            counts = [1] * len(dims)
            grown = True
            while grown:
                grown = False
                for i in range(len(dims)):
                    if math.prod(counts) // counts[i] * (counts[i] + 1) <= share:
                        counts[i] += 1
                        grown = True
            axes = [d.levels(k) for (_, d), k in zip(dims, counts)]
            for values in itertools.product(*axes):
                chosen: dict[int, dict[str, Any]] = {id(a): {} for a in combo}
                for (a, d), v in zip(dims, values):
                    chosen[id(a)][d.field] = v
                try:
                    configs.append({a.kind: a.spec(chosen[id(a)]) for a in combo})
                except (SpecError, ValueError):
                    continue  # a combination the model rejects (zfetch min > max)
        unique = list({json.dumps(c, sort_keys=True): c for c in configs}.values())
        return unique[:budget]


def _registries() -> dict[str, Any]:
    from .heuristics.registry import DETECTORS
    from .readahead import POLICIES
    from .tables import TABLES

    return {"detector": DETECTORS, "table": TABLES, "policy": POLICIES}


def _split_alternatives(text: str) -> list[str]:
    """``a|b`` and ``a,b`` (a ``,``-piece without ``=`` starts a new spec: the option
    grammar never has one)."""
    alts: list[str] = []
    for piece in text.split("|"):
        cur: list[str] = []
        for part in piece.split(","):
            if cur and "=" not in part.split(":")[0]:
                alts.append(",".join(cur))
                cur = []
            cur.append(part)
        alts.append(",".join(cur))
    return [a.strip() for a in alts if a.strip()]


def _alternative(kind: str, text: str, registry: Any) -> Alternative:
    head, parts = O.split_spec(text)
    if kind == "policy" and head == "auto":
        if parts:
            raise SpecError(f"policy 'auto' takes no options, not {text!r}")
        return Alternative(kind, "auto", "auto", None, (), ())
    entry, preset = registry.resolve(head)
    opts = {o.name: o for o in O.options(entry.params)}
    fixed: dict[str, Any] = O.values(preset) if preset is not None else {}
    ranges: dict[str, tuple[Any, Any]] = {}
    plain = []
    for part in parts:
        key, eq, val = part.partition("=")
        if eq and ".." in val:
            key = key.strip().lower()
            if key not in opts or opts[key].kind not in ("size", "count", "float"):
                numeric = [n for n, o in opts.items() if o.kind in ("size", "count", "float")]
                raise SpecError(f"{kind} {text!r}: a range needs a numeric option of "
                                f"{entry.name}, not {key!r}; numeric: "
                                f"{', '.join(numeric) or 'none'}")
            lo_text, _, hi_text = val.partition("..")
            try:
                lo, hi = opts[key].parse(lo_text), opts[key].parse(hi_text)
            except ValueError as exc:
                raise SpecError(f"{kind} {text!r}: {key}={val}: {exc}") from None
            if not lo <= hi:
                raise SpecError(f"{kind} {text!r}: {key}={val}: empty range")
            ranges[key] = (lo, hi)
        else:
            plain.append(part)
    if plain:
        given = O.parse_params(entry.params, plain, spec=text, kind=kind, name=entry.name,
                               base=fixed or None)
        pos = O.positional(entry.params)
        for i, part in enumerate(plain):
            key, eq, _ = part.partition("=")
            names = [key.strip().lower()] if eq else (list(pos) if i == 0 else [])
            for n in names:
                fixed[n] = getattr(given, n)
    dims = []
    for o in O.options(entry.params):
        if o.name in fixed:
            continue
        name = f"{kind}.{head}.{o.name}"
        if o.name in ranges:
            lo, hi = ranges[o.name]
            pow2 = o.kind == "size" and all(v > 0 and v & (v - 1) == 0 for v in (lo, hi))
            scale = "pow2" if pow2 else ("log" if lo > 0 and hi >= 16 * lo else "linear")
        elif o.tune and o.kind in ("bool", "choice"):
            dims.append(Dim(name, o.name, o.kind, values=tuple(o.tune), default=o.default))
            continue
        elif o.tune:
            lo, hi, scale = o.tune
        else:
            continue
        dims.append(Dim(name + ("_log2" if scale == "pow2" else ""), o.name, o.kind, lo, hi,
                        scale, default=min(max(o.default, lo), hi)))
    return Alternative(kind, head, entry.name, entry.params, tuple(fixed.items()), tuple(dims))


def parse_space(text: str) -> Space:
    """The :class:`Space` of a SPACE string (module docstring); SpecError naming the bad term
    and listing what is valid."""
    regs = _registries()
    if not isinstance(text, str) or not text.strip():
        raise SpecError(f"empty SPACE; give models of {', '.join(KINDS)}, e.g. "
                        f"'slowdown|cursor' or 'detector=slowdown;table=nfsheur'")
    kinds: dict[str, tuple[Alternative, ...]] = {}
    for term in (t.strip() for t in text.split(";")):
        if not term:
            continue
        m = re.match(r"\s*([A-Za-z_]+)\s*=(.*)$", term)  # KIND=...; a spec has ':' first
        kind = None
        if m:
            if m.group(1).lower() not in KINDS:
                raise SpecError(f"SPACE term {term!r}: unknown kind {m.group(1)!r}; valid: "
                                f"{', '.join(KINDS)}")
            kind, term = m.group(1).lower(), m.group(2)
        alts = _split_alternatives(term)
        if not alts:
            raise SpecError(f"SPACE term {term!r} names no model")
        if kind is None:
            heads = [O.split_spec(a)[0] for a in alts]
            kind = next((k for k in KINDS
                         if all(h in regs[k] or (k == "policy" and h == "auto") for h in heads)),
                        None)
            if kind is None:
                raise SpecError(f"SPACE term {term!r}: no kind knows {', '.join(heads)}; "
                                + "; ".join(f"{k}: {', '.join(regs[k].names() + list(regs[k].aliases()))}"
                                            for k in KINDS))
        if kind in kinds:
            raise SpecError(f"SPACE names {kind} twice; give its alternatives in one term "
                            f"({kind}=a|b)")
        built = tuple(_alternative(kind, a, regs[kind]) for a in alts)
        labels = [a.label for a in built]
        if len(set(labels)) != len(labels):
            raise SpecError(f"SPACE term {term!r}: a {kind} named twice")
        kinds[kind] = built
    if not kinds:
        raise SpecError(f"SPACE {text!r} names no model")
    for kind in KINDS:  # the defaults the SPACE does not search
        if kind not in kinds:
            kinds[kind] = (Alternative(kind, getattr(DEFAULT, kind), getattr(DEFAULT, kind),
                                       None, (), ()),)
    space = Space(text, tuple((k, kinds[k]) for k in KINDS))
    if not space.dims():
        raise SpecError(f"SPACE {text!r} searches nothing: every named model is fixed or has "
                        f"no tunable option (see `seqheur detectors --json`, option 'tune')")
    return space


# --------------------------------------------------------------------------------------------
# the study


def waste(row: dict[str, Any]) -> float:
    """Share of the read-ahead blocks never used (0 when nothing was read ahead)."""
    pre = row.get("prefetched") or 0
    return (row.get("prefetch_wasted") or 0) / pre if pre else 0.0


def _parse_objectives(objective: "str | Sequence[str]") -> tuple[str, ...]:
    names = ([p.strip().lower() for p in objective.split(",")] if isinstance(objective, str)
             else [str(p).strip().lower() for p in objective])
    bad = [n for n in names if n not in OBJECTIVES]
    if bad or "throughput" not in names or len(set(names)) != len(names):
        raise SpecError(f"objective {objective!r}: give 'throughput' (TPE) or "
                        f"'throughput,waste' (NSGA-II); objectives: {', '.join(OBJECTIVES)} "
                        f"(the best is the most throughput; limit waste with max_waste)")
    return tuple(names)


@dataclass(frozen=True)
class TuneResult:
    """What a tune run produced: the best feasible trial (``best``: its specs, values, the
    ``seqheur replay`` options), the study's trials (``replays``: complete trials that
    replayed; the others reused an earlier replay; ``failed``), importances, the bound
    comparison and the files."""

    best: dict[str, Any] | None
    trials: int
    new_trials: int
    replays: int
    failed: int
    pareto: list[dict[str, Any]]
    importances: dict[str, Any]
    bound: dict[str, Any]
    files: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _rec(t: Any) -> dict[str, Any]:
    """What a trial recorded (:data:`ATTR`): its specs, summary figures, waste, reused, error."""
    return t.user_attrs.get(ATTR, {})


def _config_id(config: dict[str, str]) -> str:
    """A sweep row's id for the same configuration (:attr:`seqheur.sweep.Config.config_id`)."""
    return Config(**config).config_id


def tune(trace: "str | os.PathLike[str]", space: "str | Space", *, trials: int,
         objective: "str | Sequence[str]" = "throughput", max_waste: float | None = None,
         output: "str | os.PathLike[str]", storage: str | None = None,
         study: str | None = None, cache: str = DEFAULT.cache,
         profile: str = DEFAULT.profile, executor: ExecutorSpec = ExecutorSpec(),
         batch: int | None = None, seed: int = 0, plugins: Sequence[str] = ()) -> TuneResult:
    """Run ``trials`` more trials of a study over ``space`` on the trace at ``trace`` (a
    request-table Parquet or dataset every worker can read) and write to ``output``:
    ``trials.parquet`` (every trial of the study), ``best.json``, ``pareto.png``.

    ``storage``: an Optuna storage URL (default ``sqlite:///OUTPUT/study.db``); a study of the
    same ``study`` name there is resumed (its space, objectives, limit, trace, cache and
    profile must be the same). ``batch``: trials asked at once and replayed in parallel
    (default: the executor's workers; 8 on a Dask scheduler). ``seed``: the sampler's seed
    (offset by the trials already in the study, so a resumed study does not repeat its random
    start). ``plugins``: plug-in modules or ``.py`` files registering models (as ``seqheur
    replay --plugin``), loaded here and in every worker before its replays."""
    optuna = _optuna()
    plugins = tuple(str(p) for p in plugins)
    if plugins:
        load_plugins(plugins)
    sp = space if isinstance(space, Space) else parse_space(space)
    objs = _parse_objectives(objective)
    if trials < 1:
        raise SeqheurError(f"trials must be >= 1, not {trials}")
    if max_waste is not None and not 0 <= max_waste <= 1:
        raise SeqheurError(f"max_waste is a fraction in [0, 1], not {max_waste}")
    if profile is None:
        raise SeqheurError("tune scores throughput: it needs a disk profile")
    trace = str(Path(trace).resolve())
    if not Path(trace).exists():
        raise SeqheurError(f"{trace}: no such trace")
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    storage = storage or f"sqlite:///{(out / 'study.db').resolve()}"
    name = study or f"seqheur-tune-{Path(trace).stem}"
    setup = {"space": sp.text, "objectives": list(objs), "max_waste": max_waste,
             "trace": trace, "cache": cache, "profile": profile}

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    store = _storage(optuna, storage)
    try:
        n_prior = len(optuna.load_study(study_name=name, storage=store).trials)
    except KeyError:  # no such study yet
        n_prior = 0
    # a scheduler's worker count is not known here: 8 trials at a time keep a small cluster busy
    size = batch or (executor.workers if executor.kind != "dask" else 8) or 1
    if len(objs) == 1:  # constant liar: the trials of a batch are not sampled alike
        sampler = optuna.samplers.TPESampler(seed=seed + n_prior, constant_liar=size > 1)
    else:
        sampler = optuna.samplers.NSGAIISampler(seed=seed + n_prior)
    st = optuna.create_study(study_name=name, storage=store, load_if_exists=True,
                             sampler=sampler, directions=[OBJECTIVES[o] for o in objs])
    old = st.user_attrs.get("setup")
    if old is None:
        st.set_user_attr("setup", setup)
    elif old != setup:
        diff = ", ".join(f"{k}: {old.get(k)!r} in the study, {v!r} now"
                         for k, v in setup.items() if old.get(k) != v)
        raise SeqheurError(f"study {name!r} in {storage} was run with other settings ({diff}); "
                           f"give another --study or --storage")
    # config id -> (values, record) of every configuration replayed in the study
    known = {_rec(t)["config_id"]: (t.values, _rec(t)) for t in st.trials
             if t.state == optuna.trial.TrialState.COMPLETE and "config_id" in _rec(t)}
    done = 0
    with open_pool(executor) as run:
        while done < trials:
            asked = _ask(st, optuna, sp, min(size, trials - done), cache, profile)
            done += len(asked)
            try:
                _run_batch(st, optuna, run, trace, plugins,
                           [a for a in asked if a[1] is not None], known, objs, max_waste)
            except BaseException:  # interrupted: no trial is left running in the study
                for t, _ in asked:
                    st.tell(t, state=optuna.trial.TrialState.FAIL, skip_if_finished=True)
                raise
    return _finish(st, optuna, sp, objs, max_waste, out, trace, cache, profile, trials, plugins)


def _ask(st: Any, optuna: Any, sp: Space, n: int, cache: str, profile: str
         ) -> list[tuple[Any, dict[str, str] | None]]:
    """``n`` new trials and their configurations (None: the model rejected the combination;
    the trial is already failed with the model's message)."""
    asked: list[tuple[Any, dict[str, str] | None]] = []
    for _ in range(n):
        trial = st.ask()
        try:
            config = sp.suggest(trial)
        except (SpecError, ValueError) as exc:  # zfetch min_distance > max_distance, ...
            trial.set_user_attr(ATTR, {"error": str(exc)})
            st.tell(trial, state=optuna.trial.TrialState.FAIL)
            asked.append((trial, None))
            continue
        config.update(cache=cache, profile=profile)
        asked.append((trial, config))
    return asked


def run_trial(trace: str, config: dict[str, str], plugins: tuple[str, ...]) -> dict[str, Any]:
    """One trial's replay, in whatever process runs it: the plug-ins first (a worker process
    does not inherit what its parent registered), then the replay of ``sweep.run_config``
    (with the file sizes ``seqheur replay TRACE`` uses, so that the best's replay options
    reproduce its throughput)."""
    if plugins:
        load_plugins(plugins)
    return run_config(trace, config)


def _run_batch(st: Any, optuna: Any, run: Any, trace: str, plugins: tuple[str, ...],
               asked: list[tuple[Any, Any]], known: dict[str, Any], objs: tuple[str, ...],
               max_waste: float | None) -> None:
    """Replay the batch's configurations not replayed before (each once), tell every trial
    its result; a configuration replayed before gives its result again (``reused``)."""
    todo: dict[str, dict[str, str]] = {}
    for _, c in asked:
        if _config_id(c) not in known:
            todo.setdefault(_config_id(c), c)
    ids = list(todo)
    fresh: dict[str, tuple[str, Any]] = {}
    for i, outcome in run(run_trial, [(trace, todo[k], plugins) for k in ids]):
        fresh[ids[i]] = outcome
    for t, c in asked:
        cid = _config_id(c)
        if cid in fresh:
            status, value = fresh.pop(cid)  # the first trial of the config takes the replay
            told = _record(st, optuna, t, c, status, value, objs, max_waste)
            if told is not None:
                known[cid] = told
        elif cid in known:
            values, rec = known[cid]
            t.set_user_attr(ATTR, dict(rec, reused=True))
            if max_waste is not None:
                t.set_constraint("waste", rec["waste"] - max_waste)
            st.tell(t, values)
        else:  # its replay failed for an earlier trial of this batch
            t.set_user_attr(ATTR, {**{k: c[k] for k in KINDS}, "config_id": cid,
                                   "reused": True, "error": "failed (see the batch's first "
                                                            "trial of this configuration)"})
            st.tell(t, state=optuna.trial.TrialState.FAIL)


def _storage(optuna: Any, url: str) -> Any:
    """The Optuna storage at ``url``; SQLite in WAL mode with ``synchronous=NORMAL``: Optuna
    commits several times per trial, and an fsync per commit made a trial's bookkeeping cost
    more than a small trace's replay. A crash of the process loses nothing committed; a power
    loss may lose the last commits."""
    if not url.startswith("sqlite:"):
        return url
    from sqlalchemy import event

    storage = optuna.storages.RDBStorage(url)

    def pragmas(conn: Any, _record: Any) -> None:
        cur = conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    event.listen(storage.engine, "connect", pragmas)
    storage.engine.dispose()  # connections opened before the listener reconnect with it
    return storage


def _record(st: Any, optuna: Any, trial: Any, config: dict[str, str], status: str,
            value: Any, objs: tuple[str, ...], max_waste: float | None) -> Any:
    """Tell the study a trial's outcome (``(values, record)`` if complete, else None): its
    scores, what it replayed (one
    user attribute, :data:`ATTR`: a storage write each) and (``max_waste``) its constraint,
    waste - max_waste (feasible when <= 0: ``Trial.set_constraint``)."""
    rec: dict[str, Any] = {k: config[k] for k in KINDS}
    rec.update(config_id=_config_id(config), reused=False)
    tp = value.get("throughput_mbps") if status == "ok" else None
    if status != "ok" or tp is None or not math.isfinite(tp):
        rec["error"] = str(value) if status != "ok" else "no throughput (no disk time)"
        trial.set_user_attr(ATTR, rec)
        st.tell(trial, state=optuna.trial.TrialState.FAIL)
        return None
    w = waste(value)
    for k in KINDS:  # the summary's canonical specs
        rec[f"{k}_canonical"] = value.get(k)
    for k in ("throughput_mbps", "disk_seconds", "prefetched", "prefetch_wasted", "misses",
              "block_size", "demand_bytes", "hit_ratio"):
        rec[k] = value.get(k)
    rec["waste"] = w
    trial.set_user_attr(ATTR, rec)
    if max_waste is not None:
        trial.set_constraint("waste", w - max_waste)
    scores = {"throughput": tp, "waste": w}
    values = [scores[o] for o in objs]
    st.tell(trial, values)
    return values, rec


def _feasible(t: Any, max_waste: float | None) -> bool:
    return max_waste is None or _rec(t).get("waste", 1.0) <= max_waste


def _replay_options(t: Any, cache: str, profile: str, plugins: tuple[str, ...]) -> str:
    """The ``seqheur replay`` options of a trial's configuration."""
    return " ".join([*(f"--plugin {p}" for p in plugins), *(f"--{k} {_rec(t)[k]}" for k in KINDS),
                     f"--cache {cache}", f"--profile {profile}"])


def _finish(st: Any, optuna: Any, sp: Space, objs: tuple[str, ...], max_waste: float | None,
            out: Path, trace: str, cache: str, profile: str, new: int,
            plugins: tuple[str, ...]) -> TuneResult:
    complete = [t for t in st.trials if t.state == optuna.trial.TrialState.COMPLETE]
    feasible = [t for t in complete if _feasible(t, max_waste)]
    best_t = max(feasible, key=lambda t: (_rec(t)["throughput_mbps"], -t.number),
                 default=None)
    pareto = _pareto(feasible)
    best = None
    if best_t is not None:
        best = {"trial": best_t.number, **{k: _rec(best_t)[k] for k in KINDS},
                "cache": cache, "profile": profile,
                "throughput_mbps": _rec(best_t)["throughput_mbps"],
                "waste": _rec(best_t)["waste"],
                "disk_seconds": _rec(best_t)["disk_seconds"],
                "replay_options": _replay_options(best_t, cache, profile, plugins)}
    importances = _importances(st, optuna, objs)
    bound = _against_bound(trace, cache, profile, best_t)
    files = {"trials": str(out / "trials.parquet"), "best": str(out / "best.json"),
             "pareto": str(out / "pareto.png")}
    write_parquet(trials_frame(st, optuna), files["trials"])
    _plot(complete, pareto, max_waste, best_t, files["pareto"])
    res = TuneResult(best=best, trials=len(st.trials), new_trials=new,
                     replays=sum(1 for t in complete if not _rec(t).get("reused")),
                     failed=sum(1 for t in st.trials if t.state == optuna.trial.TrialState.FAIL),
                     pareto=[{"trial": t.number, "throughput_mbps": _rec(t)["throughput_mbps"],
                              "waste": _rec(t)["waste"],
                              **{k: _rec(t)[k] for k in KINDS}} for t in pareto],
                     importances=importances, bound=bound, files=files)
    doc = {"study": st.study_name, "space": sp.text, "objectives": list(objs),
           "max_waste": max_waste, **res.to_dict()}
    with atomic_path(files["best"]) as tmp:
        Path(tmp).write_text(json.dumps(doc, indent=2, default=str))
    return res


def _pareto(trials: list[Any]) -> list[Any]:
    """Trials no other beats on both throughput (higher) and waste (lower), by throughput."""
    front = []
    for t in trials:
        tp, w = _rec(t)["throughput_mbps"], _rec(t)["waste"]
        if not any(_rec(u)["throughput_mbps"] >= tp and _rec(u)["waste"] <= w
                   and (_rec(u)["throughput_mbps"] > tp or _rec(u)["waste"] < w)
                   for u in trials):
            front.append(t)
    return sorted(front, key=lambda t: _rec(t)["throughput_mbps"])


def _importances(st: Any, optuna: Any, objs: tuple[str, ...]) -> dict[str, Any]:
    """Parameter -> importance per objective (``optuna.importance.get_param_importances``
    with its default evaluator, PED-ANOVA in Optuna 5; a conditional parameter counts over the
    trials that searched it); an objective whose importances cannot be computed (too few
    trials) has the reason instead."""
    import warnings

    out: dict[str, Any] = {}
    for i, o in enumerate(objs):
        try:
            with warnings.catch_warnings():  # "few trials in a regime": too small a study
                warnings.simplefilter("ignore", UserWarning)
                imp = optuna.importance.get_param_importances(
                    st, target=(lambda t, i=i: t.values[i]) if len(objs) > 1 else None)
            out[o] = {k: float(v) for k, v in imp.items()}
        except (RuntimeError, ValueError, ZeroDivisionError) as exc:
            out[o] = {"error": str(exc)}
    return out


def _against_bound(trace: str, cache: str, profile: str, best_t: Any) -> dict[str, Any]:
    """The best against the best any schedule could do (:mod:`seqheur.bound`): the first of
    :data:`REFERENCES` the bound gives, as disk seconds and throughput, and the best's share
    of that throughput."""
    if best_t is None:
        return {}
    from .bound import bound

    r = bound(trace, cache=cache, profile=profile, block_size=_rec(best_t)["block_size"],
              references=False)
    ref = next((k for k in REFERENCES if r.get(k)), None)
    if ref is None:
        return {"reference": None}
    demand = _rec(best_t)["demand_bytes"] / 1e6
    secs = float(r[ref])
    ref_tp = demand / secs
    low = r.get("lower_bound_disk_seconds")
    return {"reference": ref, "disk_seconds": secs, "throughput_mbps": ref_tp,
            "best_fraction": _rec(best_t)["throughput_mbps"] / ref_tp,
            "lower_bound_throughput_mbps": demand / low if low else None,
            "block_size": r["block_size"]}


def trials_frame(st: Any, optuna: Any) -> Any:
    """Every trial of a study as a polars DataFrame: number, state, values, the searched
    parameters (``param.NAME``, null where a trial did not search it) and what the trial
    recorded (specs, throughput, waste, reused, error)."""
    import polars as pl

    rows = []
    for t in st.trials:
        row: dict[str, Any] = {"number": t.number, "state": t.state.name,
                               "duration_s": t.duration.total_seconds() if t.duration else None}
        for i, v in enumerate(t.values or []):
            row[f"value_{i}"] = float(v)
        for k, v in t.params.items():
            row[f"param.{k}"] = v  # one type per parameter: its distribution's
        row.update(_rec(t))
        rows.append(row)
    keys: list[str] = []
    for r in rows:
        keys.extend(k for k in r if k not in keys)
    return pl.DataFrame([{k: r.get(k) for k in keys} for r in rows], infer_schema_length=None)


def _plot(complete: list[Any], pareto: list[Any], max_waste: float | None, best_t: Any,
          path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    w = [_rec(t)["waste"] for t in complete]
    tp = [_rec(t)["throughput_mbps"] for t in complete]
    ax.scatter(w, tp, s=14, color="0.6", label="trials")
    if pareto:
        ax.plot([_rec(t)["waste"] for t in pareto],
                [_rec(t)["throughput_mbps"] for t in pareto], "o-", color="C0", ms=5,
                label="Pareto front (feasible)")
    if max_waste is not None:
        ax.axvline(max_waste, color="C3", ls="--", lw=1, label=f"max waste {max_waste:g}")
    if best_t is not None:
        ax.plot([_rec(best_t)["waste"]], [_rec(best_t)["throughput_mbps"]], "*",
                color="C1", ms=14, label="best")
    ax.set_xlabel("waste (read-ahead blocks never used / read ahead)")
    ax.set_ylabel("throughput [MB/s, 10^6 B/s]")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)


from ._callable import callable_module  # noqa: E402

callable_module(__name__, tune)
