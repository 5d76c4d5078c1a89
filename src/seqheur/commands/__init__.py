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


def echo_json(obj: Any) -> None:
    """Print a JSON object on stdout (numpy scalars converted)."""
    from ..io import _json_default

    click.echo(json.dumps(obj, indent=2, default=_json_default))
