"""CLI verbs, one module per capability. Adding a capability: write commands/NAME.py with a
``register(cli)`` function and add NAME to ``MODULES``."""

from __future__ import annotations

import importlib
import json
from typing import Any

import click

MODULES = [
    "disk",  # bench, bench plot, profiles
    "data",  # ingest, synth, stats
    "export",  # export --format nfsdump
    "detect",  # detectors, tables, detect
    "replay",  # replay
    "bound",  # bound (Belady, disk lower bound)
    "report",  # compare, reproduce, sweep
    "tune",  # tune (Optuna studies)
    "lab",  # lab list, lab run
    "kernel",  # kernel-check
]


def register_all(cli: click.Group) -> None:
    for name in MODULES:
        importlib.import_module(f".{name}", __name__).register(cli)


# set by a verb that has finished all its work (outputs renamed into place, report printed)
# and started no threads, processes or temporary files: see skip_teardown
TEARDOWN = {"skip": False}


def skip_teardown() -> None:
    """Let ``seqheur.cli.main`` end the process without the interpreter's teardown.

    Tearing down the modules a numba-based verb loaded (numba's typing and target registries,
    llvmlite, pyarrow) costs ~0.15 s of CPU, a fifth of a one-file ``seqheur ingest``. Only
    the command-line entry point acts on this; in-process callers (tests, CliRunner) do not."""
    TEARDOWN["skip"] = True


def echo_json(obj: Any) -> None:
    """Print a JSON object on stdout (numpy scalars converted)."""
    from ..io import _json_default

    click.echo(json.dumps(obj, indent=2, default=_json_default))
