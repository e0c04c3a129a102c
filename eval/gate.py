"""The CI gate: compare a run's summary with thresholds. Exit 0 pass, 1 a threshold failed, 2 usage/input error.

Thresholds come from ``[tool.ragdoctor.gate]`` in pyproject.toml (``min = {metric = value}``, ``max_unmeasured``,
``use_ci_lower``, ``use_ppi``, ``ppi_fallback``), overridden by flags. A metric may name its judge as
``metric:judge`` (``metric:`` with no judge is a UsageError); otherwise the most trusted judge that measured it is
used. A minimum on a metric (or metric:judge) the run has no row for is a UsageError naming what it evaluated (a
configuration mistake, not a quality failure); one whose every result was unmeasured fails. A run with nothing
measured fails, never passes.

With ``use_ppi`` (``ragdoctor gate --ppi``) a minimum is checked against the lower bound of the PPI-corrected 95% CI
(eval/calibration.py: the judge's scores calibrated by the run's human labels). A metric with too few labels has no
corrected estimate: its check fails and says why ("12 labels, need 30"), unless ``ppi_fallback``
(``--ppi-fallback``) lets it fall back to the judge's own estimate (its mean, or CI lower bound with ``use_ci_lower``).
Each check names the estimate it used (``Check.estimate``; a property of its JUnit test case)."""
from __future__ import annotations

import json
import math
import numbers
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from corpora.errors import InputError, UsageError
from corpora.jsonl import decode_problem, loads_strict
from corpora.paths import output_file
from corpora.run_folder import SUMMARY, RunFolder, summary_problem
from eval.judges.registry import JUDGES, judges_for, trust_rank
from eval.metrics import METRIC_NAMES, find
from eval.ppi import MIN_LABELS


@dataclass
class GateConfig:
    minimums: dict[str, float] = field(default_factory=dict)
    max_unmeasured: float | None = None
    use_ci_lower: bool = False
    use_ppi: bool = False
    ppi_fallback: bool = False

    @property
    def has_thresholds(self) -> bool:
        """Whether there is anything to gate on: a minimum, or a most unmeasured share."""
        return bool(self.minimums) or self.max_unmeasured is not None


@dataclass
class Check:
    name: str
    passed: bool
    observed: float | None
    threshold: float
    kind: str  # "min" or "max"
    ci: tuple[float | None, float | None] = (None, None)
    detail: str = ""
    estimate: str = ""  # which number ``observed`` is: "judge mean", "judge CI lower bound", "PPI corrected ..."

    def __post_init__(self) -> None:
        self.threshold = self.threshold + 0.0  # -0.0 (from `--min groundedness=-0`) is printed as 0.000

    @property
    def message(self) -> str:
        if self.observed is None:
            return f"{self.name}: no value to check ({self.detail})"
        rel = ">=" if self.kind == "min" else "<="
        ci = f" [95% CI {self.ci[0]:.3f}-{self.ci[1]:.3f}]" if self.ci[0] is not None else ""
        verdict = "ok" if self.passed else f"FAIL by {abs(self.observed - self.threshold):.3f}"
        return f"{self.name}: {self.observed:.3f}{ci} needs {rel} {self.threshold:.3f}: {verdict}{self.detail}"


def primary(summary: dict, metric: str, judge: str | None = None) -> dict | None:
    """The summary row for ``metric``: by ``judge``, else the most trusted judge that measured anything
    (JUDGE_PREFERENCE, as the results table and the classifier read it; judges outside it after, in run order), so
    the verdict never depends on the order the judges were listed in."""
    rows = [m for m in summary["metrics"] if m["metric"] == metric and (judge is None or m["judge"] == judge)]
    rows = sorted(rows, key=lambda m: trust_rank(m["judge"]))  # stable: run order among the unranked
    measured = [m for m in rows if m["n"] > 0]
    return (measured or rows or [None])[0]


def unit_threshold(value: object, where: str) -> float:
    """A threshold: a real number within [0, 1] (never a bool, NaN or a string), else UsageError naming ``where``."""
    number = float(value) if isinstance(value, numbers.Real) and not isinstance(value, bool) else None  # numpy too
    if number is None or not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise UsageError(f"{where}: must be a number within [0, 1], got {value!r}")
    return number + 0.0  # -0.0 is 0


