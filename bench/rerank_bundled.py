#!/usr/bin/env python
"""The rerank stage on the bundled demo corpus: retrieval quality and latency per question with the reranker off and
on, through the pipeline's own retrieve (the demo's config otherwise: hybrid, top_k 4, candidate_k 20).

    python bench/rerank_bundled.py [--depth 20] [--weight 1.0] [--out bench/results/rerank_bundled.json]

Both variants run in one process, question by question interleaved, so machine load weighs on both alike.
Not a timed test: numbers depend on the machine (the JSON records its load average)."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from rag.offline import set_offline_env  # noqa: E402

set_offline_env()

from corpora.bundled import bundled_questions  # noqa: E402
from eval.retrieval_metrics import mean_metrics, retrieval_metrics  # noqa: E402
from rag.config import PipelineConfig, RetrievalConfig  # noqa: E402
from rag.llm import FakeLLM  # noqa: E402
from rag.session import open_pipeline  # noqa: E402
from ragdoctor.table import fmt, render  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--depth", type=int, default=RetrievalConfig().rerank_depth, help="chunks reranked per question")
    ap.add_argument("--weight", type=float, default=RetrievalConfig().rerank_weight, help="reranker share (1: pure)")
    ap.add_argument("--reranker", default=RetrievalConfig().reranker,
                    help="the rerank stage's cross-encoder: a registered name or a CrossEncoder folder")
    ap.add_argument("--index-dir", default=str(ROOT / ".ragdoctor" / "bench-rerank-index"))
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "rerank_bundled.json")
    args = ap.parse_args(argv)
    load_start = list(os.getloadavg())
    questions = [q for q in bundled_questions() if q.relevant_doc_ids]
    base = {"index_dir": args.index_dir}
    on = PipelineConfig.model_validate({**base, "retrieval": {"rerank": True, "rerank_depth": args.depth,
                                                              "rerank_weight": args.weight,
                                                              "reranker": args.reranker}})
    off = PipelineConfig.model_validate({**base, "retrieval": {"rerank": False}})  # the default's first stage alone
    rankings: dict[str, dict[str, list[str]]] = {"off": {}, "on": {}}
    ms: dict[str, list[float]] = {"off": [], "on": [], "rerank": []}
    with open_pipeline(off, llm=FakeLLM()) as p_off, open_pipeline(on, llm=FakeLLM()) as p_on:
        p_on.retrieve("warm-up: the reranker loads before anything is timed")
        p_off.retrieve("warm-up")
        for q in questions:
            for name, pipe in (("off", p_off), ("on", p_on)):
                t = time.perf_counter()
                ranked, rerank_ms = pipe._ranked(q.question)
                ms[name].append((time.perf_counter() - t) * 1000)
                if rerank_ms is not None:
                    ms["rerank"].append(rerank_ms)
                rankings[name][q.id] = list(dict.fromkeys(c.doc_id or c.chunk_id for c in ranked))
    qrels = {q.id: {d: 1 for d in q.relevant_doc_ids or []} for q in questions}
    quality = {name: mean_metrics(retrieval_metrics(qrels, r, ks=(1, 4, 10))) for name, r in rankings.items()}

    def pct(xs: list[float]) -> dict[str, float]:
        return {"p50_ms": float(np.percentile(xs, 50)), "p95_ms": float(np.percentile(xs, 95))}

    latency = {"retrieve_off": pct(ms["off"]), "retrieve_on": pct(ms["on"]), "rerank_stage": pct(ms["rerank"])}
    rows = [[name, quality[name]["ndcg@10"], quality[name]["recall@4"], quality[name]["mrr@10"],
             latency[f"retrieve_{name}"]["p50_ms"], latency[f"retrieve_{name}"]["p95_ms"]] for name in ("off", "on")]
    print(render(["rerank", "nDCG@10", "recall@4", "MRR@10", "retrieve p50 ms", "p95 ms"], rows,
                 f"bundled corpus, {len(questions)} labelled questions, reranker {args.reranker}, depth {args.depth}, weight "
                 f"{args.weight}: rerank stage p50 {fmt(latency['rerank_stage']['p50_ms'])} ms, p95 "
                 f"{fmt(latency['rerank_stage']['p95_ms'])} ms"))
    report = {"questions": len(questions), "reranker": args.reranker, "depth": args.depth, "weight": args.weight, "quality": quality,
              "latency": latency, "cpu_count": os.cpu_count(), "loadavg_start": load_start,
              "loadavg_end": list(os.getloadavg())}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
