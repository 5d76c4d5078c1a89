"""CLI verbs, one module per capability. Adding a capability: write commands/NAME.py with a
``register(cli)`` function that adds its verbs, and name each verb in ``VERBS``."""

from __future__ import annotations

import json
from typing import Any

import click

# verb -> the module of this package that defines it. The command line imports a verb's module
# only when that verb is run (or when --help lists the verbs): importing all of them, with
# their options and help texts, is a measurable share of a short verb such as a one-file ingest.
VERBS = {
    "bench": "disk",  # bench, bench plot, bench check-model
    "profiles": "disk",
    "ingest": "data",
    "synth": "data",
    "stats": "data",
    "export": "export",  # export --format nfsdump
    "detectors": "detect",
    "tables": "detect",
    "policies": "detect",
    "detect": "detect",
    "replay": "replay",
    "bound": "bound",  # Belady, disk lower bound
    "compare": "report",
    "reproduce": "report",
    "sweep": "report",
    "tune": "tune",  # Optuna studies
    "lab": "lab",  # lab list, lab run
    "kernel-check": "kernel",
}


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
