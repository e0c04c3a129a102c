#!/usr/bin/env python
"""Judge families side by side on the same seeded subsamples of the human-labelled dev sets: the trained compact
judge (nli), the LLM judges (our claim-level yes/no judge and ragas, each with the bundled Qwen 0.5B and 1.5B),
embedding similarity and the lexical baseline.

    python bench/judge_families.py [--plan default|quick] [--out runs/meta-eval-llm] [--json bench/results/judge_families.json]

Each cell is one `ragdoctor meta-eval` run (eval/meta) on the first N records of a seeded shuffle (seed 0), so every
judge in a row sees exactly the same records. A finished cell is read back from OUT/<model>/<judge>/<set>-<metric>-n<N>/
results.json instead of being recomputed, so an interrupted bench resumes. LLM judges are slow on a 2-core CPU
(the 0.5B claim judge: ~0.7 claim-premise pairs/s; ragas: tens of seconds per sample), hence the subsamples: read
the CIs. Prints a table and writes JSON. Not a timed test.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from rag.offline import set_offline_env  # noqa: E402

set_offline_env()

from eval.judges.registry import JudgeOptions  # noqa: E402
from eval.meta.datasets import default_path  # noqa: E402
from eval.meta.meta_eval import MetaEvalOptions, headline, run_meta_eval, save_report  # noqa: E402
from ragdoctor.flow import llm_factory  # noqa: E402

FAST = [("none", "lexical"), ("none", "nli"), ("none", "embedding")]
LLMS = [("qwen2.5-0.5b", "llm"), ("qwen2.5-0.5b", "ragas"), ("qwen2.5-1.5b", "llm"), ("qwen2.5-1.5b", "ragas")]
# (set, metric, records, judges): sized to finish in about two hours on 2 cores
PLANS = {
    "default": [("halueval", "groundedness", 60, [LLMS[0]]), ("halueval", "groundedness", 40, [LLMS[2]]),
                ("halueval", "groundedness", 30, [LLMS[1]]), ("halueval", "groundedness", 10, [LLMS[3]]),
                ("wice", "groundedness", 60, [LLMS[0]]), ("wice", "groundedness", 40, [LLMS[2]]),
                ("ares", "groundedness", 40, [LLMS[0]]), ("ares", "groundedness", 20, [LLMS[1], LLMS[2]]),
                ("ares", "context_relevance", 30, [LLMS[0]])],
    "quick": [("halueval", "groundedness", 10, [LLMS[0]]), ("wice", "groundedness", 10, [LLMS[0]])],
}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def cell(out: Path, model: str, judge: str, dataset: str, metric: str, n: int, data_root: Path) -> dict:
    folder = out / model / judge / f"{dataset}-{metric}-n{n}"
    done = folder / "results.json"
    if not done.exists():
        log(f"{judge} ({model}) on {dataset}/{metric}, {n} records ...")
        with ExitStack() as stack:
            factory = None
            if model != "none":
                factory = llm_factory(stack, None, model)
            opts = MetaEvalOptions(judges=[judge], limit=n, metrics=[metric],
                                   judge_options=JudgeOptions(llm_factory=factory))
            t = time.perf_counter()
            report = run_meta_eval(dataset, default_path(dataset, data_root), opts)
        save_report(report, folder)
        log(f"  done in {time.perf_counter() - t:.0f} s")
    body = json.loads(done.read_text())
    results = [r for r in body["results"] if r["metric"] == metric and r["judge"] == judge]
    if not results:
        reason = "; ".join(u["reason"] for u in body.get("unavailable", [])) or "no result"
        return {"error": reason}
    return results[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plan", choices=sorted(PLANS), default="default")
    ap.add_argument("--out", default=str(ROOT / "runs" / "meta-eval-llm"))
    ap.add_argument("--data-root", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "judge_families.json"))
    args = ap.parse_args(argv)
    out, data_root = Path(args.out), Path(args.data_root)
    rows, seen = [], set()
    for dataset, metric, n, llm_judges in PLANS[args.plan]:
        for model, judge in FAST + llm_judges:
            if (dataset, metric, n, judge, model) in seen:  # plans may repeat a fast judge on the same records
                continue
            seen.add((dataset, metric, n, judge, model))
            r = cell(out, model, judge, dataset, metric, n, data_root)
            key, value = headline(r) if "error" not in r else ("-", None)
            rows.append({"set": dataset, "metric": metric, "n": n, "judge": judge, "model": model, "statistic": key,
                         "value": value, "ci": r.get(f"{key}_ci"), "n_unmeasured": r.get("n_unmeasured"),
                         "seconds": r.get("seconds"), "error": r.get("error")})
    lines = ["| set / metric | n | judge | model | statistic | value [95% CI] | unmeasured | seconds |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ci = f" [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]" if r["ci"] else ""
        value = f"{r['value']:.3f}{ci}" if r["value"] is not None else (r["error"] or "-")
        lines.append(f"| {r['set']} / {r['metric']} | {r['n']} | {r['judge']} | {r['model']} | {r['statistic']} | "
                     f"{value} | {r['n_unmeasured'] if r['n_unmeasured'] is not None else '-'} | "
                     f"{r['seconds'] if r['seconds'] is not None else '-'} |")
    print("\n".join(lines))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({"plan": args.plan, "rows": rows}, indent=1, default=float) + "\n")
    log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
