"""Judge throughput by engine: samples/s and claim pairs/s for ``--engine local`` and ``--engine ray`` with 1 and 2
workers, on the same traces, batches and judges (the run folders' verdicts are checked identical). Prints a table,
writes JSON.

    .venv/bin/python bench/eval_engines.py [--traces FILE] [--samples 48] [--judges nli,labels] [--workers 1,2]

Without --traces the 20 FakeLLM traces of the bundled question set in tests/data/equivalence are repeated (each copy
its own id) up to --samples. Each timing is one whole ``evaluate()`` into a fresh run folder: model loading, Ray's
actor start-up and the driver's writes included (Ray's own runtime start is timed apart, ``ray_init_s``). "claim pairs"
counts (claim, evidence) checks from the judgements' evidence: one per claim of each measured result, each scored
against up to 6 premise windows."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag.offline import set_offline_env  # noqa: E402

set_offline_env()

from corpora.errors import InputError  # noqa: E402
from corpora.records import Trace  # noqa: E402
from eval.adapters import load_traces  # noqa: E402
from ragdoctor import flow  # noqa: E402
from ragdoctor.table import render  # noqa: E402

DEFAULT_TRACES = ROOT / "tests" / "data" / "equivalence" / "traces.jsonl"


def samples_of(path: Path, n: int) -> list[Trace]:
    base, _ = load_traces(path)
    return [base[i % len(base)].model_copy(update={"sample_id": f"{base[i % len(base)].sample_id}~{i}"})
            for i in range(n)]


def claim_pairs(judgements) -> int:
    """Claims judged (answer claims against the contexts, reference claims against the contexts and the answer), from
    the measured results' evidence: each is scored against up to 6 premise windows (eval/judges/scorer.py)."""
    return sum(len((r.evidence or {}).get("claims", [])) for j in judgements for r in j.results if r.measured)


def verdicts(judgements) -> dict:
    return {j.sample_id: [(r.metric, r.judge, r.status, r.value) for r in j.results] for j in judgements}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", default=str(DEFAULT_TRACES))
    ap.add_argument("--samples", type=int, default=48)
    ap.add_argument("--judges", default="nli,labels")
    ap.add_argument("--metrics", default="groundedness,context_recall,answer_correctness")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--workers", default="1,2", help="Ray worker counts to time (comma-separated)")
    ap.add_argument("--gpus-per-worker", type=float, default=0.0)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "eval_engines.json"))
    args = ap.parse_args(argv)

    import ray  # noqa: PLC0415 - this benchmark is about Ray

    tmp = Path(tempfile.mkdtemp(prefix="ragdoctor-bench-engines-"))
    os.environ["RAGDOCTOR_CACHE"] = str(tmp / "cache")
    traces = samples_of(Path(args.traces), args.samples)
    src = tmp / "in.jsonl"
    src.write_text("".join(t.model_dump_json() + "\n" for t in traces), encoding="utf-8")
    selection = flow.Selection.of(args.judges, args.metrics)
    report: dict = {"traces": args.traces, "n_samples": len(traces), "judges": selection.judges,
                    "metrics": selection.metrics, "batch_size": args.batch_size, "cpus": os.cpu_count(),
                    "load_avg_start": os.getloadavg(), "engines": {}}
    runs = {}

    def timed(name: str, engine: str, ray_opts: flow.RayOptions | None) -> None:
        start = time.perf_counter()
        try:
            run = flow.evaluate_file(src, tmp / name, selection, batch_size=args.batch_size, progress=False,
                                     engine=engine, ray=ray_opts)
        except InputError as exc:  # e.g. --gpus-per-worker 1 on a machine without a GPU: this row only
            report["engines"][name] = {"unmeasured": str(exc)}
            print(f"{name}: unmeasured: {exc}", file=sys.stderr)
            return
        secs = time.perf_counter() - start
        pairs = claim_pairs(run.judgements)
        runs[name] = run
        report["engines"][name] = {"seconds": round(secs, 2), "samples_per_s": round(len(traces) / secs, 3),
                                   "claim_pairs": pairs, "claim_pairs_per_s": round(pairs / secs, 2)}

    try:
        timed("local", "local", None)
        if "local" not in runs:
            print(f"eval_engines bench: {report['engines']['local']['unmeasured']}", file=sys.stderr)
            return 2
        t = time.perf_counter()
        ray.init(num_cpus=os.cpu_count(), include_dashboard=False, address="local", logging_level="WARNING")
        report["ray_init_s"] = round(time.perf_counter() - t, 2)
        try:
            for n in (int(w) for w in args.workers.split(",") if w.strip()):
                timed(f"ray x{n}", "ray", flow.RayOptions(num_workers=n, gpus_per_worker=args.gpus_per_worker))
        finally:
            ray.shutdown()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # run folders and the embedding cache of this bench alone
    same = all(verdicts(r.judgements) == verdicts(runs["local"].judgements) for r in runs.values())
    report["identical_verdicts"] = same
    report["load_avg_end"] = os.getloadavg()
    base = report["engines"]["local"]["samples_per_s"]
    rows = [(name, len(traces), r["seconds"], r["samples_per_s"], r["claim_pairs_per_s"],
             f"{r['samples_per_s'] / base:.2f}x") if "unmeasured" not in r else
            (name, len(traces), "-", "-", "-", f"unmeasured: {r['unmeasured']}") for name, r in report["engines"].items()]
    print(render(["engine", "samples", "seconds", "samples/s", "claim pairs/s", "vs local"], rows,
                 title=f"{','.join(selection.judges)} on {','.join(selection.metrics)}, batch {args.batch_size}"))
    print(f"\nray.init: {report['ray_init_s']} s (not in the rows); verdicts identical across engines: {same}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(f"JSON: {args.out}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