def check_metric_name(name: str, where: str) -> str:
    """'metric' or 'metric:judge' with a metric and judge this project knows (a typo is a usage error, not a FAIL), and
    a metric for which higher is better (a minimum on noise_sensitivity would pass the worst runs). A ':' with no judge
    after it ('groundedness:', as an unset ``metric:$JUDGE`` gives) is an error, never read as the bare metric nor as
    a second threshold beside it."""
    metric, colon, judge = name.strip().partition(":")
    if colon and not judge.strip():
        raise UsageError(f"{where}: '{name}' names no judge after ':' (give metric:judge, or the metric alone)")
    m = find(metric)
    if m is None:
        raise UsageError(f"{where}: unknown metric '{metric}' (valid: {METRIC_NAMES})")
    if not m.higher_is_better:
        raise UsageError(f"{where}: lower is better for '{metric}': it cannot take a minimum")
    if judge and judge not in JUDGES:
        raise UsageError(f"{where}: unknown judge '{judge}' in '{name}' (valid: {', '.join(JUDGES)})")
    if judge and not JUDGES[judge].measures(m):  # it could never be checked: a usage error, not a failed verdict
        raise UsageError(f"{where}: the {judge} judge does not measure '{metric}' (it is measured by "
                         f"{', '.join(judges_for(metric))})")
    return name.strip()


def given_minimums(thresholds: object, where: str) -> dict[str, float]:
    """Minimums given as a mapping of 'metric' or 'metric:judge' to a number in [0, 1], checked as ``--min`` is: a key
    that is no metric name, the same name twice ("groundedness" and "groundedness ") or a value out of range is a
    UsageError naming ``where``. None: no minimums."""
    if thresholds is None:
        return {}
    if not isinstance(thresholds, Mapping):
        raise UsageError(f"{where}: expected a mapping of metric (or metric:judge) to a minimum, got {thresholds!r}")
    minimums: dict[str, float] = {}
    for key, value in thresholds.items():
        if not isinstance(key, str):
            raise UsageError(f"{where}: the key {key!r} is not a metric name")
        name = check_metric_name(key, where)
        if name in minimums:
            raise UsageError(f"{where}: '{name}' is given twice")
        minimums[name] = unit_threshold(value, f"{where}[{key!r}]")
    return minimums


def check_ppi_flags(ppi: bool, ppi_fallback: bool) -> None:
    """``ppi_fallback`` changes nothing without ``ppi``: refused, as ``ragdoctor gate`` refuses it."""
    if ppi_fallback and not ppi:
        raise UsageError("ppi_fallback: needs ppi=True (a fallback from no PPI estimate would change nothing)")


def load_gate_config(pyproject: str | Path | None = None) -> GateConfig:
    """[tool.ragdoctor.gate] of ``pyproject``; None: of ./pyproject.toml when there is one (no thresholds when not). A
    file named but missing, a mistyped table under [tool.ragdoctor] or a key twice is an InputError: a gate that
    silently read no thresholds would pass."""
    path = Path(pyproject if pyproject is not None else "pyproject.toml").expanduser()
    if not path.exists():
        if pyproject is not None:
            raise InputError(path, "file not found (the thresholds file given)")
        return GateConfig()
    if path.is_dir():
        raise InputError(path, "is a folder, not a pyproject.toml")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(path, f"malformed TOML: {exc}") from None
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise InputError(path, "[tool] must be a table (tool = ... is no table of tools)")
    ours = tool.get("ragdoctor", {})
    if not isinstance(ours, dict):
        raise InputError(path, "[tool.ragdoctor] must be a table")
    if set(ours) - {"gate"}:
        raise InputError(path, f"unknown key(s) in [tool.ragdoctor]: {', '.join(sorted(set(ours) - {'gate'}))} "
                               f"(the thresholds go in [tool.ragdoctor.gate])")
    gate = ours.get("gate", {})
    if not isinstance(gate, dict):
        raise InputError(path, "[tool.ragdoctor.gate] must be a table")
    unknown = set(gate) - {"min", "max_unmeasured", "use_ci_lower", "use_ppi", "ppi_fallback"}
    if unknown:
        raise InputError(path, f"unknown key(s) in [tool.ragdoctor.gate]: {', '.join(sorted(unknown))}")
    where = f"{path}: [tool.ragdoctor.gate]"
    minimums = gate.get("min", {})
    if not isinstance(minimums, dict):
        raise InputError(path, "[tool.ragdoctor.gate] min must be a table of metric = value")
    flags = {}
    for name in ("use_ci_lower", "use_ppi", "ppi_fallback"):
        flags[name] = gate.get(name, False)
        if not isinstance(flags[name], bool):
            raise InputError(path, f"[tool.ragdoctor.gate] {name} must be true or false, got {flags[name]!r}")
    names = [check_metric_name(k, f"{where} min") for k in minimums]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice:
        raise InputError(path, f"[tool.ragdoctor.gate] min names '{twice}' twice")
    return GateConfig({name: unit_threshold(v, f"{where} min.{k}") for name, (k, v) in zip(names, minimums.items(),
                                                                                           strict=True)},
                      None if gate.get("max_unmeasured") is None else
                      unit_threshold(gate["max_unmeasured"], f"{where} max_unmeasured"), **flags)


