"""`ragdoctor diagnose RUN`: sort every sample of an evaluated run into the failure taxonomy, optionally with
counterfactual probes (they regenerate answers, so they need the index and a generator)."""
from __future__ import annotations

import json
from pathlib import Path

from corpora.errors import InputError
from ragdoctor.table import render


def diagnose_run(run_dir: Path):
    from diagnostics.report import diagnose, write_diagnosis
    from eval.runner import read_judgements

    if not run_dir.is_dir():
        raise InputError(run_dir, "run folder not found (a folder written by `ragdoctor eval`)")
    judgements = read_judgements(run_dir)
    if not judgements:
        raise InputError(run_dir, "no judged samples (results.jsonl): evaluate first with `ragdoctor eval`")
    diagnoses, report = diagnose(judgements)
    write_diagnosis(run_dir, diagnoses, report)
    return judgements, diagnoses, report


def run_probes(args, run_dir: Path, judgements, diagnoses, report) -> int:
    from diagnostics.probes import probe_run
    from diagnostics.report import write_diagnosis
    from eval.judges.registry import JudgeOptions, make_judge
    from eval.records import Context
    from rag.session import open_pipeline
    from ragdoctor.cli import config_from_args

    judge = make_judge(args.probe_judge, JudgeOptions(nli_model=getattr(args, "nli_model", None)))

    def correctness(sample):
        r = judge.judge("answer_correctness", [sample])[0]
        return r.value if r.measured else None

    with open_pipeline(config_from_args(args)) as pipe:
        def chunks_of(doc_ids):
            return [Context(id=c.chunk_id, doc_id=c.doc_id, text=c.text, rank=c.rank) for c in pipe.chunks_of(doc_ids)]

        n = probe_run(diagnoses, {j.sample_id: j.sample for j in judgements if j.sample}, pipe.generate, correctness,
                      chunks_of, limit=args.probe_limit)
    causes: dict[str, int] = {}
    for d in diagnoses:
        if d.probe and d.probe.get("root_cause"):
            causes[d.probe["root_cause"]] = causes.get(d.probe["root_cause"], 0) + 1
    report["probe_root_causes"] = causes
    write_diagnosis(run_dir, diagnoses, report)
    return n


def render_categories(report: dict) -> str:
    rows = [(c["category"], c["count"], f"{100 * c['share']:.0f}%", ", ".join(c["examples"])) for c in report["categories"]]
    out = render(["category", "count", "share", "examples"], rows)
    q = report["metric_disagreements"]["groundedness_x_correctness"]
    out += "\n\n" + render(["groundedness x correctness", "count", "examples"],
                           [(name, v["count"], ", ".join(v["examples"][:3])) for name, v in q.items()])
    for name, jd in report["judge_disagreements"].items():
        if jd["agreement"] is not None:
            out += f"\n{name}: {jd['claims']} shared claims, agreement {jd['agreement']:.2f}"
    if report.get("probe_root_causes"):
        out += "\n\n" + render(["probe root cause", "samples"], sorted(report["probe_root_causes"].items()))
    return out


def cmd_diagnose(args) -> int:
    run_dir = Path(args.run)
    judgements, diagnoses, report = diagnose_run(run_dir)
    if args.probes:
        run_probes(args, run_dir, judgements, diagnoses, report)
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
    p.add_argument("--probes", action="store_true",
                   help="regenerate failed answers with changed contexts to find the root cause (model calls)")
    p.add_argument("--probe-limit", type=int, help="probe at most N failed samples (N >= 1)")
    p.add_argument("--probe-judge", default="nli", choices=("nli", "lexical", "embedding", "llm", "ragas"),
                   help="judge for the probes' answer correctness (default nli)")
    p.add_argument("--nli-model", help="CrossEncoder folder for the nli judge")
    pipeline_options(p)
    p.set_defaults(func=cmd_diagnose)
