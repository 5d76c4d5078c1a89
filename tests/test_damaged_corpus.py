"""The damaged-input corpus (tests/data/damaged/, made by its make_corpus.py from the bundled
demo trace): every file gets the answer expected.json states — exit code with and without
--strict, a message naming the file and the reason (for early stops: where, and how much was
left) — never a traceback or "Aborted!", and no record is lost silently: parsed + skipped by
reason = records read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent / "data" / "damaged"
EXPECTED = json.loads((HERE / "expected.json").read_text())["files"]


def _ingest(path: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "seqheur", "ingest", str(path), "-o", str(out),
                           *extra], capture_output=True, text=True, timeout=300)


# bytes that depend on library builds (a zlib's deflate stream, the Parquet writer's version
# string), so only the uncompressed, non-Parquet files are compared byte for byte
_BUILD_DEPENDENT = (".gz", ".parquet")


def test_the_corpus_is_what_the_script_makes(tmp_path):
    subprocess.run([sys.executable, str(HERE / "make_corpus.py"), str(tmp_path)], check=True,
                   capture_output=True, timeout=300)
    made = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert set(made) == set(EXPECTED)
    compared = 0
    for name, data in made.items():
        if name.endswith(_BUILD_DEPENDENT) and not name.startswith("a-pcap-named"):
            continue
        assert (HERE / name).read_bytes() == data, f"{name}: rerun make_corpus.py"
        compared += 1
    assert compared >= 10


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_damaged_file_gets_its_answer(name, tmp_path):
    want = EXPECTED[name]
    path = HERE / name
    r = _ingest(path, tmp_path / "t.parquet", "--json")
    text = r.stdout + r.stderr
    assert "Traceback" not in text and "Aborted" not in text, text[-2000:]
    assert r.returncode == want["rc"], text[-2000:]
    strict = _ingest(path, tmp_path / "s.parquet", "--strict")
    assert strict.returncode == want["strict_rc"], (strict.stdout + strict.stderr)[-2000:]
    assert "Traceback" not in strict.stderr
    human = _ingest(path, tmp_path / "h.parquet")
    shown = human.stdout + human.stderr
    assert want["message"] in shown, shown[-2000:]
    if r.returncode == 1:
        assert name in r.stderr  # the error names the file
        return
    rep = json.loads(r.stdout)
    assert rep["parsed"] + sum(rep["skipped"].values()) == rep["records_total"]
    if want.get("stopped"):
        assert rep["stopped"] and name in human.stderr
        assert "left unread" in human.stderr or "could not be read" in human.stderr
    else:
        assert not rep.get("stopped")


def test_the_docs_table_covers_every_corpus_file():
    docs = (Path(__file__).resolve().parents[1] / "docs" / "formats.md").read_text()
    section = docs.split("### Damaged input", 1)[1].split("\n## ", 1)[0]
    for name, want in EXPECTED.items():
        assert f"`{name}`" in section, name