def parse_threshold(text: str) -> tuple[str, float]:
    """'groundedness=0.8' or 'groundedness:nli=0.8' -> (name, value)."""
    name, sep, value = text.partition("=")
    try:
        if not sep or not name.strip():
            raise ValueError
        v = float(value)
    except ValueError:
        raise UsageError(f"--min: threshold '{text}' is not METRIC=VALUE (e.g. groundedness=0.8)") from None
    if not math.isfinite(v) or not 0.0 <= v <= 1.0:
        raise UsageError(f"--min: threshold '{text}' must be within [0, 1]")
    return check_metric_name(name, "--min"), v + 0.0  # -0 is 0


def load_summary(run: str | Path) -> dict:
    run = Path(run)
    path = run / SUMMARY if run.is_dir() else run
    if not path.is_file():
        raise InputError(path, "no summary.json: evaluate first with `ragdoctor eval`")
    try:
        summary = loads_strict(path.read_bytes().decode("utf-8-sig"))
    except json.JSONDecodeError as exc:
        why = decode_problem(exc, always_where=False)  # "Unterminated string starting at column 7", "Extra data"
        if path.name != SUMMARY:  # results.jsonl, traces.jsonl: a file of the run, not its summary
            raise InputError(path, f"not a ragdoctor summary (malformed JSON at line {exc.lineno}: {why}); give "
                                   f"the run folder or its {SUMMARY}") from None
        raise InputError(path, f"malformed JSON: {why}", line=exc.lineno) from None
    except UnicodeDecodeError:
        raise InputError(path, "not valid UTF-8") from None
    except (ValueError, RecursionError) as exc:  # NaN, Infinity, a key twice: no summary this project writes
        raise InputError(path, f"not a ragdoctor summary (malformed JSON: {exc})") from None
    problem = summary_problem(summary)
    if problem:
        raise InputError(path, f"not a ragdoctor summary ({problem})")
    _check_current(path, summary)
    return summary


def _check_current(path: Path, summary: dict) -> None:
    """A summary left by an earlier evaluation (the latest one was killed before it wrote its own) is stale."""
    folder = RunFolder(path.parent)
    folder.checked_keys()  # a config.json that cannot be read: nobody can tell whether summary.json is current
    if folder.stale_summary(summary):
        raise InputError(path, "is from an earlier evaluation than the run's config.json (the latest `ragdoctor eval` "
                               "did not finish): rerun it to complete the run, then gate")


def _judge_check(name: str, row: dict, threshold: float, cfg: GateConfig, note: str = "") -> Check:
    observed = row["ci_low"] if cfg.use_ci_lower else row["mean"]
    estimate = "judge CI lower bound" if cfg.use_ci_lower else "judge mean"
    detail = f" (judge {row['judge']}, n={row['n']}{', CI lower bound' if cfg.use_ci_lower else ''}{note})"
    return Check(name, observed >= threshold, observed, threshold, "min", (row["ci_low"], row["ci_high"]), detail,
                 estimate)


def _ppi_check(name: str, row: dict, threshold: float, cfg: GateConfig, calibrated: list[dict]) -> Check:
    cal = next((r for r in calibrated if r["metric"] == row["metric"] and r["judge"] == row["judge"]), None)
    if cal is not None and cal["status"] == "ok":
        detail = (f" (PPI-corrected lower 95% bound, {cal['method']}, judge {row['judge']}, {cal['n_labels']} labels, "
                  f"judge mean {row['mean']:.3f})")
        return Check(name, cal["ci_low"] >= threshold, cal["ci_low"], threshold, "min", (cal["ci_low"], cal["ci_high"]),
                     detail, f"PPI corrected CI lower bound ({cal['method']})")
    why = cal["reason"] if cal is not None else f"0 labels, need {MIN_LABELS}"
    if cfg.ppi_fallback:
        return _judge_check(name, row, threshold, cfg, f"; no PPI estimate: {why}, fell back to the judge's estimate")
    detail = (f"no PPI-corrected estimate for judge {row['judge']}: {why}; label more samples (dashboard Label page "
              "or `ragdoctor label`), or pass --ppi-fallback")
    return Check(name, False, None, threshold, "min", detail=detail, estimate="none (too few labels)")


