"""Context budget: the quality/latency trade-off of packing the ranked chunks into N tokens (rag/context_budget.py)
against today's fixed top-k, on the demo question set with the bundled model and the default judges.

One index, and per setting a pipeline and its own bundled model server: llama.cpp keeps the KV state of earlier
prompts and reuses the longest matching prefix, so with one shared server a setting would read for free the chunks
another setting had sent for the same question (measured: a first run on one server gave top-k 1.4 s of prompt reading
at 682 tokens and 512 tokens 10 s at 689). Each server sees only its own setting's prompts, as in a real run. The
questions are answered in a Latin-square order: every setting answers every question and each setting's requests are
spread over the whole run, so machine load weighs on every setting alike. Then each
setting's traces are evaluated with the default judges into their own run folder. Per setting it reports the mean
prompt tokens the server counted (and the budget counter's tokens for the chunks), p50 latency per question,
retrieval recall@5 over the ranking (the same retriever: equal by construction), the share of the relevant documents
that reached the prompt, and context recall, context precision, groundedness and answer correctness (the most trusted
default judge that measured each).

    .venv/bin/python bench/context_budget.py [--budgets top-k,256,512,768] [--limit N] [--out bench/results/context_budget.json]
    .venv/bin/python bench/context_budget.py --llm fake --embedder fake --judges lexical,labels   # plumbing, seconds"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag.offline import set_offline_env  # noqa: E402

set_offline_env()

import numpy as np  # noqa: E402

from corpora.bundled import demo_questions  # noqa: E402
from corpora.records import Trace  # noqa: E402
from eval.judges.registry import trust_rank  # noqa: E402
from rag.config import PipelineConfig  # noqa: E402
from rag.llm import FakeLLM  # noqa: E402
from rag.pipeline import Pipeline  # noqa: E402
from rag.session import embedder_for, open_generator  # noqa: E402
from ragdoctor import flow  # noqa: E402
from ragdoctor.run_report import summarize_traces  # noqa: E402
from ragdoctor.table import render  # noqa: E402

METRICS = ("context_recall", "context_precision", "groundedness", "answer_correctness")


def settings(spec: str) -> list[tuple[str, int | None]]:
    out: list[tuple[str, int | None]] = []
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        out.append(("top-k", None) if part in ("top-k", "topk") else (f"{int(part)} tokens", int(part)))
    return out


def best_judge(summary: dict, metric: str) -> dict | None:
    """The summary row of the most trusted judge that measured ``metric``."""
    rows = [m for m in summary["metrics"] if m["metric"] == metric and m["n"] > 0]
    rows.sort(key=lambda m: trust_rank(m["judge"]))
    return rows[0] if rows else None


def docs_in_prompt(traces: list[Trace]) -> float | None:
    """Mean share of a labelled question's relevant documents that have a chunk in the prompt."""
    shares = [len(set(t.relevant_doc_ids) & {c.doc_id for c in t.chunks}) / len(set(t.relevant_doc_ids))
              for t in traces if t.relevant_doc_ids]
    return float(np.mean(shares)) if shares else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budgets", default="top-k,256,512,768", help="comma-separated: 'top-k' and token budgets")
    ap.add_argument("--limit", type=int, help="only the first N demo questions")
    ap.add_argument("--llm", choices=("bundled", "fake"), default="bundled", help="fake: rag.llm.FakeLLM (plumbing)")
    ap.add_argument("--embedder", default="minilm", help="'minilm' (bundled) or 'fake' (plumbing)")
    ap.add_argument("--judges", help="comma-separated judges (default: the default judges)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "context_budget.json"))
    args = ap.parse_args(argv)
    chosen = settings(args.budgets)
    questions = demo_questions()[: args.limit or None]
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        base = PipelineConfig.model_validate({"index_dir": str(Path(tmp) / "index"),
                                              "embedding": {"model": args.embedder}})
        cfgs = {label: base.model_copy(update={"retrieval": base.retrieval.model_copy(
            update={"context_tokens": budget})}) for label, budget in chosen}
        for cfg in cfgs.values():  # the same validation a config file gets
            PipelineConfig.model_validate(cfg.model_dump())
        embedder = embedder_for(base)
        store, _ = flow.index(base)
        traces: dict[str, list[Trace]] = {label: [] for label in cfgs}
        with ExitStack() as stack:
            pipes = {label: Pipeline(cfg, store, embedder, stack.enter_context(
                open_generator(cfg, FakeLLM() if args.llm == "fake" else None))) for label, cfg in cfgs.items()}
            for pipe in pipes.values():  # warm-up: the weights' pages, the system prompt's KV cache
                pipe.answer(questions[0].question)
            labels = list(pipes)
            started = time.perf_counter()
            for r in range(len(labels)):  # Latin square: round r gives question i to setting (i + r) mod n
                for i, q in enumerate(questions):
                    label = labels[(i + r) % len(labels)]
                    traces[label].append(pipes[label].answer(q.question, q))
                    print(f"\r{sum(map(len, traces.values()))}/{len(labels) * len(questions)} answers", end="",
                          file=sys.stderr, flush=True)
            answer_s = time.perf_counter() - started
        print(file=sys.stderr)
        rows = []
        for label, ts in traces.items():
            ts.sort(key=lambda t: [q.id for q in questions].index(t.sample_id))
            run = Path(tmp) / "runs" / label.replace(" ", "-")
            run.mkdir(parents=True)
            path = run / "traces.jsonl"
            path.write_text("".join(t.model_dump_json() + "\n" for t in ts), encoding="utf-8")
            t0 = time.perf_counter()
            ev = flow.evaluate_file(path, run, flow.Selection.of(args.judges), progress=False)
            eval_s = time.perf_counter() - t0
            told = [t for t in ts if "prompt_tokens" in t.usage]
            budget_tokens = [t.metadata["context_budget"]["tokens"] for t in ts if "context_budget" in t.metadata]
            row = {"setting": label, "budget": cfgs[label].retrieval.context_tokens, "questions": len(ts),
                   "errors": sum(t.outcome == "error" for t in ts),
                   "refused": sum(t.outcome == "refused" for t in ts),
                   "chunks_mean": float(np.mean([len(t.chunks) for t in ts])),
                   "cut_share": float(np.mean([bool(t.metadata.get("context_budget", {}).get("cut")) for t in ts])),
                   "prompt_tokens_mean": float(np.mean([t.usage["prompt_tokens"] for t in told])) if told else None,
                   "cached_tokens_mean": float(np.mean([t.usage.get("cached_tokens", 0) for t in told])) if told
                   else None,
                   "budget_tokens_mean": float(np.mean(budget_tokens)) if budget_tokens else None,
                   "latency_ms_p50": float(np.median([t.latency_ms["total"] for t in ts])),
                   "read_prompt_ms_p50": float(np.median(v)) if (v := [t.latency_ms["read_prompt"] for t in ts
                                                                       if "read_prompt" in t.latency_ms]) else None,
                   "recall@5": summarize_traces(ts)["retrieval"].get("recall@5"),
                   "docs_in_prompt": docs_in_prompt(ts), "eval_s": eval_s, "metrics": {}}
            for metric in METRICS:
                m = best_judge(ev.summary, metric)
                row["metrics"][metric] = None if m is None else {k: m[k] for k in ("judge", "mean", "ci_low",
                                                                                     "ci_high", "n")}
            rows.append(row)

    def cell(v, fmt="{:.3f}"):
        return "unmeasured" if v is None else fmt.format(v)

    def metric_cell(row, metric):
        m = row["metrics"][metric]
        return "unmeasured" if m is None else f"{m['mean']:.3f} ({m['judge']})"

    print(render(["setting", "chunks", "cut", "prompt tokens", "cached", "p50 s/question", "recall@5", "relevant docs in prompt",
                  *METRICS],
                 [(r["setting"], f"{r['chunks_mean']:.1f}", f"{r['cut_share']:.0%}", cell(r["prompt_tokens_mean"], "{:.0f}"),
                   cell(r["cached_tokens_mean"], "{:.0f}"),
                   cell(r["latency_ms_p50"] / 1000, "{:.1f}"), cell(r["recall@5"]), cell(r["docs_in_prompt"]),
                   *(metric_cell(r, m) for m in METRICS)) for r in rows]))
    out = {"questions": len(questions), "servers": "one bundled model server per setting", "model": base.generation.model if args.llm == "bundled" else "fake-llm",
           "embedder": args.embedder, "judges": flow.Selection.of(args.judges).judges, "answering_s": answer_s,
           "order": "latin square over questions and settings", "loadavg_start": load_start,
           "loadavg_end": os.getloadavg(), "cpus": os.cpu_count(), "rows": rows}
    print(f"\n{len(questions)} demo questions x {len(rows)} settings answered in {answer_s:.0f} s; load average "
          f"{load_start[0]:.1f} at start, {out['loadavg_end'][0]:.1f} at end, {os.cpu_count()} CPUs")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
