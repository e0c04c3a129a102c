"""`ragdoctor eval | gate`: score traces (or any JSONL) into a run folder; gate CI on a run's summary."""
from __future__ import annotations

import sys
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path

from ragdoctor.table import render


def run_name(name: str) -> str:
    """A --name is one folder under runs/: not a path."""
    from corpora.errors import UsageError

    if not name.strip() or name in (".", "..") or "/" in name or "\\" in name:
        raise UsageError(f"--name: {name!r} is not a folder name (no '/', not '.' or '..'); use --out for a path")
    return name


def default_eval_dir(traces: Path, name: str | None) -> Path:
    if name:
        return Path("runs") / run_name(name)
    if traces.name == "traces.jsonl":  # a pipeline run folder: results go beside its traces
        return traces.parent
    return Path("runs") / datetime.now().strftime("%Y%m%d-%H%M%S")


def llm_factory(stack: ExitStack, base_url: str | None, model: str):
    def factory():
        from eval.judge_cache import CachedLLM
        from rag.config import GenerationConfig, PipelineConfig
        from rag.session import open_generator

        cfg = PipelineConfig(generation=GenerationConfig(base_url=base_url, model=model))
        return CachedLLM(stack.enter_context(open_generator(cfg)))

    cache: dict = {}
    return lambda: cache.setdefault("llm", factory())


def run_eval(traces: Path, run_dir: Path, *, metrics: list[str], judges: list[str], nli_model: str | None = None,
             nli_threshold: float | None = None,
             judge_base_url: str | None = None, judge_model: str = "qwen2.5-0.5b", limit: int | None = None,
             batch_size: int = 16, progress: bool = True):
    from corpora.errors import report_skipped, warn
    from eval.dataset import load_eval_samples
    from eval.judges.registry import JudgeOptions, check_coverage, make_judges
    from eval.run_log import eval_folder
    from eval.runner import evaluate

    check_coverage(metrics, judges)
    eval_folder(run_dir)  # before loading anything: a folder we may not write into fails now
    notes: list[str] = []
    samples, errors = load_eval_samples(traces, warnings=notes)
    for e in errors:
        report_skipped(e)
    for note in notes:
        warn(note)
    samples = samples[:limit] if limit else samples
    with ExitStack() as stack:
        opts = JudgeOptions(nli_model=nli_model, nli_threshold=nli_threshold,
                            llm_factory=llm_factory(stack, judge_base_url, judge_model))
        built = make_judges(judges, opts)
        for j in built:
            if getattr(j, "family", "") == "unavailable":
                warn(f"judge {j.name} unavailable: {j.reason}: its metrics are unmeasured")
        return evaluate(samples, metrics=metrics, judges=built, run_dir=run_dir, batch_size=batch_size,
                        input_errors=errors, source=str(traces), progress=progress, warnings=notes)


def nothing_measured(summary: dict) -> str | None:
    """Why a run measured nothing at all (every result unmeasured or not applicable), or None when it measured."""
    if any(m["n"] > 0 for m in summary["metrics"]):
        return None
    reasons: dict[str, int] = {}
    for m in summary["metrics"]:
        for reason, n in m.get("unmeasured_reasons", {}).items():
            reasons[reason] = reasons.get(reason, 0) + n
    top = max(reasons, key=lambda r: reasons[r]) if reasons else "every result was not applicable"
    return f"nothing was measured ({top})"


def render_eval_summary(summary: dict) -> str:
    rows = []
    for m in summary["metrics"]:
        ci = f"{m['ci_low']:.3f}-{m['ci_high']:.3f}" if m["ci_low"] is not None else "-"
        rows.append((m["metric"], m["judge"], m["n"], m["mean"], ci, m["n_unmeasured"], m["n_not_applicable"]))
    share = summary.get("unmeasured_share")
    foot = f"\nunmeasured share: {share:.3f}" if share is not None else ""
    return render(["metric", "judge", "n", "mean", "95% CI", "unmeasured", "n/a"], rows) + foot


