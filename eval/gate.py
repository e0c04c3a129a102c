"""The CI gate: compare a run's summary with thresholds. Exit 0 pass, 1 a threshold failed, 2 usage/input error.

Thresholds come from ``[tool.ragdoctor.gate]`` in pyproject.toml (``min = {metric = value}``, ``max_unmeasured``,
``use_ci_lower``), overridden by flags. A metric may name its judge as ``metric:judge``; otherwise the first judge
that measured it is used. A run with nothing measured fails, never passes."""
from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from corpora.errors import InputError
from eval.summary import primary


@dataclass
class GateConfig:
    minimums: dict[str, float] = field(default_factory=dict)
    max_unmeasured: float | None = None
    use_ci_lower: bool = False


@dataclass
class Check:
    name: str
    passed: bool
    observed: float | None
    threshold: float
    kind: str  # "min" or "max"
    ci: tuple[float | None, float | None] = (None, None)
    detail: str = ""

    @property
    def message(self) -> str:
        if self.observed is None:
            return f"{self.name}: not measured ({self.detail})"
        rel = ">=" if self.kind == "min" else "<="
        ci = f" [95% CI {self.ci[0]:.3f}-{self.ci[1]:.3f}]" if self.ci[0] is not None else ""
        verdict = "ok" if self.passed else f"FAIL by {abs(self.observed - self.threshold):.3f}"
        return f"{self.name}: {self.observed:.3f}{ci} needs {rel} {self.threshold:.3f}: {verdict}{self.detail}"


def load_gate_config(pyproject: str | Path = "pyproject.toml") -> GateConfig:
    path = Path(pyproject)
    if not path.exists():
        return GateConfig()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(path, f"malformed TOML: {exc}") from None
    gate = data.get("tool", {}).get("ragdoctor", {}).get("gate", {})
    unknown = set(gate) - {"min", "max_unmeasured", "use_ci_lower"}
    if unknown:
        raise InputError(path, f"unknown key(s) in [tool.ragdoctor.gate]: {', '.join(sorted(unknown))}")
    try:
        return GateConfig({k: float(v) for k, v in gate.get("min", {}).items()},
                          None if gate.get("max_unmeasured") is None else float(gate["max_unmeasured"]),
                          bool(gate.get("use_ci_lower", False)))
    except (TypeError, ValueError) as exc:
        raise InputError(path, f"[tool.ragdoctor.gate]: {exc}") from None


def parse_threshold(text: str) -> tuple[str, float]:
    """'groundedness=0.8' or 'groundedness:nli=0.8' -> (name, value)."""
    name, sep, value = text.partition("=")
    try:
        if not sep or not name:
            raise ValueError
        v = float(value)
    except ValueError:
        raise InputError(None, f"threshold '{text}' is not METRIC=VALUE (e.g. groundedness=0.8)", field="--min") from None
    if not 0.0 <= v <= 1.0:
        raise InputError(None, f"threshold '{text}' must be within [0, 1]", field="--min")
    return name.strip(), v


def load_summary(run: str | Path) -> dict:
    run = Path(run)
    path = run / "summary.json" if run.is_dir() else run
    if not path.exists():
        raise InputError(path, "no summary.json: evaluate first with `ragdoctor eval`")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(path, f"malformed JSON: {exc.msg}", line=exc.lineno) from None


def check(summary: dict, cfg: GateConfig) -> list[Check]:
    checks: list[Check] = []
    measured_any = any(m["n"] > 0 for m in summary.get("metrics", []))
    if not measured_any:
        checks.append(Check("measured values", False, None, 1.0, "min", detail="the run has no measured values"))
    for name, threshold in cfg.minimums.items():
        metric, _, judge = name.partition(":")
        row = primary(summary, metric, judge or None)
        if row is None or row["n"] == 0:
            checks.append(Check(name, False, None, threshold, "min", detail="no measured values for this metric"))
            continue
        observed = row["ci_low"] if cfg.use_ci_lower else row["mean"]
        detail = f" (judge {row['judge']}, n={row['n']}{', CI lower bound' if cfg.use_ci_lower else ''})"
        checks.append(Check(name, observed >= threshold, observed, threshold, "min", (row["ci_low"], row["ci_high"]), detail))
    if cfg.max_unmeasured is not None:
        share = summary.get("unmeasured_share")
        share = 1.0 if share is None else share
        checks.append(Check("unmeasured share", share <= cfg.max_unmeasured, share, cfg.max_unmeasured, "max"))
    return checks


def write_junit(checks: list[Check], path: str | Path, suite: str = "ragdoctor.gate") -> None:
    failures = sum(not c.passed for c in checks)
    cases = []
    for c in checks:
        body = "" if c.passed else f"<failure message={quoteattr(c.message)}>{escape(c.message)}</failure>"
        cases.append(f'  <testcase classname="{suite}" name={quoteattr(c.name)}>{body}</testcase>')
    xml = (f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="{suite}" tests="{len(checks)}" '
           f'failures="{failures}" errors="0">\n' + "\n".join(cases) + "\n</testsuite>\n")
    Path(path).write_text(xml, encoding="utf-8")
