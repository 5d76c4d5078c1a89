from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared beside the project (test data and specs), or skip with the reason."""
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent: real test data lives beside the project, not in it")
    return SHARED


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT
