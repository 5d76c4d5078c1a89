"""Every module imports on its own, in a fresh interpreter (no import-order dependencies, no
cycles such as cli <-> commands), and lower layers never import higher ones."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import seqheur

SRC = Path(seqheur.__file__).resolve().parent


def _modules() -> list[str]:
    names = ["seqheur"]
    for info in pkgutil.walk_packages([str(SRC)], prefix="seqheur."):
        names.append(info.name)
    return sorted(names)


def _import_alone(name: str) -> tuple[str, int, str]:
    # __main__ is the `python -m seqheur` entry point: it runs the CLI when imported
    cmd = ["-m", "seqheur", "--help"] if name == "seqheur.__main__" else ["-c", f"import {name}"]
    out = subprocess.run([sys.executable, *cmd], capture_output=True, text=True, timeout=300)
    lines = out.stderr.strip().splitlines()
    return name, out.returncode, lines[-1] if lines else ""


def test_every_module_imports_alone_in_a_fresh_interpreter() -> None:
    names = _modules()
    assert len(names) > 50
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(_import_alone, names))
    failed = [f"{name}: {err}" for name, rc, err in results if rc != 0]
    assert not failed, "\n".join(failed)


# Layers, lowest first: a module may import its own layer and the ones below, never above.
LAYERS = [
    ("base", ("errors", "options", "registry", "progress", "_callable", "_inlining", "_pages", "io",
              "schema", "executors", "loopdev")),
    ("ingest", ("ingest", "workloads")),
    ("streams", ("streams",)),
    ("models", ("heuristics", "tables", "cache", "readahead", "disk", "metrics", "timing")),
    ("engine", ("engine", "config", "detect", "replay", "outofcore", "export", "bound",
                "oracle")),
    ("report", ("report", "sweep", "tune", "lab", "demo", "kernelcheck")),
    ("front", ("commands", "cli", "__main__", "__init__")),
]


def _layer_of(module: str) -> int:
    part = module.split(".")[1] if "." in module else "__init__"
    for i, (_, names) in enumerate(LAYERS):
        if part in names:
            return i
    raise AssertionError(f"module {module} is in no layer of tests/test_imports.py")


def _is_module(name: str) -> bool:
    p = SRC.joinpath(*name.split(".")[1:])
    return p.is_dir() or p.with_suffix(".py").is_file()


def _imports(path: Path, module: str) -> set[str]:
    tree = ast.parse(path.read_text())
    pkg = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("seqheur.")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                if node.module is None:  # from . import x: x may be a submodule
                    found |= {f"{target}.{a.name}" for a in node.names
                              if _is_module(f"{target}.{a.name}")} or {target}
                else:
                    found.add(target)
            elif node.module and node.module.startswith("seqheur."):
                found.add(node.module)
    return {m for m in found if m != "seqheur"}


def test_lower_layers_never_import_higher_ones() -> None:
    bad = []
    for name in _modules():
        if name == "seqheur":
            continue
        rel = name.split(".")[1:]
        path = SRC.joinpath(*rel)
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        own = _layer_of(name)
        for dep in _imports(path, name):
            if _layer_of(dep) > own:
                bad.append(f"{name} ({LAYERS[own][0]}) imports {dep} ({LAYERS[_layer_of(dep)][0]})")
    assert not bad, "\n".join(sorted(bad))
