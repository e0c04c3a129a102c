"""pytest plugin: assert on an evaluation run from your own test suite.

Fixture::

    def test_rag_quality(ragdoctor_gate):
        ragdoctor_gate("runs/nightly", min={"groundedness": 0.8}, max_unmeasured=0.05)

Marker (the test body runs after the gate passed)::

    @pytest.mark.ragdoctor_gate("runs/nightly", min={"context_precision": 0.6}, ci_lower=True)
    def test_retrieval(): ...

Thresholds not given fall back to ``[tool.ragdoctor.gate]`` in pyproject.toml (the one in the current folder, else
the pytest rootdir's), and so do ``use_ppi`` and ``ppi_fallback`` (or pass ``ppi=True``: the run's labels.jsonl, read
now, as ``ragdoctor gate --ppi``). The options are checked as ``ragdoctor gate`` checks its flags (the same functions).
A failed gate raises :class:`ragdoctor.GateFailed` (an AssertionError: ``pytest.raises`` and ``xfail(raises=...)``
take it, in the fixture's form and the marker's alike). A call or marker that is malformed (no run, no threshold at
all, ``min`` not a mapping, a value out of [0, 1], an unknown metric or keyword, ``ci_lower`` or ``ppi`` with no
minimum to compare) raises ``UsageError`` with one line, as ``ragdoctor gate`` exits 2 on it: a misuse, not a quality
failure. A marked test fails with the one line alone (a marker has no line of the test's own to show).

Registered through the ``pytest11`` entry point, so installing ragdoctor is enough. pytest imports this module in
every test suite of an environment that has ragdoctor installed, before the suite's own modules: so it imports none of
ragdoctor's top-level packages (``eval``, ``corpora``, ``rag``, ``diagnostics``), which would take the place of a
project's own package of that name (``eval/``). The gate's implementation loads when a gate runs."""
from __future__ import annotations

import inspect
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ragdoctor import GateFailed

__all__ = ["GateFailed", "assert_gate"]

MARKER = "ragdoctor_gate"
CALL = "(run, min=..., max_unmeasured=..., ci_lower=..., ppi=..., ppi_fallback=..., pyproject=...)"
_FROM_MARKER = "_ragdoctor_from_marker"  # set on an exception the marker raised: its report is its one line


def _library() -> tuple[ModuleType, ModuleType, ModuleType]:
    """eval.gate, corpora.errors and ragdoctor.cmd_eval (the gate's rules, its errors, the CLI's option checks),
    imported when a gate runs. A project whose own package has the name of one of ragdoctor's top-level packages
    (``eval``, ``corpora``) and was imported first hides ours: said in one line, not as a missing submodule."""
    try:
        from corpora import errors  # noqa: PLC0415 - lazy: see the module's docstring
        from eval import gate  # noqa: PLC0415
        from ragdoctor import cmd_eval  # noqa: PLC0415
    except ImportError as exc:
        import sys  # noqa: PLC0415 - only to name the package in the way

        top = (exc.name or "").partition(".")[0]
        theirs = getattr(sys.modules.get(top), "__file__", None)
        if top in ("eval", "corpora", "rag", "diagnostics") and theirs is not None:
            raise ImportError(f"ragdoctor_gate: ragdoctor's package '{top}' is hidden by another package of that name "
                              f"({theirs}), imported first: run the gate in a test suite that does not import it, or "
                              f"as `ragdoctor gate RUN`") from None
        raise
    return gate, errors, cmd_eval


def assert_gate(run: str | Path, *, min: Mapping[str, float] | None = None, max_unmeasured: float | None = None,
                ci_lower: bool = False, ppi: bool | None = None, ppi_fallback: bool | None = None,
                pyproject: str | Path | None = None) -> list:
    """Raise :class:`GateFailed` listing every failed check; return the checks when all pass. ``ppi``/``ppi_fallback``
    as ``ragdoctor gate --ppi/--ppi-fallback`` (None: as pyproject.toml says). Checked as ``ragdoctor gate`` checks its
    flags (a UsageError where it exits 2): ``min`` as its ``--min`` (a name given twice, a value out of [0, 1]), no
    threshold at all, ``ci_lower`` or ``ppi`` without a minimum, ``ci_lower`` beside ``ppi`` without
    ``ppi_fallback``, ``ppi_fallback`` without ``ppi``, a blank ``run`` or ``pyproject``."""
    __tracebackhide__ = True
    rules, errors, options = _library()
    from ragdoctor.options import true_or_false  # noqa: PLC0415 - lazy: see the module's docstring
    usage = errors.UsageError
    if not isinstance(run, (str, Path)) or not str(run).strip():
        raise usage(f"ragdoctor_gate: run must be a run folder (a path), got {run!r}")
    if isinstance(pyproject, str) and not pyproject.strip():
        raise usage("pyproject: a blank value")
    if pyproject is not None and not isinstance(pyproject, (str, Path)):
        raise usage(f"pyproject: expected a path, got {pyproject!r}")
    if min is not None and not isinstance(min, Mapping):
        raise usage(f"ragdoctor_gate: min must be a mapping of metric to minimum, got {min!r}")
    given = rules.given_minimums(min, "ragdoctor_gate: min")
    base = rules.load_gate_config(pyproject)
    in_file = {"use_ci_lower": base.use_ci_lower, "use_ppi": base.use_ppi}
    use_ppi = base.use_ppi if ppi is None else true_or_false(ppi, "ppi")
    fallback = base.ppi_fallback if ppi_fallback is None else true_or_false(ppi_fallback, "ppi_fallback")
    table = f"{Path(pyproject) if pyproject is not None else Path('pyproject.toml')} [tool.ragdoctor.gate]"
    if ppi_fallback is not None:  # a fallback from no PPI estimate would change nothing: refused, as the CLI does
        rules.check_ppi_flags(use_ppi, fallback)
    elif fallback and ppi is None and not use_ppi:  # the file's own fallback (beside ppi=False it is moot)
        raise usage(f"ppi_fallback = true in {table} needs ppi=True (or use_ppi = true there)")
    cfg = rules.GateConfig({**base.minimums, **given},
                           base.max_unmeasured if max_unmeasured is None
                           else rules.unit_threshold(max_unmeasured, "max_unmeasured"),
                           true_or_false(ci_lower, "ci_lower") or base.use_ci_lower, use_ppi, fallback and use_ppi)
    options.unused_estimate_options(cfg, ci_lower, ppi is True, in_file, table, names={
        "use_ci_lower": "ci_lower=True", "use_ppi": "ppi=True",
        "ppi_fallback": f"ppi_fallback=True (or ppi_fallback = true in {table})",
        "minimum": f"min={{metric: minimum}} or min in {table}"})
    if not cfg.has_thresholds:
        raise usage("ragdoctor_gate: no thresholds given (min={metric: minimum} or max_unmeasured=...) and none in "
                    f"{table}")
    summary = rules.load_summary(run)
    calibrated = None
    if cfg.use_ppi:  # the labels in force now, as `ragdoctor gate --ppi` reads them
        from eval.calibration import for_run  # noqa: PLC0415 - only needed with labels

        calibrated = for_run(Path(run) if Path(run).is_dir() else Path(run).parent)
    checks = [_spelled(c) for c in rules.check(summary, cfg, calibrated)]
    failed = [c.message for c in checks if not c.passed]
    if failed:
        raise GateFailed(f"ragdoctor gate failed for {run}: " + "; ".join(failed))
    return checks


