"""pytest plugin: assert on an evaluation run from your own test suite.

Fixture::

    def test_rag_quality(ragdoctor_gate):
        ragdoctor_gate("runs/nightly", min={"groundedness": 0.8}, max_unmeasured=0.05)

Marker (the test body runs after the gate passed)::

    @pytest.mark.ragdoctor_gate("runs/nightly", min={"context_precision": 0.6}, ci_lower=True)
    def test_retrieval(): ...

Thresholds not given fall back to ``[tool.ragdoctor.gate]`` in pyproject.toml (the one in the current folder, else
the pytest rootdir's), and so do ``use_ppi`` and ``ppi_fallback`` (or pass ``ppi=True``: the run's labels.jsonl, read
now, as ``ragdoctor gate --ppi``). A marker or call that is malformed (no run, ``min`` not a mapping, a value out of
[0, 1], an unknown metric or keyword) fails the test with a one-line usage error. Registered through the ``pytest11``
entry point, so installing ragdoctor is enough."""
from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from functools import wraps
from pathlib import Path
from typing import Any

import pytest

from corpora.errors import InputError, UsageError

# eval.gate is imported when a gate runs, not here: pytest loads this plugin in every suite of an environment that has
# ragdoctor installed, most of which never gate


class GateFailed(AssertionError):
    pass


def _flag(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise UsageError(f"{where}: must be True or False, got {value!r}")
    return value


def assert_gate(run: str | Path, *, min: Mapping[str, float] | None = None, max_unmeasured: float | None = None,
                ci_lower: bool = False, ppi: bool | None = None, ppi_fallback: bool | None = None,
                pyproject: str | Path | None = None) -> list:
    """Raise :class:`GateFailed` listing every failed check; return the checks when all pass. ``ppi``/``ppi_fallback``
    as ``ragdoctor gate --ppi/--ppi-fallback`` (None: as pyproject.toml says). ``min`` is checked as the CLI's
    ``--min`` and ``EvalResult.gate`` check theirs (a name given twice, a value out of [0, 1]: UsageError)."""
    __tracebackhide__ = True
    from eval import gate as rules  # noqa: PLC0415 - see above

    if not isinstance(run, (str, Path)) or not str(run).strip():
        raise UsageError(f"ragdoctor_gate: run must be a run folder (a path), got {run!r}")
    if min is not None and not isinstance(min, Mapping):
        raise UsageError(f"ragdoctor_gate: min must be a mapping of metric to minimum, got {min!r}")
    given = rules.given_minimums(min, "ragdoctor_gate: min")
    base = rules.load_gate_config(pyproject)
    use_ppi = base.use_ppi if ppi is None else _flag(ppi, "ppi")
    fallback = base.ppi_fallback if ppi_fallback is None else _flag(ppi_fallback, "ppi_fallback")
    if ppi_fallback is not None:  # given here, not by pyproject.toml: a fallback that can change nothing is a misuse
        rules.check_ppi_flags(use_ppi, fallback)
    cfg = rules.GateConfig({**base.minimums, **given},
                           base.max_unmeasured if max_unmeasured is None
                           else rules.unit_threshold(max_unmeasured, "max_unmeasured"),
                           _flag(ci_lower, "ci_lower") or base.use_ci_lower, use_ppi, fallback)
    if not cfg.has_thresholds:
        raise GateFailed("no thresholds given and none in [tool.ragdoctor.gate]")
    summary = rules.load_summary(run)
    calibrated = None
    if cfg.use_ppi:  # the labels in force now, as `ragdoctor gate --ppi` reads them
        from eval.calibration import for_run  # noqa: PLC0415 - only needed with labels

        calibrated = for_run(Path(run) if Path(run).is_dir() else Path(run).parent)
    checks = rules.check(summary, cfg, calibrated)
    failed = [c.message for c in checks if not c.passed]
    if failed:
        raise GateFailed(f"ragdoctor gate failed for {run}: " + "; ".join(failed))
    return checks


def _one_line_failures(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A failed gate or a misuse fails the marked test with its one-line message, not a traceback through this plugin
    (a marker has no frame of the test's own to show)."""

    @wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        try:
            return fn(*args, **kwargs)
        except (GateFailed, InputError) as exc:
            message = f"{type(exc).__name__}: {exc}"
        pytest.fail(message, pytrace=False)  # outside the handler: pytest would print the chained exception too

    return call


def _pyproject(config: pytest.Config) -> Path | None:
    """pyproject.toml in the current folder, else the rootdir's (pytest run from a subfolder), else None (none)."""
    here, root = Path("pyproject.toml"), Path(config.rootpath) / "pyproject.toml"
    return here if here.exists() else root if root.exists() else None


@pytest.fixture
def ragdoctor_gate(request):
    def gate(run: str | Path, **kwargs):
        """A failed gate raises GateFailed (an AssertionError: pytest.raises, xfail(raises=) and except clauses
        catch it) and a misuse UsageError, each raised here: the traceback stops at the test's own call."""
        __tracebackhide__ = True
        kwargs.setdefault("pyproject", _pyproject(request.config))
        error: InputError
        try:
            return assert_gate(run, **kwargs)
        except UsageError as exc:
            error = UsageError(str(exc))
        except InputError as exc:  # a run or pyproject.toml that cannot be read, from deep inside eval.gate
            error = InputError(None, str(exc))
        raise error  # outside the handler: no chained traceback through the library

    gate.__doc__ = assert_gate.__doc__
    return gate


def pytest_configure(config):
    config.addinivalue_line("markers", "ragdoctor_gate(run, min=None, max_unmeasured=None, ci_lower=False): "
                                       "fail the test unless the ragdoctor run meets its thresholds")


def pytest_runtest_call(item):
    marker = item.get_closest_marker("ragdoctor_gate")
    if marker is not None:
        _gate_marker(item, marker)


@_one_line_failures
def _gate_marker(item: pytest.Item, marker: pytest.Mark) -> None:
    try:
        bound = inspect.signature(assert_gate).bind(*marker.args, **marker.kwargs)
    except TypeError as exc:
        raise UsageError(f"@pytest.mark.ragdoctor_gate(run, min=..., max_unmeasured=..., ci_lower=..., ppi=...): "
                         f"{exc}") from None
    bound.arguments.setdefault("pyproject", _pyproject(item.config))
    assert_gate(*bound.args, **bound.kwargs)
