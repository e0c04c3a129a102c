"""pytest plugin: assert on an evaluation run from your own test suite.

Fixture::

    def test_rag_quality(ragdoctor_gate):
        ragdoctor_gate("runs/nightly", min={"groundedness": 0.8}, max_unmeasured=0.05)

Marker (the test body runs after the gate passed)::

    @pytest.mark.ragdoctor_gate("runs/nightly", min={"context_precision": 0.6}, ci_lower=True)
    def test_retrieval(): ...

Thresholds not given fall back to ``[tool.ragdoctor.gate]`` in pyproject.toml. Registered through the
``pytest11`` entry point, so installing ragdoctor is enough."""
from __future__ import annotations

from pathlib import Path

import pytest

from eval.gate import GateConfig, check, check_metric_name, load_gate_config, load_summary, unit_threshold


class GateFailed(AssertionError):
    pass


def assert_gate(run: str | Path, *, min: dict[str, float] | None = None, max_unmeasured: float | None = None,
                ci_lower: bool = False, pyproject: str | Path = "pyproject.toml") -> list:
    """Raise :class:`GateFailed` listing every failed check; return the checks when all pass."""
    base = load_gate_config(pyproject)
    given = {check_metric_name(k, "min"): unit_threshold(v, f"min[{k!r}]") for k, v in (min or {}).items()}
    cfg = GateConfig({**base.minimums, **given},
                     base.max_unmeasured if max_unmeasured is None
                     else unit_threshold(max_unmeasured, "max_unmeasured"),
                     ci_lower or base.use_ci_lower)
    if not cfg.minimums and cfg.max_unmeasured is None:
        raise GateFailed("no thresholds given and none in [tool.ragdoctor.gate]")
    checks = check(load_summary(run), cfg)
    failed = [c.message for c in checks if not c.passed]
    if failed:
        raise GateFailed(f"ragdoctor gate failed for {run}: " + "; ".join(failed))
    return checks


@pytest.fixture
def ragdoctor_gate():
    return assert_gate


def pytest_configure(config):
    config.addinivalue_line("markers", "ragdoctor_gate(run, min=None, max_unmeasured=None, ci_lower=False): "
                                       "fail the test unless the ragdoctor run meets its thresholds")


def pytest_runtest_call(item):
    marker = item.get_closest_marker("ragdoctor_gate")
    if marker is not None:
        assert_gate(*marker.args, **marker.kwargs)
