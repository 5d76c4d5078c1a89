"""A reader of the repository can open everything it points to: no references to documents
outside it (a design draft, a spec folder, shared notes) and no issue numbers, in src/,
tests/, docs/, bench/ and the README. Citations of the paper's sections (Ellard & Seltzer
2003 §6.2), RFCs and kernel sources are fine."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PATTERNS = [
    (re.compile(r"\bspec/[\w-]+\.md|\bspec §|\(spec §|DESIGN\.md|shared/spec"),
     "a document outside the repository"),
    (re.compile(r"\b[Ii]ssues? #?\d+\b|(?:\bin|\bsee|\bfixes|\bcloses|\()\s*#\d+\b"
                r"|the replay issue|capability issues"),
     "an issue number"),
]
# Lines allowed to name ../shared: tests that use its public captures skip when it is absent.
SKIP_LINE = re.compile(r"skip|SHARED\s*=|shared_dir|/ \"shared\"|\.\./shared\"?\)?$")


def _files():
    for base in ("src", "tests", "docs", "bench"):
        for p in (ROOT / base).rglob("*"):
            if (p.suffix in {".py", ".md", ".toml", ".json"} and "__pycache__" not in p.parts
                    and "work" not in p.relative_to(ROOT).parts[:2]):
                yield p
    yield ROOT / "README.md"


def test_no_references_outside_the_repository_or_to_issues() -> None:
    here = Path(__file__).resolve()
    bad = []
    for path in _files():
        if path.resolve() == here:
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for pattern, what in PATTERNS:
                if pattern.search(line) and not SKIP_LINE.search(line):
                    bad.append(f"{path.relative_to(ROOT)}:{n}: {what}: {line.strip()[:100]}")
    assert not bad, "\n".join(bad)


def test_the_check_catches_a_reference(tmp_path) -> None:
    # built from parts, so this file does not itself hold the references it checks for
    sample = ["see " + "spec/" + "heuristics.md §1.4", "as " + "DESIGN" + ".md says",
              "(" + "issue 4)", "fixed in " + "#12"]
    for line in sample:
        assert any(p.search(line) for p, _ in PATTERNS), line
    assert not any(p.search("Ellard & Seltzer 2003 §6.2") for p, _ in PATTERNS)
