#!/usr/bin/env python
"""Speed of the compact judge on this machine's CPU: claim-sentence pairs per second through the claim-level path
in each CPU precision (bf16 autocast where the CPU has native bf16, int8 feed-forward, fp32; eval/judges/nli.py),
and context relevance of a 2,000-word document (one call: the cheap ranker keeps a few windows, the relevance
cross-encoder scores them, the combiner maps them to P(relevant)).

    python bench/judge_speed.py [--judge DIR] [--pairs 512] [--json bench/results/judge_speed.json]

Text is built from the bundled corpus (real sentences, windows of one to three sentences). Prints a table and
writes JSON. Not a timed test: read it on a quiet machine (other load on the 2 cores halves it).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from rag.offline import set_offline_env  # noqa: E402

set_offline_env()

from corpora.bundled import bundled_documents  # noqa: E402
from eval.claims import split_sentences  # noqa: E402
from eval.judges.base import ClaimItem  # noqa: E402
from eval.judges.nli import cpu_precision, load_scorer, native_bf16  # noqa: E402
from eval.judges.weights import default_model_dir  # noqa: E402
from ragdoctor.table import render  # noqa: E402

NAMES = {"bf16": "bf16 autocast", "int8": "int8 FFN", "fp32": "fp32"}


def workload(n_pairs: int) -> tuple[list[ClaimItem], str, str]:
    """Claims with seven windows each (six sentence windows + one joined, as eval.metrics.claim_candidates makes),
    and a 2,000-word document with a question about it."""
    sents = [s for d in bundled_documents() for s in split_sentences(d.text)]
    items = []
    k = 0
    while sum(len(i.windows) for i in items) < n_pairs:
        claim = sents[k % len(sents)]
        wins = [" ".join(sents[(k + j) % len(sents) : (k + j) % len(sents) + 1 + j % 2]) for j in range(6)]
        wins.append(" ".join(sents[(k + j) % len(sents)] for j in (0, 3, 5)))
        items.append(ClaimItem(claim, wins, " ".join(wins)))
        k += 7
    doc = " ".join(sents)
    words = doc.split()
    doc = " ".join((words * (2000 // len(words) + 1))[:2000])
    return items, doc, "What block size does vLLM use for the paged KV cache?"


def measure(judge_dir: Path, precision: str, items: list[ClaimItem], doc: str, question: str, repeats: int) -> dict:
    scorer = load_scorer(judge_dir, precision=precision)
    scorer.claim_support(items[:2])  # load + warm up
    scorer.relevance([(question, doc)])
    n_pairs = sum(len(i.windows) for i in items)
    t0 = time.perf_counter()
    scorer.claim_support(items)
    pair_s = time.perf_counter() - t0
    rel = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        scorer.relevance([(question, doc)])
        rel.append(time.perf_counter() - t0)
    return {"precision": precision, "pairs": n_pairs, "claims": len(items), "seconds": round(pair_s, 2),
            "pairs_per_second": round(n_pairs / pair_s, 1), "relevance_2000_words_p50_s": round(statistics.median(rel), 3),
            "relevance_2000_words_max_s": round(max(rel), 3)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--judge", help="judge folder (default: the shipped one)")
    ap.add_argument("--pairs", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "judge_speed.json"))
    args = ap.parse_args(argv)
    judge_dir = Path(args.judge) if args.judge else default_model_dir()
    if judge_dir is None:
        print("judge_speed: no judge folder (pass --judge DIR)", file=sys.stderr)
        return 2
    items, doc, question = workload(args.pairs)
    precisions = ["bf16", "int8", "fp32"] if native_bf16() else ["int8", "fp32"]  # emulated bf16 is slower than fp32
    rows = [measure(judge_dir, p, items, doc, question, args.repeats) for p in precisions]
    default = cpu_precision("auto")
    print(render(["precision", "claims", "pairs", "sec", "pairs/s", "relevance 2,000 words p50 s", "max s"],
                 [(NAMES[r["precision"]] + (" (default here)" if r["precision"] == default else ""), r["claims"], r["pairs"], r["seconds"],
                   r["pairs_per_second"], r["relevance_2000_words_p50_s"], r["relevance_2000_words_max_s"])
                  for r in rows], title=f"compact judge speed ({judge_dir.name}, {torch.get_num_threads()} threads)"))
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"judge": str(judge_dir), "threads": torch.get_num_threads(), "native_bf16": native_bf16(),
                               "default_precision": default, "rows": rows}, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
