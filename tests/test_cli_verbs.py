"""The command line loads a verb's module only when that verb is asked for, and still behaves
as if every verb were loaded: --help lists them all, a mistyped verb gets click's error."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner

import seqheur.commands
from seqheur.cli import cli
from seqheur.commands import VERBS

PKG = Path(seqheur.commands.__file__).resolve().parent


def _eager_group() -> click.Group:
    """The same verbs, all registered up front (what the lazy group must look like)."""
    group = click.Group("seqheur", params=cli.params, help=cli.help,
                        context_settings=cli.context_settings)
    for module in sorted(set(VERBS.values())):
        importlib.import_module(f"seqheur.commands.{module}").register(group)
    return group


def test_verbs_table_names_every_verb_of_every_module() -> None:
    modules = {p.stem for p in PKG.glob("*.py") if p.stem != "__init__"}
    assert set(VERBS.values()) == modules
    for module in modules:
        group = click.Group()
        importlib.import_module(f"seqheur.commands.{module}").register(group)
        assert group.commands, module
        assert {VERBS.get(name) for name in group.commands} == {module}, module
    assert set(_eager_group().commands) == set(VERBS)


def test_a_verb_imports_only_its_own_module() -> None:
    code = ("import sys, click; from seqheur.cli import cli; "
            "cmd = cli.get_command(click.Context(cli), 'ingest'); "
            "print(cmd.name, sorted(m for m in sys.modules if m.startswith('seqheur.commands.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["ingest", "['seqheur.commands.data']"]


def test_help_lists_every_verb_with_its_short_help() -> None:
    lazy = CliRunner().invoke(cli, ["--help"], prog_name="seqheur")
    eager = CliRunner().invoke(_eager_group(), ["--help"], prog_name="seqheur")
    assert lazy.exit_code == 0 and lazy.output == eager.output
    listing = lazy.output.split("Commands:")[1]
    for name in VERBS:
        assert f"\n  {name} " in listing, name


def test_unknown_verb_gets_clicks_error_with_a_suggestion() -> None:
    # (a fresh process: here, earlier tests may have loaded every verb already)
    for args, verb in ((["ingset", "x.pcap"], "ingset"), (["no-such-verb"], "no-such-verb"),
                       (["--strict", "replya"], "replya")):
        lazy = subprocess.run([sys.executable, "-m", "seqheur", *args], capture_output=True,
                              text=True)
        eager = CliRunner().invoke(_eager_group(), args, prog_name="seqheur")
        assert lazy.returncode == eager.exit_code == 2, args
        assert lazy.stderr == eager.stderr and not lazy.stdout, args
        assert f"No such command '{verb}'" in lazy.stderr