def evaluated(summary: dict) -> str:
    """What a summary has rows for, as 'metric (judge, judge), ...' in run order."""
    judges: dict[str, list[str]] = {}
    for m in summary.get("metrics", []):
        judges.setdefault(m["metric"], []).append(m["judge"])
    return ", ".join(f"{metric} ({', '.join(names)})" for metric, names in judges.items())


def check(summary: dict, cfg: GateConfig, calibrated: list[dict] | None = None) -> list[Check]:
    """The gate's checks. ``calibrated`` (eval.calibration.for_run: read with the labels in force now) is what
    ``use_ppi`` checks against; without it, the summary's own ``calibrated`` rows (as of its evaluation)."""
    if calibrated is None:
        calibrated = summary.get("calibrated") or []
    checks: list[Check] = []
    measured_any = any(m["n"] > 0 for m in summary.get("metrics", []))
    if not measured_any:
        checks.append(Check("measured values", False, None, 1.0, "min", detail="the run has no measured values",
                            estimate="none"))
    for name, threshold in cfg.minimums.items():
        metric, _, judge = name.partition(":")
        row = primary(summary, metric, judge or None)
        if row is None and summary.get("metrics"):  # never evaluated: a configuration mistake, not a quality failure
            raise UsageError(f"threshold '{name}': the run did not evaluate {metric}"
                             f"{f' with the {judge} judge' if judge else ''} (it evaluated {evaluated(summary)}); "
                             "evaluate it (ragdoctor eval --metrics/--judges) or drop the threshold")
        if row is None or row["n"] == 0:  # evaluated, every result unmeasured (or nothing evaluated at all): a FAIL
            checks.append(Check(name, False, None, threshold, "min", detail="no measured values for this metric",
                                estimate="none"))
            continue
        checks.append(_ppi_check(name, row, threshold, cfg, calibrated) if cfg.use_ppi else
                      _judge_check(name, row, threshold, cfg))
    if cfg.max_unmeasured is not None:
        share = summary.get("unmeasured_share")
        if share is None:  # no result was measured or unmeasured: not 1.0, which nothing in the run says
            checks.append(Check("unmeasured share", True, None, cfg.max_unmeasured, "max", estimate="none",
                                detail="every result is not applicable: nothing was measured or left unmeasured"))
        else:
            checks.append(Check("unmeasured share", share <= cfg.max_unmeasured, share, cfg.max_unmeasured, "max",
                                estimate="unmeasured share"))
    return checks


def junit_path(path: str | Path, suite: str = "ragdoctor.gate") -> Path:
    """Where a JUnit report may be written: refused (one line) when it is a folder or a file that is no report of this
    kind. Checked before the verdict, so a refusal never hides it."""
    return output_file(path, what="JUnit report", signature=f'<testsuite name="{suite}"')


def write_junit(checks: list[Check], path: str | Path, suite: str = "ragdoctor.gate") -> None:
    """The JUnit XML report of ``checks``; a path that cannot take it (checked again: it may have changed since the
    verdict began) or a write that fails (a full disk) is an InputError naming ``path``."""
    failures = sum(not c.passed for c in checks)
    cases = []
    for c in checks:
        props = ""
        if c.estimate:
            props = (f'<properties><property name="estimate" value={quoteattr(c.estimate)}/>'
                     f'<property name="observed" value={quoteattr("" if c.observed is None else f"{c.observed:.6f}")}/>'
                     f'<property name="threshold" value={quoteattr(f"{c.threshold:.6f}")}/></properties>')
        body = props + ("" if c.passed else f"<failure message={quoteattr(c.message)}>{escape(c.message)}</failure>")
        cases.append(f'  <testcase classname="{suite}" name={quoteattr(c.name)}>{body}</testcase>')
    xml = (f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="{suite}" tests="{len(checks)}" '
           f'failures="{failures}" errors="0">\n' + "\n".join(cases) + "\n</testsuite>\n")
    path = junit_path(path, suite)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(xml, encoding="utf-8")
    except OSError as exc:
        raise InputError(path, f"cannot write the JUnit report ({exc.strerror or exc})") from None
