"""`ragdoctor diagnose RUN`: sort every sample of an evaluated run into the failure taxonomy, optionally with
counterfactual probes (they regenerate answers, so they need the index and a generator)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from corpora.errors import InputError, UsageError
from corpora.paths import refuse_symlink_loop
from corpora.run_folder import DIAGNOSES, RunFolder
from eval.judges.registry import check_nli_model
from ragdoctor.cmd_pipeline import checked_config
from ragdoctor.options import given_pipeline_flags
from ragdoctor.table import render


def render_categories(report: dict) -> str:
    rows = [(c["category"], c["count"], f"{100 * c['share']:.0f}%", ", ".join(c["examples"]))
            for c in report["categories"]]
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


def cmd_diagnose(args: argparse.Namespace) -> int:
    from ragdoctor import flow  # noqa: PLC0415 - lazy in every command: the library loads when one runs

    run_dir = Path(args.run)
    refuse_symlink_loop(run_dir)
    if run_dir.is_file():  # records or a traces log: not "not found", it is there but is no run folder
        hint = (f"give the folder it is in ({run_dir.parent})" if RunFolder.is_run(run_dir.parent) else
                "evaluate it first (`ragdoctor eval FILE --out DIR`), then diagnose that folder")
        raise InputError(run_dir, f"is a file, not a run folder: {hint}")
    if not args.probes:  # the probes alone read these: silently ignored otherwise
        given = [f for f, v in (("--probe-judge", args.probe_judge), ("--nli-model", args.nli_model),
                                ("--probe-limit", args.probe_limit)) if v is not None]
        given += given_pipeline_flags(args)
        if given:
            raise UsageError(f"{', '.join(given)}: only --probes reads {'them' if len(given) > 1 else 'it'}")
    if args.guardrails:  # the probes call the generator with chosen passages: no rail would run on them
        raise UsageError("--guardrails: the probes regenerate answers from passages they choose, past the rails; "
                         "run the pipeline with --guardrails instead")
    judge = args.probe_judge or "nli"
    if args.nli_model is not None and judge != "nli":
        raise UsageError(f"--nli-model: only the nli probe judge reads it, and --probe-judge is {judge}")
    check_nli_model(args.nli_model)  # its files now; the probes load it
    judgements, diagnoses, report = flow.diagnose_run(run_dir)
    if args.probes:
        flow.probe(run_dir, checked_config(args), judgements, diagnoses, report, judge=judge,
                   nli_model=args.nli_model, limit=args.probe_limit)
    if args.format == "json":
        print(json.dumps(report, indent=2, default=str))
    else:
        print(render_categories(report))
        print(f"\ndiagnoses: {run_dir / DIAGNOSES}")
    return 0


def register(sub: argparse._SubParsersAction, pipeline_options) -> None:
    p = sub.add_parser("diagnose", help="sort an evaluated run's samples into the failure taxonomy, with evidence")
    p.add_argument("run", help="run folder written by `ragdoctor eval`")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.add_argument("--probes", action="store_true",
                   help="regenerate failed answers with changed contexts to find the root cause (model calls)")
    p.add_argument("--probe-limit", type=int, help="probe at most N failed samples (N >= 1)")
    p.add_argument("--probe-judge", choices=("nli", "lexical", "embedding", "llm", "ragas"),
                   help="judge for the probes' answer correctness (default nli)")
    p.add_argument("--nli-model", help="CrossEncoder folder for the nli judge")
    pipeline_options(p, "index", "generation")  # the probes choose their passages: no retrieval flag applies
    p.set_defaults(func=cmd_diagnose)
