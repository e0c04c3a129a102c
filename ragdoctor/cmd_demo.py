"""`ragdoctor demo`: the main job on the bundled corpus with the bundled models, end to end:
index -> answer the question set -> evaluate -> gate -> diagnose, printing each table."""
from __future__ import annotations

import json
from pathlib import Path


def cmd_demo(args) -> int:
    from ragdoctor.cli import config_from_args
    from ragdoctor.cmd_diagnose import diagnose_run, render_categories
    from eval.judges.registry import covered, default_judges, parse_judges, parse_metrics
    from ragdoctor.cmd_eval import gate_config_from_args, gate_run, render_eval_summary, run_eval
    from ragdoctor.cmd_pipeline import cmd_index, run_pipeline
    from ragdoctor.run_report import render_summary, summarize_traces

    cfg = config_from_args(args)
    run_dir = Path(args.out)
    judges = parse_judges(args.judges if args.judges is not None else default_judges(args.nli_model))
    metrics = parse_metrics(args.metrics) if args.metrics is not None else covered(_metrics(), judges)
    print("== 1/5 index ==")
    cmd_index(_with(args, rebuild=False))
    print("\n== 2/5 answer the question set (bundled model; a rerun resumes) ==")
    result = run_pipeline(cfg, out=run_dir / "traces.jsonl", limit=args.limit)
    summary = summarize_traces(result.traces)
    (run_dir / "run_summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    print(render_summary(summary))
    print(f"traces: {run_dir / 'traces.jsonl'}")
    print("\n== 3/5 evaluate ==")
    ev = run_eval(run_dir / "traces.jsonl", run_dir, metrics=metrics, judges=judges, nli_model=args.nli_model)
    print(render_eval_summary(ev.summary))
    print("\n== 4/5 gate (thresholds from [tool.ragdoctor.gate] in pyproject.toml) ==")
    gate_cfg = gate_config_from_args(_with(args, min=None, max_unmeasured=None, ci_lower=False))
    code, checks = gate_run(run_dir, gate_cfg, run_dir / "gate.xml")
    for c in checks:
        print(("PASS  " if c.passed else "FAIL  ") + c.message)
    print(f"gate: {'passed' if code == 0 else 'FAILED'}")
    print("\n== 5/5 diagnose ==")
    _, _, report = diagnose_run(run_dir)
    print(render_categories(report))
    print(f"\nrun folder: {run_dir}  (open it with `ragdoctor dashboard {run_dir}`)")
    return 0


def _metrics() -> list[str]:
    from eval.judges.registry import DEFAULT_METRICS

    return list(DEFAULT_METRICS)


def _with(args, **kw):
    import argparse

    return argparse.Namespace(**{**vars(args), **kw})


def register(sub, pipeline_options) -> None:
    p = sub.add_parser("demo", help="index, answer, evaluate, gate and diagnose the bundled corpus with bundled models")
    p.add_argument("--out", default="runs/demo", help="run folder (default runs/demo)")
    p.add_argument("--limit", type=int, help="only the first N questions (N >= 1)")
    p.add_argument("--judges", help="comma-separated (default: nli when shipped, lexical, embedding, labels)")
    p.add_argument("--metrics", help="comma-separated metric names (default: all)")
    p.add_argument("--nli-model", help="CrossEncoder folder (default: the shipped judge)")
    p.add_argument("--pyproject", default="pyproject.toml")
    pipeline_options(p)
    p.set_defaults(func=cmd_demo, questions=None)
