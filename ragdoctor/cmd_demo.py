"""`ragdoctor demo`: the main job on the bundled corpus with the bundled models, end to end:
index -> answer the question set -> evaluate -> gate -> diagnose, printing each table."""
from __future__ import annotations

import argparse

from corpora.bundled import demo_questions
from corpora.errors import UsageError, warn
from corpora.run_folder import GATE_REPORT, TRACES, RunFolder
from rag.fleet import render_requests
from ragdoctor.cmd_diagnose import render_categories
from ragdoctor.cmd_eval import gate_config, render_checks, render_eval_summary
from ragdoctor.cmd_pipeline import render_index
from ragdoctor.options import config_from_args
from ragdoctor.run_report import render_summary


def cmd_demo(args: argparse.Namespace) -> int:
    from ragdoctor import flow  # noqa: PLC0415 - lazy in every command: the library loads when one runs

    cfg = config_from_args(args)
    run = RunFolder(args.out)
    selection = flow.Selection.of(args.judges, args.metrics, args.nli_model)
    print("== 1/5 index ==")
    print(render_index(*flow.index(cfg)))
    questions = None if args.full or cfg.questions != "bundled" else demo_questions()
    what = (f"{len(questions)} of the bundled questions, every planted kind (--full: all)" if questions is not None
            else "the question set")
    if args.limit:
        what = f"the first {args.limit} of {what}"
    model = "bundled model" if not cfg.generation.base_url else f"model {cfg.generation.model} at the given server"
    print(f"\n== 2/5 answer {what} ({model}; a rerun resumes) ==")
    result = flow.answer_questions(cfg, run.file(TRACES), questions=questions, limit=args.limit)
    print(render_summary(flow.write_run_summary(run, result.traces, result.requests)))
    if result.requests is not None and (result.requests["retries"] or result.requests["failed"]):
        print(render_requests(result.requests))
    print(f"traces: {run.file(TRACES)}")
    print("\n== 3/5 evaluate ==")
    ev = flow.evaluate_file(run.file(TRACES), run.path, selection, nli_model=args.nli_model)
    print(render_eval_summary(ev.summary))
    print("\n== 4/5 gate (thresholds from [tool.ragdoctor.gate] in pyproject.toml) ==")
    thresholds = gate_config(args.pyproject)
    if thresholds.has_thresholds:
        try:  # the verdict is printed before its report is written; a report that cannot be written is skipped
            flow.gate_run(run.path, thresholds, run.file(GATE_REPORT),
                          show=lambda code, checks: print(render_checks(code, checks), flush=True),
                          skip_report=lambda exc: warn(f"no JUnit report written: {exc}"))
        except UsageError as exc:  # a threshold on a metric these --judges/--metrics did not evaluate
            print(f"gate skipped: {exc}")
    else:  # `ragdoctor gate` refuses to pass a run against nothing; so does the demo
        print("gate skipped: no thresholds ([tool.ragdoctor.gate] in ./pyproject.toml, or pass --pyproject FILE)")
    print("\n== 5/5 diagnose ==")
    _, _, report = flow.diagnose_run(run.path)
    print(render_categories(report))
    print(f"\nrun folder: {run.path}  (open it with `ragdoctor dashboard {run.path}`)")
    return 0


def register(sub: argparse._SubParsersAction, pipeline_options) -> None:
    p = sub.add_parser("demo", help="index, answer, evaluate, gate and diagnose the bundled corpus with bundled models")
    p.add_argument("--out", default="runs/demo", help="run folder (default runs/demo)")
    p.add_argument("--full", action="store_true",
                   help="answer all 84 bundled questions (default: a stratified set of 24 with every planted kind)")
    p.add_argument("--limit", type=int, help="only the first N questions (N >= 1)")
    p.add_argument("--judges", help="comma-separated (default: nli when shipped, lexical, embedding, labels)")
    p.add_argument("--metrics", help="comma-separated metric names (default: all)")
    p.add_argument("--nli-model", help="CrossEncoder folder (default: the shipped judge)")
    p.add_argument("--pyproject", help="[tool.ragdoctor.gate] thresholds (default ./pyproject.toml when there is one)")
    pipeline_options(p)
    p.set_defaults(func=cmd_demo, questions=None)
