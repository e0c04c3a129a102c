#!/usr/bin/env python
"""The retrieval default against the previous one, on every labelled corpus at hand: document nDCG@10 per query for
both settings, the paired bootstrap difference over all queries (and over each hash half the retrieval lab uses), and
the rerank stage's latency.

    python bench/retrieval_default.py [--datasets scifact:train,cranfield:test,bundled] [--data-dir DIR]
                                      [--index-root DIR] [--embedding-backend torch|torch-bf16]
                                      [--embedder minilm|fake|DIR] [--reranker NAME|DIR]
                                      [--out bench/results/retrieval_default.json]

"previous" is hybrid RRF over dense and BM25 (k1 1.5, b 0.75), no rerank stage (the default until session 21);
"default" is whatever ``RetrievalConfig()`` and ``IndexConfig()`` say now. Both are measured through the retrieval
lab's code (eval/retrieval_lab.run_lab: 100 chunk hits per query, a document scores its best chunk), so the numbers
match ``ragdoctor retrieval-lab``'s rows. Indexes are built once under --index-root and reused. Not a timed test.
"""
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

from corpora.errors import InputError  # noqa: E402
from eval.meta.stats import paired_difference  # noqa: E402
from eval.retrieval_lab import Setting, half, run_lab  # noqa: E402
from rag.bm25 import BM25Index  # noqa: E402
from rag.config import IndexConfig, PipelineConfig, RetrievalConfig  # noqa: E402
from rag.reranker import CrossEncoderReranker  # noqa: E402
from rag.retrievers import make_retriever  # noqa: E402
from rag.session import embedder_for, open_index  # noqa: E402
from ragdoctor.labelled_queries import labelled_queries  # noqa: E402
from ragdoctor.table import fmt, render  # noqa: E402

PREVIOUS = Setting("hybrid", "rrf", 0.5, (1.5, 0.75), None)


def default_setting() -> Setting:
    r, i = RetrievalConfig(), IndexConfig()
    return Setting(r.mode, r.fusion if r.mode == "hybrid" else "rrf", r.dense_weight, (i.bm25_k1, i.bm25_b),
                   r.rerank_weight if r.rerank else None)


