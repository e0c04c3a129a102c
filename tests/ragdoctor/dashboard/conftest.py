"""The fixture runs every dashboard test reads (tests/ragdoctor/dashboard/runs.py makes them)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.ragdoctor.dashboard.runs import CHANGES_B, make_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("dashboard")
    return make_run(base / "run-a"), make_run(base / "run-b", CHANGES_B)