def _spelled(check: Any) -> Any:
    """A check whose detail names a flag of ``ragdoctor gate`` (``or pass --ppi-fallback``), naming this plugin's
    argument instead (the Python API's spelling: ragdoctor.options.api_names)."""
    import dataclasses  # noqa: PLC0415 - with the library, when a gate runs

    from ragdoctor.options import api_names  # noqa: PLC0415 - lazy: see the module's docstring

    return dataclasses.replace(check, detail=api_names(check.detail))


def _bind(args: tuple, kwargs: Mapping[str, Any], where: str) -> inspect.BoundArguments:
    """The arguments of a gate, bound to assert_gate's signature: one that it does not take (``mn=``, no run) is a
    one-line UsageError naming ``where``, not a TypeError from inside the plugin."""
    try:
        return inspect.signature(assert_gate).bind(*args, **kwargs)
    except TypeError as exc:
        _, errors, _ = _library()
        raise errors.UsageError(f"{where}{CALL}: {exc}") from None


def _pyproject(config: pytest.Config) -> Path | None:
    """pyproject.toml in the current folder, else the rootdir's (pytest run from a subfolder), else None (none)."""
    here, root = Path("pyproject.toml"), Path(config.rootpath) / "pyproject.toml"
    return here if here.exists() else root if root.exists() else None


@pytest.fixture
def ragdoctor_gate(request: pytest.FixtureRequest):
    def gate(run: str | Path, **kwargs: Any) -> list:
        """A failed gate raises GateFailed (an AssertionError: pytest.raises, xfail(raises=) and except clauses
        catch it) and a misuse UsageError, each raised here: the traceback stops at the test's own call."""
        __tracebackhide__ = True
        _, errors, _ = _library()
        error: Exception
        try:
            bound = _bind((run,), kwargs, "ragdoctor_gate")
            bound.arguments.setdefault("pyproject", _pyproject(request.config))
            return assert_gate(*bound.args, **bound.kwargs)
        except GateFailed as exc:
            error = GateFailed(str(exc))
        except errors.UsageError as exc:
            error = errors.UsageError(str(exc))
        except errors.InputError as exc:  # a run or pyproject.toml that cannot be read, from deep inside eval.gate
            error = errors.InputError(None, str(exc))
        raise error  # outside the handler: no chained traceback through the library

    gate.__doc__ = assert_gate.__doc__
    return gate


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}{CALL}: fail the test unless the ragdoctor run meets its thresholds "
                                       "(the test body runs after the gate passed)")


@pytest.hookimpl(tryfirst=True)  # before the test body: it runs only once the gate passed
def pytest_runtest_call(item: pytest.Item) -> None:
    marker = item.get_closest_marker(MARKER)
    if marker is None:
        return
    __tracebackhide__ = True
    _, errors, _ = _library()
    try:
        bound = _bind(marker.args, marker.kwargs, f"@pytest.mark.{MARKER}")
        bound.arguments.setdefault("pyproject", _pyproject(item.config))
        assert_gate(*bound.args, **bound.kwargs)
    except (GateFailed, errors.InputError) as exc:
        setattr(exc, _FROM_MARKER, True)  # the exception itself, so xfail(raises=GateFailed) takes it
        raise


@pytest.hookimpl(wrapper=True, tryfirst=True)  # outermost: after xfail has judged the exception
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    """A marked test failed by its gate (or a misuse of the marker) is reported with the one line alone: a traceback
    through this plugin would show no line of the test's own."""
    report = yield
    exc = call.excinfo.value if call.excinfo is not None else None
    if report.failed and getattr(exc, _FROM_MARKER, False):
        report.longrepr = f"{type(exc).__name__}: {exc}"
    return report