def measure(corpus: str, split: str, index_dir: Path, backend: str, embedder_name: str = "minilm",
            reranker_name: str | None = None, seed: int = 0) -> dict:
    """Both settings on one corpus's labelled queries."""
    cfg = PipelineConfig.model_validate({"corpus": corpus, "index_dir": str(index_dir),  # the index's own BM25
                                         "embedding": {"backend": backend, "model": embedder_name},  # is not used:
                                         "index": {"bm25_k1": PREVIOUS.bm25[0],  # both settings set theirs
                                                   "bm25_b": PREVIOUS.bm25[1]}})
    found = labelled_queries(cfg.corpus, None, None if corpus == "bundled" else split, own_index=True)
    if found is None:
        raise SystemExit(f"{corpus}: no labelled queries for split {split}")
    embedder = embedder_for(cfg)
    store, _ = open_index(cfg, embedder)
    new = default_setting()
    reranker = CrossEncoderReranker(reranker_name or cfg.retrieval.reranker, max_length=cfg.retrieval.rerank_max_length)
    t = time.perf_counter()
    lab = run_lab(store, embedder, found.questions, found.ids, found.qrels, [PREVIOUS, new], PREVIOUS,
                  make_retriever=make_retriever, bm25_build=BM25Index.build, reranker=reranker,
                  rerank_depth=cfg.retrieval.rerank_depth, seed=seed, keep_per_query=True)
    a, b = np.array(lab["per_query"][new.name]), np.array(lab["per_query"][PREVIOUS.name])
    halves = np.array([half(q) for q in lab["query_ids"]])
    parts = {"all": np.ones(len(a), bool), "choose": halves == "choose", "confirm": halves == "confirm"}
    out: dict = {"corpus": corpus, "split": split, "queries": len(a), "default": new.name, "previous": PREVIOUS.name,
                 "reranker": reranker.name, "reranker_precision": reranker.precision,
                 "rerank_ms_p50": lab["rerank_ms_p50"], "seconds": round(time.perf_counter() - t, 1),
                 "per_query": {"query_ids": lab["query_ids"], "default": a.tolist(), "previous": b.tolist()}}
    for name, sel in parts.items():
        x, y = a[sel], b[sel]
        if not x.size:
            out[name] = {"n": 0, "default": None, "previous": None, "difference": None, "ci": [None, None],
                         "verdict": None, "unmeasured": "no labelled query in this half"}
            continue
        d = paired_difference(lambda idx, x=x: float(x[idx].mean()), lambda idx, y=y: float(y[idx].mean()),
                              len(x), n_resamples=2000, seed=seed)
        out[name] = {"n": int(sel.sum()), "default": float(x.mean()), "previous": float(y.mean()),
                     "difference": d["difference"], "ci": list(d["ci"]), "verdict": d["verdict"]}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="scifact:train,cranfield:test,bundled",
                    help="comma-separated NAME[:SPLIT] (BEIR folders under --data-dir) or 'bundled'")
    ap.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--index-root", type=Path, default=ROOT / ".ragdoctor" / "bench-retrieval-default")
    ap.add_argument("--embedder", default="minilm", help="minilm (bundled), fake (tests) or a sentence-transformers "
                                                         "folder")
    ap.add_argument("--embedding-backend", default="torch", choices=["torch", "torch-bf16"])
    ap.add_argument("--reranker", help="the default setting's rerank model: a registered name or a CrossEncoder folder "
                                       "(default: the configuration's, rerank-minilm)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "retrieval_default.json")
    args = ap.parse_args(argv)
    load_start = list(os.getloadavg())
    items = [item.partition(":") for item in filter(None, args.datasets.split(","))]
    missing = [str(args.data_dir / name) for name, _, _ in items if name != "bundled" and not (args.data_dir / name).is_dir()]
    if missing:
        print(f"retrieval_default bench: data folder not found: {', '.join(missing)} (use --data-dir)", file=sys.stderr)
        return 2
    results = []
    try:
        for name, _, split in items:
            corpus = "bundled" if name == "bundled" else str(args.data_dir / name)
            results.append(measure(corpus, split or "test", args.index_root / name, args.embedding_backend,
                                   args.embedder, args.reranker))
            r = results[-1]
            print(f"{name}: {r['queries']} queries, {r['seconds']} s", file=sys.stderr)
    except InputError as exc:  # a corpus, split or model that cannot be read: one line, as the CLI says it
        print(f"retrieval_default bench: {exc}", file=sys.stderr)
        return 2
    rows = []
    for r in results:
        for part in ("all", "choose", "confirm"):
            m = r[part]
            lo, hi = m["ci"]
            ci = "-" if lo is None else f"{lo:+.3f}..{hi:+.3f}"
            diff = "-" if m["difference"] is None else f"{m['difference']:+.3f}"
            rows.append([f"{Path(r['corpus']).name} {r['split'] if r['corpus'] != 'bundled' else ''}".strip(), part,
                         m["n"], m["previous"], m["default"], diff, ci, m["verdict"] or "unmeasured"])
    print(render(["corpus", "queries", "n", "previous nDCG@10", "default nDCG@10", "difference", "95% CI", "verdict"],
                 rows, f"default: {results[0]['default']}; previous: {results[0]['previous']}"))
    for r in results:
        print(f"{Path(r['corpus']).name}: rerank stage p50 {fmt(r['rerank_ms_p50'])} ms per query")
    report = {"results": results, "embedding_backend": args.embedding_backend, "cpu_count": os.cpu_count(),
              "loadavg_start": load_start, "loadavg_end": list(os.getloadavg())}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
