"""`ragdoctor diagnose RUN`: sort every sample of an evaluated run into the failure taxonomy."""
from __future__ import annotations

import json
from pathlib import Path

from corpora.errors import InputError
from ragdoctor.table import render


def diagnose_run(run_dir: Path):
    from diagnostics.report import diagnose, write_diagnosis
    from eval.runner import read_judgements

    judgements = read_judgements(run_dir)
    if not judgements:
        raise InputError(run_dir, "no judged samples (results.jsonl): evaluate first with `ragdoctor eval`")
    diagnoses, report = diagnose(judgements)
    write_diagnosis(run_dir, diagnoses, report)
    return diagnoses, report


def render_categories(report: dict) -> str:
    rows = [(c["category"], c["count"], f"{100 * c['share']:.0f}%", ", ".join(c["examples"])) for c in report["categories"]]
    out = render(["category", "count", "share", "examples"], rows)
    q = report["metric_disagreements"]["groundedness_x_correctness"]
    out += "\n\n" + render(["groundedness x correctness", "count", "examples"],
                           [(name, v["count"], ", ".join(v["examples"][:3])) for name, v in q.items()])
    for name, jd in report["judge_disagreements"].items():
        if jd["agreement"] is not None:
            out += f"\n{name}: {jd['claims']} shared claims, agreement {jd['agreement']:.2f}"
    return out


def cmd_diagnose(args) -> int:
    run_dir = Path(args.run)
    diagnoses, report = diagnose_run(run_dir)
    if args.format == "json":
        print(json.dumps(report, indent=2, default=str))
    else:
        print(render_categories(report))
        print(f"\ndiagnoses: {run_dir / 'diagnoses.jsonl'}")
    return 0


def register(sub, pipeline_options) -> None:
    p = sub.add_parser("diagnose", help="sort an evaluated run's samples into the failure taxonomy, with evidence")
    p.add_argument("run", help="run folder written by `ragdoctor eval`")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=cmd_diagnose)