def cmd_eval(args) -> int:
    from eval.judges.registry import DEFAULT_METRICS, covered, default_judges, parse_judges, parse_metrics

    traces = Path(args.traces)
    run_dir = Path(args.out) if args.out else default_eval_dir(traces, args.name)
    judges = parse_judges(args.judges if args.judges is not None else default_judges(args.nli_model))
    metrics = parse_metrics(args.metrics) if args.metrics is not None else covered(DEFAULT_METRICS, judges)
    result = run_eval(traces, run_dir, metrics=metrics, judges=judges, nli_model=args.nli_model,
                      nli_threshold=args.nli_threshold,
                      judge_base_url=args.judge_base_url, judge_model=args.judge_model, limit=args.limit,
                      batch_size=args.batch_size)
    print(render_eval_summary(result.summary))
    print(f"\nrun folder: {run_dir} ({result.new} judged, {result.resumed} resumed, "
          f"{len(result.input_errors)} bad records skipped)")
    why = nothing_measured(result.summary)
    if why:
        print(f"ragdoctor: error: {why}; the results are saved in {run_dir}", file=sys.stderr)
        return 2
    return 0


def gate_config_from_args(args):
    from eval.gate import load_gate_config, parse_threshold

    cfg = load_gate_config(args.pyproject)
    for text in args.min or []:
        name, value = parse_threshold(text)
        cfg.minimums[name] = value
    if args.max_unmeasured is not None:
        cfg.max_unmeasured = args.max_unmeasured
    if args.ci_lower:
        cfg.use_ci_lower = True
    return cfg


def gate_run(run: str | Path, cfg, junit: str | Path | None = None) -> tuple[int, list]:
    from eval.gate import check, load_summary, write_junit

    checks = check(load_summary(run), cfg)
    if junit:
        write_junit(checks, junit)
    return (0 if all(c.passed for c in checks) else 1), checks


def cmd_gate(args) -> int:
    from corpora.errors import UsageError

    cfg = gate_config_from_args(args)
    if not cfg.minimums and cfg.max_unmeasured is None:
        raise UsageError("no thresholds: pass --min METRIC=VALUE or set [tool.ragdoctor.gate] in pyproject.toml")
    junit = args.junit or (Path(args.run) / "gate.xml" if Path(args.run).is_dir() else None)
    code, checks = gate_run(args.run, cfg, junit)
    for c in checks:
        print(("PASS  " if c.passed else "FAIL  ") + c.message)
    print(f"gate: {'passed' if code == 0 else 'FAILED'} ({sum(c.passed for c in checks)}/{len(checks)} checks)")
    return code


def register(sub, pipeline_options) -> None:
    from eval.judges.registry import DEFAULT_METRICS, JUDGES

    p = sub.add_parser("eval", help="score traces or any (question, contexts, answer) JSONL into a run folder")
    p.add_argument("traces", help="traces.jsonl from `ragdoctor run`, a generic JSONL, or ragas EvaluationDataset rows")
    p.add_argument("--metrics", help=f"comma-separated (default {','.join(DEFAULT_METRICS)})")
    p.add_argument("--judges", help=f"comma-separated from {','.join(JUDGES)} (default: nli when shipped, lexical, "
                                    "embedding, labels)")
    p.add_argument("--out", help="run folder (default: beside traces.jsonl, else runs/<timestamp>)")
    p.add_argument("--name", help="run folder name under runs/")
    p.add_argument("--nli-model", help="CrossEncoder folder for the nli judge (default: the shipped judge)")
    p.add_argument("--nli-threshold", type=float, metavar="P",
                   help="P(supported) at which the nli judge calls a claim supported (default 0.5; calibrate it on "
                        "your own labels with `ragdoctor meta-eval --dataset jsonl`)")
    p.add_argument("--judge-base-url", help="OpenAI-compatible URL for the llm/ragas judges (default: bundled model)")
    p.add_argument("--judge-model", default="qwen2.5-0.5b", help="judge model: bundled GGUF name/path or server model")
    p.add_argument("--limit", type=int, help="only the first N records (N >= 1)")
    p.add_argument("--batch-size", type=int, default=16, help="samples per judge call (>= 1)")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("gate", help="exit 0 if a run meets its thresholds, 1 if not, 2 on usage/input error")
    p.add_argument("run", help="run folder (or its summary.json)")
    p.add_argument("--min", action="append", metavar="METRIC[:JUDGE]=VALUE", help="minimum mean (repeatable)")
    p.add_argument("--max-unmeasured", type=float, help="largest allowed share of unmeasured results, in [0, 1]")
    p.add_argument("--ci-lower", action="store_true", help="compare the 95%% CI lower bound, not the mean")
    p.add_argument("--junit", help="JUnit XML report path (default RUN/gate.xml)")
    p.add_argument("--pyproject", default="pyproject.toml", help="where [tool.ragdoctor.gate] thresholds live")
    p.set_defaults(func=cmd_gate)
