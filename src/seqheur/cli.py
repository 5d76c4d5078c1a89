"""The ``seqheur`` command line. Every verb is a thin wrapper over the public API.

A verb's module (seqheur/commands/*.py) is imported only when the verb runs, and heavy
modules only inside the commands, so that every verb starts fast. User errors (SeqheurError)
print one line and exit 1, never a traceback.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from . import __version__
from .commands import VERBS
from .errors import SeqheurError


class _Group(click.Group):
    """The ``seqheur`` group: verbs load on demand (see ``commands.VERBS``), every error of a
    verb is one line."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(VERBS) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in VERBS:
            # (the module registers all its verbs, so each module is imported once)
            importlib.import_module(f".commands.{VERBS[cmd_name]}", __package__).register(self)
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        if click.utils.make_str(args[0]) not in VERBS:
            # an unknown verb: click's error suggests the closest of the loaded verbs, so load
            # them all (a mistyped verb costs the imports it saves a correct one)
            for name in VERBS:
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        import warnings

        from .errors import TraceLossWarning

        losses: list[str] = []
        show = warnings.showwarning

        def _show(message: Any, category: type, *args: Any, **kwargs: Any) -> None:
            if issubclass(category, TraceLossWarning):
                losses.append(str(message))
                click.echo(f"WARNING: {message}", err=True)
            else:
                show(message, category, *args, **kwargs)

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("always", TraceLossWarning)
                warnings.showwarning = _show
                result = super().invoke(ctx)
            if losses and ctx.params.get("strict"):
                click.echo("seqheur: error: --strict: the trace was read with losses (see the "
                           "WARNING above)", err=True)
                ctx.exit(1)
            return result
        except SeqheurError as exc:
            click.echo(f"seqheur: error: {exc}", err=True)
            ctx.exit(1)
        except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
            click.echo(f"seqheur: error: {exc.filename}: {exc.strerror}", err=True)
            ctx.exit(1)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="seqheur")
@click.option("--strict", is_flag=True, help="exit 1 when any trace a verb reads was read with "
              "losses (reading stopped early, records skipped for a reason that loses data); "
              "the losses are printed as WARNING lines either way")
def cli(strict: bool) -> None:
    """Evaluate NFS server read-ahead heuristics by replaying real traces.

    \b
    Example:
      seqheur synth paper --readers 32 --reorder 0.06 -o t.parquet
      seqheur stats t.parquet --json
    """


def main(argv: list[str] | None = None) -> None:
    import gc

    from .commands import TEARDOWN

    # the imports a verb makes (numba, llvmlite, pyarrow) create several hundred thousand
    # objects; at the default threshold (700) the collector walks them all again and again
    # (~0.08 s of a one-file ingest); cycles are still collected, just less often
    gc.set_threshold(100_000, 20, 20)
    TEARDOWN["skip"] = False  # (a verb run in-process before, by CliRunner, may have set it)
    try:
        cli.main(args=argv, prog_name="seqheur")
    except SystemExit as exc:
        if TEARDOWN["skip"]:
            import os

            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):  # a closed pipe: teardown would not do better
                    pass
            os._exit(code)
        raise


# Verbs live in seqheur/commands/*.py, one module per capability; each registers on `cli` when
# one of its verbs is first asked for (they do not import this module: every module imports on
# its own).
from .commands import echo_json  # noqa: E402,F401  (kept importable from here)

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
